"""nn.EmbeddingBag / F.embedding_bag: sum, mean and max bags (offsets, 2-D input,
include_last_offset, padding_idx, per_sample_weights), gradients, init, repr and errors."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

W = tg.arange(12.0).reshape(4, 3)


def test_bag_values():
    idx, offsets = tg.tensor([0, 1, 2, 3]), tg.tensor([0, 2, 2])
    assert F.embedding_bag(idx, W, offsets).tolist() == [[1.5, 2.5, 3.5], [0, 0, 0], [7.5, 8.5, 9.5]]
    assert F.embedding_bag(idx, W, offsets, mode="max").tolist() == [[3, 4, 5], [0, 0, 0], [9, 10, 11]]
    assert F.embedding_bag(idx, W, tg.tensor([0, 2, 4]), mode="sum",
                           include_last_offset=True).tolist() == [[3, 5, 7], [15, 17, 19]]
    assert F.embedding_bag(tg.tensor([0, 1, 2]), W, tg.tensor([0, 1]),
                           padding_idx=1).tolist() == [[0, 1, 2], [6, 7, 8]]
    assert F.embedding_bag(tg.tensor([[0, 1, 2]]), W, mode="sum",
                           per_sample_weights=tg.tensor([[1.0, 2, 3]])).tolist() == [[24, 30, 36]]


def test_module_init_repr_and_gradients():
    m = tg.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2)
    assert repr(m) == "EmbeddingBag(10, 3, mode='sum', padding_idx=2)"
    assert sorted(m.state_dict()) == ["weight"] and m.weight[2].tolist() == [0.0] * 3
    out = m(tg.tensor([1, 2, 1, 5]), tg.tensor([0, 3]))
    out.sum().backward()
    grad = m.weight.grad.numpy()
    assert grad[1].tolist() == [2.0] * 3 and grad[5].tolist() == [1.0] * 3 and grad[2].tolist() == [0.0] * 3


def test_gradcheck_embedding_bag(gradcheck):
    rng = np.random.default_rng(0)
    idx, offsets = tg.tensor([0, 2, 2, 1, 3]), tg.tensor([0, 2, 2])
    weights = rng.standard_normal((4, 3))
    for mode in ("sum", "mean", "max"):
        gradcheck(lambda w: F.embedding_bag(idx, w, offsets, mode=mode), weights)
    gradcheck(lambda w, p: F.embedding_bag(idx, w, offsets, mode="sum", per_sample_weights=p),
              weights, rng.standard_normal(5))


def test_errors():
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(tg.tensor([[0, 1]]), W, tg.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(tg.tensor([0, 1]), W)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(tg.tensor([0, 1]), W, tg.tensor([0]), per_sample_weights=tg.ones(2))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(tg.tensor([0, 1]), W, tg.tensor([1]), mode="sum")
    with pytest.raises(RuntimeError, match="Index 1 of input takes value 7 which is not in the valid range"):
        F.embedding_bag(tg.tensor([0, 7]), W, tg.tensor([0]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(tg.tensor([0, 1]), W, tg.tensor([0]), mode="foo")


def test_random_against_torch(torch):
    rng = np.random.default_rng(3)
    for trial in range(40):
        rows, dim, n = int(rng.integers(2, 7)), int(rng.integers(1, 4)), int(rng.integers(1, 10))
        idx = rng.integers(0, rows, n)
        cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(1, 4))))
        cuts[0] = 0
        mode = ("sum", "mean", "max")[trial % 3]
        pad = int(rng.integers(0, rows)) if trial % 4 == 0 else None
        last = trial % 5 == 0 and len(cuts) > 1
        weights, psw = rng.standard_normal((rows, dim)), rng.standard_normal(n)
        results = []
        for lib in (tg, torch):
            w, p = lib.tensor(weights, requires_grad=True), lib.tensor(psw, requires_grad=True)
            out = lib.nn.functional.embedding_bag(
                lib.tensor(idx), w, lib.tensor(cuts), mode=mode, padding_idx=pad,
                include_last_offset=last, per_sample_weights=p if mode == "sum" and trial % 2 else None)
            (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum().backward()
            results.append([out.detach().numpy(), w.grad.numpy()]
                           + ([p.grad.numpy()] if p.grad is not None else []))
        assert len(results[0]) == len(results[1])
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
