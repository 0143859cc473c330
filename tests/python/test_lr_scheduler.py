"""ferrograd.optim.lr_scheduler: learning rate sequences, state dicts and warnings.

Parity tests drive PyTorch's schedulers (the spec) and ours side by side and compare
every learning rate (and cycled momentum); they skip without torch. The closed-form
tests below them always run.
"""

import copy
import math
import warnings

import pytest

import ferrograd
from ferrograd.optim import lr_scheduler

STEPS = 100


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def make_optimizer(lib, cls_name="SGD"):
    a = lib.zeros(2, requires_grad=True)
    b = lib.zeros(3, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if cls_name == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return getattr(lib.optim, cls_name)(groups, lr=0.1)


class Scale:
    """A callable object: LambdaLR saves its ``__dict__`` in state_dict."""

    def __init__(self, factor):
        self.factor = factor

    def __call__(self, epoch):
        return self.factor**epoch


SCHEDULERS = [
    ("StepLR", "SGD", lambda: dict(step_size=7, gamma=0.5)),
    ("StepLR", "SGD", lambda: dict(step_size=1)),
    ("MultiStepLR", "SGD", lambda: dict(milestones=[5, 20, 20, 45], gamma=0.3)),
    ("ExponentialLR", "SGD", lambda: dict(gamma=0.97)),
    ("CosineAnnealingLR", "SGD", lambda: dict(T_max=30, eta_min=0.001)),
    ("CosineAnnealingLR", "Adam", lambda: dict(T_max=17)),
    ("LambdaLR", "SGD", lambda: dict(lr_lambda=lambda e: 0.95**e)),
    ("LambdaLR", "Adam", lambda: dict(lr_lambda=[lambda e: 1.0 / (e + 1), Scale(0.9)])),
    ("MultiplicativeLR", "SGD", lambda: dict(lr_lambda=lambda e: 0.98)),
    ("ConstantLR", "SGD", lambda: dict(factor=0.5, total_iters=10)),
    ("LinearLR", "SGD", lambda: dict(start_factor=0.2, end_factor=0.9, total_iters=25)),
    ("PolynomialLR", "SGD", lambda: dict(total_iters=40, power=2.0)),
    ("OneCycleLR", "SGD", lambda: dict(max_lr=[1.0, 0.5], total_steps=STEPS)),
    ("OneCycleLR", "Adam", lambda: dict(max_lr=0.01, epochs=10, steps_per_epoch=10, anneal_strategy="linear")),
    ("OneCycleLR", "SGD", lambda: dict(max_lr=0.3, total_steps=STEPS, three_phase=True, pct_start=0.25,
                                        base_momentum=[0.8, 0.7], max_momentum=0.99)),
    ("OneCycleLR", "Adam", lambda: dict(max_lr=0.3, total_steps=STEPS, three_phase=True, anneal_strategy="linear",
                                         div_factor=10.0, final_div_factor=100.0)),
    ("OneCycleLR", "SGD", lambda: dict(max_lr=0.3, total_steps=STEPS, cycle_momentum=False)),
]


def _sid(c):
    return f"{c[0]}-{c[1]}-" + ",".join(f"{k}={v}" for k, v in c[2]().items() if k != "lr_lambda")


def momenta(opt):
    return [g.get("momentum", g.get("betas")) for g in opt.param_groups]


def run_schedule(lib, name, opt_name, kwargs, steps=STEPS):
    opt = make_optimizer(lib, opt_name)
    sched = getattr(lib.optim.lr_scheduler, name)(opt, **kwargs)
    seq = [(list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], momenta(opt))]
    for _ in range(steps):
        opt.step()
        sched.step()
        seq.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], momenta(opt)))
    return opt, sched, seq


def assert_seq_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a[0] == pytest.approx(b[0], rel=1e-12, abs=1e-15), f"step {i}: last_lr"
        assert a[1] == pytest.approx(b[1], rel=1e-12, abs=1e-15), f"step {i}: group lr"
        for m, tm in zip(a[2], b[2]):
            assert m == pytest.approx(tm, rel=1e-12, abs=1e-15), f"step {i}: momentum"


@pytest.mark.parametrize("name,opt_name,kwargs", SCHEDULERS, ids=[_sid(c) for c in SCHEDULERS])
def test_lr_sequence_matches_torch(torch, name, opt_name, kwargs):
    topt, tsched, theirs = run_schedule(torch, name, opt_name, kwargs())
    opt, sched, ours = run_schedule(ferrograd, name, opt_name, kwargs())
    assert_seq_equal(ours, theirs)
    assert sched.last_epoch == tsched.last_epoch
    assert [g.get("initial_lr") for g in opt.param_groups] == [g.get("initial_lr") for g in topt.param_groups]
    assert sorted(opt.param_groups[0]) == sorted(topt.param_groups[0])


def comparable(sd):
    """A scheduler state dict without entries that cannot compare across libraries."""
    return {k: v for k, v in sd.items() if k not in ("lr_lambdas",)}


@pytest.mark.parametrize("name,opt_name,kwargs", SCHEDULERS, ids=[_sid(c) for c in SCHEDULERS])
def test_state_dict_matches_torch(torch, name, opt_name, kwargs):
    _, tsched, _ = run_schedule(torch, name, opt_name, kwargs(), steps=13)
    _, sched, _ = run_schedule(ferrograd, name, opt_name, kwargs(), steps=13)
    sd, tsd = sched.state_dict(), tsched.state_dict()
    assert list(sd) == list(tsd)
    assert comparable(sd) == comparable(tsd)
    if "lr_lambdas" in tsd:
        assert sd["lr_lambdas"] == tsd["lr_lambdas"]


@pytest.mark.parametrize("name,opt_name,kwargs", SCHEDULERS, ids=[_sid(c) for c in SCHEDULERS])
def test_state_dict_round_trip(torch, name, opt_name, kwargs):
    _, _, theirs = run_schedule(torch, name, opt_name, kwargs(), steps=60)

    opt, sched, first = run_schedule(ferrograd, name, opt_name, kwargs(), steps=30)
    opt_sd, sched_sd = copy.deepcopy(opt.state_dict()), copy.deepcopy(sched.state_dict())
    opt2 = make_optimizer(ferrograd, opt_name)
    sched2 = getattr(lr_scheduler, name)(opt2, **kwargs())
    opt2.load_state_dict(opt_sd)
    sched2.load_state_dict(sched_sd)
    rest = []
    for _ in range(30):
        opt2.step()
        sched2.step()
        rest.append((list(sched2.get_last_lr()), [g["lr"] for g in opt2.param_groups], momenta(opt2)))
    assert_seq_equal(first + rest, theirs)


PLATEAU = [
    dict(),
    dict(patience=3),
    dict(mode="max", factor=0.5, patience=2, threshold=0.05, threshold_mode="abs"),
    dict(mode="min", factor=0.5, patience=1, cooldown=3, min_lr=[0.02, 0.001]),
    dict(mode="max", factor=0.2, patience=0, threshold=0.1, min_lr=0.004, eps=1e-3),
]


def metrics(n=STEPS):
    """Deterministic metrics with improvements, plateaus and relapses."""
    out, value = [], 1.0
    for i in range(n):
        if i % 17 < 6:
            value *= 0.9
        elif i % 17 < 12:
            value *= 1.0 + 1e-5 * (i % 3)
        else:
            value *= 1.03
        out.append(value)
    return out


@pytest.mark.parametrize("kwargs", PLATEAU, ids=str)
def test_reduce_lr_on_plateau_matches_torch(torch, kwargs):
    seqs = []
    for lib in (torch, ferrograd):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        seq = []
        for i, m in enumerate(metrics()):
            opt.step()
            sched.step(lib.tensor(m) if i % 2 else m)
            seq.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups],
                        sched.best, sched.num_bad_epochs, sched.cooldown_counter, sched.last_epoch))
        seqs.append((seq, sched.state_dict(), opt))
    (theirs, tsd, topt), (ours, sd, opt) = seqs
    assert len({tuple(s[1]) for s in theirs}) > 2  # the schedule did reduce
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"step {i}"  # the same float arithmetic: equal exactly
    assert list(sd) == list(tsd)
    assert sd == tsd
    assert "initial_lr" not in opt.param_groups[0] and "initial_lr" not in topt.param_groups[0]


def record(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(x.category.__name__, str(x.message)) for x in w]


def _scheduler_before_optimizer(lib):
    opt = make_optimizer(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    sched.step()
    opt.step()
    sched.step()


def _correct_order(lib):
    opt = make_optimizer(lib)
    sched = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    for _ in range(3):
        opt.step()
        sched.step()


def _get_lr_outside_step(lib):
    opt = make_optimizer(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    sched.get_lr()


def _epoch_argument(lib):
    opt = make_optimizer(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    sched.step(5)
    assert sched.get_last_lr() == [0.1 * 0.25, 0.05 * 0.25]


def _overridden_step(lib):
    opt = make_optimizer(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    opt.step = lambda closure=None: None
    opt.step()
    sched.step()


@pytest.mark.parametrize(
    "scenario", [_scheduler_before_optimizer, _correct_order, _get_lr_outside_step, _epoch_argument, _overridden_step]
)
def test_warnings_match_torch(torch, scenario):
    theirs = record(lambda: scenario(torch))
    ours = record(lambda: scenario(ferrograd))
    assert ours == theirs


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


SCHED_ERRORS = [
    lambda L, o: L.optim.lr_scheduler.StepLR(3, step_size=2),
    lambda L, o: L.optim.lr_scheduler.StepLR(o, step_size=2, last_epoch=5),
    lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lr_lambda=[lambda e: 1.0]),
    lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, lr_lambda=0.5),
    lambda L, o: L.optim.lr_scheduler.ConstantLR(o, factor=2.0),
    lambda L, o: L.optim.lr_scheduler.LinearLR(o, start_factor=0.0),
    lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(o, factor=1.0),
    lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(o, mode="avg"),
    lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(o, threshold_mode="x"),
    lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau("opt"),
    lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1),
    lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=0),
    lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, epochs=2.0, steps_per_epoch=3),
    lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, epochs=2, steps_per_epoch=-3),
    lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1),
    lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="exp"),
    lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=[0.1], total_steps=10),
    lambda L, o: L.optim.lr_scheduler.OneCycleLR(
        L.optim.Adagrad([L.zeros(1, requires_grad=True)]), max_lr=0.1, total_steps=10),
    lambda L, o: [s.step() for s in [L.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=3)] * 4],
]


@pytest.mark.parametrize("case", range(len(SCHED_ERRORS)))
def test_errors_match_torch(torch, case):
    make = SCHED_ERRORS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _err(lambda: make(torch, make_optimizer(torch)))
        assert expected is not None
        assert _err(lambda: make(ferrograd, make_optimizer(ferrograd))) == expected


# --- always run: closed forms ------------------------------------------------------


def opt_and_steps(sched_cls, steps, **kwargs):
    opt = make_optimizer(ferrograd)
    sched = sched_cls(opt, **kwargs)
    lrs = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return opt, sched, lrs


def test_initial_lr_and_last_epoch():
    opt, sched, lrs = opt_and_steps(lr_scheduler.StepLR, 3, step_size=10)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    assert sched.base_lrs == [0.1, 0.05]
    assert sched.last_epoch == 3
    assert lrs[0] == [0.1, 0.05]
    assert isinstance(sched, lr_scheduler.LRScheduler)
    assert issubclass(lr_scheduler._LRScheduler, lr_scheduler.LRScheduler)


def test_step_lr_gamma_powers():
    _, _, lrs = opt_and_steps(lr_scheduler.StepLR, 40, step_size=7, gamma=0.5)
    for epoch, lr in enumerate(lrs):
        assert lr == pytest.approx([0.1 * 0.5 ** (epoch // 7), 0.05 * 0.5 ** (epoch // 7)], rel=1e-12)


def test_multistep_lr():
    _, _, lrs = opt_and_steps(lr_scheduler.MultiStepLR, 30, milestones=[3, 10, 10], gamma=0.1)
    for epoch, lr in enumerate(lrs):
        n = (epoch >= 3) + 2 * (epoch >= 10)
        assert lr[0] == pytest.approx(0.1 * 0.1**n, rel=1e-12)


def test_exponential_lr():
    _, _, lrs = opt_and_steps(lr_scheduler.ExponentialLR, 50, gamma=0.9)
    for epoch, lr in enumerate(lrs):
        assert lr[1] == pytest.approx(0.05 * 0.9**epoch, rel=1e-12)


def test_cosine_annealing_follows_the_cosine_formula():
    T, eta_min = 20, 0.001
    _, _, lrs = opt_and_steps(lr_scheduler.CosineAnnealingLR, 2 * T, T_max=T, eta_min=eta_min)
    for epoch, lr in enumerate(lrs):
        expect = eta_min + (0.1 - eta_min) * (1 + math.cos(math.pi * epoch / T)) / 2
        assert lr[0] == pytest.approx(expect, rel=1e-9, abs=1e-12)
    assert lrs[T][0] == pytest.approx(eta_min, rel=1e-9)
    assert lrs[2 * T][0] == pytest.approx(0.1, rel=1e-9)


def test_lambda_lr_and_its_state_dict():
    opt, sched, lrs = opt_and_steps(lr_scheduler.LambdaLR, 5, lr_lambda=[lambda e: e + 1, Scale(0.5)])
    assert lrs[4] == pytest.approx([0.1 * 5, 0.05 * 0.5**4])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [None, {"factor": 0.5}]
    assert "optimizer" not in sd
    other = Scale(0.1)
    sched2 = lr_scheduler.LambdaLR(make_optimizer(ferrograd), lr_lambda=[lambda e: 1.0, other])
    sched2.load_state_dict(sd)
    assert other.factor == 0.5
    assert sched2.last_epoch == 5
    assert "lr_lambdas" in sd  # load_state_dict must leave the dict as it was


def test_one_cycle_endpoints_and_momentum():
    total, max_lr = 50, 0.4
    opt = make_optimizer(ferrograd)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=total, pct_start=0.3)
    lrs, moms = [sched.get_last_lr()[0]], [opt.param_groups[0]["momentum"]]
    for _ in range(total - 1):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
        moms.append(opt.param_groups[0]["momentum"])
    assert lrs[0] == pytest.approx(max_lr / 25.0)
    assert moms[0] == pytest.approx(0.95)
    peak = int(0.3 * total) - 1
    assert lrs[peak] == pytest.approx(max_lr) and max(lrs) == pytest.approx(max_lr)
    assert moms[peak] == pytest.approx(0.85)
    assert lrs[-1] == pytest.approx(max_lr / 25.0 / 1e4)
    assert moms[-1] == pytest.approx(0.95)
    # cosine annealing halfway through the first phase
    pct = 7 / peak
    assert lrs[7] == pytest.approx(max_lr + (max_lr / 25.0 - max_lr) / 2 * (math.cos(math.pi * pct) + 1))
    with pytest.raises(ValueError, match="Tried to step 51 times. The specified number of total steps is 50"):
        opt.step()
        sched.step()
        sched.step()


def test_one_cycle_cycles_adam_beta1():
    p = ferrograd.zeros(1, requires_grad=True)
    opt = ferrograd.optim.Adam([p], lr=0.1, betas=(0.9, 0.99))
    sched = lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10, anneal_strategy="linear")
    assert opt.param_groups[0]["betas"] == (0.95, 0.99)
    for _ in range(2):
        opt.step()
        sched.step()
    assert opt.param_groups[0]["betas"] == (0.85, 0.99)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)


def test_reduce_lr_on_plateau_by_hand():
    opt = make_optimizer(ferrograd)
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=2, factor=0.5, cooldown=1, min_lr=0.03)
    assert sched.get_last_lr() == [0.1, 0.05]
    for m in [1.0, 1.0, 1.0]:
        sched.step(m)
    assert opt.param_groups[0]["lr"] == 0.1  # two bad epochs: still within patience
    sched.step(1.0)
    assert [g["lr"] for g in opt.param_groups] == [0.05, 0.03]  # 0.05 * 0.5 is below min_lr
    assert sched.cooldown_counter == 1
    sched.step(1.0)  # cooldown
    assert sched.num_bad_epochs == 0
    for m in [1.0, 1.0, 1.0]:
        sched.step(m)
    assert [g["lr"] for g in opt.param_groups] == [0.03, 0.03]
    for m in [1.0, 1.0, 1.0, 1.0]:
        sched.step(m)
    assert [g["lr"] for g in opt.param_groups] == [0.03, 0.03]  # both at min_lr
    sched.step(0.5)
    assert sched.best == 0.5 and sched.num_bad_epochs == 0
    assert sched.get_last_lr() == [0.03, 0.03]


def test_warning_texts_without_torch():
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        opt = make_optimizer(ferrograd)
        sched = lr_scheduler.StepLR(opt, step_size=2)
        sched.step()
    with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
        sched.get_lr()
    opt = make_optimizer(ferrograd)
    sched = lr_scheduler.StepLR(opt, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
    assert opt._opt_called is True
