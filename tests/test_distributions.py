"""tapegrad.distributions: shapes, samples, log_prob / entropy / KL values and gradients against
PyTorch and finite differences, PyTorch's argument validation, and a REINFORCE loop."""
import math

import numpy as np
import pytest

import tapegrad as tg

D = tg.distributions


def _t(m, a, grad=False, dtype="float64"):
    return m.tensor(np.asarray(a), dtype=getattr(m, dtype), requires_grad=grad)


def _parity(torch, build, params, value_fn=None, rtol=1e-5, atol=1e-6):
    """build(module, *param_tensors) -> scalar-per-element tensor; values and gradients of its sum
    under tapegrad equal PyTorch's on the same float64 parameters."""
    ours = [_t(tg, p, True) for p in params]
    theirs = [_t(torch, p, True) for p in params]
    a = build(tg, *ours)
    b = build(torch, *theirs)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)
    a.sum().backward()
    b.sum().backward()
    for x, y in zip(ours, theirs):
        if y.grad is None:
            assert x.grad is None or not np.any(x.grad.numpy())
        else:
            np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=rtol, atol=atol)


def _dist(m, name):
    return getattr(m.distributions, name)


# -- laziness and names ------------------------------------------------------------------------------

def test_package_is_lazy_and_complete():
    import subprocess
    import sys
    code = ("import sys, tapegrad; assert 'tapegrad.distributions' not in sys.modules; "
            "tapegrad.distributions.Normal; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    for name in ("Distribution", "Normal", "Uniform", "Bernoulli", "Categorical",
                 "OneHotCategorical", "kl_divergence", "register_kl", "constraints"):
        assert hasattr(D, name)


# -- Normal -------------------------------------------------------------------------------------------

def test_normal_log_prob_entropy_cdf_parity(torch):
    loc, scale = [0.5, -1.0, 2.0], [1.0, 0.3, 2.5]
    value = [0.1, -0.7, 4.0]
    _parity(torch, lambda m, l, s: _dist(m, "Normal")(l, s).log_prob(_t(m, value)), [loc, scale])
    _parity(torch, lambda m, l, s, v: _dist(m, "Normal")(l, s).log_prob(v), [loc, scale, value])
    _parity(torch, lambda m, l, s: _dist(m, "Normal")(l, s).entropy(), [loc, scale])
    _parity(torch, lambda m, l, s: _dist(m, "Normal")(l, s).cdf(_t(m, value)), [loc, scale])
    # a number and a tensor broadcast; the number takes the tensor's dtype
    _parity(torch, lambda m, s: _dist(m, "Normal")(0.0, s).log_prob(_t(m, [[0.5], [1.0]])),
            [[1.0, 2.0]])


def test_normal_gradcheck(gradcheck):
    v = tg.tensor([0.1, -0.7, 4.0], dtype=tg.float64)
    gradcheck(lambda l, s: D.Normal(l, s).log_prob(v), [0.5, -1.0, 2.0], [1.0, 0.3, 2.5])
    gradcheck(lambda s: D.Normal(0.5, s).entropy(), [1.5, 0.2])
    gradcheck(lambda l, s, w: D.Normal(l, s).log_prob(w), [0.5, 1.0], [1.0, 2.0], [0.3, -0.2])


def test_normal_properties_and_samples():
    d = D.Normal(tg.tensor([1.0, -2.0]), tg.tensor([0.5, 2.0]))
    assert d.batch_shape == (2,) and d.event_shape == ()
    assert d.mean.tolist() == [1.0, -2.0] and d.stddev.tolist() == [0.5, 2.0]
    assert d.variance.tolist() == [0.25, 4.0]
    tg.manual_seed(0)
    s = d.sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == tg.float32 and not s.requires_grad
    np.testing.assert_allclose(s.numpy().mean(0), [1, -2], atol=0.05)
    np.testing.assert_allclose(s.numpy().std(0), [0.5, 2], rtol=0.03)
    assert D.Normal(0.0, 1.0).sample().shape == ()
    assert D.Normal(0.0, 1.0).sample((3, 2)).shape == (3, 2)
    tg.manual_seed(5)
    a = D.Normal(0.0, 1.0).sample((4,)).tolist()
    tg.manual_seed(5)
    assert D.Normal(0.0, 1.0).sample((4,)).tolist() == a
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.sample().shape == (3, 2)


def test_normal_rsample_is_differentiable():
    loc = tg.tensor([1.0, 2.0], requires_grad=True)
    scale = tg.tensor([0.5, 3.0], requires_grad=True)
    tg.manual_seed(1)
    s = D.Normal(loc, scale).rsample((5,))
    assert s.shape == (5, 2) and s.requires_grad
    s.sum().backward()
    assert loc.grad.tolist() == [5.0, 5.0]
    eps = (s.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(scale.grad.numpy(), eps.numpy().sum(0), rtol=1e-5)
    assert not D.Normal(loc, scale).sample().requires_grad


# -- Uniform ------------------------------------------------------------------------------------------

def test_uniform_parity(torch):
    low, high = [0.0, -1.0], [1.0, 3.0]
    _parity(torch, lambda m, lo, hi: _dist(m, "Uniform")(lo, hi).log_prob(_t(m, [0.5, 2.9])),
            [low, high])
    _parity(torch, lambda m, lo, hi: _dist(m, "Uniform")(lo, hi).entropy(), [low, high])
    _parity(torch, lambda m, lo, hi: _dist(m, "Uniform")(lo, hi).cdf(_t(m, [0.5, 2.0])),
            [low, high])
    for attr in ("mean", "variance", "stddev"):
        a = getattr(D.Uniform(_t(tg, low), _t(tg, high)), attr)
        b = getattr(torch.distributions.Uniform(_t(torch, low), _t(torch, high)), attr)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_uniform_samples_and_rsample(gradcheck):
    tg.manual_seed(2)
    low = tg.tensor([0.0, 10.0], requires_grad=True)
    high = tg.tensor([1.0, 20.0], requires_grad=True)
    d = D.Uniform(low, high)
    s = d.rsample((10000,))
    assert s.requires_grad
    x = s.detach().numpy()
    assert (x[:, 0] >= 0).all() and (x[:, 0] < 1).all() and (x[:, 1] >= 10).all()
    np.testing.assert_allclose(x.mean(0), [0.5, 15], rtol=0.02)
    s.sum().backward()
    u = (x - [0.0, 10.0]) / [1.0, 10.0]
    np.testing.assert_allclose(high.grad.numpy(), u.sum(0), rtol=1e-4)
    np.testing.assert_allclose(low.grad.numpy(), (1 - u).sum(0), rtol=1e-4)
    gradcheck(lambda lo, hi: D.Uniform(lo, hi).entropy(), [0.0, -1.0], [1.0, 3.0])
    assert D.Uniform(0.0, 1.0).log_prob(tg.tensor(1.0)).item() == -math.inf


# -- Categorical ----------------------------------------------------------------------------------------

_LOGITS = [[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, -3.0, 0.5]]


def test_categorical_parity_from_logits(torch):
    action = [[2, 0], [3, 1], [0, 0]]      # sample shape (3,) + batch (2,)
    _parity(torch, lambda m, lg: _dist(m, "Categorical")(logits=lg).log_prob(
        m.tensor(action)), [_LOGITS])
    _parity(torch, lambda m, lg: _dist(m, "Categorical")(logits=lg).entropy(), [_LOGITS])
    _parity(torch, lambda m, lg: _dist(m, "Categorical")(logits=lg).probs, [_LOGITS])
    _parity(torch, lambda m, lg: _dist(m, "Categorical")(logits=lg).logits, [_LOGITS])


def test_categorical_parity_from_probs(torch):
    probs = [[0.1, 0.2, 0.3, 0.4], [2.0, 1.0, 0.5, 0.5]]      # unnormalised rows are normalised
    _parity(torch, lambda m, p: _dist(m, "Categorical")(probs=p).log_prob(m.tensor([3, 0])),
            [probs])
    _parity(torch, lambda m, p: _dist(m, "Categorical")(probs=p).entropy(), [probs])
    _parity(torch, lambda m, p: _dist(m, "Categorical")(p).logits, [probs])


def test_categorical_gradcheck(gradcheck):
    a = tg.tensor([2, 0])
    gradcheck(lambda lg: D.Categorical(logits=lg).log_prob(a), _LOGITS)
    gradcheck(lambda lg: D.Categorical(logits=lg).entropy(), _LOGITS)
    gradcheck(lambda p: D.Categorical(probs=p).entropy(), [[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]])


def test_categorical_samples_and_shapes():
    d = D.Categorical(logits=tg.tensor(_LOGITS))
    assert d.batch_shape == (2,) and d.event_shape == () and d.param_shape == (2, 4)
    assert d.sample().shape == (2,) and d.sample().dtype == tg.int64
    assert d.sample((3, 5)).shape == (3, 5, 2)
    assert D.Categorical(tg.tensor([0.5, 0.5])).sample().shape == ()
    tg.manual_seed(3)
    p = np.array([0.1, 0.6, 0.0, 0.3])
    s = D.Categorical(tg.tensor(p)).sample((20000,)).numpy()
    np.testing.assert_allclose(np.bincount(s, minlength=4) / s.size, p, atol=0.015)
    assert d.mode.tolist() == [2, 0]
    assert np.isnan(d.mean.numpy()).all() and d.mean.shape == (2,)
    assert d.enumerate_support().tolist() == [[0, 0], [1, 1], [2, 2], [3, 3]]
    assert d.expand((3, 2)).sample().shape == (3, 2)
    with pytest.raises(NotImplementedError):
        d.rsample()


def test_categorical_zero_probability_entropy_and_logits(torch):
    ours = D.Categorical(logits=tg.tensor([0.0, -math.inf]))
    theirs = torch.distributions.Categorical(logits=torch.tensor([0.0, -math.inf]))
    assert ours.entropy().item() == theirs.entropy().item() == 0.0
    np.testing.assert_allclose(D.Categorical(probs=tg.tensor([0.5, 0.0])).logits.numpy(),
                               torch.distributions.Categorical(
                                   probs=torch.tensor([0.5, 0.0])).logits.numpy(), rtol=1e-6)


# -- Bernoulli --------------------------------------------------------------------------------------------

def test_bernoulli_parity(torch):
    probs, logits = [0.2, 0.5, 0.9], [-1.0, 0.0, 2.5]
    value = [1.0, 0.0, 1.0]
    _parity(torch, lambda m, p: _dist(m, "Bernoulli")(p).log_prob(_t(m, value)), [probs])
    _parity(torch, lambda m, p: _dist(m, "Bernoulli")(probs=p).entropy(), [probs])
    _parity(torch, lambda m, lg: _dist(m, "Bernoulli")(logits=lg).log_prob(_t(m, value)),
            [logits])
    _parity(torch, lambda m, lg: _dist(m, "Bernoulli")(logits=lg).entropy(), [logits])
    _parity(torch, lambda m, lg: _dist(m, "Bernoulli")(logits=lg).probs, [logits])
    _parity(torch, lambda m, p: _dist(m, "Bernoulli")(probs=p).logits, [probs])
    _parity(torch, lambda m, p: _dist(m, "Bernoulli")(probs=p).variance, [probs])


def test_bernoulli_gradcheck_and_samples(gradcheck):
    v = tg.tensor([1.0, 0.0, 1.0], dtype=tg.float64)
    gradcheck(lambda lg: D.Bernoulli(logits=lg).log_prob(v), [-1.0, 0.0, 2.5])
    gradcheck(lambda lg: D.Bernoulli(logits=lg).entropy(), [-1.0, 0.0, 2.5])
    gradcheck(lambda p: D.Bernoulli(probs=p).log_prob(v), [0.2, 0.5, 0.9])
    tg.manual_seed(4)
    s = D.Bernoulli(tg.tensor([0.1, 0.8])).sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == tg.float32
    np.testing.assert_allclose(s.numpy().mean(0), [0.1, 0.8], atol=0.015)
    assert D.Bernoulli(0.3).sample().shape == ()
    assert D.Bernoulli(tg.tensor([0.2, 0.7])).mode.tolist() == [0.0, 1.0]


# -- OneHotCategorical ------------------------------------------------------------------------------------

def test_one_hot_categorical(torch):
    value = [[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
    _parity(torch, lambda m, lg: _dist(m, "OneHotCategorical")(logits=lg).log_prob(
        _t(m, value)), [_LOGITS])
    _parity(torch, lambda m, lg: _dist(m, "OneHotCategorical")(logits=lg).entropy(), [_LOGITS])
    d = D.OneHotCategorical(logits=tg.tensor(_LOGITS))
    s = d.sample((3,))
    assert s.shape == (3, 2, 4) and d.event_shape == (4,) and d.batch_shape == (2,)
    assert (s.numpy().sum(-1) == 1).all()


# -- KL --------------------------------------------------------------------------------------------------

def test_kl_parity(torch):
    _parity(torch, lambda m, a, b, c, d: m.distributions.kl_divergence(
        _dist(m, "Normal")(a, b), _dist(m, "Normal")(c, d)),
        [[0.0, 1.0], [1.0, 0.5], [0.5, -1.0], [2.0, 0.7]])
    _parity(torch, lambda m, p, q: m.distributions.kl_divergence(
        _dist(m, "Categorical")(logits=p), _dist(m, "Categorical")(logits=q)),
        [_LOGITS, [[0.0, 0.0, 0.0, 1.0], [2.0, -1.0, 0.0, 0.0]]])
    _parity(torch, lambda m, p, q: m.distributions.kl_divergence(
        _dist(m, "Bernoulli")(p), _dist(m, "Bernoulli")(q)), [[0.2, 0.7], [0.5, 0.1]])
    _parity(torch, lambda m, a, b: m.distributions.kl_divergence(
        _dist(m, "Uniform")(a, b), _dist(m, "Uniform")(-1.0, 5.0)), [[0.0, 1.0], [1.0, 2.0]])


def test_kl_edge_cases_and_errors(torch, gradcheck):
    for m in (tg, torch):
        Dm = m.distributions
        zero_q = Dm.kl_divergence(Dm.Categorical(m.tensor([0.5, 0.5])),
                                  Dm.Categorical(m.tensor([1.0, 0.0])))
        assert zero_q.item() == math.inf
        zero_p = Dm.kl_divergence(Dm.Categorical(m.tensor([1.0, 0.0])),
                                  Dm.Categorical(m.tensor([0.5, 0.5])))
        assert abs(zero_p.item() - math.log(2)) < 1e-6
        assert Dm.kl_divergence(Dm.Uniform(0.0, 2.0), Dm.Uniform(0.0, 1.0)).item() == math.inf
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Bernoulli(0.3))
    gradcheck(lambda a, b: D.kl_divergence(D.Normal(a, b), D.Normal(0.3, 1.2)), [0.1], [0.8])


# -- validation ----------------------------------------------------------------------------------------

_BAD = [
    lambda m: m.distributions.Normal(0.0, -1.0),
    lambda m: m.distributions.Normal(m.zeros(2), m.tensor([1.0, 0.0])),
    lambda m: m.distributions.Normal(m.tensor([0.0, float("nan")]), 1.0),
    lambda m: m.distributions.Normal(m.zeros(2), 1.0).log_prob(m.zeros(3)),
    lambda m: m.distributions.Normal(m.zeros(2), 1.0).log_prob(m.tensor([float("nan"), 0.0])),
    lambda m: m.distributions.Normal(0.0, 1.0).log_prob([0.0, 1.0]),
    lambda m: m.distributions.Uniform(1.0, 0.0),
    lambda m: m.distributions.Uniform(0.0, 1.0).log_prob(m.tensor(1.5)),
    lambda m: m.distributions.Categorical(probs=m.tensor([-0.2, 0.8])),
    lambda m: m.distributions.Categorical(probs=m.tensor([0.2, 0.8]), logits=m.zeros(2)),
    lambda m: m.distributions.Categorical(),
    lambda m: m.distributions.Categorical(logits=m.tensor(1.0)),
    lambda m: m.distributions.Categorical(logits=m.zeros(2)).log_prob(m.tensor(2)),
    lambda m: m.distributions.Categorical(logits=m.zeros(2)).log_prob(m.tensor(0.5)),
    lambda m: m.distributions.Categorical(logits=m.zeros(3, 2)).log_prob(m.tensor([0, 1])),
    lambda m: m.distributions.Bernoulli(probs=1.3),
    lambda m: m.distributions.Bernoulli(),
    lambda m: m.distributions.Bernoulli(0.3).log_prob(m.tensor(0.5)),
    lambda m: m.distributions.OneHotCategorical(logits=m.zeros(2)).log_prob(m.tensor([1.0, 1.0])),
]


def test_validation_errors_match_torch(torch):
    for case in _BAD:
        expected = None
        try:
            case(torch)
        except Exception as e:  # noqa: BLE001
            expected = e
        assert expected is not None
        with pytest.raises(type(expected)) as info:
            case(tg)
        assert str(expected).split("\n")[0] == str(info.value).split("\n")[0], case


def test_validate_args_false_and_repr(torch):
    assert math.isnan(D.Normal(0.0, 1.0, validate_args=False).log_prob(
        tg.tensor(float("nan"))).item())
    D.Normal(0.0, -1.0, validate_args=False)
    for build in (lambda m: m.distributions.Normal(0.0, 1.0),
                  lambda m: m.distributions.Normal(m.zeros(2), 1.0),
                  lambda m: m.distributions.Bernoulli(0.3),
                  lambda m: m.distributions.Categorical(logits=m.zeros(3)),
                  lambda m: m.distributions.Uniform(0.0, 2.0)):
        assert repr(build(tg)) == repr(build(torch))
        assert str(build(tg).batch_shape) == str(build(torch).batch_shape)
    assert repr(D.Normal(0.0, 1.0).arg_constraints) == \
        repr(torch.distributions.Normal(0.0, 1.0).arg_constraints)


# -- policy gradient -------------------------------------------------------------------------------

def _reinforce(m, init, steps=30, seed=0):
    """Two-armed bandit (arm 1 pays 1, arm 0 pays 0): a linear policy trained with REINFORCE."""
    m.manual_seed(seed)
    policy = m.nn.Linear(3, 2)
    with m.no_grad():
        policy.weight.copy_(m.tensor(init[0]))
        policy.bias.copy_(m.tensor(init[1]))
    opt = m.optim.SGD(policy.parameters(), lr=0.5)
    state = m.ones(8, 3)
    probs = []
    for _ in range(steps):
        dist = m.distributions.Categorical(logits=policy(state))
        action = dist.sample()
        reward = (action == 1).float()
        loss = -(dist.log_prob(action) * reward).sum() - 0.01 * dist.entropy().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        probs.append(dist.probs[0, 1].item())
    return probs


def test_policy_gradient_loop_learns():
    init = (np.zeros((2, 3), np.float32), np.zeros(2, np.float32))
    probs = _reinforce(tg, init)
    assert probs[0] == pytest.approx(0.5)
    assert probs[-1] > 0.9


def test_policy_gradient_step_matches_torch(torch):
    """One REINFORCE step on the same logits and actions gives PyTorch's gradients."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    actions = [0, 1, 1, 0, 1]
    reward = [1.0, -0.5, 2.0, 0.3, 1.0]
    grads = []
    for m in (tg, torch):
        lin = m.nn.Linear(3, 2)
        with m.no_grad():
            lin.weight.copy_(m.tensor(w))
            lin.bias.zero_()
        dist = m.distributions.Categorical(logits=lin(m.tensor(x)))
        loss = -(dist.log_prob(m.tensor(actions)) * m.tensor(reward)).sum() \
            - 0.1 * dist.entropy().mean()
        loss.backward()
        grads.append((loss.item(), lin.weight.grad.numpy().copy(), lin.bias.grad.numpy().copy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-5)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads[0][2], grads[1][2], rtol=1e-4, atol=1e-6)


def test_randomized_log_prob_parity(torch):
    """Random shapes and parameters: Normal and Categorical log_prob and entropy as PyTorch's."""
    rng = np.random.default_rng(1)
    for _ in range(10):
        batch = tuple(int(s) for s in rng.integers(1, 4, size=rng.integers(0, 3)))
        k = int(rng.integers(2, 6))
        logits = rng.standard_normal(batch + (k,))
        value = rng.integers(0, k, size=batch)
        _parity(torch, lambda m, lg: _dist(m, "Categorical")(logits=lg).log_prob(
            m.tensor(value)), [logits])
        loc = rng.standard_normal(batch)
        scale = rng.random(batch) + 0.1
        x = rng.standard_normal(batch)
        _parity(torch, lambda m, l, s: _dist(m, "Normal")(l, s).log_prob(_t(m, x)), [loc, scale])


def test_sample_shape_must_be_a_shape(torch):
    for m in (tg, torch):
        with pytest.raises(TypeError):
            m.distributions.Normal(m.zeros(2), 1.0).sample(3)
        with pytest.raises(TypeError):
            m.distributions.Categorical(logits=m.zeros(2)).sample(3)
    assert D.Categorical(logits=tg.zeros(3)).sample(tg.Size([2, 2])).shape == (2, 2)


def test_kl_and_uniform_gradcheck(gradcheck):
    gradcheck(lambda p, q: D.kl_divergence(D.Categorical(logits=p), D.Categorical(logits=q)),
              _LOGITS, [[0.0, 0.0, 0.0, 1.0], [2.0, -1.0, 0.0, 0.0]])
    gradcheck(lambda p, q: D.kl_divergence(D.Bernoulli(logits=p), D.Bernoulli(logits=q)),
              [0.3, -1.2], [1.0, 0.5])
    gradcheck(lambda lo, hi: D.kl_divergence(D.Uniform(lo, hi), D.Uniform(-2.0, 4.0)),
              [0.0, -1.0], [1.0, 3.0])
    v = tg.tensor([0.5, 2.0], dtype=tg.float64)
    gradcheck(lambda lo, hi: D.Uniform(lo, hi).log_prob(v), [0.0, -1.0], [1.0, 3.0])
    gradcheck(lambda p: D.OneHotCategorical(logits=p).entropy(), _LOGITS)
