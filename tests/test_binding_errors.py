"""A call that does not fit a public function's parameters raises Python's TypeError under
PyTorch's name (_public_calls.binding_error): the wording PyTorch gives for its Python-level
functions, and the key phrase of its argument parser's message for its builtins.  It was
Cython's wording ("takes exactly 2 positional arguments (1 given)") under the name of the
function behind the entry (relu_nn, functional_softmax, max_)."""
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

x = tg.ones(2, 3)

# PyTorch's Python-level functions: its message is Python's, word for word.
PYTHON_LEVEL = [
    "F.relu(inp=x)", "F.softmax(x, dimm=1)", "F.log_softmax(x, dimm=1)", "F.cross_entropy(x)",
    "F.layer_norm(x)", "F.embedding(x)", "F.mse_loss(x)", "F.dropout(x, pp=0.5)",
]

# PyTorch's builtins: (call, the phrase both messages hold)
BUILTINS = [
    ("tg.exp()", "exp() missing 1 required positional argument"),
    # (overloaded builtins: PyTorch's parser says no signature fits, tapegrad/_overloads.py)
    ("tg.add(x)", "add() received an invalid combination of arguments - got (Tensor)"),
    ("tg.matmul(x)", "matmul() missing 1 required positional argument"),
    ("F.linear(x)", "linear() missing 1 required positional argument"),
    ("F.avg_pool2d(x)", "avg_pool2d() missing 1 required positional argument"),
    ("tg.cat()", "cat() missing 1 required positional argument"),
    ("tg.mm(x)", "mm() received an invalid combination of arguments - got (Tensor)"),
]


def run(lib, call):
    return eval(call, {"tg": lib, "F": lib.nn.functional, "x": lib.ones(2, 3)})


@pytest.mark.parametrize("call", PYTHON_LEVEL)
def test_python_level_functions_word_for_word(torch, call):
    with pytest.raises(TypeError) as want:
        run(torch, call)
    with pytest.raises(TypeError) as got:
        run(tg, call)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("call,phrase", BUILTINS)
def test_builtins_key_phrase(call, phrase):
    with pytest.raises(TypeError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
        run(tg, call)


@pytest.mark.parametrize("call,public", [("F.relu(inp=x)", "relu"), ("F.softmax(x, dimm=1)", "softmax"),
                                         ("tg.max(x, dimm=1)", "max"),
                                         ("tg.embedding(x)", "embedding")])
def test_the_name_is_the_public_one(call, public):
    with pytest.raises(TypeError) as got:
        run(tg, call)
    assert str(got.value).startswith(public + "()")


def test_own_messages_and_fitting_calls_are_left_alone():
    # a message of the function's own stands (cumsum takes numpy's axis= beside dim=)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        tg.cumsum(x, dim=0, axis=0)
    assert tg.exp(input=x).shape == (2, 3)


WRONG_TYPES = ["tg.exp(None)", "tg.exp(2)", "tg.exp(input=2)", "tg.relu(None)", "tg.tanh('a')",
               "tg.tril(None)", "F.relu(None)", "tg.select(None, 0, 0)", "tg.sin(None)",
               "tg.log(None)", "tg.neg([1.0])"]
# (masked_fill and other overloaded builtins: PyTorch lists its overloads, "received an invalid
# combination of arguments"; the TypeError is the same, the wording not)


@pytest.mark.parametrize("call", WRONG_TYPES)
def test_wrong_argument_type_as_pytorch_words_it(torch, call):
    """A None (or another non-Tensor) where a Tensor goes: these crashed the interpreter
    (Cython let None through a TensorBase parameter), then raised Cython's wording."""
    with pytest.raises(TypeError) as want:
        run(torch, call)
    with pytest.raises(TypeError) as got:
        run(tg, call)
    assert str(got.value) == str(want.value)
