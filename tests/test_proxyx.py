"""Faults found by running university homework scripts (proxy units) under tapegrad."""
import pickle

import numpy as np
import pytest

import tapegrad
import tapegrad.nn as nn
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")


def test_module_dict_lists_attributes_in_pytorchs_order():
    # Homework code prints `agent.__dict__`; a subclass's own attributes follow `_modules`.
    for make in (lambda m: m.Module(), lambda m: m.Linear(2, 3), lambda m: m.Dropout(),
                 lambda m: m.BatchNorm1d(3), lambda m: m.Embedding(3, 2)):
        assert list(make(nn).__dict__) == list(make(torch.nn).__dict__)


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=(3, 5), padding="same", padding_mode="reflect"),
    dict(kernel_size=(3, 4), padding="same", dilation=(2, 1)),
    dict(kernel_size=3, padding="valid", padding_mode="circular"),
    dict(kernel_size=3, padding=(1, 2), padding_mode="replicate"),
    dict(kernel_size=3, padding=0),
])
def test_conv_reversed_padding_attribute(kwargs):
    got = nn.Conv2d(2, 3, **kwargs)._reversed_padding_repeated_twice
    want = torch.nn.Conv2d(2, 3, **kwargs)._reversed_padding_repeated_twice
    assert got == want and type(got) is type(want)


def test_conv1d_3d_transposed_carry_the_attribute():
    for name, args in (("Conv1d", (1, 2, 3)), ("Conv3d", (1, 2, (1, 3, 5))),
                       ("ConvTranspose2d", (1, 2, 3))):
        got = getattr(nn, name)(*args, padding=1)._reversed_padding_repeated_twice
        want = getattr(torch.nn, name)(*args, padding=1)._reversed_padding_repeated_twice
        assert got == want


def test_subclass_conv_forward_using_the_attribute_matches_torch():
    # The idiom: a conv subclass pads itself with the stored amounts, then convolves unpadded.
    rng = np.random.RandomState(0)
    x = rng.standard_normal((2, 2, 6, 7))
    w = rng.standard_normal((3, 2, 3, 5))

    def run(lib):
        class PadConv(lib.nn.Conv2d):
            def forward(self, inp):
                inp = lib.nn.functional.pad(inp, self._reversed_padding_repeated_twice,
                                            mode="reflect")
                return lib.nn.functional.conv2d(inp, self.weight, self.bias, self.stride, 0)
        conv = PadConv(2, 3, (3, 5), padding="same", bias=False).double()
        with lib.no_grad():
            conv.weight.copy_(lib.tensor(w))
        xt = lib.tensor(x, requires_grad=True)
        out = conv(xt)
        out.square().sum().backward()
        return out.detach().numpy(), xt.grad.numpy()

    for a, b in zip(run(tapegrad), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_padding_mode_conv_values_unchanged():
    rng = np.random.RandomState(1)
    x = rng.standard_normal((1, 2, 5, 6))
    for kw in (dict(padding="same", padding_mode="reflect", kernel_size=(3, 4)),
               dict(padding=(1, 2), padding_mode="circular", kernel_size=3)):
        outs = []
        for lib in (tapegrad, torch):
            conv = lib.nn.Conv2d(2, 2, bias=False, **kw).double()
            with lib.no_grad():
                conv.weight.copy_(lib.tensor(np.linspace(-1, 1, conv.weight.numel()).reshape(conv.weight.shape)))
            outs.append(conv(lib.tensor(x)).detach().numpy())
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-12)


def test_conv_pickled_without_the_attribute_regains_it():
    conv = nn.Conv2d(1, 1, 3, padding=(1, 2), padding_mode="reflect")
    del conv.__dict__["_reversed_padding_repeated_twice"]
    again = pickle.loads(pickle.dumps(conv))
    assert again._reversed_padding_repeated_twice == (2, 2, 1, 1)
    assert again(tapegrad.ones(1, 1, 4, 4)).shape == (1, 1, 4, 6)


def test_optimizer_dict_lists_hook_tables_before_state():
    def keys(lib, cls):
        opt = getattr(lib.optim, cls)([lib.nn.Parameter(lib.zeros(2))], lr=0.1)
        return [k for k in vars(opt) if k in ("defaults", "state", "param_groups")
                or k.startswith("_optimizer_")]
    for cls in ("SGD", "Adam", "AdamW", "RMSprop"):
        assert keys(tapegrad, cls) == keys(torch, cls)


_NAN = float("nan")


@pytest.mark.parametrize("inp, tgt", [
    ([0.5, 0.5], [0.0, 2.0]),          # target above 1: was a silent loss value
    ([0.5, 0.5], [-0.5, 1.0]),
    ([0.5, 0.5], [_NAN, 0.0]),
    ([0.5, 0.5], [1.0000001, 0.0]),
    ([1.5, 0.5], [0.0, 2.0]),          # first bad element has the bad input
    ([0.5, 1.5], [2.0, 0.0]),          # first bad element has the bad target
    ([0.5, 0.5], [-0.0, 1.0]),         # in range
])
def test_binary_cross_entropy_checks_target_range(inp, tgt):
    def run(lib, functional):
        try:
            return functional.binary_cross_entropy(lib.tensor(inp), lib.tensor(tgt)).item()
        except RuntimeError as e:
            return str(e)
    got, want = run(tapegrad, F), run(torch, torch.nn.functional)
    if isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-6)
    else:
        assert got == want


def test_bce_loss_module_with_weight_checks_target_range():
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        nn.BCELoss(weight=tapegrad.ones(2))(tapegrad.tensor([0.2, 0.3], requires_grad=True),
                                            tapegrad.tensor([1.0, -1.0]))


def test_distribution_mean_and_variance_refusals_are_bare_as_pytorchs():
    # A tanh-squashed policy (CS285's SAC) has no closed-form mean: PyTorch raises a bare
    # NotImplementedError for mean/variance, and names the class only for mode.
    def refusals(lib):
        d = lib.distributions
        squashed = d.Independent(d.TransformedDistribution(d.Normal(lib.zeros(2), lib.ones(2)),
                                                           [d.TanhTransform(cache_size=1)]), 1)
        out = []
        for attr in ("mean", "variance", "stddev", "mode"):
            try:
                getattr(squashed, attr)
                out.append(None)
            except NotImplementedError as e:
                out.append(str(e).replace("torch.", "").replace("tapegrad.", ""))
        return out
    assert refusals(tapegrad) == refusals(torch)
