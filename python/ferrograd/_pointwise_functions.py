"""Elementwise functions beyond the core op table: ``logaddexp``, ``fmax`` / ``fmin``,
``nan_to_num``, ``copysign``, ``heaviside``, ``gcd`` / ``lcm``, angle conversions, predicates and
aliases, with their in-place forms.

Each torch function takes ``input`` first; ``TensorMethods`` holds the Tensor methods of the same
names (``_tensor.install`` puts them on ``Tensor``).
"""

__all__: list[str] = []


class TensorMethods:
    """The Tensor methods of this module's functions."""
