"""Session real48b: course scripts (assignments, lecture notebooks) run against PyTorch.

Calls PyTorch refuses must be refused, in its words:
- the reductions whose PyTorch signatures take `int dim` (max, min, prod, median, nanmedian, and
  torch.softmax / Tensor.softmax / log_softmax) refuse dim=None, which tapegrad had read as "no
  dim" and reduced every element (x.max(dim=None) returned a tensor where PyTorch raises);
- an in-place method that takes no arguments names itself ("TensorBase.exp_() takes no
  arguments (1 given)"), not its out-of-place twin.
"""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _outcome(lib, call: str):
    """(first line of the message, exception type name) of `call`, or ("OK", values)."""
    x = lib.tensor([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]])
    env = {"torch": lib, "x": x, "F": lib.nn.functional}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = eval(call, env)
        except Exception as error:     # (the exception is the outcome compared)
            return type(error).__name__, str(error).splitlines()[0]
    if isinstance(result, tuple):
        return "OK", [np.asarray(r.tolist()) for r in result]
    return "OK", [np.asarray(result.tolist())]


REFUSED_NONE_DIM = [
    "x.max(dim=None)", "x.max(None)", "torch.max(x, dim=None)", "torch.max(x, None)",
    "x.min(dim=None)", "x.min(None)", "torch.min(x, None)", "x.max(axis=None)",
    "x.max(None, True)", "x.max(dim=None, keepdim=True)", "x.max(None, keepdim=False)",
    "x.min(axis=None, keepdims=True)", "x.prod(None, True)", "x.prod(None, dtype=torch.float64)",
    "torch.prod(x, None, True)", "x.prod(dim=None)", "x.prod(None)", "torch.prod(x, None)",
    "torch.prod(x, dim=None)", "x.prod(axis=None)", "x.median(dim=None)", "x.median(None)",
    "torch.median(x, None)", "torch.median(x, dim=None)", "x.nanmedian(dim=None)",
    "torch.nanmedian(x, None)", "x.median(axis=None)", "x.softmax(None)",
    "torch.softmax(x, None)", "torch.softmax(x, dim=None)", "x.log_softmax(None)",
    "torch.log_softmax(x, None)", "x.softmax(dim=None)",
]


@pytest.mark.parametrize("call", REFUSED_NONE_DIM)
def test_int_dim_refuses_none_in_pytorchs_words(torch, call):
    expected = _outcome(torch, call)
    assert expected[0] == "TypeError"
    assert _outcome(tg, call) == expected


STILL_VALID = [
    "x.max()", "x.max(1)", "x.max(dim=0, keepdim=True)", "x.max(axis=1)", "torch.max(x, 1, True)",
    "torch.max(x, torch.zeros(3))", "torch.max(x, other=torch.zeros(3))", "x.min()",
    "x.min(0)", "x.prod()", "x.prod(1)", "x.prod(axis=0)", "x.prod(dtype=torch.float64)",
    "torch.prod(x, 1, True)", "x.median()", "x.median(1)", "x.median(dim=1, keepdim=True)",
    "x.median(axis=0)", "x.nanmedian()", "torch.median(x)", "x.softmax(1)", "x.softmax(dim=0)",
    "torch.softmax(x, axis=1)", "x.log_softmax(-1)", "F.softmax(x)", "F.softmax(x, None)",
    "F.log_softmax(x, dim=None)", "torch.nn.Softmax()(x)", "torch.nn.Softmax(dim=None)(x)",
    "x.softmax(1, torch.float64)",
]


@pytest.mark.parametrize("call", STILL_VALID)
def test_the_calls_pytorch_takes_still_work(torch, call):
    expected = _outcome(torch, call)
    got = _outcome(tg, call)
    assert got[0] == expected[0] == "OK"
    assert len(got[1]) == len(expected[1])
    for g, e in zip(got[1], expected[1]):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_max_of_every_element_has_its_gradient():
    # the no-dim reduction (the default, now told apart from dim=None) keeps its gradient
    x = tg.tensor([[3.0, -1.0], [3.0, 2.0]], dtype=tg.float64, requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.5, 0.0], [0.5, 0.0]])
    y = tg.tensor([[2.0, 3.0], [4.0, 0.5]], dtype=tg.float64, requires_grad=True)
    y.prod().backward()
    np.testing.assert_allclose(y.grad.numpy(), [[6.0, 4.0], [3.0, 24.0]])


IN_PLACE_NO_ARGUMENTS = [
    "x.exp_(1)", "x.exp_(a=1)", "x.sigmoid_(1)", "x.relu_(a=1)", "x.tanh_(1, 2)",
    "x.neg_(out=None)", "x.exp(1)", "x.relu(a=1)",
]


@pytest.mark.parametrize("call", IN_PLACE_NO_ARGUMENTS)
def test_a_method_without_arguments_names_itself(torch, call):
    # (called directly, as here, Python words a C method's refusal under its descriptor's type:
    # "TensorBase.exp_()")
    x_t = torch.ones(2)
    x_g = tg.ones(2)
    outcomes = []
    for x in (x_t, x_g):
        with pytest.raises(TypeError) as info:
            eval(call, {"x": x})
        outcomes.append(str(info.value))
    assert outcomes[1] == outcomes[0]
