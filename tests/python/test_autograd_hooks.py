"""Hooks, saved-tensor hooks, anomaly mode and the ctx methods of custom Functions (issue 5).

Parity tests run each scenario twice, once with ``ferrograd`` and once with ``torch`` passed as
``torch``, and compare what it logged: values, the order in which hooks ran, and the type and
message of every exception. They skip without PyTorch. The closed-form tests below them always
run: gradients worked out by hand, call counts and orders.
"""

import gc
import warnings

import pytest

import ferrograd


class HookError(Exception):
    """Raised by hooks, to check that exceptions come out of backward with their own type."""


def val(x):
    """What a scenario logs of a value: tensors as rounded nested lists."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return "nan" if x != x else round(x, 6)
    if isinstance(x, (tuple, list)):
        return tuple(val(i) for i in x)
    if hasattr(x, "requires_grad"):
        return ("T", val(x.detach().tolist()))
    return repr(x)


def attempt(log, fn):
    """Runs ``fn()`` and logs what it raised (type name and message), or its value."""
    try:
        log.append(("ok", val(fn())))
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever is raised
        log.append(("raised", type(e).__name__, str(e)))


SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def run(fn, mod):
    log = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(mod, log)
    except Exception as e:  # noqa: BLE001
        log.append(("raised", type(e).__name__, str(e)))
    finally:
        mod.autograd.set_detect_anomaly(False)
    log.append(("warnings", tuple(
        (w.category.__name__, warning_text(w)) for w in caught
        # PyTorch gives this one once per process (see test_backward_create_graph_warns)
        if not str(w.message).startswith("Using backward() with create_graph=True")
    )))
    return log


def warning_text(w):
    """A warning's first line without PyTorch's "(Triggered internally at <C++ file>)"."""
    return str(w.message).split("\n")[0].split(" (Triggered internally at ")[0]


# --- Tensor.register_hook ------------------------------------------------------------------------


@scenario
def leaf_hook_replaces_grad(torch, log):
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)

    def double(g):
        log.append(("hook", val(g)))
        return g * 2

    handle = x.register_hook(double)
    log.append(type(handle).__name__)
    (x * x).sum().backward()
    log.append(("grad", val(x.grad)))


@scenario
def nonleaf_hook_runs_before_retain_grad(torch, log):
    x = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: log.append(("hook", val(g))) or g * 10)
    (y * y).sum().backward()
    log.append(("y.grad", val(y.grad)))
    log.append(("x.grad", val(x.grad)))


@scenario
def several_hooks_in_order_each_sees_previous(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x.exp()

    def make(name, add):
        def hook(g):
            log.append((name, val(g)))
            return g + add

        return hook

    for name, add in (("a", 1), ("b", 10), ("c", 100)):
        y.register_hook(make(name, add))
    x.register_hook(make("leaf1", 0.5))
    x.register_hook(lambda g: log.append(("leaf2-none", val(g))))
    x.register_hook(make("leaf3", 0.25))
    y.sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_on_tensor_used_twice(torch, log):
    x = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(("y", val(g))))
    x.register_hook(lambda g: log.append(("x", val(g))))
    (y * y + y + x).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_handle_remove_and_context_manager(torch, log):
    x = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    h = x.register_hook(lambda g: log.append("removed hook ran"))
    h.remove()
    h.remove()  # twice is fine
    with x.register_hook(lambda g: log.append(("in with", val(g)))) as h2:
        log.append(type(h2).__name__)
        (x * 5).backward()
    (x * 7).backward()
    log.append(("x.grad", val(x.grad)))
    y = x * 2
    hy = y.register_hook(lambda g: log.append("removed non-leaf hook ran"))
    hy.remove()
    y.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_removes_itself_during_backward(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * x
    handles = {}

    def once(g):
        log.append(("once", val(g)))
        handles["y"].remove()
        return g * 2

    def leaf_once(g):
        log.append(("leaf once", val(g)))
        handles["x"].remove()

    handles["y"] = y.register_hook(once)
    handles["x"] = x.register_hook(leaf_once)
    s = y.sum()
    s.backward(retain_graph=True)
    s.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_removes_another_or_registers_one_during_backward(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * 3
    handles = {}

    def remover(g):
        log.append(("remover", val(g)))
        handles["victim"].remove()

    def registrar(g):
        log.append(("registrar", val(g)))
        x.register_hook(lambda g: log.append(("late leaf hook", val(g))))

    y.register_hook(remover)
    handles["victim"] = y.register_hook(lambda g: log.append(("victim", val(g))))
    y.register_hook(registrar)
    out = (y * y).sum()
    out.backward(retain_graph=True)
    log.append("second backward")
    out.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_outlives_its_tensor(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(("y hook", val(g))) or g * 3)
    z = (y * y).sum()
    del y
    z.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def retain_grad_under_autograd_grad_and_backward_inputs(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * 3
    y.retain_grad()
    torch.autograd.grad((y * y).sum(), x)
    log.append(("after autograd.grad", val(y.grad), val(x.grad)))
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    (y * y).sum().backward(inputs=[x])
    log.append(("after backward(inputs=[x])", val(y.grad), val(x.grad)))
    b = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    b.register_hook(lambda g: log.append(("broadcast scalar", val(g), tuple(g.shape))))
    (torch.ones(3, dtype=torch.float64) * b).sum().backward()


@scenario
def hook_on_a_view(torch, log):
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    v = w[1:]
    v.register_hook(lambda g: log.append(("view", val(g))) or g * 5)
    (v * v).sum().backward()
    log.append(("w.grad", val(w.grad)))


@scenario
def hooks_rerun_with_retain_graph(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x.sin()
    y.register_hook(lambda g: log.append(("y", val(g))) or g * 2)
    x.register_hook(lambda g: log.append(("x", val(g))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("acc", val(t.grad))))
    out = (y * 3).sum()
    out.backward(retain_graph=True)
    out.backward(retain_graph=True)
    log.append(("x.grad", val(x.grad)))
    attempt(log, lambda: out.backward())
    attempt(log, lambda: out.backward())


@scenario
def hook_on_multi_output_node_sees_none(torch, log):
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    a, b = x.split([1, 2])
    b.register_hook(lambda g: log.append(("b", val(g))))
    handle = a.register_hook(lambda g: log.append(("a", val(g))))
    (a * 4).sum().backward(retain_graph=True)
    log.append(("x.grad", val(x.grad)))

    def replace(g):
        return torch.ones(2, dtype=torch.float64)

    handle.remove()
    b.register_hook(replace)
    attempt(log, lambda: (a * 4).sum().backward())
    log.append(("x.grad", val(x.grad)))


@scenario
def hooks_on_two_outputs_of_one_node_run_per_tensor(torch, log):
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    a, b = x.split([1, 2])
    b.register_hook(lambda g: log.append(("b1", val(g))) or g * 2)
    a.register_hook(lambda g: log.append(("a", val(g))))
    b.register_hook(lambda g: log.append(("b2", val(g))))
    (a * 3 + b.sum()).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_return_checks(torch, log):
    def changes_size(g):
        return g[:1]

    def changes_type(g):
        return g.double()

    def returns_int(g):
        return 3

    def returns_list(g):
        return [g]

    def returns_array(g):
        return g.detach().numpy()

    for hook in (changes_size, changes_type, returns_int, returns_list, returns_array):
        for leaf in (True, False):
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            t = x if leaf else x * 2
            t.register_hook(hook)
            attempt(log, lambda: (t * t).sum().backward())
            log.append(("x.grad", val(x.grad)))


@scenario
def hook_errors_at_registration(torch, log):
    x = torch.tensor([1.0])
    attempt(log, lambda: x.register_hook(lambda g: g))
    attempt(log, lambda: x.register_post_accumulate_grad_hook(lambda t: None))
    y = torch.tensor([1.0], requires_grad=True) * 2
    attempt(log, lambda: y.register_post_accumulate_grad_hook(lambda t: None))


@scenario
def hook_exceptions_keep_their_type(torch, log):
    def bad(g):
        raise HookError("from a tensor hook")

    x = torch.tensor([1.0], requires_grad=True)
    x.register_hook(bad)
    attempt(log, lambda: (x * 2).backward())
    log.append(("x.grad", val(x.grad)))

    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    y.register_hook(bad)
    attempt(log, lambda: (y * 2).backward())
    log.append(("x.grad", val(x.grad)))

    x = torch.tensor([1.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda t: (_ for _ in ()).throw(KeyError("post")))
    attempt(log, lambda: (x * 2).backward())
    log.append(("x.grad after post hook error", val(x.grad)))

    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    y.grad_fn.register_prehook(lambda go: 1 / 0)
    attempt(log, lambda: y.backward())
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: [][1])
    attempt(log, lambda: y.backward())
    log.append(("x.grad", val(x.grad)))


@scenario
def hooks_and_autograd_grad(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("x", val(g))) or g * 2)
    x.register_post_accumulate_grad_hook(lambda t: log.append("post accumulate ran"))
    y = x * x
    y.register_hook(lambda g: log.append(("y", val(g))) or g + 1)
    (gx,) = torch.autograd.grad(y.sum(), x, retain_graph=True)
    log.append(("grad x", val(gx)))
    (gy,) = torch.autograd.grad(y.sum(), y, retain_graph=True)
    log.append(("grad y", val(gy)))
    (g,) = torch.autograd.grad(y.sum(), x, allow_unused=True, materialize_grads=True,
                               retain_graph=True)
    log.append(("materialized", val(g)))
    log.append(("x.grad", val(x.grad)))
    unused = torch.tensor([5.0], dtype=torch.float64, requires_grad=True)
    unused.register_hook(lambda g: log.append("hook of an unused input ran"))
    attempt(log, lambda: torch.autograd.grad(y.sum(), (x, unused), retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(y.sum(), (x, unused), allow_unused=True,
                                             retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(y.sum(), (x, unused), materialize_grads=True,
                                             retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(y.sum(), (x, unused), allow_unused=False,
                                             materialize_grads=True))


@scenario
def retain_graph_defaults_to_create_graph(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("hook", val(g))))
    y = (x ** 3).sum()
    (gx,) = torch.autograd.grad(y, x, create_graph=True)
    log.append(("gx", val(gx)))
    attempt(log, lambda: torch.autograd.grad(y, x))  # the graph was kept
    attempt(log, lambda: torch.autograd.grad(y, x))  # but not by the call above
    z = (x ** 3).sum()
    z.backward(create_graph=True)
    attempt(log, lambda: z.backward())
    attempt(log, lambda: z.backward())
    log.append(("x.grad", val(x.grad)))


@scenario
def autograd_grad_of_a_leaf_and_an_intermediate(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("x", val(g))) or g * 2)
    y = x * x
    y.register_hook(lambda g: log.append(("y", val(g))) or g + 1)
    gx, gy = torch.autograd.grad((y * 3).sum(), (x, y))
    log.append(("both", val(gx), val(gy)))


@scenario
def hooks_and_backward_inputs(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("x", val(g))))
    w.register_hook(lambda g: log.append(("w", val(g))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("x acc", val(t.grad))))
    w.register_post_accumulate_grad_hook(lambda t: log.append(("w acc", val(t.grad))))
    (x * w).sum().backward(inputs=[w])
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def hook_output_is_differentiable_with_create_graph(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * x
    y.register_hook(lambda g: g * x)  # the hook's result depends on x
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad))
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    log.append(("ggx", val(ggx)))

    z = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    z.register_hook(lambda g: g * z)
    (z ** 3).sum().backward(create_graph=True)
    log.append(("z.grad", val(z.grad), z.grad.requires_grad))
    (gz,) = torch.autograd.grad(z.grad.sum(), z)
    log.append(("d z.grad / dz", val(gz)))


@scenario
def hook_registered_around_inplace(torch, log):
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x = a * 1
    x.register_hook(lambda g: log.append(("before", val(g))) or g * 10)
    x.mul_(3)
    x.register_hook(lambda g: log.append(("after", val(g))))
    log.append(type(x.grad_fn).__name__)
    (x * x).sum().backward()
    log.append(("a.grad", val(a.grad)))


@scenario
def retain_grad_then_inplace_and_hook(torch, log):
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x = a * 2
    x.retain_grad()
    x.add_(1)
    x.register_hook(lambda g: log.append(("hook", val(g))) or g * 2)
    (x * x).sum().backward()
    log.append(("x.grad", val(x.grad), "a.grad", val(a.grad)))


@scenario
def hook_result_needing_grad_without_create_graph(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)

    def scale(g):
        r = g * w
        log.append(("in hook", torch.is_grad_enabled(), r.requires_grad))
        return r

    x.register_hook(scale)
    (x * x).sum().backward()
    log.append(("x.grad", val(x.grad), x.grad.requires_grad, x.grad.grad_fn is None))


@scenario
def hooks_with_backward_inputs_non_leaf(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(("y hook", val(g))) or g * 10)
    x.register_hook(lambda g: log.append(("x hook", val(g))))
    (y * y).sum().backward(inputs=[y], retain_graph=True)
    log.append(("y.grad", val(y.grad), "x.grad", val(x.grad)))
    (y * y).sum().backward(inputs=[x, y])
    log.append(("y.grad", val(y.grad), "x.grad", val(x.grad)))


# --- register_post_accumulate_grad_hook ----------------------------------------------------------


@scenario
def post_accumulate_hook_sees_updated_grad_once(torch, log):
    p = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    p.register_hook(lambda g: log.append(("tensor hook", val(g), val(p.grad))))
    handle = p.register_post_accumulate_grad_hook(
        lambda t: log.append(("post", t is p, val(t.grad)))
    )
    (p * p + p * 3).sum().backward()
    (p * 5).sum().backward()
    handle.remove()
    (p * 7).sum().backward()
    log.append(("grad", val(p.grad)))


@scenario
def post_accumulate_hook_returning_value_and_optimizer_step(torch, log):
    p = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)

    def step(t):
        with torch.no_grad():
            t.sub_(t.grad * 0.5)
        t.grad = None

    p.register_post_accumulate_grad_hook(step)
    (p * p).sum().backward()
    log.append(("p", val(p), val(p.grad)))

    q = torch.tensor([1.0], requires_grad=True)
    q.register_post_accumulate_grad_hook(lambda t: t)
    attempt(log, lambda: (q * 2).backward())
    log.append(("q.grad", val(q.grad)))


# --- Node.register_hook / register_prehook -------------------------------------------------------


@scenario
def node_hooks_arguments_and_order(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    c = torch.tensor([5.0, 6.0], dtype=torch.float64)
    y = x * c
    y.register_hook(lambda g: log.append(("tensor", val(g))))
    y.retain_grad()
    y.grad_fn.register_prehook(lambda go: log.append(("pre", val(go), val(y.grad))))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", val(gi), val(go))))
    acc = y.grad_fn.next_functions[0][0]
    log.append(type(acc).__name__)
    acc.register_prehook(lambda go: log.append(("acc pre", val(go))))
    acc.register_hook(lambda gi, go: log.append(("acc post", val(gi), val(go))))
    x.register_hook(lambda g: log.append(("leaf", val(g))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post acc", val(t.grad))))
    (y * 2).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def node_hooks_replace_gradients(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    y = x * w
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_prehook(lambda go: log.append(("pre2", val(go))))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, None))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post2", val(gi), val(go))))
    y.sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))

    z = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    acc = (z * 2).grad_fn.next_functions[0][0]
    handle = acc.register_prehook(lambda go: (go[0] * 0 + 7,))
    (z * 2).sum().backward()
    log.append(("z.grad", val(z.grad)))
    handle.remove()
    (z * 2).sum().backward()
    log.append(("z.grad", val(z.grad)))


@scenario
def node_hook_return_checks(torch, log):
    def run_hook(kind, hook):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        if kind == "pre":
            y.grad_fn.register_prehook(hook)
        else:
            y.grad_fn.register_hook(hook)
        attempt(log, lambda: y.sum().backward())

    def too_many(*args):
        return (args[0][0], args[0][0])

    def not_tuple(*args):
        return args[0][0]

    def wrong_size(*args):
        return (args[0][0][:1],)

    def wrong_dtype(*args):
        return (args[0][0].double(),)

    def int_in_tuple(*args):
        return (1,)

    for hook in (too_many, not_tuple, wrong_size, wrong_dtype, int_in_tuple):
        run_hook("pre", hook)
        run_hook("post", hook)


@scenario
def node_hook_handles(torch, log):
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    h1 = y.grad_fn.register_prehook(lambda go: log.append("pre"))
    h2 = y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    log.append((type(h1).__name__, type(h2).__name__))
    y.backward(retain_graph=True)
    h1.remove()
    y.backward(retain_graph=True)
    with h2:
        pass
    y.backward()
    log.append(("x.grad", val(x.grad)))


# --- Anomaly mode --------------------------------------------------------------------------------


@scenario
def anomaly_flags(torch, log):
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.autograd.set_detect_anomaly(True)
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.autograd.set_detect_anomaly(False)
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    with torch.autograd.detect_anomaly():
        log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
        with torch.autograd.detect_anomaly(check_nan=False):
            log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
        log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.set_anomaly_enabled(True, False)
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.set_anomaly_enabled(False)
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))


@scenario
def anomaly_nan_in_backward(torch, log):
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    y = x.sqrt()
    log.append(("forward", val(y)))
    with torch.autograd.detect_anomaly():
        attempt(log, lambda: x.sqrt().sum().backward())
    log.append(("x.grad", val(x.grad)))
    with torch.autograd.detect_anomaly(check_nan=False):
        attempt(log, lambda: x.sqrt().sum().backward())
    log.append(("x.grad", val(x.grad)))
    y.sum().backward()  # anomaly off: no check


@scenario
def anomaly_nan_from_custom_function(torch, log):
    class NanBack(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g * float("nan")

    a = torch.tensor([1.0], requires_grad=True)
    b = torch.tensor([2.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        attempt(log, lambda: NanBack.apply(a, b).sum().backward())
    log.append(("grads", val(a.grad), val(b.grad)))


@scenario
def anomaly_error_in_backward_warns(torch, log):
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            raise HookError("bad backward")

    a = torch.tensor([1.0], requires_grad=True)
    with torch.autograd.detect_anomaly():
        out = Bad.apply(a)  # the forward line the traceback must show
        out2 = out.exp()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            attempt(log, lambda: out2.sum().backward())
    texts = [str(w.message) for w in caught if w.category is UserWarning]
    head = "Error detected in BadBackward. Traceback of forward call that caused the error:"
    found = [t for t in texts if t.startswith(head)]
    log.append(("warned", len(found)))
    if found:
        log.append(("shows forward line", "out = Bad.apply(a)" in found[0]))
    # a node created outside anomaly mode has no forward traceback
    b = torch.tensor([1.0], requires_grad=True)
    out3 = Bad.apply(b)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            attempt(log, lambda: out3.backward())
    texts = [warning_text(w) for w in caught]
    log.append(("no trace", [t for t in texts if "Error detected" in t]))
    # without anomaly mode: no warning at all
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        attempt(log, lambda: Bad.apply(b).backward())
    log.append(("warnings off", len(caught)))


@scenario
def anomaly_hook_errors(torch, log):
    x = torch.tensor([1.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        y = x * 2
        y.register_hook(lambda g: 1 / 0)
        attempt(log, lambda: (y * 3).backward())
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: [][0])
        attempt(log, lambda: y.backward())


@scenario
def anomaly_error_in_a_leaf_hook(torch, log):
    x = torch.tensor([1.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        x.register_hook(lambda g: {}["leaf"])
        attempt(log, lambda: (x * 3).backward())


@scenario
def anomaly_exception_is_unchanged(torch, log):
    x = torch.tensor([-1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            try:
                x.sqrt().backward()
            except RuntimeError as e:
                log.append((str(e), getattr(e, "__notes__", None)))


@scenario
def anomaly_inplace_hint(torch, log):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    for anomaly in (False, True):
        with torch.autograd.set_detect_anomaly(anomaly):
            y = (a * 1).exp()
            y.add_(1)
            attempt(log, lambda: y.sum().backward())


# --- saved_tensors_hooks -------------------------------------------------------------------------


def saved_fn_class(torch, log):
    class Saves(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            out = x * w
            ctx.save_for_backward(x, out)
            ctx.w = w
            return out

        @staticmethod
        def backward(ctx, g):
            x, out = ctx.saved_tensors
            log.append(("saved in backward", val(x), val(out), out.grad_fn is not None))
            return g * ctx.w, g * x

    return Saves


@scenario
def saved_tensors_hooks_with_custom_function(torch, log):
    Saves = saved_fn_class(torch, log)

    def pack(t):
        log.append(("pack", val(t)))
        return ("packed", t * 1)

    def unpack(p):
        log.append(("unpack", p[0], val(p[1])))
        return p[1]

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = Saves.apply(x, w)
    log.append("forward done")
    y.sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def saved_tensors_hooks_unpack_can_change_values(torch, log):
    Saves = saved_fn_class(torch, log)
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    packs = []
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: packs.append(val(t)) or len(packs),
        lambda n: torch.full((2,), float(10 * n), dtype=torch.float64),
    ):
        y = Saves.apply(x, w)
    log.append(("packed", packs))
    y.sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def saved_tensors_pack_order_of_mul(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    packs = []
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: packs.append(val(t)) or len(packs),
        lambda n: torch.full((2,), float(10 * n), dtype=torch.float64),
    ):
        y = x * w
    log.append(("packed", packs))
    y.sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def saved_tensors_hooks_nested_innermost_wins(torch, log):
    Saves = saved_fn_class(torch, log)

    def hooks(name):
        return (lambda t: log.append(("pack " + name, val(t))) or t,
                lambda t: log.append(("unpack " + name, val(t))) or t)

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([2.0, 2.0], dtype=torch.float64)
    with torch.autograd.graph.saved_tensors_hooks(*hooks("outer")):
        y1 = Saves.apply(x, w)
        with torch.autograd.graph.saved_tensors_hooks(*hooks("inner")):
            y2 = Saves.apply(x, w * 2)
        y3 = Saves.apply(x, w * 3)
    y4 = Saves.apply(x, w * 4)
    (y1 + y2 + y3 + y4).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def saved_tensors_hooks_errors(torch, log):
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def bad_pack(t):
        raise HookError("pack failed")

    def forward():
        with torch.autograd.graph.saved_tensors_hooks(bad_pack, lambda p: p):
            return x * x

    attempt(log, forward)  # raised at forward time
    log.append(("hooks popped", val((x * x).sum())))
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: 3):
        y = x * x
    attempt(log, lambda: y.sum().backward())
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: 1 / 0):
        y = x * x
    attempt(log, lambda: y.sum().backward())
    def enter_hooks():
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            return "entered"

    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        attempt(log, enter_hooks)
        with torch.autograd.graph.disable_saved_tensors_hooks("inner message"):
            attempt(log, enter_hooks)
        attempt(log, enter_hooks)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        log.append(("allowed again", val((x * 2).sum())))

        def disable_inside():
            with torch.autograd.graph.disable_saved_tensors_hooks("hooks are active"):
                return "entered"

        attempt(log, disable_inside)
        log.append(("still active", val((x * x).sum())))
    with torch.autograd.graph.disable_saved_tensors_hooks("enabled again after the error"):
        pass
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        log.append(("and after", val((x * 3).sum())))


@scenario
def unpack_hook_returning_an_array(torch, log):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t.detach().numpy()):
        y = x.exp()
    attempt(log, lambda: y.sum().backward())


@scenario
def saved_tensors_hooks_unpack_on_each_access(torch, log):
    count = [0, 0]

    class TwoAccess(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            (b,) = ctx.saved_tensors
            log.append(("same values", val(a), val(b)))
            return g * b.cos()

    def pack(t):
        count[0] += 1
        return t

    def unpack(t):
        count[1] += 1
        return t

    x = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = TwoAccess.apply(x)
    log.append(("after forward", tuple(count)))
    y.sum().backward()
    log.append(("after backward", tuple(count), val(x.grad)))


@scenario
def saved_tensors_hooks_on_builtin_ops(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 5.0], dtype=torch.float64, requires_grad=True)
    c = torch.tensor([7.0, 11.0], dtype=torch.float64)
    packed = []
    hooks = (lambda t: packed.append(val(t)) or t, lambda t: t)
    with torch.autograd.graph.saved_tensors_hooks(*hooks):
        y1 = x * w
        y3 = w.exp()  # saves its result
        y4 = x.sin()  # saves its input
    log.append(("packed", sorted(packed)))
    (y1 + y3 + y4).sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def saved_tensors_mul_by_constant_saves_only_the_constant(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    c = torch.tensor([7.0, 11.0], dtype=torch.float64)
    packed = []
    hooks = (lambda t: packed.append(val(t)) or t, lambda t: t)
    with torch.autograd.graph.saved_tensors_hooks(*hooks):
        y = x * c
    log.append(("packed", packed))
    y.sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def saved_tensors_hooks_detaching_pack_keeps_double_backward(torch, log):
    x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = (x.sin() * x).sum()
    (gx,) = torch.autograd.grad(y, x, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad))
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    log.append(("ggx", val(ggx)))


@scenario
def save_on_cpu_gives_same_gradients(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.save_on_cpu():
        y = (x.exp() * x).sum()
    y.backward()
    log.append(("x.grad", val(x.grad)))
    with torch.autograd.graph.save_on_cpu(pin_memory=False):
        z = (x.sin() * x).sum()
    z.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def saved_tensors_hooks_and_inplace_check(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        a = x * 1
        y = a * a
    a.mul_(2)
    attempt(log, lambda: y.sum().backward())
    log.append(("x.grad", val(x.grad)))


# --- Custom Function: ctx methods ----------------------------------------------------------------


@scenario
def mark_dirty_inplace_function(torch, log):
    class AddOneInplace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    leaf = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    a = leaf * 2
    v0 = a._version
    out = AddOneInplace.apply(a)
    log.append(("same object", out is a, "version bumped", a._version > v0))
    log.append(("values", val(a), type(a.grad_fn).__name__))
    (out * out).sum().backward()
    log.append(("leaf.grad", val(leaf.grad)))

    attempt(log, lambda: AddOneInplace.apply(leaf))
    log.append(("leaf unchanged", val(leaf)))
    plain = torch.tensor([1.0, 2.0])
    log.append(("no grad needed", val(AddOneInplace.apply(plain)), val(plain)))


@scenario
def hooks_around_a_custom_inplace_function(torch, log):
    class TimesThreeInplace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(3)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            log.append(("backward", val(g)))
            return g * 3

    leaf = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    a = leaf * 1
    a.register_hook(lambda g: log.append(("before", val(g))) or g + 1)
    out = TimesThreeInplace.apply(a)
    a.register_hook(lambda g: log.append(("after", val(g))))
    out.grad_fn.register_prehook(lambda go: log.append(("pre", val(go))))
    (out * out).sum().backward()
    log.append(("leaf.grad", val(leaf.grad)))


@scenario
def mark_dirty_errors(torch, log):
    class DirtyNotReturned(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    a = torch.tensor([1.0], requires_grad=True) * 1
    attempt(log, lambda: DirtyNotReturned.apply(a))

    class ViewOfLeaf(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with torch.no_grad():
        b = torch.tensor([1.0], requires_grad=True)
        log.append(("under no_grad", val(ViewOfLeaf.apply(b))))


@scenario
def mark_dirty_then_saved_tensor_check(torch, log):
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x

    class Inplace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(5)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    leaf = torch.tensor([1.0], requires_grad=True)
    a = leaf * 1
    y = Scale.apply(a)
    Inplace.apply(a)
    attempt(log, lambda: y.backward())


@scenario
def mark_non_differentiable_outputs(torch, log):
    class SortLike(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values = x * 2
            idx = x.argmax().reshape(1)
            mask = (x > 1).to(x.dtype)
            ctx.mark_non_differentiable(idx, mask)
            return values, idx, mask

        @staticmethod
        def backward(ctx, gv, gi, gm):
            log.append(("backward got", val(gv), val(gi), val(gm)))
            return gv * 2

    x = torch.tensor([1.0, 3.0, 2.0], dtype=torch.float64, requires_grad=True)
    v, i, m = SortLike.apply(x)
    log.append(("requires_grad", v.requires_grad, i.requires_grad, m.requires_grad))
    log.append(("grad_fn", m.grad_fn is None, i.grad_fn is None, val(i), val(m)))
    v.sum().backward()
    log.append(("x.grad", val(x.grad)))
    attempt(log, lambda: m.sum().backward())


@scenario
def set_materialize_grads_false(torch, log):
    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            log.append(("backward got", val(g1), val(g2)))
            total = 0
            if g1 is not None:
                total = total + g1 * 2
            if g2 is not None:
                total = total + g2 * 3
            return total, None

    for materialize in (True, False):
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        a, b = Two.apply(x, materialize)
        a.sum().backward()
        log.append(("x.grad", val(x.grad)))


@scenario
def once_differentiable_backward(torch, log):
    from importlib import import_module

    once = import_module(torch.__name__ + ".autograd.function").once_differentiable

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            log.append(("grad enabled in backward", torch.is_grad_enabled()))
            return g * 3 * x ** 2

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    Cube.apply(x).sum().backward()
    log.append(("x.grad", val(x.grad)))
    (gx,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad))
    attempt(log, lambda: gx.sum().backward())
    v = torch.tensor([1.0, 1.0], dtype=torch.float64, requires_grad=True)
    (gx,) = torch.autograd.grad(Cube.apply(x), x, v, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad, gx.grad_fn.name()))
    attempt(log, lambda: gx.sum().backward())
    attempt(log, lambda: torch.autograd.grad(gx.sum(), v))


@scenario
def save_for_backward_inputs_and_outputs(torch, log):
    class ExpFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = (x * scale).exp()
            ctx.save_for_backward(x, y, None)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y, none = ctx.saved_tensors
            log.append(("saved", val(x), none, x.grad_fn is None, x.requires_grad,
                        type(y.grad_fn).__name__, y.requires_grad))
            return g * y * 2, None

    x = torch.tensor([0.0, 0.5], dtype=torch.float64, requires_grad=True)
    y = ExpFn.apply(x, 2.0)
    y.sum().backward(retain_graph=True)
    log.append(("x.grad", val(x.grad)))
    log.append(("saved_tensors outside", len(y.grad_fn.saved_tensors)))
    y.sum().backward()
    attempt(log, lambda: y.sum().backward())


@scenario
def save_for_backward_errors(torch, log):
    class SavesInt(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    attempt(log, lambda: SavesInt.apply(torch.tensor([1.0], requires_grad=True)))
    attempt(log, lambda: SavesInt.apply(torch.tensor([1.0, 2.0], requires_grad=True)))


@scenario
def backward_return_value_checks(torch, log):
    cases = [
        ("none", lambda g: (None, g * 2, None)),
        ("too many", lambda g: (g, g, None, g)),
        ("too many but None", lambda g: (g, g, None, None)),
        ("too few", lambda g: (g,)),
        ("not a tuple", lambda g: g),
        ("int", lambda g: (g, 1, None)),
        ("ndarray", lambda g: (g.detach().numpy(), None, None)),
        ("grad for non-tensor", lambda g: (g, g, g)),
        ("other dtype", lambda g: (g.float(), g, None)),
        ("reducible", lambda g: (g * torch.ones(3, 2, dtype=g.dtype), g, None)),
    ]
    check_backward_returns(torch, log, cases)


@scenario
def backward_returning_wrong_shapes(torch, log):
    cases = [
        ("wrong shape", lambda g: (g, g[:1], None)),
        ("scalar for a vector", lambda g: (g.sum(), g, None)),
        ("not expandable", lambda g: (g.reshape(2, 1) * torch.ones(2, 3, dtype=g.dtype), g, None)),
    ]
    check_backward_returns(torch, log, cases)


def check_backward_returns(torch, log, cases):
    def make(ret):
        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, k):
                return x * y * k

            @staticmethod
            def backward(ctx, g):
                return ret(g)

        return F

    for name, ret in cases:
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        y = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
        out = make(ret).apply(x, y, 2.0)
        attempt(log, lambda: out.sum().backward())
        log.append((name, val(x.grad), val(y.grad), x.grad is not None and str(x.grad.dtype)))


@scenario
def function_nested_in_backward_and_double_backward(torch, log):
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return Double.apply(g * x)

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            log.append("Double.backward")
            return g * 2

    x = torch.tensor([1.0, 3.0], dtype=torch.float64, requires_grad=True)
    (gx,) = torch.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    log.append(("gx", val(gx), type(gx.grad_fn).__name__))
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    log.append(("ggx", val(ggx)))
    (gx,) = torch.autograd.grad(Square.apply(x).sum(), x)
    log.append(("no create_graph", val(gx), gx.requires_grad))


@scenario
def reentrant_autograd_grad_in_backward(torch, log):
    class Checkpoint(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x.sin() * x).detach()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                xd = x.detach().requires_grad_()
                y = xd.sin() * xd
                y.register_hook(lambda gy: log.append(("inner hook", val(gy))))
                (gx,) = torch.autograd.grad(y, xd, g)
            return gx

    x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("outer hook", val(g))))
    (Checkpoint.apply(x) * 2).sum().backward()
    log.append(("x.grad", val(x.grad)))

    class Reentrant(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                xd = x.detach().requires_grad_()
                (xd * xd).sum().backward()
            log.append(("inner .grad", val(xd.grad)))
            return g * xd.grad

    (Reentrant.apply(x) * 1).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def custom_function_double_backward(torch, log):
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = Cube.apply(x)
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad))
    (ggx,) = torch.autograd.grad(gx.sum(), x, create_graph=True)
    log.append(("ggx", val(ggx)))
    (gggx,) = torch.autograd.grad(ggx.sum(), x)
    log.append(("gggx", val(gggx)))
    Cube.apply(x).sum().backward(create_graph=True)
    log.append(("x.grad", val(x.grad), x.grad.requires_grad))


@scenario
def custom_function_hooks_and_needs_input_grad(torch, log):
    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            log.append(("needs_input_grad", tuple(ctx.needs_input_grad)))
            x, y = ctx.saved_tensors
            return g * y, g * x

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([3.0, 4.0], dtype=torch.float64)
    out = Mul.apply(x, y)
    log.append(type(out.grad_fn).__name__)
    out.register_hook(lambda g: log.append(("out hook", val(g))) or g * 2)
    out.grad_fn.register_hook(lambda gi, go: log.append(("post", val(gi), val(go))))
    out.grad_fn.register_prehook(lambda go: log.append(("pre", val(go))))
    out.sum().backward()
    log.append(("x.grad", val(x.grad)))


# --- closed forms (always run) -------------------------------------------------------------------

torch = ferrograd


def f64(values, requires_grad=True):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


def test_leaf_hook_replaces_the_accumulated_gradient():
    x = f64([1.0, 2.0, 3.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
    (x * x).sum().backward()
    assert seen == [[2.0, 4.0, 6.0]]  # d(sum x^2)/dx = 2x
    assert x.grad.tolist() == [4.0, 8.0, 12.0]


def test_nonleaf_hook_runs_before_retain_grad_whatever_the_order():
    for retain_first in (True, False):
        x = f64([1.0, -2.0])
        y = x * 3
        if retain_first:
            y.retain_grad()
        y.register_hook(lambda g: g * 10)
        if not retain_first:
            y.retain_grad()
        (y * y).sum().backward()
        assert y.grad.tolist() == [60.0, -120.0]  # 10 * 2y
        assert x.grad.tolist() == [180.0, -360.0]  # 3 * 10 * 2y


def test_several_hooks_run_in_registration_order_and_chain():
    x = f64([1.0, 2.0])
    y = x * 1
    seen = []
    for add in (1.0, 10.0, 100.0):
        y.register_hook(lambda g, add=add: seen.append((add, g.tolist())) or g + add)
    y.sum().backward()
    assert seen == [(1.0, [1.0, 1.0]), (10.0, [2.0, 2.0]), (100.0, [12.0, 12.0])]
    assert x.grad.tolist() == [112.0, 112.0]


def test_hook_on_a_tensor_used_twice_runs_once_on_the_sum():
    x = f64([2.0, 3.0])
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append(g.tolist()))
    x.register_hook(lambda g: calls.append(("x", g.tolist())))
    (y * y + y).sum().backward()
    # d/dy (y^2 + y) = 2y + 1 = 4x + 1; dx = 2 * (4x + 1)
    assert calls == [[9.0, 13.0], ("x", [18.0, 26.0])]


def test_handle_remove_and_removal_during_backward():
    x = f64([1.0])
    calls = []
    handle = x.register_hook(lambda g: calls.append("removed"))
    handle.remove()
    handles = []

    def once(g):
        calls.append("once")
        handles[0].remove()

    handles.append(x.register_hook(once))
    y = (x * 4).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    with x.register_hook(lambda g: calls.append("with") or g * 0):
        y.backward(retain_graph=True)
    y.backward()
    assert calls == ["once", "with"]
    assert x.grad.tolist() == [12.0]  # three backwards of 4, one zeroed by the hook


def test_hooks_rerun_with_retain_graph():
    x = f64([1.0, 2.0])
    counts = {"hook": 0, "post": 0}
    x.register_hook(lambda g: counts.__setitem__("hook", counts["hook"] + 1))
    x.register_post_accumulate_grad_hook(lambda t: counts.__setitem__("post", counts["post"] + 1))
    y = (x * x).sum()
    for _ in range(3):
        y.backward(retain_graph=True)
    assert counts == {"hook": 3, "post": 3}
    assert x.grad.tolist() == [6.0, 12.0]


def test_tensor_hook_checks_what_it_returns():
    x = f64([1.0, 2.0])

    def shrink(g):
        return g[:1]

    x.register_hook(shrink)
    with pytest.raises(RuntimeError, match=r"^hook 'shrink' has changed the size of value$"):
        (x * 2).sum().backward()

    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def to_double(g):
        return g.double()

    x.register_hook(to_double)
    with pytest.raises(RuntimeError, match=r"\(was torch.FloatTensor got torch.DoubleTensor\)"):
        (x * 2).sum().backward()

    x = f64([1.0])
    x.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="^expected Variable, but hook returned 'int'$"):
        (x * 2).sum().backward()
    assert x.grad is None


def test_hook_on_an_unused_output_gets_none_and_cannot_replace_it():
    x = f64([1.0, 2.0, 3.0])
    a, b = x.split([1, 2])
    seen = []
    b.register_hook(lambda g: seen.append(g))
    (a * 4).sum().backward(retain_graph=True)
    assert seen == [None] and x.grad.tolist() == [4.0, 0.0, 0.0]
    b.register_hook(lambda g: torch.ones(2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="^can't replace a None gradient with a non-None value$"):
        (a * 4).sum().backward()


def test_hook_exceptions_keep_their_type():
    x = f64([1.0])
    y = x * 2

    def bad(g):
        raise HookError("boom")

    y.register_hook(bad)
    with pytest.raises(HookError, match="^boom$"):
        y.sum().backward()
    assert x.grad is None
    p = f64([1.0])
    p.register_post_accumulate_grad_hook(lambda t: {}["missing"])
    with pytest.raises(KeyError):
        (p * 3).sum().backward()
    assert p.grad.tolist() == [3.0]  # accumulated before the hook ran


def test_hooks_apply_to_autograd_grad():
    x = f64([1.0, 2.0])
    calls = []
    x.register_hook(lambda g: g * 2)
    x.register_post_accumulate_grad_hook(lambda t: calls.append("post"))
    y = x * x
    y.register_hook(lambda g: g + 1)
    (gx,) = torch.autograd.grad(y.sum(), x)
    assert gx.tolist() == [8.0, 16.0]  # 2 * (1 + 1) * 2x
    assert x.grad is None and calls == []


def test_hook_result_is_differentiable_with_create_graph():
    x = f64([1.0, 2.0])
    y = x * x
    y.register_hook(lambda g: g * x)
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    assert gx.tolist() == [2.0, 8.0]  # (1 * x) * 2x = 2x^2
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    assert ggx.tolist() == [4.0, 8.0]  # 4x


def test_backward_create_graph_warns():
    x = f64([1.0, 2.0])
    with pytest.warns(UserWarning, match=r"^Using backward\(\) with create_graph=True will create"):
        (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.tolist() == [3.0, 12.0]


def test_hook_registered_before_and_after_an_inplace_op():
    a = f64([1.0, 2.0])
    x = a * 1
    seen = {}
    x.register_hook(lambda g: seen.update(before=g.tolist()))
    x.mul_(3)
    x.register_hook(lambda g: seen.update(after=g.tolist()))
    (x * x).sum().backward()
    # after: d(x^2)/dx = 2x = 6a; before: the gradient of the value before mul_, 3 * 6a
    assert seen == {"after": [6.0, 12.0], "before": [18.0, 36.0]}
    assert a.grad.tolist() == [18.0, 36.0]


def test_post_accumulate_hook_sees_the_updated_grad_once_per_backward():
    p = f64([1.0, 2.0])
    seen = []
    p.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (p * p + p * 3).sum().backward()  # p used three times: 2p + 3
    (p * 5).sum().backward()
    assert seen == [[5.0, 7.0], [10.0, 12.0]]


def test_post_accumulate_hook_must_return_none():
    q = f64([1.0])
    q.register_post_accumulate_grad_hook(lambda t: t * 1)
    with pytest.raises(RuntimeError, match="^Tensor post accumulate grad hooks should return"):
        (q * 2).sum().backward()
    r = f64([1.0])
    r.register_post_accumulate_grad_hook(lambda t: t)  # the same tensor: accepted, as in PyTorch
    (r * 2).sum().backward()
    assert r.grad.tolist() == [2.0]
    with pytest.raises(RuntimeError, match="cannot be registered on non-leaf tensors"):
        (r * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_node_hooks_order_and_arguments():
    x = f64([1.0, 2.0])
    y = x * torch.tensor([5.0, 6.0], dtype=torch.float64)
    order = []
    y.register_hook(lambda g: order.append(("tensor", g.tolist())) or g * 2)
    y.grad_fn.register_prehook(lambda go: order.append(("pre", go[0].tolist())))
    y.grad_fn.register_hook(
        lambda gi, go: order.append(("post", [None if g is None else g.tolist() for g in gi],
                                     go[0].tolist()))
    )
    acc = y.grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    acc.register_prehook(lambda go: order.append(("acc pre", go[0].tolist())) or (go[0] + 1,))
    x.register_hook(lambda g: order.append(("leaf", g.tolist())))
    x.register_post_accumulate_grad_hook(lambda t: order.append(("post acc", t.grad.tolist())))
    y.sum().backward()
    assert order == [
        ("tensor", [1.0, 1.0]),
        ("pre", [2.0, 2.0]),
        ("post", [[10.0, 12.0], None], [2.0, 2.0]),
        ("leaf", [10.0, 12.0]),
        ("acc pre", [10.0, 12.0]),
        ("post acc", [11.0, 13.0]),
    ]


def test_node_hooks_replace_and_check_their_results():
    x = f64([1.0, 2.0])
    w = f64([3.0, 4.0])
    y = x * w
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, None))
    y.sum().backward()
    assert x.grad.tolist() == [31.0, 41.0] and w.grad is None

    def two(*args):
        return (args[0][0], args[0][0])

    y = x * 2  # grad_inputs is (g, None)
    y.grad_fn.register_hook(two)
    with pytest.raises(RuntimeError, match="^can't replace a None gradient with a non-None value$"):
        y.sum().backward()
    y = x * 2
    y.grad_fn.register_prehook(two)
    message = r"^hook 'two' has returned an incorrect number of values \(got 2, but expected 1\)$"
    with pytest.raises(RuntimeError, match=message):
        y.sum().backward()
    y = x * 2
    y.grad_fn.register_prehook(lambda go: go[0])
    with pytest.raises(TypeError, match="^expected tuple, but hook returned 'Tensor'$"):
        y.sum().backward()


# anomaly mode


def test_anomaly_flags_and_context_managers():
    assert not torch.is_anomaly_enabled() and torch.is_anomaly_check_nan_enabled()
    with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled"):
        mode = torch.autograd.detect_anomaly(check_nan=False)
    with mode:
        assert torch.is_anomaly_enabled() and not torch.is_anomaly_check_nan_enabled()
        with torch.autograd.set_detect_anomaly(False):
            assert not torch.is_anomaly_enabled()
        assert torch.is_anomaly_enabled()
    assert not torch.is_anomaly_enabled() and torch.is_anomaly_check_nan_enabled()
    torch.autograd.set_detect_anomaly(True)
    try:
        assert torch.is_anomaly_enabled()
    finally:
        torch.autograd.set_detect_anomaly(False)
    assert not torch.is_anomaly_enabled()


def test_anomaly_nan_check():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        y = x.sqrt().sum()
        with pytest.raises(RuntimeError) as info, pytest.warns(UserWarning, match="SqrtBackward0"):
            y.backward()
    assert str(info.value) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert x.grad is None
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        x.sqrt().sum().backward()
    g = x.grad.tolist()
    assert g[0] != g[0] and g[1] == 0.25  # nan, 1 / (2 sqrt 4)
    x.sqrt().sum().backward()  # anomaly mode off: no check


def test_anomaly_error_warns_with_the_forward_traceback():
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            raise HookError("bad backward")

    a = f64([1.0])
    with torch.autograd.set_detect_anomaly(True):
        out = Bad.apply(a)  # FORWARD-LINE
        with pytest.warns(UserWarning) as record, pytest.raises(HookError) as info:
            out.exp().sum().backward()
    assert str(info.value) == "bad backward"
    texts = [str(w.message) for w in record if "Error detected" in str(w.message)]
    assert len(texts) == 1
    head = "Error detected in BadBackward. Traceback of forward call that caused the error:\n"
    assert texts[0].startswith(head)
    assert "out = Bad.apply(a)  # FORWARD-LINE" in texts[0]
    assert "test_anomaly_error_warns_with_the_forward_traceback" in texts[0]
    # outside anomaly mode nothing is recorded or warned
    out = Bad.apply(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(HookError):
            out.sum().backward()


def test_anomaly_changes_the_inplace_hint():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (a * 1).exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"Hint: enable anomaly detection to find the operation"):
        y.sum().backward()
    with torch.autograd.set_detect_anomaly(True):
        y = (a * 1).exp()
        y.add_(1)
        with pytest.warns(UserWarning, match="^Error detected in ExpBackward0"), \
                pytest.raises(RuntimeError, match=r"Hint: the backtrace further above shows"):
            y.sum().backward()


# saved tensors hooks


class SaveBoth(ferrograd.autograd.Function):
    """y = x * w, saving the input x and the output y (backward uses both)."""

    @staticmethod
    def forward(ctx, x, w):
        y = x * w
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * (y / x), g * x


def test_saved_tensors_hooks_see_a_custom_functions_saved_tensors():
    calls = []

    def pack(t):
        calls.append(("pack", t.tolist()))
        return {"kept": t}

    def unpack(p):
        calls.append(("unpack", p["kept"].tolist()))
        return p["kept"]

    x = f64([1.0, 2.0])
    w = f64([3.0, 4.0])
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = SaveBoth.apply(x, w)
    assert calls == [("pack", [1.0, 2.0]), ("pack", [3.0, 8.0])]
    y.sum().backward()
    assert calls[2:] == [("unpack", [1.0, 2.0]), ("unpack", [3.0, 8.0])]
    assert x.grad.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]


def test_unpack_result_is_what_backward_uses():
    x = f64([1.0, 2.0])
    w = f64([3.0, 4.0])
    tens = torch.full((2,), 10.0, dtype=torch.float64)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: None, lambda p: tens):
        y = SaveBoth.apply(x, w)
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]  # y / x = 10 / 10
    assert w.grad.tolist() == [10.0, 10.0]


def test_nested_saved_tensors_hooks_innermost_wins():
    calls = []

    def hooks(name):
        return (lambda t: calls.append(name) or t, lambda t: calls.append(name.upper()) or t)

    x = f64([1.0, 2.0])
    w = f64([2.0, 2.0], requires_grad=False)
    with torch.autograd.graph.saved_tensors_hooks(*hooks("outer")):
        y1 = SaveBoth.apply(x, w)
        with torch.autograd.graph.saved_tensors_hooks(*hooks("inner")):
            y2 = SaveBoth.apply(x, w)
        y3 = SaveBoth.apply(x, w)
    y4 = SaveBoth.apply(x, w)
    assert calls == ["outer", "outer", "inner", "inner", "outer", "outer"]
    (y1 + y2 + y3 + y4).sum().backward()
    assert sorted(calls[6:]) == ["INNER"] * 2 + ["OUTER"] * 4
    assert x.grad.tolist() == [8.0, 8.0]


def test_pack_hook_error_is_raised_at_forward_time_and_pops_the_hooks():
    x = f64([1.0, 2.0])
    packed = []

    def bad_pack(t):
        raise HookError("pack failed")

    with pytest.raises(HookError, match="^pack failed$"):
        with torch.autograd.graph.saved_tensors_hooks(bad_pack, lambda p: p):
            x * x
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda p: p):
        y = x.exp()
    assert packed == [1]  # the failed context is gone: the new one packs
    y.sum().backward()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: "not a tensor"):
        y = x.exp()
    message = "^Output of saved tensor unpack_hook expected to be a Tensor but got result of type"
    with pytest.raises(TypeError, match=message):
        y.sum().backward()


def test_disable_saved_tensors_hooks():
    with torch.autograd.graph.disable_saved_tensors_hooks("not here"):
        with pytest.raises(RuntimeError, match="^not here$"):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        pass


def test_saved_tensors_hooks_are_thread_local():
    import threading

    calls = []
    x = f64([1.0, 2.0])
    with torch.autograd.graph.saved_tensors_hooks(lambda t: calls.append("pack") or t, lambda t: t):
        thread = threading.Thread(target=lambda: (x * x).sum().backward())
        thread.start()
        thread.join()
        assert calls == []
        x.exp()
        assert calls == ["pack"]
        with pytest.raises(RuntimeError, match="^no disabling while active$"):
            with torch.autograd.graph.disable_saved_tensors_hooks("no disabling while active"):
                pass


def test_save_on_cpu():
    x = f64([1.0, 2.0])
    with torch.autograd.graph.save_on_cpu():
        y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


# custom Function ctx methods


class AddOneInplace(ferrograd.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_mark_dirty():
    leaf = f64([1.0, 2.0])
    a = leaf * 2
    version = a._version
    out = AddOneInplace.apply(a)
    assert out is a and a._version > version
    assert a.tolist() == [3.0, 5.0] and type(a.grad_fn).__name__ == "AddOneInplaceBackward"
    (out * out).sum().backward()
    assert leaf.grad.tolist() == [36.0, 60.0]  # 2 * 3 * 2a
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad has been used"):
        AddOneInplace.apply(leaf)


def test_mark_dirty_requires_returning_the_input():
    class NotReturned(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    message = "^Some elements marked as dirty during the forward method were not returned as output"
    with pytest.raises(RuntimeError, match=message):
        NotReturned.apply(f64([1.0]) * 1)


class ValuesAndIndex(ferrograd.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        idx = x.argmax().reshape(1)
        mask = (x > 1).to(x.dtype)
        ctx.mark_non_differentiable(idx, mask)
        ctx.seen = []
        return x * 2, idx, mask

    @staticmethod
    def backward(ctx, gv, gi, gm):
        ctx.seen.append((gi.tolist(), gm.tolist()))
        return gv * 2


def test_mark_non_differentiable_outputs_get_zero_gradients():
    x = f64([1.0, 3.0, 2.0])
    v, i, m = ValuesAndIndex.apply(x)
    assert v.requires_grad and not i.requires_grad and not m.requires_grad
    assert i.tolist() == [1] and m.tolist() == [0.0, 1.0, 1.0]
    v.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_set_materialize_grads_false_passes_none():
    got = []

    class Two(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            got.append((g1 is None, g2 is None))
            return g1 * 2 if g1 is not None else None

    x = f64([1.0, 2.0])
    a, b = Two.apply(x)
    a.sum().backward()
    assert got == [(False, True)] and x.grad.tolist() == [2.0, 2.0]


def test_once_differentiable():
    enabled = []

    class Cube(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @ferrograd.autograd.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            enabled.append(torch.is_grad_enabled())
            return g * 3 * x ** 2

    x = f64([1.0, 2.0])
    (gx,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    # the incoming gradient does not require grad: nothing to guard (as in PyTorch)
    assert enabled == [False] and gx.tolist() == [3.0, 12.0] and not gx.requires_grad
    v = f64([1.0, 1.0])
    (gx,) = torch.autograd.grad(Cube.apply(x), x, v, create_graph=True)
    assert gx.tolist() == [3.0, 12.0] and gx.requires_grad
    with pytest.raises(RuntimeError, match="^trying to differentiate twice a function that was "
                                           "marked with @once_differentiable$"):
        gx.sum().backward()


def test_saved_output_comes_back_with_its_grad_fn_and_none_stays_none():
    got = []

    class Exp(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(None, x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            none, x, y = ctx.saved_tensors
            got.append((none, x.grad_fn, type(y.grad_fn).__name__))
            return g * y

    x = f64([0.0, 1.0])
    y = Exp.apply(x)
    assert len(y.grad_fn.saved_tensors) == 3 and y.grad_fn.saved_tensors[0] is None
    y.sum().backward()
    assert got == [(None, None, "ExpBackward")]
    assert x.grad.tolist() == [1.0, y.tolist()[1]]
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        y.sum().backward()


def test_backward_return_value_errors():
    def apply(ret):
        class F(ferrograd.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return ret(g)

        return F.apply(f64([1.0, 2.0]), 2.0).sum().backward

    with pytest.raises(RuntimeError, match=r"^function FBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 3\)$"):
        apply(lambda g: (g, None, g))()
    with pytest.raises(RuntimeError, match=r"^function FBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)$"):
        apply(lambda g: g)()
    apply(lambda g: (g, None, None))()  # extra Nones are fine
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2"):
        apply(lambda g: (g, g))()


def test_function_nested_in_backward_and_double_backward():
    class Double(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Square(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return Double.apply(g * x)

    x = f64([1.0, 3.0])
    (gx,) = torch.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    assert gx.tolist() == [2.0, 6.0] and type(gx.grad_fn).__name__ == "DoubleBackward"
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    assert ggx.tolist() == [2.0, 2.0]


def test_autograd_grad_inside_a_backward():
    class Checkpointed(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x * x).detach()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                xd = x.detach().requires_grad_()
                (gx,) = torch.autograd.grad(xd * xd * xd, xd, g)
            return gx

    x = f64([1.0, 2.0])
    (Checkpointed.apply(x) * 2).sum().backward()
    assert x.grad.tolist() == [6.0, 24.0]  # 2 * 3x^2


def test_custom_function_triple_backward():
    class Cube(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = f64([1.0, 2.0])
    (g1,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (g2,) = torch.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = torch.autograd.grad(g2.sum(), x)
    assert (g1.tolist(), g2.tolist(), g3.tolist()) == ([3.0, 12.0], [6.0, 12.0], [6.0, 6.0])


# memory


def live_nodes():
    gc.collect()
    return ferrograd._core._live_nodes()


def test_hooks_registered_every_iteration_do_not_leak_nodes():
    w = f64([1.0, 2.0, 3.0])
    base = live_nodes()
    for i in range(2000):
        x = f64([1.0, 2.0, 3.0])
        y = x * w
        y.register_hook(lambda g: g * 2)
        x.register_hook(lambda g: None)
        x.register_post_accumulate_grad_hook(lambda t: None)
        y.grad_fn.register_prehook(lambda go: None)
        y.grad_fn.register_hook(lambda gi, go: None)
        handle = w.register_hook(lambda g: g)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            z = (y * y).sum()
        if i % 2:
            z.backward()
        handle.remove()
        if i == 100:
            after_100 = live_nodes()
    del x, y, z
    assert live_nodes() == base
    assert after_100 - base < 10


@pytest.mark.parametrize("kind", ["tensor", "leaf", "post_accumulate", "node", "prehook", "acc"])
def test_hooks_are_freed_by_remove_and_with_what_holds_them(kind):
    import weakref

    class Marker:
        pass

    def register(x, y, marker):
        if kind == "tensor":
            return y.register_hook(lambda g, m=marker: g)
        if kind == "leaf":
            return x.register_hook(lambda g, m=marker: g)
        if kind == "post_accumulate":
            return x.register_post_accumulate_grad_hook(lambda t, m=marker: None)
        if kind == "node":
            return y.grad_fn.register_hook(lambda gi, go, m=marker: None)
        if kind == "prehook":
            return y.grad_fn.register_prehook(lambda go, m=marker: None)
        return y.grad_fn.next_functions[0][0].register_prehook(lambda go, m=marker: None)

    # remove() frees the hook at once
    x = f64([1.0, 2.0])
    y = x * 2
    marker = Marker()
    ref = weakref.ref(marker)
    handle = register(x, y, marker)
    del marker
    gc.collect()
    assert ref() is not None
    handle.remove()
    gc.collect()
    assert ref() is None
    # otherwise it lives as long as its graph (or its leaf)
    marker = Marker()
    ref = weakref.ref(marker)
    register(x, y, marker)
    del marker
    y.sum().backward()
    del y
    gc.collect()
    if kind in ("leaf", "post_accumulate"):
        assert ref() is not None
        del x
        gc.collect()
    assert ref() is None


def test_leaf_hook_referring_to_its_leaf_is_collected():
    import weakref

    class Marker:
        pass

    refs = []
    for _ in range(10):
        x = f64([1.0])
        marker = Marker()
        refs.append(weakref.ref(marker))
        x.register_hook(lambda g, x=x, marker=marker: g)
    del x, marker
    gc.collect()
    assert all(r() is None for r in refs)


# --- parity driver -------------------------------------------------------------------------------

# scenarios that fail because of bugs in the Rust engine (see the report of issue 5)
ENGINE_BUGS = {}


@pytest.fixture(scope="module")
def real_torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=ENGINE_BUGS[n]))
        if n in ENGINE_BUGS else n
        for n in SCENARIOS
    ],
)
def test_parity_with_torch(name, real_torch):
    ours = run(SCENARIOS[name], ferrograd)
    theirs = run(SCENARIOS[name], real_torch)
    assert ours == theirs
