"""Adadelta, Adamax, NAdam, RAdam, ASGD and LBFGS: updates against PyTorch (float64 to ~1 ulp,
float32 bit for bit given PyTorch's square root), by hand without it, state dicts, errors."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core, optim

SHAPES = [(), (37,), (3, 5)]
STEPS = 8

CONFIGS = [
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.6), weight_decay=0.1)),       # rectified from step 6
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1, maximize=True)),
]
STATE_KEYS = {"Adadelta": ["step", "square_avg", "acc_delta"],
              "Adamax": ["step", "exp_avg", "exp_inf"],
              "NAdam": ["step", "mu_product", "exp_avg", "exp_avg_sq"],
              "RAdam": ["step", "exp_avg", "exp_avg_sq"],
              "ASGD": ["step", "eta", "mu", "ax"]}


def _ids(configs):
    return [f"{name}-" + ",".join(f"{k}={v}" for k, v in kw.items()) for name, kw in configs]


def _data(dtype, seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    return params, grads


def _tg_run(name, kwargs, params, grads):
    ps = [tg.tensor(a.copy(), requires_grad=True) for a in params]
    opt = getattr(optim, name)(ps, **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(ps, step_grads):
            p.grad = _core.wrap_array(g.copy())
        opt.step()
        history.append([p._array.copy() for p in ps])
    return history, opt


def _torch_run(torch, name, kwargs, params, grads):
    ps = [torch.tensor(a.copy(), requires_grad=True) for a in params]
    opt = getattr(torch.optim, name)(ps, foreach=False, **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(ps, step_grads):
            p.grad = torch.from_numpy(g.copy())
        opt.step()
        history.append([p.detach().numpy().copy() for p in ps])
    return history, opt


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=_ids(CONFIGS))
def test_float64_updates_match_torch(torch, name, kwargs):
    params, grads = _data(np.float64)
    ours, opt = _tg_run(name, kwargs, params, grads)
    theirs, topt = _torch_run(torch, name, kwargs, params, grads)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-14, atol=1e-15, err_msg=f"step {step}")
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert list(sd["param_groups"][0]) == list(tsd["param_groups"][0])
    assert [{k: v for k, v in g.items() if k != "foreach"} for g in sd["param_groups"]] == \
        [{k: v for k, v in g.items() if k != "foreach"} for g in tsd["param_groups"]]
    for i in range(len(SHAPES)):
        assert list(sd["state"][i]) == list(tsd["state"][i]) == STATE_KEYS[name]
        for k, v in tsd["state"][i].items():
            assert sd["state"][i][k].dtype == tg.float32 if v.dtype == torch.float32 else True
            np.testing.assert_allclose(sd["state"][i][k].numpy(), v.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=_ids(CONFIGS))
def test_float32_bit_for_bit_given_torchs_sqrt(torch, monkeypatch, name, kwargs):
    # PyTorch's CPU sqrt (MKL) is not always correctly rounded; numpy's is.  With PyTorch's sqrt
    # swapped in, every other operation agrees bit for bit.
    from tapegrad.optim import adadelta, nadam, radam

    def torch_sqrt(a, out=None):
        r = torch.from_numpy(np.array(a, order="C")).sqrt().numpy()
        if out is None:
            return r.copy()
        np.copyto(out, r)
        return out

    for mod in (adadelta, nadam, radam):
        monkeypatch.setattr(mod, "sqrt", torch_sqrt)
    params, grads = _data(np.float32, seed=5)
    ours, _ = _tg_run(name, kwargs, params, grads)
    theirs, _ = _torch_run(torch, name, kwargs, params, grads)
    for a, b in zip(ours, theirs):
        for x, y in zip(a, b):
            assert x.dtype == np.float32
            np.testing.assert_array_equal(x, y)


# -- by hand (no torch) -------------------------------------------------------------------------
def _one(name, value, grads, **kw):
    p = tg.tensor([value], dtype=tg.float64, requires_grad=True)
    opt = getattr(optim, name)([p], **kw)
    for g in grads:
        p.grad = tg.tensor([g], dtype=tg.float64)
        opt.step()
    return p.item(), opt


def test_adadelta_by_hand():
    # step 1: E[g^2] = 0.1*4; delta = sqrt(0 + eps)/sqrt(0.4 + eps) * 2; p -= lr*delta
    eps = 1e-6
    delta = np.sqrt(eps) / np.sqrt(0.4 + eps) * 2.0
    value, _ = _one("Adadelta", 1.0, [2.0])
    assert value == pytest.approx(1.0 - delta, rel=1e-15)


def test_adamax_by_hand():
    value, opt = _one("Adamax", 1.0, [2.0, -1.0], lr=0.1)
    m1, u1 = 0.1 * 2.0, 2.0 + 1e-8
    p1 = 1.0 - 0.1 / (1 - 0.9) * m1 / u1
    m2, u2 = 0.9 * m1 + 0.1 * -1.0, max(0.999 * u1, 1.0 + 1e-8)
    assert value == pytest.approx(p1 - 0.1 / (1 - 0.81) * m2 / u2, rel=1e-14)
    assert opt.state_dict()["state"][0]["exp_inf"].item() == pytest.approx(u2)


def test_radam_unrectified_first_steps_are_sgd_with_momentum():
    value, _ = _one("RAdam", 1.0, [2.0], lr=0.1)
    assert value == pytest.approx(1.0 - 0.1 * 2.0, rel=1e-15)   # bias-corrected m1 = g


def test_nadam_first_step_by_hand():
    beta1, beta2, psi = 0.9, 0.999, 4e-3
    mu1 = beta1 * (1 - 0.5 * 0.96 ** psi)
    mu2 = beta1 * (1 - 0.5 * 0.96 ** (2 * psi))
    mu_prod = float(np.float32(mu1))                  # kept as a float32 scalar
    g, lr = 2.0, 0.1
    m, v = 0.1 * g, 0.001 * g * g
    denom = np.sqrt(v / (1 - beta2)) + 1e-8
    expected = 1.0 - lr * (1 - mu1) / (1 - mu_prod) * g / denom \
        - lr * mu2 / (1 - mu_prod * mu2) * m / denom
    value, _ = _one("NAdam", 1.0, [g], lr=lr)
    assert value == pytest.approx(expected, rel=1e-14)


def test_asgd_averages_after_t0():
    # eta stays lr (lambd=0); mu = 1/max(1, step - t0): ax follows p until step t0 + 2, then
    # is the running mean of the iterates from there on
    value, opt = _one("ASGD", 1.0, [1.0] * 5, lr=0.1, lambd=0.0, t0=1)
    assert value == pytest.approx(0.5)
    ax = opt.state_dict()["state"][0]["ax"].item()
    assert ax == pytest.approx((0.7 + 0.6 + 0.5) / 3)


def test_invalid_hyperparameters():
    p = [tg.zeros(1, requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid rho value: 1.5"):
        optim.Adadelta(p, rho=1.5)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.Adamax(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid momentum_decay value: -1"):
        optim.NAdam(p, momentum_decay=-1)
    with pytest.raises(ValueError, match="Invalid learning rate: -0.1"):
        optim.RAdam(p, lr=-0.1)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -1"):
        optim.ASGD(p, weight_decay=-1)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": p}, {"params": [tg.zeros(1, requires_grad=True)]}])


@pytest.mark.parametrize("name", sorted(STATE_KEYS))
def test_state_dict_and_pickle_resume_identically(name):
    params, grads = _data(np.float64, seed=2)
    expected, _ = _tg_run(name, {}, params, grads)
    ps = [tg.tensor(a.copy(), requires_grad=True) for a in params]
    opt = getattr(optim, name)(ps)
    for step, step_grads in enumerate(grads):
        if step == 4:
            fresh = getattr(optim, name)(ps)
            fresh.load_state_dict(pickle.loads(pickle.dumps(opt.state_dict())))
            opt = fresh
        for p, g in zip(ps, step_grads):
            p.grad = _core.wrap_array(g.copy())
        opt.step()
    for p, e in zip(ps, expected[-1]):
        if name == "NAdam":
            # loading casts the float32 mu_product to the params' float64, as torch does (torch's
            # own resumed run drifts by the same ~1e-13)
            np.testing.assert_allclose(p._array, e, rtol=1e-11)
        else:
            np.testing.assert_array_equal(p._array, e)


# -- LBFGS --------------------------------------------------------------------------------------
def _lbfgs_problem(lib, dtype, **kw):
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((6, 3)), rng.standard_normal(6)
    x = lib.tensor(rng.standard_normal(3), dtype=dtype, requires_grad=True)
    w = lib.tensor(rng.standard_normal(2), dtype=dtype, requires_grad=True)
    A, b = lib.tensor(A, dtype=dtype), lib.tensor(b, dtype=dtype)
    opt = lib.optim.LBFGS([x, w], **kw)

    def closure():
        opt.zero_grad()
        r = A @ x - b
        loss = (r * r).sum() + ((w - 1.0) ** 4).sum() + (w[0] * x[1]) ** 2
        loss.backward()
        return loss
    return [x, w], opt, closure


LBFGS_CONFIGS = [dict(max_iter=3), dict(lr=0.5, max_iter=4, history_size=2),
                 dict(max_iter=3, line_search_fn="strong_wolfe"),
                 dict(lr=0.7, max_iter=6, history_size=3, line_search_fn="strong_wolfe")]


@pytest.mark.parametrize("kw", LBFGS_CONFIGS, ids=[str(k) for k in LBFGS_CONFIGS])
def test_lbfgs_matches_torch_float64(torch, kw):
    ours, opt, closure = _lbfgs_problem(tg, tg.float64, **kw)
    theirs, topt, tclosure = _lbfgs_problem(torch, torch.float64, **kw)
    for _ in range(4):
        loss, tloss = opt.step(closure), topt.step(tclosure)
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-13, abs=1e-15)
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-12,
                                       atol=1e-14)
    st, tst = opt.state_dict()["state"][0], topt.state_dict()["state"][0]
    assert sorted(st) == sorted(tst)
    assert (st["func_evals"], st["n_iter"]) == (tst["func_evals"], tst["n_iter"])
    assert len(st["old_dirs"]) == len(tst["old_dirs"])
    np.testing.assert_allclose(st["d"].numpy(), tst["d"].numpy(), rtol=1e-10, atol=1e-14)


def test_lbfgs_minimises_a_quadratic_without_torch():
    x = tg.tensor([3.0, -2.0], dtype=tg.float64, requires_grad=True)
    target = tg.tensor([1.0, 0.5], dtype=tg.float64)
    for line_search_fn in (None, "strong_wolfe"):
        with tg.no_grad():
            x.copy_(tg.tensor([3.0, -2.0], dtype=tg.float64))
        opt = optim.LBFGS([x], line_search_fn=line_search_fn)

        def closure():
            opt.zero_grad()
            loss = (((x - target) ** 2) * tg.tensor([1.0, 10.0], dtype=tg.float64)).sum()
            loss.backward()
            return loss
        first = opt.step(closure)
        assert first.item() == pytest.approx(4 + 10 * 6.25)
        opt.step(closure)
        np.testing.assert_allclose(x.detach().numpy(), [1.0, 0.5], atol=1e-6)


def test_lbfgs_pickles_mid_run():
    ps, opt, closure = _lbfgs_problem(tg, tg.float64, max_iter=2)
    opt.step(closure)
    ps2, opt2 = copy.deepcopy((ps, opt))
    ps3, opt3 = pickle.loads(pickle.dumps((ps, opt)))

    def closure_for(params, optimizer):
        rng = np.random.default_rng(0)
        A = tg.tensor(rng.standard_normal((6, 3)), dtype=tg.float64)
        b = tg.tensor(rng.standard_normal(6), dtype=tg.float64)

        def closure():
            optimizer.zero_grad()
            x, w = params
            r = A @ x - b
            loss = (r * r).sum() + ((w - 1.0) ** 4).sum() + (w[0] * x[1]) ** 2
            loss.backward()
            return loss
        return closure
    opt.step(closure)
    opt2.step(closure_for(ps2, opt2))
    opt3.step(closure_for(ps3, opt3))
    for a, b, c in zip(ps, ps2, ps3):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        np.testing.assert_array_equal(a.detach().numpy(), c.detach().numpy())
