"""Random graphs (ops, broadcasting, reuse, retain_grad, detach, no_grad) against finite
differences in float64, and against PyTorch when it is installed."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tapegrad as tg

try:
    import torch
except Exception:  # pragma: no cover
    torch = None

UNARY = ["tanh", "exp_small", "square", "neg", "relu_shift"]
BINARY = ["add", "sub", "mul", "div_safe"]
SHAPES = [(3,), (2, 3), (1, 3), (2, 1)]


@st.composite
def programs(draw):
    n_inputs = draw(st.integers(1, 3))
    shapes = [draw(st.sampled_from(SHAPES)) for _ in range(n_inputs)]
    steps = []
    n_values = n_inputs
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce", "detach", "nograd"]))
        a = draw(st.integers(0, n_values - 1))
        if kind == "binary":
            steps.append(("binary", draw(st.sampled_from(BINARY)), a,
                          draw(st.integers(0, n_values - 1))))
        elif kind == "unary":
            steps.append(("unary", draw(st.sampled_from(UNARY)), a))
        elif kind == "reduce":
            steps.append(("reduce", draw(st.sampled_from(["sum0", "mean_last", "sumk"])), a))
        else:
            steps.append((kind, a))
        n_values += 1
    retain = draw(st.integers(0, n_values - 1))
    return shapes, steps, retain


def run(lib, program, arrays, requires_grad, frozen=None):
    """Evaluate the program; `frozen` maps step index -> constant array for the detach/no_grad
    steps (finite differences must hold those fixed, as autograd does)."""
    shapes, steps, retain = program
    values = [lib.tensor(a, dtype=lib.float64, requires_grad=requires_grad) for a in arrays]
    leaves = list(values)
    for i, step in enumerate(steps):
        kind = step[0]
        if frozen is not None and i in frozen:
            values.append(lib.tensor(frozen[i], dtype=lib.float64))
            continue
        if kind == "binary":
            x, y = values[step[2]], values[step[3]]
            try:
                out = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
                       "div_safe": lambda: x / (y * y + 1.0)}[step[1]]()
            except RuntimeError:          # shapes that do not broadcast: skip this step
                out = x
        elif kind == "unary":
            x = values[step[2]]
            out = {"tanh": lambda: x.tanh(), "exp_small": lambda: (x * 0.3).exp(),
                   "square": lambda: x * x, "neg": lambda: -x,
                   "relu_shift": lambda: (x + 0.05).relu()}[step[1]]()
        elif kind == "reduce":
            x = values[step[2]]
            out = {"sum0": lambda: x.sum(0), "mean_last": lambda: x.mean(-1, keepdim=True),
                   "sumk": lambda: x.sum(0, keepdim=True)}[step[1]]()
        elif kind == "detach":
            out = values[step[1]].detach() * 1.5
        else:
            with lib.no_grad():
                out = values[step[1]] * 2.0
        values.append(out)
    if values[retain].requires_grad and not values[retain].is_leaf:
        values[retain].retain_grad()
    total = sum(v.sum() for v in values[len(arrays):]) if len(values) > len(arrays) else None
    return leaves, values, total


def numeric(program, arrays, eps=1e-6):
    _, base_values, _ = run(tg, program, arrays, False)
    n = len(arrays)
    frozen = {i: base_values[n + i].numpy().copy() for i, step in enumerate(program[1])
              if step[0] in ("detach", "nograd")}

    def f(arrs):
        _, _, total = run(tg, program, arrs, False, frozen)
        return float(total.item())
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            hi = [x.copy() for x in arrays]
            lo = [x.copy() for x in arrays]
            hi[i][idx] += eps
            lo[i][idx] -= eps
            g[idx] = (f(hi) - f(lo)) / (2 * eps)
        grads.append(g)
    return grads


@settings(max_examples=40, deadline=None, derandomize=True)
@given(programs(), st.integers(0, 2**31 - 1))
def test_random_graphs_match_finite_differences_and_torch(program, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1, 1, s) for s in program[0]]
    leaves, values, total = run(tg, program, arrays, True)
    if total is None or not total.requires_grad:
        return
    total.backward()
    expected = numeric(program, arrays)
    for leaf, e in zip(leaves, expected):
        got = np.zeros_like(e) if leaf.grad is None else leaf.grad.numpy()
        np.testing.assert_allclose(got, e, rtol=1e-5, atol=1e-6)
    if torch is None:
        return
    t_leaves, t_values, t_total = run(torch, program, arrays, True)
    t_total.backward()
    for leaf, t_leaf in zip(leaves, t_leaves):
        got = None if leaf.grad is None else leaf.grad.numpy()
        want = None if t_leaf.grad is None else t_leaf.grad.numpy()
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    retain = program[2]
    if values[retain].requires_grad and not values[retain].is_leaf:
        np.testing.assert_allclose(values[retain].grad.numpy(), t_values[retain].grad.numpy(),
                                   rtol=1e-10, atol=1e-12)
