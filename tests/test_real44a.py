"""Differences found by running public PyTorch tutorial scripts unchanged (task real44a)."""
import abc

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _printed(cls) -> str:
    # the test process imports tapegrad under its own name: PyTorch's text is what prints there too
    return repr(cls)


def _programs(lib):
    m = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU())
    ep = lib.export.export(m, (lib.ones(1, 2),))
    gm = lib.fx.symbolic_trace(m)
    return dict(ep=ep, ep_module=ep.module(), ep_graph=ep.graph, ep_signature=ep.graph_signature,
                gm=gm, graph=gm.graph, node=next(iter(gm.graph.nodes)),
                compiled=lib.compile(m), tracer=lib.fx.Tracer(), interpreter=lib.fx.Interpreter(gm),
                dim=lib.export.Dim("batch"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # PyTorch's own, from torch.compile
def test_fx_and_export_objects_print_torch_class_names():
    # print(type(exported)) in an export tutorial showed 'tapegrad.export.exported_program...'
    ours, theirs = _programs(tg), _programs(torch)
    for key in theirs:
        assert _printed(type(ours[key])) == _printed(type(theirs[key])), key


def test_fx_and_export_public_classes_print_torch_names():
    for path in ("fx.GraphModule", "fx.Graph", "fx.Node", "fx.Proxy", "fx.Tracer", "fx.Interpreter",
                 "fx.Transformer", "export.ExportedProgram", "export.ExportGraphSignature",
                 "export.Dim"):
        mod, name = path.split(".")
        assert repr(getattr(getattr(tg, mod), name)) == repr(getattr(getattr(torch, mod), name))


def test_user_subclasses_keep_their_own_names_and_may_mix_in_abc():
    # the metaclass must not make `class X(fx.Interpreter, ABC)` illegal, nor rename user classes
    for lib in (tg, torch):
        class MyInterp(lib.fx.Interpreter, abc.ABC):
            pass

        class MyTracer(lib.fx.Tracer):
            pass

        class MyGraphModule(lib.fx.GraphModule, abc.ABC):
            pass

        assert repr(MyInterp).endswith("MyInterp'>") and "torch." not in repr(MyInterp)
        assert "torch." not in repr(MyTracer)
        gm = lib.fx.symbolic_trace(lib.nn.Linear(2, 2))
        assert isinstance(MyInterp(gm).run(lib.ones(1, 2)), lib.Tensor)
    # and the traced module still computes what PyTorch's does
    x = [[0.5, -1.0]]
    lin_t = torch.nn.Linear(2, 2)
    lin_g = tg.nn.Linear(2, 2)
    lin_g.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in lin_t.state_dict().items()})
    out_t = torch.fx.symbolic_trace(lin_t)(torch.tensor(x))
    out_g = tg.fx.symbolic_trace(lin_g)(tg.tensor(x))
    assert out_g.tolist()[0] == pytest.approx(out_t.tolist()[0], abs=1e-6)
