"""Optimizer: the base class of tapegrad's optimizers, with PyTorch's param groups and state dicts.

Optimizers update each parameter's numpy array in place with vectorised numpy operations.  The
helpers at the bottom reproduce the rounding of PyTorch's CPU kernels: PyTorch evaluates
`a.add_(b, alpha=s)`, `lerp_` and `addcmul_` with a fused multiply-add (one rounding), so for
float32 those are computed exactly in float64 and rounded once.  float32 updates then agree with
PyTorch's bit for bit, except where PyTorch's square root (MKL's, not always correctly rounded)
differs from numpy's by an ulp.  float64 uses plain numpy arithmetic (numpy has no fused
multiply-add, and emulating one costs ~10x): results agree with PyTorch's to ~1e-16 relative.
"""
from __future__ import annotations as _annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain
from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import _core, _step_phases
from .._more_creation import typename   # torch.typename: 'torch.FloatTensor' for a tensor
from .._profiling import recording_profiler
from ..grad_mode import enable_grad, no_grad
from ..tensor import Tensor
from .._foreach import _get_foreach_kernels_supported_devices, _get_fused_kernels_supported_devices  # noqa: F401
from .._meta import bfloat16_route as _bfloat16_route
from .._torch_names import TorchNamedABCMeta as _TorchNamedABCMeta

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

# What an optimizer's `params` may be: tensors, parameter groups (dicts), or (name, tensor) pairs,
# as PyTorch spells the type that custom optimizers annotate their own __init__ with.
ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]

# Step hooks every optimizer runs (PyTorch's global ones): pre hooks before an optimizer's own,
# post hooks after.
_global_step_pre_hooks: OrderedDict = OrderedDict()
_global_step_post_hooks: OrderedDict = OrderedDict()


def _add_hook(hooks: OrderedDict, hook, prepend: bool = False):
    from ..utils.hooks import RemovableHandle
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's step; it may return
    ``(new_args, new_kwargs)``.  Returns a handle whose ``remove()`` unregisters it."""
    return _add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's step."""
    return _add_hook(_global_step_post_hooks, hook)


def _with_step_hooks(step):
    """`step` running the global and the optimizer's step hooks around it.  Every class's own
    step is wrapped when the class is made (Optimizer's, and a script's subclass's), so the
    classes never change later; a subclass's step calling super().step() runs the hooks once,
    in the outermost call, as PyTorch (which wraps the instantiated class's step only)."""
    @functools.wraps(step)
    def hooked_step(self, *args, **kwargs):
        if _step_phases.noting is not None:     # a compiled whole step captures its phases
            return _step_phases.note(_step_phases.STEP, stepped, self, args, kwargs)
        return stepped(self, *args, **kwargs)

    def stepped(self, *args, **kwargs):
        # (read from the instance's dict: an optimizer wrapping another, Lookahead-style, may
        # never call Optimizer.__init__, which makes the tables)
        state = self.__dict__
        profiler = recording_profiler()
        if profiler is not None and not state.get("_profiled_step"):
            # PyTorch's label of a step under the profiler (its profile_hook_step), once for a
            # subclass's step that calls super().step()
            self._profiled_step = True
            try:
                with profiler.record_function(f"Optimizer.step#{type(self).__name__}.step"):
                    return hooked_step(self, *args, **kwargs)
            finally:
                self._profiled_step = False
        if "_optimizer_step_pre_hooks" in state:
            pre, post = state["_optimizer_step_pre_hooks"], state.get("_optimizer_step_post_hooks")
        elif _step_wrapped_in_torch(type(self)):
            # An optimizer that skipped Optimizer.__init__ (a Lookahead-style wrapper) whose
            # class PyTorch has since wrapped (another instance's __init__, or its own
            # zero_grad): PyTorch's wrapper reads the tables by attribute, which raises its
            # AttributeError unless the class supplies them (a __getattr__ delegating to the
            # inner optimizer).
            pre, post = self._optimizer_step_pre_hooks, self._optimizer_step_post_hooks
        else:
            return step(self, *args, **kwargs)     # (PyTorch runs an unwrapped step: no hooks)
        pre, post = pre or _NO_HOOKS, post or _NO_HOOKS
        if not (pre or post or _global_step_pre_hooks or _global_step_post_hooks) or \
                state.get("_running_step_hooks"):
            return step(self, *args, **kwargs)
        self._running_step_hooks = True
        try:
            return _run_with_hooks(self, step, pre, post, args, kwargs)
        finally:
            self._running_step_hooks = False
    hooked_step.hooked = True
    return hooked_step


def _run_with_hooks(self, step, pre, post, args, kwargs):
    """The pre hooks (which may replace the arguments), `step`, then the post hooks."""
    for hook in chain(_global_step_pre_hooks.values(), pre.values()):
        result = hook(self, (self,) + args, kwargs)
        if result is not None:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                   f"new_kwargs), but got {result}.")
            (_, *args), kwargs = result
    out = step(self, *args, **kwargs)
    for hook in chain(post.values(), _global_step_post_hooks.values()):
        hook(self, (self,) + tuple(args), kwargs)
    return out


_NO_HOOKS: OrderedDict = OrderedDict()   # (never written: the tables of an uninitialised one)


# PyTorch wraps a class's step with its hook runner lazily, from an instance's Optimizer.__init__,
# __setstate__ or first zero_grad (its _patch_step_function, which assigns the wrapper to the
# instance's class); tapegrad's classes are wrapped when made, and this flag, in the class's own
# __dict__, says whether PyTorch's would be by now.
_WRAPPED_FLAG = "_step_wrapped_as_torch"


def _step_wrapped_in_torch(cls) -> bool:
    """Whether `cls.step` resolves to a step PyTorch has wrapped: the first class of the MRO that
    defines a step or was flagged decides."""
    for klass in cls.__mro__:
        if klass.__dict__.get(_WRAPPED_FLAG):
            return True
        if "step" in klass.__dict__:
            return False
    return False


def _wrap_step_as_torch(optimizer) -> None:
    """What PyTorch's _patch_step_function leaves behind: the profiler name of zero_grad on the
    instance, and the instance's class marked as wrapped."""
    cls = type(optimizer)
    optimizer._zero_grad_profile_name = f"Optimizer.zero_grad#{cls.__name__}.zero_grad"
    if not _step_wrapped_in_torch(cls):
        setattr(cls, _WRAPPED_FLAG, True)

_HOOK_TABLES = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks")


def _use_grad_for_differentiable(func):
    """Run an optimizer's step with grad mode on only for an optimizer made with
    differentiable=True (off otherwise), as the built-in steps run: PyTorch's private decorator,
    which third-party optimizers (SGLD samplers, copies of torch.optim's steps) import."""
    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        from ..grad_mode import set_grad_enabled
        with set_grad_enabled(bool(self.defaults["differentiable"])):
            return func(self, *args, **kwargs)
    return _use_grad


def _get_value(x):
    """A step count or hyper-parameter as a Python number (.item() of a tensor), as PyTorch's
    private helper gives it outside compilation."""
    return x.item() if isinstance(x, Tensor) else x


def _get_scalar_dtype(is_fused=None):
    """The dtype PyTorch keeps an optimizer's scalar state in (the step counter, ASGD's eta and
    mu, NAdam's mu_product), read when the state is created: float32 for a fused optimizer,
    else float64 while the default dtype is float64, float32 otherwise.  (PyTorch's private
    name, which optimizers written outside it import.)"""
    from .. import float32, float64, get_default_dtype
    if is_fused:
        return float32
    return float64 if get_default_dtype() == float64 else float32


def _default_to_fused_or_foreach(params, differentiable: bool, use_fused: bool = False):
    """(fused, foreach) as PyTorch chooses them: both False for CPU tensors (its foreach and
    fused kernels are for accelerators), which is all tapegrad holds."""
    return False, False


# The rest of the private names torch.optim's own modules import from torch.optim.optimizer.
# Optimizers written outside PyTorch as edited copies of torch.optim's classes (an Adam variant
# made from torch/optim/adam.py) import them too, so they must exist and behave as on CPU.

StateDict = dict[str, Any]
DeviceDict = dict[Any, Tensor]
DeviceDtypeDict = dict[Any, Tensor]
TensorListList = list[list[Tensor | None]]


def __getattr__(name):
    # Names that would import tapegrad.nn / tapegrad.utils (0.3 s) with every optimizer: made on
    # first use.
    if name == "_foreach_supported_types":
        # (torch.optim.optimizer's own list: a Parameter takes the foreach path too)
        from ..nn.parameter import Parameter
        value = [Tensor, Parameter]
    elif name == "_group_tensors_by_device_and_dtype":
        from ..utils._foreach_utils import _group_tensors_by_device_and_dtype as value
    else:
        raise AttributeError(f"module 'tapegrad.optim.optimizer' has no attribute '{name}'")
    globals()[name] = value
    return value

# docstring fragments the classes' docs are assembled from
_params_doc = ("params (iterable): iterable of parameters or named_parameters to optimize or "
               "iterable of dicts defining parameter groups.")
_foreach_doc = ("foreach (bool, optional): whether the foreach implementation of the optimizer "
                "is used (default: None).")
_fused_doc = ("fused (bool, optional): whether the fused implementation is used "
              "(default: None).")
_capturable_doc = ("capturable (bool, optional): whether this instance is safe to capture in "
                   "a graph (default: False).")
_differentiable_doc = ("differentiable (bool, optional): whether autograd should occur through "
                       "the optimizer step (default: False).")
_maximize_doc = ("maximize (bool, optional): maximize the objective with respect to the params, "
                 "instead of minimizing (default: False).")


def _stack_if_compiling(x):
    """PyTorch stacks a list of tensors under torch.compile; eagerly it is the list itself."""
    return x


def _disable_dynamo_if_unsupported(single_tensor_fn=None):
    """PyTorch's decorator that keeps torch.compile out of an update function: eagerly (all
    tapegrad runs) the function is returned as it is."""
    def wrapper(func):
        return func
    return wrapper


def _get_capturable_supported_devices(supports_xla: bool = True) -> list[str]:
    """The device types a capturable=True step supports (none of them is the CPU)."""
    devices = ["cuda", "xpu", "hpu", "privateuseone"]
    return devices + ["xla"] if supports_xla else devices


def _device_dtype_check_for_fused(p, cuda_unsupported: bool = False) -> None:
    """PyTorch's check of a parameter for fused=True: a floating-point tensor (on a supported
    device, which the CPU is)."""
    if not p.is_floating_point():
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of "
                           "supported devices: ['mps', 'cuda', 'xpu', 'hpu', 'cpu', 'mtia', "
                           f"'privateuseone'] but {p.dtype} and {p.device.type}")


def _view_as_real(params, *state_and_grads) -> None:
    """Replace, in the given lists, each complex parameter and its matching state or gradient
    tensors by their view_as_real views (the lists are changed in place, as PyTorch's helper
    does; the update then treats real and imaginary parts as independent reals)."""
    from .. import view_as_real
    for i, p in enumerate(params):
        if p.is_complex():
            params[i] = view_as_real(params[i])
            for s in state_and_grads:
                s[i] = view_as_real(s[i])


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _is_tensor(x) -> bool:
    return isinstance(x, _core.TensorBase)


def reset_grads(params, set_to_none: bool) -> None:
    """``zero_grad`` of an optimizer or a Module: each ``.grad`` set to None, or detached and
    zeroed in place -- the same object, dense or sparse (a sparse one loses its entries), so a
    script holding a reference sees the zeros, as under PyTorch."""
    for p in params:
        g = p.grad
        if g is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        if _is_sparse_tensor(g):
            with no_grad():
                g.zero_()
            continue
        if g.grad_fn is not None:
            g.detach_()
        elif g.requires_grad:
            g.requires_grad_(False)
        g._array.fill(0)


def _is_sparse_tensor(x) -> bool:
    """A sparse COO tensor (not a tapegrad.Tensor, see tapegrad/_sparse_coo.py): PyTorch's
    optimizers take one as a parameter, and a step refuses its sparse gradient where the
    algorithm has no sparse form."""
    return type(x).__name__ == "SparseTensor" and getattr(x, "is_sparse", False)


def _to_scalar(x):
    """A hyperparameter as a number: a Python number as it is, a one-element tensor as a numpy
    scalar of the tensor's dtype.  PyTorch computes with a tensor hyperparameter as a 0-d tensor,
    so ``1 - lr * weight_decay`` or ``lr / bias_correction`` round to float32 for a float32 lr
    even when the parameters are float64; numpy's scalar arithmetic with Python numbers keeps
    the scalar's dtype in the same way."""
    if _is_tensor(x):
        if x._array.size != 1:
            raise ValueError("Tensor hyperparameters must be 1-element")
        return x._array.reshape(())[()]
    return x


def _scalar_pow(base, exponent):
    """base ** exponent, where a tensor hyperparameter (a numpy scalar, see `_to_scalar`) is
    raised as PyTorch raises a 0-d tensor: through tapegrad's pow, which computes a float32
    cube as x*x*x (two roundings) as PyTorch's kernel does, where numpy's powf rounds once."""
    if isinstance(base, np.generic):
        return (_core.wrap_array(np.asarray(base)) ** exponent)._array[()]
    return base ** exponent


def _copy_value(value):
    """A deep copy of a state value: tensors get fresh arrays (same dtype and requires_grad)."""
    if _is_tensor(value):
        return _core.wrap_array(np.array(value._array, copy=True), value.requires_grad)
    if isinstance(value, dict):
        out = copy.copy(value)      # keeps the mapping type (OrderedDict, defaultdict, ...)
        for k, v in value.items():
            out[k] = _copy_value(v)
        return out
    if isinstance(value, list):
        return [_copy_value(v) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_copy_value(v) for v in value)
    return copy.deepcopy(value)


class Optimizer(metaclass=_TorchNamedABCMeta):  # type(opt) prints <class 'torch.optim.adam.Adam'>
    r"""Base class for all optimizers.

    Args:
        params (iterable): an iterable of Tensors or of dicts (parameter groups).  Specifies what
            Tensors should be optimized.
        defaults (dict): default values of optimization options (used when a parameter group
            doesn't specify them).
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        own_step = cls.__dict__.get("step")
        if callable(own_step) and not getattr(own_step, "hooked", False):
            cls.step = _with_step_hooks(own_step)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        # The hook tables before the state, in PyTorch's order: `vars(optimizer)` lists them so
        for table in _HOOK_TABLES:
            setattr(self, table, OrderedDict())
        _wrap_step_as_torch(self)
        if _is_tensor(params):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)
        # (PyTorch's once-only warning flag for a capturable step run uncaptured: vars() lists it)
        self._warned_capturable_if_run_uncaptured = True

    # -- pickling and printing --------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    # What an older checkpoint's param groups may lack (each optimizer lists its own flags), and
    # which per-parameter state entries are step counters that PyTorch keeps as 0-d tensors.
    _GROUP_DEFAULTS: dict[str, Any] = {}
    _STEP_KEYS: tuple[str, ...] = ()
    # Whether a step refuses a `step` state entry that is not a tensor, as PyTorch's functional
    # updates of these optimizers do (A3C's SharedAdam once pre-filled `state['step'] = 0`).
    _STEPS_ARE_TENSORS = False

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for table in _HOOK_TABLES:      # (hooks are not pickled, as in PyTorch)
            self.__dict__.setdefault(table, OrderedDict())
        _wrap_step_as_torch(self)
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._GROUP_DEFAULTS.items():
                group.setdefault(key, value)
        if self._STEP_KEYS:
            self._fix_steps(self._STEP_KEYS)

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # -- param groups -----------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a param group to the Optimizer's `param_groups` (e.g. to train frozen layers)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if _is_tensor(params):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. Please "
                            "use a list instead.")
        else:
            param_group["params"] = list(params)

        extracted_param_tensors = []
        extracted_param_names = []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                extracted_param_names.append(param[0])
                extracted_param_tensors.append(param[1])
            else:
                extracted_param_tensors.append(param)
        param_group["params"] = extracted_param_tensors
        if len(extracted_param_names) != 0:
            if len(extracted_param_names) == len(extracted_param_tensors):
                param_group["param_names"] = extracted_param_names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")

        for param in param_group["params"]:
            if not (_is_tensor(param) or _is_sparse_tensor(param)):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; "
                          "see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        param_set: set[int] = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current_group_txt = ("with names" if "param_names" in param_group
                                     else "without names")
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current_group_txt} to the optimizer")
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)

    # -- gradients --------------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to None by default, else to zeros)."""
        if _step_phases.noting is not None:     # a compiled whole step captures its phases
            return _step_phases.note(_step_phases.ZERO_GRAD, _zero_grads, self, (),
                                     {"set_to_none": set_to_none}, Optimizer.zero_grad)
        _zero_grads(self, set_to_none)

    def step(self, closure=None):
        """Perform a single optimization step (to update the parameters).

        `closure`, if given, re-evaluates the model (with grad enabled) and returns the loss,
        which step() returns.  Built-in optimizers update each param group with
        `_update_group`; parameters whose .grad is None are skipped.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        # PyTorch's built-in steps run with grad mode off (hooks and warnings see it off), on for
        # an optimizer made with differentiable=True: its update is then recorded.
        grad_mode = enable_grad() if self.defaults.get("differentiable") else no_grad()
        with grad_mode, _core.IeeeResults():  # inf/nan propagate silently, as in PyTorch
            for group in self.param_groups:
                if group.get("capturable"):
                    self._refuse_capturable(group)
                if group.get("foreach") and group.get("differentiable"):
                    self._refuse_foreach_autograd(group)
                if self._STEPS_ARE_TENSORS:
                    self._check_step_tensors(group)
                if _bfloat16_route[0] and _has_bfloat16(group):
                    self._update_bfloat16_group(group)
                else:
                    self._update_group(group)
        return loss

    def _update_bfloat16_group(self, group: dict[str, Any]) -> None:
        """A group holding bfloat16 parameters: the built-in updates compute on the numpy
        arrays, which for bfloat16 are float32 storage that each op must round.  The optimizers
        that have an update in tensor operations (the differentiable one) run it, so each op
        rounds as PyTorch's single-tensor step does; the others run theirs and the parameters
        and their state are rounded after it."""
        tensor_update = getattr(self, "_update_group_differentiable", None)
        if tensor_update is not None and not group["differentiable"]:
            tensor_update(group)
        else:
            self._update_group(group)
        from .._bfloat16 import round_tensors_in_place
        round_tensors_in_place(p for p in group["params"] if p.dtype is _core.bfloat16)
        round_tensors_in_place(v for p in group["params"] if p.dtype is _core.bfloat16
                               for v in self.state.get(p, {}).values()
                               if isinstance(v, _core.TensorBase) and v.dtype is _core.bfloat16)

    # What PyTorch's refusal of a capturable step names (NAdam and ASGD name their extra state,
    # Adadelta leaves out XLA).
    _CAPTURABLE_STATE = "params and state_steps"
    _CAPTURABLE_DEVICES = "['cuda', 'xpu', 'hpu', 'privateuseone', 'xla']"

    def _refuse_capturable(self, group: dict[str, Any]) -> None:
        """PyTorch's error for a capturable=True step (CUDA-graph capture) of CPU parameters,
        which tapegrad's all are: raised once a parameter of the group has a gradient."""
        if any(p.grad is not None for p in group["params"]):
            raise AssertionError(f"If capturable=True, {self._CAPTURABLE_STATE} must be on "
                                 f"supported devices: {self._CAPTURABLE_DEVICES}.")

    def _refuse_foreach_autograd(self, group: dict[str, Any]) -> None:
        """PyTorch's multi-tensor (foreach=True) steps assert that they need not record
        (differentiable=False), once a parameter of the group has a gradient; SGD's meets the
        in-place write into a leaf first (its own update raises it)."""
        if any(p.grad is not None for p in group["params"]):
            raise AssertionError("_foreach ops don't support autograd")

    def _check_step_tensors(self, group: dict[str, Any]) -> None:
        """PyTorch's refusal of a number as a parameter's `step` state (made by user code, as
        the pre-2.0 SharedAdam of A3C scripts does; a loaded checkpoint's is converted)."""
        # (A parameter without state has no step yet; a sparse gradient is refused first, by the
        # update, as PyTorch's _init_group refuses it before its functional step runs.)
        for p in group["params"]:
            state = self.state.get(p)
            if p.grad is not None and state and "step" in state and not p.grad.is_sparse \
                    and not _is_tensor(state["step"]):
                raise RuntimeError("API has changed, `state_steps` argument must contain a list "
                                   "of singleton tensors")

    def _update_group(self, group: dict[str, Any]) -> None:
        raise NotImplementedError

    def _refuse_sparse_grad(self) -> None:
        """A step's error for a sparse gradient (embedding(sparse=True)'s, or a sparse
        parameter's) where the algorithm has no sparse form.  PyTorch's message names the
        built-in class, also in a subclass."""
        name = next(c.__name__ for c in type(self).__mro__ if "_update_group" in c.__dict__)
        raise RuntimeError(f"{name} does not support sparse gradients")

    # -- hooks ------------------------------------------------------------------------------------
    # PyTorch's name of the wrapper that runs the step hooks around a step function.
    profile_hook_step = staticmethod(_with_step_hooks)

    def register_step_pre_hook(self, hook):
        """Run ``hook(optimizer, args, kwargs)`` before this optimizer's step; it may return
        ``(new_args, new_kwargs)``.  Returns a handle whose ``remove()`` unregisters it."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """Run ``hook(optimizer, args, kwargs)`` after this optimizer's step."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False):
        """Run ``hook(optimizer)`` before `state_dict()` builds the dict."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` on the built dict; a returned dict replaces it."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` before loading; a returned dict is loaded
        instead."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False):
        """Run ``hook(optimizer)`` after `load_state_dict()` has loaded."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dicts ------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state as a dict, in PyTorch's layout.

        ``state`` maps each parameter's integer index (its position across all param groups) to
        its state; ``param_groups`` lists the groups' options with ``params`` as index lists.
        The tensors in ``state`` are the optimizer's own (not copies), as in PyTorch.
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if _is_tensor(k) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load the optimizer state (an object returned by `state_dict()`).

        The state's tensors are copied (cast to the parameter's dtype, except ``step``), so the
        optimizer never shares buffers with `state_dict`.
        """
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = _copy_value(state_dict["param_groups"])

        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the "
                             "size of optimizer's group")

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, key=None):
            if _is_tensor(value):
                dt = (param._array.dtype if key != "step" and param._array.dtype.kind == "f"
                      else value._array.dtype)
                if dt == value._array.dtype:
                    # PyTorch's value.to(param.dtype): the loaded tensor itself, so the state
                    # shares memory with the dict it was loaded from (steps update both)
                    return value
                arr = np.array(value._array, dtype=dt, order="C", copy=True)
                return _core.wrap_array(arr, value.requires_grad)
            if isinstance(value, dict):
                return {k: _cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
                return type(value)(_cast(param, v) for v in value)
            return copy.deepcopy(value)

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # -- helpers for subclasses -------------------------------------------------------------------
    def _params_with_grad(self, group, sparse_grads=None):
        """(param, param array, grad array) for each parameter of `group` that has a dense
        gradient.  A sparse gradient (embedding(sparse=True)) is refused, or, for the optimizers
        with a sparse form, its (param, grad) appended to the list `sparse_grads`.

        A complex parameter's arrays come as their real views (`_real_view`): PyTorch updates a
        complex parameter as if its real and imaginary parts were independent real parameters.
        """
        out = []
        for p in group["params"]:
            g = p.grad
            if g is not None:
                if _is_sparse_tensor(g):
                    if sparse_grads is None:
                        self._refuse_sparse_grad()
                    sparse_grads.append((p, g))
                    continue
                if g._array.dtype.kind not in "fc":
                    raise RuntimeError(f"{type(self).__name__} only supports floating point "
                                       f"parameters, got {p.dtype}")
                out.append((p, _real_view(p._array), _real_view(g._array)))
        return out

    def _fix_steps(self, keys=("step",)) -> None:
        """Loaded states may hold `step` as a plain number (old checkpoints): make it a tensor."""
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p)
                if p_state:
                    for key in keys:
                        if key in p_state and not _is_tensor(p_state[key]):
                            p_state[key] = _step_tensor(float(p_state[key]))


def _zero_grads(self, set_to_none: bool) -> None:
    """Optimizer.zero_grad's work (a function, not a method: an optimizer's dir() lists
    PyTorch's names)."""
    if not hasattr(self, "_zero_grad_profile_name"):
        _wrap_step_as_torch(self)   # (as PyTorch's first zero_grad of a wrapper-style subclass)
    profiler = recording_profiler()
    if profiler is None:            # (no label to make: a training step's fixed cost)
        for group in self.param_groups:
            reset_grads(group["params"], set_to_none)
        return
    with profiler.record_function(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"):
        reset_grads((p for group in self.param_groups for p in group["params"]), set_to_none)


# (Optimizer's own step, which the built-in optimizers inherit; subclasses' in __init_subclass__)
Optimizer.step = _with_step_hooks(Optimizer.step)


def _real_view(a: np.ndarray) -> np.ndarray:
    """A complex array's memory as (..., 2) real pairs, as torch.view_as_real; others as they are.

    The optimizers update complex parameters and their state through these views, as PyTorch's
    do (so Adam's second moment is per component, not |g|^2)."""
    if a.dtype.kind != "c":
        return a
    return a[..., None].view(a.real.dtype)


def _state_tensor(values: np.ndarray, p):
    """Optimizer state computed on `_real_view(p)`-shaped arrays, as a tensor of p's dtype and
    shape (PyTorch keeps a complex parameter's state complex)."""
    if p._array.dtype.kind == "c":
        values = np.ascontiguousarray(values).view(p._array.dtype)[..., 0]
    return _of_dtype_of(_core.wrap_array(values), p)


def _has_bfloat16(group) -> bool:
    return any(p.dtype is _core.bfloat16 for p in group["params"])


def _of_dtype_of(state, p):
    """State tensor `state` (float32 values computed for p) as a bfloat16 one when p is (PyTorch
    keeps a parameter's state in its dtype)."""
    if _bfloat16_route[0] and p.dtype is _core.bfloat16:
        return state.to(_core.bfloat16)
    return state


def _filled_state(p, value: float = 0.0):
    """State shaped like p, every real component `value` (PyTorch fills a complex parameter's
    state with complex(value, value): each part an independent real number)."""
    if _is_sparse_tensor(p):     # PyTorch's full_like(p, memory_format=preserve_format)
        raise RuntimeError("memory format option is only supported by strided tensors")
    arr = p._array
    return _of_dtype_of(_core.wrap_array(np.full_like(arr, complex(value, value)
                                                      if arr.dtype.kind == "c" else value)), p)


def _step_tensor(value: float = 0.0):
    """A step counter (or another scalar state) as PyTorch keeps it: a 0-d tensor of
    _get_scalar_dtype()."""
    return _core.wrap_array(np.array(value, dtype=_get_scalar_dtype().np_dtype))


def _check_lr(lr) -> None:
    if isinstance(lr, _core.TensorBase) and lr._array.size != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= _to_scalar(lr):
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_betas(betas) -> None:
    if not 0.0 <= _to_scalar(betas[0]) < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= _to_scalar(betas[1]) < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_not_differentiable(differentiable, foreach=None) -> None:
    # (with foreach=True PyTorch's step refuses it first, Optimizer._refuse_foreach_autograd)
    if differentiable and not foreach:
        raise NotImplementedError("differentiable=True is not supported by tapegrad's optimizers")


# ---------------------------------------------------------------------------------------------
# Numpy kernels with PyTorch's CPU rounding.  All arrays passed to one call share a float dtype;
# `out` may alias an input (the in-place operations PyTorch's optimizers use).  Scalars are first
# rounded to the "opmath" type (float32 for float16/float32, float64 for float64) as PyTorch does.
# ---------------------------------------------------------------------------------------------

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _opmath(dt: np.dtype) -> np.dtype:
    return _F32 if dt.itemsize < 4 else dt


def _nd(x) -> np.ndarray:
    """numpy returns scalars from operations on 0-d arrays: make them 0-d arrays again."""
    return x if isinstance(x, np.ndarray) else np.asarray(x)


def _store(result: np.ndarray, out, dt: np.dtype) -> np.ndarray:
    if out is None:
        return _nd(result).astype(dt, copy=False)
    np.copyto(out, result, casting="unsafe")
    return out


def _up(a: np.ndarray, op: np.dtype) -> np.ndarray:
    return a if a.dtype == op else a.astype(op)


def fma(a: np.ndarray, b, c: np.ndarray, out=None) -> np.ndarray:
    """a * b + c rounded once (to the opmath type, then to c's dtype), as PyTorch's fused kernels
    compute it; `b` is an array or a scalar."""
    dt = c.dtype
    if dt.kind == "f" and dt.itemsize >= 4:
        # The C kernel: a hardware (or libm) fused multiply-add, one rounding, no temporaries.
        target = out if out is not None else np.empty_like(c)
        if _core.fused_multiply_add(a, b if isinstance(b, np.ndarray) else float(b), c,
                                    target) is not None:
            return target
    op = _opmath(dt)
    if not isinstance(b, np.ndarray):
        b = op.type(b)
        if b == 1 and op == dt:             # a*1 + c: one rounding anyway
            return _nd(np.add(a, c, out=out))
    if op == _F64:
        # numpy has no fused multiply-add: two roundings (differs by at most an ulp of float64).
        prod = np.multiply(a, b)
        return _nd(np.add(prod, c, out=out))
    wide = _nd(np.multiply(a, b, dtype=_F64))  # exact: a product of two float32 fits in float64
    np.add(wide, c, out=wide)                 # one rounding to float64 ...
    if op != dt:
        wide = wide.astype(op)
    if out is None:
        return wide.astype(dt)                # ... and one to float32
    np.copyto(out, wide, casting="unsafe")
    return out


def add_alpha(c: np.ndarray, a: np.ndarray, alpha, out=None) -> np.ndarray:
    """PyTorch's `c.add(a, alpha=alpha)`: fma(a, alpha, c), alpha rounded to c's dtype first.
    Out of place the sum has the operands' promoted dtype (a gradient of an older dtype plus
    the weight decay's parameter term is the parameter's)."""
    if out is None and a.dtype != c.dtype:
        c = c.astype(np.result_type(c.dtype, a.dtype))
    dt = c.dtype
    return fma(a, dt.type(alpha) if dt.itemsize < 4 else alpha, c, out=out)


def complex_add_alpha(c: np.ndarray, a: np.ndarray, alpha, out=None) -> np.ndarray:
    """PyTorch's `c.add(a, alpha=alpha)` on complex tensors, given their real views (..., 2):
    alpha multiplies as the complex number alpha + 0j, so the parts are c_r + (alpha a_r - 0 a_i)
    and c_i + (alpha a_i + 0 a_r), each rounded twice.  (The real views' fma differs in the last
    bit and in the signs of zero parts.)"""
    dt = c.dtype
    al, zero = dt.type(alpha), dt.type(0)
    re = c[..., 0] + (al * a[..., 0] - zero * a[..., 1])
    im = c[..., 1] + (al * a[..., 1] + zero * a[..., 0])
    if out is None:
        out = np.empty_like(c)
    out[..., 0] = re
    out[..., 1] = im
    return out


def mul_scalar(a: np.ndarray, s, out=None) -> np.ndarray:
    """a * s (PyTorch's `a.mul(s)`)."""
    dt = a.dtype
    op = _opmath(dt)
    if op == dt:
        return _nd(np.multiply(a, op.type(s), out=out))
    return _store(np.multiply(_up(a, op), op.type(s)), out, dt)


def div_scalar(a: np.ndarray, s, out=None) -> np.ndarray:
    """a / s (PyTorch's `a / s`: a true division, not a multiplication by 1/s)."""
    dt = a.dtype
    op = _opmath(dt)
    if op == dt:
        return _nd(np.divide(a, op.type(s), out=out))
    return _store(np.divide(_up(a, op), op.type(s)), out, dt)


def add_scalar(a: np.ndarray, s, out=None) -> np.ndarray:
    """a + s."""
    dt = a.dtype
    op = _opmath(dt)
    if op == dt:
        return _nd(np.add(a, op.type(s), out=out))
    return _store(np.add(_up(a, op), op.type(s)), out, dt)


def lerp_scalar(start: np.ndarray, end: np.ndarray, weight, out=None) -> np.ndarray:
    """PyTorch's `start.lerp(end, weight)`: start + w*(end - start) for |w| < 0.5, else
    end - (1 - w)*(end - start), each one fused multiply-add.  An `end` of another dtype is
    lerp's error, as PyTorch's: a gradient left in the dtype its graph was recorded with by a
    module converted since (m.double() between forward and backward) makes Adam, AdamW, Adamax,
    NAdam, RAdam (and centered RMSprop, Muon) refuse the step rather than mix dtypes."""
    dt = start.dtype
    if end.dtype != dt:
        raise RuntimeError(f"expected dtype {_core.c_type_name_of(dt)} for `end` but got dtype "
                           f"{_core.c_type_name_of(end.dtype)}")
    op = _opmath(dt)
    w = op.type(weight)
    diff = _nd(np.subtract(_up(end, op), _up(start, op)))
    if abs(w) < 0.5:
        return fma(diff, w, start, out=out)
    return fma(diff, w - op.type(1), end, out=out)


def addcmul(s: np.ndarray, t1: np.ndarray, t2: np.ndarray, value=1, out=None) -> np.ndarray:
    """PyTorch's `s.addcmul(t1, t2, value=v)`: fma(v * t1, t2, s)."""
    if value != 1:
        op = _opmath(s.dtype)
        t1 = _nd(np.multiply(_up(t1, op), op.type(value)))
    return fma(t1, t2, s, out=out)


def addcdiv(s: np.ndarray, t1: np.ndarray, t2: np.ndarray, value=1, out=None) -> np.ndarray:
    """PyTorch's `s.addcdiv(t1, t2, value=v)`: s + (v * t1) / t2, each operation rounded."""
    dt = s.dtype
    op = _opmath(dt)
    num = _nd(np.multiply(_up(t1, op), op.type(value)))
    np.divide(num, _up(t2, op), out=num)
    if op == dt:
        return _nd(np.add(s, num, out=out))
    return _store(np.add(_up(s, op), num), out, dt)


def neg(a: np.ndarray) -> np.ndarray:
    return _nd(np.negative(a))


def sqrt(a: np.ndarray, out=None) -> np.ndarray:
    dt = a.dtype
    op = _opmath(dt)
    if op == dt:
        return _nd(np.sqrt(a, out=out))
    return _store(np.sqrt(_up(a, op)), out, dt)
