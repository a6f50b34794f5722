"""Training-loop workloads: an MLP SGD step and the PyTorch tutorial's polynomial fit.

MLP 784-256-10, batch 64, float32: Linear, ReLU, Linear, CrossEntropyLoss, backward, SGD step
(lr 0.01).  The hand-written numpy step (tapegrad.bench.numpy_mlp_step) is the reference;
tapegrad and torch run the same script (nn.Sequential + nn.CrossEntropyLoss + optim.SGD) from the
same initial weights and data.

Polynomial fit: y = sin(x) on 2,000 points in [-pi, pi], float32; a, b, c, d scalars requiring
grad, y_pred = a + b x + c x^2 + d x^3, loss = (y_pred - y).pow(2).sum(), backward, manual SGD
update under no_grad (lr 1e-6), grads set to None: one iteration per call.  The reference is the
tutorial's numpy version (gradients by hand).

Benchmarks per workload (one group each):

  test_*_numpy_reference   the hand-written numpy iteration
  test_*_tapegrad_record   the forward only (model + loss), graph freed in the untimed teardown
  test_*_tapegrad_sweep    loss.backward() only, of a forward run in the untimed setup
  test_*_tapegrad_total    the whole iteration: (zero_grad,) forward, backward, update
  test_*_torch_total       the same in PyTorch eager (skips without torch)

record + sweep is less than total here: total also zeroes the grads and updates the weights.
The weights drift from round to round (each round is a real training step); the checks run on
fresh copies: one step (MLP) / three iterations (poly) of tapegrad and of torch give the numpy
reference's loss, gradients and updated weights, and the numpy gradients match central finite
differences.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import bench as B

ROUNDS_SCALE = float(os.environ.get("TAPEGRAD_BENCH_ROUNDS_SCALE", "1"))


def _rounds(n: int) -> int:
    return max(1, round(n * ROUNDS_SCALE))


MLP_GROUP = "MLP 784-256-10 SGD step, batch 64, float32"
MLP_ROUNDS = dict(rounds=_rounds(60), warmup_rounds=3)
POLY_GROUP = f"poly fit of sin: one iteration, {B.POLY_POINTS} points, float32"
POLY_ROUNDS = dict(rounds=_rounds(300), warmup_rounds=10)


def describe(benchmark, group: str, workload: str, kind: str, method: str) -> None:
    benchmark.group = group
    benchmark.extra_info.update(kind=kind, workload=workload, dtype="float32", method=method)


# -- reference checks ------------------------------------------------------------------------------

def _fd(f, arrays: dict, coords: int = 3, h: float = 1e-6):
    """Central differences of scalar f(arrays) at a few coordinates of each array."""
    rng = np.random.default_rng(2)
    out = {}
    for k, v in arrays.items():
        for flat in rng.choice(v.size, size=min(coords, v.size), replace=False):
            i = np.unravel_index(flat, v.shape)
            old = v[i]
            v[i] = old + h
            hi = f(arrays)
            v[i] = old - h
            lo = f(arrays)
            v[i] = old
            out[(k, i)] = (hi - lo) / (2 * h)
    return out


def test_mlp_numpy_reference_matches_finite_differences():
    params, x, y = B.mlp_problem()
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    x64 = x.astype(np.float64)
    _, grads = B.numpy_mlp_step({k: v.copy() for k, v in p64.items()}, x64, y, lr=0.0)

    def loss(p):
        return B.numpy_mlp_step({k: v.copy() for k, v in p.items()}, x64, y, lr=0.0)[0]

    for (k, i), fd in _fd(loss, p64).items():
        np.testing.assert_allclose(grads[k][i], fd, rtol=1e-5, atol=1e-8, err_msg=k)


def test_poly_numpy_reference_matches_finite_differences():
    x, y, coeffs = B.poly_problem()
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    c64 = coeffs.astype(np.float64)
    _, grads = B.numpy_poly_iteration(c64.copy(), x64, y64, lr=0.0)
    fd = _fd(lambda a: B.numpy_poly_iteration(a["c"].copy(), x64, y64, lr=0.0)[0],
             {"c": c64}, coords=4)
    for (_, i), want in fd.items():
        np.testing.assert_allclose(grads[i], want, rtol=1e-6)


# -- MLP step -------------------------------------------------------------------------------------

@pytest.fixture
def mlp():
    return B.mlp_problem()


def _tg_mlp(params, x, y):
    model, loss_fn, opt = B.lib_mlp(tg, params)
    return model, loss_fn, opt, tg.from_numpy(x), tg.from_numpy(y)


def test_mlp_numpy_reference(benchmark, mlp):
    """(a) the hand-written numpy step (forward, backward, SGD update in place)."""
    describe(benchmark, MLP_GROUP, "mlp", "numpy", "numpy reference: forward + manual backward "
                                                     "+ SGD update")
    params, x, y = mlp
    state = {k: v.copy() for k, v in params.items()}
    benchmark.pedantic(B.numpy_mlp_step, args=(state, x, y), **MLP_ROUNDS)
    assert all(not np.array_equal(state[k], params[k]) for k in B.MLP_PARAMS)  # it did update


def test_mlp_tapegrad_record(benchmark, mlp):
    """(b) tapegrad forward: model(x) and the loss, recorded."""
    describe(benchmark, MLP_GROUP, "mlp", "record", "tapegrad record only: model + loss")
    params, x, y = mlp
    model, loss_fn, opt, tx, ty = _tg_mlp(params, x, y)
    keep = []

    def record():
        keep.append(loss_fn(model(tx), ty))

    benchmark.pedantic(record, setup=keep.clear, **MLP_ROUNDS)
    loss_ref, _ = B.numpy_mlp_step({k: v.copy() for k, v in params.items()}, x, y)
    np.testing.assert_allclose(keep[-1].item(), loss_ref, rtol=1e-5)
    assert keep[-1].requires_grad and keep[-1].grad_fn is not None
    keep.clear()


def test_mlp_tapegrad_sweep(benchmark, mlp):
    """(c) tapegrad loss.backward() only; zero_grad and the forward run in the untimed setup."""
    describe(benchmark, MLP_GROUP, "mlp", "sweep", "tapegrad sweep only: loss.backward()")
    params, x, y = mlp
    model, loss_fn, opt, tx, ty = _tg_mlp(params, x, y)

    def setup():
        opt.zero_grad()
        return (loss_fn(model(tx), ty),), {}

    benchmark.pedantic(lambda loss: loss.backward(), setup=setup, **MLP_ROUNDS)
    # No step was taken: the weights are the initial ones, so the grads are the reference's.
    _, grads_ref = B.numpy_mlp_step({k: v.copy() for k, v in params.items()}, x, y)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads_ref[name], rtol=1e-5, atol=1e-6)


def test_mlp_tapegrad_total(benchmark, mlp):
    """(d) the whole tapegrad step: zero_grad, forward, backward, optimizer.step()."""
    describe(benchmark, MLP_GROUP, "mlp", "total", "tapegrad total: zero_grad + forward + "
                                                     "backward + SGD step")
    params, x, y = mlp
    model, loss_fn, opt, tx, ty = _tg_mlp(params, x, y)
    benchmark.pedantic(B.lib_mlp_step, args=(model, loss_fn, opt, tx, ty), **MLP_ROUNDS)
    B.check_mlp_step(tg)        # untimed: one step from fresh weights is the numpy step


def test_mlp_torch_total(benchmark, torch, mlp):
    """(e) the same step in PyTorch eager (nn + optim), one thread."""
    describe(benchmark, MLP_GROUP, "mlp", "torch", "torch eager total: zero_grad + forward + "
                                                     "backward + SGD step")
    params, x, y = mlp
    model, loss_fn, opt = B.lib_mlp(torch, params)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    benchmark.pedantic(B.lib_mlp_step, args=(model, loss_fn, opt, tx, ty), **MLP_ROUNDS)
    B.check_mlp_step(torch)


# -- polynomial fit ------------------------------------------------------------------------------

@pytest.fixture
def poly():
    return B.poly_problem()


def _tg_poly(poly):
    x, y, coeffs = poly
    return B.lib_poly_params(tg, coeffs), tg.from_numpy(x), tg.from_numpy(y)


def test_poly_numpy_reference(benchmark, poly):
    """(a) the tutorial's numpy iteration: forward, gradients by hand, update."""
    describe(benchmark, POLY_GROUP, "poly", "numpy", "numpy reference iteration")
    x, y, coeffs = poly
    c = coeffs.copy()
    benchmark.pedantic(B.numpy_poly_iteration, args=(c, x, y), **POLY_ROUNDS)
    assert c.dtype == np.float32 and not np.array_equal(c, coeffs)


def test_poly_tapegrad_record(benchmark, poly):
    """(b) tapegrad forward: y_pred and the loss, recorded."""
    describe(benchmark, POLY_GROUP, "poly", "record", "tapegrad record only: y_pred + loss")
    params, tx, ty = _tg_poly(poly)
    keep = []
    benchmark.pedantic(lambda: keep.append(B.lib_poly_forward(params, tx, ty)),
                       setup=keep.clear, **POLY_ROUNDS)
    x, y, coeffs = poly
    loss_ref, _ = B.numpy_poly_iteration(coeffs.copy(), x, y)
    np.testing.assert_allclose(keep[-1].item(), loss_ref, rtol=1e-5)
    keep.clear()


def test_poly_tapegrad_sweep(benchmark, poly):
    """(c) tapegrad loss.backward() only (grads reset and forward run in the untimed setup)."""
    describe(benchmark, POLY_GROUP, "poly", "sweep", "tapegrad sweep only: loss.backward()")
    params, tx, ty = _tg_poly(poly)

    def setup():
        for p in params:
            p.grad = None
        return (B.lib_poly_forward(params, tx, ty),), {}

    benchmark.pedantic(lambda loss: loss.backward(), setup=setup, **POLY_ROUNDS)
    x, y, coeffs = poly
    _, grads_ref = B.numpy_poly_iteration(coeffs.copy(), x, y)
    np.testing.assert_allclose([p.grad.item() for p in params], grads_ref, rtol=1e-4,
                               atol=1e-3 * np.abs(grads_ref).max())


def test_poly_tapegrad_total(benchmark, poly):
    """(d) a whole tapegrad iteration: forward, backward, update under no_grad, grads to None."""
    describe(benchmark, POLY_GROUP, "poly", "total", "tapegrad total iteration")
    params, tx, ty = _tg_poly(poly)
    benchmark.pedantic(B.lib_poly_iteration, args=(tg, params, tx, ty), **POLY_ROUNDS)
    B.check_poly(tg)


def test_poly_torch_total(benchmark, torch, poly):
    """(e) the same iteration in PyTorch eager."""
    describe(benchmark, POLY_GROUP, "poly", "torch", "torch eager total iteration")
    x, y, coeffs = poly
    params = B.lib_poly_params(torch, coeffs)
    benchmark.pedantic(B.lib_poly_iteration,
                       args=(torch, params, torch.from_numpy(x), torch.from_numpy(y)),
                       **POLY_ROUNDS)
    B.check_poly(torch)


# -- the hand-written Adam step (timed in test_interleaved.py) -------------------------------------

def test_hand_adam_matches_numpy():
    B.check_hand_adam(tg)


def test_hand_adam_torch_matches_numpy(torch):
    B.check_hand_adam(torch)


# -- the evaluation metrics (timed in test_interleaved.py) ----------------------------------------

def test_metrics_match_numpy():
    B.check_metrics(tg)


def test_metrics_torch_matches_numpy(torch):
    B.check_metrics(torch)
