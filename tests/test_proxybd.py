"""Regression tests from the pytorch/tutorials proxy (session 32): torch.utils.swap_tensors,
torch.__future__'s swap switch in Module conversions and load_state_dict, Tensor.module_load,
and the default device inside `with torch.device('meta')`."""
import weakref

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")
import torch.utils.benchmark  # noqa: E402,F401  (a submodule torch does not import itself)


def both(fn):
    return fn(tapegrad), fn(torch)


def test_swap_tensors_plain_values_shapes_dtypes_identity():
    def run(lib):
        t1 = lib.arange(2)
        t2 = lib.tensor([[1.5, -2.0, 3.0]], dtype=lib.float64)
        i1, i2 = id(t1), id(t2)
        lib.utils.swap_tensors(t1, t2)
        return (id(t1) == i1, id(t2) == i2, t1.tolist(), t2.tolist(), str(t1.dtype),
                str(t2.dtype), tuple(t1.shape), tuple(t2.shape), t1.stride())
    assert both(run)[0] == both(run)[1]


def test_swap_tensors_class_dict_and_grad_state():
    def run(lib):
        p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        p.tag = "param"
        t = lib.tensor([3.0, 4.0, 5.0], requires_grad=True)
        (t * t).sum().backward()
        lib.utils.swap_tensors(p, t)
        return (type(p).__name__, type(t).__name__, p.tag if hasattr(p, "tag") else None,
                getattr(t, "tag", None), p.grad.tolist(), t.grad, p.requires_grad, p.is_leaf,
                p.tolist(), t.tolist())
    assert both(run)[0] == both(run)[1]


def test_swap_tensors_graph_follows_content():
    # a non-leaf's grad_fn goes with its content: backward from the swapped object reaches the
    # other graph's leaf
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        y1 = a * 2
        y2 = b + 1
        lib.utils.swap_tensors(y1, y2)
        name = type(y1.grad_fn).__name__
        (y1 * y1).sum().backward()
        return name, y1.tolist(), a.grad, b.grad.tolist()
    tg, th = both(run)
    assert tg == th


def test_swap_tensors_refusals():
    for lib in (tapegrad, torch):
        t1, t2 = lib.zeros(2), lib.ones(2)
        r = weakref.ref(t1)
        with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref"):
            lib.utils.swap_tensors(t1, t2)
        r2 = weakref.ref(t2)
        del r
        with pytest.raises(RuntimeError, match="Cannot swap t2 because it has weakref"):
            lib.utils.swap_tensors(t1, t2)
        del r2
        assert t1.tolist() == [0.0, 0.0] and t2.tolist() == [1.0, 1.0]


def _linear(lib):
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.tensor([[0.5, -1.0, 0.25], [2.0, 0.0, -0.5]]))
        m.bias.copy_(lib.tensor([0.1, -0.2]))
    return m


@pytest.mark.parametrize("lib", [tapegrad, torch])
def test_future_flags_default_and_roundtrip(lib):
    f = lib.__future__
    assert f.get_swap_module_params_on_conversion() is False
    assert f.get_overwrite_module_params_on_conversion() is False
    f.set_swap_module_params_on_conversion(True)
    try:
        assert f.get_swap_module_params_on_conversion() is True
    finally:
        f.set_swap_module_params_on_conversion(False)


def test_module_conversion_swaps_params_keeping_objects():
    # SILENT before: the flag did not exist; with it, a conversion must keep the Parameter
    # objects (an optimizer made before still updates the module) and convert their grads
    def run(lib):
        m = _linear(lib)
        opt = lib.optim.SGD(m.parameters(), lr=0.5)
        m(lib.ones(1, 3)).sum().backward()
        g = m.weight.grad
        w_id = id(m.weight)
        lib.__future__.set_swap_module_params_on_conversion(True)
        try:
            m.double()
        finally:
            lib.__future__.set_swap_module_params_on_conversion(False)
        out = [id(m.weight) == w_id, str(m.weight.dtype), str(m.weight.grad.dtype),
               m.weight.grad is g, type(m.weight).__name__, m.weight.requires_grad]
        opt.step()
        out.append(m.weight.tolist())
        out.append(opt.param_groups[0]["params"][0] is m.weight)
        return out
    tg, th = both(run)
    assert tg == th


def test_overwrite_flag_makes_new_parameters():
    def run(lib):
        m = _linear(lib)
        old = m.weight
        lib.__future__.set_overwrite_module_params_on_conversion(True)
        try:
            m.double()
        finally:
            lib.__future__.set_overwrite_module_params_on_conversion(False)
        return m.weight is old, str(old.dtype), str(m.weight.dtype), type(m.weight).__name__
    tg, th = both(run)
    assert tg == th


def test_load_state_dict_swap_path_and_module_load():
    def run(lib):
        m = _linear(lib)
        src = _linear(lib)
        with lib.no_grad():
            src.weight.mul_(3)
        w = m.weight
        lib.__future__.set_swap_module_params_on_conversion(True)
        try:
            r = m.load_state_dict(src.state_dict())
            with lib.device("meta"):
                meta = lib.nn.Linear(3, 2)
            meta.load_state_dict(src.state_dict(), assign=True)
        finally:
            lib.__future__.set_swap_module_params_on_conversion(False)
        return (m.weight is w, m.weight.tolist(), str(r), meta.weight.is_meta,
                meta.weight.tolist(), type(meta.weight).__name__, meta.weight.requires_grad)
    tg, th = both(run)
    assert tg == th


def test_module_load_default_and_subclass_override():
    def run(lib):
        base = lib.zeros(2)
        other = lib.tensor([1.0, 2.0], requires_grad=True)
        copied = base.module_load(other)
        assigned = base.module_load(other, assign=True)

        class Scaled(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func is lib.Tensor.module_load:
                    return args[1].detach() * 10
                return super().__torch_function__(func, types, args, kwargs)

        s = lib.zeros(2).as_subclass(Scaled)
        return (base.tolist(), copied.tolist(), copied.requires_grad, assigned.tolist(),
                assigned.requires_grad, s.module_load(other).tolist())
    tg, th = both(run)
    assert tg == th


@pytest.mark.parametrize("lib", [tapegrad, torch])
def test_default_device_inside_meta_context(lib):
    with lib.device("meta"):
        assert str(lib.get_default_device()) == "meta"
        assert lib.empty(3).device.type == "meta"
    lib.set_default_device("meta")
    try:
        assert str(lib.get_default_device()) == "meta"
    finally:
        lib.set_default_device(None)
    assert str(lib.get_default_device()) == "cpu"


def _fuzz(lib, seed, n, **tensor_kw):
    b = lib.utils.benchmark
    fz = b.Fuzzer(
        parameters=[b.FuzzedParameter("k0", minval=1, maxval=10000, distribution="loguniform"),
                    b.FuzzedParameter("k1", 2, 40, distribution="uniform"),
                    b.FuzzedParameter("k2", 1, 3, distribution="uniform", strict=True)],
        tensors=[b.FuzzedTensor("x", size=("k0", "k1", 4), steps=(1, 2, 1), dim_parameter="k2",
                                min_elements=16, max_elements=50000, **tensor_kw)],
        seed=seed)
    rows = []
    for tensors, props, params in fz.take(n):
        x = tensors["x"]
        rows.append((params, tuple(x.shape), x.stride(), str(x.dtype), props["x"]["numel"],
                     [int(i) for i in props["x"]["order"]], props["x"]["is_contiguous"],
                     props["x"]["steps"], props["x"]["dtype"]))
    return rows, round(fz.rejection_rate, 6)


@pytest.mark.parametrize("seed", [0, 7])
def test_fuzzer_draws_match_pytorch(seed):
    # the same seed gives the same parameters, shapes, layouts and strides as PyTorch's Fuzzer
    assert _fuzz(tapegrad, seed, 8) == _fuzz(torch, seed, 8)
    assert _fuzz(tapegrad, seed, 5, dtype=tapegrad.float64, probability_contiguous=0.0) == \
        _fuzz(torch, seed, 5, dtype=torch.float64, probability_contiguous=0.0)


def test_fuzzer_allocation_limit_integer_tensors_and_errors():
    def run(lib):
        b = lib.utils.benchmark
        fz = b.Fuzzer(parameters=[b.FuzzedParameter("n", 1, 300, distribution="uniform")],
                      tensors=[b.FuzzedTensor("i", size=("n", "n"), dtype=lib.int16,
                                              max_allocation_bytes=2000)],
                      constraints=[lambda p: p["n"] % 3 == 0], seed=3)
        out = []
        for t, _, p in fz.take(4):
            i = t["i"]
            out.append((p["n"], str(i.dtype), bool(((i >= 1) & (i < 127)).all())))
        with pytest.raises(ValueError, match="Duplicate names in parameters and tensors"):
            b.Fuzzer(parameters=[b.FuzzedParameter("a", 1, 2, distribution="uniform")],
                     tensors=[b.FuzzedTensor("a", size=(2,))])
        with pytest.raises(AssertionError, match="Unknown distribution: normal"):
            b.FuzzedParameter("a", 1, 2, distribution="normal")
        never = b.Fuzzer(parameters=[b.FuzzedParameter("a", 1, 2, distribution="uniform")],
                         tensors=[b.FuzzedTensor("t", size=("a",), min_elements=5)], seed=1)
        with pytest.raises(ValueError, match="Failed to generate a set of valid parameters"):
            next(never.take(1))
        return out, repr(b.ParameterAlias("n"))
    assert run(tapegrad) == run(torch)


def test_fuzzer_parameter_alias_resolution():
    # (PyTorch's own check of a dict distribution is inverted in 2.x, so the dict choice with an
    # alias is exercised through the resolution step directly)
    b = tapegrad.utils.benchmark
    params = b.Fuzzer._resolve_aliases({"a": 3, "b": b.ParameterAlias("c"),
                                        "c": b.ParameterAlias("a")})
    assert params == {"a": 3, "b": 3, "c": 3}
    with pytest.raises(ValueError, match="ParameterAlias cycle detected"):
        b.Fuzzer._resolve_aliases({"a": b.ParameterAlias("b"), "b": b.ParameterAlias("a")})
    choice = b.FuzzedParameter("y", distribution={1: 0.5, b.ParameterAlias("x"): 0.5})
    draws = {repr(choice.sample(np.random.RandomState(s))) for s in range(20)}
    assert draws == {"1", "ParameterAlias[alias_to: x]"}
    with pytest.raises(AssertionError, match="Distribution is not normalized"):
        b.FuzzedParameter("y", distribution={1: 0.5, 2: 0.2})
