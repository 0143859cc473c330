"""``torch.linalg``: decompositions and solvers over batches of matrices (the leading dims),
computed in Rust by the ``faer`` crate (``_core._linalg_*``, each a differentiable op with
PyTorch's backward formula and grad_fn name), and the norms built on them as PyTorch builds
them. float32 and float64 only: PyTorch's CPU kernels refuse float16 / bfloat16 too, and
ferrograd has no complex dtypes.
"""

import math
import re
import warnings

from . import _core
from ._core import Tensor, _LinAlgError as LinAlgError, float32, float64, int32
from ._factories import eye, full, ones_like, tensor, zeros
from ._functions import broadcast_shapes, matmul
from ._memory_format import contiguous_format
from ._op_args import _dim_list
from ._reduction_functions import cumprod
from ._return_types import (
    linalg_cholesky_ex_result,
    linalg_eigh_result,
    linalg_inv_ex_result,
    linalg_lstsq_result,
    linalg_lu_factor_ex_result,
    linalg_lu_factor_result,
    linalg_lu_result,
    linalg_qr_result,
    linalg_slogdet_result,
    linalg_solve_ex_result,
    linalg_svd_result,
    lu_unpack_result,
    slogdet_result,
    triangular_solve_result,
)
from ._shape_functions import _scalar_type_name, movedim

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
    "eigvalsh", "householder_product", "inv", "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
    "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr",
    "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander",
    "vecdot", "vector_norm",
]

_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _check_tensor(name, a, arg="A"):
    if not isinstance(a, Tensor):
        raise TypeError(f"linalg_{name}(): argument '{arg}' (position 1) must be Tensor, not {type(a).__name__}")


def _batch_shape(a):
    return tuple(a.shape[:-2])


# --- inverses and solvers


def inv(A, *, out=None):
    """The inverse of each square matrix of ``A``; LinAlgError for a singular one."""
    _no_out("linalg.inv", out)
    _check_tensor("inv", A)
    return _core._linalg_inv(A)


def _info_of(error, pattern):
    """The number LAPACK's info would hold for the failure ``error`` describes."""
    m = re.search(pattern, str(error))
    return int(m.group(1)) if m else 1


def _per_matrix(fn, A, pattern, check_errors):
    """``fn`` on each matrix of ``A``: (results stacked, int32 infos); a failed matrix's
    result is NaN (PyTorch leaves it undefined) and its info is LAPACK's."""
    try:
        out = fn(A)
        return out, zeros(_batch_shape(A), dtype=int32)
    except LinAlgError:
        if check_errors:
            raise
    flat = A.reshape(-1, *A.shape[-2:])
    outs, infos = [], []
    for i in range(flat.shape[0]):
        try:
            outs.append(fn(flat[i]))
            infos.append(0)
        except LinAlgError as e:
            outs.append(full(flat[i].shape, math.nan, dtype=A.dtype))
            infos.append(_info_of(e, pattern))
    out = _core.stack(outs, 0).reshape(A.shape)
    return out, tensor(infos, dtype=int32).reshape(_batch_shape(A))


def inv_ex(A, *, check_errors=False, out=None):
    """``(inverse, info)``: info 0, or the 1-based position of the zero pivot of a singular
    matrix (whose inverse is then NaN); ``check_errors`` raises LinAlgError instead."""
    _no_out("linalg.inv_ex", out)
    _check_tensor("inv_ex", A)
    out, info = _per_matrix(_core._linalg_inv, A, r"diagonal element (\d+) is zero", check_errors)
    return linalg_inv_ex_result(out, info)


def _solve_left(A, B):
    return _core._linalg_solve(A, B)


def solve(A, B, *, left=True, out=None):
    """X with ``A X = B`` (``left=False``: ``X A = B``), batch dims broadcast; ``B`` a vector
    (``A.shape[:-1]`` or 1-D) or a matrix. LinAlgError for a singular ``A``."""
    _no_out("linalg.solve", out)
    _check_tensor("solve", A)
    _check_tensor("solve", B, "B")
    if left:
        return _solve_left(A, B)
    if A.dim() < 2:
        raise RuntimeError("linalg.solve: The input tensor A must have at least 2 dimensions.")
    if B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1])):
        # PyTorch reads a vector B as a column, which X A = B cannot take
        n = A.shape[-1]
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation XA = B ({n}x{n} and {B.shape[-1]}x1)"
        )
    return _solve_left(A.mT, B.mT).mT


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``(result, info)`` of ``solve``: for a singular ``A``, info is the position of the first
    zero pivot of its LU factorization (and the result holds inf / NaN); ``check_errors``
    raises LinAlgError instead."""
    _no_out("linalg.solve_ex", out)
    try:
        return linalg_solve_ex_result(solve(A, B, left=left), zeros(_batch_shape(A), dtype=int32))
    except LinAlgError:
        if check_errors:
            raise
    # a singular A: PyTorch's route (LU, then the triangular solves), which gives inf / NaN
    # where the factor has a zero pivot, and info the position of the first one
    LU, pivots, info = _core._linalg_lu_factor(A)
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    X = _core._linalg_lu_solve(LU, pivots, B.unsqueeze(-1) if vector else B, bool(left), False)
    return linalg_solve_ex_result(X.squeeze(-1) if vector else X, info)


def det(A, *, out=None):
    """The determinant of each square matrix of ``A`` (through LU)."""
    _no_out("linalg.det", out)
    _check_tensor("det", A)
    return _core._linalg_det(A)


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of each square matrix: sign 0 and logabsdet -inf when singular."""
    _no_out("linalg.slogdet", out)
    _check_tensor("slogdet", A)
    return linalg_slogdet_result(*_core._linalg_slogdet(A))


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The pseudo-inverse: singular values (``hermitian``: eigenvalues in absolute value) at
    most ``max(atol, rtol * largest)`` count as zero. ``rtol`` defaults to ``eps * max(m, n)``,
    or to 0 when ``atol`` > 0 is given; ``rcond`` is PyTorch's older name of ``rtol``."""
    _no_out("linalg.pinv", out)
    _check_tensor("pinv", A)
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError("linalg.pinv: rcond and rtol cannot both be given")
        rtol = rcond
    atol = _tolerance(atol, "atol")
    rtol = _tolerance(rtol, "rtol")
    return _core._linalg_pinv(A, 0.0 if atol is None else atol, rtol, hermitian)


def _tolerance(t, name):
    if t is None or isinstance(t, (int, float)):
        return None if t is None else float(t)
    if isinstance(t, Tensor) and t.numel() == 1:
        return float(t.item())
    raise NotImplementedError(f"linalg.pinv: a tensor {name} (one tolerance per matrix) is not supported by ferrograd")


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of ``A X = B`` (batch dims broadcast): PyTorch's default CPU
    driver 'gelsy', which returns the solution and the rank (residuals and singular_values are
    empty). Singular values at most ``rcond * largest`` (default ``eps * max(m, n)``) count as
    zero, giving the minimum-norm solution of a rank-deficient ``A``."""
    _check_tensor("lstsq", A, "self")
    _check_tensor("lstsq", B, "b")
    if driver is not None and driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if driver not in (None, "gelsy"):
        raise NotImplementedError(f"torch.linalg.lstsq: driver='{driver}' is not supported by ferrograd (only 'gelsy')")
    if A.dim() < B.dim() or A.dim() - B.dim() > 1:
        raise RuntimeError(
            "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
            "(input.dim() - other.dim()) <= 1"
        )
    rcond = None if rcond is None else float(rcond)
    if B.dim() == A.dim() - 1 and tuple(B.shape) != tuple(A.shape[:-1]) and B.dim() > 1:
        # PyTorch reads B as a batch of vectors whenever it has one dim less than A
        x, rank = _core._linalg_lstsq(A, B.unsqueeze(-1), rcond)
        x = x.squeeze(-1)
    else:
        x, rank = _core._linalg_lstsq(A, B, rcond)
    if A.dim() >= 2 and tuple(rank.shape) != _batch_shape(A):
        # the rank has A's batch shape, also where B's batch dims broadcast it
        rank = _core._linalg_lstsq(A, zeros(A.shape[:-1] + (1,), dtype=A.dtype), rcond)[1]
    empty = zeros((0,), dtype=A.dtype)
    return linalg_lstsq_result(x, empty, rank, zeros((0,), dtype=A.dtype))


# --- decompositions


def cholesky(A, *, upper=False, out=None):
    """The lower Cholesky factor L (``upper``: L^T) of each symmetric positive-definite matrix,
    read from its lower triangle; LinAlgError when one is not positive-definite."""
    _no_out("linalg.cholesky", out)
    _check_tensor("cholesky", A)
    return _core._linalg_cholesky(A, upper)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """``(L, info)``: info 0, or the order of the first leading minor that is not
    positive-definite (that matrix's L is then NaN); ``check_errors`` raises instead."""
    _no_out("linalg.cholesky_ex", out)
    _check_tensor("cholesky_ex", A)
    out, info = _per_matrix(
        lambda a: _core._linalg_cholesky(a, upper), A, r"leading minor of order (\d+)", check_errors
    )
    return linalg_cholesky_ex_result(out, info)


def qr(A, mode="reduced", *, out=None):
    """``(Q, R)``: mode 'reduced' (Q m x k, R k x n), 'complete' (Q m x m) or 'r' (Q empty)."""
    _no_out("linalg.qr", out)
    _check_tensor("qr", A)
    return linalg_qr_result(*_core._linalg_qr(A, mode))


def _check_driver(name, driver):
    if driver is not None:
        raise RuntimeError(
            f"torch.linalg.{name}: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend."
        )


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values in descending order."""
    _no_out("linalg.svd", out)
    _check_tensor("svd", A)
    _check_driver("svd", driver)
    return linalg_svd_result(*_core._linalg_svd(A, full_matrices, True))


def svdvals(A, *, driver=None, out=None):
    """The singular values of each matrix, in descending order."""
    _no_out("linalg.svdvals", out)
    _check_tensor("svdvals", A)
    _check_driver("svdvals", driver)
    return _core._linalg_svdvals(A)


def eigh(A, UPLO="L", *, out=None):
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix, read from its lower (``UPLO``
    'U': upper) triangle; eigenvalues in ascending order, eigenvectors as columns."""
    _no_out("linalg.eigh", out)
    _check_tensor("eigh", A)
    return linalg_eigh_result(*_core._linalg_eigh(A, UPLO, True))


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues of each symmetric matrix, in ascending order."""
    _no_out("linalg.eigvalsh", out)
    _check_tensor("eigvalsh", A)
    return _core._linalg_eigh(A, UPLO, False)[0]


# --- norms


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002  (torch's name)
    """The ``ord``-norm of ``x`` flattened (or over ``dim``): ord inf, -inf, 0 (the count of
    non-zeros) or any real p."""
    _no_out("linalg.vector_norm", out)
    _check_tensor("vector_norm", x, "x")
    if dtype is not None:
        if not x.dtype.is_floating_point:
            raise RuntimeError(
                f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {_kernel_name(x.dtype)}"
            )
        x = x.to(dtype)
    dims = _dim_list(dim)
    return x._norm(float(ord), dims, keepdim)


def _kernel_name(dtype):
    return {"torch.int64": "Long", "torch.int32": "Int", "torch.int16": "Short", "torch.int8": "Char",
            "torch.uint8": "Byte", "torch.bool": "Bool"}.get(str(dtype), str(dtype))


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The ``ord``-norm of each matrix over the dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1,
    2 (the largest singular value) or -2 (the smallest), built as PyTorch builds them."""
    _no_out("linalg.matrix_norm", out)
    _check_tensor("matrix_norm", A)
    if not A.dtype.is_floating_point:
        raise RuntimeError(
            f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got {_kernel_name(A.dtype)}"
        )
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    nd = A.dim()
    d0, d1 = (d % nd if -nd <= d < nd else d for d in dim)
    for d in dim:
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if dtype is not None:
        A = A.to(dtype)
    if isinstance(ord, str):
        if ord == "fro":
            return vector_norm(A, 2, (d0, d1), keepdim)
        if ord != "nuc":
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        return _svd_norm(A, d0, d1, keepdim, lambda s: s.sum(-1))
    if ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {_fmt_ord(ord)} not supported.")
    if abs(ord) == 2:
        return _svd_norm(A, d0, d1, keepdim, (lambda s: s.amax(-1)) if ord > 0 else (lambda s: s.amin(-1)))
    if abs(ord) == math.inf:
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    n = vector_norm(A, 1.0, d0, keepdim)
    return n.amax(d1, keepdim) if ord > 0 else n.amin(d1, keepdim)


def _fmt_ord(ord):  # noqa: A002
    return int(ord) if float(ord).is_integer() else ord


def _svd_norm(A, d0, d1, keepdim, reduce):
    """``reduce`` of the singular values of the matrices over (d0, d1)."""
    r = reduce(svdvals(movedim(A, (d0, d1), (-2, -1))))
    if keepdim:
        r = movedim(r.unsqueeze(-1).unsqueeze(-1), (-2, -1), (d0, d1))
    return r


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):  # noqa: A002
    """A vector norm (1-D input, or an int / 1-tuple ``dim``) or a matrix norm (2-D input, or
    a 2-tuple ``dim``); with neither ``ord`` nor ``dim``, the 2-norm of ``A`` flattened."""
    _no_out("linalg.norm", out)
    _check_tensor("norm", A)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.dim() == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.dim() == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.dim()}D.")


# --- torch.* forms (torch.det, torch.logdet, torch.slogdet, torch.inverse) and Tensor methods


def _torch_det(input):  # noqa: A002  (torch's name)
    return det(input)


def _torch_inverse(input, *, out=None):  # noqa: A002
    _no_out("inverse", out)
    return inv(input)


def _torch_slogdet(input):  # noqa: A002
    _check_tensor("slogdet", input)
    return slogdet_result(*_core._linalg_slogdet(input))


def _torch_pinverse(input, rcond=1e-15):  # noqa: A002
    return pinv(input, rcond)


def _torch_logdet(input):  # noqa: A002
    """log(det): NaN where the determinant is negative, -inf where it is zero."""
    sign, logabsdet = _core._linalg_slogdet(input)
    return _core.where(sign == -1, math.nan, logabsdet)



# --- out= (ferrograd writes no results into given tensors)


def _no_out(name, out):
    if out is not None:
        raise NotImplementedError(f"{name}(out=...) is not supported by ferrograd")


def _type_name(dtype):
    """PyTorch's ScalarType name of any dtype (``Float``, ``Half``, ``Long``...)."""
    return {"torch.float16": "Half", "torch.bfloat16": "BFloat16"}.get(str(dtype)) or _scalar_type_name(dtype)


def _check_kernel(kernel, *tensors):
    """PyTorch's refusal of a LAPACK-backed kernel for a dtype other than float32 / float64."""
    for t in tensors:
        if t.dtype not in (float32, float64):
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(t.dtype)}'")


def _not_square(A):
    return f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"


def _check_matrices(name, A, square=True, arg="A"):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )


def _check_float_input(name, A):
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {_kernel_name(A.dtype)}")


# --- complex-valued results (ferrograd has no complex dtypes)


def eig(A, *, out=None):
    """Not supported: the eigenvalues of a general real matrix are complex (PyTorch returns
    complex64 / complex128 tensors), and ferrograd has no complex dtypes."""
    raise NotImplementedError(
        "linalg.eig: complex outputs are not supported by ferrograd (PyTorch returns complex eigenvalues "
        "and eigenvectors); for a symmetric matrix use linalg.eigh"
    )


def eigvals(A, *, out=None):
    """Not supported, as ``eig``: the eigenvalues are complex."""
    raise NotImplementedError(
        "linalg.eigvals: complex outputs are not supported by ferrograd (PyTorch returns complex "
        "eigenvalues); for a symmetric matrix use linalg.eigvalsh"
    )


# --- powers, products, exponential


def matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` by repeated squaring (``n`` < 0: of ``inv(A)``; 0: the
    identity)."""
    _check_tensor("matrix_power", A)
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    _no_out("linalg.matrix_power", out)
    _check_matrices("linalg.matrix_power", A)
    if n == 0:  # PyTorch's contiguous clone overwritten by the identity (CopyBackwards)
        r = A.clone(memory_format=contiguous_format)
        r.copy_(eye(A.shape[-1], dtype=A.dtype).expand(A.shape))
        return r
    if n < 0:
        A, n = inv(A), -n
    if n == 1:
        return A.clone(memory_format=contiguous_format)
    result, z = None, None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


_TYPE_META_NAMES = {
    "torch.float32": "float", "torch.float64": "double", "torch.float16": "c10::Half",
    "torch.bfloat16": "c10::BFloat16", "torch.int64": "long int", "torch.int32": "int",
    "torch.int16": "short int", "torch.int8": "signed char", "torch.uint8": "unsigned char",
    "torch.bool": "bool",
}


def _chain_order(shapes):
    """The optimal parenthesization of a matrix chain (the classic dynamic programme PyTorch's
    multi_dot uses): ``split[i][j]`` is where the product of matrices i..j splits."""
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors, *, out=None):
    """The product of two or more matrices in the cheapest order; the first may be a row
    vector and the last a column vector (1-D), whose dim is then dropped from the result."""
    _no_out("linalg.multi_dot", out)
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        _check_tensor("multi_dot", t, "tensors")
        d = t.dim()
        if i == 0 and d not in (1, 2):
            raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {d}D")
        if i == n - 1 and d not in (1, 2):
            raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {d}D")
        if 0 < i < n - 1 and d != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {d}D")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError(
                "multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{_TYPE_META_NAMES[str(tensors[0].dtype)]} and tensor {i} {_TYPE_META_NAMES[str(t.dtype)]}"
            )
    first_vec, last_vec = tensors[0].dim() == 1, tensors[-1].dim() == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                f"{list(tensors[i + 1].shape)} cannot be multiplied"
            )
    split = _chain_order([tuple(m.shape) for m in mats])

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return product(i, k).mm(product(k + 1, j))

    r = product(0, n - 1)
    shape = [r.shape[0], r.shape[1]]
    if last_vec:
        shape.pop(1)
    if first_vec:
        shape.pop(0)
    return r.view(shape)


def matrix_exp(A):
    """The exponential of each square matrix (Padé scaling and squaring in float64);
    float16 / bfloat16 inputs are computed in float32, as PyTorch's upcasting kernels."""
    _check_tensor("matrix_exp", A)
    _check_float_input("linalg.matrix_exp", A)
    _check_matrices("linalg.matrix_exp", A)
    if A.dtype not in (float32, float64):
        return _core._linalg_matrix_exp(A.to(float32)).to(A.dtype)
    return _core._linalg_matrix_exp(A)


# --- triangular and Cholesky solves


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with ``A X = B`` (``left=False``: ``X A = B``) for triangular ``A``: only its upper
    (``upper``) or lower triangle is read, and with ``unitriangular`` its diagonal is taken as
    ones. Batch dims broadcast; a zero on the diagonal gives inf / NaN, as in PyTorch."""
    _check_tensor("solve_triangular", A, "input")
    _check_tensor("solve_triangular", B, "other")
    _no_out("linalg.solve_triangular", out)
    dt = _core.promote_types(A.dtype, B.dtype)
    A, B = A.to(dt), B.to(dt)
    _check_kernel("triangular_solve_cpu", A)
    _check_matrices("linalg.solve_triangular", A)
    _check_matrices("linalg.solve_triangular", B, square=False, arg="B")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {eq} "
            f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})"
        )
    return _core._linalg_solve_triangular(A, B, bool(upper), bool(left), bool(unitriangular))


def _torch_triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):  # noqa: A002
    """PyTorch's deprecated ``torch.triangular_solve``: ``(solution, cloned_coefficient)`` of
    ``A X = b`` (``transpose``: ``A^T X = b``), the second a copy of ``A`` (broadcast)."""
    _check_tensor("triangular_solve", b, "input")
    _check_tensor("triangular_solve", A)
    _no_out("triangular_solve", out)
    for t, arg in ((b, "b"), (A, "A")):
        if t.dim() < 2:
            raise RuntimeError(
                f"torch.triangular_solve: Expected {arg} to have at least 2 dimensions, but it has {t.dim()} "
                "dimensions instead"
            )
    if b.dtype != A.dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type {_type_name(b.dtype)} and A of type "
            f"{_type_name(A.dtype)} instead."
        )
    _check_kernel("triangular_solve_cpu", A)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(_not_square(A))
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(
            f"Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-2]} by {A.shape[-1]} but "
            f"each b matrix is {b.shape[-2]} by {b.shape[-1]}"
        )
    return triangular_solve_result(
        *_core._linalg_triangular_solve(b, A, bool(upper), bool(transpose), bool(unitriangular))
    )


def _check_cholesky_pair(B, L):
    if B.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.dim()} dimensions instead")
    if L.dim() < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L.dim()} dimensions instead")
    if B.dtype != L.dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type {_type_name(B.dtype)} and A of type "
            f"{_type_name(L.dtype)} instead."
        )
    _check_kernel("cholesky_solve_cpu", L)
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(_not_square(L))
    if L.shape[-1] != B.shape[-2]:
        raise RuntimeError(
            f"Incompatible matrix sizes for cholesky_solve: each A matrix is {L.shape[-2]} by {L.shape[-1]} but "
            f"each b matrix is {B.shape[-2]} by {B.shape[-1]}"
        )


def _torch_cholesky_solve(input, input2, upper=False, *, out=None):  # noqa: A002  (torch's names)
    """X with ``A X = B`` given A's Cholesky factor ``L`` (A = L L^T; ``upper``: A = U^T U);
    batch dims broadcast."""
    _check_tensor("cholesky_solve", input, "input")
    _check_tensor("cholesky_solve", input2, "input2")
    _no_out("cholesky_solve", out)
    _check_cholesky_pair(input, input2)
    return _core._linalg_cholesky_solve(input, input2, bool(upper))


def _torch_cholesky_inverse(input, upper=False, *, out=None):  # noqa: A002
    """The inverse of A = L L^T (``upper``: U^T U) from its Cholesky factor; LinAlgError when
    the factor has a zero on its diagonal."""
    _check_tensor("cholesky_inverse", input, "input")
    _no_out("cholesky_inverse", out)
    _check_matrices("cholesky_inverse", input)
    _check_kernel("cholesky_inverse_out_cpu", input)
    zero = input.detach().diagonal(0, -2, -1) == 0
    if zero.numel() and bool(zero.any()):
        zero = zero.reshape(-1, input.shape[-1])
        b = int(zero.any(-1).to(int32).argmax().item())
        i = int(zero[b].to(int32).argmax().item()) + 1
        prefix = f"(Batch element {b}): " if input.dim() > 2 else ""
        raise LinAlgError(
            f"cholesky_inverse: {prefix}The diagonal element {i} is zero, the inversion could not be completed "
            "because the input matrix is singular."
        )
    return _core._linalg_cholesky_inverse(input, bool(upper))


# --- LU


def _check_pivot(name, pivot):
    if not pivot:
        raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")


def _check_lu_input(name, A):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} instead")
    _check_kernel("lu_cpu", A)


def _lu_error(name, info):
    """PyTorch's error of lu_factor for the first matrix with a zero pivot (info > 0)."""
    flat = info.reshape(-1)
    b = int((flat > 0).to(int32).argmax().item())
    i = int(flat[b].item())
    prefix = f"(Batch element {b}): " if info.dim() > 0 else ""
    return RuntimeError(
        f"{name}: {prefix}U[{i},{i}] is zero and using it on lu_solve would result in a division by zero. If you "
        "still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
    )


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """``(LU, pivots, info)``: the LU factorization with partial pivoting as LAPACK's getrf packs
    it (L's unit diagonal implicit), the 1-based int32 pivots, and info (0, or the position of
    the first zero pivot: U is singular); ``check_errors`` raises instead."""
    _check_tensor("lu_factor_ex", A)
    _no_out("linalg.lu_factor_ex", out)
    _check_lu_input("torch.lu_factor", A)
    _check_pivot("linalg.lu_factor", pivot)
    LU, pivots, info = _core._linalg_lu_factor(A)
    if check_errors and bool((info > 0).any()):
        raise _lu_error("torch.linalg.lu_factor_ex", info)
    return linalg_lu_factor_ex_result(LU, pivots, info)


def lu_factor(A, *, pivot=True, out=None):
    """``(LU, pivots)`` of ``lu_factor_ex``; RuntimeError when U is singular."""
    _check_tensor("lu_factor", A)
    _no_out("linalg.lu_factor", out)
    _check_lu_input("torch.lu_factor", A)
    _check_pivot("linalg.lu_factor", pivot)
    LU, pivots, info = _core._linalg_lu_factor(A)
    if bool((info > 0).any()):
        raise _lu_error("torch.linalg.lu_factor", info)
    return linalg_lu_factor_result(LU, pivots)


def lu(A, *, pivot=True, out=None):
    """``(P, L, U)`` with ``A = P L U``: P a permutation matrix, L unit lower triangular
    (m x k), U upper triangular (k x n), k = min(m, n)."""
    _check_tensor("lu", A)
    _no_out("linalg.lu", out)
    _check_lu_input("linalg.lu", A)
    _check_pivot("linalg.lu", pivot)
    return linalg_lu_result(*_core._linalg_lu(A))


def _torch_lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``(P, L, U)`` from the packed factors and pivots of ``lu_factor``; the parts not
    unpacked are empty tensors."""
    _check_tensor("lu_unpack", LU_data, "LU_data")
    _check_tensor("lu_unpack", LU_pivots, "LU_pivots")
    _no_out("lu_unpack", out)
    if LU_pivots.dtype != int32:
        raise RuntimeError(
            "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
            "Note: this function is intended to be used with the output produced by torch.linalg.lu_factor"
        )
    if LU_data.dim() < 2:
        raise RuntimeError(
            f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: {list(LU_data.shape)} instead"
        )
    _check_kernel("lu_unpack", LU_data)
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (min(m, n),) or (
        LU_pivots.numel() and bool(((LU_pivots < 1) | (LU_pivots > m)).any())
    ):
        raise RuntimeError(
            "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive."
            "Did you properly pass the result of lu_factor?"
        )
    P, L, U = _core._linalg_lu_unpack(LU_data if unpack_data else LU_data.detach(), LU_pivots)
    empty = zeros((0,), dtype=LU_data.dtype)
    return lu_unpack_result(P if unpack_pivots else empty, L if unpack_data else empty, U if unpack_data else empty)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with ``A X = B`` (``adjoint``: ``A^T X = B``; ``left=False``: ``X A = B`` / ``X A^T =
    B``) for A given by ``lu_factor``'s ``(LU, pivots)``; batch dims broadcast."""
    _check_tensor("lu_solve", LU, "LU")
    _check_tensor("lu_solve", pivots, "pivots")
    _check_tensor("lu_solve", B, "B")
    _no_out("linalg.lu_solve", out)
    _check_float_input("torch.linalg.lu_solve", LU)
    _check_matrices("torch.linalg.lu_solve", LU)
    _check_matrices("linalg.lu_solve", B, square=False, arg="B")
    if pivots.dtype != int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        if pivots.dim() >= 1 and pivots.shape[-1] != LU.shape[-1]:
            raise RuntimeError(
                "linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix"
            )
        raise RuntimeError(
            "linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with shape "
            f"{list(pivots.shape)} instead"
        )
    if LU.dtype != B.dtype:
        raise RuntimeError(
            f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type {_type_name(LU.dtype)} "
            f"and B of type {_type_name(B.dtype)} instead"
        )
    _check_kernel("lu_solve", LU)
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} "
            f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})"
        )
    if pivots.numel() and bool(((pivots < 1) | (pivots > n)).any()):
        raise RuntimeError("linalg.lu_solve: pivots must be between 1 and n (the size of the matrices)")
    return _core._linalg_lu_solve(LU, pivots, B, bool(left), bool(adjoint))


# --- rank, condition number


def _tolerance_tensor(t, name, like):
    if t is None:
        return None
    if isinstance(t, Tensor):
        return t.to(like.dtype)
    if isinstance(t, (int, float)):
        return float(t)
    raise TypeError(f"linalg.matrix_rank: {name} must be a float or a Tensor, not {type(t).__name__}")


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """The number of singular values (``hermitian``: eigenvalues in absolute value) above
    ``max(atol, rtol * largest)``, as int64; ``rtol`` defaults to ``eps * max(m, n)`` when
    neither tolerance is given (0 when only ``atol`` is). ``tol`` is PyTorch's older ``atol``
    (with ``rtol`` 0)."""
    _check_tensor("matrix_rank", A, "input")
    _no_out("linalg.matrix_rank", out)
    if tol is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError("linalg.matrix_rank: tol cannot be given together with atol or rtol")
        atol, rtol = tol, 0.0
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if A.dtype not in (float32, float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    A = A.detach()  # an integer result: no graph
    s = eigvalsh(A).abs() if hermitian else svdvals(A)
    if rtol is None:
        eps = 1.1920928955078125e-07 if A.dtype == float32 else 2.220446049250313e-16
        has_atol = atol is not None and (isinstance(atol, Tensor) or atol > 0)
        rtol = 0.0 if has_atol else eps * max(A.shape[-1], A.shape[-2])
    atol = _tolerance_tensor(0.0 if atol is None else atol, "atol", A)
    rtol = _tolerance_tensor(rtol, "rtol", A)
    smax = s.amax(-1) if s.shape[-1] else zeros(s.shape[:-1], dtype=A.dtype)
    tol_ = _core.maximum(zeros((), dtype=A.dtype) + atol, smax * rtol)
    return (s > tol_.unsqueeze(-1)).sum(-1)




def _valid_cond_norm(p):
    if p is None:
        return True
    if isinstance(p, str):
        return p in ("fro", "nuc")
    return p in (2, -2, 1, -1, math.inf, -math.inf)


def cond(A, p=None, *, out=None):
    """The condition number of each matrix in the norm ``p``: for None / 2 / -2 the ratio of
    extreme singular values, otherwise ``norm(A, p) * norm(inv(A), p)`` (inf for a singular
    square matrix)."""
    _check_tensor("cond", A)
    _no_out("linalg.cond", out)
    if A.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if not _valid_cond_norm(p):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if p is None or (not isinstance(p, str) and abs(p) == 2):
        s = svdvals(A)
        if p == -2:
            return s[..., -1] / s[..., 0]
        return s[..., 0] / s[..., -1]
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.cond(ord={_fmt_ord(p) if not isinstance(p, str) else p}): A must be batches of square "
            f"matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )
    _check_float_input("linalg.inv", A)
    inverse, info = inv_ex(A)
    singular = (info > 0).unsqueeze(-1).unsqueeze(-1)
    inverse = _core.where(singular, math.inf, inverse)
    r = matrix_norm(A, p) * matrix_norm(inverse, p)
    return _core.where(r.isnan(), math.inf, r)


# --- products of vectors, diagonals, Vandermonde, Householder, tensor inverses


def cross(input, other, *, dim=-1, out=None):  # noqa: A002  (torch's name)
    """The cross product of the 3-vectors along ``dim`` (batch dims broadcast)."""
    _check_tensor("cross", input, "input")
    _check_tensor("cross", other, "other")
    _no_out("linalg.cross", out)
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    nd = input.dim()
    if not -nd <= dim < max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    d = dim % nd
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and {other.shape[d]}"
        )
    if input.dtype != other.dtype:
        raise RuntimeError(
            f"expected scalar type {_type_name(input.dtype)} but found {_type_name(other.dtype)}"
        )
    shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
    del shape  # PyTorch's broadcasting error, before the product
    return _core._linalg_cross(input, other, d)


def _torch_cross(input, other, dim=None, *, out=None):  # noqa: A002
    """``torch.cross``: ``linalg.cross``, where ``dim`` None picks the first dim of size 3
    (PyTorch's deprecated default)."""
    _check_tensor("cross", input, "input")
    _check_tensor("cross", other, "other")
    _no_out("cross", out)
    if dim is None:
        shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
        sizes = [i for i, s in enumerate(shape) if s == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim explicitly "
            "or simply use torch.linalg.cross.\nThe default value of dim will change to agree with that of "
            "linalg.cross in a future release.",
            UserWarning,
            stacklevel=2,
        )
        dim = sizes[0]
    return cross(input, other, dim=dim, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    """The dot product of the vectors along ``dim`` (batch dims broadcast)."""
    _check_tensor("vecdot", x, "x")
    _check_tensor("vecdot", y, "y")
    _no_out("linalg.vecdot", out)
    if x.dtype != y.dtype:
        raise RuntimeError(
            f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type {_type_name(x.dtype)} "
            f"and y of type {_type_name(y.dtype)} instead"
        )
    _check_float_input("linalg.vecdot", x)
    return (x * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices over ``dim1`` and ``dim2`` (a view)."""
    _check_tensor("diagonal", A)
    return A.diagonal(offset, dim1, dim2)


def vander(x, N=None):
    """The Vandermonde matrices of the vectors in the last dim: columns x^0, x^1, ...,
    x^(N-1) (N defaults to the vector's length)."""
    _check_tensor("vander", x, "x")
    if x.dim() == 0:
        raise RuntimeError("N must be greater than 1.")
    if N is None:
        N = x.shape[-1]
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    xs = x.unsqueeze(-1)
    powers = cumprod(xs.expand(tuple(x.shape) + (N - 1,)), -1)
    return _core.cat([ones_like(xs), powers], -1)


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i the i-th column
    of ``A`` below the diagonal and a 1 on it (LAPACK's orgqr; built from matrix products,
    so its gradient is that of the products)."""
    _check_tensor("householder_product", A, "input")
    _check_tensor("householder_product", tau, "tau")
    _no_out("linalg.householder_product", out)
    name = "torch.linalg.householder_product"
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() < 1 or n < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(
            f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got {list(tau.shape[:-1])}"
        )
    if tau.dtype != A.dtype:
        raise RuntimeError(
            f"{name}: tau dtype {_type_name(tau.dtype)} does not match input dtype {_type_name(A.dtype)}"
        )
    _check_kernel("orgqr_cpu", A)
    v = A.tril(-1) + eye(m, n, dtype=A.dtype)
    q = eye(m, dtype=A.dtype).expand(tuple(A.shape[:-2]) + (m, m))
    for i in range(tau.shape[-1]):
        vi = v[..., :, i:i + 1]
        q = q - matmul(matmul(q, vi) * tau[..., i:i + 1].unsqueeze(-1), vi.mT)
    return q[..., :, :n]


def _prod(shape):
    p = 1
    for s in shape:
        p *= s
    return p


def tensorinv(A, ind=2, *, out=None):
    """The inverse of ``A`` read as a matrix of its first ``ind`` dims by the rest: the result
    has shape ``A.shape[ind:] + A.shape[:ind]``."""
    _check_tensor("tensorinv", A, "input")
    _no_out("linalg.tensorinv", out)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    front, back = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _prod(back) != _prod(front):
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
            f"{_prod(back)} != {_prod(front)}"
        )
    try:
        r = inv(A.reshape(_prod(front), _prod(back)))
    except LinAlgError as e:
        raise LinAlgError(str(e).replace("linalg.inv:", "inv:", 1)) from None
    return r.reshape(back + front)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with ``tensordot(A, X, X.ndim) = B``: ``A`` read as a matrix of B's dims by the rest
    (``dims``: dims of ``A`` moved to the end first)."""
    _check_tensor("tensorsolve", A, "input")
    _check_tensor("tensorsolve", B, "other")
    _no_out("linalg.tensorsolve", out)
    if dims is not None:
        if not isinstance(dims, (tuple, list)):
            raise TypeError(f"linalg_tensorsolve(): argument 'dims' must be tuple of ints, not {type(dims).__name__}")
        dims = list(dims)
        A = movedim(A, dims, list(range(A.dim() - len(dims), A.dim())))
    lead, rest = tuple(A.shape[:B.dim()]), tuple(A.shape[B.dim():])
    if _prod(rest) != _prod(lead):
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
            f"but got {_prod(rest)} != {_prod(lead)}"
        )
    return solve(A.reshape(_prod(lead), _prod(rest)), B.reshape(_prod(lead))).reshape(rest)


def _torch_matrix_power(input, n, *, out=None):  # noqa: A002
    return matrix_power(input, n, out=out)


def _torch_matrix_exp(input):  # noqa: A002
    return matrix_exp(input)
