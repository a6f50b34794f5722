"""torch.autograd.graph: saved-tensor hooks (saved_tensors_hooks, save_on_cpu,
disable_saved_tensors_hooks, SavedTensor.register_hooks), Node, GradientEdge, increment_version.

Each scenario runs with L = tapegrad and L = torch (the oracle; those tests skip without torch):
values, gradients, hook call counts where PyTorch's are defined, error types and phrases.
Gradients under hooks are also checked against finite differences in float64.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import numeric_grad


def values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def both(scenario):
    """scenario(L) for tapegrad and torch; returns (tapegrad's result, torch's)."""
    torch = pytest.importorskip("torch")
    return scenario(tg), scenario(torch)


def error_of(fn):
    try:
        fn()
    except Exception as e:                      # noqa: BLE001 (the type is what we compare)
        return type(e).__name__, str(e)
    return None


# -- saved_tensors_hooks ---------------------------------------------------------------------------

def test_pack_and_unpack_see_the_saved_tensors_and_backward_uses_them():
    def scenario(L):
        a = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
        b = L.tensor([1.5, 0.25, -0.5], dtype=L.float64, requires_grad=True)
        log = []

        def pack(x):
            log.append(("pack", x is a or x is b, L.is_grad_enabled(), tuple(x.shape)))
            return x

        def unpack(x):
            log.append(("unpack", L.is_grad_enabled()))
            return x

        with L.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (a * b).exp()
        packs = sorted(log)
        log.clear()
        y.sum().backward()
        return packs, sorted(log), values(a.grad), values(b.grad)

    mine, theirs = both(scenario)
    assert mine[0] == theirs[0]         # a, b and exp's result: three packs, grad mode off
    assert mine[1] == theirs[1]         # three unpacks in backward, grad mode off
    np.testing.assert_allclose(mine[2], theirs[2], rtol=1e-12)
    np.testing.assert_allclose(mine[3], theirs[3], rtol=1e-12)


def test_backward_uses_what_unpack_returns():
    def scenario(L):
        a = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
        b = L.tensor([1.5, 0.25, -0.5], dtype=L.float64, requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(
                lambda x: x.numel(), lambda n: L.full((n,), 2.0, dtype=L.float64)):
            y = a * b
        y.sum().backward()
        return values(a.grad), values(b.grad)

    mine, theirs = both(scenario)
    np.testing.assert_array_equal(mine[0], theirs[0])
    np.testing.assert_array_equal(mine[1], theirs[1])


def test_hooks_that_move_values_out_and_back_give_exact_gradients():
    """A pack that keeps only a NumPy copy (as a to-disk hook would) and an unpack that rebuilds
    the tensor: the gradients equal finite differences, for ops that save inputs, results and
    intermediates (linear, tanh, softmax, layer_norm, max)."""
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((4, 5))
    w0 = rng.standard_normal((3, 5))
    store = {}

    def pack(t):
        key = len(store)
        store[key] = np.array(t.detach().numpy(), copy=True)
        return key

    def unpack(key):
        return tg.from_numpy(store[key].copy())

    def f(x, w):
        h = tg.nn.functional.linear(x, w).tanh()
        h = tg.nn.functional.layer_norm(h, (3,))
        return (tg.softmax(h, dim=1) * h.max(dim=1, keepdim=True).values).sum()

    x = tg.tensor(x0, requires_grad=True)
    w = tg.tensor(w0, requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(pack, unpack):
        loss = f(x, w)
    assert store                        # something was packed
    loss.backward()
    expected = numeric_grad(lambda xa, wa: f(tg.tensor(xa), tg.tensor(wa)).item(),
                            [x0.copy(), w0.copy()])
    np.testing.assert_allclose(x.grad.numpy(), expected[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(w.grad.numpy(), expected[1], rtol=1e-6, atol=1e-8)


def test_gradients_under_hooks_match_torch_for_a_small_network():
    def scenario(L):
        L.manual_seed(0)
        g = np.random.default_rng(1)
        x = L.tensor(g.standard_normal((6, 4)), dtype=L.float64)
        w1 = L.tensor(g.standard_normal((8, 4)), dtype=L.float64, requires_grad=True)
        w2 = L.tensor(g.standard_normal((2, 8)), dtype=L.float64, requires_grad=True)
        target = L.tensor([0, 1, 1, 0, 1, 0])
        with L.autograd.graph.save_on_cpu():
            h = L.nn.functional.relu(L.nn.functional.linear(x, w1))
            loss = L.nn.functional.cross_entropy(L.nn.functional.linear(h, w2), target)
        loss.backward()
        return loss.item(), values(w1.grad), values(w2.grad)

    mine, theirs = both(scenario)
    assert mine[0] == pytest.approx(theirs[0], rel=1e-12)
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-10)
    np.testing.assert_allclose(mine[2], theirs[2], rtol=1e-10)


def test_retain_graph_unpacks_at_each_backward_and_the_values_are_freed_after():
    def scenario(L):
        a = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
        counts = [0, 0]

        def pack(t):
            counts[0] += 1
            return t

        def unpack(t):
            counts[1] += 1
            return t

        with L.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (a * a).sin()
        y.sum().backward(retain_graph=True)
        first = list(counts)
        y.sum().backward()
        second = list(counts)
        err = error_of(lambda: y.grad_fn._saved_self)
        return first, second, err[0], "backward through the graph a second time" in err[1]

    mine, theirs = both(scenario)
    assert mine == theirs


def test_unpack_must_return_a_tensor():
    def scenario(L):
        a = L.tensor([0.5, -1.0], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
            y = a * a
        return error_of(lambda: y.sum().backward())

    mine, theirs = both(scenario)
    assert mine == theirs


def test_unpack_with_another_shape_is_refused():
    def scenario(L):
        a = L.tensor([0.5, -1.0], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: L.ones(5)):
            y = a * a
        return error_of(lambda: y.sum().backward())

    mine, theirs = both(scenario)       # (PyTorch's formula meets grad [2] and value [5])
    assert mine == theirs
    assert mine[0] == "RuntimeError" and "size of tensor a (2)" in mine[1]


def test_pack_may_not_modify_its_input_in_place():
    def scenario(L):
        a = L.tensor([0.5, -1.0], requires_grad=True)
        b = L.tensor([2.0, 3.0])

        def pack(t):
            with L.no_grad():
                t.add_(1)
            return t

        def run():
            with L.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                y = a * b               # (kept: tapegrad packs a value when the op is done)
            return y
        return error_of(run)

    mine, theirs = both(scenario)
    assert mine == theirs


def test_nested_hooks_the_innermost_applies_and_no_grad_saves_nothing():
    def scenario(L):
        a = L.tensor([0.5, -1.0], requires_grad=True)
        log = []
        with L.autograd.graph.saved_tensors_hooks(lambda t: log.append("outer") or t,
                                                   lambda t: t):
            with L.autograd.graph.saved_tensors_hooks(lambda t: log.append("inner") or t,
                                                       lambda t: t):
                y = a.exp()
            with L.no_grad():
                a * a
            z = y.sin()
        return log, values(L.autograd.grad(z.sum(), a)[0])

    mine, theirs = both(scenario)
    assert mine[0] == theirs[0]
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-6)


def test_saved_attributes_go_through_unpack():
    def scenario(L):
        a = L.tensor([0.5, -1.0], dtype=L.float64, requires_grad=True)
        log = []
        with L.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: log.append(1) or t):
            y = a.exp()
        r = y.grad_fn._saved_result
        return len(log), values(r)

    mine, theirs = both(scenario)
    assert mine[0] == theirs[0]
    np.testing.assert_array_equal(mine[1], theirs[1])


def test_in_place_write_after_an_identity_hook_is_refused_not_a_wrong_gradient():
    """PyTorch skips its version check for hooked values: an identity hook then gives a wrong
    gradient silently.  tapegrad keeps the check while the unpacked tensor is the saved storage
    (docs/differences.md) and, like PyTorch, trusts a hook that made a copy."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        z = x.clone()
        w = z * z
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        z = x.clone()
        w = z * z
    z.add_(1)
    w.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])     # 2 * z at save time


def test_disable_saved_tensors_hooks():
    def scenario(L):
        g = L.autograd.graph
        out = []
        with g.disable_saved_tensors_hooks("no hooks here"):
            out.append(error_of(lambda: g.saved_tensors_hooks(lambda t: t,
                                                               lambda t: t).__enter__()))
        with g.saved_tensors_hooks(lambda t: t, lambda t: t):
            out.append(error_of(lambda: g.disable_saved_tensors_hooks("refused").__enter__()))
        with g.saved_tensors_hooks(lambda t: t, lambda t: t):     # enabled again
            out.append("ok")

        @g.disable_saved_tensors_hooks("as a decorator")
        def f():
            with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        out.append(error_of(f))
        return out

    mine, theirs = both(scenario)
    assert mine == theirs


def test_hooks_are_per_thread():
    a = tg.tensor([0.5, -1.0], requires_grad=True)
    log = []
    seen = []

    def other():
        y = a * a                       # no hooks on this thread
        seen.append(y)

    with tg.autograd.graph.saved_tensors_hooks(lambda t: log.append(1) or t, lambda t: t):
        th = threading.Thread(target=other)
        th.start()
        th.join()
    assert log == []
    seen[0].sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, -2.0])


def test_compiled_function_runs_eagerly_under_hooks():
    a = tg.tensor([0.5, -1.0], requires_grad=True)
    f = tg.compile(lambda x: (x * x).sum())
    f(a).backward()
    f(a).backward()                     # (captured and replayed)
    log = []
    with tg.autograd.graph.saved_tensors_hooks(lambda t: log.append(1) or t, lambda t: t):
        y = f(a)
    y.backward()
    assert log                          # the hooks saw the eager run
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, -6.0])


# -- SavedTensor.register_hooks --------------------------------------------------------------------

def test_register_hooks_on_one_saved_tensor():
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.pow(2)
        log = []
        raw = y.grad_fn._raw_saved_self
        raw.register_hooks(lambda t: log.append("p") or t, lambda t: log.append("u") or t)
        after_register = list(log)
        again = error_of(lambda: raw.register_hooks(lambda t: t, lambda t: t))
        y.sum().backward()
        freed = error_of(lambda: y.grad_fn._raw_saved_self.register_hooks(lambda t: t,
                                                                          lambda t: t))
        return (after_register, log, again, freed, values(x.grad),
                type(raw).__name__)

    mine, theirs = both(scenario)
    assert mine[:4] == theirs[:4]
    np.testing.assert_array_equal(mine[4], theirs[4])
    assert mine[5] == theirs[5] == "SavedTensor"


# -- Node, GradientEdge, increment_version ---------------------------------------------------------

def test_node_isinstance_and_gradient_edge():
    def scenario(L):
        g = L.autograd.graph
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2

        class Twice(L.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 2

            @staticmethod
            def backward(ctx, gr):
                return gr * 2

        z = Twice.apply(x)
        edge = g.get_gradient_edge(y)
        leaf = g.get_gradient_edge(x)
        return (isinstance(y.grad_fn, g.Node), isinstance(z.grad_fn, g.Node),
                isinstance(3, g.Node), edge.node is y.grad_fn, edge.output_nr,
                leaf.node.name(), leaf.output_nr, edge._fields,
                error_of(lambda: g.get_gradient_edge(L.ones(2))))

    mine, theirs = both(scenario)
    assert mine == theirs


def test_increment_version_makes_backward_refuse_the_saved_value():
    def scenario(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        z = x.clone()
        w = z * z
        before = z._version
        L.autograd.graph.increment_version(z)
        err = error_of(lambda: w.sum().backward())
        return before, z._version, err[0], "modified by an inplace operation" in err[1]

    mine, theirs = both(scenario)
    assert mine == theirs


def test_custom_function_saved_tensors_go_through_the_hooks():
    def scenario(L):
        class Square(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * x * g

        log = []
        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: log.append(("pack", t is x)) or t,
                                                   lambda t: log.append("unpack") or t):
            y = Square.apply(x)
        y.sum().backward()
        first = values(x.grad)
        with L.autograd.graph.saved_tensors_hooks(
                lambda t: 0, lambda t: L.full((2,), 3.0, dtype=L.float64)):
            y = Square.apply(x)
        y.sum().backward()
        return log, first, values(x.grad)

    mine, theirs = both(scenario)
    assert mine[0] == theirs[0]
    np.testing.assert_array_equal(mine[1], theirs[1])
    np.testing.assert_array_equal(mine[2], theirs[2])


# -- grad_fn hooks and metadata --------------------------------------------------------------------

def test_grad_fn_register_hook_sees_and_replaces_the_node_gradients():
    def scenario(L):
        a = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        b = L.tensor([3.0, 4.0], dtype=L.float64)
        y = a * b
        log = []

        def post(grad_inputs, grad_outputs):
            log.append(([None if g is None else values(g).tolist() for g in grad_inputs],
                        [values(g).tolist() for g in grad_outputs]))
            return (grad_inputs[0] * 10, None)

        def pre(grad_outputs):
            log.append(("pre", [values(g).tolist() for g in grad_outputs]))
            return (grad_outputs[0] + 1,)

        h1 = y.grad_fn.register_hook(post)
        y.grad_fn.register_prehook(pre)
        y.backward(L.tensor([1.0, 1.0], dtype=L.float64), retain_graph=True)
        first = values(a.grad).tolist()
        h1.remove()
        a.grad = None
        y.backward(L.tensor([1.0, 1.0], dtype=L.float64))
        return log, first, values(a.grad).tolist()

    mine, theirs = both(scenario)
    assert mine == theirs


def test_grad_fn_hooks_with_create_graph_give_differentiable_gradients():
    def scenario(L):
        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        y = x.sin()
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 2,))
        (g,) = L.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = L.autograd.grad(g.sum(), x)
        return values(g).tolist(), values(gg).tolist()

    mine, theirs = both(scenario)
    np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_accumulate_grad_node_hook_and_metadata():
    def scenario(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        log = []
        acc = y.grad_fn.next_functions[0][0]
        acc.register_hook(lambda gi, go: log.append((len(gi), values(go[0]).tolist(),
                                                    values(x.grad).tolist())))
        y.grad_fn.metadata["tag"] = "double"
        y.sum().backward()
        return log, y.grad_fn.metadata, acc.name()

    mine, theirs = both(scenario)
    assert mine == theirs


def test_module_register_backward_hook_is_a_hook_on_the_last_node():
    def scenario(L):
        m = L.nn.Tanh()
        log = []
        m.register_backward_hook(lambda mod, gi, go: log.append(
            (type(mod).__name__, [tuple(g.shape) for g in gi], [tuple(g.shape) for g in go])))
        x = L.ones(4, 3, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)     # (the next test's subject)
            m(x).sum().backward()
        err = error_of(lambda: m.register_full_backward_hook(lambda *a: None))
        lin = L.nn.Linear(3, 2)
        lin.register_full_backward_hook(lambda *a: None)
        err2 = error_of(lambda: lin.register_backward_hook(lambda *a: None))
        return log, err, err2, m._is_full_backward_hook, lin._is_full_backward_hook

    mine, theirs = both(scenario)
    assert mine == theirs


def test_module_register_backward_hook_warns_when_the_module_has_several_nodes():
    def scenario(L):
        lin = L.nn.Linear(3, 2)
        lin.register_backward_hook(lambda *a: None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lin(L.ones(4, 3, requires_grad=True))
        return [(w.category.__name__, str(w.message)) for w in caught]

    mine, theirs = both(scenario)
    assert mine == theirs


class _ScaledProduct:
    """A custom Function (x, k, y) -> (x * y * k, x + y) built on library L, with a non-tensor
    argument between two tensors (its node's hooks see one entry per tensor argument)."""

    @staticmethod
    def make(L):
        class ScaledProduct(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, k, y):
                ctx.save_for_backward(x, y)
                ctx.k = k
                return x * y * k, x + y

            @staticmethod
            def backward(ctx, g1, g2):
                x, y = ctx.saved_tensors
                return g1 * y * ctx.k + g2, None, g1 * x * ctx.k + g2
        return ScaledProduct


def test_custom_function_node_hooks_see_and_replace_its_gradients():
    # the hooks of a custom Function's node (pytorch-cnn-visualizations hangs them on a
    # convolution's node through Module.register_backward_hook); before, they were missing
    def scenario(L):
        fn = _ScaledProduct.make(L)
        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        y = L.tensor([3.0, 4.0], dtype=L.float64, requires_grad=True)
        log = []

        def shown(gs):
            return [None if g is None else values(g).tolist() for g in gs]

        def post(grad_inputs, grad_outputs):
            log.append(("post", shown(grad_inputs), shown(grad_outputs)))
            return (grad_inputs[0] * 10, grad_inputs[1])

        def pre(grad_outputs):
            log.append(("pre", shown(grad_outputs)))
            return (grad_outputs[0] * 3, None)

        a, b = fn.apply(x, 2.0, y)
        same_node = a.grad_fn is b.grad_fn
        handle = a.grad_fn.register_hook(post)
        a.grad_fn.register_prehook(pre)
        (a.sum() + b.sum()).backward(retain_graph=True)
        first = values(x.grad).tolist(), values(y.grad).tolist()
        handle.remove()
        x.grad = y.grad = None
        a.sum().backward()
        return same_node, log, first, values(x.grad).tolist(), values(y.grad).tolist()

    mine, theirs = both(scenario)
    assert mine == theirs
    # the pre-hook tripled a's gradient and dropped b's, the post-hook scaled x's by 10
    assert mine[2] == ([180.0, 240.0], [6.0, 12.0])


def test_custom_function_node_hook_results_are_checked():
    def scenario(L):
        fn = _ScaledProduct.make(L)
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = L.tensor([3.0, 4.0], requires_grad=True)
        errors = []
        for hook in (lambda gi, go: (gi[0],), lambda gi, go: (gi[0], 3), lambda gi, go: 5,
                     lambda gi, go: (gi[0], L.ones(3))):
            a, _ = fn.apply(x, 2.0, y)
            a.grad_fn.register_hook(hook)
            errors.append(error_of(lambda: a.sum().backward()))
        a, _ = fn.apply(x, 2.0, y)
        a.grad_fn.register_prehook(lambda go: (go[0],))
        errors.append(error_of(lambda: a.sum().backward()))
        return errors

    mine, theirs = both(scenario)
    assert [e[0] for e in mine] == [e[0] for e in theirs]
    for (_, m), (_, t) in zip(mine, theirs):
        assert m.replace("<lambda>", "") == t.replace("<lambda>", ""), (m, t)


def test_custom_function_node_hooks_under_create_graph_keep_the_graph():
    def scenario(L):
        fn = _ScaledProduct.make(L)
        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        y = L.tensor([3.0, 4.0], dtype=L.float64, requires_grad=True)
        a, _ = fn.apply(x, 2.0, y)
        a.grad_fn.register_hook(lambda gi, go: (gi[0] * gi[0], gi[1]))
        (gx,) = L.autograd.grad(a.sum(), x, create_graph=True)
        (ggy,) = L.autograd.grad(gx.sum(), y)
        return values(gx).tolist(), values(ggy).tolist()

    mine, theirs = both(scenario)
    assert mine == theirs


def test_legacy_backward_hook_on_a_convolution_sees_the_input_gradient():
    # saliency maps (pytorch-cnn-visualizations): register_backward_hook on the first Conv2d
    # keeps grad_in[0], the gradient of the image; before, registering it raised AttributeError
    def scenario(L):
        conv = L.nn.Conv2d(1, 2, 3)
        with L.no_grad():
            conv.weight.copy_(L.arange(18, dtype=L.float32).reshape(2, 1, 3, 3) / 10 - 0.8)
            conv.bias.copy_(L.tensor([0.1, -0.2]))
        seen = {}

        def hook(module, grad_in, grad_out):
            seen["in0"] = values(grad_in[0])
            seen["out"] = [tuple(g.shape) for g in grad_out]

        conv.register_backward_hook(hook)
        img = (L.arange(25, dtype=L.float32).reshape(1, 1, 5, 5) / 25).requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            conv(img).pow(2).sum().backward()
        return seen["in0"], seen["out"], values(img.grad)

    mine, theirs = both(scenario)
    np.testing.assert_allclose(mine[0], theirs[0], rtol=1e-6)
    assert mine[1] == theirs[1]
    np.testing.assert_allclose(mine[0], mine[2], rtol=0)    # the image's gradient itself


def test_script_method_subclass_of_script_module_runs_its_forward():
    # the legacy scripting API (EffectivePyTorch's checkerboard network)
    def scenario(L):
        class Net(L.jit.ScriptModule):
            def __init__(self):
                super().__init__()
                self.lin = L.nn.Linear(2, 1)

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")

                @L.jit.script_method
                def forward(self, x):
                    return self.lin(x) * 2
            warned = [(w.category.__name__, str(w.message)) for w in caught]

        net = Net()
        with L.no_grad():
            net.lin.weight.fill_(0.5)
            net.lin.bias.fill_(0.25)
        out = net(L.ones(3, 2))
        return values(out).tolist(), isinstance(net, L.jit.ScriptModule), Net.warned

    mine, theirs = both(scenario)
    assert mine == theirs


def test_module_dir_lists_pytorchs_internals():
    torch = pytest.importorskip("torch")
    # print(dir(model)) in a script prints what PyTorch prints: no tapegrad-only helpers either
    assert dir(tg.nn.Linear(2, 3)) == dir(torch.nn.Linear(2, 3))
    assert dir(tg.nn.Module()) == dir(torch.nn.Module())


def test_replicate_for_data_parallel_matches_pytorch():
    torch = pytest.importorskip("torch")
    for L in (tg, torch):
        net = L.nn.Sequential(L.nn.Linear(2, 3), L.nn.BatchNorm1d(3))
        replica = net._replicate_for_data_parallel()
        assert type(replica) is type(net) and replica._is_replica
        assert dict(replica._parameters) == {} and list(replica._modules) == ["0", "1"]
        assert replica._modules is not net._modules and replica[0] is net[0]
        assert not hasattr(net, "_is_replica") or not net._is_replica


def test_tensor_view_and_output_attributes():
    def scenario(L):
        x = L.arange(6.0).requires_grad_()
        v = x[1:]
        w = v.view(5)
        pieces = x.split(2)
        y = x * 2
        return (v._base is x, w._base is x, x._base, y._base, v._is_view(), x._is_view(),
                x.detach()._is_view(), [p.output_nr for p in pieces], x.output_nr, y.output_nr,
                [t.output_nr for t in x.unbind()][:3])

    mine, theirs = both(scenario)
    assert mine == theirs


def test_multithreading_switch_and_is_tensor_like():
    def scenario(L):
        out = [L.autograd.is_multithreading_enabled()]
        with L.autograd.set_multithreading_enabled(False):
            out.append(L.autograd.is_multithreading_enabled())
        out.append(L.autograd.is_multithreading_enabled())
        from importlib import import_module
        is_tensor_like = import_module(L.__name__ + ".overrides").is_tensor_like
        out += [is_tensor_like(L.ones(1)), is_tensor_like(3), is_tensor_like(L.Tensor),
                is_tensor_like(np.ones(1))]
        return out

    mine, theirs = both(scenario)
    assert mine == theirs


def test_register_multi_grad_hook_all_and_any():
    def scenario(L):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = L.tensor([3.0, 4.0], requires_grad=True)
        c = L.tensor([5.0, 6.0], requires_grad=True)
        calls = []
        h = L.autograd.graph.register_multi_grad_hook(
            (a, b, c), lambda grads: calls.append(
                ["all"] + [None if g is None else values(g).tolist() for g in grads]))
        u = a * 2                           # (any: v's gradient is computed before u's)
        v = u * b
        L.autograd.graph.register_multi_grad_hook(
            (u, v), lambda grad: calls.append(["any", values(grad).tolist()]), mode="any")
        (a * b).sum().backward()                # c is not reached: None
        (2 * a * b + c).sum().backward()
        v.sum().backward()
        h.remove()
        (a + b).sum().backward()
        err = error_of(lambda: L.autograd.graph.register_multi_grad_hook((a,), print,
                                                                         mode="some"))
        return sorted(calls, key=repr), err

    mine, theirs = both(scenario)
    assert mine == theirs


def test_custom_function_returning_an_input_marked_non_differentiable():
    """The output is a view of the returned input: the mark must still apply to it (it did
    not: the output required grad and its gradient reached the Function's backward)."""
    def scenario(L):
        seen = []

        class Pass(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.mark_non_differentiable(y)
                return x, y

            @staticmethod
            def backward(ctx, gx, gy):
                seen.append(values(gy).tolist())
                return gx, gy

        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = L.tensor([3.0, 4.0], requires_grad=True)
        x, y = Pass.apply(a, b)
        (x * y).sum().backward()
        return y.requires_grad, seen, values(a.grad).tolist(), values(b.grad).tolist()

    mine, theirs = both(scenario)
    assert mine == theirs


def test_full_backward_hook_gets_zeros_for_a_tensor_input_without_grad():
    def scenario(L):
        class Two(L.nn.Module):
            def forward(self, a, b, k=1.0):
                return a * b * k, a + b

        m = Two()
        log = []
        m.register_full_backward_hook(lambda mod, gi, go: log.append(
            ([None if g is None else values(g).tolist() for g in gi],
             [None if g is None else values(g).tolist() for g in go])))
        a = L.ones(2, requires_grad=True)
        b = L.full((2,), 3.0)
        p, q = m(a, b, k=2.0)
        (p.sum() + 2 * q.sum()).backward()
        p, q = m(b, a, 5)
        p.sum().backward()
        return log, values(a.grad).tolist()

    mine, theirs = both(scenario)
    assert mine == theirs


def test_a_write_right_after_the_op_does_not_reach_what_pack_sees():
    """tapegrad packs when the op is done (at the next op): every write path flushes first, so
    a cloning hook keeps the value as saved, as PyTorch's (it kept the written one: a wrong
    gradient)."""
    def scenario(L):
        out = []
        a = L.tensor([1.0, 2.0], requires_grad=True)
        for write in (lambda b: b.mul_(10), lambda b: b.__setitem__(0, 0.0),
                      lambda b: b.numpy().__setitem__(1, -1.0)):
            b = L.tensor([3.0, 4.0])
            with L.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
                y = a * b
                with L.no_grad():
                    write(b)
            a.grad = None
            y.sum().backward()
            out.append(values(a.grad).tolist())
        return out

    mine, theirs = both(scenario)
    assert mine == theirs


def test_a_write_that_bypasses_the_flush_is_refused_not_packed():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([3.0, 4.0])
    with pytest.raises(RuntimeError, match="written before the saved-tensor pack hook ran"):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = a * b
            tg.autograd.graph.increment_version(b)     # (a writer that only bumps the version)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_node_hook_results_checked_alike_for_builtin_and_custom_nodes(torch):
    # one check (the core's node_hook_result) for both kinds of node: a non-tuple return is
    # PyTorch's "expected tuple" TypeError on a built-in op's node too
    def message(T, custom):
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        x = T.ones(2, requires_grad=True)
        y = Double.apply(x) if custom else x * 2
        y.grad_fn.register_hook(lambda gi, go: gi[0])
        with pytest.raises(TypeError) as info:
            y.sum().backward()
        return str(info.value)
    for custom in (False, True):
        assert message(tg, custom) == message(torch, custom)
