"""Devices on a CPU-only library: Tensor.device / to / cpu / cuda, device= on factories and layers,
nn.Module.to, tapegrad.cuda / backends / accelerator, the default device and thread counts."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _threads


# -- torch parity: the same call under both libraries, same result or same exception -------------

def _outcome(fn, lib):
    """('ok', summary) or ('err', exception type name, first line of the message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(lib)
        except Exception as e:     # noqa: BLE001  (the exception is what is compared)
            return ("err", type(e).__name__, str(e).split("\n")[0])
    if hasattr(r, "shape") and hasattr(r, "dtype") and hasattr(r, "detach"):
        return ("ok", "tensor", str(r.dtype), tuple(r.shape), str(r.device),
                r.detach().numpy().tolist() if "empty" not in getattr(fn, "__name__", "") else None)
    if isinstance(r, lib.nn.Module):
        return ("ok", "module", sorted((k, str(v.dtype)) for k, v in r.state_dict().items()))
    if isinstance(r, (lib.device, lib.dtype)):
        return ("ok", repr(r))
    return ("ok", r)


def _same(fn, torch):
    expected, got = _outcome(fn, torch), _outcome(fn, tg)
    if expected[0] == "err":
        assert got[0] == "err", (expected, got)
        assert got[1] == expected[1], (expected, got)
        # The key phrase: PyTorch's first line, up to its first parenthesis or 60 characters.
        phrase = expected[2].split(" (")[0][:60]
        assert phrase in got[2], (expected, got)
    else:
        assert got == expected


def _x(T):
    return T.arange(6, dtype=T.float32).reshape(2, 3)


TENSOR_DEVICE_CASES = {
    "device": lambda T: _x(T).device,
    "device_type": lambda T: _x(T).device.type,
    "is_cuda": lambda T: _x(T).is_cuda,
    "is_cpu": lambda T: _x(T).is_cpu,
    "get_device": lambda T: _x(T).get_device(),
    "is_pinned": lambda T: _x(T).is_pinned(),
    "pin_memory": lambda T: _x(T).pin_memory(),
    "cpu_is_self": lambda T: (lambda x: x.cpu() is x)(_x(T)),
    "cuda_cpu_device": lambda T: _x(T).cuda(T.device("cpu")),
    "cuda_cpu_str": lambda T: _x(T).cuda("cpu"),
    "cuda_meta_str": lambda T: _x(T).cuda("meta"),
    "cuda_cpu_kw": lambda T: _x(T).cuda(device="cpu"),
    "cuda_bad_str": lambda T: _x(T).cuda("xyz"),
    "cuda_float": lambda T: _x(T).cuda(1.5),
    "cuda_cuda_str": lambda T: _x(T).cuda("cuda:0"),
    "cuda_ordinal": lambda T: _x(T).cuda(0),
    "cuda": lambda T: _x(T).cuda(),
    "cuda_ordinal": lambda T: _x(T).cuda(0),
    "to_cuda": lambda T: _x(T).to("cuda"),
    "to_cuda_device": lambda T: _x(T).to(T.device("cuda", 0)),
    "to_mps": lambda T: _x(T).to("mps"),
    "to_xpu": lambda T: _x(T).to("xpu"),
    "to_ordinal": lambda T: _x(T).to(0),
    "to_bogus": lambda T: _x(T).to("bogus"),
    "to_cpu_is_self": lambda T: (lambda x: x.to("cpu") is x)(_x(T)),
    "to_cpu0_is_self": lambda T: (lambda x: x.to("cpu:0") is x)(_x(T)),
    "to_cpu_copy": lambda T: (lambda x: x.to("cpu", copy=True) is x)(_x(T)),
    "to_dtype": lambda T: _x(T).to(T.float64),
    "to_dtype_nb_copy": lambda T: (lambda x: x.to(T.float32, True, True) is x)(_x(T)),
    "to_device_dtype": lambda T: _x(T).to("cpu", T.int64),
    "to_device_obj_dtype": lambda T: _x(T).to(T.device("cpu"), T.int32),
    "to_device_dtype_kw": lambda T: _x(T).to("cpu", dtype=T.float16),
    "to_kwargs": lambda T: _x(T).to(device="cpu", dtype=T.float64),
    "to_tensor": lambda T: _x(T).to(T.zeros(1, dtype=T.int32)),
    "to_tensor_copy": lambda T: (lambda x: x.to(x, copy=True) is x)(_x(T)),
    "to_python_float": lambda T: _x(T).to(float),
    "to_python_int": lambda T: _x(T).to(int),
    "to_none_dtype": lambda T: _x(T).to(None, T.float64),
    "to_cpu_none": lambda T: (lambda x: x.to("cpu", None) is x)(_x(T)),
    "to_nothing": lambda T: (lambda x: x.to() is x)(_x(T)),
    "to_non_blocking": lambda T: (lambda x: x.to("cpu", non_blocking=True) is x)(_x(T)),
    "to_dtype_and_device_kw": lambda T: _x(T).to(T.float64, device="cpu"),
    "to_two_dtypes": lambda T: _x(T).to(T.float64, T.float32),
    "to_bad_kwarg": lambda T: _x(T).to(foo=1),
    "to_bad_dtype_kw": lambda T: _x(T).to(dtype="float"),
    "to_five_args": lambda T: _x(T).to("cpu", T.float64, False, True, 1),
    "to_grad": lambda T: (lambda a: a.to(T.float64).requires_grad)(
        T.ones(2, requires_grad=True)),
    "element_size": lambda T: [T.zeros(1, dtype=d).element_size()
                               for d in (T.float16, T.float32, T.float64, T.int64, T.bool)],
    "nelement": lambda T: _x(T).nelement(),
    "itemsize_nbytes": lambda T: (_x(T).itemsize, _x(T).nbytes),
    "is_meta_sparse_quantized": lambda T: (_x(T).is_meta, _x(T).is_sparse, _x(T).is_quantized),
}


@pytest.mark.parametrize("name", sorted(TENSOR_DEVICE_CASES))
def test_tensor_device_parity(torch, name):
    _same(TENSOR_DEVICE_CASES[name], torch)


FACTORY_CASES = {
    "tensor": lambda T: T.tensor([1, 2], device="cpu"),
    "tensor_cuda": lambda T: T.tensor([1], device="cuda"),
    "tensor_cuda1": lambda T: T.tensor([1], device=T.device("cuda", 1)),
    "tensor_mps": lambda T: T.tensor([1], device="mps"),
    "tensor_pinned": lambda T: T.tensor([1], pin_memory=True),
    "as_tensor": lambda T: T.as_tensor([1.5], device="cpu"),
    "as_tensor_cuda": lambda T: T.as_tensor([1.5], device="cuda"),
    "zeros": lambda T: T.zeros(2, 3, device="cpu:0"),
    "zeros_device_obj": lambda T: T.zeros(2, device=T.device("cpu", 0)),
    "zeros_cuda": lambda T: T.zeros(2, device="cuda"),
    "zeros_ordinal": lambda T: T.zeros(2, device=0),
    "zeros_float_device": lambda T: T.zeros(2, device=1.5),
    "zeros_bogus": lambda T: T.zeros(2, device="bogus"),
    "zeros_pinned": lambda T: T.zeros(2, pin_memory=True),
    "ones": lambda T: T.ones(2, device="cpu", dtype=T.int32),
    "ones_cuda": lambda T: T.ones(2, device="cuda:0"),
    "full": lambda T: T.full((2,), 7, device="cpu"),
    "full_cuda": lambda T: T.full((2,), 7, device="cuda"),
    "empty_cuda": lambda T: T.empty(2, device="cuda"),
    "empty_shape": lambda T: T.empty(2, 3, device="cpu").shape,
    "zeros_like": lambda T: T.zeros_like(_x(T), device="cpu"),
    "zeros_like_cuda": lambda T: T.zeros_like(_x(T), device="cuda"),
    "zeros_like_list": lambda T: T.zeros_like([1.0]),
    "ones_like": lambda T: T.ones_like(_x(T), dtype=T.int64, device="cpu"),
    "full_like": lambda T: T.full_like(_x(T), 2, dtype=T.int64),
    "full_like_grad": lambda T: T.full_like(_x(T), 2.5, device="cpu", requires_grad=True),
    "empty_like_dtype": lambda T: (lambda e: (str(e.dtype), tuple(e.shape)))(
        T.empty_like(_x(T), dtype=T.int64)),
    "empty_like_cuda": lambda T: T.empty_like(_x(T), device="cuda"),
    "empty_like_int_grad": lambda T: T.empty_like(_x(T), dtype=T.int64, requires_grad=True),
    "arange": lambda T: T.arange(5, device="cpu"),
    "arange_cuda": lambda T: T.arange(5, device="cuda"),
    "linspace": lambda T: T.linspace(0, 1, 5, device="cpu"),
    "linspace_cuda": lambda T: T.linspace(0, 1, 5, device="cuda"),
    "logspace": lambda T: T.logspace(0, 2, 3, device="cpu"),
    "logspace_base2": lambda T: T.logspace(-1, 3, 5, base=2, dtype=T.float64),
    "logspace_int": lambda T: T.logspace(0, 3, 7, dtype=T.int64),
    "logspace_one": lambda T: T.logspace(1.5, 9, 1),
    "logspace_zero": lambda T: T.logspace(0, 1, 0),
    "logspace_negative_steps": lambda T: T.logspace(0, 1, -1),
    "logspace_cuda": lambda T: T.logspace(0, 1, 3, device="cuda"),
    "eye": lambda T: T.eye(2, device="cpu"),
    "eye_cuda": lambda T: T.eye(2, device="cuda"),
    "new_zeros_cuda": lambda T: _x(T).new_ones(2, device="cuda"),
}


@pytest.mark.parametrize("name", sorted(FACTORY_CASES))
def test_factory_device_parity(torch, name):
    _same(FACTORY_CASES[name], torch)


def _net(T):
    return T.nn.Sequential(T.nn.Linear(2, 3), T.nn.BatchNorm1d(3))


MODULE_CASES = {
    "to_cpu_is_self": lambda T: (lambda m: m.to("cpu") is m)(_net(T)),
    "to_float64": lambda T: _net(T).to(T.float64),
    "to_device_dtype": lambda T: _net(T).to("cpu", T.float16),
    "to_kwargs": lambda T: _net(T).to(device="cpu", dtype=T.float64),
    "to_tensor": lambda T: _net(T).to(T.zeros(1, dtype=T.float64)),
    "to_int": lambda T: _net(T).to(T.int64),
    "to_bool_kw": lambda T: _net(T).to(dtype=T.bool),
    "to_int_tensor": lambda T: _net(T).to(T.zeros(1, dtype=T.int64)),
    "to_cuda": lambda T: _net(T).to("cuda"),
    "to_mps": lambda T: _net(T).to("mps"),
    "to_ordinal": lambda T: _net(T).to(0),
    "to_bogus": lambda T: _net(T).to("bogus"),
    "to_dtype_then_device": lambda T: _net(T).to(T.float64, "cpu"),
    "cuda": lambda T: _net(T).cuda(),
    "cuda_ordinal": lambda T: _net(T).cuda(0),
    "cpu_is_self": lambda T: (lambda m: m.cpu() is m)(_net(T)),
    "parameterless_cuda": lambda T: T.nn.ReLU().cuda(),
    "parameterless_to_cuda": lambda T: T.nn.ReLU().to("cuda"),
    "type_float": lambda T: _net(T).type(T.float32),
    "type_string": lambda T: _net(T).type("torch.DoubleTensor"),
    "type_class": lambda T: _net(T).type(T.DoubleTensor),
    "type_int": lambda T: _net(T).type(T.int32),
    "type_bad": lambda T: _net(T).type("foo"),
    "half": lambda T: _net(T).half(),
    "linear_device": lambda T: T.nn.Linear(2, 3, device="cpu", dtype=T.float64),
    "linear_cuda": lambda T: T.nn.Linear(2, 3, device="cuda"),
    "layernorm_device": lambda T: T.nn.LayerNorm(3, device="cpu", dtype=T.float64),
    "layernorm_cuda": lambda T: T.nn.LayerNorm(3, device="cuda"),
    "batchnorm_device": lambda T: T.nn.BatchNorm1d(3, device="cpu", dtype=T.float64),
    "batchnorm_cuda": lambda T: T.nn.BatchNorm1d(3, device="cuda"),
    "embedding_device": lambda T: T.nn.Embedding(4, 2, device="cpu", dtype=T.float64),
    "embedding_cuda": lambda T: T.nn.Embedding(4, 2, device="cuda"),
    "param_device": lambda T: T.nn.Linear(2, 2).weight.device,
}


@pytest.mark.parametrize("name", sorted(MODULE_CASES))
def test_module_device_parity(torch, name):
    _same(MODULE_CASES[name], torch)


BACKEND_CASES = {
    "cuda_is_available": lambda T: T.cuda.is_available(),
    "cuda_device_count": lambda T: T.cuda.device_count(),
    "cuda_is_initialized": lambda T: T.cuda.is_initialized(),
    "cuda_initialized_flag": lambda T: T.cuda._initialized,     # read by reversible networks
    "cuda_manual_seed": lambda T: T.cuda.manual_seed(1),
    "cuda_manual_seed_all": lambda T: T.cuda.manual_seed_all(1),
    "cuda_manual_seed_bad": lambda T: T.cuda.manual_seed("a"),
    "cuda_seed": lambda T: (T.cuda.seed(), T.cuda.seed_all()),
    "cuda_empty_cache": lambda T: T.cuda.empty_cache(),
    "cuda_memory": lambda T: (T.cuda.memory_allocated(), T.cuda.max_memory_allocated(),
                              T.cuda.memory_reserved()),
    "cuda_synchronize": lambda T: T.cuda.synchronize(),
    "cuda_current_device": lambda T: T.cuda.current_device(),
    "cuda_device_name": lambda T: T.cuda.get_device_name(0),
    "cuda_capability": lambda T: T.cuda.get_device_capability(),
    "cuda_properties": lambda T: T.cuda.get_device_properties(0),
    "cuda_initial_seed": lambda T: T.cuda.initial_seed(),
    "cuda_rng_state": lambda T: T.cuda.get_rng_state(),
    "cuda_rng_state_all": lambda T: T.cuda.get_rng_state_all(),
    "cuda_set_rng_state": lambda T: T.cuda.set_rng_state(T.get_rng_state()),
    "cuda_set_rng_state_all": lambda T: T.cuda.set_rng_state_all([T.get_rng_state()]),
    "cuda_set_rng_state_all_empty": lambda T: T.cuda.set_rng_state_all([]),
    "cuda_set_rng_state_all_int": lambda T: T.cuda.set_rng_state_all(5),
    "cuda_init": lambda T: T.cuda.init(),
    "cuda_mem_get_info": lambda T: T.cuda.mem_get_info(),
    "cuda_set_device_cpu": lambda T: T.cuda.set_device("cpu"),
    "cuda_bf16": lambda T: T.cuda.is_bf16_supported(),
    "cuda_arch_list": lambda T: T.cuda.get_arch_list(),
    "mps": lambda T: (T.backends.mps.is_available(), T.backends.mps.is_built()),
    "mps_macos": lambda T: T.backends.mps.is_macos13_or_newer(),
    "cudnn": lambda T: (T.backends.cudnn.is_available(), T.backends.cudnn.enabled,
                        T.backends.cudnn.deterministic, T.backends.cudnn.benchmark,
                        T.backends.cudnn.version()),
    "cuda_built": lambda T: (T.backends.cuda.is_built(), T.backends.cuda.matmul.allow_tf32),
    "accelerator": lambda T: (T.accelerator.is_available(), T.accelerator.current_accelerator(),
                              T.accelerator.device_count()),
    "accelerator_index": lambda T: T.accelerator.current_device_index(),
    "accelerator_sync": lambda T: T.accelerator.synchronize(),
    "get_default_device": lambda T: T.get_default_device(),
    "version_cuda": lambda T: T.version.cuda,
    "set_num_threads_zero": lambda T: T.set_num_threads(0),
    "set_num_threads_float": lambda T: T.set_num_threads(1.5),
    "set_num_interop_zero": lambda T: T.set_num_interop_threads(0),
    "device_select": lambda T: T.device("cuda") if T.cuda.is_available() else T.device("cpu"),
}


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_parity(torch, name):
    _same(BACKEND_CASES[name], torch)


def test_cudnn_flags_parity(torch):
    for lib in (torch, tg):
        cudnn = lib.backends.cudnn
        saved = (cudnn.deterministic, cudnn.benchmark, cudnn.enabled)
        try:
            cudnn.deterministic = True
            cudnn.benchmark = False
            assert cudnn.deterministic is True and cudnn.benchmark is False
            with pytest.raises(RuntimeError, match="set_benchmark_cudnn expects a bool"):
                cudnn.benchmark = 1
            with pytest.raises(RuntimeError, match="set_deterministic_cudnn expects a bool"):
                cudnn.deterministic = "x"
            with cudnn.flags(enabled=False):
                assert cudnn.enabled is False
            assert cudnn.enabled is saved[2]
        finally:
            cudnn.deterministic, cudnn.benchmark, cudnn.enabled = saved


def test_default_device_parity(torch):
    for lib in (torch, tg):
        try:
            lib.set_default_device("cuda")
            with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
                lib.get_default_device()
            with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
                lib.zeros(2)
            with pytest.raises(RuntimeError, match="device type at start of device string"):
                lib.set_default_device("bogus")
            # A failed call leaves the CPU as the default.
            assert lib.get_default_device() == lib.device("cpu")
            lib.set_default_device("cpu:0")
            assert str(lib.get_default_device()) == "cpu:0"
            assert lib.zeros(1).device == lib.device("cpu")
        finally:
            lib.set_default_device(None)
        assert lib.get_default_device() == lib.device("cpu")
        with lib.device("cuda"):
            with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
                lib.ones(2)
            with lib.device("cpu"):
                assert lib.ones(2).device.type == "cpu"
        assert lib.ones(2).device.type == "cpu"


def test_random_tensor_to_matches_torch(torch):
    """Random dtypes, devices and argument forms: same dtype, identity and values as torch."""
    rng = np.random.default_rng(0)
    names = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]
    for _ in range(60):
        src, dst = rng.choice(names, 2)
        values = rng.integers(0, 3, size=(2, 3))
        form = int(rng.integers(0, 5))
        copy = bool(rng.integers(0, 2))
        results = []
        for lib in (torch, tg):
            x = lib.tensor(values).to(getattr(lib, src))
            d = getattr(lib, dst)
            y = [lambda: x.to(d, copy=copy), lambda: x.to("cpu", d, copy=copy),
                 lambda: x.to(device="cpu", dtype=d, copy=copy),
                 lambda: x.to(lib.zeros(1, dtype=d), copy=copy),
                 lambda: x.to(lib.device("cpu"), copy=copy)][form]()
            results.append((str(y.dtype), y is x, y.numpy().tolist()))
        assert results[0] == results[1], (src, dst, form, copy)


# -- without torch: real values and behaviour ------------------------------------------------------

def test_tensor_device_attributes():
    x = tg.ones(2, 3)
    assert x.device == tg.device("cpu") and repr(x.device) == "device(type='cpu')"
    assert x.is_cuda is False and x.is_cpu is True and x.get_device() == -1
    assert x.cpu() is x and x.to("cpu") is x and x.to(tg.device("cpu")) is x
    assert x.to(tg.device("cpu", 0)) is not x       # as PyTorch: 'cpu:0' != a tensor's 'cpu'
    assert x.to("cpu", copy=True) is not x
    assert x.is_pinned() is False
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        x.pin_memory()
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        x.cuda()
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        x.to("cuda:0")
    assert x.element_size() == 4 and x.nelement() == 6 and x.nbytes == 24
    assert isinstance(x.data_ptr(), int) and x.data_ptr() == x.numpy().ctypes.data


def test_tensor_to_converts_and_records():
    a = tg.tensor([1.5, -2.0], requires_grad=True)
    b = a.to("cpu", tg.float64)
    assert b.dtype == tg.float64 and b.tolist() == [1.5, -2.0]
    (b * b).sum().backward()
    assert a.grad.dtype == tg.float32 and a.grad.tolist() == [3.0, -4.0]
    assert a.to(int).dtype == tg.int64 and a.to(float).dtype == tg.float64
    assert a.detach().to(tg.zeros(1, dtype=tg.int32)).tolist() == [1, -2]
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        a.to(tg.float64, device="cpu")
    with pytest.raises(TypeError, match="takes from 0 to 4 positional arguments"):
        a.to("cpu", tg.float64, False, False, 1)


def test_factories_take_cpu_devices_and_refuse_others():
    for spec in (None, "cpu", "cpu:0", tg.device("cpu"), tg.device("cpu", 0)):
        assert tg.zeros(2, device=spec).tolist() == [0.0, 0.0]
        assert tg.tensor([1, 2], device=spec).tolist() == [1, 2]
        assert tg.arange(3, device=spec).tolist() == [0, 1, 2]
    with pytest.raises(AssertionError, match="CUDA"):
        tg.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="not linked with support for mps"):
        tg.eye(2, device="mps")
    with pytest.raises(TypeError, match=r"full\(\): argument 'device' must be torch.device"):
        tg.full((2,), 1.0, device=2.5)
    with pytest.raises(RuntimeError, match="pin_memory=True requires"):
        tg.empty(2, pin_memory=True)
    assert tg.empty_like(tg.zeros(2, 3), dtype=tg.int8).shape == (2, 3)
    assert tg.logspace(0, 2, 3).tolist() == [1.0, 10.0, 100.0]
    assert tg.logspace(0, 3, 4, base=2, dtype=tg.int64).tolist() == [1, 2, 4, 8]


def test_module_to_keeps_parameters_and_casts_grads():
    m = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.BatchNorm1d(2))
    w = m[0].weight
    m[0].weight.grad = tg.ones(2, 2)
    assert m.to("cpu", tg.float64) is m
    assert m[0].weight is w and w.dtype == tg.float64 and w.grad.dtype == tg.float64
    assert m[1].num_batches_tracked.dtype == tg.int64       # to() converts floating tensors only
    m.type(tg.float32)
    assert m[1].num_batches_tracked.dtype == tg.float32     # type() converts every tensor
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        m.to(tg.int64)
    with pytest.raises(AssertionError, match="CUDA"):
        m.cuda()
    assert tg.nn.ReLU().cuda() is not None                  # nothing to move: no error
    assert tg.nn.Linear(2, 2, dtype=tg.float64).weight.dtype == tg.float64


def test_cuda_module_without_cuda():
    assert tg.cuda.is_available() is False and tg.cuda.device_count() == 0
    assert tg.cuda.manual_seed_all(0) is None and tg.cuda.empty_cache() is None
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        tg.cuda.current_device()
    assert tg.backends.mps.is_available() is False
    assert tg.accelerator.current_accelerator() is None


def test_cudnn_flags_remember_what_is_set():
    cudnn = tg.backends.cudnn
    saved = cudnn.deterministic
    try:
        cudnn.deterministic = True
        assert tg.backends.cudnn.deterministic is True
    finally:
        cudnn.deterministic = saved
    with pytest.raises(RuntimeError, match="expects a bool"):
        cudnn.enabled = None


def test_num_threads(monkeypatch):
    monkeypatch.setattr(_threads, "_num_interop_threads", None)
    before = tg.get_num_threads()
    assert before >= 1 and tg.get_num_interop_threads() >= 1
    try:
        tg.set_num_threads(1)
        assert tg.get_num_threads() == 1
    finally:
        tg.set_num_threads(before)
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        tg.set_num_threads(0)
    with pytest.raises(RuntimeError, match="set_num_threads expects an int, but got float"):
        tg.set_num_threads(1.5)
    tg.set_num_interop_threads(2)
    assert tg.get_num_interop_threads() == 2
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        tg.set_num_interop_threads(3)


def test_device_modules_load_lazily():
    code = ("import sys, tapegrad; "
            "print(any(m in sys.modules for m in ('tapegrad.cuda', 'tapegrad.backends', "
            "'tapegrad.accelerator', 'tapegrad._threads')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
