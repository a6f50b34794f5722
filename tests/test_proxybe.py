"""Regression tests from the small-LLM proxy task (session 32, proxybe): hand-written
quantisation-aware training (torch.fake_quantize_per_tensor_affine /
fake_quantize_per_channel_affine) and error messages met by Llama-style code."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

# float32 values chosen to hit the kernels' rounding corners: 0.05 / 0.1 is a float32 tie
# (rounded half to even to 0), 12.8 / 0.1 + 3 is out of range, NaN goes to quant_min
VALUES = [-1.3, -0.25, 0.05, 0.15, 0.25, 0.35, 12.8, 13.0, 20.0, float("nan"), float("inf"),
          -float("inf"), 6e4]


def _both(values, dtype="float32", requires_grad=False):
    a = np.array(values, dtype=dtype)
    return (tapegrad.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("scale,zero_point,qmin,qmax", [(0.1, 3, -128, 127), (0.3, 5, 0, 15),
                                                        (0.0, 0, 0, 255), (-0.1, 0, 0, 255)])
def test_fake_quantize_per_tensor_values_and_straight_through_grad(dtype, scale, zero_point,
                                                                     qmin, qmax):
    a, b = _both(VALUES, dtype, requires_grad=True)
    ya = tapegrad.fake_quantize_per_tensor_affine(a, scale, zero_point, qmin, qmax)
    yb = torch.fake_quantize_per_tensor_affine(b, scale, zero_point, qmin, qmax)
    _same(ya, yb)
    assert type(ya.grad_fn).__name__ == "FakeQuantizePerTensorAffineCachemaskBackward0"
    weights = np.arange(len(VALUES), dtype=dtype)
    (ya * tapegrad.tensor(weights)).sum().backward()
    (yb * torch.tensor(weights)).sum().backward()
    _same(a.grad, b.grad)


def test_fake_quantize_per_tensor_tensor_qparams():
    a, b = _both(VALUES, requires_grad=True)
    # a float tensor zero point is read as an int (1.6 -> 1)
    ya = tapegrad.fake_quantize_per_tensor_affine(a, tapegrad.tensor(0.3), tapegrad.tensor(1.6),
                                                  -128, 127)
    yb = torch.fake_quantize_per_tensor_affine(b, torch.tensor(0.3), torch.tensor(1.6), -128, 127)
    _same(ya, yb)
    assert type(ya.grad_fn).__name__ == type(yb.grad_fn).__name__ == \
        "FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0"
    # one 0-d tensor with a Python number is the (float, int) overload
    ya = tapegrad.fake_quantize_per_tensor_affine(a, 0.1, tapegrad.tensor(2), -128, 127)
    yb = torch.fake_quantize_per_tensor_affine(b, 0.1, torch.tensor(2), -128, 127)
    _same(ya, yb)
    assert type(ya.grad_fn).__name__ == "FakeQuantizePerTensorAffineCachemaskBackward0"


@pytest.mark.parametrize("call,error,match", [
    (lambda t, x: t.fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 3), RuntimeError,
     "`quant_min` should be less than or"),
    (lambda t, x: t.fake_quantize_per_tensor_affine(x, 0.1, 200, -128, 127), RuntimeError,
     "`zero_point` must be between `quant_min` and `quant_max`"),
    (lambda t, x: t.fake_quantize_per_tensor_affine(x, 0.1, 0.5, -128, 127), TypeError,
     "invalid combination of arguments"),
    (lambda t, x: t.fake_quantize_per_tensor_affine(x, t.tensor([0.1, 0.2]), 0, -128, 127),
     TypeError, "invalid combination of arguments"),
    (lambda t, x: t.fake_quantize_per_tensor_affine(x, t.tensor([0.1, 0.2]), t.tensor(0), 0, 9),
     RuntimeError, "a Tensor with 2 elements cannot be converted to Scalar"),
    (lambda t, x: t.fake_quantize_per_tensor_affine(x.int(), 0.1, 0, -128, 127),
     NotImplementedError, "not implemented for 'Int'"),
    (lambda t, x: t.fake_quantize_per_tensor_affine(
        x, t.tensor(0.1, requires_grad=True), t.tensor(0), -128, 127), RuntimeError,
     "is not differentiable with respect to argument 'scale'"),
])
def test_fake_quantize_per_tensor_errors(call, error, match):
    a, b = _both([0.5, -1.0])
    with pytest.raises(error, match=match):
        call(torch, b)
    with pytest.raises(error, match=match):
        call(tapegrad, a)


W = [[-1.3, 0.05, 0.15, 13.0], [0.25, -0.35, 2.0, -3.0]]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("zp_dtype,zp", [("int32", [3, -2]), ("float32", [0.5, 1.6]),
                                         ("float16", [0.5, 1.6])])
def test_fake_quantize_per_channel_values_and_grad(dtype, zp_dtype, zp):
    a, b = _both(W, dtype, requires_grad=True)
    scale = np.array([0.1, 0.02], dtype="float32")
    zpa = np.array(zp, dtype=zp_dtype)
    for axis, (xa, xb) in ((0, (a, b)), (1, (a.t(), b.t()))):
        ya = tapegrad.fake_quantize_per_channel_affine(xa, tapegrad.tensor(scale),
                                                       tapegrad.tensor(zpa), axis, -8, 7)
        yb = torch.fake_quantize_per_channel_affine(xb, torch.tensor(scale), torch.tensor(zpa),
                                                    axis, -8, 7)
        _same(ya, yb)
    assert type(ya.grad_fn).__name__ == "FakeQuantizePerChannelAffineCachemaskBackward0"
    weights = np.arange(8, dtype=dtype).reshape(4, 2)
    (ya * tapegrad.tensor(weights)).sum().backward()
    (yb * torch.tensor(weights)).sum().backward()
    _same(a.grad, b.grad)


@pytest.mark.parametrize("args,error,match", [
    (lambda t: (t.tensor([0.1, 0.2], dtype=t.float64), t.tensor([0, 0], dtype=t.int32), 0),
     RuntimeError, "Scale must be Float or BFloat16, found Double"),
    (lambda t: (t.tensor([0.1, 0.2]), t.tensor([0, 0]), 0), RuntimeError,
     "Zero-point must be Int32, Float or Half, found Long"),
    (lambda t: (t.tensor([[0.1], [0.2]]), t.tensor([0, 0], dtype=t.int32), 0), RuntimeError,
     "scale should be a 1-D tensor"),
    (lambda t: (t.tensor([0.1]), t.tensor([0, 0], dtype=t.int32), 0), RuntimeError,
     "scale and zero-point need to have the same dimensions"),
    (lambda t: (t.tensor([0.1, 0.2]), t.tensor([0, 0], dtype=t.int32), 1), RuntimeError,
     "dimensions of scale and zero-point are not consistent with input tensor"),
    (lambda t: (t.tensor([0.1, 0.2]), t.tensor([0, 0], dtype=t.int32), 2), IndexError,
     "Dimension out of range"),
    (lambda t: (t.tensor([0.1, 0.2]), t.tensor([0, 0], dtype=t.int32), -2), RuntimeError,
     "`axis` must be between 0 and number of dimensions of input"),
    (lambda t: (t.tensor([0.1, 0.2]), t.tensor([300, 0], dtype=t.int32), 0), RuntimeError,
     "`zero_point` must be between"),
    (lambda t: (0.1, t.tensor([0, 0], dtype=t.int32), 0), TypeError,
     "argument 'scale' \\(position 2\\) must be Tensor, not float"),
])
def test_fake_quantize_per_channel_errors(args, error, match):
    a, b = _both(W)
    with pytest.raises(error, match=match):
        torch.fake_quantize_per_channel_affine(b, *args(torch), -128, 127)
    with pytest.raises(error, match=match):
        tapegrad.fake_quantize_per_channel_affine(a, *args(tapegrad), -128, 127)


def test_fake_quantize_qat_linear_matches_torch():
    """A QAT-style linear layer (weight fake-quantised per output channel, activations per
    tensor) trained two SGD steps in float64: losses and weights as PyTorch's.  (The gradient is
    the straight-through estimator, not the derivative of the piecewise-constant forward, so a
    finite-difference check does not apply; torch is the reference.)"""
    w0 = np.array([[0.31, -0.42, 0.13], [0.22, 0.57, -0.64]])
    xs = np.array([[1.0, 2.0, -1.0], [0.5, -0.25, 3.0]])
    results = []
    for t in (tapegrad, torch):
        w = t.tensor(w0, requires_grad=True)
        x = t.tensor(xs)
        scale = t.tensor([0.01, 0.02])
        zp = t.tensor([0, 0], dtype=t.int32)
        opt = t.optim.SGD([w], lr=0.1)
        losses = []
        for _ in range(2):
            xq = t.fake_quantize_per_tensor_affine(x, 0.05, 0, -128, 127)
            wq = t.fake_quantize_per_channel_affine(w, scale, zp, 0, -128, 127)
            loss = (xq @ wq.t()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        results.append((losses, w.detach().numpy().copy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_unflatten_error_names_the_wrapped_dim():
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1 \\(8\\)"):
        torch.unflatten(torch.zeros(2, 8), -1, (3, -1))
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1 \\(8\\)"):
        tapegrad.unflatten(tapegrad.zeros(2, 8), -1, (3, -1))


def test_view_as_real_refuses_an_unresolved_conjugate():
    for t in (torch, tapegrad):
        c = t.polar(t.ones(2), t.tensor([0.5, 1.0]))
        with pytest.raises(RuntimeError, match="view_as_real doesn't work on unresolved "
                                               "conjugated tensors"):
            t.view_as_real(c.conj())
    ours = tapegrad.view_as_real(tapegrad.polar(tapegrad.ones(2), tapegrad.tensor([0.5, 1.0]))
                                 .conj().resolve_conj())
    theirs = torch.view_as_real(torch.polar(torch.ones(2), torch.tensor([0.5, 1.0]))
                                .conj().resolve_conj())
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_cuda_matmul_allow_tf32_is_the_float32_matmul_precision():
    for t in (torch, tapegrad):
        saved = t.get_float32_matmul_precision()
        try:
            t.set_float32_matmul_precision("highest")
            assert t.backends.cuda.matmul.allow_tf32 is False
            t.set_float32_matmul_precision("medium")
            assert t.backends.cuda.matmul.allow_tf32 is True
            t.set_float32_matmul_precision("highest")
            t.backends.cuda.matmul.allow_tf32 = True      # nanoGPT's line
            assert t.get_float32_matmul_precision() == "high"
            t.backends.cuda.matmul.allow_tf32 = False
            assert t.get_float32_matmul_precision() == "highest"
        finally:
            t.set_float32_matmul_precision(saved)


def _train_override_models(t):
    """loralib's pattern: a Linear that merges its low-rank update on eval() and unmerges on
    train(); and a block that keeps its BatchNorm in eval mode whatever train() is asked."""
    class MergingLinear(t.nn.Linear):
        def __init__(self):
            super().__init__(3, 2)
            self.delta = t.nn.Parameter(t.full((2, 3), 0.5))
            self.merged = False

        def train(self, mode=True):
            super().train(mode)
            with t.no_grad():
                if not mode and not self.merged:
                    self.weight += self.delta
                    self.merged = True
                elif mode and self.merged:
                    self.weight -= self.delta
                    self.merged = False
            return self

        def forward(self, x):
            w = self.weight if self.merged else self.weight + self.delta
            return t.nn.functional.linear(x, w, self.bias)

    class FrozenBN(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = t.nn.BatchNorm1d(2)

        def train(self, mode=True):
            super().train(mode)
            self.bn.eval()
            return self

        def forward(self, x):
            return self.bn(x)

    return t.nn.Sequential(t.nn.Sequential(MergingLinear()), FrozenBN())


def test_module_eval_and_train_call_each_childs_train_override():
    # SILENT before: model.eval() set .training on every submodule directly, so an overridden
    # train() never ran (no merge; a "frozen" BatchNorm went back to batch statistics)
    for t in (torch, tapegrad):
        model = _train_override_models(t)
        with t.no_grad():
            model[0][0].weight.copy_(t.tensor([[0.1, 0.2, 0.3], [-0.1, 0.0, 0.4]]))
            model[0][0].bias.zero_()
        model.eval()
        assert model[0][0].merged is True
        assert model[0][0].weight.detach().numpy()[0, 0] == pytest.approx(0.6)
        model.train()
        assert model[0][0].merged is False
        assert model[1].training is True and model[1].bn.training is False
        x = t.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 2.0]])
        out = model(x)                    # BatchNorm in eval: running stats (0, 1)
        assert model[1].bn.running_mean.abs().sum().item() == 0.0
        np.testing.assert_allclose(out.detach().numpy(),
                                   (model[0](x) / np.sqrt(1 + 1e-5)).detach().numpy(), rtol=1e-6)


def _cache_module(t):
    """A rotary-cache module keeping its cos table as a plain attribute, converted by an
    overridden _apply (the hook PyTorch's to()/half()/double() run), and an apply() override."""
    class RopeCache(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = t.nn.Linear(2, 2)
            self.cos = t.cos(t.arange(4.0))
            self.visits = 0

        def _apply(self, fn, recurse=True):
            super()._apply(fn, recurse)
            self.cos = fn(self.cos)
            return self

        def apply(self, fn):
            self.visits += 1
            return super().apply(fn)

    return t.nn.Sequential(t.nn.Sequential(RopeCache()))


@pytest.mark.parametrize("convert,dtype", [(lambda m: m.double(), "float64"),
                                           (lambda m: m.half(), "float16"),
                                           (lambda m, **k: m.to(k["t"].float64), "float64")])
def test_module_conversions_run_a_childs_apply_override(convert, dtype):
    # SILENT before: float()/half()/double()/to(dtype) converted parameters and buffers
    # directly, so an overridden _apply never ran (the cache kept its old dtype)
    for t in (torch, tapegrad):
        model = _cache_module(t)
        try:
            convert(model, t=t)
        except TypeError:
            convert(model)
        cache = model[0][0]
        assert str(cache.cos.dtype) == f"torch.{dtype}"
        assert str(cache.proj.weight.dtype) == f"torch.{dtype}"
        model.apply(lambda m: None)
        assert cache.visits == 1
