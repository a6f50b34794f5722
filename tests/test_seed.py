"""The seed document's examples print exactly what PyTorch prints."""
import gc
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tapegrad as torch

SEED_OUTPUT = """\
# 2.1: x.grad is None before backward, dy/dx after.
None
tensor([2.])
# 2.2: backward through argmax raises.
RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn
# 2.3: retain_grad() keeps a non-leaf's gradient; other non-leaves keep None.
tensor([6.])
tensor([3.])
None
# 2.4: requires_grad=False, detach() and no_grad() each stop gradient flow.
False True
False True
False
True
"""


def test_main_job_prints_the_seed_examples():
    out = subprocess.run([sys.executable, "-m", "tapegrad", "examples"], capture_output=True, text=True,
                         check=True)
    assert out.stdout == SEED_OUTPUT


def test_grad_is_none_before_backward_then_2x(capsys):
    x = torch.tensor([1.], requires_grad=True)
    y = x**2
    print(x.grad)
    y.backward()
    print(x.grad)
    assert capsys.readouterr().out == "None\ntensor([2.])\n"


def test_argmax_backward_raises():
    x = torch.tensor([1.], requires_grad=True)
    y = x.argmax()
    assert y.grad_fn is None and not y.requires_grad
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does "
                                           "not have a grad_fn"):
        y.backward()


def test_retain_grad_prints_6_3_none(capsys):
    x = torch.tensor([1.], requires_grad=True)
    y = x**2
    y.retain_grad()
    z = 3*y
    z.backward()
    print(x.grad)
    print(y.grad)
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        print(z.grad)
    assert capsys.readouterr().out == "tensor([6.])\ntensor([3.])\nNone\n"


def test_non_leaf_grad_warning_names_the_callers_line():
    # PyTorch's C++ warning names the user's line; a stacklevel past the caller gave "sys:1".
    z = torch.tensor([1.], requires_grad=True) * 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z.grad; line = sys._getframe().f_lineno
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


def test_requires_grad_false_on_leaf_stops_delivery():
    x = torch.tensor([1.], requires_grad=True)
    y = x**2
    x.requires_grad = False
    y.backward()
    assert x.grad is None          # PyTorch: AccumulateGrad skips a leaf that no longer requires grad


def test_detach_stops_gradient_and_shares_storage():
    x = torch.tensor([1., 2.], requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert np.shares_memory(d.numpy(), x.detach().numpy())
    d.numpy()[0] = 5.0
    assert x.detach().numpy()[0] == 5.0
    y = (d * 2).sum()
    assert not y.requires_grad


def test_no_grad_records_nothing():
    x = torch.tensor([1.], requires_grad=True)
    gc.collect()  # earlier tests' cyclic garbage must not be freed mid-test
    before = torch._core.tape().live_records
    with torch.no_grad():
        y = x**2
    assert not y.requires_grad and y.is_leaf and y.grad_fn is None
    assert torch._core.tape().live_records == before
    y = x**2
    assert y.requires_grad and y.grad_fn is not None
