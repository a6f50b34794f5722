"""tapegrad.amp: GradScaler and autocast, as torch.amp behaves on a CPU-only machine.

Training scripts wrap their loop in ``autocast`` and ``GradScaler``; the AMP recipe switches
both with ``enabled=``.  ``GradScaler`` is complete (loss scaling, unscaling, skipping steps
whose gradients are not finite, growth and backoff of the scale, state dicts), so a script using
it on the CPU trains as under PyTorch.  ``autocast('cpu', dtype=...)`` runs the ops of
PyTorch's CPU autocast lists in float16 (or bfloat16) or float32, casting their inputs as
PyTorch does (tapegrad/_autocast.py has the lists and the cast); ``autocast`` for ``'cuda'``
warns and disables itself, as PyTorch does without CUDA, and so does a CPU autocast asked for a
dtype other than bfloat16 or float16.  bfloat16: tapegrad has no bfloat16 tensors yet, so the
first op of a bfloat16 region that would cast raises NotImplementedError.
"""
from __future__ import annotations as _annotations

import functools as _functools
import warnings as _warnings

from . import _core, _step_phases
from .grad_mode import no_grad as _no_grad
from ._torch_names import object_repr as _object_repr

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used for ``device_type``: ``'cpu'`` and ``'cuda'`` as PyTorch
    (the CUDA one disables itself here, there being no GPU)."""
    return device_type in ("cpu", "cuda")


class autocast:  # noqa: N801  (PyTorch's name)
    """Context manager and decorator for mixed precision regions (see the module docstring)."""
    _torch_module = "torch.amp.autocast_mode"  # where PyTorch defines it (its default repr names it)
    __repr__ = _object_repr

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        from ._settings import get_autocast_dtype, is_autocast_cache_enabled
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type.split(":")[0] not in _DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start "
                               f"of device string: {device_type}")
        self.device = device_type
        # (PyTorch's default is the dtype now in effect: a nested autocast keeps its outer one's)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else cache_enabled
        self._enabled = bool(enabled)
        if self._enabled and device_type != "cpu":
            _warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled and self.fast_dtype not in (_core.bfloat16, _core.float16):
            # (a script picking float32 when bfloat16 is unsupported runs in float32)
            _warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                          "autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                          "torch.float16 currently.", UserWarning, stacklevel=2)
            self._enabled = False

    def __enter__(self):
        from . import _settings
        self.prev_cache_enabled = _settings.is_autocast_cache_enabled()
        self.prev = _settings.is_autocast_enabled(self.device)
        self.prev_fastdtype = _settings.get_autocast_dtype(self.device)
        _settings.set_autocast_enabled(self.device, self._enabled)
        _settings.set_autocast_dtype(self.device, self.fast_dtype)
        _settings.autocast_increment_nesting()
        _settings.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc, tb):
        from . import _settings
        # the weight cache lives until the outermost region exits
        if _settings.autocast_decrement_nesting() == 0:
            _settings.clear_autocast_cache()
        _settings.set_autocast_enabled(self.device, self.prev)
        _settings.set_autocast_dtype(self.device, self.prev_fastdtype)
        _settings.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @_functools.wraps(func)
        def decorated(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorated


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def _cast_floating(value, dtype, device_type: str):
    """value with its floating-point tensors on `device_type` other than float64 (also inside
    lists, tuples and dicts) cast, as PyTorch's custom_fwd casts: a float64 tensor, or one on
    another device (every tensor here is a CPU one: a 'cuda' custom_fwd casts none), stays."""
    if isinstance(value, _core.TensorBase):
        eligible = (value.is_floating_point() and value.dtype is not _core.float64
                    and value.device.type == device_type.split(":")[0])
        return value.to(dtype) if eligible else value
    if isinstance(value, dict):
        return {k: _cast_floating(v, dtype, device_type) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floating(v, dtype, device_type) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate a custom Function's ``forward`` for autocast regions: inside an enabled
    autocast of ``device_type`` it runs with autocast off and its floating inputs cast to
    ``cast_inputs`` (if given); elsewhere it is called as is.  It records on ``ctx`` whether
    autocast was on, for ``custom_bwd``."""
    _check_device_type(device_type)
    if fwd is None:
        return _functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @_functools.wraps(fwd)
    def decorated_forward(ctx, *args, **kwargs):
        from . import get_autocast_dtype, is_autocast_enabled
        ctx._dtype = get_autocast_dtype(device_type)
        enabled = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = enabled and cast_inputs is None
        if cast_inputs is None or not enabled:
            return fwd(ctx, *args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(ctx, *_cast_floating(args, cast_inputs, device_type),
                       **_cast_floating(kwargs, cast_inputs, device_type))
    return decorated_forward


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate a custom Function's ``backward`` to run under the autocast state its
    ``custom_fwd`` forward ran under."""
    _check_device_type(device_type)
    if bwd is None:
        return _functools.partial(custom_bwd, device_type=device_type)

    @_functools.wraps(bwd)
    def decorated_backward(ctx, *args, **kwargs):
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(ctx, *args, **kwargs)
    return decorated_backward


class GradScaler:
    """Dynamic loss scaling: ``scale(loss).backward()``, ``step(optimizer)``, ``update()``.

    The scale starts at ``init_scale``; a step whose gradients hold an inf or NaN is skipped and
    the scale multiplied by ``backoff_factor``; after ``growth_interval`` clean steps in a row it
    is multiplied by ``growth_factor``.  Disabled (``enabled=False``, or a ``'cuda'`` scaler on
    this CPU-only machine, which warns as PyTorch's does), every method passes through.
    """
    _torch_module = "torch.amp.grad_scaler"  # where PyTorch defines it (its default repr names it)
    __repr__ = _object_repr

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda":
            _warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        # Per optimizer since the last update(): "unscaled" or "stepped", and whether an inf or
        # NaN gradient was seen.
        self._stage: dict[int, str] = {}
        self._found_inf: dict[int, bool] = {}
        self._scaled_once = False     # PyTorch creates its scale tensor at the first scale()

    @property
    def _scale(self) -> float:
        return self._scale_value

    @_scale.setter
    def _scale(self, value) -> None:
        self._scale_value = float(value)
        # scale() multiplies by this tensor, as PyTorch's scaler multiplies by its float32 scale
        # tensor (a float16 loss comes out float32, as there): written in place, never rebound,
        # so a compiled function that scales its loss reads the current scale at every replay
        # (a Python number was baked into the capture: the scale grew, the replay's did not)
        held = self.__dict__.get("_scale_tensor")
        if held is None:
            from .creation import tensor
            self._scale_tensor = tensor(self._scale_value, dtype=_core.float32)
        else:
            with _no_grad():
                held.fill_(self._scale_value)

    def _check_scaled(self, what: str) -> None:
        if not self._scaled_once:
            raise AssertionError(f"Attempted {what} but _scale is None.  This may indicate your "
                                 "script did not use scaler.scale(loss or outputs) earlier in "
                                 "the iteration.")

    # -- scaling ---------------------------------------------------------------------------

    def scale(self, outputs):
        """``outputs`` (a tensor or nested lists/tuples of tensors) times the current scale."""
        if not self._enabled:
            return outputs
        self._scaled_once = True
        if isinstance(outputs, _core.TensorBase):
            return outputs * self._scale_tensor
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    # unscale_, step and update act on gradients, the optimizer and the scale after backward():
    # in a compiled whole step each is a phase a replay runs again after the backward, as the
    # optimizer's step is (tapegrad/_step_phases.py)

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, noting
        whether any is inf or NaN (at most once per optimizer between updates)."""
        if not self._enabled:
            return
        if _step_phases.noting is not None:
            return _step_phases.note("unscale_", GradScaler._unscale, self, (optimizer,), {})
        self._unscale(optimizer)

    def _unscale(self, optimizer) -> None:
        self._check_scaled("unscale_")
        key = id(optimizer)
        stage = self._stage.get(key)
        if stage == "unscaled":
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if stage == "stepped":
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = 1.0 / self._scale
        found_inf = False
        with _no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv_scale)
                    if not found_inf and not bool(p.grad.isfinite().all()):
                        found_inf = True
        self._found_inf[key] = found_inf
        self._stage[key] = "unscaled"

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done), then ``optimizer.step(*args, **kwargs)`` if every gradient is
        finite; returns what that step returned, or None when it was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if _step_phases.noting is not None:
            return _step_phases.note(_step_phases.STEP, GradScaler._step, self,
                                     (optimizer, *args), kwargs)
        return self._step(optimizer, *args, **kwargs)

    def _step(self, optimizer, *args, **kwargs):
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scaled("step")
        key = id(optimizer)
        if self._stage.get(key) == "stepped":
            raise RuntimeError("step() has already been called since the last update().")
        if self._stage.get(key) != "unscaled":
            self.unscale_(optimizer)
        result = None if self._found_inf[key] else optimizer.step(*args, **kwargs)
        self._stage[key] = "stepped"
        return result

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration: ``new_scale`` if given, else back off after a
        skipped step or grow after ``growth_interval`` clean ones."""
        if not self._enabled:
            return
        if _step_phases.noting is not None:
            return _step_phases.note("update", GradScaler._update, self, (new_scale,), {})
        self._update(new_scale)

    def _update(self, new_scale=None) -> None:
        self._check_scaled("update")
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, _core.TensorBase)
                                else new_scale)
        else:
            if not self._found_inf:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(self._found_inf.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._stage.clear()
        self._found_inf.clear()

    # -- accessors and state -----------------------------------------------------------------

    def is_enabled(self) -> bool:
        """Whether the scaler scales (False when disabled)."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor."""
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a skipped step."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor."""
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        """How many clean steps in a row grow the scale."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval."""
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict:
        """The scale and its schedule (an empty dict when disabled), as PyTorch's keys."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned (nothing to do when disabled)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_stage"], state["_found_inf"] = {}, {}   # per-iteration, keyed by object ids
        return state


# -- the deprecated per-device spellings ----------------------------------------------------------
# PyTorch keeps torch.cuda.amp.GradScaler / .autocast and torch.cpu.amp.GradScaler / .autocast as
# subclasses that warn (FutureWarning) and pass their device.  tapegrad.cuda.amp and
# tapegrad.cpu.amp subclass these two, naming only the device (and autocast's default dtype).

class _DeviceGradScaler(GradScaler):
    """``GradScaler(<device>, ...)`` under the deprecated name ``torch.<device>.amp.GradScaler``."""

    _device = ""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        device = self._device
        _warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                      f"`torch.amp.GradScaler('{device}', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__(device, init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class _DeviceAutocast(autocast):  # noqa: N801  (PyTorch's name)
    """``autocast(<device>, ...)`` under the deprecated name ``torch.<device>.amp.autocast``;
    ``_default_dtype``: the name of the dtype it takes when given none (None: autocast's own)."""

    _device = ""
    _default_dtype: str | None = None

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True) -> None:
        device = self._device
        _warnings.warn(f"`torch.{device}.amp.autocast(args...)` is deprecated. Please use "
                      f"`torch.amp.autocast('{device}', args...)` instead.", FutureWarning,
                      stacklevel=2)
        if dtype is None and self._default_dtype is not None:
            dtype = getattr(_core, self._default_dtype)
        super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def _submodule(name: str, members: dict):
    """torch.amp.<name>: PyTorch's amp is a package whose objects live in submodules that scripts
    reach by path (`from torch.amp.autocast_mode import autocast`, `torch.amp.grad_scaler.
    GradScaler`).  Ours is one module, so each submodule is a module object holding the same
    objects, registered (with a spec) where `import` and importlib.util.find_spec look first."""
    import importlib.machinery
    import sys
    import types
    module = types.ModuleType(f"{__name__}.{name}")
    module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)
    vars(module).update(members, __all__=list(members))
    sys.modules.setdefault(module.__name__, module)
    return module


# A module with a (empty) __path__ is a package to the import system: without it `import
# torch.amp.autocast_mode` stops at "'torch.amp' is not a package" before looking in sys.modules.
# (The spec stays a module's: a package's spec would make __spec__.parent this module, unlike
# __package__, and each relative import in a function here would warn.)
__path__ = []
autocast_mode = _submodule("autocast_mode", {
    "autocast": autocast, "is_autocast_available": is_autocast_available,
    "custom_fwd": custom_fwd, "custom_bwd": custom_bwd})
grad_scaler = _submodule("grad_scaler", {"GradScaler": GradScaler})
