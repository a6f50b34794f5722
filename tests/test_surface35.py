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
