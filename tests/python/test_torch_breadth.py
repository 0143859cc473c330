"""What the op table (tests/native/op_db.py) does not express for movedim ... argwhere: views,
in-place forms, named tuples, the contraction path of einsum, the nodes PyTorch records for
results it cannot differentiate, and options ferrograd refuses."""

import warnings

import numpy as np
import pytest

import ferrograd as fg


def _graph_names(t):
    """The names of the nodes of ``t``'s graph."""
    seen, todo, names = set(), [t.grad_fn], []
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        todo += [n for n, _ in node.next_functions]
    return names


# --- views and contractions


def test_diagonal_is_a_view_that_writes_through():
    x = fg.zeros(3, 4)
    d = x.diagonal(1)
    assert d._is_view() and d.shape == (3,) and d.stride() == (5,) and d.storage_offset() == 1
    d.fill_(2.0)
    assert x.tolist() == [[0, 2, 0, 0], [0, 0, 2, 0], [0, 0, 0, 2]]
    x.diagonal().copy_(fg.tensor([7.0, 8.0, 9.0]))
    assert [x[i, i].item() for i in range(3)] == [7.0, 8.0, 9.0]


def test_diagonal_of_a_transposed_view():
    base = fg.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(base.t().diagonal(-1).numpy(), np.diagonal(base.numpy().T, -1))


def test_diag_of_a_matrix_is_a_copy():
    x = fg.ones(2, 2)
    d = fg.diag(x)
    d.fill_(5.0)
    assert x.tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
                                       ("ij,kj->", [(2, 3), (4, 3)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)])])
def test_einsum_contracts_with_matrix_products(eq, shapes):
    ops = [fg.randn(*s, requires_grad=True) for s in shapes]
    names = _graph_names(fg.einsum(eq, *ops))
    assert {"MmBackward0", "BmmBackward0"} & set(names), names
    assert "MulBackward0" not in names, names  # no broadcast product summed afterwards


def test_einsum_sublist_form():
    a, b = fg.randn(2, 3), fg.randn(3, 4)
    np.testing.assert_allclose(fg.einsum(a, [0, 1], b, [1, 2], [0, 2]).numpy(), (a @ b).numpy(), rtol=1e-6)
    np.testing.assert_allclose(fg.einsum(a, [Ellipsis, 1], b, [1, 2]).numpy(), (a @ b).numpy(), rtol=1e-6)


def test_cdist_matrix_product_path_matches_differences():
    x1, x2 = fg.randn(30, 3, dtype=fg.float64), fg.randn(7, 3, dtype=fg.float64)
    mm = fg.cdist(x1, x2)  # more than 25 rows: the matrix-product identity
    direct = fg.cdist(x1, x2, compute_mode="donot_use_mm_for_euclid_dist")
    np.testing.assert_allclose(mm.numpy(), direct.numpy(), rtol=1e-10)


def test_cdist_zero_distance_has_zero_gradient():
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        x = fg.zeros(1, 2, requires_grad=True)
        fg.cdist(x, fg.zeros(1, 2), compute_mode=mode).sum().backward()
        assert x.grad.tolist() == [[0.0, 0.0]]


# --- named tuples and tuples


def test_named_tuples():
    x = fg.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    r = fg.aminmax(x, dim=1)
    assert r.min.tolist() == [1.0, 0.0] and r.max.tolist() == [3.0, 5.0]
    assert repr(r).startswith("torch.return_types.aminmax(\nmin=tensor(")
    for name, r in [("cummax", x.cummax(1)), ("cummin", fg.cummin(x, 0)), ("median", x.median(1)),
                    ("nanmedian", x.nanmedian(0)), ("mode", x.mode()), ("kthvalue", x.kthvalue(2))]:
        assert type(r).__name__ == name
        assert repr(r).startswith(f"torch.return_types.{name}(\nvalues=tensor(")
        assert r.indices.dtype == fg.int64
    v, m = fg.var_mean(x, 1)
    assert type(fg.var_mean(x)) is tuple and m.tolist() == [2.0, 3.0]


@pytest.mark.parametrize("fname, node", [("var_mean", "VarMeanBackward0"), ("std_mean", "StdMeanBackward0")])
@pytest.mark.parametrize("dim", [1, 0, None])
def test_var_mean_is_one_node_with_both_gradients(fname, node, dim):
    # one native pass (float64 accumulation) and one node of two outputs, as PyTorch's
    a = np.random.default_rng(0).standard_normal((4, 6))
    x = fg.tensor(a, requires_grad=True)
    v, m = getattr(fg, fname)(x, dim, correction=1)
    assert v.grad_fn.name() == m.grad_fn.name() == node
    assert (v.output_nr, m.output_nr) == (0, 1)
    n = a.size if dim is None else a.shape[dim]
    mean = a.mean(axis=dim, keepdims=True)
    var = ((a - mean) ** 2).sum(axis=dim, keepdims=True) / (n - 1)
    want_v = np.sqrt(var) if fname == "std_mean" else var
    np.testing.assert_allclose(v.detach().numpy(), want_v.reshape(v.shape), rtol=1e-12)
    np.testing.assert_allclose(m.detach().numpy(), mean.reshape(m.shape), rtol=1e-12)
    # d/dx of sum(v) + 3 sum(m); and of each output alone
    (v.sum() + 3 * m.sum()).backward()
    dv = 2 * (a - mean) / (n - 1)
    if fname == "std_mean":
        dv = dv / (2 * np.sqrt(var))
    np.testing.assert_allclose(x.grad.numpy(), dv + 3 / n, rtol=1e-10)
    x.grad = None
    getattr(fg, fname)(x, dim)[1].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(a.shape, 1 / n), rtol=1e-12)


@pytest.mark.parametrize("dim", [1, None])
def test_aminmax_is_one_node_sharing_ties(dim):
    x = fg.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 5.0, 2.0]], requires_grad=True)
    lo, hi = fg.aminmax(x, dim=dim)
    assert lo.grad_fn.name() == hi.grad_fn.name() == "AminmaxBackward0"
    (lo.sum() + 10 * hi.sum()).backward()
    if dim == 1:
        want = [[0, 5, 5, 1], [1 / 3, 1 / 3, 10, 1 / 3]]
    else:
        want = [[0, 0, 0, 1], [0, 0, 10, 0]]  # min 0 and max 5 are single
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)


def test_median_of_integers_keeps_the_dtype():
    assert fg.median(fg.tensor([3, 1, 2, 5])).dtype == fg.int64
    assert fg.median(fg.tensor([3, 1, 2, 5])).item() == 2


# --- in-place forms


def test_in_place_forms():
    x = fg.zeros(2, 3)
    assert x.index_fill_(1, fg.tensor([0, 2]), 1.0) is x
    x.index_put_((fg.tensor([1, 1]), fg.tensor([1, 1])), fg.tensor(2.0), accumulate=True)
    x.masked_scatter_(fg.tensor([False, True, False]), fg.tensor([9.0, 8.0]))
    x.scatter_reduce_(1, fg.tensor([[2, 2], [0, 0]]), fg.tensor([[3.0, 5.0], [2.0, 2.0]]), "amax")
    assert x.tolist() == [[1.0, 9.0, 5.0], [2.0, 8.0, 1.0]]
    y = fg.tensor([1.0, 2.0, 0.0, 3.0])
    assert y.cumprod_(0) is y and y.tolist() == [1.0, 2.0, 0.0, 0.0]


def test_in_place_form_on_a_leaf_that_requires_grad_raises():
    x = fg.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.index_fill_(0, fg.tensor([1]), 1.0)


def test_in_place_form_records_the_gradient():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y.index_put_((fg.tensor([0, 0]),), fg.tensor(10.0), accumulate=True)
    (y * fg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]


# --- not differentiable: the nodes PyTorch records


def test_unique_backward_raises():
    u = fg.unique(fg.tensor([1.0, 2.0, 1.0], requires_grad=True))
    assert u.requires_grad and u.grad_fn.name() == "Unique2Backward0"
    with pytest.raises(NotImplementedError, match=r"the derivative for '_unique2' is not implemented\."):
        u.sum().backward()


def test_bincount_weights():
    idx = fg.tensor([0, 1, 1, 3])
    assert fg.bincount(idx, fg.tensor([1, 2, 3, 4])).dtype == fg.float64  # integer weights
    r = fg.bincount(idx, weights=fg.tensor([0.5, 1.0, 1.0, 2.0], requires_grad=True))
    assert r.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
        r.sum().backward()


def test_scatter_with_reduce_is_not_differentiable():
    x = fg.ones(3, requires_grad=True)
    r = x.scatter(0, fg.tensor([0, 0]), 2.0, reduce="add")
    assert r.tolist() == [5.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        r.sum().backward()
    with pytest.warns(UserWarning, match="The reduce argument of torch.scatter with Tensor src is deprecated"):
        fg.ones(3).scatter(0, fg.tensor([0]), fg.tensor([2.0]), reduce="multiply")


def test_scatter_reduce_aliases_forward_only():
    x = fg.tensor([2.0, 1.0, 1.0], requires_grad=True)
    r = x.scatter_reduce(0, fg.tensor([0, 0]), fg.tensor([5.0, 3.0]), "max")
    assert r.tolist() == [5.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' "
                                           "but got max."):
        r.sum().backward()


def test_scatter_reduce_prod_double_backward_with_two_zeros_raises():
    x = fg.tensor([1.0, 2.0], dtype=fg.float64, requires_grad=True)
    src = fg.tensor([0.0, 0.0, 3.0], dtype=fg.float64, requires_grad=True)
    r = x.scatter_reduce(0, fg.tensor([0, 0, 1]), src, "prod")
    (g,) = fg.autograd.grad(r.sum(), src, create_graph=True)
    with pytest.raises(RuntimeError, match="Double backward is unsupported for src when >1 zeros"):
        g.sum().backward()


# --- refused options


def test_refused_options_name_themselves():
    x = fg.ones(2, 2)
    with pytest.raises(NotImplementedError, match=r"histc\(out=...\) is not supported"):
        fg.histc(x, out=fg.empty(100))
    with pytest.raises(NotImplementedError, match=r"searchsorted\(out=...\) is not supported"):
        fg.searchsorted(x, x, out=fg.empty(2, 2, dtype=fg.int64))


# --- against PyTorch


@pytest.mark.parametrize("step", [
    lambda lib, y, src: y.scatter_reduce_(1, lib.tensor([[0, 0], [2, 1]]), src, "prod", include_self=False),
    lambda lib, y, src: y.index_fill_(0, lib.tensor([0]), src[0, 0]),
    lambda lib, y, src: y.masked_scatter_(lib.tensor([True, False, True]), src),
    lambda lib, y, src: y.index_put_((lib.tensor([1, 1, 0]),), src[0, :1].expand(3, 3), accumulate=True),
    lambda lib, y, src: y.cumprod_(1),
])
def test_in_place_forms_match_torch(step):
    torch = pytest.importorskip("torch")
    outs = []
    for lib in (fg, torch):
        x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64, requires_grad=True)
        src = lib.tensor([[0.5, 2.0], [3.0, 0.0]], dtype=lib.float64, requires_grad=True)
        y = x * 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            step(lib, y, src)
        (y * y).sum().backward()
        src_grad = None if src.grad is None else src.grad.numpy().copy()
        outs.append([y.detach().numpy().copy(), x.grad.numpy().copy(), src_grad])
    for a, b in zip(*outs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_kthvalue_and_mode_on_ties_give_a_tied_element():
    torch = pytest.importorskip("torch")
    # PyTorch's index among equal values depends on its selection algorithm; the value does not
    x = [2.0, 1.0, 2.0, 1.0, 2.0]
    for k in range(1, 6):
        assert fg.kthvalue(fg.tensor(x), k).values.item() == torch.kthvalue(torch.tensor(x), k).values.item()
    r, t = fg.mode(fg.tensor(x)), torch.mode(torch.tensor(x))
    assert (r.values.item(), r.indices.item()) == (t.values.item(), t.indices.item())
