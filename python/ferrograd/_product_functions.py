"""Products and statistics beyond the core op table: ``addmv``, ``addr``, ``baddbmm``,
``addbmm``, ``inner``, ``vdot``, ``chain_matmul``, ``dist``, ``pdist``, ``cov``, ``corrcoef``,
``trapezoid``, and ``torch.*`` forms of ``nn.functional`` functions.

Each torch function takes ``input`` first; ``TensorMethods`` holds the Tensor methods of the same
names (``_tensor.install`` puts them on ``Tensor``).
"""

__all__: list[str] = []


class TensorMethods:
    """The Tensor methods of this module's functions."""
