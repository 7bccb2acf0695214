# vkt.optim.lr_scheduler against torch.optim.lr_scheduler: each scheduler's lr sequence (and momentum,
# where it cycles one) over 30 epochs on an optimizer with two parameter groups; state_dict round trips;
# the closed forms of step(epoch); errors. Pure Python on both sides: exact equality expected.
import warnings

import pytest
import torch

import vkt

EPOCHS = 30


def optimizers(name="SGD", **kw):
    """The same two-group optimizer in both libraries (no gradients: their steps change nothing)."""
    out = []
    for lib in (torch, vkt):
        a, b = lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)
        out.append(getattr(lib.optim, name)([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, **kw))
    return out


def make(lib, opt, kind):
    s = lib.optim.lr_scheduler
    return {
        "StepLR": lambda: s.StepLR(opt, step_size=7, gamma=0.5),
        "MultiStepLR": lambda: s.MultiStepLR(opt, milestones=[3, 10, 10, 20], gamma=0.3),
        "ExponentialLR": lambda: s.ExponentialLR(opt, gamma=0.9),
        "CosineAnnealingLR": lambda: s.CosineAnnealingLR(opt, T_max=8, eta_min=0.01),
        "LambdaLR": lambda: s.LambdaLR(opt, lr_lambda=[lambda e: 0.95 ** e, lambda e: 1.0 / (e + 1)]),
        "LinearLR": lambda: s.LinearLR(opt, start_factor=0.25, end_factor=0.9, total_iters=12),
        "OneCycleLR": lambda: s.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=EPOCHS + 1),
        "OneCycleLR-linear-3": lambda: s.OneCycleLR(opt, max_lr=1.0, epochs=4, steps_per_epoch=8,
                                                    anneal_strategy="linear", three_phase=True, pct_start=0.25),
        "MultiplicativeLR": lambda: s.MultiplicativeLR(opt, lr_lambda=lambda e: 0.9 if e % 3 else 1.1),
        "ConstantLR": lambda: s.ConstantLR(opt, factor=0.5, total_iters=4),
        "PolynomialLR": lambda: s.PolynomialLR(opt, total_iters=20, power=2.0),
        "CosineAnnealingWarmRestarts": lambda: s.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=0.001),
        "ChainedScheduler": lambda: s.ChainedScheduler([s.ConstantLR(opt, factor=0.2, total_iters=3),
                                                        s.ExponentialLR(opt, gamma=0.9)]),
        "SequentialLR": lambda: s.SequentialLR(opt, [s.LinearLR(opt, start_factor=0.1, total_iters=5),
                                                     s.CosineAnnealingLR(opt, T_max=10),
                                                     s.ExponentialLR(opt, gamma=0.8)], milestones=[5, 15]),
    }[kind]()


KINDS = ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "LinearLR", "OneCycleLR",
         "OneCycleLR-linear-3", "SequentialLR", "MultiplicativeLR", "ConstantLR", "PolynomialLR",
         "CosineAnnealingWarmRestarts", "ChainedScheduler"]


def momenta(opt):
    return [g.get("momentum", g.get("betas")) for g in opt.param_groups]


def trace(opt, sched, epochs=EPOCHS):
    out = [(list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], momenta(opt))]
    for _ in range(epochs):
        opt.step()
        sched.step()
        out.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], momenta(opt)))
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_sequence(kind, name):
    kw = {"momentum": 0.9} if name == "SGD" else {}
    (topt, vopt) = optimizers(name, **kw)
    assert trace(vopt, make(vkt, vopt, kind)) == trace(topt, make(torch, topt, kind))


@pytest.mark.parametrize("kind", ["StepLR", "MultiStepLR", "CosineAnnealingLR", "SequentialLR", "LambdaLR",
                                  "OneCycleLR", "ChainedScheduler", "CosineAnnealingWarmRestarts"])
def test_state_dict_round_trip(kind):
    """Halfway, a new scheduler over the same optimizer loads the first's state and carries on."""
    results = []
    for lib, opt in zip((torch, vkt), optimizers(momentum=0.9)):
        sched = make(lib, opt, kind)
        head = trace(opt, sched, 12)
        sd = sched.state_dict()
        assert "optimizer" not in sd
        sched2 = make(lib, opt, kind)
        sched2.load_state_dict(sd)
        results.append((head, trace(opt, sched2, 12), sorted(sd)))
    assert results[1] == results[0]


@pytest.mark.parametrize("kind", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                                  "ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts"])
def test_closed_form(kind):
    results = []
    for lib, opt in zip((torch, vkt), optimizers()):
        sched = make(lib, opt, kind)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 9, 2, 17):
                opt.step()
                sched.step(epoch)
                results.append(sched.get_last_lr())
    half = len(results) // 2
    assert results[half:] == results[:half]


@pytest.mark.parametrize("mode,threshold_mode", [("min", "rel"), ("max", "abs")])
def test_reduce_lr_on_plateau(mode, threshold_mode):
    metrics = [5, 4, 4, 4, 4.1, 3.9, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1]
    if mode == "max":
        metrics = [-m for m in metrics]
    seqs, dicts = [], []
    for lib, opt in zip((torch, vkt), optimizers()):
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode=mode, factor=0.5, patience=2, cooldown=1,
                                                         threshold_mode=threshold_mode, min_lr=[0.0, 0.07])
        seq = []
        for m in metrics:
            opt.step()
            sched.step(m)
            seq.append((list(sched.get_last_lr()), sched.num_bad_epochs, sched.cooldown_counter))
        seqs.append(seq)
        dicts.append(sorted(sched.state_dict()))
    assert seqs[1] == seqs[0]
    assert dicts[1] == dicts[0]


def test_get_last_lr_before_step_and_warnings():
    opt = optimizers()[1]
    sched = vkt.optim.lr_scheduler.StepLR(opt, step_size=2)
    assert sched.get_last_lr() == [0.1, 0.5]
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


ERRORS = [
    lambda s, opt: s.StepLR(object(), step_size=1),
    lambda s, opt: s.LinearLR(opt, start_factor=0),
    lambda s, opt: s.LinearLR(opt, end_factor=1.5),
    lambda s, opt: s.LambdaLR(opt, lr_lambda=[lambda e: 1.0]),
    lambda s, opt: s.OneCycleLR(opt, max_lr=1.0),
    lambda s, opt: s.OneCycleLR(opt, max_lr=1.0, total_steps=0),
    lambda s, opt: s.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="exp"),
    lambda s, opt: s.OneCycleLR(opt, max_lr=[1.0], total_steps=10),
    lambda s, opt: s.ReduceLROnPlateau(opt, factor=1.0),
    lambda s, opt: s.ReduceLROnPlateau(opt, mode="up"),
    lambda s, opt: s.SequentialLR(opt, [s.StepLR(opt, 2)], milestones=[3]),
    lambda s, opt: s.SequentialLR(opt, [], milestones=[]),
    lambda s, opt: s.StepLR(opt, step_size=1, last_epoch=3),
    lambda s, opt: s.ConstantLR(opt, factor=2.0),
    lambda s, opt: s.MultiplicativeLR(opt, lr_lambda=0.5),
    lambda s, opt: s.CosineAnnealingWarmRestarts(opt, T_0=0),
    lambda s, opt: s.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0),
    lambda s, opt: s.CosineAnnealingWarmRestarts(opt, T_0=2).step(-1),
    lambda s, opt: s.ChainedScheduler([]),
    lambda s, opt: s.ChainedScheduler([s.ReduceLROnPlateau(opt)]),
]


@pytest.mark.parametrize("make_error", ERRORS, ids=[f"error{i}" for i in range(len(ERRORS))])
def test_errors(make_error):
    outcome = []
    for lib, opt in zip((torch, vkt), optimizers()):
        with pytest.raises(Exception) as info:
            make_error(lib.optim.lr_scheduler, opt)
        outcome.append((type(info.value), str(info.value)))
    assert outcome[1] == outcome[0]


def test_one_cycle_too_many_steps():
    opt = optimizers()[1]
    sched = vkt.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        sched.step()
