"""Elementwise functions beyond the core op table: ``logaddexp``, ``fmax`` / ``fmin``,
``nan_to_num``, ``copysign``, ``heaviside``, ``gcd`` / ``lcm``, angle conversions, predicates and
aliases, with their in-place forms.

Each torch function takes ``input`` first; ``TensorMethods`` holds the Tensor methods of the same
names (``_tensor.install`` puts them on ``Tensor``).

The differentiable functions are written with differentiable ops (``where``, ``exp``, ``log1p``,
...), chosen so that their gradients at the special points (ties, infinities, NaN, signed zeros)
are PyTorch's; the graph shows those ops rather than PyTorch's single node. ``copysign`` and
``nextafter`` are autograd Functions with PyTorch's nodes (their gradients are piecewise constant,
so the backward is exact at every order). The bit-level values (``signbit``, ``nextafter``,
``frexp``'s exponent) are read with NumPy: the core has no ``view(dtype)`` to see a NaN's sign bit.

The in-place forms of composite ops compute out of place and copy the result in (the graph shows
``CopyBackwards``); the in-place shape ops (``squeeze_``, ``t_``, ...) change the tensor's
metadata with the core's ``data`` setter and record PyTorch's node.
"""

import math

import numpy as np

from . import _core
from ._core import Tensor, bool as bool_, float64, int32
from ._dtype import can_cast, finfo, get_default_dtype, result_type
from ._factories import tensor
from ._functions import _not_a_tensor, broadcast_shapes, broadcast_tensors, clamp, isinf, isnan, sub
from ._math_functions import _float
from ._nondifferentiable import _no_derivative
from ._op_args import _invalid_combination, _no_out, _type_name
from ._return_types import _return_type
from ._set_functions import searchsorted
from ._shape_functions import _scalar_type_name
from ._tensor import _copy_in
from .autograd.function import Function
from .autograd.grad_mode import no_grad
from .nn.functional._dropout import _dropout_impl
from .nn.functional.sparse import _no_grad_embedding_renorm_

__all__ = [
    # math
    "logaddexp", "logaddexp2", "fmax", "fmin", "nan_to_num", "nan_to_num_", "copysign", "heaviside", "gcd",
    "gcd_", "lcm", "lcm_", "deg2rad", "deg2rad_", "rad2deg", "rad2deg_", "float_power", "ldexp", "ldexp_",
    "frexp", "nextafter", "rsub", "clamp_min", "clamp_max", "clamp_min_", "clamp_max_",
    # predicates
    "signbit", "isneginf", "isposinf", "isreal", "isin", "is_conj", "is_neg",
    # real tensors: the complex-number functions
    "real", "imag", "conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "positive",
    # aliases
    "absolute", "greater", "greater_equal", "less", "less_equal", "not_equal",
    # torch-level in-place functions
    "clamp_", "clip_", "square_", "negative_", "fill_", "zero_", "detach_", "index_put_",
    "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_", "embedding_renorm_",
]

frexp_result = _return_type("frexp", ("mantissa", "exponent"))


# the C++ type names of PyTorch's "Bad in-place call" message
_CPP_TYPE_NAMES = {"Long": "long int", "Int": "int", "Short": "short int", "Char": "signed char",
                   "Byte": "unsigned char", "Bool": "bool", "Float": "float", "Double": "double",
                   "Half": "c10::Half", "BFloat16": "c10::BFloat16"}


# --- argument checks


def _check_other(fname, other, pos, name="other"):
    if not isinstance(other, Tensor):
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor, not {_type_name(other)}")


def _tensors(fname, input, other, name="other"):
    """Checks the two tensor arguments of a binary function."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor(fname, input)
    _check_other(fname, other, 2, name)


def _method(fn, fname, name="other"):
    """The Tensor method of binary function ``fn`` (the other argument's position is 1)."""

    def method(self, other):
        _check_other(fname, other, 1, name)
        return fn(self, other)

    method.__name__ = fname
    return method


def _not_implemented_for(kernel, dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_type_name(dtype)}\'')


def _floating(fname, input, other):
    """``input`` and ``other`` in their common dtype, which must be floating."""
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        raise _not_implemented_for(fname + "_cpu", dtype)
    return input.to(dtype), other.to(dtype)


def _numpy(input):
    """The values of ``input`` as a NumPy array (bfloat16 as float32: the same values)."""
    x = input.detach()
    return np.asarray(x.float() if x.dtype == _core.bfloat16 else x)


def _all(input, value):
    """A bool tensor of ``input``'s shape, all ``value``."""
    return _core._full(list(input.shape), value, bool_)


# --- logaddexp, fmax / fmin


def _log_add(a, b, exp, scale):
    """``log(exp(a) + exp(b))`` (``exp``: ``exp`` or ``exp2``; ``scale``: 1 / log of the base), as
    PyTorch computes it: the larger plus ``log1p(exp(smaller - larger))``, and ``a`` where both
    are the same infinity. The gradient is PyTorch's (``1 / (1 + exp(b - a))`` for ``a``), ties
    (0.5 each) and infinities included."""
    first = a >= b
    hi, lo = _core.where(first, a, b), _core.where(first, b, a)
    out = hi + (exp(lo - hi).log1p() if scale == 1 else exp(lo - hi).log1p() * scale)
    return _core.where(isinf(a) & (a == b), a, out)


def logaddexp(input, other):
    """``log(exp(input) + exp(other))`` without overflow (floating inputs)."""
    _tensors("logaddexp", input, other)
    return _log_add(*_floating("logaddexp", input, other), _core.exp, 1)


def logaddexp2(input, other):
    """``log2(2**input + 2**other)`` without overflow (floating inputs)."""
    _tensors("logaddexp2", input, other)
    return _log_add(*_floating("logaddexp2", input, other), _core.exp2, 1 / math.log(2))


def fmax(input, other):
    """The elementwise maximum, ignoring NaN (NaN only where both are); the gradient goes to
    ``input`` at ties, as PyTorch's."""
    _tensors("fmax", input, other)
    return _core.where((input >= other) | isnan(other), input, other)


def fmin(input, other):
    """The elementwise minimum, ignoring NaN (NaN only where both are); the gradient goes to
    ``input`` at ties, as PyTorch's."""
    _tensors("fmin", input, other)
    return _core.where((input <= other) | isnan(other), input, other)


# --- nan_to_num, signs


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """``input`` with NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (the
    dtype's largest and lowest values by default); integers and bools are copied."""
    _no_out("nan_to_num", {"out": out})
    if not isinstance(input, Tensor):
        raise _not_a_tensor("nan_to_num", input)
    if not input.is_floating_point():
        return input.clone()
    info = finfo(input.dtype)
    if (posinf is None or posinf >= info.max) and (neginf is None or neginf <= info.min):
        # the infinities become bounds no finite value passes: a clamp (which keeps NaN and
        # passes no gradient at +-inf) and one where
        result = input.clamp(info.min if neginf is None else neginf, info.max if posinf is None else posinf)
        return _core.where(isnan(input), float(nan), result)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    result = _core.where(input == math.inf, float(posinf), input)
    result = _core.where(input == -math.inf, float(neginf), result)
    return _core.where(isnan(input), float(nan), result)


def nan_to_num_(input, nan=0.0, posinf=None, neginf=None):
    if not input.is_floating_point():
        return input
    return _copy_result(input, nan_to_num, nan, posinf, neginf)


def signbit(input):
    """Whether the sign bit is set (-0.0 and negative NaNs included)."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor("signbit", input)
    if not input.is_floating_point():
        return input < 0
    return tensor(np.signbit(_numpy(input)))


class _Copysign(Function):
    """``copysign`` with PyTorch's gradient: ``grad * result / input`` (0 where ``input`` is 0,
    NaN where it is infinite), 0 for a tensor ``other``. The ratio is piecewise constant, so the
    backward (linear in ``grad`` with the ratio as a constant) is exact at every order."""

    _jvp_by_backward = True

    @staticmethod
    def forward(ctx, input, other, negative):
        magnitude = input.abs()
        result = _core.where(negative, -magnitude, magnitude) if isinstance(negative, Tensor) else (
            -magnitude if negative else magnitude)
        ctx.ratio = _core.where(input == 0, 0.0, result / input)
        ctx.other = (list(other.shape), other.dtype) if isinstance(other, Tensor) else None
        return result

    @staticmethod
    def backward(ctx, grad):
        other = None if ctx.other is None else _core._full(ctx.other[0], 0, ctx.other[1])
        return grad * ctx.ratio, other, None


_COPYSIGN_NODES = {tensor_other: type("_Copysign", (_Copysign,), {"_node_name": f"CopysignBackward{n}"})
                   for n, tensor_other in enumerate((True, False))}


def copysign(input, other):
    """The magnitude of ``input`` with the sign (bit) of ``other``, a tensor or a number, in a
    floating dtype."""
    if not isinstance(input, Tensor):
        raise _invalid_combination("copysign", (input, other), {}, [
            "Tensor input, Tensor other, *, Tensor out = None", "Tensor input, Number other, *, Tensor out = None"])
    dtype = result_type(input, other)
    x = input.to(dtype if dtype.is_floating_point else get_default_dtype())
    if isinstance(other, Tensor):
        x = x.expand(broadcast_shapes(x.shape, other.shape))
        return _COPYSIGN_NODES[True].apply(x, other, signbit(other))
    return _COPYSIGN_NODES[False].apply(x, other, math.copysign(1.0, other) < 0)


_heaviside_node = _no_derivative("NotImplemented", RuntimeError, "derivative for aten::heaviside is not implemented")


def heaviside(input, values):
    """0 where ``input`` < 0, 1 where it is > 0, ``values`` where it is 0 (same dtypes)."""
    _tensors("heaviside", input, values, "values")
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    x = input.detach()
    result = _core.where(x == 0, values.detach(), (x > 0).to(x.dtype))
    return _heaviside_node(result, input, values)


# --- integers: gcd, lcm


def _integers(fname, input, other):
    _tensors(fname, input, other)
    dtype = result_type(input, other)
    if dtype.is_floating_point or dtype == bool_:
        raise _not_implemented_for(fname + "_cpu", dtype)


def _gcd(a, b):
    """Euclid's algorithm on every element at once (C's truncated remainder, as PyTorch)."""
    a, b = a.abs(), b.abs()
    while True:
        nonzero = a != 0
        if not bool(nonzero.any()):
            return b
        a, b = _core.where(nonzero, _core.fmod(b, _core.where(nonzero, a, 1)), 0), _core.where(nonzero, a, b)


def gcd(input, other):
    """The greatest common divisor (non-negative; 0 for two zeros) of integers."""
    _integers("gcd", input, other)
    return _gcd(input, other)


def lcm(input, other):
    """The least common multiple (non-negative; 0 if either is 0) of integers."""
    _integers("lcm", input, other)
    g = _gcd(input, other)
    zero = g == 0
    quotient = _core._div_rounding(input, _core.where(zero, 1, g), "trunc")
    return _core.where(zero, 0, (quotient * other).abs())


# --- angles, powers of two, float_power


def deg2rad(input):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("deg2rad", input)
    return _float(input) * (math.pi / 180)


def rad2deg(input):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("rad2deg", input)
    return _float(input) * (180 / math.pi)


def ldexp(input, other):
    """``input * 2**other``."""
    _tensors("ldexp", input, other)
    if input.is_floating_point() and other.dtype == bool_:  # (PyTorch's kernel for integer exponents)
        raise _not_implemented_for("ldexp_cpu_exp", bool_)
    return input * _core.pow(2.0, other)


def ldexp_(input, other):
    _tensors("ldexp_", input, other)
    if not input.is_floating_point():
        raise RuntimeError(f"ldexp can't be cast to the desired output type {_scalar_type_name(input.dtype)}")
    _check_in_place(input, other, False)
    if other.dtype == bool_:
        raise _not_implemented_for("ldexp_cpu_exp", bool_)
    return input.mul_(_core.pow(2.0, other))


def float_power(input, exponent):
    """``input ** exponent`` computed in float64 (either may be a number)."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise _invalid_combination("float_power", (input, exponent), {}, [
            "Tensor input, Tensor exponent, *, Tensor out = None",
            "Number self, Tensor exponent, *, Tensor out = None",
            "Tensor input, Number exponent, *, Tensor out = None"])
    base = input.to(float64) if isinstance(input, Tensor) else float(input)
    power = exponent.to(float64) if isinstance(exponent, Tensor) else float(exponent)
    return _core.pow(base, power)


def frexp(input):
    """``(mantissa, exponent)`` with ``input = mantissa * 2**exponent``, ``|mantissa|`` in
    [0.5, 1) (0, inf and NaN: themselves with exponent 0); the exponent is int32. The mantissa
    is differentiable (its gradient: ``grad / 2**exponent``)."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor("frexp", input)
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    exponent = np.frexp(_numpy(input))[1]
    # input * 2**-exponent in two exact steps: 2**-exponent alone overflows for subnormal inputs
    half = exponent // 2
    scale = [tensor(np.exp2(-e), dtype=input.dtype) for e in (half, exponent - half)]
    return frexp_result(input * scale[0] * scale[1], tensor(exponent.astype(np.int32), dtype=int32))


class _Nextafter(Function):
    """``nextafter``: NumPy's values; PyTorch's gradient (``grad`` for ``input`` where it differs
    from ``other``, else 0; 0 for ``other``)."""

    _node_name = "NextafterBackward0"
    _jvp_by_backward = True

    @staticmethod
    def forward(ctx, input, other):
        ctx.other = (list(other.shape), other.dtype)
        ctx.moved = input != other
        return tensor(np.nextafter(_numpy(input), _numpy(other)), dtype=input.dtype)

    @staticmethod
    def backward(ctx, grad):
        return _core.where(ctx.moved, grad, 0.0), _core._full(ctx.other[0], 0, ctx.other[1])


def nextafter(input, other):
    """The next floating-point value after ``input`` towards ``other``."""
    _tensors("nextafter", input, other)
    a, b = _floating("nextafter", input, other)
    if a.dtype == _core.bfloat16:
        raise NotImplementedError("nextafter of bfloat16 tensors is not supported by ferrograd")
    return _Nextafter.apply(*broadcast_tensors(a, b))


# --- predicates


def isneginf(input):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("isneginf", input)
    return input == -math.inf


def isposinf(input):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("isposinf", input)
    return input == math.inf


def isreal(input):
    """True everywhere: ferrograd has no complex dtypes."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor("isreal", input)
    return _all(input, True)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` is in ``test_elements`` (either may be a number)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise _invalid_combination(
            "isin", (elements, test_elements), {}, [
                f"{first}, *, bool assume_unique = False, bool invert = False, Tensor out = None"
                for first in ("Tensor elements, Tensor test_elements", "Number element, Tensor test_elements",
                              "Tensor elements, Number test_element")])
    if bool_ in (getattr(elements, "dtype", None), getattr(test_elements, "dtype", None)):
        raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    dtype = result_type(elements, test_elements)
    if not isinstance(test_elements, Tensor):
        found = elements == test_elements
    else:
        x = elements.to(dtype) if isinstance(elements, Tensor) else tensor(elements, dtype=dtype)
        test = test_elements.detach().reshape(-1).to(dtype)
        test = test[test == test]  # NaN is in nothing (and would stop the binary search)
        if test.numel() == 0:
            found = _all(x, False)
        else:
            test = test.sort().values
            at = searchsorted(test, x.detach()).clamp(max=test.numel() - 1)
            found = test[at] == x.detach()
    return found.logical_not() if invert else found


# --- the complex-number functions on real tensors


def _check_tensor(fname, input):
    if not isinstance(input, Tensor):
        raise _not_a_tensor(fname, input)


def real(input):
    """``input`` itself (a real tensor)."""
    _check_tensor("real", input)
    return input


def imag(input):
    _check_tensor("imag", input)
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def _real_identity(name, result=None):
    """A complex-number function on a real tensor: ``input`` itself (or ``result``, for the
    ``is_*`` predicates)."""

    def fn(input):
        _check_tensor(name, input)
        return input if result is None else result

    fn.__name__ = fn.__qualname__ = name
    return fn


# the conjugate of a real tensor is itself; nothing is conjugated or negated lazily
conj = _real_identity("conj")
conj_physical = _real_identity("conj_physical")
conj_physical_ = _real_identity("conj_physical_")
resolve_conj = _real_identity("resolve_conj")
resolve_neg = _real_identity("resolve_neg")
is_conj = _real_identity("is_conj", False)
is_neg = _real_identity("is_neg", False)


def positive(input):
    """``input`` itself (``+input``); refused for bools as in PyTorch."""
    _check_tensor("positive", input)
    if input.dtype == bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# --- aliases, rsub, clamp_min / clamp_max



def absolute(input):
    """``abs`` (refused for bools, as PyTorch's)."""
    _check_tensor("absolute", input)
    if input.dtype == bool_:
        raise _not_implemented_for("abs_cpu", bool_)
    return _core.abs(input)


def _absolute_(self):
    absolute(self)  # the checks
    return self.abs_()


greater, greater_equal, less, less_equal, not_equal = _core.gt, _core.ge, _core.lt, _core.le, _core.ne


def rsub(input, other, alpha=1):
    """``other - alpha * input`` (``other`` a tensor or a number)."""
    if not isinstance(input, Tensor):
        raise _invalid_combination("rsub", (input, other), {}, [
            "Tensor input, Tensor other, *, Number alpha = 1", "Tensor input, Number other, Number alpha = 1"])
    return sub(other, input, alpha=alpha)


def clamp_min(input, min):
    _check_tensor("clamp_min", input)
    return clamp(input, min, None)


def clamp_max(input, max):
    _check_tensor("clamp_max", input)
    return clamp(input, None, max)


def _clamp_(input, min, max):
    """``input`` clamped in place: the core's ``clamp_`` for floating tensors and number bounds
    (ClampBackward1), else the result of ``clamp`` written in."""
    if input.is_floating_point() and not isinstance(min, Tensor) and not isinstance(max, Tensor):
        return input.clamp_(min, max)
    for bound in (min, max):  # (PyTorch's message names the C++ type here)
        if bound is not None and not isinstance(bound, Tensor) and not can_cast(result_type(input, bound), input.dtype):
            raise _cast_error(result_type(input, bound), input.dtype, _CPP_TYPE_NAMES[_scalar_type_name(input.dtype)])
    return _copy_result(input, clamp, min, max)


def clamp_min_(input, min):
    return _clamp_(input, min, None)


def clamp_max_(input, max):
    return _clamp_(input, None, max)


# --- the torch-level in-place functions of Tensor methods


def clamp_(input, min=None, max=None):
    _check_tensor("clamp_", input)
    return _clamp_(input, min, max)


def clip_(input, min=None, max=None):
    _check_tensor("clip_", input)
    return _clamp_(input, min, max)


def square_(input):
    _check_tensor("square_", input)
    return input.pow_(2)


def negative_(input):
    _check_tensor("negative_", input)
    return input.neg_()


def fill_(input, value):
    if not isinstance(input, Tensor):
        raise _invalid_combination("fill_", (input, value), {},
                                   ["Tensor input, Tensor value", "Tensor input, Number value"])
    return input.fill_(value)


def zero_(input):
    _check_tensor("zero_", input)
    return input.zero_()


def detach_(input):
    _check_tensor("detach_", input)
    return input.detach_()


def index_put_(input, indices, values, accumulate=False):
    _check_tensor("index_put_", input)
    return input.index_put_(indices, values, accumulate)


# --- torch.dropout and its relatives: (input, p, train), nn.functional's


def _dropout(input, p, train, inplace, feature, alpha):
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _dropout_impl(input, p, train, inplace, feature, alpha)


def dropout(input, p, train):
    return _dropout(input, p, train, False, False, False)


def dropout_(input, p, train):
    return _dropout(input, p, train, True, False, False)


def alpha_dropout(input, p, train):
    return _dropout(input, p, train, False, False, True)


def alpha_dropout_(input, p, train):
    return _dropout(input, p, train, True, False, True)


def feature_dropout(input, p, train):
    return _dropout(input, p, train, False, True, False)


def feature_dropout_(input, p, train):
    return _dropout(input, p, train, True, True, False)


def feature_alpha_dropout(input, p, train):
    return _dropout(input, p, train, False, True, True)


def feature_alpha_dropout_(input, p, train):
    return _dropout(input, p, train, True, True, True)


_LEAF_IN_PLACE = "a leaf Variable that requires grad is being used in an in-place operation."


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Scales the rows of ``input`` that ``indices`` selects to a ``norm_type``-norm of at most
    ``max_norm``, in place (not recorded by autograd)."""
    _check_tensor("embedding_renorm_", input)
    if input.requires_grad and input.is_leaf and _core.is_grad_enabled():
        raise RuntimeError(_LEAF_IN_PLACE)
    _no_grad_embedding_renorm_(input, indices, max_norm, norm_type)
    return input


# --- in-place forms computed out of place


def _cast_error(dtype, out_dtype, out_name=None):
    return RuntimeError(f"result type {_scalar_type_name(dtype)} can't be cast to the desired output type "
                        f"{out_name or _scalar_type_name(out_dtype)}")


def _copy_result(self, op, *args, **kwargs):
    """``self`` overwritten with ``op(self, *args, **kwargs)`` (``_copy_in``), refused when the
    result cannot be cast to ``self``'s dtype."""

    def checked(input, *args, **kwargs):
        result = op(input, *args, **kwargs)
        if not can_cast(result.dtype, self.dtype):
            raise _cast_error(result.dtype, self.dtype)
        return result

    return _copy_in(self, checked, *args, **kwargs)


def _check_in_place(self, other, cast):
    """PyTorch's checks before a binary op writes into ``self``: the broadcast shape is
    ``self``'s, and (``cast``) the promoted dtype can be cast to ``self``'s."""
    if isinstance(other, Tensor):
        shape = broadcast_shapes(self.shape, other.shape)
        if shape != self.shape:
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}")
    if cast:
        dtype = result_type(self, other)
        if not can_cast(dtype, self.dtype):
            raise _cast_error(dtype, self.dtype)


def _in_place(name, op, binary=None):
    """The Tensor method ``name``: ``op``'s result written into ``self``; ``binary`` ("shape" or
    "cast"): the checks of ``_check_in_place`` first, for ops of ``self`` and one operand."""

    def method(self, *args, **kwargs):
        if binary is not None:
            _check_in_place(self, args[0] if args else next(iter(kwargs.values())), binary == "cast")
        return _copy_result(self, op, *args, **kwargs)

    method.__name__ = name
    return method


gcd_ = _in_place("gcd_", gcd, "cast")
lcm_ = _in_place("lcm_", lcm, "cast")
deg2rad_ = _in_place("deg2rad_", deg2rad)
rad2deg_ = _in_place("rad2deg_", rad2deg)

def _cumsum_(self, dim, *, dtype=None):
    if dtype is not None and dtype != self.dtype:
        names = [_CPP_TYPE_NAMES[_scalar_type_name(d)] for d in (self.dtype, dtype)]
        raise RuntimeError(f"Bad in-place call: input tensor dtype {names[0]} and output tensor dtype "
                           f"{names[1]} should match")
    return _copy_result(self, Tensor.cumsum, dim)


def _index_add_(self, dim, index, source, *, alpha=1):
    return _copy_result(self, Tensor.index_add, dim, index, source if alpha == 1 else source * alpha)


def _float_power_(self, exponent):
    if self.dtype != float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_scalar_type_name(self.dtype)} but the "
                           "operation's result requires dtype Double")
    return self.pow_(exponent.to(float64) if isinstance(exponent, Tensor) else exponent)


def _nan_to_num_method(self, nan=0.0, posinf=None, neginf=None):
    return nan_to_num(self, nan, posinf, neginf)


# --- in-place shape ops: the tensor's metadata changed in place (the core's ``data`` setter),
# recorded as PyTorch's node (its backward: the inverse view of the gradient)


class _ShapeInPlace(Function):
    _jvp_by_backward = True

    @staticmethod
    def forward(ctx, input, undo):
        ctx.undo = undo
        ctx.mark_dirty(input)
        return input

    @staticmethod
    def backward(ctx, grad):
        return ctx.undo(grad), None


_SHAPE_NODES = {name: type(name, (_ShapeInPlace,), {"_node_name": name}) for name in (
    "SqueezeBackward3", "SqueezeBackward4", "SqueezeBackward5", "UnsqueezeBackward1", "TBackward1",
    "TransposeBackward1")}


def _reshape_in_place(self, fname, new, undo, node):
    """``self`` given the shape and strides of ``new`` (a view of ``self``); ``undo`` maps the
    gradient back to the old shape."""
    if self.requires_grad and _core.is_grad_enabled():
        if self.is_leaf:
            raise RuntimeError(_LEAF_IN_PLACE)
        if self._is_view() or _core._tangent(self) is not None:
            raise NotImplementedError(
                f"{fname}() of a view or a dual tensor that requires grad is not supported by ferrograd")
        _SHAPE_NODES[node].apply(self, undo)
    with no_grad():
        self.data = new
    return self


def _squeeze_(self, dim=None):
    shape = tuple(self.shape)
    node = "SqueezeBackward3" if dim is None else "SqueezeBackward4" if isinstance(dim, int) else "SqueezeBackward5"
    return _reshape_in_place(self, "squeeze_", self.detach().squeeze(dim), lambda g: g.reshape(shape), node)


def _unsqueeze_(self, dim):
    shape = tuple(self.shape)
    return _reshape_in_place(self, "unsqueeze_", self.detach().unsqueeze(dim), lambda g: g.reshape(shape),
                             "UnsqueezeBackward1")


def _transpose_(self, dim0, dim1):
    return _reshape_in_place(self, "transpose_", self.detach().transpose(dim0, dim1),
                             lambda g: g.transpose(dim0, dim1), "TransposeBackward1")


def _t_(self):
    if self.dim() > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return _reshape_in_place(self, "t_", self.detach().t(), lambda g: g.t(), "TBackward1")


def _compare_in_place(name, binary="shape"):
    return _in_place(name + "_", getattr(Tensor, name), binary)


class TensorMethods:
    """The Tensor methods of this module's functions."""

    logaddexp = _method(logaddexp, "logaddexp")
    logaddexp2 = _method(logaddexp2, "logaddexp2")
    fmax = _method(fmax, "fmax")
    fmin = _method(fmin, "fmin")
    nan_to_num = _nan_to_num_method
    nan_to_num_ = nan_to_num_
    signbit = signbit
    copysign = copysign
    copysign_ = _in_place("copysign_", copysign, "shape")
    heaviside = _method(heaviside, "heaviside", "values")
    heaviside_ = _in_place("heaviside_", heaviside)
    gcd = _method(gcd, "gcd")
    gcd_ = gcd_
    lcm = _method(lcm, "lcm")
    lcm_ = lcm_
    deg2rad, deg2rad_, rad2deg, rad2deg_ = deg2rad, deg2rad_, rad2deg, rad2deg_
    float_power = float_power
    float_power_ = _float_power_
    ldexp = _method(ldexp, "ldexp")
    ldexp_ = ldexp_
    frexp = frexp
    nextafter = _method(nextafter, "nextafter")
    nextafter_ = _in_place("nextafter_", nextafter, "cast")
    isneginf, isposinf, isreal = isneginf, isposinf, isreal
    real = property(real)
    imag = property(imag)
    conj, conj_physical, conj_physical_ = conj, conj_physical, conj_physical_
    resolve_conj, resolve_neg, is_conj, is_neg, positive = resolve_conj, resolve_neg, is_conj, is_neg, positive
    absolute, absolute_ = absolute, _absolute_
    greater_equal, less_equal, not_equal = Tensor.ge, Tensor.le, Tensor.ne
    clamp_min, clamp_max, clamp_min_, clamp_max_ = clamp_min, clamp_max, clamp_min_, clamp_max_
    square_ = square_

    # in-place forms of the comparisons, logical and bitwise ops
    eq_, ne_, ge_, gt_, le_, lt_ = (_compare_in_place(n) for n in ("eq", "ne", "ge", "gt", "le", "lt"))
    greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_
    logical_and_ = _compare_in_place("logical_and")
    logical_or_ = _compare_in_place("logical_or")
    logical_xor_ = _compare_in_place("logical_xor")
    bitwise_and_ = _compare_in_place("bitwise_and", "cast")
    bitwise_or_ = _compare_in_place("bitwise_or", "cast")
    bitwise_xor_ = _compare_in_place("bitwise_xor", "cast")

    # in-place forms of arithmetic aliases and of ops with arguments
    def multiply_(self, other):
        return self.mul_(other)

    def subtract_(self, other, *, alpha=1):
        return self.sub_(other, alpha=alpha)

    def true_divide_(self, other):
        return self.div_(other)

    cumsum_ = _cumsum_
    tril_ = _in_place("tril_", lambda self, *args, **kwargs: self.tril(*args, **kwargs))
    triu_ = _in_place("triu_", lambda self, *args, **kwargs: self.triu(*args, **kwargs))
    addmm_ = _in_place("addmm_", lambda self, *args, **kwargs: self.addmm(*args, **kwargs))
    index_add_ = _index_add_
    scatter_ = _in_place("scatter_", lambda self, *args, **kwargs: self.scatter(*args, **kwargs))
    scatter_add_ = _in_place("scatter_add_", Tensor.scatter_add)

    # in-place shape ops
    squeeze_ = _squeeze_
    unsqueeze_ = _unsqueeze_
    t_ = _t_
    transpose_ = _transpose_

    def swapaxes_(self, axis0, axis1):
        return _transpose_(self, axis0, axis1)

    def swapdims_(self, dim0, dim1):
        return _transpose_(self, dim0, dim1)
