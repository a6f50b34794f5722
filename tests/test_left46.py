"""Differences from PyTorch closed by session left46: forward_ad's level and dual checks,
out= calls that give a Python number where the out overload takes a tensor, ...

Each scenario runs with L = tapegrad and L = torch (the oracle) and compares what a script would
print: values, dtypes, exception types and key phrases, and out's state after a refusal."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def both(scenario):
    """scenario(L) for tapegrad and torch; returns (tapegrad's result, torch's)."""
    torch = pytest.importorskip("torch")
    return scenario(tg), scenario(torch)


def outcome(fn):
    """What a call gives, as comparable data: ("ok", value) or (exception type, message)."""
    try:
        result = fn()
    except Exception as error:          # noqa: BLE001 - the type is what is compared
        return type(error).__name__, str(error)
    if hasattr(result, "detach"):
        return "ok", str(result.dtype).replace("torch.", ""), result.detach().tolist()
    return "ok", result


# -- 1. forward_ad: levels, and a dual made of a tensor that already has a tangent -------------

def _forward_ad_levels(L):
    fa = L.autograd.forward_ad
    x, t = L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])
    got = []
    with fa.dual_level() as level:
        got.append(level)
        for bad in (1, 5, -1):
            got.append(outcome(lambda: fa.make_dual(x, t, level=bad)))
        d = fa.make_dual(x, t, level=0)
        for bad in (1, 5):
            got.append(outcome(lambda: fa.unpack_dual(d, level=bad)))
        got.append(fa.unpack_dual(d, level=-1).tangent is None)
        got.append(fa.unpack_dual(d, level=0).tangent.tolist())
    return got


# (PyTorch's forward_ad scripts a helper on first use, which warns in torch 2.13)
TORCH_JIT_WARNING = "ignore:`torch.jit.script` is deprecated:DeprecationWarning"


@pytest.mark.filterwarnings(TORCH_JIT_WARNING)
def test_forward_ad_level_arguments():
    ours, theirs = both(_forward_ad_levels)
    assert ours == theirs


def _dual_of_dual(L):
    fa = L.autograd.forward_ad
    x, t = L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])
    got = []
    with fa.dual_level():
        d = fa.make_dual(x, t)
        y = d * 2
        got.append(outcome(lambda: fa.make_dual(d, t)))
        got.append(outcome(lambda: fa.make_dual(y, t)))
        # a primal, a detached dual, a tensor of the caller's that requires grad: no tangent
        p = fa.unpack_dual(y).primal
        got.append(fa.unpack_dual(fa.make_dual(p, t)).tangent.tolist())
        got.append(fa.unpack_dual(fa.make_dual(d.detach(), t)).tangent.tolist())
        w = L.tensor([1.0, 2.0], requires_grad=True) * 3
        dw = fa.make_dual(w, t)
        got.append(fa.unpack_dual(dw * dw).tangent.tolist())
        dw.sum().backward()
    return got


@pytest.mark.filterwarnings(TORCH_JIT_WARNING)
def test_make_dual_of_a_tensor_with_a_tangent_is_refused():
    ours, theirs = both(_dual_of_dual)
    assert theirs[0][0] == "RuntimeError" and "already has a forward gradient" in theirs[0][1]
    assert ours == theirs


# -- 2. out= with a Python number where the out overload takes a tensor ----------------------

@pytest.mark.parametrize("args", [("x", 0), (0, "x"), (1.5, 2), ("i", 0.5), ("x", 1j), (True, 0)])
@pytest.mark.parametrize("out_shape", [(3,), (5,)])
def test_where_out_refuses_numbers_before_touching_out(args, out_shape):
    def scenario(L):
        c = L.tensor([True, False, True])
        named = {"x": L.tensor([1.0, 2.0, 3.0]), "i": L.tensor([1, 2, 3])}
        operands = [named.get(a, a) if isinstance(a, str) else a for a in args]
        out = L.full(out_shape, 7.0)
        return outcome(lambda: L.where(c, *operands, out=out)), out.shape, out.tolist()
    ours, theirs = both(scenario)
    assert theirs[0][0] == "TypeError"
    assert ours == theirs


def test_where_out_keyword_number():
    def scenario(L):
        c = L.tensor([True, False, True])
        out = L.zeros(3)
        return (outcome(lambda: L.where(c, input=2.0, other=L.ones(3), out=out)),
                outcome(lambda: L.where(c, L.ones(3) * 2, other=L.ones(3), out=out)))
    ours, theirs = both(scenario)
    assert ours == theirs


@pytest.mark.parametrize("name", ["remainder", "bitwise_and", "bitwise_xor", "bitwise_left_shift"])
def test_number_self_overload_has_no_out(name):
    # PyTorch's (Number self, Tensor other) overload takes no out=: remainder(2, x, out=o) was
    # computed into o by tapegrad
    def scenario(L):
        x = L.tensor([1, 2, 3])
        out = L.zeros(3, dtype=L.int64)
        return (outcome(lambda: getattr(L, name)(2, x, out=out)), out.tolist(),
                outcome(lambda: getattr(L, name)(x, 2, out=out)), out.tolist())
    ours, theirs = both(scenario)
    assert "received an invalid combination of arguments" in theirs[0][1]
    assert ours == theirs


# -- 3. no gradient reaches an integer tensor (SILENT before: int_x.masked_fill_(m, v) passed one)

def _integer_fill_then_backward(L, fill, use):
    v = L.tensor(2.5, requires_grad=True)
    f = L.ones(3, requires_grad=True)
    x = L.tensor([1, 2, 3])
    mask = L.tensor([True, False, True])
    r = x.masked_fill_(mask, v) if fill == "masked" else x.index_put_((mask,), v)
    got = [r.requires_grad, r.dtype == L.int64, r.tolist()]
    try:
        if use == "add":
            (r + f).sum().backward()
        elif use == "mul":
            (r * f).sum().backward()
        elif use == "seed":
            r.backward(L.ones(3, dtype=L.int64))
        else:
            L.autograd.grad((r * f).sum(), [v, f], allow_unused=True)
        got.append(("ok", v.grad))
    except RuntimeError as error:
        got.append(("RuntimeError", "isDifferentiableType(grad.scalar_type())" in str(error)))
    got.append(v.grad)
    return got


@pytest.mark.parametrize("use", ["add", "mul", "seed", "grad"])
def test_no_gradient_reaches_an_integer_fill(use):
    ours, theirs = both(lambda L: _integer_fill_then_backward(L, "masked", use))
    assert theirs[3] == ("RuntimeError", True) and theirs[4] is None
    assert ours == theirs


def test_float_fill_still_differentiates(gradcheck):
    # the refusal is the integer tensor's only: a float self filled with v passes v its gradient
    ours, theirs = both(lambda L: _float_fill(L))
    assert ours == theirs
    gradcheck(lambda x, v: x.masked_fill(tg.tensor([True, False, True]), v) * x,
              [0.5, 1.5, -2.0], 3.0)


def _float_fill(L):
    v = L.tensor(2.5, requires_grad=True)
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    r = (x * 1).masked_fill_(L.tensor([True, False, True]), v)
    (r * L.tensor([1.0, 2.0, 3.0])).sum().backward()
    return v.grad.item(), x.grad.tolist()


# -- 4. out= of composites with an operand that requires grad: recorded as PyTorch records it ---

_COPIED = {
    "nuclear_norm": lambda L, x, o: L.nuclear_norm(x, out=o),
    "linalg.cond": lambda L, x, o: L.linalg.cond(x, out=o),
    "linalg.matrix_norm": lambda L, x, o: L.linalg.matrix_norm(x, ord=1, out=o),
    "linalg.norm": lambda L, x, o: L.linalg.norm(x, dim=1, out=o),
    "linalg.tensorinv": lambda L, x, o: L.linalg.tensorinv(x, 1, out=o),
    "special.ndtr": lambda L, x, o: L.special.ndtr(x, out=o),
}
_NO_DERIVATIVE = {
    "softmax": lambda L, x, o: L.softmax(x, 1, out=o),
    "log_softmax": lambda L, x, o: L.log_softmax(x, 0, out=o),
    "diag": lambda L, x, o: L.diag(x, out=o),
    "diag_vector": lambda L, x, o: L.diag(x[0], out=o),
    "floor_divide": lambda L, x, o: L.floor_divide(x, 0.3, out=o),
    "heaviside": lambda L, x, o: L.heaviside(x, x, out=o),
}
_WITHOUT_GRAD = {
    "special.bessel_j0": lambda L, x, o: L.special.bessel_j0(x, out=o),
    "special.hermite_polynomial_h": lambda L, x, o: L.special.hermite_polynomial_h(x, x, out=o),
    "linalg.matrix_rank": lambda L, x, o: L.linalg.matrix_rank(x, out=o.long()),
}


def _out_scenario(call, out_requires_grad=False):
    def scenario(L):
        x = L.tensor([[0.5, 0.7, 0.9], [0.2, 0.25, 0.75], [0.3, 0.1, 0.6]], dtype=L.float64,
                     requires_grad=not out_requires_grad)
        out = L.zeros(0, dtype=L.float64, requires_grad=out_requires_grad)
        try:
            r = call(L, x, out)
        except RuntimeError as error:
            return "RuntimeError", "out=... arguments don't support" in str(error), out.shape
        got = [r is out, r.requires_grad, r.is_leaf,
               type(r.grad_fn).__name__ if r.grad_fn is not None else None, tuple(r.shape),
               np.round(r.detach().numpy().astype(np.float64), 6).tolist()]
        if r.requires_grad and not r.is_leaf:
            try:
                (r * r).sum().backward()
                got.append(np.round(x.grad.numpy(), 5).tolist())
            except RuntimeError as error:
                got.append(str(error))
        return got
    return scenario


NUCLEAR_NORM_WARNING = "ignore:at.{2}nuclear_norm is deprecated"


@pytest.mark.filterwarnings(NUCLEAR_NORM_WARNING)
@pytest.mark.parametrize("name", sorted(_COPIED))
def test_composite_out_records_a_copy(name):
    ours, theirs = both(_out_scenario(_COPIED[name]))
    assert theirs[3] == "CopyBackwards"
    assert ours == theirs


def test_composite_out_copy_gradient_matches_finite_differences(gradcheck):
    def f(x):
        out = tg.zeros(0, dtype=tg.float64)
        return tg.linalg.norm(x * x, dim=1, out=out) * 2
    gradcheck(f, [[0.5, -0.7], [1.25, 0.3]])


@pytest.mark.parametrize("name", sorted(_NO_DERIVATIVE))
def test_out_without_derivative_fails_at_backward(name):
    ours, theirs = both(_out_scenario(_NO_DERIVATIVE[name]))
    assert "is not implemented" in theirs[-1]
    assert ours == theirs


@pytest.mark.parametrize("name", sorted(_WITHOUT_GRAD))
def test_nondifferentiable_out_takes_operands_that_require_grad(name):
    ours, theirs = both(_out_scenario(_WITHOUT_GRAD[name]))
    assert theirs[1] is False
    assert ours == theirs


@pytest.mark.filterwarnings(NUCLEAR_NORM_WARNING)
@pytest.mark.parametrize("name", ["eq", "lt", "logical_not", "histc", "special.bessel_j0",
                                  "linalg.matrix_rank", "nuclear_norm", "softmax"])
def test_out_that_requires_grad(name):
    calls = {"eq": lambda L, x, o: L.eq(x, x * 2, out=o),
             "lt": lambda L, x, o: L.lt(x, 0.5, out=o),
             "logical_not": lambda L, x, o: L.logical_not(x, out=o),
             "histc": lambda L, x, o: L.histc(x, bins=4, out=o),
             "special.bessel_j0": _WITHOUT_GRAD["special.bessel_j0"],
             "linalg.matrix_rank": lambda L, x, o: L.linalg.matrix_rank(x, out=o),
             "nuclear_norm": _COPIED["nuclear_norm"], "softmax": _NO_DERIVATIVE["softmax"]}
    ours, theirs = both(_out_scenario(calls[name], out_requires_grad=True))
    if theirs[0] == "RuntimeError":
        assert ours[0] == "RuntimeError"
    else:
        assert ours == theirs


# -- 7. device and layout flags: descriptors of the class, dispatched through modes ------------

_FLAGS = ["is_cuda", "is_cpu", "layout", "is_sparse", "is_meta", "is_quantized", "is_nested",
          "is_mps", "is_xpu", "device"]


@pytest.mark.parametrize("name", _FLAGS)
def test_flag_is_a_class_descriptor(name):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.Tensor, name)
    ours = getattr(tg.Tensor, name)
    assert hasattr(theirs, "__get__") and hasattr(ours, "__get__")
    assert str(ours.__get__(tg.ones(1))) == str(theirs.__get__(torch.ones(1)))


def test_flags_reach_a_torch_function_mode():
    def scenario(L):
        seen = []

        class Mode(L.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append(func.__name__)
                return func(*args, **(kwargs or {}))
        x = L.ones(2)
        with Mode():
            values = [str(getattr(x, name)) for name in _FLAGS]
        return seen, values
    ours, theirs = both(scenario)
    assert theirs[0] == ["__get__"] * len(_FLAGS)
    assert ours == theirs


def test_flags_reach_a_subclass_torch_function():
    def scenario(L):
        seen = []

        class Logged(L.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append(func.__name__)
                return super().__torch_function__(func, types, args, kwargs or {})
        x = L.ones(2).as_subclass(Logged)
        return [str(getattr(x, name)) for name in ("is_cuda", "layout", "is_cpu")], seen
    ours, theirs = both(scenario)
    assert ours == theirs


# -- 6. var_mean / std_mean: the mean of PyTorch's Welford accumulator, rounded once -----------

@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
@pytest.mark.parametrize("shape, dim", [((16,), None), ((63,), None), ((4097,), None),
                                        ((7, 129), 0), ((7, 129), 1), ((3, 5, 33), (0, 2))])
def test_moment_mean_bits(fn, shape, dim):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(shape))
    a = (rng.standard_normal(shape) + 1.3).astype(np.float32)
    theirs = getattr(torch, fn)(torch.tensor(a), dim)
    ours = getattr(tg, fn)(tg.tensor(a), dim)
    for t, o in zip(theirs, ours):
        assert o.dtype == tg.float32
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_moment_mean_gradient_and_half():
    def scenario(L):
        x = L.tensor([[1.0, 2.0, 3.5], [4.0, 5.0, -1.0]], requires_grad=True)
        v, m = L.var_mean(x, 1)
        (v.sum() + (m * m).sum()).backward()
        h = L.std_mean(L.tensor([1.0, 2.0, 3.5, 0.1], dtype=L.float16))
        return (v.grad_fn.name(), m.grad_fn.name(), x.grad.tolist(),
                [str(t.dtype) for t in h], [t.item() for t in h])
    ours, theirs = both(scenario)
    assert ours == theirs


@pytest.mark.filterwarnings(TORCH_JIT_WARNING)
def test_make_dual_of_a_function_result_with_only_a_jvp():
    # the check for a tangent must not run the Function's (absent) backward
    def scenario(L):
        fa = L.autograd.forward_ad

        class Twice(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def jvp(ctx, t):
                return t * 2
        with fa.dual_level():
            d = fa.make_dual(L.tensor([1.0, 2.0]), L.tensor([1.0, 1.0]))
            z = Twice.apply(d) * 3
            return outcome(lambda: fa.make_dual(z, L.ones(2))), fa.unpack_dual(z).tangent.tolist()
    ours, theirs = both(scenario)
    assert ours == theirs


@pytest.mark.parametrize("call", [
    lambda L, x: L.absolute(x, out=L.empty(0)), lambda L, x: L.arctan2(x, x, out=L.empty(0)),
    lambda L, x: L.clip(x, 0, 1, out=L.empty(0)), lambda L, x: L.square(x, out=L.empty(0)),
    lambda L, x: L.norm(x, dim=1, out=L.empty(0)), lambda L, x: L.linalg.inv(x, out=L.empty(0)),
    lambda L, x: L.special.expit(x, out=L.empty(0)), lambda L, x: L.nanmean(x, out=L.empty(0)),
    lambda L, x: L.linalg.vecdot(x, x, out=L.empty(0))])
def test_out_refusal_names_the_aten_op(call):
    def scenario(L):
        x = L.tensor([[2.0, 0.5], [0.25, 1.0]], requires_grad=True)
        return outcome(lambda: call(L, x))
    ours, theirs = both(scenario)
    assert "functions with out=... arguments don't support" in theirs[1]
    assert ours == theirs
