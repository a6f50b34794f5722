"""Differences the session-42 fuzz runs found (tools/fuzz.py), each checked against torch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def test_gather_of_view_made_to_require_grad_by_a_write_through_another_view():
    """SILENT: a write through one view of a base makes every view of it require grad; gather's
    no-record fast path read the other view's stale flag, so its result did not require grad
    and the gradient was dropped (fuzz 66500171)."""
    results = []
    for T in (torch, tg):
        base = T.tensor([[-0.16, 0.14], [0.65, 1.67]])
        view = base.view(2, 2)
        flat = view.view(4)
        w = T.tensor([-0.28, 0.6, 0.87, -0.05], requires_grad=True)
        flat[0] += w[0] * 3
        out = T.gather(view, 1, T.tensor([[1, 0], [0, 0]]))
        assert out.requires_grad
        (out * out).sum().backward()
        results.append((out.detach().numpy(), w.grad.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)
