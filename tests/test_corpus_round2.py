"""Behaviours the second round of corpus scripts (tools/corpus/, issue 15) needed: container
editing, replacing a registered layer in place, lazy modules, nn.init.orthogonal_ /
trunc_normal_ / eye_, numpy's axis/keepdims spelling on the Python-level ops, flip(dims=...),
and tensors in shared memory across processes (the Hogwild idiom)."""
import multiprocessing

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn


def _names(module):
    return list(module._modules)


# -- containers ---------------------------------------------------------------------------------

def test_sequential_setitem_delitem_insert_pop_keep_pytorch_order():
    seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    elu = nn.ELU()
    seq[1] = elu
    assert seq[1] is elu and _names(seq) == ["0", "1", "2"]
    seq[-1] = nn.GELU()
    assert isinstance(seq[2], nn.GELU)
    del seq[0]
    assert _names(seq) == ["0", "1"] and seq[0] is elu
    seq.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in seq] == ["Tanh", "ELU", "GELU"]
    assert seq.pop(1) is elu and len(seq) == 2
    seq.extend([nn.ReLU()])
    assert len(seq) == 3 and len(seq + nn.Sequential(nn.ReLU())) == 4
    del seq[0:2]
    assert _names(seq) == ["0"] and isinstance(seq[0], nn.ReLU)


def test_container_index_errors_match_pytorch():
    seq = nn.Sequential(nn.ReLU())
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq[5] = nn.ReLU()
    with pytest.raises(TypeError):
        seq["a"] = nn.ReLU()
    with pytest.raises(TypeError, match="cannot assign 'int' as child module '0'"):
        seq[0] = 3
    mlist = nn.ModuleList([nn.ReLU()])
    with pytest.raises(IndexError, match="index 7 is out of range"):
        mlist[7] = nn.ReLU()


def test_module_list_delete_insert_pop_add():
    mlist = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.ELU()])
    del mlist[0]
    mlist.insert(1, nn.GELU())
    assert [type(m).__name__ for m in mlist] == ["Tanh", "GELU", "ELU"] and _names(mlist) == ["0", "1", "2"]
    assert isinstance(mlist.pop(0), nn.Tanh)
    mlist += [nn.ReLU()]
    assert len(mlist) == 3 and len(mlist + nn.ModuleList([nn.ReLU()])) == 4


def test_replacing_a_registered_layer_keeps_its_position():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    seq[0] = nn.Linear(2, 2)
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    layer = seq[0]
    layer.weight = nn.Parameter(tg.zeros(2, 2))
    assert list(layer.state_dict()) == ["weight", "bias"]
    layer.register_buffer("b", None)
    layer.register_buffer("c", tg.zeros(1))
    layer.b = tg.ones(1)
    assert list(layer.state_dict()) == ["weight", "bias", "b", "c"]


def test_containers_against_torch(torch):
    for lib in (torch, tg):
        seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Sigmoid())
        seq[1] = lib.nn.ELU()
        del seq[0]
        seq.insert(1, lib.nn.GELU())
        if lib is torch:
            expected = repr(seq)
    assert repr(seq) == expected


# -- lazy modules -------------------------------------------------------------------------------

def test_lazy_linear_reads_in_features_from_the_first_input():
    layer = nn.LazyLinear(4)
    assert repr(layer) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    assert repr(layer.weight) == "<UninitializedParameter>" and layer.has_uninitialized_params()
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        layer.weight.shape
    out = layer(tg.ones(2, 3))
    assert type(layer) is nn.Linear and layer.in_features == 3
    assert layer.weight.shape == (4, 3) and type(layer.weight) is nn.Parameter
    assert out.shape == (2, 4) and out.requires_grad
    bound = 1 / np.sqrt(3)
    assert np.all(np.abs(layer.weight.detach().numpy()) <= bound)
    assert not layer._forward_pre_hooks


def test_lazy_conv_and_batchnorm_in_a_sequential():
    net = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(),
                        nn.Flatten(), nn.LazyLinear(2))
    assert "LazyConv2d(0, 4" in repr(net) and "LazyBatchNorm2d(0," in repr(net)
    y = net(tg.ones(2, 3, 5, 5))
    assert y.shape == (2, 2)
    assert [type(m).__name__ for m in net] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Linear"]
    assert net[0].weight.shape == (4, 3, 3, 3) and net[1].running_mean.shape == (4,)
    assert int(net[1].num_batches_tracked) == 1
    assert sum(p.numel() for p in net.parameters()) == 4 * 27 + 4 + 8 + 2 * 100 + 2


def test_lazy_module_draws_its_parameters_on_first_forward():
    tg.manual_seed(0)
    expected = tg.rand(3)
    tg.manual_seed(0)
    nn.LazyLinear(5)
    assert tg.equal(tg.rand(3), expected)


def test_lazy_modules_against_torch(torch):
    for lib in (torch, tg):
        net = lib.nn.Sequential(lib.nn.LazyConv1d(3, 2, bias=False), lib.nn.LazyBatchNorm1d(affine=False),
                                lib.nn.Flatten(), lib.nn.LazyLinear(2))
        before = repr(net)
        net(lib.ones(2, 4, 5))
        after = repr(net)
        shapes = [tuple(p.shape) for p in net.parameters()]
        if lib is torch:
            expected = (before, after, shapes)
    assert (before, after, shapes) == expected


# -- nn.init ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (3, 6), (6, 3), (8, 2, 3, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal_times_gain(shape):
    w = nn.init.orthogonal_(tg.empty(*shape), gain=2.0)
    m = w.numpy().reshape(shape[0], -1)
    small = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(small, 4 * np.eye(small.shape[0]), atol=1e-5)


def test_orthogonal_trunc_normal_eye_edge_cases():
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        nn.init.orthogonal_(tg.empty(3))
    assert nn.init.orthogonal_(tg.empty(0, 3)).shape == (0, 3)
    w = nn.init.trunc_normal_(tg.empty(2000), mean=0.0, std=1.0, a=-0.5, b=1.0)
    assert w.min().item() >= -0.5 and w.max().item() <= 1.0 and w.std().item() > 0.3
    assert tg.equal(nn.init.eye_(tg.empty(2, 3)), tg.tensor([[1., 0., 0.], [0., 1., 0.]]))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        nn.init.eye_(tg.empty(2))


def test_orthogonal_matches_torch_properties(torch):
    t = torch.nn.init.orthogonal_(torch.empty(5, 3), gain=torch.nn.init.calculate_gain("relu"))
    w = nn.init.orthogonal_(tg.empty(5, 3), gain=nn.init.calculate_gain("relu"))
    np.testing.assert_allclose(w.numpy().T @ w.numpy(), (t.T @ t).numpy(), atol=1e-5)


# -- numpy argument names -----------------------------------------------------------------------

def test_axis_and_keepdims_on_python_level_ops():
    x = tg.arange(6.).reshape(2, 3)
    assert x.cumsum(axis=0).tolist() == [[0., 1., 2.], [3., 5., 7.]]
    assert tg.cumprod(x, axis=1).tolist() == [[0., 0., 0.], [3., 12., 60.]]
    assert tg.sort(x, axis=0, descending=True).values.tolist() == [[3., 4., 5.], [0., 1., 2.]]
    assert x.argsort(axis=0).tolist() == [[0, 0, 0], [1, 1, 1]]
    assert x.topk(1, axis=0).indices.tolist() == [[1, 1, 1]]
    assert x.nansum(axis=0, keepdims=True).tolist() == [[3., 5., 7.]]
    assert x.aminmax(axis=1).max.tolist() == [2., 5.]
    assert x.flip(dims=(0,)).tolist() == [[3., 4., 5.], [0., 1., 2.]]
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        tg.cumsum(x, dim=0, axis=0)


def test_axis_spelling_against_torch(torch):
    a = np.arange(12.).reshape(3, 4)
    for name, kwargs in [("cumsum", {"axis": 1}), ("cumprod", {"axis": 0}), ("nansum", {"axis": 0}),
                         ("nanmean", {"axis": 1, "keepdims": True}), ("argsort", {"axis": 0})]:
        expected = getattr(torch.tensor(a), name)(**kwargs).numpy()
        np.testing.assert_allclose(getattr(tg.tensor(a), name)(**kwargs).numpy(), expected)


def test_cumsum_axis_gradient(gradcheck):
    gradcheck(lambda t: t.cumsum(axis=1), np.random.default_rng(0).normal(size=(2, 3)))


# -- shared memory ------------------------------------------------------------------------------

def _train_in_place(model, value):
    with tg.no_grad():
        model.weight.fill_(value)


def test_share_memory_moves_values_and_marks_tensors_shared():
    t = tg.arange(3.)
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared() and t.tolist() == [0., 1., 2.]
    view = t[1:]
    assert view.is_shared()
    model = nn.Linear(2, 2)
    assert model.share_memory() is model and all(p.is_shared() for p in model.parameters())


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_a_worker_process_updates_shared_parameters_in_place(start_method):
    import tapegrad.multiprocessing as mp
    model = nn.Linear(2, 2)
    model.share_memory()
    ctx = mp.get_context(start_method)
    proc = ctx.Process(target=_train_in_place, args=(model, 7.0))
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == 0
    assert model.weight.tolist() == [[7.0, 7.0], [7.0, 7.0]]


def test_sharing_strategy_names():
    import tapegrad.multiprocessing as mp
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.Process is multiprocessing.Process


# -- factories and printing ---------------------------------------------------------------------

def test_factories_take_the_shape_as_size_keyword():
    assert tg.zeros(size=(2, 3)).shape == (2, 3) and tg.ones(size=[2]).tolist() == [1.0, 1.0]
    assert tg.empty(size=(1, 2)).shape == (1, 2) and tg.zeros(size=()).shape == ()
    with pytest.raises(TypeError, match="got multiple values for argument 'size'"):
        tg.zeros((2,), size=(3,))
    with pytest.raises(TypeError, match="argument 'size' must be tuple of ints, not int"):
        tg.ones(size=3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        tg.empty(2, foo=1)


def test_size_keyword_against_torch(torch):
    for fn in ("zeros", "ones", "empty"):
        assert tuple(getattr(tg, fn)(size=(2, 1)).shape) == tuple(getattr(torch, fn)(size=(2, 1)).shape)


def test_print_of_a_parameter_says_parameter_containing():
    p = nn.Parameter(tg.tensor([0.5, 1.0]))
    assert str(p) == repr(p) == "Parameter containing:\ntensor([0.5000, 1.0000], requires_grad=True)"
    assert str(tg.tensor([1, 2])) == "tensor([1, 2])"


def test_parameter_print_against_torch(torch):
    assert str(nn.Parameter(tg.tensor([[0.85, 0.75]]))) == str(torch.nn.Parameter(torch.tensor([[0.85, 0.75]])))


def test_one_transport_reducer_for_shared_and_plain_tensors():
    from multiprocessing.reduction import ForkingPickler
    import tapegrad.multiprocessing  # noqa: F401  (registers the reducer, as the DataLoader does)
    big = tg.arange(40000.0).reshape(400, 100)
    assert len(ForkingPickler.dumps(big[3])) < 2000          # a view travels as its own elements
    assert ForkingPickler.loads(ForkingPickler.dumps(big[3])).tolist() == big[3].tolist()
    shared = tg.arange(40000.0).share_memory_()
    assert len(ForkingPickler.dumps(shared)) < 2000          # a shared tensor travels as a handle
    back = ForkingPickler.loads(ForkingPickler.dumps(shared[10:20]))
    assert back.is_shared() and back.tolist() == list(range(10, 20))
    with tg.no_grad():
        back.fill_(-1.0)
    assert shared[10].item() == -1.0 and shared[9].item() == 9.0
