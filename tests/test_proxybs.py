"""Proxy task proxybs (optimisation research code): the functional optimizer API
(torch.optim._functional, torch.optim.adam.adam, ...), the private helpers that copies of
torch.optim's classes import from torch.optim.optimizer, the corpus hook's module specs, and
addcdiv's integer-division message -- each compared with PyTorch."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
INIT = RNG.standard_normal(5).astype(np.float32)
GRADS = [RNG.standard_normal(5).astype(np.float32) for _ in range(4)]


def _run_functional(lib, name, state_makers, steps=True, **hyper):
    """Four steps of lib.optim._functional.<name> on one parameter, with the state lists made by
    `state_makers` (callables of lib); returns the parameter and the state tensors as numpy."""
    F = importlib.import_module(f"{lib.__name__}.optim._functional")
    p = lib.tensor(INIT.copy())
    states = [[make(lib)] for make in state_makers]
    step_list = [lib.tensor(0.0)] if steps else []
    for g in GRADS:
        args = [[p], [lib.tensor(g)]] + states + ([step_list] if steps else [])
        with lib.no_grad():
            getattr(F, name)(*args, **hyper)
    out = [p.numpy()] + [s[0].numpy() for s in states]
    if steps:
        out.append(step_list[0].numpy())
    return out


def _zeros(lib):
    return lib.zeros(5)


CASES = [
    ("adam", [_zeros, _zeros, _zeros], dict(amsgrad=True, beta1=0.9, beta2=0.99, lr=0.1,
                                            weight_decay=0.01, eps=1e-8, maximize=False)),
    ("adam", [_zeros, _zeros, lambda lib: lib.zeros(0)],
     dict(amsgrad=False, beta1=0.8, beta2=0.9, lr=0.05, weight_decay=0.1, eps=1e-6,
          maximize=True, decoupled_weight_decay=True)),
    ("adamw", [_zeros, _zeros, _zeros], dict(amsgrad=False, beta1=0.9, beta2=0.99, lr=0.1,
                                             weight_decay=0.05, eps=1e-8, maximize=False)),
    ("rmsprop", [_zeros, _zeros, _zeros], dict(lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.01,
                                               momentum=0.9, centered=True)),
    ("adagrad", [_zeros], dict(lr=0.1, weight_decay=0.01, lr_decay=0.01, eps=1e-10,
                               maximize=False)),
    ("adadelta", [_zeros, _zeros], dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0,
                                        maximize=False)),
    ("adamax", [_zeros, _zeros], dict(eps=1e-8, beta1=0.9, beta2=0.99, lr=0.1,
                                      weight_decay=0.01)),
    ("radam", [_zeros, _zeros], dict(beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.01,
                                     eps=1e-8)),
    ("nadam", [_zeros, _zeros, lambda lib: lib.tensor(1.0)],
     dict(beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.01, momentum_decay=4e-3, eps=1e-8)),
    ("asgd", [_zeros, lambda lib: lib.tensor(1.0), lambda lib: lib.tensor(0.01)],
     dict(lambd=1e-4, lr=0.01, t0=1, alpha=0.75, weight_decay=0.0)),
    ("rprop", [_zeros, lambda lib: lib.full((5,), 0.01)],
     dict(step_size_min=1e-6, step_size_max=50, etaminus=0.5, etaplus=1.2)),
]


@pytest.mark.parametrize("name,makers,hyper", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_functional_optimizer_updates_match_torch(name, makers, hyper):
    # torch.optim._functional.<algorithm> was missing (ModuleNotFoundError): research loops that
    # keep their optimizer state in their own lists call it
    got = _run_functional(tg, name, makers, **hyper)
    want = _run_functional(torch, name, makers, **hyper)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_functional_sgd_fills_momentum_buffers_and_module_aliases():
    results = []
    for lib in (tg, torch):
        sgd = importlib.import_module(f"{lib.__name__}.optim.sgd").sgd
        p = lib.tensor(INIT.copy())
        bufs = [None]
        for g in GRADS:
            with lib.no_grad():
                sgd([p], [lib.tensor(g)], bufs, weight_decay=0.01, momentum=0.9, lr=0.1,
                    dampening=0.0, nesterov=True, maximize=False)
        q = lib.tensor(INIT.copy())
        plain = [None]
        with lib.no_grad():
            sgd([q], [lib.tensor(GRADS[0])], plain, weight_decay=0.0, momentum=0.0, lr=0.1,
                dampening=0.0, nesterov=False, maximize=False)
        results.append((p.numpy(), bufs[0].numpy(), q.numpy(), plain[0]))
    (p1, b1, q1, n1), (p2, b2, q2, n2) = results
    np.testing.assert_allclose(p1, p2, rtol=1e-6)
    np.testing.assert_allclose(b1, b2, rtol=1e-6)
    np.testing.assert_allclose(q1, q2, rtol=1e-6)
    assert n1 is None and n2 is None
    for mod in ("adam", "adamw", "sgd", "rmsprop", "adagrad", "adadelta", "adamax", "radam",
                "nadam", "asgd", "rprop"):
        m = importlib.import_module(f"tapegrad.optim.{mod}")
        assert callable(getattr(m, mod))
        assert set(importlib.import_module(f"torch.optim.{mod}").__all__) <= set(m.__all__)


def test_functional_adam_in_an_autograd_loop_matches_torch():
    # grads from autograd.grad, the step outside .grad: the parameter's .grad stays None
    out = []
    for lib in (tg, torch):
        F = importlib.import_module(f"{lib.__name__}.optim._functional")
        w = lib.nn.Parameter(lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64))
        ea, es = [lib.zeros(3, dtype=lib.float64)], [lib.zeros(3, dtype=lib.float64)]
        st = [lib.tensor(0.0)]
        for _ in range(5):
            g, = lib.autograd.grad((w ** 2).sum() + w[0] * w[1], [w])
            with lib.no_grad():
                F.adam([w], [g], ea, es, [], st, amsgrad=False, beta1=0.9, beta2=0.999, lr=0.1,
                       weight_decay=0.0, eps=1e-8, maximize=False)
        out.append((w.detach().numpy(), w.grad, w.requires_grad, ea[0].numpy(), float(st[0])))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    np.testing.assert_allclose(out[0][3], out[1][3], rtol=1e-12)
    assert out[0][1:3] == out[1][1:3] and out[0][4] == out[1][4] == 5.0


def test_functional_optimizer_errors_match_torch():
    for lib in (tg, torch):
        F = importlib.import_module(f"{lib.__name__}.optim._functional")
        p = lib.nn.Parameter(lib.ones(3))
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation"):
            F.sgd([p], [lib.ones(3)], [None], weight_decay=0.0, momentum=0.0, lr=0.1,
                  dampening=0.0, nesterov=False, maximize=False)
        with pytest.raises(RuntimeError, match="`state_steps` argument must contain a list of "
                                               "singleton tensors"):
            F.adam([p.detach()], [lib.ones(3)], [lib.zeros(3)], [lib.zeros(3)], [], [0],
                   amsgrad=False, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.0, eps=1e-8,
                   maximize=False)
        np.testing.assert_array_equal(p.detach().numpy(), np.ones(3, np.float32))


def test_optimizer_module_private_helpers_that_copied_optimizers_import():
    # an Adam variant made from torch/optim/adam.py imports these from .optimizer
    names = ["Optimizer", "ParamsT", "StateDict", "DeviceDict", "DeviceDtypeDict",
             "TensorListList", "_capturable_doc", "_default_to_fused_or_foreach",
             "_device_dtype_check_for_fused", "_differentiable_doc",
             "_disable_dynamo_if_unsupported", "_foreach_doc", "_fused_doc",
             "_get_capturable_supported_devices", "_get_scalar_dtype", "_get_value",
             "_maximize_doc", "_params_doc", "_stack_if_compiling",
             "_use_grad_for_differentiable", "_view_as_real"]
    T = importlib.import_module("torch.optim.optimizer")
    G = importlib.import_module("tapegrad.optim.optimizer")
    for n in names:
        assert hasattr(G, n), n
    for flag in (True, False):
        assert G._get_capturable_supported_devices(flag) == T._get_capturable_supported_devices(flag)
    x = [1, 2]
    assert G._stack_if_compiling(x) is x

    def f(a):
        return a + 1
    assert G._disable_dynamo_if_unsupported(single_tensor_fn=f)(f)(1) == 2
    G._device_dtype_check_for_fused(tg.ones(2))
    for lib, mod in ((tg, G), (torch, T)):
        with pytest.raises(RuntimeError, match="`fused=True` requires all the params to be "
                                               "floating point Tensors"):
            mod._device_dtype_check_for_fused(lib.ones(2, dtype=lib.long))
    got, want = [], []
    for lib, mod, out in ((tg, G, got), (torch, T, want)):
        ps = [lib.tensor([1 + 2j, 3 - 1j]), lib.ones(2)]
        gs = [lib.tensor([0.5j, 1 + 0j]), lib.zeros(2)]
        mod._view_as_real(ps, gs)
        out.extend([tuple(ps[0].shape), ps[0].numpy(), gs[0].numpy(), tuple(ps[1].shape)])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_corpus_hook_keeps_tapegrads_module_specs(tmp_path):
    # under the hook, a lazily imported sibling module (autograd.functional's first call) warned
    # "__package__ != __spec__.parent" (ImportWarning): the alias had replaced the module's spec
    repo = Path(__file__).resolve().parents[1]
    script = tmp_path / "script.py"
    script.write_text(
        "import warnings, torch\n"
        "from torch.autograd.functional import hessian\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    h = hessian(lambda x: (x ** 3).sum(), torch.ones(2))\n"
        "print(h.tolist(), len(w), torch.autograd.functional.__spec__.name)\n")
    env = dict(os.environ, PYTHONPATH=str(repo / "tools" / "corpus_hook"))
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert out[:5] == ["[[6.0,", "0.0],", "[0.0,", "6.0]]", "0"]
    assert out[5] == "tapegrad.autograd.functional"


def test_addcdiv_integer_division_message_is_pytorchs_whole():
    for lib in (tg, torch):
        i = lib.ones(2, dtype=lib.long)
        with pytest.raises(RuntimeError, match=r"The historic addcdiv behavior can be implemented "
                                               r"as \(input \+ value \* torch.trunc"):
            lib.addcdiv(i, i, i)
        with pytest.raises(RuntimeError, match="for all dtypes"):
            lib.ones(2).addcdiv_(i, i)
