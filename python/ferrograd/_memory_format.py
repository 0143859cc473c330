"""``torch.memory_format`` and its four values (``contiguous_format``, ``preserve_format``,
``channels_last``, ``channels_last_3d``).

A memory format names a layout of a tensor's strides. ``clone``, ``contiguous``,
``is_contiguous`` and ``to`` (``_functions.py``) honour them: ``channels_last`` gives a 4-d
tensor the strides PyTorch gives it (same values, ``is_contiguous()`` False), by copying the
tensor permuted to NHWC and viewing it back as NCHW.
"""

__all__ = ["memory_format", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]


class memory_format:
    """The layout of a tensor's strides: one of ``torch.contiguous_format``,
    ``torch.preserve_format``, ``torch.channels_last``, ``torch.channels_last_3d``."""

    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'torch.memory_format' instances")

    @classmethod
    def _make(cls, name):
        obj = object.__new__(cls)
        object.__setattr__(obj, "_name", name)
        return obj

    def __setattr__(self, name, value):
        raise AttributeError(f"'torch.memory_format' object has no attribute '{name}'")

    def __repr__(self):
        return "torch." + self._name

    __str__ = __repr__

    def __reduce__(self):
        # pickled as the module attribute of the same name (ferrograd.channels_last, ...)
        return self._name


memory_format.__module__ = "ferrograd"
memory_format.__qualname__ = memory_format.__name__ = "memory_format"

contiguous_format = memory_format._make("contiguous_format")
preserve_format = memory_format._make("preserve_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")


def _check_memory_format(fname, value, optional=False):
    """Raises PyTorch's TypeError unless ``value`` is a memory format (or None if ``optional``)."""
    if isinstance(value, memory_format) or (optional and value is None):
        return
    raise TypeError(
        f"{fname}(): argument 'memory_format' must be torch.memory_format, not {type(value).__name__}"
    )
