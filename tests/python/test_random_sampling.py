"""Random sampling: multinomial, bernoulli, poisson, normal, the in-place fills and the
randint / randint_like / randperm overloads.

ferrograd's stream differs from PyTorch's, so the draws are tested statistically (moments
within a few standard errors, with fixed seeds), for determinism under ``manual_seed`` and
generators, and for PyTorch's shapes, dtypes, gradients and error messages (the error table
is also run against PyTorch itself where it is installed).
"""

import math

import numpy as np
import pytest

import ferrograd as torch

N = 200_000


def _moments(t):
    a = t.double().numpy()
    return a.mean(), a.var()


def _close(value, expected, sd, n=N, k=5.0):
    """``value`` (a sample mean of ``n`` draws of std ``sd``) within k standard errors."""
    assert abs(value - expected) <= k * sd / math.sqrt(n), (value, expected)


# --- multinomial


def test_multinomial_shapes_and_dtype():
    p = torch.tensor([0.1, 0.2, 0.7])
    assert torch.multinomial(p, 2).shape == (2,)
    assert torch.multinomial(p, 5, True).shape == (5,)
    out = torch.multinomial(p.repeat(4, 1), 3, replacement=False)
    assert out.shape == (4, 3) and out.dtype == torch.int64
    assert torch.multinomial(torch.ones(0, 3), 2).shape == (0, 2)
    assert p.multinomial(num_samples=2).shape == (2,)


def test_multinomial_frequencies_with_replacement():
    torch.manual_seed(0)
    p = torch.tensor([1.0, 0.0, 2.0, 5.0], dtype=torch.float64)  # unnormalised
    s = torch.multinomial(p, N, replacement=True).numpy()
    for i, q in enumerate([1 / 8, 0.0, 2 / 8, 5 / 8]):
        _close((s == i).mean(), q, math.sqrt(q * (1 - q)) or 1e-9)


def test_multinomial_without_replacement_is_a_subset_and_first_draw_follows_p():
    torch.manual_seed(1)
    p = torch.tensor([[1.0, 2.0, 3.0, 4.0]]).repeat(20000, 1)
    s = torch.multinomial(p, 3).numpy()
    assert all(len(set(row)) == 3 for row in s[:500])
    first = s[:, 0]
    for i in range(4):
        q = (i + 1) / 10
        _close((first == i).mean(), q, math.sqrt(q * (1 - q)), n=20000)
    # all categories: a permutation
    perm = torch.multinomial(torch.rand(50) + 0.01, 50).numpy()
    assert sorted(perm) == list(range(50))


def test_multinomial_never_draws_zero_probability():
    torch.manual_seed(2)
    p = torch.zeros(2, 100)
    p[0, 7] = 1.0
    p[1, 3] = 0.5
    p[1, 99] = 0.5
    s = torch.multinomial(p, 1000, replacement=True)
    assert set(s[0].tolist()) == {7} and set(s[1].tolist()) == {3, 99}
    assert set(torch.multinomial(p, 1)[:, 0].tolist()) <= {7, 3, 99}


def test_multinomial_determinism_and_generator():
    p = torch.rand(3, 10)
    torch.manual_seed(5)
    a = torch.multinomial(p, 4)
    torch.manual_seed(5)
    assert torch.equal(a, torch.multinomial(p, 4))
    g1, g2 = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    assert torch.equal(torch.multinomial(p, 6, True, generator=g1),
                       torch.multinomial(p, 6, True, generator=g2))


def test_multinomial_ignores_autograd():
    p = torch.tensor([0.3, 0.7], requires_grad=True)
    out = torch.multinomial(p, 1)
    assert not out.requires_grad and out.grad_fn is None


# --- bernoulli, poisson


def test_bernoulli_tensor_p():
    torch.manual_seed(3)
    p = torch.full((N,), 0.3, dtype=torch.float64)
    s = torch.bernoulli(p)
    assert s.dtype == torch.float64 and set(np.unique(s.numpy())) <= {0.0, 1.0}
    _close(s.mean().item(), 0.3, math.sqrt(0.21))
    assert torch.equal(torch.bernoulli(torch.tensor([0.0, 1.0, 1.0])), torch.tensor([0.0, 1.0, 1.0]))


def test_bernoulli_float_p_keeps_input_shape_and_dtype():
    torch.manual_seed(4)
    x = torch.zeros(400, 500, dtype=torch.int64)
    s = torch.bernoulli(x, 0.25)
    assert s.dtype == torch.int64 and s.shape == (400, 500)
    _close(s.double().mean().item(), 0.25, math.sqrt(0.1875))
    assert torch.zeros(3).bernoulli(p=1.0).tolist() == [1.0, 1.0, 1.0]


def test_bernoulli_inplace():
    torch.manual_seed(6)
    x = torch.empty(N)
    assert x.bernoulli_(0.6) is x
    _close(x.mean().item(), 0.6, math.sqrt(0.24))
    y = torch.empty(2, 3, dtype=torch.bool).bernoulli_(torch.tensor([0.0, 1.0, 1.0]))
    assert y.dtype == torch.bool and y.tolist() == [[False, True, True]] * 2
    z = torch.empty(N)
    z.bernoulli_()  # p = 0.5
    _close(z.mean().item(), 0.5, 0.5)


@pytest.mark.parametrize("rate", [0.0, 0.7, 4.0, 30.0, 1000.0])
def test_poisson_moments(rate):
    torch.manual_seed(7)
    s = torch.poisson(torch.full((N,), rate, dtype=torch.float64))
    assert s.dtype == torch.float64 and (s.numpy() == np.round(s.numpy())).all()
    mean, var = _moments(s)
    _close(mean, rate, math.sqrt(rate) or 1e-9)
    assert abs(var - rate) <= 0.03 * rate + 1e-12


def test_poisson_per_element_rates():
    torch.manual_seed(8)
    rates = torch.tensor([1.0, 50.0]).repeat(N // 2, 1)
    m = torch.poisson(rates).mean(0)
    _close(m[0].item(), 1.0, 1.0, n=N // 2)
    _close(m[1].item(), 50.0, math.sqrt(50), n=N // 2)


# --- normal


def test_normal_overloads():
    torch.manual_seed(10)
    mean, std = torch.full((N,), 2.0), torch.full((N,), 3.0)
    for s, (m, sd) in [
        (torch.normal(mean, std), (2.0, 3.0)),
        (torch.normal(mean, 0.5), (2.0, 0.5)),
        (torch.normal(mean), (2.0, 1.0)),
        (torch.normal(-1.0, std), (-1.0, 3.0)),
        (torch.normal(4.0, 2.0, (N,)), (4.0, 2.0)),
        (torch.normal(4, 2, size=(N // 4, 4)), (4.0, 2.0)),
    ]:
        assert s.numel() == N and s.dtype == torch.float32
        mu, var = _moments(s)
        _close(mu, m, sd)
        assert abs(math.sqrt(var) - sd) < 0.01 * sd


def test_normal_shapes_and_dtypes():
    assert torch.normal(torch.zeros(2, 1), torch.ones(3)).shape == (2, 3)
    assert torch.normal(torch.zeros(3, dtype=torch.float64), torch.ones(3)).dtype == torch.float64
    assert torch.normal(torch.zeros(3), torch.ones(3, dtype=torch.float64)).dtype == torch.float32
    assert torch.normal(0.0, torch.ones(3, dtype=torch.float64)).dtype == torch.float64
    assert torch.normal(0.0, 1.0, (2,), dtype=torch.float64).dtype == torch.float64
    t = torch.normal(0.0, 1.0, (2,), requires_grad=True)
    assert t.requires_grad and t.is_leaf
    z = torch.normal(torch.full((3,), 5.0), torch.zeros(3))
    assert z.tolist() == [5.0, 5.0, 5.0]


@pytest.mark.parametrize("make", [
    lambda m, s: torch.normal(m, s),
    lambda m, s: torch.normal(m, 2.0),
    lambda m, s: torch.normal(1.0, s),
    lambda m, s: torch.bernoulli(torch.sigmoid(m)),
    lambda m, s: torch.bernoulli(m, 0.5),
    lambda m, s: torch.poisson(s),
])
def test_samples_have_zero_gradient(make):
    # PyTorch: NormalBackward / BernoulliBackward / PoissonBackward give zero gradients
    m = torch.zeros(3, requires_grad=True)
    s = torch.ones(3, requires_grad=True)
    out = make(m, s)
    assert out.requires_grad
    out.sum().backward()
    for p in (m, s):
        assert p.grad is None or p.grad.tolist() == [0.0, 0.0, 0.0]


def test_normal_determinism():
    torch.manual_seed(11)
    a = torch.normal(torch.zeros(5), torch.ones(5))
    torch.manual_seed(11)
    assert torch.equal(a, torch.normal(torch.zeros(5), torch.ones(5)))


# --- in-place fills


def test_exponential_():
    torch.manual_seed(12)
    x = torch.empty(N, dtype=torch.float64).exponential_(2.0)
    assert bool((x >= 0).all())
    mean, var = _moments(x)
    _close(mean, 0.5, 0.5)
    assert abs(var - 0.25) < 0.01


def test_geometric_():
    torch.manual_seed(13)
    for dtype in (torch.float32, torch.int64):
        x = torch.empty(N, dtype=dtype).geometric_(0.2)
        a = x.double().numpy()
        assert a.min() >= 1 and (a == np.round(a)).all() and x.dtype == dtype
        _close(a.mean(), 5.0, math.sqrt(0.8) / 0.2)
        _close((a == 1).mean(), 0.2, 0.4)


def test_log_normal_():
    torch.manual_seed(14)
    x = torch.empty(N, dtype=torch.float64).log_normal_(0.5, 0.25)
    mean, var = _moments(x.log())
    _close(mean, 0.5, 0.25)
    assert abs(math.sqrt(var) - 0.25) < 0.005
    assert bool((torch.empty(10).log_normal_() > 0).all())  # defaults mean=1, std=2


def test_cauchy_():
    torch.manual_seed(15)
    x = torch.empty(N, dtype=torch.float64).cauchy_(1.0, 2.0).numpy()
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    # the quartiles of Cauchy(median, sigma) are median -/+ sigma
    assert abs(med - 1.0) < 0.05 and abs(q1 + 1.0) < 0.05 and abs(q3 - 3.0) < 0.05


def test_uniform_and_normal_():
    torch.manual_seed(16)
    x = torch.empty(N).uniform_(-1.0, 3.0)
    assert float(x.min()) >= -1.0 and float(x.max()) < 3.0
    _close(x.double().mean().item(), 1.0, 4 / math.sqrt(12))
    y = torch.empty(N).normal_(1.0, 0.5)
    _close(y.double().mean().item(), 1.0, 0.5)


def test_fills_return_self_and_respect_generator():
    for name, args in [("bernoulli_", (0.3,)), ("exponential_", ()), ("geometric_", (0.3,)),
                       ("log_normal_", ()), ("cauchy_", ()), ("uniform_", ()), ("normal_", ()),
                       ("random_", (10,))]:
        a, b = torch.empty(2, 5), torch.empty(2, 5)
        assert getattr(a, name)(*args, generator=torch.Generator().manual_seed(3)) is a
        getattr(b, name)(*args, generator=torch.Generator().manual_seed(3))
        assert torch.equal(a, b), name


def test_fills_write_through_views():
    base = torch.zeros(4, 6)
    base[:, ::2].exponential_(1.0)
    assert bool((base[:, 1::2] == 0).all()) and bool((base[:, ::2] > 0).all())


# --- randint, randint_like, randperm


def test_randint_overloads():
    torch.manual_seed(17)
    for t, lo, hi in [
        (torch.randint(3, (1000,)), 0, 3),
        (torch.randint(3, size=(1000,)), 0, 3),
        (torch.randint(high=3, size=(1000,)), 0, 3),
        (torch.randint(-2, 3, (1000,)), -2, 3),
        (torch.randint(low=-2, high=3, size=[10, 100]), -2, 3),
        (torch.randint(5, 7, torch.Size([1000])), 5, 7),
        (torch.randint(torch.tensor(4), (1000,)), 0, 4),
        (torch.randint(np.int64(4), (1000,)), 0, 4),
    ]:
        assert t.dtype == torch.int64 and t.numel() == 1000
        assert set(t.flatten().tolist()) == set(range(lo, hi))
    f = torch.randint(3, (10,), dtype=torch.float64, requires_grad=True)
    assert f.dtype == torch.float64 and f.requires_grad
    assert torch.randint(0, 2, (5,), dtype=torch.bool).dtype == torch.bool
    g = torch.Generator().manual_seed(1)
    a = torch.randint(100, (10,), generator=g)
    assert torch.equal(a, torch.randint(100, (10,), generator=torch.Generator().manual_seed(1)))


def test_randint_like():
    x = torch.zeros(20, 30)
    a = torch.randint_like(x, 4)
    assert a.shape == (20, 30) and a.dtype == torch.float32
    assert set(a.flatten().tolist()) == {0.0, 1.0, 2.0, 3.0}
    b = torch.randint_like(x, 2, 4, dtype=torch.int64)
    assert b.dtype == torch.int64 and set(b.flatten().tolist()) == {2, 3}
    assert set(torch.randint_like(x, low=5, high=6).flatten().tolist()) == {5.0}
    assert set(torch.randint_like(x, high=1).flatten().tolist()) == {0.0}


def test_randperm():
    p = torch.randperm(100)
    assert p.dtype == torch.int64 and sorted(p.tolist()) == list(range(100))
    assert torch.randperm(5, dtype=torch.float64).dtype == torch.float64
    assert torch.randperm(0).shape == (0,)


# --- errors: (id, call(lib), exception type, message prefix), as PyTorch 2.x


def _p(lib, *v):
    return lib.tensor(list(v))


RANDINT_SIGS = "randint() received an invalid combination of arguments - got ({}), but expected one of:"
NORMAL_SIGS = "normal() received an invalid combination of arguments - got ({}), but expected one of:"

ERROR_CASES = [
    ("multinomial_dim", lambda lib: lib.multinomial(lib.ones(2, 2, 2), 1), RuntimeError,
     "prob_dist must be 1 or 2 dim"),
    ("multinomial_0d", lambda lib: lib.multinomial(lib.tensor(1.0), 1), RuntimeError,
     "prob_dist must be 1 or 2 dim"),
    ("multinomial_int", lambda lib: lib.multinomial(lib.tensor([1, 2]), 1), RuntimeError,
     "multinomial only supports floating-point dtypes for input, got: Long"),
    ("multinomial_n0", lambda lib: lib.multinomial(_p(lib, 0.5, 0.5), 0), RuntimeError,
     "cannot sample n_sample <= 0 samples"),
    ("multinomial_too_many", lambda lib: lib.multinomial(_p(lib, 0.5, 0.5), 3), RuntimeError,
     "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    ("multinomial_sum0", lambda lib: lib.multinomial(lib.zeros(3), 1), RuntimeError,
     "invalid multinomial distribution (sum of probabilities <= 0)"),
    ("multinomial_row_sum0", lambda lib: lib.multinomial(lib.tensor([[1.0, 1.0], [0.0, 0.0]]), 1),
     RuntimeError, "invalid multinomial distribution (sum of probabilities <= 0)"),
    ("multinomial_neg", lambda lib: lib.multinomial(_p(lib, -1.0, 2.0), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    ("multinomial_nan", lambda lib: lib.multinomial(_p(lib, math.nan, 2.0), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    ("multinomial_inf", lambda lib: lib.multinomial(_p(lib, math.inf, 2.0), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    ("multinomial_repl_neg", lambda lib: lib.multinomial(_p(lib, -1.0, 2.0), 2, True), RuntimeError,
     "invalid multinomial distribution (encountering probability entry < 0)"),
    ("multinomial_repl_inf", lambda lib: lib.multinomial(_p(lib, math.inf, 2.0), 2, True),
     RuntimeError, "invalid multinomial distribution (encountering probability entry = infinity or NaN)"),
    ("multinomial_repl_sum0", lambda lib: lib.multinomial(lib.zeros(2), 2, True), RuntimeError,
     "invalid multinomial distribution (sum of probabilities <= 0)"),
    ("multinomial_float_n", lambda lib: lib.multinomial(_p(lib, 1.0, 2.0), 2.0), TypeError,
     "multinomial(): argument 'num_samples' (position 2) must be int, not float"),
    ("bernoulli_p_range", lambda lib: lib.bernoulli(_p(lib, 1.5)), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false."),
    ("bernoulli_int", lambda lib: lib.bernoulli(lib.tensor([1, 0])), NotImplementedError,
     "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
    ("bernoulli_float_p", lambda lib: lib.bernoulli(lib.ones(2), 2), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=2"),
    ("bernoulli_tensor_kw_p", lambda lib: lib.bernoulli(lib.ones(2), p=lib.ones(2)), TypeError,
     "bernoulli() received an invalid combination of arguments - got (Tensor, p=Tensor)"),
    ("bernoulli__p", lambda lib: lib.zeros(3).bernoulli_(1.5), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    ("bernoulli__expand", lambda lib: lib.zeros(3).bernoulli_(lib.ones(2)), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0"),
    ("bernoulli__leaf", lambda lib: lib.zeros(3, requires_grad=True).bernoulli_(), RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
    ("poisson_neg", lambda lib: lib.poisson(_p(lib, -1.0, 2.0)), RuntimeError,
     "invalid Poisson rate, expected rate to be non-negative"),
    ("poisson_nan", lambda lib: lib.poisson(_p(lib, math.nan)), RuntimeError,
     "invalid Poisson rate, expected rate to be non-negative"),
    ("poisson_int", lambda lib: lib.poisson(lib.tensor([1, 2])), NotImplementedError,
     "\"poisson_cpu\" not implemented for 'Long'"),
    ("normal_two_floats", lambda lib: lib.normal(1.0, 2.0), TypeError, NORMAL_SIGS.format("float, float")),
    ("normal_tensor_size", lambda lib: lib.normal(lib.zeros(2), 1, (3,)), TypeError,
     NORMAL_SIGS.format("Tensor, int, tuple")),
    ("normal_neg_std", lambda lib: lib.normal(lib.zeros(2), -1.0), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    ("normal_neg_std_tensor", lambda lib: lib.normal(lib.zeros(2), -lib.ones(2)), RuntimeError,
     "normal expects all elements of std >= 0.0"),
    ("normal_neg_std_size", lambda lib: lib.normal(0.0, -2.0, (2,)), RuntimeError,
     "normal expects std >= 0.0, but found std -2"),
    ("normal_broadcast", lambda lib: lib.normal(lib.zeros(3), lib.ones(2)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("normal_int_mean", lambda lib: lib.normal(lib.zeros(3).long(), lib.ones(3)), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    ("exponential_lambda", lambda lib: lib.zeros(2).exponential_(0.0), RuntimeError,
     "exponential_ expects lambda > 0.0, but found lambda=0"),
    ("exponential_int", lambda lib: lib.zeros(2).long().exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a floating "
     "point but you specified Long"),
    ("geometric_p", lambda lib: lib.zeros(2).geometric_(1.0), RuntimeError,
     "geometric_ expects p to be in (0, 1), but got p=1"),
    ("geometric_bool", lambda lib: lib.zeros(2).bool().geometric_(0.5), NotImplementedError,
     "\"geometric_cpu\" not implemented for 'Bool'"),
    ("log_normal_std", lambda lib: lib.zeros(2).log_normal_(1.0, -1.0), RuntimeError,
     "log_normal_ expects std > 0.0, but found std=-1"),
    ("log_normal_int", lambda lib: lib.zeros(2).long().log_normal_(), NotImplementedError,
     "\"log_normal_cpu\" not implemented for 'Long'"),
    ("cauchy_sigma", lambda lib: lib.zeros(2).cauchy_(0.0, 0.0), RuntimeError,
     "cauchy_ expects sigma > 0.0, but found sigma=0"),
    ("cauchy_int", lambda lib: lib.zeros(2).long().cauchy_(), RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a floating point "
     "but you specified long int"),
    ("uniform_range", lambda lib: lib.zeros(2).uniform_(2.0, 1.0), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    ("uniform_int", lambda lib: lib.zeros(2).long().uniform_(), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    ("normal__int", lambda lib: lib.zeros(2).long().normal_(), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    ("random_range", lambda lib: lib.zeros(2).random_(5, 3), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
    ("randint_one_arg", lambda lib: lib.randint(3), TypeError, RANDINT_SIGS.format("int")),
    ("randint_three_ints", lambda lib: lib.randint(1, 3, 5), TypeError, RANDINT_SIGS.format("int, int, int")),
    ("randint_size_int", lambda lib: lib.randint(3, size=2), TypeError,
     "randint(): argument 'size' must be tuple of ints, not int"),
    ("randint_float_high", lambda lib: lib.randint(3.5, (2,)), TypeError,
     "randint(): argument 'high' (position 1) must be int, not float"),
    ("randint_bool_high", lambda lib: lib.randint(True, (2,)), TypeError,
     "randint(): argument 'high' (position 1) must be int, not bool"),
    ("randint_float_size", lambda lib: lib.randint(3, (2.0,)), TypeError,
     "randint(): argument 'size' (position 2) must be tuple of ints, but found element of type "
     "float at pos 0"),
    ("randint_missing_size", lambda lib: lib.randint(3, dtype=lib.int64), TypeError,
     "randint() missing 1 required positional arguments: \"size\""),
    ("randint_empty_range", lambda lib: lib.randint(3, 3, (2,)), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=3 >= to=3"),
    ("randint_bool_high_range", lambda lib: lib.randint(3, (2,), dtype=lib.bool), RuntimeError,
     "to - 1 is out of bounds for bool"),
    ("randint_bool_low_range", lambda lib: lib.randint(-1, 2, (2,), dtype=lib.bool), RuntimeError,
     "from is out of bounds for bool"),
    ("randint_negative_size", lambda lib: lib.randint(3, (-2,)), RuntimeError,
     "Trying to create tensor with negative dimension -2: [-2]"),
    ("randint_like_no_high", lambda lib: lib.randint_like(lib.zeros(2)), TypeError,
     "randint_like() received an invalid combination of arguments - got (Tensor), but expected one of:"),
    ("randint_like_range", lambda lib: lib.randint_like(lib.zeros(2), 5, 2), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    ("randperm_negative", lambda lib: lib.randperm(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
]


def _check(lib, call, exc, msg):
    with pytest.raises(exc) as info:
        call(lib)
    assert str(info.value).startswith(msg), str(info.value)


@pytest.mark.parametrize("call,exc,msg", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_errors(call, exc, msg):
    _check(torch, call, exc, msg)


@pytest.mark.parametrize("call,exc,msg", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_errors_match_torch(call, exc, msg):
    real = pytest.importorskip("torch")
    _check(real, call, exc, msg)


def test_invalid_combination_lists_every_signature():
    with pytest.raises(TypeError) as info:
        torch.randint(3)
    assert str(info.value).count("\n * (") == 4
    with pytest.raises(TypeError) as info:
        torch.normal(1.0, 2.0)
    assert str(info.value).count("\n * (") == 4
