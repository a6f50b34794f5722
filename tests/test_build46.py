"""Issue 18's import time and compiled size (build46): what `import tapegrad` no longer loads
still works when first used, and the classes built without Cython's auto-pickling refuse pickle
as PyTorch's do.

The import probes run in fresh interpreters: in this process other tests have loaded everything.
"""
import copy
import json
import pickle
import subprocess
import sys

import pytest

import tapegrad


def _fresh(code: str):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_import_leaves_numpy_random_and_the_stdlib_extras_unloaded():
    loaded = _fresh("import json, sys; before = set(sys.modules); import tapegrad; "
                    "print(json.dumps(sorted(set(sys.modules) - before)))")
    # numpy.random (with secrets, hmac, hashlib): loaded by _factories' cimport of bitgen_t;
    # importlib.abc (importlib.resources, tempfile, shutil, bz2, lzma): by _on_import's finder;
    # decimal and the Bessel functions: by i0's backward; threading: for its local and Lock,
    # which are _thread's
    for module in ("numpy.random", "secrets", "hashlib", "importlib.abc", "importlib.resources",
                   "tempfile", "shutil", "decimal", "tapegrad._special_bessel", "copy",
                   "threading"):
        assert module not in loaded, module


def test_seeded_stream_is_the_same_whether_numpy_random_was_loaded_first():
    torch = pytest.importorskip("torch")
    probe = ("import json{pre}; import tapegrad as t; t.manual_seed(7); "
             "print(json.dumps([t.randn(4).tolist(), t.rand(3).tolist(), "
             "t.randint(0, 100, (5,)).tolist(), t.randn(2, 3).sum().item()]))")
    lazy = _fresh(probe.format(pre=""))
    eager = _fresh(probe.format(pre="; import numpy.random"))
    assert lazy == eager
    # and the same stream as this process's (numpy.random loaded long ago)
    tapegrad.manual_seed(7)
    here = [tapegrad.randn(4).tolist(), tapegrad.rand(3).tolist(),
            tapegrad.randint(0, 100, (5,)).tolist(), tapegrad.randn(2, 3).sum().item()]
    assert here == lazy
    # (PyTorch's own stream differs by design; its shapes and dtypes are what must agree)
    torch.manual_seed(7)
    assert tapegrad.randn(4).dtype == tapegrad.float32 and torch.randn(4).dtype == torch.float32
    assert tapegrad.randint(0, 100, (5,)).dtype == tapegrad.int64


def test_random_factories_work_in_a_fresh_process_without_a_seed():
    shapes = _fresh("import json, tapegrad as t; a = t.randn(2, 3); b = t.rand(4); "
                    "c = t.randint(3, (5,)); d = t.randn_like(a); "
                    "print(json.dumps([list(a.shape), list(b.shape), list(c.shape), "
                    "list(d.shape), str(a.dtype), str(c.dtype), "
                    "bool((b >= 0).all() and (b < 1).all()), bool((c < 3).all())]))")
    assert shapes == [[2, 3], [4], [5], [2, 3], "torch.float32", "torch.int64", True, True]


def test_i0_backward_loads_the_bessel_function_on_first_use():
    torch = pytest.importorskip("torch")
    values = [-3.5, -0.25, 0.0, 0.75, 2.0, 11.0]
    grads = _fresh("import json, sys, tapegrad as t; "
                   "x = t.tensor(%r, dtype=t.float64, requires_grad=True); "
                   "assert 'tapegrad._special_bessel' not in sys.modules; "
                   "t.i0(x).sum().backward(); print(json.dumps(x.grad.tolist()))" % values)
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    torch.i0(x).sum().backward()
    assert grads == pytest.approx(x.grad.tolist(), rel=1e-12, abs=1e-15)


def test_i0_gradient_matches_finite_differences_and_torch_second_order():
    torch = pytest.importorskip("torch")
    values = [-1.5, 0.3, 2.25]
    x = tapegrad.tensor(values, dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(tapegrad.i0, (x,))
    (g,) = tapegrad.autograd.grad(tapegrad.i0(x).sum(), x, create_graph=True)
    (gg,) = tapegrad.autograd.grad(g.sum(), x)
    xt = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (gt,) = torch.autograd.grad(torch.i0(xt).sum(), xt, create_graph=True)
    (ggt,) = torch.autograd.grad(gt.sum(), xt)
    assert g.tolist() == pytest.approx(gt.tolist(), rel=1e-12)
    assert gg.tolist() == pytest.approx(ggt.tolist(), rel=1e-12)


def test_einops_backend_hook_still_fires_after_import():
    # _on_import's finder (no importlib.abc base now) still sees the module's import
    einops = pytest.importorskip("einops")
    torch = pytest.importorskip("torch")
    a = tapegrad.arange(24.0).reshape(2, 3, 4)
    b = torch.arange(24.0).reshape(2, 3, 4)
    got = einops.rearrange(a, "a b c -> c (a b)")
    assert got.tolist() == einops.rearrange(b, "a b c -> c (a b)").tolist()
    assert isinstance(got, tapegrad.Tensor)


def test_on_import_action_runs_for_a_module_imported_later(tmp_path, monkeypatch):
    from tapegrad import _on_import
    (tmp_path / "build46_probe_mod.py").write_text("VALUE = 41\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    _on_import.when_imported("build46_probe_mod", lambda m: seen.append(m.VALUE + 1))
    import build46_probe_mod  # noqa: F401
    assert seen == [42]
    assert not any(getattr(f, "name", None) == "build46_probe_mod" for f in sys.meta_path)
    sys.modules.pop("build46_probe_mod", None)


def test_grad_fn_refuses_pickle_and_copy_as_pytorchs_does():
    torch = pytest.importorskip("torch")
    for lib in (tapegrad, torch):
        x = lib.ones(2, requires_grad=True)
        node = (x * 2).sum().grad_fn
        for action in (pickle.dumps, copy.copy, copy.deepcopy):
            with pytest.raises(TypeError, match="cannot pickle 'SumBackward0' object"):
                action(node)


def test_compiled_function_and_core_objects_refuse_pickle():
    step = tapegrad.compile(lambda a: (a * 2).sum())
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(step)
    base = tapegrad._core.TensorBase.__new__(tapegrad._core.TensorBase)
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(base)


def test_tensors_still_pickle_and_deepcopy_as_pytorchs():
    torch = pytest.importorskip("torch")
    data = [[1.5, -2.0], [0.25, 4.0]]
    for lib in (tapegrad, torch):
        x = lib.tensor(data, requires_grad=True)
        y = pickle.loads(pickle.dumps(x))
        z = copy.deepcopy(x)
        assert y.tolist() == data and y.requires_grad and z.tolist() == data and z.requires_grad
    # views of one storage stay aliased through deepcopy (the memo), as in PyTorch
    for lib in (tapegrad, torch):
        base = lib.arange(6.0)
        pair = copy.deepcopy([base, base[2:]])
        pair[0][3] = 100.0
        assert pair[1][1].item() == 100.0
    # the grad-mode guards, which Cython pickles by their fields, still pickle
    guard = pickle.loads(pickle.dumps(tapegrad.no_grad()))
    with guard:
        assert not tapegrad.is_grad_enabled()


def test_thread_local_state_still_per_thread():
    # saved-tensor hooks, torch function modes and grad mode keep per-thread state in
    # _thread._local (threading.local itself): a hook pair set in one thread is not seen in another
    torch = pytest.importorskip("torch")
    import threading
    for lib in (tapegrad, torch):
        def worker():
            x = lib.ones(3, requires_grad=True)
            (x * x).sum().backward()       # (saves two tensors: not through this pair)

        packed = []
        with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            th = threading.Thread(target=worker)
            th.start()
            th.join()
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            (x * x).sum().backward()
        assert len(packed) == 2 and x.grad.tolist() == [2.0, 4.0]
