"""left47: hooks on a view written in place, inference tensors used outside inference mode,
integer masked_fill with a value that requires grad, batch_norm's mixed dtypes, real PyTorch
tensors reaching the softmax family and BatchNorm.  Every scenario runs under tapegrad and under
PyTorch and the two results are compared."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def outcome(fn):
    """fn()'s result as plain data, or its exception's type name and message."""
    try:
        return fn()
    except Exception as error:             # (compared with PyTorch's)
        return type(error).__name__, str(error).split("\n")[0]


# -- 1. hooks on a view that an in-place op writes (fuzz seed 67300341) -------------------------

IN_PLACE_ON_VIEW = {
    "mul_": lambda v: v.mul_(2),
    "iadd": lambda v: v.__iadd__(1),
    "sin_": lambda v: v.sin_(),
    "relu_": lambda v: v.relu_(),
    "clamp_": lambda v: v.clamp_(0, 2.5),
    "setitem": lambda v: v.__setitem__(0, 7.0),
    "zero_": lambda v: v.zero_(),
    "pow_": lambda v: v.pow_(2),
    "tril_": lambda v: v.view(1, 2).tril_(),     # (a view of the view: written through)
    "unsqueeze_": lambda v: v.unsqueeze_(0),     # (an in-place view op: v's own history)
}


def view_hook_scenario(L, op, mode):
    log = []
    x = L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64, requires_grad=True)
    b = x * 1
    v = b[1:3]
    w = None
    if mode == "tensor":
        v.register_hook(lambda g: (log.append(g.tolist()), g + 1)[1])
    elif mode == "prehook":
        v.grad_fn.register_prehook(lambda gs: (log.append(gs[0].tolist()), (gs[0] + 1,))[1])
    elif mode == "posthook":
        v.grad_fn.register_hook(lambda gi, go: (
            log.append(go[0].tolist()), tuple(None if g is None else g * 2 for g in gi))[1])
    else:                                   # used before the write: that path keeps the hook
        w = v * 5
        v.register_hook(lambda g: (log.append(g.tolist()), g + 1)[1])
    IN_PLACE_ON_VIEW[op](v)
    loss = (b * L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64)).sum() + (v * 3).sum()
    if w is not None:
        loss = loss + w.sum()
    loss.backward()
    return x.grad.tolist(), log


@pytest.mark.parametrize("mode", ["tensor", "prehook", "posthook", "used_before"])
@pytest.mark.parametrize("op", sorted(IN_PLACE_ON_VIEW))
def test_hook_on_view_written_in_place(torch, op, mode):
    assert outcome(lambda: view_hook_scenario(tg, op, mode)) == \
        outcome(lambda: view_hook_scenario(torch, op, mode))


def hook_sibling_scenario(L, case):
    log = []
    hook = lambda g: (log.append(g.tolist()), g + 1)[1]     # noqa: E731
    x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = x * 1
    v = b[1:3]
    if case == "retain_then_write":
        v.retain_grad()
        v.mul_(2)
        (v * 3).sum().backward()
        return x.grad.tolist(), v.grad.tolist()
    if case == "retain_then_write_loss_on_base":
        v.retain_grad()
        v.mul_(2)
        b.sum().backward()
        return x.grad.tolist(), v.grad
    if case == "base_hook_view_written":
        b.register_hook(hook)
        v.mul_(2)
        (b * 3).sum().backward()
        return x.grad.tolist(), log
    if case == "leaf_hook_no_grad_write":
        x.register_hook(hook)
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist())))
        with L.no_grad():
            x[1:3].mul_(2)
        (x * 3).sum().backward()
        return x.grad.tolist(), log
    if case == "hook_after_write":
        v.mul_(2)
        v.register_hook(hook)
        (v * 3).sum().backward()
        return x.grad.tolist(), log
    if case == "view_hook_base_written":
        v.register_hook(hook)
        b.mul_(2)
        (v * 3).sum().backward()
        return x.grad.tolist(), log
    if case == "view_hook_no_grad_write":
        v.register_hook(hook)
        with L.no_grad():
            v.mul_(2)
        (v * 3).sum().backward()
        return x.grad.tolist(), log
    if case == "two_writes":
        v.register_hook(hook)
        v.mul_(2)
        v.add_(1)
        (v * 3).sum().backward()
        return x.grad.tolist(), log
    raise AssertionError(case)


@pytest.mark.parametrize("case", [
    "retain_then_write", "retain_then_write_loss_on_base", "base_hook_view_written",
    "leaf_hook_no_grad_write", "hook_after_write", "view_hook_base_written",
    "view_hook_no_grad_write", "two_writes"])
def test_hook_siblings_of_view_writes(torch, case):
    assert outcome(lambda: hook_sibling_scenario(tg, case)) == \
        outcome(lambda: hook_sibling_scenario(torch, case))


def test_fuzz_67300341_view_of_unfold_hook(torch):
    def run(L):
        x = L.tensor(np.arange(1.0, 7.0).reshape(3, 2), requires_grad=True)
        v = (x * 1).unfold(1, 1, 2)[::2]
        v.register_hook(lambda g: g + 1)
        v.sin_()
        (v * L.tensor([[[0.5]], [[2.0]]])).sum().backward()
        return x.grad.numpy()
    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-6)


# -- 4. an integer self filled with a value that requires grad ----------------------------------

INTEGER_FILLS = {
    "masked_fill": lambda L, v: L.arange(4).masked_fill(L.tensor([True, False, True, False]), v),
    "masked_fill_bool": lambda L, v: L.zeros(4, dtype=L.bool).masked_fill(
        L.tensor([True, False, True, False]), v),
    "masked_fill_float64_value": lambda L, v: L.arange(4).masked_fill(
        L.tensor([True, False, True, False]), v.double()),
    "masked_fill_no_grad": lambda L, v: L.arange(4).masked_fill(
        L.tensor([True, False, True, False]), v.detach()),
    "masked_fill_float_self": lambda L, v: L.zeros(4).masked_fill(
        L.tensor([True, False, True, False]), v),
    "masked_fill_": lambda L, v: L.arange(4).masked_fill_(L.tensor([True, False, True, False]), v),
    "index_fill": lambda L, v: L.arange(4).index_fill(0, L.tensor([0]), v),
    "index_put": lambda L, v: L.arange(4).index_put((L.tensor([0]),), v),
    "scatter": lambda L, v: L.arange(4).scatter(0, L.tensor([0]), v.reshape(1)),
    "where": lambda L, v: L.where(L.tensor([True, False, True, False]), L.arange(4), v),
}


@pytest.mark.parametrize("case", sorted(INTEGER_FILLS))
def test_integer_fill_with_grad_value(torch, case):
    def run(L):
        r = INTEGER_FILLS[case](L, L.tensor(1.0, requires_grad=True))
        return str(r.dtype), r.requires_grad, r.tolist()
    assert outcome(lambda: run(tg)) == outcome(lambda: run(torch))


def test_integer_masked_fill_under_no_grad(torch):
    def run(L):
        with L.no_grad():
            r = L.arange(4).masked_fill(L.tensor([True, False, True, False]),
                                        L.tensor(1.0, requires_grad=True))
        return r.requires_grad, r.tolist()
    assert run(tg) == run(torch)


# -- 5. batch_norm's parameter dtypes on an empty batch (fuzz seed 67301043) --------------------

DTYPES = ["bfloat16", "float16", "float32", "float64"]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("param_dtype", DTYPES)
@pytest.mark.parametrize("input_dtype", DTYPES)
@pytest.mark.parametrize("batch", [0, 2])
def test_batch_norm_parameter_dtypes(torch, batch, input_dtype, param_dtype, training):
    def run(L):
        F = L.nn.functional
        x = L.arange(batch * 8, dtype=L.float32).reshape(batch, 2, 2, 2).to(
            getattr(L, input_dtype))
        p = getattr(L, param_dtype)
        y = F.batch_norm(x, L.zeros(2, dtype=p), L.ones(2, dtype=p), L.ones(2, dtype=p),
                         L.zeros(2, dtype=p), training=training)
        return str(y.dtype), tuple(y.shape), y.float().numpy()
    ours, theirs = outcome(lambda: run(tg)), outcome(lambda: run(torch))
    assert ours[:2] == theirs[:2]
    if len(ours) == 3:      # (a half input's last bit is the kernel's own)
        np.testing.assert_allclose(ours[2], theirs[2], rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("param_dtype", DTYPES)
@pytest.mark.parametrize("input_dtype", DTYPES)
def test_batch_norm_module_empty_batch(torch, input_dtype, param_dtype):
    def run(L):
        m = L.nn.BatchNorm2d(1, dtype=getattr(L, param_dtype))
        y = m(L.zeros(0, 1, 2, 2, dtype=getattr(L, input_dtype)))
        y.sum().backward()
        return str(y.dtype), y.shape, m.weight.grad.tolist(), m.running_mean.tolist()
    assert outcome(lambda: run(tg)) == outcome(lambda: run(torch))


@pytest.mark.parametrize("param_dtype", DTYPES)
@pytest.mark.parametrize("input_dtype", DTYPES)
def test_group_norm_empty_batch_dtype(torch, input_dtype, param_dtype):
    def run(L):
        p = getattr(L, param_dtype)
        y = L.nn.functional.group_norm(L.zeros(0, 2, 2, dtype=getattr(L, input_dtype)), 1,
                                       L.ones(2, dtype=p), L.zeros(2, dtype=p))
        return str(y.dtype), y.shape
    assert outcome(lambda: run(tg)) == outcome(lambda: run(torch))


# -- 6. real PyTorch tensors reaching the softmax family and the normalisations -----------------

REAL_INPUT_CALLS = {
    "softmax": lambda L, x: L.nn.functional.softmax(x, dim=1),
    "log_softmax": lambda L, x: L.nn.functional.log_softmax(x, dim=1),
    "softmax_dtype": lambda L, x: L.nn.functional.softmax(x, dim=0, dtype=L.float64),
    "softmin": lambda L, x: L.nn.functional.softmin(x, dim=1),
    "normalize": lambda L, x: L.nn.functional.normalize(x),
    "F.tanh": lambda L, x: L.nn.functional.tanh(x),
    "F.sigmoid": lambda L, x: L.nn.functional.sigmoid(x),
    "Softmax": lambda L, x: L.nn.Softmax(dim=1)(x),
    "LogSoftmax": lambda L, x: L.nn.LogSoftmax(dim=-1)(x),
    "batch_norm": lambda L, x: L.nn.functional.batch_norm(x, L.zeros(3), L.ones(3)),
    "BatchNorm1d": lambda L, x: L.nn.BatchNorm1d(3)(x),
    "BatchNorm2d": lambda L, x: L.nn.BatchNorm2d(2)(x.reshape(1, 2, 3, 1)),
    "GroupNorm": lambda L, x: L.nn.GroupNorm(1, 2)(x.reshape(1, 2, 3)),
}


@pytest.mark.parametrize("case", sorted(REAL_INPUT_CALLS))
def test_real_torch_tensor_is_read(torch, case):
    x = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    ours = REAL_INPUT_CALLS[case](tg, x)
    assert isinstance(ours, tg.Tensor), type(ours)
    theirs = REAL_INPUT_CALLS[case](torch, x)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-6)


def test_real_torch_tensor_requiring_grad_is_refused(torch):
    x = torch.ones(2, 3, requires_grad=True)
    with pytest.raises(TypeError, match="requires grad"):
        tg.nn.functional.softmax(x, dim=1)


# -- 2. a leaf made to require grad inside inference_mode, used outside it -----------------------
# (fuzz seeds 67300552, 67300234, 67300162).  PyTorch's rule: an inference tensor has no autograd
# dispatch key, so an op all of whose operands are inference tensors records nothing; an op with
# another operand (a normal tensor, or a number the binary operators wrap as one) records, and
# refuses to save an inference tensor for backward.

INFERENCE_OPS = {
    "sum": lambda L, x: x.sum(),
    "exp": lambda L, x: x.exp(),
    "neg": lambda L, x: -x,
    "sin": lambda L, x: x.sin(),
    "relu": lambda L, x: x.relu(),
    "sigmoid": lambda L, x: x.sigmoid(),
    "tanh": lambda L, x: x.tanh(),
    "sqrt": lambda L, x: x.sqrt(),
    "prod": lambda L, x: x.prod(),
    "max": lambda L, x: x.max(),
    "norm": lambda L, x: x.norm(),
    "log_softmax": lambda L, x: x.log_softmax(0),
    "pow_number": lambda L, x: x ** 2,
    "number_over": lambda L, x: 1 / x,
    "int_index": lambda L, x: x[0],
    "slice": lambda L, x: x[1:],
    "view": lambda L, x: x.view(2),
    "reshape": lambda L, x: x.reshape(1, 2),
    "unsqueeze": lambda L, x: x.unsqueeze(0),
    "expand": lambda L, x: x.expand(3, 2),
    "transpose": lambda L, x: x.view(1, 2).t(),
    "add_self": lambda L, x: x + x,
    "mul_self": lambda L, x: (x * x).sum(),
    "cat_self": lambda L, x: L.cat([x, x]),
    "stack_self": lambda L, x: L.stack([x]),
    "add_number": lambda L, x: x + 1,
    "mul_number": lambda L, x: x * 2,
    "sub_number": lambda L, x: x - 1,
    "div_number": lambda L, x: x / 2,
    "number_minus": lambda L, x: 1 - x,
    "mul_tensor": lambda L, x: x * L.ones(2),
    "matmul_tensor": lambda L, x: x @ L.ones(2),
    "add_grad_tensor": lambda L, x: x + L.ones(2, requires_grad=True),
    "mul_grad_tensor": lambda L, x: x * L.ones(2, requires_grad=True),
    "where": lambda L, x: L.where(x > 0, x, 0.0),
    "cat_mixed": lambda L, x: L.cat([x, L.ones(2)]),
}


@pytest.mark.parametrize("case", sorted(INFERENCE_OPS))
def test_inference_leaf_used_outside_inference_mode(torch, case):
    def run(L):
        with L.inference_mode():
            x = L.ones(2, requires_grad=True)
        r = INFERENCE_OPS[case](L, x)
        return r.requires_grad, r.is_leaf, r.is_inference(), r.tolist()
    assert outcome(lambda: run(tg)) == outcome(lambda: run(torch))


def test_inference_leaf_backward(torch):
    def run(L):
        with L.inference_mode():
            x = L.tensor([1.0, 2.0], requires_grad=True)
        (x + 1).sum().backward()            # (AddBackward0 saves nothing)
        first = x.grad.tolist()
        return first, outcome(lambda: (x * L.ones(2, requires_grad=True)).sum().backward())
    assert run(tg) == run(torch)


def test_inference_leaf_inside_inference_mode_and_under_enable_grad(torch):
    def run(L):
        with L.inference_mode():
            x = L.ones(2, requires_grad=True)
            inside = x.sum().requires_grad
            with L.enable_grad():
                nested = x.exp().requires_grad
        return inside, nested
    assert run(tg) == run(torch)
