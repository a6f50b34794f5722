"""torch.fx on tapegrad (session 36): symbolic tracing prints the graph and generates the code
PyTorch does for the same models; GraphModule runs them with the original's values and
gradients; graph rewriting, Interpreter, ShapeProp and the tracing errors as PyTorch's."""
import copy
import operator

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _scaled(x, k):
    return x * k


tapegrad.fx.wrap("_scaled")
torch.fx.wrap("_scaled")


def _cnn(lib):
    nn, F = lib.nn, lib.nn.functional

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(4 * 3 * 3, 5)

        def forward(self, x):
            x = self.pool(F.relu(self.bn(self.conv(x))))
            x = lib.flatten(x, 1)
            y = x * 2 + 1
            y = y.relu().sum(dim=1, keepdim=True)
            b = x.shape[0]
            n = x.size(1)
            z = lib.cat([x, y], dim=1).view(b, -1)
            z = F.dropout(z, p=0.1)
            return self.fc(z[:, :n]) + F.relu(z).mean()
    return CNN()


def _attrs(lib):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lib.ones(3))
            self.register_buffer("b", lib.zeros(3))
            self.c = lib.arange(3.0)
            self.seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU())

        def forward(self, x):
            y = x * self.w + self.b + self.c
            y = self.seq(y)
            y = _scaled(y, 2.0)
            y = lib.relu(-y) @ self.w
            return {"a": y, "b": (y, y.t())}
    return M()


def _functional(lib):
    F = lib.nn.functional

    def f(x, n=3):
        y = F.max_pool2d(x, 2)
        z = F.softmax(y, dim=1)
        w = F.batch_norm(z, None, None, training=True)
        w = F.layer_norm(w, (2,))
        return F.gelu(w) + F.linear(w, w) - 1.5 / w
    return f


def _texts(gm):
    return str(gm.graph), gm.code, str(gm), gm.print_readable(print_output=False)


@pytest.mark.parametrize("build", [_cnn, _attrs, _functional])
def test_fx36_printed_graph_and_code_as_pytorch(build):
    ours = _texts(tapegrad.fx.symbolic_trace(build(tapegrad)))
    theirs = _texts(torch.fx.symbolic_trace(build(torch)))
    for a, b in zip(ours, theirs):
        assert a == b


def test_fx36_nodes_users_targets():
    gm = tapegrad.fx.symbolic_trace(_cnn(tapegrad))
    tgm = torch.fx.symbolic_trace(_cnn(torch))
    ours = [(n.op, n.name, str(n.target) if isinstance(n.target, str) else n.target.__name__,
             str(n.args), str(n.kwargs), [u.name for u in n.users]) for n in gm.graph.nodes]
    theirs = [(n.op, n.name, str(n.target) if isinstance(n.target, str) else n.target.__name__,
               str(n.args), str(n.kwargs), [u.name for u in n.users]) for n in tgm.graph.nodes]
    assert ours == theirs
    relu = [n for n in gm.graph.nodes if n.name == "relu"][0]
    assert relu.target is tapegrad.nn.functional.relu
    assert [n for n in gm.graph.nodes if n.name == "mul"][0].target is operator.mul
    assert type(gm).__name__ == "CNN" and isinstance(gm, tapegrad.fx.GraphModule)


def test_fx36_traced_values_and_gradients_equal_original():
    tapegrad.manual_seed(3)
    m = _attrs(tapegrad)
    gm = tapegrad.fx.symbolic_trace(m)
    x = tapegrad.randn(4, 3, dtype=tapegrad.float32, requires_grad=True)
    out, ref = gm(x), m(x)
    np.testing.assert_allclose(out["a"].detach().numpy(), ref["a"].detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(out["b"][1].detach().numpy(), ref["b"][1].detach().numpy(), rtol=1e-6)
    g_traced = tapegrad.autograd.grad(out["a"].sum(), [x, gm.w, getattr(gm.seq, "0").weight])
    g_orig = tapegrad.autograd.grad(ref["a"].sum(), [x, m.w, m.seq[0].weight])
    for a, b in zip(g_traced, g_orig):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    # the GraphModule shares the root's parameters; the constant becomes a buffer, as in PyTorch
    assert gm.w is m.w
    assert sorted(gm.state_dict()) == sorted(torch.fx.symbolic_trace(_attrs(torch)).state_dict())
    assert [n for n, _ in gm.named_buffers()] == ["b", "c"]
    # float64 finite differences through the generated forward
    m64 = _net(tapegrad).double().eval()
    gm64 = tapegrad.fx.symbolic_trace(m64)
    xin = tapegrad.randn(2, 2, 4, 4, dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda t: gm64(t), (xin,))


def test_fx36_control_flow_iteration_len_refused_as_pytorch():
    def branch(lib):
        return lambda x: x if x.sum() > 0 else -x

    cases = [branch, lambda lib: (lambda x: [a for a in x]), lambda lib: (lambda x: len(x)),
             lambda lib: (lambda x: int(x))]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            torch.fx.symbolic_trace(case(torch))
        with pytest.raises(Exception) as ours:
            tapegrad.fx.symbolic_trace(case(tapegrad))
        assert type(ours.value).__name__ == type(theirs.value).__name__
        assert str(ours.value) == str(theirs.value).replace("Proxy(x)", "Proxy(x)")
    with pytest.raises(tapegrad.fx.proxy.TraceError, match="cannot be used as inputs to control flow"):
        tapegrad.fx.symbolic_trace(lambda x: x.dim() > 1 and x)


def _net(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 3, 3, padding=1)
            self.bn = nn.BatchNorm2d(3)
            self.conv2 = nn.Conv2d(3, 3, 1)
            self.bn2 = nn.BatchNorm2d(3)
            self.lin = nn.Linear(3, 2)

        def forward(self, x):
            x = F.relu(self.bn(self.conv(x)))
            x = self.bn2(self.conv2(x))
            return self.lin(F.adaptive_avg_pool2d(x, 1).flatten(1))
    return Net()


def _fuse(lib, gm):
    nn = lib.nn
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and isinstance(modules[node.target], nn.BatchNorm2d):
            prev = node.args[0]
            if prev.op == "call_module" and isinstance(modules[prev.target], nn.Conv2d):
                conv, bn = modules[prev.target], modules[node.target]
                fused = copy.deepcopy(conv)
                scale = bn.weight / lib.sqrt(bn.running_var + bn.eps)
                fused.weight = nn.Parameter((conv.weight * scale.reshape(-1, 1, 1, 1)).detach())
                fused.bias = nn.Parameter(((conv.bias - bn.running_mean) * scale + bn.bias).detach())
                setattr(gm, prev.target, fused)
                node.replace_all_uses_with(prev)
                gm.graph.erase_node(node)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


def test_fx36_conv_bn_fusion_by_rewriting():
    results = {}
    for lib in (tapegrad, torch):
        lib.manual_seed(0)
        m = _net(lib).eval()
        for bn in (m.bn, m.bn2):
            bn.running_mean.copy_(lib.linspace(-1, 1, 3))
            bn.running_var.copy_(lib.linspace(0.5, 2, 3))
        gm = _fuse(lib, lib.fx.symbolic_trace(m))
        x = lib.randn(2, 2, 5, 5)
        np.testing.assert_allclose(gm(x).detach().numpy(), m(x).detach().numpy(), atol=1e-5)
        results[lib] = (gm.code, str(gm), [n for n, _ in gm.named_modules()])
    for a, b in zip(results[tapegrad], results[torch]):
        assert a == b


def test_fx36_inserting_dead_code_interpreter():
    outputs = {}
    for lib in (tapegrad, torch):
        lib.manual_seed(0)
        g = lib.fx.symbolic_trace(_net(lib))
        for node in g.graph.nodes:
            if node.op == "call_function" and node.target is lib.nn.functional.relu:
                with g.graph.inserting_after(node):
                    new = g.graph.call_function(lib.mul, (node, 2.0))
                    node.replace_all_uses_with(new)
                    new.update_arg(0, node)
            if node.op == "call_method" and node.target == "flatten":
                with g.graph.inserting_before(node):
                    d = g.graph.call_method("neg", (node.args[0],))
                    g.graph.call_function(operator.add, (d, 1))
        g.recompile()
        before = g.code
        changed = g.graph.eliminate_dead_code()
        g.recompile()
        seen = []

        class Prof(lib.fx.Interpreter):
            def run_node(self, n):
                r = super().run_node(n)
                seen.append((n.name, tuple(r.shape)))
                return r

            def call_function(self, target, args, kwargs):
                if target is lib.mul:
                    return lib.add(*args)
                return super().call_function(target, args, kwargs)
        x = lib.ones(2, 2, 5, 5)
        out = Prof(g).run(x)
        plain = lib.fx.Interpreter(g).run(x)
        np.testing.assert_allclose(plain.detach().numpy(), g(x).detach().numpy(), rtol=1e-6)
        outputs[lib] = (before, changed, g.code, seen, str(g.graph), out.shape)
    assert outputs[tapegrad][:5] == outputs[torch][:5]


def test_fx36_shape_prop_and_tracer_subclass():
    metas = {}
    for lib in (tapegrad, torch):
        gm = lib.fx.symbolic_trace(_net(lib))
        lib.fx.passes.shape_prop.ShapeProp(gm).propagate(lib.ones(2, 2, 5, 5))
        metas[lib] = [(n.name, n.meta["type"].__name__, str(n.meta["tensor_meta"].shape),
                       str(n.meta["tensor_meta"].dtype), n.meta["tensor_meta"].stride,
                       str(n.meta["tensor_meta"].memory_format), n.meta["tensor_meta"].requires_grad)
                      for n in gm.graph.nodes]
    assert metas[tapegrad] == metas[torch]

    texts = {}
    for lib in (tapegrad, torch):
        class LinearLeafOnly(lib.fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return isinstance(m, (lib.nn.Linear, lib.nn.Conv2d, lib.nn.BatchNorm2d))

        class Block(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))

            def forward(self, x):
                return self.body(x).sigmoid()
        root = Block()
        graph = LinearLeafOnly().trace(root)
        gm = lib.fx.GraphModule(root, graph)
        texts[lib] = (str(graph), gm.code, type(gm).__name__)
    assert texts[tapegrad] == texts[torch]


def test_fx36_print_tabular_without_tabulate(capsys):
    pytest.importorskip  # tabulate is not installed here: PyTorch prints its hint and re-raises
    try:
        import tabulate  # noqa: F401
        pytest.skip("tabulate installed")
    except ImportError:
        pass
    gm = tapegrad.fx.symbolic_trace(_net(tapegrad))
    with pytest.raises(ModuleNotFoundError, match="tabulate"):
        gm.graph.print_tabular()
    ours = capsys.readouterr().out
    with pytest.raises(ModuleNotFoundError, match="tabulate"):
        torch.fx.symbolic_trace(_net(torch)).graph.print_tabular()
    assert ours == capsys.readouterr().out


def test_fx36_graph_by_hand_and_graphmodule_from_dict():
    results = {}
    for lib in (tapegrad, torch):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        w = g.get_attr("lin.weight")
        mm = g.call_function(lib.matmul, (x, g.call_method("t", (w,))))
        s = g.call_module("act", (mm,))
        g.output(g.call_function(operator.add, (s, 1.0)))
        g.lint()
        lin = lib.nn.Linear(2, 2)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor([[1.0, -2.0], [0.5, 3.0]]))
        gm = lib.fx.GraphModule({"lin.weight": lin.weight, "act": lib.nn.Tanh()}, g)
        out = gm(lib.tensor([[1.0, 2.0]]))
        results[lib] = (str(g), gm.code, out.detach().numpy().tolist(), [n.name for n in x.users])
        with pytest.raises(RuntimeError, match="still had 1 users"):
            g.erase_node(x)
    for a, b in zip(results[tapegrad], results[torch]):
        assert a == b


def _unpacking(lib):
    nn = lib.nn

    class A(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = nn.MultiheadAttention(4, 2, batch_first=True)
            self.ln = nn.LayerNorm(4)
            self.emb = nn.Embedding(10, 4)

        def forward(self, idx, mask=None):
            h = self.emb(idx)
            a, _ = self.att(h, h, h, need_weights=False)
            return self.ln(h + a).transpose(1, 2).contiguous()
    return A()


def _likes(lib):
    import math

    def f(x, y=2):
        z = lib.ones_like(x) * lib.where(x > 0, x, -x) + lib.zeros_like(x)
        z = z * math.sqrt(x.shape[0]) + abs(x) + x.abs() ** 0.5
        return lib.add(z, other=y, alpha=2) + lib.hstack([x, x]).sum()
    return f


def _sdpa(lib):
    F = lib.nn.functional
    return lambda q: (F.scaled_dot_product_attention(q, q, q, is_causal=True) + lib.linalg.norm(q)
                      + lib.special.erf(q) + lib.fft.fft(q).real)


@pytest.mark.parametrize("build", [_unpacking, _likes, _sdpa])
def test_fx36_unpacking_likes_math_abs_as_pytorch(build):
    # a call_module's tuple unpacked (getitem nodes), torch.*_like / hstack / F.sdpa recorded
    # though tapegrad's look at their tensors first, math.sqrt autowrapped, abs() as operator.abs
    ours = tapegrad.fx.symbolic_trace(build(tapegrad))
    theirs = torch.fx.symbolic_trace(build(torch))
    assert _texts(ours) == _texts(theirs)
    if build in (_likes, _sdpa):
        x = tapegrad.tensor([[1.0, -2.0], [0.5, 3.0]])
        np.testing.assert_allclose(ours(x).numpy(), build(tapegrad)(x).numpy(), rtol=1e-6)


def test_fx36_concrete_args_specialise_as_pytorch():
    def f(lib):
        def g(x, flag):
            if flag:
                return x + 1
            return x - 1
        return g
    ours = tapegrad.fx.symbolic_trace(f(tapegrad), concrete_args={"flag": False})
    theirs = torch.fx.symbolic_trace(f(torch), concrete_args={"flag": False})
    assert _texts(ours) == _texts(theirs)
    np.testing.assert_allclose(ours(tapegrad.ones(2), False).numpy(), [0.0, 0.0])
    with pytest.raises(AssertionError, match="flag has been specialized to have value False"):
        ours(tapegrad.ones(2), True)


def test_fx36_annotations_deepcopy_interpreter_error_as_pytorch():
    def build(lib):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.l = nn.Linear(3, 2)
                self.sub = nn.Module()
                self.sub.p = nn.Parameter(lib.ones(2))

            def forward(self, x: lib.Tensor, k: int = 2) -> lib.Tensor:
                return self.l(x) * k + self.sub.p
        return M()
    results = {}
    for lib in (tapegrad, torch):
        gm = lib.fx.symbolic_trace(build(lib))
        dup = copy.deepcopy(gm)
        x = lib.ones(1, 3)
        with pytest.raises(RuntimeError) as err:
            lib.fx.Interpreter(gm).run()
        call = [n for n in gm.graph.nodes if n.op == "call_module"][0]
        results[lib] = (_texts(gm), type(dup).__name__, dup.code, dup.l is gm.l,
                        bool(lib.equal(dup(x), gm(x))), str(err.value),
                        list(call.meta["nn_module_stack"].keys()),
                        [n for n, _ in gm.named_parameters()])
    for a, b in zip(results[tapegrad], results[torch]):
        assert a == b
