"""No silent wrong gradient after an in-place write into a value a node saved (issue 16).

A record keeps what its backward reads.  Whatever that value is (the operand's storage, a numpy
view of it, a copy promoted to the result dtype, the output, a Python Function's saved tensor),
an in-place write into the tensor it came from, between forward and backward, must either raise
PyTorch's "modified by an inplace operation" error or leave the gradient as it was before the
write.  A create_graph backward computes with the live operand tensors, not with the saved
copies (src/tapegrad/graph_vjp.pxi), so a copy kept without its tensor's version gave a silently
wrong second derivative (fuzz seed 54101800 for layer_norm; mul / div of a float32 and a float64
tensor; scatter_reduce's result; embedding_bag's max, which read its own result).

The sweep below writes into an op's input or output under no_grad, then runs backward and a
double backward, and checks each outcome against PyTorch and against the same program without
the write.
"""
import numpy as np
import pytest

import tapegrad as tg


def F(L):
    return L.nn.functional


# Each op maps (library, a, b) to a result; a and b are non-leaf tensors of 6 elements.
OPS = {
    # elementwise, operands promoted to float64: the saved copy of the float32 operand
    "mul promoted": lambda L, a, b: a * b.double(),
    "div promoted": lambda L, a, b: b.double() / a,
    "pow promoted": lambda L, a, b: a ** b.double(),
    "atan2 promoted": lambda L, a, b: L.atan2(a, b.double()),
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: b / a,
    "log": lambda L, a, b: a.log(),
    "exp": lambda L, a, b: a.exp(),
    "tanh": lambda L, a, b: a.tanh(),
    "sqrt": lambda L, a, b: a.sqrt(),
    "pow": lambda L, a, b: a ** 3,
    "sigmoid": lambda L, a, b: a.sigmoid(),
    "gelu": lambda L, a, b: F(L).gelu(a),
    "leaky_relu": lambda L, a, b: F(L).leaky_relu(a, 0.1),
    "where": lambda L, a, b: L.where(a > 1, a, b),
    "clamp by tensor": lambda L, a, b: a.clamp(min=b),
    # reductions
    "prod": lambda L, a, b: a.prod(),
    "norm": lambda L, a, b: a.norm(),
    "logsumexp": lambda L, a, b: a.reshape(2, 3).logsumexp(1),
    "amax": lambda L, a, b: a.reshape(2, 3).amax(1),
    "var": lambda L, a, b: a.var(),
    "cumprod": lambda L, a, b: a.cumprod(0),
    # linear algebra
    "matmul": lambda L, a, b: a.reshape(2, 3) @ b.reshape(3, 2),
    "matmul promoted": lambda L, a, b: a.reshape(2, 3).double() @ b.reshape(3, 2).double(),
    "linear": lambda L, a, b: F(L).linear(a.reshape(2, 3), b.reshape(2, 3)),
    "det": lambda L, a, b: L.linalg.det(L.cat([a, b[:3]]).reshape(3, 3)),
    "inv": lambda L, a, b: L.linalg.inv(L.cat([a, b[:3]]).reshape(3, 3)),
    # nn
    "layer_norm": lambda L, a, b: F(L).layer_norm(a.reshape(2, 3), (3,), b[:3], b[3:]),
    "batch_norm": lambda L, a, b: F(L).batch_norm(a.reshape(3, 2), None, None, b[:2], b[2:4],
                                                  training=True),
    "group_norm": lambda L, a, b: F(L).group_norm(a.reshape(1, 2, 3), 1, b[:2], b[2:4]),
    "softmax": lambda L, a, b: a.reshape(2, 3).softmax(1),
    "log_softmax": lambda L, a, b: a.reshape(2, 3).log_softmax(1),
    "cross_entropy": lambda L, a, b: F(L).cross_entropy(a.reshape(2, 3), L.tensor([0, 2])),
    "mse_loss": lambda L, a, b: F(L).mse_loss(a, b),
    "conv1d": lambda L, a, b: F(L).conv1d(a.reshape(1, 2, 3), b.reshape(1, 2, 3)),
    "max_pool2d": lambda L, a, b: F(L).max_pool2d(a.reshape(1, 1, 2, 3), 2, stride=1),
    "normalize": lambda L, a, b: F(L).normalize(a.reshape(2, 3), dim=1),
    # indexing and Python Function nodes
    "gather": lambda L, a, b: a.reshape(2, 3).gather(1, L.tensor([[0, 2], [1, 1]])),
    "scatter_reduce prod": lambda L, a, b: b.scatter_reduce(0, L.tensor([0, 1, 1, 2, 3, 5]), a,
                                                            reduce="prod"),
    "scatter_reduce amax": lambda L, a, b: b.scatter_reduce(0, L.tensor([0, 1, 1, 2, 3, 5]), a,
                                                            reduce="amax"),
    "embedding_bag max": lambda L, a, b: F(L).embedding_bag(L.tensor([0, 1, 1]), a.reshape(2, 3),
                                                            L.tensor([0, 2]), mode="max"),
    "cumsum": lambda L, a, b: a.cumsum(0),
    "take_along_dim": lambda L, a, b: L.take_along_dim(a, L.tensor([0, 2, 5])),
    "smooth_l1_loss": lambda L, a, b: F(L).smooth_l1_loss(a, b, reduction="none"),
    "huber_loss": lambda L, a, b: F(L).huber_loss(a, b, delta=0.7),
    "mse_loss sum": lambda L, a, b: F(L).mse_loss(a, b, reduction="sum"),
    "max_pool1d": lambda L, a, b: F(L).max_pool1d(a.reshape(1, 2, 3), 2, stride=1),
    "group_norm weight": lambda L, a, b: F(L).group_norm(a.reshape(1, 2, 3), 2, b[:2]),
    "hardtanh": lambda L, a, b: F(L).hardtanh(a, 0.5, 2.0),
    "relu6": lambda L, a, b: F(L).relu6(a),
    "avg_pool1d": lambda L, a, b: F(L).avg_pool1d(a.reshape(1, 2, 3), 2, 1),
    "avg_pool2d": lambda L, a, b: F(L).avg_pool2d(a.reshape(1, 1, 2, 3), 2, 1),
    "avg_pool3d": lambda L, a, b: F(L).avg_pool3d(a.reshape(1, 1, 1, 2, 3), (1, 2, 2), 1),
    "adaptive_max_pool1d": lambda L, a, b: F(L).adaptive_max_pool1d(a.reshape(1, 2, 3), 2),
    "adaptive_max_pool2d": lambda L, a, b: F(L).adaptive_max_pool2d(a.reshape(1, 1, 2, 3), 2),
    "xlogy": lambda L, a, b: L.xlogy(a, b),
}

# first order only (see test_first_order_refusals_as_torch)
FIRST_ORDER_OPS = {
    "l1_loss": lambda L, a, b: F(L).l1_loss(a, b),
    "smooth_l1_loss beta 0": lambda L, a, b: F(L).smooth_l1_loss(a, b, beta=0.0),
    # (no second derivative of hardsigmoid here)
    "hardsigmoid": lambda L, a, b: F(L).hardsigmoid(a),
}

A = [0.3, 1.2, 2.1, 0.7, 1.8, 2.6]
B = [0.5, 1.5, 0.9, 1.1, 2.2, 0.4]


def run(L, op, write, order):
    """Gradients of the leaves (order 1), or first gradients and the gradients of their squared
    norm (order 2), after writing `write` ("input", "other", "output" or None) in place."""
    x = L.tensor(A, requires_grad=True)
    z = L.tensor(B, requires_grad=True)
    a, b = x * 1.0, z * 1.0
    y = OPS[op](L, a, b) if op in OPS else FIRST_ORDER_OPS[op](L, a, b)
    written = {"input": a, "other": b, "output": y}.get(write)
    if written is not None:
        with L.no_grad():
            written.mul_(1.5)
    weights = L.linspace(0.5, 1.5, y.numel(), dtype=y.dtype).reshape(y.shape)
    loss = (y * weights).sum()
    if order == 1:
        loss.backward()
        return [x.grad, z.grad]
    grads = L.autograd.grad(loss, (x, z), create_graph=True, allow_unused=True)
    square = sum((g * g).sum() for g in grads if g is not None and g.requires_grad)
    if not isinstance(square, int):
        square.backward()
    return list(grads) + [x.grad, z.grad]


def outcome(L, *args):
    try:
        return [None if t is None else np.asarray(t.detach().numpy(), dtype=np.float64)
                for t in run(L, *args)]
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), str(e)
        return "raises"


def same(p, q):
    return len(p) == len(q) and all(
        (u is None and (v is None or not v.any())) or (v is None and not u.any())
        or (u is not None and v is not None and np.allclose(u, v, rtol=1e-4, atol=1e-5))
        for u, v in zip(p, q))


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("write", ["input", "other", "output"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_write_into_a_saved_value_raises_or_changes_nothing(torch, op, write, order):
    ours = outcome(tg, op, write, order)
    theirs = outcome(torch, op, write, order)
    if theirs != "raises":
        assert ours != "raises", "PyTorch computes this gradient"
        assert same(ours, theirs), (ours, theirs)
    else:
        # where tapegrad's record keeps no value of the written tensor (or a copy), it keeps
        # the tensor's version (guard_version) so that it refuses as PyTorch's node does
        if ours != "raises":
            assert same(ours, outcome(tg, op, None, order)), "a silently wrong gradient"
        assert ours == "raises", "PyTorch refuses this backward after the write"


@pytest.mark.parametrize("op", sorted(OPS))
def test_gradients_without_a_write_match_torch(torch, op):
    for order in (1, 2):
        assert same(outcome(tg, op, None, order), outcome(torch, op, None, order))


@pytest.mark.parametrize("loss", ["l1_loss", "smooth_l1_loss beta 0", "huber_loss", "mse_loss sum",
                                  "hardsigmoid"])
def test_first_order_refusals_as_torch(torch, loss):
    # PyTorch's l1_loss (and smooth_l1_loss with beta 0, which is l1_loss) is a composite that
    # saves only the difference: a write into input or target changes nothing; the native mse,
    # smooth_l1 and huber nodes save both operands and refuse (first order only: torch's second
    # derivative of l1 is a ZeroTensor its numpy() refuses)
    for write in ("input", "other"):
        ours, theirs = (outcome(L, loss, write, 1) for L in (tg, torch))
        assert (ours == "raises") == (theirs == "raises"), (write, ours, theirs)
        if ours != "raises":
            assert same(ours, theirs)


@pytest.mark.parametrize("op", ["mul", "div", "pow", "atan2"])
def test_a_promoted_operand_is_saved_under_its_version(op):
    # mul of a float32 and a float64 tensor saved a float64 copy of the float32 operand with
    # no version: the write went unnoticed, and the create_graph second derivative, computed
    # with the live operand, was wrong (PyTorch raises at backward)
    x = tg.tensor([0.3, 1.2, 2.1], requires_grad=True)
    w = tg.tensor([0.5, 1.5, 0.9], dtype=tg.float64, requires_grad=True)
    a = x * 1.0
    y = {"mul": lambda: a * w, "div": lambda: w / a, "pow": lambda: a ** w,
         "atan2": lambda: tg.atan2(a, w)}[op]()
    with tg.no_grad():
        a.mul_(1.5)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tg.autograd.grad(y.sum(), [w], create_graph=True)


def test_scatter_reduce_saves_its_result():
    # amax / prod's backward read the result: a write into it changed the gradient silently
    src = tg.tensor([1.0, 3.0, 2.0], requires_grad=True)
    y = tg.zeros(2).scatter_reduce(0, tg.tensor([0, 0, 1]), src, reduce="amax")
    with tg.no_grad():
        y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_embedding_bag_max_gradient_ignores_a_write_into_its_result(torch):
    # PyTorch keeps the argmax rows, not the result: the gradient after a write is unchanged
    # (tapegrad's scatter_reduce amax compared the rows with the written result: zero gradient)
    W = np.array([[0.0, 5.0, 1.0], [3.0, 5.0, np.nan], [3.0, -1.0, 2.0]], dtype=np.float32)

    def run(L, write):
        w = L.tensor(W, requires_grad=True)
        y = F(L).embedding_bag(L.tensor([0, 1, 2, 2]), w, L.tensor([0, 3, 3]), mode="max")
        if write:
            with L.no_grad():
                y.mul_(2.0)
        (y * L.linspace(0.5, 1.5, y.numel()).reshape(y.shape)).sum().backward()
        return y.detach().numpy(), w.grad.numpy()

    for write in (False, True):
        for ours, theirs in zip(run(tg, write), run(torch, write)):
            np.testing.assert_allclose(ours, theirs, equal_nan=True)


# -- boolean writes that select nothing (fuzz seed 54107820) ------------------------------------

def _nothing_selected(L):
    v7 = L.tensor([1.0], requires_grad=True)
    out = []
    base = L.zeros(())
    view = base.view(1, 1)
    view[view > 0] = v7             # index_put_ of nothing through a view of a 0-d tensor
    out += [view.requires_grad, base.requires_grad]
    (view.sum() + base * 2).backward()
    out.append(v7.grad.tolist())
    for shape in ((), (3,)):
        t = L.zeros(shape)
        t[False] = v7               # PyTorch returns before anything: no record
        out.append(t.requires_grad)
    t = L.zeros(3)
    t[None, False] = v7             # ... but a False inside a tuple records
    out.append(t.requires_grad)
    leaf = L.zeros(3, requires_grad=True)
    leaf[False] = 1.0               # no leaf refusal, no version bump
    out.append(leaf._version)
    return out


def test_writes_selecting_nothing_record_as_torch(torch):
    assert _nothing_selected(tg) == _nothing_selected(torch)
