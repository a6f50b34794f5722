"""Cases from PyTorch's split-out nn tests (test/nn/test_init.py, test_pruning.py, ...) that
tapegrad got wrong, each checked against torch."""
import warnings

import pytest

import tapegrad
import tapegrad.nn.init as init


def test_deprecated_eye_and_dirac_warn_and_call_the_underscore_versions():
    torch = pytest.importorskip("torch")
    for old, new in [("eye", "eye_"), ("dirac", "dirac_")]:
        shape = (2, 3) if old == "eye" else (4, 2, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = getattr(init, old)(tapegrad.empty(*shape))
        with warnings.catch_warnings(record=True) as expected_caught:
            warnings.simplefilter("always")
            expected = getattr(torch.nn.init, old)(torch.empty(*shape))
        assert got.tolist() == expected.tolist()
        assert [(w.category, str(w.message)) for w in caught] == \
            [(w.category, str(w.message)) for w in expected_caught]
        assert f"nn.init.{new}" in str(caught[0].message)


def test_backward_pre_hook_alone_warns_when_no_input_requires_grad():
    # PyTorch warns whenever the module's hooks fire from the output side, pre-hooks included
    torch = pytest.importorskip("torch")
    for lib in (torch, tapegrad):
        lin = lib.nn.Linear(2, 2)
        seen = []
        lin.register_full_backward_pre_hook(lambda m, grad_output: seen.append(len(grad_output)))
        with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are "
                                             "computed with respect to module outputs"):
            lin(lib.ones(1, 2)).sum().backward()
        assert seen == [1]


def test_lazy_state_dict_holds_the_placeholders_themselves():
    # a detached copy was a plain shape-(0,) tensor: a silent wrong shape for the parameter
    torch = pytest.importorskip("torch")
    for lib in (torch, tapegrad):
        sd = lib.nn.LazyLinear(3).state_dict()
        assert [type(v).__name__ for v in sd.values()] == ["UninitializedParameter"] * 2
        bn = lib.nn.LazyBatchNorm1d().state_dict()
        assert type(bn["running_mean"]).__name__ == "UninitializedBuffer"
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
            sd["weight"].shape


def test_loading_a_lazy_state_dict():
    torch = pytest.importorskip("torch")
    for lib in (torch, tapegrad):
        # into an initialised module: refused outright, as PyTorch
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
            lib.nn.Linear(2, 3).load_state_dict(lib.nn.LazyLinear(3).state_dict())
        # into a lazy one: it stays lazy, and its first forward sizes it
        lazy = lib.nn.LazyLinear(3)
        lazy.load_state_dict(lib.nn.LazyLinear(3).state_dict())
        assert type(lazy.weight).__name__ == "UninitializedParameter"
        assert tuple(lazy(lib.ones(2, 5)).shape) == (2, 3)
        assert tuple(lazy.weight.shape) == (3, 5)


def test_deepcopy_of_an_uninitialized_lazy_module():
    torch = pytest.importorskip("torch")
    import copy
    for lib in (torch, tapegrad):
        lazy = lib.nn.LazyLinear(3, dtype=lib.float64)
        twin = copy.deepcopy(lazy)
        assert type(twin).__name__ == "LazyLinear"
        assert type(twin.weight).__name__ == "UninitializedParameter"
        assert twin.weight is not lazy.weight
        assert twin.weight.requires_grad and twin.weight.dtype == lib.float64
        twin(lib.ones(2, 5, dtype=lib.float64))
        assert tuple(twin.weight.shape) == (3, 5) and lazy.has_uninitialized_params()


def _registration_log(lib):
    """What the global registration hooks see (and replace) over a module's life."""
    module_mod = __import__(f"{lib.__name__}.nn.modules.module", fromlist=["_"])
    log = []

    def seen(value):
        return type(value).__name__ if not isinstance(value, lib.Tensor) else \
            (type(value).__name__, value.tolist())

    handles = [
        module_mod.register_module_buffer_registration_hook(
            lambda m, n, b: log.append(("b", n, seen(b)))),
        module_mod.register_module_parameter_registration_hook(
            lambda m, n, p: log.append(("p", n, seen(p)))),
        module_mod.register_module_module_registration_hook(
            lambda m, n, s: log.append(("m", n, seen(s)))),
    ]
    try:
        m = lib.nn.Module()
        m.register_buffer("x", lib.ones(1))
        m.x = lib.zeros(1)
        m.register_buffer("y", None)
        m.z = lib.nn.Buffer(lib.ones(2))
        m.sub = lib.nn.ReLU()
        m.sub = None
        m.add_module("s2", None)
        m.register_module("s3", lib.nn.Tanh())
        m.weight = lib.nn.Parameter(lib.ones(1))
        m.weight = None                      # a None parameter reaches no hook
        m.register_parameter("q", None)
        handles.append(module_mod.register_module_parameter_registration_hook(
            lambda m, n, p: lib.nn.Parameter(p.detach() * 10) if n == "w" else None))
        m.w = lib.nn.Parameter(lib.ones(1))
        handles.append(module_mod.register_module_buffer_registration_hook(
            lambda m, n, b: lib.full((1,), 7.0) if n == "k" else None))
        m.register_buffer("k", lib.ones(1))
    finally:
        for handle in handles:
            handle.remove()
    lib.nn.Module().register_buffer("after_removal", lib.ones(1))
    return log, m.w.tolist(), m.k.tolist()


def test_global_registration_hooks_see_and_replace_what_modules_register():
    torch = pytest.importorskip("torch")
    assert _registration_log(tapegrad) == _registration_log(torch)


def test_pruning_amount_helpers_under_pytorchs_private_names():
    torch_prune = pytest.importorskip("torch.nn.utils.prune")
    import tapegrad.nn.utils.prune as prune
    for lib_prune in (torch_prune, prune):
        with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
            lib_prune._validate_pruning_amount(amount=20, tensor_size=19)
        for amount, size in [(0.3, 0), (19, 20), (0, 0), (1, 1)]:
            lib_prune._validate_pruning_amount(amount=amount, tensor_size=size)
    cases = [(0, 15), (10, 15), (1, 15), (1.0, 15), (0.4, 17), (0.5, 5), (0.5, 7)]
    assert [prune._compute_nparams_toprune(amount=a, tensor_size=n) for a, n in cases] == \
        [torch_prune._compute_nparams_toprune(amount=a, tensor_size=n) for a, n in cases]


def _double_parametrization(lib):
    class Double(lib.nn.Module):
        def forward(self, X):
            return 2.0 * X

        def right_inverse(self, X):
            return 0.5 * X
    return Double


def test_transfer_parametrizations_shares_the_original_tensors():
    # the target got copies: a step on one module was silently not seen by the other
    torch = pytest.importorskip("torch")
    for lib in (torch, tapegrad):
        P = __import__(f"{lib.__name__}.nn.utils.parametrize", fromlist=["_"])
        Double = _double_parametrization(lib)
        source = lib.nn.Linear(3, 3)
        P.register_parametrization(source, "weight", Double())
        target = P.transfer_parametrizations_and_params(source, lib.nn.Linear(3, 3))
        original = source.parametrizations.weight.original
        assert target.parametrizations.weight.original is original
        with lib.no_grad():
            original.fill_(1.0)
        assert target.weight.tolist() == [[2.0] * 3] * 3


def test_parametrization_registered_on_a_parametrization_lists_original():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, tapegrad):
        P = __import__(f"{lib.__name__}.nn.utils.parametrize", fromlist=["_"])
        Double = _double_parametrization(lib)
        m = lib.nn.Linear(3, 3)
        with lib.no_grad():
            m.weight.copy_(lib.arange(9.0).reshape(3, 3))
        P.register_parametrization(m, "weight", Double())
        P.register_parametrization(m.parametrizations.weight, "original", Double())
        m(lib.ones(1, 3)).sum().backward()
        inner = m.parametrizations.weight.parametrizations.original.original
        results.append((m.weight.tolist(), inner.tolist(), inner.grad.tolist()))
    assert results[0] == results[1]


def test_assigning_through_a_nested_parametrization_is_not_lost():
    # PyTorch raises a KeyError here (its chain walk meets the nested `parametrizations`
    # child); tapegrad wrote the value into a computed tensor, where it was lost
    Double = _double_parametrization(tapegrad)
    P = tapegrad.nn.utils.parametrize
    m = tapegrad.nn.Linear(2, 2)
    P.register_parametrization(m, "weight", Double())
    P.register_parametrization(m.parametrizations.weight, "original", Double())
    m.weight = tapegrad.ones(2, 2)
    assert m.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert m.parametrizations.weight.parametrizations.original.original.tolist() == \
        [[0.25, 0.25], [0.25, 0.25]]


def test_state_dict_positional_arguments_warn_and_still_work():
    torch = pytest.importorskip("torch")
    from collections import OrderedDict
    for lib in (torch, tapegrad):
        m = lib.nn.Linear(2, 2)
        destination = OrderedDict()
        with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
            result = m.state_dict(destination, "pre.", True)
        assert result is destination and list(result) == ["pre.weight", "pre.bias"]
        assert result["pre.weight"] is m.weight        # keep_vars=True, read positionally


def test_lazy_placeholders_become_the_parameters_in_place():
    # the first forward put new Parameter objects in the module: an optimizer made before it
    # kept the placeholders and silently stepped nothing
    torch = pytest.importorskip("torch")
    for lib in (torch, tapegrad):
        m = lib.nn.LazyLinear(2)
        placeholder = m.weight
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        x = lib.ones(3, 4)
        m(x)
        assert m.weight is placeholder and type(placeholder).__name__ == "Parameter"
        before = m.weight.detach().clone()
        m(x).sum().backward()
        opt.step()
        assert (m.weight.detach() - before).abs().sum().item() == pytest.approx(0.1 * 3 * 8)
        bn = lib.nn.LazyBatchNorm1d()
        running_mean = bn.running_mean
        bn(lib.ones(3, 5))
        assert bn.running_mean is running_mean and type(running_mean).__name__ == "Tensor"
        # loading a state dict materialises them in place too
        lazy = lib.nn.LazyLinear(3)
        bias = lazy.bias
        lazy.load_state_dict(lib.nn.Linear(2, 3).state_dict())
        assert lazy.bias is bias and tuple(bias.shape) == (3,)


def test_uninitialized_parameter_materialize():
    torch = pytest.importorskip("torch")
    for lib in (torch, tapegrad):
        p = lib.nn.UninitializedParameter(dtype=lib.float64)
        p.materialize((2, 3))
        assert type(p).__name__ == "Parameter" and tuple(p.shape) == (2, 3)
        assert p.dtype == lib.float64 and p.requires_grad
        b = lib.nn.UninitializedBuffer()
        b.materialize((4,), dtype=lib.float16)
        assert type(b).__name__ == "Tensor" and b.dtype == lib.float16 and not b.requires_grad
