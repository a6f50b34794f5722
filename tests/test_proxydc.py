"""Kaggle-notebook idioms (proxy corpus 'proxydc'): how a scripted, traced or loaded TorchScript
module prints, as inference notebooks print the model they trace, save and jit.load."""
import io

import pytest

import tapegrad as tg

# torch 2.13 warns that TorchScript is deprecated each time a module is scripted
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated",
                                        "ignore:`torch.jit.trace` is deprecated",
                                        "ignore:`torch.jit.trace_method` is deprecated",
                                        "ignore:`torch.jit.save` is deprecated",
                                        "ignore:`torch.jit.load` is deprecated")


def _head_body(module, nn):
    """A Sequential, a ModuleList and a leaf layer: what a notebook's model head holds."""
    module.body = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    module.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Tanh()])
    module.out = nn.Linear(2, 1)


def _head_forward(module, x):
    x = module.body(x)
    for block in module.blocks:
        x = block(x)
    return module.out(x)


class Head(tg.nn.Module):
    # at module level: tapegrad.jit.save pickles the module, so its class must be importable
    def __init__(self):
        super().__init__()
        _head_body(self, tg.nn)

    def forward(self, x):
        return _head_forward(self, x)


def _head_class(lib):
    """``Head`` in ``lib`` (torch's is compiled from this source, so it is defined here)."""
    if lib is tg:
        return Head

    class Head_(lib.nn.Module):
        def __init__(self):
            super().__init__()
            _head_body(self, lib.nn)

        def forward(self, x):
            x = self.body(x)
            for block in self.blocks:
                x = block(x)
            return self.out(x)

    Head_.__name__ = Head_.__qualname__ = "Head"
    return Head_


def _compiled(lib, how):
    model = _head_class(lib)()
    example = lib.ones(1, 3)
    if how == "script":
        return lib.jit.script(model)
    if how == "trace":
        return lib.jit.trace(model, example)
    buffer = io.BytesIO()
    lib.jit.save(lib.jit.trace(model, example), buffer)
    buffer.seek(0)
    return lib.jit.load(buffer)


@pytest.mark.parametrize("how", ["script", "trace", "load"])
def test_compiled_module_prints_as_torch(how):
    # torch prints only original_name=<class> for every module of a compiled tree (no
    # in_features=...), under RecursiveScriptModule for script/load and the class name for trace
    torch = pytest.importorskip("torch")
    assert repr(_compiled(tg, how)) == repr(_compiled(torch, how))


@pytest.mark.parametrize("how", ["script", "trace", "load"])
def test_compiled_module_type_and_original_name(how):
    torch = pytest.importorskip("torch")
    ours, theirs = _compiled(tg, how), _compiled(torch, how)
    assert type(ours).__name__ == type(theirs).__name__   # a loaded trace is a script module
    assert ours.original_name == theirs.original_name == "Head"
    assert ours._get_name() == theirs._get_name()
    assert ours.extra_repr() == theirs.extra_repr() == "original_name=Head"


def test_compiled_leaf_prints_original_name_only():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        lib.manual_seed(0)
    assert repr(tg.jit.script(tg.nn.Linear(2, 2))) == repr(torch.jit.script(torch.nn.Linear(2, 2))) \
        == "RecursiveScriptModule(original_name=Linear)"
    assert repr(tg.jit.trace(tg.nn.Linear(2, 2), tg.ones(1, 2))) \
        == repr(torch.jit.trace(torch.nn.Linear(2, 2), torch.ones(1, 2))) \
        == "Linear(original_name=Linear)"


def test_loaded_trace_still_computes_the_model():
    model = _head_class(tg)()
    x = tg.tensor([[0.5, -1.0, 2.0]])
    buffer = io.BytesIO()
    tg.jit.save(tg.jit.trace(model, x), buffer)
    buffer.seek(0)
    loaded = tg.jit.load(buffer)
    tg.testing.assert_close(loaded(x), model(x))
    assert list(loaded.state_dict()) == list(model.state_dict())


def _outer_with_scripted_child(lib):
    class Outer(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = lib.jit.script(lib.nn.Linear(2, 2))
            self.act = lib.nn.GELU()

        def forward(self, x):
            return self.act(self.inner(x))

    return Outer()


def test_scripted_submodule_keeps_its_name_inside_a_trace_and_a_plain_module():
    torch = pytest.importorskip("torch")
    ours, theirs = _outer_with_scripted_child(tg), _outer_with_scripted_child(torch)
    assert repr(ours) == repr(theirs)          # plain parent: the child prints as a script module
    assert repr(tg.jit.trace(ours, tg.ones(1, 2))) == repr(torch.jit.trace(theirs, torch.ones(1, 2)))
