"""What the session-19 proxy of rasbt/deeplearning-models and dragen1860's tutorials turned up:
the multi-class hinge losses passed gradient through a term sitting exactly on the margin
(PyTorch's kernels pass none there), a silent difference on integer-valued or tied logits."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

# Row 0 (target 0) has a term exactly on the margin: 1 - x[0] + x[1] == 0.
_X = [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.5, 2.0, -1.0]]


def _grads(mod, fn, x, *args, **kw):
    t = mod.tensor(np.array(x), requires_grad=True)
    out = fn(mod, t, *args, **kw)
    out.backward(mod.arange(1.0, out.numel() + 1, dtype=mod.float64).reshape(out.shape))
    return out.detach().numpy(), t.grad.numpy()


def _multi_margin(mod, t, **kw):
    return mod.nn.functional.multi_margin_loss(t, mod.tensor([0, 1, 1]), reduction="none", **kw)


def _multilabel_margin(mod, t):
    target = mod.tensor([[0, -1, 1], [2, 1, -1], [1, -1, 0]])
    return mod.nn.functional.multilabel_margin_loss(t, target, reduction="none")


def test_multi_margin_loss_term_on_the_margin_passes_no_gradient():
    out, grad = _grads(tg, _multi_margin, _X)
    # row 0, target 0: j=1 sits on the margin (1 - 1 + 0 == 0) and contributes nothing
    np.testing.assert_allclose(grad[0], [-1 / 3, 0.0, 1 / 3])
    np.testing.assert_allclose(out[0], 1 / 3)


@pytest.mark.parametrize("kw", [{}, {"p": 2}, {"margin": 0.5},
                                {"weight": [1.0, 2.0, 3.0]}])
def test_multi_margin_loss_matches_torch_at_the_margin(torch, kw):
    x = [[1.0, 0.5, 1.0], [0.0, 1.0, 0.0], [0.5, 2.0, 1.5]] if kw.get("margin") else _X

    def run(mod):
        kw2 = dict(kw)
        if "weight" in kw2:
            kw2["weight"] = mod.tensor(kw2["weight"], dtype=mod.float64)
        return _grads(mod, lambda m, t: _multi_margin(m, t, **kw2), x)

    for ours, theirs in zip(run(tg), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_multilabel_margin_loss_matches_torch_at_the_margin(torch):
    ours, theirs = _grads(tg, _multilabel_margin, _X), _grads(torch, _multilabel_margin, _X)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_hinge_losses_off_the_margin_pass_finite_difference(gradcheck):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5))
    gradcheck(lambda t: F.multi_margin_loss(t, tg.tensor([0, 3, 4, 1]), reduction="none"), x)
    target = tg.tensor([[0, 2, -1, 0, 0], [4, -1, 0, 0, 0], [1, 2, 3, -1, 0], [3, -1, 0, 0, 0]])
    gradcheck(lambda t: F.multilabel_margin_loss(t, target, reduction="none"), x)


# -- p-norms with p other than 0, 1, 2, inf: zeros of x and zero norms ---------------------------
# The composite (sum |x|^p)^(1/p) gave nan gradients at the zeros of x for p < 1 (inf * 0) and
# where a whole norm is 0 for p > 1; PyTorch gives 0 there.

_Z = [[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0], [-1.5, 0.5, 0.0]]


def _norm_grads(mod, fn, *arrays):
    ts = [mod.tensor(np.array(a), requires_grad=True) for a in arrays]
    out = fn(mod, *ts)
    out.backward(mod.arange(1.0, out.numel() + 1, dtype=mod.float64).reshape(out.shape))
    return [out.detach().numpy()] + [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("p", [0.5, 0.3, 1.5, 3.0, -1.0])
@pytest.mark.parametrize("case", ["vector_norm", "linalg_norm", "dist", "renorm", "keepdim"])
def test_p_norm_gradient_at_zeros_matches_torch(torch, p, case):
    other = [[1.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0], [-1.5, 0.0, 0.0]]
    fns = {
        "vector_norm": (lambda m, x: m.linalg.vector_norm(x, p, dim=1), (_Z,)),
        "linalg_norm": (lambda m, x: m.linalg.norm(x[0], p).reshape(1), (_Z,)),
        "dist": (lambda m, x, y: m.dist(x, y, p).reshape(1), (_Z, other)),
        "renorm": (lambda m, x: m.renorm(x, p, 0, 0.5), (_Z,)),
        "keepdim": (lambda m, x: m.linalg.vector_norm(x, p, dim=(0, 1), keepdim=True), (_Z,)),
    }
    if case == "renorm" and p < 0:
        pytest.skip("renorm needs p > 0")
    fn, arrays = fns[case]
    ours, theirs = _norm_grads(tg, fn, *arrays), _norm_grads(torch, fn, *arrays)
    for a, b in zip(ours, theirs):
        assert not np.isnan(a).any()
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p", [0.5, 1.5, 3.0])
def test_p_norm_finite_difference_and_second_order(gradcheck, torch, p):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4))
    gradcheck(lambda t: tg.linalg.vector_norm(t, p, dim=1), x)

    def second(mod):
        t = mod.tensor(x, requires_grad=True)
        (g,) = mod.autograd.grad(mod.linalg.vector_norm(t, p, dim=1).sum(), t, create_graph=True)
        (g * g).sum().backward()
        return g.detach().numpy(), t.grad.numpy()

    for a, b in zip(second(tg), second(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


# -- pad_packed_sequence builds its output as PyTorch does -----------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("total_length", [None, 6])
def test_pad_packed_sequence_grad_fn_and_gradient_match_torch(torch, batch_first, enforce_sorted,
                                                              total_length):
    x = np.arange(24, dtype=np.float64).reshape(4, 3, 2) / 10
    lengths = [4, 3, 1] if enforce_sorted else [3, 4, 1]

    def run(mod):
        t = mod.tensor(x, requires_grad=True)
        packed = mod.nn.utils.rnn.pack_padded_sequence(t, mod.tensor(lengths),
                                                       enforce_sorted=enforce_sorted)
        out, out_lengths = mod.nn.utils.rnn.pad_packed_sequence(
            packed, batch_first=batch_first, padding_value=-1.0, total_length=total_length)
        weights = mod.arange(1.0, out.numel() + 1, dtype=mod.float64).reshape(out.shape)
        (out * weights).sum().backward()
        return type(out.grad_fn).__name__, out.detach().numpy(), out_lengths.tolist(), \
            t.grad.numpy()

    ours, theirs = run(tg), run(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert ours[2] == theirs[2]
    np.testing.assert_array_equal(ours[3], theirs[3])


# -- torch.distributed.rpc: the RRef type scripts test outputs against ---------------------------

def test_distributed_rpc_rref_isinstance_check_is_false(torch):
    import tapegrad.distributed.rpc as rpc

    # rasbt's helper_train.py: `if isinstance(logits, torch.distributed.rpc.api.RRef): ...`
    assert not isinstance(tg.ones(2), tg.distributed.rpc.api.RRef)
    assert rpc.RRef is rpc.api.RRef and not rpc.is_available()
    with pytest.raises(RuntimeError, match="Current RPC agent is not set"):
        rpc.RRef(1)
    with pytest.raises(RuntimeError, match="Current RPC agent is not set"):
        torch.distributed.rpc.RRef(1)


# -- cdist / pdist at p = 0: zero gradients, as PyTorch's kernels (the norm's gave none) -----------

def _p0_distances(lib):
    x = lib.tensor([[1.0, 2.0], [3.0, float("inf")]], requires_grad=True)
    y = lib.tensor([[0.0, 1.0]], requires_grad=True)
    d1 = lib.cdist(x, y, 0)
    z = lib.tensor([[1.0, 2.0], [3.0, 5.0], [1.0, 1.0]], requires_grad=True)
    d2 = lib.pdist(z, 0)
    (d1.sum() + d2.sum()).backward()
    return [t.detach().numpy().tolist() for t in (d1, d2, x.grad, y.grad, z.grad)]


def test_p0_distances_have_zero_gradients():
    d1, d2, gx, gy, gz = _p0_distances(tg)
    assert d1 == [[2.0], [2.0]] and d2 == [2.0, 1.0, 2.0]
    assert gx == [[0.0, 0.0], [0.0, 0.0]] and gy == [[0.0, 0.0]] and gz == [[0.0, 0.0]] * 3


def test_p0_distances_match_torch(torch):
    assert _p0_distances(tg) == _p0_distances(torch)
