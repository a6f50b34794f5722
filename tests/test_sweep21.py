"""Faults found by replaying PyTorch's OptimizerInfo samples (optim_db) and its LR schedulers
against tapegrad (sweep 21); each case is written out explicitly and checked against torch (no
torch.testing._internal needed)."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _run(lib, cls_name, values, grads, sparse=False, **kwargs):
    """Parameters after len(grads) steps of lib.optim.<cls_name> (kwargs given as numbers or
    ('tensor', value) for a 0-d float32 tensor)."""
    kw = {k: (lib.tensor(v[1]) if isinstance(v, tuple) and v[0] == "tensor" else v)
          for k, v in kwargs.items()}
    params = [lib.nn.Parameter(lib.tensor(v.copy())) for v in values]
    opt = getattr(lib.optim, cls_name)(params, **kw)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            g = lib.tensor(g.copy())
            p.grad = g.to_sparse() if sparse else g
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # torch's sparse-invariant-check notice
            opt.step()
    return [p.detach().numpy().copy() for p in params]


def _stream(shapes, steps, dtype, seed=0):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(steps)]
    return values, grads


# -- sparse gradients with one index per dimension (Tensor.to_sparse() of a matrix) -----------
# SparseAdam and Adagrad indexed the state with the first index row only: a 2-D gradient from
# to_sparse() (sparse_dim 2) raised a numpy broadcasting error; PyTorch updates its elements.

@pytest.mark.parametrize("cls_name, kwargs", [("SparseAdam", {}), ("SparseAdam", {"lr": 0.01}),
                                              ("SparseAdam", {"maximize": True}),
                                              ("Adagrad", {}), ("Adagrad", {"lr_decay": 0.5})])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_grads_with_an_index_per_dimension(cls_name, kwargs, dtype):
    values, grads = _stream([(3, 4), (4,)], 4, dtype)
    for step_grads in grads:
        step_grads[0][1] = 0        # a row without entries: left alone by both
    want = _run(torch, cls_name, values, grads, sparse=True, **kwargs)
    got = _run(tapegrad, cls_name, values, grads, sparse=True, **kwargs)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=0)
    assert np.array_equal(got[0][1], values[0][1])


# -- a Tensor learning rate: PyTorch computes with it as a 0-d float32 tensor ------------------
# (SILENT) tapegrad turned a tensor lr into a Python float, so `1 - lr * weight_decay` and
# `lr / bias_correction1` were computed in float64 where PyTorch rounds them to float32: float64
# parameters drifted from PyTorch's by up to 3e-8 per step (AdamW, NAdam/RAdam with decoupled
# weight decay, Muon), 4e-10 (Adam, Adamax), 1e-9 (ASGD, Adafactor), 1e-11 (SparseAdam).

@pytest.mark.parametrize("cls_name, kwargs, shapes", [
    ("Adam", {}, None), ("Adam", {"amsgrad": True, "weight_decay": 0.1}, None),
    ("AdamW", {}, None), ("AdamW", {"weight_decay": 0.1, "maximize": True}, None),
    ("Adamax", {"weight_decay": 0.1}, None),
    ("NAdam", {"weight_decay": 0.1, "momentum_decay": 0.006, "decoupled_weight_decay": True},
     None),
    ("NAdam", {}, None),
    ("RAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True}, None),
    ("Adafactor", {"maximize": True}, None), ("ASGD", {"t0": 100}, None),
    ("Muon", {"weight_decay": 0.2}, [(3, 4), (4, 2)]),
])
def test_tensor_lr_computes_in_its_dtype_for_float64_params(cls_name, kwargs, shapes):
    values, grads = _stream(shapes or [(3, 4), (4,)], 6, np.float64, seed=3)
    want = _run(torch, cls_name, values, grads, lr=("tensor", 0.01), **kwargs)
    got = _run(tapegrad, cls_name, values, grads, lr=("tensor", 0.01), **kwargs)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)


def test_tensor_lr_sparse_adam_float64():
    values, grads = _stream([(3, 4)], 5, np.float64, seed=4)
    want = _run(torch, "SparseAdam", values, grads, sparse=True, lr=("tensor", 0.01))
    got = _run(tapegrad, "SparseAdam", values, grads, sparse=True, lr=("tensor", 0.01))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=1e-15)


def test_lbfgs_tensor_lr_keeps_t_a_tensor_in_its_state():
    rng = np.random.default_rng(5)
    values = [rng.standard_normal((3, 4)), rng.standard_normal(4)]
    targets = [rng.standard_normal((3, 4)), rng.standard_normal(4)]
    out = {}
    for lib in (torch, tapegrad):
        params = [lib.nn.Parameter(lib.tensor(v.copy())) for v in values]
        opt = lib.optim.LBFGS(params, lr=lib.tensor(0.5))

        def closure():
            opt.zero_grad()
            loss = sum(((p - lib.tensor(a)) ** 2 * (1 + lib.tensor(a).abs())).sum()
                       for p, a in zip(params, targets))
            loss.backward()
            return loss
        for _ in range(3):
            opt.step(closure)
        out[lib] = ([p.detach().numpy() for p in params], opt.state_dict()["state"][0]["t"])
    for w, g in zip(out[torch][0], out[tapegrad][0]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    t_torch, t_tg = out[torch][1], out[tapegrad][1]
    assert isinstance(t_tg, tapegrad.Tensor) and str(t_tg.dtype) == str(t_torch.dtype)
    assert t_tg.item() == t_torch.item()


# -- Adam/AdamW with Tensor betas --------------------------------------------------------------
# The group kept the betas as Python floats where PyTorch keeps the 0-d tensors (its state dict
# shows them), and (SILENT) the bias corrections were computed in float64 where PyTorch computes
# them on float32 tensors: 0.99 ** 3 as x*x*x, lr / (1 - beta1 ** t) as lr times a reciprocal,
# so updates differed by ~1e-5 (float32) and ~2e-7 (float64) of their size.  (PyTorch's float32
# square root of the second bias correction is not always correctly rounded: an ulp remains.)

@pytest.mark.parametrize("cls_name, kwargs", [("Adam", {}), ("AdamW", {}),
                                              ("Adam", {"amsgrad": True, "weight_decay": 0.1})])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tensor_betas_stay_tensors_and_compute_as_pytorch(cls_name, kwargs, dtype):
    values, grads = _stream([(30, 4)], 4, dtype, seed=6)
    out = {}
    for lib in (torch, tapegrad):
        param = lib.nn.Parameter(lib.tensor(values[0].copy()))
        opt = getattr(lib.optim, cls_name)([param], betas=(lib.tensor(0.9), lib.tensor(0.99)),
                                           **kwargs)
        for (g,) in grads:
            param.grad = lib.tensor(g.copy())
            opt.step()
        out[lib] = (param.detach().numpy() - values[0], opt.state_dict()["param_groups"][0])
    (want, want_group), (got, got_group) = out[torch], out[tapegrad]
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=(3e-8 if dtype == np.float64 else 1e-6)
                               * scale)
    for w, g in zip(want_group["betas"], got_group["betas"]):
        assert isinstance(g, tapegrad.Tensor) and g.shape == w.shape and g.item() == w.item()


# -- options PyTorch refuses on CPU parameters --------------------------------------------------

@pytest.mark.parametrize("cls_name", ["Adadelta", "Adam", "AdamW", "Adamax", "ASGD", "NAdam",
                                      "RAdam", "RMSprop", "Rprop"])
def test_capturable_step_is_refused_as_pytorch_refuses_it(cls_name):
    """capturable=True (CUDA-graph capture) is accepted at construction; a step of a parameter
    with a gradient raises PyTorch's AssertionError (tapegrad updated it silently)."""
    messages = []
    for lib in (torch, tapegrad):
        param = lib.nn.Parameter(lib.ones(3))
        opt = getattr(lib.optim, cls_name)([param], capturable=True)
        opt.step()                      # no gradient yet: nothing to refuse
        param.grad = lib.ones(3)
        with pytest.raises(AssertionError) as info:
            opt.step()
        messages.append(str(info.value))
        assert np.array_equal(param.detach().numpy(), np.ones(3, np.float32))
    assert messages[1] == messages[0]


def test_sgd_fused_and_foreach_together_are_refused():
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
            lib.optim.SGD([lib.nn.Parameter(lib.ones(3))], lr=0.1, fused=True, foreach=True)


# -- SWALR's argument errors, in PyTorch's words ------------------------------------------------

@pytest.mark.parametrize("kwargs", [{"swa_lr": [0.1, 0.2]},
                                    {"swa_lr": 0.1, "anneal_strategy": "x"}])
def test_swalr_argument_errors_match_pytorch(kwargs):
    messages = []
    for lib in (torch, tapegrad):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=0.1)
        with pytest.raises(ValueError) as info:
            lib.optim.swa_utils.SWALR(opt, **kwargs)
        messages.append(str(info.value))
    assert messages[1] == messages[0]


# -- ASGD with foreach=True ----------------------------------------------------------------------
# (SILENT) PyTorch's foreach ASGD computes the new eta from the float32 step tensor in float32
# and updates param -= eta * (grad + lambd * param); tapegrad ran the single-tensor update for
# foreach=True too, so float64 parameters differed from PyTorch's foreach ones by ~1e-9.

@pytest.mark.parametrize("kwargs", [{}, {"weight_decay": 0.1, "maximize": True}, {"t0": 2},
                                    {"lambd": 0.1, "lr": ("tensor", 0.02)}])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_asgd_foreach_updates_as_pytorchs_foreach(kwargs, dtype):
    values, grads = _stream([(3, 4), (4,)], 8, dtype, seed=7)
    kwargs = {**kwargs, "foreach": True}
    if isinstance(kwargs.get("lr"), tuple):
        kwargs["foreach"] = False       # (PyTorch refuses a tensor lr with foreach)
    want = _run(torch, "ASGD", values, grads, **kwargs)
    got = _run(tapegrad, "ASGD", values, grads, **kwargs)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
