"""``ferrograd.device``: only the CPU exists here."""


class device:
    """Only the CPU exists here."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        if type != "cpu":
            raise RuntimeError(f"ferrograd runs on the CPU only; device {type!r} is not available")
        self.type = type
        self.index = index

    def __repr__(self):
        return f"device(type='{self.type}')"

    def __str__(self):
        return self.type

    def __eq__(self, other):
        return isinstance(other, (device, str)) and str(other) == "cpu"

    def __hash__(self):
        return hash("cpu")


_CPU = device("cpu")
