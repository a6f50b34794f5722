"""Calls PyTorch 2.13 runs that tapegrad refused (found by the differential fuzzer, issue 16):
empty results of samplers with integer dtypes, area interpolation to size 0, convolutions with
empty dims.  Each result (shape, dtype, values, gradients) is compared with torch's own."""
import numpy as np
import pytest

import tapegrad as tg


def _both(torch, fn):
    """fn run by tapegrad and by torch, as numpy arrays (shape and dtype kept)."""
    return np.asarray(fn(tg).detach().numpy()), fn(torch).detach().numpy()


def _same(mine, theirs):
    assert mine.shape == theirs.shape and mine.dtype == theirs.dtype, (mine.shape, mine.dtype,
                                                                         theirs.shape, theirs.dtype)
    np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-6)


# -- 5. samplers with an empty shape ------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda t: t.randn(0, dtype=t.int64),
    lambda t: t.randn(5, 0, dtype=t.int8),
    lambda t: t.randn(0, dtype=t.bool),
    lambda t: t.normal(0.0, 1.0, (0, 2), dtype=t.int32),
    lambda t: t.randn_like(t.ones(0, 3, dtype=t.int16)),
    lambda t: t.ones(0, dtype=t.int64).normal_(),
    lambda t: t.randn(0, out=t.ones(3, dtype=t.int64)),
])
def test_normal_samplers_give_empty_int_tensors(torch, make):
    # PyTorch's normal kernel (and its float-only check) never runs for an empty result.
    _same(*_both(torch, make))


@pytest.mark.parametrize("make", [
    lambda t: t.randn(2, dtype=t.int64),          # a non-empty result reaches the kernel
    lambda t: t.rand(0, dtype=t.int64),           # uniform checks its bounds first, even empty
    lambda t: t.ones(0, dtype=t.int64).uniform_(),
])
def test_int_samplers_still_refused_where_torch_refuses(torch, make):
    with pytest.raises(NotImplementedError) as theirs:
        make(torch)
    with pytest.raises(NotImplementedError) as mine:
        make(tg)
    assert str(theirs.value) == str(mine.value)


def test_randn_int_requires_grad_refused_as_torch(torch):
    with pytest.raises(RuntimeError, match="floating point"):
        torch.randn(0, dtype=torch.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        tg.randn(0, dtype=tg.int64, requires_grad=True)


# -- 3. area interpolation (adaptive average pooling) to an output size of 0 -------------------

@pytest.mark.parametrize("make", [
    lambda t: t.nn.functional.interpolate(t.arange(8.).reshape(1, 2, 4), size=0, mode="area"),
    lambda t: t.nn.functional.interpolate(t.arange(32.).reshape(1, 2, 4, 4), size=(0, 3),
                                          mode="area"),
    lambda t: t.nn.functional.interpolate(t.ones(1, 2, 4), scale_factor=0.1, mode="area"),
    lambda t: t.nn.functional.adaptive_avg_pool1d(t.ones(1, 2, 4), 0),
    lambda t: t.nn.functional.adaptive_avg_pool2d(t.ones(1, 2, 4, 4), (None, 0)),
    lambda t: t.nn.functional.adaptive_avg_pool3d(t.ones(1, 2, 4, 4, 4), (0, 2, 2)),
])
def test_area_and_adaptive_avg_to_size_zero_are_empty(torch, make):
    _same(*_both(torch, make))


def test_area_to_size_zero_backward_refuses_as_pytorch():
    # PyTorch's backward refuses the empty grad_output (adaptive_avg_pool2d_backward); tapegrad
    # gave zeros until session 22's fuzz run (60706190), and now raises the same error.
    x = tg.ones(1, 2, 4, dtype=tg.float64, requires_grad=True)
    y = tg.nn.functional.interpolate(x, size=0, mode="area").sum()
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool2d_backward\(\): Expected "
                                           r"grad_output to have non-zero size .* \[1, 2, 1, 0\]"):
        y.backward()


@pytest.mark.parametrize("make", [
    # an empty input dim: PyTorch raises where tapegrad averaged nothing into NaN
    lambda t: t.nn.functional.interpolate(t.ones(1, 2, 0), size=3, mode="area"),
    lambda t: t.nn.functional.interpolate(t.ones(1, 2, 4), size=-1, mode="area"),
    lambda t: t.nn.functional.adaptive_avg_pool2d(t.ones(1, 2, 4, 4), (1, -1)),
    lambda t: t.nn.functional.adaptive_avg_pool3d(t.ones(1, 2, 4, 4, 4), (-1, 2, 2)),
    lambda t: t.nn.functional.interpolate(t.ones(1, 2, 4), size=0, mode="nearest"),
])
def test_area_refusals_match_torch(torch, make):
    with pytest.raises(RuntimeError) as theirs:
        make(torch)
    with pytest.raises(RuntimeError) as mine:
        make(tg)
    assert str(theirs.value)[:40] == str(mine.value)[:40]


# -- 4. convolutions with an empty batch, no input channels or an empty output dim ---------------

def _conv_case(torch, make, shapes):
    """make(t, *tensors) under both libraries, float64 tensors of `shapes` requiring grad: the
    same output (shape, dtype, values) and the same gradients (zeros, of each input's shape)."""
    results = []
    for lib in (tg, torch):
        args = [lib.ones(*s, dtype=lib.float64, requires_grad=True) for s in shapes]
        out = make(lib, *args)
        out.sum().backward()
        results.append((out.detach().numpy(), [a.grad.numpy() for a in args]))
    (mine, mine_grads), (theirs, their_grads) = results
    _same(mine, theirs)
    for g, h in zip(mine_grads, their_grads):
        _same(g, h)


@pytest.mark.parametrize("make, shapes", [
    # transposed, empty batch and an output spatial size of 0 (no kernel runs in PyTorch)
    (lambda t, x, w: t.nn.functional.conv_transpose2d(x, w), [(0, 2, 0, 5), (2, 3, 1, 1)]),
    (lambda t, x, w: t.nn.functional.conv_transpose1d(x, w), [(0, 2, 0), (2, 3, 1)]),
    (lambda t, x, w: t.nn.functional.conv_transpose3d(x, w), [(0, 2, 0, 2, 2), (2, 3, 1, 1, 1)]),
    # no input channels: PyTorch gives no output channels either, and zero gradients
    (lambda t, x, w, b: t.nn.functional.conv2d(x, w, b), [(1, 0, 5, 5), (3, 0, 3, 3), (3,)]),
    (lambda t, x, w: t.nn.functional.conv1d(x, w), [(2, 0, 5), (3, 0, 3)]),
    (lambda t, x, w: t.nn.functional.conv2d(x, w), [(0, 0, 5, 5), (3, 0, 3, 3)]),
    (lambda t, x, w, b: t.nn.functional.conv2d(x, w, b), [(0, 5, 5), (3, 0, 3, 3), (3,)]),
    (lambda t, x, w: t.nn.functional.conv3d(x, w), [(1, 0, 5, 5, 5), (3, 0, 3, 3, 3)]),
])
def test_empty_convolutions_run_as_torch(torch, make, shapes):
    _conv_case(torch, make, shapes)


@pytest.mark.parametrize("make, shapes", [
    # An empty batch with a non-empty sample shape ran before; the transposed convolutions now
    # take the empty-input path instead of a padded dummy sample: these guard that change.
    (lambda t, x, w, b: t.nn.functional.conv_transpose2d(x, w, b, stride=2, output_padding=1),
     [(0, 2, 5, 5), (2, 3, 3, 3), (3,)]),
    (lambda t, x, w, b: t.nn.functional.conv2d(x, w, b, stride=2, padding=1),
     [(0, 2, 5, 5), (3, 2, 3, 3), (3,)]),
    (lambda t, x, w, b: t.nn.functional.conv_transpose1d(x, w, b), [(0, 2, 5), (2, 3, 3), (3,)]),
])
def test_empty_batch_convolutions_still_run(torch, make, shapes):
    _conv_case(torch, make, shapes)


@pytest.mark.parametrize("make", [
    lambda t: t.nn.functional.conv2d(t.ones(1, 2, 5, 5), t.ones(0, 2, 3, 3)),
    lambda t: t.nn.functional.conv1d(t.ones(1, 2, 5), t.ones(0, 2, 3)),
    lambda t: t.nn.functional.conv3d(t.ones(1, 2, 5, 5, 5), t.ones(0, 2, 3, 3, 3)),
    lambda t: t.nn.functional.conv2d(t.ones(1, 2, 5, 5), t.ones(1, 1, 3, 3), groups=2),
    lambda t: t.nn.functional.conv_transpose2d(t.ones(1, 2, 5, 5), t.ones(2, 0, 3, 3)),
    lambda t: t.nn.functional.conv_transpose1d(t.ones(1, 2, 5), t.ones(2, 0, 3)),
    lambda t: t.nn.functional.conv_transpose3d(t.ones(1, 2, 5, 5, 5), t.ones(2, 0, 3, 3, 3)),
    lambda t: t.nn.functional.conv_transpose1d(t.ones(1, 0, 5), t.ones(0, 3, 3)),
    lambda t: t.nn.functional.conv_transpose2d(t.ones(1, 2, 0, 5), t.ones(2, 3, 1, 1)),
])
def test_empty_weights_refused_as_torch(torch, make):
    # tapegrad raised ValueError from its kernel, or returned an empty result PyTorch refuses
    with pytest.raises(RuntimeError) as theirs:
        make(torch)
    with pytest.raises(RuntimeError) as mine:
        make(tg)
    assert str(theirs.value) == str(mine.value)


# -- 1. einsum with mixed dtypes ------------------------------------------------------------------

@pytest.mark.parametrize("spec, shapes, dtypes", [
    # no summed subscript: PyTorch multiplies, with type promotion
    ("i,i->i", [(3,), (3,)], ("float32", "float64")),
    ("i,j->ij", [(3,), (2,)], ("float16", "float32")),
    ("ij,j->ij", [(2, 3), (3,)], ("int64", "float32")),
    ("ii,i->i", [(3, 3), (3,)], ("float32", "float64")),
    # summed subscripts of size 1 on one side (the other side is summed first) or on both:
    # still no bmm in PyTorch, so a promoting multiply (these raised before)
    ("a,a", [(1,), (1,)], ("float64", "float32")),
    ("ac,c", [(2, 1), (1,)], ("float32", "float64")),
    ("cb,cb->c", [(2, 1), (2, 1)], ("float64", "float32")),
    ("ca,ca,ba", [(2, 1), (2, 1), (1, 1)], ("float64", "float64", "float32")),
    (",cb,c->b", [(), (1, 1), (1,)], ("float32", "float64", "float32")),
    ("ab,b->a", [(2, 1), (1,)], ("bool", "float32")),
])
def test_einsum_promotes_without_contraction(torch, spec, shapes, dtypes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    results = []
    for lib in (tg, torch):
        ts = [lib.tensor(a).to(getattr(lib, d)) for a, d in zip(arrays, dtypes)]
        for t in ts:
            if t.is_floating_point():
                t.requires_grad_(True)
        out = lib.einsum(spec, *ts)
        out.sum().backward()
        results.append((out.detach().numpy(), [t.grad.numpy() for t in ts if t.requires_grad]))
    (mine, mg), (theirs, tgr) = results
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    np.testing.assert_allclose(mine, theirs, rtol=1e-3)
    for g, h in zip(mg, tgr):
        assert g.dtype == h.dtype
        np.testing.assert_allclose(g, h, rtol=1e-3)


@pytest.mark.parametrize("make", [
    lambda t: t.einsum("ij,jk->ik", t.ones(2, 3), t.ones(3, 4, dtype=t.float64)),
    lambda t: t.einsum("i,i->", t.ones(3), t.ones(3, dtype=t.float64)),
    lambda t: t.einsum("ij,jk->ik", t.ones(2, 3, dtype=t.bool), t.ones(3, 2)),
    lambda t: t.einsum("ij,jk->ik", t.ones(2, 3, dtype=t.bool), t.ones(3, 2, dtype=t.bool)),
])
def test_einsum_contraction_refusals_match_torch(torch, make):
    # a summed subscript runs bmm, which PyTorch refuses for mixed dtypes and for bool (the bool
    # cases raised RuntimeError or addmm's message before)
    with pytest.raises(Exception) as theirs:
        make(torch)
    with pytest.raises(Exception) as mine:
        make(tg)
    assert type(theirs.value) is type(mine.value)
    assert str(theirs.value) == str(mine.value)


# -- 2. circular padding with negative pads (PyTorch crops first) -------------------------------

@pytest.mark.parametrize("shape, pad", [
    ((1, 1, 10), (-2, 3)), ((1, 1, 10), (-2, -3)), ((1, 1, 4, 5), (-1, -1, 1, -2)),
    ((1, 4, 5), (-1, 2)), ((1, 1, 3, 4, 5), (-1, 2, 0, -1, 1, -1)), ((1, 1, 10), (-10, 0)),
])
def test_circular_pad_negative_crops(torch, shape, pad):
    # (ran before this session; guards values and gradients.  Where a wrap would copy the
    # output onto itself, PyTorch raises or runs depending on memory layout, and its gradient
    # there is not the derivative of its values: see tests/test_fuzz_triage19.py.)
    _conv_case(torch, lambda t, x: t.nn.functional.pad(x, pad, mode="circular") * 1.0, [shape])
