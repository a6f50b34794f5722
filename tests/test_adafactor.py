"""optim.Adafactor against torch (factored matrices, vectors, scalars; weight decay, maximize,
d, eps, beta2_decay), its argument checks, and a descent check without torch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.1, "weight_decay": 0.01},
                                    {"maximize": True, "d": 2.0, "eps": (1e-3, 1e-2)},
                                    {"beta2_decay": -0.5, "lr": 0.5}])
def test_adafactor_matches_torch(torch, kwargs):
    rng = np.random.default_rng(0)
    shapes = [(4, 3), (5,), (2, 3, 4), ()]
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(8)]
    results = []
    for lib in (tg, torch):
        params = [lib.nn.Parameter(lib.tensor(a.copy())) for a in init]
        opt = lib.optim.Adafactor(params, **kwargs)
        for step_grads in grads:
            for p, g in zip(params, step_grads):
                p.grad = lib.tensor(g)
            opt.step()
        results.append([p.detach().numpy().copy() for p in params])
        assert sorted(opt.state[params[0]]) == ["col_var", "row_var", "step"]
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=1e-6)


def test_adafactor_descends_and_checks_arguments():
    w = tg.nn.Parameter(tg.tensor([[3.0, -2.0], [1.0, 4.0]]))
    opt = tg.optim.Adafactor([w], lr=0.1)
    start = float((w ** 2).sum().item())
    for _ in range(20):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
    assert float((w ** 2).sum().item()) < start
    for bad, message in (({"lr": -1.0}, "Learning rate should be >= 0"),
                         ({"beta2_decay": 0.5}, "beta2_decay should be <= 0"),
                         ({"d": 0.5}, "Clipping threshold d should be >= 1"),
                         ({"eps": (None, -1.0)}, "epsilon2 should be >= 0")):
        with pytest.raises(ValueError, match=message):
            tg.optim.Adafactor([w], **bad)
