"""bfloat16 gradients as PyTorch's: each contribution to a bfloat16 tensor's gradient and each
sum of them is rounded to bfloat16 (PyTorch's backward kernels write bfloat16 and its engine
adds in bfloat16), not summed in float32 and rounded once at the leaves."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _mlp_gradients(T, fan_out: int):
    """A bfloat16 net whose backward formulas are single PyTorch kernels (mm, tanh_backward,
    sigmoid_backward, mul, add), each hidden state used by `fan_out` consumers."""
    rng = np.random.default_rng(7)
    x = T.tensor(rng.standard_normal((8, 16)).astype(np.float32)).to(T.bfloat16)
    ws = [T.tensor((rng.standard_normal((16, 16)) * 0.3).astype(np.float32))
          .to(T.bfloat16).requires_grad_() for _ in range(3)]
    h, kept = x, []
    for w in ws:
        a = h @ w
        parts = [T.tanh(a) * 1.5, T.sigmoid(a) * h, h * 0.25][:fan_out]
        h = parts[0]
        for p in parts[1:]:
            h = h + p
        h.retain_grad()
        kept.append(h)
    (h * h).mean().backward()
    return [t.grad.float().detach().numpy() for t in kept + ws]


@pytest.mark.parametrize("fan_out", [1, 2, 3])
def test_bfloat16_gradients_bit_identical_to_torch(fan_out):
    for ours, theirs in zip(_mlp_gradients(tapegrad, fan_out), _mlp_gradients(torch, fan_out)):
        np.testing.assert_array_equal(ours, theirs)


def test_bfloat16_gradient_rounding_leaves_float32_alone():
    """A float32 tensor beside the bfloat16 ones keeps its unrounded gradient."""
    w = tapegrad.tensor([[0.3, -1.1], [0.7, 0.2]], requires_grad=True)
    b = (w * 1.0001).to(tapegrad.bfloat16)
    y = (w * 1.0001) * 3.3
    (b.float().sum() + y.sum()).backward()
    assert w.grad.dtype == tapegrad.float32
    wt = torch.tensor([[0.3, -1.1], [0.7, 0.2]], requires_grad=True)
    ((wt * 1.0001).to(torch.bfloat16).float().sum() + ((wt * 1.0001) * 3.3).sum()).backward()
    np.testing.assert_array_equal(w.grad.numpy(), wt.grad.numpy())


def _shared_weight_gradient(T, calls: int):
    """A bfloat16 leaf used three times, its .grad accumulated over `calls` backwards."""
    rng = np.random.default_rng(3)
    w = T.tensor((rng.standard_normal((16, 16)) * 0.3).astype(np.float32)) \
        .to(T.bfloat16).requires_grad_()
    x = T.tensor(rng.standard_normal((8, 16)).astype(np.float32)).to(T.bfloat16)
    for _ in range(calls):
        y = T.tanh(x @ w) @ w + x * 0.3 @ w
        (y * y).mean().backward()
    return w.grad.float().numpy()


@pytest.mark.parametrize("calls", [1, 3])
def test_bfloat16_leaf_used_thrice_as_torch(calls):
    np.testing.assert_array_equal(_shared_weight_gradient(tapegrad, calls),
                                  _shared_weight_gradient(torch, calls))


def _hooks_and_function_log(T):
    log = []

    class Scaled(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            r = g * 2 * x * 1.01            # computed in bfloat16 in PyTorch: rounded per op
            log.append(("function", str(g.dtype), str(r.dtype), r.float().tolist()))
            return r

    a = T.tensor([0.3, 1.7, -2.2, 0.77]).to(T.bfloat16).requires_grad_()
    y = a * 1.7
    y.register_hook(lambda g: log.append(("y", str(g.dtype), g.float().tolist())))
    b = Scaled.apply(T.tanh(y))
    b.register_hook(lambda g: log.append(("b", str(g.dtype), g.float().tolist())))
    a.register_hook(lambda g: log.append(("a", str(g.dtype), g.float().tolist())))
    (b.sum() * 3).backward()
    log.append(("grad", str(a.grad.dtype), a.grad.float().tolist()))
    return log


def test_bfloat16_hooks_and_function_backward_see_bfloat16_as_torch():
    """Hooks on bfloat16 tensors (results, a custom Function's output, a leaf) receive bfloat16
    gradients, and a custom Function's backward computes in bfloat16, when backward is called
    on a bfloat16 loss (before: the sweep ran with bfloat16 off, so they saw float32)."""
    assert _hooks_and_function_log(tapegrad) == _hooks_and_function_log(torch)


_FORMULA_OPS = ["sin", "cos", "tan", "sinh", "cosh", "rsqrt", "reciprocal", "log1p", "expm1",
                "atan"]


def _formula_case(T, name):
    rng = np.random.default_rng(5)
    values = (rng.standard_normal(64) * 0.8).astype(np.float32)
    if name in ("rsqrt", "log1p"):
        values = np.abs(values) + 0.1
    x = T.tensor(values).to(T.bfloat16).requires_grad_()
    y = getattr(T, name)(x * 1.3)
    (y * T.linspace(-1, 2, 64).to(T.bfloat16)).sum().backward()
    return y.float().detach().numpy(), x.grad.float().numpy(), type(y.grad_fn).__name__


@pytest.mark.parametrize("name", _FORMULA_OPS)
def test_bfloat16_backward_formulas_of_several_ops_as_torch(name):
    """Ops whose PyTorch backward formula is several bfloat16 ops (sin's grad * cos(x)):
    gradients bit-identical, node named as PyTorch's."""
    ours, theirs = _formula_case(tapegrad, name), _formula_case(torch, name)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert ours[2] == theirs[2]


@pytest.mark.parametrize("exponent", [2, 3, -2, 0.5, 1.5, 4, 0, -1])
def test_bfloat16_pow_values_and_gradients_as_torch(exponent):
    """PyTorch computes x ** 3 and x ** -2 in bfloat16 as x * x * x and 1 / (x * x), each
    product rounded (one rounding gave other values in about a fifth of the elements), and
    pow's backward as grad * (exponent * x.pow(exponent - 1)), each op rounded."""
    def run(T):
        rng = np.random.default_rng(2)
        x = T.tensor(np.abs(rng.standard_normal(64)).astype(np.float32) + 0.1) \
            .to(T.bfloat16).requires_grad_()
        y = x.pow(exponent)
        z = (x * 1.1) ** exponent
        ((y + z) * T.linspace(-1, 2, 64).to(T.bfloat16)).sum().backward()
        with T.no_grad():
            w = x ** exponent
        return [a.float().detach().numpy() for a in (y, z, w, x.grad)]
    for ours, theirs in zip(run(tapegrad), run(torch)):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("n", [7, 31, 32, 40, 97])
def test_bfloat16_rsqrt_tail_elements_as_torch(n):
    """PyTorch's bfloat16 rsqrt rounds sqrt(x) before dividing in its scalar loop, which takes
    the elements after the last whole vector."""
    rng = np.random.default_rng(n)
    values = (rng.random(n) * 3 + 0.01).astype(np.float32)
    ours = tapegrad.rsqrt(tapegrad.tensor(values).to(tapegrad.bfloat16)).float().numpy()
    theirs = torch.rsqrt(torch.tensor(values).to(torch.bfloat16)).float().numpy()
    np.testing.assert_array_equal(ours, theirs)


def _norm_case(T, which):
    rng = np.random.default_rng(11)
    x = T.tensor(rng.standard_normal((4, 32)).astype(np.float32)).to(T.bfloat16) \
        .requires_grad_()
    w = T.tensor((rng.standard_normal(32) * 0.2).astype(np.float32)).to(T.bfloat16) \
        .requires_grad_()
    if which == "rms":          # llama's RMSNorm, its temporaries dying as they are used
        y = x * T.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    else:                       # a quotient and a product that broadcast
        y = x / (x.abs().sum(-1, keepdim=True) + 1) * w
    (y * T.linspace(-1, 2, 128).reshape(4, 32).to(T.bfloat16)).sum().backward()
    return y.float().detach().numpy(), x.grad.float().numpy(), w.grad.float().numpy()


@pytest.mark.parametrize("which", ["rms", "div"])
def test_bfloat16_norms_by_hand_as_torch(which):
    for ours, theirs in zip(_norm_case(tapegrad, which), _norm_case(torch, which)):
        np.testing.assert_array_equal(ours, theirs)


def test_bfloat16_saved_output_revived_as_bfloat16():
    """A custom Function's saved bfloat16 output, no longer referenced when backward runs,
    comes back as a bfloat16 tensor (it came back float32: its backward computed unrounded)."""
    def run(T):
        seen = []

        class Cube(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * x * x
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                y, = ctx.saved_tensors
                seen.append(str(y.dtype))
                return g * y * 1.37

        x = T.tensor([0.3, 1.7, -2.2, 0.77]).to(T.bfloat16).requires_grad_()
        (Cube.apply(x) * 3).sum().backward()
        return seen, x.grad.float().tolist()
    assert run(tapegrad) == run(torch)


def test_bfloat16_log_softmax_backward_as_torch():
    """PyTorch's bfloat16 log_softmax backward: grad - exp(output) * sum(grad) in float32 from
    the rounded output, rounded once (the composite's own graph used the unrounded softmax).
    Its forward values are within an ulp of PyTorch's (docs/differences.md), so the gradient
    is checked against that formula on tapegrad's output, and against torch to an ulp."""
    from tapegrad._bfloat16 import round_to_bfloat16

    def run(T):
        rng = np.random.default_rng(4)
        x = T.tensor((rng.standard_normal((8, 10)) * 2).astype(np.float32)).to(T.bfloat16) \
            .requires_grad_()
        g = T.tensor(rng.standard_normal((8, 10)).astype(np.float32)).to(T.bfloat16)
        out = T.nn.functional.log_softmax(x, 1)
        out.backward(g)
        return out.float().detach().numpy(), g.float().numpy(), x.grad.float().numpy()
    out, g, ours = run(tapegrad)
    expected = round_to_bfloat16(g - np.exp(out) * g.sum(1, keepdims=True))
    np.testing.assert_array_equal(ours, expected)
    np.testing.assert_allclose(ours, run(torch)[2], rtol=2 ** -7, atol=2 ** -12)


def _zero_d_operands(T):
    rng = np.random.default_rng(0)
    a = T.tensor(rng.standard_normal((2, 3, 40)).astype(np.float32)).to(T.bfloat16) \
        .requires_grad_()
    b = T.tensor(np.float32(2.2461943), requires_grad=True)
    c = T.tensor(0.3337, dtype=T.float64, requires_grad=True)
    outs = [T.add(a, b, alpha=-0.5), a * b, a / b, a + b, a - c, (a > b).float(),
            a.abs().pow(b.detach()), b * a, c / (a.abs() + 0.5), T.mul(b, a), b ** a.abs(),
            b - a, b + a, 2.0 * a, 3.3 / (a.abs() + 1)]
    sum(o.float().sum() * (i + 1) for i, o in enumerate(outs)).backward()
    return [(str(o.dtype), type(o.grad_fn).__name__, o.float().detach().numpy()) for o in outs]


def test_bfloat16_with_zero_d_tensors_of_other_dtypes_as_torch():
    """A 0-d float32 / float64 tensor beside a bfloat16 one: add, sub, pow and comparisons cast
    it to bfloat16 (TensorIterator's common dtype), mul and div take a second operand's value
    as it is but cast a first one, and `t * x` (t plain) runs mul(t, x), t first, as PyTorch's
    C slots do: values, dtypes and nodes as torch's (values were an ulp apart in about a third
    of the elements)."""
    for ours, theirs in zip(_zero_d_operands(tapegrad), _zero_d_operands(torch)):
        assert ours[:2] == theirs[:2]
        np.testing.assert_array_equal(ours[2], theirs[2])


def test_subclass_reflected_operator_with_a_plain_tensor_on_the_left():
    """`t * s`, t a plain tensor and s a __torch_function__ subclass's: the override sees t first,
    as PyTorch's (Python asked the subclass's reflected operator first, which passed (s, t))."""
    def run(T):
        seen = []

        class Logged(T.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append([type(a).__name__ for a in args])
                return super().__torch_function__(func, types, args, kwargs or {})

        s = T.tensor([1.0, 2.0]).as_subclass(Logged)
        t = T.tensor([3.0, 4.0])
        seen.clear()
        products = [t * s, t - s, t / s, t + s, t ** s, 2.0 * s]
        return seen, [p.tolist() for p in products]
    assert run(tapegrad) == run(torch)


def test_subclass_registered_during_a_compile_capture_keeps_plain_methods():
    """torch.bfloat16 first named inside a compiled function (its class registered while the
    capture routes Tensor's methods through its recorder): its operators did not keep the route
    (a mode saw `x * 3` as an unnamed function)."""
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import tapegrad as lib
        from tapegrad.overrides import TorchFunctionMode, resolve_name

        @lib.compile
        def casting(x):
            with lib.autocast("cpu", dtype=lib.bfloat16):
                return x @ x

        casting(lib.ones(2, 2)); casting(lib.ones(2, 2))

        class Record(TorchFunctionMode):
            def __init__(self):
                super().__init__()
                self.calls = []

            def __torch_function__(self, func, types, args=(), kwargs=None):
                self.calls.append(resolve_name(func))
                return func(*args, **(kwargs or {}))

        x = lib.ones(3, dtype=lib.bfloat16) / 3
        with Record() as mode:
            (x * 3).sum()
        print(mode.calls)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "['torch.Tensor.mul', 'torch.Tensor.sum']", out.stderr
