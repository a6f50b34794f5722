"""Idioms of older public tutorials that must run unchanged (issue 15, third proxy corpus:
yunjey/pytorch-tutorial, MorvanZhou/PyTorch-Tutorial, hunkim/PyTorchZeroToAll,
vinhkhuc/PyTorch-Mini-Tutorials): plain attributes set before Module.__init__, the legacy
size_average / reduce flags on loss modules, reduction='elementwise_mean'."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn
import tapegrad.nn.functional as F


# -- attributes assigned before super().__init__() ---------------------------------------------

def _early_assigning_module(lib, value):
    class Encoder(lib.nn.Module):
        def __init__(self):
            self.hidden_size = value        # before super().__init__(), as hunkim's seq2seq
            super().__init__()
            self.linear = lib.nn.Linear(2, 3)

        def forward(self, x):
            return self.linear(x)

    return Encoder()


def test_plain_attribute_before_module_init_is_kept():
    model = _early_assigning_module(tg, 100)
    assert model.hidden_size == 100
    assert [name for name, _ in model.named_parameters()] == ["linear.weight", "linear.bias"]
    assert model(tg.ones(1, 2)).shape == (1, 3)


def test_attributes_before_module_init_match_torch(torch):
    for value_of in (lambda lib: 7, lambda lib: lib.ones(2)):
        ours, theirs = _early_assigning_module(tg, value_of(tg)), _early_assigning_module(torch, value_of(torch))
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert type(ours.hidden_size).__name__ == type(theirs.hidden_size).__name__
    for lib in (tg, torch):
        with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
            _early_assigning_module(lib, lib.nn.Parameter(lib.ones(2)))
        with pytest.raises(AttributeError, match="cannot assign module before Module.__init__"):
            _early_assigning_module(lib, lib.nn.Linear(1, 1))


# -- loss modules: PyTorch's constructor signatures, legacy flags ------------------------------

LEGACY_FLAG_CASES = [
    ("MSELoss", (), {"size_average": False}, "sum"),
    ("L1Loss", (), {"reduce": False}, "none"),
    ("SmoothL1Loss", (), {"size_average": True, "reduce": True}, "mean"),
    ("NLLLoss", (None, False), {}, "sum"),
    ("CrossEntropyLoss", (), {"reduce": False}, "none"),
    ("CrossEntropyLoss", (None, None, 3), {}, "mean"),
    ("BCELoss", (None, False), {}, "sum"),
    ("BCEWithLogitsLoss", (), {"size_average": False}, "sum"),
    ("KLDivLoss", (), {"size_average": False}, "sum"),
]


@pytest.mark.parametrize("name,args,kwargs,expected", LEGACY_FLAG_CASES)
def test_legacy_size_average_and_reduce_fold_into_reduction(name, args, kwargs, expected):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = getattr(nn, name)(*args, **kwargs)
    assert loss.reduction == expected
    legacy = bool(kwargs) or (len(args) > 1 and args[1] is not None)
    assert any("size_average and reduce args will be deprecated" in str(w.message)
               for w in caught) == legacy
    if name == "CrossEntropyLoss" and args:
        assert loss.ignore_index == 3


@pytest.mark.parametrize("name,args,kwargs,expected", LEGACY_FLAG_CASES)
def test_legacy_flags_match_torch(torch, name, args, kwargs, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert ours.reduction == theirs.reduction == expected


def test_summed_mse_loss_module_value():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        loss = nn.MSELoss(size_average=False)
    assert loss(tg.tensor([1.0, 2.0]), tg.tensor([0.0, 0.0])).item() == 5.0


def test_invalid_reduction_is_refused_when_the_loss_is_called(torch):
    for lib in (tg, torch):
        loss = lib.nn.MSELoss(reduction="foo")          # constructing does not check
        assert loss.reduction == "foo"
        with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
            loss(lib.ones(2), lib.zeros(2))


# -- reduction='elementwise_mean' ---------------------------------------------------------------

def _loss_calls(lib):
    ones, zeros = lib.ones(2), lib.zeros(2)
    rows = lib.tensor([[0.5, 1.0, -1.0], [2.0, 0.0, 1.0]])
    labels = lib.tensor([0, 2])
    half = lib.full((2,), 0.25)
    return {
        "cross_entropy": (lib.nn.functional.cross_entropy, (rows, labels)),
        "nll_loss": (lib.nn.functional.nll_loss, (rows, labels)),
        "mse_loss": (lib.nn.functional.mse_loss, (ones, zeros)),
        "l1_loss": (lib.nn.functional.l1_loss, (ones, zeros)),
        "smooth_l1_loss": (lib.nn.functional.smooth_l1_loss, (ones, zeros)),
        "huber_loss": (lib.nn.functional.huber_loss, (ones, zeros)),
        "binary_cross_entropy": (lib.nn.functional.binary_cross_entropy, (half, zeros)),
        "binary_cross_entropy_with_logits": (lib.nn.functional.binary_cross_entropy_with_logits, (ones, zeros)),
        "kl_div": (lib.nn.functional.kl_div, (half, half)),
        "soft_margin_loss": (lib.nn.functional.soft_margin_loss, (rows, lib.ones(2, 3))),
        "margin_ranking_loss": (lib.nn.functional.margin_ranking_loss, (ones, zeros, -ones)),
        "hinge_embedding_loss": (lib.nn.functional.hinge_embedding_loss, (half, -ones)),
        "multi_margin_loss": (lib.nn.functional.multi_margin_loss, (rows, labels)),
        "cosine_embedding_loss": (lib.nn.functional.cosine_embedding_loss, (rows, rows.flip(0), ones)),
        "triplet_margin_loss": (lib.nn.functional.triplet_margin_loss, (rows, rows, rows.flip(0))),
    }


@pytest.mark.parametrize("name", sorted(_loss_calls(tg)))
def test_elementwise_mean_is_mean_with_a_deprecation_warning(name):
    fn, args = _loss_calls(tg)[name]
    with pytest.warns(UserWarning, match="reduction='elementwise_mean' is deprecated. Please use "
                                          "reduction='mean' instead"):
        legacy = fn(*args, reduction="elementwise_mean")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # kl_div's own warning about 'mean'
        mean = fn(*args, reduction="mean")
    assert legacy.item() == pytest.approx(mean.item())


@pytest.mark.parametrize("name", sorted(_loss_calls(tg)))
def test_elementwise_mean_matches_torch(torch, name):
    ours_fn, ours_args = _loss_calls(tg)[name]
    theirs_fn, theirs_args = _loss_calls(torch)[name]
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = ours_fn(*ours_args, reduction="elementwise_mean")
    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = theirs_fn(*theirs_args, reduction="elementwise_mean")
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-6)
    assert sorted(str(w.message)[:30] for w in ours_warned) == \
        sorted(str(w.message)[:30] for w in theirs_warned)


def test_elementwise_mean_positional_and_through_a_module():
    with pytest.warns(UserWarning, match="elementwise_mean"):
        assert F.mse_loss(tg.ones(2), tg.zeros(2), None, None, "elementwise_mean").item() == 1.0
    loss = nn.CrossEntropyLoss(reduction="elementwise_mean")
    assert loss.reduction == "elementwise_mean"     # stored as given, resolved when called
    logits, labels = tg.tensor([[2.0, 0.0], [0.0, 2.0]]), tg.tensor([0, 0])
    with pytest.warns(UserWarning, match="elementwise_mean"):
        value = loss(logits, labels)
    assert value.item() == pytest.approx(F.cross_entropy(logits, labels).item())


def test_losses_refusing_elementwise_mean_match_torch(torch):
    for lib in (tg, torch):
        a = lib.ones(2, 3)
        with pytest.raises(ValueError, match="elementwise_mean is not a valid value for reduction"):
            lib.nn.functional.poisson_nll_loss(a, a, reduction="elementwise_mean")
        with pytest.raises(ValueError, match="elementwise_mean is not valid"):
            lib.nn.functional.gaussian_nll_loss(a, a, a, reduction="elementwise_mean")
        with pytest.raises(ValueError, match="elementwise_mean is not valid"):
            lib.nn.functional.multilabel_soft_margin_loss(a, a, reduction="elementwise_mean")


def test_elementwise_mean_keeps_the_gradient(gradcheck):
    x = np.array([[0.3, -1.2, 0.5], [1.1, 0.2, -0.4]])
    labels = tg.tensor([2, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradcheck(lambda t: F.cross_entropy(t, labels, reduction="elementwise_mean"), x)


# -- inplace=True on an activation inside a graph ----------------------------------------------

INPLACE_CASES = [
    ("relu", lambda F, y: F.relu(y, inplace=True)),
    ("relu_", lambda F, y: F.relu_(y)),
    ("leaky_relu", lambda F, y: F.leaky_relu(y, 0.1, True)),
    ("elu", lambda F, y: F.elu(y, inplace=True)),
    ("silu", lambda F, y: F.silu(y, inplace=True)),
    ("selu", lambda F, y: F.selu(y, inplace=True)),
    ("mish", lambda F, y: F.mish(y, inplace=True)),
    ("hardswish", lambda F, y: F.hardswish(y, inplace=True)),
    ("rrelu_eval", lambda F, y: F.rrelu(y, training=False, inplace=True)),
]
_X = [[-1.5, 0.5, 2.0], [0.3, -0.2, 7.0]]


def _through_inplace(lib, apply, dtype="float32"):
    x = lib.tensor(_X, dtype=getattr(lib, dtype), requires_grad=True)
    y = x * 1.0
    out = apply(lib.nn.functional, y)
    weights = lib.arange(6.0, dtype=getattr(lib, dtype)).reshape(2, 3)
    (y * weights).sum().backward()          # y's later use sees the activated values
    return out is y, y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name,apply", INPLACE_CASES, ids=[c[0] for c in INPLACE_CASES])
def test_inplace_activation_in_graph_matches_torch(torch, name, apply):
    same, values, grad = _through_inplace(tg, apply)
    t_same, t_values, t_grad = _through_inplace(torch, apply)
    assert same and t_same
    np.testing.assert_allclose(values, t_values, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad, t_grad, rtol=1e-5, atol=1e-6)


def test_inplace_relu_in_graph_values_and_gradient():
    same, values, grad = _through_inplace(tg, INPLACE_CASES[0][1])
    assert same
    np.testing.assert_array_equal(values, np.array([[0.0, 0.5, 2.0], [0.3, 0.0, 7.0]], np.float32))
    np.testing.assert_array_equal(grad, [[0.0, 1.0, 2.0], [3.0, 0.0, 5.0]])


@pytest.mark.parametrize("name,apply", INPLACE_CASES[:6], ids=[c[0] for c in INPLACE_CASES[:6]])
def test_inplace_activation_gradient_is_finite_difference_exact(gradcheck, name, apply):
    def fn(x):
        y = x * 1.0
        apply(F, y)
        return y * y                     # uses the activated values through y itself
    gradcheck(fn, np.array(_X) + 0.05)


def test_inplace_activation_modules_write_into_their_input(torch):
    for lib in (tg, torch):
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(inplace=True),
                                  lib.nn.Linear(4, 3), lib.nn.ELU(inplace=True),
                                  lib.nn.Linear(3, 3), lib.nn.Hardswish(inplace=True),
                                  lib.nn.Linear(3, 2), lib.nn.Mish(inplace=True))
        x = lib.ones(2, 3)
        hidden = model[0](x)
        assert model[1](hidden) is hidden and hidden.min().item() >= 0.0
        model(x).sum().backward()
        assert model[0].weight.grad is not None
    assert repr(nn.Hardswish(inplace=True)) == repr(torch.nn.Hardswish(inplace=True))
    assert repr(nn.Mish(inplace=True)) == repr(torch.nn.Mish(inplace=True))


def test_inplace_activation_makes_its_input_the_output():
    # The input adopts the activation's record (as sqrt_ and the other in-place unary ops do):
    # its grad_fn is the activation's, and a later in-place write into the output the
    # activation saved is caught at backward, as PyTorch catches it.  Through a copy_ record the
    # write went unnoticed.
    x = tg.tensor([-0.5, 0.8], requires_grad=True)
    y = x * 2
    F.relu(y, inplace=True)
    assert type(y.grad_fn).__name__ == "ReluBackward0"
    F.elu(y, inplace=True)          # overwrites the output relu saved
    assert type(y.grad_fn).__name__ == "EluBackward1"      # (PyTorch's in-place elu node)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_activation_on_a_leaf_that_requires_grad_is_refused(torch):
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation"):
            lib.nn.functional.relu(lib.ones(2, requires_grad=True), inplace=True)


# -- deprecated upsampling spellings, the remaining trailing-underscore activations -----------

_IMAGE = np.arange(6.0, dtype=np.float32).reshape(1, 1, 2, 3)


def test_upsampling_aliases_values():
    x = tg.tensor(_IMAGE)
    with pytest.warns(UserWarning, match="`nn.functional.upsample_bilinear` is deprecated"):
        corners = F.upsample_bilinear(x, size=(3, 5))
    np.testing.assert_allclose(corners[0, 0].numpy(), [[0.0, 0.5, 1.0, 1.5, 2.0],
                                                      [1.5, 2.0, 2.5, 3.0, 3.5],
                                                      [3.0, 3.5, 4.0, 4.5, 5.0]], rtol=1e-6)
    with pytest.warns(UserWarning, match="`nn.functional.upsample_nearest` is deprecated"):
        assert F.upsample_nearest(x, scale_factor=2)[0, 0, 1].tolist() == [0, 0, 1, 1, 2, 2]
    np.testing.assert_array_equal(nn.UpsamplingBilinear2d(size=(3, 5))(x).numpy(), corners.numpy())
    assert repr(nn.UpsamplingNearest2d(scale_factor=2)) == \
        "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.nn.functional.upsample(x, scale_factor=2),
    lambda lib, x: lib.nn.functional.upsample(x, size=(3, 4), mode="bilinear", align_corners=False),
    lambda lib, x: lib.nn.functional.upsample_nearest(x, size=3),
    lambda lib, x: lib.nn.functional.upsample_bilinear(x, scale_factor=2),
    lambda lib, x: lib.nn.UpsamplingBilinear2d(scale_factor=2)(x),
    lambda lib, x: lib.nn.UpsamplingNearest2d(size=(3, 5))(x),
])
def test_upsampling_aliases_match_torch(torch, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = call(tg, tg.tensor(_IMAGE)), call(torch, torch.tensor(_IMAGE))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


def test_upsample_bilinear_gradient(gradcheck):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradcheck(lambda t: F.upsample_bilinear(t, scale_factor=2), _IMAGE.astype(np.float64))


UNDERSCORE_CASES = [
    ("selu_", lambda F_, y: F_.selu_(y)),
    ("celu_", lambda F_, y: F_.celu_(y, 0.5)),
    ("threshold_", lambda F_, y: F_.threshold_(y, 0.1, 20.0)),
    ("rrelu_eval", lambda F_, y: F_.rrelu_(y, 0.1, 0.3)),
]


@pytest.mark.parametrize("name,apply", UNDERSCORE_CASES, ids=[c[0] for c in UNDERSCORE_CASES])
def test_underscore_activations_match_torch(torch, name, apply):
    same, values, grad = _through_inplace(tg, apply)
    t_same, t_values, t_grad = _through_inplace(torch, apply)
    assert same and t_same
    np.testing.assert_allclose(values, t_values, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad, t_grad, rtol=1e-5, atol=1e-6)


def test_threshold_underscore_values():
    x = tg.tensor([-1.0, 0.05, 2.0])
    assert F.threshold_(x, 0.1, 20.0) is x
    assert x.tolist() == [20.0, 20.0, 2.0]


# -- optim.Rprop --------------------------------------------------------------------------------

def _rprop_run(lib, dtype, **kwargs):
    w = lib.nn.Parameter(lib.tensor([[0.5, -1.0, 2.0], [0.1, 0.0, -3.0]], dtype=dtype))
    opt = lib.optim.Rprop([w], **kwargs)
    target = lib.tensor([1.0, 0.5, -1.0], dtype=dtype)
    scale = lib.tensor([1.0, 2.0, 3.0], dtype=dtype)
    for _ in range(12):
        opt.zero_grad()
        loss = ((w - target) ** 2 * scale).sum() + (w ** 3).sum() * 0.1
        loss.backward()
        opt.step()
    return w.detach().numpy(), opt.state[w]["step_size"].numpy(), opt.state[w]["step"].item()


@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.1, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2)},
                                    {"maximize": True}])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rprop_matches_torch_bit_for_bit(torch, kwargs, dtype):
    ours = _rprop_run(tg, getattr(tg, dtype), **kwargs)
    theirs = _rprop_run(torch, getattr(torch, dtype), **kwargs)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert ours[2] == theirs[2] == 12


def test_rprop_steps_and_errors():
    w = tg.nn.Parameter(tg.tensor([1.0, -2.0]))
    opt = tg.optim.Rprop([w])
    for _ in range(2):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
    # step 1: the step size is lr; step 2: the sign held, so it grew by etaplus (1.2)
    np.testing.assert_allclose(w.detach().numpy(), [1.0 - 0.01 - 0.012, -2.0 + 0.01 + 0.012],
                               rtol=1e-6)
    with pytest.raises(ValueError, match="Invalid eta values: 1.2, 0.5"):
        tg.optim.Rprop([w], etas=(1.2, 0.5))
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        tg.optim.Rprop([w], lr=-1)
    assert "Rprop (" in repr(opt) and "etas: (0.5, 1.2)" in repr(opt)


# -- F.gumbel_softmax ---------------------------------------------------------------------------

def test_gumbel_softmax_samples_soft_and_hard(torch):
    for lib in (tg, torch):
        lib.manual_seed(0)
        logits = lib.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]], requires_grad=True)
        soft = lib.nn.functional.gumbel_softmax(logits, tau=0.5)
        assert soft.shape == (2, 3) and soft.dtype == lib.float32
        np.testing.assert_allclose(soft.detach().sum(-1).numpy(), [1.0, 1.0], rtol=1e-6)
        hard = lib.nn.functional.gumbel_softmax(logits, hard=True, dim=0)
        assert set(hard.detach().flatten().tolist()) <= {0.0, 1.0}
        assert hard.detach().sum(0).tolist() == [1.0, 1.0, 1.0]
        (hard * lib.tensor([[1.0], [2.0]])).sum().backward()      # straight-through gradient
        assert logits.grad.abs().sum().item() > 0
        with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
            lib.nn.functional.gumbel_softmax(logits, eps=1e-5)


def test_gumbel_softmax_hard_frequencies_follow_softmax():
    tg.manual_seed(1)
    logits = tg.tensor([1.0, 2.0, 0.5])
    freq = F.gumbel_softmax(logits.expand(20000, 3), hard=True).mean(0)
    np.testing.assert_allclose(freq.numpy(), tg.softmax(logits, 0).numpy(), atol=0.02)


def test_gumbel_softmax_gradient(gradcheck):
    def fn(t):
        tg.manual_seed(3)                  # the same noise at every evaluation
        return F.gumbel_softmax(t, tau=0.7) * tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    gradcheck(fn, np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]]))
