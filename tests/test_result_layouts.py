"""Result layouts (strides) as PyTorch's, so that a later .view() works exactly where PyTorch's
does (issue 16): flip, sort / argsort / msort, the *_like factories and F.normalize keep a
permuted or sliced input's layout (PyTorch allocates them with preserve_format); repeat / tile
and gather are row-major whatever the input's or the index's layout; a copy of an expanded
input (clone, casts, gelu, elu, erf) is row-major (numpy's order "K" put the stride-0 dim
innermost, so x.expand(...).clone().view(-1) raised).  Strides of size-1 dims
are free in both libraries and not compared."""
import itertools

import numpy as np
import pytest

import tapegrad as tg


def F(L):
    return L.nn.functional


OPS = {
    "flip": lambda L, x: x.flip(0),
    "flip last": lambda L, x: x.flip(-1),
    "flip two": lambda L, x: x.flip(0, 1),
    "fliplr": lambda L, x: L.fliplr(x),
    "sort values": lambda L, x: x.sort(-1)[0],
    "sort indices": lambda L, x: x.sort(0, descending=True)[1],
    "argsort": lambda L, x: x.argsort(1),
    "msort": lambda L, x: L.msort(x),
    "normalize": lambda L, x: F(L).normalize(x, dim=1),
    "normalize dim 0": lambda L, x: F(L).normalize(x, dim=0),
    "zeros_like": lambda L, x: L.zeros_like(x),
    "ones_like": lambda L, x: L.ones_like(x),
    "full_like": lambda L, x: L.full_like(x, 2.0),
    "empty_like": lambda L, x: L.empty_like(x),
    "rand_like": lambda L, x: L.rand_like(x),
    "zeros_like contiguous_format": lambda L, x: L.zeros_like(
        x, memory_format=L.contiguous_format),
    "repeat": lambda L, x: x.repeat(1, 1, 1),
    "tile": lambda L, x: x.tile((1, 2, 1)),
    "gather by a permuted index": lambda L, x: x.contiguous().gather(
        0, L.zeros(x.shape[::-1], dtype=L.int64).permute(2, 1, 0)),
    "logsigmoid": lambda L, x: F(L).logsigmoid(x),
    "clone": lambda L, x: x.clone(),
    "double": lambda L, x: x.double(),
    "gelu": lambda L, x: F(L).gelu(x),
    "elu": lambda L, x: F(L).elu(x),
    "erf": lambda L, x: L.erf(x),
    # PyTorch's rms_norm result is row-major (tapegrad's composite kept the input's layout)
    "rms_norm": lambda L, x: F(L).rms_norm(x, (x.shape[-1],)),
    "rms_norm two dims": lambda L, x: F(L).rms_norm(x, tuple(x.shape[1:])),
}


def inputs():
    rng = np.random.default_rng(0)
    for shape in [(2, 3, 4), (4, 4, 2), (3, 1, 4)]:
        base = rng.standard_normal(shape).astype(np.float32)
        for perm in itertools.permutations(range(3)):
            yield f"{shape} permuted {perm}", lambda L, b=base, p=perm: L.tensor(b).permute(*p)
        yield f"{shape} sliced", lambda L, b=base: L.tensor(np.concatenate([b, b], -1))[..., ::2]
        yield f"{shape} sliced, transposed", \
            lambda L, b=base: L.tensor(np.concatenate([b, b], 0))[::2].transpose(1, 2)
        # an expanded (stride-0) input: its copies are row-major in PyTorch
        yield f"{shape} expanded", lambda L, b=base: L.tensor(b[:1]).expand(*b.shape)
        yield f"{shape} expanded inner", lambda L, b=base: L.tensor(b[..., :1]).expand(*b.shape)


INPUTS = dict(inputs())


def big_strides(t):
    return tuple(s for s, n in zip(t.stride(), t.shape) if n != 1)


@pytest.mark.parametrize("op", sorted(OPS))
def test_result_strides_match_torch(torch, op):
    for name, make in INPUTS.items():
        ours, theirs = OPS[op](tg, make(tg)), OPS[op](torch, make(torch))
        assert tuple(ours.shape) == tuple(theirs.shape), name
        assert big_strides(ours) == big_strides(theirs), (name, ours.stride(), theirs.stride())
        if op not in ("empty_like", "rand_like"):
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7,
                                       err_msg=name)
        # a .view() works here exactly when it works in PyTorch
        try:
            theirs.view(-1)
            works = True
        except RuntimeError:
            works = False
        if works:
            ours.view(-1)
        else:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                ours.view(-1)


@pytest.mark.parametrize("op", ["flip", "flip two", "sort values", "msort", "normalize",
                                "normalize dim 0"])
def test_gradients_through_the_layout_keeping_path(torch, op):
    # the permuted path computes on input.permute(order) and permutes back: gradients and
    # second derivatives as PyTorch's, and float64 finite differences
    a = np.random.default_rng(1).standard_normal((2, 3, 4))
    weights = np.random.default_rng(2).standard_normal((3, 4, 2))

    def run(L):
        x = L.tensor(a, requires_grad=True)
        y = OPS[op](L, x.permute(1, 2, 0))
        g, = L.autograd.grad((y * L.tensor(weights)).sum(), [x], create_graph=True)
        if not g.requires_grad:     # a linear op: the gradient is a constant
            return g.detach().numpy(), None
        g2, = L.autograd.grad((g * g).sum(), [x], allow_unused=True)
        return g.detach().numpy(), None if g2 is None else g2.numpy()

    ours, theirs = run(tg), run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    if theirs[1] is None or ours[1] is None:
        assert (theirs[1] is None or not theirs[1].any()) and (ours[1] is None or not ours[1].any())
    else:
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9, atol=1e-10)
    x = tg.tensor(a, requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: OPS[op](tg, t.permute(1, 2, 0)), (x,))


def test_unsqueeze_strides_match_torch_including_the_new_dim(torch):
    # the new size-1 dim's stride is the size times the stride of the dim it precedes (1 at the
    # end), as PyTorch's; numpy's new axis had stride 0 (all strides compared here)
    for name, make in INPUTS.items():
        if make(tg).stride() != make(torch).stride():
            continue                # (expand's size-1 dims: stride 0 here, kept in PyTorch)
        for dim in range(-4, 4):
            ours, theirs = make(tg).unsqueeze(dim), make(torch).unsqueeze(dim)
            assert ours.stride() == theirs.stride(), (name, dim, ours.stride(), theirs.stride())
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for shape in [(), (1,), (3, 1), (1, 3), (2, 1, 3)]:
        for dim in range(-len(shape) - 1, len(shape) + 1):
            ours, theirs = tg.ones(shape).unsqueeze(dim), torch.ones(shape).unsqueeze(dim)
            assert ours.stride() == theirs.stride(), (shape, dim)


def test_unsqueeze_view_shares_storage_and_gradient():
    x = tg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    base = x * 1.0
    u = base.t().unsqueeze(1)
    assert u.stride() == (1, 3, 3)
    with tg.no_grad():
        u[2, 0, 0] = 7.0                 # writes through into base
    assert base[0, 2].item() == 7.0
    (x.t().unsqueeze(1) * tg.tensor([1.0, 2.0, 3.0]).reshape(3, 1, 1)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 2.0, 3.0]])


BINARY = {
    "add": lambda L, a, b: a + b,
    "mul": lambda L, a, b: a * b,
    "sub": lambda L, a, b: a - b,
    "div": lambda L, a, b: a / b,
    "pow": lambda L, a, b: a.abs() ** b,
    "heaviside": lambda L, a, b: L.heaviside(a, b),
}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_results_take_torch_iterator_layout(torch, op):
    # PyTorch's TensorIterator orders a result's dims by the first operand's strides (a broadcast
    # dim defers to the next operand); numpy made x.T + x row-major
    rng = np.random.default_rng(3)
    for shape in [(2, 3, 4), (3, 1, 4), (4, 4, 2)]:
        base = rng.standard_normal(shape)
        other = rng.standard_normal(shape)
        for p in itertools.permutations(range(3)):
            for q in itertools.permutations(range(3)):
                if tuple(np.array(shape)[list(p)]) != tuple(np.array(shape)[list(q)]):
                    continue
                results = []
                for L in (tg, torch):
                    a, b = L.tensor(base).permute(*p), L.tensor(other).permute(*q)
                    results.append(BINARY[op](L, a, b))
                ours, theirs = results
                assert big_strides(ours) == big_strides(theirs), (shape, p, q)
                np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
        # a broadcast operand (one row) and a 0-d one
        for L_pair in [((lambda L: L.tensor(base).permute(2, 0, 1)),
                        (lambda L: L.tensor(other[:1, :1]).permute(2, 0, 1)))]:
            ours = BINARY[op](tg, L_pair[0](tg), L_pair[1](tg))
            theirs = BINARY[op](torch, L_pair[0](torch), L_pair[1](torch))
            assert big_strides(ours) == big_strides(theirs)


def test_transposed_sum_views_as_torch(torch):
    for L in (tg, torch):
        x = L.arange(12.0).reshape(3, 4)
        y = x.t() + x.t()
        assert y.stride() == (1, 4)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            y.view(-1)
        assert (x.t() + x.t()).t().view(-1).shape == (12,)
