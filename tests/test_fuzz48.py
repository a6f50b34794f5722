"""Findings of differential fuzzing session 48 (tools/fuzz.py, tools/fuzz_train.py), each
checked against PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _expanded_view_run(lib, op):
    """A view of a view (x[0].unsqueeze(0).expand(2, 3)) of a non-leaf, used, retained, then
    written in place by `op` (refused or not); its retained .grad, grad_fn and the leaf's .grad
    after a backward through uses before and after the write."""
    x = lib.tensor([[-0.79, 0.56, 0.3]], dtype=lib.float64, requires_grad=True)
    y = x * 1.5
    v = y[0].unsqueeze(0).expand(2, 3)
    before = v.sum(0) * lib.tensor([1.0, 3.0, 5.0], dtype=lib.float64)
    v.retain_grad()
    try:
        with warnings.catch_warnings():
            # (the writes PyTorch runs there warn that they are deprecated)
            warnings.simplefilter("ignore")
            op(lib, v)
        raised = None
    except RuntimeError as e:
        raised = str(e)
    try:
        loss = (v * lib.tensor([1.0, 2.0, 4.0], dtype=lib.float64)).sum() + before.sum()
        loss.backward()
    except RuntimeError as e:
        return raised, "backward: " + str(e)[:40]
    return (raised, type(v.grad_fn).__name__, v.grad.numpy().copy(), x.grad.numpy().copy())


EXPANDED_WRITES = {
    "sin_": lambda lib, v: v.sin_(),
    "add_": lambda lib, v: v.add_(1),
    "mul_tensor": lambda lib, v: v.mul_(lib.ones(3, dtype=lib.float64)),
    "copy_": lambda lib, v: v.copy_(lib.ones(2, 3, dtype=lib.float64)),
    "clamp_": lambda lib, v: v.clamp_(0, 1),
    "setitem_column": lambda lib, v: v.__setitem__((slice(None), 0), 3.0),
    "setitem_all": lambda lib, v: v.__setitem__(slice(None), lib.ones(3, dtype=lib.float64)),
    "scatter_": lambda lib, v: v.scatter_(1, lib.tensor([[0], [1]]), 5.0),
    "index_add_": lambda lib, v: v.index_add_(1, lib.tensor([0]),
                                              lib.ones(2, 1, dtype=lib.float64)),
    "addcmul_": lambda lib, v: v.addcmul_(lib.ones(3, dtype=lib.float64),
                                          lib.ones(3, dtype=lib.float64)),
    "uniform_": lambda lib, v: v.uniform_(),
    "renorm_": lambda lib, v: v.renorm_(2, 0, 1.0),
    # writes PyTorch runs on such a view (its backward refuses them, or they fill one row)
    "fill_": lambda lib, v: v.fill_(2.0),
    "zero_": lambda lib, v: v.zero_(),
    "setitem_row": lambda lib, v: v.__setitem__(0, 3.0),
    "masked_fill_": lambda lib, v: v.masked_fill_(lib.tensor([True, False, True]), 1.0),
    "index_fill_": lambda lib, v: v.index_fill_(1, lib.tensor([0]), 2.0),
    "index_put_": lambda lib, v: v.index_put_((lib.tensor([0]),), lib.tensor(2.0,
                                                                           dtype=lib.float64)),
}


@pytest.mark.parametrize("name", sorted(EXPANDED_WRITES))
def test_refused_write_into_expanded_view_leaves_its_history(name):
    # SILENT (fuzz seed 67305212): a write refused because two elements of the view share
    # memory had already moved the view onto a new history: its retained .grad then missed the
    # gradients of its uses before the write ([1, 2, 4] instead of [2, 5, 9]).
    op = EXPANDED_WRITES[name]
    ours, theirs = _expanded_view_run(tg, op), _expanded_view_run(torch, op)
    assert (ours[0] is None) == (theirs[0] is None), (ours[0], theirs[0])
    if theirs[0] is not None:
        assert "more than one element of the written-to tensor" in ours[0]
    assert len(ours) == len(theirs)
    if len(theirs) == 2:
        assert ours[1].startswith("backward: ")
        return
    assert ours[1] == theirs[1]
    np.testing.assert_array_equal(ours[2], theirs[2].numpy() if hasattr(theirs[2], "numpy")
                                  else theirs[2])
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-15)


_BN_INPUT = [[-0.5923, -1.8027, -0.9258], [-0.7778, -1.9893, -3.3555]]


def _batch_norm_run(lib, param_dtype, running):
    """F.batch_norm in training of a float16 batch (from float32 values that require grad),
    with weight and bias of param_dtype and running statistics (or none): the output, the
    running statistics and the gradients."""
    x32 = lib.tensor(_BN_INPUT, requires_grad=True)
    w = lib.tensor([1.3, 0.7, 1.1], dtype=param_dtype(lib), requires_grad=True)
    b = lib.tensor([0.1, -0.2, 0.3], dtype=param_dtype(lib), requires_grad=True)
    rm = rv = None
    if running:
        rm = lib.full((3,), -1.0, dtype=param_dtype(lib))
        rv = lib.full((3,), 0.5, dtype=param_dtype(lib))
    y = lib.nn.functional.batch_norm(x32.half(), rm, rv, w, b, training=True)
    (y.float() * lib.tensor([[1.0, -2.0, 0.5], [0.3, 1.0, 2.0]])).sum().backward()
    out = [y.detach().float().numpy(), x32.grad.numpy(), w.grad.float().numpy(),
           b.grad.float().numpy()]
    if running:
        out += [rm.float().numpy(), rv.float().numpy()]
    return out


@pytest.mark.parametrize("param_dtype", ["float32", "float16"])
@pytest.mark.parametrize("running", [False, True])
def test_batch_norm_of_float16_with_float32_parameters_in_float32(param_dtype, running):
    # SILENT (fuzz seed 67402255, a Linear -> BatchNorm1d under float16 autocast): PyTorch's
    # mixed form (float16 input, float32 weight / bias / running statistics) keeps the batch
    # statistics in float32; tapegrad rounded them to float16 as for all-float16 parameters,
    # so the output was ulps off (0.99951 -> 1.00488) and the gradients of what came before
    # were rounding noise where PyTorch's are (near) zero
    dtype = lambda lib: getattr(lib, param_dtype)
    ours, theirs = _batch_norm_run(tg, dtype, running), _batch_norm_run(torch, dtype, running)
    assert len(ours) == len(theirs)
    for a, e in zip(ours, theirs):
        np.testing.assert_allclose(a, e.numpy() if hasattr(e, "numpy") else e,
                                   rtol=2e-3, atol=1e-4)


def test_batch_norm_of_float16_mixed_running_statistics_only():
    # float32 running statistics alone make the mixed form too (no weight, no bias)
    outs = []
    for lib in (tg, torch):
        x = lib.tensor(_BN_INPUT, dtype=lib.float16)
        rm, rv = lib.zeros(3), lib.ones(3)
        outs.append(lib.nn.functional.batch_norm(x, rm, rv, training=True).float().numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("weight,bias,stats,phrase", [
    (None, "float32", "bfloat16", "mixed dtype (CPU): expect parameter to have scalar type"),
    ("float32", None, "bfloat16", "mixed dtype (CPU): expect parameter to have scalar type"),
    ("bfloat16", None, "float32", "expected scalar type BFloat16 but found Float"),
    (None, "bfloat16", "float32", "expected scalar type BFloat16 but found Float"),
])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_bfloat16_refuses_running_statistics_of_another_dtype(
        weight, bias, stats, phrase, training):
    # PyTorch's kernels check the running statistics' dtype with weight's and bias's; tapegrad's
    # bfloat16 layer left them out and ran
    for lib in (torch, tg):
        x = lib.tensor(_BN_INPUT, dtype=lib.bfloat16)
        make = lambda d, v: None if d is None else lib.full((3,), v, dtype=getattr(lib, d))
        with pytest.raises(RuntimeError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
            lib.nn.functional.batch_norm(x, make(stats, 0.0), make(stats, 1.0),
                                         make(weight, 1.0), make(bias, 0.0), training=training)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad",
                                  "Adadelta", "RMSprop", "Rprop", "ASGD"])
def test_foreach_differentiable_step_is_refused_as_pytorch(name):
    # fuzz_train seed 30027: PyTorch's multi-tensor steps assert that they need not record
    # (AssertionError, at the first step with a gradient); tapegrad raised the leaf error, or
    # NotImplementedError when the optimizer was made
    outcomes = []
    for lib in (torch, tg):
        p = lib.tensor([1.0, -2.0], requires_grad=True)
        try:
            opt = getattr(lib.optim, name)([p], lr=0.1, foreach=True, differentiable=True)
            opt.step()                      # (no gradient yet: nothing to refuse)
            (p * p).sum().backward()
            opt.step()
            outcomes.append(("ok", None))
        except Exception as e:              # noqa: BLE001 - the outcome is compared
            outcomes.append((type(e).__name__, str(e)))
    assert outcomes[1][0] == outcomes[0][0]
    assert outcomes[1][1] == outcomes[0][1]


@pytest.mark.parametrize("module", ["ConvTranspose1d", "ConvTranspose2d"])
@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_transposed_conv_of_empty_batch_of_another_dtype(module, dtype):
    # fuzz seed 67305458: PyTorch's transposed convolution returns an empty batch before its
    # kernel checks dtypes (result in the input's dtype, each gradient in its tensor's);
    # tapegrad refused it.  A forward convolution still refuses (its bias check comes first).
    results = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        m = getattr(lib.nn, module)(3, 2, 2, stride=2)
        shape = (0, 3, 2) if module.endswith("1d") else (0, 3, 2, 2)
        x = lib.zeros(shape, dtype=getattr(lib, dtype), requires_grad=True)
        y = m(x)
        y.sum().backward()
        results.append((str(y.dtype), tuple(y.shape), str(x.grad.dtype), tuple(x.grad.shape),
                        str(m.weight.grad.dtype), float(m.weight.grad.abs().sum()),
                        str(m.bias.grad.dtype)))
    assert results[0] == results[1]
    for lib in (torch, tg):
        with pytest.raises(RuntimeError, match="should be the same"):
            lib.nn.Conv1d(3, 2, 2)(lib.zeros(0, 3, 2, dtype=getattr(lib, dtype)))


@pytest.mark.parametrize("call", [
    lambda lib, v: v.atan2_(0.5),
    lambda lib, v: v.scatter_(1, lib.tensor([[0.5]]), 5.0),
    lambda lib, v: v.scatter_(5, lib.tensor([[0]]), 5.0),
    lambda lib, v: v.index_add_(1, lib.tensor([0]), lib.ones(5, 5)),
    lambda lib, v: v.__setitem__(slice(None), lib.ones(4)),
    lambda lib, v: v.add_(lib.ones(5)),
])
def test_argument_errors_before_refused_write_into_expanded_view(call):
    # (fuzz seed 67307538) the refusal of a write into a view whose elements share memory,
    # now made before the view is rebased, still comes after the op's own argument errors
    outcomes = []
    for lib in (torch, tg):
        x = lib.tensor([[-0.79, 0.56, 0.3]], requires_grad=True)
        v = (x * 1.5)[0].unsqueeze(0).expand(2, 3)
        with pytest.raises(Exception) as info:
            call(lib, v)
        outcomes.append((type(info.value).__name__, str(info.value)[:40]))
    assert outcomes[0] == outcomes[1]
