"""Distribution reprs (and the validation messages that embed them) as PyTorch prints them: a
one-element parameter shows formatted (a 0-d tensor as its number, a shape-(1,) one as the
tensor), a larger one as its size; PyTorch's Beta and LogNormal keep their parameters out of
their instance dicts and so list none."""
import pytest

import tapegrad as tg
import tapegrad.distributions as tgd

torch = pytest.importorskip("torch")
D = torch.distributions


def _cases(lib, dists):
    o = lib.tensor([0.5]); o2 = lib.tensor([[0.5, 0.5]]); s = lib.tensor(0.5)
    return {
        "Normal1": lambda: dists.Normal(o, o), "Normal0": lambda: dists.Normal(0., 1.),
        "NormalN": lambda: dists.Normal(o2, o2), "Bernoulli": lambda: dists.Bernoulli(o),
        "BernoulliLogits0d": lambda: dists.Bernoulli(logits=s), "Beta": lambda: dists.Beta(o, o),
        "Binomial": lambda: dists.Binomial(3, o), "Categorical": lambda: dists.Categorical(o2),
        "Gamma": lambda: dists.Gamma(o, o), "LogNormal": lambda: dists.LogNormal(o, o),
        "Uniform": lambda: dists.Uniform(o, o + 1), "Uniform0d": lambda: dists.Uniform(0., 1.),
        "MVNTril": lambda: dists.MultivariateNormal(lib.zeros(1), scale_tril=lib.eye(1)),
        "StudentT": lambda: dists.StudentT(o, o, o), "Poisson": lambda: dists.Poisson(o),
        "Independent": lambda: dists.Independent(dists.Normal(o2, o2), 1),
    }


@pytest.mark.parametrize("name", sorted(_cases(torch, D)))
def test_repr_matches_torch(name):
    assert repr(_cases(tg, tgd)[name]()) == repr(_cases(torch, D)[name]())


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_validation_message_shows_parameters_as_torch(shape):
    def message(lib, dists):
        with pytest.raises(ValueError) as info:
            dists.Normal(lib.zeros(shape), -lib.ones(shape))
        return str(info.value)
    assert message(tg, tgd) == message(torch, D)
