"""torch.fx (session 37): forwards with *args / **kwargs trace as PyTorch's (one placeholder each,
in the code object's order), GraphModules pickle (source + re-trace, as PyTorch's), and
subgraph_rewriter.replace_pattern finds and replaces the same matches with the same code."""
import pickle

import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _two_blocks(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = lib.nn.Linear(3, 2)

        def forward(self, x, w):
            a = lib.relu(self.l(x)) + 1
            b = lib.relu(a) + 1
            c = lib.relu(w) + 2
            return lib.cat([a, b, c]).sum(), lib.add(b, 1)
    return M()


def _adds(lib):
    class N(lib.nn.Module):
        def forward(self, x, y):
            z = lib.add(x, y)
            return lib.add(z, 1) * lib.add(x, x)
    return N()


def _variadic(lib):
    class V(lib.nn.Module):
        def forward(self, x, *args, scale=2, **kw):
            return x * scale
    return V()


def _both(make):
    out = []
    for lib in (torch, tapegrad):
        module = make(lib)
        if hasattr(module, "l"):
            with lib.no_grad():
                module.l.weight.copy_(lib.arange(6.0).reshape(2, 3) / 10 - 0.2)
                module.l.bias.fill_(0.1)
        out.append((lib, lib.fx.symbolic_trace(module)))
    return out


@pytest.mark.parametrize("pattern_kind", ["relu_add", "two_inputs"])
def test_replace_pattern_matches_and_code_as_pytorch(pattern_kind):
    printed = []
    values = []
    for lib, gm in _both(_two_blocks if pattern_kind == "relu_add" else _adds):
        if pattern_kind == "relu_add":
            def pattern(a):
                return lib.relu(a) + 1

            def replacement(a):
                return lib.sigmoid(a) * 2
            args = (lib.ones(1, 3), lib.ones(1, 2) * -1)
        else:
            def pattern(x, y):
                return lib.add(x, y)

            def replacement(x, y):
                return lib.sub(x, y)
            args = (lib.ones(2), lib.ones(2) * 3)
        matches = lib.fx.subgraph_rewriter.replace_pattern(gm, pattern, replacement)
        printed.append((str(matches), gm.code, str(gm.graph)))
        out = gm(*args)
        values.append(_flat_values(out))
    assert printed[0] == printed[1]
    assert values[1] == pytest.approx(values[0], rel=1e-6)


def _flat_values(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [v for o in outs for v in o.reshape(-1).tolist()]


def test_replace_pattern_values_after_rewrite():
    values = []
    for lib, gm in _both(_two_blocks):
        lib.fx.replace_pattern(gm, lambda a: lib.relu(a) + 1, lambda a: lib.sigmoid(a) * 2)
        values.append(_flat_values(gm(lib.tensor([[0.5, -1.0, 2.0]]), lib.tensor([[-0.5, 3.0]]))))
    assert values[1] == pytest.approx(values[0], rel=1e-6)


def test_variadic_forward_traces_as_pytorch():
    printed = [(gm.code, str(gm.graph), gm(lib.ones(2)).tolist()) for lib, gm in _both(_variadic)]
    assert printed[0] == printed[1]
    assert "def forward(self, x, scale = 2, *args, **kw):" in printed[1][0]


@pytest.mark.parametrize("make", [_two_blocks, _adds, _variadic])
def test_graph_module_pickles_as_pytorch(make):
    printed = []
    for lib, gm in _both(make):
        again = pickle.loads(pickle.dumps(gm))
        printed.append((str(again), str(again.graph), type(again).__name__))
        n_inputs = len([n for n in gm.graph.nodes if n.op == "placeholder" and not n.target.startswith("*")])
        args = [lib.arange(2.0 * (i + 1), 2.0 * (i + 2)).reshape(1, 2) for i in range(n_inputs)]
        if make is _two_blocks:
            args[0] = lib.ones(1, 3)
        if make is _variadic:
            args = args[:1]
        a, b = gm(*args), again(*args)
        for u, v in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            assert lib.equal(u, v)
    assert printed[0] == printed[1]


def test_unpickled_graph_module_keeps_parameters_and_gradients():
    gm = tapegrad.fx.symbolic_trace(_two_blocks(tapegrad))
    again = pickle.loads(pickle.dumps(gm))
    assert [k for k, _ in again.named_parameters()] == ["l.weight", "l.bias"]
    x, w = tapegrad.randn(4, 3), tapegrad.randn(4, 2)
    again(x, w)[0].backward()
    gm(x, w)[0].backward()
    assert tapegrad.allclose(again.l.weight.grad, gm.l.weight.grad)
