"""Argument parsing of tril/triu, flip, roll, repeat, tile, sort, argsort, topk and scatter
as PyTorch's parser does it: the same accepted types and the same TypeError texts.

Each op has one implementation taking the parsed arguments, shared by the Tensor method
(``_tensor.py``) and the torch function (``_functions.py``).
"""

import warnings

import numpy as np

from . import _core
from ._core import Tensor
from ._nondifferentiable import scatter_with_reduce
from ._return_types import topk_result


def _dim_list(dim):
    """A reduction's ``dim`` (an int, a sequence of ints or None) as a list, or None."""
    return [dim] if isinstance(dim, int) else (list(dim) if dim is not None else None)


def _correction(unbiased, correction):
    """var/std's ``correction`` as a float from PyTorch's ``unbiased`` / ``correction``."""
    if correction is not None:
        return float(correction)
    if unbiased is None:
        return 1.0
    return 1.0 if unbiased else 0.0


def _index(v):
    """``v`` as an int where PyTorch takes one (ints, NumPy ints, one-element integer
    tensors; not bool), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, Tensor) and v.dtype == _core.int64 and v.numel() == 1:
        return int(v.item())
    return None


def _at(pos):
    return "" if pos is None else f" (position {pos})"


def _type_name(v):
    """The type name PyTorch's messages show: ``float``, ``Tensor``, ``numpy.bool``."""
    t = type(v)
    if t.__module__ == "builtins" or isinstance(v, Tensor):
        return t.__name__
    return f"{t.__module__}.{t.__name__}"


def _int(fname, name, v, pos):
    i = _index(v)
    if i is None:
        raise TypeError(f"{fname}(): argument '{name}'{_at(pos)} must be int, not {_type_name(v)}")
    return i


def _bool(fname, name, v, pos):
    if isinstance(v, bool):
        return v
    raise TypeError(f"{fname}(): argument '{name}'{_at(pos)} must be bool, not {_type_name(v)}")


def _int_list(fname, name, v, pos, allow_int):
    """A tuple-of-ints argument; a lone int only where PyTorch takes one (``allow_int``)."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (tuple, list)):
        if v and _index(v[0]) is None:
            raise TypeError(
                f"{fname}(): argument '{name}'{_at(pos)} must be tuple of ints, but found element "
                f"of type {_type_name(v[0])} at pos 0"
            )
        out = []
        for i, e in enumerate(v):
            k = int(e) if isinstance(e, bool) else _index(e)
            if k is None:
                raise TypeError(
                    f"{fname}(): argument '{name}' failed to unpack the object at pos {i + 1} "
                    f'with error "type must be tuple of ints,but got {_type_name(e)}"'
                )
            out.append(k)
        return out
    i = _index(v)
    if i is None or not allow_int:
        raise TypeError(f"{fname}(): argument '{name}'{_at(pos)} must be tuple of ints, not {_type_name(v)}")
    return [i]


def _bind(fname, args, kwargs, params, nreq):
    """``{name: (value, position)}`` for ``args``/``kwargs`` bound to ``params`` (the first
    ``nreq`` required); the position is None for keywords."""
    if len(args) > len(params):
        n = len(params)
        if nreq == n:
            takes = f"{n} positional argument" + ("s" if n != 1 else "")
        else:
            takes = f"from {nreq} to {n} positional arguments"
        raise TypeError(f"{fname}() takes {takes} but {len(args)} were given")
    out = {p: (a, i + 1) for i, (p, a) in enumerate(zip(params, args))}
    for k, v in kwargs.items():
        if k in out:
            raise TypeError(f"{fname}() got multiple values for argument '{k}'")
        out[k] = (v, None)
    for p in params[:nreq]:
        if p not in out:
            raise TypeError(f'{fname}() missing 1 required positional arguments: "{p}"')
    for k in kwargs:
        if k not in params:
            raise TypeError(f"{fname}() got an unexpected keyword argument '{k}'")
    return out


def _input(fname, a):
    v, pos = a.pop("input")
    if not isinstance(v, Tensor):
        raise TypeError(f"{fname}(): argument 'input'{_at(pos)} must be Tensor, not {_type_name(v)}")
    return v


def _no_out(fname, kwargs):
    if kwargs.pop("out", None) is not None:
        raise NotImplementedError(f"{fname}(out=...) is not supported by ferrograd")


def _unpack_varargs(args):
    """A method's int list may come unpacked: ``x.flip(0, 1)`` is ``x.flip((0, 1))``."""
    if len(args) > 1 and _index(args[0]) is not None:
        return (args,)
    return args


# the implementations: ``input`` and the bound arguments ``a`` (without input); ``method``
# says whether the method (rather than the function) was called


def _tri(input, a, upper):
    fname = "triu" if upper else "tril"
    return _core._tri(input, _int(fname, "diagonal", *a.get("diagonal", (0, None))), upper)


def _flip(input, a, method):
    v, pos = a["dims"]
    return _core._flip(input, _int_list("flip", "dims", v, pos, method and pos is not None))


def _roll(input, a):
    shifts = _int_list("roll", "shifts", *a["shifts"], True)
    dims, pos = a.get("dims", ((), None))
    dims = [] if dims is None else _int_list("roll", "dims", dims, pos, True)
    return _core._roll(input, shifts, dims)


def _repeat(input, a):
    v, pos = a["repeats"]
    return _core._repeat(input, _int_list("repeat", "repeats", v, pos, pos is not None))


def _tile(input, a, method):
    v, pos = a["dims"]
    dims = _int_list("tile", "dims", v, pos, method and pos is not None)
    if len(dims) < input.dim():
        dims = [1] * (input.dim() - len(dims)) + dims
    return _core._repeat(input, dims)


def _topk(input, a):
    k = _int("topk", "k", *a["k"])
    dim = _int("topk", "dim", *a.get("dim", (-1, None)))
    largest = _bool("topk", "largest", *a.get("largest", (True, None)))
    _bool("topk", "sorted", *a.get("sorted", (True, None)))  # the result is always sorted
    return topk_result(*_core._topk(input, k, dim, largest))


def _invalid_combination(fname, args, kwargs, overloads):
    """PyTorch's TypeError for arguments matching none of an op's overloads (without its
    "didn't match because" details)."""
    got = [_type_name(v) for v in args]
    got += [f"{k}={_type_name(v)}" for k, v in reversed(kwargs.items())]
    got = ", ".join(got) + (", " if kwargs and not args else "")
    lines = "".join(f" * ({o})\n" for o in overloads)
    return TypeError(
        f"{fname}() received an invalid combination of arguments - got ({got}), but expected one of:\n{lines}"
    )


def _sort_args(fname, args, kwargs, method):
    """(input, dim, descending) of sort/argsort: ``(*, bool stable, int dim = -1, bool
    descending = False)`` or ``(int dim = -1, bool descending = False)``."""
    overloads = ["*, bool stable, int dim = -1, bool descending = False", "int dim = -1, bool descending = False"]
    if not method:
        out = "tuple of Tensors out = None" if fname == "sort" else "Tensor out = None"
        overloads = [f"Tensor input, {overloads[0]}, {out}", f"Tensor input, {overloads[1]}"]
        if fname == "sort":
            overloads[1] += f", *, {out}"
    bad = _invalid_combination(fname, args, kwargs, overloads)
    a = dict(kwargs)
    if not method:
        if args:
            a["input"], args = args[0], args[1:]
        elif "input" not in a:
            raise bad
        if not isinstance(a["input"], Tensor):
            where = " (position 1)" if "input" not in kwargs else ""
            raise TypeError(f"{fname}(): argument 'input'{where} must be Tensor, not {_type_name(a['input'])}")
        if "out" in a and fname == "argsort" and "stable" not in a:
            raise bad  # only argsort's stable overload has out=
        _no_out(fname, a)
    # PyTorch's parser picks the keyword-only overload (and refuses positionals) for these
    if len(args) > 2 or "stable" in a and (len(args) == 2 or args and method and "descending" in a):
        if not method and fname == "sort":
            raise bad
        lo, hi = (1, 0) if method else (2, 1)
        given = len(args) + (0 if method else 1)
        raise TypeError(f"{fname}() takes from {lo} to {hi} positional arguments but {given} were given")
    for name, v in zip(("dim", "descending"), args):
        if name in a:
            raise bad
        a[name] = v
    input = a.pop("input", None)
    dim, descending = _index(a.pop("dim", -1)), a.pop("descending", False)
    stable = a.pop("stable", None)
    if a or dim is None or not isinstance(descending, bool) or "stable" in kwargs and args:
        raise bad
    if not isinstance(stable, bool) and (stable is not None or "stable" in kwargs and fname == "argsort"):
        raise bad
    # PyTorch records SortBackward1 when `stable=` is passed at all (the sort is always stable
    # here); the core takes any bool for "given"
    given = bool(stable) if stable is not None else ("stable" in kwargs or None)
    return input, dim, descending, given


def _scatter_args(args, kwargs, method):
    """(input, dim, index, src, value, reduce) of ``scatter(dim, index, src)`` or
    ``scatter(dim, index, value)``, with an optional ``reduce=`` ("add" or "multiply")."""
    overloads = ["int dim, Tensor index, Tensor src", "int dim, Tensor index, Tensor src, *, str reduce",
                 "int dim, Tensor index, Number value", "int dim, Tensor index, Number value, *, str reduce"]
    if not method:
        overloads = [f"Tensor input, {o}" + (", " if "*" in o else ", *, ") + "Tensor out = None"
                     for o in overloads]
    bad = _invalid_combination("scatter", args, kwargs, overloads)
    names = ("dim", "index", "src") if method else ("input", "dim", "index", "src")
    if len(args) > len(names):
        raise bad
    a = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in a or k not in names + ("value", "reduce") + (() if method else ("out",)):
            raise bad
        a[k] = v
    if not method:
        if not isinstance(a.get("input"), Tensor):
            if "input" not in a:
                raise bad
            where = " (position 1)" if "input" not in kwargs else ""
            raise TypeError(f"scatter(): argument 'input'{where} must be Tensor, not {_type_name(a['input'])}")
        _no_out("scatter", a)
    dim, index = _index(a.get("dim")), a.get("index")
    src = a.get("src", a.get("value"))
    if dim is None or not isinstance(index, Tensor) or "src" in a and "value" in a:
        raise bad
    if isinstance(src, Tensor):
        if "value" in a:
            raise bad
        value = None
    elif isinstance(src, (int, float, np.integer, np.floating, np.bool_)):
        if "src" in kwargs:
            raise bad
        src, value = None, src
    else:
        raise bad
    reduce = a.get("reduce")
    if "reduce" in a:
        if not isinstance(reduce, str):
            raise bad
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if src is not None:
            warnings.warn(
                "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                UserWarning, stacklevel=3,
            )
    return a.get("input"), dim, index, src, value, reduce


def _scatter(input, dim, index, src, value, reduce=None):
    if reduce is not None:
        return scatter_with_reduce(input, dim, index, src, value, reduce)
    if src is not None:
        return _core._scatter(input, dim, index, src)
    return _core._scatter(input, dim, index, None, value)
