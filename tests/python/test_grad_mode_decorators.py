"""Grad modes as decorators (issue 13): on generator functions the mode holds inside each
resumption and the caller's mode comes back at each ``yield`` (PyTorch's
``torch.utils._contextlib``); on ``async def`` functions only the creation of the coroutine is
covered, its body runs in the caller's mode, as in PyTorch 2.x; decorating a class warns.

Parity tests run each scenario with ferrograd and with torch; they skip without PyTorch. The
tests below them always run. Helpers: _func_helpers.py.
"""

import asyncio

import pytest

import ferrograd
from _func_helpers import assert_same, run, scenario_registry

SCENARIOS, scenario = scenario_registry()


def decorators(torch):
    return {
        "no_grad()": torch.no_grad(),
        "no_grad": torch.no_grad,
        "enable_grad()": torch.enable_grad(),
        "set_grad_enabled(False)": torch.set_grad_enabled(False),
        "set_grad_enabled(True)": torch.set_grad_enabled(True),
        "inference_mode()": torch.inference_mode(),
        "inference_mode(False)": torch.inference_mode(False),
        "inference_mode": torch.inference_mode,
    }


@scenario
def generators_get_the_mode_per_resumption(torch, log):
    torch.set_grad_enabled(True)  # set_grad_enabled(...) above takes effect at once
    for name, deco in decorators(torch).items():
        torch.set_grad_enabled(True)

        @deco
        def gen(n):
            for i in range(n):
                got = yield (i, torch.is_grad_enabled())
                log.append((name, "got", got, torch.is_grad_enabled()))
            return "done"

        for outer in (True, False):
            torch.set_grad_enabled(outer)
            it = gen(2)
            log.append((name, outer, next(it), torch.is_grad_enabled()))
            log.append((name, outer, it.send("a"), torch.is_grad_enabled()))
            try:
                it.send("b")
            except StopIteration as e:
                log.append((name, "returned", e.value, torch.is_grad_enabled()))
            it = gen(3)
            next(it)
            try:
                it.throw(ValueError("thrown in"))
            except ValueError as e:
                log.append((name, "raised", str(e), torch.is_grad_enabled()))
            it = gen(3)
            next(it)
            it.close()
            log.append((name, "closed", torch.is_grad_enabled()))


@scenario
def generator_catching_thrown_exception(torch, log):
    @torch.no_grad()
    def gen():
        try:
            yield 1
        except KeyError:
            log.append(("caught inside", torch.is_grad_enabled()))
            yield 2
        finally:
            log.append(("finally", torch.is_grad_enabled()))

    torch.set_grad_enabled(True)
    it = gen()
    next(it)
    log.append(("throw gave", it.throw(KeyError("k")), torch.is_grad_enabled()))
    it.close()
    log.append(("after close", torch.is_grad_enabled()))
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad()
    def products():
        yield x * 2
        yield x * 3

    log.append(tuple(t.requires_grad for t in products()))


@scenario
def coroutines_run_in_the_callers_mode(torch, log):
    for name, deco in decorators(torch).items():
        torch.set_grad_enabled(True)

        @deco
        async def co():
            log.append((name, "body", torch.is_grad_enabled()))
            await asyncio.sleep(0)
            log.append((name, "resumed", torch.is_grad_enabled()))
            return 3

        log.append((name, asyncio.run(co()), torch.is_grad_enabled()))


@scenario
def inference_mode_false_enables_grad(torch, log):
    with torch.no_grad():
        with torch.inference_mode(False):
            log.append(torch.is_grad_enabled())
        with torch.inference_mode():
            log.append(torch.is_grad_enabled())
        log.append(torch.is_grad_enabled())


@scenario
def decorating_a_class_warns(torch, log):
    @torch.no_grad()
    class Thing:
        def __init__(self):
            self.mode = torch.is_grad_enabled()

    log.append(("made in mode", Thing().mode, torch.is_grad_enabled()))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    assert_same(run(SCENARIOS[name], ferrograd), run(SCENARIOS[name], real_torch))


# --- always run -----------------------------------------------------------------------------------


def test_no_grad_generator_restores_mode_between_steps():
    seen = []

    @ferrograd.no_grad()
    def gen():
        seen.append(ferrograd.is_grad_enabled())
        yield
        seen.append(ferrograd.is_grad_enabled())

    it = gen()
    next(it)
    assert ferrograd.is_grad_enabled()
    with pytest.raises(StopIteration):
        next(it)
    assert seen == [False, False] and ferrograd.is_grad_enabled()


def test_enable_grad_generator_under_no_grad_builds_graphs():
    x = ferrograd.ones(2, requires_grad=True)

    @ferrograd.enable_grad()
    def gen():
        yield x * 2

    with ferrograd.no_grad():
        (y,) = list(gen())
        assert not ferrograd.is_grad_enabled()
    assert y.requires_grad


def test_coroutine_body_is_not_covered():
    @ferrograd.no_grad()
    async def co():
        return ferrograd.is_grad_enabled()

    assert asyncio.run(co()) is True


def test_inference_mode_false_inside_no_grad():
    with ferrograd.no_grad(), ferrograd.inference_mode(False):
        assert ferrograd.is_grad_enabled()


def test_class_decoration_warns_future_warning():
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        @ferrograd.no_grad()
        class Thing:
            pass
    assert Thing is not None
