"""grad_fn._saved_* attributes under PyTorch's names, and grad_fn.next_functions of custom
Functions (checked against torch 2.13)."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

FREED = "Trying to backward through the graph a second time"

# Expressions over x, y: (2, 3), m: (3, 4), v: (3,) float64 leaves that require grad, and
# h = x * 2.  Dims are non-negative: tapegrad reads back normalised dims (PyTorch shows the
# argument as given, a negative one as a huge unsigned number).
EXPRESSIONS = [
    "x + y", "x - y", "2 - x", "x * y", "x * 2.0", "x * 2", "x / y", "x / 3", "x ** 2",
    "x ** 2.5", "x.abs() ** y", "2 ** x", "-x", "x.exp()", "x.abs().log()", "x.tanh()",
    "x.relu()", "x.sigmoid()", "x.abs().sqrt()", "x.abs().rsqrt()", "x.reciprocal()", "x.expm1()",
    "x.abs()", "x.sin()", "x.cos()", "x.abs().log1p()", "x.erf()", "F.silu(x)", "F.gelu(x)",
    "F.gelu(x, approximate='tanh')", "F.leaky_relu(x, 0.2)", "x.clamp(-1, 1)", "x.clamp(min=0)",
    "x.clamp(max=0.5)", "x.sum()", "x.sum(1)", "x.sum(0, keepdim=True)", "x.mean()", "x.mean(1)",
    "x.max()", "x.min()", "x.amax(1)", "x.amin(0, keepdim=True)", "x.max(1)[0]",
    "x.min(0, keepdim=True)[0]", "x.logsumexp(1)", "x @ m", "torch.mm(x, m)", "x @ v", "v @ v",
    "torch.bmm(x[None], m[None])", "x.softmax(1)", "x.log_softmax(0)", "x.view(6)",
    "x.reshape(3, 2)", "x.expand(4, 2, 3)", "x.t()", "x.transpose(0, 1)", "x.permute(1, 0)",
    "x.unsqueeze(2)", "x[None].squeeze(0)", "x[1]", "x[1:]", "torch.cat([x, y], 1)",
    "torch.stack([x, y], 1)", "torch.where(x > 0, x, y)", "(x * 2) * y", "x * y.detach()",
    "h.pow(2)",
]


def _saved(lib, expr, data):
    """{attribute: value} of the grad_fn of `expr` (tensors as (which input it is, values))."""
    x, y, m, v = (lib.tensor(d, requires_grad=True) for d in data)
    h = x * 2
    names = {"x": x, "y": y, "m": m, "v": v, "h": h}
    out = eval(expr, {"torch": lib, "F": lib.nn.functional, **names})
    fn = out.grad_fn
    found = {"name": type(fn).__name__}
    for attr in sorted(a for a in dir(fn) if a.startswith("_saved_") and "strides" not in a):
        value = getattr(fn, attr)
        if isinstance(value, (tg.Tensor, getattr(lib, "Tensor"))):
            which = next((k for k, t in names.items() if t is value), "new")
            found[attr] = (which, str(value.dtype), value.detach().numpy().astype(float).round(12).tolist())
        else:
            found[attr] = value
    return found


def test_saved_attributes_match_torch(torch):
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((2, 3)), rng.standard_normal((2, 3)),
            rng.standard_normal((3, 4)), rng.standard_normal(3)]
    for expr in EXPRESSIONS:
        assert _saved(tg, expr, data) == _saved(torch, expr, data), expr


def test_saved_inputs_and_results_without_torch():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.pow(2)
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_exponent == 2
    e = x.exp()
    r = e.grad_fn._saved_result
    assert r is not e and r.equal(e)
    assert (x * 2).grad_fn._saved_self is None           # not needed: a number's gradient
    np.testing.assert_array_equal((x * 2).grad_fn._saved_other.numpy(), 2)
    s = x.sum(0, keepdim=True).grad_fn
    assert (s._saved_dim, s._saved_keepdim, s._saved_self_sym_sizes) == ((0,), True, (3,))
    assert "_saved_self" in dir(y.grad_fn)
    with pytest.raises(AttributeError, match="has no attribute '_saved_nothing'"):
        y.grad_fn._saved_nothing


def test_saved_values_of_dead_tensors_keep_their_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.abs().log()                                     # x.abs() dies: only its value is saved
    saved = y.grad_fn._saved_self
    assert type(saved.grad_fn).__name__ == "AbsBackward0" and saved.requires_grad
    e = (x * 3).exp()
    fn = e.grad_fn
    del e
    r = fn._saved_result                                   # the output died: it comes back
    assert r.grad_fn is fn and r.requires_grad
    r.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp(3 * np.array([1.0, 2.0])))


def test_saved_tensors_after_backward_and_inplace(torch):
    for lib in (tg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.pow(3)
        fn = y.grad_fn
        y.sum().backward()
        with pytest.raises(RuntimeError, match=FREED):
            fn._saved_self
        assert fn._saved_exponent == 3                     # non-tensor attributes stay readable
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a * 2
        c = b * b
        b.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            c.grad_fn._saved_self


def _graph(lib):
    """What a script sees of a custom Function's node: names and next_functions."""

    class MyExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, i, k):
            r = i.exp() * k
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            r, = ctx.saved_tensors
            return g * r, None

    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b, a * b

        @staticmethod
        def backward(ctx, ga, gb):
            return ga, gb

    def names(fn):
        return [(None if f is None else type(f).__name__, i) for f, i in fn.next_functions]

    x = lib.randn(3, requires_grad=True)
    w = lib.randn(3, requires_grad=True)
    y = MyExp.apply(x * 2, 3.0)
    fn = y.grad_fn
    p, q = Two.apply(x, w.detach())
    z = (p * 2 + q).sum()
    add = z.grad_fn.next_functions[0][0]
    return [type(fn).__name__, fn.name(), names(fn),
            fn.next_functions[0][0].next_functions[0][0].variable is x,
            type(p.grad_fn).__name__, p.grad_fn is q.grad_fn, names(p.grad_fn), names(add),
            names(add.next_functions[0][0]), fn.metadata]


def test_custom_function_node_matches_torch(torch):
    assert _graph(tg) == _graph(torch)


def test_saved_attributes_right_after_import_and_random_stream_untouched():
    # The reader is installed by `import tapegrad` (not by tapegrad.autograd, which loads
    # lazily), and learning the ops' layouts draws no random numbers.
    import subprocess
    import sys
    code = ("import tapegrad as tg\n"
            "tg.manual_seed(0); a = tg.randn(3)\n"
            "tg.manual_seed(0); x = tg.ones(2, requires_grad=True)\n"
            "assert (x ** 2).grad_fn._saved_self is x\n"
            "assert tg.randn(3).equal(a)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
