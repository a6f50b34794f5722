"""Differentiable relaxations and gradient estimators (Gumbel-softmax, relaxed Bernoulli,
straight-through, score functions) on tapegrad, compared with PyTorch: low-precision parameters."""
import pickle

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

_PARAMS = [0.999, 1.0, 0.0, 0.5]


def _bf16(T, values):
    return T.tensor(values, dtype=T.bfloat16)


def _values(t):
    return t.detach().float().numpy()


# -- finfo of the tensor's dtype, not of its storage ---------------------------------------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_clamp_probs_clamps_at_the_eps_of_the_dtype(dtype):
    # SILENT: a bfloat16 tensor's storage is float32; its eps (1.2e-7) clamped bfloat16
    # probabilities to 1 - 1.2e-7, which rounds to 1.0, where PyTorch clamps to 1 - 2**-7.
    from tapegrad.distributions.utils import clamp_probs as ours
    from torch.distributions.utils import clamp_probs as theirs
    got = ours(tg.tensor(_PARAMS, dtype=getattr(tg, dtype)))
    want = theirs(torch.tensor(_PARAMS, dtype=getattr(torch, dtype)))
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(_values(got), _values(want))


def test_relaxed_bernoulli_of_bfloat16_probabilities_near_one_stays_finite():
    # SILENT: the clamp above made log1p(-p) = -inf, so LogitRelaxedBernoulli's samples were
    # +-inf and RelaxedBernoulli's saturated exactly at 0 or 1.
    from tapegrad.distributions.relaxed_bernoulli import LogitRelaxedBernoulli
    tg.manual_seed(0)
    probs = _bf16(tg, _PARAMS)
    logit_samples = LogitRelaxedBernoulli(_bf16(tg, 0.5), probs=probs).rsample((200,))
    assert logit_samples.dtype == tg.bfloat16
    assert bool(tg.isfinite(logit_samples).all())
    # the largest logit PyTorch can draw: (log u - log1p(-u) + logit(1 - 2**-7)) / 0.5, u < 1
    assert float(logit_samples.abs().max()) < 2 * (np.log(1 / 2 ** -8) + np.log(127) + 1)


def test_sigmoid_transform_of_bfloat16_clamps_as_pytorch(torch):
    # SILENT: sigmoid(30) was clamped to 1 - 1.2e-7 = 1.0 in bfloat16, and its inverse was inf.
    x = [30.0, -100.0, 0.0, 3.0]
    ours = tg.distributions.transforms.SigmoidTransform()
    theirs = torch.distributions.transforms.SigmoidTransform()
    y_ours, y_theirs = ours(_bf16(tg, x)), theirs(_bf16(torch, x))
    assert y_ours.dtype == tg.bfloat16
    np.testing.assert_array_equal(_values(y_ours), _values(y_theirs))
    np.testing.assert_array_equal(_values(ours.inv(y_ours)), _values(theirs.inv(y_theirs)))


def test_gumbel_of_bfloat16_uniform_bounds_are_those_of_bfloat16(torch):
    ours = tg.distributions.Gumbel(_bf16(tg, [0.0]), _bf16(tg, [1.0]))
    theirs = torch.distributions.Gumbel(_bf16(torch, [0.0]), _bf16(torch, [1.0]))
    for name in ("low", "high"):
        np.testing.assert_array_equal(_values(getattr(ours.base_dist, name)),
                                      _values(getattr(theirs.base_dist, name)))


@pytest.mark.parametrize("logits", [[0.0, float("-inf"), 0.0], [0.0, float("-inf")]])
def test_categorical_entropy_of_bfloat16_logits_with_minus_inf(torch, logits):
    # SILENT: -inf logits were clamped to float32's min, which rounds to -inf in bfloat16, and
    # 0 * -inf made the entropy of a masked categorical NaN.
    got = tg.distributions.Categorical(logits=_bf16(tg, logits)).entropy()
    want = torch.distributions.Categorical(logits=_bf16(torch, logits)).entropy()
    assert got.dtype == tg.bfloat16
    np.testing.assert_array_equal(_values(got), _values(want))


# -- samples of bfloat16 parameters are bfloat16 ------------------------------------------------

def _families(T, D):
    z = _bf16(T, [0.5, 0.2])
    t = _bf16(T, 0.5)
    return {
        "Normal": D.Normal(z, z + 1), "Exponential": D.Exponential(z + 1),
        "Laplace": D.Laplace(z, z + 1), "Cauchy": D.Cauchy(z, z + 1),
        "Gumbel": D.Gumbel(z, z + 1), "LogNormal": D.LogNormal(z, z + 1),
        "Uniform": D.Uniform(z, z + 1), "ContinuousBernoulli": D.ContinuousBernoulli(probs=z),
        "RelaxedBernoulli": D.RelaxedBernoulli(t, probs=z),
        "RelaxedOneHotCategorical": D.RelaxedOneHotCategorical(t, probs=_bf16(T, [0.25, 0.75])),
        "Bernoulli": D.Bernoulli(probs=z), "Geometric": D.Geometric(probs=z),
        "OneHotCategorical": D.OneHotCategorical(probs=_bf16(T, [0.25, 0.75])),
        "OneHotCategoricalStraightThrough":
            D.OneHotCategoricalStraightThrough(probs=_bf16(T, [0.25, 0.75])),
        "Multinomial": D.Multinomial(3, probs=_bf16(T, [0.25, 0.75])),
        "HalfNormal": D.HalfNormal(z + 1), "Weibull": D.Weibull(z + 1, z + 1),
        "Kumaraswamy": D.Kumaraswamy(z + 1, z + 1), "GeneralizedPareto": D.GeneralizedPareto(z, z + 1, z),
    }


def test_samples_of_bfloat16_parameters_are_bfloat16(torch):
    # SILENT: the draws were made in the float32 storage's dtype and left float32, so a sample
    # (and all built from it: straight-through outputs, log_probs of the sample) was float32.
    tg.manual_seed(0)
    ours, theirs = _families(tg, tg.distributions), _families(torch, torch.distributions)
    for name, d in ours.items():
        want = theirs[name]
        assert str(d.sample().dtype) == str(want.sample().dtype), name
        if want.has_rsample:
            assert str(d.rsample((2,)).dtype) == str(want.rsample((2,)).dtype), name


def test_enumerated_supports_and_means_of_bfloat16_parameters(torch):
    for T in (tg, torch):
        D = T.distributions
        p = _bf16(T, [0.25, 0.75])
        out = [D.Bernoulli(probs=p).enumerate_support(), D.OneHotCategorical(probs=p).enumerate_support(),
               D.Categorical(probs=p).mean, D.OneHotCategorical(probs=p).mode]
        if T is tg:
            ours = out
        else:
            theirs = out
    for a, b in zip(ours, theirs):
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_array_equal(_values(a), _values(b))


def test_straight_through_sample_of_bfloat16_logits_is_bfloat16_and_differentiable(torch):
    logits = _bf16(tg, [[2.0, 0.0, -1.0]]).requires_grad_()
    sample = tg.distributions.OneHotCategoricalStraightThrough(logits=logits).rsample()
    assert sample.dtype == tg.bfloat16
    (sample * tg.tensor([1.0, 2.0, 3.0], dtype=tg.bfloat16)).sum().backward()
    t_logits = _bf16(torch, [[2.0, 0.0, -1.0]]).requires_grad_()
    t_sample = torch.distributions.OneHotCategoricalStraightThrough(logits=t_logits).rsample()
    (t_sample * torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16)).sum().backward()
    assert logits.grad.dtype == tg.bfloat16
    np.testing.assert_array_equal(_values(logits.grad), _values(t_logits.grad))


@pytest.mark.parametrize("dtype, name", [("float16", "Half"), ("bfloat16", "BFloat16")])
def test_gamma_and_dirichlet_samplers_refuse_half_precision(torch, dtype, name):
    for T in (tg, torch):
        D = T.distributions
        one = T.ones(2, dtype=getattr(T, dtype))
        cases = [(lambda: D.Gamma(one, one).rsample(), "gamma_cpu"),
                 (lambda: D.Chi2(one).sample(), "gamma_cpu"),
                 (lambda: D.StudentT(one).sample(), "gamma_cpu"),
                 (lambda: D.Dirichlet(one).sample(), "dirichlet"),
                 (lambda: D.Beta(one, one).sample(), "dirichlet")]
        for draw, kernel in cases:
            with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'{name}\''):
                draw()


# -- the simplex check sums in the tensor's dtype -----------------------------------------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_categorical_of_low_precision_probs_validates_as_pytorch(torch, dtype):
    # [0.5, 0.2] normalised in bfloat16 sums to 1.0019 in float32 but to 1 in bfloat16: PyTorch
    # accepts it (and refuses float16's, whose sum rounds to 0.9995); tapegrad summed the
    # float32 storage and refused bfloat16's.
    def build(T):
        try:
            return str(T.distributions.Categorical(probs=T.tensor([0.5, 0.2], dtype=getattr(T, dtype)),
                                                   validate_args=True).probs.dtype)
        except ValueError as e:
            return str(e).split(" of distribution")[0]
    assert build(tg) == build(torch)


# -- a bfloat16 tensor formats and names itself as PyTorch's ------------------------------------

def test_bfloat16_tensor_formats_with_its_dtype(torch):
    for values in ([0.5, 0.2], [[1.0, 2.5]]):
        assert f"{_bf16(tg, values)}" == f"{_bf16(torch, values)}"
        assert "{}".format(_bf16(tg, values)) == "{}".format(_bf16(torch, values))
    assert f"{_bf16(tg, 0.2):.4f} {_bf16(tg, 3.0):5.1f}" == \
        f"{_bf16(torch, 0.2):.4f} {_bf16(torch, 3.0):5.1f}"
    for T in (tg, torch):
        with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
            f"{_bf16(T, [1.0]):.2f}"
        with pytest.raises(TypeError, match="passed to Parameter.__format__"):
            f"{T.nn.Parameter(_bf16(T, 1.0)):.2f}"


def test_bfloat16_tensor_and_parameter_class_names(torch):
    assert type(_bf16(tg, [1.0])).__name__ == type(_bf16(torch, [1.0])).__name__ == "Tensor"
    p = tg.nn.Parameter(_bf16(tg, [1.0]))
    assert type(p).__name__ == "Parameter"
    # the mark keeps its own qualified name: pickle still finds the class
    back = pickle.loads(pickle.dumps(p))
    assert back.dtype == tg.bfloat16 and type(back).__name__ == "Parameter"
    f8 = tg.tensor([1.0]).to(tg.float8_e4m3fn)
    assert type(f8).__name__ == "Tensor"


# -- bfloat16 logsumexp rounds each step as PyTorch's composition -------------------------------

def _logsumexp_cases(T):
    rng = np.random.RandomState(0)
    out = []
    for i in range(120):
        v = T.tensor(rng.randn(3, 7) * 3, dtype=T.float32).to(T.bfloat16)
        if i % 5 == 0:
            v[0, 0] = float("-inf")
        if i % 7 == 0:
            v[1, :] = float("-inf")
        dim = [1, 0, -1, (0, 1)][i % 4]
        out.append(T.logsumexp(v, dim, keepdim=i % 3 == 0).float().numpy())
    return out


def test_bfloat16_logsumexp_matches_pytorch_bit_for_bit(torch):
    # logsumexp([0, 1.5]) in bfloat16 is 1.6953 in PyTorch (each op rounded); computed in
    # float32 and rounded once it was 1.7031, and a Categorical's entropy moved with it.
    for ours, theirs in zip(_logsumexp_cases(tg), _logsumexp_cases(torch)):
        np.testing.assert_array_equal(ours, theirs)
    x = _bf16(tg, [[0.0, 1.5, -2.0], [0.5, float("-inf"), 0.5]]).requires_grad_()
    tx = _bf16(torch, [[0.0, 1.5, -2.0], [0.5, float("-inf"), 0.5]]).requires_grad_()
    y, ty = x.logsumexp(dim=1), tx.logsumexp(dim=1)
    assert y.grad_fn.name() == ty.grad_fn.name() == "LogsumexpBackward0"
    np.testing.assert_array_equal(_values(y), _values(ty))
    y.backward(_bf16(tg, [1.0, 2.0]))
    ty.backward(_bf16(torch, [1.0, 2.0]))
    np.testing.assert_array_equal(_values(x.grad), _values(tx.grad))
    ent = tg.distributions.Categorical(logits=x.detach()).entropy()
    t_ent = torch.distributions.Categorical(logits=tx.detach()).entropy()
    np.testing.assert_array_equal(_values(ent), _values(t_ent))


# -- bfloat16 mse_loss (a VQ-VAE's codebook and commitment losses) ------------------------------

def _mse_case(T, reduction):
    z = T.sin(T.arange(12.0)).view(3, 4).to(T.bfloat16).requires_grad_()
    codes = T.cos(T.arange(12.0) * 0.7).view(3, 4).to(T.bfloat16).requires_grad_()
    codebook_loss = T.nn.functional.mse_loss(codes, z.detach(), reduction=reduction)
    commitment = T.nn.functional.mse_loss(z, codes.detach(), reduction=reduction)
    loss = codebook_loss + 0.25 * commitment
    loss.sum().backward()
    return [_values(v) for v in (codebook_loss, commitment, z.grad, codes.grad)], \
        codebook_loss.grad_fn.name()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bfloat16_mse_loss_rounds_as_pytorch(torch, reduction):
    # PyTorch rounds a - b to bfloat16 before squaring it, and its backward rounds
    # bf16(2 / n) * (a - b) and the product with the gradient; tapegrad rounded once.
    ours, node = _mse_case(tg, reduction)
    theirs, t_node = _mse_case(torch, reduction)
    assert node == t_node == "MseLossBackward0"
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def _softmin_grads(T):
    # soft-DTW's softmin, -gamma * logsumexp(-r / gamma), in bfloat16 over each dim layout
    rng = np.random.RandomState(5)
    out = []
    for dim, keepdim in ((-1, False), (0, True), ((0, 2), False), (1, False)):
        r = T.tensor(rng.randn(2, 3, 4) * 2, dtype=T.float32).to(T.bfloat16).requires_grad_()
        y = -0.5 * T.logsumexp(-r / 0.5, dim, keepdim=keepdim)
        w = T.tensor(rng.randn(*y.shape), dtype=T.float32).to(T.bfloat16)
        (y * w).sum().backward()
        out += [_values(y), _values(r.grad)]
    return out


def test_bfloat16_logsumexp_gradient_matches_pytorch(torch):
    # PyTorch's backward, grad * exp(x - result), rounds each op in bfloat16
    for ours, theirs in zip(_softmin_grads(tg), _softmin_grads(torch)):
        np.testing.assert_array_equal(ours, theirs)
