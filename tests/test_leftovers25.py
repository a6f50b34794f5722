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


# -- embedding_bag(scale_grad_by_freq=True) ---------------------------------------------------------

BAG_CASES = [
    ([4, 5, 4, 3], [0, 2], {}), ([1, 1, 1, 2], [0], {"mode": "sum"}),
    ([6, 2, 2, 0, 0, 0], [0, 3], {"mode": "sum"}),
    ([4, 5, 4, 3], [0], {"mode": "mean"}), ([2, 2, 7, 1, 2], [0, 1, 4], {"mode": "mean"}),
    ([3, 1, 3, 3, 0], [0, 2], {"padding_idx": 3}),
    ([4, 5, 4, 3], [0, 2], {"mode": "sum", "per_sample_weights": [0.5, -1.0, 2.0, 3.0]}),
    ([4, 5, 4, 3, 5], [0, 2, 5], {"include_last_offset": True}),
    ([0, 2, 5], [0, 1], {}), ([1, 1, 3, 3], [0, 2], {"mode": "sum"}),
]


def _bag_gradient(lib, indices, offsets, options, by_embedding):
    weight = lib.tensor(np.linspace(-1.0, 1.0, 8 * 3).reshape(8, 3), requires_grad=True)
    F = lib.nn.functional
    options = dict(options)
    if "per_sample_weights" in options:
        options["per_sample_weights"] = lib.tensor(options["per_sample_weights"],
                                                   dtype=lib.float64)
    if not by_embedding:
        out = F.embedding_bag(lib.tensor(indices), weight, lib.tensor(offsets),
                              scale_grad_by_freq=True, **options)
    else:
        # the documented rule, composed from embedding (whose CPU kernel divides each row by
        # its own count): rows gathered with scale_grad_by_freq, summed or averaged per bag
        rows = F.embedding(lib.tensor(indices), weight, scale_grad_by_freq=True,
                           padding_idx=options.get("padding_idx"))
        if "per_sample_weights" in options:
            rows = rows * options["per_sample_weights"][:, None]
        ends = offsets[1:] + [len(indices)] if not options.get("include_last_offset") \
            else offsets[1:]
        starts = offsets if not options.get("include_last_offset") else offsets[:-1]
        bags = []
        for start, end in zip(starts, ends):
            used = [i for i in range(start, end) if indices[i] != options.get("padding_idx")]
            part = rows[start:end][[i - start for i in used]]
            total = part.sum(0)
            bags.append(total / max(len(used), 1) if options.get("mode", "mean") == "mean" else total)
        out = lib.stack(bags)
    (out * lib.tensor(np.linspace(0.5, 2.0, out.numel()).reshape(tuple(out.shape)))).sum().backward()
    return out.detach().numpy(), weight.grad.numpy()


@pytest.mark.parametrize("indices, offsets, options", BAG_CASES)
def test_embedding_bag_scales_each_row_by_its_own_count(indices, offsets, options):
    # PyTorch 2.13's CPU kernel divides some rows by another index's count
    # (pytorch/pytorch#190063, fixed after 2.13; CUDA, MPS and embedding divide by the row's
    # own): the oracle is torch's embedding composed into bags, and torch's embedding_bag
    # itself where its kernel is right (every index's count equal)
    mine = _bag_gradient(tg, indices, offsets, options, by_embedding=False)
    oracle = _bag_gradient(torch, indices, offsets, options, by_embedding=True)
    np.testing.assert_allclose(mine[0], oracle[0], rtol=1e-14)
    np.testing.assert_allclose(mine[1], oracle[1], rtol=1e-14, atol=1e-15)
    counts = np.bincount(indices)
    if len(set(counts[counts > 0])) == 1:
        theirs = _bag_gradient(torch, indices, offsets, options, by_embedding=False)
        np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-14, atol=1e-15)


# -- autograd.functional.jacobian(strategy="forward-mode") and hessian's forward-over-reverse ------

_W = [[0.3, -1.2, 0.7], [2.0, 0.1, -0.4]]
_X = [0.2, -0.5, 1.5]
JACOBIAN_CASES = {
    "mlp": lambda lib, x: lib.autograd.functional.jacobian(
        lambda v: lib.tanh(lib.tensor(_W, dtype=lib.float64) @ v), x, vectorize=True,
        strategy="forward-mode"),
    "tuple of outputs": lambda lib, x: lib.autograd.functional.jacobian(
        lambda v: (v.sum(), v * 2), x, vectorize=True, strategy="forward-mode"),
    "constant": lambda lib, x: lib.autograd.functional.jacobian(
        lambda v: lib.ones(2, dtype=lib.float64), x, vectorize=True, strategy="forward-mode"),
    "matrix": lambda lib, x: lib.autograd.functional.jacobian(
        lambda m: m @ m, x[:2, None] * x[None, 1:], vectorize=True, strategy="forward-mode"),
    "hessian": lambda lib, x: lib.autograd.functional.hessian(
        lambda v: lib.tanh(lib.tensor(_W, dtype=lib.float64) @ v).sum(), x, vectorize=True,
        outer_jacobian_strategy="forward-mode").detach(),
    "not vectorized": lambda lib, x: lib.autograd.functional.jacobian(
        lambda v: v * 2, x, strategy="forward-mode"),
    "create_graph": lambda lib, x: lib.autograd.functional.jacobian(
        lambda v: v * 2, x, vectorize=True, strategy="forward-mode", create_graph=True),
    "strict": lambda lib, x: lib.autograd.functional.jacobian(
        lambda v: v * 2, x, vectorize=True, strategy="forward-mode", strict=True),
    "not a tensor": lambda lib, x: lib.autograd.functional.jacobian(
        lambda v: 3, x, vectorize=True, strategy="forward-mode"),
}


# (torch's forward-mode path warns about torch.jit.script on first use: torch's own code)
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name", JACOBIAN_CASES)
def test_forward_mode_jacobian(name):
    def run(lib):
        try:
            out = JACOBIAN_CASES[name](lib, lib.tensor(_X, dtype=lib.float64))
        except Exception as error:
            return type(error).__name__, str(error)
        parts = out if isinstance(out, tuple) else (out,)
        return [(tuple(p.shape), p.requires_grad, p.numpy()) for p in parts]
    mine, theirs = run(tg), run(torch)
    if isinstance(theirs, tuple):
        assert mine == theirs
        return
    assert [m[:2] for m in mine] == [t[:2] for t in theirs]
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m[2], t[2], rtol=1e-14, atol=1e-15)


def test_forward_mode_jacobian_of_several_inputs_matches_reverse_mode():
    # (PyTorch 2.13's forward-mode path fails here, 'list' object has no attribute 'shape':
    # the reverse-mode result is the oracle)
    x, y = tg.tensor(_X, dtype=tg.float64), tg.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=tg.float64)
    f = lambda a, b: (a[:2] * b).sum(0)         # noqa: E731
    forward = tg.autograd.functional.jacobian(f, (x, y), vectorize=True, strategy="forward-mode")
    reverse = tg.autograd.functional.jacobian(f, (x, y))
    for a, b in zip(forward, reverse):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-15)


# -- the *_like factories' plain-call path ------------------------------------------------------------

@pytest.mark.parametrize("factory", ["zeros_like", "ones_like", "rand_like", "randn_like"])
@pytest.mark.parametrize("make", ["parameter", "int", "0-d", "empty", "transposed", "bool"])
def test_like_factories_plain_calls(factory, make):
    # (a call without options takes a short path: the same result as the general one)
    def run(lib):
        source = {"parameter": lambda: lib.nn.Parameter(lib.ones(2, 3)),
                  "int": lambda: lib.arange(6).reshape(2, 3),
                  "0-d": lambda: lib.tensor(2.5, dtype=lib.float64),
                  "empty": lambda: lib.zeros(0, 4),
                  "transposed": lambda: lib.ones(3, 4).t(),
                  "bool": lambda: lib.ones(2, dtype=lib.bool)}[make]()
        try:
            out = getattr(lib, factory)(source)
        except Exception as error:
            return type(error).__name__, str(error)
        values = out.numpy() if factory in ("zeros_like", "ones_like") else None
        return (str(out.dtype), tuple(out.shape), out.stride(), out.requires_grad,
                out.grad_fn is None, out.is_leaf, values.tolist() if values is not None else None)
    assert run(tg) == run(torch)


# -- batch_norm's compiled statistics ------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(8, 16), (5, 4, 7), (3, 2, 4, 5), (33, 3), (2, 5, 1, 9)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_statistics_against_torch(shape, dtype):
    # (the per-channel mean and variance are accumulated in double in one compiled loop, in
    # the order PyTorch's CPU kernel sums; float64 results were hundreds of ulps from
    # PyTorch's with numpy's pairwise sums)
    data = np.random.default_rng(len(shape) * 7 + shape[0]).standard_normal(shape) * 3 + 1.5
    channels = shape[1]

    def run(lib, training):
        x = lib.tensor(data.astype(dtype), requires_grad=True)
        w = lib.tensor(np.linspace(-1, 2, channels).astype(dtype), requires_grad=True)
        b = lib.tensor(np.linspace(0.5, -0.5, channels).astype(dtype), requires_grad=True)
        mean = lib.tensor(np.linspace(0, 1, channels).astype(dtype))
        var = lib.tensor(np.linspace(1, 2, channels).astype(dtype))
        y = lib.nn.functional.batch_norm(x, mean, var, w, b, training, 0.3, 1e-5)
        weights = lib.tensor(np.cos(np.arange(y.numel())).reshape(shape).astype(dtype))
        grads = lib.autograd.grad((y * weights).sum(), [x, w, b])
        return [t.detach().numpy() for t in (y, mean, var, *grads)]
    for training in (True, False):
        mine, theirs = run(tg, training), run(torch, training)
        tight = 1e-13 if dtype == "float64" else 2e-6
        for a, b in zip(mine, theirs):
            # (atol: a sum that cancels to about 0 keeps only rounding noise)
            np.testing.assert_allclose(a, b, rtol=tight, atol=tight * 10 * np.abs(b).max())


def test_batch_norm_without_grad_equals_with_grad():
    x = tg.randn(6, 4, 5, dtype=tg.float64)
    bn = tg.nn.BatchNorm1d(4).double()
    with tg.no_grad():
        plain = bn(x)
    recorded = bn(x.requires_grad_())
    np.testing.assert_array_equal(plain.numpy(), recorded.detach().numpy())
