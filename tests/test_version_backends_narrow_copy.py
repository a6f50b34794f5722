"""torch.__version__ / torch.version, the torch.backends and torch.utils names scripts test, and
narrow_copy: each against PyTorch."""
import itertools

import numpy as np
import pytest

import tapegrad
from tapegrad.torch_version import TorchVersion

torch = pytest.importorskip("torch")

VERSIONS = ["2.13.0", "2.13.0+cpu", "2.13", "2.13.1", "2.9.1", "1.8.0", "2.0.0a0", "2.0.0rc1",
            "2.0.0.dev20230101", "2.0.0.post1", "2.0.0", "2.0", "1!0.1", "2.13.0+tapegrad.0.1.0",
            "2.13.0+cu121", "2.13.0+1.2", "2.13.0+abc.2", "1.10.0a", "v2.1", "2.1-1"]
OTHERS = VERSIONS + ["parrot", "", (1, 8), (2, 13), (2, 13, 0), [2, 14], 5, None, 2.5]
OPS = ["__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"]


@pytest.mark.parametrize("mine", VERSIONS)
def test_torch_version_compares_as_torchs(mine):
    from torch.torch_version import TorchVersion as TheirVersion
    ours, theirs = TorchVersion(mine), TheirVersion(mine)
    for other, op in itertools.product(OTHERS, OPS):
        try:
            expected = getattr(theirs, op)(other)
        except Exception as e:     # noqa: BLE001  (the type is the expectation)
            with pytest.raises(type(e)):
                getattr(ours, op)(other)
            continue
        assert getattr(ours, op)(other) == expected, (mine, op, other)
    # the operators as a script writes them (NotImplemented handled by Python)
    for other in OTHERS:
        for op in (lambda a, b: a < b, lambda a, b: a >= b, lambda a, b: a == b,
                   lambda a, b: b <= a):
            try:
                expected = op(theirs, other)
            except TypeError:
                with pytest.raises(TypeError):
                    op(ours, other)
                continue
            assert op(ours, other) == expected, (mine, other)
    assert hash(ours) == hash(mine) and isinstance(ours, str)


def test_packaging_version_objects():
    from torch._vendor.packaging.version import Version, parse
    v = tapegrad.__version__
    assert v >= Version("1.8") and Version("2.0") <= v and not v < Version("2.13")
    assert parse(v).release == parse(torch.__version__).release == (2, 13, 0)
    assert parse(v).local == f"tapegrad.{tapegrad.version.tapegrad_version}"


def test_version_reads_as_the_pytorch_api_it_follows():
    v = tapegrad.__version__
    assert type(v) is TorchVersion and v is tapegrad.version.__version__
    assert str(v) == f"2.13.0+tapegrad.{tapegrad.version.tapegrad_version}"
    # the checks scripts make, answered as PyTorch 2.13 answers them
    for check in (lambda t: t.__version__ >= "1.8", lambda t: t.__version__ < "2.14",
                  lambda t: t.__version__ >= (2, 0), lambda t: t.__version__ > "2.13",
                  lambda t: tuple(int(x) for x in t.__version__.split("+")[0].split(".")),
                  lambda t: t.__version__.split(".")[:2], lambda t: t.__version__[:4],
                  lambda t: int(t.__version__.split(".")[1]) >= 10):
        assert check(tapegrad) == check(torch)


def test_version_module_attributes():
    for name in ("cuda", "hip", "rocm", "xpu", "debug"):
        assert getattr(tapegrad.version, name) == getattr(torch.version, name), name
    assert isinstance(tapegrad.version.git_version, str)
    # a local label sorts after the release without one (PEP 440), as "2.13.0+cpu" does
    assert tapegrad.version.__version__.split("+")[0] == tapegrad.version.torch_api_version
    assert tapegrad.version.__version__ > tapegrad.version.torch_api_version


def test_backends_names_scripts_test():
    b = tapegrad.backends
    for module in ("mps", "cudnn", "cuda", "cpu", "mkl", "mkldnn", "openmp"):
        assert hasattr(b, module) and hasattr(torch.backends, module)
    assert b.mps.is_available() is b.mps.is_built() is False
    assert b.cudnn.is_available() is False and b.cudnn.version() is None
    # not built with MKL, oneDNN or OpenMP (PyTorch's CPU wheels are): honest answers
    assert b.mkl.is_available() is b.mkldnn.is_available() is b.openmp.is_available() is False
    assert b.mkldnn.enabled is torch.backends.mkldnn.enabled is True
    assert b.cudnn.benchmark_limit == torch.backends.cudnn.benchmark_limit
    for module, flag in (("mkldnn", "enabled"), ("mkldnn", "deterministic"),
                         ("cudnn", "benchmark"), ("cudnn", "deterministic")):
        ours, theirs = getattr(b, module), getattr(torch.backends, module)
        saved = getattr(ours, flag)
        try:
            setattr(ours, flag, not saved)
            assert getattr(ours, flag) is (not saved)
        finally:
            setattr(ours, flag, saved)
        with pytest.raises(RuntimeError) as expected:
            setattr(theirs, flag, 1)
        with pytest.raises(RuntimeError) as got:
            setattr(ours, flag, 1)
        assert str(got.value) == str(expected.value)
        assert getattr(ours, flag) is saved


def test_cudnn_flags_context_restores():
    c = tapegrad.backends.cudnn
    with c.flags(enabled=False, benchmark=True, deterministic=True):
        assert (c.enabled, c.benchmark, c.deterministic) == (False, True, True)
    assert (c.enabled, c.benchmark, c.deterministic) == (True, False, False)


def test_utils_model_zoo_load_url_is_the_hubs():
    import tapegrad.utils.model_zoo
    import torch.utils.model_zoo
    assert torch.utils.model_zoo.load_url is torch.hub.load_state_dict_from_url
    assert tapegrad.utils.model_zoo.load_url is tapegrad.hub.load_state_dict_from_url


# -- narrow_copy ------------------------------------------------------------------------------

def _layouts(lib, values):
    x = lib.tensor(values)
    return {"contiguous": x, "transposed": x.transpose(0, 1).contiguous().transpose(0, 1),
            "sliced": lib.tensor(np.concatenate([values, values], 1))[:, ::2]}


@pytest.mark.parametrize("args", [(1, 1, 2), (1, -2, 2), (0, 1, 1), (0, 0, 2), (-1, 0, 3),
                                  (1, 3, 0)])
def test_narrow_copy_values_strides_and_gradient(args):
    values = np.random.default_rng(0).standard_normal((2, 3))
    mine, theirs = _layouts(tapegrad, values), _layouts(torch, values)
    for layout in mine:
        a = mine[layout].detach().requires_grad_()
        b = theirs[layout].detach().requires_grad_()
        ra, rb = tapegrad.narrow_copy(a, *args), torch.narrow_copy(b, *args)
        np.testing.assert_array_equal(ra.detach().numpy(), rb.detach().numpy())
        assert ra.shape == rb.shape and ra.is_contiguous()
        if rb.numel():
            assert ra.stride() == rb.stride()
        # a copy: writing into it leaves the input alone
        with tapegrad.no_grad():
            ra.add_(1.0)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        w = np.arange(1.0, 1.0 + ra.numel()).reshape(tuple(ra.shape))
        (ra * tapegrad.tensor(w)).sum().backward()
        # (PyTorch's NarrowCopyBackward0 fails for a negative start, "The size of tensor a (0)
        # must match": the gradient is narrow's, which is what it computes otherwise)
        (b.narrow(*args) * torch.tensor(w)).sum().backward()
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
        # the method
        m, t = mine[layout].narrow_copy(*args), theirs[layout].narrow_copy(*args)
        np.testing.assert_array_equal(m.numpy(), t.numpy())


def test_narrow_copy_gradcheck_and_out():
    x = tapegrad.randn(3, 4, dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda t: tapegrad.narrow_copy(t, 1, 1, 2), (x,))
    assert tapegrad.autograd.gradgradcheck(lambda t: tapegrad.narrow_copy(t, 0, 1, 2), (x,))
    out, ref = tapegrad.empty(0, dtype=tapegrad.float64), torch.empty(0, dtype=torch.float64)
    values = np.arange(12.0).reshape(3, 4)
    r = tapegrad.narrow_copy(tapegrad.tensor(values), 1, 1, 2, out=out)
    torch.narrow_copy(torch.tensor(values), 1, 1, 2, out=ref)
    assert r is out and out.shape == ref.shape and out.dtype == tapegrad.float64
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    # out's dtype must be input's (no cast, unlike the elementwise ops' out=)
    with pytest.raises(RuntimeError, match=r"self.dtype\(\) == output.dtype\(\)"):
        torch.narrow_copy(torch.tensor(values), 1, 1, 2, out=torch.empty(0))
    with pytest.raises(RuntimeError, match=r"self.dtype\(\) == output.dtype\(\)"):
        tapegrad.narrow_copy(tapegrad.tensor(values), 1, 1, 2, out=tapegrad.empty(0))
    # out= with an input that requires grad: refused, as every out= in grad mode
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            lib.narrow_copy(lib.tensor(values, requires_grad=True), 1, 1, 2,
                            out=lib.empty(0, dtype=lib.float64))


@pytest.mark.parametrize("args", [(2, 0, 1), (-3, 0, 1), (1, 2, 2), (1, 4, 0), (1, 0, -1),
                                  (1, -4, 1), (1, 1.0, 1)])
def test_narrow_copy_errors_as_torchs(args):
    values = np.arange(6.0).reshape(2, 3)
    with pytest.raises(Exception) as expected:
        torch.narrow_copy(torch.tensor(values), *args)
    with pytest.raises(expected.type) as got:
        tapegrad.narrow_copy(tapegrad.tensor(values), *args)
    first_line = str(expected.value).split("  (Could")[0].split(",")[0]
    if expected.type is not TypeError:
        assert first_line in str(got.value)
