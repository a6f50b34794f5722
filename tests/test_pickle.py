"""pickle, copy.copy and copy.deepcopy of tensors, Parameters, Modules, Optimizers and schedulers."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tapegrad as tg


def roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


def shares(a, b) -> bool:
    return np.shares_memory(a.detach().numpy(), b.detach().numpy())


# -- tensors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.int64, tg.bool, tg.float16, tg.uint8])
def test_pickle_keeps_value_and_dtype(dtype):
    x = tg.tensor([[1, 0, 3], [4, 5, 0]], dtype=dtype)
    y = roundtrip(x)
    assert type(y) is tg.Tensor and y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert not shares(x, y)


def test_pickle_scalar_and_empty():
    assert roundtrip(tg.tensor(3.5)).item() == 3.5
    assert roundtrip(tg.tensor(3.5)).shape == ()
    assert roundtrip(tg.zeros(0, 3)).shape == (0, 3)


def test_pickle_requires_grad_but_not_grad():
    x = tg.arange(4.0).requires_grad_()
    x.grad = tg.ones(4)
    y = roundtrip(x)
    assert y.requires_grad and y.is_leaf and y.grad is None


def test_pickle_non_leaf_becomes_leaf_requiring_grad():
    y = tg.arange(3.0, requires_grad=True) * 2
    z = roundtrip(y)
    assert z.is_leaf and z.requires_grad and z.grad_fn is None
    np.testing.assert_array_equal(z.detach().numpy(), [0, 2, 4])


def test_pickle_view_keeps_offset_strides_and_whole_storage():
    base = tg.arange(12.0)
    v = base.view(3, 4).t()[1:]
    w = roundtrip(v)
    np.testing.assert_array_equal(w.numpy(), v.numpy())
    assert w.numpy().strides == v.numpy().strides
    assert not w.is_contiguous()


def test_pickle_keeps_python_attributes():
    x = tg.ones(2)
    x.tag = {"a": 1}
    assert roundtrip(x).tag == {"a": 1}
    assert copy.deepcopy(x).tag == {"a": 1}


def test_copy_shares_memory_and_drops_graph():
    x = tg.arange(3.0, requires_grad=True)
    x.grad = tg.ones(3)
    c = copy.copy(x)
    assert c is not x and shares(c, x) and c.requires_grad and c.grad is None
    y = x * 2
    cy = copy.copy(y)
    assert cy.is_leaf and cy.requires_grad and shares(cy, y)


def test_deepcopy_copies_value_and_grad():
    x = tg.arange(3.0, requires_grad=True)
    x.grad = tg.full((3,), 2.0)
    d = copy.deepcopy(x)
    assert d.requires_grad and d.is_leaf and not shares(d, x)
    np.testing.assert_array_equal(d.grad.numpy(), [2, 2, 2])
    assert not shares(d.grad, x.grad)
    d2, g2 = copy.deepcopy([x, x.grad])
    assert d2.grad is g2


def test_deepcopy_non_leaf_raises():
    y = tg.ones(2, requires_grad=True) * 3
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user "
                                           r"\(graph leaves\) support the deepcopy protocol"):
        copy.deepcopy(y)


def test_deepcopy_keeps_shared_storage_shared():
    base = tg.arange(10.0)
    v, b, m = copy.deepcopy([base[2:5], base, base.view(2, 5)])
    assert shares(v, b) and shares(m, b) and not shares(b, base)
    b[3] = 100.0
    assert v[1].item() == 100.0 and m[0, 3].item() == 100.0
    alone = copy.deepcopy(base[2:5])
    np.testing.assert_array_equal(alone.numpy(), [2, 3, 4])


def test_deepcopy_memo_returns_same_object():
    x = tg.ones(2)
    a, b = copy.deepcopy([x, x])
    assert a is b


# -- parameters and modules -------------------------------------------------------------------------
def test_parameter_roundtrips():
    for requires_grad in (True, False):
        p = tg.nn.Parameter(tg.ones(2, 3), requires_grad=requires_grad)
        p.grad = tg.ones(2, 3) if requires_grad else None
        for q in (roundtrip(p), copy.deepcopy(p), copy.copy(p)):
            assert type(q) is tg.nn.Parameter and q.requires_grad == requires_grad
            assert q.grad is None      # torch's Parameter.__deepcopy__ does not copy .grad
            np.testing.assert_array_equal(q.detach().numpy(), np.ones((2, 3)))


def test_deepcopy_model_has_independent_parameters():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 2))
    clone = copy.deepcopy(model)
    for (name, p), (name2, q) in zip(model.named_parameters(), clone.named_parameters()):
        assert name == name2 and q is not p and type(q) is tg.nn.Parameter
        assert not shares(p, q)
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    with tg.no_grad():
        clone[0].weight.add_(1.0)
    assert not np.array_equal(clone[0].weight.detach().numpy(), model[0].weight.detach().numpy())
    x = tg.randn(5, 3)
    np.testing.assert_array_equal(roundtrip(model)(x).detach().numpy(), model(x).detach().numpy())


def test_state_dicts_pickle_and_deepcopy():
    model = tg.nn.Linear(2, 3)
    sd = model.state_dict()
    for other in (roundtrip(sd), copy.deepcopy(sd)):
        assert list(other) == list(sd)
        for k in sd:
            np.testing.assert_array_equal(other[k].numpy(), sd[k].numpy())


# -- optimizers and schedulers ----------------------------------------------------------------------
def _make(optimizer_cls, **kw):
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 1))
    opt = optimizer_cls(model.parameters(), **kw)
    sched = tg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched


def _train_step(model, opt, sched, i):
    rng = np.random.default_rng(100 + i)
    x = tg.tensor(rng.standard_normal((5, 3)), dtype=tg.float32)
    y = tg.tensor(rng.standard_normal((5, 1)), dtype=tg.float32)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
    sched.step()


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("optimizer_cls, kw", [(tg.optim.Adam, {"lr": 0.01}),
                                               (tg.optim.SGD, {"lr": 0.1, "momentum": 0.9})])
def test_training_resumes_bit_for_bit(how, optimizer_cls, kw):
    model, opt, sched = _make(optimizer_cls, **kw)
    for i in range(6):
        _train_step(model, opt, sched, i)
    expected = [p.detach().numpy().copy() for p in model.parameters()]

    model, opt, sched = _make(optimizer_cls, **kw)
    for i in range(3):
        _train_step(model, opt, sched, i)
    copier = roundtrip if how == "pickle" else copy.deepcopy
    model, opt, sched = copier((model, opt, sched))
    assert sched.optimizer is opt
    assert all(p is q for p, q in zip(model.parameters(), opt.param_groups[0]["params"]))
    for i in range(3, 6):
        _train_step(model, opt, sched, i)
    for e, p in zip(expected, model.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), e)


def test_optimizer_state_dict_pickles():
    model, opt, sched = _make(tg.optim.Adam, lr=0.01)
    _train_step(model, opt, sched, 0)
    sd = roundtrip(opt.state_dict())
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert roundtrip(sched.state_dict()) == sched.state_dict()


# -- numpy interop (what matplotlib relies on) ------------------------------------------------------
def test_array_protocol_copies_when_asked():
    x = tg.zeros(3)
    a = np.array(x)
    a[0] = 5
    assert x[0].item() == 0
    b = np.asarray(x)
    assert np.shares_memory(b, x.numpy())
    assert np.array(x, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError):
        np.array(x, dtype=np.float64, copy=False)


def test_matplotlib_plots_tensors():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    x = tg.linspace(0, 1, 5)
    fig, ax = plt.subplots()
    (line,) = ax.plot(x, x * 2)
    np.testing.assert_allclose(line.get_ydata(), np.linspace(0, 2, 5), rtol=1e-6)
    plt.close(fig)


# -- torch parity -----------------------------------------------------------------------------------
def test_parity_with_torch_copy_semantics(torch):
    for lib in (tg, torch):
        base = lib.arange(10.0)
        v, b = copy.deepcopy([base[2:5], base])
        b[3] = 100.0
        assert v[1].item() == 100.0
        x = lib.ones(2, requires_grad=True)
        x.grad = lib.ones(2)
        assert copy.deepcopy(x).grad is not None
        assert pickle.loads(pickle.dumps(x)).grad is None
        assert copy.copy(x).grad is None
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.ones(2)
        assert copy.deepcopy(p).grad is None
        with pytest.raises(RuntimeError) as info:
            copy.deepcopy(x * 2)
    assert str(info.value).startswith("Only Tensors created explicitly by the user (graph leaves)")
    t = torch.arange(12.0).view(3, 4).t()[1:]
    g = tg.arange(12.0).view(3, 4).t()[1:]
    assert pickle.loads(pickle.dumps(t)).stride() == \
        tuple(s // 4 for s in roundtrip(g).numpy().strides)


def test_pickle_zero_dim_views_and_reinterpreted_buffers():
    x = tg.arange(3.0)[1]
    for y in (roundtrip(x), copy.deepcopy(x), copy.copy(x)):
        assert y.shape == () and y.item() == 1.0
    raw = np.arange(4, dtype=np.float32)
    z = tg.from_numpy(raw.view(np.int32))          # a view that reinterprets another dtype
    assert roundtrip(z).tolist() == z.tolist() and roundtrip(z[2]).shape == ()
    assert roundtrip(z).dtype == tg.int32
