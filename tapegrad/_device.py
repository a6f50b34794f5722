"""torch.device for a CPU-only library: device objects, and the one check every `device=` takes.

tapegrad computes on the CPU only.  Scripts still name devices (`device = "cuda" if
torch.cuda.is_available() else "cpu"`, `x.to(device)`), so `device` objects parse, print and
compare as PyTorch's do, and asking for an accelerator fails the way a PyTorch build without that
backend fails: CUDA with AssertionError "Torch not compiled with CUDA enabled", the others with
the error PyTorch raises for a backend that is not built in.
"""
from __future__ import annotations as _annotations

import re

from ._torch_names import TorchNamedClass

from tapegrad._core import type_name as _type_name
from tapegrad import _core

# The device types PyTorch's parser accepts, in the order its error message lists them.
_KNOWN_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                "privateuseone")

_NO_CUDA = "Torch not compiled with CUDA enabled"

# A device string's form: its type, then optionally ':' and an ordinal (0 or no leading zero).
_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::([1-9][0-9]*|0))?")


class device(metaclass=TorchNamedClass):
    """A device: `device('cpu')`, `device('cpu:0')`, `device('cpu', 0)`, `device(other)`.

    Immutable and hashable; equal when type and index are equal (`device('cpu') != 'cpu'`, as in
    PyTorch: compare `t.device.type == 'cpu'` instead)."""
    _c_type_name = "torch.device"  # (its name in PyTorch's messages)

    __slots__ = ("_type", "_index")
    __module__ = "tapegrad"

    def __init__(self, type, index=None):  # noqa: A002  (PyTorch's parameter name)
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): a device object cannot take an index")
            object.__setattr__(self, "_type", type._type)
            object.__setattr__(self, "_index", type._index)
            return
        if isinstance(type, int) and not isinstance(type, bool):
            # PyTorch checks the sign first: `x.to(x.get_device())` on a CPU tensor asks for
            # device -1, which fails this way on every build.
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            # device(0) means the current accelerator's device 0: there is none.
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({_type_name(type)})")
        # PyTorch parses the string's form first (a name of letters and underscores, then
        # optionally ':' and an ordinal without leading zeros), then the name: `x.to("float32")`
        # is an invalid string, `x.to("gpu")` an unknown device type (named without its ordinal)
        if not type:
            raise RuntimeError("Device string must not be empty")
        form = _DEVICE_STRING.fullmatch(type)
        if form is None:
            raise RuntimeError(f"Invalid device string: '{type}'")
        kind, ordinal = form.group(1), form.group(2)
        if kind not in _KNOWN_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_KNOWN_TYPES)} device type at start "
                               f"of device string: {kind}")
        if ordinal is not None:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            index = int(ordinal)
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"device(): argument 'index' must be int, not {_type_name(index)}")
            if index < 0:
                raise RuntimeError("Device index must not be negative")
        object.__setattr__(self, "_type", kind)
        object.__setattr__(self, "_index", index)

    @property
    def type(self) -> str:
        """The device type as a string: ``'cpu'``, ``'cuda'``, ``'meta'``..."""
        return self._type

    @property
    def index(self):
        """The device ordinal, or None when the device was given without one (``device('cpu')``)."""
        return self._index

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute '{name}' of 'torch.device' objects is not writable")

    def __eq__(self, other):
        if not isinstance(other, device):
            return NotImplemented
        return self._type == other._type and self._index == other._index

    def __hash__(self):
        return hash((self._type, self._index))

    def _unordered(self, other):
        """PyTorch's devices compare for equality only: ordering two of them is its TypeError,
        ordering one with anything else Python's (NotImplemented both ways)."""
        if not isinstance(other, device):
            return NotImplemented
        raise TypeError("comparison not implemented")

    __lt__ = __le__ = __gt__ = __ge__ = _unordered

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __reduce__(self):
        return (device, (self._type, self._index))

    def __enter__(self):
        # `with torch.device(d):` makes d the default device of factories inside the block.  As in
        # PyTorch, entering never fails: a factory that would use an unavailable device raises.
        global _default
        _entered.append(_default)
        _default = self
        return self

    def __exit__(self, *exc):
        global _default
        _default = _entered.pop()
        return False


CPU = device("cpu")

# The device factories use when given none (set_default_device, `with device:`); None means the
# CPU, so the common case costs one comparison.  Process-wide (PyTorch's is per thread).
_default = None
_entered: list = []     # the defaults that enclosing `with device:` blocks restore on exit


def set_default_device(device) -> None:
    """torch.set_default_device: accepted for any known device type (PyTorch checks availability
    only when a factory uses it); None restores the CPU.  (`device`, PyTorch's parameter name.)"""
    global _default
    _core._capture_setting("the default device (set_default_device)")
    _default = None         # as in PyTorch, a failing call leaves the CPU as the default
    _default = None if device is None else as_device(device)


def check_unpinned(pin_memory: bool) -> None:
    """A factory's `pin_memory=`: False is all there is (pinned memory needs an accelerator, as
    in a PyTorch build without one)."""
    if pin_memory:
        raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no "
                           "pinned memory allocator is available on this system.")


def get_default_device() -> device:
    """The device factories use by default: the CPU, or the error an unavailable device gives."""
    if _default is None:
        return CPU
    check_device(_default, allow_meta=True)     # (meta needs no backend: PyTorch names it)
    return _default


def as_device(spec) -> device:
    """The device object for a `device=` argument (a device, a string, or an int ordinal)."""
    return spec if isinstance(spec, device) else device(spec)


def is_device_like(x) -> bool:
    """Whether `x` can name a device: a device, a string, or an int ordinal (not a bool)."""
    return isinstance(x, (device, str)) or (isinstance(x, int) and not isinstance(x, bool))


def check_device(spec, fn: str = "device", allow_meta: bool = False) -> None:
    """Accept any CPU device (None: the default device, normally the CPU), and the meta device
    when the caller makes meta tensors for it (allow_meta); raise as a PyTorch build without the
    backend would.  `fn` names the function in the wrong-type message."""
    if spec is None:
        if _default is None or _default._type == "cpu" or (allow_meta and _default._type == "meta"):
            return
        spec = _default
    elif not is_device_like(spec):
        raise TypeError(f"{fn}(): argument 'device' must be torch.device, not {_type_name(spec)}")
    d = as_device(spec)
    if d._type == "cpu" or (allow_meta and d._type == "meta"):
        return
    if d._type == "cuda":
        raise AssertionError(_NO_CUDA)
    if d._type == "xpu":
        raise AssertionError("Torch not compiled with XPU enabled")
    # PyTorch's message for the other backends (mps, meta, ...) in a build without them.
    raise RuntimeError(f"PyTorch is not linked with support for {d._type} devices "
                       f"(tapegrad runs on the CPU only)")
