"""The error of a backward that needs a value written in place since it was saved, in PyTorch's
words: the value's legacy type and shape, the node PyTorch names ("which is output 0 of Exp":
for a saved output the node it was saved with, for a saved input its tensor's grad_fn now, none
for a leaf), the versions, and the hint (anomaly mode's when it is on)."""
import warnings

import pytest

import tapegrad

torch = pytest.importorskip("torch")


def relu_then_relu_(T):
    x = T.randn(3, requires_grad=True)
    z = (x * 2).relu()
    z.relu_()
    (z * z).sum().backward()


def relu_saved_by_mul(T):
    x = T.randn(3, requires_grad=True)
    y = (x * 2).relu()
    w = y * y
    y.relu_()
    w.sum().backward()


def sigmoid_then_add_(T):
    x = T.randn(3, requires_grad=True)
    y = x.sigmoid()
    y.add_(1)
    y.sum().backward()


def view_written_in_place(T):
    x = T.randn(3, requires_grad=True)
    v = (x * 1)[:2]
    w = (v * v).sum()
    v.mul_(2)
    w.backward()


def exp_then_view_write(T):
    a = T.randn(4, requires_grad=True)
    b = a.exp()
    b.view(2, 2).add_(1)
    b.sum().backward()


def exp_twice_in_place(T):
    y = T.randn(3, requires_grad=True) * 1
    z = y.exp_()
    z.exp_()
    z.sum().backward()


def exp_then_mul_(T):
    y = T.randn(3, requires_grad=True).exp()
    y.mul_(2)
    y.sum().backward()


def double_sigmoid(T):
    y = T.randn(2, 3, dtype=T.float64, requires_grad=True).sigmoid()
    y.add_(1)
    y.sum().backward()


def mm_input_written(T):
    x = T.randn(2, 2, requires_grad=True)
    h = x * 1
    y = h @ T.randn(2, 2, requires_grad=True)
    h.add_(1)
    y.sum().backward()


def leaf_written_without_grad(T):
    x = T.randn(3, requires_grad=True)
    z = x ** 2
    with T.no_grad():
        x.add_(1)
    z.sum().backward()


def sin_input_written(T):
    y = T.randn(3, requires_grad=True).sin()
    z = y.cos()
    y.add_(1)
    z.sum().backward()


CASES = [relu_then_relu_, relu_saved_by_mul, sigmoid_then_add_, view_written_in_place,
         exp_then_view_write, exp_twice_in_place, exp_then_mul_, double_sigmoid,
         mm_input_written, leaf_written_without_grad, sin_input_written]


def _message(T, case):
    with pytest.raises(RuntimeError) as info:
        case(T)
    return str(info.value)


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_message_is_pytorchs(case):
    assert _message(tapegrad, case) == _message(torch, case)


@pytest.mark.parametrize("case", [exp_then_mul_, mm_input_written],
                         ids=["saved_output", "saved_input"])
def test_anomaly_mode_hint_is_pytorchs(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (both print the forward's trace as a warning)
        with torch.autograd.set_detect_anomaly(True):
            expected = _message(torch, case)
        with tapegrad.autograd.set_detect_anomaly(True):
            got = _message(tapegrad, case)
    # (tapegrad adds the forward's trace below the message, where PyTorch warns it)
    assert got.split("\n")[0] == expected
