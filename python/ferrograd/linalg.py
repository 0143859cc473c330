"""``torch.linalg``: decompositions and solvers over batches of matrices (the leading dims),
computed in Rust by the ``faer`` crate (``_core._linalg_*``, each a differentiable op with
PyTorch's backward formula and grad_fn name), and the norms built on them as PyTorch builds
them. float32 and float64 only: PyTorch's CPU kernels refuse float16 / bfloat16 too, and
ferrograd has no complex dtypes.
"""

import math
import re

from . import _core
from ._core import Tensor, _LinAlgError as LinAlgError, int32
from ._factories import full, tensor, zeros
from ._functions import matmul
from ._return_types import (
    linalg_cholesky_ex_result,
    linalg_eigh_result,
    linalg_inv_ex_result,
    linalg_lstsq_result,
    linalg_qr_result,
    linalg_slogdet_result,
    linalg_solve_ex_result,
    linalg_svd_result,
    slogdet_result,
)
from ._shape_functions import movedim

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "det", "eigh", "eigvalsh", "inv", "inv_ex", "lstsq",
    "matmul", "matrix_norm", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "svd",
    "svdvals", "vector_norm",
]

_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _check_tensor(name, a, arg="A"):
    if not isinstance(a, Tensor):
        raise TypeError(f"linalg_{name}(): argument '{arg}' (position 1) must be Tensor, not {type(a).__name__}")


def _batch_shape(a):
    return tuple(a.shape[:-2])


# --- inverses and solvers


def inv(A):
    """The inverse of each square matrix of ``A``; LinAlgError for a singular one."""
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


def inv_ex(A, *, check_errors=False):
    """``(inverse, info)``: info 0, or the 1-based position of the zero pivot of a singular
    matrix (whose inverse is then NaN); ``check_errors`` raises LinAlgError instead."""
    _check_tensor("inv_ex", A)
    out, info = _per_matrix(_core._linalg_inv, A, r"diagonal element (\d+) is zero", check_errors)
    return linalg_inv_ex_result(out, info)


def _solve_left(A, B):
    return _core._linalg_solve(A, B)


def solve(A, B, *, left=True):
    """X with ``A X = B`` (``left=False``: ``X A = B``), batch dims broadcast; ``B`` a vector
    (``A.shape[:-1]`` or 1-D) or a matrix. LinAlgError for a singular ``A``."""
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


def solve_ex(A, B, *, left=True, check_errors=False):
    """``(result, info)`` of ``solve``: a singular ``A`` raises LinAlgError (ferrograd does not
    return the partial result with info > 0)."""
    return linalg_solve_ex_result(solve(A, B, left=left), zeros(_batch_shape(A), dtype=int32))


def det(A):
    """The determinant of each square matrix of ``A`` (through LU)."""
    _check_tensor("det", A)
    return _core._linalg_det(A)


def slogdet(A):
    """``(sign, logabsdet)`` of each square matrix: sign 0 and logabsdet -inf when singular."""
    _check_tensor("slogdet", A)
    return linalg_slogdet_result(*_core._linalg_slogdet(A))


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None):
    """The pseudo-inverse: singular values (``hermitian``: eigenvalues in absolute value) at
    most ``max(atol, rtol * largest)`` count as zero. ``rtol`` defaults to ``eps * max(m, n)``,
    or to 0 when ``atol`` > 0 is given; ``rcond`` is PyTorch's older name of ``rtol``."""
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


def cholesky(A, *, upper=False):
    """The lower Cholesky factor L (``upper``: L^T) of each symmetric positive-definite matrix,
    read from its lower triangle; LinAlgError when one is not positive-definite."""
    _check_tensor("cholesky", A)
    return _core._linalg_cholesky(A, upper)


def cholesky_ex(A, *, upper=False, check_errors=False):
    """``(L, info)``: info 0, or the order of the first leading minor that is not
    positive-definite (that matrix's L is then NaN); ``check_errors`` raises instead."""
    _check_tensor("cholesky_ex", A)
    out, info = _per_matrix(
        lambda a: _core._linalg_cholesky(a, upper), A, r"leading minor of order (\d+)", check_errors
    )
    return linalg_cholesky_ex_result(out, info)


def qr(A, mode="reduced"):
    """``(Q, R)``: mode 'reduced' (Q m x k, R k x n), 'complete' (Q m x m) or 'r' (Q empty)."""
    _check_tensor("qr", A)
    return linalg_qr_result(*_core._linalg_qr(A, mode))


def _check_driver(name, driver):
    if driver is not None:
        raise RuntimeError(
            f"torch.linalg.{name}: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend."
        )


def svd(A, full_matrices=True, *, driver=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values in descending order."""
    _check_tensor("svd", A)
    _check_driver("svd", driver)
    return linalg_svd_result(*_core._linalg_svd(A, full_matrices, True))


def svdvals(A, *, driver=None):
    """The singular values of each matrix, in descending order."""
    _check_tensor("svdvals", A)
    _check_driver("svdvals", driver)
    return _core._linalg_svdvals(A)


def eigh(A, UPLO="L"):
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix, read from its lower (``UPLO``
    'U': upper) triangle; eigenvalues in ascending order, eigenvectors as columns."""
    _check_tensor("eigh", A)
    return linalg_eigh_result(*_core._linalg_eigh(A, UPLO, True))


def eigvalsh(A, UPLO="L"):
    """The eigenvalues of each symmetric matrix, in ascending order."""
    _check_tensor("eigvalsh", A)
    return _core._linalg_eigh(A, UPLO, False)[0]


# --- norms


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002  (torch's name)
    """The ``ord``-norm of ``x`` flattened (or over ``dim``): ord inf, -inf, 0 (the count of
    non-zeros) or any real p."""
    _check_tensor("vector_norm", x, "x")
    if dtype is not None:
        if not x.dtype.is_floating_point:
            raise RuntimeError(
                f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {_kernel_name(x.dtype)}"
            )
        x = x.to(dtype)
    dims = [dim] if isinstance(dim, int) else (list(dim) if dim is not None else None)
    return x._norm(float(ord), dims, keepdim)


def _kernel_name(dtype):
    return {"torch.int64": "Long", "torch.int32": "Int", "torch.int16": "Short", "torch.int8": "Char",
            "torch.uint8": "Byte", "torch.bool": "Bool"}.get(str(dtype), str(dtype))


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002
    """The ``ord``-norm of each matrix over the dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1,
    2 (the largest singular value) or -2 (the smallest), built as PyTorch builds them."""
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


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """A vector norm (1-D input, or an int / 1-tuple ``dim``) or a matrix norm (2-D input, or
    a 2-tuple ``dim``); with neither ``ord`` nor ``dim``, the 2-norm of ``A`` flattened."""
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


def _torch_inverse(input):  # noqa: A002
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

