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
