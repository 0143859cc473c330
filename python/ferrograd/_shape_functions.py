"""Dimension-moving and contracting torch functions: ``movedim``, ``swapdims``, ``diagonal``,
``diag``, ``diag_embed``, ``trace``, ``triu_indices`` / ``tril_indices``, ``kron``,
``tensordot``, ``einsum`` and ``cdist``.

Each is one function taking ``input`` first; the Tensor methods of the same names
(``_tensor.py``) are these functions. Everything is composed of differentiable ops (``diagonal``
and ``diag_embed`` are native: a view and its adjoint), so the gradients follow.
"""

from . import _core
from ._core import Tensor, int64


def _check_tensor(fname, value, name="input", pos=1):
    if not isinstance(value, Tensor):
        where = f" (position {pos})" if pos else ""
        raise TypeError(f"{fname}(): argument '{name}'{where} must be Tensor, not {type(value).__name__}")


def _wrap_dim(dim, ndim):
    """``dim`` wrapped into ``range(ndim)`` (a 0-d tensor takes -1 and 0), with PyTorch's
    IndexError."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


_DTYPE_NAMES = {"torch.float32": "Float", "torch.float64": "Double", "torch.float16": "Half",
                "torch.bfloat16": "BFloat16", "torch.int64": "Long", "torch.int32": "Int", "torch.int16": "Short",
                "torch.int8": "Char", "torch.uint8": "Byte", "torch.bool": "Bool"}


def _scalar_type_name(dtype):
    """PyTorch's ScalarType name of a dtype (``Float``, ``Double``, ``Long``, ``Bool``, ...)."""
    return _DTYPE_NAMES[str(dtype)]


# --- moving dims


def movedim(input, source, destination):
    """``input`` with the dims ``source`` moved to the positions ``destination`` (ints or
    sequences of ints); the other dims keep their order. A view (native: ``Tensor.movedim``)."""
    _check_tensor("movedim", input)
    return input.movedim(source, destination)


moveaxis = movedim


def swapdims(input, dim0, dim1):
    """``transpose(input, dim0, dim1)``."""
    _check_tensor("swapdims", input)
    return Tensor.transpose(input, dim0, dim1)


# --- diagonals


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The ``offset`` diagonal of the planes (``dim1``, ``dim2``), as a last dim: a view."""
    _check_tensor("diagonal", input)
    return _core._diagonal(input, offset, dim1, dim2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Zeros with the last dim of ``input`` on the ``offset`` diagonal of new (``dim1``,
    ``dim2``) planes."""
    _check_tensor("diag_embed", input)
    return _core._diag_embed(input, offset, dim1, dim2)


def diag(input, diagonal=0):
    """A 1-D ``input``: the square matrix with it on diagonal ``diagonal``; a 2-D one: a copy
    of that diagonal."""
    _check_tensor("diag", input)
    if input.dim() == 1:
        return _core._diag_embed(input, diagonal, 0, 1)
    if input.dim() == 2:
        return _core._diagonal(input, diagonal, 0, 1).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def trace(input):
    """The sum of the main diagonal of a matrix."""
    _check_tensor("trace", input)
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype == _core.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return _core._diagonal(input, 0, 0, 1).sum()


def _tri_indices(fname, row, col, offset, dtype, upper):
    if dtype is not None and dtype != int64:
        raise NotImplementedError(f"\"{fname}\" not implemented for '{_scalar_type_name(dtype)}'")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    return _core._tri_indices(row, col, offset, upper)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, column) indices of the upper triangle of a ``row`` x ``col`` matrix from
    diagonal ``offset`` on, row-major, as a 2 x N int64 tensor."""
    return _tri_indices("triu_indices", row, col, offset, dtype, True)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, column) indices of the lower triangle of a ``row`` x ``col`` matrix up to
    diagonal ``offset``, row-major, as a 2 x N int64 tensor."""
    return _tri_indices("tril_indices", row, col, offset, dtype, False)


# --- products


def kron(input, other):
    """The Kronecker product: blocks ``input[i] * other``."""
    _check_tensor("kron", input)
    _check_tensor("kron", other, "other", 2)
    nd = max(input.dim(), other.dim())
    a_shape = (1,) * (nd - input.dim()) + tuple(input.shape)
    b_shape = (1,) * (nd - other.dim()) + tuple(other.shape)
    # (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...) -> (a0 * b0, a1 * b1, ...)
    a = input.reshape([s for d in a_shape for s in (d, 1)])
    b = other.reshape([s for d in b_shape for s in (1, d)])
    return (a * b).reshape([x * y for x, y in zip(a_shape, b_shape)])


def _dims_list(v):
    if isinstance(v, Tensor):
        return [int(d) for d in v.reshape(-1).tolist()]
    if isinstance(v, int):
        return [v]
    return [int(d) for d in v]


def tensordot(a, b, dims=2, out=None):
    """Sums the products of ``a``'s and ``b``'s elements over the dims ``dims`` names: an int
    ``n`` (the last ``n`` dims of ``a`` with the first ``n`` of ``b``) or two lists of dims.
    Computed as one matrix product of the reshaped operands."""
    if out is not None:
        raise NotImplementedError("tensordot(out=...) is not supported by ferrograd")
    _check_tensor("tensordot", a, "a")
    _check_tensor("tensordot", b, "b", 2)
    if isinstance(dims, Tensor) and dims.dim() == 0:
        dims = int(dims.item())
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        if isinstance(dims, Tensor):
            dims = dims.tolist()
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of lists of dims")
        if isinstance(dims[0], int) != isinstance(dims[1], int):
            raise TypeError("tensordot(): argument 'dims_self' (position 3) must be tuple of ints, not int")
        dims_a, dims_b = _dims_list(dims[0]), _dims_list(dims[1])
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    wa = [_wrap_dim(d, a.dim()) for d in dims_a]
    wb = [_wrap_dim(d, b.dim()) for d in dims_b]
    for da, db, ia, ib in zip(dims_a, dims_b, wa, wb):
        if a.shape[ia] != b.shape[ib]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[ia]} in dim {da} and "
                f"second has size {b.shape[ib]} in dim {db}"
            )
    free_a = [d for d in range(a.dim()) if d not in wa]
    free_b = [d for d in range(b.dim()) if d not in wb]
    k = 1
    for d in wa:
        k *= a.shape[d]
    out_shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    m = a.permute(free_a + wa).reshape(-1, k) if a.dim() else a.reshape(1, 1)
    n = b.permute(wb + free_b).reshape(k, -1) if b.dim() else b.reshape(1, 1)
    return m.mm(n).reshape(out_shape)


# --- einsum


_ELLIPSIS = "..."


def _label_index(c):
    """PyTorch's order of subscripts: A-Z, then a-z."""
    return ord(c) - ord("A") if c.isupper() else 26 + ord(c) - ord("a")


def _parse_term(term, start, what):
    """The subscripts of one term (letters, and ``_ELLIPSIS`` at most once), checking the
    characters; ``start`` is the term's position in the equation (for the messages)."""
    labels = []
    i = 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if _ELLIPSIS in labels:
                raise RuntimeError(f"einsum(): found '.' for {what} for which an ellipsis was already found")
            if term[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for {what} that is not part of any ellipsis")
            labels.append(_ELLIPSIS)
            i += 3
            continue
        if not (c.isascii() and c.isalpha()):
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {start + i} in the equation string, subscripts "
                f"must be in [a-zA-Z]"
            )
        labels.append(c)
        i += 1
    return labels


def _sublist_equation(args):
    """The equation of einsum's sublist form ``(op, [0, 1], op, [1, 2], [0, 2])``."""

    def letters(sub):
        out = ""
        for s in sub:
            if s is Ellipsis:
                out += "..."
            elif isinstance(s, int) and 0 <= s < 52:
                out += chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26)
            else:
                raise RuntimeError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return out

    operands, terms = list(args[0::2]), list(args[1::2])
    out = None
    if len(operands) > len(terms):  # the last item was the output sublist
        out = operands.pop()
    equation = ",".join(letters(t) for t in terms)
    if out is not None:
        equation += "->" + letters(out)
    return equation, operands


def einsum(*args):
    """``einsum(equation, *operands)`` (or ``einsum(equation, [operands])``, or the sublist form
    ``einsum(op1, [0, 1], op2, [1, 2], [0, 2])``): sums of products over the subscripts the
    equation names. Repeated subscripts of one operand take its diagonal; the operands are
    contracted pairwise from the left, each contraction one (batched) matrix product."""
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least "
                        "one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    for op in operands:
        if not isinstance(op, Tensor):
            raise TypeError(f"einsum(): argument 'operands' must be tuple of Tensors, not {type(op).__name__}")
    eq = equation.replace(" ", "")
    arrow = eq.find("->")
    lhs, rhs = (eq, None) if arrow < 0 else (eq[:arrow], eq[arrow + 2:])
    terms, start = [], 0
    for k, term in enumerate(lhs.split(",")):
        terms.append(_parse_term(term, start, f"operand {k}"))
        start += len(term) + 1
    if len(operands) < len(terms):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(operands) > len(terms):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    dtype = operands[0].dtype
    for op in operands[1:]:
        if op.dtype != dtype:
            raise RuntimeError(
                f"expected scalar type {_scalar_type_name(dtype)} but found {_scalar_type_name(op.dtype)}"
            )

    # each operand's dims as labels: letters, and ("...", k) for the k-th broadcast dim from
    # the right (an operand with fewer ellipsis dims broadcasts over the others)
    ell_ndim = 0
    op_labels = []
    for k, (labels, op) in enumerate(zip(terms, operands)):
        n = len(labels) - (1 if _ELLIPSIS in labels else 0)
        if _ELLIPSIS not in labels and n != op.dim():
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({n}) does not match the number of "
                f"dimensions ({op.dim()}) for operand {k} and no ellipsis was given"
            )
        if n > op.dim():
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({n}) is more than the number of "
                f"dimensions ({op.dim()}) for operand {k}"
            )
        expanded = []
        for lab in labels:
            if lab == _ELLIPSIS:
                e = op.dim() - n
                ell_ndim = max(ell_ndim, e)
                expanded += [(_ELLIPSIS, e - 1 - j) for j in range(e)]
            else:
                expanded.append(lab)
        op_labels.append(expanded)

    # sizes: a subscript repeated in one operand must match; across operands, size 1 broadcasts
    sizes = {}
    for k, (labels, op) in enumerate(zip(op_labels, operands)):
        seen = {}
        for lab, s in zip(labels, op.shape):
            if lab in seen and seen[lab] != s:
                raise RuntimeError(
                    f"einsum(): subscript {lab} is repeated for operand {k} but the sizes don't match, "
                    f"{s} != {seen[lab]}"
                )
            seen[lab] = s
        for lab, s in seen.items():
            prev = sizes.get(lab)
            if prev is not None and prev != s and prev != 1 and s != 1:
                raise RuntimeError(
                    f"einsum(): subscript {lab} has size {s} for operand {k} which does not broadcast with "
                    f"previously seen size {prev}"
                )
            sizes[lab] = s if prev is None or prev == 1 else prev

    ell = [(_ELLIPSIS, j) for j in range(ell_ndim - 1, -1, -1)]
    if rhs is None:  # implicit output: the broadcast dims, then the subscripts seen once, sorted
        counts = {}
        for labels in terms:
            for lab in labels:
                if lab != _ELLIPSIS:
                    counts[lab] = counts.get(lab, 0) + 1
        out = ell + sorted((lab for lab, c in counts.items() if c == 1), key=_label_index)
    else:
        out = []
        for lab in _parse_term(rhs, arrow + 2, "the output"):
            if lab == _ELLIPSIS:
                out += ell
                continue
            if lab in out:
                raise RuntimeError(f"einsum(): output subscript {lab} appears more than once in the output")
            if lab not in sizes:
                raise RuntimeError(f"einsum(): output subscript {lab} does not appear in the equation for any "
                                   f"input operand")
            out.append(lab)

    # each operand: diagonals of repeated subscripts, then its subscripts that no other operand
    # and not the output has summed away
    ops = []
    for k, (labels, op) in enumerate(zip(op_labels, operands)):
        labels = list(labels)
        while len(set(labels)) != len(labels):
            lab = next(x for x in labels if labels.count(x) > 1)
            p = labels.index(lab)
            q = labels.index(lab, p + 1)
            op = _core._diagonal(op, 0, p, q)
            labels = [x for i, x in enumerate(labels) if i not in (p, q)] + [lab]
        others = set(out).union(*(set(o) for j, o in enumerate(op_labels) if j != k))
        op, labels = _sum_labels(op, labels, others)
        ops.append((op, labels))

    cur, cur_labels = ops[0]
    for j in range(1, len(ops)):
        keep = set(out).union(*(set(lbl) for _, lbl in ops[j + 1:]))
        cur, cur_labels = _contract(cur, cur_labels, *ops[j], keep)
    cur, cur_labels = _sum_labels(cur, cur_labels, set(out))
    # an output subscript that the operands have with size 1 only where another (already
    # summed) had more is not possible: every output subscript is still here
    if cur_labels != out:
        cur = cur.permute([cur_labels.index(lab) for lab in out])
    return cur


def _sum_labels(t, labels, keep):
    """``t`` summed over its dims whose labels are not in ``keep``."""
    drop = [i for i, lab in enumerate(labels) if lab not in keep]
    if not drop:
        return t, labels
    return t.sum(drop), [lab for lab in labels if lab in keep]


def _contract(a, la, b, lb, keep):
    """The product of ``a`` (dims labelled ``la``) and ``b`` summed over their shared labels
    not in ``keep``: ``a`` as (batch, a's own, summed), ``b`` as (batch, summed, b's own), one
    batched matrix product. Returns the result and its labels (batch, a's own, b's own)."""
    a, la = _sum_labels(a, la, keep | set(lb))
    b, lb = _sum_labels(b, lb, keep | set(la))
    batch = [lab for lab in la if lab in lb and lab in keep]
    summed = [lab for lab in la if lab in lb and lab not in keep]
    a_own = [lab for lab in la if lab not in lb]
    b_own = [lab for lab in lb if lab not in la]
    # a shared dim of size 1 on one side broadcasts against the other
    a_size = dict(zip(la, a.shape))
    b_size = dict(zip(lb, b.shape))
    size = {lab: max(a_size[lab], b_size[lab]) for lab in batch + summed}
    if any(a_size[lab] != size[lab] for lab in size):
        a = a.expand([size.get(lab, s) for lab, s in zip(la, a.shape)])
    if any(b_size[lab] != size[lab] for lab in size):
        b = b.expand([size.get(lab, s) for lab, s in zip(lb, b.shape)])
    nb = _prod(size[lab] for lab in batch)
    na = _prod(a_size[lab] for lab in a_own)
    nk = _prod(size[lab] for lab in summed)
    nbo = _prod(b_size[lab] for lab in b_own)
    shape = [size[lab] for lab in batch] + [a_size[lab] for lab in a_own] + [b_size[lab] for lab in b_own]
    am = a.permute([la.index(lab) for lab in batch + a_own + summed])
    bm = b.permute([lb.index(lab) for lab in batch + summed + b_own])
    if not summed:  # nothing to sum: the (broadcast) elementwise product
        r = am.reshape(nb, na, 1) * bm.reshape(nb, 1, nbo)
    elif not batch:
        r = am.reshape(na, nk).mm(bm.reshape(nk, nbo))
    else:
        r = am.reshape(nb, na, nk).bmm(bm.reshape(nb, nk, nbo))
    return r.reshape(shape), batch + a_own + b_own


def _prod(values):
    p = 1
    for v in values:
        p *= v
    return p


# --- pairwise distances


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _safe_root(s, p):
    """``s ** (1 / p)`` with a zero gradient where ``s`` is 0 (PyTorch's cdist subgradient)."""
    pos = s > 0
    ones = _core.where(pos, s, 1.0)
    root = ones.sqrt() if p == 2 else ones.pow(1.0 / p)
    return _core.where(pos, root, 0.0)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distances between the rows of ``x1`` (..., P, M) and of ``x2`` (..., R, M):
    (..., P, R). Euclidean distances of more than 25 rows use the matrix-product identity
    ``|a - b|^2 = |a|^2 - 2 a.b + |b|^2`` (as PyTorch's default mode), others the
    differences."""
    _check_tensor("cdist", x1, "x1")
    _check_tensor("cdist", x2, "x2", 2)
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if not x1.is_floating_point():
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {_scalar_type_name(x1.dtype)}")
    if not x2.is_floating_point():
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: {_scalar_type_name(x2.dtype)}")
    if x1.dtype != x2.dtype:
        raise RuntimeError(
            f"expected scalar type {_scalar_type_name(x1.dtype)} but found {_scalar_type_name(x2.dtype)}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = list(_broadcast_batch(x1.shape[:-2], x2.shape[:-2]))
    x1 = x1.expand(batch + list(x1.shape[-2:]))
    x2 = x2.expand(batch + list(x2.shape[-2:]))
    rows1, rows2 = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist"
                         or compute_mode == "use_mm_for_euclid_dist_if_necessary" and (rows1 > 25 or rows2 > 25))
    if use_mm:
        # PyTorch's _euclidean_dist: [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T
        n1 = (x1 * x1).sum(-1, keepdim=True)
        n2 = (x2 * x2).sum(-1, keepdim=True)
        a = _core.cat([x1 * -2, n1, _core._full(list(n1.shape), 1, n1.dtype)], -1)
        b = _core.cat([x2, _core._full(list(n2.shape), 1, n2.dtype), n2], -1)
        return _safe_root(a.matmul(b.transpose(-1, -2)).clamp(min=0), 2)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:
        return (diff != 0).sum(-1).to(x1.dtype)
    if p == 1:
        return diff.abs().sum(-1)
    if p == float("inf"):
        return diff.abs().amax(-1)
    if p == 2:
        return _safe_root((diff * diff).sum(-1), 2)
    return _safe_root((diff.abs() ** p).sum(-1), p)


def _broadcast_batch(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
            )
        out.append(y if x == 1 else x)
    return out
