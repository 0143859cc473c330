"""Helpers of the DataLoader: collation (``collate``), fetchers (``fetch``) and the worker loop
(``worker``), and the flag telling that the interpreter is shutting down.

They live at module level so that worker processes can pickle them.
"""

import atexit

from . import collate, fetch, worker
from .worker import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper

python_exit_status = False
r"""Set when Python is shutting down, so that shutdown code skips cleanup whose
resources may already be gone."""


def _set_python_exit_flag():
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)
