"""Hooks, saved-tensor hooks, anomaly mode and the ctx methods of custom Functions (issue 5).

Parity tests run each scenario twice, once with ``ferrograd`` and once with ``torch`` passed as
``torch``, and compare what it logged: values, the order in which hooks ran, and the type and
message of every exception. They skip without PyTorch. The closed-form tests below them always
run: gradients worked out by hand, call counts and orders.
"""

import gc
import traceback
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
        return round(x, 6)
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
        (w.category.__name__, str(w.message).split("\n")[0]) for w in caught)))
    return log


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
    a.register_hook(lambda g: log.append(("a", val(g))))
    (a * 4).sum().backward(retain_graph=True)
    log.append(("x.grad", val(x.grad)))

    def replace(g):
        return torch.ones(2, dtype=torch.float64)

    b.register_hook(replace)
    attempt(log, lambda: (a * 4).sum().backward())


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

    for hook in (changes_size, changes_type, returns_int, returns_list):
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
    gx, gy = torch.autograd.grad((y * 3).sum(), (x, y))
    log.append(("both", val(gx), val(gy)))
    log.append(("x.grad", val(x.grad)))


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
    log.append(("no trace", [str(w.message) for w in caught if "Error detected" in str(w.message)]))
    # without anomaly mode: no warning at all
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        attempt(log, lambda: Bad.apply(b).backward())
    log.append(("warnings off", len(caught)))


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
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    packs = []
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: packs.append(val(t)) or len(packs),
        lambda n: torch.full((2,), float(10 * n), dtype=torch.float64),
    ):
        y = x * w
    log.append(("packed", sorted(packs)))
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
    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        attempt(log, lambda: torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__())
        with torch.autograd.graph.disable_saved_tensors_hooks("inner message"):
            attempt(log, lambda: torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__())
        attempt(log, lambda: torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__())
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        log.append(("allowed again", val((x * 2).sum())))


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
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(val(t)) or t, lambda t: t):
        y1 = x * w
        y2 = x * c  # only c is needed
        y3 = w.exp()  # saves its result
    log.append(("packed", sorted(packed)))
    (y1 + y2 + y3).sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))


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
    attempt(log, lambda: torch.autograd.grad(gx.sum(), x))


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


@scenario
def backward_return_value_checks(torch, log):
    def make(ret):
        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, k):
                return x * y * k

            @staticmethod
            def backward(ctx, g):
                return ret(g)

        return F

    cases = [
        ("none", lambda g: (None, g * 2, None)),
        ("too many", lambda g: (g, g, None, g)),
        ("too many but None", lambda g: (g, g, None, None)),
        ("too few", lambda g: (g,)),
        ("not a tuple", lambda g: g),
        ("int", lambda g: (g, 1, None)),
        ("grad for non-tensor", lambda g: (g, g, g)),
        ("wrong shape", lambda g: (g, g[:1], None)),
        ("broadcastable", lambda g: (g.sum(), g, None)),
        ("other dtype", lambda g: (g.float(), g, None)),
    ]
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
