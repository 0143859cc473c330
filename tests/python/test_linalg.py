# ruff: noqa: E501  (PyTorch's messages, verbatim)
"""torch.linalg beyond the op table (tests/native/op_db.py, which checks values, gradients to
second order and agreement with PyTorch): errors and their types, named tuples, batching,
dtypes, grad_fn names, the ``*_ex`` forms, and the torch.* / Tensor-method forms."""

import math

import numpy as np
import pytest

import ferrograd as fg
from ferrograd import linalg as LA
from ferrograd.autograd import gradcheck, gradgradcheck


def _t(a, dtype=fg.float64, **kw):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, **kw)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape)


def _wellcond(*shape, seed=0):
    return _rand(*shape, seed=seed) + 3 * np.eye(shape[-1])


# --- errors


def test_linalg_error_is_a_runtime_error():
    assert issubclass(LA.LinAlgError, RuntimeError)
    assert LA.LinAlgError.__module__ == "ferrograd.linalg"


@pytest.mark.parametrize("fn,msg", [
    (lambda: LA.inv(fg.zeros(3, 3)),
     "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed because the input matrix is singular."),
    (lambda: LA.inv(fg.zeros(2, 3, 3)),
     "linalg.inv: (Batch element 0): The diagonal element 1 is zero, the inversion could not be completed because the input matrix is singular."),
    (lambda: LA.solve(fg.zeros(3, 3), fg.ones(3)),
     "torch.linalg.solve: The solver failed because the input matrix is singular."),
    (lambda: LA.solve(fg.zeros(2, 3, 3), fg.ones(2, 3)),
     "torch.linalg.solve: (Batch element 0): The solver failed because the input matrix is singular."),
    (lambda: LA.cholesky(-fg.eye(3)),
     "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order 1 is not positive-definite)."),
    (lambda: LA.cholesky(_t([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])),
     "linalg.cholesky: (Batch element 1): The factorization could not be completed because the input is not positive-definite (the leading minor of order 2 is not positive-definite)."),
])
def test_linalg_errors(fn, msg):
    with pytest.raises(LA.LinAlgError) as e:
        fn()
    assert str(e.value) == msg


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: LA.det(fg.zeros(2, 3)), RuntimeError,
     "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: LA.inv(fg.ones(2, 3)), RuntimeError,
     "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: LA.inv(fg.ones(3)), RuntimeError,
     "linalg.inv: The input tensor A must have at least 2 dimensions."),
    (lambda: LA.svd(fg.ones(3, dtype=fg.long)), RuntimeError,
     "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: LA.inv(fg.zeros(3, 3, dtype=fg.long)), RuntimeError,
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: LA.eigh(fg.ones(2, 3)), RuntimeError,
     "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: LA.solve(fg.eye(3), fg.ones(4)), RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x1)"),
    (lambda: LA.solve(fg.eye(3), fg.ones(2, 4)), RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x4)"),
    (lambda: LA.solve(fg.eye(3), fg.ones(3, dtype=fg.float64)), RuntimeError,
     "linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B of type Double instead"),
    (lambda: LA.solve(fg.eye(3), fg.ones(3), left=False), RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation XA = B (3x3 and 3x1)"),
    (lambda: LA.lstsq(fg.eye(3), fg.ones(2, 3, 2)), RuntimeError,
     "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1"),
    (lambda: LA.qr(fg.ones(3, 3), mode="x"), RuntimeError,
     "qr received unrecognized mode 'x' but expected one of 'reduced' (default), 'r', or 'complete'"),
    (lambda: LA.eigh(fg.eye(3), UPLO="X"), RuntimeError,
     "Expected UPLO argument to be 'L' or 'U', but got X"),
    (lambda: LA.lstsq(fg.ones(3, 3), fg.ones(2, 3)), RuntimeError,
     "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    (lambda: LA.lstsq(fg.ones(3, 3), fg.ones(3, 3), driver="foo"), RuntimeError,
     "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"),
    (lambda: LA.matrix_norm(fg.ones(3, 3), 3), RuntimeError, "linalg.matrix_norm: Order 3 not supported."),
    (lambda: LA.vector_norm(fg.ones(3, dtype=fg.long)), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: LA.det(fg.eye(3, dtype=fg.bfloat16)), NotImplementedError, "\"lu_cpu\" not implemented for 'BFloat16'"),
    (lambda: LA.cholesky(fg.eye(3, dtype=fg.half)), NotImplementedError,
     "\"cholesky_cpu\" not implemented for 'Half'"),
    (lambda: LA.qr(fg.eye(3, dtype=fg.half)), NotImplementedError, "\"geqrf_cpu\" not implemented for 'Half'"),
    (lambda: LA.svd(fg.eye(3, dtype=fg.bfloat16)), NotImplementedError,
     "\"linalg_svd_cpu\" not implemented for 'BFloat16'"),
    (lambda: LA.norm(fg.ones(2, 2, 2), 2), RuntimeError,
     "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."),
])
def test_input_errors(fn, exc, msg):
    with pytest.raises(exc) as e:
        fn()
    assert type(e.value) is exc
    assert str(e.value) == msg


def test_qr_mode_r_is_not_differentiable():
    a = _t(_wellcond(3, 3), requires_grad=True)
    q, r = LA.qr(a, mode="r")
    assert tuple(q.shape) == (0,)
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        r.sum().backward()


def test_lstsq_other_drivers_not_implemented():
    with pytest.raises(NotImplementedError, match="gelsd"):
        LA.lstsq(fg.eye(3), fg.ones(3, 1), driver="gelsd")


# --- named tuples, shapes, batching


def test_named_tuples():
    a = _t(_wellcond(2, 3, 3))
    s = LA.slogdet(a)
    assert type(s).__name__ == "linalg_slogdet" and s._fields == ("sign", "logabsdet")
    assert type(fg.slogdet(a)).__name__ == "slogdet"
    assert LA.qr(a)._fields == ("Q", "R")
    assert LA.svd(a)._fields == ("U", "S", "Vh")
    assert LA.eigh(a)._fields == ("eigenvalues", "eigenvectors")
    assert LA.inv_ex(a)._fields == ("inverse", "info")
    assert LA.cholesky_ex(a @ a.mT)._fields == ("L", "info")
    r = LA.lstsq(a, a)
    assert r._fields == ("solution", "residuals", "rank", "singular_values")
    assert repr(r).startswith("torch.return_types.linalg_lstsq(")


def test_lstsq_gelsy_fields():
    a = _t(_rand(2, 5, 3))
    r = LA.lstsq(a, _t(_rand(2, 5, 2, seed=1)))
    assert tuple(r.solution.shape) == (2, 3, 2)
    assert r.residuals.shape == (0,) and r.singular_values.shape == (0,)
    assert r.rank.dtype == fg.int64 and r.rank.tolist() == [3, 3]
    # rank-deficient: the minimum-norm solution and the effective rank
    low = _t(np.outer(_rand(4), _rand(3, seed=2)))
    b = _t(_rand(4, 1, seed=3))
    r = LA.lstsq(low, b)
    assert r.rank.item() == 1
    np.testing.assert_allclose(r.solution.numpy(), np.linalg.pinv(low.numpy()) @ b.numpy(), atol=1e-12)


@pytest.mark.parametrize("full", [True, False])
def test_svd_shapes(full):
    a = _t(_rand(2, 5, 3))
    u, s, vh = LA.svd(a, full_matrices=full)
    assert tuple(u.shape) == ((2, 5, 5) if full else (2, 5, 3))
    assert tuple(s.shape) == (2, 3)
    assert tuple(vh.shape) == (2, 3, 3)
    eye = np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2)
    np.testing.assert_allclose((u.mT @ u).numpy(), eye, atol=1e-12)


def test_qr_complete_shapes():
    q, r = LA.qr(_t(_rand(5, 3)), mode="complete")
    assert tuple(q.shape) == (5, 5) and tuple(r.shape) == (5, 3)
    np.testing.assert_allclose((q @ r).numpy(), _rand(5, 3), atol=1e-12)
    np.testing.assert_allclose(np.tril(r.numpy(), -1), 0)


def test_eigh_upper_reads_upper_triangle():
    a = _rand(4, 4)
    w_u = LA.eigvalsh(_t(a), UPLO="U").numpy()
    np.testing.assert_allclose(w_u, np.linalg.eigvalsh(a, UPLO="U"), atol=1e-12)
    w_l = LA.eigvalsh(_t(a)).numpy()
    np.testing.assert_allclose(w_l, np.linalg.eigvalsh(a, UPLO="L"), atol=1e-12)


def test_cholesky_upper_and_lower_triangle_only():
    a = _rand(3, 3)
    spd = a @ a.T + 3 * np.eye(3)
    junk = spd + np.triu(np.full((3, 3), 100.0), 1)  # the upper triangle is not read
    L = LA.cholesky(_t(junk)).numpy()
    np.testing.assert_allclose(L, np.linalg.cholesky(spd), atol=1e-12)
    U = LA.cholesky(_t(junk), upper=True).numpy()
    np.testing.assert_allclose(U, L.T, atol=1e-12)


def test_ex_forms_report_info():
    r = LA.inv_ex(_t(np.stack([np.eye(2), np.zeros((2, 2))])))
    assert r.info.dtype == fg.int32 and r.info.tolist() == [0, 1]
    np.testing.assert_allclose(r.inverse[0].numpy(), np.eye(2))
    assert bool(r.inverse[1].isnan().all())
    c = LA.cholesky_ex(_t([[1.0, 2.0], [2.0, 1.0]]))
    assert c.info.item() == 2
    with pytest.raises(LA.LinAlgError):
        LA.cholesky_ex(-fg.eye(2), check_errors=True)


def test_singular_det_and_slogdet():
    z = fg.zeros(3, 3, dtype=fg.float64)
    assert LA.det(z).item() == 0.0
    sign, logabsdet = LA.slogdet(z)
    assert sign.item() == 0.0 and logabsdet.item() == -math.inf
    assert math.isnan(fg.logdet(-fg.eye(3, dtype=fg.float64)).item())


def test_batched_parallel_matches_loop():
    # enough matrices for the kernel to split the batch across threads
    a = _wellcond(64, 16, 16)
    inv = LA.inv(_t(a)).numpy()
    np.testing.assert_allclose(inv, np.linalg.inv(a), atol=1e-12)
    w = LA.eigvalsh(_t(a + np.swapaxes(a, -1, -2))).numpy()
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2)), atol=1e-10)


def test_float32_runs_in_float32():
    a = fg.tensor(_wellcond(3, 3), dtype=fg.float32)
    for out in (LA.inv(a), LA.det(a), LA.svdvals(a), LA.cholesky(a @ a.mT), LA.pinv(a)):
        assert out.dtype == fg.float32


def test_empty_matrices():
    e = fg.zeros(0, 0, dtype=fg.float64)
    assert LA.det(e).item() == 1.0
    assert tuple(LA.inv(e).shape) == (0, 0)
    assert tuple(LA.svdvals(fg.zeros(2, 0, 3, dtype=fg.float64)).shape) == (2, 0)


def test_pinv_tolerances():
    a = _t(np.diag([1.0, 1e-3, 1e-9]))
    np.testing.assert_allclose(LA.pinv(a, atol=1e-2).numpy(), np.diag([1.0, 0.0, 0.0]), atol=1e-12)
    np.testing.assert_allclose(LA.pinv(a, rtol=1e-6).numpy(), np.diag([1.0, 1e3, 0.0]), atol=1e-9)
    np.testing.assert_allclose(LA.pinv(a, rtol=fg.tensor(1e-6)).numpy(), np.diag([1.0, 1e3, 0.0]), atol=1e-9)


@pytest.mark.parametrize("fn,name", [
    (lambda a: LA.inv(a), "LinalgInvExBackward0"),
    (lambda a: fg.inverse(a), "LinalgInvExBackward0"),
    (lambda a: LA.solve(a, a), "LinalgSolveExBackward0"),
    (lambda a: LA.det(a), "LinalgDetBackward0"),
    (lambda a: a.det(), "LinalgDetBackward0"),
    (lambda a: LA.slogdet(a).logabsdet, "LinalgSlogdetBackward0"),
    (lambda a: LA.cholesky(a @ a.mT), "LinalgCholeskyExBackward0"),
    (lambda a: LA.qr(a).Q, "LinalgQrBackward0"),
    (lambda a: LA.svd(a).U, "LinalgSvdBackward0"),
    (lambda a: LA.svdvals(a), "LinalgSvdBackward0"),
    (lambda a: LA.eigh(a).eigenvalues, "LinalgEighBackward0"),
    (lambda a: LA.eigvalsh(a), "LinalgEighBackward0"),
    (lambda a: LA.lstsq(a, a).solution, "LinalgLstsqBackward0"),
    (lambda a: LA.pinv(a), "LinalgPinvBackward0"),
    (lambda a: LA.norm(a), "LinalgVectorNormBackward0"),
    (lambda a: LA.matrix_norm(a, 2), "AmaxBackward0"),
    (lambda a: LA.matrix_norm(a, "nuc"), "SumBackward1"),
    (lambda a: fg.logdet(a @ a.mT), "WhereBackward0"),
])
def test_grad_fn_names(fn, name):
    a = _t(_wellcond(3, 3), requires_grad=True)
    assert fn(a).grad_fn.name() == name


def test_solve_broadcasts_batch_and_reduces_gradients():
    a = _t(_wellcond(3, 3), requires_grad=True)
    b = _t(_rand(4, 3, 2, seed=1), requires_grad=True)
    x = LA.solve(a, b)
    assert tuple(x.shape) == (4, 3, 2)
    x.sum().backward()
    assert tuple(a.grad.shape) == (3, 3) and tuple(b.grad.shape) == (4, 3, 2)


def test_rust_failure_never_panics_on_nan():
    a = _t(np.full((3, 3), np.nan))
    for f in (LA.svdvals, LA.eigvalsh, LA.det, LA.pinv):
        try:
            f(a)
        except (RuntimeError, LA.LinAlgError) as e:
            assert "internal error" not in str(e)


# --- against PyTorch


@pytest.mark.parametrize("name", ["inv", "det", "svdvals", "eigvalsh", "pinv", "matrix_norm"])
def test_matches_torch_batched_float32(name):
    torch = pytest.importorskip("torch")
    a = _wellcond(5, 4, 4)
    a = a + np.swapaxes(a, -1, -2)
    ours = getattr(LA, name)(fg.tensor(a, dtype=fg.float32)).numpy()
    theirs = getattr(torch.linalg, name)(torch.tensor(a, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


def test_errors_match_torch():
    torch = pytest.importorskip("torch")
    cases = [
        lambda L, m: L.linalg.inv(m.zeros(2, 3, 3)),
        lambda L, m: L.linalg.cholesky(m.tensor([[1.0, 2.0], [2.0, 1.0]])),
        lambda L, m: L.linalg.solve(m.zeros(3, 3), m.ones(3)),
        lambda L, m: L.linalg.det(m.zeros(2, 3)),
        lambda L, m: L.linalg.matrix_norm(m.ones(3, 3), "abc"),
    ]
    for case in cases:
        msgs = []
        for lib in (fg, torch):
            with pytest.raises(RuntimeError) as e:
                case(lib, lib)
            msgs.append((isinstance(e.value, lib.linalg.LinAlgError), str(e.value)))
        assert msgs[0] == msgs[1]


# --- triangular / Cholesky / LU solves, LU, matrix functions (issue 13)


def test_new_named_tuples_and_pivot_dtype():
    a = _t(_rand(2, 4, 4))
    f = LA.lu_factor(a)
    assert type(f).__name__ == "linalg_lu_factor" and f._fields == ("LU", "pivots")
    assert f.pivots.dtype == fg.int32 and tuple(f.pivots.shape) == (2, 4)
    ex = LA.lu_factor_ex(a)
    assert ex._fields == ("LU", "pivots", "info") and ex.info.dtype == fg.int32 and ex.info.tolist() == [0, 0]
    assert LA.lu(a)._fields == ("P", "L", "U")
    assert type(fg.lu_unpack(*f)).__name__ == "lu_unpack"
    r = fg.triangular_solve(_t(_rand(4, 2)), _t(_wellcond(4, 4)))
    assert r._fields == ("solution", "cloned_coefficient")


def test_lu_factor_matches_lapack_pivots_and_reconstructs():
    a = _rand(3, 5, 4, seed=3)
    LU, piv = LA.lu_factor(_t(a))
    P, L, U = fg.lu_unpack(LU, piv)
    np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)
    # LAPACK: the first pivot is the row of the largest entry of the first column (1-based)
    assert piv[:, 0].tolist() == (np.abs(a[:, :, 0]).argmax(-1) + 1).tolist()
    P2, L2, U2 = LA.lu(_t(a))
    np.testing.assert_allclose(L2.numpy(), L.numpy())
    np.testing.assert_allclose(U2.numpy(), U.numpy())


def test_lu_factor_of_singular_matrices_as_lapack():
    ex = LA.lu_factor_ex(_t([[1.0, 2.0], [2.0, 4.0]]))
    np.testing.assert_allclose(ex.LU.numpy(), [[2.0, 4.0], [0.5, 0.0]])
    assert ex.pivots.tolist() == [2, 2] and ex.info.item() == 2
    z = LA.lu_factor_ex(fg.zeros(2, 3, 3, dtype=fg.float64))
    assert z.info.tolist() == [1, 1] and z.pivots.tolist() == [[1, 2, 3]] * 2
    assert not bool(z.LU.isnan().any())
    with pytest.raises(RuntimeError, match=r"^torch\.linalg\.lu_factor: \(Batch element 0\): U\[1,1\] is zero"):
        LA.lu_factor(fg.zeros(2, 3, 3))
    with pytest.raises(RuntimeError, match=r"^torch\.linalg\.lu_factor_ex: U\[2,2\] is zero"):
        LA.lu_factor_ex(_t([[1.0, 2.0], [2.0, 4.0]]), check_errors=True)


def test_lu_solve_all_equations():
    a, b = _wellcond(3, 3), _rand(3, 2, seed=1)
    LU, piv = LA.lu_factor(_t(a))
    np.testing.assert_allclose(LA.lu_solve(LU, piv, _t(b)).numpy(), np.linalg.solve(a, b), atol=1e-12)
    np.testing.assert_allclose(LA.lu_solve(LU, piv, _t(b), adjoint=True).numpy(), np.linalg.solve(a.T, b), atol=1e-12)
    bt = b.T
    np.testing.assert_allclose(LA.lu_solve(LU, piv, _t(bt), left=False).numpy(), bt @ np.linalg.inv(a), atol=1e-12)
    np.testing.assert_allclose(LA.lu_solve(LU, piv, _t(bt), left=False, adjoint=True).numpy(),
                               bt @ np.linalg.inv(a.T), atol=1e-12)


def test_solve_ex_reports_singular_instead_of_raising():
    r = LA.solve_ex(_t(np.stack([np.eye(2), np.zeros((2, 2))])), _t(np.ones((2, 2))))
    assert r.info.tolist() == [0, 1]
    np.testing.assert_allclose(r.result[0].numpy(), np.ones(2))
    with pytest.raises(LA.LinAlgError):
        LA.solve_ex(fg.zeros(2, 2), fg.ones(2), check_errors=True)


def test_solve_triangular_reads_one_triangle():
    a = _wellcond(4, 4)
    b = _rand(4, 3, seed=2)
    x = LA.solve_triangular(_t(a), _t(b), upper=True).numpy()
    np.testing.assert_allclose(x, np.linalg.solve(np.triu(a), b), atol=1e-12)
    unit = np.tril(a, -1) + np.eye(4)
    x = LA.solve_triangular(_t(a), _t(b), upper=False, unitriangular=True).numpy()
    np.testing.assert_allclose(x, np.linalg.solve(unit, b), atol=1e-12)
    # a zero on the diagonal: inf / NaN, no error (as PyTorch)
    x = LA.solve_triangular(fg.zeros(2, 2, dtype=fg.float64), fg.ones(2, 1, dtype=fg.float64), upper=True)
    assert not bool(x.isfinite().all())


def test_solve_triangular_promotes_dtypes():
    a = fg.tensor(_wellcond(3, 3), dtype=fg.float32)
    assert LA.solve_triangular(a, _t(_rand(3, 2)), upper=True).dtype == fg.float64


def test_matrix_exp_values():
    # a rotation generator, a nilpotent matrix, a large norm (scaling and squaring)
    t = 0.7
    r = LA.matrix_exp(_t([[0.0, -t], [t, 0.0]])).numpy()
    np.testing.assert_allclose(r, [[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]], atol=1e-14)
    np.testing.assert_allclose(LA.matrix_exp(_t([[0.0, 3.0], [0.0, 0.0]])).numpy(), [[1.0, 3.0], [0.0, 1.0]])
    d = LA.matrix_exp(_t(np.diag([-20.0, 0.5, 12.0]))).numpy()
    np.testing.assert_allclose(d, np.diag(np.exp([-20.0, 0.5, 12.0])), rtol=1e-13)
    assert LA.matrix_exp(fg.eye(3, dtype=fg.float16)).dtype == fg.float16


def test_cholesky_inverse_and_solve():
    a = _rand(3, 3)
    spd = a @ a.T + 3 * np.eye(3)
    L = LA.cholesky(_t(spd))
    np.testing.assert_allclose(fg.cholesky_inverse(L).numpy(), np.linalg.inv(spd), atol=1e-12)
    np.testing.assert_allclose(fg.cholesky_inverse(L.mT, upper=True).numpy(), np.linalg.inv(spd), atol=1e-12)
    b = _rand(3, 2, seed=1)
    np.testing.assert_allclose(fg.cholesky_solve(_t(b), L).numpy(), np.linalg.solve(spd, b), atol=1e-12)


def test_matrix_power_and_multi_dot():
    a = _wellcond(3, 3)
    np.testing.assert_allclose(LA.matrix_power(_t(a), 6).numpy(), np.linalg.matrix_power(a, 6), rtol=1e-12)
    np.testing.assert_allclose(_t(a).matrix_power(-2).numpy(), np.linalg.matrix_power(a, -2), rtol=1e-10)
    np.testing.assert_allclose(fg.matrix_power(_t(a), 0).numpy(), np.eye(3))
    i = fg.ones(3, 3, dtype=fg.long)
    assert LA.matrix_power(i, 3).tolist() == [[9] * 3] * 3
    ms = [_rand(10, 2), _rand(2, 8, seed=1), _rand(8, 1, seed=2), _rand(1, 7, seed=3)]
    np.testing.assert_allclose(LA.multi_dot([_t(m) for m in ms]).numpy(), np.linalg.multi_dot(ms), atol=1e-12)
    assert LA.multi_dot([_t(_rand(3)), _t(_rand(3, seed=1))]).dim() == 0


def test_matrix_rank_and_cond():
    low = _rand(4, 1) @ _rand(1, 4, seed=1)
    assert LA.matrix_rank(_t(low)).item() == 1
    assert LA.matrix_rank(_t(low)).dtype == fg.int64
    assert LA.matrix_rank(_t(np.diag([1.0, 1e-3, 1e-9])), tol=1e-2).item() == 1
    ranks = LA.matrix_rank(_t(np.stack([np.diag([1.0, 1e-3]), np.diag([1.0, 0.5])])), atol=_t([1e-4, 0.7]))
    assert ranks.tolist() == [2, 1]
    assert LA.cond(fg.zeros(3, 3, dtype=fg.float64), 1).item() == math.inf
    a = _wellcond(3, 3)
    assert LA.cond(_t(a), "fro").item() == pytest.approx(np.linalg.cond(a, "fro"))


def test_cross_default_dim_picks_first_size_3():
    a, b = _t(_rand(3, 4)), _t(_rand(3, 4, seed=1))
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        r = fg.cross(a, b)
    np.testing.assert_allclose(r.numpy(), np.cross(a.numpy(), b.numpy(), axis=0))
    with pytest.raises(RuntimeError, match="no dimension of size 3 in input"):
        fg.cross(fg.ones(4, 4), fg.ones(4, 4))


def test_eig_not_implemented_complex():
    for f in (LA.eig, LA.eigvals):
        with pytest.raises(NotImplementedError, match=f"linalg.{f.__name__}: complex outputs are not supported"):
            f(fg.eye(3))


_OUT_CALLS = [
    (LA.inv, lambda: (fg.eye(2),)), (LA.inv_ex, lambda: (fg.eye(2),)), (LA.det, lambda: (fg.eye(2),)),
    (LA.slogdet, lambda: (fg.eye(2),)), (LA.solve, lambda: (fg.eye(2), fg.ones(2))),
    (LA.solve_ex, lambda: (fg.eye(2), fg.ones(2))), (LA.pinv, lambda: (fg.eye(2),)),
    (LA.cholesky, lambda: (fg.eye(2),)), (LA.cholesky_ex, lambda: (fg.eye(2),)), (LA.qr, lambda: (fg.eye(2),)),
    (LA.svd, lambda: (fg.eye(2),)), (LA.svdvals, lambda: (fg.eye(2),)), (LA.eigh, lambda: (fg.eye(2),)),
    (LA.eigvalsh, lambda: (fg.eye(2),)), (LA.vector_norm, lambda: (fg.eye(2),)),
    (LA.matrix_norm, lambda: (fg.eye(2),)), (LA.norm, lambda: (fg.eye(2),)),
    (LA.matrix_power, lambda: (fg.eye(2), 2)), (LA.multi_dot, lambda: ([fg.eye(2), fg.eye(2)],)),
    (LA.lu_factor, lambda: (fg.eye(2),)), (LA.lu_factor_ex, lambda: (fg.eye(2),)), (LA.lu, lambda: (fg.eye(2),)),
    (LA.matrix_rank, lambda: (fg.eye(2),)), (LA.cond, lambda: (fg.eye(2),)),
    (LA.cross, lambda: (fg.ones(3), fg.ones(3))), (LA.vecdot, lambda: (fg.ones(3), fg.ones(3))),
    (LA.tensorinv, lambda: (fg.eye(4).reshape(2, 2, 2, 2),)), (LA.tensorsolve, lambda: (fg.eye(2), fg.ones(2))),
    (LA.householder_product, lambda: (fg.eye(2), fg.ones(2))),
    (fg.inverse, lambda: (fg.eye(2),)), (fg.cholesky_inverse, lambda: (fg.eye(2),)),
    (fg.cholesky_solve, lambda: (fg.ones(2, 1), fg.eye(2))), (fg.matrix_power, lambda: (fg.eye(2), 2)),
    (fg.cross, lambda: (fg.ones(3), fg.ones(3))), (fg.triangular_solve, lambda: (fg.ones(2, 1), fg.eye(2))),
    (fg.lu_unpack, lambda: tuple(LA.lu_factor(fg.eye(2)))),
]


@pytest.mark.parametrize("fn,args", _OUT_CALLS, ids=[f.__name__ for f, _ in _OUT_CALLS])
def test_out_is_refused_not_ignored(fn, args):
    with pytest.raises(NotImplementedError, match=r"\(out=\.\.\.\) is not supported by ferrograd"):
        fn(*args(), out=fg.empty(0))


def test_solve_triangular_upper_is_required_keyword():
    with pytest.raises(TypeError):
        LA.solve_triangular(fg.eye(3), fg.ones(3, 1))
    with pytest.raises(TypeError):
        LA.solve_triangular(fg.eye(3), fg.ones(3, 1), True)


@pytest.mark.parametrize("fn,name", [
    (lambda a: LA.solve_triangular(a, a, upper=True), "LinalgSolveTriangularBackward0"),
    (lambda a: fg.cholesky_solve(a, LA.cholesky(a @ a.mT)), "CholeskySolveBackward0"),
    (lambda a: fg.cholesky_inverse(LA.cholesky(a @ a.mT)), "CholeskyInverseBackward0"),
    (lambda a: LA.lu_factor(a).LU, "LinalgLuFactorExBackward0"),
    (lambda a: LA.lu_factor_ex(a).LU, "LinalgLuFactorExBackward0"),
    (lambda a: LA.lu(a).L, "LinalgLuBackward0"),
    (lambda a: LA.lu(a).U, "LinalgLuBackward0"),
    (lambda a: fg.lu_unpack(*LA.lu_factor(a)).U, "LuUnpackBackward0"),
    (lambda a: LA.lu_solve(*LA.lu_factor(a), a), "LinalgLuSolveBackward0"),
    (lambda a: LA.matrix_exp(a), "LinalgMatrixExpBackward0"),
    (lambda a: LA.cross(a, a), "LinalgCrossBackward0"),
    (lambda a: fg.triangular_solve(a, a).solution, "TriangularSolveBackward0"),
    (lambda a: fg.triangular_solve(a, a).cloned_coefficient, "TriangularSolveBackward0"),
    (lambda a: fg.cross(a, a, dim=0), "LinalgCrossBackward0"),
])
def test_new_grad_fn_names(fn, name):
    a = _t(_wellcond(3, 3), requires_grad=True)
    assert fn(a).grad_fn.name() == name


def test_lu_unpack_flags_give_empty_parts():
    LU, piv = LA.lu_factor(_t(_rand(3, 3)))
    P, L, U = fg.lu_unpack(LU, piv, unpack_data=False)
    assert tuple(P.shape) == (3, 3) and tuple(L.shape) == (0,) and tuple(U.shape) == (0,)
    P, L, U = fg.lu_unpack(LU, piv, unpack_pivots=False)
    assert tuple(P.shape) == (0,) and tuple(L.shape) == (3, 3)


_NEW_ERROR_CASES = [
    (lambda L, m: L.linalg.lu_factor(m.zeros(3, 3)), RuntimeError),
    (lambda L, m: L.linalg.lu_factor(m.zeros(2, 3, 3)), RuntimeError),
    (lambda L, m: L.linalg.lu_factor(m.ones(3)), RuntimeError),
    (lambda L, m: L.linalg.lu_factor(m.ones(3, 3, dtype=m.long)), NotImplementedError),
    (lambda L, m: L.linalg.lu_factor(m.ones(3, 3), pivot=False), RuntimeError),
    (lambda L, m: L.linalg.lu(m.ones(3)), RuntimeError),
    (lambda L, m: L.linalg.lu_solve(m.eye(3), m.ones(2, dtype=m.int32), m.ones(3, 2)), RuntimeError),
    (lambda L, m: L.linalg.lu_solve(m.eye(3), m.ones(3, dtype=m.long), m.ones(3, 2)), RuntimeError),
    (lambda L, m: L.linalg.lu_solve(m.eye(3), m.ones(3, dtype=m.int32), m.ones(4, 2)), RuntimeError),
    (lambda L, m: L.linalg.lu_solve(m.eye(3), m.ones(3, dtype=m.int32), m.ones(3)), RuntimeError),
    (lambda L, m: L.linalg.lu_solve(m.ones(2, 3), m.ones(2, dtype=m.int32), m.ones(2, 2)), RuntimeError),
    (lambda L, m: L.linalg.lu_solve(m.eye(3), m.ones(3, dtype=m.int32), m.ones(3, 2, dtype=m.float64)), RuntimeError),
    (lambda L, m: L.linalg.lu_solve(m.ones(2, 3, 3), m.ones(3, 3, dtype=m.int32), m.ones(3, 2)), RuntimeError),
    (lambda L, m: L.linalg.solve_triangular(m.eye(3), m.ones(3), upper=True), RuntimeError),
    (lambda L, m: L.linalg.solve_triangular(m.eye(3), m.ones(4, 2), upper=True), RuntimeError),
    (lambda L, m: L.linalg.solve_triangular(m.eye(3), m.ones(2, 4), upper=True, left=False), RuntimeError),
    (lambda L, m: L.linalg.solve_triangular(m.ones(2, 3), m.ones(2, 4), upper=True), RuntimeError),
    (lambda L, m: L.linalg.solve_triangular(m.ones(3, 3, dtype=m.half), m.ones(3, 2, dtype=m.half), upper=True),
     NotImplementedError),
    (lambda L, m: L.triangular_solve(m.ones(3), m.eye(3)), RuntimeError),
    (lambda L, m: L.triangular_solve(m.ones(3, 2), m.ones(2, 3)), RuntimeError),
    (lambda L, m: L.triangular_solve(m.ones(3, 2), m.ones(4, 4)), RuntimeError),
    (lambda L, m: L.triangular_solve(m.ones(3, 2), m.eye(3, dtype=m.float64)), RuntimeError),
    (lambda L, m: L.cholesky_solve(m.ones(3), m.eye(3)), RuntimeError),
    (lambda L, m: L.cholesky_solve(m.ones(3, 2), m.ones(3)), RuntimeError),
    (lambda L, m: L.cholesky_solve(m.ones(4, 2), m.eye(3)), RuntimeError),
    (lambda L, m: L.cholesky_solve(m.ones(3, 2), m.eye(3, dtype=m.float64)), RuntimeError),
    (lambda L, m: L.cholesky_solve(m.ones(3, 2, dtype=m.long), m.eye(3, dtype=m.long)), NotImplementedError),
    (lambda L, m: L.cholesky_inverse(m.ones(2, 3)), RuntimeError),
    (lambda L, m: L.cholesky_inverse(m.zeros(3, 3)), RuntimeError),
    (lambda L, m: L.cholesky_inverse(m.zeros(2, 3, 3)), RuntimeError),
    (lambda L, m: L.linalg.matrix_power(m.ones(2, 3), 2), RuntimeError),
    (lambda L, m: L.linalg.matrix_power(m.zeros(3, 3), -1), RuntimeError),
    (lambda L, m: L.linalg.matrix_power(m.ones(3, 3), 2.0), TypeError),
    (lambda L, m: L.linalg.multi_dot([m.ones(3, 3)]), RuntimeError),
    (lambda L, m: L.linalg.multi_dot([m.ones(3, 3), m.ones(4, 2)]), RuntimeError),
    (lambda L, m: L.linalg.multi_dot([m.ones(3, 3), m.ones(2, 3, 3)]), RuntimeError),
    (lambda L, m: L.linalg.multi_dot([m.ones(3, 3), m.ones(3, 3, dtype=m.float64)]), RuntimeError),
    (lambda L, m: L.linalg.multi_dot([m.ones(3, 3, dtype=m.long), m.ones(3, 3)]), RuntimeError),
    (lambda L, m: L.linalg.multi_dot([m.ones(3, 3), m.ones(2, 3, 3), m.ones(3)]), RuntimeError),
    (lambda L, m: L.linalg.matrix_exp(m.ones(2, 3)), RuntimeError),
    (lambda L, m: L.linalg.matrix_exp(m.ones(3, 3, dtype=m.long)), RuntimeError),
    (lambda L, m: L.linalg.cross(m.ones(3, 2), m.ones(3, 2)), RuntimeError),
    (lambda L, m: L.linalg.cross(m.ones(3, 3), m.ones(2, 3), dim=0), RuntimeError),
    (lambda L, m: L.linalg.cross(m.ones(3), m.ones(2, 3)), RuntimeError),
    (lambda L, m: L.linalg.cross(m.ones(3), m.ones(3, dtype=m.float64)), RuntimeError),
    (lambda L, m: L.linalg.vecdot(m.ones(3), m.ones(3, dtype=m.float64)), RuntimeError),
    (lambda L, m: L.linalg.vecdot(m.ones(3, dtype=m.long), m.ones(3, dtype=m.long)), RuntimeError),
    (lambda L, m: L.linalg.matrix_rank(m.ones(3)), RuntimeError),
    (lambda L, m: L.linalg.matrix_rank(m.ones(3, 3, dtype=m.long)), RuntimeError),
    (lambda L, m: L.linalg.cond(m.ones(3)), RuntimeError),
    (lambda L, m: L.linalg.cond(m.ones(2, 3), 1), RuntimeError),
    (lambda L, m: L.linalg.cond(m.eye(3), 3), RuntimeError),
    (lambda L, m: L.linalg.vander(m.ones(3), N=1), RuntimeError),
    (lambda L, m: L.linalg.tensorinv(m.ones(2, 3), 1), RuntimeError),
    (lambda L, m: L.linalg.tensorinv(m.ones(4, 2, 2), 0), RuntimeError),
    (lambda L, m: L.linalg.tensorinv(m.zeros(4, 2, 2), 1), RuntimeError),
    (lambda L, m: L.linalg.tensorsolve(m.ones(2, 3, 5), m.ones(2, 3)), RuntimeError),
    (lambda L, m: L.linalg.householder_product(m.ones(3), m.ones(3)), RuntimeError),
    (lambda L, m: L.linalg.householder_product(m.ones(2, 3), m.ones(2)), RuntimeError),
    (lambda L, m: L.linalg.householder_product(m.ones(2, 3, 2), m.ones(3, 2)), RuntimeError),
    (lambda L, m: L.linalg.householder_product(m.ones(3, 2), m.ones(2, dtype=m.float64)), RuntimeError),
    (lambda L, m: L.lu_unpack(m.ones(3, 3), m.ones(3, dtype=m.long)), RuntimeError),
    (lambda L, m: L.lu_unpack(m.ones(3, 3), m.tensor([4, 3, 3], dtype=m.int32)), RuntimeError),
]


@pytest.mark.parametrize("case,exc", _NEW_ERROR_CASES)
def test_new_errors_match_torch(case, exc):
    torch = pytest.importorskip("torch")
    msgs = []
    for lib in (fg, torch):
        with pytest.raises(exc) as e:
            case(lib, lib)
        msgs.append((type(e.value).__name__.lstrip("_"), str(e.value)))
    assert msgs[0] == msgs[1]


def test_lu_against_torch_batched_float32():
    torch = pytest.importorskip("torch")
    a = _rand(4, 5, 5, seed=7)
    ours = LA.lu_factor(fg.tensor(a, dtype=fg.float32))
    theirs = torch.linalg.lu_factor(torch.tensor(a, dtype=torch.float32))
    assert ours.pivots.tolist() == theirs.pivots.tolist()
    np.testing.assert_allclose(ours.LU.numpy(), theirs.LU.numpy(), rtol=1e-4, atol=1e-5)
    sing = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
    ours = LA.lu_factor_ex(_t(sing))
    theirs = torch.linalg.lu_factor_ex(torch.tensor(sing, dtype=torch.float64))
    np.testing.assert_allclose(ours.LU.numpy(), theirs.LU.numpy(), atol=1e-14)
    assert ours.pivots.tolist() == theirs.pivots.tolist() and ours.info.item() == theirs.info.item()


@pytest.mark.parametrize("p", ["fro", "nuc", 1, -1, math.inf, -math.inf])
def test_cond_through_inverse_gradcheck(p):
    # not compared with PyTorch in the op table: its backward of these fails in 2.13
    a = _t(_wellcond(2, 3, 3, seed=4), requires_grad=True)
    assert gradcheck(lambda x: LA.cond(x, p), (a,))
    assert gradgradcheck(lambda x: LA.cond(x, p), (a,))
