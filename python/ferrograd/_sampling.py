"""Random sampling beyond ``rand``/``randn``/``randint``: ``multinomial``, ``bernoulli``,
``poisson``, ``normal`` and the in-place fills of Tensor (``bernoulli_``, ``exponential_``,
``geometric_``, ``log_normal_``, ``cauchy_``, ``uniform_``, ``normal_``).

The draws come from ferrograd's generator (``_core``'s samplers), so their values differ from
PyTorch's; the distributions, shapes, dtypes, argument rules and error messages are PyTorch's.
Like PyTorch, a sample is differentiable with respect to its tensor parameters with a zero
gradient (``torch.normal(mean, std)`` passes no gradient to ``mean`` or ``std``).
"""

from . import _core, _dtype
from ._core import Tensor, float32, float64, int64
from ._factories import _check_requires_grad, _size_args
from .autograd.function import Function
from .autograd.grad_mode import no_grad

# the names in PyTorch's messages: ScalarType names and C++ type names
_SCALAR_NAME = {"torch.float32": "Float", "torch.float64": "Double", "torch.int64": "Long", "torch.bool": "Bool"}
_CPP_NAME = {"torch.float32": "float", "torch.float64": "double", "torch.int64": "long int", "torch.bool": "bool"}


def _not_implemented(kernel, dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{_SCALAR_NAME[str(dtype)]}\'')


def _num(x):
    """A double as C++ streams print it (``2``, ``-1``, ``1.5``)."""
    return f"{float(x):g}"


def _type_name(x):
    return "Tensor" if isinstance(x, Tensor) else type(x).__name__


def _invalid_combination(fn, args, kwargs, signatures):
    got = [_type_name(a) for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
    lines = "".join(f" * ({s})\n" for s in signatures)
    return TypeError(
        f"{fn}() received an invalid combination of arguments - got ({', '.join(got)}), but "
        f"expected one of:\n{lines}"
    )


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class _ZeroGrad(Function):
    """``sample`` made a function of ``params`` with a zero gradient (PyTorch's NormalBackward,
    BernoulliBackward, PoissonBackward; grid_sample's grid in nearest mode). The gradient of
    ``sample`` itself, if it has one, passes through."""
    _jvp_by_backward = True  # forward-mode AD differentiates backward

    @staticmethod
    def forward(ctx, sample, *params):
        ctx.shapes = [(tuple(p.shape), p.dtype) for p in params]
        return sample.clone()

    @staticmethod
    def backward(ctx, grad):
        return (grad, *(grad.new_zeros(shape, dtype=dtype) for shape, dtype in ctx.shapes))


def _with_zero_grad(sample, *params):
    """``sample``, depending on the tensors among ``params`` with a zero gradient when one of
    them requires grad."""
    tensors = [p for p in params if isinstance(p, Tensor)]
    if any(p.requires_grad for p in tensors):
        return _ZeroGrad.apply(sample, *tensors)
    return sample


# --- multinomial


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """``num_samples`` category indices per row of the (unnormalised) probabilities ``input``."""
    if not isinstance(num_samples, int) or isinstance(num_samples, bool):
        raise TypeError(
            f"multinomial(): argument 'num_samples' (position 2) must be int, not "
            f"{type(num_samples).__name__}"
        )
    if not isinstance(replacement, bool):
        raise TypeError(
            f"multinomial(): argument 'replacement' (position 3) must be bool, not "
            f"{type(replacement).__name__}"
        )
    return _core._multinomial(input.detach(), num_samples, replacement, generator)


# --- bernoulli, poisson

_BERNOULLI_SIGNATURES = (
    "Tensor input, *, torch.Generator generator = None, Tensor out = None",
    "Tensor input, float p, *, torch.Generator generator = None",
)


def bernoulli(input, *args, generator=None, out=None, **kwargs):
    """``bernoulli(input)``: 0/1 draws with probabilities ``input``; ``bernoulli(input, p)``:
    draws of probability ``p`` shaped like ``input``."""
    p = args[0] if args else kwargs.pop("p", None)
    if len(args) > 1 or kwargs or (p is not None and not _is_number(p)):
        shown = dict(kwargs, **({"p": p} if not args and p is not None else {}))
        raise _invalid_combination("bernoulli", (input, *args), shown, _BERNOULLI_SIGNATURES)
    if p is None:
        sample = _core._sample_from("bernoulli", input.detach(), generator)
    else:
        _check_bernoulli_p(p)
        sample = _core._sample(list(input.shape), "bernoulli", float(p), 0.0, input.dtype, generator)
    return _with_zero_grad(sample, input)


def _check_bernoulli_p(p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")


def _tensor_bernoulli(self, *args, generator=None, **kwargs):
    """``Tensor.bernoulli()`` / ``Tensor.bernoulli(p)``."""
    p = args[0] if args else kwargs.pop("p", None)
    if len(args) > 1 or kwargs or (p is not None and not _is_number(p)):
        shown = dict(kwargs, **({"p": p} if not args and p is not None else {}))
        raise _invalid_combination("bernoulli", args, shown, (
            "*, torch.Generator generator = None", "float p, *, torch.Generator generator = None"))
    return bernoulli(self, generator=generator) if p is None else bernoulli(self, p, generator=generator)


def bernoulli_(self, p=0.5, *, generator=None):
    """In place: ``self`` filled with 0/1 draws of probability ``p`` (a number, or a tensor
    broadcastable to ``self``)."""
    if isinstance(p, Tensor):
        if not p.is_floating_point():
            raise _not_implemented("bernoulli_tensor_cpu_p_", p.dtype)
        _core._fill_sample(self, "bernoulli", 0.0, 0.0, p.detach().expand(self.shape), generator)
    else:
        _check_bernoulli_p(p)
        _core._fill_sample(self, "bernoulli", float(p), 0.0, None, generator)
    return self


def poisson(input, generator=None):
    """Poisson draws with the rates ``input``."""
    return _with_zero_grad(_core._sample_from("poisson", input.detach(), generator), input)


# --- normal

_NORMAL_SIGNATURES = (
    "Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None",
    "Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None",
    "float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None",
    "float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
    "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False",
)


def _is_size(s):
    return isinstance(s, (tuple, list)) and all(
        isinstance(n, int) and not isinstance(n, bool) for n in s)


def _randn(shape, dtype, generator):
    return _core._random(list(shape), "normal", 0.0, 1.0, dtype, generator)


def normal(*args, generator=None, out=None, **kwargs):
    """``normal(mean, std)`` with tensors or numbers for each (sizes broadcast), or
    ``normal(mean, std, size)`` with two numbers."""
    names = ("mean", "std", "size")
    bound = dict(zip(names, args))
    extra = {k: v for k, v in kwargs.items() if k not in names}
    factory_kw = {"dtype", "layout", "device", "pin_memory", "requires_grad"}
    dup = any(k in bound for k in kwargs if k in names)
    bound.update({k: v for k, v in kwargs.items() if k in names})
    mean, std, size = bound.get("mean"), bound.get("std", 1.0), bound.get("size")
    is_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if len(args) > 3 or dup or "mean" not in bound or set(extra) - factory_kw:
        raise _invalid_combination("normal", args, kwargs, _NORMAL_SIGNATURES)
    if size is None and not extra and (is_t[0] or is_t[1]) and (is_t[0] or _is_number(mean)) and (
            is_t[1] or _is_number(std)):
        return _normal_tensor(mean, std, generator)
    if not any(is_t) and _is_number(mean) and _is_number(std) and _is_size(size):
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        dtype = extra.get("dtype") or _dtype._default_dtype
        shape = _size_args((tuple(size),))
        t = _core._random(shape, "normal", float(mean), float(std), dtype, generator)
        return _check_requires_grad(t, extra.get("requires_grad", False))
    raise _invalid_combination("normal", args, kwargs, _NORMAL_SIGNATURES)


def _normal_tensor(mean, std, generator):
    dtype = mean.dtype if isinstance(mean, Tensor) else std.dtype
    if not dtype.is_floating_point:
        raise _not_implemented("normal_kernel_cpu", dtype)
    with no_grad():
        if isinstance(std, Tensor):
            if bool((std < 0).any()):
                raise RuntimeError("normal expects all elements of std >= 0.0")
        elif std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        # (the broadcast shape, with the binary ops' message when there is none)
        shape = (mean + std).shape if isinstance(mean, Tensor) and isinstance(std, Tensor) else (
            mean.shape if isinstance(mean, Tensor) else std.shape)
        sample = (mean + std * _randn(shape, float64, generator)).to(dtype)
    return _with_zero_grad(sample, mean, std)


# --- in-place fills


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    from_ = kw.pop("from", from_)
    if not self.is_floating_point():
        raise _not_implemented("check_uniform_bounds", self.dtype)
    if from_ > to:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={_num(from_)} > to={_num(to)}")
    _core._fill_random(self, "uniform", float(from_), float(to), generator)
    return self


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    if not self.is_floating_point():
        raise _not_implemented("normal_kernel_cpu", self.dtype)
    _core._fill_random(self, "normal", float(mean), float(std), generator)
    return self


def exponential_(self, lambd=1.0, *, generator=None):
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    if not self.is_floating_point():
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {_SCALAR_NAME[str(self.dtype)]}")
    _core._fill_sample(self, "exponential", float(lambd), 0.0, None, generator)
    return self


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    if self.dtype not in (float32, float64, int64):
        raise _not_implemented("geometric_cpu", self.dtype)
    _core._fill_sample(self, "geometric", float(p), 0.0, None, generator)
    return self


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    if not self.is_floating_point():
        raise _not_implemented("log_normal_cpu", self.dtype)
    _core._fill_sample(self, "log_normal", float(mean), float(std), None, generator)
    return self


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    if not self.is_floating_point():
        raise RuntimeError(
            "Cauchy distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {_CPP_NAME[str(self.dtype)]}")
    _core._fill_sample(self, "cauchy", float(median), float(sigma), None, generator)
    return self
