"""nn.utils' batch-norm folding (fuse_conv_bn_eval/weights, fuse_linear_bn_eval/weights),
skip_init, and the deprecated clip_grad_norm and stateless.functional_call, against torch."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _conv_bn(lib, transpose=False, affine=True, conv_bias=True):
    rng = np.random.default_rng(0)
    conv = (lib.nn.ConvTranspose2d(4, 3, 3, bias=conv_bias) if transpose
            else lib.nn.Conv2d(3, 4, 3, bias=conv_bias))
    bn = lib.nn.BatchNorm2d(3 if transpose else 4, affine=affine)
    with lib.no_grad():
        conv.weight.copy_(lib.tensor(rng.standard_normal(tuple(conv.weight.shape))))
        if conv_bias:
            conv.bias.copy_(lib.tensor(rng.standard_normal(tuple(conv.bias.shape))))
        n = bn.num_features
        bn.running_mean.copy_(lib.tensor(rng.standard_normal(n)))
        bn.running_var.copy_(lib.tensor(rng.random(n) + 0.5))
        if affine:
            bn.weight.copy_(lib.tensor(rng.standard_normal(n)))
            bn.bias.copy_(lib.tensor(rng.standard_normal(n)))
    return conv, bn


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("conv_bias", [True, False])
def test_fuse_conv_bn_eval_as_torch(transpose, affine, conv_bias):
    x = np.random.default_rng(1).standard_normal((2, 4 if transpose else 3, 5, 5))
    results = []
    for lib in (tg, torch):
        conv, bn = _conv_bn(lib, transpose, affine, conv_bias)
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            lib.nn.utils.fuse_conv_bn_eval(conv, bn, transpose)
        conv.eval()
        bn.eval()
        fused = lib.nn.utils.fuse_conv_bn_eval(conv, bn, transpose)
        assert fused is not conv and type(fused) is type(conv)
        xt = lib.tensor(x, dtype=lib.float32)
        np.testing.assert_allclose(fused(xt).detach().numpy(), bn(conv(xt)).detach().numpy(),
                                   rtol=1e-4, atol=1e-5)
        results.append((fused.weight.detach().numpy(), fused.bias.detach().numpy(),
                        type(fused.weight).__name__, fused.bias.requires_grad))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6, atol=1e-7)
    assert results[0][2:] == results[1][2:]


def test_fuse_linear_bn_eval_as_torch():
    rng = np.random.default_rng(2)
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    x = rng.standard_normal((5, 3))
    mean, var = rng.standard_normal(4), rng.random(4) + 0.5
    outs = []
    for lib in (tg, torch):
        lin = lib.nn.Linear(3, 4).eval()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w))
            lin.bias.copy_(lib.tensor(b))
        with pytest.raises(AssertionError, match="linear.out_features=4 and bn.num_features=5"):
            lib.nn.utils.fuse_linear_bn_eval(lin, lib.nn.BatchNorm1d(5).eval())
        bn = lib.nn.BatchNorm1d(4).eval()
        with lib.no_grad():
            bn.running_mean.copy_(lib.tensor(mean))
            bn.running_var.copy_(lib.tensor(var))
        fused = lib.nn.utils.fuse_linear_bn_eval(lin, bn)
        xt = lib.tensor(x, dtype=lib.float32)
        outs.append(fused(xt).detach().numpy())
        np.testing.assert_allclose(outs[-1], bn(lin(xt)).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        with pytest.raises(TypeError):      # PyTorch's linear folding needs gamma
            lib.nn.utils.fuse_linear_bn_eval(lin, lib.nn.BatchNorm1d(4, affine=False).eval())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)


def test_skip_init_and_deprecated_aliases():
    m = tg.nn.utils.skip_init(tg.nn.Linear, 6, 1)
    assert type(m) is tg.nn.Linear and tuple(m.weight.shape) == (1, 6)
    assert m.weight.device.type == "cpu" and m.weight.requires_grad
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
            lib.nn.utils.skip_init(lib.nn.ReLU)
        with pytest.raises(RuntimeError, match="Expected a Module"):
            lib.nn.utils.skip_init(int)
    results = []
    for lib in (tg, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p = lib.nn.Parameter(lib.ones(3))
            p.grad = lib.ones(3) * 2
            norm = lib.nn.utils.clip_grad_norm(p, 1.0)
            m = lib.nn.Linear(2, 1)
            out = lib.nn.utils.stateless.functional_call(
                m, {"weight": lib.ones(1, 2), "bias": lib.zeros(1)}, (lib.ones(1, 2),))
        results.append((round(norm.item(), 5), p.grad.numpy().round(5).tolist(), out.item(),
                        [(w.category, str(w.message), w.filename == __file__) for w in caught]))
    assert results[0] == results[1]
