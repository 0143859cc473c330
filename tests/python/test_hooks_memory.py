"""Memory: hooks do not leak graph nodes and are freed with their handle, graph or leaf."""

import gc

import pytest

import ferrograd
from _hooks_helpers import f64

torch = ferrograd


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
