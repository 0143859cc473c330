"""Stacking, splitting, rotating and regridding: ``broadcast_to``, ``meshgrid``, the ``*stack``
and ``*split`` families, ``rot90``, ``repeat_interleave``, ``diff``, the ``*_scatter`` functions and
the creation functions that build on them.

Each torch function takes ``input`` first; ``TensorMethods`` holds the Tensor methods of the same
names (``_tensor.install`` puts them on ``Tensor``).
"""

__all__: list[str] = []


class TensorMethods:
    """The Tensor methods of this module's functions."""
