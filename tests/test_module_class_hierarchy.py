"""nn's classes relate as PyTorch's do, so a script's `isinstance(m, nn.Dropout)` or
`isinstance(m, nn.modules.batchnorm._BatchNorm)` selects the same modules (silent before: a
Dropout2d was a Dropout, a Hardsigmoid a Hardswish, a ReflectionPad2d a ReflectionPad1d, a
ZeroPad2d not a ConstantPad2d, a LazyBatchNorm2d a BatchNorm2d before its first forward); the
private bases and helper modules scripts import from PyTorch's file layout; nn.Dropout's
`inplace=True` (ignored before: the input was left unchanged)."""
import collections
import inspect

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _public_classes():
    return [n for n in dir(torch.nn) if inspect.isclass(getattr(torch.nn, n))
            and inspect.isclass(getattr(tg.nn, n, None))]


@pytest.mark.parametrize("namespace,least", [
    ("nn", 150), ("optim", 10), ("optim.lr_scheduler", 15), ("distributions", 50),
    ("distributions.constraints", 30), ("distributions.transforms", 15), ("utils.data", 10),
    ("nn.parameter", 4), ("", 30)])
def test_classes_subclass_each_other_as_in_torch(namespace, least):
    """Same siblings: the optim schedulers are no `_LRScheduler` (PyTorch's deprecated base is
    its own subclass), greater_than_eq no greater_than, positive_definite a symmetric."""
    import importlib
    suffix = "." + namespace if namespace else ""
    theirs = importlib.import_module("torch" + suffix)
    mine = importlib.import_module("tapegrad" + suffix)
    names = [n for n in dir(theirs) if inspect.isclass(getattr(theirs, n))
             and inspect.isclass(getattr(mine, n, None))]
    assert len(names) >= least
    differ = [(a, b) for a in names for b in names if a != b
              and issubclass(getattr(theirs, a), getattr(theirs, b))
              != issubclass(getattr(mine, a), getattr(mine, b))]
    assert differ == []


PRIVATE_BASES = [
    ("batchnorm", "_NormBase"), ("batchnorm", "_BatchNorm"), ("batchnorm", "_LazyNormBase"),
    ("instancenorm", "_InstanceNorm"), ("instancenorm", "_NormBase"),
    ("dropout", "_DropoutNd"), ("conv", "_ConvNd"), ("conv", "_ConvTransposeNd"),
    ("pooling", "_MaxPoolNd"), ("pooling", "_AvgPoolNd"), ("pooling", "_AdaptiveAvgPoolNd"),
    ("pooling", "_AdaptiveMaxPoolNd"), ("loss", "_Loss"), ("loss", "_WeightedLoss"),
    ("padding", "_ConstantPadNd"), ("padding", "_ReflectionPadNd"),
    ("padding", "_ReplicationPadNd"), ("padding", "_CircularPadNd"),
]


@pytest.mark.parametrize("module,base", PRIVATE_BASES)
def test_private_bases_select_the_same_public_classes(module, base):
    import importlib
    tbase = getattr(importlib.import_module(f"torch.nn.modules.{module}"), base)
    gbase = getattr(importlib.import_module(f"tapegrad.nn.modules.{module}"), base)
    names = _public_classes()
    assert ([n for n in names if issubclass(getattr(torch.nn, n), tbase)]
            == [n for n in names if issubclass(getattr(tg.nn, n), gbase)])


def test_init_loop_over_modules_with_isinstance_matches_torch():
    def build(lib):
        return lib.nn.Sequential(lib.nn.Conv2d(1, 2, 3), lib.nn.BatchNorm2d(2),
                                 lib.nn.Dropout2d(0.3), lib.nn.Hardsigmoid(),
                                 lib.nn.ZeroPad2d(1), lib.nn.Flatten(), lib.nn.Dropout(0.2),
                                 lib.nn.LazyBatchNorm1d())

    def selected(lib):
        model = build(lib)
        return [[type(m).__name__ for m in model.modules() if isinstance(m, kinds)]
                for kinds in (lib.nn.Dropout, lib.nn.modules.dropout._DropoutNd,
                              lib.nn.Hardswish, lib.nn.ConstantPad2d, lib.nn.BatchNorm1d,
                              lib.nn.modules.batchnorm._BatchNorm)]
    assert selected(tg) == selected(torch)


def test_lazy_norms_become_their_class_at_the_first_forward():
    m = tg.nn.LazyBatchNorm2d()
    assert not isinstance(m, tg.nn.BatchNorm2d)
    assert type(m.running_mean).__name__ == "UninitializedBuffer"
    assert not isinstance(m.running_mean, tg.nn.Parameter)
    assert tg.nn.parameter.is_lazy(m.running_mean) and tg.nn.parameter.is_lazy(m.weight)
    m(tg.randn(2, 3, 4, 4))
    assert type(m) is tg.nn.BatchNorm2d and m.running_mean.shape == (3,)
    with pytest.raises(ValueError, match="expected 4D input"):
        tg.nn.LazyBatchNorm2d()(tg.randn(2, 3))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        tg.nn.LazyInstanceNorm1d()(tg.randn(2, 3, 4, 5))


@pytest.mark.parametrize("cls", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d"])
def test_dropout_inplace_overwrites_its_input_as_torch(cls):
    # 64 channels: all kept at p = 0.5 has probability 2**-64.
    shape = {"Dropout": (2, 64, 4), "Dropout1d": (2, 32, 4), "Dropout2d": (2, 32, 2, 2),
             "Dropout3d": (2, 32, 2, 2, 2)}[cls]
    for lib in (tg, torch):
        x = lib.ones(shape)
        y = getattr(lib.nn, cls)(0.5, inplace=True)(x)
        assert y is x
        assert set(np.unique(x.numpy()).tolist()) <= {0.0, 2.0}
        assert (x.numpy() == 0).any()
    for lib in (tg, torch):
        x = lib.ones(shape)
        y = getattr(lib.nn, cls)(0.5)(x)
        assert y is not x and (x.numpy() == 1).all()


def test_dropout_reprs_and_bad_probability():
    for name in ["Dropout", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout"]:
        assert repr(getattr(tg.nn, name)(0.25)) == repr(getattr(torch.nn, name)(0.25))
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            getattr(tg.nn, name)(1.5)


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.ZeroPad2d(1), lambda lib: lib.nn.ZeroPad1d((1, 2)),
    lambda lib: lib.nn.ZeroPad3d(1), lambda lib: lib.nn.ConstantPad2d((1, 0, 2, 1), 3.5),
    lambda lib: lib.nn.ReflectionPad2d(1), lambda lib: lib.nn.ReplicationPad3d(1),
    lambda lib: lib.nn.CircularPad2d((1, 1, 0, 1)), lambda lib: lib.nn.ReflectionPad1d(2),
])
def test_padding_modules_values_gradients_and_reprs(make):
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 4, 5))
    results = []
    for lib in (tg, torch):
        m = make(lib)
        n_dims = {"1d": 3, "2d": 4, "3d": 5}[type(m).__name__[-2:]]
        t = lib.tensor(x[(0,) * (5 - n_dims)], requires_grad=True)
        y = m(t)
        (y * y).sum().backward()
        results.append((repr(m), y.detach().numpy(), t.grad.numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1])
    np.testing.assert_allclose(results[0][2], results[1][2])


def test_pools_and_weighted_losses_keep_their_state():
    assert repr(tg.nn.AvgPool1d(3)) == repr(torch.nn.AvgPool1d(3))
    assert repr(tg.nn.AvgPool2d(2, 1)) == repr(torch.nn.AvgPool2d(2, 1))
    assert repr(tg.nn.AdaptiveAvgPool2d((2, None))) == repr(torch.nn.AdaptiveAvgPool2d((2, None)))
    w = [1.0, 2.0, 3.0]
    for name in ["MultiMarginLoss", "MultiLabelSoftMarginLoss"]:
        g = getattr(tg.nn, name)(weight=tg.tensor(w))
        t = getattr(torch.nn, name)(weight=torch.tensor(w))
        assert list(g.state_dict()) == list(t.state_dict()) == ["weight"]
        x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
        y = [0, 2, 1, 1] if name == "MultiMarginLoss" else (x > 0).astype(np.float32)
        out_g = g(tg.tensor(x), tg.tensor(y))
        out_t = t(torch.tensor(x), torch.tensor(y))
        np.testing.assert_allclose(out_g.item(), out_t.item(), rtol=1e-6)


def test_nn_modules_utils_as_torch():
    from torch.nn.modules import utils as tu
    from tapegrad.nn.modules import utils as gu
    for name in ["_single", "_pair", "_triple", "_quadruple"]:
        for value in [3, [1, 2], (4, 5, 6), "ab", range(2)]:
            assert getattr(gu, name)(value) == getattr(tu, name)(value)
    assert gu._ntuple(5)(0) == tu._ntuple(5)(0)
    assert gu._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)
    assert gu._list_with_default([2, None], (5, 6, 7)) == tu._list_with_default([2, None],
                                                                               (5, 6, 7))
    assert gu._list_with_default(3, (5, 6)) == 3
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        gu._list_with_default([1, 2], [4, 5])

    def state_dicts():
        sd = collections.OrderedDict([("module.a", 1), ("module.b.c", 2), ("x", 3),
                                      ("modulex", 4)])
        sd._metadata = collections.OrderedDict([("", {}), ("module", {"v": 1}),
                                                ("module.b", {"v": 2})])
        return sd
    mine, theirs = state_dicts(), state_dicts()
    gu.consume_prefix_in_state_dict_if_present(mine, "module.")
    tu.consume_prefix_in_state_dict_if_present(theirs, "module.")
    assert list(mine.items()) == list(theirs.items())
    assert list(mine._metadata.items()) == list(theirs._metadata.items())


def test_typing_modules_and_old_import_paths():
    import tapegrad.nn.common_types as gct
    import tapegrad.types as gtypes
    import torch.nn.common_types as tct
    for name in ["_size_1_t", "_size_2_t", "_size_3_t", "_size_any_t", "_size_2_opt_t",
                 "_ratio_2_t", "_ratio_any_t"]:
        assert repr(getattr(gct, name)) == repr(getattr(tct, name))
    assert repr(gtypes.Number) == repr(torch.types.Number)
    assert gtypes._Number == torch.types._Number
    assert isinstance(3.5, gtypes._Number)
    from tapegrad.utils.model_zoo import load_url
    assert load_url is tg.hub.load_state_dict_from_url
    from tapegrad.utils.data._utils.collate import default_collate
    assert default_collate is tg.utils.data.default_collate
    import tapegrad.utils.data
    assert tapegrad.utils.data._utils.collate.default_convert is tg.utils.data.default_convert
