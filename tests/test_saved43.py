"""Fuzz findings of session 43, each checked against PyTorch: saved-tensor hooks on bfloat16
tensors, loss functions whose target has another dtype, nansum/nanmean into an integer out=."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

_X = [[1.1, 2.3, 3.7], [4.1, 5.3, -0.6]]


# -- 1. saved-tensor hooks: pack sees a bfloat16 tensor as bfloat16 ---------------------------

_OPS = {
    "mul": lambda m, v: v * v,
    "exp": lambda m, v: v.exp(),
    "sin": lambda m, v: v.sin(),               # recorded as a Function (a bfloat16 formula)
    "pow": lambda m, v: v.pow(0.5),            # fuzz 66901617
    "mm": lambda m, v: v @ v.t(),              # saves a value that is no tensor's array
    "softmax": lambda m, v: v.softmax(-1),
    "acosh": lambda m, v: m.acosh(v.abs() + 1),  # fuzz 66901688
}


def test_pack_hook_bfloat16_log_softmax_fuzz_66901961():
    v0 = tg.tensor(_X).to(tg.bfloat16).requires_grad_()
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(),
                                                   lambda a: tg.from_numpy(a)):
            tg.nn.functional.nll_loss(tg.nn.functional.log_softmax(v0, 1), tg.tensor([0, 2]),
                                      reduction="none", ignore_index=0)


def _packs(m, dt, op):
    """What pack saw (each value's dtype and whether its numpy() refused, as a set: the ops'
    choice of values to save is another matter) and the input's gradient."""
    seen = set()

    def pack(t):
        try:
            t.numpy()
            refused = None
        except TypeError as e:
            refused = str(e)
        seen.add((str(t.dtype), refused))
        return t

    v = m.tensor(_X).to(dt).requires_grad_()
    with m.autograd.graph.saved_tensors_hooks(pack, lambda a: a):
        y = op(m, v)
    y.sum().backward()
    return seen, str(v.grad.dtype), v.grad.float().numpy()


@pytest.mark.parametrize("op", sorted(_OPS))
@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32"])
def test_pack_hook_sees_the_saved_dtype(op, dt):
    seen, grad_dtype, grad = _packs(tg, getattr(tg, dt), _OPS[op])
    want_seen, want_dtype, want = _packs(torch, getattr(torch, dt), _OPS[op])
    assert seen == want_seen
    assert grad_dtype == want_dtype
    # (bfloat16's pow(0.5) backward differs in its last bit: left, see the report)
    np.testing.assert_allclose(grad, want, rtol=1e-2 if dt == "bfloat16" else 2e-3)


def test_pack_hook_numpy_refuses_bfloat16_fuzz_66901617():
    v0 = tg.tensor([[-1.18, -2.1], [0.43, 2.33]]).to(tg.bfloat16).requires_grad_()
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(),
                                                   lambda a: tg.from_numpy(a)):
            v0.pow(0.5)


@pytest.mark.parametrize("op", ["mul", "exp", "sin", "pow"])
def test_unpack_through_float32_and_back(op):
    # pack to float32, unpack back to bfloat16: the gradient PyTorch gives
    def run(m):
        v = m.tensor(_X).to(m.bfloat16).requires_grad_()
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.float(),
                                                  lambda a: a.to(m.bfloat16)):
            y = _OPS[op](m, v)
        y.sum().backward()
        return str(v.grad.dtype), v.grad.float().numpy()
    got, want = run(tg), run(torch)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-2)


# -- 2. huber_loss with a target of another dtype: refused in backward ------------------------

def _loss_backward(m, name, in_dt, tgt_dt, grads, weighted=False, create_graph=False):
    """The forward's dtype, then the gradients' dtypes or the backward's error."""
    F = m.nn.functional
    x = m.tensor([0.3, 0.7, 2.2], dtype=getattr(m, in_dt), requires_grad="in" in grads)
    t = m.tensor([0.5, 0.1, 0.9], dtype=getattr(m, tgt_dt), requires_grad="tgt" in grads)
    kwargs = {"weight": m.ones(3)} if weighted else {}
    y = getattr(F, name)(x, t, **kwargs)
    wrt = [v for v in (x, t) if v.requires_grad]
    try:
        got = m.autograd.grad(y, wrt, create_graph=create_graph)
    except RuntimeError as e:
        return str(y.dtype), "RuntimeError", str(e)
    return str(y.dtype), [str(g.dtype) for g in got], [g.tolist() for g in got]


@pytest.mark.parametrize("name", ["huber_loss", "mse_loss", "l1_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("in_dt,tgt_dt", [("float32", "float64"), ("float64", "float32"),
                                          ("float32", "float16"), ("float32", "float32")])
@pytest.mark.parametrize("grads", ["in", "tgt", "in+tgt"])
def test_pointwise_loss_target_of_another_dtype_fuzz_67000175(name, in_dt, tgt_dt, grads):
    got = _loss_backward(tg, name, in_dt, tgt_dt, grads)
    want = _loss_backward(torch, name, in_dt, tgt_dt, grads)
    assert got[:2] == want[:2]
    if want[1] == "RuntimeError":
        assert got[2] == want[2]
    else:
        np.testing.assert_allclose(np.array(got[2]), np.array(want[2]), rtol=1e-6)


@pytest.mark.parametrize("weighted,create_graph", [(True, False), (False, True)])
def test_huber_loss_mixed_dtypes_weighted_and_graph(weighted, create_graph):
    got = _loss_backward(tg, "huber_loss", "float32", "float64", "in", weighted, create_graph)
    want = _loss_backward(torch, "huber_loss", "float32", "float64", "in", weighted,
                          create_graph)
    assert got == want == ("torch.float32", "RuntimeError", "Found dtype Double but expected Float")


def test_huber_loss_mixed_dtypes_weight_gradient_only():
    # only the weight needs a gradient: no huber backward kernel runs, PyTorch gives it
    def run(m):
        w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        m.nn.functional.huber_loss(m.tensor([0.3, 0.7, 2.2]),
                                   m.tensor([0.5, 0.1, 0.9], dtype=m.float64),
                                   weight=w).backward()
        return w.grad.numpy()
    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-6)


# -- 3. nansum / nanmean into an out= of another kind: the kernel refuses ----------------------

def _nan_reduce_into(m, fn, in_dt, out_dt, dim, dtype=None):
    x = m.tensor([[1.5, float("nan"), 2.7], [0.25, -1.0, float("nan")]])
    x = x.to(getattr(m, in_dt))
    out = m.full((2,) if dim is not None else (), 7, dtype=getattr(m, out_dt))
    kwargs = {"out": out} if dtype is None else {"out": out, "dtype": getattr(m, dtype)}
    try:
        r = getattr(m, fn)(x, *(() if dim is None else (dim,)), **kwargs)
    except (RuntimeError, NotImplementedError) as e:
        return type(e).__name__, str(e), out.tolist()
    return str(r.dtype), r is out, r.tolist()


@pytest.mark.parametrize("fn", ["nansum", "nanmean"])
@pytest.mark.parametrize("in_dt", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("out_dt", ["int64", "int32", "uint8", "bool", "float32", "complex64"])
@pytest.mark.parametrize("dim", [None, 1])
def test_nan_reductions_out_dtype_fuzz_66901709(fn, in_dt, out_dt, dim):
    got = _nan_reduce_into(tg, fn, in_dt, out_dt, dim)
    want = _nan_reduce_into(torch, fn, in_dt, out_dt, dim)
    assert got[:2] == want[:2]
    np.testing.assert_allclose(np.array(got[2], dtype=complex), np.array(want[2], dtype=complex),
                               rtol=1e-6)


def test_nansum_explicit_dtype_with_integer_out_sums():
    # with dtype= the input is converted first: PyTorch sums into the int64 out
    got = _nan_reduce_into(tg, "nansum", "float32", "int64", 1, dtype="int64")
    want = _nan_reduce_into(torch, "nansum", "float32", "int64", 1, dtype="int64")
    assert got == want
