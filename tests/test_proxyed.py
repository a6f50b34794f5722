"""Protein-structure and molecular-modelling idioms (rigid frames, distograms, pLDDT heads,
mixed precision), each checked against PyTorch itself."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _bits(t):
    return t.detach().float().numpy()


# -- float16 logsumexp rounds each step, as PyTorch's composition -------------------------------

def _logsumexp_half_cases(T):
    rng = np.random.RandomState(0)
    out = []
    for i in range(40):
        shape = [(4, 16, 8), (64, 30), (30, 64), (8, 8, 8)][i % 4]
        dim = [-1, -1, 0, (0, 2)][i % 4]
        v = T.tensor(rng.standard_normal(shape) * 4, dtype=T.float32).half()
        if i % 5 == 0:
            v[0] = float("-inf")
        v.requires_grad_()
        y = T.logsumexp(v, dim, keepdim=i % 3 == 0)
        y.backward(T.ones_like(y) * 0.7)
        out += [_bits(y), _bits(v.grad)]
    return out


def test_float16_logsumexp_matches_pytorch_bit_for_bit():
    # PyTorch rounds x - max, exp, the (float32-accumulated) sum, log and + max to float16 each;
    # computed in float32 and rounded once, one result in five was an ulp off.
    for ours, theirs in zip(_logsumexp_half_cases(tg), _logsumexp_half_cases(torch)):
        np.testing.assert_array_equal(ours, theirs)


def test_float16_logsumexp_sum_overflows_as_pytorch():
    # the float16 sum of 70,000 exp(0) is inf in PyTorch, so the result is inf and the gradient
    # grad * exp(x - inf) is 0 (it was 11.16 and 1.4e-5)
    for T in (tg, torch):
        x = T.zeros(3, 70000, dtype=T.float16, requires_grad=True)
        y = T.logsumexp(x, 1)
        y.sum().backward()
        assert np.isposinf(_bits(y)).all()
        assert (_bits(x.grad) == 0).all()


# -- bfloat16 cross products round each product, as PyTorch's kernel ------------------------------

def _cross_cases(T):
    rng = np.random.RandomState(1)

    def bf(*shape):
        return T.tensor(rng.standard_normal(shape), dtype=T.float32).to(T.bfloat16)
    out = []
    calls = [
        ((50, 3), (50, 3), lambda a, b: T.linalg.cross(a, b)),
        ((50, 3), (50, 3), lambda a, b: T.cross(a, b, dim=1)),
        ((50, 3), (50, 3), lambda a, b: a.cross(b, dim=-1)),
        ((3, 5, 2), (3, 1, 2), lambda a, b: T.linalg.cross(a, b, dim=0)),   # broadcast
        ((4, 3), (1, 3), lambda a, b: T.cross(a, b, dim=-1)),
    ]
    for sa, sb, call in calls:
        a, b = bf(*sa).requires_grad_(), bf(*sb).requires_grad_()
        y = call(a, b)
        assert type(y.grad_fn).__name__ == "LinalgCrossBackward0" and y.dtype == T.bfloat16
        y.backward(bf(*y.shape))
        out += [_bits(y), _bits(a.grad), _bits(b.grad)]
    with T.no_grad():
        out.append(_bits(T.linalg.cross(bf(7, 3), bf(7, 3))))
    return out


def test_bfloat16_cross_matches_pytorch_bit_for_bit():
    # PyTorch computes a[i] * b[j] - a[j] * b[i] in c10::BFloat16 arithmetic (each product and
    # the difference rounded); rounded once from float32, a third of the components were off,
    # some by half their value (cancelling products: a Gram-Schmidt frame's e3 = e1 x e2)
    for ours, theirs in zip(_cross_cases(tg), _cross_cases(torch)):
        np.testing.assert_array_equal(ours, theirs)


def test_bfloat16_cross_default_dim_and_mixed_dtypes_refused():
    import warnings
    rng = np.random.RandomState(2)
    values = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    results = []
    for T in (tg, torch):
        a, b = (T.tensor(v, dtype=T.float32).to(T.bfloat16) for v in values)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same = T.cross(a, b)                        # the first dim of size 3
        results.append(_bits(same))
        for x, y in ((a.float(), b), (a, b.float()), (a, b.double()), (a, b.long())):
            # PyTorch's cross takes one dtype: a bfloat16 beside a float32 (its storage) passed
            with pytest.raises(RuntimeError, match="expected scalar type"):
                T.linalg.cross(x, y, dim=0)
    np.testing.assert_array_equal(*results)


# -- float16 nll_loss / cross_entropy: nll's cascade with float16 levels ---------------------------

def _nll_half_cases(T):
    F = T.nn.functional
    rng = np.random.RandomState(3)
    out = []
    for trial in range(24):
        n = [7, 130, 1100][trial % 3]
        x = T.tensor(rng.standard_normal((n, 5)) * 2, dtype=T.float32).half().requires_grad_()
        t = T.tensor(rng.randint(0, 5, n))
        t[::7] = -100
        w = T.tensor(rng.uniform(0.5, 2, 5), dtype=T.float32).half()
        kw = [{}, {"weight": w}, {"reduction": "sum"}, {"weight": w, "reduction": "sum"}][trial % 4]
        y = F.cross_entropy(x, t, **kw)
        y.backward()
        out += [_bits(y), _bits(x.grad), _bits(F.nll_loss(T.log_softmax(x.detach(), -1), t, **kw))]
    return out


def test_float16_nll_loss_sums_as_pytorch():
    # PyTorch's nll_loss sums the picked losses in a cascade whose partial sums are float16
    # (each addition rounded); numpy's float16 pairwise sum printed 2.082 for PyTorch's 2.080
    # and a sum of 1100 losses 2132 for 2130
    for ours, theirs in zip(_nll_half_cases(tg), _nll_half_cases(torch)):
        np.testing.assert_array_equal(ours, theirs)


# -- float16 masks beside large numbers: IEEE results, no numpy warnings ---------------------------

@pytest.mark.parametrize("op", [
    lambda T, h, m: T.where(m, T.tensor(-1e9), h),      # a float32 0-d fill cast to float16
    lambda T, h, m: T.maximum(h, T.tensor(1e9)),
    lambda T, h, m: h < 1e9,
    lambda T, h, m: h == 1e9,
    lambda T, h, m: h.bfloat16() + 1e39,                  # past float32's range: inf
])
def test_overflowing_casts_are_silent_as_pytorch(op):
    import warnings
    results = []
    for T in (tg, torch):
        h = T.tensor([1.0, -2.0, 3.0, 0.5]).half()
        m = T.tensor([True, False, False, True])
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # numpy's "overflow encountered in cast"
            y = op(T, h, m)
        results.append((str(y.dtype), _bits(y)))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])
