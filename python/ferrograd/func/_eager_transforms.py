"""``torch.func`` gradient transforms built on ``autograd.grad``: grad, grad_and_value, vjp,
jacrev, jvp, jacfwd, hessian and linearize.

How a transform runs ``func``: grad mode is on inside (PyTorch: a transform ignores a
``no_grad`` around it, and obeys one inside ``func``); each differentiated argument becomes a
fresh leaf requiring grad, or, when it already requires grad and grad mode was on outside, a
view of it (so that results stay differentiable for an enclosing transform or a later
``backward``: this is how transforms nest). Gradients are taken with ``create_graph=True`` when
something outside the transform can need them. What the transform returns is detached unless
its graph reaches a tensor from outside the transform (found by walking the graph), so
``grad(f)(x)`` of a plain ``x`` is a plain tensor, as in PyTorch.

Forward-mode products (``jvp``, ``jacfwd``, ``hessian``, ``linearize``) use the double-vjp
trick: with ``g(u) = J^T u`` (a vjp taken with ``create_graph=True`` at a dummy cotangent ``u``),
``J t`` is the vjp of ``g`` with respect to ``u`` along ``t``. Every ferrograd op has a
differentiable backward, so this is exact (not a finite difference); it costs a double
backward. Custom ``autograd.Function``s inside them need a differentiable ``backward``.
"""

import functools

from .._core import Tensor, cat, default_generator, is_grad_enabled
from .._factories import zeros, zeros_like
from .._functions import split
from ..autograd import _transforms
from ..autograd._engine import grad as _autograd_grad_raw
from ..autograd.grad_mode import enable_grad
from ..autograd.graph import AccumulateGrad, disable_saved_tensors_hooks
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "jvp", "jacfwd", "hessian", "linearize"]

JVP_STR = "jvp(f, primals, tangents)"

# PyTorch runs grad and vjp (so jacrev and hessian) inside disable_saved_tensors_hooks
_NO_SAVED_TENSORS_HOOKS = (
    "torch.func.{grad, vjp, jacrev, hessian} don't yet support saved tensor hooks. Please open an "
    "issue with your use case."
)


# --- argnums ------------------------------------------------------------------------------------


def _validate_and_wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _wrap_argnums(argnums, num_args):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        return _validate_and_wrap_argnum(argnums, num_args)
    argnums = tuple(_validate_and_wrap_argnum(a, num_args) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return argnums


def _slice_argnums(args, argnums, as_tuple=True):
    argnums = _wrap_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return (args[argnums],) if as_tuple else args[argnums]
    return tuple(args[i] for i in argnums)


def _replace_args(args, new, argnums):
    """``args`` with the differentiated ones (``new``, as ``_slice_argnums(as_tuple=False)``
    gave them) put back."""
    argnums = _wrap_argnums(argnums, len(args))
    args = list(args)
    if isinstance(argnums, int):
        args[argnums] = new
    else:
        for i, v in zip(argnums, new):
            args[i] = v
    return tuple(args)


# --- levels: differentiable inputs in, detached results out -------------------------------------


class _Level:
    """One transform's bookkeeping: grad mode outside it, and the fresh leaves it created."""

    def __init__(self):
        self.outer = is_grad_enabled()
        self.fresh = []

    def make_differentiable(self, tree):
        def make(x):
            if not isinstance(x, Tensor):
                raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
            if self.outer and x.requires_grad:
                return x.view_as(x)
            leaf = x.detach().requires_grad_()
            self.fresh.append(leaf)
            return leaf

        leaves, spec = tree_flatten(tree)
        return tree_unflatten([make(x) for x in leaves], spec)

    def new_leaf(self, t):
        self.fresh.append(t)
        return t

    def reaches_outside(self, tensors):
        """Whether the graph of any of ``tensors`` reaches a tensor that requires grad and was
        not made by this transform (then results must stay differentiable)."""
        if not self.outer:
            return False
        fresh = {id(f) for f in self.fresh}  # the leaves are alive (held here): ids are unique
        seen = set()
        stack = []
        for t in tensors:
            if not (isinstance(t, Tensor) and t.requires_grad):
                continue
            if t.grad_fn is None:
                if id(t) not in fresh:
                    return True
                continue
            stack.append(t.grad_fn)
        while stack:
            node = stack.pop()
            key = node._h.key()
            if key in seen:
                continue
            seen.add(key)
            if isinstance(node, AccumulateGrad):
                var = node.variable
                if var is None or id(var) not in fresh:
                    return True
                continue
            stack.extend(n for n, _ in node.next_functions if n is not None)
        return False

    def unwrap_aux(self, tree):
        """``unwrap`` for the ``aux`` output of ``has_aux``: only tensors are allowed."""
        for x in tree_flatten(tree)[0]:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
        return self.unwrap(tree)

    def unwrap(self, tree):
        """The tensors of ``tree`` as the transform returns them: detached unless their graph
        reaches outside the transform."""
        leaves, spec = tree_flatten(tree)
        out = [
            x.detach() if isinstance(x, Tensor) and x.requires_grad
            and not self.reaches_outside([x]) else x
            for x in leaves
        ]
        return tree_unflatten(out, spec)


def _autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=False, create_graph=True):
    """functorch's ``_autograd_grad``: outputs that do not require grad are skipped, and
    unreached inputs get zeros."""
    if grad_outputs is None:
        pairs = [(o, None) for o in outputs if o.requires_grad]
    else:
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(zeros_like(i) for i in inputs)
    grads = _autograd_grad_raw(
        [o for o, _ in pairs], list(inputs),
        None if grad_outputs is None else [g for _, g in pairs],
        retain_graph=retain_graph, create_graph=create_graph, allow_unused=True,
    )
    return tuple(zeros_like(i) if g is None else g for g, i in zip(grads, inputs))


# --- grad, grad_and_value -----------------------------------------------------------------------


def grad_and_value(func, argnums=0, has_aux=False):
    """``func``'s gradient with respect to the argument(s) ``argnums``, and its value:
    ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        level = _Level()
        with disable_saved_tensors_hooks(_NO_SAVED_TENSORS_HOOKS), _transforms.running("grad"), \
                enable_grad():
            diff_args = level.make_differentiable(_slice_argnums(args, argnums, as_tuple=False))
            output = func(*_replace_args(args, diff_args, argnums), **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(output, tuple) and len(output) == 2):
                    raise RuntimeError(
                        "grad_and_value(f)(*args): output of function f should be a tuple: "
                        "(output, aux) if has_aux is True"
                    )
                output, aux = output
            if not isinstance(output, Tensor):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                    f"{type(output)}"
                )
            if output.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                    f"tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                    "APIs instead?"
                )
            flat_diff, spec = tree_flatten(diff_args)
            # a graph kept for an enclosing transform goes through this one's forward nodes
            # (one graph for all levels), so they must keep their saved tensors
            keep = level.reaches_outside([output])
            flat_grad = _autograd_grad((output,), flat_diff, retain_graph=keep, create_graph=keep)
            grad_input = level.unwrap(tree_unflatten(list(flat_grad), spec))
            output = level.unwrap(output)
            if has_aux:
                return grad_input, (output, level.unwrap_aux(aux))
            return grad_input, output

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of ``func`` (returning a scalar tensor) with respect to the argument(s)
    ``argnums``; with ``has_aux``, ``func`` returns ``(output, aux)`` and this
    ``(grad, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


# --- vjp, jacrev --------------------------------------------------------------------------------


def _check_outputs(flat_outputs, api):
    if (len(flat_outputs) == 1 and flat_outputs[0] is None) or len(flat_outputs) < 1:
        raise RuntimeError(
            f"{api}: Expected f to be a function that has non-empty output (got output = "
            f"{flat_outputs})"
        )
    for o in flat_outputs:
        if not isinstance(o, Tensor):
            raise RuntimeError(
                f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                f"{type(o)}"
            )


def _vjp_with_argnums(func, *primals, argnums=None, has_aux=False):
    level = _Level()
    with disable_saved_tensors_hooks(_NO_SAVED_TENSORS_HOOKS), _transforms.running("grad"), \
            enable_grad():
        if argnums is None:
            diff_primals = level.make_differentiable(primals)
            args = diff_primals
        else:
            diff_primals = level.make_differentiable(
                _slice_argnums(primals, argnums, as_tuple=False))
            args = _replace_args(primals, diff_primals, argnums)
        primals_out = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(primals_out, tuple) and len(primals_out) == 2):
                raise RuntimeError(
                    "vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                    "has_aux is True"
                )
            primals_out, aux = primals_out
            aux = level.unwrap_aux(aux)
        flat_out, out_spec = tree_flatten(primals_out)
        _check_outputs(flat_out, "vjp(f, *primals)")
        for o in flat_out:
            if not o.is_floating_point():
                raise RuntimeError(
                    "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, "
                    f"got Tensor with dtype {o.dtype}"
                )
        flat_diff, primals_spec = tree_flatten(diff_primals)
        out_reaches_outside = level.reaches_outside(flat_out)
        results = level.unwrap(primals_out)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = is_grad_enabled()
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {_pprint(cot_spec)}, primal output: "
                f"{_pprint(out_spec)}"
            )
        # the vjps can only depend on tensors from outside through the outputs' graph or the
        # cotangents: otherwise no graph is needed, the results would be detached anyway
        create_graph = create_graph and (out_reaches_outside or level.reaches_outside(flat_cot))
        with enable_grad():
            res = _autograd_grad(flat_out, flat_diff, flat_cot, retain_graph=retain_graph,
                                 create_graph=create_graph)
        if create_graph:
            res = tuple(level.unwrap(r) for r in res)
        return tree_unflatten(list(res), primals_spec)

    if has_aux:
        return results, vjp_fn, aux
    return results, vjp_fn


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the vector-Jacobian products
    with respect to every primal (a tuple); with ``has_aux``, ``(output, vjp_fn, aux)``."""
    return _vjp_with_argnums(func, *primals, has_aux=has_aux)


def _pprint(spec):
    class Star:
        def __repr__(self):
            return "*"

    return repr(tree_unflatten([Star()] * spec.num_leaves, spec))


def _basis_vectors(flat_tensors):
    """For each position ``k`` of the tensors laid end to end, the one-hot tensors (shaped as
    ``flat_tensors``) with a 1 at ``k``."""
    sizes = [t.numel() for t in flat_tensors]
    for k in range(sum(sizes)):
        out = []
        start = 0
        for t, n in zip(flat_tensors, sizes):
            e = zeros(n, dtype=t.dtype)
            if start <= k < start + n:
                e[k - start] = 1
            out.append(e.view(t.shape))
            start += n
        yield out


def _assemble(columns, flat_rows_like, flat_cols_like, stack_dim_first):
    """The Jacobian blocks from per-basis results: ``columns[k][i]`` is the result for basis
    vector ``k`` and tensor ``i`` of ``flat_rows_like``; the basis runs over
    ``flat_cols_like`` laid end to end. Returns ``blocks[i][j]`` of shape
    ``rows[i].shape + cols[j].shape`` (``stack_dim_first``: the basis indexes the rows)."""
    numels = [c.numel() for c in flat_cols_like]
    blocks = []
    for i, r in enumerate(flat_rows_like):
        if columns:
            stacked = _stack_dim([col[i] for col in columns], 0 if stack_dim_first else r.dim())
        else:
            shape = (0, *r.shape) if stack_dim_first else (*r.shape, 0)
            stacked = zeros(shape, dtype=r.dtype)
        dim = 0 if stack_dim_first else r.dim()
        parts = split(stacked, numels, dim=dim)
        row = []
        for p, c in zip(parts, flat_cols_like):
            if stack_dim_first:
                row.append(p.reshape(tuple(c.shape) + tuple(r.shape)))
            else:
                row.append(p.reshape(tuple(r.shape) + tuple(c.shape)))
        blocks.append(row)
    return blocks


def _stack_dim(tensors, dim):
    return cat([t.unsqueeze(dim) for t in tensors], dim)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to the argument(s) ``argnums``, by reverse mode:
    one vjp per output element (``chunk_size`` only bounds memory in PyTorch: the results do
    not depend on it)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper_fn(*args):
        _error_if_complex("jacrev", args, is_input=True)
        vjp_out = _vjp_with_argnums(func, *args, argnums=argnums, has_aux=has_aux)
        if has_aux:
            output, vjp_fn, aux = vjp_out
        else:
            output, vjp_fn = vjp_out
        flat_output, output_spec = tree_flatten(output)
        primals = _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        rows = []
        for basis in _basis_vectors(flat_output):
            res, _ = tree_flatten(vjp_fn(tree_unflatten(basis, output_spec)))
            rows.append(res)
        # blocks[j][i]: d output i / d primal j, stacked over the output elements first
        blocks = _assemble(rows, flat_primals, flat_output, stack_dim_first=True)
        per_output = [
            tree_unflatten([blocks[j][i] for j in range(len(flat_primals))], primals_spec)
            for i in range(len(flat_output))
        ]
        if isinstance(argnums, int):
            per_output = [p[0] for p in per_output]
        result = tree_unflatten(per_output, output_spec)
        if has_aux:
            return result, aux
        return result

    return wrapper_fn


def _error_if_complex(name, args, is_input):
    for idx, a in enumerate(tree_flatten(args)[0]):
        if isinstance(a, Tensor) and a.dtype.is_complex:
            what = "inputs" if is_input else "outputs"
            raise RuntimeError(
                f"{name}: Expected all {what} to be real but received complex tensor at "
                f"flattened input idx: {idx}"
            )


# --- forward-mode products by double vjp ----------------------------------------------------------


def _linearize(func, primals, argnums, has_aux, api=JVP_STR):
    """Runs ``func`` once and returns ``(level, flat outputs, output spec, aux, jvp)`` where
    ``jvp(flat_tangents)`` gives the tangent of each output (None where the output does not
    depend on the differentiated primals)."""
    level = _Level()
    with _transforms.running("jvp"), enable_grad():
        if argnums is None:
            diff = level.make_differentiable(primals)
            args = diff
        else:
            diff = level.make_differentiable(_slice_argnums(primals, argnums))
            args = _replace_args(primals, diff if not isinstance(argnums, int) else diff[0],
                                 argnums)
        out = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(
                    f"{api}: output of function f should be a tuple: (output, aux) if has_aux "
                    "is True"
                )
            out, aux = out
            aux = level.unwrap_aux(aux)
        flat_out, out_spec = tree_flatten(out)
        _check_outputs(flat_out, api)
        flat_in, _ = tree_flatten(diff)
        diff_outs = [i for i, o in enumerate(flat_out) if o.requires_grad]
        # g(u) = J^T u at dummy cotangents u (zeros: g is linear in u)
        us = [level.new_leaf(zeros_like(flat_out[i]).requires_grad_()) for i in diff_outs]
        if diff_outs:
            gs = _autograd_grad_raw([flat_out[i] for i in diff_outs], flat_in, us,
                                    retain_graph=True, create_graph=True, allow_unused=True)
        else:
            gs = [None] * len(flat_in)

    def jvp_fn(flat_tangents):
        with _transforms.running("jvp"), enable_grad():
            pairs = [(g, t) for g, t in zip(gs, flat_tangents) if g is not None and g.requires_grad]
            tangents_out = [None] * len(flat_out)
            if not pairs:
                return tangents_out
            keep = level.reaches_outside(
                [g for g, _ in pairs] + [t for _, t in pairs])
            jv = _autograd_grad_raw([g for g, _ in pairs], us, [t for _, t in pairs],
                                    retain_graph=True, create_graph=keep, allow_unused=True)
            for i, t in zip(diff_outs, jv):
                tangents_out[i] = None if t is None else level.unwrap(t)
            return tangents_out

    return level, flat_out, out_spec, aux, jvp_fn


def _check_tangents(flat_primals, flat_tangents):
    for p, t in zip(flat_primals, flat_tangents):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                "original Tensor, this is not supported. Tensor is of size "
                f"{list(p.shape)} while the given forward gradient is of size {list(t.shape)}."
            )


def _jvp_with_argnums(func, primals, tangents, argnums, *, strict=False, has_aux):
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{JVP_STR}: Expected primals to be a tuple. E.g. it should be valid to call "
            "f(*primals)."
        )
    diff_args = primals if argnums is None else _slice_argnums(primals, argnums)
    flat_primals, primals_spec = tree_flatten(diff_args)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(
            f"{JVP_STR}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {primals_spec} and tangents with structure {tangents_spec}"
        )
    for name, flat in (("primals", flat_primals), ("tangents", flat_tangents)):
        if len(flat) == 0:
            raise RuntimeError(f"{JVP_STR}: Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(
                    f"{JVP_STR}: Expected {name} to only contain Tensors, got {type(x)}")
    _check_tangents(flat_primals, flat_tangents)
    level, flat_out, out_spec, aux, jvp_fn = _linearize(func, primals, argnums, has_aux)
    tangents_out = jvp_fn(flat_tangents)
    for k, t in enumerate(tangents_out):
        if t is None:
            if strict:
                raise RuntimeError(
                    "jvp(f, primals, tangents, strict=True): The output of f is independent of "
                    "the inputs. This is not allowed with strict=True."
                )
            tangents_out[k] = zeros_like(flat_out[k]).detach()
    primals_out = tree_unflatten([level.unwrap(o) for o in flat_out], out_spec)
    tangents_out = tree_unflatten(tangents_out, out_spec)
    if has_aux:
        return primals_out, tangents_out, aux
    return primals_out, tangents_out


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product, computed with the
    double-vjp trick (two reverse passes; see the module docstring). With ``has_aux``,
    ``func`` returns ``(output, aux)`` and this ``(output, jvp_out, aux)``."""
    return _jvp_with_argnums(func, primals, tangents, None, strict=strict, has_aux=has_aux)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` gives ``J @ tangents`` at the
    primals, reusing one run of ``func`` (double-vjp trick)."""
    level, flat_out, out_spec, _, jvp_flat = _linearize(func, primals, None, False,
                                                        api="linearize")
    flat_primals, primals_spec = tree_flatten(primals)

    def jvp_fn(*tangents):
        flat_tangents, tangents_spec = tree_flatten(tangents)
        if tangents_spec != primals_spec:
            raise RuntimeError(
                f"Expected the tangents {tangents_spec} to have the same argspec as the primals "
                f"{primals_spec}"
            )
        _check_tangents(flat_primals, flat_tangents)
        out = jvp_flat(flat_tangents)
        out = [zeros_like(o).detach() if t is None else t for t, o in zip(out, flat_out)]
        return tree_unflatten(out, out_spec)

    return tree_unflatten([level.unwrap(o) for o in flat_out], out_spec), jvp_fn


_RANDOMNESS_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out of "
    "vmap"
)


def _check_randomness_arg(randomness):
    if randomness not in ["error", "different", "same"]:
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}"
        )


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to the argument(s) ``argnums``, column by column:
    one Jacobian-vector product per input element (double-vjp trick, see the module
    docstring). ``randomness`` is vmap's: ``"error"`` refuses random ops in ``func``, ``"same"``
    runs ``func`` once for all columns, ``"different"`` once per column."""

    @functools.wraps(func)
    def wrapper_fn(*args):
        _check_randomness_arg(randomness)
        _error_if_complex("jacfwd", args, is_input=True)
        primals = args if argnums is None else _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        columns = []
        lin = None
        for basis in _basis_vectors(flat_primals):
            if lin is None or randomness == "different":
                state = default_generator.get_state().tolist()
                lin = _linearize(func, args, argnums, has_aux)
                if randomness == "error" and default_generator.get_state().tolist() != state:
                    raise RuntimeError(_RANDOMNESS_ERROR)
            _, flat_out, _, _, jvp_fn = lin
            tangents = jvp_fn(basis)
            columns.append([zeros_like(o).detach() if t is None else t
                            for t, o in zip(tangents, flat_out)])
        if lin is None:  # no input elements: the function still runs once
            lin = _linearize(func, args, argnums, has_aux)
        level, flat_out, out_spec, aux, _ = lin
        _error_if_complex("jacfwd", flat_out, is_input=False)
        blocks = _assemble(columns, flat_out, flat_primals, stack_dim_first=False)
        per_output = [tree_unflatten(row, primals_spec) for row in blocks]
        if isinstance(argnums, int):
            per_output = [p[0] for p in per_output]
        result = tree_unflatten(per_output, out_spec)
        if has_aux:
            return result, aux
        return result

    return wrapper_fn


def hessian(func, argnums=0):
    """The Hessian of ``func`` with respect to the argument(s) ``argnums``:
    ``jacfwd(jacrev(func, argnums), argnums)``, as in PyTorch."""
    return jacfwd(jacrev(func, argnums), argnums)
