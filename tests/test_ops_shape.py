"""Shape ops: reshape, view, flatten, transpose, permute, squeeze, expand, repeat, cat, stack,
split, chunk, unbind, contiguous, clone - gradients, views, errors and PyTorch parity."""
import gc
import re
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import count_python_calls

RNG = np.random.default_rng(0)


def arr(*shape):
    return RNG.standard_normal(shape)


def weighted(fn):
    """fn's output(s) times fixed random weights, summed: a gradient that is not all ones."""
    cache = {}

    def f(*xs):
        out = fn(*xs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        total = None
        for i, o in enumerate(outs):
            key = (i, tuple(o.shape))
            if key not in cache:
                cache[key] = np.random.default_rng(len(cache) + 1).standard_normal(o.shape)
            term = (o * tg.tensor(cache[key])).sum()
            total = term if total is None else total + term
        return total
    return f


def shares(a, b):
    return np.shares_memory(a.detach().numpy(), b.detach().numpy())


def name(t):
    return type(t.grad_fn).__name__


# -- finite differences in float64 ---------------------------------------------------------------

GRAD_CASES = [
    ("reshape", lambda x: x.reshape(6, 4), (2, 3, 4)),
    ("reshape tuple -1", lambda x: x.reshape((-1, 2)), (2, 3, 4)),
    ("reshape list", lambda x: x.reshape([4, -1]), (2, 3, 4)),
    ("reshape transposed (copy)", lambda x: x.transpose(0, 2).reshape(-1), (2, 3, 4)),
    ("reshape transposed (view)", lambda x: x.t().reshape(4, 3), (3, 4)),
    ("reshape sliced", lambda x: x[:, ::2].reshape(-1), (3, 4)),
    ("reshape size-1", lambda x: x.reshape(1, 3, 1), (3,)),
    ("reshape 0-d", lambda x: x.reshape(1, 1), ()),
    ("reshape to 0-d", lambda x: x.reshape(()), (1,)),
    ("view", lambda x: x.view(3, 2, 4), (6, 4)),
    ("view sliced", lambda x: x[:, 1:, :].view(2, 8), (2, 3, 4)),
    ("view_as", lambda x: x.view_as(tg.zeros(12)), (3, 4)),
    ("reshape_as", lambda x: x.t().reshape_as(tg.zeros(12)), (3, 4)),
    ("flatten", lambda x: x.flatten(), (2, 3, 4)),
    ("flatten 1..2", lambda x: x.flatten(1, 2), (2, 3, 4)),
    ("flatten neg", lambda x: x.flatten(-3, -2), (2, 3, 4)),
    ("flatten transposed", lambda x: x.transpose(0, 1).flatten(), (2, 3, 4)),
    ("flatten 0-d", lambda x: x.flatten(), ()),
    ("unflatten", lambda x: x.unflatten(1, (2, -1)), (3, 4)),
    ("transpose", lambda x: x.transpose(0, 2), (2, 3, 4)),
    ("transpose neg", lambda x: x.transpose(-1, -2), (2, 3, 4)),
    ("swapaxes", lambda x: x.swapaxes(0, 1), (2, 3)),
    ("t", lambda x: x.t(), (2, 3)),
    ("t 1-d", lambda x: x.t(), (3,)),
    ("T", lambda x: x.T, (2, 3)),
    ("mT", lambda x: x.mT, (2, 3, 4)),
    ("permute", lambda x: x.permute(2, 0, 1), (2, 3, 4)),
    ("permute tuple neg", lambda x: x.permute((-1, 0, 1)), (2, 3, 4)),
    ("movedim", lambda x: x.movedim(0, -1), (2, 3, 4)),
    ("squeeze", lambda x: x.squeeze(), (1, 3, 1)),
    ("squeeze dim", lambda x: x.squeeze(-1), (1, 3, 1)),
    ("squeeze dims", lambda x: x.squeeze((0, 2)), (1, 3, 1)),
    ("unsqueeze", lambda x: x.unsqueeze(1), (2, 3)),
    ("unsqueeze neg", lambda x: x.unsqueeze(-1), (2, 3)),
    ("unsqueeze 0-d", lambda x: x.unsqueeze(0), ()),
    ("expand", lambda x: x.expand(2, 3), (3,)),
    ("expand -1 and size-1", lambda x: x.expand(4, -1, 3), (2, 1)),
    ("expand transposed", lambda x: x.t().expand(2, 3, 2), (2, 3)),
    ("expand 0-d", lambda x: x.expand(2, 3), ()),
    ("expand_as", lambda x: x.expand_as(tg.zeros(2, 3, 4)), (3, 1)),
    ("repeat", lambda x: x.repeat(2, 1, 3), (3, 2)),
    ("repeat tuple", lambda x: x.repeat((2, 2)), (2, 3)),
    ("repeat transposed", lambda x: x.t().repeat(2, 2), (2, 3)),
    ("repeat 0-d", lambda x: x.repeat(3), ()),
    ("tile", lambda x: x.tile(2), (2, 3)),
    ("clone", lambda x: x.clone(), (2, 3)),
    ("clone transposed", lambda x: x.t().clone(), (2, 3)),
    ("contiguous", lambda x: x.t().contiguous(), (2, 3)),
    ("split", lambda x: x.split(2), (5, 3)),
    ("split sizes dim", lambda x: x.split([1, 2], dim=-1), (2, 3)),
    ("chunk", lambda x: x.chunk(3, 1), (2, 7)),
    ("unbind", lambda x: x.unbind(1), (2, 3)),
    ("unbind transposed", lambda x: x.t().unbind(), (2, 3)),
]


@pytest.mark.parametrize("fn,shape", [c[1:] for c in GRAD_CASES], ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_finite_differences(gradcheck, fn, shape):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # x.T on non-2-D tensors is deprecated
        gradcheck(weighted(fn), arr(*shape))


def test_cat_stack_gradients(gradcheck):
    gradcheck(weighted(lambda a, b: tg.cat([a, b])), arr(2, 3), arr(1, 3))
    gradcheck(weighted(lambda a, b: tg.cat((a, b.t()), dim=-1)), arr(2, 3), arr(2, 2))
    gradcheck(weighted(lambda a, b, c: tg.cat([a, b, c], 1)), arr(2, 1), arr(2, 3), arr(2, 2))
    gradcheck(weighted(lambda a, b: tg.stack([a, b])), arr(2, 3), arr(2, 3))
    gradcheck(weighted(lambda a, b: tg.stack([a, b.t()], dim=-1)), arr(2, 3), arr(3, 2))
    gradcheck(weighted(lambda a, b: tg.stack([a, b], -1)), arr(), arr())
    gradcheck(weighted(lambda a: tg.cat([a, a, a * 2])), arr(2))         # repeated input


def test_cat_of_many_inputs_gradients():
    # more inputs than a record holds inline (and than record_from's small buffer)
    xs = [tg.tensor(arr(2, i % 3 + 1), requires_grad=True) for i in range(12)]
    w = arr(2, sum(i % 3 + 1 for i in range(12)))
    (tg.cat(xs, 1) * tg.tensor(w)).sum().backward()
    o = 0
    for x in xs:
        n = x.shape[1]
        np.testing.assert_array_equal(x.grad.numpy(), w[:, o:o + n])
        o += n
    ys = [tg.tensor(arr(3), requires_grad=i % 2 == 0) for i in range(10)]
    tg.stack(ys).sum().backward()
    assert all((y.grad is None) == (i % 2 == 1) for i, y in enumerate(ys))


def test_size_zero_dims():
    x = tg.tensor(np.zeros((0, 3)), requires_grad=True)
    y = x.reshape(3, 0).t().expand(2, 0, 3)
    y.sum().backward()
    assert x.grad.shape == (0, 3)
    a = tg.tensor(arr(2, 0), requires_grad=True)
    b = tg.tensor(arr(2, 3), requires_grad=True)
    c = tg.cat([a, b], 1)
    assert c.shape == (2, 3)
    (c * 2).sum().backward()
    assert a.grad.shape == (2, 0) and b.grad.tolist() == [[2.0] * 3] * 2
    parts = tg.tensor(np.zeros((0, 2)), requires_grad=True).chunk(3)
    assert [p.shape for p in parts] == [(0, 2)] * 3
    assert tg.zeros(0, 2).unbind() == ()
    z = tg.tensor(arr(3), requires_grad=True)
    e = z[:1].expand(0)
    e.sum().backward()
    assert e.shape == (0,) and z.grad.tolist() == [0.0, 0.0, 0.0]
    r = tg.tensor(arr(2), requires_grad=True)
    rr = r.repeat(0, 2)
    rr.sum().backward()
    assert rr.shape == (0, 4) and r.grad.tolist() == [0.0, 0.0]


def test_repeated_use_accumulates():
    x = tg.tensor(arr(2, 3), requires_grad=True)
    a, b = x.split([1, 1])
    (a * 2 + b * 3 + x.t().sum(1) + x.reshape(-1)[:3] + x[1]).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[4, 4, 4], [5, 5, 5]])


# -- views share memory --------------------------------------------------------------------------

def test_views_share_memory():
    x = tg.tensor(arr(2, 3, 4))
    for y in (x.reshape(6, 4), x.view(-1), x.flatten(1), x.transpose(0, 1), x.permute(2, 1, 0),
              x.unsqueeze(0), x.squeeze(), x[:1].squeeze(0), x.mT, x.movedim(0, 1),
              x[:, :1].expand(2, 5, 4), x.t() if x.ndim <= 2 else x[0].t(), x.unflatten(2, (2, 2)),
              *x.split(1, 1), *x.chunk(2, 2), *x.unbind(2), x.transpose(0, 1).reshape(3, 2, 2, 2)):
        assert shares(y, x)
    assert not shares(x.transpose(0, 2).reshape(-1), x)          # needs a copy
    assert not shares(x.clone(), x) and not shares(x.repeat(1, 1, 1), x)
    assert not shares(tg.cat([x]), x) and not shares(tg.stack([x]), x)
    v = x.view(24)
    x.numpy()[0, 0, 0] = 123.0
    assert v[0].item() == 123.0


def test_contiguous_returns_self_when_contiguous():
    x = tg.tensor(arr(2, 3), requires_grad=True)
    assert x.contiguous() is x
    y = x.t().contiguous()
    assert y is not x and y.is_contiguous() and name(y) == "CloneBackward0"
    assert not x.t().is_contiguous() and x.t().clone().shape == (3, 2)


def test_flatten_returns_self_when_nothing_to_merge():
    x = tg.tensor(arr(2, 3), requires_grad=True)
    assert x.flatten(1, 1) is x
    v = tg.tensor(arr(3))
    assert v.flatten() is v


def test_expand_is_a_read_only_view():
    x = tg.tensor(arr(3))
    y = x.expand(2, 3)
    assert shares(y, x) and not y.numpy().flags.writeable


def test_split_outputs_are_separate_records():
    x = tg.tensor(arr(4, 2), requires_grad=True)
    a, b = x.split(2)
    assert name(a) == name(b) == "SplitBackward0" and a.grad_fn is not b.grad_fn
    b.sum().backward()
    assert x.grad.tolist() == [[0, 0], [0, 0], [1, 1], [1, 1]]


def test_mixed_dtypes_cat_promotes_and_grads_keep_dtype():
    a = tg.tensor(arr(2), dtype=tg.float32, requires_grad=True)
    b = tg.tensor(arr(2), dtype=tg.float64, requires_grad=True)
    c = tg.cat([a, b, tg.tensor([1, 2])])
    assert c.dtype == tg.float64
    c.sum().backward()
    assert a.grad.dtype == tg.float32 and b.grad.dtype == tg.float64
    assert tg.cat([tg.tensor([1, 2]), tg.tensor([1.0])]).dtype == tg.float32
    assert tg.cat([tg.tensor([True]), tg.tensor([1], dtype=tg.int32)]).dtype == tg.int32
    s = tg.stack([a, b])
    assert s.dtype == tg.float64


def test_cat_skips_empty_1d_tensors():
    e = tg.tensor(np.zeros(0), requires_grad=True)
    x = tg.tensor(arr(2, 3), requires_grad=True)
    y = tg.cat([e, x, e])
    assert y.shape == (2, 3)
    y.sum().backward()
    assert e.grad.shape == (0,) and x.grad.tolist() == [[1.0] * 3] * 2
    assert tg.cat([tg.zeros(0), tg.zeros(0)]).shape == (0,)


def test_int_tensors_reshape_without_grad():
    x = tg.arange(6)
    assert x.reshape(2, 3).t().tolist() == [[0, 3], [1, 4], [2, 5]]
    assert x.reshape(2, 3).t().grad_fn is None and x.repeat(2).dtype == tg.int64
    assert x.view(tg.int64) is not x and x.view(tg.int32).shape == (12,)


def test_no_grad_records_nothing():
    x = tg.tensor(arr(2, 3), requires_grad=True)
    with tg.no_grad():
        views = [x.reshape(-1), x.t(), x.expand(2, 2, 3), *x.split(1)]
        copies = [tg.cat([x, x]), x.clone()]
    assert all(y.grad_fn is None for y in views + copies)
    # as PyTorch's: a view taken under no_grad requires grad when its input does (a leaf whose
    # gradient is dropped); a new tensor does not
    assert all(y.requires_grad and y.is_leaf for y in views)
    assert not any(y.requires_grad for y in copies)


def test_backward_through_shape_ops_makes_no_python_call_per_node():
    def chain(x, n):
        y = x
        for _ in range(n):
            a, b = y.reshape(2, 3).t().unsqueeze(0).expand(2, 3, 2).split(1)
            c = tg.cat([a, b], 0).permute(2, 1, 0).repeat(1, 1, 2)
            y = tg.stack([c.flatten()[:6].squeeze(), *c.flatten().chunk(4)[:1]]).sum(0)
            y = y.clone().contiguous().view(6).unbind()[0].expand(6) * 0.5
        return y.sum()


    x = tg.tensor(arr(6), requires_grad=True)
    small, big = chain(x, 2), chain(x, 20)
    assert count_python_calls(small.backward) == count_python_calls(big.backward)


# -- grad_fn names -------------------------------------------------------------------------------

def test_grad_fn_names():
    x = tg.tensor(arr(2, 3, 4), requires_grad=True)
    m = tg.tensor(arr(3, 4), requires_grad=True)
    assert name(x.reshape(6, 4)) == "ViewBackward0"
    assert name(x.transpose(0, 1).reshape(3, 2, 2, 2)) == "ReshapeAliasBackward0"
    assert name(x.transpose(0, 1).reshape(-1)) == "UnsafeViewBackward0"
    assert name(x.view(-1)) == name(x.flatten()) == "ViewBackward0"
    assert name(x.transpose(0, 1)) == name(x.mT) == name(x.swapdims(0, 1)) == "TransposeBackward0"
    assert name(m.t()) == "TBackward0" and name(m.T) == "PermuteBackward0"
    assert name(x.permute(1, 0, 2)) == name(x.movedim(0, 1)) == "PermuteBackward0"
    assert name(x[:1].squeeze()) == "SqueezeBackward0"
    assert name(x.squeeze(0)) == "SqueezeBackward1"
    assert name(x.squeeze((0, 1))) == name(x.squeeze(0, 1)) == "SqueezeBackward2"
    assert name(x.unsqueeze(0)) == "UnsqueezeBackward0"
    assert name(x.expand(2, 2, 3, 4)) == "ExpandBackward0"
    assert name(x.repeat(1, 1, 2)) == name(x.tile(2)) == "RepeatBackward0"
    assert name(tg.cat([x, x])) == "CatBackward0" and name(tg.stack([x])) == "StackBackward0"
    assert {name(p) for p in x.split(1)} == {"SplitBackward0"}
    assert {name(p) for p in x.split([1, 1])} == {"SplitWithSizesBackward0"}
    assert {name(p) for p in x.chunk(2, 1)} == {"SplitBackward0"}
    assert {name(p) for p in x.unbind(2)} == {"UnbindBackward0"}
    assert name(x.clone()) == "CloneBackward0"


# -- bad input -----------------------------------------------------------------------------------

def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


BAD = [
    (RuntimeError, r"shape '\[4, 4\]' is invalid for input of size 6",
     lambda x, m: m[:2, :3].reshape(4, 4)),
    (RuntimeError, "only one dimension can be inferred", lambda x, m: m.reshape(-1, -1)),
    (RuntimeError, r"invalid shape dimension -2 at index 0 of shape \[-2, 3\]",
     lambda x, m: m.reshape(-2, 3)),
    (RuntimeError, "cannot reshape tensor of 0 elements into shape \\[0, -1\\] because the "
     "unspecified dimension size -1 can be any value and is ambiguous",
     lambda x, m: tg.zeros(0, 3).reshape(0, -1)),
    (TypeError, "must be tuple of ints, but found element of type float at pos 0",
     lambda x, m: m.reshape((2.0, 3))),
    (RuntimeError, r"view size is not compatible with input tensor's size and stride \(at least "
     r"one dimension spans across two contiguous subspaces\). Use .reshape\(...\) instead.",
     lambda x, m: m.t().view(-1)),
    (RuntimeError, "view size is not compatible", lambda x, m: m[0, :3].expand(2, 3).view(6)),
    (RuntimeError, "view size is not compatible", lambda x, m: x[:, 1:, :].view(4, 4)),
    (RuntimeError, "flatten\\(\\) has invalid args: start_dim cannot come after end_dim",
     lambda x, m: x.flatten(2, 1)),
    (IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)",
     lambda x, m: x.flatten(3)),
    (RuntimeError, r"unflatten: Provided sizes \[3, -1\] don't multiply up to the size of dim 1 "
     r"\(4\) in the input tensor", lambda x, m: m.unflatten(1, (3, -1))),
    (IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
     lambda x, m: m.transpose(0, 2)),
    (TypeError, r"transpose\(\): argument 'dim0' \(position 1\) must be int, not float",
     lambda x, m: m.transpose(1.0, 0)),
    (RuntimeError, "t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D",
     lambda x, m: x.t()),
    (RuntimeError, "tensor.mT is only supported on matrices or batches of matrices. Got 1-D",
     lambda x, m: m[0].mT),
    (RuntimeError, r"number of dimensions in the tensor input does not match the length of the "
     r"desired ordering of dimensions i.e. input.dim\(\) = 3 is not equal to len\(dims\) = 2",
     lambda x, m: x.permute(0, 1)),
    (RuntimeError, "permute\\(\\): duplicate dims are not allowed.",
     lambda x, m: x.permute(0, 1, 1)),
    (IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\], but got -4\)",
     lambda x, m: x.permute(0, 1, -4)),
    (RuntimeError, "movedim: repeated dim in `source`", lambda x, m: x.movedim((0, 0), (1, 2))),
    (IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)",
     lambda x, m: x.squeeze(3)),
    (RuntimeError, "dim 0 appears multiple times in the list of dims",
     lambda x, m: x.squeeze((0, 0))),
    (IndexError, r"Dimension out of range \(expected to be in range of \[-4, 3\], but got 4\)",
     lambda x, m: x.unsqueeze(4)),
    (TypeError, r"unsqueeze\(\): argument 'dim' \(position 1\) must be int, not tuple",
     lambda x, m: x.unsqueeze((0,))),
    (RuntimeError, r"The expanded size of the tensor \(4\) must match the existing size \(3\) at "
     r"non-singleton dimension 1.  Target sizes: \[2, 4\].  Tensor sizes: \[2, 3\]",
     lambda x, m: m[:2, :3].expand(2, 4)),
    (RuntimeError, r"The expanded size of the tensor \(-1\) isn't allowed in a leading, "
     r"non-existing dimension 0", lambda x, m: m.expand(-1, 3, 4)),
    (RuntimeError, r"the number of sizes provided \(1\) must be greater or equal to the number of "
     r"dimensions in the tensor \(2\)", lambda x, m: m.expand(4)),
    (RuntimeError, "Number of dimensions of repeat dims can not be smaller than number of "
     "dimensions of tensor", lambda x, m: m.repeat(2)),
    (RuntimeError, r"Trying to create tensor with negative dimension -3: \[-3, 8\]",
     lambda x, m: m.repeat(-1, 2)),
    (RuntimeError, r"Sizes of tensors must match except in dimension 0. Expected size 4 but got "
     r"size 3 for tensor number 1 in the list.", lambda x, m: tg.cat([m, m.t()])),
    (RuntimeError, r"Sizes of tensors must match except in dimension 1. Expected size 3 but got "
     r"size 4 for tensor number 2 in the list.", lambda x, m: tg.cat([m, m, m.t()], 1)),
    (RuntimeError, "Tensors must have same number of dimensions: got 2 and 3",
     lambda x, m: tg.cat([m, x])),
    (RuntimeError, r"zero-dimensional tensor \(at position 1\) cannot be concatenated",
     lambda x, m: tg.cat([m[0], m[0, 0]])),
    (ValueError, "expected a non-empty list of Tensors", lambda x, m: tg.cat([])),
    (TypeError, "must be tuple of Tensors, not Tensor", lambda x, m: tg.cat(m)),
    (TypeError, "expected Tensor as element 1 in argument 0, but got int",
     lambda x, m: tg.cat([m, 1])),
    (IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
     lambda x, m: tg.cat([m, m], 2)),
    (RuntimeError, r"stack expects each tensor to be equal size, but got \[3, 4\] at entry 0 and "
     r"\[4, 3\] at entry 1", lambda x, m: tg.stack([m, m.t()])),
    (RuntimeError, "stack expects a non-empty TensorList", lambda x, m: tg.stack([])),
    (IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)",
     lambda x, m: tg.stack([m, m], 3)),
    (RuntimeError, r"split_with_sizes expects split_sizes to sum exactly to 3 \(input tensor's "
     r"size at dimension 0\), but got split_sizes=\[1, 1\]", lambda x, m: m.split([1, 1])),
    (RuntimeError, "split_with_sizes expects split_sizes have only non-negative entries",
     lambda x, m: m.split([-1, 4])),
    (RuntimeError, "split expects split_size be non-negative, but got split_size=-1",
     lambda x, m: m.split(-1)),
    (RuntimeError, "split_size can only be 0 if dimension size is 0, but got dimension size of 3",
     lambda x, m: m.split(0)),
    (RuntimeError, "split expects at least a 1-dimensional tensor", lambda x, m: m[0, 0].split(1)),
    (RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0", lambda x, m: m.chunk(0)),
    (RuntimeError, "chunk expects at least a 1-dimensional tensor", lambda x, m: m[0, 0].chunk(1)),
    (IndexError, "Dimension specified as 0 but tensor has no dimensions",
     lambda x, m: m[0, 0].unbind()),
]


@pytest.mark.parametrize("exc,match,fn", BAD, ids=[b[1][:40] for b in BAD])
def test_bad_input_raises_pytorch_errors(exc, match, fn):
    x = tg.tensor(arr(2, 3, 4), requires_grad=True)
    m = tg.tensor(arr(3, 4), requires_grad=True)
    with pytest.raises(exc, match=match):
        fn(x, m)


def test_failing_op_records_nothing():
    x = tg.tensor(arr(3, 4), requires_grad=True)
    y = x * 1.0
    gc.collect()  # earlier tests' cyclic garbage must not be freed mid-test
    live = tg._core.tape().live_records
    for bad in (lambda: y.reshape(5), lambda: y.t().view(-1), lambda: tg.cat([y, y.t()]),
                lambda: y.expand(4), lambda: y.split([1]), lambda: tg.stack([y, y[0]])):
        try:
            bad()
        except RuntimeError:
            pass
    assert tg._core.tape().live_records == live


def test_T_warns_on_non_2d():
    with pytest.warns(UserWarning, match="The use of `x.T` on tensors of dimension other than 2"):
        assert tg.zeros(2, 3, 4).T.shape == (4, 3, 2)
    with pytest.warns(UserWarning, match="Tensor.T is deprecated on 0-D tensors"):
        assert tg.tensor(1.0).T.shape == ()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tg.zeros(2, 3).T.shape == (3, 2)


# -- PyTorch parity ------------------------------------------------------------------------------

def run_parity(torch, fn, *arrays, check_names=True):
    """fn(lib, *tensors) in tapegrad and in torch: same values, dtypes, grad_fn names and grads."""
    def make(lib, a):
        t = lib.tensor(a)
        if t.dtype in (lib.float32, lib.float64):
            t.requires_grad_(True)
        return t

    ours = [make(tg, a) for a in arrays]
    theirs = [make(torch, a) for a in arrays]
    out_o, out_t = fn(tg, *ours), fn(torch, *theirs)
    outs_o = list(out_o) if isinstance(out_o, (tuple, list)) else [out_o]
    outs_t = list(out_t) if isinstance(out_t, (tuple, list)) else [out_t]
    assert len(outs_o) == len(outs_t)
    loss_o = loss_t = None
    for i, (o, t) in enumerate(zip(outs_o, outs_t)):
        assert tuple(o.shape) == tuple(t.shape)
        assert str(o.dtype) == str(t.dtype)
        np.testing.assert_array_equal(o.detach().numpy(), t.detach().numpy())
        if check_names:
            assert name(o) == type(t.grad_fn).__name__
        if t.requires_grad:
            w = np.random.default_rng(i).standard_normal(tuple(t.shape))
            lo = (o * tg.tensor(w, dtype=o.dtype)).sum()
            lt = (t * torch.tensor(w, dtype=t.dtype)).sum()
            loss_o = lo if loss_o is None else loss_o + lo
            loss_t = lt if loss_t is None else loss_t + lt
    if loss_t is not None:
        loss_o.backward()
        loss_t.backward()
        for a, b in zip(ours, theirs):
            if b.grad is None:
                assert a.grad is None
            else:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-6)


F32 = lambda *s: RNG.standard_normal(s).astype(np.float32)  # noqa: E731

PARITY = [
    ("reshape", lambda L, x: x.reshape(6, 4), (2, 3, 4)),
    ("reshape -1 tuple", lambda L, x: x.reshape((-1,)), (2, 3, 4)),
    ("reshape alias", lambda L, x: x.transpose(0, 1).reshape(3, 2, 2, 2), (2, 3, 4)),
    ("reshape copy", lambda L, x: x.transpose(0, 1).reshape(-1), (2, 3, 4)),
    ("reshape sliced copy", lambda L, x: x[::2].reshape(-1), (3, 4)),
    ("reshape size-1 alias", lambda L, x: x[:, :1].reshape(3), (3, 4)),
    ("reshape 0 numel", lambda L, x: x.t().reshape(-1), (0, 3)),
    ("reshape 0-d", lambda L, x: x.reshape(1, 1), ()),
    ("torch.reshape", lambda L, x: L.reshape(x, (4, 3)), (3, 4)),
    ("view", lambda L, x: x.view(4, 6), (2, 3, 4)),
    ("view sliced", lambda L, x: x[:, :, ::2].view(6, 2), (2, 3, 4)),
    ("view -1 0-d", lambda L, x: x.view(-1), ()),
    ("view_as", lambda L, x: x.view_as(L.zeros(12)), (3, 4)),
    ("reshape_as", lambda L, x: x.reshape_as(L.zeros(2, 6)), (3, 4)),
    ("flatten", lambda L, x: x.flatten(), (2, 3, 4)),
    ("flatten 1", lambda L, x: x.flatten(1), (2, 3, 4)),
    ("flatten nc", lambda L, x: x.transpose(0, 1).flatten(), (2, 3, 4)),
    ("flatten 0-d", lambda L, x: x.flatten(), ()),
    ("torch.flatten", lambda L, x: L.flatten(x, start_dim=0, end_dim=1), (2, 3, 4)),
    ("unflatten", lambda L, x: x.unflatten(1, (2, 2)), (3, 4)),
    ("unflatten nc", lambda L, x: x.t().unflatten(0, (2, -1)), (3, 4)),
    ("transpose", lambda L, x: x.transpose(0, 2), (2, 3, 4)),
    ("transpose same", lambda L, x: x.transpose(1, 1), (2, 3, 4)),
    ("transpose 0-d", lambda L, x: x.transpose(0, -1), ()),
    ("torch.transpose", lambda L, x: L.transpose(x, 0, 1), (3, 4)),
    ("swapaxes", lambda L, x: x.swapaxes(0, 1), (2, 3, 4)),
    ("swapdims", lambda L, x: x.swapdims(2, 1), (2, 3, 4)),
    ("t", lambda L, x: x.t(), (3, 4)),
    ("t 1-d", lambda L, x: x.t(), (3,)),
    ("t 0-d", lambda L, x: x.t(), ()),
    ("torch.t", lambda L, x: L.t(x), (3, 4)),
    ("T", lambda L, x: x.T, (3, 4)),
    ("mT", lambda L, x: x.mT, (2, 3, 4)),
    ("permute", lambda L, x: x.permute(2, 0, 1), (2, 3, 4)),
    ("permute tuple", lambda L, x: x.permute((2, 0, 1)), (2, 3, 4)),
    ("permute list neg", lambda L, x: x.permute([-1, 0, 1]), (2, 3, 4)),
    ("torch.permute", lambda L, x: L.permute(x, (1, 0)), (3, 4)),
    ("movedim", lambda L, x: x.movedim((0, 1), (2, 0)), (2, 3, 4)),
    ("moveaxis", lambda L, x: L.moveaxis(x, 0, -1), (2, 3, 4)),
    ("squeeze", lambda L, x: x.squeeze(), (1, 3, 1)),
    ("squeeze dim", lambda L, x: x.squeeze(0), (1, 3, 1)),
    ("squeeze non-1 dim", lambda L, x: x.squeeze(1), (1, 3, 1)),
    ("squeeze tuple", lambda L, x: x.squeeze((0, 2)), (1, 3, 1)),
    ("squeeze list", lambda L, x: x.squeeze([0, -1]), (1, 3, 1)),
    ("squeeze 0-d", lambda L, x: x.squeeze(), ()),
    ("squeeze 0-d dim", lambda L, x: x.squeeze(0), ()),
    ("torch.squeeze", lambda L, x: L.squeeze(x, 0), (1, 3, 1)),
    ("unsqueeze", lambda L, x: x.unsqueeze(3), (2, 3, 4)),
    ("unsqueeze neg", lambda L, x: x.unsqueeze(-2), (2, 3, 4)),
    ("unsqueeze 0-d", lambda L, x: x.unsqueeze(0), ()),
    ("torch.unsqueeze", lambda L, x: L.unsqueeze(x, dim=0), (3, 4)),
    ("expand", lambda L, x: x.expand(2, 3), (3,)),
    ("expand -1", lambda L, x: x.expand(2, -1), (3,)),
    ("expand tuple", lambda L, x: x.expand((4, 2, -1)), (2, 1)),
    ("expand same", lambda L, x: x.expand(3, 4), (3, 4)),
    ("expand 0-d", lambda L, x: x.expand(2, 3), ()),
    ("expand 0-d to 0-d", lambda L, x: x.expand(()), ()),
    ("expand to 0", lambda L, x: x[:1].expand(0), (3,)),
    ("expand nc", lambda L, x: x.t()[:, :1].expand(4, 5), (3, 4)),
    ("expand_as", lambda L, x: x.expand_as(L.zeros(4, 3)), (3,)),
    ("repeat", lambda L, x: x.repeat(2, 1, 3), (3, 4)),
    ("repeat tuple", lambda L, x: x.repeat((2, 3)), (3, 4)),
    ("repeat 0", lambda L, x: x.repeat(0, 2), (3, 4)),
    ("repeat 0-d", lambda L, x: x.repeat(2, 3), ()),
    ("repeat 0-d empty", lambda L, x: x.repeat(()), ()),
    ("tile", lambda L, x: x.tile(2), (3, 4)),
    ("torch.tile", lambda L, x: L.tile(x, (2, 1, 1)), (3, 4)),
    ("cat", lambda L, x, y: L.cat([x, y]), (2, 3), (1, 3)),
    ("cat dim", lambda L, x, y: L.cat((x, y.t()), dim=-1), (2, 3), (2, 2)),
    ("cat one", lambda L, x: L.cat([x]), (2, 3)),
    ("cat empty legacy", lambda L, x, y: L.cat([x, y, x]), (0,), (2, 3)),
    ("cat size-0 dim", lambda L, x, y: L.cat([x, y], 1), (2, 0), (2, 3)),
    ("concat", lambda L, x, y: L.concat([x, y]), (2, 3), (1, 3)),
    ("concatenate", lambda L, x, y: L.concatenate([x, y], axis=1), (2, 3), (2, 1)),
    ("cat int", lambda L, x: L.cat([L.arange(3), L.arange(2)]), ()),
    ("stack", lambda L, x, y: L.stack([x, y]), (2, 3), (2, 3)),
    ("stack -1", lambda L, x, y: L.stack([x, y.t()], -1), (2, 3), (3, 2)),
    ("stack 0-d", lambda L, x, y: L.stack([x, y]), (), ()),
    ("split", lambda L, x: x.split(2), (5, 3)),
    ("split big", lambda L, x: x.split(10), (5, 3)),
    ("split sizes", lambda L, x: x.split([1, 0, 4]), (5, 3)),
    ("split dim", lambda L, x: x.split(2, 1), (2, 5)),
    ("split kw", lambda L, x: L.split(x, split_size_or_sections=2, dim=1), (2, 5)),
    ("split method kw", lambda L, x: x.split(split_size=2, dim=1), (2, 5)),
    ("split size-0", lambda L, x: x.split(2), (0, 3)),
    ("chunk", lambda L, x: x.chunk(3), (5,)),
    ("chunk fewer", lambda L, x: x.chunk(4), (6,)),
    ("chunk dim", lambda L, x: L.chunk(x, 2, dim=-1), (3, 4)),
    ("chunk empty", lambda L, x: x.chunk(3), (0,)),
    ("unbind", lambda L, x: x.unbind(), (3, 4)),
    ("unbind dim", lambda L, x: L.unbind(x, dim=1), (3, 4)),
    ("clone", lambda L, x: x.clone(), (3, 4)),
    ("clone nc", lambda L, x: x.t().clone(), (3, 4)),
    ("torch.clone", lambda L, x: L.clone(x), (3, 4)),
    ("contiguous", lambda L, x: x.t().contiguous(), (3, 4)),
]


@pytest.mark.parametrize("fn,shapes", [(c[1], c[2:]) for c in PARITY], ids=[c[0] for c in PARITY])
def test_parity_with_torch(torch, fn, shapes):
    run_parity(torch, fn, *[F32(*s) for s in shapes])


def test_parity_mixed_dtype_cat(torch):
    a, b = F32(2, 3), RNG.standard_normal((1, 3))
    run_parity(torch, lambda L, x, y: L.cat([x, y]), a, b)
    run_parity(torch, lambda L, x, y: L.stack([x[0], y[0]]), a, b)
    run_parity(torch, lambda L, x, y: L.cat([x, L.tensor([[1, 2, 3]])]), a, b)


VIEW_DTYPE = [
    lambda L, x: x.view(L.float64), lambda L, x: x.view(L.int32), lambda L, x: x.view(L.float16),
    lambda L, x: x.view(L.float32), lambda L, x: x[:, :3].view(L.float16),
    lambda L, x: x[:, :1].view(L.float16), lambda L, x: x.t().view(L.float64),
    lambda L, x: x[:, :3].view(L.float64), lambda L, x: x.t().view(L.float16),
    lambda L, x: x[0, 0].view(L.float16),
]


def test_view_dtype_reinterprets_bytes_without_grad():
    x = tg.tensor(F32(3, 4), requires_grad=True)
    y = x.view(tg.int32)
    assert not y.requires_grad and y.grad_fn is None and shares(y, x)
    np.testing.assert_array_equal(y.numpy(), x.detach().numpy().view(np.int32))
    assert not x.view(tg.float32).requires_grad
    with pytest.raises(RuntimeError, match=r"self.size\(-1\) must be divisible by 2 to view Float "
                       r"as Double \(different element sizes\), but got 3"):
        x[:, :3].view(tg.float64)
    with pytest.raises(RuntimeError, match=r"self.stride\(-1\) must be 1 to view Float as Half"):
        x.t().view(tg.float16)
    with pytest.raises(RuntimeError, match=r"self.dim\(\) cannot be 0 to view Float as Half"):
        x[0, 0].view(tg.float16)


@pytest.mark.parametrize("fn", VIEW_DTYPE)
def test_parity_view_dtype(torch, fn):
    a = F32(3, 4)
    try:
        t = fn(torch, torch.tensor(a, requires_grad=True))
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=re.escape(str(e))):
            fn(tg, tg.tensor(a, requires_grad=True))
        return
    o = fn(tg, tg.tensor(a, requires_grad=True))
    assert tuple(o.shape) == tuple(t.shape) and o.requires_grad == t.requires_grad
    np.testing.assert_array_equal(o.detach().numpy(), t.detach().numpy())


@pytest.mark.parametrize("exc,match,fn", BAD, ids=[b[1][:40] for b in BAD])
def test_parity_errors(torch, exc, match, fn):
    """The same bad calls raise the same exception type and message in torch."""
    x = torch.randn(2, 3, 4, requires_grad=True)
    m = torch.randn(3, 4, requires_grad=True)
    f = type(fn)(fn.__code__, dict(fn.__globals__, tg=torch))  # torch standing in for tg
    with pytest.raises(exc, match=match):
        f(x, m)
