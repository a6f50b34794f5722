"""Grad mode guards: no_grad, enable_grad, set_grad_enabled, inference_mode (context managers and
decorators, with or without parentheses where PyTorch allows it).

Grad mode and inference mode are two bits of a C thread-local word in the core, read on every op;
these classes only flip them and restore them, so both are per thread, as in PyTorch.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import functools
import inspect
import sys

from . import _core
from ._torch_names import TorchNamedClass as _TorchNamedClass
from ._torch_names import object_repr as _object_repr

is_grad_enabled = _core.is_grad_enabled
is_inference_mode_enabled = _core.is_inference_mode_enabled


def is_inference(input) -> bool:
    """Whether `input` is an inference tensor (created in inference mode); ``input.is_inference()``."""
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not "
                        f"{_type_name(input)}")
    return input.is_inference()


def _wrap_generator(func, make_guard):
    """A generator function whose body runs under a fresh guard at every resumption (and not while
    it is suspended at a yield), as PyTorch's decorators treat generators."""

    @functools.wraps(func)
    def generator(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with make_guard():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_guard():
                        gen.close()
                    raise
                except BaseException:
                    with make_guard():
                        response = gen.throw(*sys.exc_info())
                else:
                    with make_guard():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return generator


def _decoratable(func):
    """What a guard decorates: a class is deprecated there (PyTorch warns, then decorates a
    function that constructs it)."""
    if not inspect.isclass(func):
        return func
    import warnings
    warnings.warn("Decorating classes is deprecated and will be disabled in future versions. You "
                  "should only decorate functions or methods. To preserve the current behavior "
                  "of class decoration, you can directly decorate the `__init__` method and "
                  "nothing else.", FutureWarning, stacklevel=3)
    cls = func
    return lambda *args, **kwargs: cls(*args, **kwargs)


def _torch_object_repr(guard) -> str:
    """PyTorch's default repr of its guard objects, whose classes live in torch.autograd.grad_mode
    (a notebook cell ending in `torch.no_grad()` displays it); a user's subclass keeps its own."""
    return _object_repr(guard)


class _GradModeGuard(_core.GradModeGuard, metaclass=_TorchNamedClass):  # print(torch.no_grad)
    """Base: sets grad mode to `self._mode` on enter, restores the previous mode on exit (both
    compiled, in the core); also usable as a decorator."""

    _mode: bool

    def clone(self):
        """A new guard of the same kind and mode (PyTorch's decorators enter one per call)."""
        return type(self)()

    # a fresh guard with the same effect, entered by each call of a decorated function
    _clone = clone

    def __repr__(self) -> str:
        return _torch_object_repr(self)

    def __call__(self, func):
        func = _decoratable(func)
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(func, self._clone)
        mode = self._mode

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            prev = _core._set_grad_enabled(mode)
            try:
                return func(*args, **kwargs)
            finally:
                _core._set_grad_enabled(prev)

        return wrapper


class _NoParamGuard(_GradModeGuard):
    """A guard that also decorates without parentheses: `@no_grad` means `@no_grad()`."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return super().__new__(cls)(orig_func)


class no_grad(_NoParamGuard):
    """Operations inside do not record; results do not require grad."""

    _mode = False


class enable_grad(_NoParamGuard):
    """Re-enables recording inside a no_grad region."""

    _mode = True


class set_grad_enabled(_GradModeGuard):
    """Sets grad mode to `mode` now (usable as a plain call), restoring it when used with `with`."""

    def __init__(self, mode: bool) -> None:
        self._mode = _core.check_bool("set_grad_enabled", "enabled", mode, 1)
        self._prev = _core._set_grad_enabled(self._mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc_info) -> None:
        _core._set_grad_enabled(self._prev)

    def _clone(self):
        return _SetGradModeScope(self._mode)

    def clone(self):
        """A new set_grad_enabled of the same mode (which, as constructing one does, sets it)."""
        return type(self)(self._mode)

    def __repr__(self) -> str:
        # PyTorch's set_grad_enabled names its mode (a notebook cell `torch.set_grad_enabled(True)`).
        return f"torch.autograd.grad_mode.set_grad_enabled(mode={self._mode})"

    def __call__(self, func):
        # Used as a decorator: constructing it already switched the mode; undo that first.
        _core._set_grad_enabled(self._prev)
        return super().__call__(func)


class _SetGradModeScope(_GradModeGuard):
    """set_grad_enabled(mode) as a plain scope: switches only when entered."""

    def __init__(self, mode: bool) -> None:
        self._mode = mode


class inference_mode(_core.InferenceModeGuard, metaclass=_TorchNamedClass):
    """inference_mode(mode=True): nothing records inside (even under enable_grad()), grad mode
    is off, is_inference_mode_enabled() is True, and tensors created inside are inference tensors
    (``is_inference()``): outside the mode they cannot be saved for backward, written in place or
    made to require grad, as in PyTorch.  inference_mode(False) turns both modes the other way
    (grad mode on).  Usable as `with`, as `@inference_mode` and as `@inference_mode(mode)`.

    The mode is a bit of the core's thread-local grad-mode word (src/tapegrad/grad_mode.pxi)."""

    def __new__(cls, mode=True):
        guard = super().__new__(cls)
        if mode is None or isinstance(mode, bool):
            return guard
        guard.__init__()           # bare decorator: `mode` is the function
        return guard(mode)

    def __init__(self, mode: bool = True) -> None:
        super().__init__(mode)

    def clone(self):
        """A new inference_mode guard of the same mode."""
        return type(self)(self.mode)

    # a fresh guard with the same mode, entered by each call of a decorated function
    _clone = clone

    def __repr__(self) -> str:
        return _torch_object_repr(self)

    def __call__(self, func):
        func = _decoratable(func)
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(func, self._clone)
        make_guard = self._clone

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with make_guard():
                return func(*args, **kwargs)

        return wrapper
