"""Idioms of public beginner/intermediate PyTorch tutorial collections (task real48a: Korean,
Chinese and other non-English tutorial repositories), each compared with PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _close(ours, theirs, rtol=1e-5, atol=1e-6):
    assert str(ours.dtype) == str(theirs.dtype), (ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


# Editors' auto-import writes `from torch._C import device` (dtype, Size, layout, ...): torch._C's
# public names are torch's top-level objects.
@pytest.mark.parametrize("name", ["device", "dtype", "Size", "layout", "memory_format", "qscheme",
                                  "finfo", "iinfo", "default_generator", "get_default_dtype",
                                  "get_num_threads", "is_grad_enabled", "Generator"])
def test_c_public_names_are_top_level_objects(name):
    assert getattr(torch._C, name) is getattr(torch, name)
    assert getattr(tg._C, name) is getattr(tg, name)
    ns = {}
    exec(f"from tapegrad._C import {name}", ns)
    assert ns[name] is getattr(tg, name)


def test_c_auto_import_device_in_use():
    from tapegrad._C import device as tg_device
    from torch._C import device as t_device
    assert str(tg.zeros(2, device=tg_device("cpu")).device) == str(torch.zeros(2, device=t_device("cpu")).device)
    assert repr(tg_device("cpu")) == repr(t_device("cpu"))


@pytest.mark.parametrize("name", ["int32", "float32", "nn", "Tensor", "tensor"])
def test_c_names_torch_lacks_stay_missing(name):
    assert not hasattr(torch._C, name)
    with pytest.raises(AttributeError):
        getattr(tg._C, name)


# ... and `from torch._C import Node` (Value, Type, NoneType, Graph): TorchScript's IR classes,
# imported by accident and never used; they import, match no tensor and are not constructed.
@pytest.mark.parametrize("name", ["Node", "Value", "Type", "NoneType", "Use", "Block", "TensorType"])
def test_c_ir_classes_without_constructor(name):
    ours, theirs = getattr(tg._C, name), getattr(torch._C, name)
    assert isinstance(ours, type) and isinstance(theirs, type)
    assert repr(ours) == repr(theirs)
    assert not isinstance(tg.zeros(1), ours) and not isinstance(torch.zeros(1), theirs)
    with pytest.raises(TypeError, match="No constructor defined") as expected:
        theirs()
    with pytest.raises(TypeError) as got:
        ours()
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("name", ["Graph", "LiteScriptModule", "ScriptModule", "FunctionSchema"])
def test_c_ir_classes_import(name):
    ns = {}
    exec(f"from tapegrad._C import {name}", ns)
    assert isinstance(ns[name], type) and ns[name] is getattr(tg._C, name)
    with pytest.raises(NotImplementedError, match="TorchScript IR"):
        ns[name]()


def test_c_classes_with_another_home():
    assert torch._C.ScriptFunction is torch.jit.ScriptFunction
    assert tg._C.ScriptFunction is tg.jit.ScriptFunction
    assert torch._C.JITException is torch.jit.Error and tg._C.JITException is tg.jit.Error
    for lib in (torch, tg):
        assert isinstance(lib.zeros(2), lib._C.TensorBase)
        assert issubclass(lib.futures.Future, lib._C.Future)


# A checkpoint saved on a GPU (tutorial repositories ship them) loaded on a CPU-only machine: the
# storages' saved location decides, as PyTorch's restore_location does.
@pytest.fixture
def cuda_checkpoint(tmp_path, monkeypatch):
    import torch.serialization as ser
    monkeypatch.setattr(ser, "location_tag", lambda storage: "cuda:0")
    path = tmp_path / "cuda_sd.pt"
    torch.save({"w": torch.arange(6.).reshape(2, 3), "b": torch.ones(2)}, path)
    monkeypatch.undo()
    return path


def _load_outcome(lib, path, **kwargs):
    try:
        loaded = lib.load(path, **kwargs)
    except Exception as e:
        return type(e).__name__, str(e).split(".")[0]
    return {k: v.tolist() for k, v in loaded.items()}


@pytest.mark.parametrize("kwargs", [
    {}, {"weights_only": False}, {"map_location": "cpu"}, {"map_location": "cuda:0"},
    {"map_location": torch.device("cpu")},
    {"map_location": {"cuda:0": "cpu"}}, {"map_location": {"cuda:1": "cpu"}},
    {"map_location": {"cuda:0": "cpu", "elsewhere": "cuda:1"}},
    {"map_location": lambda storage, location: None},
    {"map_location": lambda storage, location: storage}], ids=str)
def test_load_gpu_checkpoint_on_cpu(cuda_checkpoint, kwargs):
    expected = _load_outcome(torch, cuda_checkpoint, **kwargs)
    if isinstance(kwargs.get("map_location"), torch.device):
        kwargs["map_location"] = tg.device(str(kwargs["map_location"]))
    assert _load_outcome(tg, cuda_checkpoint, **kwargs) == expected


def test_load_map_location_callable_gets_saved_location(cuda_checkpoint, tmp_path):
    # SILENT before: the callable was told "cpu" whatever the file said
    for lib, path in ((torch, cuda_checkpoint), (tg, cuda_checkpoint)):
        seen = []
        lib.load(path, map_location=lambda storage, location: seen.append(location) or storage)
        assert seen == ["cuda:0", "cuda:0"]
    cpu_file = tmp_path / "cpu.pt"
    tg.save({"x": tg.ones(3)}, cpu_file)
    for lib in (torch, tg):
        seen = []
        lib.load(cpu_file, map_location=lambda storage, location: seen.append(location) or storage)
        assert seen == ["cpu"]
