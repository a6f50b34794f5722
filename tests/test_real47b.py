"""Differences found running public PyTorch notes/snippet repositories unchanged (real47b):
each test replays the idiom in PyTorch and tapegrad and compares what a script would see."""
from __future__ import annotations

import warnings

import pytest

import tapegrad as tg


def _outcome(call):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", call())
    except Exception as exc:  # the type and message are what the script prints
        return (type(exc).__name__, str(exc))


# -- torch.cuda.memory: the allocator's module, reached as an attribute of torch.cuda -----------

_MEMORY_CALLS = ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved",
                 "memory_stats", "memory_stats_as_nested_dict", "empty_cache", "mem_get_info",
                 "memory_summary", "reset_peak_memory_stats", "list_gpu_processes")


@pytest.mark.parametrize("name", _MEMORY_CALLS)
def test_cuda_memory_submodule_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(tg.cuda.memory, name), getattr(torch.cuda.memory, name)
    assert ours is getattr(tg.cuda, name)
    got, want = _outcome(ours), _outcome(theirs)
    assert got[0] == want[0] and str(got[1]) == str(want[1]) or (
        got[0] == want[0] == "ok" and dict(got[1]) == dict(want[1]))


def test_cuda_memory_import_forms():
    import tapegrad.cuda.memory as memory
    from tapegrad.cuda.memory import memory_allocated
    assert memory is tg.cuda.memory and memory_allocated(0) == 0


# -- init_process_group: rendezvous first, then the backend ------------------------------------

_BACKENDS = ("nccl", "NCCL", "foo", "ucc", "mpi", "gloo", "cpu:nccl", "cpu:foo", "cuda:nccl",
             "cpu:gloo", "cpu:gloo,cuda:nccl", "cpu:gloo,cuda:gloo", "cpu:gloo,cuda:ucc")


def _init(lib, backend, **kwargs):
    from importlib import import_module
    dist = import_module(f"{lib.__name__}.distributed")

    def call():
        dist.init_process_group(backend, **kwargs)
        try:
            return dist.get_backend(), dist.get_rank(), dist.get_world_size()
        finally:
            dist.destroy_process_group()
    return _outcome(call)


@pytest.mark.parametrize("backend", _BACKENDS)
def test_init_process_group_without_rendezvous_env_matches_torch(backend, monkeypatch):
    torch = pytest.importorskip("torch")
    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    # Without RANK PyTorch's env:// rendezvous fails before any backend but MPI is looked at.
    assert _init(tg, backend) == _init(torch, backend)


@pytest.mark.parametrize("backend", _BACKENDS)
def test_init_process_group_backend_errors_match_torch(backend):
    torch = pytest.importorskip("torch")
    kwargs = dict(init_method="tcp://127.0.0.1:29561", rank=0, world_size=1)
    assert _init(tg, backend, **kwargs) == _init(torch, backend, **kwargs)


# -- torch.cuda.nvtx / streams / graphs and torch.xpu.memory / random: reachable submodules ----

_CUDA_EXTRAS = ("cuda.nvtx.range_push('a')", "cuda.nvtx.range_pop()", "cuda.nvtx.mark('a')",
                "cuda.nvtx.range_start('a')", "cuda.nvtx.range_end(1)", "cuda.nvtx.range('x').__enter__()",
                "cuda.is_current_stream_capturing()", "cuda.graphs.is_current_stream_capturing()",
                "cuda.graph_pool_handle()", "cuda.CUDAGraph()", "cuda.graphs.CUDAGraph()",
                "cuda.graph(None)", "cuda.streams.Stream()", "cuda.streams.Event()",
                "cuda.stream(None).stream", "cuda.StreamContext('x').idx",
                "cuda.make_graphed_callables(lib.nn.Linear(2, 2), (lib.ones(2, 2),))",
                "xpu.memory.memory_allocated()", "xpu.memory.mem_get_info()",
                "xpu.random.seed()", "xpu.random.get_rng_state_all()")


@pytest.mark.parametrize("expr", _CUDA_EXTRAS)
def test_cuda_and_xpu_submodules_match_torch(expr):
    torch = pytest.importorskip("torch")
    assert _outcome(lambda: eval(f"lib.{expr}", {"lib": tg})) == \
        _outcome(lambda: eval(f"lib.{expr}", {"lib": torch}))


def test_cuda_stream_none_is_a_no_op_context():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        with lib.cuda.stream(None):
            x = lib.ones(2) * 3
        assert x.tolist() == [3.0, 3.0]


# -- Python's default repr under PyTorch's module path (printed hook dicts, scalers, guards) ----

def _default_reprs(lib):
    import importlib
    import re
    prune = importlib.import_module(f"{lib.__name__}.nn.utils.prune")
    benchmark = importlib.import_module(f"{lib.__name__}.utils.benchmark")
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 2)
    prune.random_unstructured(m, "weight", 0.3)
    prune.l1_unstructured(m, "weight", 0.3)

    class Mine(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            return default_mask

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        objs = [*m._forward_pre_hooks.values(), prune.Identity(), prune.L1Unstructured(0.2), Mine(),
                *lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))._forward_pre_hooks.values(),
                *lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2))._forward_pre_hooks.values(),
                lib.amp.GradScaler("cpu"), lib.cuda.amp.GradScaler(), lib.cpu.amp.GradScaler(),
                lib.amp.autocast("cpu"), lib.cuda.amp.autocast(), lib.cpu.amp.autocast(),
                lib.profiler.profile(), lib.autograd.profiler.record_function("x"),
                benchmark.Timer("x"), lib.autograd.detect_anomaly(),
                lib.autograd.set_detect_anomaly(False),
                lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x),
                lib.cuda.device(0), lib.cuda.StreamContext(None)]
    return [re.sub(r"0x[0-9a-f]+", "0x#", repr(o)) for o in objs]


def test_default_object_reprs_name_torch_modules():
    torch = pytest.importorskip("torch")
    ours, theirs = _default_reprs(tg), _default_reprs(torch)
    # A user's subclass keeps its own module; everything else names PyTorch's.
    assert "test_real47b" in ours[3] and "Mine object" in ours[3]
    assert ours == theirs
    assert "<torch.nn.utils.prune.PruningContainer object" in ours[0]
