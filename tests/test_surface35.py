"""Public surface against torch 2.13 (session 35): the names a script sees in each public module
(dir(), hasattr, tab completion, `from torch.X import *`) are PyTorch's, with no leaks of the
imports tapegrad's modules make for their own use."""
import importlib
import importlib.util

import pytest

import tapegrad

torch = pytest.importorskip("torch")

# Names tapegrad shows that torch's counterpart lacks, on purpose:
DELIBERATE = {
    "": {
        # tapegrad's own public modules (benchmarks, demos, the recorded-step replay)
        "bench", "demo", "demo_chars", "examples", "replay",
        # the lazily loaded home of einsum/addmm/baddbmm, public in tapegrad's lazy table
        "contractions",
        # torch.onnx exists (hasattr is True in both); PyTorch loads it lazily and keeps it out
        # of dir(torch)
        "onnx",
    },
    # tapegrad's own test helpers (finite differences, Python-call counting), used by its tests
    "testing": {"count_python_calls", "numeric_grad"},
}

MODULES = ["", "nn", "nn.functional", "nn.init", "nn.utils", "optim", "optim.lr_scheduler",
           "autograd", "utils.data", "linalg", "fft", "special", "distributions", "sparse",
           "random", "testing", "func", "amp", "backends", "cuda"]


def _public(module):
    return {n for n in dir(module) if not n.startswith("_")}


@pytest.mark.parametrize("name", MODULES)
def test_no_names_torch_lacks(name):
    suffix = "." + name if name else ""
    ours = importlib.import_module("tapegrad" + suffix)
    theirs = importlib.import_module("torch" + suffix)
    extra = _public(ours) - _public(theirs) - DELIBERATE.get(name, set())
    # a submodule is an attribute once imported, in both (tapegrad.nn.utils.prune after
    # test_prune, torch's after `import torch.nn.utils.prune`): not a leak when torch has it too
    extra = {n for n in extra if importlib.util.find_spec(f"torch{suffix}.{n}") is None
             or not isinstance(getattr(ours, n), type(importlib))}
    assert not extra, f"tapegrad{suffix} shows names torch{suffix} lacks: {sorted(extra)}"
    for leaked in extra:
        assert not hasattr(theirs, leaked)


@pytest.mark.parametrize("module, name", [
    ("sparse", "sparse_mm_public"), ("sparse", "annotations"), ("random", "rand"),
    ("random", "np"), ("linalg", "np"), ("linalg", "Function"), ("special", "igamma"),
    ("special", "sigmoid"), ("func", "zeros"), ("amp", "warnings"), ("nn.init", "no_grad"),
    ("autograd", "GradcheckError"), ("autograd", "once_differentiable"), ("optim", "sgd"),
    ("optim", "optimizer"), ("distributions", "location_scale"), ("", "creation"),
    ("", "grad_mode"), ("nn", "LazyModuleMixin"), ("utils.data", "WorkerInfo"),
])
def test_hasattr_matches(module, name):
    suffix = "." + module if module else ""
    ours = importlib.import_module("tapegrad" + suffix)
    theirs = importlib.import_module("torch" + suffix)
    assert hasattr(ours, name) == hasattr(theirs, name) == False  # noqa: E712


# (not sparse: torch.sparse's __all__ names a `solve` it lacks, so its star import raises)
@pytest.mark.parametrize("module", ["random", "special", "linalg", "fft", "func", "amp",
                                    "autograd", "optim", "nn.init", "nn.functional"])
def test_star_import_names(module):
    """`from torch.X import *` binds no name PyTorch's does not."""
    ours, theirs = {}, {}
    exec(f"from tapegrad.{module} import *", ours)
    exec(f"from torch.{module} import *", theirs)
    extra = set(ours) - set(theirs) - {"__builtins__"}
    assert not extra, sorted(extra)


def test_the_moved_names_still_work():
    """The public names behind the hidden imports answer as before, and the internal modules
    stay importable by their full names."""
    import tapegrad.creation as creation
    import tapegrad.optim.sgd as sgd
    from tapegrad.autograd.function import once_differentiable  # noqa: F401
    from tapegrad.autograd.gradcheck import GradcheckError  # noqa: F401
    from tapegrad.nn.modules.lazy import LazyModuleMixin  # noqa: F401
    from tapegrad.utils.data._utils.worker import WorkerInfo
    from torch.utils.data._utils.worker import WorkerInfo as TorchWorkerInfo
    assert WorkerInfo.__name__ == TorchWorkerInfo.__name__
    assert creation.zeros(2).shape == (2,)
    assert sgd.SGD is tapegrad.optim.SGD
    assert tapegrad.random.default_generator is tapegrad.default_generator
    assert tapegrad.special.expit is tapegrad.sigmoid or \
        tapegrad.special.expit(tapegrad.tensor(0.0)).item() == 0.5
    assert tapegrad.special.gammaln(tapegrad.tensor(3.0)).item() == pytest.approx(0.6931471805599453)
    assert set(tapegrad.random.__all__) <= set(dir(tapegrad.random))
    tapegrad.random.manual_seed(3)
    a = tapegrad.rand(4)
    tapegrad.manual_seed(3)
    assert (tapegrad.rand(4) == a).all()


def test_prune_is_an_attribute_once_imported():
    import tapegrad.nn.utils.prune as prune
    assert tapegrad.nn.utils.prune is prune


# -- torch.affine_grid_generator / grid_sampler / grid_sampler_2d / grid_sampler_3d ---------------

import numpy as np  # noqa: E402


def _both(fn, *arrays, requires_grad=False):
    """fn(lib, *tensors) under torch and tapegrad, float64 inputs."""
    out = []
    for lib in (torch, tapegrad):
        ts = [lib.tensor(a, requires_grad=requires_grad) for a in arrays]
        out.append((fn(lib, *ts), ts))
    return out


@pytest.mark.parametrize("size, align", [((2, 3, 4, 5), False), ((2, 3, 4, 5), True),
                                         ((2, 1, 3, 2, 4), False), ((2, 1, 1, 3, 2), True)])
def test_affine_grid_generator_values_and_grad(size, align):
    rng = np.random.default_rng(5)
    nd = len(size) - 2
    theta = rng.standard_normal((2, nd, nd + 1))
    (want, (tt,)), (got, (gt,)) = _both(
        lambda L, t: L.affine_grid_generator(t, list(size), align), theta, requires_grad=True)
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__ == \
        "AffineGridGeneratorBackward0"
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    want.sin().sum().backward()
    got.sin().sum().backward()
    np.testing.assert_allclose(gt.grad.numpy(), tt.grad.numpy(), rtol=1e-10, atol=1e-12)
    t = tapegrad.tensor(theta, requires_grad=True)
    assert tapegrad.autograd.gradcheck(
        lambda a: tapegrad.affine_grid_generator(a, size, align), (t,))


def test_affine_grid_generator_integer_theta_and_float32():
    for lib in (torch, tapegrad):
        out = lib.affine_grid_generator(lib.tensor([[[1, 0, 0], [0, 1, 0]]]), [1, 1, 2, 5], True)
        assert out.dtype == lib.int64 and tuple(out.shape) == (1, 2, 5, 2)
    want = torch.affine_grid_generator(torch.tensor([[[1, 0, 0], [0, 1, 0]]]), [1, 1, 2, 5], True)
    got = tapegrad.affine_grid_generator(tapegrad.tensor([[[1, 0, 0], [0, 1, 0]]]), [1, 1, 2, 5],
                                         True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    theta = np.array([[[0.9, 0.1, 0.05], [-0.2, 1.1, 0.0]]], dtype=np.float32)
    want = torch.affine_grid_generator(torch.tensor(theta), (1, 2, 3, 7), False)
    got = tapegrad.affine_grid_generator(tapegrad.tensor(theta), (1, 2, 3, 7), False)
    assert got.dtype == tapegrad.float32
    # (the matmul's float32 rounding: numpy's order of the 3-term sums, not bmm's, as F.affine_grid)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("args, exc, match", [
    (((2, 3, 4), False), RuntimeError, "needs 4d \\(spatial\\) or 5d"),
    (((3, 3, 4, 5), False), RuntimeError, "batch2 tensor to be: \\[3, 3\\] but got: \\[2, 3\\]"),
    (((2, 3, 4, 5, 6), False), RuntimeError, "batch2 tensor to be: \\[2, 4\\] but got: \\[2, 3\\]"),
    (((2, 3, 4, 5), None), TypeError, "argument 'align_corners' \\(position 3\\) must be bool"),
])
def test_affine_grid_generator_errors(args, exc, match):
    theta = np.ones((2, 2, 3))
    for lib in (torch, tapegrad):
        with pytest.raises(exc, match=match):
            lib.affine_grid_generator(lib.tensor(theta), list(args[0]), args[1])


@pytest.mark.parametrize("fn", ["grid_sampler", "grid_sampler_2d"])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_2d_values_and_grads(fn, mode, padding, align):
    rng = np.random.default_rng(mode * 7 + padding)
    x = rng.standard_normal((2, 3, 4, 5))
    grid = rng.uniform(-1.2, 1.2, (2, 6, 3, 2))
    (want, (tx, tg)), (got, (gx, gg)) = _both(
        lambda L, a, b: getattr(L, fn)(a, b, mode, padding, align), x, grid, requires_grad=True)
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__ == "GridSampler2DBackward0"
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    (want * want).sum().backward()
    (got * got).sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gg.grad.numpy(), tg.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fn", ["grid_sampler", "grid_sampler_3d"])
@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_grid_sampler_3d_values_and_grads(fn, mode, padding):
    rng = np.random.default_rng(11 + mode * 3 + padding)
    x = rng.standard_normal((1, 2, 3, 4, 3))
    grid = rng.uniform(-1.2, 1.2, (1, 2, 3, 2, 3))
    (want, (tx, tg)), (got, (gx, gg)) = _both(
        lambda L, a, b: getattr(L, fn)(a, b, mode, padding, False), x, grid, requires_grad=True)
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__ == "GridSampler3DBackward0"
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gg.grad.numpy(), tg.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_grid_sampler_gradcheck():
    rng = np.random.default_rng(3)
    x = tapegrad.tensor(rng.standard_normal((1, 2, 3, 4)), requires_grad=True)
    grid = tapegrad.tensor(rng.uniform(-0.9, 0.9, (1, 2, 2, 2)), requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda a, b: tapegrad.grid_sampler(a, b, 0, 2, False),
                                       (x, grid))
    assert tapegrad.autograd.gradcheck(lambda a, b: tapegrad.grid_sampler_2d(a, b, 2, 1, True),
                                       (x, grid))
    x5 = tapegrad.tensor(rng.standard_normal((1, 2, 2, 3, 2)), requires_grad=True)
    grid5 = tapegrad.tensor(rng.uniform(-0.9, 0.9, (1, 2, 1, 2, 3)), requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda a, b: tapegrad.grid_sampler_3d(a, b, 0, 0, True),
                                       (x5, grid5))


@pytest.mark.parametrize("call, exc, match", [
    (lambda L, x, g, x5, g5: L.grid_sampler(x, g, "bilinear", 0, False), TypeError,
     "argument 'interpolation_mode' \\(position 3\\) must be int, not str"),
    (lambda L, x, g, x5, g5: L.grid_sampler(x, g, True, 0, False), TypeError,
     "argument 'interpolation_mode' \\(position 3\\) must be int, not bool"),
    (lambda L, x, g, x5, g5: L.grid_sampler(x, g, 0, 0.0, False), TypeError,
     "argument 'padding_mode' \\(position 4\\) must be int, not float"),
    (lambda L, x, g, x5, g5: L.grid_sampler(x, g, 0, 0, 1), TypeError,
     "argument 'align_corners' \\(position 5\\) must be bool, not int"),
    (lambda L, x, g, x5, g5: L.grid_sampler(x, g, 0, 0), TypeError,
     "missing 1 required positional argument"),
    (lambda L, x, g, x5, g5: L.grid_sampler_2d(x5, g5, 0, 0, False), RuntimeError,
     "expected 4D input and grid with same number of dimensions"),
    (lambda L, x, g, x5, g5: L.grid_sampler_3d(x, g, 0, 0, False), RuntimeError,
     "expected 5D input and grid with same number of dimensions"),
    (lambda L, x, g, x5, g5: L.grid_sampler_3d(x5, g5, 2, 0, False), RuntimeError,
     "bicubic interpolation only supports 4D input"),
    (lambda L, x, g, x5, g5: L.grid_sampler(x.float(), g, 0, 0, False), RuntimeError,
     "expected scalar type Float but found Double"),
])
def test_grid_sampler_errors(call, exc, match):
    rng = np.random.default_rng(0)
    arrays = (rng.standard_normal((1, 1, 3, 3)), np.zeros((1, 2, 2, 2)),
              rng.standard_normal((1, 1, 2, 3, 3)), np.zeros((1, 1, 2, 2, 3)))
    for lib in (torch, tapegrad):
        with pytest.raises(exc, match=match):
            call(lib, *[lib.tensor(a) for a in arrays])


def test_grid_sampler_refuses_a_mode_outside_the_enums():
    """PyTorch casts any int to its enum (its kernel then reads an unnamed value: undefined);
    tapegrad refuses it instead."""
    x, grid = tapegrad.ones(1, 1, 2, 2), tapegrad.zeros(1, 1, 1, 2)
    with pytest.raises(RuntimeError, match="expected interpolation_mode to be 0"):
        tapegrad.grid_sampler(x, grid, 3, 0, False)
    with pytest.raises(RuntimeError, match="expected padding_mode to be 0"):
        tapegrad.grid_sampler(x, grid, 0, -1, False)
