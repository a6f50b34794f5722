"""numpy's `axis=` / `keepdims=` spellings, which PyTorch's argument parser accepts for every
`dim` / `keepdim` argument of its native functions and methods (checked against torch 2.13)."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

# (name, call) pairs: call(lib, x, idx) with x = arange(6.).reshape(2, 3), idx = [[0], [1]].
CALLS = [
    ("cat", lambda lib, x, idx: lib.cat([x, x], axis=1)),
    ("concat", lambda lib, x, idx: lib.concat([x, x], axis=1)),
    ("stack", lambda lib, x, idx: lib.stack([x, x], axis=1)),
    ("squeeze", lambda lib, x, idx: x[None].squeeze(axis=0)),
    ("torch.squeeze", lambda lib, x, idx: lib.squeeze(x[None], axis=0)),
    ("unsqueeze", lambda lib, x, idx: x.unsqueeze(axis=1)),
    ("torch.unsqueeze", lambda lib, x, idx: lib.unsqueeze(x, axis=0)),
    ("unbind", lambda lib, x, idx: x.unbind(axis=1)),
    ("chunk", lambda lib, x, idx: lib.chunk(x, 3, axis=1)),
    ("index_select", lambda lib, x, idx: x.index_select(axis=1, index=idx[:, 0])),
    ("gather", lambda lib, x, idx: lib.gather(x, axis=1, index=idx)),
    ("select", lambda lib, x, idx: x.select(axis=1, index=2)),
    ("narrow", lambda lib, x, idx: x.narrow(axis=1, start=1, length=2)),
    ("softmax", lambda lib, x, idx: x.softmax(axis=0)),
    ("torch.log_softmax", lambda lib, x, idx: lib.log_softmax(x, axis=1)),
    ("median", lambda lib, x, idx: x.median(axis=1, keepdims=True).values),
    ("kthvalue", lambda lib, x, idx: x.kthvalue(2, axis=1, keepdims=True).values),
    ("quantile", lambda lib, x, idx: x.quantile(0.5, axis=1, keepdims=True)),
    ("std_mean", lambda lib, x, idx: lib.std_mean(x, axis=1, keepdims=True)[0]),
    ("logcumsumexp", lambda lib, x, idx: x.logcumsumexp(axis=1)),
    ("cummax", lambda lib, x, idx: x.cummax(axis=1).values),
    ("tensor_split", lambda lib, x, idx: x.tensor_split(2, axis=1)),
    ("take_along_dim", lambda lib, x, idx: lib.take_along_dim(x, idx, axis=1)),
    ("repeat_interleave", lambda lib, x, idx: x.repeat_interleave(2, axis=1)),
    ("index_add", lambda lib, x, idx: x.index_add(axis=1, index=idx[0], source=lib.ones(2, 1))),
    ("scatter", lambda lib, x, idx: x.scatter(axis=1, index=idx, value=-1.0)),
]


def _values(result):
    if isinstance(result, tuple):
        return [np.asarray(r.numpy()).tolist() for r in result]
    return np.asarray(result.numpy()).tolist()


@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_axis_spellings_match_torch(name, call, torch):
    results = []
    for lib in (tg, torch):
        x = lib.arange(6.0).reshape(2, 3)
        idx = lib.tensor([[0], [1]])
        results.append(_values(call(lib, x, idx)))
    assert results[0] == results[1]


def test_axis_spellings_without_torch():
    x = tg.arange(6.0).reshape(2, 3)
    assert tg.cat([x, x], axis=1).shape == (2, 6)
    assert x.unsqueeze(axis=0).shape == (1, 2, 3)
    assert tg.stack([x, x], axis=2).shape == (2, 3, 2)
    np.testing.assert_array_equal(x.gather(axis=1, index=tg.tensor([[2], [0]])).numpy(),
                                  [[2.0], [3.0]])
    # The gradient flows as with dim=.
    w = tg.ones(2, 3, requires_grad=True)
    tg.cat([w, 2 * w], axis=1).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 3), 3.0))


def test_axis_errors(torch):
    for lib in (tg, torch):
        x = lib.ones(2, 3)
        with pytest.raises(TypeError, match='missing 1 required positional arguments: "dim"'):
            x.unsqueeze()
        with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
            x.unsqueeze(0, axis=0)
        with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
            lib.cat([x], 1, axis=0)
        with pytest.raises(TypeError, match='missing 1 required positional arguments: "dim"'):
            x.softmax()
        with pytest.raises(TypeError):
            lib.nn.functional.softmax(x, axis=1)      # a Python function in PyTorch: no alias
