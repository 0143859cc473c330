"""``Dropout``, the channel-wise ``Dropout1d``, ``Dropout2d``, ``Dropout3d``, and
``AlphaDropout``, ``FeatureAlphaDropout``."""

from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    __constants__ = ["p", "inplace"]

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    r"""During training, zeroes each element with probability ``p`` and scales the output by
    ``1 / (1 - p)``; in evaluation mode it returns the input."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    r"""During training, zeroes whole channels of ``(N, C, L)`` or ``(C, L)`` inputs with
    probability ``p`` and scales the output by ``1 / (1 - p)``; in evaluation mode it returns
    the input."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    r"""During training, zeroes whole channels of ``(N, C, H, W)`` inputs with probability
    ``p`` and scales the output by ``1 / (1 - p)``; in evaluation mode it returns the input."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    r"""During training, zeroes whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)``
    inputs with probability ``p`` and scales the output by ``1 / (1 - p)``; in evaluation mode
    it returns the input."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    r"""Alpha dropout (for SELU networks): keeps the inputs' mean and variance; identity in
    evaluation mode."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    r"""Alpha dropout of whole channels; identity in evaluation mode."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
