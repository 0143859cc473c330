"""``ferrograd.Size``: the tuple subclass that ``Tensor.shape`` returns."""


class Size(tuple):
    __slots__ = ()

    def __repr__(self):
        return f"torch.Size([{', '.join(str(d) for d in self)}])"

    __str__ = __repr__

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return Size(r) if isinstance(key, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))
