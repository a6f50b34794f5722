"""The "modified by an inplace operation" error says the same text eagerly, in a replayed call of
tapegrad.compile, and in PyTorch: the tensor's type and shape, the node that made it ("which is
output 0 of Exp") where PyTorch names one, its versions and PyTorch's hint.

A replayed call's node checks the versions of the externals and outputs its backward reads
(BufferSet.check_versions) with the same message builder as the sweep (modified_in_place_error);
it used to say a shorter text with no tensor and no node.  A saved input that had no history (a
tensor requiring no grad) is named by no node, as in PyTorch; the sweep named it as the output of
the record that saved it when no live tensor held it."""
from __future__ import annotations

import pytest

import tapegrad as tg

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None


def _exp_of_product(lib, x, w):
    return (x * w).exp()            # mul saves x and w; exp saves its output


def _product(lib, x, w):
    return x * w                    # mul's output dies with no other holder than the caller


def _sin_of_product(lib, x, w):
    return (x * w).sin()            # the intermediate x * w dies: mul's record has no live output


# (what is written in place before backward, the function)
CASES = [
    ("output", _exp_of_product),
    ("plain_input", _exp_of_product),
    ("plain_input", _product),
    ("plain_input", _sin_of_product),
    ("input_with_history", _exp_of_product),
    ("input_with_history", _sin_of_product),
]
IDS = [f"{what}-{fn.__name__.strip('_')}" for what, fn in CASES]


def _error_text(lib, what, fn, compiled, dtype_name="float32"):
    """The error's text after three calls (the last ones replayed when compiled) and a write."""
    dtype = getattr(lib, dtype_name)
    call = tg.compile(lambda x, w: fn(lib, x, w)) if compiled else (lambda x, w: fn(lib, x, w))
    w = lib.tensor([1.0, 2.0, 3.0], dtype=dtype, requires_grad=True)
    base = lib.tensor([0.5, 0.25, 0.125], dtype=dtype, requires_grad=True)
    for i in range(3):
        x = lib.tensor([0.5, 0.25, 0.125], dtype=dtype) * (i + 1)
        if what == "input_with_history":
            x = base * (i + 1)
        y = call(x, w)
    if compiled:
        assert call.stats["replays"] == 2, call.explain()
    (y if what == "output" else x).mul_(2)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    return str(info.value)


@pytest.mark.parametrize("what,fn", CASES, ids=IDS)
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_replay_raises_eagers_text(what, fn, dtype_name):
    eager = _error_text(tg, what, fn, False, dtype_name)
    assert "modified by an inplace operation: [torch." in eager
    assert _error_text(tg, what, fn, True, dtype_name) == eager


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
@pytest.mark.parametrize("what,fn", CASES, ids=IDS)
def test_eager_and_replay_text_is_pytorchs(what, fn):
    want = _error_text(torch, what, fn, False)
    assert _error_text(tg, what, fn, False) == want
    assert _error_text(tg, what, fn, True) == want


def test_plain_input_is_named_by_no_node():
    """The sweep's fix on its own: a leaf requiring no grad, saved by mul whose output is gone."""
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    x = tg.tensor([3.0, 4.0])
    y = (x * w).exp()
    x.add_(1)
    with pytest.raises(RuntimeError, match=r"\[torch\.FloatTensor \[2\]\] is at version 1; "
                                           r"expected version 0 instead"):
        y.sum().backward()
