"""torch.library and torch.ops: custom operators defined with custom_op / Library, their
autograd formulas, fake kernels, schemas and opcheck, and torch.ops.aten's names, each against
PyTorch (values, gradients, node names, schema text, exception types and key phrases)."""
import itertools

import numpy as np
import pytest

import tapegrad
from tapegrad.autograd import gradcheck

torch = pytest.importorskip("torch")

_names = itertools.count()


def _unique(prefix):
    """A fresh namespace per test: both libraries keep their registries for the process."""
    return f"{prefix}{next(_names)}"


def _define_sin(m, ns):
    """The tutorial's numpy_sin, for module m (torch or tapegrad), with fake and autograd."""
    @m.library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: m.Tensor) -> m.Tensor:
        return m.from_numpy(np.sin(x.detach().numpy()))

    @numpy_sin.register_fake
    def _(x):
        return m.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    return numpy_sin


def test_custom_op_forward_backward_and_node_name_match_torch():
    a = np.linspace(-2, 2, 5)
    out = {}
    for m in (torch, tapegrad):
        ns = _unique("tl_sin")
        op = _define_sin(m, ns)
        x = m.tensor(a, requires_grad=True)
        y = op(x)
        (y * y).sum().backward()
        via_ops = getattr(m.ops, ns).numpy_sin(x.detach())
        out[m] = (y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__.replace(ns, "NS"),
                  via_ops.numpy(), str(getattr(m.ops, ns).numpy_sin.default).replace(ns, "NS"),
                  str(getattr(m.ops, ns).numpy_sin.default._schema).replace(ns, "NS"))
    for want, got in zip(out[torch], out[tapegrad]):
        if isinstance(want, np.ndarray):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        else:
            assert got == want


def test_custom_op_gradcheck_float64():
    op = _define_sin(tapegrad, _unique("tl_gc"))
    x = tapegrad.tensor([0.3, -1.2, 2.0], dtype=tapegrad.float64, requires_grad=True)
    assert gradcheck(op, (x,))


def test_custom_op_without_formula_refuses_backward():
    for m in (torch, tapegrad):
        ns = _unique("tl_nograd")

        @m.library.custom_op(f"{ns}::copy", mutates_args=())
        def copy(x: m.Tensor) -> m.Tensor:
            return x.clone()
        y = copy(m.ones(2, requires_grad=True))
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="no autograd formula was registered"):
            y.sum().backward()


def test_custom_op_keyword_only_inputs_and_needs_input_grad():
    seen = {}
    for m in (torch, tapegrad):
        ns = _unique("tl_kw")

        @m.library.custom_op(f"{ns}::scale", mutates_args=())
        def scale(x: m.Tensor, s: float, *, bias: float = 0.0) -> m.Tensor:
            return x * s + bias

        def setup(ctx, inputs, keyword_only_inputs, output):
            ctx.s = inputs[1]
            seen[m] = [type(inputs).__name__, inputs[1], dict(keyword_only_inputs)]

        def backward(ctx, g):
            seen[m].append(tuple(ctx.needs_input_grad))
            return g * ctx.s, None
        scale.register_autograd(backward, setup_context=setup)
        x = m.ones(2, requires_grad=True)
        y = scale(x, 3.0, bias=1.0)
        y.sum().backward()
        seen[m].append((y.tolist(), x.grad.tolist()))
    assert seen[tapegrad] == seen[torch]


def test_custom_op_two_outputs_and_tensor_lists():
    results = {}
    for m in (torch, tapegrad):
        ns = _unique("tl_multi")

        @m.library.custom_op(f"{ns}::sincos", mutates_args=())
        def sincos(x: m.Tensor) -> tuple[m.Tensor, m.Tensor]:
            return x.sin(), x.cos()

        def bw(ctx, ga, gb):
            x, = ctx.saved_tensors
            return ga * x.cos() - gb * x.sin()
        sincos.register_autograd(bw, setup_context=lambda ctx, inputs, output:
                                 ctx.save_for_backward(inputs[0]))

        @m.library.custom_op(f"{ns}::wsum", mutates_args=())
        def wsum(xs: list[m.Tensor], w: float) -> m.Tensor:
            out = xs[0].clone()
            for t in xs[1:]:
                out = out + t
            return out * w

        def wsum_setup(ctx, inputs, output):
            ctx.w, ctx.n = inputs[1], len(inputs[0])
        wsum.register_autograd(lambda ctx, g: ([g * ctx.w] * ctx.n, None),
                               setup_context=wsum_setup)
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        a, _ = sincos(x)            # (the unused output's gradient is zeros)
        a.sum().backward()
        p, q = m.ones(2, requires_grad=True), m.full((2,), 2.0, requires_grad=True)
        r = wsum([p, q], 3.0)
        r.sum().backward()
        results[m] = (x.grad.tolist(), r.tolist(), p.grad.tolist(), q.grad.tolist(),
                      str(getattr(m.ops, ns).wsum.default._schema).replace(ns, "NS"))
    assert results[tapegrad] == results[torch]


def test_mutating_op_bumps_version_and_schema_marks_it():
    results = {}
    for m in (torch, tapegrad):
        ns = _unique("tl_mut")

        @m.library.custom_op(f"{ns}::numpy_add_", mutates_args={"out"})
        def numpy_add_(a: m.Tensor, b: m.Tensor, out: m.Tensor) -> None:
            np.add(a.numpy(), b.numpy(), out=out.numpy())
        o = m.zeros(3)
        v = o._version
        numpy_add_(m.ones(3), m.ones(3), o)
        results[m] = (o.tolist(), o._version - v,
                      str(getattr(m.ops, ns).numpy_add_.default._schema).replace(ns, "NS"))
        # a write through .numpy() into a value saved for backward is still caught
        w = m.ones(3, requires_grad=True)
        z = (w * 1).exp()
        numpy_add_(m.ones(3), m.ones(3), z.detach())
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
    assert results[tapegrad] == results[torch]


@pytest.mark.parametrize("case", [
    "alias", "missing_annotation", "bad_name", "too_many", "unknown_kw", "wrong_type",
])
def test_custom_op_refusals_match_torch(case):
    outcome = {}
    for m in (torch, tapegrad):
        ns = _unique("tl_bad")
        try:
            if case == "alias":
                op = m.library.custom_op(f"{ns}::same", lambda x: x, mutates_args=(),
                                         schema="(Tensor x) -> Tensor")
                op(m.ones(2))
            elif case == "missing_annotation":
                m.library.custom_op(f"{ns}::f", lambda x: x, mutates_args=())
            elif case == "bad_name":
                def f(x: m.Tensor) -> m.Tensor:
                    return x.clone()
                m.library.custom_op("no_namespace", f, mutates_args=())
            else:
                lib = m.library.Library(ns, "DEF")
                lib.define("f(Tensor x, float s=1.0) -> Tensor")
                lib.impl("f", lambda x, s=1.0: x * s, "CPU")
                op = getattr(m.ops, ns).f
                args = {"too_many": ((m.ones(1), 1.0, 2.0), {}),
                        "unknown_kw": ((m.ones(1),), {"t": 2.0}),
                        "wrong_type": ((m.ones(1),), {"s": "a"})}[case]
                op(*args[0], **args[1])
            outcome[m] = None
        except Exception as e:          # noqa: BLE001 (the exception is what is compared)
            text = str(e).replace(ns, "NS").split("\n")[0]
            # (the alias error names the module PyTorch finds the function in: its own, here)
            outcome[m] = (type(e), text.partition("): ")[2][:80] if case == "alias" else text[:60])
    assert outcome[tapegrad][0] is outcome[torch][0]
    if case not in ("bad_name",):       # (PyTorch's own words there are a tuple unpacking's)
        assert outcome[tapegrad][1] == outcome[torch][1]


def test_library_define_impl_and_autograd_kernel():
    results = {}
    for m in (torch, tapegrad):
        ns = _unique("tl_lib")
        lib = m.library.Library(ns, "DEF")
        lib.define("scaled(Tensor x, float s=1.0) -> Tensor")

        class Scale(m.autograd.Function):
            @staticmethod
            def forward(ctx, x, s):
                ctx.s = s
                return x * s

            @staticmethod
            def backward(ctx, g):
                return g * ctx.s, None
        lib.impl("scaled", lambda x, s=1.0: Scale.apply(x, s), "Autograd")
        lib.impl("scaled", lambda x, s=1.0: x * s, "CPU")
        q = m.ones(2, requires_grad=True)
        y = getattr(m.ops, ns).scaled(q, 4.0)
        y.sum().backward()
        plain = getattr(m.ops, ns).scaled.default(m.ones(2))
        m.library.define(f"{ns}::twice", "(Tensor x) -> Tensor")
        m.library.impl(f"{ns}::twice", "cpu", lambda x: x * 2)
        results[m] = (y.grad_fn.name(), q.grad.tolist(), plain.tolist(),
                      getattr(m.ops, ns).scaled.default.name().replace(ns, "NS"),
                      getattr(m.ops, ns).twice(m.ones(1)).tolist())
    assert results[tapegrad] == results[torch]


def test_opcheck_results_match_torch():
    results = {}
    for m in (torch, tapegrad):
        ns = _unique("tl_opcheck")
        op = _define_sin(m, ns)
        good = m.library.opcheck(op, (m.randn(3, requires_grad=True),))

        @m.library.custom_op(f"{ns}::nofake", mutates_args=())
        def nofake(x: m.Tensor) -> m.Tensor:
            return x.clone()
        partial = m.library.opcheck(nofake, (m.ones(2),), raise_exception=False)

        @m.library.custom_op(f"{ns}::sneaky", mutates_args=())
        def sneaky(x: m.Tensor) -> m.Tensor:
            x.add_(1)
            return x.clone()
        sneaky.register_fake(lambda x: m.empty_like(x))
        with pytest.raises(Exception, match="test_schema failed with Argument x is not "
                                            "defined as mutable but was mutated"):
            m.library.opcheck(sneaky, (m.ones(2),))
        results[m] = (good, {k: v if v == "SUCCESS" else type(v) for k, v in partial.items()})
    assert results[tapegrad] == results[torch]


def test_infer_schema_matches_torch():
    texts = {}
    for m in (torch, tapegrad):
        def proto(x: m.Tensor, n: int, dt: m.dtype, l: list[int], o: int | None = None,
                  z: float = 2.0, *, flag: bool = False) -> m.Tensor: ...

        def inc_(x: m.Tensor, n: float = 1.0) -> None: ...
        texts[m] = (m.library.infer_schema(proto, mutates_args=()),
                    m.library.infer_schema(proto, mutates_args=(), op_name="foo"),
                    m.library.infer_schema(inc_, mutates_args={"x"}))
    assert texts[tapegrad] == texts[torch]


def test_meta_inputs_run_the_fake_kernel():
    op = _define_sin(tapegrad, _unique("tl_meta"))
    y = op(tapegrad.empty(3, 2, device="meta"))
    assert y.is_meta and tuple(y.shape) == (3, 2)


def test_aten_namespace_reaches_tapegrad_ops():
    for m in (torch, tapegrad):
        aten = m.ops.aten
        assert str(aten.add.Tensor) == "aten.add.Tensor" and str(aten.add) == "aten.add"
    a = np.arange(6.0).reshape(2, 3)
    for name, call in [
            ("add", lambda m, x: m.ops.aten.add.Tensor(x, x, alpha=2)),
            ("sum", lambda m, x: m.ops.aten.sum.dim_IntList(x, [1])),
            ("relu", lambda m, x: m.ops.aten.relu.default(x - 2)),
            ("mm", lambda m, x: m.ops.aten.mm.default(x, x.t())),
            ("view", lambda m, x: m.ops.aten.view.default(x, [3, 2])),
            ("packet", lambda m, x: m.ops.aten.mul(x, 3))]:
        want = call(torch, torch.tensor(a)).numpy()
        got = call(tapegrad, tapegrad.tensor(a)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)
    for m in (torch, tapegrad):
        with pytest.raises(AttributeError, match="object has no attribute 'no_such_op'"):
            m.ops.aten.no_such_op


def test_compile_falls_back_to_eager_around_a_custom_op():
    op = _define_sin(tapegrad, _unique("tl_compile"))

    def f(x):
        return (op(x) * 2).sum()
    cf = tapegrad.compile(f)
    for seed in range(3):
        x = tapegrad.tensor(np.random.default_rng(seed).standard_normal(4), requires_grad=True)
        e = f(x)
        e.backward()
        g_eager = x.grad.clone()
        x.grad = None
        c = cf(x)
        c.backward()
        assert c.item() == e.item() and tapegrad.equal(x.grad, g_eager)
    assert "GeneratedBackwardFor_" in cf.explain()
