"""``ChannelShuffle``."""

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    r"""Divides the ``C`` channels of an ``(N, C, *)`` input into ``groups`` groups and
    interleaves them: ``(N, g, C / g, *) -> (N, C / g, g, *)``, same shape as the input."""

    __constants__ = ["groups"]

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
