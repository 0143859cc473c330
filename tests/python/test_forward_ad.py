"""torch.autograd.forward_ad (issue 13): ferrograd has levels but no dual tensors. make_dual
raises NotImplementedError after PyTorch's own argument checks; unpack_dual of a tensor gives
it back with no tangent, as PyTorch does for a tensor without one.

The parity test compares the behaviour that both libraries share (skips without PyTorch).
"""

import pytest

import ferrograd
import ferrograd.autograd.forward_ad as fwAD
from _func_helpers import assert_same, attempt, run, val


def levels_and_unpack(torch, log):
    fa = torch.autograd.forward_ad
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    log.append(val(fa.unpack_dual(t)))
    log.append(fa.unpack_dual(t).primal is t)
    attempt(log, lambda: fa.make_dual(t, t))
    with fa.dual_level() as level:
        log.append(("level", level))
        p, tangent = fa.unpack_dual(t)
        log.append((type(fa.unpack_dual(t)).__name__, p is t, p._base is t, val(p), tangent))
        u = torch.ones(2)
        log.append((fa.unpack_dual(u).tangent, val(fa.unpack_dual(u).primal)))
        attempt(log, lambda: fa.make_dual(torch.ones(2, dtype=torch.int64), torch.ones(2)))
        attempt(log, lambda: fa.make_dual(torch.ones(2), torch.ones(2, dtype=torch.int64)))
    attempt(log, fa.exit_dual_level)
    log.append(fa.enter_dual_level())
    attempt(log, lambda: fa.exit_dual_level(level=3))
    fa.exit_dual_level()


def test_parity_with_torch(real_torch):
    assert_same(run(levels_and_unpack, ferrograd), run(levels_and_unpack, real_torch))


def test_make_dual_names_forward_mode_ad():
    with fwAD.dual_level():
        with pytest.raises(NotImplementedError, match="forward-mode AD"):
            fwAD.make_dual(ferrograd.ones(2), ferrograd.ones(2))


def test_dual_level_as_decorator_restores_level():
    @fwAD.dual_level()
    def inside():
        return fwAD.unpack_dual(ferrograd.ones(1)).primal._base is not None

    assert inside()
    assert fwAD._current_level == -1


def test_exported_names():
    assert ferrograd.autograd.forward_ad is fwAD
    assert set(fwAD.__all__) == {
        "UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
        "dual_level"}
