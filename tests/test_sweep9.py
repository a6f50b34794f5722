"""Regressions found by the ninth argument-form sweep (elementwise arithmetic and type promotion,
bitwise and logical ops, unary math across dtypes) against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    """(dtype name, values) of a result, or the exception type's name."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    return str(out.dtype).split(".")[-1], out.numpy().tolist()


@pytest.mark.parametrize("call", [
    lambda L, a, b: L.sub(a, b, alpha=2),
    lambda L, a, b: L.sub(b, a, alpha=2),
    lambda L, a, b: a.sub(b, alpha=-1),
    lambda L, a, b: L.sub(a, True, alpha=2),
    lambda L, a, b: L.sub(3, b, alpha=2),
    lambda L, a, b: L.rsub(a, b, alpha=3),
    lambda L, a, b: a.clone().sub_(b, alpha=2),
])
def test_sub_with_alpha_refuses_bool_operands(call):
    # alpha scaled a bool operand into the result dtype first, so the bool check never saw it
    # and the subtraction went ahead
    def run(L):
        return call(L, L.tensor([3, -7, 0]), L.tensor([True, False, True]))
    assert _outcome(lambda: run(tg)) == _outcome(lambda: run(torch)) == "RuntimeError"


@pytest.mark.parametrize("decimals", [2, 3, -1])
def test_round_decimals_of_float16_scales_in_float32(decimals):
    # SILENT: 1234.5 * 10^3 overflowed float16 to inf, and round gave inf for a finite input
    values = [1.2345, -2.5, 0.125, 1234.5678, 2.675, 60000.0]
    got = tg.round(tg.tensor(values, dtype=tg.float16), decimals=decimals)
    want = torch.round(torch.tensor(values, dtype=torch.float16), decimals=decimals)
    assert got.dtype == tg.float16
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("decimals", [400, -400])
def test_round_decimals_beyond_float64_gives_nan(decimals):
    # 10.0 ** 400 raised OverflowError; PyTorch's power is inf and the result NaN
    got = tg.tensor([1.25], dtype=tg.float64).round(decimals=decimals)
    want = torch.tensor([1.25], dtype=torch.float64).round(decimals=decimals)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", ["float16", "float32", "complex64"])
def test_nan_to_num_casts_out_of_range_replacements(dtype):
    # a replacement beyond the dtype's range was refused; PyTorch casts it (1e39 -> inf)
    inf, nan = float("inf"), float("nan")
    kwargs = {"nan": 1e39, "posinf": 1e39, "neginf": -1e39}
    got = tg.nan_to_num(tg.tensor([1.0, nan, inf, -inf], dtype=getattr(tg, dtype)), **kwargs)
    want = torch.nan_to_num(torch.tensor([1.0, nan, inf, -inf], dtype=getattr(torch, dtype)),
                            **kwargs)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    t = tg.tensor([nan, inf], dtype=getattr(tg, dtype))
    t.nan_to_num_(posinf=1e39, nan=-1e39)
    w = torch.tensor([nan, inf], dtype=getattr(torch, dtype))
    w.nan_to_num_(posinf=1e39, nan=-1e39)
    np.testing.assert_array_equal(t.numpy(), w.numpy())


@pytest.mark.parametrize("call", [
    lambda L, x: L.deg2rad(x), lambda L, x: L.rad2deg(x), lambda L, x: x.deg2rad_(),
    lambda L, x: L.i0(x), lambda L, x: x.i0_(), lambda L, x: x.abs_(), lambda L, x: x.absolute_(),
])
def test_complex_refusals(call):
    # each silently computed (abs_ wrote |x| into the complex tensor as a complex value)
    def run(L):
        return call(L, L.tensor([3 + 1j, -2.5 - 0.5j]))
    assert _outcome(lambda: run(tg)) == _outcome(lambda: run(torch))
    assert _outcome(lambda: run(tg)) in ("RuntimeError", "NotImplementedError")


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_gradients_follow_pytorch_formula(name):
    # SILENT: at the same infinity twice the composite sent gradient 1 to input and 0 to other;
    # PyTorch's grad / (1 + exp(other - input)) is NaN for both
    inf = float("inf")
    a = [-inf, inf, 1.0, -inf, 3.0, 0.5]
    b = [-inf, inf, 2.0, 0.0, -inf, 0.5]
    grads = []
    for L in (tg, torch):
        x = L.tensor(a, dtype=L.float64, requires_grad=True)
        y = L.tensor([b], dtype=L.float64, requires_grad=True)      # broadcast against x
        out = getattr(L, name)(x, y)
        gx, gy = L.autograd.grad(out.sum(), (x, y))
        grads.append((out.detach().numpy(), gx.numpy(), gy.numpy()))
    for g, w in zip(*grads):
        np.testing.assert_allclose(g, w, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_second_derivative_and_fd(name, gradcheck):
    fn = getattr(tg, name)
    gradcheck(fn, [[0.3, -1.2, 4.0]], [[1.0], [-2.0]])
    x = tg.tensor([0.3, -1.2], dtype=tg.float64, requires_grad=True)
    (g,) = tg.autograd.grad(fn(x, tg.tensor(0.5, dtype=tg.float64)).sum(), x, create_graph=True)
    (gg,) = tg.autograd.grad(g.sum(), x)
    xt = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)
    (gt,) = torch.autograd.grad(getattr(torch, name)(xt, torch.tensor(0.5, dtype=torch.float64))
                                .sum(), xt, create_graph=True)
    (ggt,) = torch.autograd.grad(gt.sum(), xt)
    np.testing.assert_allclose(gg.numpy(), ggt.numpy(), rtol=1e-10)
    assert type(fn(x, x).grad_fn).__name__ == type(getattr(torch, name)(xt, xt).grad_fn).__name__


_HALF_CALLS = {
    "addcmul": lambda L, a, b, w: L.addcmul(a, b, b, value=0.5),
    "addcmul_value": lambda L, a, b, w: L.addcmul(a, a, b, value=1e-3),
    "addcdiv": lambda L, a, b, w: L.addcdiv(a, a * 200, w, value=0.25),
    "addcmul_": lambda L, a, b, w: a.clone().addcmul_(b, b, value=0.5),
    "lerp": lambda L, a, b, w: L.lerp(a, b, 0.3),
    "lerp_tensor": lambda L, a, b, w: L.lerp(a, b, w),
    "lerp_": lambda L, a, b, w: a.clone().lerp_(b, 0.3),
    "sinc": lambda L, a, b, w: L.sinc(a),
    "sinc_small": lambda L, a, b, w: L.sinc(w),
}


@pytest.mark.parametrize("name", sorted(_HALF_CALLS))
def test_float16_multi_step_ops_compute_in_float32(name):
    # SILENT: computed step by step in float16, addcmul's 300 * 300 overflowed to inf before
    # -250 was added, lerp and sinc rounded their intermediates (sinc(1) came out 3e-4, not 0)
    def run(L):
        a = L.tensor([300.0, -250.0, 60000.0, 1e-4, 2.0, -0.0], dtype=L.float16)
        b = L.tensor([400.0, 300.0, 2.0, 1e-4, 3.0, 5.0], dtype=L.float16)
        w = L.tensor([0.25, 0.5, 0.75, 1.0, 0.1, 0.9], dtype=L.float16)
        return _HALF_CALLS[name](L, a, b, w)
    got, want = run(tg), run(torch)
    assert got.dtype == tg.float16
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_float16_addcmul_gradient_reaches_float16_inputs():
    xs = [[1.5, -2.0], [3.0, 0.5], [2.0, 4.0]]
    grads = []
    for L in (tg, torch):
        a, b, c = (L.tensor(x, dtype=L.float16, requires_grad=True) for x in xs)
        out = L.addcmul(a, b, c, value=0.5)
        grads.append([g.numpy() for g in L.autograd.grad(out.sum(), (a, b, c))])
        assert out.grad_fn.name() == "AddcmulBackward0"
    for g, w in zip(*grads):
        assert g.dtype == np.float16
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("other_kind", ["tensor", "number", "in_place"])
def test_rounded_division_of_recorded_operands(mode, other_kind):
    # SILENT: with requires_grad, floor mode was floor(a / b) (1 / 0.1 floored to 10, where
    # PyTorch's floor division gives 9), and both modes sent 0 * inf = NaN back where b is 0
    a_values, b_values = [1.0, -0.5, 7.0, -3.0], [0.1, 2.0, 0.0, -0.0]
    results = []
    for L in (tg, torch):
        a = L.tensor(a_values, dtype=L.float64, requires_grad=True)
        b = L.tensor(b_values, dtype=L.float32, requires_grad=True)
        if other_kind == "tensor":
            out, inputs = L.div(a, b, rounding_mode=mode), (a, b)
        elif other_kind == "number":
            out, inputs = L.div(a, 0.1, rounding_mode=mode), (a,)
        else:
            out, inputs = (a * 1).div_(b, rounding_mode=mode), (a, b)
        grads = L.autograd.grad(out.sum(), inputs)
        results.append((out.grad_fn.name(), out.detach().numpy(), [g.numpy() for g in grads]))
    (name, values, grads), (t_name, t_values, t_grads) = results
    assert name == t_name
    np.testing.assert_array_equal(values, t_values)
    for g, w in zip(grads, t_grads):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("kwargs", [{"nan": "x"}, {"posinf": 1j}, {"nan": None},
                                    {"neginf": "zero-dim"}, {"neginf": "one-dim"}])
def test_nan_to_num_replacement_arguments(kwargs):
    # the out-of-range cast must not turn a str into ValueError, nor refuse a zero-dim tensor
    def run(L):
        args = {k: (L.tensor(2.0) if v == "zero-dim" else L.tensor([2.0]) if v == "one-dim"
                    else v) for k, v in kwargs.items()}
        return L.nan_to_num(L.tensor([float("nan"), float("inf"), -float("inf")]), **args)
    assert _outcome(lambda: run(tg)) == _outcome(lambda: run(torch))


@pytest.mark.parametrize("name", ["hypot", "atan2", "arctan2", "nextafter", "ldexp", "gcd", "lcm",
                                  "divide", "true_divide", "copysign", "xlogy", "remainder"])
@pytest.mark.parametrize("self_dtype", ["int64", "float32", "bool"])
@pytest.mark.parametrize("other", [2, 2.5])
def test_in_place_binary_number_operand_errors(name, self_dtype, other):
    # the cast check ran before the argument check (hypot_(2.5) of an int64 tensor was the
    # RuntimeError, PyTorch's is the TypeError), and named Long where the op computes in Float
    def run(L):
        x = L.tensor([3, 1], dtype=getattr(L, self_dtype))
        getattr(x, name + "_")(other)
        return x

    def outcome(L):
        try:
            return "ran", run(L).numpy().tolist()
        except (TypeError, RuntimeError) as e:
            return type(e).__name__, str(e)[:60]
    assert outcome(tg) == outcome(torch)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_in_place_divide_with_rounding_mode_keeps_integers(mode):
    for L in (tg, torch):
        x = L.tensor([7, -7])
        x.divide_(2, rounding_mode=mode)
        assert x.dtype == L.int64
    assert tg.tensor([7, -7]).divide_(2, rounding_mode=mode).tolist() == \
        torch.tensor([7, -7]).divide_(2, rounding_mode=mode).tolist()


@pytest.mark.parametrize("call", [
    lambda L, x: L.clamp(x, True), lambda L, x: L.clamp(x, None, True),
    lambda L, x: L.clamp(x, False, True), lambda L, x: x.clone().clamp_(False, True),
    lambda L, x: L.clamp_min(x, True), lambda L, x: L.clamp_max(x, False),
    lambda L, x: L.clamp(x, 0, 1), lambda L, x: L.clamp(x, 0.5),
    lambda L, x: L.clamp(x, L.tensor(True)), lambda L, x: L.clamp(x, None, L.tensor([False, True])),
])
def test_clamp_of_bool_tensor(call):
    # bool bounds on a bool tensor clamped silently; PyTorch's number kernels have no bool form
    def outcome(L):
        try:
            out = call(L, L.tensor([True, False]))
        except (NotImplementedError, RuntimeError) as e:
            return type(e).__name__, str(e)
        return str(out.dtype).split(".")[-1], out.tolist()
    assert outcome(tg) == outcome(torch)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_rms_norm_default_eps_is_the_computation_dtypes(dtype):
    # SILENT: float16 took finfo(float16).eps = 1e-3 as the default eps, which swamped a small
    # input's mean square (0.0032 where PyTorch gives 0.2456); PyTorch's is float32's epsilon
    values = [[1e-4, 2e-4, -3e-4], [6e-5, 1e-3, 5e-4]]
    got = tg.nn.functional.rms_norm(tg.tensor(values, dtype=getattr(tg, dtype)), (3,))
    want = torch.nn.functional.rms_norm(torch.tensor(values, dtype=getattr(torch, dtype)), (3,))
    assert got.dtype == getattr(tg, dtype)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64),
                               rtol=2e-3 if dtype == "float16" else 1e-6)
    module = torch.nn.RMSNorm(3, dtype=getattr(torch, dtype))
    ours = tg.nn.RMSNorm(3, dtype=getattr(tg, dtype))
    np.testing.assert_allclose(
        ours(tg.tensor(values, dtype=getattr(tg, dtype))).detach().numpy().astype(np.float64),
        module(torch.tensor(values, dtype=getattr(torch, dtype))).detach().numpy()
        .astype(np.float64), rtol=2e-3 if dtype == "float16" else 1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
@pytest.mark.parametrize("alpha", [1e5, -7e4, 65504.0, 1e39, 100000, float("inf")])
@pytest.mark.parametrize("name", ["add", "sub"])
def test_add_sub_alpha_is_converted_to_the_result_dtype_checked(dtype, alpha, name):
    # float16's add(alpha=1e5) silently gave inf; PyTorch refuses the alpha that overflows
    def outcome(L):
        x = L.tensor([1.0], dtype=getattr(L, dtype))
        try:
            return getattr(L, name)(x, x, alpha=alpha).numpy()
        except RuntimeError as e:
            return str(e).replace("c10::Half", "Half")
    got, want = outcome(tg), outcome(torch)
    if isinstance(want, str):
        assert got == want
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("call", [
    lambda L, h: L.lerp(h, h * 2, 1e5),
    lambda L, h: L.lerp(h.float(), h.float(), 1e39),
    lambda L, h: L.addcmul(h, h, h, value=1e5),
    lambda L, h: L.addcmul(h.float(), h.float(), h.float(), value=1e39),
    lambda L, h: L.addcdiv(h.float(), h.float(), h.float(), value=-1e39),
    lambda L, h: L.addcmul(h.double(), h.double(), h.double(), value=1e300),
])
def test_scalar_arguments_checked_against_the_computation_dtype(call):
    # lerp refused a float16 weight of 1e5, which PyTorch reads in float32; addcmul's value of
    # 1e39 for float32 silently gave inf where PyTorch refuses it
    def outcome(L):
        try:
            return call(L, L.tensor([1.0, 2.0], dtype=L.float16)).numpy()
        except RuntimeError as e:
            return str(e)
    got, want = outcome(tg), outcome(torch)
    if isinstance(want, str):
        assert got == want
    else:
        np.testing.assert_array_equal(got, want)
