"""Activation modules."""

from .. import functional as F
from .module import Module

__all__ = ["ReLU", "LeakyReLU", "Tanh", "Sigmoid", "GELU", "SiLU", "Softmax", "LogSoftmax", "Softmin"]


class _InplaceActivation(Module):
    """Base of the activations whose only option is ``inplace``."""

    __constants__ = ["inplace"]

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU(_InplaceActivation):
    r"""Applies the rectified linear unit function element-wise: ``max(0, x)``."""

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)


class LeakyReLU(Module):
    r"""Applies ``max(0, x) + negative_slope * min(0, x)`` element-wise."""

    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace_str}"


class Tanh(Module):
    r"""Applies the hyperbolic tangent element-wise."""

    def forward(self, input):
        return input.tanh()


class Sigmoid(Module):
    r"""Applies the logistic sigmoid element-wise."""

    def forward(self, input):
        return input.sigmoid()


class GELU(Module):
    r"""Applies the Gaussian error linear unit; ``approximate='tanh'`` uses the tanh estimate."""

    __constants__ = ["approximate"]

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={repr(self.approximate)}"


class SiLU(_InplaceActivation):
    r"""Applies ``x * sigmoid(x)`` element-wise."""

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class _SoftmaxBase(Module):
    """Base of Softmax, Softmin and LogSoftmax: a normalisation along ``dim``."""

    __constants__ = ["dim"]

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    r"""Applies softmax along ``dim`` (``dim=None`` uses the deprecated implicit choice)."""

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)


class Softmin(_SoftmaxBase):
    r"""Applies softmin (softmax of ``-x``) along ``dim``."""

    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)


class LogSoftmax(_SoftmaxBase):
    r"""Applies ``log(softmax(x))`` along ``dim``."""

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)
