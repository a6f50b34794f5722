"""Python and numpy protocols of Tensor: __format__, scalar conversions, __contains__,
__array__ (numpy 2's copy semantics), numpy(force=), DLPack in both directions."""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    """(result) or (exception type name, message) of fn(), for side-by-side comparisons."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - comparing whatever each library raises
        return (type(e).__name__, str(e))


# -- __format__ -------------------------------------------------------------------------------

FORMAT_CASES = [(3.14159, None), (3, None), (True, None), ([2.5], None), ([1.0, 2.0], None),
                ([[7]], None), (-0.5, "float64")]
FORMAT_SPECS = ["", ".2f", "+.2f", "d", ">10", "e", ".3g"]


def _make(lib, data, dtype):
    return lib.tensor(data, dtype=None if dtype is None else getattr(lib, dtype))


@pytest.mark.parametrize("data,dtype", FORMAT_CASES)
def test_format_matches_torch(torch, data, dtype):
    for spec in FORMAT_SPECS:
        ours = _outcome(lambda: format(_make(tg, data, dtype), spec))
        theirs = _outcome(lambda: format(_make(torch, data, dtype), spec))
        assert ours == theirs, spec


def test_format_values():
    assert f"{tg.tensor(2.0):.2f}" == "2.00"
    assert "{:+.1f}".format(tg.tensor(1.25, dtype=tg.float64)) == "+1.2"
    assert f"{tg.tensor(7)}" == "7"
    assert f"{tg.tensor(True)}" == "True"
    assert f"{tg.tensor([1.0, 2.0])}" == "tensor([1., 2.])"
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{tg.tensor([1.0]):.2f}"


def test_format_of_a_subclass_is_object_format(torch):
    for lib in (tg, torch):
        param = lib.nn.Parameter(lib.tensor(1.5))
        assert format(param, "") == str(param)
        with pytest.raises(TypeError, match="unsupported format string passed to Parameter"):
            format(param, ".2f")


# -- scalar conversions -----------------------------------------------------------------------

CONVERSION_INPUTS = [[1.0, 2.0], [[1.0]], [], [1.5], 2.5, [3], [True], -4]
CONVERSIONS = [float, int, complex, bool, operator.index, lambda t: t.item()]


@pytest.mark.parametrize("data", CONVERSION_INPUTS)
def test_scalar_conversions_match_torch(torch, data):
    for convert in CONVERSIONS:
        assert _outcome(lambda: convert(tg.tensor(data))) == \
            _outcome(lambda: convert(torch.tensor(data)))


def test_scalar_conversion_errors():
    pair = tg.tensor([1.0, 2.0])
    for convert in (float, int, complex):
        with pytest.raises(ValueError, match="only one element tensors can be converted"):
            convert(pair)
    with pytest.raises(RuntimeError, match="with no values is ambiguous"):
        bool(tg.tensor([]))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        bool(pair)
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        operator.index(tg.tensor(1.0))
    assert [10, 20, 30][tg.tensor(2)] == 30
    assert complex(tg.tensor([[2.5]])) == 2.5 + 0j


# -- __contains__ -----------------------------------------------------------------------------

def test_contains_matches_torch(torch):
    cases = [2.0, 5, True, [1.0, 5.0], "a", [1]]
    for element in cases:
        def probe(lib):
            item = lib.tensor(element) if isinstance(element, list) and element != [1] else element
            return element.__class__.__name__, _outcome(lambda: item in lib.tensor([1.0, 2.0]))
        ours, theirs = probe(tg), probe(torch)
        if ours[1][0] == "RuntimeError":  # the message names the class, whose module differs
            assert theirs[1][0] == "RuntimeError"
            assert ours[1][1].replace("tapegrad", "torch") == theirs[1][1]
        else:
            assert ours == theirs


def test_contains_values():
    t = tg.tensor([[1, 2], [3, 4]])
    assert 3 in t and 5 not in t
    assert tg.tensor([3, 4]) in t
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "x" in t  # noqa: B015


# -- __array__ and numpy() --------------------------------------------------------------------

def test_np_array_copies_and_asarray_shares():
    t = tg.tensor([1.0, 2.0])
    copied = np.array(t)
    copied[0] = 9.0
    assert t.tolist() == [1.0, 2.0]
    shared = np.asarray(t)
    shared[1] = 7.0
    assert t.tolist() == [1.0, 7.0]
    assert np.array(t, copy=False) is not None and np.shares_memory(np.array(t, copy=False),
                                                                    shared)


def test_array_dtype_and_copy_false():
    t = tg.tensor([1.0, 2.0])
    converted = np.asarray(t, dtype=np.float64)
    assert converted.dtype == np.float64 and not np.shares_memory(converted, np.asarray(t))
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.array(t, dtype=np.float64, copy=False)
    same = np.asarray(t, dtype=np.float32)      # same dtype: no copy, but a fresh ndarray
    assert np.shares_memory(same, np.asarray(t)) and same is not np.asarray(t)


def test_array_of_tensor_that_requires_grad_raises_as_torch(torch):
    for lib in (tg, torch):
        r = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires"), \
                warnings.catch_warnings():
            # torch 2.13's __array__ takes no copy= and numpy warns about it
            warnings.simplefilter("ignore", DeprecationWarning)
            np.array(r)
        with pytest.raises(RuntimeError, match="Use tensor.detach\\(\\).numpy\\(\\) instead"):
            r.numpy()


def test_numpy_force_detaches_and_shares(torch):
    for lib in (tg, torch):
        r = lib.zeros(2, requires_grad=True)
        arr = r.numpy(force=True)
        arr[0] = 3.0
        assert r.detach().tolist() == [3.0, 0.0]
        assert r.requires_grad


def test_np_array_of_every_rank():
    for data in (2.5, [1, 2], [[True, False]], []):
        t = tg.tensor(data)
        np.testing.assert_array_equal(np.array(t), np.array(data, dtype=t.numpy().dtype))
    assert np.array([tg.tensor(1.0), tg.tensor(2.0)]).tolist() == [1.0, 2.0]


# -- __array_wrap__: numpy functions applied to a tensor hand back a tensor ---------------------

NUMPY_ON_TENSORS = [
    ("np.clip", lambda t, i: np.clip(t, 0.0, 1.0)),         # denoising-autoencoder tutorial
    ("np.clip int", lambda t, i: np.clip(i, 1, 2)),
    ("np.round", lambda t, i: np.round(t)),
    ("np.around 1", lambda t, i: np.around(t, 1)),
    ("np.transpose", lambda t, i: np.transpose(t)),
    ("np.reshape", lambda t, i: np.reshape(t, (3,))),
    ("np.argmax", lambda t, i: np.argmax(t)),
    ("np.cumsum", lambda t, i: np.cumsum(t)),
    ("np.argsort", lambda t, i: np.argsort(i)),
    ("np.repeat", lambda t, i: np.repeat(t, 2)),
    ("np.take", lambda t, i: np.take(t, [0])),
    ("np.exp", lambda t, i: np.exp(t)),
    ("np.sqrt int", lambda t, i: np.sqrt(i)),
    ("np.maximum", lambda t, i: np.maximum(t, 0.5)),
    ("np.greater", lambda t, i: np.greater(t, 0)),            # bool -> uint8, as PyTorch
    ("np.isnan", lambda t, i: np.isnan(t)),
    ("np.float64 * t", lambda t, i: np.float64(2) * t),
    ("np.sort", lambda t, i: np.sort(t)),                     # an ndarray in both
    ("np.concatenate", lambda t, i: np.concatenate([t, t])),  # an ndarray in both
]


@pytest.mark.parametrize("name,fn", NUMPY_ON_TENSORS, ids=[c[0] for c in NUMPY_ON_TENSORS])
def test_numpy_functions_on_tensors_return_what_torch_returns(torch, name, fn):
    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # numpy 2 on a 1-arg wrap
            return fn(lib.tensor([[-1.0, 0.5, 2.0]]), lib.tensor([3, 1, 2]))
    expected, actual = run(torch), run(tg)
    assert type(actual).__name__ == type(expected).__name__
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))


def test_array_wrap_by_hand():
    t = tg.tensor([[-1.0, 0.5, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        clipped = np.clip(t, 0.0, 1.0)
        positive = np.greater(t, 0)
    assert isinstance(clipped, tg.Tensor) and clipped.dtype == tg.float32
    assert clipped.tolist() == [[0.0, 0.5, 1.0]]
    assert positive.dtype == tg.uint8 and positive.tolist() == [[0, 1, 1]]


# -- DLPack -----------------------------------------------------------------------------------

def test_dlpack_device():
    assert tg.ones(2).__dlpack_device__() == (1, 0)


def test_numpy_from_dlpack_shares_memory():
    t = tg.tensor([1.0, 2.0])
    arr = np.from_dlpack(t)
    arr[0] = -1.0
    assert t.tolist() == [-1.0, 2.0]
    t.add_(1.0)
    assert arr.tolist() == [0.0, 3.0]


def test_from_dlpack_of_numpy_shares_memory():
    arr = np.zeros((2, 3), dtype=np.float32)
    t = tg.from_dlpack(arr)
    assert t.dtype == tg.float32 and t.shape == (2, 3) and not t.requires_grad
    arr[0, 0] = 4.0
    assert t[0, 0].item() == 4.0
    t.mul_(2.0)
    assert arr[0, 0] == 8.0
    strided = np.arange(10.0)[::2]
    assert tg.from_dlpack(strided).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_from_dlpack_of_tapegrad_tensor_is_an_alias():
    t = tg.tensor([1.0, 2.0])
    alias = tg.from_dlpack(t)
    alias[0] = 5.0
    assert t.tolist() == [5.0, 2.0]
    assert tg.from_dlpack(t, copy=True).add_(1.0) is not None and t.tolist() == [5.0, 2.0]


def test_capsules_round_trip():
    t = tg.tensor([1, 2, 3])
    back = tg.utils.dlpack.from_dlpack(tg.utils.dlpack.to_dlpack(t))
    back[2] = 0
    assert t.tolist() == [1, 2, 0]


def test_dlpack_errors():
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        tg.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        np.from_dlpack(tg.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="from_dlpack received an invalid capsule"):
        tg.from_dlpack([1, 2])
    with pytest.raises(BufferError, match="DLPack only supports IEEE"):  # as in torch
        tg.from_dlpack(np.ones(2, dtype=np.longdouble))
    with pytest.raises(AssertionError, match="stream should be None on cpu"):
        tg.ones(2).__dlpack__(stream=1)


def test_torch_from_dlpack_both_ways(torch):
    t = tg.tensor([1.0, 2.0])
    theirs = torch.from_dlpack(t)
    theirs[1] = -2.0
    assert t.tolist() == [1.0, -2.0]
    source = torch.zeros(2, 3)
    ours = tg.from_dlpack(source)
    source[0, 0] = 5.0
    assert ours[0, 0].item() == 5.0
    ours.mul_(2.0)
    assert source[0, 0].item() == 10.0
    source = torch.arange(3)
    imported = tg.from_dlpack(torch.utils.dlpack.to_dlpack(source))
    assert imported.tolist() == [0, 1, 2]
    imported[0] = 7                          # a legacy capsule imports writable, as in torch
    assert source.tolist() == [7, 1, 2]
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        tg.from_dlpack(torch.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="of dtype torch.bfloat16"):
        tg.from_dlpack(torch.ones(2, dtype=torch.bfloat16))


def test_negative_strides_are_exported_as_a_copy(torch):
    # PyTorch's importer cannot take negative strides (it aborts): such a view goes out compact.
    flipped = tg.from_dlpack(np.arange(4.0)[::-1])
    assert torch.from_dlpack(flipped).tolist() == [3.0, 2.0, 1.0, 0.0]
    with pytest.raises(BufferError, match="negative"):
        flipped.__dlpack__(copy=False)


@pytest.mark.parametrize("data", [2.5, [1.0, 2.0], [[1, 2], [3, 4]], True, [], [[[0.5]]]])
def test_torch_constructors_accept_tapegrad_tensors(torch, data):
    ours = tg.tensor(data)
    expected = torch.tensor(data)
    copied = torch.tensor(ours)
    shared = torch.as_tensor(ours)
    assert copied.dtype == expected.dtype and torch.equal(copied, expected)
    assert torch.equal(shared, expected)
    if ours.numel():
        ours.zero_()
        assert torch.equal(copied, expected)                # torch.tensor copied
        assert torch.equal(shared, torch.zeros_like(expected))  # torch.as_tensor shares


def test_torch_constructors_accept_views(torch):
    ours = tg.arange(6.0).reshape(2, 3).t()
    assert torch.tensor(ours).tolist() == ours.tolist()
    wide = tg.ones(3).expand(2, 3)
    assert torch.tensor(wide).tolist() == [[1.0] * 3] * 2


# -- abs() and reversed() ---------------------------------------------------------------------

def test_builtin_abs_values_and_gradient(gradcheck):
    assert abs(tg.tensor([-1, 2])).tolist() == [1, 2]
    assert abs(tg.tensor([-1, 2])).dtype == tg.int64
    x = tg.tensor([-2.0, 3.0], requires_grad=True)
    abs(x).sum().backward()
    assert x.grad.tolist() == [-1.0, 1.0]
    gradcheck(lambda t: abs(t), [[-1.5, 0.25], [2.0, -0.75]])


def test_builtin_abs_matches_torch(torch):
    for data in ([-1.5, 2.0], [[-3, 4]], -7):
        ours, theirs = abs(tg.tensor(data)), abs(torch.tensor(data))
        assert ours.tolist() == theirs.tolist() and str(ours.dtype) == str(theirs.dtype)
    ours, theirs = _outcome(lambda: abs(tg.tensor([True]))), _outcome(lambda: abs(torch.tensor([True])))
    assert ours == theirs
    x, xt = tg.tensor(-1.5, requires_grad=True), torch.tensor(-1.5, requires_grad=True)
    assert repr(abs(x)) == repr(abs(xt))


def test_builtin_reversed_flips_first_dim_as_torch(torch):
    for data in ([[0, 1, 2], [3, 4, 5]], [1.5, 2.5, 3.5], 4.0):
        ours, theirs = reversed(tg.tensor(data)), reversed(torch.tensor(data))
        assert isinstance(ours, tg.Tensor)
        assert ours.tolist() == theirs.tolist()
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (reversed(x) * tg.tensor([10.0, 20.0])).sum().backward()
    assert x.grad.tolist() == [20.0, 10.0]


# -- shifts and the in-place operators (<<, >>, &=, |=, ^=, <<=, >>=, **=) ------------------------

def test_shift_values():
    x = tg.tensor([1, -3, 5])
    assert (x << 2).tolist() == [4, -12, 20] and (x >> 1).tolist() == [0, -2, 2]
    assert (x << tg.tensor([1, 2, 70])).tolist() == [2, -12, 0]
    assert (x >> tg.tensor([1, 2, 70])).tolist() == [0, -1, 0]
    assert (2 << x).tolist() == [4, 0, 64]
    assert (tg.tensor([1], dtype=tg.uint8) << 9).tolist() == [0]
    assert tg.bitwise_right_shift(tg.tensor([-8], dtype=tg.int8), 10).tolist() == [-1]
    with pytest.raises(NotImplementedError, match="\"lshift_cpu\" not implemented for 'Float'"):
        tg.tensor([1.5]) << 1


def test_inplace_operators_write_into_self():
    y = tg.tensor([1, 2])
    z = y
    y ^= 3
    y |= 4
    y <<= 1
    y >>= 2
    assert z is y and y.tolist() == [3, 2]
    base = tg.tensor([1, 2])
    view = base[1:]
    view <<= 3
    assert base.tolist() == [1, 16]
    b = tg.tensor([True, False])
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        b &= tg.tensor([1, 1])
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        a **= 2
    c = a * 1
    c **= 3
    c.sum().backward()
    assert a.grad.tolist() == [3.0, 12.0]


def test_shifts_and_inplace_operators_match_torch(torch):
    for lib_pair in ((tg, torch),):
        ours, theirs = [], []
        for lib, out in zip(lib_pair, (ours, theirs)):
            x = lib.tensor([1, -3, 5, 7])
            out.append((x << lib.tensor([1, 2, 64, -1])).tolist())
            out.append((lib.tensor([-8, 8], dtype=lib.int8) >> lib.tensor([1, 9])).tolist())
            out.append(str((lib.tensor([True]) << 1).dtype).split(".")[-1])
            y = lib.tensor([6, 5])
            y &= 3
            out.append(y.tolist())
            z = lib.tensor([2, 3])
            z **= 2
            out.append(z.tolist())
        assert ours == theirs
