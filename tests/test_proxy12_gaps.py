"""What the session-12 proxy of public scripts (mrdbourke/pytorch-deep-learning,
harvardnlp/annotated-transformer, srush/Tensor-Puzzles) touched that tapegrad lacked or did
differently: the torch.utils.data.distributed module, PyTorch 2.13's dtype messages of the
convolutions, ..."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


# -- torch.utils.data.distributed ---------------------------------------------------------------

def test_utils_data_distributed_module_holds_the_distributed_sampler():
    mod = importlib.import_module("tapegrad.utils.data.distributed")
    assert mod.DistributedSampler is tg.utils.data.DistributedSampler
    assert mod.__all__ == ["DistributedSampler"]
    s = mod.DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)
    assert list(s) == [1, 4, 7, 0] and len(s) == 4


def test_distributed_sampler_without_a_process_group_raises_as_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    from tapegrad.utils.data.distributed import DistributedSampler
    for cls in (TorchSampler, DistributedSampler):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            cls(range(10))
        with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
            cls(range(10), num_replicas=3, rank=3)
    for kw in (dict(shuffle=False), dict(shuffle=False, drop_last=True)):
        for rank in range(3):
            assert list(DistributedSampler(range(11), num_replicas=3, rank=rank, **kw)) == \
                list(TorchSampler(range(11), num_replicas=3, rank=rank, **kw))


# -- convolution dtype checks (PyTorch 2.13's order and messages) -------------------------------

_DTYPES = ["float32", "float64", "float16", "uint8", "int64"]


def _conv_error(lib, fn, xd, wd, bd, transposed=False):
    nd = {"conv1d": 1, "conv2d": 2, "conv3d": 3}[fn]
    x = lib.ones((1, 3) + (6,) * nd, dtype=getattr(lib, xd))
    w = lib.ones(((3, 4) if transposed else (4, 3)) + (3,) * nd, dtype=getattr(lib, wd))
    b = None if bd is None else lib.ones(4, dtype=getattr(lib, bd))
    f = getattr(lib.nn.functional, fn.replace("conv", "conv_transpose") if transposed else fn)
    try:
        out = f(x, w, b)
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e).splitlines()[0]
    return "ok", str(out.dtype).replace("tapegrad.", "torch.")


@pytest.mark.parametrize("fn", ["conv1d", "conv2d", "conv3d"])
@pytest.mark.parametrize("xd", _DTYPES)
@pytest.mark.parametrize("wd", _DTYPES)
@pytest.mark.parametrize("bd", [None] + _DTYPES)
def test_conv_dtype_mismatch_messages_match_torch(fn, xd, wd, bd):
    torch = pytest.importorskip("torch")
    if xd == wd and (bd is None or bd == xd) and xd in ("float16",):
        pytest.skip("half convolutions on CPU are not compared here")
    expected = _conv_error(torch, fn, xd, wd, bd)
    assert _conv_error(tg, fn, xd, wd, bd) == expected


@pytest.mark.parametrize("xd,wd", [("float32", "float64"), ("float64", "float32"),
                                   ("int64", "float32")])
def test_conv_transpose_weight_dtype_mismatch_message_matches_torch(xd, wd):
    torch = pytest.importorskip("torch")
    assert _conv_error(tg, "conv2d", xd, wd, None, True) == \
        _conv_error(torch, "conv2d", xd, wd, None, True)


# Which words a float32 input with a float64 weight gets depends on the backend PyTorch picks
# (MKLDNN names legacy tensor types): batch size, kernel size, stride, groups, input size.
_BACKEND_CASES = [  # (input shape, weight shape, kwargs)
    ((1, 3, 8, 8), (4, 3, 3, 3), {}), ((2, 3, 8, 8), (4, 3, 3, 3), {}),
    ((1, 3, 8, 8), (4, 3, 5, 5), {}), ((1, 3, 8, 8), (4, 3, 3, 5), {}),
    ((1, 3, 8, 8), (4, 3, 3, 3), {"stride": 2}), ((1, 3, 100, 100), (4, 3, 3, 3), {}),
    ((1, 4, 8, 8), (4, 2, 3, 3), {"groups": 2}), ((1, 3, 8, 8), (4, 3, 1, 1), {}),
    ((2, 3, 8, 8), (4, 3, 1, 1), {}), ((3, 8, 8), (4, 3, 3, 3), {}),
    ((2, 3, 8), (4, 3, 3), {}), ((1, 3, 8), (4, 3, 5), {}), ((1, 3, 3000), (4, 3, 3), {}),
    ((2, 3, 4, 4, 4), (4, 3, 3, 3, 3), {}), ((1, 3, 4, 4, 4), (4, 3, 3, 3, 3), {}),
    ((1, 3, 8, 8, 8), (4, 3, 3, 5, 5), {}), ((1, 3, 8, 8, 8), (4, 3, 3, 3, 3), {"dilation": 2}),
]


@pytest.mark.parametrize("case", range(len(_BACKEND_CASES)))
@pytest.mark.parametrize("wd", ["float64", "float16"])
def test_conv_weight_dtype_message_follows_torchs_backend_choice(case, wd):
    torch = pytest.importorskip("torch")
    xs, ws, kw = _BACKEND_CASES[case]
    fn = {3: "conv1d", 4: "conv2d", 5: "conv3d"}[len(ws)]

    def error(lib):
        with pytest.raises(RuntimeError) as info:
            getattr(lib.nn.functional, fn)(lib.ones(xs), lib.ones(ws, dtype=getattr(lib, wd)), **kw)
        return str(info.value)
    # the backend choice counts intra-op threads (1x1 kernels): compare at torch's count
    threads = tg.get_num_threads()
    tg.set_num_threads(torch.get_num_threads())
    try:
        assert error(tg) == error(torch)
    finally:
        tg.set_num_threads(threads)


# -- DataLoader(pin_memory=True) warns once per script, as PyTorch -------------------------------

_PIN_SCRIPT = """
import warnings, {lib} as torch
warnings.simplefilter("default")
loaders = [torch.utils.data.DataLoader(list(range(4)), batch_size=2, pin_memory=True)
           for _ in range(2)]
def train(dl):
    for _ in dl: pass
def test(dl):
    for _ in dl: pass
for epoch in range(2):
    train(loaders[0]); test(loaders[1])
"""


def test_pin_memory_warning_shows_once_across_loops_as_torch():
    pytest.importorskip("torch")
    import subprocess
    import sys
    counts = {}
    for lib in ("torch", "tapegrad"):
        run = subprocess.run([sys.executable, "-c", _PIN_SCRIPT.format(lib=lib)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        counts[lib] = run.stderr.count("UserWarning: 'pin_memory' argument is set as true")
    assert counts == {"torch": 1, "tapegrad": 1}


# -- linear with a bias checks dtypes before shapes, as PyTorch's addmm ---------------------------

def _linear_error(lib, xs, ws, bs, xd, wd, bd):
    x = lib.ones(xs, dtype=getattr(lib, xd))
    w = lib.ones(ws, dtype=getattr(lib, wd))
    b = None if bs is None else lib.ones(bs, dtype=getattr(lib, bd))
    try:
        out = lib.nn.functional.linear(x, w, b)
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e)
    return "ok", tuple(out.shape), str(out.dtype).replace("tapegrad.", "torch.")


@pytest.mark.parametrize("xs,ws,bs", [((3, 28), (10, 28), (10,)), ((3, 28), (10, 27), (10,)),
                                      ((2, 3, 28), (10, 27), (10,)), ((28,), (10, 27), (10,)),
                                      ((3, 28), (10, 27), (3, 10)), ((3, 28), (10, 28), None),
                                      ((28, 28), (10, 784), (10,)), ((28, 28), (10, 784), None)])
@pytest.mark.parametrize("xd,wd,bd", [("uint8", "float32", "float32"),
                                      ("float64", "float32", "float32"),
                                      ("float64", "float32", "float64"),
                                      ("float32", "float32", "float64"),
                                      ("float32", "float32", "float32")])
def test_linear_dtype_and_shape_errors_match_torch(xs, ws, bs, xd, wd, bd):
    torch = pytest.importorskip("torch")
    assert _linear_error(tg, xs, ws, bs, xd, wd, bd) == _linear_error(torch, xs, ws, bs, xd, wd, bd)


def test_linear_layer_on_a_uint8_image_names_the_dtypes_as_torch():
    # pytorch-deep-learning's "most common errors": a model fed the raw uint8 image
    torch = pytest.importorskip("torch")
    msgs = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(784, 10))
        with pytest.raises(RuntimeError) as info:
            model(lib.zeros(28, 28, dtype=lib.uint8))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] == "mat1 and mat2 must have the same dtype, but got Byte and Float"
