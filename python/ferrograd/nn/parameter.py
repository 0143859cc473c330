"""``Parameter`` and ``Buffer``: tensor subclasses that modules register automatically."""

from collections import OrderedDict

from .. import _core
from .._factories import empty

Tensor = _core.Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    r"""A kind of Tensor that is to be considered a module parameter.

    Assigning a ``Parameter`` as a Module attribute adds it to the module's parameters.
    The parameter shares its storage with ``data`` (detached from ``data``'s graph).
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        t = Tensor.__new__(cls, data)
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.data, self.requires_grad, OrderedDict()))


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    r"""A kind of Tensor that should not be considered a model parameter.

    Assigning a ``Buffer`` as a Module attribute registers it as a buffer
    (persistent unless ``persistent=False``).
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        t = Tensor.__new__(cls, data)
        t.requires_grad_(data.requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), persistent=self.persistent)
        result.requires_grad_(self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_buffer, (self.data, self.requires_grad, self.persistent))


def _rebuild_buffer(data, requires_grad, persistent):
    b = Buffer(data, persistent=persistent)
    b.requires_grad_(requires_grad)
    return b
