"""Session 45 (left45b): Tensor attributes called through the class dispatch __torch_function__
as PyTorch's do (a mode's or a subclass's handler calling func(*args)), saved-tensor pack hooks
see bfloat16 values as PyTorch's see them, the remaining torch.jit names scripts touch, and nn
layer classes named as PyTorch's."""
import pickle

import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(program):
    """program(lib) under tapegrad and under torch."""
    return program(tapegrad), program(torch)


# -- 1. Tensor attributes called through the class dispatch ----------------------------------------

def _forwarding_mode(lib):
    class Forward(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    return Forward


def test_bfloat16_results_under_a_forwarding_mode_stay_bfloat16():
    # SILENT: the mode's func(*args) ran Tensor's plain attribute on the float32 storage
    def program(lib):
        x = lib.tensor([[1.5, 2.25], [3.0, 4.0]], dtype=lib.bfloat16)
        with _forwarding_mode(lib)():
            results = [x.detach(), x[0], x.T, x.mT, x.data, x.t(), x.clone(), x + 1, x.sum(),
                       x.view(4), x.size(), x.to(lib.float32)]
        return [str(r.dtype) if isinstance(r, lib.Tensor) else tuple(r) for r in results] + \
            [r.tolist() for r in results[:2]]
    ours, theirs = _both(program)
    assert ours == theirs


def test_a_mode_is_handed_the_tensor_attribute_itself():
    def program(lib):
        seen = []

        class Seen(lib.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append(func)
                return func(*args, **(kwargs or {}))
        x = lib.ones(2, 2)
        with Seen():
            x[0]
            x.detach()
            x.size()
            x.dim()
            x + 1
            # (compared while the mode runs: tapegrad's Tensor holds its dispatching operators
            # and properties only then)
            same = [seen[0] is lib.Tensor.__getitem__, seen[1] is lib.Tensor.detach,
                    seen[2] is lib.Tensor.size, seen[3] is lib.Tensor.dim,
                    seen[4] is lib.Tensor.add]
        return same, [lib.overrides.resolve_name(f) for f in seen]
    ours, theirs = _both(program)
    assert ours == theirs


def _logging_subclass(lib, log):
    class Logged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)
    return Logged


@pytest.mark.parametrize("call", [
    lambda T, s: T.detach(s), lambda T, s: T.size(s), lambda T, s: T.dim(s),
    lambda T, s: T.numel(s), lambda T, s: T.item(s[0, 0]), lambda T, s: T.tolist(s),
    lambda T, s: T.requires_grad_(s), lambda T, s: T.is_floating_point(s),
    lambda T, s: T.element_size(s), lambda T, s: T.cpu(s), lambda T, s: T.new_tensor(s, [1.0]),
    lambda T, s: T.type(s), lambda T, s: T.to(s, T.dtype.__get__(s) if False else "cpu"),
    lambda T, s: T.storage_offset(s), lambda T, s: T.stride(s), lambda T, s: T.is_inference(s)])
def test_tensor_methods_called_through_the_class_reach_a_subclass(call):
    def program(lib):
        log = []
        s = lib.tensor([[1.0, 2.0], [3.0, 4.0]]).as_subclass(_logging_subclass(lib, log))
        log.clear()
        call(lib.Tensor, s)
        return [name for name in log if name != "__get__"][:1]
    ours, theirs = _both(program)
    assert ours == theirs and ours


def test_a_subclass_handler_calling_func_reaches_another_subclass():
    # the outer class's handler unwraps into another dispatching class's instances: PyTorch's
    # Tensor.detach (a C method) dispatches on them again
    def program(lib):
        log = []
        Inner = _logging_subclass(lib, log)

        class Outer(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                args = [a.as_subclass(Inner) if isinstance(a, Outer) else a for a in args]
                with lib._C.DisableTorchFunctionSubclass():
                    pass
                return func(*args, **(kwargs or {}))
        o = lib.ones(2).as_subclass(Outer)
        log.clear()
        r = lib.Tensor.detach(o)
        return type(r).__name__, [name for name in log if name != "__get__"]
    ours, theirs = _both(program)
    assert ours == theirs


def test_plain_tensor_methods_keep_their_results():
    x = tapegrad.arange(6.0).view(2, 3)
    y = torch.arange(6.0).view(2, 3)
    assert x.size() == y.size() and x.dim() == y.dim() and x.numel() == y.numel()
    assert x.tolist() == y.tolist() and x[1, 2].item() == y[1, 2].item()
    assert tapegrad.Tensor.size(x, 1) == torch.Tensor.size(y, 1)
    with pytest.raises(TypeError, match="descriptor 'size' for 'torch._C.TensorBase' objects"):
        tapegrad.Tensor.size(3)


# -- 2. saved-tensor pack hooks and bfloat16 -----------------------------------------------------

def _packed(lib, dtype):
    seen = []

    def pack(t):
        seen.append(t)
        return t
    a = lib.tensor([1.5, 2.0, -3.0], dtype=dtype, requires_grad=True)
    b = lib.tensor([0.5, 4.0, 2.0], dtype=dtype)
    described = []
    with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        for op in (lambda: a * b, lambda: b * a, lambda: a / b, lambda: (a * b).sum(),
                   lambda: lib.matmul(a, b), lambda: a.exp(),
                   lambda: lib.nn.functional.linear(a.view(1, 3), b.view(1, 3))):
            seen.clear()
            y = op()
            described.append([(str(t.dtype), tuple(t.shape), t is b, t is y) for t in seen])
    y = (a * b).sum()
    return described


def test_pack_hooks_see_bfloat16_values_saved_without_grad_as_bfloat16():
    # SILENT: pack received a new float32 tensor on the storage of b (no grad) where PyTorch's
    # receives b itself, bfloat16
    assert _packed(tapegrad, tapegrad.bfloat16) == _packed(torch, torch.bfloat16)


def test_pack_hooks_bfloat16_round_trip_gradients():
    def program(lib):
        a = lib.tensor([1.5, 2.0, -3.0], dtype=lib.bfloat16, requires_grad=True)
        b = lib.tensor([0.5, 4.0, 2.0], dtype=lib.bfloat16)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = (a * b * a).sum()
        y.backward()
        return a.grad.tolist(), str(a.grad.dtype)
    ours, theirs = _both(program)
    assert ours == theirs


# -- 3. torch.jit names ------------------------------------------------------------------------

def test_jit_isinstance_checks_container_elements():
    from typing import Dict, List, Optional, Tuple, Union

    def program(lib):
        t = lib.ones(1)
        return [lib.jit.isinstance([1, 2], List[int]), lib.jit.isinstance([1, "a"], List[int]),
                lib.jit.isinstance({"a": t}, Dict[str, lib.Tensor]),
                lib.jit.isinstance({"a": 1}, Dict[str, lib.Tensor]),
                lib.jit.isinstance(None, Optional[int]), lib.jit.isinstance((1, "a"), Tuple[int, str]),
                lib.jit.isinstance((1,), Tuple[int, int]), lib.jit.isinstance(True, int),
                lib.jit.isinstance([[1]], List[List[int]]), lib.jit.isinstance([1], (List[str], List[int])),
                lib.jit.isinstance([1], Union[List[str], List[int]]), lib.jit.isinstance(1, int | str),
                lib.jit.isinstance({1: [2]}, dict[int, list[int]]), lib.jit.isinstance(t, lib.Tensor)]
    ours, theirs = _both(program)
    assert ours == theirs


@pytest.mark.parametrize("target", ["list", "List", "Dict", "Optional", "[int]"])
def test_jit_isinstance_refuses_bare_containers(target):
    import typing
    resolved = {"list": list, "List": typing.List, "Dict": typing.Dict,
                "Optional": typing.Optional, "[int]": [int]}[target]
    with pytest.raises(RuntimeError) as theirs:
        torch.jit.isinstance([1], resolved)
    with pytest.raises(RuntimeError) as ours:
        tapegrad.jit.isinstance([1], resolved)
    assert str(ours.value) == str(theirs.value)


def test_jit_isinstance_warns_on_an_empty_container():
    from typing import List
    with pytest.warns(UserWarning, match="The inner type of a container is lost"):
        assert tapegrad.jit.isinstance([], List[int])


def test_jit_error_attribute_and_interface():
    def program(lib):
        try:
            raise lib.jit.Error("boom")
        except Exception as e:
            caught = (str(type(e)), repr(e), isinstance(e, RuntimeError))
        a = lib.jit.Attribute([], list)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)

            @lib.jit.interface
            class Runs:
                def run(self, x: lib.Tensor) -> lib.Tensor:
                    pass

            class Base:
                pass

            class Derived(Base):
                def run(self, x: lib.Tensor) -> lib.Tensor:
                    pass
            errors = []
            for bad in (3, Derived):
                try:
                    lib.jit.interface(bad)
                except RuntimeError as e:
                    errors.append(str(e))
        return caught, repr(a), str(type(a)), a.value, a.type, Runs.__torch_script_interface__, \
            errors
    ours, theirs = _both(program)
    assert ours == theirs
    assert pickle.loads(pickle.dumps(tapegrad.jit.Attribute(1, int))) == (1, int)


def test_jit_fuser_switches_answer_as_pytorch_cpu():
    def program(lib):
        C = lib._C
        seen = [C._jit_can_fuse_on_cpu(), C._jit_can_fuse_on_gpu(), C._jit_texpr_fuser_enabled(),
                C._jit_llga_enabled(), C._get_graph_executor_optimize()]
        seen += [C._jit_set_profiling_executor(True), C._jit_set_profiling_executor(False),
                 C._jit_set_profiling_executor(True), C._jit_set_profiling_mode(True)]
        seen += [C._jit_override_can_fuse_on_cpu(True), C._jit_can_fuse_on_cpu(),
                 C._jit_override_can_fuse_on_cpu(False)]
        seen += [C._jit_set_texpr_fuser_enabled(False), C._jit_texpr_fuser_enabled(),
                 C._jit_set_texpr_fuser_enabled(True)]
        seen += [C._get_graph_executor_optimize(False), C._get_graph_executor_optimize(True)]
        for name in ("fuser0", "fuser1", "fuser2", "fuser3", "none"):
            with lib.jit.fuser(name):
                seen.append((name, C._jit_can_fuse_on_cpu(), C._jit_can_fuse_on_gpu(),
                             C._jit_texpr_fuser_enabled(), C._jit_llga_enabled()))
        seen += [C._jit_can_fuse_on_cpu(), C._jit_texpr_fuser_enabled(), C._jit_llga_enabled()]
        try:
            with lib.jit.fuser("fuser9"):
                pass
        except Exception as e:
            seen.append((type(e).__name__, str(e)))
        try:
            C._jit_set_profiling_executor("yes")
        except TypeError as e:
            seen.append(str(e).splitlines()[0])
        return seen
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _both(program)
    assert ours == theirs
def test_a_parameter_subclass_handing_calls_to_parameters_impl():
    # Parameter's _disabled_torch_function_impl runs func with the subclass dispatch off, as
    # PyTorch's C one: Tensor.size (now a dispatching entry) came back to the subclass forever
    def program(lib):
        log = []

        class Logged(lib.nn.Parameter):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(func.__name__)
                return super().__torch_function__(func, types, args, kwargs)
        p = Logged(lib.ones(2, 3))
        return tuple(p.size()), p.dim(), lib.Tensor.numel(p), [n for n in log if n != "__get__"]
    ours, theirs = _both(program)
    assert ours == theirs
