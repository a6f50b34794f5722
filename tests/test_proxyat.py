"""Regression tests for gaps found running public RL scripts (minimalRL, CleanRL, PPO-PyTorch,
DrQ-v2) under tapegrad: each compares tapegrad with PyTorch on a case written out here."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def test_simplex_validation_of_zero_sum_probs_raises_without_numpy_warning():
    # probs [0.5, -0.5] normalise to [inf, -inf]; the simplex check's sum must not leak
    # numpy's "invalid value encountered" RuntimeWarning (PyTorch raises ValueError only).
    for lib in (torch, tapegrad):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="to satisfy the constraint Simplex"):
                lib.distributions.Categorical(probs=lib.tensor([0.5, -0.5]))


def test_constraint_check_with_inf_and_minus_inf_is_quiet():
    inf = float("inf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tapegrad.distributions.constraints.simplex.check(tapegrad.tensor([[inf, -inf],
                                                                                [0.25, 0.75]]))
    want = torch.distributions.constraints.simplex.check(torch.tensor([[inf, -inf], [0.25, 0.75]]))
    assert got.tolist() == want.tolist()


def test_distribution_utils_standard_normal():
    # DrQ-v2's TruncatedNormal draws its noise with torch.distributions.utils._standard_normal.
    for dtype in ("float32", "float64"):
        tapegrad.manual_seed(0)
        x = tapegrad.distributions.utils._standard_normal(
            (3, 4), dtype=getattr(tapegrad, dtype), device=tapegrad.device("cpu"))
        ref = torch.distributions.utils._standard_normal(
            (3, 4), dtype=getattr(torch, dtype), device=torch.device("cpu"))
        assert tuple(x.shape) == tuple(ref.shape) == (3, 4)
        assert str(x.dtype) == str(ref.dtype)
        assert x.requires_grad is False
        assert abs(float(x.mean())) < 3 and float(x.std()) > 0


def test_distribution_utils_sum_rightmost():
    v = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for dim in (0, 1, 2, 3):
        got = tapegrad.distributions.utils._sum_rightmost(tapegrad.tensor(v), dim)
        want = torch.distributions.utils._sum_rightmost(torch.tensor(v), dim)
        np.testing.assert_allclose(got.numpy(), want.numpy())


def test_truncated_normal_subclass_in_drqv2_style():
    # A script's Normal subclass whose sample() uses _extended_shape and _standard_normal,
    # then clamps with a straight-through estimator: shapes and the gradient to loc match.
    def make(lib):
        from_utils = lib.distributions.utils._standard_normal

        class TruncatedNormal(lib.distributions.Normal):
            def __init__(self, loc, scale, low=-1.0, high=1.0, eps=1e-6):
                super().__init__(loc, scale, validate_args=False)
                self.low, self.high, self.eps = low, high, eps

            def sample(self, clip=None, sample_shape=lib.Size()):
                shape = self._extended_shape(sample_shape)
                eps = from_utils(shape, dtype=self.loc.dtype, device=self.loc.device)
                eps *= 0.0          # deterministic across libraries
                eps *= self.scale
                if clip is not None:
                    eps = lib.clamp(eps, -clip, clip)
                x = self.loc + eps
                clamped = lib.clamp(x, self.low + self.eps, self.high - self.eps)
                return x - x.detach() + clamped.detach()
        return TruncatedNormal

    out = {}
    for lib in (torch, tapegrad):
        mu = lib.tensor([[1.5, -0.25]], requires_grad=True)
        d = make(lib)(mu, lib.ones_like(mu) * 0.2)
        s = d.sample(clip=0.3, sample_shape=lib.Size([2]))
        (s * lib.tensor([2.0, 3.0])).sum().backward()
        out[lib.__name__] = (tuple(s.shape), s.detach().numpy(), mu.grad.numpy(),
                             d.log_prob(s.detach()).detach().numpy())
    t, g = out["torch"], out["tapegrad"]
    assert t[0] == g[0] == (2, 1, 2)
    np.testing.assert_allclose(g[1], t[1], rtol=1e-6)
    np.testing.assert_allclose(g[2], t[2], rtol=1e-6)
    np.testing.assert_allclose(g[3], t[3], rtol=1e-5)


def test_size_with_numpy_integers_prints_plain_numbers():
    # torch.Size([np.prod(obs_shape)]) or shape + (np.int64(n),): numpy 2 would print
    # np.int64(2) inside the list; PyTorch prints the number.
    for lib in (torch, tapegrad):
        s = lib.Size([np.int64(2), 3])
        assert repr(s) == str(s) == "torch.Size([2, 3])"
        assert f"{s + (np.int32(4),)}" == "torch.Size([2, 3, 4])"
        assert str(lib.Size([2]) + (np.int64(3),)) == "torch.Size([2, 3])"
        assert str([lib.Size([np.uint8(3)])]) == "[torch.Size([3])]"
        n = lib.Size((np.int64(2), np.int64(3))).numel()
        assert n == 6 and type(n) is int


def test_legacy_constructor_reads_zero_d_integer_array_as_size():
    # Tensor(np.array(2)) is PyTorch's uninitialised 2-element tensor (the parser takes a size
    # from anything with __index__), not tensor(2.); float and bool 0-d arrays are data.
    cases = [((np.array(2),), "Tensor"), ((np.array(2), 3), "Tensor"), ((3, np.array(2)), "LongTensor"),
             ((np.array(2, dtype=np.uint8),), "LongTensor"), ((np.array(2.5),), "Tensor"),
             ((np.array(True),), "Tensor"), ((np.array([2]),), "Tensor")]
    for args, cls in cases:
        t = getattr(torch, cls)(*args)
        g = getattr(tapegrad, cls)(*args)
        assert tuple(g.shape) == tuple(t.shape), args
        assert str(g.dtype) == str(t.dtype)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[-1\]"):
        tapegrad.Tensor(np.array(-1))
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[-1\]"):
        torch.Tensor(np.array(-1))
