"""Session 19: argument errors in PyTorch's words for a method as for a function.

One op serves `tapegrad.mul(x, y)` and `x.mul(y)`; PyTorch's method counts its arguments after
self ("mul(): argument 'other' (position 1)", "pow() ... got (NoneType)") where its function
counts the input ("(position 2)", "got (Tensor, NoneType)").  The op's messages count either
way; the failed call's handler makes them the call's (_public_calls._reworded, reached from the
public functions' entry and from Tensor's methods, _core.TensorMethod), and words a call that
fits none of an overloaded builtin's signatures as PyTorch's parser does ("received an invalid
combination of arguments").
"""
import inspect
import math
import pickle
import warnings

import pytest

import tapegrad as tg
from tapegrad import _overloads

# (call, exception type, a phrase PyTorch's message and tapegrad's both hold)
CALLS = [
    # a method's positions follow self
    ("x.mul('a')", TypeError, "mul(): argument 'other' (position 1) must be Tensor, not str"),
    ("x.add('a')", TypeError, "add(): argument 'other' (position 1) must be Tensor, not str"),
    ("x.sub('a')", TypeError, "sub(): argument 'other' (position 1) must be Tensor, not str"),
    ("x.div('a')", TypeError, "div(): argument 'other' (position 1) must be Tensor, not str"),
    ("x.matmul('a')", TypeError, "matmul(): argument 'other' (position 1) must be Tensor, not str"),
    ("x.maximum('a')", TypeError, "maximum(): argument 'other' (position 1) must be Tensor"),
    ("x.atan2('a')", TypeError, "atan2(): argument 'other' (position 1) must be Tensor, not str"),
    ("x.softmax('a')", TypeError, "softmax(): argument 'dim' (position 1) must be int, not str"),
    ("x.index_select(0, 'a')", TypeError,
     "index_select(): argument 'index' (position 2) must be Tensor, not str"),
    ("x.gather(0, 'a')", TypeError, "gather(): argument 'index' (position 2) must be Tensor"),
    ("x.unsqueeze('a')", TypeError, "unsqueeze(): argument 'dim' (position 1) must be int, not str"),
    ("x.transpose(0, 'a')", TypeError, "transpose(): argument 'dim1' (position 2) must be int"),
    ("x.chunk('a')", TypeError, "chunk(): argument 'chunks' (position 1) must be int, not str"),
    ("x.flatten('a')", TypeError, "flatten(): argument 'start_dim' (position 1) must be int"),
    ("x.argmax('a')", TypeError, "argmax(): argument 'dim' (position 1) must be int, not str"),
    ("x.argmin('a')", TypeError, "argmin(): argument 'dim' (position 1) must be int, not str"),
    ("x.cumsum('a')", TypeError, "cumsum(): argument 'dim' (position 1) must be int, not str"),
    ("x.topk('a')", TypeError, "topk(): argument 'k' (position 1) must be int, not str"),
    ("x.expand('a')", TypeError, "expand(): argument 'size' (position 1) must be tuple of ints, "
                                 "not str"),
    ("x.repeat('a')", TypeError, "repeat(): argument 'repeats' (position 1) must be tuple of ints"),
    ("x.view(2, 'a')", TypeError, "view(): argument 'size' failed to unpack the object at pos 2 "
                                  "with error \"type must be tuple of ints,but got str\""),
    ("x.reshape([2, None])", TypeError, "reshape(): argument 'shape' failed to unpack the object "
                                        "at pos 2 with error \"type must be tuple of ints,but got "
                                        "NoneType\""),
    ("x.permute(0, 'a')", TypeError, "permute(): argument 'dims' failed to unpack the object at "
                                     "pos 2"),
    ("x.reshape(('a', 2))", TypeError, "reshape(): argument 'shape' (position 1) must be tuple of "
                                       "ints, but found element of type str at pos 0"),
    # a dim that is no int: x.size(1.5) was x.size(1), x.size(True) x.size(1) (SILENT)
    ("x.size(1.5)", TypeError, "must be int, not float"),
    ("x.size(True)", TypeError, "must be int, not bool"),
    ("x.size('1')", TypeError, "must be int, not str"),
    # a keyword has no position
    ("x.mul(other='a')", TypeError, "mul(): argument 'other' must be Tensor, not str"),
    ("x.softmax(dim='a')", TypeError, "softmax(): argument 'dim' must be int, not str"),
    ("torch.mul(x, other='a')", TypeError, "mul(): argument 'other' must be Tensor, not str"),
    # ... and its "got (...)" leaves self out: it lists the call's arguments
    ("x.clamp(min='a')", TypeError,
     "clamp() received an invalid combination of arguments - got (min=str, )"),
    ("x.where('a', y)", TypeError,
     "where() received an invalid combination of arguments - got (str, Tensor)"),
    ("x.pow(None)", TypeError, "pow() received an invalid combination of arguments - got (NoneType)"),
    ("x.pow('a')", TypeError, "pow() received an invalid combination of arguments - got (str)"),
    ("x.eq('a')", TypeError, "eq() received an invalid combination of arguments - got (str)"),
    ("x.lt('a')", TypeError, "lt() received an invalid combination of arguments - got (str)"),
    ("x.fmod('a')", TypeError, "fmod() received an invalid combination of arguments - got (str)"),
    ("x.sum('a')", TypeError, "sum() received an invalid combination of arguments - got (str)"),
    ("x.max('a')", TypeError, "max() received an invalid combination of arguments - got (str)"),
    ("x.min(1.5)", TypeError, "min() received an invalid combination of arguments - got (float)"),
    ("x.lerp(y, 'a')", TypeError,
     "lerp() received an invalid combination of arguments - got (Tensor, str)"),
    # an in-place method under its own name
    ("x.pow_('a')", TypeError, "pow_() received an invalid combination of arguments - got (str)"),
    ("x.eq_('a')", TypeError, "eq_() received an invalid combination of arguments - got (str)"),
    ("x.clamp_(min='a')", TypeError,
     "clamp_() received an invalid combination of arguments - got (min=str, )"),
    ("x.mul_('a')", TypeError, "mul_(): argument 'other' (position 1) must be Tensor, not str"),
    # a call that does not fit: counted without self, or PyTorch's overloads refusing it
    ("x.transpose(0)", TypeError, "transpose() missing 1 required positional argument"),
    ("x.matmul()", TypeError, "matmul() missing 1 required positional argument"),
    ("x.mul(y, y)", TypeError, "mul() takes 1 positional argument but 2 were given"),
    ("x.mul(other=y, foo=1)", TypeError, "mul() got an unexpected keyword argument 'foo'"),
    ("x.add(y, out=y)", TypeError, "add() got an unexpected keyword argument 'out'"),
    ("x.mul(y, out=y)", TypeError, "mul() got an unexpected keyword argument 'out'"),
    ("x.exp(1)", TypeError, "TensorBase.exp() takes no arguments (1 given)"),
    ("x.relu(1, 2)", TypeError, "TensorBase.relu() takes no arguments (2 given)"),
    ("x.add(1, 2, 3)", TypeError, "add() received an invalid combination of arguments - got ("),
    ("x.add()", TypeError, "add() received an invalid combination of arguments - got ()"),
    ("x.pow()", TypeError, "pow() received an invalid combination of arguments - got ()"),
    ("x.clamp(1, 2, 3)", TypeError, "clamp() received an invalid combination of arguments - got ("),
    ("x.sum(0, True, 1, 2)", TypeError, "sum() received an invalid combination of arguments"),
    ("x.sum(dimm=0)", TypeError,
     "sum() received an invalid combination of arguments - got (dimm=int, )"),
    ("x.add_(y, y, y)", TypeError, "add_() received an invalid combination of arguments - got ("),
    # a function counts its input
    ("torch.mul(x, 'a')", TypeError, "mul(): argument 'other' (position 2) must be Tensor, not str"),
    ("torch.unsqueeze(x, 'a')", TypeError, "unsqueeze(): argument 'dim' (position 2) must be int"),
    ("torch.transpose(x, 0, 'a')", TypeError, "transpose(): argument 'dim1' (position 3) must be int"),
    ("torch.flatten(x, 'a')", TypeError, "flatten(): argument 'start_dim' (position 2) must be int"),
    ("torch.chunk(x, 'a')", TypeError, "chunk(): argument 'chunks' (position 2) must be int"),
    ("torch.argmax(x, 'a')", TypeError, "argmax(): argument 'dim' (position 2) must be int"),
    ("torch.cumsum(x, 'a')", TypeError, "cumsum(): argument 'dim' (position 2) must be int"),
    ("torch.topk(x, 'a')", TypeError, "topk(): argument 'k' (position 2) must be int, not str"),
    ("torch.clamp(x, min='a')", TypeError,
     "clamp() received an invalid combination of arguments - got (Tensor, min=str)"),
    ("torch.addmm(x, x.t(), 'a')", TypeError,
     "addmm(): argument 'mat2' (position 3) must be Tensor, not str"),
    ("torch.baddbmm(x, 'a', x)", TypeError,
     "baddbmm(): argument 'batch1' (position 2) must be Tensor, not str"),
    ("torch.sum(x, 'a')", TypeError,
     "sum() received an invalid combination of arguments - got (Tensor, str)"),
    ("torch.mean(x, 'a')", TypeError,
     "mean() received an invalid combination of arguments - got (Tensor, str)"),
    ("torch.max(x, 1.5)", TypeError,
     "max() received an invalid combination of arguments - got (Tensor, float)"),
    ("torch.min(x, 'a')", TypeError,
     "min() received an invalid combination of arguments - got (Tensor, str)"),
    ("torch.std(x, 'a')", TypeError,
     "std() received an invalid combination of arguments - got (Tensor, str)"),
    ("torch.lerp(x, y, None)", TypeError,
     "lerp() received an invalid combination of arguments - got (Tensor, Tensor, NoneType)"),
    ("torch.add(x)", TypeError, "add() received an invalid combination of arguments - got (Tensor)"),
    ("torch.pow(x)", TypeError, "pow() received an invalid combination of arguments - got (Tensor)"),
    ("torch.sum(x, dimm=0)", TypeError,
     "sum() received an invalid combination of arguments - got (Tensor, dimm=int)"),
    ("torch.add(x, 1, 2, 3)", TypeError, "add() takes "),          # (out= makes it plausible)
    ("torch.transpose(x, 0)", TypeError, "transpose() missing 1 required positional argument"),
    ("torch.exp()", TypeError, "exp() missing 1 required positional argument"),
    # histogram checks a bin count and its range before the dtype, given edges' dtype first
    ("torch.histogram(torch.arange(3), 0)", RuntimeError, "bins must be > 0, but got 0"),
    ("torch.histogram(torch.arange(3).bool(), -1)", RuntimeError, "bins must be > 0, but got -1"),
    ("torch.histogram(torch.arange(3), 3, range=(2., 1.))", RuntimeError,
     "min should not exceed max, but got min 2 max 1 for dimension 0"),
    ("torch.histogram(torch.arange(3.), 3, range=(math.inf, 1.))", RuntimeError,
     "dimension 0's range [inf, 1] is not finite"),
    ("torch.histogram(torch.arange(3), 3)", NotImplementedError,
     "\"histogramdd\" not implemented for 'Long'"),
    ("torch.histogram(torch.arange(3), torch.tensor([1.]))", RuntimeError,
     "input tensor and bins tensors should have the same dtype, but got input with dtype "
     "long int and bins for dimension 0 with dtype float"),
    ("torch.histogram(torch.arange(3), torch.tensor([1, 2]))", NotImplementedError,
     "\"histogram_cpu\" not implemented for 'Long'"),
    ("torch.histogram(torch.arange(3.), torch.tensor([0, 1, 2]))", RuntimeError,
     "input tensor and bins tensors should have the same dtype, but got input with dtype "
     "float and bins for dimension 0 with dtype long int"),
    ("torch.histogram(torch.arange(3.), 0, weight=torch.arange(3))", RuntimeError,
     "bins must be > 0"),
]


def run(lib, call):
    x, y = lib.zeros(2, 3), lib.ones(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eval(call, {"torch": lib, "x": x, "y": y, "math": math})


@pytest.mark.parametrize("call,kind,phrase", CALLS, ids=[c[0] for c in CALLS])
def test_argument_errors_in_pytorchs_words(call, kind, phrase):
    with pytest.raises(kind) as got:
        run(tg, call)
    assert type(got.value) is kind
    assert phrase in str(got.value)


@pytest.mark.parametrize("call,kind,phrase", CALLS, ids=[c[0] for c in CALLS])
def test_the_phrases_are_pytorchs(torch, call, kind, phrase):
    with pytest.raises(kind) as want:
        run(torch, call)
    assert type(want.value) is kind
    # (PyTorch quotes a missing argument "dim1", marks refused ones !int!)
    assert phrase in str(want.value).replace("arguments: ", "argument: ").replace("!", "")


def test_histogram_edges_of_another_dtype_are_refused_not_converted():
    # they were cast to the input's dtype, silently
    with pytest.raises(RuntimeError, match="should have the same dtype"):
        tg.histogram(tg.arange(4.), tg.tensor([0.0, 1.5, 3.0], dtype=tg.float64))
    hist, edges = tg.histogram(tg.arange(4.), tg.tensor([0.0, 1.5, 3.0]))
    assert hist.tolist() == [2.0, 2.0] and edges.dtype == tg.float32


def test_method_messages_of_other_calls_stand():
    # an error the method's op raised about another call, or in its own words, is left as it is
    x = tg.zeros(2, 3)
    with pytest.raises(RuntimeError, match="shape '\\[4\\]' is invalid for input of size 6"):
        x.view(4)
    with pytest.raises(TypeError, match="add\\(\\): argument 'other' \\(position 1\\)"):
        tg.Tensor.add(x, "a")       # (the class's method, called with self: PyTorch's says so)
    with pytest.raises(TypeError) as got:
        x.new_full(3, 1.0)
    assert "new_full(): argument 'size' (position 1) must be tuple of ints" in str(got.value)


def test_methods_behave_as_functions_do():
    x, y = tg.ones(2), tg.full((2,), 3.0, requires_grad=True)
    assert tg.Tensor.mul(x, y).tolist() == [3.0, 3.0]
    bound = x.mul
    assert bound(y).tolist() == [3.0, 3.0] and bound.__self__ is x
    assert tg.Tensor.add.__name__ == "add" and "alpha" in tg.Tensor.add.__doc__
    assert list(inspect.signature(tg.Tensor.mul).parameters)[1] == "other"
    assert list(inspect.signature(x.mul).parameters)[0] == "other"
    assert list(inspect.signature(x.transpose).parameters) == ["dim0", "dim1"]
    # PyTorch's method has no out= (it says so, or that no overload fits)
    with pytest.raises(TypeError, match="out"):
        x.div(y, out=y)
    for name in ("mul", "view", "cumsum", "add_", "div"):
        method = getattr(tg.Tensor, name)
        assert pickle.loads(pickle.dumps(method)) is method
    (x.mul(y).sum()).backward()
    assert y.grad.tolist() == [1.0, 1.0]


def test_overload_tables_are_pytorchs(torch):
    """tapegrad/_overloads.py: the builtins PyTorch's parser knows under several signatures,
    found by calling each with 25 arguments (no signature takes that many)."""
    many = [object()] * 25

    def overloaded(f):
        try:
            f(*many)
        except TypeError as e:
            return "invalid combination" in str(e)
        except Exception:       # noqa: BLE001  (a builtin that refused otherwise: not overloaded)
            return False
        return False

    for name in _overloads.FUNCTIONS:
        assert overloaded(getattr(torch, name)), name
    t = torch.zeros(2)
    for name in _overloads.METHODS:
        assert overloaded(getattr(t, name)), name
    for name in dir(tg):
        f = getattr(torch, name, None)
        if (not name.startswith("_") and type(f).__name__ == "builtin_function_or_method"
                and name not in _overloads.FUNCTIONS):
            assert not overloaded(f), name
