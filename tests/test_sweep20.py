"""Cases from a differential sweep of tapegrad.nn against PyTorch's own module test database
(common_modules.module_db), written out explicitly: each one failed before its fix and is
checked against torch here."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _pair(shape, seed=0, dtype="float64", requires_grad=True):
    """The same random values as a torch tensor and a tapegrad tensor."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (torch.tensor(a, requires_grad=requires_grad),
            tg.tensor(a, requires_grad=requires_grad))


def _load_torch_state(mg, mt):
    mg.load_state_dict({k: tg.tensor(v.detach().numpy().copy()) for k, v in mt.state_dict().items()})


def _close(t_value, g_value, rtol=1e-10):
    assert str(t_value.dtype) == str(g_value.dtype)
    assert tuple(t_value.shape) == tuple(g_value.shape)
    np.testing.assert_allclose(g_value.detach().numpy(), t_value.detach().numpy(), rtol=rtol,
                               atol=rtol)


def _outcome(fn):
    try:
        return fn()
    except Exception as e:      # (compared by type and message)
        return type(e).__name__, str(e)


# ---- Lazy convolutions -------------------------------------------------------------------

LAZY_CONVS = ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
              "LazyConvTranspose2d", "LazyConvTranspose3d"]


@pytest.mark.parametrize("name", LAZY_CONVS)
def test_lazy_conv_unbatched_input_reads_channels_from_dim0(name):
    # An unbatched input (C, *spatial) has its channels in dim 0: tapegrad read dim 1 and built
    # a weight of the wrong size, then refused its own first input.
    spatial = int(name[-2])
    shape = (4,) + (5,) * spatial
    xt, xg = _pair(shape)
    mt, mg = getattr(torch.nn, name)(3, 2).double(), getattr(tg.nn, name)(3, 2).double()
    with torch.no_grad():
        mt._infer_parameters(mt, (xt,))
    mg(xg)                                  # materialise, then take torch's values
    _load_torch_state(mg, mt)
    assert mg.in_channels == mt.in_channels == 4
    assert tuple(mg.weight.shape) == tuple(mt.weight.shape)
    ot, og = mt(xt), mg(xg)
    _close(ot, og)
    ot.sum().backward()
    og.sum().backward()
    _close(xt.grad, xg.grad)
    _close(mt.weight.grad, mg.weight.grad)


@pytest.mark.parametrize("name", LAZY_CONVS + ["LazyLinear", "LazyBatchNorm2d",
                                               "LazyInstanceNorm2d"])
def test_lazy_module_materialises_in_the_dtype_to_gave_it(name):
    # m.to(float64) before the first forward: the placeholders took float64 but the real
    # parameters were built float32, so the first float64 forward raised a dtype mismatch.
    shape = (2, 4) if name == "LazyLinear" else (2, 4) + (5,) * (int(name[-2]) if name[-2].isdigit() else 2)
    args = (3,) if name == "LazyLinear" else () if "Norm" in name else (3, 2)
    results = []
    for lib in (torch, tg):
        m = getattr(lib.nn, name)(*args).to(lib.float64)
        out = m(lib.ones(*shape, dtype=lib.float64))
        results.append((str(out.dtype), tuple(out.shape),
                        [(n, str(p.dtype)) for n, p in m.state_dict().items()]))
    assert results[0] == results[1]


def test_lazy_module_dtype_argument_reaches_placeholders():
    for lib in (torch, tg):
        assert lib.nn.LazyLinear(3, dtype=lib.float64).weight.dtype == lib.float64
        assert lib.nn.UninitializedParameter(dtype=lib.float64).dtype == lib.float64


def test_lazy_conv_input_of_wrong_rank_refused_as_torch():
    got = [_outcome(lambda lib=lib: lib.nn.LazyConv2d(5, 3)(lib.ones(4, 6))) for lib in (torch, tg)]
    assert got[0] == got[1]
    assert got[0][0] == "RuntimeError"


# ---- GaussianNLLLoss ---------------------------------------------------------------------

@pytest.mark.parametrize("var_shape", [(1, 3), (4, 1), (4,), (4, 3), (1, 1), (2, 3), (3,)])
def test_gaussian_nll_loss_homoscedastic_var_along_any_dim(var_shape):
    # A var of size 1 in any one dim (here (1, 3) against input (4, 3)) is PyTorch's
    # homoscedastic case; tapegrad accepted only the last dim and raised ValueError.
    xt, xg = _pair((4, 3), 0)
    yt, yg = _pair((4, 3), 1, requires_grad=False)
    v = np.random.default_rng(2).random(var_shape) + 0.1
    vt, vg = torch.tensor(v, requires_grad=True), tg.tensor(v, requires_grad=True)
    got_t = _outcome(lambda: torch.nn.GaussianNLLLoss()(xt, yt, vt))
    got_g = _outcome(lambda: tg.nn.GaussianNLLLoss()(xg, yg, vg))
    if isinstance(got_t, tuple):
        assert got_g == got_t
        return
    _close(got_t, got_g)
    got_t.backward()
    got_g.backward()
    _close(xt.grad, xg.grad)
    _close(vt.grad, vg.grad)


# ---- Constructor and argument checks from module_error_inputs ----------------------------

@pytest.mark.parametrize("delta", [1.0 + 0.0j, "1"])
def test_huber_loss_refuses_a_non_number_delta(delta):
    got = [_outcome(lambda lib=lib: lib.nn.HuberLoss(delta=delta)) for lib in (torch, tg)]
    assert got[0] == got[1]
    assert got[0][0] == "TypeError"


@pytest.mark.parametrize("name,shape", [("BatchNorm1d", (2, 10)), ("BatchNorm2d", (2, 10, 5, 5)),
                                        ("BatchNorm3d", (2, 10, 4, 4, 4))])
@pytest.mark.parametrize("eps,training", [(0.0, True), (-1.0, True), (-1.0, False),
                                          (0.0, False)])
def test_batch_norm_refuses_eps_that_would_give_inf_or_nan(name, shape, eps, training):
    # tapegrad computed with eps=0 / eps<0 and returned inf or nan silently.
    got = []
    for lib in (torch, tg):
        m = getattr(lib.nn, name)(10, eps=eps).train(training)
        x = lib.ones(*shape)
        got.append(_outcome(lambda: tuple(m(x).shape)))
    assert got[0] == got[1]


def test_functional_batch_norm_eps_checks():
    for training, eps in ((True, 0.0), (False, -0.5)):
        got = [_outcome(lambda lib=lib: lib.nn.functional.batch_norm(
            lib.ones(3, 2), lib.zeros(2), lib.ones(2), training=training, eps=eps))
            for lib in (torch, tg)]
        assert got[0] == got[1]
        assert got[0][0] == "ValueError"


# ---- Unflatten ---------------------------------------------------------------------------

@pytest.mark.parametrize("args,shape", [((1, (2, 2)), (2, 5)), ((3, (2, 3)), (2, 6)),
                                        ((1, (-1, 2)), (2, 6)), ((-1, [2, 3]), (2, 6))])
def test_unflatten_module_checks_as_tensor_unflatten(args, shape):
    # The module reshaped the whole tensor: a bad size or dim raised reshape's error (a
    # RuntimeError about the total size, where PyTorch raises IndexError for the dim).
    got = []
    for lib in (torch, tg):
        got.append(_outcome(lambda lib=lib: tuple(lib.nn.Unflatten(*args)(lib.ones(*shape)).shape)))
    assert got[0] == got[1]


# ---- Bilinear ----------------------------------------------------------------------------

BILINEAR_CASES = [
    ((5, 2), (5, 3), (4, 2, 3), (1,)),       # a one-element bias had broadcast silently
    ((5, 2), (5, 3), (4, 2, 3), (2, 4)),
    ((5, 2), (5, 3), (4, 2, 3), (4,)),
    ((5, 9), (4, 3), (4, 2, 3), None),       # batch dims: PyTorch names the dim
    ((2, 5, 2), (2, 4, 3), (4, 2, 3), None),
    ((5, 9), (3,), (4, 2, 3), None),         # ranks differ: checked before the sizes
    ((5, 2), (5, 3), (4, 2), None),          # a 2-D weight: IndexError reading its dim 2
    ((2,), (3,), (4, 2, 3), (4,)),
]


@pytest.mark.parametrize("s1,s2,sw,sb", BILINEAR_CASES)
def test_bilinear_checks_in_torch_order(s1, s2, sw, sb):
    got = []
    for lib in (torch, tg):
        bias = None if sb is None else lib.ones(*sb)
        got.append(_outcome(lambda lib=lib, bias=bias: tuple(lib.nn.functional.bilinear(
            lib.ones(*s1), lib.ones(*s2), lib.ones(*sw), bias).shape)))
    assert got[0] == got[1]
