"""The tutorial-script surface added for issue 15's corpus round 3: div rounding modes, strides,
unique_consecutive, mode, cross, atleast_nd, dist, linalg.cond/vecdot, WeightedRandomSampler,
Embedding options and from_pretrained, gradient-norm helpers, remove_duplicate, lazy loading,
in-place activations, PReLU's Function, tensor() data errors.  Each: values without torch, and
parity with torch when it is installed."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn
import tapegrad.nn.functional as F


# -- div(rounding_mode=) ------------------------------------------------------------------------

def test_div_rounding_modes_values():
    a, b = tg.tensor([-7, 7, -6, 5, 0]), tg.tensor([2, -2, 3, -5, 3])
    assert tg.div(a, b, rounding_mode="trunc").tolist() == [-3, -3, -2, -1, 0]
    assert tg.div(a, b, rounding_mode="floor").tolist() == [-4, -4, -2, -1, 0]
    assert tg.div(a, b, rounding_mode="trunc").dtype == tg.int64
    assert tg.div(tg.tensor([-7, 7]), 2, rounding_mode="trunc").tolist() == [-3, 3]
    assert tg.div(tg.tensor([-7, 7], dtype=tg.int32), 2, rounding_mode="trunc").dtype == tg.int32
    f = tg.tensor([-7.5, 7.0])
    assert f.div(2, rounding_mode="trunc").tolist() == [-3.0, 3.0]
    assert tg.divide(f, 2, rounding_mode="floor").tolist() == [-4.0, 3.0]
    assert tg.div(tg.tensor([1, 2]), 2).tolist() == [0.5, 1.0]
    with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or 'floor'"):
        tg.div(f, 2, rounding_mode="round")


def test_div_rounding_mode_gradient_is_zero():
    x = tg.tensor([1.5, -2.5], requires_grad=True)
    tg.div(x * 3, 2, rounding_mode="trunc").sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_div_rounding_modes_match_torch(torch):
    rng = np.random.default_rng(0)
    for mode in ("trunc", "floor", None):
        for dtype in (np.int64, np.int32, np.float32, np.float64):
            a = rng.integers(-20, 20, size=12).astype(dtype)
            b = rng.choice([-7, -3, -1, 1, 2, 5], size=12).astype(dtype)
            ours = tg.div(tg.tensor(a), tg.tensor(b), rounding_mode=mode)
            theirs = torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode)
            assert str(ours.dtype) == str(theirs.dtype)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
            scalar = tg.div(tg.tensor(a), 3, rounding_mode=mode)
            expected = torch.div(torch.tensor(a), 3, rounding_mode=mode)
            assert str(scalar.dtype) == str(expected.dtype)     # a Python int keeps int dtypes
            np.testing.assert_allclose(scalar.numpy(), expected.numpy(), rtol=1e-6)


# -- strides, unique_consecutive, mode, cross, atleast_nd, dist -----------------------------------

def test_stride_and_storage_offset():
    t = tg.arange(12).reshape(3, 4)
    assert t.stride() == (4, 1) and t.t().stride() == (1, 4) and t.stride(0) == 4
    assert t.stride(-1) == 1 and t[:, 1].stride() == (4,)
    assert t[1].storage_offset() == 4 and t[:, 1].storage_offset() == 1 and t.storage_offset() == 0


def test_stride_matches_torch(torch):
    for make in (lambda m: m.arange(24).reshape(2, 3, 4), lambda m: m.arange(24).reshape(2, 3, 4).permute(2, 0, 1),
                 lambda m: m.arange(24).reshape(4, 6)[1:, ::2]):
        assert make(tg).stride() == make(torch).stride()
        assert make(tg).storage_offset() == make(torch).storage_offset()


def test_unique_consecutive():
    x = tg.tensor([1, 1, 2, 2, 3, 1, 1])
    values, inverse, counts = tg.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert values.tolist() == [1, 2, 3, 1]
    assert inverse.tolist() == [0, 0, 1, 1, 2, 3, 3]
    assert counts.tolist() == [2, 2, 1, 2]
    rows, counts = tg.tensor([[1, 1], [1, 1], [2, 2]]).unique_consecutive(dim=0, return_counts=True)
    assert rows.tolist() == [[1, 1], [2, 2]] and counts.tolist() == [2, 1]


def test_unique_consecutive_matches_torch(torch):
    data = [[3, 3, 1], [3, 3, 1], [0, 0, 0], [3, 3, 1]]
    for dim in (None, 0, 1):
        ours = tg.unique_consecutive(tg.tensor(data), return_inverse=True, return_counts=True, dim=dim)
        theirs = torch.unique_consecutive(torch.tensor(data), return_inverse=True, return_counts=True,
                                          dim=dim)
        for a, b in zip(ours, theirs):
            assert a.tolist() == b.tolist()


def test_mode_values_indices_and_gradient():
    values, indices = tg.mode(tg.tensor([3, 1, 3, 1, 2]))
    assert values.item() == 1 and indices.item() == 3     # smallest most frequent, last position
    result = tg.tensor([[1.0, 2, 2, 1], [5, 5, 4, 4]]).mode(dim=1)
    assert result.values.tolist() == [1.0, 4.0] and result.indices.tolist() == [3, 3]
    x = tg.tensor([1.0, 2.0, 2.0, 3.0], requires_grad=True)
    tg.mode(x).values.backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0]
    kept = tg.mode(tg.tensor([[1.0, 2.0], [1.0, 3.0]]), dim=0, keepdim=True)
    assert kept.values.shape == (1, 2)


def test_mode_matches_torch(torch):
    rng = np.random.default_rng(1)
    for _ in range(10):
        a = rng.integers(0, 4, size=(3, 7))
        for dim in (0, 1, -1):
            ours, theirs = tg.mode(tg.tensor(a), dim), torch.mode(torch.tensor(a), dim)
            assert ours.values.tolist() == theirs.values.tolist()
            assert ours.indices.tolist() == theirs.indices.tolist()


def test_cross_default_dim_and_warning():
    a = tg.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).T     # (3, 2): the first dim of size 3
    b = tg.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]).T
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        c = tg.cross(a, b)
    assert c.T.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    assert tg.cross(a.T, b.T, dim=1).tolist() == c.T.tolist()


def test_atleast_nd_shapes_match_torch(torch):
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for shape in ((), (2,), (2, 3), (2, 3, 4)):
            assert tuple(getattr(tg, name)(tg.zeros(shape)).shape) == \
                tuple(getattr(torch, name)(torch.zeros(shape)).shape)


def test_atleast_nd_values():
    assert tg.atleast_2d(tg.tensor(1.0)).shape == (1, 1)
    assert tg.atleast_3d(tg.zeros(2, 3)).shape == (2, 3, 1)
    pair = tg.atleast_1d(tg.tensor(1.0), tg.zeros(2))
    assert isinstance(pair, tuple) and pair[0].shape == (1,)
    assert tg.atleast_2d([tg.zeros(2)])[0].shape == (1, 2)


def test_dist(gradcheck):
    assert tg.dist(tg.tensor([3.0, 4.0]), tg.zeros(2)).item() == 5.0
    assert tg.tensor([1.0, 2.0]).dist(tg.tensor([[0.0, 0.0], [1.0, 1.0]]), 1).item() == 4.0
    assert tg.dist(tg.tensor([3.0, -4.0]), tg.zeros(2), float("inf")).item() == 4.0
    gradcheck(lambda a, b: tg.dist(a, b, 3), [0.5, -1.0, 2.0], [1.0, 1.0, 0.0])


def test_short_alias():
    assert tg.short is tg.int16


# -- linalg.cond / vecdot -----------------------------------------------------------------------

def test_linalg_cond_values():
    A = tg.tensor([[1.0, 0.0], [0.0, 4.0]])
    assert tg.linalg.cond(A).item() == pytest.approx(4.0)
    assert tg.linalg.cond(A, -2).item() == pytest.approx(0.25)
    assert tg.linalg.cond(A, 1).item() == pytest.approx(4.0)
    assert tg.linalg.cond(A, "fro").item() == pytest.approx(np.sqrt(17) * np.sqrt(1 + 1 / 16))
    assert tg.linalg.vecdot(tg.ones(2, 3), tg.arange(3.0)).tolist() == [3.0, 3.0]


def test_linalg_cond_matches_torch(torch):
    A = [[1.0, 2.0], [3.0, 4.5]]
    for p in (None, 2, -2, 1, -1, "fro", "nuc", float("inf")):
        assert tg.linalg.cond(tg.tensor(A), p).item() == pytest.approx(
            torch.linalg.cond(torch.tensor(A), p).item(), rel=1e-5)
    tall = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert tg.linalg.cond(tg.tensor(tall)).item() == pytest.approx(
        torch.linalg.cond(torch.tensor(tall)).item(), rel=1e-5)


# -- WeightedRandomSampler ------------------------------------------------------------------------

def test_weighted_random_sampler():
    from tapegrad.utils.data import DataLoader, WeightedRandomSampler
    sampler = WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], num_samples=6)
    assert list(sampler) == [2] * 6 and len(sampler) == 6
    assert sampler.weights.dtype == tg.float64 and sampler.replacement is True
    assert sorted(WeightedRandomSampler([1.0, 2.0, 3.0], 3, replacement=False)) == [0, 1, 2]
    g1, g2 = tg.Generator().manual_seed(5), tg.Generator().manual_seed(5)
    assert list(WeightedRandomSampler([1, 2, 3], 20, generator=g1)) == \
        list(WeightedRandomSampler([1, 2, 3], 20, generator=g2))
    batches = list(DataLoader(list(range(4)), batch_size=2, sampler=sampler))
    assert [b.tolist() for b in batches] == [[2, 2], [2, 2], [2, 2]]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0], 1, replacement=1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        list(WeightedRandomSampler([1.0, 2.0], 3, replacement=False))


def test_weighted_random_sampler_balances_classes():
    from tapegrad.utils.data import WeightedRandomSampler
    labels = tg.tensor([0] * 8 + [1] * 2)
    weights = 1.0 / tg.bincount(labels)[labels].float()
    drawn = labels[tg.tensor(list(WeightedRandomSampler(weights, 4000,
                                                        generator=tg.Generator().manual_seed(0))))]
    share = tg.bincount(drawn).float() / 4000
    assert abs(share[1].item() - 0.5) < 0.05


# -- Embedding ------------------------------------------------------------------------------------

def test_embedding_from_pretrained_and_options():
    weight = tg.arange(20.0).reshape(5, 4)
    emb = nn.Embedding.from_pretrained(weight)
    assert not emb.weight.requires_grad and repr(emb) == "Embedding(5, 4)"
    assert emb(tg.tensor([4])).tolist() == [[16.0, 17.0, 18.0, 19.0]]
    assert nn.Embedding.from_pretrained(weight, freeze=False).weight.requires_grad
    assert repr(nn.Embedding(10, 3, max_norm=1.0)) == "Embedding(10, 3, max_norm=1.0)"
    assert repr(nn.Embedding(10, 3, padding_idx=0, sparse=True)) == \
        "Embedding(10, 3, padding_idx=0, sparse=True)"
    bag = nn.EmbeddingBag.from_pretrained(weight, mode="sum")
    assert not bag.weight.requires_grad and bag.mode == "sum"
    assert bag(tg.tensor([0, 1, 4]), tg.tensor([0, 2])).tolist() == \
        [[4.0, 6.0, 8.0, 10.0], [16.0, 17.0, 18.0, 19.0]]
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(tg.zeros(3))


def test_embedding_max_norm_renorms_rows():
    emb = nn.Embedding.from_pretrained(tg.tensor([[3.0, 4.0], [0.3, 0.4]]), max_norm=1.0)
    out = emb(tg.tensor([0, 1]))
    np.testing.assert_allclose(out.numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-4)


def test_embedding_repr_matches_torch(torch):
    for kwargs in ({}, {"padding_idx": 1}, {"max_norm": 2.0, "norm_type": 1.0},
                   {"scale_grad_by_freq": True, "sparse": True}):
        assert repr(nn.Embedding(6, 2, **kwargs)) == repr(torch.nn.Embedding(6, 2, **kwargs))


# -- gradient norms, remove_duplicate, lazy loading ---------------------------------------------

def test_get_total_norm_and_clip_grads_with_norm():
    a, b = tg.zeros(2, requires_grad=True), tg.zeros(1, requires_grad=True)
    a.grad, b.grad = tg.tensor([3.0, 0.0]), tg.tensor([4.0])
    total = nn.utils.get_total_norm([a.grad, b.grad])
    assert total.item() == pytest.approx(5.0)
    assert nn.utils.get_total_norm([a.grad, b.grad], norm_type=float("inf")).item() == 4.0
    nn.utils.clip_grads_with_norm_([a, b], max_norm=1.0, total_norm=total)
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0.0], rtol=1e-5)
    assert nn.utils.clip_grad_norm_([a, b], 10.0).item() == pytest.approx(1.0, rel=1e-5)


def test_named_parameters_remove_duplicate():
    shared = nn.Linear(2, 2)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)] == \
        ["0.weight", "0.bias", "2.weight", "2.bias"]
    bn = nn.BatchNorm1d(2)
    twice = nn.Sequential(bn, bn)
    assert len(list(twice.named_buffers(remove_duplicate=False))) == 6


def test_lazy_module_loads_state_dict_shapes():
    source = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    lazy = nn.Sequential(nn.LazyLinear(2), nn.LazyBatchNorm1d())
    assert str(lazy.load_state_dict(source.state_dict())) == "<All keys matched successfully>"
    assert type(lazy[0]).__name__ == "LazyLinear" and lazy[0].in_features == 0
    x = tg.ones(4, 3)
    source.eval(), lazy.eval()
    assert tg.equal(lazy(x), source(x))
    assert type(lazy[0]).__name__ == "Linear" and lazy[0].in_features == 3
    assert lazy[1].num_features == 0                # as PyTorch: only LazyLinear fills it in


# -- activations ----------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [nn.ReLU, nn.LeakyReLU, nn.SiLU, nn.ELU])
def test_inplace_activation_modules_write_into_input(cls):
    x = tg.tensor([-1.5, 0.5, 2.0])
    expected = cls()(x.clone())
    y = cls(inplace=True)(x)
    assert y is x and tg.equal(x, expected)
    leaf = tg.tensor([-1.5, 0.5, 2.0], requires_grad=True)
    cls(inplace=True)(leaf * 1).sum().backward()    # a recorded input still trains
    assert leaf.grad is not None


def test_functional_trailing_underscore_activations():
    x = tg.tensor([-1.0, 2.0])
    assert F.relu_(x) is x and x.tolist() == [0.0, 2.0]
    assert F.leaky_relu_(tg.tensor([-1.0, 1.0]), 0.5).tolist() == [-0.5, 1.0]
    assert F.hardtanh_(tg.tensor([-3.0, 0.5])).tolist() == [-1.0, 0.5]
    assert F.elu_(tg.tensor([0.0, 1.0])).tolist() == [0.0, 1.0]


def test_hardswish_negative_zero():
    out = F.hardswish(tg.tensor([-5.0, -3.0]))
    assert np.signbit(out.numpy()).all() and (out == 0).all()


def test_prelu_function(gradcheck, torch):
    x = [[-1.0, 2.0, -3.0], [0.5, -0.5, 0.7]]
    gradcheck(lambda a, w: F.prelu(a, w), x, [0.2, 0.3, 0.4])
    gradcheck(lambda a, w: F.prelu(a, w), x, [0.25])
    prelu = nn.PReLU(3, init=0.2)
    inp = tg.tensor(x, requires_grad=True)
    out = prelu(inp)
    assert type(out.grad_fn).__name__ == "PreluKernelBackward0"
    (out * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    tprelu = torch.nn.PReLU(3, init=0.2)
    tinp = torch.tensor(x, requires_grad=True)
    (tprelu(tinp) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(inp.grad.numpy(), tinp.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(prelu.weight.grad.numpy(), tprelu.weight.grad.numpy(), rtol=1e-6)


def test_prelu_values_without_torch():
    out = F.prelu(tg.tensor([-2.0, 3.0]), tg.tensor([0.5]))
    assert out.tolist() == [-1.0, 3.0]


# -- tensor() data errors, zeros, arange, as_tensor, load error name -----------------------------

def test_tensor_data_errors():
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        tg.tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match="too many dimensions 'str'"):
        tg.tensor(["a", "b"])
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        tg.tensor([[1, "a"]])
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        tg.tensor("a")
    with pytest.raises(RuntimeError, match="zeros: Dimension size must be non-negative."):
        tg.zeros(2, -1)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        tg.ones(-1)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        tg.arange(0, 10, -1)


def test_as_tensor_of_tensor_with_dtype():
    import warnings
    x = tg.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = tg.as_tensor(x, dtype=tg.float64)
    assert y.dtype == tg.float64 and y.requires_grad and tg.as_tensor(x, dtype=tg.float32) is x


def test_weights_only_error_is_named_as_pytorch(tmp_path):
    path = tmp_path / "whole.pt"
    tg.save(nn.Linear(1, 1), path)
    with pytest.raises(pickle.UnpicklingError) as info:
        tg.load(path)
    assert type(info.value).__name__ == "UnpicklingError"
    assert isinstance(info.value, RuntimeError)


# -- elementwise compositions, cov/corrcoef, unfold ----------------------------------------------

def test_elementwise_compositions_values(gradcheck):
    assert tg.logit(tg.tensor([0.5, 0.0, 1.0])).tolist() == [0.0, -np.inf, np.inf]
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    tg.logit(x).sum().backward()
    assert x.grad.tolist() == [np.inf, np.inf]
    assert tg.hypot(tg.tensor([3.0]), tg.tensor([4.0])).item() == 5.0
    assert tg.rad2deg(tg.tensor([np.pi])).item() == pytest.approx(180.0)
    assert tg.deg2rad(tg.tensor([180])).item() == pytest.approx(np.pi)
    assert tg.float_power(tg.tensor([2]), 2).dtype == tg.float64
    assert tg.copysign(tg.tensor([1.0, 2.0]), tg.tensor([-0.0, 1.0])).tolist() == [-1.0, 2.0]
    assert tg.sinc(tg.tensor([0.0, 1.0])).numpy() == pytest.approx([1.0, 0.0], abs=1e-7)
    z = tg.tensor([0.0], requires_grad=True)
    tg.sinc(z).backward()
    assert z.grad.item() == 0.0
    assert tg.addmv(tg.ones(2), tg.eye(2), tg.tensor([1.0, 2.0]), beta=2).tolist() == [3.0, 4.0]
    assert tg.addr(tg.zeros(2, 2), tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0])).tolist() == \
        [[3.0, 4.0], [6.0, 8.0]]
    assert tg.gcd(tg.tensor([12, -18]), tg.tensor([8, 6])).tolist() == [4, 6]
    assert tg.lcm(tg.tensor([4, 6]), tg.tensor([6, -4])).tolist() == [12, 12]
    with pytest.raises(NotImplementedError, match='"gcd_cpu" not implemented for'):
        tg.gcd(tg.tensor([1.0]), tg.tensor([2]))
    gradcheck(lambda a, b: tg.hypot(a, b), [3.0, -1.0], [4.0, 2.0])
    gradcheck(lambda a: tg.sinc(a), [0.3, -1.2, 2.5])
    gradcheck(lambda a: tg.logit(a), [0.2, 0.7])


def test_cov_corrcoef_and_unfold_values(gradcheck):
    X = tg.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
    assert tg.cov(X).tolist() == [[1.0, -1.0], [-1.0, 1.0]]
    assert tg.cov(tg.tensor([1.0, 2.0, 4.0])).item() == pytest.approx(7 / 3)
    assert tg.corrcoef(X).tolist() == [[1.0, -1.0], [-1.0, 1.0]]
    windows = tg.arange(7.0).unfold(0, 3, 2)
    assert windows.tolist() == [[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [4.0, 5.0, 6.0]]
    assert tg.zeros(2, 3, 4).unfold(2, 2, 1).shape == (2, 3, 3, 2)
    x = tg.arange(5.0, requires_grad=True)
    x.unfold(0, 3, 1).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 2.0, 1.0]
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 5 but size is 6"):
        tg.arange(5.0).unfold(0, 6, 1)
    gradcheck(lambda a: tg.cov(a), [[0.5, 1.0, -2.0], [1.5, 0.0, 0.3]])


def test_compositions_match_torch(torch):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, 6)).astype(np.float32)
    weights = np.array([1, 2, 1, 3, 1, 1])
    aweights = rng.uniform(0.5, 2, 6).astype(np.float32)
    pairs = [
        (lambda m: m.cov(m.tensor(X), fweights=m.tensor(weights), aweights=m.tensor(aweights))),
        (lambda m: m.cov(m.tensor(X), correction=0)),
        (lambda m: m.corrcoef(m.tensor(X))),
        (lambda m: m.logit(m.tensor(X).sigmoid(), eps=0.2)),
        (lambda m: m.copysign(m.tensor(X), -1.0)),
        (lambda m: m.tensor(X).unfold(1, 4, 2)),
        (lambda m: m.addr(m.tensor(X[:, :3]), m.tensor(X[0, :3]), m.tensor(X[1, :3]), beta=0.5, alpha=2)),
    ]
    for make in pairs:
        np.testing.assert_allclose(make(tg).numpy(), make(torch).numpy(), rtol=1e-5, atol=1e-6)
