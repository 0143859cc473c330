"""Helpers of the DataLoader: collation, fetchers and the worker loop.

They live at module level so that worker processes can pickle them.
"""

import atexit
import sys
import traceback

MP_STATUS_CHECK_INTERVAL = 5.0
r"""Interval (seconds) at which workers check that the main process is alive, and
the main process checks that its workers are."""

python_exit_status = False
r"""Set when Python is shutting down, so that shutdown code skips cleanup whose
resources may already be gone."""


def _set_python_exit_flag():
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)


class KeyErrorMessage(str):
    r"""str subclass that returns itself in repr (KeyError repr()s its argument)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    r"""Wraps an exception plus its traceback text to send it across processes."""

    def __init__(self, exc_info=None, where="in background"):
        # Keep only the type and the formatted text: storing exc_info would keep the
        # traceback (and its frames) alive and cannot be pickled.
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        r"""Re-raise the wrapped exception (same type) in the current process."""
        # e.g. "Caught ValueError in DataLoader worker process 2.\nOriginal Traceback ..."
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # the exception type cannot be built from one message argument
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            # break the cycle frame -> exception -> traceback -> frame, which would keep
            # the DataLoader iterator (and its workers) alive until the next gc run
            del exception


from . import collate, fetch, worker  # noqa: E402,F401
