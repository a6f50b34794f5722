"""Issue 18's clean build: the generated C carries no .pyx-line comments (setup.py), and
tools/compare_builds.py's `--suite replay` (the workloads that measured the replay module's
optimisation level) runs issue 19's compiled workloads with the values PyTorch computes."""
import importlib.util
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP = os.path.join(ROOT, "setup.py")
COMPARE = os.path.join(ROOT, "tools", "compare_builds.py")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)         # setup.py: not __main__, so no setup() runs
    return module


@pytest.mark.skipif(not os.path.exists(SETUP), reason="needs the source tree's setup.py")
def test_setup_emits_no_code_comments_and_keeps_the_global_cache():
    pytest.importorskip("setuptools.modified")
    setup = load(SETUP, "tapegrad_setup_build48")
    assert setup.directives["emit_code_comments"] is False
    # CYTHON_USE_DICT_VERSIONS=0 cost 5% per op (setup.py): Cython's default stays
    macros = dict(setup.CYTHON_MACROS)
    assert "CYTHON_USE_DICT_VERSIONS" not in macros
    for ext in setup.extensions():
        assert ("CYTHON_USE_DICT_VERSIONS", "0") not in ext.define_macros, ext.name
    # the replay module stays at GLUE (measured at -Og: 3-5% slower on issue 19's workloads)
    assert dict(setup.MODULES)["_replay"] == setup.GLUE


@pytest.mark.skipif(not os.path.exists(COMPARE), reason="needs the source tree's tools/")
def test_replay_suite_runs_and_replays():
    compare = load(COMPARE, "tapegrad_compare_builds_build48")
    assert "replay" in compare.SUITES
    ops = compare.replay_benchmarks()
    assert sorted(ops) == ["replay.chain_300_size1", "replay.mixed_300_size1",
                           "replay.mixed_300_size1e4", "replay.mlp_step"]
    for run in ops.values():
        for _ in range(3):          # the capture, then replays
            run()


def test_replayed_mixed_chain_matches_torch():
    torch = pytest.importorskip("torch")
    import tapegrad as tg

    def mixed(lib, x):
        for _ in range(50):
            x = lib.exp(lib.sigmoid(lib.sin(lib.tanh(x * 0.5 + 0.25))))
        return x

    base = np.linspace(-1, 1, 37)
    g = np.linspace(0.5, 2.0, 37)
    compiled = tg.compile(lambda x: mixed(tg, x))
    for _ in range(3):
        x = tg.tensor(base, requires_grad=True)
        y = compiled(x)
        y.backward(tg.tensor(g))
    assert compiled.stats["replays"] >= 1, compiled.explain()
    tx = torch.tensor(base, requires_grad=True)
    ty = mixed(torch, tx)
    ty.backward(torch.tensor(g))
    assert y.dtype == tg.float64 and tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=0)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-300)
