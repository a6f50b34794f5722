"""What real tutorial and pytorch/examples scripts touch that tapegrad lacked (issue 15, round
against the real scripts): in-place shape methods, nn.parallel, torch.onnx, whole-model pickles
of layers holding functions, torch's nn.modules file layout, RNN.flatten_parameters."""
from __future__ import annotations

import importlib
import io
import pickle

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn
import tapegrad.nn.functional as F


# -- unsqueeze_ / squeeze_ / t_ / transpose_ --------------------------------------------------

IN_PLACE_CASES = [
    ((3,), "unsqueeze_", (0,)), ((3,), "unsqueeze_", (-1,)), ((1, 2, 1), "squeeze_", ()),
    ((1, 2, 1), "squeeze_", (0,)), ((1, 2, 1), "squeeze_", (-1,)), ((2, 3), "t_", ()),
    ((3,), "t_", ()), ((), "t_", ()), ((2, 3, 4), "transpose_", (0, 2)),
    ((2, 3), "swapaxes_", (0, 1)), ((2, 3), "swapdims_", (1, 0)),
]


@pytest.mark.parametrize("shape,method,args", IN_PLACE_CASES)
def test_in_place_shape_methods_match_torch(torch, shape, method, args):
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    ours, theirs = tg.tensor(data), torch.tensor(data)
    assert getattr(ours, method)(*args) is ours
    getattr(theirs, method)(*args)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.is_contiguous() == theirs.is_contiguous()


def test_in_place_shape_methods_keep_storage_and_identity():
    x = tg.zeros(2, 3)
    row = x[0]
    row.unsqueeze_(0)
    assert row.shape == (1, 3)
    row[0, 1] = 5.0                     # still a view of x's storage
    assert x[0, 1].item() == 5.0
    img = tg.rand(3, 8, 8)
    same = img.unsqueeze_(0)
    assert same is img and img.shape == (1, 3, 8, 8) and img.ndimension() == 4


def test_in_place_shape_method_errors_match_torch(torch):
    for lib in (tg, torch):
        with pytest.raises(IndexError, match="Dimension out of range"):
            lib.rand(3).unsqueeze_(3)
        with pytest.raises(RuntimeError, match="t_\\(\\) expects a tensor with <= 2 dimensions"):
            lib.rand(2, 3, 4).t_()
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            lib.rand(3, requires_grad=True).unsqueeze_(0)
        with lib.no_grad():
            p = lib.rand(3, requires_grad=True)
            p.unsqueeze_(0)
        assert tuple(p.shape) == (1, 3) and p.requires_grad


def test_in_place_shape_method_on_graph_tensor_keeps_history():
    x = tg.rand(3, requires_grad=True)
    y = x * 2
    y.unsqueeze_(0)          # (tests/test_inplace_view_ops.py covers the family)
    assert y.shape == (1, 3) and y.grad_fn.name() == "UnsqueezeBackward1"     # (PyTorch's)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# -- nn.parallel ------------------------------------------------------------------------------

def test_data_parallel_on_cpu_matches_torch(torch):
    importlib.import_module("tapegrad.nn.parallel")
    assert nn.parallel.DataParallel is nn.DataParallel
    model = nn.Linear(2, 3)
    wrapped = nn.DataParallel(model)
    theirs = torch.nn.DataParallel(torch.nn.Linear(2, 3))
    assert wrapped.device_ids == theirs.device_ids == []
    assert list(wrapped.state_dict()) == list(theirs.state_dict()) == ["module.weight", "module.bias"]
    assert repr(wrapped).splitlines()[0] == repr(theirs).splitlines()[0] == "DataParallel("
    x = tg.rand(4, 2)
    assert tg.equal(wrapped(x), model(x))
    assert tg.equal(wrapped(input=x), model(x))
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            lib.nn.parallel.data_parallel(lib.nn.Linear(2, 3), lib.rand(4, 2))


def test_data_parallel_trains_the_wrapped_module():
    tg.manual_seed(0)
    model = nn.Linear(2, 1)
    wrapped = nn.DataParallel(model)
    before = model.weight.detach().clone()
    opt = tg.optim.SGD(wrapped.parameters(), lr=0.1)
    wrapped(tg.ones(4, 2)).sum().backward()
    opt.step()
    np.testing.assert_allclose(model.weight.detach().numpy(), before.numpy() - 0.1 * 4, rtol=1e-6)


# -- torch.onnx, torch.testing ----------------------------------------------------------------

def test_onnx_module_imports_and_export_says_it_is_unavailable(torch):
    onnx = importlib.import_module("tapegrad.onnx")
    assert onnx.is_in_onnx_export() is False and torch.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="ONNX"):
        tg.onnx.export(nn.Linear(2, 2), (tg.rand(1, 2),), io.BytesIO())


def test_testing_is_reachable_as_an_attribute():
    assert tg.testing.numeric_grad is not None


# -- whole-model pickles ----------------------------------------------------------------------

def test_public_functions_pickle_by_name():
    for fn in (F.relu, F.gelu, tg.abs, tg.max, tg.relu_, tg.clamp_):
        assert pickle.loads(pickle.dumps(fn)) is fn


def test_save_and_load_whole_transformer_layer(tmp_path):
    tg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    path = tmp_path / "layer.pt"
    tg.save(layer, path)
    loaded = tg.load(path, weights_only=False)
    assert loaded.activation is F.relu
    x = tg.rand(3, 2, 8)
    layer.eval()
    loaded.eval()
    np.testing.assert_allclose(loaded(x).detach().numpy(), layer(x).detach().numpy(), rtol=1e-6)


# -- nn.modules file layout -------------------------------------------------------------------

def test_nn_modules_files_hold_the_classes_torch_keeps_there(torch):
    import pkgutil
    missing = []
    for info in pkgutil.iter_modules(torch.nn.modules.__path__):
        if info.name.startswith("_"):
            # Private files (torch.nn.modules._functions) hold other classes of a public name:
            # _functions.SyncBatchNorm is the autograd.Function behind nn.SyncBatchNorm.
            continue
        theirs = importlib.import_module(f"torch.nn.modules.{info.name}")
        names = [n for n, o in vars(theirs).items()
                 if isinstance(o, type) and o.__module__ == theirs.__name__ and hasattr(nn, n)]
        if not names:
            continue
        ours = importlib.import_module(f"tapegrad.nn.modules.{info.name}")
        missing += [f"{info.name}.{n}" for n in names if getattr(ours, n, None) is not getattr(nn, n)]
    assert missing == []


def test_safe_globals_path_names_resolve():
    from tapegrad.nn.modules import activation, batchnorm, linear, padding
    assert activation.MultiheadAttention is nn.MultiheadAttention
    assert linear.NonDynamicallyQuantizableLinear.__mro__[1] is nn.Linear
    assert batchnorm.BatchNorm2d is nn.BatchNorm2d and padding.ZeroPad2d is nn.ZeroPad2d


# -- RNN.flatten_parameters -------------------------------------------------------------------

@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_flatten_parameters_is_a_no_op_on_cpu(torch, cls):
    rnn = getattr(nn, cls)(3, 4)
    before = [p.detach().clone() for p in rnn.parameters()]
    assert rnn.flatten_parameters() is None
    assert getattr(torch.nn, cls)(3, 4).flatten_parameters() is None
    assert all(tg.equal(a, b) for a, b in zip(before, rnn.parameters()))


# -- grad_fn.next_functions of `2 * t` and `2 + t` --------------------------------------------

@pytest.mark.parametrize("expr", ["2 * b", "b * 2", "2 + b", "b + 2", "2.5 * b", "1 + b"])
def test_scalar_on_the_left_is_the_second_input_as_in_torch(torch, expr):
    # The intro autograd tutorial walks d.grad_fn.next_functions[0][0] back to the leaf.
    names = []
    for lib in (tg, torch):
        b = lib.ones(3, requires_grad=True).sin()
        r = eval(expr, {"b": b})
        names.append([None if f is None else f.name() for f, _ in r.grad_fn.next_functions])
        assert r.grad_fn.next_functions[0][0].next_functions[0][0].name() == \
            "torch::autograd::AccumulateGrad"
    assert names[0] == names[1] == ["SinBackward0", None]


def test_reversed_scalar_ops_keep_values_and_dtypes():
    x = tg.arange(3)
    assert (2 * x).dtype == tg.int64 and (2.5 * x).dtype == tg.float32
    assert (2 * x).tolist() == [0, 2, 4] and (1 + x).tolist() == [1, 2, 3]
    assert (True + tg.tensor([True])).dtype == tg.bool
    y = tg.tensor([1.0, 2.0], requires_grad=True)
    (3 * y + 1).sum().backward()
    assert y.grad.tolist() == [3.0, 3.0]
