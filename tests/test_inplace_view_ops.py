"""In-place view ops on tensors in a graph (unsqueeze_, squeeze_, t_, transpose_, swapdims_,
swapaxes_, as_strided_), resize_ and set_: values, gradients against torch and finite
differences, and PyTorch's refusals."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import gradcheck

BASE = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]

OPS = {
    "unsqueeze_": lambda y: y.unsqueeze_(0),
    "squeeze_": lambda y: y.unsqueeze(1).squeeze_(),
    "squeeze_dim": lambda y: y.unsqueeze(1).squeeze_(1),
    "t_": lambda y: y.t_(),
    "transpose_": lambda y: y.transpose_(0, 1),
    "swapdims_": lambda y: y.swapdims_(1, 0),
    "swapaxes_": lambda y: y.swapaxes_(0, 1),
    "as_strided_": lambda y: y.as_strided_((3, 2), (1, 3)),
}


def run(lib, op):
    x = lib.tensor(BASE, dtype=lib.float64, requires_grad=True)
    y = x * 2
    z = OPS[op](y)
    weights = lib.arange(z.numel(), dtype=lib.float64).reshape(tuple(z.shape))
    (z * weights).sin().sum().backward()
    return x, y, z


@pytest.mark.parametrize("op", sorted(OPS))
def test_in_place_view_op_on_non_leaf_keeps_history(op):
    x, y, z = run(tg, op)
    assert z.grad_fn is not None and not z.is_leaf
    if not op.startswith("squeeze"):
        assert z is y and y._version == 1
    # the gradient by hand: z holds 2x in z's layout, d/dx sum(sin(w z)) = 2 w cos(w z)
    w = np.arange(z.numel(), dtype=np.float64).reshape(tuple(z.shape))
    expected = 2 * w * np.cos(w * z.detach().numpy())
    layout = OPS[op](tg.arange(6, dtype=tg.float64).reshape(2, 3)).numpy().astype(int)
    by_hand = np.zeros(6)
    np.add.at(by_hand, layout.ravel(), expected.ravel())
    np.testing.assert_allclose(x.grad.numpy().ravel(), by_hand, rtol=1e-12)


@pytest.mark.parametrize("op", sorted(OPS))
def test_in_place_view_op_matches_torch(op):
    torch = pytest.importorskip("torch")
    x, _, z = run(tg, op)
    tx, _, tz = run(torch, op)
    assert tuple(z.shape) == tuple(tz.shape)
    # (strides compared where they matter: tapegrad reports 0 for a new dim of size 1)
    assert [s for s, n in zip(z.stride(), z.shape) if n > 1] == \
        [s for s, n in zip(tz.stride(), tz.shape) if n > 1]
    np.testing.assert_allclose(z.detach().numpy(), tz.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("op", sorted(OPS))
def test_in_place_view_op_gradcheck(op):
    def f(x):
        z = OPS[op](x * 1.5)
        return (z * tg.arange(z.numel(), dtype=tg.float64).reshape(tuple(z.shape))).tanh()
    x = tg.tensor(BASE, dtype=tg.float64, requires_grad=True)
    assert gradcheck(f, (x,))


def test_view_of_non_leaf_then_write_matches_torch():
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(BASE, dtype=lib.float64, requires_grad=True)
        y = x * 1
        v = y[0]
        v.unsqueeze_(0)
        assert tuple(v.shape) == (1, 3)
        v.mul_(3)                                   # a write through the restrided view
        (y * y).sum().backward()
        grads.append(x.grad.numpy() if lib is tg else x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])


def test_other_views_of_the_tensor_follow_its_new_history():
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(BASE, dtype=lib.float64, requires_grad=True)
        y = x * 1
        row = y[1]
        y.t_()
        assert row.grad_fn.name() == "AsStridedBackward0"
        (row * 2 + y.sum() * y[0, 1]).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])


REFUSALS = {
    "leaf": (lambda lib: lib.zeros(2, 3, requires_grad=True).t_(),
             "a leaf Variable that requires grad is being used in an in-place operation"),
    "view of leaf": (lambda lib: lib.zeros(2, 3, requires_grad=True)[0].unsqueeze_(0),
                     "a view of a leaf Variable that requires grad"),
    "split output": (lambda lib: (lib.zeros(4, requires_grad=True) * 1).split(2)[0].unsqueeze_(0),
                     "Output 0 of Split"),
    "t_ of 3-d": (lambda lib: lib.zeros(2, 2, 2).t_(),
                  r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"),
    "resize_": (lambda lib: (lib.zeros(2, 3, requires_grad=True) * 1).resize_(6),
                "cannot resize variables that require grad"),
    "resize_as_": (lambda lib: (lib.zeros(2, 3, requires_grad=True) * 1).resize_as_(lib.ones(6)),
                   "cannot resize variables that require grad"),
    "set_ leaf": (lambda lib: lib.zeros(3, requires_grad=True).set_(lib.zeros(2)),
                  "a leaf Variable that requires grad is being used in an in-place operation"),
    "set_ dtype": (lambda lib: lib.zeros(3).set_(lib.arange(3)),
                   "Could not set tensor of type long int to a tensor of type float"),
    "set_ dtype 2": (lambda lib: lib.zeros(3, dtype=lib.long).set_(lib.ones(3)),
                     "Could not set tensor of type float to a tensor of type long int"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals_match_torch(case):
    make, message = REFUSALS[case]
    with pytest.raises(RuntimeError, match=message):
        make(tg)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=message):
        make(torch)


def test_in_place_view_op_in_no_grad_on_a_leaf():
    x = tg.tensor(BASE, requires_grad=True)
    with tg.no_grad():
        x.unsqueeze_(0)
    assert x.is_leaf and tuple(x.shape) == (1, 2, 3) and x._version == 1
    (x * 1).sum().backward()
    assert tuple(x.grad.shape) == (1, 2, 3)


def test_plain_in_place_view_ops_share_storage_and_bump_version():
    a = tg.zeros(2, 3)
    a.t_()
    assert tuple(a.shape) == (3, 2) and a.stride() == (1, 3) and a._version == 1
    a.as_strided_((3,), (1,))
    assert a._version == 2
    b = tg.arange(6.)
    b.resize_(2, 2)
    assert b._version == 1 and b.tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_set_forms_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        s = lib.zeros(3)
        b = lib.arange(4.)
        s.set_(b)
        b[0] = 7
        assert s.tolist() == [7.0, 1.0, 2.0, 3.0]               # shared memory
        assert lib.zeros(3).set_().shape == (0,)
        src = lib.arange(6.)
        t = lib.zeros(3).set_(src.untyped_storage(), 2, (2, 2), (1, 2))
        assert t.tolist() == [[2.0, 4.0], [3.0, 5.0]] and t.stride() == (1, 2)
        t[0, 0] = -1
        assert src[2].item() == -1.0
        assert lib.zeros(3).set_(src.untyped_storage()).shape == (6,)
        e = lib.zeros(3)
        e.set_(lib.ones(2, 3))
        assert e._version == 1 and tuple(e.shape) == (2, 3)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        tg.zeros(3).set_(tg.arange(6.).untyped_storage(), 4, (2, 2), (1, 2))
    with pytest.raises(TypeError, match=r"set_\(\) received an invalid combination"):
        tg.zeros(3).set_(5)
