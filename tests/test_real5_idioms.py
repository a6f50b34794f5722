"""Idioms from the real5 held-out proxy (issue 15): public scripts run with `import tapegrad as
torch` print what they print under PyTorch."""
from __future__ import annotations

import re

import tapegrad as tg


def _scale_function(lib):
    class AddAndAverage(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return (x + y) / 2

        @staticmethod
        def backward(ctx, g):
            return g / 2, g / 2

    return AddAndAverage


def _without_address(text: str) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x?", text)


def test_custom_function_grad_fn_prints_torch_module_path(torch):
    # Atcold/NYU-DLSP20 extra/b-custom_grads prints `z.grad_fn` of a custom Function.
    outs = []
    for lib in (torch, tg):
        fn = _scale_function(lib)
        z = fn.apply(lib.ones(3, requires_grad=True), lib.ones(3, requires_grad=True))
        outs.append((_without_address(repr(z.grad_fn)), _without_address(str(z.grad_fn)),
                     repr(type(z.grad_fn)), z.grad_fn.name()))
    assert outs[0] == outs[1]
    assert outs[1][0] == "<torch.autograd.function.AddAndAverageBackward object at 0x?>"


def test_custom_function_backward_class_keeps_its_real_module_for_pickle():
    # Only the printed name changes (as for Tensor): the class's __module__ stays ours.
    fn = _scale_function(tg)
    z = fn.apply(tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True))
    assert type(z.grad_fn).__module__ == "tapegrad.autograd.function"
    z.sum().backward()


# -- nn.Module API that `dir(model)` (Atcold NYU-DLSP20 06-convnet) showed missing ------------
def _outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - the type and message are what is compared
        return (type(exc).__name__, str(exc))


def _set_submodule_steps(lib):
    nn = lib.nn
    seq = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    results = []
    for args, kwargs in ((("1.0", nn.Tanh()), {}), (("1.5", nn.Tanh()), {"strict": True}),
                         (("2.x", nn.Tanh()), {}), (("0.weight", nn.Tanh()), {}),
                         (("", nn.Tanh()), {}), (("1.0", 3), {}), (("1.5", nn.Sigmoid()), {})):
        results.append(_outcome(lambda: seq.set_submodule(*args, **kwargs)))
    results.append(repr(seq))
    return results


def test_set_submodule_matches_torch(torch):
    assert _set_submodule_steps(tg) == _set_submodule_steps(torch)


def test_set_submodule_replaces_the_module_used_by_forward():
    net = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.ReLU())
    net.set_submodule("1", tg.nn.Identity())
    x = tg.tensor([[-1.0, 2.0]])
    assert tg.equal(net(x), net[0](x))


def test_apply_converts_in_place_keeping_parameter_objects(torch):
    results = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        nn = lib.nn
        m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
        m(lib.ones(4, 2)).sum().backward()
        weight = m[0].weight
        out = m._apply(lambda t: t.double())
        results.append((out is m, m[0].weight is weight, str(m[0].weight.dtype),
                        str(m[0].weight.grad.dtype), str(m[1].running_mean.dtype),
                        str(m[1].num_batches_tracked.dtype), m[0].weight.requires_grad,
                        isinstance(m[0].weight, nn.Parameter), m[0].weight.is_leaf))
    assert results[0] == results[1]


def test_apply_values_and_recurse_flag():
    lin = tg.nn.Linear(2, 2)
    outer = tg.nn.Sequential(lin)
    before = lin.weight.detach().clone()
    outer._apply(lambda t: t * 2, recurse=False)     # no parameters of its own
    assert tg.equal(lin.weight, before)
    outer._apply(lambda t: t * 2)
    assert tg.equal(lin.weight, before * 2)


def test_other_backends_raise_as_a_cpu_build(torch):
    for name in ("xpu", "ipu", "mtia"):
        for make in (lambda lib: lib.nn.ReLU(), lambda lib: lib.nn.Linear(2, 2)):
            want = _outcome(lambda: type(getattr(make(torch), name)()).__name__)
            got = _outcome(lambda: type(getattr(make(tg), name)()).__name__)
            assert got[0] == want[0]
            assert got[1].split(".")[0] == want[1].split(".")[0]


def test_bfloat16_of_a_module_converts_its_floating_tensors():
    assert isinstance(tg.nn.ReLU().bfloat16(), tg.nn.ReLU)
    layer = tg.nn.Linear(2, 2)
    weight = layer.weight
    assert layer.bfloat16() is layer and layer.weight is weight
    assert weight.dtype is tg.bfloat16 and isinstance(weight, tg.nn.Parameter)


def test_module_class_attributes_match_torch(torch):
    for name in ("call_super_init", "dump_patches"):
        assert getattr(tg.nn.Module, name) == getattr(torch.nn.Module, name)
    assert repr(tg.nn.Module.T_destination) == repr(torch.nn.Module.T_destination)


def test_dir_of_a_module_leaves_out_numeric_child_names(torch):
    for lib in (torch, tg):
        seq = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
        seq.add_module("head", lib.nn.Identity())
        names = dir(seq)
        assert "0" not in names and "1" not in names
        assert "head" in names and "weight" in dir(seq[0]) and "set_submodule" in names
