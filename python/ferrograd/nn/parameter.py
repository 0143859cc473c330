"""``Parameter`` and ``Buffer``: tensor subclasses that modules register automatically."""

from collections import OrderedDict

from .. import _core
from .._factories import empty

Tensor = _core.Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


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


class UninitializedTensorMixin:
    r"""A parameter or buffer of a lazy module before its shape is known: ``materialize(shape)``
    gives it storage and turns it into ``cls_to_become``."""

    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None):
        r"""Create storage of ``shape`` (values uninitialized) and become ``cls_to_become``."""
        if dtype is None:
            dtype = self.data.dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes."
        )

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize the "
            "parameters before calling `module.share_memory()`."
        )

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


def is_lazy(param):
    r"""Whether ``param`` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    r"""A ``Parameter`` of a lazy module that is not initialized yet (no shape, no values)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        t = Tensor.__new__(cls, empty(0, device=device, dtype=dtype))
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, None, self.data.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    r"""A buffer of a lazy module that is not initialized yet (no shape, no values)."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = Tensor.__new__(cls, empty(0, device=device, dtype=dtype))
        t.requires_grad_(requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass
