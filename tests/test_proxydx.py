"""Gaps found by running NAS and multi-task learning scripts (DARTS, GDAS, GradNorm, PCGrad,
MGDA, hypernetworks, MMoE) under tapegrad and under PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(fn):
    """fn(lib) under tapegrad and torch, as numpy arrays."""
    return np.asarray(fn(tg).detach().numpy()), np.asarray(fn(torch).detach().numpy())


# -- deprecated scale-first overloads with a 0-dim tensor scale --------------------------------

@pytest.mark.parametrize("call", [
    lambda L, x, v, R: x.clone().add_(R, v),          # DARTS: p.data.add_(R, v)
    lambda L, x, v, R: x.clone().sub_(2 * R, v),
    lambda L, x, v, R: x.add(R, v),
    lambda L, x, v, R: L.add(x, R, v),
    lambda L, x, v, R: x.sub(R, v),
    lambda L, x, v, R: x.clone().addcmul_(R, v, v),
    lambda L, x, v, R: x.clone().addcdiv_(R, v, v + 1),
    lambda L, x, v, R: L.addmm(R, x.view(1, 3).expand(3, 3), -R, v.view(3, 1).expand(3, 3),
                               v.view(3, 1).expand(3, 3).t()),
    lambda L, x, v, R: x.view(1, 3).expand(3, 3).addmm(R, v.view(3, 1).expand(3, 3),
                                                       v.view(1, 3).expand(3, 3)),
])
def test_old_form_takes_a_0dim_tensor_scale(call):
    def run(L):
        x = L.tensor([1.0, -2.0, 0.5])
        v = L.tensor([0.25, 3.0, -1.0])
        R = L.tensor(0.375)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call(L, x, v, R)
    got, want = _both(run)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("scale", [lambda L: L.tensor([2.0]),
                                   lambda L: L.tensor(2.0, requires_grad=True)])
def test_old_form_refuses_a_tensor_that_is_no_number(scale):
    for L in (tg, torch):
        with pytest.raises(TypeError):
            L.ones(3).add_(scale(L), L.ones(3))


def test_alpha_keyword_tensor():
    # a 0-dim constant is a number; one that requires grad is refused (alpha carries no gradient)
    for L in (tg, torch):
        x = L.ones(3)
        assert x.add(L.arange(3.0), alpha=L.tensor(0.5)).tolist() == [1.0, 1.5, 2.0]
        with pytest.raises(TypeError, match="argument 'alpha' must be Number, not Tensor"):
            x.add(L.arange(3.0), alpha=L.tensor(2.0, requires_grad=True))
        with pytest.raises(TypeError, match="argument 'alpha' must be Number, not Tensor"):
            L.sub(x, L.arange(3.0), alpha=L.tensor([2.0]))


@pytest.mark.parametrize("fn", ["addcmul", "addcdiv"])
def test_value_keyword_tensor(fn):
    # value= is a Number: a 0-dim constant tensor is read as one; one that requires grad (or has
    # dimensions) is refused, where tapegrad had recorded a gradient through it
    def run(L, value):
        x = L.tensor([1.0, -2.0, 0.5])
        return getattr(L, fn)(x, x, x + 3, value=value)
    got, want = _both(lambda L: run(L, L.tensor(0.25)))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for L in (tg, torch):
        with pytest.raises(TypeError, match="argument 'value' must be Number, not Tensor"):
            run(L, L.tensor(0.25, requires_grad=True))
        with pytest.raises(TypeError, match="argument 'value' must be Number, not Tensor"):
            run(L, L.tensor([0.25]))
        with pytest.raises(TypeError, match="must be Number, not Tensor"):
            getattr(L.ones(3), fn + "_")(L.ones(3), L.ones(3), value=L.tensor(1.0, requires_grad=True))


# -- Number-typed arguments given a tensor -----------------------------------------------------
# PyTorch's parser reads a 0-dim tensor that does not require grad as a Number; a tensor that
# requires grad (a learnable slope) is refused.  tapegrad read it through float() and returned a
# result with no gradient to it: the learnable parameter silently never learned.

_NUMBER_CALLS = {
    "leaky_relu": lambda L, x, s: L.nn.functional.leaky_relu(x, s),
    "elu": lambda L, x, s: L.nn.functional.elu(x, alpha=s),
    "softplus": lambda L, x, s: L.nn.functional.softplus(x, beta=s),
    "hardtanh": lambda L, x, s: L.nn.functional.hardtanh(x, -s, s),
    "threshold": lambda L, x, s: L.nn.functional.threshold(x, s, 0.0),
    "dropout": lambda L, x, s: L.nn.functional.dropout(x, p=s, training=False),
    "full": lambda L, x, s: L.full((2,), s),
    "full_like": lambda L, x, s: L.full_like(x, s),
    "new_full": lambda L, x, s: x.new_full((2,), s),
    "celu": lambda L, x, s: L.nn.functional.celu(x, alpha=s),
    "hardshrink": lambda L, x, s: L.nn.functional.hardshrink(x, lambd=s),
    "softshrink": lambda L, x, s: L.nn.functional.softshrink(x, s),
    "logit": lambda L, x, s: L.sigmoid(x).logit(eps=s),
    "nan_to_num": lambda L, x, s: L.nan_to_num(x.log(), nan=s),
    "smooth_l1_loss": lambda L, x, s: L.nn.functional.smooth_l1_loss(x, L.zeros(3), beta=s),
    "huber_loss": lambda L, x, s: L.nn.functional.huber_loss(x, L.zeros(3), delta=s),
    "label_smoothing": lambda L, x, s: L.nn.functional.cross_entropy(
        x.view(1, 3), L.tensor([1]), label_smoothing=s),
    "rrelu": lambda L, x, s: L.nn.functional.rrelu(x, s, 0.9, training=False),
    "margin_ranking_loss": lambda L, x, s: L.nn.functional.margin_ranking_loss(
        x, x.flip(0), L.ones(3), margin=s),
    "hinge_embedding_loss": lambda L, x, s: L.nn.functional.hinge_embedding_loss(
        x, L.tensor([1.0, -1.0, 1.0]), margin=s),
    "cosine_embedding_loss": lambda L, x, s: L.nn.functional.cosine_embedding_loss(
        x.view(1, 3), x.view(1, 3).flip(1), L.tensor([-1.0]), margin=s),
    "triplet_margin_loss": lambda L, x, s: L.nn.functional.triplet_margin_loss(
        x.view(1, 3), 2 * x.view(1, 3), 0 * x.view(1, 3), margin=s),
}


@pytest.mark.parametrize("name", sorted(_NUMBER_CALLS))
def test_number_argument_tensor(name):
    call = _NUMBER_CALLS[name]
    got, want = _both(lambda L: call(L, L.tensor([-1.0, 0.25, 2.0]), L.tensor(0.5)))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for L in (tg, torch):
        with pytest.raises(TypeError, match=r"must be (Number|float), not Tensor"):
            call(L, L.tensor([-1.0, 0.25, 2.0]), L.tensor(0.5, requires_grad=True))


def test_constant_init_with_a_tensor_value():
    for L in (tg, torch):
        scale = L.tensor(0.25, requires_grad=True)
        w = L.nn.init.constant_(L.empty(3), scale)
        assert w.tolist() == [0.25, 0.25, 0.25] and not w.requires_grad
        with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
            L.nn.init.constant_(L.empty(3), L.ones(1))
