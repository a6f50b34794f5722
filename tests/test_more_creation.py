"""torch.range, asarray, frombuffer, empty_strided, the windows, unravel_index, typename,
newaxis and Tensor.new (tapegrad._more_creation), against PyTorch and known values."""
import array
import math

import numpy as np
import pytest

import tapegrad as tg


def _same(got, expected, rtol=1e-6):
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=rtol,
                               atol=1e-7)


@pytest.mark.parametrize("args,kwargs", [((1, 4), {}), ((1, 4, 2), {}), ((0, 1, 0.3), {}),
                                         ((0, 1, 0.1), {}), ((4, 1, -1), {}),
                                         ((1, 4), {"dtype": "int64"})])
def test_range_matches_torch(torch, args, kwargs):
    kw_t = {k: getattr(torch, v) for k, v in kwargs.items()}
    kw_g = {k: getattr(tg, v) for k, v in kwargs.items()}
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        expected = torch.range(*args, **kw_t)
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        got = tg.range(*args, **kw_g)
    _same(got, expected)


def test_range_rules_without_torch():
    with pytest.warns(UserWarning, match="use torch.arange, which produces values in"):
        np.testing.assert_array_equal(tg.range(1, 4).numpy(), [1.0, 2.0, 3.0, 4.0])
    with pytest.warns(UserWarning):
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            tg.range(1, 4, 0)
    with pytest.warns(UserWarning):
        with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
            tg.range(4, 1)
    with pytest.warns(UserWarning):
        assert tg.range(0, 2, requires_grad=True).requires_grad


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(torch, name, length, periodic):
    _same(getattr(tg, name)(length, periodic), getattr(torch, name)(length, periodic))


def test_window_arguments(torch):
    _same(tg.hamming_window(5, False, 0.5, 0.4), torch.hamming_window(5, False, 0.5, 0.4))
    _same(tg.kaiser_window(7, False, 8.0, dtype=tg.float64),
          torch.kaiser_window(7, False, 8.0, dtype=torch.float64))


def test_window_values_and_errors():
    np.testing.assert_allclose(tg.hann_window(5, periodic=False).numpy(),
                               [0.0, 0.5, 1.0, 0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(tg.bartlett_window(5).numpy(), [0.0, 0.4, 0.8, 0.8, 0.4],
                               atol=1e-7)
    np.testing.assert_allclose(tg.kaiser_window(5)[0].item(), 1 / np.i0(12.0), rtol=1e-6)
    with pytest.raises(RuntimeError, match="hann_window requires non-negative window_length, "
                                           "got window_length=-1"):
        tg.hann_window(-1)
    with pytest.raises(RuntimeError, match="hann_window expects floating point dtypes"):
        tg.hann_window(4, dtype=tg.int64)
    assert tg.kaiser_window(4, requires_grad=True).requires_grad


def test_unravel_index(torch):
    flat = [[4, 7], [-1, 9]]
    for got, expected in zip(tg.unravel_index(tg.tensor(flat), (3, 3)),
                             torch.unravel_index(torch.tensor(flat), (3, 3))):
        _same(got, expected)
    rows, cols = tg.unravel_index(tg.tensor(5), (3, 3))
    assert (rows.item(), cols.item()) == (1, 2) and rows.dim() == 0
    assert tg.unravel_index(tg.tensor([1]), ()) == ()
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
        tg.unravel_index(tg.tensor([1.0]), (3, 3))
    with pytest.raises(ValueError, match="'shape' cannot have negative values, but got"):
        tg.unravel_index(tg.tensor([1]), (3, -1))


def test_typename_and_newaxis():
    assert tg.typename(tg.ones(2)) == "torch.FloatTensor"
    assert tg.typename(tg.ones(2, dtype=tg.int64)) == "torch.LongTensor"
    assert tg.typename(3) == "int"
    assert tg.typename(tg.nn.Linear(2, 2)).endswith("Linear")
    assert tg.newaxis is None
    assert tuple(tg.ones(3)[tg.newaxis].shape) == (1, 3)


def test_asarray_shares_and_copies():
    t = tg.ones(3)
    assert tg.asarray(t) is t
    assert tg.asarray(t, copy=True) is not t
    assert tg.asarray(t, dtype=tg.float64).dtype == tg.float64
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype "
                                         "'Double'"):
        tg.asarray(t, dtype=tg.float64, copy=False)
    a = np.ones(3)
    shared = tg.asarray(a)
    shared[0] = 5
    assert a[0] == 5 and shared.dtype == tg.float64          # a view, dtype kept
    copied = tg.asarray(a, copy=True)
    copied[1] = 7
    assert a[1] == 1
    assert tg.asarray(np.ones((2, 3)).T).stride() == (1, 3)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence into a tensor"):
        tg.asarray([1, 2], copy=False)
    assert tg.asarray([1, 2]).dtype == tg.int64
    assert tg.asarray([1, 2.5]).dtype == tg.float32
    np.testing.assert_array_equal(tg.asarray(array.array("f", [1, 2])).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(tg.asarray(bytearray(b"\x01\x02"), dtype=tg.uint8).numpy(),
                                  [1, 2])
    assert tg.asarray(t, requires_grad=True).requires_grad


def test_frombuffer():
    buffer = bytearray(8)
    view = tg.frombuffer(buffer, dtype=tg.int32)
    view[0] = 7
    assert buffer[0] == 7                               # the tensor writes into the buffer
    assert tg.frombuffer(buffer, dtype=tg.int32, count=1, offset=4).tolist() == [0]
    with pytest.warns(UserWarning, match="The given buffer is not writable"):
        one = tg.frombuffer(b"\x00\x00\x80\x3f", dtype=tg.float32)
    assert one.tolist() == [1.0]
    cases = [({"count": 3}, "must not be greater than actual buffer length"),
             ({"offset": 9}, "must be non-negative and no greater than buffer length"),
             ({"offset": 1}, "must be a multiple of element size")]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            tg.frombuffer(buffer, dtype=tg.float32, **kwargs)
    with pytest.raises(ValueError, match="both buffer length \\(0\\) and count \\(-1\\) must"):
        tg.frombuffer(bytearray(0), dtype=tg.float32)
    with pytest.raises(ValueError, match="does not implement Python buffer protocol"):
        tg.frombuffer([1, 2], dtype=tg.float32)


# torch.frombuffer's count/offset checks (shared with Storage.from_buffer through
# storage.buffer_element_count, in frombuffer's own words): every outcome against PyTorch
FROMBUFFER_CASES = [
    "lib.frombuffer(bytearray(8), dtype=lib.float32)",
    "lib.frombuffer(bytearray(8), dtype=lib.float32, count=3)",
    "lib.frombuffer(bytearray(8), dtype=lib.float32, count=2, offset=1)",
    "lib.frombuffer(bytearray(8), dtype=lib.float32, count=1, offset=4)",
    "lib.frombuffer(bytearray(8), dtype=lib.float32, offset=8)",
    "lib.frombuffer(bytearray(8), dtype=lib.float32, offset=7)",
    "lib.frombuffer(bytearray(8), dtype=lib.float32, offset=-1)",
    "lib.frombuffer(bytearray(8), dtype=lib.float32, offset=4)",
    "lib.frombuffer(bytearray(8), dtype=lib.float32, count=0)",
    "lib.frombuffer(bytearray(0), dtype=lib.float32)",
    "lib.frombuffer(bytearray(9), dtype=lib.float32)",
    "lib.frombuffer(bytearray(9), dtype=lib.float32, offset=1)",
    "lib.frombuffer(bytearray(9), dtype=lib.float32, count=-3)",
    "lib.frombuffer(bytearray(8), dtype=lib.uint8, count=8, offset=1)",
    "lib.frombuffer(b'abcd', dtype=lib.uint8)",
    "lib.frombuffer([1, 2], dtype=lib.uint8)",
    "lib.frombuffer(array.array('i', [1, 2, 3]), dtype=lib.int16, offset=2)",
    "lib.frombuffer(array.array('i', [1, 2, 3]), dtype=lib.int64, offset=4)",
]


def _frombuffer_outcome(lib, expr):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = eval(expr, {"lib": lib, "array": array, "np": np})
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return type(e).__name__, str(e)
    return str(r.dtype).split(".")[-1], tuple(r.shape), r.tolist()


@pytest.mark.parametrize("expr", FROMBUFFER_CASES)
def test_frombuffer_matches_torch(torch, expr):
    assert _frombuffer_outcome(tg, expr) == _frombuffer_outcome(torch, expr)


def test_empty_strided():
    t = tg.empty_strided((2, 3), (1, 2))
    assert tuple(t.shape) == (2, 3) and t.stride() == (1, 2) and t.dtype == tg.float32
    u = tg.ones(1, dtype=tg.float64).new_empty_strided((2, 3), (3, 1))
    assert u.dtype == tg.float64 and u.stride() == (3, 1)
    assert tg.empty_strided((2, 3), (3, 1), requires_grad=True).is_leaf
    assert tuple(tg.empty_strided((0, 3), (3, 1)).shape) == (0, 3)


def test_tensor_new(torch):
    t = tg.ones(2, dtype=tg.float64)
    assert t.new().dtype == tg.float64 and tuple(t.new().shape) == (0,)
    assert tuple(t.new(2, 3).shape) == (2, 3)
    np.testing.assert_array_equal(t.new([1, 2]).numpy(), [1.0, 2.0])
    assert t.new([1, 2]).dtype == tg.float64
    assert tuple(t.new(tg.Size([4])).shape) == (4,)
    with pytest.raises(TypeError, match="expected TensorOptions\\(dtype=double"):
        t.new(tg.tensor([1, 2]))
    assert str(torch.ones(2, dtype=torch.float64).new([1, 2])) == \
        str(t.new([1, 2])).replace("tapegrad", "torch")
    assert math.isclose(t.new([0.5]).item(), 0.5)


def test_empty_permuted(torch):
    got = tg.empty_permuted((2, 3, 4), (0, 2, 1))
    expected = torch.empty_permuted((2, 3, 4), (0, 2, 1))
    assert tuple(got.shape) == tuple(expected.shape) and got.stride() == expected.stride()
    with pytest.raises(RuntimeError, match="does not match the length of the physical_layout"):
        tg.empty_permuted((2, 3), (0,))


def test_binomial():
    tg.manual_seed(0)
    draws = tg.binomial(tg.full((20000,), 10.0), tg.full((20000,), 0.3))
    assert draws.dtype == tg.float32
    assert abs(draws.mean().item() - 3.0) < 0.05 and abs(draws.var().item() - 2.1) < 0.1
    np.testing.assert_array_equal(tg.binomial(tg.tensor([10.0, -3.0]),
                                              tg.tensor([1.5, 0.5])).numpy(), [10.0, 0.0])
    generator = tg.Generator().manual_seed(3)
    first = tg.binomial(tg.full((5,), 10.0), tg.full((5,), 0.5), generator=generator)
    generator.manual_seed(3)
    assert first.tolist() == tg.binomial(tg.full((5,), 10.0), tg.full((5,), 0.5),
                                         generator=generator).tolist()
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for "
                                         "count, got: Long"):
        tg.binomial(tg.tensor([10]), tg.tensor([0.5]))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        tg.binomial(tg.tensor([10.0]), tg.tensor([0.5], dtype=tg.float64))
    sample = tg.binomial(tg.tensor([10.0]), tg.tensor([0.5], requires_grad=True))
    assert sample.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
        sample.sum().backward()


_READ_ONLY_SHARING = """
import warnings, numpy as np, {lib} as t
a = np.arange(3.0); a.flags.writeable = False
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x = t.from_numpy(a); y = t.as_tensor(a); z = t.from_numpy(a.copy()); w = t.tensor(a)
print(len(caught), [str(c.message).split(" (Triggered")[0] for c in caught], caught[0].lineno)
x[0] = 5.0
print(a.tolist(), y.tolist())
"""


def _run_snippet(lib: str) -> str:
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-c", _READ_ONLY_SHARING.format(lib=lib)],
                          capture_output=True, text=True, check=True).stdout


def test_read_only_array_warns_once_like_torch(torch):
    # PyTorch warns once per program (from_numpy and as_tensor share the warning) and still
    # shares the array; torch.tensor copies and never warns.  Each runs in a fresh process.
    expected = _run_snippet("torch")
    assert expected.startswith("1 ['The given NumPy array is not writable")
    assert _run_snippet("tapegrad") == expected


def test_read_only_array_warning_names_the_callers_line(monkeypatch):
    import tapegrad.creation as creation
    monkeypatch.setattr(creation, "_warned_not_writable", False)
    a = np.zeros(2, dtype=np.float32)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="will be suppressed for the rest") as caught:
        t = tg.as_tensor(a)
    assert caught[0].filename == __file__ and t.dtype == tg.float32




_READ_ONLY_CALLS = ["t.as_tensor(a, dtype=t.float32)", "t.FloatTensor(a)", "t.zeros(2).new_tensor(a)"]
_COUNT_READ_ONLY_WARNINGS = """
import warnings, numpy as np
a = np.arange(4.0)
a.flags.writeable = False
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    {call}
print(sum("is not writable" in str(c.message) for c in caught))
"""


def test_which_constructors_warn_on_a_read_only_array(torch, monkeypatch, capsys):
    # the ones that wrap the array (even to convert it) warn; the copying ones do not.  PyTorch
    # warns once per process, so each of its calls runs in a fresh one
    import subprocess
    import sys
    import tapegrad.creation as creation
    for call in _READ_ONLY_CALLS:
        code = _COUNT_READ_ONLY_WARNINGS.format(call=call)
        expected = subprocess.run([sys.executable, "-c", "import torch as t\n" + code],
                                  capture_output=True, text=True, check=True).stdout
        monkeypatch.setattr(creation, "_warned_not_writable", False)
        exec(code, {"t": tg})
        assert capsys.readouterr().out == expected, call


def test_numpy_function_on_a_broadcast_view_does_not_warn():
    # np.transpose(t) wraps its result through Tensor.__array_wrap__; tapegrad's expanded view is
    # a read-only numpy view where PyTorch's is writable, so no read-only warning may surface
    import warnings
    t = tg.ones(3, 1).expand(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        out = np.transpose(t)
    assert isinstance(out, tg.Tensor) and tuple(out.shape) == (4, 3)
