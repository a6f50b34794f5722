"""nn.AdaptiveLogSoftmaxWithLoss, the lazy transposed convolutions and instance norms,
nn.SyncBatchNorm (no process group: plain batch norm, as PyTorch computes without one) and the
deprecated nn.Container: values, gradients, reprs, state_dict keys and errors against torch;
float64 central differences of the adaptive softmax."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.autograd import gradcheck


def deterministic(lib, model):
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            values = 0.3 * np.sin(1.37 * np.arange(p.numel()) + i)
            p.copy_(lib.tensor(values.reshape(tuple(p.shape)), dtype=p.dtype))
    return model


X = np.linspace(-1, 1, 5 * 8).reshape(5, 8)
TARGET = [0, 3, 9, 1, 7]


def adaptive(lib):
    return deterministic(lib, lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [2, 6],
                                                                div_value=2.0).double())


def test_adaptive_softmax_is_a_distribution_and_differentiable():
    asm = adaptive(tg)
    x = tg.tensor(X, requires_grad=True)
    np.testing.assert_allclose(asm.log_prob(x).exp().sum(1).detach().numpy(), 1.0, rtol=1e-12)
    out = asm(x, tg.tensor(TARGET))
    full = asm.log_prob(x).detach().numpy()
    np.testing.assert_allclose(out.output.detach().numpy(), full[np.arange(5), TARGET],
                               rtol=1e-12)
    assert out.loss.item() == pytest.approx(-full[np.arange(5), TARGET].mean(), rel=1e-12)
    assert gradcheck(lambda a: asm(a, tg.tensor(TARGET)).output, [x])
    # Parameters too: the head and a tail layer, through functional_call.
    from tapegrad.func import functional_call
    names = ["head.weight", "tail.1.0.weight"]
    params = [dict(asm.named_parameters())[n].detach().clone().requires_grad_(True)
              for n in names]
    assert gradcheck(lambda *p: functional_call(asm, dict(zip(names, p)),
                                                (x.detach(), tg.tensor(TARGET))).loss, params)
    np.testing.assert_array_equal(asm.predict(x.detach()).numpy(), full.argmax(1))


def test_adaptive_softmax_parity_with_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        asm = adaptive(lib)
        x = lib.tensor(X, requires_grad=True)
        out = asm(x, lib.tensor(TARGET))
        out.loss.backward()
        single = asm(x[0].detach(), lib.tensor(TARGET[0]))
        results.append([out.output, out.loss, x.grad, asm.head.weight.grad,
                        asm.tail[0][1].weight.grad, asm.log_prob(x), asm.predict(x),
                        single.output, single.loss, repr(asm), type(out).__name__])
    for ours, theirs in zip(*results):
        if isinstance(ours, str):
            assert ours == theirs
        else:
            assert tuple(ours.shape) == tuple(theirs.shape)
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(),
                                       rtol=1e-12, atol=1e-14)


def test_adaptive_softmax_errors():
    asm = adaptive(tg)
    x = tg.tensor(X)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\], but values in "
                       r"range \[0, 10\] were found."):
        asm(x, tg.tensor([0, 1, 10, 2, 3]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        asm(x, tg.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        asm(x[0], tg.tensor([0, 1, 2, 3, 4, 5, 6, 7]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        asm(x, tg.zeros(5, 1, dtype=tg.int64))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 2])
    with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])


@pytest.mark.parametrize("name, shape", [("LazyConvTranspose1d", (2, 4, 5)),
                                         ("LazyConvTranspose2d", (1, 4, 5, 5)),
                                         ("LazyConvTranspose3d", (1, 4, 3, 3, 3))])
def test_lazy_conv_transpose(name, shape):
    m = getattr(nn, name)(6, 3, stride=2, groups=2)
    assert repr(m).startswith(f"{name}(0, 6, kernel_size=")
    y = m(tg.ones(shape))
    assert type(m).__name__ == name.replace("Lazy", "")
    assert tuple(m.weight.shape) == (4, 3) + (3,) * (len(shape) - 2)
    assert m.in_channels == 4 and tuple(y.shape)[:2] == (shape[0], 6)
    torch = pytest.importorskip("torch")
    tm = getattr(torch.nn, name)(6, 3, stride=2, groups=2)
    ty = tm(torch.ones(shape))
    assert repr(m) == repr(tm) and tuple(y.shape) == tuple(ty.shape)
    with tg.no_grad():
        m.weight.copy_(tg.tensor(tm.weight.detach().numpy()))
        m.bias.copy_(tg.tensor(tm.bias.detach().numpy()))
    x = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    np.testing.assert_allclose(m(tg.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, shape", [("LazyInstanceNorm1d", (2, 3, 5)),
                                         ("LazyInstanceNorm2d", (2, 3, 4, 4)),
                                         ("LazyInstanceNorm3d", (2, 3, 2, 2, 2))])
def test_lazy_instance_norm(name, shape):
    torch = pytest.importorskip("torch")
    x = np.linspace(-2, 3, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    m, tm = getattr(nn, name)(), getattr(torch.nn, name)()
    assert repr(m) == repr(tm)
    y, ty = m(tg.tensor(x)), tm(torch.tensor(x))
    assert repr(m) == repr(tm) and list(m.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(m.running_var.numpy(), tm.running_var.numpy(), rtol=1e-6)


def test_sync_batch_norm_without_process_group():
    torch = pytest.importorskip("torch")
    x = np.linspace(-1, 2, 24, dtype=np.float64).reshape(2, 3, 4)
    m, tm = nn.SyncBatchNorm(3).double(), torch.nn.SyncBatchNorm(3).double()
    assert repr(m) == repr(tm)
    xs, txs = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (m(xs) ** 3).sum().backward()
    (tm(txs) ** 3).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), txs.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-12)
    m.eval()
    tm.eval()
    np.testing.assert_allclose(m(tg.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach()
                               .numpy(), rtol=1e-12)
    assert gradcheck(lambda a: nn.SyncBatchNorm(3).double()(a), [xs.detach().requires_grad_()])
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        m(tg.ones(3))
    with pytest.raises(ValueError, match="number of input channels should be non-zero"):
        m(tg.ones(3, 0))
    assert list(nn.SyncBatchNorm(2, bias=False).state_dict()) == \
        list(torch.nn.SyncBatchNorm(2, bias=False).state_dict())


def test_convert_sync_batchnorm_shares_parameters():
    net = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3),
                        nn.Sequential(nn.BatchNorm1d(2)))
    net[1].eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted[2][0]) is nn.SyncBatchNorm
    assert converted[1].weight is net[1].weight
    assert converted[1].running_mean is net[1].running_mean
    assert not converted[1].training and converted[2][0].training
    assert list(converted.state_dict()) == list(net.state_dict())


def test_container():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = nn.Container(a=nn.Linear(2, 2), b=nn.ReLU())
    assert [n for n, _ in c.named_parameters()] == ["a.weight", "a.bias"]
    assert repr(c) == ("Container(\n  (a): Linear(in_features=2, out_features=2, bias=True)\n"
                       "  (b): ReLU()\n)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from tapegrad.nn.modules.container import Container
    assert Container is nn.Container
