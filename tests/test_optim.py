"""tapegrad.optim: optimizer updates (against PyTorch when installed, by hand otherwise), param
groups, state dicts, errors, and the learning-rate schedulers."""
from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core, optim
from tapegrad.optim import lr_scheduler

SHAPES = [(), (37,), (3, 5)]      # 37: not a multiple of any SIMD width, so kernels' tails count
STEPS = 6


def _data(dtype, seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    return params, grads


def _tg_params(arrays):
    return [tg.tensor(a.copy(), requires_grad=True) for a in arrays]


def _tg_run(cls, kwargs, params, grads, steps=None):
    ps = _tg_params(params)
    opt = cls(ps, **kwargs)
    history = []
    for step_grads in grads[:steps]:
        for p, g in zip(ps, step_grads):
            p.grad = _core.wrap_array(g.copy())
        opt.step()
        history.append([p._array.copy() for p in ps])
    return history, opt, ps


def _torch_run(torch, name, kwargs, params, grads):
    ps = [torch.tensor(a.copy(), requires_grad=True) for a in params]
    opt = getattr(torch.optim, name)(ps, foreach=False, **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(ps, step_grads):
            p.grad = torch.from_numpy(g.copy())
        opt.step()
        history.append([p.detach().numpy().copy() for p in ps])
    return history


CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True, weight_decay=0.05)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict()),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True, maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, maximize=True, weight_decay=0.02)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.1, eps=1e-6, maximize=True)),
]


def _ids(configs):
    return [f"{name}-" + ",".join(f"{k}={v}" for k, v in kw.items()) for name, kw in configs]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=_ids(CONFIGS))
def test_updates_match_torch(torch, name, kwargs, dtype):
    params, grads = _data(dtype)
    ours, _, _ = _tg_run(getattr(optim, name), kwargs, params, grads)
    theirs = _torch_run(torch, name, kwargs, params, grads)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7 if dtype == np.float32 else 1e-12,
                                       err_msg=f"step {step}")


SQRT_FREE = [c for c in CONFIGS if c[0] == "SGD"]


@pytest.mark.parametrize("name,kwargs", SQRT_FREE, ids=_ids(SQRT_FREE))
def test_sgd_float32_bit_for_bit(torch, name, kwargs):
    # No square root is involved (PyTorch's MKL sqrt is not always correctly rounded), so every
    # float32 result is identical, fused multiply-adds included.
    params, grads = _data(np.float32, seed=3)
    ours, _, _ = _tg_run(getattr(optim, name), kwargs, params, grads)
    theirs = _torch_run(torch, name, kwargs, params, grads)
    for a, b in zip(ours, theirs):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=_ids(CONFIGS))
def test_float32_bit_for_bit_given_torchs_sqrt(torch, monkeypatch, name, kwargs):
    # PyTorch's CPU sqrt (MKL) is not always correctly rounded; numpy's is.  With PyTorch's sqrt
    # swapped in, every other operation agrees bit for bit, fused multiply-adds included.
    from tapegrad.optim import adagrad, adam, rmsprop

    def torch_sqrt(a, out=None):
        r = torch.from_numpy(np.array(a, order="C")).sqrt().numpy()
        if out is None:
            return r.copy()
        np.copyto(out, r)
        return out

    for mod in (adagrad, adam, rmsprop):
        monkeypatch.setattr(mod, "sqrt", torch_sqrt)
    params, grads = _data(np.float32, seed=5)
    ours, _, _ = _tg_run(getattr(optim, name), kwargs, params, grads)
    theirs = _torch_run(torch, name, kwargs, params, grads)
    for a, b in zip(ours, theirs):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name,kwargs", CONFIGS[::3], ids=_ids(CONFIGS[::3]))
def test_float16_updates_match_torch(torch, name, kwargs):
    # Half precision: tapegrad computes as PyTorch's vectorised CPU loops do (in float32, with
    # fused multiply-adds, add's alpha rounded to half first) and rounds each result to half.
    # PyTorch's scalar loop (short tensors, tails) computes add in half instead, so results can
    # differ by an ulp of half here and there.
    params, grads = _data(np.float16, seed=2)
    ours, _, _ = _tg_run(getattr(optim, name), kwargs, params, grads)
    theirs = _torch_run(torch, name, kwargs, params, grads)
    for x, y in zip(ours[-1], theirs[-1]):
        assert x.dtype == np.float16
        np.testing.assert_allclose(x, y, rtol=5e-3, atol=5e-3)


def test_float32_almost_always_bit_for_bit(torch):
    # Adam on 10,000 float32 values: at most a few percent of one- or two-ulp differences, from
    # PyTorch's vectorised sqrt/div, whose rounding depends on the CPU's SIMD level (123 of 10,000
    # on one AVX-512 machine, fewer elsewhere).
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal(10_000).astype(np.float32)
    grads = [[rng.standard_normal(10_000).astype(np.float32)] for _ in range(3)]
    ours, _, _ = _tg_run(optim.Adam, dict(lr=0.01), [p0], grads)
    theirs = _torch_run(torch, "Adam", dict(lr=0.01), [p0], grads)
    differ = np.count_nonzero(ours[-1][0] != theirs[-1][0])
    assert differ < 300
    # Measured in ulps of the step's operands, not of the result: p - lr * update cancels where
    # p is near lr * update, and a one-ulp difference of the operands is many ulps of a tiny result.
    scale = np.spacing(np.maximum(np.abs(p0), np.abs(theirs[-1][0])))
    assert np.all(np.abs(ours[-1][0] - theirs[-1][0]) <= 2 * scale)


# -- hand-computed values (run without PyTorch) -------------------------------------------------

def _one(cls, p, grads, **kw):
    t = tg.tensor(p, dtype=tg.float64, requires_grad=True)
    opt = cls([t], **kw)
    out = []
    for g in grads:
        t.grad = tg.tensor(g, dtype=tg.float64)
        opt.step()
        out.append(t._array.copy())
    return out


def test_sgd_by_hand():
    assert _one(optim.SGD, [1.0, -2.0], [[0.5, 1.0]], lr=0.1)[0].tolist() == [0.95, -2.1]
    # momentum: buf1 = g1; buf2 = m*buf1 + (1-d)*g2
    out = _one(optim.SGD, [1.0], [[1.0], [2.0]], lr=0.1, momentum=0.9, dampening=0.5)
    np.testing.assert_allclose(out[0], [0.9])
    np.testing.assert_allclose(out[1], [0.9 - 0.1 * (0.9 * 1.0 + 0.5 * 2.0)])
    # nesterov + weight decay: g = g + wd*p; buf = g; step with g + m*buf
    out = _one(optim.SGD, [2.0], [[1.0]], lr=0.1, momentum=0.5, nesterov=True, weight_decay=0.25)
    g = 1.0 + 0.25 * 2.0
    np.testing.assert_allclose(out[0], [2.0 - 0.1 * (g + 0.5 * g)])
    # maximize ascends
    assert _one(optim.SGD, [1.0], [[1.0]], lr=0.5, maximize=True)[0].tolist() == [1.5]


def test_adam_by_hand():
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
    g1, g2 = 0.5, -1.5
    out = _one(optim.Adam, [1.0], [[g1], [g2]], lr=lr)
    p1 = 1.0 - lr * g1 / (abs(g1) + eps)          # the first step moves by lr
    np.testing.assert_allclose(out[0], [p1], rtol=1e-12)
    m = b1 * (1 - b1) * g1 + (1 - b1) * g2
    v = b2 * (1 - b2) * g1 ** 2 + (1 - b2) * g2 ** 2
    p2 = p1 - lr / (1 - b1 ** 2) * m / (math.sqrt(v) / math.sqrt(1 - b2 ** 2) + eps)
    np.testing.assert_allclose(out[1], [p2], rtol=1e-12)
    # AdamW decays the weights directly before the Adam step
    out = _one(optim.AdamW, [2.0], [[g1]], lr=lr, weight_decay=0.5)
    np.testing.assert_allclose(out[0], [2.0 * (1 - lr * 0.5) - lr * g1 / (abs(g1) + eps)])


def test_rmsprop_and_adagrad_by_hand():
    out = _one(optim.RMSprop, [1.0], [[2.0]], lr=0.01, alpha=0.9)
    np.testing.assert_allclose(out[0], [1.0 - 0.01 * 2.0 / (math.sqrt(0.1 * 4.0) + 1e-8)])
    # centered: v - mean(g)^2 = 0.1*4 - (0.1*2)^2
    out = _one(optim.RMSprop, [1.0], [[2.0]], lr=0.01, alpha=0.9, centered=True)
    np.testing.assert_allclose(out[0], [1.0 - 0.01 * 2.0 / (math.sqrt(0.4 - 0.04) + 1e-8)])
    out = _one(optim.Adagrad, [1.0], [[2.0], [1.0]], lr=0.1, lr_decay=0.5,
               initial_accumulator_value=1.0)
    p1 = 1.0 - 0.1 * 2.0 / (math.sqrt(5.0) + 1e-10)
    np.testing.assert_allclose(out[0], [p1])
    np.testing.assert_allclose(out[1], [p1 - 0.1 / 1.5 * 1.0 / (math.sqrt(6.0) + 1e-10)])


def test_float32_updates_stay_float32():
    t = tg.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.Adam([t], lr=np.float64(0.1))        # even with numpy float64 hyperparameters
    t.grad = tg.tensor([1.0, 1.0])
    before = t._array
    opt.step()
    assert t._array is before and t._array.dtype == np.float32      # updated in place
    assert opt.state[t]["exp_avg"].dtype == tg.float32
    assert opt.state[t]["step"].dtype == tg.float32 and opt.state[t]["step"].item() == 1.0


# -- param groups, skipping, zero_grad ------------------------------------------------------------

def test_params_without_grad_are_skipped():
    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([2.0], requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = tg.tensor([1.0])
    opt.step()
    assert b.tolist() == [2.0] and b not in opt.state and a in opt.state
    assert a.tolist() != [1.0]


def test_param_groups_with_own_options():
    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([1.0], requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.0)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["params"][0] is b
    a.grad = tg.tensor([1.0])
    b.grad = tg.tensor([1.0])
    opt.step()
    assert a.tolist() == pytest.approx([0.9]) and b.tolist() == [0.5]
    c = tg.tensor([1.0], requires_grad=True)
    opt.add_param_group({"params": [c], "momentum": 0.9})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.9
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_generator_of_params_and_named_params():
    ps = [tg.tensor([1.0], requires_grad=True) for _ in range(3)]
    opt = optim.SGD((p for p in ps), lr=0.1)
    assert len(opt.param_groups[0]["params"]) == 3
    opt = optim.SGD([("w", ps[0]), ("b", ps[1])], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w", "b"]


def test_zero_grad():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    (a * a).sum().backward()
    grad_array = a.grad._array
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and a.grad.tolist() == [0.0, 0.0] and a.grad._array is grad_array
    (a * a).sum().backward()
    assert a.grad.tolist() == [2.0, 4.0]
    opt.zero_grad()
    assert a.grad is None


def test_closure_runs_with_grad_enabled():
    a = tg.tensor([3.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    with tg.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0 and a.tolist() == pytest.approx([2.4])


def test_repr_matches_torch_layout():
    a = tg.tensor([1.0], requires_grad=True)
    assert repr(optim.SGD([a], lr=0.1)) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n"
        "    foreach: None\n    fused: None\n    lr: 0.1\n    maximize: False\n    momentum: 0\n"
        "    nesterov: False\n    weight_decay: 0\n)")


# -- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("make,exc,msg", [
    (lambda p: optim.SGD(p, lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
    (lambda p: optim.SGD(p, momentum=-0.5), ValueError, "Invalid momentum value: -0.5"),
    (lambda p: optim.SGD(p, weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    (lambda p: optim.SGD(p, nesterov=True), ValueError,
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.SGD(p, momentum=0.9, dampening=0.1, nesterov=True), ValueError,
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam(p, lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
    (lambda p: optim.Adam(p, eps=-1.0), ValueError, "Invalid epsilon value: -1.0"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.999)), ValueError,
     "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.AdamW(p, betas=(0.9, -0.1)), ValueError,
     "Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.Adam(p, betas=(0, 0.9)), ValueError,
     "betas must be either both floats or both Tensors"),
    (lambda p: optim.RMSprop(p, alpha=-0.1), ValueError, "Invalid alpha value: -0.1"),
    (lambda p: optim.Adagrad(p, lr_decay=-0.1), ValueError, "Invalid lr_decay value: -0.1"),
    (lambda p: optim.Adagrad(p, initial_accumulator_value=-1.0), ValueError,
     "Invalid initial_accumulator_value value: -1.0"),
])
def test_invalid_hyperparameters(make, exc, msg):
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)")):
        make([tg.tensor([1.0], requires_grad=True)])


def test_invalid_params():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(tg.tensor([1.0], requires_grad=True), lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([1.0], lr=0.1)
    x = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([x * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {x}}], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([x, x], lr=0.1)


# -- state dicts ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
])
def test_state_dict_round_trip_continues_identically(name, kwargs):
    cls = getattr(optim, name)
    params, grads = _data(np.float32, seed=7)
    _, opt_a, ps_a = _tg_run(cls, kwargs, params, grads, steps=3)
    sd = opt_a.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert sd["param_groups"][0]["params"] == [0, 1, 2]
    assert set(sd["state"]) == {0, 1, 2}

    ps_b = [tg.tensor(p._array.copy(), requires_grad=True) for p in ps_a]
    opt_b = cls(ps_b, lr=123.0)          # hyperparameters come from the state dict
    # a deep copy: as in PyTorch, a loaded state shares the dict's tensors
    # (test_leaf_grad_create_graph_and_sparse_assign.py), and both optimizers step on below
    opt_b.load_state_dict(copy.deepcopy(sd))
    assert opt_b.param_groups[0]["lr"] == kwargs["lr"]
    assert opt_b.param_groups[0]["params"][0] is ps_b[0]
    for key, value in opt_b.state[ps_b[1]].items():       # copies, not the same buffers
        assert value._array is not opt_a.state[ps_a[1]][key]._array
    for step_grads in grads[3:]:
        for pa, pb, g in zip(ps_a, ps_b, step_grads):
            pa.grad = _core.wrap_array(g.copy())
            pb.grad = _core.wrap_array(g.copy())
        opt_a.step()
        opt_b.step()
        for pa, pb in zip(ps_a, ps_b):
            np.testing.assert_array_equal(pa._array, pb._array)


def test_state_dict_layout_matches_torch(torch):
    params, grads = _data(np.float32)
    _, ours, _ = _tg_run(optim.Adam, dict(lr=0.01), params, grads, steps=2)
    ps = [torch.tensor(a, requires_grad=True) for a in params]
    theirs = torch.optim.Adam(ps, lr=0.01)
    for step_grads in grads[:2]:
        for p, g in zip(ps, step_grads):
            p.grad = torch.from_numpy(g.copy())
        theirs.step()
    a, b = ours.state_dict(), theirs.state_dict()
    assert a["param_groups"] == b["param_groups"]
    assert list(a["state"]) == list(b["state"])
    for k in a["state"]:
        assert list(a["state"][k]) == list(b["state"][k])
        for key in a["state"][k]:
            np.testing.assert_allclose(a["state"][k][key].numpy(), b["state"][k][key].numpy(),
                                       rtol=1e-6)


def test_load_state_dict_errors():
    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([1.0], requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)


def test_load_state_dict_casts_to_param_dtype_and_accepts_number_steps():
    p32 = tg.tensor([1.0, 2.0], requires_grad=True)
    p64 = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    opt = optim.Adam([p64], lr=0.1)
    p64.grad = tg.tensor([1.0, 1.0], dtype=tg.float64)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["step"] = 1          # an old-style checkpoint with a plain-number step
    opt32 = optim.Adam([p32], lr=0.1)
    opt32.load_state_dict(sd)
    state = opt32.state[p32]
    assert state["exp_avg"].dtype == tg.float32 and state["step"].dtype == tg.float32
    p32.grad = tg.tensor([1.0, 1.0])
    opt32.step()
    assert state["step"].item() == 2.0


# -- learning-rate schedulers ---------------------------------------------------------------------

SCHEDULERS = [
    ("StepLR", dict(step_size=4, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[3, 7, 7, 20], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=10)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.01)),
    ("LambdaLR", dict(lr_lambda=lambda e: 1.0 / (1 + e))),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.95)),
    ("LinearLR", dict(start_factor=0.25, total_iters=8)),
    ("ConstantLR", dict(factor=0.5, total_iters=4)),
    ("PolynomialLR", dict(total_iters=12, power=2.0)),
]


def _lr_sequence(mod, opt, name, kwargs, n=30):
    sched = getattr(mod.optim.lr_scheduler, name)(opt, **kwargs)
    seq = [sched.get_last_lr()]
    for _ in range(n):
        opt.step()
        sched.step()
        seq.append(sched.get_last_lr())
        assert seq[-1] == [g["lr"] for g in opt.param_groups]
    return seq


@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=[s[0] + str(i) for i, s in
                                                           enumerate(SCHEDULERS)])
def test_scheduler_sequences_match_torch(torch, name, kwargs):
    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([1.0], requires_grad=True)
    ours = _lr_sequence(tg, optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.03}], lr=0.1),
                        name, kwargs)
    ta = torch.tensor([1.0], requires_grad=True)
    tb = torch.tensor([1.0], requires_grad=True)
    theirs = _lr_sequence(torch, torch.optim.SGD([{"params": [ta]}, {"params": [tb], "lr": 0.03}],
                                                 lr=0.1), name, kwargs)
    assert ours == theirs          # exactly: same recursions, same float operations


def test_lambda_lr_per_group_and_closed_forms(torch):
    def run(mod, make):
        p = mod.tensor([1.0], requires_grad=True)
        q = mod.tensor([1.0], requires_grad=True)
        opt = mod.optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1)
        sched = make(mod, opt)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in [1, 2, 5, 3, 9]:
                opt.step()
                sched.step(epoch)
                out.append(sched.get_last_lr())
        return out

    makers = [
        lambda m, o: m.optim.lr_scheduler.LambdaLR(o, [lambda e: 0.5 ** e, lambda e: e + 1]),
        lambda m, o: m.optim.lr_scheduler.StepLR(o, 2, 0.5),
        lambda m, o: m.optim.lr_scheduler.MultiStepLR(o, [2, 4], 0.1),
        lambda m, o: m.optim.lr_scheduler.ExponentialLR(o, 0.5),
        lambda m, o: m.optim.lr_scheduler.CosineAnnealingLR(o, 6),
    ]
    for make in makers:
        assert run(tg, make) == run(torch, make)


def test_reduce_lr_on_plateau_matches_torch(torch):
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.9, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.7]

    def run(mod):
        p = mod.tensor([1.0], requires_grad=True)
        opt = mod.optim.SGD([p], lr=0.1)
        sched = mod.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=2, cooldown=1,
                                                         factor=0.5, min_lr=0.02)
        out = []
        for m in metrics:
            sched.step(m)
            out.append(opt.param_groups[0]["lr"])
        return out

    assert run(tg) == run(torch)


def test_schedulers_by_hand():
    def seq(name, n=8, **kw):
        a = tg.tensor([1.0], requires_grad=True)
        return [lr[0] for lr in _lr_sequence(tg, optim.SGD([a], lr=1.0), name, kw, n)]

    assert seq("StepLR", step_size=3, gamma=0.5) == [1, 1, 1, .5, .5, .5, .25, .25, .25]
    assert seq("MultiStepLR", milestones=[2, 5], gamma=0.1) == pytest.approx(
        [1, 1, .1, .1, .1, .01, .01, .01, .01])
    assert seq("ExponentialLR", gamma=0.5) == pytest.approx([0.5 ** i for i in range(9)])
    assert seq("CosineAnnealingLR", T_max=8, eta_min=0.1) == pytest.approx(
        [0.1 + 0.9 * (1 + math.cos(math.pi * i / 8)) / 2 for i in range(9)])
    assert seq("LambdaLR", lr_lambda=lambda e: e * e) == [float(i * i) for i in range(9)]


def test_scheduler_state_dict_round_trip():
    a = tg.tensor([1.0], requires_grad=True)
    opt = optim.SGD([a], lr=1.0)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        opt.step()
        sched.step()
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4

    b = tg.tensor([1.0], requires_grad=True)
    opt2 = optim.SGD([b], lr=1.0)
    sched2 = lr_scheduler.CosineAnnealingLR(opt2, T_max=3)
    sched2.load_state_dict(sd)
    opt2.load_state_dict(opt.state_dict())
    for _ in range(5):
        opt.step()
        sched.step()
        opt2.step()
        sched2.step()
        assert sched.get_last_lr() == sched2.get_last_lr()

    lam = lr_scheduler.LambdaLR(opt, lambda e: 1.0)
    assert lam.state_dict()["lr_lambdas"] == [None]


def test_scheduler_warnings_and_errors():
    a = tg.tensor([1.0], requires_grad=True)
    opt = optim.SGD([a], lr=1.0)
    sched = lr_scheduler.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), 2)
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(optim.SGD([tg.tensor([1.0], requires_grad=True)]), 2, last_epoch=3)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1, lambda e: 2])


# -- a whole training loop ------------------------------------------------------------------------

def _train(mod, x_np, y_np, w0, opt_name, opt_kwargs):
    from_np = (lambda a: mod.from_numpy(a.copy()))
    if mod is tg:
        from tapegrad.utils.data import DataLoader, TensorDataset
    else:
        from torch.utils.data import DataLoader, TensorDataset
    w = from_np(w0).requires_grad_()
    b = mod.zeros(1, requires_grad=True)
    opt = getattr(mod.optim, opt_name)([w, b], **opt_kwargs)
    sched = mod.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    loader = DataLoader(TensorDataset(from_np(x_np), from_np(y_np)), batch_size=16)
    losses = []
    for _ in range(4):
        for xb, yb in loader:
            opt.zero_grad()
            loss = (((xb * w).sum(dim=1) + b - yb) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()
    return losses, w.detach().numpy().copy()


@pytest.mark.parametrize("opt_name,opt_kwargs", [("SGD", dict(lr=0.05, momentum=0.9)),
                                                 ("Adam", dict(lr=0.05)),
                                                 ("RMSprop", dict(lr=0.01, centered=True))])
def test_training_loop_matches_torch(torch, opt_name, opt_kwargs):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.1).astype(np.float32)
    w0 = rng.standard_normal(4).astype(np.float32)
    ours = _train(tg, x, y, w0, opt_name, opt_kwargs)
    theirs = _train(torch, x, y, w0, opt_name, opt_kwargs)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)
    assert ours[0][-1] < ours[0][0]
