"""Recorded in-place writes through views: the base positions a view covers (views.pxi, view_key).

view_key finds them directly when the base's memory is C-contiguous (positions_in_contiguous: no
sort of the base's addresses) and by matching addresses otherwise.  Both routes must give the
gradients PyTorch gives: each case writes through a view of a contiguous base and of a
non-contiguous one (a transposed numpy array made a tensor), then compares values and the
gradient of every input with torch's."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

VIEWS = {
    "row": lambda b: b[1],
    "column": lambda b: b[:, 2],
    "stepped": lambda b: b[::2, 1::2],
    "transposed": lambda b: b.t(),
    "transposed slice": lambda b: b.t()[1:3],
    "diagonal": lambda b: b.diagonal(),
    "narrowed then viewed": lambda b: b[1:3].reshape(-1)[2:5],
    "unsqueezed": lambda b: b[0].unsqueeze(0),
    "whole": lambda b: b[...],
}

WRITES = {
    "mul_": lambda v, w: v.mul_(w),
    "add_": lambda v, w: v.add_(w * 2),
    "setitem": lambda v, w: v.__setitem__(Ellipsis, w * 3),
    "clamp_": lambda v, w: v.clamp_(max=2.5),
}


def _run(mod, view, write, contiguous):
    values = np.arange(20, dtype=np.float64).reshape(4, 5) / 7 - 1
    data = values if contiguous else np.asfortranarray(values)
    leaf = mod.tensor(np.linspace(0.5, 2.5, 20).reshape(4, 5), dtype=mod.float64,
                      requires_grad=True)
    base = mod.from_numpy(data) * leaf          # (elementwise results keep the F order)
    assert base.is_contiguous() == contiguous
    write(view(base), leaf[3, 4])
    (base * mod.arange(1, 21, dtype=mod.float64).reshape(4, 5)).sum().backward()
    return base.detach().numpy().copy(), leaf.grad.numpy().copy()


@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous base", "F-order base"])
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("view", list(VIEWS))
def test_write_through_view_matches_torch(view, write, contiguous):
    torch = pytest.importorskip("torch")
    got_value, got_grad = _run(tg, VIEWS[view], WRITES[write], contiguous)
    want_value, want_grad = _run(torch, VIEWS[view], WRITES[write], contiguous)
    np.testing.assert_allclose(got_value, want_value, rtol=1e-15, atol=0)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-15, atol=0)
