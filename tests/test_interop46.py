"""Real PyTorch tensors reaching tapegrad (a library imported the real torch): read as
array-likes through numpy(), never dispatched through their __torch_function__
(tapegrad/_real_torch.py).  Each test compares with the same calls on PyTorch tensors."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
import tapegrad.nn.functional as F  # noqa: E402


def same(ours, theirs):
    """ours (tapegrad) holds theirs' (PyTorch's) values, dtype and shape."""
    assert type(ours).__module__.startswith("tapegrad") or isinstance(ours, tg.Tensor)
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    if theirs.dtype == torch.bfloat16:
        ours, theirs = ours.float(), theirs.float()
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
          "uint8", "bool", "complex64", "complex128"]


def real_values(dtype):
    x = torch.tensor([[1.5, -2.25, 0.0], [3.0, 7.75, -0.5]], dtype=torch.float64)
    if dtype.startswith("complex"):
        return (x + 1j * x.flip(1)).to(getattr(torch, dtype))
    if dtype in ("uint8", "bool"):
        x = x.abs()
    return x.to(getattr(torch, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_and_as_tensor_keep_values_and_dtype(dtype):
    real = real_values(dtype)
    with warnings.catch_warnings():
        # (copy construction's warning; a complex tensor's cast to float64 warns in both)
        warnings.simplefilter("ignore", UserWarning)
        same(tg.tensor(real), torch.tensor(real))
        same(tg.as_tensor(real), torch.as_tensor(real))
        same(tg.as_tensor(real, dtype=tg.float64), torch.as_tensor(real, dtype=torch.float64))


def test_tensor_of_real_tensor_warns_as_pytorch():
    real = torch.ones(2)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        torch.tensor(real)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        ours = tg.tensor(real)
    real[0] = 5.0
    assert ours.tolist() == [1.0, 1.0]          # a copy


def test_as_tensor_shares_memory_as_pytorch():
    real = torch.zeros(3)
    ours, theirs = tg.as_tensor(real), torch.as_tensor(real)
    real[1] = 4.0
    assert ours.tolist() == theirs.tolist() == [0.0, 4.0, 0.0]


def test_views_and_conjugates_read_their_values():
    base = torch.arange(12.0).reshape(3, 4)
    same(tg.as_tensor(base.t()), base.t())
    same(tg.as_tensor(base[:, 1::2]), base[:, 1::2])
    z = torch.tensor([1 + 2j, 3 - 1j]).conj()
    same(tg.as_tensor(z), z.resolve_conj())


def test_list_of_real_scalar_tensors():
    items = [torch.tensor(1.5), torch.tensor(2)]
    same(tg.tensor(items), torch.tensor(items))
    ints = [torch.tensor(3), torch.tensor(4)]
    same(tg.tensor(ints), torch.tensor(ints))


def test_requires_grad_is_refused_everywhere():
    real = torch.ones(2, 3, requires_grad=True)
    param = torch.nn.Parameter(torch.ones(4))
    calls = [lambda: tg.tensor(real), lambda: tg.as_tensor(real), lambda: F.relu(real),
             lambda: tg.ones(2, 3) + real, lambda: real * tg.ones(2, 3),
             lambda: tg.ones(4) + param, lambda: tg.stack([param, param])]
    for call in calls:
        with pytest.raises(TypeError, match="gradients cannot flow into PyTorch's own graph"):
            call()
    with pytest.raises(TypeError, match=r"shape \[2, 3\], dtype torch.float32"):
        tg.tensor(real)


def test_functions_and_layers_take_real_operands():
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    same(F.relu(x), torch.nn.functional.relu(x))
    same(tg.stack([x, x]), torch.stack([x, x]))
    same(tg.cat([x, x], dim=1), torch.cat([x, x], dim=1))
    same(tg.where(x > 0, x, tg.zeros(4, 3)), torch.where(x > 0, x, torch.zeros(4, 3)))
    theirs = torch.nn.Linear(3, 2)
    ours = tg.nn.Linear(3, 2)
    with tg.no_grad():
        ours.weight.copy_(tg.tensor(theirs.weight.detach().numpy()))
        ours.bias.copy_(tg.tensor(theirs.bias.detach().numpy()))
    with torch.no_grad():
        expected = theirs(x)
    got = ours(x)
    np.testing.assert_allclose(got.detach().numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)
    logits = torch.randn(4, 3)
    target = torch.tensor([0, 1, 2, 0])
    loss = F.cross_entropy(tg.tensor(logits.numpy()), target)
    np.testing.assert_allclose(loss.item(), torch.nn.functional.cross_entropy(logits, target).item(),
                               rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "complex64"])
def test_operators_both_ways(dtype):
    real = real_values(dtype)
    mine = tg.tensor(real_values("float32").numpy())
    theirs = real_values("float32")
    same(mine + real, theirs + real)
    same(real + mine, real + theirs)
    same(mine * real, theirs * real)
    same(real - mine, real - theirs) if dtype != "bool" else None
    same(mine == real, theirs == real)


def test_inplace_operator_writes_into_the_tensor():
    ours, theirs = tg.ones(3), torch.ones(3)
    alias_ours, alias_theirs = ours, theirs
    ours += torch.arange(3.0)
    theirs += torch.arange(3.0)
    assert ours is alias_ours and theirs is alias_theirs
    same(alias_ours, alias_theirs)
    ours.mul_(torch.tensor(2.0))
    theirs.mul_(torch.tensor(2.0))
    same(ours, theirs)


def test_gradient_reaches_the_tapegrad_operand(gradcheck):
    real = torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64)
    w = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=tg.float64, requires_grad=True)
    (w * real).sum().backward()
    wt = torch.tensor(w.detach().numpy(), requires_grad=True)
    (wt * real).sum().backward()
    same(w.grad, wt.grad)
    assert tg.autograd.gradcheck(lambda v: (v.tanh() * real).sum(), (w,))


@pytest.mark.parametrize("key", [
    lambda: torch.tensor([0, 2]), lambda: torch.tensor(1),
    lambda: torch.tensor([True, False, True, False]), lambda: torch.tensor([[0, 1], [2, 3]]),
    lambda: (torch.tensor([0, 1]), torch.tensor([2, 0])), lambda: (slice(None), torch.tensor(1))])
def test_indexing_with_real_keys(key):
    values = torch.arange(12.0).reshape(4, 3)
    ours = tg.tensor(values.numpy())
    same(ours[key()], values[key()])


def test_setitem_with_real_keys_and_values():
    ours, theirs = tg.zeros(4), torch.zeros(4)
    for key, value in [(torch.tensor([0, 2]), torch.tensor(5.0)),
                       (torch.tensor(1), torch.tensor([7.0])),
                       (torch.tensor([False, False, False, True]), 9.0),
                       (slice(1, 3), torch.tensor([1.5, 2.5]))]:
        ours[key] = value
        theirs[key] = value
    same(ours, theirs)


def test_default_collate_stacks_real_tensors():
    from torch.utils.data import default_collate as theirs_collate
    samples = [(torch.full((2,), float(i)), torch.tensor(i)) for i in range(3)]
    ours = tg.utils.data.default_collate(samples)
    theirs = theirs_collate(samples)
    assert isinstance(ours, list) and isinstance(ours[0], tg.Tensor)
    same(ours[0], theirs[0])
    same(ours[1], theirs[1])
    loader = tg.utils.data.DataLoader([(s, 1) for s, _ in samples], batch_size=2)
    batch = next(iter(loader))
    same(batch[0], torch.stack([samples[0][0], samples[1][0]]))
    same(tg.utils.data.default_convert(torch.ones(2)), torch.ones(2))


def test_real_torch_functions_on_tapegrad_tensors():
    ours = tg.arange(6.0).reshape(2, 3)
    result = torch.flip(ours, [1])
    assert isinstance(result, tg.Tensor)
    same(result, torch.flip(torch.arange(6.0).reshape(2, 3), [1]))


def test_tensor_of_bfloat16_and_float8_tensor_keeps_dtype():
    # SILENT before: tensor(t) of a tapegrad bfloat16 tensor came out float32, float8 uint8
    values = [1.5, 2.3, -0.1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for dtype in ("bfloat16", "float8_e4m3fn"):
            ours = tg.tensor(tg.tensor(values).to(getattr(tg, dtype)))
            theirs = torch.tensor(torch.tensor(values).to(getattr(torch, dtype)))
            assert str(ours.dtype) == str(theirs.dtype)
            np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
        grad = tg.tensor(tg.tensor(values).bfloat16(), requires_grad=True)
        assert grad.requires_grad and str(grad.dtype) == "torch.bfloat16"


def test_matmul_operator_and_methods_take_real_operands():
    torch.manual_seed(1)
    a, b = torch.randn(2, 4, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    mine = tg.tensor(a.numpy())
    same(mine @ b, a @ b)
    same(b.t() @ mine.t(), b.t() @ a.t())
    same(tg.ones(12, dtype=tg.float64).view_as(b), torch.ones(12, dtype=torch.float64).view_as(b))
    same(mine.add(a, alpha=2), a.add(a, alpha=2))


@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_pointwise_losses_take_a_real_target(loss):
    torch.manual_seed(2)
    pred, target = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    mine = tg.tensor(pred.numpy(), requires_grad=True)
    ours = getattr(F, loss)(mine, target)
    theirs_pred = pred.clone().requires_grad_()
    theirs = getattr(torch.nn.functional, loss)(theirs_pred, target)
    same(ours, theirs.detach())
    ours.backward()
    theirs.backward()
    same(mine.grad, theirs_pred.grad)
