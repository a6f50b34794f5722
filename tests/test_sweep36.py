"""sweep36: PyTorch's hand-written lr-scheduler and swa_utils tests (test/optim/test_lrscheduler.py,
test/optim/test_swa_utils.py), cases found differing from torch, each compared with torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _lr(v):
    return float(v)


# -- SWALR: a tensor swa_lr is copied into the param groups, never aliased (SILENT) ---------------

def _swalr_tensor_swa_lr_run(lib):
    lr = lib.as_tensor(0.1)
    swa_lr = lib.as_tensor(0.05)
    opt = lib.optim.SGD([lib.nn.Parameter(lib.tensor([0.3]))], lr=lr)
    sched = lib.optim.swa_utils.SWALR(opt, swa_lr=swa_lr, anneal_epochs=4)
    seen = []
    for _ in range(3):
        swa_lr.mul_(0.5)        # the caller's tensor changes; the schedule's target must not
        opt.step()
        sched.step()
        g = opt.param_groups[0]
        seen.append((_lr(g["lr"]), _lr(g["swa_lr"])))
    return seen, opt.param_groups[0]["swa_lr"] is swa_lr


def test_swalr_tensor_swa_lr_not_aliased():
    got, aliased = _swalr_tensor_swa_lr_run(tg)
    want, want_aliased = _swalr_tensor_swa_lr_run(torch)
    assert aliased == want_aliased is False
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_swalr_per_group_tensor_swa_lrs_not_aliased():
    for lib in (tg, torch):
        a, b = lib.as_tensor(0.01), lib.as_tensor(0.02)
        opt = lib.optim.SGD([{"params": [lib.nn.Parameter(lib.zeros(1))]},
                             {"params": [lib.nn.Parameter(lib.zeros(1))]}], lr=0.1)
        lib.optim.swa_utils.SWALR(opt, swa_lr=[a, b])
        assert opt.param_groups[0]["swa_lr"] is not a
        assert opt.param_groups[1]["swa_lr"] is not b
        a.fill_(7.0)
        assert float(opt.param_groups[0]["swa_lr"]) == pytest.approx(0.01)


# -- SWALR.get_lr() outside step() warns, like every other scheduler -------------------------------

def test_swalr_get_lr_outside_step_warns():
    for lib in (tg, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], lr=0.1)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.01)
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            sched.get_lr()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            opt.step()
            sched.step()            # inside step(): no warning


# -- EMA averaging functions reject a decay outside [0, 1] ----------------------------------------

@pytest.mark.parametrize("name", ["get_ema_avg_fn", "get_ema_multi_avg_fn"])
@pytest.mark.parametrize("decay", [-0.1, 1.5])
def test_ema_fns_reject_bad_decay(name, decay):
    with pytest.raises(ValueError, match="Invalid decay value"):
        getattr(torch.optim.swa_utils, name)(decay)
    with pytest.raises(ValueError, match="Invalid decay value"):
        getattr(tg.optim.swa_utils, name)(decay)



# -- SGD(differentiable=True): the step is recorded, gradients flow through it ---------------------
# (PyTorch's test/optim/test_optim.py TestDifferentiableOptimizer; tapegrad refused the flag)

_P = np.array([0.3, -1.2, 0.8, 2.0, -0.1])
_G = np.array([0.5, 0.25, -1.5, 0.75, 1.0])
_M = np.array([0.1, -0.2, 0.3, 0.0, 0.6])


def _sgd_one_step(lib, kw):
    def f(p, grad, mbuf):
        p = p.clone()           # differentiable steps update a non-leaf in place
        p.grad = grad
        opt = lib.optim.SGD([p], differentiable=True, **kw)
        if kw.get("momentum"):
            opt.state[p]["momentum_buffer"] = mbuf.clone()
        opt.step()
        outs = [p]
        if kw.get("momentum"):
            outs.append(opt.state[p]["momentum_buffer"])
        return tuple(outs)
    return f


@pytest.mark.parametrize("kw", [
    dict(lr=0.9),
    dict(lr=0.5, momentum=0.9),
    dict(lr=0.5, momentum=0.9, nesterov=True, weight_decay=0.1),
    dict(lr=0.3, momentum=0.8, dampening=0.3, maximize=True, weight_decay=0.2),
])
def test_sgd_differentiable_step_gradients(kw):
    def run(lib):
        ins = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (_P, _G, _M)]
        outs = _sgd_one_step(lib, kw)(*ins)
        w = lib.tensor([1.0, -2.0, 3.0, 0.5, 1.5], dtype=lib.float64)
        loss = sum((o * w).sum() * (i + 1) for i, o in enumerate(outs))
        grads = lib.autograd.grad(loss, ins, allow_unused=True)
        return ([o.detach().numpy() for o in outs], [None if g is None else g.numpy() for g in grads],
                [type(o.grad_fn).__name__ for o in outs])
    got, want = run(tg), run(torch)
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    for g, w in zip(got[1], want[1]):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-12)
    assert got[2] == want[2]
    ins = tuple(tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in (_P, _G, _M))
    assert tg.autograd.gradcheck(_sgd_one_step(tg, kw), ins)


def _sgd_meta_grads(lib, hyper):
    """Two recorded SGD steps, then the last loss's gradient towards tensor hyper-parameters
    (PyTorch's _multistep_backprop_diff_hyperparams_fn pattern)."""
    params = lib.tensor(_P, dtype=lib.float64, requires_grad=True).clone()
    params.grad = lib.tensor(_G, dtype=lib.float64, requires_grad=True)
    hyp = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True).clone() for k, v in hyper.items()}
    kw = {"lr": 0.01}
    kw.update(hyp)
    opt = lib.optim.SGD([params], differentiable=True, **kw)
    x = lib.tensor([1.0], dtype=lib.float64)
    y = lib.tensor([2.0], dtype=lib.float64)
    for _ in range(2):
        loss = lib.nn.functional.mse_loss(x * lib.sum(params), y)
        loss.backward(inputs=(params,), create_graph=True)
        opt.step()
        opt.zero_grad()
    loss.backward(inputs=tuple(hyp.values()))
    return float(loss), [h.grad.item() for h in hyp.values()], params.detach().numpy()


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("hyper", [{"lr": 0.001}, {"weight_decay": 0.9},
                                   {"weight_decay": 0.9, "lr": 0.001}])
def test_sgd_differentiable_tensor_hyperparameters(hyper):
    got, want = _sgd_meta_grads(tg, hyper), _sgd_meta_grads(torch, hyper)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)


def test_sgd_differentiable_lr_gradcheck():
    def f(lr):
        p = tg.tensor(_P, dtype=tg.float64, requires_grad=True).clone()
        p.grad = tg.tensor(_G, dtype=tg.float64)
        opt = tg.optim.SGD([p], lr=lr, weight_decay=0.1, differentiable=True)
        opt.step()
        p.grad = tg.tensor(_M, dtype=tg.float64)
        opt.step()
        return p
    assert tg.autograd.gradcheck(f, (tg.tensor(0.3, dtype=tg.float64, requires_grad=True),))


def test_sgd_differentiable_errors():
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=0.1, fused=True,
                          differentiable=True)
        leaf = lib.tensor([1.0, 2.0], requires_grad=True)
        leaf.grad = lib.tensor([1.0, 1.0])
        opt = lib.optim.SGD([leaf], lr=0.1, differentiable=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation"):
            opt.step()


# -- Adam / AdamW(differentiable=True) -------------------------------------------------------------

_A, _B, _C = (np.array([0.2, 0.7, -0.4, 0.1, 0.9]), np.array([0.3, 0.05, 0.6, 0.2, 0.4]),
              np.array([0.5, 0.3, 0.9, 0.25, 0.6]))


def _adam_one_step(lib, cls, kw):
    def f(p, grad, exp_avg, exp_avg_sq, max_sq):
        p = p.clone()
        p.grad = grad
        opt = getattr(lib.optim, cls)([p], differentiable=True, **kw)
        state = opt.state[p]
        state["step"] = lib.tensor(10.0, dtype=lib.float64)
        state["exp_avg"] = exp_avg.clone()
        state["exp_avg_sq"] = exp_avg_sq.clone()
        state["max_exp_avg_sq"] = max_sq.clone()
        opt.step()
        return (p,) + tuple(v for v in state.values() if v.requires_grad)
    return f


@pytest.mark.parametrize("cls,kw", [
    ("Adam", dict(lr=0.9, amsgrad=True)),
    ("Adam", dict(lr=0.5, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.9, amsgrad=True)),
    ("AdamW", dict(lr=0.5, weight_decay=0.3)),
])
def test_adam_differentiable_step_gradients(cls, kw):
    def run(lib):
        ins = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (_P, _G, _A, _B, _C)]
        outs = _adam_one_step(lib, cls, kw)(*ins)
        w = lib.tensor([1.0, -2.0, 3.0, 0.5, 1.5], dtype=lib.float64)
        loss = sum((o * w).sum() * (i + 1) for i, o in enumerate(outs))
        grads = lib.autograd.grad(loss, ins, allow_unused=True)
        return ([o.detach().numpy() for o in outs], [None if g is None else g.numpy() for g in grads],
                [type(o.grad_fn).__name__ for o in outs])
    got, want = run(tg), run(torch)
    assert len(got[0]) == len(want[0])
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    for g, w in zip(got[1], want[1]):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-10)
    assert got[2] == want[2]
    ins = tuple(tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in (_P, _G, _A, _B, _C))
    assert tg.autograd.gradcheck(_adam_one_step(tg, cls, kw), ins)


def _adam_meta_grads(lib, cls, hyper):
    params = lib.tensor(_P, dtype=lib.float64, requires_grad=True).clone()
    params.grad = lib.tensor(_G, dtype=lib.float64, requires_grad=True)
    hyp = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True).clone() for k, v in hyper.items()}
    kw = {k: v for k, v in hyp.items() if not k.startswith("beta")}
    if "beta1" in hyp:
        kw["betas"] = (hyp["beta1"], hyp["beta2"])
    opt = getattr(lib.optim, cls)([params], differentiable=True, **kw)
    x = lib.tensor([1.0], dtype=lib.float64)
    y = lib.tensor([2.0], dtype=lib.float64)
    for _ in range(2):
        loss = lib.nn.functional.mse_loss(x * lib.sum(params), y)
        loss.backward(inputs=(params,), create_graph=True)
        opt.step()
        opt.zero_grad()
    loss.backward(inputs=tuple(hyp.values()))
    return float(loss), [h.grad.item() for h in hyp.values()], params.detach().numpy()


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("hyper", [{"lr": 0.001}, {"weight_decay": 0.999},
                                   {"beta1": 0.9, "beta2": 0.999},
                                   {"lr": 0.001, "weight_decay": 0.999, "beta1": 0.9,
                                    "beta2": 0.999}])
def test_adam_differentiable_tensor_hyperparameters(cls, hyper):
    got, want = _adam_meta_grads(tg, cls, hyper), _adam_meta_grads(torch, cls, hyper)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)


def test_adam_differentiable_default_state_float32():
    """Lazily made state (float32 step and moments), three steps, gradient to the start point."""
    def run(lib):
        rng = np.random.RandomState(0)
        w0 = lib.tensor(rng.randn(4).astype(np.float32), requires_grad=True)
        p = w0 * 1.0
        opt = lib.optim.AdamW([p], lr=0.1, amsgrad=True, differentiable=True)
        for _ in range(3):
            p.grad = lib.tensor(rng.randn(4).astype(np.float32))
            opt.step()
        (g,) = lib.autograd.grad(p.sum(), [w0])
        return p.detach().numpy(), g.numpy(), str(opt.state[p]["step"].dtype)
    got, want = run(tg), run(torch)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4)
    assert got[2] == want[2]


def test_adam_fused_differentiable_refused():
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            lib.optim.Adam([lib.zeros(2, requires_grad=True)], fused=True, differentiable=True)
