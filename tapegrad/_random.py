"""Random numbers as PyTorch scripts use them: Generator objects, the global default generator and
its seeding functions (torch.random's names), and every sampling function and in-place sampler.

Each Generator wraps a numpy PCG64 bit generator.  Streams differ from PyTorch's (they cannot be
equal), but the same seed always repeats the same stream, a Generator's stream is independent of
the global one, and get_state()/set_state() round-trip exactly.  The global stream
(`default_generator`) is seeded from the operating system at start-up, as PyTorch's is; a new
`Generator()` starts from PyTorch's fixed default seed.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import contextlib
import math
import os

import numpy as np

from . import _core
from ._device import check_unpinned
from ._extra_ops import _check_tensor
from ._device import as_device, check_device
from ._torch_names import TorchNamedClass
from ._layout import sparse_factory_layout
from .creation import (_default_float, _broadcast_shapes,
                       _check_inplace, _check_requires_grad, _in_layout_of, _make,
                       _np_dtype, _number_argument,
                       _size_args)
from .tensor import Tensor, is_int as _is_int

# The seed a new torch.Generator() starts from (PyTorch's default_rng_seed_val).
_DEFAULT_SEED = 67280421310721
_U64 = 1 << 64
_MASK64 = _U64 - 1
# get_state(): initial seed, PCG64 state (128 bits), increment (128 bits), has_uint32, uinteger,
# each little-endian; 8 + 16 + 16 + 4 + 4 bytes.
_STATE_BYTES = 48


def _refuse_replay(what: str) -> None:
    """Inside a tapegrad.compile capture, keep the function eager: its later draws follow the
    state this call sets, and a replay would draw on from wherever the stream is instead (a
    `manual_seed(0)` inside a compiled function was skipped at every replay)."""
    from . import _step_phases
    if _step_phases.noting is not None:
        _step_phases.noting.refusals.append(
            f"it {what}, which a replay would not do again before its draws")


def _seed_value(seed) -> int:
    """PyTorch's seed rules: any int in [-2**63, 2**64), negatives taken modulo 2**64."""
    if isinstance(seed, _core.TensorBase):
        seed = seed.item()
    if not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {_type_name(seed)}")
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK64


class Generator(metaclass=TorchNamedClass):
    """A random number generator: `Generator(device='cpu')`, seeded by `manual_seed(seed)`.

    Pass it as `generator=` to any sampling function to draw from a stream independent of the
    global one (`tapegrad.default_generator`)."""
    _c_type_name = "torch._C.Generator"  # (its name in PyTorch's messages)

    __module__ = "tapegrad"

    def __init__(self, device="cpu"):
        dev = as_device(device)
        if dev.type == "cuda":
            raise RuntimeError("Cannot get CUDA generator without ATen_cuda library. (tapegrad runs "
                               "on the CPU only)")
        check_device(dev)
        self._device = dev
        self._initial_seed = _DEFAULT_SEED
        self._numpy = None          # created on first draw: numpy.random costs import time

    @property
    def device(self):
        """The generator's device: always ``device(type='cpu')``."""
        return self._device

    @property
    def _rng(self) -> np.random.Generator:
        """The numpy Generator drawing this stream (one object for the Generator's lifetime, so
        code holding it keeps following seeding and set_state)."""
        if self._numpy is None:
            self._numpy = np.random.Generator(np.random.PCG64(self._initial_seed))
        return self._numpy

    def manual_seed(self, seed) -> "Generator":
        """Restart the stream from `seed`; returns the generator itself."""
        value = _seed_value(seed)
        _refuse_replay("seeds a random generator (manual_seed)")
        self._initial_seed = value
        if self._numpy is not None:
            self._numpy.bit_generator.state = np.random.PCG64(value).state
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed used."""
        value = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed the generator was last seeded with (``manual_seed`` or ``seed``)."""
        return self._initial_seed

    def get_state(self) -> Tensor:
        """The stream's full state as a uint8 tensor (a copy: later draws do not change it)."""
        inner = self._rng.bit_generator.state
        words = (self._initial_seed.to_bytes(8, "little")
                 + inner["state"]["state"].to_bytes(16, "little")
                 + inner["state"]["inc"].to_bytes(16, "little")
                 + int(inner["has_uint32"]).to_bytes(4, "little")
                 + int(inner["uinteger"]).to_bytes(4, "little"))
        return _make(np.frombuffer(words, dtype=np.uint8).copy(), False)

    def set_state(self, new_state) -> "Generator":
        """Restore a state returned by get_state(); the stream continues exactly from there."""
        if not isinstance(new_state, _core.TensorBase):
            raise TypeError(f"expected a torch.ByteTensor, but got {_type_name(new_state)}")
        arr = new_state._array
        if arr.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if arr.size != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found "
                               f"the input RNG state size to be {arr.size}")
        _refuse_replay("restores a random generator's state (set_rng_state, fork_rng)")
        raw = arr.reshape(-1).tobytes()
        inc = int.from_bytes(raw[24:40], "little")
        if inc % 2 == 0:        # PCG64 increments are odd: an even one is not a state we wrote
            raise RuntimeError("Invalid RNG state: not produced by Generator.get_state()")
        self._rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(raw[8:24], "little"), "inc": inc},
            "has_uint32": int.from_bytes(raw[40:44], "little"),
            "uinteger": int.from_bytes(raw[44:48], "little")}
        self._initial_seed = int.from_bytes(raw[0:8], "little")
        return self

    def clone_state(self) -> "Generator":
        """A new Generator at this one's current state (and initial seed): the two then draw
        the same stream independently."""
        clone = Generator(self._device)
        return clone.set_state(self.get_state())

    # CUDA-graph-safe state exchange: PyTorch's CPU generator refuses it, as this one does.
    def graphsafe_get_state(self):
        """CUDA graphs' state exchange: unsupported by a CPU generator (NotImplementedError)."""
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state):
        """CUDA graphs' state exchange: unsupported by a CPU generator (NotImplementedError)."""
        if not isinstance(state, Generator):
            raise TypeError(f"expected a Generator, but got {_type_name(state)}")
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

    def __repr__(self) -> str:
        # PyTorch's Generator is the extension type torch._C.Generator: notebooks that end a
        # cell with torch.manual_seed(0) display this line.
        return f"<torch._C.Generator object at {hex(id(self))}>"


# The global stream: seeded from the operating system, as PyTorch's default generator is.
default_generator = Generator()
default_generator._initial_seed = int.from_bytes(os.urandom(8), "little")


def manual_seed(seed) -> Generator:
    """Seed the global generator; returns it (tapegrad's streams differ from PyTorch's; seeding
    repeats them).  The seed goes through int() first, as PyTorch's: 1.5, '3' and a float
    tensor are seeds here (Generator.manual_seed refuses them)."""
    return default_generator.manual_seed(int(seed))


def seed() -> int:
    """Seed the global generator from the operating system; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the global generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The global generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the global generator's state from get_rng_state()."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Within the block, draws from the global stream are undone on exit: the state saved on entry
    is restored (CPU only: there are no accelerator generators to fork)."""
    if device_type is not None:
        check_device(device_type)
    if not enabled:
        yield
        return
    saved = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(saved)


def _global_numpy_generator() -> np.random.Generator:
    """The numpy Generator behind the global stream (dropout's masks, nn.init, samplers)."""
    return default_generator._rng


def _numpy_rng(generator, fn: str = "sampling function") -> np.random.Generator:
    """The numpy Generator to draw from for a `generator=` argument (None: the global stream).  A
    numpy Generator is accepted as well, as tapegrad accepted before it had its own class."""
    if generator is None:
        return default_generator._rng
    if isinstance(generator, Generator):
        return generator._rng
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(f"{fn}() received an invalid combination of arguments - got (generator="
                    f"{_type_name(generator)}), but expected one of: (..., *, torch.Generator "
                    f"generator, ...)")


# -- helpers shared by the sampling functions -------------------------------------------------------



def _scalar_name(dt) -> str:
    return _core.scalar_type_name_of(np.dtype(dt))     # (complex too: 'ComplexFloat')


def _compute_dtype(dt) -> np.dtype:
    """Draw float16 samples in float32, others in their own precision."""
    return np.dtype(np.float64) if np.dtype(dt).itemsize == 8 else np.dtype(np.float32)


def _uniform01(rng: np.random.Generator, shape, dt) -> np.ndarray:
    """Samples in [0, 1) in dtype `dt`: float64 draws rounded to dt (the stream tapegrad has always
    drawn, so seeded scripts keep their values), never 1.0 after rounding, as PyTorch
    guarantees."""
    u = rng.random(shape)
    if dt != u.dtype:
        u = u.astype(dt)
        np.minimum(u, _BELOW_ONE[u.dtype], out=u)
    return u


# The largest value below 1 of each float dtype (_uniform01's bound).
_BELOW_ONE = {np.dtype(t): np.nextafter(t(1), t(0)) for t in (np.float16, np.float32, np.float64)}


def _standard_normal(rng: np.random.Generator, shape, dt) -> np.ndarray:
    """Standard normal samples of dtype dt; a complex dt has PyTorch's complex normal: real and
    imaginary parts independent, each of variance 1/2 (the complex sample's variance is 1)."""
    dt = np.dtype(dt)
    if dt.kind == "c":
        part = np.float64 if dt == np.complex128 else np.float32
        pairs = rng.standard_normal(tuple(shape) + (2,)).astype(part) * part(np.sqrt(0.5))
        return (pairs[..., 0] + 1j * pairs[..., 1]).astype(dt)
    return rng.standard_normal(shape).astype(dt, copy=False)


def _float_dtype(dtype, kernel: str, shape=None) -> np.dtype:
    """The result dtype of a float sampler.  PyTorch's normal kernel refuses other dtypes only when
    it runs, and it never runs for an empty result: pass `shape` for the normal samplers so
    randn(0, dtype=torch.int64) gives an empty int64 tensor as there (uniform's bound check comes
    first and refuses every non-float dtype, empty or not)."""
    dt = _np_dtype(dtype) or _default_float()
    if dt.kind != "f" and not (shape is not None and 0 in shape and dt.kind in "biu"):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_name(dt)}\'')
    return dt


def _check_no_grad_out(out, fn: str) -> None:
    if out.requires_grad and _core.is_grad_enabled():
        # PyTorch names the factories by their aten op, the tensor-argument overloads plainly.
        raise RuntimeError(f"aten::{fn}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")


def _out_dtype(out, dtype, fn: str):
    """The dtype a call with `out=` produces: out's own, which an explicit dtype must equal."""
    if out is None:
        return dtype
    if not isinstance(out, _core.TensorBase):
        raise TypeError(f"{fn}(): argument 'out' must be Tensor, not {_type_name(out)}")
    _check_no_grad_out(out, fn)
    if dtype is not None and _np_dtype(dtype) != out._array.dtype:
        raise RuntimeError(f"dtype {_scalar_name(_np_dtype(dtype))} does not match dtype of out "
                           f"parameter ({_scalar_name(out._array.dtype)})")
    return out.dtype


def _check_factory(dt, requires_grad: bool, device) -> None:
    """The checks a factory makes before it draws, so a refused call leaves the stream alone."""
    check_device(device)
    _check_requires_grad(dt, requires_grad)


def _finish(values: np.ndarray, requires_grad: bool, out):
    """The result tensor of a factory, or `out` holding the values with its requires_grad set
    to the call's, as PyTorch's factory bindings leave it (the core's _factory_requires_grad)."""
    if out is None:
        return _make(_c_order(values), requires_grad)
    return _core._factory_requires_grad(_written(values, out), requires_grad)


def _written(values: np.ndarray, out):
    """`out` holding the values (resized to their shape, as PyTorch resizes outputs)."""
    if out._array.shape == values.shape and out._array.flags.writeable:
        return _core._overwrite_(out, values, "FillBackward2")
    out._array = _c_order(values.astype(out._array.dtype, copy=False))
    return out


def _c_order(values: np.ndarray) -> np.ndarray:
    # not np.ascontiguousarray: it turns a 0-d result into shape (1,)
    return values if values.flags.c_contiguous else values.copy(order="C")


def _sample_of(values: np.ndarray, params, name: str):
    """A sample drawn from the tensor `params`: in grad mode, recorded as PyTorch records it (the
    core's zero-gradient record `name`, e.g. BernoulliBackward0), so it prints and backpropagates
    as PyTorch's."""
    return _core._random_result(values, name, (params,))


# -- factories --------------------------------------------------------------------------------------

def _check_dtype_argument(fn: str, size: tuple, dtype) -> None:
    """PyTorch's refusal of a dtype= that is no dtype (dtype='float'): rand's and randn's two
    signatures (with and without generator) both take the call, so its parser lists them."""
    if dtype is None or isinstance(dtype, (_core.dtype, type, np.dtype)):
        return
    from ._overloads import SIGNATURES
    from .tensor import arguments_got
    lines = "".join(f"\n * {signature}" for signature in SIGNATURES[fn])
    raise TypeError(f"{fn}() received an invalid combination of arguments - got "
                    f"({arguments_got(size, {'dtype': dtype})}), but expected one of:{lines}\n")


def _shape_of(size, kw_size, fn: str) -> tuple:
    if kw_size is not None:
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        size = (tuple(kw_size),)
    if not size:
        raise TypeError(f"{fn}() received an invalid combination of arguments - got (), but "
                        f"expected one of: (tuple of ints size, *, torch.Generator generator, ...)")
    return _size_args(size, fn)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False, **kwargs) -> Tensor:
    """Samples from the uniform distribution on [0, 1): rand(2, 3) or rand((2, 3)); float32 by
    default."""
    sparse_factory_layout(layout, "rand", "uniform_")
    _check_dtype_argument("rand", size, dtype)
    shape = _shape_of(size, kwargs.pop("size", None), "rand")
    if kwargs:
        _refuse_unknown_keywords("rand", size, kwargs, generator=generator, out=out,
                                 dtype=dtype, layout=layout, device=device,
                                 requires_grad=requires_grad, pin_memory=pin_memory)
    return _rand(shape, generator, out, dtype, device, requires_grad)


def _rand(shape, generator, out, dtype, device, requires_grad):
    """rand() of a parsed shape (rand_like's draw too, without the public entry's checks)."""
    requested = _np_dtype(_out_dtype(out, dtype, "rand"))
    if requested is not None and requested.kind == "c":
        # PyTorch's complex uniform: real and imaginary parts independent, each in [0, 1)
        _check_factory(requested, requires_grad, device)
        part = np.dtype(np.float64 if requested == np.complex128 else np.float32)
        pairs = _uniform01(_numpy_rng(generator, "rand"), tuple(shape) + (2,), part)
        return _finish((pairs[..., 0] + 1j * pairs[..., 1]).astype(requested), requires_grad,
                       out)
    dt = _float_dtype(_out_dtype(out, dtype, "rand"), "check_uniform_bounds")
    _check_factory(dt, requires_grad, device)
    return _finish(_uniform01(_numpy_rng(generator, "rand"), shape, dt), requires_grad, out)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False, **kwargs) -> Tensor:
    """Samples from the standard normal distribution: randn(2, 3) or randn((2, 3))."""
    sparse_factory_layout(layout, "randn", "normal_")
    _check_dtype_argument("randn", size, dtype)
    shape = _shape_of(size, kwargs.pop("size", None), "randn")
    if kwargs:
        _refuse_unknown_keywords("randn", size, kwargs, generator=generator, out=out,
                                 dtype=dtype, layout=layout, device=device,
                                 requires_grad=requires_grad, pin_memory=pin_memory)
    return _randn(shape, generator, out, dtype, device, requires_grad)


def _randn(shape, generator, out, dtype, device, requires_grad):
    """randn() of a parsed shape (randn_like's draw too, without the public entry's checks)."""
    if out is not None and isinstance(out, _core.TensorBase) and out.requires_grad:
        # (PyTorch's randn resizes out before anything else, in or out of grad mode)
        raise RuntimeError("cannot resize variables that require grad")
    requested = _np_dtype(_out_dtype(out, dtype, "randn"))
    if requested is not None and requested.kind == "c":
        _check_factory(requested, requires_grad, device)
        return _finish(_standard_normal(_numpy_rng(generator, "randn"), shape, requested),
                       requires_grad, out)
    dt = _float_dtype(_out_dtype(out, dtype, "randn"), "normal_kernel_cpu", shape)
    _check_factory(dt, requires_grad, device)
    return _finish(_standard_normal(_numpy_rng(generator, "randn"), shape, dt), requires_grad,
                   out)


def _refuse_unknown_keywords(fn: str, size: tuple, unknown: dict, **named) -> None:
    """An unknown keyword given to rand / randn: PyTorch's parser knows them under two
    signatures (with and without generator), so it lists them ("invalid combination of
    arguments - got (int, foo=int)"), not Python's "unexpected keyword argument".  The named
    keywords the call gave (those off their defaults) are in its "got" too."""
    from ._public_calls import overloads_error
    defaults = {"requires_grad": False, "pin_memory": False}
    given = {k: v for k, v in named.items() if v is not defaults.get(k)}
    raise overloads_error(fn, size, {**given, **unknown}, False)


def _no_extra(kwargs: dict, fn: str) -> None:
    if kwargs:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{next(iter(kwargs))}'")


def _refuse_complex(dt) -> None:
    """random_/randint of a complex dtype: PyTorch's bounds check refuses it (before the bounds)."""
    if np.dtype(dt).kind == "c":
        raise RuntimeError("check_random_bounds handles only integral, floating-point and "
                           "boolean types")


def _check_int_range(low: int, high: int, dt) -> None:
    """PyTorch's bound checks of random_/randint for the result dtype: [low, high - 1] must be
    representable (floats: a warning past the exactly representable integers is not raised);
    complex dtypes are refused."""
    _refuse_complex(dt)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    dt = np.dtype(dt)
    if dt.kind == "b":
        lo, hi = 0, 1
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = int(info.min), int(info.max)
    else:
        hi = float(np.finfo(dt).max)
        lo = -hi
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {_core.c_type_name_of(dt)}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {_core.c_type_name_of(dt)}")


def _as_long(v) -> int:
    """A user's bound as PyTorch reads it: a C long long."""
    v = int(v)
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError("Overflow when unpacking long long")
    return v


def _integers(rng: np.random.Generator, low: int, high: int, shape, dt) -> np.ndarray:
    if high - 1 > np.iinfo(np.int64).max:       # [low, 2**64): uint64 draws
        return rng.integers(low, high, shape, dtype=np.uint64).astype(dt)
    return rng.integers(low, high, shape, dtype=np.int64).astype(dt)


# PyTorch's randint overloads, as its argument parser lists them when a call matches none.
_RANDINT_SIGNATURES = tuple(
    f"({head}, *, {gen}Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    f"torch.device device = None, bool pin_memory = False, bool requires_grad = False)"
    for head in ("int high, tuple of ints size", "int low, int high, tuple of ints size")
    for gen in ("torch.Generator generator, ", ""))


def _randint_mismatch(args: tuple, keywords: dict) -> TypeError:
    """PyTorch's "invalid combination of arguments" TypeError for a randint call (the positional
    argument types, then the keywords given as name=type)."""
    got = ", ".join([_type_name(a) for a in args] +
                    [f"{k}={_type_name(v)}" for k, v in keywords.items()])
    lines = "".join(f"\n * {signature}" for signature in _RANDINT_SIGNATURES)
    return TypeError(f"randint() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:{lines}\n")


def _index_like(v) -> bool:
    """An element PyTorch's parser takes in a tuple of ints: an int (not bool) or a one-element
    integer tensor / 0-d integer ndarray."""
    if isinstance(v, (Tensor, np.ndarray)):
        return v.size == 1 if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "iu" \
            else isinstance(v, Tensor) and v.numel() == 1 and v._array.dtype.kind in "iu"
    return _is_int(v)


def _randint_bounds(args: tuple, low, high, size, generator, extra: dict):
    """(low, high, size) of a randint call, bound as PyTorch's parser binds them: the
    (high, size) overload names the offending argument (and its position) in its TypeError; a
    call to the (low, high, size) overload, or one matching neither, gets the "invalid
    combination" TypeError listing the overloads."""
    keywords = {k: v for k, v in (("low", low), ("high", high), ("size", size),
                                  ("generator", generator)) if v is not None}
    keywords.update(extra)
    n = len(args)
    three = n == 3 or low is not None or (n == 2 and size is not None)
    names = ("low", "high", "size") if three else ("high", "size")
    bound = dict(zip(names, args))
    if n > len(names) or any(k in bound for k in ("low", "high", "size") if k in keywords) or \
            (generator is not None and not isinstance(generator, (Generator, np.random.Generator))):
        raise _randint_mismatch(args, keywords)
    bound.update({k: keywords[k] for k in ("low", "high", "size") if k in keywords})
    if "high" not in bound or "size" not in bound:
        raise _randint_mismatch(args, keywords)
    for name in ("low", "high"):
        v = bound.get(name)
        if isinstance(v, Tensor) and v.numel() == 1 and v._array.dtype.kind in "iu":
            bound[name] = v.item()     # PyTorch's parser takes it as an int (via __index__)
    size = bound["size"]
    # Only the size's first element decides the overload here; a later non-int gets
    # _size_args's "failed to unpack" message, as from PyTorch's parser.
    size_ok = isinstance(size, (tuple, list)) and (not size or _index_like(size[0]))
    for name in names[:len(names) - 1]:
        if not _is_int(bound[name]):
            if three:
                raise _randint_mismatch(args, keywords)
            where = f" (position {names.index(name) + 1})" if name not in keywords else ""
            raise TypeError(f"randint(): argument '{name}'{where} must be int, not "
                            f"{_type_name(bound[name])}")
    if not size_ok:
        if three:
            raise _randint_mismatch(args, keywords)
        if "size" in keywords:
            raise TypeError(f"randint(): argument 'size' must be tuple of ints, not "
                            f"{_type_name(size)}")
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, "
                            f"not {_type_name(size)}")
    return bound.get("low", 0), bound["high"], size


def randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad: bool = False, pin_memory: bool = False,
            **unknown) -> Tensor:
    """randint(high, size) or randint(low, high, size): uniform integers in [low, high) (low
    defaults to 0), int64 by default."""
    sparse_factory_layout(layout, "randint", "random_.from")
    extra = {k: v for k, v in (("out", out), ("dtype", dtype), ("device", device))
             if v is not None}
    if unknown:
        # (overloaded in PyTorch: its parser lists the signatures, as for a misfit)
        raise _randint_mismatch(args, {**extra, **unknown})
    low, high, size = _randint_bounds(args, low, high, size, generator, extra)
    low, high = _as_long(low), _as_long(high)
    dt = _np_dtype(_out_dtype(out, dtype, "randint")) or np.dtype(np.int64)
    _check_int_range(low, high, dt)
    shape = _size_args((tuple(size),), "randint", 2)
    _check_factory(dt, requires_grad, device)
    return _finish(_integers(_numpy_rng(generator, "randint"), low, high, shape, dt),
                   requires_grad, out)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64 by default)."""
    sparse_factory_layout(layout, "randperm", "randperm.generator_out")
    if isinstance(n, Tensor) and n.numel() == 1 and n._array.dtype.kind in "iu":
        n = n.item()            # PyTorch's parser takes a one-element integer tensor as an int
    if not _is_int(n):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not "
                        f"{_type_name(n)}")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = _np_dtype(_out_dtype(out, dtype, "randperm")) or np.dtype(np.int64)
    if dt.kind == "b":
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if n > 0:
        _core._scalar_to_dtype(n - 1, dt)       # (its largest value must fit dt)
    if dt == np.float16 and n > 2049:       # beyond it, half cannot hold distinct integers
        raise RuntimeError("n cannot be greater than 2049 for Half type.")
    _check_factory(dt, requires_grad, device)
    return _finish(_numpy_rng(generator, "randperm").permutation(n).astype(dt), requires_grad,
                   out)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Samples from normal distributions, PyTorch's four overloads: normal(mean, std, size) with
    numbers, or elementwise with tensor mean and/or std (broadcast).  Gradients to tensor
    mean/std are zero (PyTorch's NormalBackward1/2/3)."""
    sparse_factory_layout(layout, "normal", "normal_")
    mt, st = isinstance(mean, _core.TensorBase), isinstance(std, _core.TensorBase)
    if not mt and not st:
        if size is None:
            raise TypeError(f"normal() received an invalid combination of arguments - got "
                            f"({_type_name(mean)}, {_type_name(std)}), but expected a size "
                            f"when mean and std are numbers")
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"normal() received an invalid combination of arguments - got "
                            f"({_type_name(mean)}, {_type_name(std)}, "
                            f"{_type_name(size)}), but expected size as a tuple of ints")
        if not std >= 0:                # NaN too, as PyTorch
            raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")
        shape = _size_args((tuple(size),), "normal", 3)
        asked = _out_dtype(out, dtype, "normal")
        requested = _np_dtype(asked)
        if requested is not None and requested.kind == "c":
            # as normal_ on a complex tensor: each part N(mean, std^2 / 2)
            _check_factory(requested, requires_grad, device)
            parts = _numpy_rng(generator, "normal").normal(mean, std / math.sqrt(2),
                                                           tuple(shape) + (2,))
            return _finish((parts[..., 0] + 1j * parts[..., 1]).astype(requested),
                           requires_grad, out)
        dt = _float_dtype(asked, "normal_kernel_cpu", shape)
        _check_factory(dt, requires_grad, device)
        values = _numpy_rng(generator, "normal").normal(mean, std, shape).astype(dt)
        return _finish(values, requires_grad, out)
    if size is not None:
        raise TypeError("normal() received an invalid combination of arguments: size is only "
                        "accepted with number mean and std")
    check_device(device)
    M = mean._array if mt else mean
    S = std._array if st else std
    if st and S.dtype.kind == "c":
        raise RuntimeError("normal expects standard deviation to be non-complex")
    for x in (mean, std):
        # a complex mean gives complex samples (PyTorch's complex normal about it)
        if isinstance(x, _core.TensorBase) and x._array.dtype.kind not in "fc":
            raise NotImplementedError(f'"normal_kernel_cpu" not implemented for '
                                      f"'{_scalar_name(x._array.dtype)}'")
    if st:
        if not bool(np.all(S >= 0)):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0:                  # NaN too, as PyTorch
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")
    shape = _broadcast_shapes(M.shape if mt else (), S.shape if st else ())
    # the mean's dtype when it is a tensor (PyTorch's normal(Tensor, Tensor) does not promote:
    # a float32 mean with a float64 std gives float32)
    dt = M.dtype if mt else S.dtype
    if dt.kind == "c" and _core.is_grad_enabled() and any(
            isinstance(x, _core.TensorBase) and x.requires_grad for x in (mean, std)):
        raise RuntimeError("normal does not support automatic differentiation for outputs with "
                           "complex dtype.")
    values = (M + S * _standard_normal(_numpy_rng(generator, "normal"), shape, dt)).astype(dt)
    if out is not None:
        if out.requires_grad and _core.is_grad_enabled():   # this overload's message: no aten::
            raise RuntimeError("normal(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
        _out_dtype(out, None, "normal")
        return _written(values.astype(out._array.dtype), out)
    name = "NormalBackward3" if mt and st else ("NormalBackward1" if mt else "NormalBackward2")
    return _core._random_result(values, name, (mean, std))


def _complex_parts(dt) -> np.dtype | None:
    """The real dtype of a complex dtype's parts (None for a real one): normal_ and uniform_
    fill both parts of a complex tensor, as PyTorch."""
    dt = np.dtype(dt)
    return np.dtype(np.float32 if dt == np.complex64 else np.float64) if dt.kind == "c" else None


def _check_float_input(t, kernel: str, allow_complex: bool = False) -> None:
    if t._array.dtype.kind != "f" and not (allow_complex and t._array.dtype.kind == "c"):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_scalar_name(t._array.dtype)}'")


def rand_like(input, *, dtype=None, layout=None, device=None,
              pin_memory: bool = False, requires_grad: bool = False,
              memory_format=None, generator=None) -> Tensor:
    """rand() with input's shape (and dtype, unless given)."""
    _check_tensor(input, "rand_like")
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "rand_like", "empty_strided")
    return _in_layout_of(_rand(input._array.shape, generator, None, dtype or input.dtype,
                               device, requires_grad), input, memory_format, "rand_like")


def randn_like(input, *, dtype=None, layout=None, device=None,
               pin_memory: bool = False, requires_grad: bool = False,
               memory_format=None, generator=None) -> Tensor:
    """randn() with input's shape (and dtype, unless given)."""
    _check_tensor(input, "randn_like")
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "randn_like", "empty_strided")
    return _in_layout_of(_randn(input._array.shape, generator, None, dtype or input.dtype,
                                device, requires_grad), input, memory_format, "randn_like")


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None,
                 pin_memory: bool = False,
                 requires_grad: bool = False, memory_format=None, generator=None) -> Tensor:
    """randint_like(input, high) or randint_like(input, low, high): randint() with input's shape
    (and dtype, unless given)."""
    _check_tensor(input, "randint_like")
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "randint_like", "empty_strided")
    if high is None:
        low, high = 0, low
    return _in_layout_of(randint(low, high, tuple(input.shape), dtype=dtype or input.dtype,
                                 device=device, requires_grad=requires_grad,
                                 generator=generator), input, memory_format, "randint_like")


# -- sampling from tensors of parameters ------------------------------------------------------------

def _check_cdf_rows(W: np.ndarray) -> None:
    """PyTorch's with-replacement kernel (more than one sample) checks each row's entries in
    order while it builds the row's CDF, then the row's sum: its messages name the first fault
    it meets (a NaN fails its `>= 0` test, so it reads as "< 0")."""
    for row in W:
        bad = np.flatnonzero(~(row >= 0) | ~np.isfinite(row))
        if bad.size:
            if not row[bad[0]] >= 0:
                raise RuntimeError("invalid multinomial distribution (encountering probability "
                                   "entry < 0)")
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
        if not row.sum() > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def multinomial(input, num_samples, replacement: bool = False, *, generator=None, out=None
                ) -> Tensor:
    """Indices drawn from the categorical distributions in the rows of `input` (non-negative
    weights, not necessarily normalised): (num_samples,) for a 1-D input, (rows, num_samples)
    for a 2-D one, int64."""
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"multinomial(): argument 'input' (position 1) must be Tensor, not "
                        f"{_type_name(input)}")
    if not _is_int(num_samples):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{_type_name(num_samples)}")
    _core.check_bool("multinomial", "replacement", replacement)
    P = input._array
    if P.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_scalar_name(P.dtype)}")
    if P.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    k = int(num_samples)
    n = P.shape[-1]
    if k <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and k > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if n == 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if n > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    W = np.atleast_2d(P).astype(np.float64)
    if replacement and k > 1:
        _check_cdf_rows(W)
    elif not bool(np.all(np.isfinite(W))) or bool(np.any(W < 0)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = W.sum(axis=1)
    if bool(np.any(totals <= 0)):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _numpy_rng(generator, "multinomial")
    if replacement:
        # Inverse CDF per row; the last bound is exactly 1, and a zero weight gives an empty
        # interval, so it is never drawn.
        cdf = np.cumsum(W, axis=1)
        cdf /= cdf[:, -1:]
        u = rng.random((W.shape[0], k))
        idx = np.stack([np.searchsorted(cdf[i], u[i], side="right") for i in range(W.shape[0])])
        idx = np.minimum(idx, n - 1)
    else:
        # PyTorch's draw: the k largest of w_j / E_j (E_j ~ Exp(1), in the input's dtype) by
        # topk -- a draw without replacement in proportion to the weights.  The zero weights all
        # tie at 0, so once the rest is exhausted they fill the sample in the order topk's
        # algorithm leaves ties in (not at random): [0, 1, 0] gives [1, 0] every time.
        # (k == 1 is PyTorch's argmax: no order to reproduce, and the common sampling call.)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = (np.atleast_2d(P) / rng.standard_exponential(W.shape)).astype(P.dtype)
        if k == 1:
            idx = np.argmax(keys, axis=1)[:, None]
        else:
            from ._extra_ops import _topk_positions
            idx = _topk_positions(keys, 1, k, True, True)
    idx = idx.astype(np.int64)
    if P.ndim == 1:
        idx = idx[0]
    if out is not None:
        _out_dtype(out, None, "multinomial")
        if out._array.dtype != np.int64:
            raise RuntimeError(f"multinomial expects Long tensor out, got: "
                               f"{_scalar_name(out._array.dtype)}")
    return _finish(idx, False, out) if out is None else _written(idx, out)


def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """0/1 samples: each element is 1 with probability input[i] (or with probability `p` for
    every element when p is given), in input's dtype."""
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"bernoulli(): argument 'input' (position 1) must be Tensor, not "
                        f"{_type_name(input)}")
    rng = _numpy_rng(generator, "bernoulli")
    A = input._array
    if p is None:
        if A.dtype.kind != "f":
            raise NotImplementedError(f'"bernoulli_tensor_cpu_p_" not implemented for '
                                      f"'{_scalar_name(A.dtype)}'")
        if not bool(np.all((A >= 0) & (A <= 1))):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        values = (rng.random(A.shape) < A).astype(A.dtype)
    else:
        p = float(p)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        values = (rng.random(A.shape) < p).astype(A.dtype)
    if out is not None:
        _out_dtype(out, None, "bernoulli")
        if input.requires_grad and _core.is_grad_enabled():
            raise RuntimeError("bernoulli(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
        return _written(values.astype(out._array.dtype), out)
    if p is not None:
        # PyTorch's bernoulli(input, p) has no derivative formula: a NotImplemented node
        from ._more_math import without_derivative
        return without_derivative((input,), values, "derivative for aten::bernoulli is not "
                                  "implemented", RuntimeError)
    return _sample_of(values, input, "BernoulliBackward0")


# numpy's Poisson sampler refuses rates above this.
_POISSON_MAX_RATE = float(np.iinfo(np.int64).max - 10 * np.sqrt(np.iinfo(np.int64).max))


def poisson(input, generator=None) -> Tensor:
    """Counts drawn from Poisson distributions with the rates in `input`, in input's dtype."""
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"poisson(): argument 'input' (position 1) must be Tensor, not "
                        f"{_type_name(input)}")
    A = input._array
    _check_float_input(input, "poisson_cpu")
    if not bool(np.all(A >= 0)):        # also refuses nan, as PyTorch does
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    rates = A.astype(np.float64)
    huge = rates > _POISSON_MAX_RATE
    # (asarray: for a 0-d rate numpy returns a Python int)
    counts = np.asarray(_numpy_rng(generator, "poisson").poisson(np.where(huge, 0.0, rates)),
                        dtype=np.float64)
    counts[huge] = rates[huge]          # past numpy's range the relative spread is below 1e-9
    return _sample_of(counts.astype(A.dtype), input, "PoissonBackward0")


# -- in-place samplers (Tensor methods) -------------------------------------------------------------

def _fill(t, values: np.ndarray, record: str):
    # record: the sampler's zero-gradient node as PyTorch names it (NormalBackward0,
    # BernoulliBackward2, ...), one of the core's overwrite records
    return _core._overwrite_(t, values, record)


def _float_argument(value, fn: str, keyword: str, position: int):
    """A float-typed parameter of the in-place samplers as PyTorch's parser reads it: a real
    number, or the item of a 0-d tensor that does not require grad; TypeError otherwise (a
    tensor requiring grad, or a complex number)."""
    value = _number_argument(value, fn, keyword, position, kind="float")
    if isinstance(value, complex):
        raise TypeError(f"{fn}(): argument '{keyword}' (position {position}) must be float, not "
                        f"complex")
    return value


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill in place with samples from N(mean, std^2)."""
    mean = _float_argument(mean, "normal_", "mean", 1)
    std = _float_argument(std, "normal_", "std", 2)
    _check_inplace(self)
    if self._array.size:                # PyTorch's kernel (and its dtype check) skips empties
        _check_float_input(self, "normal_kernel_cpu", allow_complex=True)
    if not std >= 0:                    # NaN too, as PyTorch
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")
    part = _complex_parts(self._array.dtype)
    if part is not None:
        # each part N(mean, std^2 / 2): the complex sample's variance is std^2
        parts = _numpy_rng(generator, "normal_").normal(mean, std / math.sqrt(2),
                                                        self._array.shape + (2,)).astype(part)
        return _fill(self, parts[..., 0] + 1j * parts[..., 1], "NormalBackward0")
    values = _numpy_rng(generator, "normal_").normal(mean, std, self._array.shape)
    return _fill(self, values, "NormalBackward0")


def uniform_(self, a=0.0, b=1.0, *, generator=None, **kwargs):
    """Fill in place with samples from U[a, b) (PyTorch's keywords `from`/`to` also accepted)."""
    a = kwargs.pop("from", a)
    b = kwargs.pop("to", b)
    _no_extra(kwargs, "uniform_")
    a = _float_argument(a, "uniform_", "from", 1)
    b = _float_argument(b, "uniform_", "to", 2)
    _check_inplace(self)
    _check_float_input(self, "check_uniform_bounds", allow_complex=True)
    part = _complex_parts(self._array.dtype)
    _check_uniform_bounds(a, b, part if part is not None else self._array.dtype)
    if part is not None:                # both parts from U[a, b)
        u = _numpy_rng(generator, "uniform_").random(self._array.shape + (2,), dtype=part)
        u = part.type(a) + part.type(b - a) * u
        return _fill(self, u[..., 0] + 1j * u[..., 1], "UniformBackward0")
    ct = _compute_dtype(self._array.dtype)
    u = _numpy_rng(generator, "uniform_").random(self._array.shape, dtype=ct)
    return _fill(self, ct.type(a) + ct.type(b - a) * u, "UniformBackward0")


def _check_uniform_bounds(a, b, real_dtype) -> None:
    """PyTorch's check_uniform_bounds: both ends finite numbers of the (real) dtype, in order,
    and to - from representable (the sample is from + (to - from) * U[0, 1))."""
    dt = np.dtype(real_dtype)
    top = float(np.finfo(dt).max)
    for name, v in (("from", a), ("to", b)):
        if not -top <= float(v) <= top:      # (nan fails too)
            raise RuntimeError(f"{name} is out of bounds for {_core.c_type_name_of(dt)}")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={float(a):g} > to={float(b):g}")
    if float(b) - float(a) > top:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                           f"{_core.scalar_type_name_of(dt)}>::max(), but found to={float(b):g} "
                           f"and from={float(a):g} which result in to-from to exceed the limit")


def _random_default_bounds(dt) -> tuple:
    """random_()'s range without bounds: [0, 2**mantissa] for floats (every integer exactly
    representable), [0, max] for integers, {0, 1} for bool."""
    dt = np.dtype(dt)
    if dt.kind == "f":
        return 0, (1 << (np.finfo(dt).nmant + 1)) + 1
    if dt.kind == "b":
        return 0, 2
    return 0, int(np.iinfo(dt).max) + 1


def random_(self, *args, generator=None, **kwargs):
    """random_(), random_(to) or random_(from, to): integers drawn uniformly from [from, to), in
    the tensor's dtype (without bounds: every integer the dtype represents exactly, from 0)."""
    # PyTorch's node names its overload: RandomBackward0 (from, to), 1 (to), 2 (no bounds)
    record = ("RandomBackward2", "RandomBackward1", "RandomBackward0")[
        min(len(args) + ("from" in kwargs) + ("to" in kwargs), 2)]
    if "from" in kwargs:
        args = (kwargs.pop("from"),) + args
    if "to" in kwargs:
        args = args + (kwargs.pop("to"),) if args else (0, kwargs.pop("to"))
    _no_extra(kwargs, "random_")
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    low, high = (None, None) if not args else ((None, args[0]) if len(args) == 1 else args)
    for name, v in (("from", low), ("to", high)):
        if v is not None and not _is_int(v):
            raise TypeError(f"random_() received an invalid combination of arguments - got "
                            f"({_type_name(v)}), but expected one of: (*, torch.Generator "
                            f"generator), (int from, int to, *, torch.Generator generator), "
                            f"(int to, *, torch.Generator generator)")
    _check_inplace(self)
    dt = self._array.dtype
    if dt.kind == "c" and low is None and high is None:     # (no bounds to check)
        raise NotImplementedError(f'"random_kernel_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(dt)}'")
    _refuse_complex(dt)
    default_low, default_high = _random_default_bounds(dt)
    low = default_low if low is None else _as_long(low)
    high = default_high if high is None else _as_long(high)
    _check_int_range(low, high, dt)
    values = _integers(_numpy_rng(generator, "random_"), low, high, self._array.shape, dt)
    return _fill(self, values, record)


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill in place with samples from the exponential distribution of rate `lambd`."""
    _check_inplace(self)
    if self._array.dtype.kind != "f":
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{_scalar_name(self._array.dtype)}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    ct = _compute_dtype(self._array.dtype)
    e = _numpy_rng(generator, "exponential_").standard_exponential(self._array.shape, dtype=ct)
    return _fill(self, e / ct.type(lambd), "ExponentialBackward0")


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill in place with 0/1 samples equal to 1 with probability p (a number, or a tensor
    broadcast to self's shape); any dtype."""
    _check_inplace(self)
    if self._array.dtype.kind == "c":   # (0/1 would be written into complex silently)
        kernel = ("bernoulli_tensor_cpu_self_" if isinstance(p, _core.TensorBase)
                  else "bernoulli_scalar_cpu_")
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_scalar_name(self._array.dtype)}'")
    rng = _numpy_rng(generator, "bernoulli_")
    shape = self._array.shape
    if isinstance(p, _core.TensorBase):
        P = p._array
        if not bool(np.all((P >= 0) & (P <= 1))):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        # (p expands to self's shape, with expand's errors, as in PyTorch)
        P = p.detach().expand(shape)._array
        values = rng.random(shape) < P
    else:
        p = float(p)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        values = rng.random(shape) < p
    record = "BernoulliBackward1" if isinstance(p, _core.TensorBase) else "BernoulliBackward2"
    return _fill(self, values.astype(self._array.dtype), record)


def geometric_(self, p, *, generator=None):
    """Fill in place with the number of Bernoulli(p) trials up to the first success (>= 1)."""
    _check_inplace(self)
    if self._array.dtype.kind in "bc":
        raise NotImplementedError(f"\"geometric_cpu\" not implemented for "
                                  f"'{_scalar_name(self._array.dtype)}'")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    counts = _numpy_rng(generator, "geometric_").geometric(p, self._array.shape)
    return _fill(self, counts.astype(self._array.dtype), "GeometricBackward0")


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill in place with exp(N(mean, std^2)) samples."""
    _check_inplace(self)
    _check_float_input(self, "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    ct = _compute_dtype(self._array.dtype)
    z = _numpy_rng(generator, "log_normal_").standard_normal(self._array.shape, dtype=ct)
    with np.errstate(over="ignore"):
        return _fill(self, np.exp(ct.type(mean) + ct.type(std) * z), "LogNormalBackward0")


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill in place with samples from the Cauchy distribution (median, scale sigma)."""
    _check_inplace(self)
    if self._array.dtype.kind != "f":
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{_core.c_type_name_of(self._array.dtype)}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    ct = _compute_dtype(self._array.dtype)
    u = _numpy_rng(generator, "cauchy_").random(self._array.shape, dtype=ct)
    with np.errstate(over="ignore"):
        return _fill(self, ct.type(median) + ct.type(sigma) * np.tan(ct.type(np.pi) * (u - ct.type(0.5))),
                     "CauchyBackward0")


def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    """``tapegrad.multinomial(self, num_samples, replacement, generator=...)``: indices sampled from
    the rows of self, read as unnormalised probabilities.
    """
    return multinomial(self, num_samples, replacement, generator=generator)


def _bernoulli_method(self, p=None, *, generator=None):
    """``tapegrad.bernoulli(self, generator=...)``: 0/1 draws with the probabilities in self, of
    self's dtype.
    """
    return bernoulli(self, p, generator=generator)


for _name, _fn in (("normal_", normal_), ("uniform_", uniform_), ("random_", random_),
                   ("exponential_", exponential_), ("bernoulli_", bernoulli_),
                   ("geometric_", geometric_), ("log_normal_", log_normal_), ("cauchy_", cauchy_),
                   ("multinomial", _multinomial_method), ("bernoulli", _bernoulli_method)):
    if _name not in Tensor.__dict__:
        setattr(Tensor, _name, _fn)
del _name, _fn

# dropout (compiled) draws its masks from the global stream.
_core._set_generator_source(_global_numpy_generator)
