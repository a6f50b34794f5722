"""Legacy constructors (Tensor(...), FloatTensor & co., autograd.Variable), Tensor.new_*, and the
small tensor queries (is_tensor, is_floating_point, numel, element_size, type(), ...)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core


def _outcome(fn, lib):
    """('ok', dtype, shape, values) / ('ok', value) or ('err', type name, first message line)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(lib)
        except Exception as e:     # noqa: BLE001  (the exception is what is compared)
            return ("err", type(e).__name__, str(e).split("\n")[0])
    if isinstance(r, (lib.Tensor,)) and hasattr(r, "detach"):
        return ("ok", type(r).__name__, str(r.dtype), tuple(r.shape), r.requires_grad,
                r.is_leaf, r.detach().numpy().tolist())
    return ("ok", r)


def _same(fn, torch):
    expected, got = _outcome(fn, torch), _outcome(fn, tg)
    if expected[0] == "err":
        assert got[0] == "err", (expected, got)
        assert got[1] == expected[1], (expected, got)
        phrase = expected[2].split(" (")[0].split(". ")[0][:60]
        assert phrase.lower() in got[2].lower(), (expected, got)
    else:
        assert got == expected


def _shape_dtype(t):
    """For constructors whose values are uninitialised memory."""
    return (str(t.dtype), tuple(t.shape))


LEGACY_CASES = {
    "empty": lambda T: T.Tensor(),
    "sizes": lambda T: _shape_dtype(T.Tensor(2, 3)),
    "one_size": lambda T: _shape_dtype(T.Tensor(3)),
    "numpy_int_size": lambda T: _shape_dtype(T.Tensor(np.int64(3))),
    "size_kw": lambda T: _shape_dtype(T.Tensor(size=(2, 3))),
    "size_object": lambda T: _shape_dtype(T.Tensor(T.zeros(2, 3).shape)),
    "list": lambda T: T.Tensor([1, 2]),
    "tuple": lambda T: T.Tensor((2, 3)),
    "bools": lambda T: T.Tensor([True, False]),
    "nested": lambda T: T.Tensor([[1, 2], [3, 4]]),
    "empty_list": lambda T: T.Tensor([]),
    "ndarray_int": lambda T: T.Tensor(np.array([1, 2])),
    "ndarray_0d": lambda T: T.Tensor(np.array(3.0)),
    "device_cpu": lambda T: T.Tensor([1, 2], device="cpu"),
    "device_cuda": lambda T: T.Tensor([1, 2], device="cuda"),
    "sizes_device_cuda": lambda T: T.FloatTensor(2, 3, device="cuda"),
    "float_scalar": lambda T: T.Tensor(3.5),
    "bool_scalar": lambda T: T.Tensor(True),
    "none": lambda T: T.Tensor(None),
    "string": lambda T: T.Tensor("abc"),
    "negative_size": lambda T: T.Tensor(2, -1),
    "float_in_sizes": lambda T: T.Tensor(2, 3.0),
    "float_then_int": lambda T: T.Tensor(2.0, 3),
    "list_then_int": lambda T: T.Tensor([1], 2),
    "dtype_kw": lambda T: T.Tensor([1, 2], dtype=T.float64),
    "requires_grad_kw": lambda T: T.Tensor(requires_grad=True),
    "ragged": lambda T: T.Tensor([[1, 2], [3]]),
    "ragged_deep": lambda T: T.LongTensor([[[1, 2], [3, 4]], [[1, 2], [3]]]),
    "ragged_scalar_then_list": lambda T: T.Tensor([1, [2]]),
    "ragged_list_then_scalar": lambda T: T.Tensor([[1], 2]),
    "byte_float_negative": lambda T: T.ByteTensor([-0.5]),
    "byte_int_minus_max": lambda T: T.ByteTensor([-255]),
    "byte_int_below": lambda T: T.ByteTensor([-256]),
    "char_float_over": lambda T: T.CharTensor([127.5]),
    "long_inf": lambda T: T.LongTensor([float("inf")]),
    "size_and_data": lambda T: T.FloatTensor(2, size=(2,)),
    "leaf": lambda T: (T.Tensor([1.0]).requires_grad, T.Tensor([1.0]).is_leaf),
    "alias_int": lambda T: T.Tensor(T.tensor([1, 2])),
    "alias_double": lambda T: T.Tensor(T.tensor([1.0, 2.0], dtype=T.float64)),
    "alias_shares": lambda T: (lambda x: (T.Tensor(x).data_ptr() == x.data_ptr(),
                                          T.Tensor(x) is x))(T.zeros(2)),
    "long": lambda T: T.LongTensor([1.7, 2]),
    # Any Python sequence (PySequence_Check), as sgrvinod's tutorials' LongTensor(range(n)).
    "long_range": lambda T: T.LongTensor(range(3)),
    "float_range": lambda T: T.Tensor(range(1, 4)),
    "long_deque": lambda T: T.LongTensor(__import__("collections").deque([1, 2])),
    "float_array": lambda T: T.FloatTensor(__import__("array").array("f", [1.5, 2])),
    "float_memoryview": lambda T: T.Tensor(memoryview(b"ab")),
    "byte_bytearray": lambda T: T.ByteTensor(bytearray(b"a")),
    "bytes": lambda T: T.Tensor(b"ab"),
    "generator": lambda T: T.Tensor(x for x in [1]),
    "dict": lambda T: T.LongTensor({1: 2}),
    "set": lambda T: T.LongTensor({1, 2}),
    "long_sizes": lambda T: _shape_dtype(T.LongTensor(2, 3)),
    "long_size_kw": lambda T: _shape_dtype(T.LongTensor(size=(2,))),
    "int": lambda T: T.IntTensor([1, -2]),
    "short": lambda T: T.ShortTensor([1]),
    "char": lambda T: T.CharTensor([-5]),
    "byte": lambda T: T.ByteTensor([1, 255]),
    "byte_negative_wraps": lambda T: T.ByteTensor([-1]),
    "byte_overflow": lambda T: T.ByteTensor([1, 300]),
    "char_overflow": lambda T: T.CharTensor([200]),
    "int_overflow": lambda T: T.IntTensor([2 ** 40]),
    "long_nan": lambda T: T.LongTensor([float("nan")]),
    "byte_ndarray_wraps": lambda T: T.ByteTensor(np.array([1, 300])),
    "long_ndarray_truncates": lambda T: T.LongTensor(np.array([1.5, 300])),
    "bool": lambda T: T.BoolTensor([2.5, 0]),
    "half": lambda T: T.HalfTensor([1, 1e6]),
    "double": lambda T: T.DoubleTensor([1, 2]),
    "float_empty": lambda T: T.FloatTensor(),
    "float_from_long": lambda T: T.FloatTensor(T.tensor([1, 2])),
    "long_from_float": lambda T: T.LongTensor(T.tensor([1.0, 2.0])),
    "long_from_long": lambda T: T.LongTensor(T.tensor([1, 2])),
    "float_from_grad": lambda T: (lambda y: (y.requires_grad, y.is_leaf))(
        T.FloatTensor(T.ones(2, requires_grad=True))),
    "float_dtype_kw": lambda T: T.FloatTensor([1], dtype=T.float64),
    "isinstance_float": lambda T: (isinstance(T.zeros(2), T.FloatTensor),
                                   isinstance(T.zeros(2, dtype=T.float64), T.FloatTensor),
                                   isinstance(T.zeros(2, dtype=T.float64), T.DoubleTensor),
                                   isinstance(T.zeros(2, dtype=T.int64), T.LongTensor),
                                   isinstance(T.zeros(2, dtype=T.bool), T.BoolTensor),
                                   isinstance(3, T.FloatTensor),
                                   isinstance(T.nn.Parameter(T.zeros(2)), T.FloatTensor)),
    "typed_not_subclass": lambda T: (issubclass(T.FloatTensor, T.Tensor),
                                     type(T.FloatTensor([1])).__name__,
                                     T.FloatTensor.__name__, T.FloatTensor.is_cuda),
    "typed_dtype": lambda T: [str(c.dtype) for c in (
        T.FloatTensor, T.DoubleTensor, T.HalfTensor, T.LongTensor, T.IntTensor, T.ShortTensor,
        T.CharTensor, T.ByteTensor, T.BoolTensor)],
    "variable": lambda T: T.autograd.Variable(T.zeros(2), requires_grad=True),
    "variable_positional": lambda T: T.autograd.Variable(T.zeros(2), True),
    "variable_plain": lambda T: T.autograd.Variable(T.zeros(2)),
    "variable_empty": lambda T: T.autograd.Variable(),
    "variable_list": lambda T: T.autograd.Variable([1.0]),
    "variable_int_grad": lambda T: T.autograd.Variable(T.zeros(2, dtype=T.int64),
                                                       requires_grad=True),
    "variable_bad_kw": lambda T: T.autograd.Variable(T.zeros(2), foo=1),
    "variable_detaches": lambda T: (lambda y: T.autograd.Variable(y))(
        T.ones(2, requires_grad=True) * 2),
    "variable_new_leaf": lambda T: (lambda y: (y.is_leaf, y.requires_grad))(
        T.autograd.Variable(T.ones(2, requires_grad=True) * 2, requires_grad=True)),
    "variable_of_parameter": lambda T: type(T.autograd.Variable(T.nn.Parameter(T.zeros(2)))
                                            ).__name__,
    "variable_isinstance": lambda T: (isinstance(T.zeros(2), T.autograd.Variable),
                                      isinstance([1], T.autograd.Variable)),
    "variable_not_same_object": lambda T: (lambda x: T.autograd.Variable(x) is x)(T.zeros(2)),
}


@pytest.mark.parametrize("name", sorted(LEGACY_CASES))
def test_legacy_constructor_parity(torch, name):
    _same(LEGACY_CASES[name], torch)


def _x(T):
    return T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


NEW_AND_QUERY_CASES = {
    "new_tensor": lambda T: _x(T).new_tensor([1, 2]),
    "new_tensor_int_self": lambda T: T.zeros(2, dtype=T.int64).new_tensor([1.5]),
    "new_tensor_from_tensor": lambda T: _x(T).new_tensor(T.ones(2, dtype=T.int64)),
    "new_tensor_grad": lambda T: _x(T).new_tensor([1], requires_grad=True),
    "new_tensor_dtype": lambda T: _x(T).new_tensor([1], dtype=T.float64),
    "new_tensor_cuda": lambda T: _x(T).new_tensor([1], device="cuda"),
    "new_zeros": lambda T: _x(T).new_zeros(2, 3),
    "new_zeros_tuple": lambda T: _x(T).new_zeros((2, 3)),
    "new_zeros_size_kw": lambda T: _x(T).new_zeros(size=(2,)),
    "new_zeros_dtype": lambda T: _x(T).new_zeros(2, dtype=T.int64),
    "new_zeros_int_grad": lambda T: T.zeros(2, dtype=T.int64).new_zeros(2, requires_grad=True),
    "new_zeros_no_size": lambda T: _x(T).new_zeros(),
    "new_ones": lambda T: _x(T).new_ones([2]),
    "new_ones_grad": lambda T: _x(T).new_ones(2, requires_grad=True),
    "new_ones_cuda": lambda T: _x(T).new_ones(2, device="cuda"),
    "new_ones_int_self": lambda T: T.zeros(1, dtype=T.int32).new_ones(3),
    "new_full": lambda T: _x(T).new_full((2,), 3),
    "new_full_bool_fill": lambda T: _x(T).new_full((2,), True),
    "new_full_dtype": lambda T: _x(T).new_full([2], 1.5, dtype=T.int32),
    "new_full_int_size": lambda T: _x(T).new_full(2, 3),
    "new_empty": lambda T: _shape_dtype(_x(T).new_empty(2, 3, device="cpu")),
    "new_empty_dtype": lambda T: _shape_dtype(_x(T).new_empty((2,), dtype=T.float64)),
    "is_tensor": lambda T: (T.is_tensor(_x(T)), T.is_tensor([1]),
                            T.is_tensor(T.nn.Parameter(_x(T)))),
    "is_floating_point": lambda T: (T.is_floating_point(_x(T)), _x(T).is_floating_point(),
                                    T.zeros(1, dtype=T.int64).is_floating_point(),
                                    T.is_floating_point(T.zeros(1, dtype=T.float16))),
    "is_floating_point_list": lambda T: T.is_floating_point([1.0]),
    "is_complex": lambda T: (T.is_complex(_x(T)), _x(T).is_complex()),
    "numel": lambda T: (T.numel(_x(T)), _x(T).nelement(), T.numel(T.zeros(0, 3))),
    "numel_list": lambda T: T.numel([1]),
    "element_size": lambda T: [T.zeros(1, dtype=d).element_size() for d in (
        T.float16, T.float32, T.float64, T.int8, T.int16, T.int32, T.int64, T.uint8, T.bool)],
    "type_string": lambda T: [T.zeros(1, dtype=d).type() for d in (
        T.float16, T.float32, T.float64, T.int8, T.int16, T.int32, T.int64, T.uint8, T.bool)],
    "type_dtype": lambda T: _x(T).type(T.float64),
    "type_name": lambda T: _x(T).type("torch.LongTensor"),
    "type_same_is_self": lambda T: (lambda x: x.type(T.float32) is x)(_x(T)),
    "type_class": lambda T: (lambda x: (str(x.type(T.DoubleTensor).dtype),
                                        x.type(T.FloatTensor) is x))(_x(T)),
    "type_cuda_name": lambda T: _x(T).type("torch.cuda.FloatTensor"),
    "type_bad_name": lambda T: _x(T).type("foo"),
    "type_python_float": lambda T: _x(T).type(float),
    "type_dtype_kw": lambda T: _x(T).type(dtype=T.float64, non_blocking=True),
    "is_contiguous": lambda T: (_x(T).is_contiguous(), _x(T).t().is_contiguous()),
    "data_ptr_int": lambda T: isinstance(_x(T).data_ptr(), int),
    "parameter": lambda T: T.nn.Parameter(T.ones(2)),
    "parameter_no_grad": lambda T: T.nn.Parameter(T.ones(2), requires_grad=False),
}


@pytest.mark.parametrize("name", sorted(NEW_AND_QUERY_CASES))
def test_new_and_query_parity(torch, name):
    _same(NEW_AND_QUERY_CASES[name], torch)


def test_random_legacy_data_matches_torch(torch):
    """Random nested lists of ints/floats/bools through every typed constructor."""
    rng = np.random.default_rng(1)
    classes = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor",
               "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor", "Tensor"]
    for _ in range(80):
        shape = tuple(int(s) for s in rng.integers(1, 4, size=rng.integers(1, 3)))
        kind = rng.integers(0, 3)
        values = (rng.integers(-130, 300, size=shape) if kind == 0 else
                  rng.normal(0, 50, size=shape) if kind == 1 else rng.integers(0, 2, size=shape)
                  .astype(bool))
        data = values.tolist()
        name = str(rng.choice(classes))
        _same(lambda T: getattr(T, name)(data), torch)


# -- without torch --------------------------------------------------------------------------------

def test_tensor_constructor_values():
    t = tg.Tensor([[1, 2], [3, 4]])
    assert t.dtype == tg.float32 and t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert t.requires_grad is False and t.is_leaf
    assert tg.Tensor().shape == (0,) and tg.Tensor(2, 3).shape == (2, 3)
    assert tg.Tensor(size=[4]).shape == (4,)
    assert tg.LongTensor([1.9, -1.9]).tolist() == [1, -1]
    assert tg.ByteTensor([-1, 255]).tolist() == [255, 255]
    x = tg.zeros(3)
    y = tg.Tensor(x)
    y[0] = 5.0                      # shares x's storage, as PyTorch's Tensor(other)
    assert x.tolist() == [5.0, 0.0, 0.0]


def test_every_constructor_path_initialises_or_raises():
    # Each of these used to be able to return an object with no data behind it.
    for args, kwargs in [((), {}), ((3,), {}), (([1.0],), {}), ((np.ones(2),), {}),
                         ((), {"size": (1, 2)}), ((tg.ones(2),), {})]:
        t = tg.Tensor(*args, **kwargs)
        assert isinstance(t.numpy(), np.ndarray)
        repr(t)
        (t + 1).sum()
    for args, kwargs, exc in [((1.5,), {}, TypeError), (("x",), {}, TypeError),
                              (([1], 2), {}, TypeError), ((-1,), {}, RuntimeError),
                              (([1],), {"dtype": tg.float64}, TypeError),
                              (([1],), {"device": "cuda"}, RuntimeError)]:
        with pytest.raises(exc):
            tg.Tensor(*args, **kwargs)


def test_tensor_subclass_constructor():
    class Mine(tg.Tensor):
        pass

    m = Mine([1.0, 2.0])
    assert type(m) is Mine and m.tolist() == [1.0, 2.0]


def test_subclass_with_its_own_new_keeps_its_arguments():
    class Tagged(tg.Tensor):
        def __new__(cls, base, tag):
            obj = _core.TensorBase.__new__(cls)
            obj._array = base._array
            obj.tag = tag
            return obj

    t = Tagged(tg.ones(2), "x")
    assert t.tag == "x" and t.tolist() == [1.0, 1.0]


def test_parameter_still_constructs():
    p = tg.nn.Parameter(tg.ones(2))
    assert type(p) is tg.nn.Parameter and p.requires_grad and p.tolist() == [1.0, 1.0]
    assert tg.nn.Parameter().shape == (0,)


def test_op_results_skip_the_python_constructor():
    # Results of ops are made by TensorBase's allocator: Tensor must keep it (no Python __new__).
    assert tg.Tensor.__new__ is _core.TensorBase.__new__
    a, b = tg.tensor([2.0]), tg.tensor([3.0])
    assert type(a * b) is tg.Tensor and (a * b).tolist() == [6.0]


def test_variable_returns_tensors():
    v = tg.autograd.Variable(tg.ones(2), requires_grad=True)
    assert type(v) is tg.Tensor and v.requires_grad and v.is_leaf
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    with pytest.warns(UserWarning, match="volatile was removed"):
        tg.autograd.Variable(tg.ones(1), volatile=True)


def test_new_methods_values():
    x = tg.zeros(2, dtype=tg.float64)
    assert x.new_ones(3).dtype == tg.float64 and x.new_ones(3).tolist() == [1.0] * 3
    assert x.new_full((2, 1), 7).tolist() == [[7.0], [7.0]]
    assert x.new_tensor([1, 2]).dtype == tg.float64
    assert x.new_zeros(2, dtype=tg.int8).tolist() == [0, 0]
    assert tg.numel(tg.zeros(3, 4)) == 12 and tg.is_tensor(x) and not tg.is_tensor(1.0)
    assert x.element_size() == 8 and x.type() == "torch.DoubleTensor"


# -- tensor() of sequences holding tensors: their values and dtypes, never an int reading --------

_TENSOR_LIST_CASES = [
    lambda M: [M.tensor(-0.9), M.tensor(2.5)],
    lambda M: [M.tensor(1.5, dtype=M.float64)],
    lambda M: [M.tensor(3), 2],
    lambda M: [M.tensor(3), 2.5],
    lambda M: [[M.tensor(1.5)], [M.tensor(2.0)]],
    lambda M: [M.tensor(True), M.tensor(False)],
    lambda M: [M.tensor(2, dtype=M.int32), 1],
]


def test_list_of_float_tensors_keeps_their_values():
    # A float 0-d tensor in a list was read as int64 (tensor([t]) of -0.93 gave tensor([0])):
    # the normalised-returns idiom of actor-critic scripts, torch.tensor([R]).
    r = tg.tensor([1.0, 2.0, 3.5])
    r = (r - r.mean()) / r.std()
    for R in r:
        out = tg.tensor([R])
        assert out.dtype == tg.float32
        assert out.item() == R.item()


@pytest.mark.parametrize("case", range(len(_TENSOR_LIST_CASES)))
def test_list_of_tensors_parity(torch, case):
    ours = tg.tensor(_TENSOR_LIST_CASES[case](tg))
    theirs = torch.tensor(_TENSOR_LIST_CASES[case](torch))
    assert str(ours.dtype) == str(theirs.dtype)
    assert ours.tolist() == theirs.tolist()
