"""The ops of tapegrad/_extra_ops.py: torch parity of values, dtypes and gradients, finite
differences, plain value checks, and PyTorch's errors."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(7)
X23 = RNG.standard_normal((2, 3))
X34 = RNG.standard_normal((3, 4))


def _np(t):
    return t.detach().numpy()


def _same(ours, theirs, exact=False):
    """Values and dtype of a tapegrad result equal a torch result's."""
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    if exact:
        np.testing.assert_array_equal(_np(ours), _np(theirs))
    else:
        np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-6, atol=1e-7)


# Differentiable ops: (name, tapegrad fn, torch fn, input).
DIFFERENTIABLE = [
    ("sort", lambda m, x: m.sort(x, 1)[0], X23),
    ("sort-desc-dim0", lambda m, x: m.sort(x, 0, descending=True)[0], X34),
    ("topk", lambda m, x: m.topk(x, 2)[0], X34),
    ("topk-smallest", lambda m, x: m.topk(x, 2, dim=0, largest=False)[0], X34),
    ("cumsum", lambda m, x: m.cumsum(x, 1), X23),
    ("cumsum-dim0", lambda m, x: m.cumsum(x, 0), X34),
    ("cumprod", lambda m, x: m.cumprod(x, 1), X23),
    ("cumprod-zero", lambda m, x: m.cumprod(x, 1), np.array([[1.5, 0.0, 2.0, -1.0]])),
    ("cumprod-two-zeros", lambda m, x: m.cumprod(x, 1), np.array([[0.0, 3.0, 0.0, 2.0]])),
    ("log10", lambda m, x: m.log10(x), np.abs(X23) + 0.5),
    ("log2", lambda m, x: m.log2(x), np.abs(X23) + 0.5),
    ("flip", lambda m, x: m.flip(x, [0, 1]), X23),
    ("roll", lambda m, x: m.roll(x, (1, -2), (0, 1)), X34),
    ("roll-flat", lambda m, x: m.roll(x, 5), X23),
    ("diag-embed", lambda m, x: m.diag(x[0], 1), X23),
    ("diag-embed-neg", lambda m, x: m.diag(x[0], -2), X23),
    ("diag-extract", lambda m, x: m.diag(x, -1), X34),
    ("diag-extract-pos", lambda m, x: m.diag(x, 2), X34),
    ("trace", lambda m, x: m.trace(x), X34),
    ("meshgrid-ij", lambda m, x: m.stack(m.meshgrid(x[0], x[1, :2], indexing="ij")), X23),
    ("meshgrid-xy", lambda m, x: m.stack(m.meshgrid(x[0], x[1, :2], indexing="xy")), X23),
]


@pytest.mark.parametrize("name,fn,x", DIFFERENTIABLE, ids=[c[0] for c in DIFFERENTIABLE])
def test_forward_and_gradient_match_torch(torch, name, fn, x):
    ours_in = tg.tensor(x, requires_grad=True)
    theirs_in = torch.tensor(x, requires_grad=True)
    ours, theirs = fn(tg, ours_in), fn(torch, theirs_in)
    _same(ours, theirs)
    weights = RNG.standard_normal(tuple(theirs.shape))
    (ours * tg.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(_np(ours_in.grad), _np(theirs_in.grad), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name,fn,x", DIFFERENTIABLE, ids=[c[0] for c in DIFFERENTIABLE])
def test_gradient_matches_finite_differences(gradcheck, name, fn, x):
    gradcheck(lambda t: fn(tg, t), x)


def test_cumsum_and_log_support_create_graph(torch):
    for op in ("cumsum", "log10", "log2"):
        results = []
        for lib in (tg, torch):
            x = lib.tensor([[0.5, 1.5, 2.5], [1.0, 2.0, 3.0]], dtype=lib.float64,
                           requires_grad=True)
            y = getattr(lib, op)(x, 1) if op == "cumsum" else getattr(lib, op)(x)
            (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
            (gg,) = lib.autograd.grad(g.sum(), x)
            results.append((_np(g), _np(gg)))
        np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_cumulative_values_are_exact_as_torch(torch):
    # PyTorch accumulates float32 in float64: the same rounding, bit for bit.
    x = RNG.standard_normal((4, 500)).astype(np.float32)
    for op in ("cumsum", "cumprod"):
        scale = 1.0 if op == "cumsum" else 0.01
        data = x * scale + (0.0 if op == "cumsum" else 1.0)
        _same(getattr(tg, op)(tg.tensor(data), 1), getattr(torch, op)(torch.tensor(data), 1),
              exact=True)
        recorded = getattr(tg, op)(tg.tensor(data[:, :20], requires_grad=True), 1)
        _same(recorded, getattr(torch, op)(torch.tensor(data[:, :20]), 1), exact=True)


NON_DIFFERENTIABLE = [
    ("sort-indices-ties", lambda m: m.sort(m.tensor([[3.0, 1.0, 2.0, 1.0],
                                                     [math.nan, 0.0, 5.0, 0.0]]))[1]),
    ("sort-desc-nan", lambda m: m.sort(m.tensor([1.0, math.nan, 1.0, 2.0]), descending=True)[0]),
    ("argsort-desc", lambda m: m.argsort(m.tensor([[3, 1, 2, 1]]), dim=1, descending=True)),
    ("sort-0d", lambda m: m.sort(m.tensor(3.0))[1]),
    ("sort-bool", lambda m: m.sort(m.tensor([True, False, True]))[0]),
    ("topk-indices", lambda m: m.topk(m.tensor([1.0, 5.0, 3.0, 4.0]), 3)[1]),
    ("topk-k0", lambda m: m.topk(m.tensor([1.0, 5.0]), 0)[0]),
    ("cumsum-int", lambda m: m.cumsum(m.tensor([1, 2, 3]), 0)),
    ("cumsum-bool", lambda m: m.cumsum(m.tensor([True, True]), 0)),
    ("cumsum-dtype", lambda m: m.cumsum(m.tensor([1.0, 2.0]), dim=0, dtype=m.float64)),
    ("cumsum-0d", lambda m: m.cumsum(m.tensor(2.0), 0)),
    ("cumprod-int32", lambda m: m.cumprod(m.tensor([1, 2, 3], dtype=m.int32), 0)),
    ("cumsum-uint8", lambda m: m.cumsum(m.tensor([200, 100], dtype=m.uint8), 0)),
    ("log10-int", lambda m: m.log10(m.tensor([1, 10, 100]))),
    ("log2-edge", lambda m: m.log2(m.tensor([1.0, 8.0, -1.0, 0.0]))),
    ("flip-int", lambda m: m.flip(m.tensor([[1, 2], [3, 4]]), (0, 1))),
    ("roll-int", lambda m: m.roll(m.tensor([[1, 2, 3], [4, 5, 6]]), -1, 1)),
    ("roll-0d", lambda m: m.roll(m.tensor(3), 1)),
    ("diag-inf", lambda m: m.diag(m.tensor([math.inf]), 1)),
    ("diag-out-of-range", lambda m: m.diag(m.tensor([[1.0, 2.0], [3.0, 4.0]]), 5)),
    ("trace-int", lambda m: m.trace(m.tensor([[1, 2], [3, 4]], dtype=m.int32))),
    ("meshgrid-0d", lambda m: m.meshgrid(m.tensor(1), m.tensor([2, 3]), indexing="xy")[0]),
    ("meshgrid-list", lambda m: m.meshgrid([m.tensor([1, 2]), m.tensor([3, 4, 5])],
                                           indexing="ij")[1]),
    ("isclose", lambda m: m.isclose(m.tensor([1.0, math.inf, math.nan, 1.0]),
                                    m.tensor([1.0 + 1e-6, math.inf, math.nan, 1.1]))),
    ("isclose-nan", lambda m: m.isclose(m.tensor([math.nan, 1.0]), m.tensor([math.nan, 2.0]),
                                        equal_nan=True)),
    ("isclose-int", lambda m: m.isclose(m.tensor([1, 10, 100]), m.tensor([2, 11, 100]), 0.1, 0.0)),
    ("isclose-broadcast", lambda m: m.isclose(m.tensor([1.0, 2.0]), m.tensor([[1.0], [2.0]]))),
    ("bincount", lambda m: m.bincount(m.tensor([1, 1, 3]), minlength=6)),
    ("bincount-float32-weights", lambda m: m.bincount(m.tensor([1, 1, 3]),
                                                      m.tensor([0.5, 0.5, 1.0]))),
    ("bincount-int-weights", lambda m: m.bincount(m.tensor([1, 1, 3]), m.tensor([1, 2, 3]))),
    ("bincount-empty", lambda m: m.bincount(m.tensor([], dtype=m.int64), m.tensor([]), 3)),
    ("histc", lambda m: m.histc(m.tensor([1.0, 2.0, 1.0, 7.0]), bins=4, min=0, max=3)),
    ("histc-auto", lambda m: m.histc(m.tensor([[1.0, 2.0], [1.0, 4.0]]), bins=5)),
    ("histc-constant", lambda m: m.histc(m.tensor([2.0, 2.0]), bins=4)),
    ("histc-empty", lambda m: m.histc(m.tensor([]), bins=3)),
    ("histc-float64", lambda m: m.histc(m.tensor([1.0, 2.0], dtype=m.float64), bins=3)),
    ("histogram", lambda m: m.histogram(m.tensor([1.0, 2.0, 1.0]), bins=4,
                                        range=(0.0, 3.0)).hist),
    ("histogram-edges", lambda m: m.histogram(m.tensor([1.0, 2.0, 1.0]), 3).bin_edges),
    ("histogram-constant", lambda m: m.histogram(m.tensor([2.0, 2.0]), 3).bin_edges),
    ("histogram-given-edges", lambda m: m.histogram(m.tensor([1.0, 2.0, 1.0, 9.0]),
                                                    bins=m.tensor([0.0, 1.0, 2.5])).hist),
    ("histogram-density", lambda m: m.histogram(m.tensor([1.0, 2.0, 1.0]), 3,
                                                weight=m.tensor([1.0, 2.0, 4.0]),
                                                density=True).hist),
    # A histogram of activations without bins: PyTorch's default is 100 bins.
    ("histogram-default-bins", lambda m: m.histogram(m.linspace(-1.0, 1.0, 50), density=True).hist),
    ("histogram-method-default-bins", lambda m: m.linspace(0.0, 3.0, 7).histogram().bin_edges),
    ("unique", lambda m: m.unique(m.tensor([3, 1, 2, 3, 1]))),
    ("unique-nan", lambda m: m.unique(m.tensor([math.nan, 1.0, math.nan]))),
    ("unique-inverse", lambda m: m.unique(m.tensor([[3.0, 1.0], [1.0, 3.0]]),
                                          return_inverse=True)[1]),
    ("unique-counts", lambda m: m.unique(m.tensor([3, 1, 2, 3, 1]), return_counts=True)[1]),
    ("unique-dim", lambda m: m.unique(m.tensor([[1, 2], [1, 2], [0, 5]]), dim=0)),
    ("unique-dim-inverse", lambda m: m.unique(m.tensor([[1, 2], [1, 2], [0, 5]]), dim=0,
                                              return_inverse=True, return_counts=True)[1]),
    ("unique-0d-inverse", lambda m: m.unique(m.tensor(5), return_inverse=True)[1]),
]


@pytest.mark.parametrize("name,fn", NON_DIFFERENTIABLE, ids=[c[0] for c in NON_DIFFERENTIABLE])
def test_values_match_torch(torch, name, fn):
    _same(fn(tg), fn(torch))


def test_scalar_results_match_torch(torch):
    for lib_pair in ((tg, torch),):
        ours, theirs = lib_pair
        a, b = [1.0, 2.0, 3.0], [1.0, 2.0 + 1e-7, 3.0]
        assert ours.allclose(ours.tensor(a), ours.tensor(b)) is theirs.allclose(
            theirs.tensor(a), theirs.tensor(b)) is True
        assert ours.tensor(a).allclose(ours.tensor([1.0, 2.1, 3.0])) is False
        assert ours.equal(ours.tensor(a), ours.tensor(a, dtype=ours.float64)) is theirs.equal(
            theirs.tensor(a), theirs.tensor(a, dtype=theirs.float64))
        assert ours.equal(ours.tensor(a), ours.tensor(a[:2])) is False
        assert ours.equal(ours.tensor([math.nan]), ours.tensor([math.nan])) is False
        assert ours.numel(ours.ones(2, 3)) == theirs.numel(theirs.ones(2, 3)) == 6


def test_sort_and_topk_return_named_tuples(torch):
    ours = tg.sort(tg.tensor([3.0, 1.0, 2.0]))
    theirs = torch.sort(torch.tensor([3.0, 1.0, 2.0]))
    assert type(ours).__name__ == "sort" and ours.__match_args__ == ("values", "indices")
    assert repr(ours).replace("tapegrad", "torch") == repr(theirs)
    assert repr(tg.topk(tg.tensor([3.0, 1.0]), 1)) == repr(torch.topk(torch.tensor([3.0, 1.0]), 1))
    hist = tg.histogram(tg.tensor([1.0, 2.0]), 2)
    assert hist.__match_args__ == ("hist", "bin_edges")
    assert repr(hist) == repr(torch.histogram(torch.tensor([1.0, 2.0]), 2))


def test_methods():
    x = tg.tensor([[3.0, 1.0], [2.0, 4.0]])
    assert x.sort(dim=0).values.tolist() == [[2.0, 1.0], [3.0, 4.0]]
    assert x.argsort().tolist() == [[1, 0], [0, 1]]
    assert x.topk(1).indices.tolist() == [[0], [1]]
    assert x.cumsum(1).tolist() == [[3.0, 4.0], [2.0, 6.0]]
    assert x.cumprod(0).tolist() == [[3.0, 1.0], [6.0, 4.0]]
    assert x.flip(0).tolist() == [[2.0, 4.0], [3.0, 1.0]]
    assert x.flip(0, 1).tolist() == [[4.0, 2.0], [1.0, 3.0]]
    assert x.roll(1, 1).tolist() == [[1.0, 3.0], [4.0, 2.0]]
    assert x.diag().tolist() == [3.0, 4.0]
    assert x.trace().item() == 7.0
    assert x.isclose(x).all().item() and x.allclose(x) and x.equal(x)
    np.testing.assert_allclose(x.log10().numpy(), np.log10([[3.0, 1.0], [2.0, 4.0]]), rtol=1e-6)
    assert x.log2()[1, 1].item() == 2.0
    assert tg.tensor([1, 1, 2]).bincount().tolist() == [0, 2, 1]
    assert x.histc(bins=3, min=1, max=4).tolist() == [1.0, 1.0, 2.0]
    assert x.unique().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_values_without_torch():
    assert tg.cumsum(tg.tensor([1, 2, 3]), 0).tolist() == [1, 3, 6]
    assert tg.cumsum(tg.tensor([1, 2, 3]), 0).dtype == tg.int64
    assert tg.cumprod(tg.tensor([[1.0, 2.0, 3.0]]), 1).tolist() == [[1.0, 2.0, 6.0]]
    values, indices = tg.sort(tg.tensor([2.0, 1.0, 2.0, 0.5]), descending=True)
    assert values.tolist() == [2.0, 2.0, 1.0, 0.5] and indices.tolist() == [0, 2, 1, 3]
    assert tg.topk(tg.tensor([1.0, 5.0, 3.0]), 2).values.tolist() == [5.0, 3.0]
    assert tg.diag(tg.tensor([1, 2]), 1).tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    assert tg.diag(tg.tensor([[1, 2, 3], [4, 5, 6]]), 1).tolist() == [2, 6]
    assert tg.trace(tg.tensor([[1, 2], [3, 4]])).item() == 5
    assert tg.flip(tg.tensor([1, 2, 3]), [0]).tolist() == [3, 2, 1]
    assert tg.roll(tg.tensor([[1, 2], [3, 4]]), 1).tolist() == [[4, 1], [2, 3]]
    gx, gy = tg.meshgrid(tg.tensor([1, 2]), tg.tensor([3, 4, 5]), indexing="ij")
    assert gx.tolist() == [[1, 1, 1], [2, 2, 2]] and gy.tolist() == [[3, 4, 5], [3, 4, 5]]
    assert tg.log10(tg.tensor([1000.0])).item() == pytest.approx(3.0)
    assert tg.isclose(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.5])).tolist() == [True, False]
    assert tg.allclose(tg.tensor([1.0]), tg.tensor([1.0 + 1e-9]))
    assert tg.histc(tg.tensor([0.0, 0.5, 1.0]), bins=2, min=0, max=1).tolist() == [1.0, 2.0]
    hist, edges = tg.histogram(tg.tensor([0.0, 0.5, 1.0]), 2)
    assert hist.tolist() == [1.0, 2.0] and edges.tolist() == [0.0, 0.5, 1.0]
    hist, edges = tg.histogram(tg.tensor([0.0, 0.5, 1.0]))  # 100 bins by default
    assert hist.shape == (100,) and edges.shape == (101,) and hist.sum().item() == 3.0
    assert tg.bincount(tg.tensor([0, 2, 2])).tolist() == [1, 0, 2]
    out, inverse, counts = tg.unique(tg.tensor([3, 1, 3]), return_inverse=True,
                                     return_counts=True)
    assert out.tolist() == [1, 3] and inverse.tolist() == [1, 0, 1] and counts.tolist() == [1, 2]
    assert 2 in tg.tensor([1, 2]) and tg.numel(tg.zeros(4, 5)) == 20


def test_constants_and_type_info(torch):
    for name in ("inf", "nan", "pi", "e"):
        ours, theirs = getattr(tg, name), getattr(torch, name)
        assert type(ours) is float and (ours == theirs or (math.isnan(ours) and
                                                           math.isnan(theirs)))
    for dt in ("float16", "float32", "float64"):
        ours, theirs = tg.finfo(getattr(tg, dt)), torch.finfo(getattr(torch, dt))
        assert repr(ours) == repr(theirs)
        for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                     "dtype"):
            assert getattr(ours, attr) == getattr(theirs, attr)
            assert type(getattr(ours, attr)) is type(getattr(theirs, attr))
    assert repr(tg.finfo()) == repr(torch.finfo())
    for dt in ("uint8", "int8", "int16", "int32", "int64"):
        ours, theirs = tg.iinfo(getattr(tg, dt)), torch.iinfo(getattr(torch, dt))
        assert repr(ours) == repr(theirs)
        assert (ours.bits, ours.min, ours.max, ours.dtype) == (theirs.bits, theirs.min,
                                                               theirs.max, theirs.dtype)
    assert tg.finfo(tg.float32) == tg.finfo() and tg.finfo(tg.float16) != tg.finfo()


def test_type_info_values():
    assert tg.finfo(tg.float32).eps == 2.0 ** -23 and tg.finfo().resolution == 1e-06
    assert tg.iinfo(tg.int8).min == -128 and tg.iinfo(tg.uint8).max == 255
    with pytest.raises(TypeError, match="requires a floating point input type"):
        tg.finfo(tg.int32)
    with pytest.raises(TypeError, match="requires an integer input type"):
        tg.iinfo(tg.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        tg.iinfo(tg.bool)
    with pytest.raises(TypeError, match="must be torch.dtype, not str"):
        tg.finfo("float32")


ERRORS = [
    (lambda m: m.isclose(m.tensor([1.0]), m.tensor([1])), RuntimeError, "Float did not match Long"),
    (lambda m: m.isclose(m.tensor([1.0]), m.tensor([1.0]), rtol=-1), RuntimeError,
     "rtol must be greater than or equal to zero"),
    (lambda m: m.isclose(m.tensor([1.0]), 2.0), TypeError, "must be Tensor, not float"),
    (lambda m: m.allclose(m.ones(2), m.ones(3)), RuntimeError, "must match the size of tensor b"),
    (lambda m: m.equal(m.ones(2), 1.0), TypeError, "must be Tensor, not float"),
    (lambda m: m.histc(m.tensor([1, 2]), bins=4), NotImplementedError,
     "\"histogram_cpu\" not implemented for 'Long'"),
    (lambda m: m.histc(m.tensor([1.0]), bins=0), RuntimeError, "bins must be > 0"),
    (lambda m: m.histc(m.tensor([1.0]), bins=3, min=3, max=1), RuntimeError,
     "max must be larger than min"),
    (lambda m: m.histogram(m.tensor([1, 2]), 3), NotImplementedError, "not implemented for 'Long'"),
    (lambda m: m.histogram(m.tensor([1.0]), 3, weight=m.tensor([1.0], dtype=m.float64)),
     RuntimeError, "input tensor and weight tensor should have the same dtype"),
    (lambda m: m.bincount(m.tensor([-1, 1])), RuntimeError, "1-d non-negative integral inputs"),
    (lambda m: m.bincount(m.tensor([[1, 1]])), RuntimeError, "1-d non-negative integral inputs"),
    (lambda m: m.bincount(m.tensor([1.0])), NotImplementedError, "not implemented for 'Float'"),
    (lambda m: m.bincount(m.tensor([1, 2]), m.tensor([1.0])), RuntimeError,
     "weights should be 1-d and have the same length as input"),
    (lambda m: m.bincount(m.tensor([1]), minlength=-1), RuntimeError, "minlength should be >= 0"),
    (lambda m: m.unique(m.tensor([[1, 2]]), dim=2), IndexError, "Dimension out of range"),
    (lambda m: m.sort(m.ones(2, 2), dim=2), IndexError, "Dimension out of range"),
    (lambda m: m.topk(m.ones(3), 4), RuntimeError, "selected index k out of range"),
    (lambda m: m.topk(m.ones(3), -1), RuntimeError, "selected index k out of range"),
    (lambda m: m.cumsum(m.ones(2), 1), IndexError, "Dimension out of range"),
    (lambda m: m.diag(m.ones(2, 2, 2)), RuntimeError, "Supports 1D or 2D tensors. Got 3D"),
    (lambda m: m.diag(m.tensor(1.0)), RuntimeError, "Supports 1D or 2D tensors. Got 0D"),
    (lambda m: m.trace(m.ones(2)), RuntimeError, "expected a matrix, but got tensor with dim 1"),
    (lambda m: m.trace(m.tensor([[True]])), NotImplementedError, "not implemented for 'Bool'"),
    (lambda m: m.flip(m.ones(2, 2), 1), TypeError, "must be tuple of ints, not int"),
    (lambda m: m.flip(m.ones(2, 2), [0, 0]), RuntimeError, "dim 0 appears multiple times"),
    (lambda m: m.roll(m.ones(2, 3), (1, 2), (0,)), RuntimeError,
     "shifts and dimensions must align"),
    (lambda m: m.roll(m.ones(2, 3), (1, 2)), RuntimeError, "shifts and dimensions must align"),
    (lambda m: m.meshgrid(m.ones(2), indexing="foo"), RuntimeError,
     "indexing must be one of \"xy\" or \"ij\""),
    (lambda m: m.meshgrid(m.ones(1, 1), indexing="ij"), RuntimeError,
     "Expected 0D or 1D tensor in the tensor list"),
    (lambda m: m.meshgrid(m.ones(2), m.tensor([1]), indexing="ij"), RuntimeError,
     "meshgrid expects all tensors to have the same dtype"),
    (lambda m: m.meshgrid(indexing="ij"), RuntimeError, "meshgrid expects a non-empty TensorList"),
    (lambda m: m.numel([1, 2]), TypeError, "must be Tensor, not list"),
]


@pytest.mark.parametrize("fn,exc,phrase", ERRORS)
def test_errors_as_torch(fn, exc, phrase):
    with pytest.raises(exc, match=phrase.replace("(", "\\(").replace(")", "\\)")):
        fn(tg)


@pytest.mark.parametrize("fn,exc,phrase", ERRORS)
def test_errors_are_torch_errors(torch, fn, exc, phrase):
    with pytest.raises(exc, match=phrase.replace("(", "\\(").replace(")", "\\)")):
        fn(torch)


def test_meshgrid_without_indexing_warns_as_torch(torch):
    for lib in (tg, torch):
        with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
            grids = lib.meshgrid(lib.tensor([1, 2]), lib.tensor([3, 4, 5]))
        assert [tuple(g.shape) for g in grids] == [(2, 3), (2, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.meshgrid(tg.tensor([1, 2]), indexing="ij")


def test_results_do_not_require_grad_when_nothing_records():
    x = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        for out in (tg.cumsum(x, 0), tg.cumprod(x, 0), tg.log10(x), tg.sort(x).values,
                    tg.flip(x, [0]), tg.diag(x)):
            assert not out.requires_grad
    assert not tg.sort(x).indices.requires_grad
    assert tg.cumsum(x, 0).requires_grad and tg.topk(x, 1).values.requires_grad
