"""Anomaly mode (PyTorch's ``torch.autograd.anomaly_mode``): nodes remember the traceback of
the forward call that created them, a failing backward names the node and shows that
traceback, and with ``check_nan`` a backward that returns NaN raises."""

import warnings

from .. import _core

__all__ = ["detect_anomaly", "set_detect_anomaly"]


def set_anomaly_enabled(enabled, check_nan=True):
    """``torch.set_anomaly_enabled``."""
    _core._set_anomaly_enabled(bool(enabled), bool(check_nan))


class detect_anomaly:
    """Context manager that enables anomaly detection for the autograd engine."""

    def __init__(self, check_nan=True):
        self.prev = _core.is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = _core.is_anomaly_check_nan_enabled()
        warnings.warn(
            "Anomaly Detection has been enabled. "
            "This mode will increase the runtime "
            "and should only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self):
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Sets anomaly detection on or off; usable as a function or as a context manager."""

    def __init__(self, mode, check_nan=True):
        self.prev = _core.is_anomaly_enabled()
        self.prev_check_nan = _core.is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)
