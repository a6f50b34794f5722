"""Faults found by running held-out tutorial scripts (simo-an/pytorch-tutorial,
jinkyukim-me/pytorch-tutorials, Yue-Jiang/pytorch-tutorial) unchanged under tapegrad."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _write_through_resize(lib, make, size):
    base = make(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = base.resize(*size)
    out.view(-1)[0] = 100
    return base.numpy().copy(), out.numpy().copy()


@pytest.mark.parametrize("make, size", [
    (lambda lib: lib.arange(1, 5), (4, 1)),                         # the tutorial's case
    (lambda lib: lib.arange(6.0).reshape(2, 3), (3, 2)),
    (lambda lib: lib.arange(6.0).reshape(2, 3).t(), (6,)),          # non-contiguous: a copy
    (lambda lib: lib.arange(6.0).reshape(2, 3)[:, 1:], (4,)),
])
def test_resize_shares_a_contiguous_tensors_storage(torch, make, size):
    # Tensor.resize is new(self).contiguous().view(size) in PyTorch: writing through the result
    # of a contiguous tensor changes it (tapegrad used to return a copy, silently).
    got_base, got_out = _write_through_resize(tg, make, size)
    want_base, want_out = _write_through_resize(torch, make, size)
    np.testing.assert_array_equal(got_base, want_base)
    np.testing.assert_array_equal(got_out, want_out)


def test_resize_as_shares_storage_and_keeps_grad(torch):
    for lib in (tg, torch):
        a = lib.arange(4.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = a.resize_as(lib.zeros(2, 2))
        b[0, 0] = 5
        assert a.tolist() == [5.0, 1.0, 2.0, 3.0]
        w = lib.arange(4.0, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (w.resize(2, 2) * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        assert w.grad.tolist() == [1.0, 2.0, 3.0, 4.0]
