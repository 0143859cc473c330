"""Property tests: broadcasting and reductions against numpy, and no panic ever reaches Python."""

import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ferrograd as torch

settings.register_profile("ferrograd", max_examples=60, deadline=None)
settings.load_profile("ferrograd")

floats = st.floats(-10, 10, allow_nan=False, width=32)


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4), st.data())
def test_broadcast_binary_ops_match_numpy_and_grads_keep_shapes(shapes, data):
    (sa, sb), out_shape = shapes.input_shapes, shapes.result_shape
    a = data.draw(hnp.arrays(np.float64, sa, elements=floats))
    b = data.draw(hnp.arrays(np.float64, sb, elements=floats))
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    for op, ref in [(lambda x, y: x + y, np.add), (lambda x, y: x * y, np.multiply),
                    (lambda x, y: x - y, np.subtract)]:
        r = op(ta, tb)
        assert tuple(r.shape) == out_shape
        np.testing.assert_allclose(r.detach().numpy(), ref(a, b), rtol=1e-12)
    (ta * tb + ta).sum().backward()
    assert tuple(ta.grad.shape) == sa and tuple(tb.grad.shape) == sb
    np.testing.assert_allclose(ta.grad.numpy(), _sum_to(np.broadcast_to(b + 1, out_shape), sa))
    np.testing.assert_allclose(tb.grad.numpy(), _sum_to(np.broadcast_to(a, out_shape), sb))


def _sum_to(g, shape):
    """numpy reference for reducing a broadcast gradient back to `shape`."""
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=4, max_side=5), elements=floats),
       st.data())
def test_reductions_over_random_dims_match_numpy(a, data):
    nd = a.ndim
    dims = data.draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    keep = data.draw(st.booleans())
    t = torch.tensor(a)
    np.testing.assert_allclose(t.sum(dim=tuple(dims), keepdim=keep).numpy(),
                               a.sum(axis=tuple(dims), keepdims=keep), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(t.mean(dim=tuple(dims), keepdim=keep).numpy(),
                               a.mean(axis=tuple(dims), keepdims=keep), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(t.amax(dim=tuple(dims), keepdim=keep).numpy(),
                               a.max(axis=tuple(dims), keepdims=keep))
    d = dims[0]
    np.testing.assert_allclose(t.softmax(d).numpy(),
                               np.exp(a - a.max(d, keepdims=True))
                               / np.exp(a - a.max(d, keepdims=True)).sum(d, keepdims=True),
                               rtol=1e-9, atol=1e-12)


@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), elements=floats),
       st.data())
def test_permute_reshape_round_trip(a, data):
    perm = data.draw(st.permutations(range(a.ndim)))
    t = torch.tensor(a).permute(*perm)
    np.testing.assert_array_equal(t.numpy(), a.transpose(perm))
    np.testing.assert_array_equal(t.reshape(-1).numpy(), a.transpose(perm).reshape(-1))
    np.testing.assert_array_equal(t.contiguous().numpy(), a.transpose(perm))


ARGS = st.one_of(st.integers(-5, 5), st.none(), st.floats(-3, 3), st.booleans(),
                 st.just(()), st.just((0, 0)), st.just([1, -1]), st.just(2**62), st.just(-(2**62)))


@given(st.sampled_from(["sum", "mean", "amax", "reshape", "view", "permute", "transpose",
                        "narrow", "select", "expand", "squeeze", "unsqueeze", "softmax",
                        "split", "chunk", "flatten", "var", "norm", "max", "argmax",
                        "cumsum", "gather", "index_select", "__getitem__", "clamp"]),
       st.lists(ARGS, max_size=3))
def test_no_panic_reaches_python(method, args):
    t = torch.arange(24.0).reshape(2, 3, 4)
    try:
        getattr(t, method)(*args)
    except Exception:
        pass  # any Python exception is fine; a PanicException (a BaseException) is not
