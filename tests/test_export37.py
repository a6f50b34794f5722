"""torch.export on tapegrad (session 37): export prints the aten-level program PyTorch's does for
the same models, module() runs it with the eager model's values and gradients and checks its
inputs as PyTorch's guards do, Dim / dynamic_shapes give PyTorch's symbols, ranges and errors,
save / load round-trip, and the forward patterns export must refuse are refused, never dropped."""
import os

import numpy as np
import pytest

import tapegrad
from tapegrad.export import Dim, export

# PyTorch's own export warns about its pytree internals
pytestmark = pytest.mark.filterwarnings("ignore:.*treespec:FutureWarning")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _net(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(4 * 4 * 4, 10)

        def forward(self, x, y):
            h = self.pool(F.relu(self.bn(self.conv(x))))
            h = lib.flatten(h, 1)
            h = self.fc(h)
            a, b = h.view(2, 5, 2).chunk(2, dim=-1)
            out = lib.cat([a * 2, b + y], dim=1)
            return out.softmax(-1), lib.matmul(h, h.t()), 1 - h[0, 1:], h.T, x.shape[3]
    return Net


def _pair(torch):
    """The same model in both libraries, tapegrad's holding torch's weights."""
    torch.manual_seed(0)
    theirs = _net(torch)().eval()
    ours = _net(tapegrad)().eval()
    ours.load_state_dict({k: tapegrad.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal((2, 5, 1)).astype(np.float32)
    return ours, theirs, x, y


def _lines(text):
    """A printed program without PyTorch's source-location comments and spacer lines."""
    return [line for line in str(text).splitlines()
            if line.strip() and "# File:" not in line and "No stacktrace" not in line]


def test_program_prints_and_runs_as_pytorch(torch):
    ours, theirs, x, y = _pair(torch)
    ep = export(ours, (tapegrad.tensor(x), tapegrad.tensor(y)))
    tep = torch.export.export(theirs, (torch.tensor(x), torch.tensor(y)))
    assert _lines(ep) == _lines(tep)
    assert ep.graph_module.code == tep.graph_module.code
    assert str(ep.graph) == str(tep.graph)
    sig, tsig = ep.graph_signature, tep.graph_signature
    assert (sig.user_inputs, sig.parameters, sig.buffers, sig.user_outputs) == \
        (tsig.user_inputs, tsig.parameters, tsig.buffers, tsig.user_outputs)
    assert [str(s) for s in sig.input_specs] == [str(s) for s in tsig.input_specs]
    assert list(ep.state_dict) == list(tep.state_dict)
    got = ep.module()(tapegrad.tensor(x), tapegrad.tensor(y))
    want = tep.module()(torch.tensor(x), torch.tensor(y))
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert got[4] == want[4] == 8


def test_module_gradients_equal_eager():
    torch_nn = tapegrad.nn
    tapegrad.manual_seed(0)
    model = torch_nn.Sequential(torch_nn.Linear(3, 5), torch_nn.Tanh(), torch_nn.Linear(5, 2)).double()
    x = tapegrad.randn(4, 3, dtype=tapegrad.float64)
    exported = export(model, (x,)).module()
    exported(x).square().sum().backward()
    exported_grads = [p.grad.clone() for p in exported.parameters()]
    model.zero_grad()
    model(x).square().sum().backward()
    for got, want in zip(exported_grads, [p.grad for p in model.parameters()]):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    xs = tapegrad.randn(4, 3, dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda t: exported(t), (xs,))


def test_module_checks_inputs_as_pytorch_guards():
    class Affine(tapegrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = tapegrad.nn.Linear(3, 4)

        def forward(self, x):
            return self.fc(x)
    model = Affine()
    module = export(model, (tapegrad.randn(2, 3),)).module()
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[0\] == 2"):
        module(tapegrad.randn(3, 3))
    with pytest.raises(ValueError, match="Trying to flatten user inputs with exported input tree spec"):
        module(tapegrad.randn(2, 3), tapegrad.randn(1))
    with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
        export(model, (tapegrad.randn(2, 3),))(tapegrad.randn(2, 3))


def test_data_dependent_control_flow_is_refused_as_pytorch(torch):
    def branchy(lib):
        class Branchy(lib.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x + 1
                return x - 1
        return Branchy()
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode as Theirs
    with pytest.raises(Theirs):
        torch.export.export(branchy(torch), (torch.randn(3),))
    from tapegrad.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    with pytest.raises(GuardOnDataDependentSymNode, match="Could not guard on data-dependent expression"):
        export(branchy(tapegrad), (tapegrad.randn(3),))


def _dynamic_model(lib):
    class Dyn(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(12, 4)

        def forward(self, x):
            h = x.view(x.size(0), -1)
            if x.shape[0] > 1:
                h = h * 2
            return lib.cat([self.fc(h), self.fc(h)], 0).relu(), x.shape[0] + 1
    return Dyn()


def test_dynamic_shapes_print_symbols_and_run_other_sizes(torch):
    ours, theirs = _dynamic_model(tapegrad), _dynamic_model(torch)
    ours.load_state_dict({k: tapegrad.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3, 4)).astype(np.float32)
    ep = export(ours, (tapegrad.tensor(x),), dynamic_shapes={"x": {0: Dim("batch", max=32)}})
    tep = torch.export.export(theirs, (torch.tensor(x),),
                              dynamic_shapes={"x": {0: torch.export.Dim("batch", max=32)}})
    assert _lines(ep) == _lines(tep)
    assert "s77: VR[0, 32]" in str(ep)
    x7 = np.random.default_rng(2).standard_normal((7, 3, 4)).astype(np.float32)
    got, n = ep.module()(tapegrad.tensor(x7))
    want, tn = theirs(torch.tensor(x7))
    assert got.shape == (14, 4) and n == tn == 8
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[0\] <= 32"):
        ep.module()(tapegrad.randn(33, 3, 4))


def test_dim_errors_as_pytorch(torch):
    from tapegrad._dynamo.exc import UserError
    from tapegrad.fx.experimental.symbolic_shapes import ConstraintViolationError

    class Eq4(tapegrad.nn.Module):
        def forward(self, x):
            return x + 1 if x.shape[0] == 4 else x - 1
    with pytest.raises(UserError, match=r"Constraints violated \(batch\)![\s\S]*specialized it to be a constant \(4\)"):
        export(Eq4(), (tapegrad.randn(4, 3),), dynamic_shapes={"x": {0: Dim("batch")}})
    with pytest.raises(UserError, match=r"specialized it to be a constant \(1\)"):
        export(tapegrad.nn.Linear(3, 4), (tapegrad.randn(1, 3),), dynamic_shapes={"input": {0: Dim("b", min=2)}})
    with pytest.raises(ConstraintViolationError, match=r"20 not in range \[5, 9\]"):
        export(tapegrad.nn.Linear(3, 4), (tapegrad.randn(20, 3),), dynamic_shapes=({0: Dim("b", min=5, max=9)},))
    with pytest.raises(UserError, match="its top-level keys must be the arg names"):
        export(tapegrad.nn.Linear(3, 4), (tapegrad.randn(4, 3),), dynamic_shapes={"z": {0: Dim("b")}})
    assert repr(Dim("b", min=5, max=9)) == repr(torch.export.Dim("b", min=5, max=9))
    assert repr(Dim.AUTO) == repr(torch.export.Dim.AUTO)
    assert [repr(d) for d in tapegrad.export.dims("a", "c", max=10)] == \
        [repr(d) for d in torch.export.dims("a", "c", max=10)]


def test_in_place_ops_are_recorded_functionally_not_dropped(torch):
    # SILENT before: `h.mul_(2); return h` returned the value before mul_ (the in-place op's
    # result was a new proxy the forward never read)
    class InPlace(tapegrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = tapegrad.nn.Linear(3, 3)
            self.act = tapegrad.nn.ReLU(inplace=True)

        def forward(self, x):
            h = self.fc(x)
            h.mul_(2)
            self.act(h)
            h += 1
            return h
    model, x = InPlace(), tapegrad.randn(4, 3)
    ep = export(model, (x,))
    np.testing.assert_allclose(ep.module()(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert "mul_ = torch.ops.aten.mul_.Tensor(linear, 2)" in ep.graph_module.code
    assert "add_ = torch.ops.aten.add_.Tensor(relu_, 1)" in ep.graph_module.code

    class MutatesInput(tapegrad.nn.Module):
        def forward(self, x):
            x.add_(1)
            return x * 2
    x = tapegrad.zeros(3)
    ep = export(MutatesInput(), (x,))
    assert x.tolist() == [0.0, 0.0, 0.0]          # export traced a copy
    assert (ep.module()(x).tolist(), x.tolist()) == ([2.0] * 3, [1.0] * 3)


def test_training_batch_norm_updates_its_buffers_as_eager(torch):
    def model(lib):
        lib.manual_seed(0)
        return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU())
    ours, theirs = model(tapegrad), model(torch)
    ours.load_state_dict({k: tapegrad.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    ep = export(ours, (tapegrad.tensor(x),))
    tep = torch.export.export(theirs, (torch.tensor(x),))
    assert ep.graph_module.code == tep.graph_module.code
    assert ours[1].num_batches_tracked.item() == 0       # exporting ran nothing on the model
    module = ep.module()
    module(tapegrad.tensor(x))
    theirs(torch.tensor(x))
    np.testing.assert_allclose(module.get_buffer("1.running_mean").numpy(),
                               theirs[1].running_mean.numpy(), rtol=1e-5, atol=1e-7)
    assert module.get_buffer("1.num_batches_tracked").item() == 1


def test_dynamic_sizes_read_as_python_ints_are_refused():
    # SILENT otherwise: `x.sum() / len(x)` would bake the example's batch into the graph and
    # divide by it for every batch size
    from tapegrad._dynamo.exc import UserError

    class Mean(tapegrad.nn.Module):
        def forward(self, x):
            return x.sum() / len(x)
    with pytest.raises(UserError, match=r"Constraints violated \(b\)"):
        export(Mean(), (tapegrad.randn(4, 3),), dynamic_shapes=({0: Dim("b")},))

    class Numel(tapegrad.nn.Module):
        def forward(self, x):
            return x.sum() / x.numel()
    with pytest.raises(UserError, match=r"Constraints violated \(b\)"):
        export(Numel(), (tapegrad.randn(4, 3),), dynamic_shapes=({0: Dim("b")},))


def test_save_load_round_trip(tmp_path):
    tapegrad.manual_seed(0)
    model = tapegrad.nn.Sequential(tapegrad.nn.Linear(3, 4), tapegrad.nn.BatchNorm1d(4),
                                   tapegrad.nn.ReLU()).eval()
    x = tapegrad.randn(5, 3)
    ep = export(model, (x,), dynamic_shapes=({0: Dim("b", max=100)},))
    path = os.path.join(tmp_path, "model.pt2")
    tapegrad.export.save(ep, path)
    loaded = tapegrad.export.load(path)
    assert str(loaded) == str(ep)
    x9 = tapegrad.randn(9, 3)
    np.testing.assert_allclose(loaded.module()(x9).detach().numpy(), model(x9).detach().numpy(), rtol=1e-6)
    with pytest.raises(AssertionError, match="Guard failed"):
        loaded.module()(tapegrad.randn(101, 3))


def test_run_decompositions_and_kwargs_and_nested_outputs(torch):
    def model(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(3, 4)

            def forward(self, x, *, scale=2.0):
                h = self.fc(x).relu()
                return {"out": h * scale, "parts": h.chunk(2, dim=1)}
        return M()
    ours, theirs = model(tapegrad), model(torch)
    ours.load_state_dict({k: tapegrad.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    ep = export(ours, (tapegrad.randn(5, 3),), {"scale": 3.0})
    tep = torch.export.export(theirs, (torch.randn(5, 3),), {"scale": 3.0})
    assert ep.run_decompositions().graph_module.code == tep.run_decompositions().graph_module.code
    assert ep.graph_module.code == tep.graph_module.code
    x = np.ones((5, 3), np.float32)
    got = ep.module()(tapegrad.tensor(x), scale=3.0)
    assert set(got) == {"out", "parts"} and len(got["parts"]) == 2
    np.testing.assert_allclose(got["out"].detach().numpy(),
                               theirs(torch.tensor(x), scale=3.0)["out"].detach().numpy(), rtol=1e-6)
    with pytest.raises(AssertionError, match="Guard failed: scale == 3.0"):
        ep.module()(tapegrad.tensor(x), scale=4.0)
    np.testing.assert_allclose(tapegrad.export.unflatten(ep)(tapegrad.tensor(x), scale=3.0)["out"].detach().numpy(),
                               got["out"].detach().numpy())


def test_guards_narrowing_a_dim_range_are_refused_as_pytorch(torch):
    def branch(lib):
        class ShapeBranch(lib.nn.Module):
            def forward(self, x):
                return x * 2 if x.shape[0] < 10 else x + 1
        return ShapeBranch()

    def message(lib, dim):
        with pytest.raises(Exception) as info:
            lib.export.export(branch(lib), (lib.randn(4, 2),), dynamic_shapes={"x": {0: dim}})
        return type(info.value).__name__, str(info.value).splitlines()[:4]
    assert message(tapegrad, Dim("n", max=20)) == message(torch, torch.export.Dim("n", max=20))
    # a range the guard leaves whole is exported
    ep = export(branch(tapegrad), (tapegrad.randn(4, 2),), dynamic_shapes={"x": {0: Dim("n", max=9)}})
    assert str(ep.range_constraints) == "{s77: VR[0, 9]}"


def test_shared_and_automatic_dims_take_pytorch_symbols(torch):
    def pair(lib):
        class Pair(lib.nn.Module):
            def forward(self, c, a):
                return lib.cat([c, a]).sum(1), c * a
        return Pair()
    for spec in ({"c": {0: "d"}, "a": {0: "d"}}, {"c": {0: "auto"}, "a": {0: "auto"}}):
        results = []
        for lib in (tapegrad, torch):
            dim = lib.export.Dim("d", max=64)
            shapes = {k: {0: dim if v[0] == "d" else lib.export.Dim.AUTO} for k, v in spec.items()}
            ep = lib.export.export(pair(lib), (lib.randn(4, 3), lib.randn(4, 3)), dynamic_shapes=shapes)
            results.append((str(ep.range_constraints), ep.graph_module.code))
        assert results[0] == results[1]


def test_max_over_a_dim_returns_named_values():
    class Top(tapegrad.nn.Module):
        def forward(self, x):
            return x.max(dim=1).values, x.max(1)[1]
    x = tapegrad.randn(3, 4)
    values, indices = export(Top(), (x,)).module()(x)
    assert values.tolist() == x.max(1).values.tolist() and indices.tolist() == x.argmax(1).tolist()


def test_call_options_that_change_results_are_recorded(torch):
    # SILENT before: rounding_mode and return_indices were dropped by the lowering, so the
    # program divided exactly and unpacked the pooled tensor's rows as (values, indices)
    def model(lib):
        F = lib.nn.functional

        class Options(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = lib.nn.Embedding(10, 4, padding_idx=0)

            def forward(self, idx, x):
                pooled, where = F.max_pool2d(x, 2, return_indices=True)
                return self.emb(idx).sum(1), lib.div(x, 3, rounding_mode="floor"), pooled, where, x[..., 0, None]
        return Options()
    ours, theirs = model(tapegrad), model(torch)
    ours.load_state_dict({k: tapegrad.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    idx = np.array([[1, 2, 0], [3, 4, 5]])
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    ep = export(ours, (tapegrad.tensor(idx), tapegrad.tensor(x)))
    tep = torch.export.export(theirs, (torch.tensor(idx), torch.tensor(x)))
    assert ep.graph_module.code == tep.graph_module.code
    for got, want in zip(ep.module()(tapegrad.tensor(idx), tapegrad.tensor(x)), theirs(torch.tensor(idx), torch.tensor(x))):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="keepdim"):
        export(type("KeepAll", (tapegrad.nn.Module,), {"forward": lambda self, x: x.sum(keepdim=True)})(),
               (tapegrad.randn(2, 2),))
