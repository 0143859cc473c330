"""Wrong answers found by running other projects' PyTorch tests on ferrograd (issue 13), each
checked against the values PyTorch gives (and against PyTorch itself where installed)."""

import math

import pytest

import ferrograd as T

inf, nan = math.inf, math.nan


def test_isclose_never_calls_opposite_infinities_close():
    a = T.tensor([inf, inf, -inf, nan, 1.0, inf])
    b = T.tensor([-inf, inf, -inf, nan, 1.0 + 1e-9, 1e30])
    assert T.isclose(a, b).tolist() == [False, True, True, False, True, False]
    assert T.isclose(a, b, equal_nan=True).tolist() == [False, True, True, True, True, False]
    assert not T.allclose(T.tensor([inf]), T.tensor([-inf]))


def test_pow_gradient_at_zero_to_the_zero_is_zero():
    x = T.tensor([0.0, 0.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    e = T.tensor([0.0, 2.0, 0.0, 2.0], dtype=T.float64, requires_grad=True)
    (x ** e).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 6.0]
    assert e.grad.tolist() == pytest.approx([0.0, 0.0, math.log(2.0), 9 * math.log(3.0)])
    # the fix keeps the gradient differentiable
    x2 = T.tensor([0.5, 2.0], dtype=T.float64, requires_grad=True)
    e2 = T.tensor([0.0, 3.0], dtype=T.float64, requires_grad=True)
    assert T.autograd.gradgradcheck(lambda a, b: a ** b, (x2, e2))


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_integer_division_with_rounding_mode_stays_integer(mode):
    a = T.tensor([7, -7, 6, -6, 0, 7, -7, 2**62 + 1])
    b = T.tensor([2, 2, 3, 3, 5, -2, -2, 2])
    q = T.div(a, b, rounding_mode=mode)
    assert q.dtype == T.int64
    want = {
        "trunc": [3, -3, 2, -2, 0, -3, 3, 2**61],
        "floor": [3, -4, 2, -2, 0, -4, 3, 2**61],
    }[mode]
    assert q.tolist() == want
    assert a.div(-2, rounding_mode=mode).dtype == T.int64
    assert a.div(2.0, rounding_mode=mode).dtype == T.float32


def test_against_torch():
    torch = pytest.importorskip("torch")
    vals = [inf, -inf, nan, 0.0, 1.0, -2.5, 1e-9]
    for lib_a, lib_b in [(T, torch)]:
        a = [(x, y) for x in vals for y in vals]
        xa, ya = lib_a.tensor([p[0] for p in a]), lib_a.tensor([p[1] for p in a])
        xb, yb = lib_b.tensor([p[0] for p in a]), lib_b.tensor([p[1] for p in a])
        assert lib_a.isclose(xa, ya).tolist() == lib_b.isclose(xb, yb).tolist()
    ints = list(range(-9, 10))
    pairs = [(i, j) for i in ints for j in ints if j != 0]
    for mode in ("trunc", "floor"):
        got = T.div(T.tensor([p[0] for p in pairs]), T.tensor([p[1] for p in pairs]),
                    rounding_mode=mode)
        ref = torch.div(torch.tensor([p[0] for p in pairs]), torch.tensor([p[1] for p in pairs]),
                        rounding_mode=mode)
        assert got.tolist() == ref.tolist() and str(ref.dtype) == "torch.int64"
    for lib in (T, torch):
        x = lib.tensor([0.0, 0.0, 2.0], dtype=lib.float64, requires_grad=True)
        e = lib.tensor([0.0, 2.0, 0.0], dtype=lib.float64, requires_grad=True)
        (x ** e).sum().backward()
        if lib is T:
            ours = (x.grad.tolist(), e.grad.tolist())
        else:
            assert ours == (x.grad.tolist(), e.grad.tolist())


def _twice(lib):
    """A Function returning one tensor twice; its backward weighs the two gradients apart."""

    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            return y, y

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 5 + g2 * 2

    return Twice


def test_function_returning_one_tensor_twice():
    # the tensor is output 1 (its last position), as in PyTorch: output 0 gets zeros
    x = T.tensor([1.0, 2.0], requires_grad=True)
    a, b = _twice(T).apply(x)
    assert a is b
    (a.sum() + 3 * b.sum()).backward()
    assert x.grad.tolist() == [8.0, 8.0]


@pytest.mark.parametrize("inplace", ["mul", "add_self", "chain"])
def test_retained_grad_follows_in_place_ops(inplace):
    # .grad of a tensor that retains its grad is the gradient of its final value
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    if inplace == "mul":
        y.mul_(3)
    elif inplace == "add_self":
        y.add_(y)
    else:
        y.mul_(3)
        y.add_(1)
    (y * y).sum().backward()
    final = y.detach()
    assert y.grad.tolist() == (2 * final).tolist()
    assert y.grad_fn is not None and y.retains_grad


def test_sequence_inside_an_index_tuple():
    x = T.arange(24.0).reshape(2, 3, 4)
    b = T.tensor([0, 2])
    assert x[(0,), b, ...].tolist() == x[[0], b, ...].tolist()
    assert list(x[(0,), b, ...].shape) == [2, 4]
    assert list(x[0, (1, 2)].shape) == [2, 4]
    assert x[range(1, 2)].tolist() == x[[1]].tolist()
    assert list(x[:, range(0, 3, 2)].shape) == [2, 2, 4]


def test_autograd_rules_against_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, b = _twice(lib).apply(x)
        (a.sum() + 3 * b.sum()).backward()
        out = [x.grad.tolist()]
        for op in ("mul", "add_self"):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            y = x * 2
            y.retain_grad()
            y.mul_(3) if op == "mul" else y.add_(y)
            (y * y).sum().backward()
            out += [y.grad.tolist(), x.grad.tolist()]
        t = lib.arange(24.0).reshape(2, 3, 4)
        out.append(t[(0,), lib.tensor([0, 2]), ...].tolist())
        return out

    assert run(T) == run(torch)


# ---- issue 13, second round: the cases the first fixes left (each checked against PyTorch) ----


def _returns_input_twice(lib):
    class Same(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x, x

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 5 + g2 * 2

    return Same


def test_function_returning_its_input_twice():
    x = T.tensor([1.0, 2.0], requires_grad=True)
    a, b = _returns_input_twice(T).apply(x * 1)
    (3 * a.sum() + 4 * b.sum()).backward()
    assert x.grad.tolist() == [23.0, 23.0]


def test_pow_gradient_at_zero_with_a_number_on_either_side():
    x = T.tensor([0.0, 0.0, 2.0], dtype=T.float64, requires_grad=True)
    (x ** 0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    x.grad = None
    (x ** 0.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    e = T.tensor([0.0, 1.0, 2.0], dtype=T.float64, requires_grad=True)
    (0 ** e).sum().backward()
    assert e.grad.tolist() == [0.0, 0.0, 0.0]
    e.grad = None
    T.pow(0.0, e).sum().backward()
    assert e.grad.tolist() == [0.0, 0.0, 0.0]


def test_isclose_argument_rules():
    a = T.tensor([inf, -inf, nan, 1.0])
    assert T.isclose(a, -a, rtol=0, atol=0).tolist() == [False, False, False, False]
    assert T.isclose(a, a, rtol=0, atol=0, equal_nan=True).tolist() == [True, True, True, True]
    assert not T.allclose(a, a) and T.allclose(a, a, equal_nan=True)
    assert not T.allclose(T.tensor([inf]), T.tensor([-inf]), atol=inf)
    assert T.isclose(T.tensor([True, False]), T.tensor([True, True]), atol=1).tolist() == [True, True]
    with pytest.raises(RuntimeError, match="^Long did not match Double$"):
        T.isclose(T.tensor([1]), T.tensor([1.0], dtype=T.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got -1"):
        T.isclose(a, a, rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero, but got -1"):
        T.allclose(a, a, atol=-1)
    with pytest.raises(TypeError, match=r"isclose\(\): argument 'other' \(position 2\) must be Tensor"):
        T.isclose(a, 1.0)


def test_float_floor_division_is_pythons():
    # PyTorch's div_floor: the quotient of a - fmod(a, b), not floor(a / b) (1.0 / 0.1 is 10.0)
    a = T.tensor([1.0, 7.0, -7.0, 0.3, -0.0, 0.5, 1.0, inf], dtype=T.float64)
    b = T.tensor([0.1, 0.1, 0.7, -0.1, 3.0, -2.0, 0.0, 1.0], dtype=T.float64)
    got = (a // b).tolist()
    assert got[:6] == [9.0, 69.0, -11.0, -3.0, -0.0, -1.0] and got[6] == inf and math.isnan(got[7])
    assert [math.copysign(1, v) for v in got[4:6]] == [-1.0, -1.0]
    assert T.div(a, b, rounding_mode="floor").tolist()[:6] == got[:6]
    t = T.div(T.tensor([1.0, -0.3, 7.0]), T.tensor([-inf, 1.0, 2.0]), rounding_mode="trunc").tolist()
    assert t == [-0.0, -0.0, 3.0] and [math.copysign(1, v) for v in t] == [-1.0, -1.0, 1.0]


def test_rounding_division_in_place_and_bools():
    x = T.tensor([7, -7])
    assert x.div_(2, rounding_mode="floor").tolist() == [3, -4] and x.dtype == T.int64
    x = T.tensor([7, -7])
    x //= 2
    assert x.tolist() == [3, -4]
    assert T.tensor([7, -7]).floor_divide_(T.tensor([2, 2])).tolist() == [3, -4]
    assert T.tensor([7.0, -7.0]).div_(2, rounding_mode="trunc").tolist() == [3.0, -3.0]
    y = T.tensor([7, -7])
    y %= 3
    assert y.tolist() == [1, 2] and T.tensor([7.5]).remainder_(2).tolist() == [1.5]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        T.tensor([7]).div_(2.5, rounding_mode="floor")
    b = T.tensor([True, False])
    for f, kernel in [(lambda: b // b, "div_floor_cpu"), (lambda: T.div(b, b, rounding_mode="trunc"), "div_trunc_cpu"),
                      (lambda: b % b, "remainder_cpu")]:
        with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'Bool'"):
            f()
    assert T.div(b, 2, rounding_mode="floor").tolist() == [0, 0]


def test_rounding_division_gradients():
    x = T.tensor([3.0, -3.5], requires_grad=True)
    w = T.tensor([2.0, 3.0], requires_grad=True)
    q = T.div(x, w, rounding_mode="trunc")
    assert q.grad_fn.name() == "DivBackward2"
    q.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0] and w.grad.tolist() == [0.0, 0.0]
    # floor_divide itself has no derivative in PyTorch
    y = x // 2
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        y.sum().backward()


def test_backward_inputs_fills_a_retained_grad_once():
    x = T.tensor([1.0, -2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    (y * y).sum().backward(inputs=[y])
    assert y.grad.tolist() == [12.0, -24.0] and x.grad is None
    # backward(inputs=[non-leaf]) makes it retain its gradient, as PyTorch
    z = x * 2
    (z * z).sum().backward(inputs=[z], retain_graph=True)
    assert z.retains_grad and z.grad.tolist() == [4.0, -8.0]
    (z * z).sum().backward()
    assert z.grad.tolist() == [8.0, -16.0]


def _scale_grad_tenfold(p):
    p.grad.mul_(10)


def test_post_accumulate_hook_change_is_seen_by_the_accumulate_node_hook():
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 5
    seen = []
    y.grad_fn.next_functions[0][0].register_hook(lambda gi, go: seen.append(go[0].tolist()))
    x.register_post_accumulate_grad_hook(_scale_grad_tenfold)
    y.sum().backward()
    assert seen == [[50.0, 50.0]] and x.grad.tolist() == [50.0, 50.0]


def _second_backward_cases(lib):
    """Graphs whose nodes save tensors PyTorch saves too (indices, masks, conditions)."""
    x = lambda: lib.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)  # noqa: E731
    idx = lib.tensor([[0, 0], [1, 0]])
    mask = lib.tensor([[True, False], [False, True]])

    class NoGrad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return None

    return {
        "where": lambda: lib.where(mask, x(), 0.0),
        "masked_fill": lambda: x().masked_fill(mask, 0.0),
        "gather": lambda: x().gather(1, idx),
        "index_select": lambda: x().index_select(0, lib.tensor([1])),
        "getitem": lambda: x()[lib.tensor([1, 0])],
        "getitem_mask": lambda: x()[mask],
        "max_dim": lambda: x().max(dim=1)[0],
        "max_dim_0d": lambda: lib.tensor(2.0, requires_grad=True).max(dim=0)[0],
        "max_pool": lambda: lib.nn.functional.max_pool2d(x().reshape(1, 1, 2, 2), 2),
        "avg_pool": lambda: lib.nn.functional.avg_pool2d(x().reshape(1, 1, 2, 2), 2),
        "embedding": lambda: lib.nn.functional.embedding(idx, x()),
        "no_grad_flows": lambda: NoGrad.apply(x().exp()),
    }


@pytest.mark.parametrize("case", sorted(_second_backward_cases(T)))
def test_a_second_backward_through_a_freed_graph_raises(case):
    out = _second_backward_cases(T)[case]().sum()
    out.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.backward()


def test_add_with_alpha_saves_nothing():
    # a second backward through AddBackward0 / SubBackward0 with alpha is fine, as PyTorch
    x = T.tensor([1.0, 2.0], requires_grad=True)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    for y in (T.add(x, w, alpha=3), T.sub(x, w, alpha=3), x.sub(w, alpha=0.5)):
        y.sum().backward()
        y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0] and w.grad.tolist() == [-1.0, -1.0]
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating"):
        T.add(T.tensor([1]), T.tensor([2]), alpha=2.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results."):
        T.tensor([1.0]).add_(T.tensor([2.0]), alpha=True)
    z = T.ones(2)
    assert z.add_(T.ones(2), alpha=T.tensor(2.0)).tolist() == [3.0, 3.0]  # a one-element tensor
    with pytest.raises(TypeError, match=r"add_\(\): argument 'alpha' must be Number, not Tensor"):
        z.add_(z, alpha=T.ones(2))


def test_autograd_grad_does_not_run_unreachable_branches():
    log = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            log.append("F")
            return g * 2

    x = T.tensor([1.0, 2.0], requires_grad=True)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    a = w * 2
    a.register_hook(lambda g: log.append("hook"))
    (g,) = T.autograd.grad((x * 3 + a + F.apply(w)).sum(), [x])
    assert g.tolist() == [3.0, 3.0] and log == []


def test_lists_of_sequences_index_as_tuples():
    x = T.arange(24.0).reshape(2, 3, 4)
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        r = x[[(0, 1), (1, 2)]]
    assert r.tolist() == x[(0, 1), (1, 2)].tolist() and list(r.shape) == [2, 4]
    with pytest.warns(UserWarning):
        assert list(x[[T.tensor(0), T.tensor(1)]].shape) == [4]
    with pytest.warns(UserWarning):
        assert list(x[[0, None]].shape) == [1, 3, 4]
    with pytest.warns(UserWarning):
        assert list(x[[slice(None), 0]].shape) == [2, 4]
    # empty and float sequences are int64 indices
    assert list(x[[]].shape) == [0, 3, 4] and list(x[:, []].shape) == [2, 0, 4]
    assert list(x[range(0)].shape) == [0, 3, 4] and list(x[(), 0].shape) == [0, 4]
    assert x[[0.0, 1.5]].tolist() == x[[0, 1]].tolist()
    assert list(x[[1, 0]].shape) == [2, 3, 4]  # a list of ints stays an index list


def test_second_round_against_torch():
    torch = pytest.importorskip("torch")
    import warnings

    def run(lib):
        out = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, b = _returns_input_twice(lib).apply(x * 1)
        (3 * a.sum() + 4 * b.sum()).backward()
        out.append(x.grad.tolist())
        e = lib.tensor([0.0, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        (0 ** e).sum().backward()
        z = lib.tensor([0.0, 2.0], dtype=lib.float64, requires_grad=True)
        (z ** 0).sum().backward()
        out += [e.grad.tolist(), z.grad.tolist()]
        v = lib.tensor([inf, -inf, nan, 1.0])
        out.append(lib.isclose(v, -v, equal_nan=True).tolist())
        out.append(lib.isclose(lib.tensor([True, False]), lib.tensor([True, True]), atol=1).tolist())
        a = lib.tensor([1.0, 7.0, -7.0, 0.3, -0.0, 0.5, 1.0], dtype=lib.float64)
        b = lib.tensor([0.1, 0.1, 0.7, -0.1, 3.0, -2.0, 0.0], dtype=lib.float64)
        for r in (a // b, lib.div(a, b, rounding_mode="trunc"), a % b):
            out.append([("nan" if v != v else v, math.copysign(1, v)) for v in r.tolist()])
        q = lib.tensor([7, -7])
        q //= 2
        out.append(q.tolist())
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        (y * y).sum().backward(inputs=[y])
        out.append(y.grad.tolist())
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        h = w * 5
        h.grad_fn.next_functions[0][0].register_hook(lambda gi, go: seen.append(go[0].tolist()))
        w.register_post_accumulate_grad_hook(_scale_grad_tenfold)
        h.sum().backward()
        out.append(seen)
        for case, f in sorted(_second_backward_cases(lib).items()):
            loss = f().sum()
            loss.backward()
            try:
                loss.backward()
                out.append((case, "no error"))
            except RuntimeError as err:
                out.append((case, str(err)[:40]))
        for alpha_op in (lambda: lib.add(x, w, alpha=3), lambda: lib.sub(x, w, alpha=0.5)):
            s = alpha_op().sum()
            s.backward()
            s.backward()
        out += [x.grad.tolist(), w.grad.tolist()]
        t = lib.arange(24.0).reshape(2, 3, 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for key in ([(0, 1), (1, 2)], [lib.tensor(0), lib.tensor(1)], [0, None], [slice(None), 0],
                        [], [0.0, 1.5], range(0), [[True, False], 0]):
                out.append(list(t[key].shape))
            out.append(list(t[(), 0].shape))
        return out

    assert run(T) == run(torch)


@pytest.fixture
def default_dtype():
    """Restores the default dtype a test changes."""
    before = T.get_default_dtype()
    yield
    T.set_default_dtype(before)


@pytest.mark.parametrize("name", ["float64", "float16", "bfloat16", "float32"])
def test_python_floats_and_int_to_float_results_follow_the_default_dtype(default_dtype, name):
    # set_default_dtype(float64) then `int_tensor + 2.5` gave float32 (PyTorch: float64): the
    # core typed Python floats as float32 whatever the default.
    d = getattr(T, name)
    T.set_default_dtype(d)
    a = T.arange(3)
    assert (a + 2.5).dtype == d
    assert T.result_type(a, 2.5) == d
    assert a.sqrt().dtype == d
    assert (a / 2).dtype == d
    assert T.logsumexp(a, 0).dtype == d
    assert T.Tensor(2).dtype == d and T.Tensor().dtype == d and T.Tensor([1, 2]).dtype == d
    # a float tensor keeps its own dtype: a Python float does not promote it
    assert (T.ones(2, dtype=T.float32) + 2.5).dtype == T.float32
    assert (a + 2.5).tolist() == [2.5, 3.5, 4.5]
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        T.arange(3).div_(2)


# --- found while adding the breadth functions (values as PyTorch 2.13 gives them)


def test_clamp_with_a_nan_bound_is_nan_everywhere():
    x = T.tensor([1.0, nan, -2.0], requires_grad=True)
    for y in (T.clamp(x, min=nan), T.clamp(x, max=nan), T.clamp(x, min=0.0, max=nan)):
        assert all(math.isnan(v) for v in y.tolist())
    T.clamp(x, min=nan).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_sign_of_nan_is_zero_and_abs_passes_no_gradient_there():
    x = T.tensor([nan, 0.0, -0.0, 2.0, -3.0], requires_grad=True)
    assert T.sign(x.detach()).tolist() == [0.0, 0.0, 0.0, 1.0, -1.0]
    assert T.sgn(x.detach()).tolist() == [0.0, 0.0, 0.0, 1.0, -1.0]
    x.abs().sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 1.0, -1.0]


def test_masked_fill_with_a_tensor_value_gives_the_value_its_gradient():
    x = T.randn(2, 3, requires_grad=True)
    v = T.tensor(2.0, requires_grad=True)
    m = T.tensor([[True, False, True], [False, False, True]])
    y = x.masked_fill(m, v)
    assert type(y.grad_fn).__name__ == "MaskedFillBackward1"
    y.backward(T.arange(6.0).reshape(2, 3))
    assert v.grad.item() == 0.0 + 2.0 + 5.0
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [3.0, 4.0, 0.0]]
    # in place too, and a value of another dtype is cast as PyTorch casts it
    z = T.zeros(3) * 1
    z.masked_fill_(T.tensor([True, False, True]), v)
    assert z.tolist() == [2.0, 0.0, 2.0] and type(z.grad_fn).__name__ == "MaskedFillBackward1"
    assert T.zeros(3, dtype=T.int64).masked_fill(T.tensor([True, False, True]), T.tensor(2.7)).tolist() == [2, 0, 2]
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor, but got tensor with 1"):
        x.masked_fill(m, T.ones(1))
    assert T.autograd.gradcheck(lambda a, b: a.masked_fill(m, b), (x.double().detach().requires_grad_(),
                                                                    v.double().detach().requires_grad_()))


def test_cat_keeps_skipped_empty_inputs_in_the_graph():
    e = T.zeros(0, requires_grad=True)  # a 1-D empty tensor, skipped by cat's legacy rule
    y = T.randn(2, 3, requires_grad=True)
    w = T.zeros(0, 3, requires_grad=True)
    z = T.cat([e, y, w])
    assert len(z.grad_fn.next_functions) == 3
    z.sum().backward()
    assert e.grad is not None and e.grad.shape == (0,)
    assert w.grad is not None and w.grad.shape == (0, 3)


def test_split_with_a_negative_size_is_a_runtime_error():
    with pytest.raises(RuntimeError, match=r"non-negative entries, but got split_sizes=\[1, -1, 3\]"):
        T.ones(2, 3).split([1, -1, 3])
    with pytest.raises(RuntimeError, match=r"expand\(torch.FloatTensor\{\[2, 3\]\}, size=\[3\]\)"):
        T.ones(2, 3).expand(3)


def test_indexed_assignment_is_differentiable_twice():
    # CopySlices' backward zeroed the assigned region without recording it: second derivatives
    # and forward-mode tangents through `y[idx] = v` came out wrong
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    v = T.tensor(0.5, dtype=T.float64, requires_grad=True)

    def f(a, b):
        y = a * a
        y[1] = b * b
        return (y * y).sum()

    assert T.autograd.gradcheck(f, (x, v))
    assert T.autograd.gradgradcheck(f, (x, v))
    (gx,) = T.autograd.grad(f(x, v), x, create_graph=True)
    (hx,) = T.autograd.grad(gx.sum(), x)
    assert hx.tolist() == [12.0, 0.0, 108.0]  # d2/dx2 of x^4 where the element was kept
