"""Differences from PyTorch left open by earlier sessions, closed in session 25, each against torch.

- repeat_interleave by a count printed `grad_fn=<IndexSelectBackward0>`: PyTorch copies an
  expanded view (ViewBackward0 <- CloneBackward0), and its gradient sums each element's copies
  as expand's backward does;
- sgn of a real tensor and mvlgamma printed the nodes they are built from (SignBackward0,
  AddBackward0), not PyTorch's SgnBackward0 and MvlgammaBackward0.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _node(t):
    return type(t.grad_fn).__name__ if t.grad_fn is not None else None


REPEAT_FORMS = [
    ((2,), {}), ((2,), {"dim": 0}), ((3,), {"dim": 1}), ((2,), {"dim": -1, "output_size": "the right one"}),
    ((0,), {"dim": 1}), (("counts",), {"dim": 1}), (("one count",), {}),
]


@pytest.mark.parametrize("args, kwargs", REPEAT_FORMS)
@pytest.mark.parametrize("transposed", [False, True])
def test_repeat_interleave_graph_values_and_gradient(args, kwargs, transposed):
    def run(lib):
        x = lib.tensor(np.arange(6.0).reshape(2, 3)).requires_grad_()
        source = x.t() if transposed else x
        if args[0] == "counts":
            reps = (lib.tensor([1, 0, 2] if not transposed else [2, 1]),)
        elif args[0] == "one count":
            reps = (lib.tensor(2),)
        else:
            reps = args
        options = dict(kwargs)
        if "output_size" in options:
            options["output_size"] = source.shape[-1] * 2
        y = source.repeat_interleave(*reps, **options)
        weights = lib.tensor(np.linspace(-1.0, 2.0, y.numel()).reshape(tuple(y.shape)))
        grad, = lib.autograd.grad((y * weights).sum(), [x])
        return _node(y), tuple(y.shape), y.detach().numpy(), grad.numpy()
    mine, theirs = run(tg), run(torch)
    assert mine[:2] == theirs[:2]
    np.testing.assert_array_equal(mine[2], theirs[2])
    np.testing.assert_allclose(mine[3], theirs[3], rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("output_size", [5, 12])
def test_repeat_interleave_wrong_output_size(output_size):
    messages = []
    for lib in (tg, torch):
        with pytest.raises(RuntimeError) as info:
            lib.ones(2, 3).repeat_interleave(2, dim=1, output_size=output_size)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("call", ["sgn", "mvlgamma", "special.multigammaln"])
def test_grad_fn_names_of_composites(call):
    def node(lib):
        x = (lib.ones(3, requires_grad=True) * 3)
        if call == "sgn":
            return _node(x.sgn())
        if call == "mvlgamma":
            return _node(x.mvlgamma(2))
        return _node(lib.special.multigammaln(x, 3))
    assert node(tg) == node(torch)
