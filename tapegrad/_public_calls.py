"""The one entry of tapegrad's public functions: PyTorch's out= and the meta device's dispatch.

Every public function of the namespaces tapegrad, nn.functional, special, linalg and fft is a
`_core.WithOut` (src/tapegrad/out_arg_call.h) from the moment its namespace is loaded, made here
by one installer, `install(namespace, out_functions)`: the functions named in `out_functions`
(those whose PyTorch counterpart in that namespace takes out=: tapegrad/_out_arg.py's list for
the tapegrad namespace) take out= through it (`_out_arg.py` says how a result is written), the
others are wrapped with takes_out off.  The wrapper forwards a call without out to the function
through vectorcall (one indirect call, no allocation) and, once a meta tensor has been made,
sends a call with a meta tensor among its arguments to the meta device (tapegrad/_meta.py).

So the names never change after import: `from tapegrad import exp` taken before the first meta
tensor is the object `tapegrad.exp` stays, identity checks hold (`activation is F.relu`), and
nothing is rebound, or has to be undone, at run time.  The nn layers that keep a function as a
class attribute (pooling's `_fn`) or as a default argument (TransformerEncoderLayer's
`activation=F.relu`) are pointed at the same objects once, when tapegrad.nn loads.
"""
from __future__ import annotations as _annotations

import inspect
import re
import sys
import types

import numpy as np

from . import _core
from ._core import type_name
from ._autocast import policy_of
from ._out_arg import DTYPE_FROM_OUT

# Public callables that are not ops on tensors (left as they are: also where PyTorch's are the
# same objects as another module's, torch.vmap is torch.func.vmap).
NOT_OPS = frozenset(("load", "save", "manual_seed", "seed", "set_default_device",
                     "set_default_dtype", "set_printoptions", "no_grad", "enable_grad",
                     "set_grad_enabled", "inference_mode", "compile", "vmap", "get_rng_state",
                     "set_rng_state", "initial_seed", "from_dlpack", "to_dlpack",
                     "is_grad_enabled", "is_inference_mode_enabled", "is_anomaly_enabled",
                     "is_anomaly_check_nan_enabled",
                     # (the __torch_function__ protocol's own helpers, F re-exports them: behind
                     # the entry a subclass argument would dispatch them to itself, endlessly)
                     "has_torch_function", "has_torch_function_unary",
                     "has_torch_function_variadic", "handle_torch_function",
                     "assert_int_or_pair"))

# (id(function), PyTorch's name) -> its entry: one function serves several names (acosh and
# arccosh, outer and ger, sigmoid and special.expit), each an entry of its own that answers to
# its name, as PyTorch's aliases do (__name__, messages); a name shared by namespaces (F.relu and
# tapegrad.relu) is one object.  The entries that take out= apart (torch.sigmoid takes out=,
# F.sigmoid does not).
_made: dict = {}
_made_with_out: dict = {}
# id(function) -> the entry named as the function is (else the first made): where the nn layers
# held the plain function (redirect_layers)
_entry_of: dict = {}

def _is_op(name: str, fn) -> bool:
    if name.startswith("_") or isinstance(fn, type) or not callable(fn) or name in NOT_OPS or \
            hasattr(fn, "__meta_dispatch__"):     # (the factories: device= decides, _meta.py)
        return False
    return isinstance(fn, (types.FunctionType, types.BuiltinFunctionType)) or \
        type(fn).__name__ == "cython_function_or_method"


def takes_parameter(fn, name: str) -> bool:
    """Whether `fn`'s signature has a parameter `name`, as inspect.signature(fn) tells.

    Read from the code object of the function `fn` is (or wraps, through functools.wraps's
    __wrapped__, as inspect.signature follows it) when that is a plain or Cython function without
    a __signature__ of its own: inspect.signature costs ~30 us a call, a fifth of import time
    when every public function was asked, and ~2 ms still for the decorated ones and the
    factories (tapegrad/_meta.py).  Anything else (a public entry, whose signature with out= is
    made on request; a partial; a class) asks inspect.signature."""
    target = fn
    while type(target) is types.FunctionType and "__signature__" not in target.__dict__ and \
            "__wrapped__" in target.__dict__:
        target = target.__wrapped__
    if type(target) is types.FunctionType or type(target).__name__ == "cython_function_or_method":
        attributes = getattr(target, "__dict__", None) or {}
        if "__signature__" not in attributes and "__wrapped__" not in attributes:
            code = target.__code__
            return name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _takes_out(fn) -> bool:
    return takes_parameter(fn, "out")


def public_call(name: str, fn, out_arg: bool = False, exported: str | None = None):
    """fn behind the public functions' entry named `name` (PyTorch's name for it, in its
    messages: "linalg_norm", "arccosh"); with `out_arg`, the entry takes PyTorch's keyword-only
    ``out`` for it (else out= is left to fn itself).  `exported`: the name its namespace exports
    it under, its __qualname__, by which it pickles (default: name)."""
    made = _made_with_out if out_arg else _made
    key = (id(fn), name)
    call = made.get(key)
    if call is not None:
        return call
    if out_arg:
        call = _core.WithOut(name, fn, name in DTYPE_FROM_OUT)
    else:
        call = _core.WithOut(name, fn, False, takes_out=False)
    made[key] = call
    own = getattr(fn, "__name__", None) == name
    if not out_arg and (own or id(fn) not in _entry_of):
        _entry_of[id(fn)] = call
    for attr in ("__module__", "__doc__"):
        value = getattr(fn, attr, None)
        if value is not None:
            setattr(call, attr, value)
    call.__name__ = name
    call.__qualname__ = exported or name
    call.__wrapped__ = fn
    if out_arg or not own:
        # (its signature, with out=, is made on first request: _signature_with_out)
        return call     # (pickled by the name its namespace exports it under: install)
    # pickled by name as the function was: where its declared (module, qualname) held the
    # function (F.gelu's tapegrad._ops_unary.gelu), it holds the entry, once, at import
    home = sys.modules.get(getattr(fn, "__module__", None) or "")
    qualname = getattr(fn, "__qualname__", None)
    if home is not None and qualname and "." not in qualname and \
            getattr(home, qualname, None) is fn:
        setattr(home, qualname, call)
    return call


def op_name(func) -> str:
    """The name of the op `func` calls: for a public entry, its function's (acosh for both
    tapegrad.acosh and tapegrad.arccosh, det for linalg.det, sigmoid for special.expit), as
    PyTorch's dispatcher reaches one aten op from every alias; else func's own __name__ ("" for
    none).  tapegrad's own tensor subclasses (bfloat16, nested, masked ...) dispatch on it."""
    if isinstance(func, (_core.WithOut, _core.TensorMethod)):
        func = func.__wrapped__
    return getattr(func, "__name__", "")


def _signature_with_out(call):
    """The signature of an entry that takes out=: its function's, with PyTorch's keyword-only
    ``out`` (before a **kwargs); made when inspect.signature first asks (out_arg_call.h)."""
    sig = inspect.signature(call.__wrapped__)
    params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    tail = [p for p in sig.parameters.values() if p.kind is p.VAR_KEYWORD]
    out_param = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
    return sig.replace(parameters=params + [out_param] + tail)


_core._set_out_signature_hook(_signature_with_out)


def install(namespace: dict, out_functions=(), prefix: str = "") -> None:
    """Put each public function of `namespace` (a module's globals) behind the entry, those
    named in `out_functions` with PyTorch's out= (unless they take out themselves, as the core's
    add, mul, matmul ... do), under the name PyTorch's messages give them (`prefix` + name:
    "linalg_norm"); called at the end of each namespace module (and by tapegrad's __getattr__
    after a lazy load)."""
    module = namespace.get("__name__")
    for name in out_functions:
        fn = namespace.get(name)
        if isinstance(fn, _core.WithOut):
            fn = fn.__wrapped__     # (another namespace's entry: this one's is its own object)
        if fn is None or _takes_out(fn):
            continue
        _put(namespace, module, name, public_call(
            prefix + name, fn, True, name))
    for name, fn in list(namespace.items()):
        if isinstance(fn, _core.WithOut) and \
                fn.__name__ != prefix + name:
            fn = fn.__wrapped__     # (another namespace's entry, or another name's: special.psi)
        if _is_op(name, fn):
            _put(namespace, module, name, public_call(
                prefix + name, fn, False, name))
            if module == "tapegrad.nn.functional" and name not in _PARSED_FUNCTIONAL:
                _python_level.add(id(namespace[name]))
            if (module, name) in TORCH_READS_FIRST:
                _reads_first.add(id(fn))


def _put(namespace: dict, module: str, name: str, entry) -> None:
    """entry as `name` of the namespace, with its autocast policy; it pickles by that name there
    when the module its function declared does not hold it (an alias: tapegrad.arccosh,
    special.expit; a prefixed namespace's own entry: linalg.det)."""
    namespace[name] = _with_autocast_policy(entry, module, name)
    home = sys.modules.get(getattr(entry, "__module__", None) or "")
    if home is None or getattr(home, entry.__qualname__, None) is not entry:
        entry.__module__ = module


def _with_autocast_policy(entry, module, name: str):
    """entry, given the CPU autocast policy of `name` in `module` if PyTorch's lists have one
    (tapegrad/_autocast.py; an entry shared by two namespaces keeps a policy either gave it)."""
    policy = policy_of(module, name)
    if policy:
        entry._autocast_policy = policy
    return entry


# The public functions that take an ndarray for what it is (its data, or any object), not in a
# Tensor's place.
TAKES_ARRAYS = frozenset(("tensor", "as_tensor", "asarray", "from_numpy", "frombuffer",
                          "sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
                          "sparse_bsr_tensor", "sparse_bsc_tensor", "sparse_compressed_tensor",
                          "is_tensor", "is_storage", "typename",
                          # (Python in PyTorch, dividing by tau: a 0-d array works there)
                          "gumbel_softmax",
                          # (Python in PyTorch: a 0-d array works as a scale_factor it
                          # recomputes the size from, or as an int size; its own checks
                          # refuse the rest, tapegrad/nn/_spatial_ops.py makes the same)
                          "interpolate"))

# PyTorch's functions written in Python that read an attribute of their argument before any
# check: an ndarray raises AttributeError there ("'numpy.ndarray' object has no attribute
# 'dim'"), as tapegrad's own code does, so their error stands.  (F.margin_ranking_loss reads
# first; torch.margin_ranking_loss, another function, parses its arguments.)
TORCH_READS_FIRST = frozenset(
    [("tapegrad", "svd_lowrank")] +
    [("tapegrad.nn.functional", n) for n in ("dropout1d", "dropout2d", "dropout3d", "normalize",
                                             "softmax", "log_softmax", "softmin", "softsign",
                                             "margin_ranking_loss")])
_reads_first: set = set()       # id() of those functions, found by install()

# id(function) -> (its positional parameters' names, the index of its *args or -1, what PyTorch's
# parser names each parameter's type in its message)
_parameters: dict = {}


def _positional_parameters(fn) -> tuple:
    found = _parameters.get(id(fn))
    if found is None:
        names, star, kinds = [], -1, []
        try:
            for p in inspect.signature(fn).parameters.values():
                if p.kind is p.VAR_POSITIONAL:
                    star = len(names)
                    break
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    names.append(p.name)
                    kinds.append(_parameter_kind(p.default))
        except (TypeError, ValueError):
            pass
        found = _parameters[id(fn)] = (tuple(names), star, tuple(kinds))
    return found


def _parameter_kind(default) -> str:
    """A parameter with a number for its default is PyTorch's Scalar ("must be Number": celu's
    alpha, softplus's beta, leaky_relu's negative_slope; a few are its float, dropout's p); any
    other takes a Tensor where an ndarray was given."""
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return "Number"
    return "Tensor"


def _only_index_arrays(args: tuple, kwargs: dict) -> bool:
    """Whether every ndarray among the arguments (and inside list/tuple arguments) is a 0-d
    integer array: what PyTorch's parser reads as an int (topk's k, repeat_interleave's repeats,
    a size), through the array's __index__."""
    ndarray = np.ndarray
    for a in (*args, *kwargs.values()):
        for e in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(e, ndarray) and (e.ndim != 0 or e.dtype.kind not in "iu"):
                return False
    return True


def _all_zero_d(args: tuple, kwargs: dict) -> bool:
    """Whether every ndarray among the arguments (and inside list/tuple arguments) is 0-d."""
    ndarray = np.ndarray
    for a in (*args, *kwargs.values()):
        for e in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(e, ndarray) and e.ndim != 0:
                return False
    return True


def argument_error(fn, name: str, error, args: tuple, kwargs: dict):
    """The exception a public function's call raises when an ndarray is among its arguments
    (out_arg_call.h calls this only then): PyTorch's argument parser takes no ndarray where a
    Tensor, a Number or a float goes and says so with a TypeError before anything runs.  `error`
    is what tapegrad's function raised (it may have run into an ndarray's missing attribute
    (AttributeError), its truth value (ValueError) or a shape check first), or None when it
    returned (numpy's operators and conversions took the array: kl_div, bucketize, celu's alpha,
    linalg.lstsq ...).  None keeps the call's outcome: a function that takes arrays, an error
    already in PyTorch's words, or only 0-d integer arrays, which PyTorch reads as ints."""
    if name in TAKES_ARRAYS or (id(fn) in _reads_first and args and
                                isinstance(args[0], np.ndarray)):
        return None                     # (PyTorch's Python code reads input's attribute first)
    if error is None:
        if _only_index_arrays(args, kwargs):
            return None
    elif not isinstance(error, Exception):
        return None                     # KeyboardInterrupt, SystemExit: never replaced
    elif not isinstance(error, (TypeError, AttributeError, ValueError)) and \
            _all_zero_d(args, kwargs):
        # PyTorch reads a 0-d array as a number where it takes an int or a scalar (topk's k,
        # narrow's start): the call's own error (a range check's RuntimeError) stands
        return None
    if isinstance(error, TypeError):
        # this function's own parser message stands: PyTorch's name for it, which may carry its
        # namespace (linalg_cross), or an alias's (one entry serves gt and greater)
        message = str(error)
        head = message.split("(", 1)[0]
        if "numpy.ndarray" in message and (
                head in (name, getattr(fn, "__name__", name)) or head.endswith("_" + name)
                or message.startswith("expected Tensor as element")):
            return None
    names, star, kinds = _positional_parameters(fn)
    if error is None or not _only_index_arrays(args, kwargs):
        def named(e):               # (a 0-d integer array beside it may well be an int)
            return isinstance(e, np.ndarray) and (e.ndim != 0 or e.dtype.kind not in "iu")
    else:
        def named(e):
            return isinstance(e, np.ndarray)
    for i, a in enumerate(args):
        if named(a):
            if 0 <= star <= i:          # one of *tensors: PyTorch's list argument (einsum's
                # operands follow its equation, argument 0, where tapegrad's takes *args)
                first = star + (star == 0 and isinstance(args[0], str))
                return TypeError(f"expected Tensor as element {i - first} in argument {first}, "
                                 f"but got {type_name(a)}")
            label = f"'{names[i]}' " if i < len(names) else ""
            kind = kinds[i] if i < len(kinds) else "Tensor"
            return TypeError(f"{name}(): argument {label}(position {i + 1}) must be {kind}, "
                             f"not {type_name(a)}")
        if isinstance(a, (list, tuple)):
            for j, e in enumerate(a):
                if named(e):
                    return TypeError(f"expected Tensor as element {j} in argument {i}, but got "
                                     f"{type_name(e)}")
    for key, v in kwargs.items():
        if named(v):
            kind = kinds[names.index(key)] if key in names else "Tensor"
            return TypeError(f"{name}(): argument '{key}' must be {kind}, not {type_name(v)}")
    return None


# The messages below are matched by pattern text: `re` compiles each on first use and keeps it in
# its cache (compiling them at import took a tenth of tapegrad's own import time, for error paths).

# What Python and Cython say of a call that does not fit a function's parameters.
_UNFIT_CALL = (r"[\w.]+\(\) (got an unexpected keyword argument|missing \d+ required|"
               r"takes (exactly|at least|at most|from|no keyword|\d+ positional)|"
               r"got multiple values for argument|got some positional-only)")

# What Cython says of an argument of the wrong type for a typed parameter (None included).
_WRONG_TYPE = r"Argument '(\w+)' has incorrect type \(expected ([\w.]+), got (\w+)\)$"


def _wrong_type_error(entry, name: str, parameter: str, expected: str, got: str, args: tuple,
                      kwargs: dict, method: bool):
    """PyTorch's wording of Cython's refusal of a typed parameter's argument ("exp(): argument
    'input' (position 1) must be Tensor, not NoneType"), when the refused argument is the
    caller's: a parameter of the entry, given a value of that type (else None: the refusal was
    of an argument the function passed on, and stands).  A method's positions follow self."""
    names = _binding_probe(entry, name)[1]
    if names is None or parameter not in names:
        return None
    position = names.index(parameter)
    value = args[position] if position < len(args) else kwargs.get(parameter, _MISSING)
    if value is _MISSING or type_name(value) != got or (method and position == 0):
        return None
    kind = "Tensor" if expected.endswith("TensorBase") else expected.rsplit(".", 1)[-1]
    where = f" (position {position + 1 - method})" if position < len(args) else ""
    return TypeError(f"{name}(): argument '{parameter}'{where} must be {kind}, not {got}")


_MISSING = object()

# id(entry) -> (entry, a Python function of the entry's parameters that does nothing, their
# names, (the positional ones' names, the index of its *args or None))
_binding_probes: dict = {}


def _binding_probe(entry, name: str):
    """(probe, names): a do-nothing Python function named `name` with `entry`'s parameters
    (defaults None; a TensorMethod's without self), so that calling it with a call's arguments
    (a method's without self) raises exactly Python's TypeError for a call that does not fit
    them, and the parameters' names (self's included); None for what the entry has no signature
    to give (and no probe for a name that is not an identifier)."""
    kept = _binding_probes.get(id(entry))
    if kept is not None:
        return kept[1:3]
    probe = names = None
    try:
        signature = inspect.signature(entry)
    except (TypeError, ValueError):
        signature = None
    positional, star = (), None
    if signature is not None:
        names = tuple(signature.parameters)
        for p in signature.parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                star = len(positional)
                break
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                positional += (p.name,)
        if name.isidentifier():
            parameters = list(signature.parameters.values())
            if isinstance(entry, _core.TensorMethod):
                parameters = parameters[1:]
            signature = signature.replace(return_annotation=inspect.Signature.empty, parameters=[
                p.replace(annotation=inspect.Parameter.empty,
                          default=None if p.default is not inspect.Parameter.empty else p.default)
                for p in parameters])
            namespace: dict = {}
            exec(f"def {name}{signature}:\n    pass", namespace)
            probe = namespace[name]
    _binding_probes[id(entry)] = (entry, probe, names, (positional, star))
    return probe, names


def _position_of(entry, name: str, argument: str):
    """The index among `entry`'s positional parameters (self's included) of the one a message
    names `argument`: by its name, else its *args (view's *size), else None."""
    _binding_probe(entry, name)
    positional, star = _binding_probes[id(entry)][3]
    return positional.index(argument) if argument in positional else star


# PyTorch's parser's messages that say how the call gave its arguments: "mul(): argument 'other'
# (position 2) must be ..." (no position for a keyword), "sum() received an invalid combination of
# arguments - got (Tensor, str), but expected ...".
_POSITIONED = r"(\w+)\(\): argument '(\w+)'( \(position (\d+)\))? must be "
_GOT = r"(\w+)\(\) received an invalid combination of arguments - got \(([^)]*)\)"


def _counted_as_called(message: str, entry, name: str, args: tuple, kwargs: dict, method: bool):
    """`message`, a parser message of the op itself ("mul(): argument 'other' (position 2) must
    be", "sum() ... got (Tensor, str)"), made this call's as PyTorch's parser words it: the
    position the call gave the argument at (a method's counted after self; none for a keyword),
    and the call's own arguments in "got" (a method's without self).  One op serves
    tapegrad.mul(t, y) and t.mul(y), so its messages cannot know; a position said more than one
    off the call's is another argument's, and stands (None: the message stands)."""
    found = re.match(_POSITIONED, message)
    if found is not None and found.group(1) == name:
        argument, said = found.group(2), found.group(4)
        if argument in kwargs:
            # given by keyword, PyTorch's builtins name no position (its Python-level functions
            # may pass it on by position: F.batch_norm's momentum is torch.batch_norm's 7th)
            if said is None or not (method or _in_torch_namespace(entry, name)):
                return None
            return message[:found.start(3)] + message[found.end(3):]
        index = _position_of(entry, name, argument)
        if index is None or index >= len(args):
            return None
        wanted = index + 1 - method
        if wanted < 1 or (said is not None and int(said) not in (wanted - 1, wanted + 1)):
            return None
        rest = found.end(3) if said is not None else found.end(2) + 1
        return f"{message[:found.end(2) + 1]} (position {wanted}){message[rest:]}"
    found = re.match(_GOT, message)
    if found is None or found.group(1) != name or id(entry) in _python_level:
        # (a Python-level function of nn.functional passes its own arguments on to the builtin
        # that refuses them, all of them: F.ctc_loss's "got" lists seven whatever the call gave)
        return None
    listed = overloads_error(name, args[method:], kwargs, method)
    if listed is not None:
        # (PyTorch's own list of the signatures, where _overloads has it: the op's message
        # lists the one it checks, as sum's "(Tensor input, int dim, bool keepdim)" for
        # x.sum("a"))
        return str(listed)
    from .tensor import arguments_got
    text = message[:found.start(2)] + arguments_got(args[method:], kwargs) + message[found.end(2):]
    if method:                      # (the overloads a method lists have no self)
        text = text.replace("(Tensor input, ", "(").replace("(Tensor input)", "()")
    return text


# PyTorch's parser takes NumPy's names for these parameters wherever one of its ops has them
# (torch.add(x1=a, x2=b), torch.exp(x=a), t.sum(axis=0, keepdims=True)), and the parser's own
# name where the documentation says NumPy's (torch.linalg.vector_norm(input=t), documented x):
# each spelling -> the spellings of one parameter.
_NUMPY_ALIASES = {spelling: group for group in (("input", "x", "a", "x1"), ("other", "x2"),
                                                ("dim", "axis"), ("keepdim", "keepdims"))
                  for spelling in group}


# The functions of torch.nn.functional that are PyTorch's builtins (its parser, so NumPy's aliases,
# reads their arguments: F.gelu(x=t)); the others are Python functions there, which take their
# own parameter names only (F.softmax(t, axis=1) is a TypeError).  Read from torch 2.13.
_PARSED_FUNCTIONAL = frozenset("""
adaptive_avg_pool1d avg_pool1d avg_pool2d avg_pool3d bilinear celu_ channel_shuffle conv1d conv2d
conv3d conv_transpose1d conv_transpose2d conv_transpose3d cosine_similarity elu_ gelu hardshrink
hardtanh_ leaky_relu_ linear logsigmoid one_hot pairwise_distance pdist pixel_shuffle
pixel_unshuffle prelu relu_ rrelu_ scaled_dot_product_attention selu_ softplus softshrink
threshold_
""".split())
_python_level: set = set()      # id() of the entries of the others, found by install()


def _called_with_torch_names(entry, name: str, args: tuple, kwargs: dict, method: bool):
    """A call that failed because it named a parameter by its NumPy alias, made again with
    PyTorch's name for it: (its outcome,), which out_arg_call.h returns as the call's.  None when
    no alias explains the failure (the alias is the function's own parameter, both names are
    given, or the call does not fit even renamed): the error stands.  Only failed calls with a
    keyword get here, so a successful call pays nothing for the aliases."""
    if kwargs.keys().isdisjoint(_NUMPY_ALIASES) or id(entry) in _python_level:
        return None
    probe, names = _binding_probe(entry, name)
    if probe is None or any(p.kind is p.VAR_KEYWORD
                            for p in inspect.signature(entry).parameters.values()):
        # (a function taking **kwargs took the alias itself: its error came from its own work,
        # which a second call must not repeat)
        return None
    renamed = {}
    for keyword, value in kwargs.items():
        if keyword in _NUMPY_ALIASES and keyword not in names:
            spellings = [n for n in _NUMPY_ALIASES[keyword] if n in names]
            if len(spellings) == 1:
                keyword = spellings[0]
        if keyword in renamed:
            return None                     # (both spellings given: refused, as PyTorch does)
        renamed[keyword] = value
    if renamed.keys() == kwargs.keys():
        return None
    try:
        probe(*(args[1:] if method else args), **renamed)
    except TypeError:
        return None
    return (entry(*args, **renamed),)


def _reworded(entry, name: str, error, args: tuple, kwargs: dict, method: bool):
    """_reworded_as_torch's outcome for a call's TypeError, made under the name called (an
    alias's: one function serves acosh and arccosh, cat and concat, and its own messages name
    itself, where PyTorch's name the alias called)."""
    renamed = None
    own = getattr(getattr(entry, "__wrapped__", None), "__name__", None)
    message = str(error)
    if own and own != name and message.startswith(own + "("):
        renamed = TypeError(name + message[len(own):])
    reworded = _reworded_as_torch(entry, name, renamed or error, args, kwargs, method)
    outcome = renamed if reworded is None else reworded
    if method:
        worded = _as_python_method(name, outcome if outcome is not None else error)
        if worded is not None:
            return worded
    return outcome


# The Python-level Tensor methods whose parameter PyTorch's function of that name calls otherwise
# (Tensor.split(split_size) and torch.split(split_size_or_sections)): name -> (function's, method's)
_METHOD_PARAMETERS = {"split": ("split_size_or_sections", "split_size")}


def _as_python_method(name: str, error):
    """A call of one of PyTorch's Python-level Tensor methods (overrides._PYTHON_TENSOR_METHODS)
    that does not fit its parameters: Python's words under the method's qualified name, as
    Python 3.11 says them ("Tensor.unflatten() missing 2 required positional arguments"), with
    the method's own parameter names; None for any other error."""
    if not isinstance(error, TypeError) or isinstance(error, tuple):
        return None
    from .overrides import _PYTHON_TENSOR_METHODS
    message = str(error)
    if name not in _PYTHON_TENSOR_METHODS or not message.startswith(name + "() ") or \
            re.match(_UNFIT_CALL, message) is None:
        return None
    if name in _METHOD_PARAMETERS:
        function_name, method_name = _METHOD_PARAMETERS[name]
        message = message.replace(f"'{function_name}'", f"'{method_name}'")
    return TypeError("Tensor." + message)


def _reworded_as_torch(entry, name: str, error, args: tuple, kwargs: dict, method: bool):
    """PyTorch's wording of `error`, the TypeError a call of `entry` (a public function, or a
    TensorMethod with self first among `args`) raised, or None: the error stands.  A call that
    does not fit the parameters gets Python's own message for it under PyTorch's name (a method's
    without self: "transpose() missing 1 required positional argument: 'dim1'"); a typed
    parameter's refusal (Cython's "Argument 'input' has incorrect type") PyTorch's "must be";
    the op's own parser messages, the call's count of its arguments.  A call that named a
    parameter by NumPy's alias is made again under PyTorch's name (_called_with_torch_names)."""
    if kwargs:
        again = _called_with_torch_names(entry, name, args, kwargs, method)
        if again is not None:
            return again
    message = str(error)
    wrong_type = re.match(_WRONG_TYPE, message)
    if wrong_type is not None:
        return _wrong_type_error(entry, name, *wrong_type.groups(), args, kwargs, method)
    if re.match(_UNFIT_CALL, message) is None:
        listed = _listed_overloads(name, message, args, kwargs, method)
        if listed is not None:
            return listed
        counted = _counted_as_called(message, entry, name, args, kwargs, method)
        return None if counted is None else TypeError(counted)
    probe, names = _binding_probe(entry, name)
    if probe is None:
        return None
    given = args[1:] if method else args
    if method and names is not None and len(names) == 1 and (given or kwargs):
        # (a method of self alone: PyTorch's are C methods that take no arguments)
        return TypeError(f"TensorBase.{name}() takes no keyword arguments" if kwargs else
                         f"TensorBase.{name}() takes no arguments ({len(given)} given)")
    try:
        probe(*given, **kwargs)
    except TypeError as unfit:
        if _overloaded(entry, name, method) and (method or not _one_plausible(entry, unfit, args,
                                                                               kwargs)):
            return _invalid_combination(entry, name, given, kwargs, method)
        message = str(unfit)
        if "got an unexpected keyword argument" in message and not _python_level_twin(
                entry, name, method):
            missing = _missing_before_unknown(probe, given, kwargs)
            if missing is not None:
                message, kwargs = missing
        return TypeError(_missing_in_parser_words(entry, name, message, method,
                                                  _all_missing(probe, given, kwargs)))
    return None


def _python_level_twin(entry, name: str, method: bool) -> bool:
    """Whether PyTorch's twin of this call is Python code (a Tensor method of torch/_tensor.py,
    or a function of torch.functional or nn.functional), whose refusals are Python's own."""
    from .overrides import _PYTHON_TENSOR_METHODS, _python_level_function
    return (name in _PYTHON_TENSOR_METHODS) if method else _python_level_function(entry)


def _missing_before_unknown(probe, given: tuple, kwargs: dict):
    """(Python's "missing" message, the known keywords) for a call that gives an unknown
    keyword and also leaves out a required argument; None if it leaves out none.  PyTorch's
    parser checks the parameters before the leftover keywords, so its builtins report the
    missing one (x.cumsum(foo=1): 'missing 1 required positional arguments: "dim"'), where
    Python reports the unknown keyword first (_missing_in_parser_words keeps Python's words for
    PyTorch's Python-level functions)."""
    parameters = inspect.signature(probe).parameters
    known = {k: v for k, v in kwargs.items() if k in parameters}
    try:
        probe(*given, **known)
    except TypeError as missing:
        if re.match(_PYTHON_MISSING, str(missing)):
            return str(missing), known
    return None


# Python's words for missing arguments: "cumsum() missing 1 required positional argument: 'dim'",
# "gather() missing 2 required positional arguments: 'dim' and 'index'", and for keyword-only
# ones "linalg_solve_triangular() missing 1 required keyword-only argument: 'upper'" (PyTorch's
# parser calls those positional too).
_PYTHON_MISSING = r"\w+\(\) missing (\d+) required (?:positional|keyword-only) arguments?: (.*)$"


def _all_missing(probe, given: tuple, kwargs: dict):
    """The names of the required parameters of `probe` (positional and keyword-only, in order)
    that a call with `given` and `kwargs` leaves out, or None where the call does not bind.
    (Python names the missing positional ones only, PyTorch's parser all of them.)"""
    try:
        bound = inspect.signature(probe).bind_partial(*given, **kwargs)
    except TypeError:
        return None
    return [p.name for p in inspect.signature(probe).parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            and p.name not in bound.arguments]


def _missing_in_parser_words(entry, name: str, message: str, method: bool,
                             every=None) -> str:
    """`message`, Python's refusal of a call that left out required arguments, as PyTorch's
    argument parser words it for its builtins (functions and Tensor methods written in C++):
    'cumsum() missing 1 required positional arguments: "dim"', 'gather() missing 2 required
    positional argument: "dim", "index"' (the parser's plural is the other way round).  Its
    Python-level functions (torch.functional's, most of nn.functional) keep Python's words, as
    does any other message.  `every`: all the required parameters the call left out, which the
    parser names together (Python first reports the positional ones alone)."""
    found = re.match(_PYTHON_MISSING, message)
    if found is None or _python_level_twin(entry, name, method):
        return message
    names = re.findall(r"'(\w+)'", found.group(2))
    if every and set(names) <= set(every):
        names = every                   # (the keyword-only ones too)
    count = len(names)
    missing = ", ".join(f'"{argument}"' for argument in names)
    return (f"{name}() missing {count} required positional argument{'s' if count == 1 else ''}: "
            f"{missing}")


_TYPED_REFUSAL = r"(\w+\(\): )?argument '\w+'( \(position \d+\))? must be "


def _listed_overloads(name: str, message: str, args: tuple, kwargs: dict, method: bool):
    """PyTorch's "invalid combination" TypeError, listing the signatures, for an argument of a
    wrong type that the op refused in one signature's words, where PyTorch's builtin of this
    name has several signatures that take the call's arguments (_overloads.SIGNATURES); None
    otherwise."""
    from . import _overloads
    signatures = _overloads.SIGNATURES.get(name)
    found = re.match(_TYPED_REFUSAL, message)
    if signatures is None or found is None or (
            found.group(1) is not None and found.group(1) != f"{name}(): "):
        return None
    if method:
        signatures = [s.replace("(Tensor input, ", "(").replace("(Tensor input)", "()")
                      for s in signatures]
    if sum(_takes_count(s, len(args) - method + len(kwargs), method) for s in signatures) == 1:
        return None     # (PyTorch's parser then says that one signature's words: the op's)
    from .tensor import arguments_got
    lines = "".join(f"\n * {signature}" for signature in signatures)
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({arguments_got(args[method:], kwargs)}), but expected one of:{lines}\n")


def _takes_count(signature: str, count: int, method: bool) -> bool:
    """Whether a signature as PyTorch lists it ("(Tensor input, int dim, bool keepdim = False,
    *, Tensor out = None)") takes `count` arguments: PyTorch's parser words a refusal in the one
    signature that does ("plausible" by count alone), and lists them all when several do (a
    method's have no out=)."""
    parameters = [p for p in signature.strip("()").split(", ") if p and p != "*"]
    if method:
        parameters = [p for p in parameters if p.split(" = ")[0].rsplit(" ", 1)[-1] != "out"]
    required = sum(" = " not in p for p in parameters)
    return required <= count <= len(parameters)


def _one_plausible(entry, unfit, args: tuple, kwargs: dict) -> bool:
    """Whether PyTorch's parser would refuse this call of an overloaded function with its own
    signature's message, as it does when the arguments are no more than that signature has
    parameters (out= among them: torch.add(x, 1, 2, 3) "takes 2 positional arguments but 4 were
    given"); the entry's parameters stand for that signature's."""
    if "positional argument" not in str(unfit) or " takes " not in str(unfit):
        return False
    parameters = inspect.signature(entry).parameters.values()
    return len(args) + len(kwargs) <= sum(p.kind is not p.VAR_KEYWORD for p in parameters)


def _overloaded(entry, name: str, method: bool) -> bool:
    """Whether PyTorch's builtin of this name (a Tensor method's, or the torch namespace's
    function's, which `entry` must be) has several signatures (tapegrad/_overloads.py)."""
    from . import _overloads
    if method:
        return name in _overloads.METHODS
    return name in _overloads.FUNCTIONS and _in_torch_namespace(entry, name)


def _in_torch_namespace(entry, name: str) -> bool:
    """Whether `entry` is tapegrad.<name>, whose PyTorch twin is a builtin (nn.functional's are
    mostly Python that calls one)."""
    return getattr(sys.modules[__package__], name, None) is entry


def overloads_error(name: str, given: tuple, kwargs: dict, method: bool):
    """PyTorch's TypeError for a call of its overloaded builtin `name` that fits none of its
    signatures, listing them as _overloads has them (a method's without `Tensor input`; a
    method's own where they differ), `given` the call's arguments (a method's without self);
    None where _overloads has no list of them."""
    from . import _overloads
    from .tensor import invalid_arguments
    signatures = _overloads.METHOD_SIGNATURES.get(name) if method else None
    if signatures is None:
        signatures = _overloads.UNFIT_SIGNATURES.get(name) or _overloads.SIGNATURES.get(name)
        if signatures is None:
            return None
        if method:
            signatures = [s.replace("(Tensor input, ", "(").replace("(Tensor input)", "()")
                          for s in signatures]
    return invalid_arguments(name, given, kwargs, "".join(f"\n * {s}" for s in signatures) + "\n")


def _invalid_combination(entry, name: str, given: tuple, kwargs: dict, method: bool):
    """PyTorch's TypeError for a call of an overloaded builtin that fits none of its signatures,
    listing them (overloads_error), else with the entry's own signature (a method's without
    self) for the one expected."""
    listed = overloads_error(name, given, kwargs, method)
    if listed is not None:
        return listed
    from .tensor import invalid_arguments
    signature = inspect.signature(entry)
    parameters = list(signature.parameters.values())[method:]
    # A sentinel default (an `object()` telling "not given" from None) would print its address:
    # such a parameter is shown as PyTorch shows one without a default.
    signature = signature.replace(parameters=[
        p.replace(default=p.empty) if type(p.default) is object else p for p in parameters])
    return invalid_arguments(name, given, kwargs, f"\n * {signature}\n")


def _called_with_real_tensors_read(entry, args: tuple, kwargs: dict):
    """(outcome,) of a refused call made again with its real torch tensors (a library imported
    the real torch) read as tapegrad tensors (tapegrad._real_torch); None when it has none.
    They are never dispatched through their __torch_function__, which would call the same
    function again."""
    from ._real_torch import with_real_tensors_read
    read = with_real_tensors_read(args, kwargs)
    return None if read is None else (entry(*read[0], **read[1]),)


def binding_error(entry, name: str, error, args: tuple, kwargs: dict):
    """The exception a public function's call raises when its TypeError is not in PyTorch's
    words (out_arg_call.h asks only for a call that raised a TypeError): _reworded's, for a
    call that does not fit the function's parameters Python's own message under PyTorch's name,
    which is PyTorch's for its Python-level functions (F.relu, F.softmax) and carries the key
    phrase ("missing 1 required positional argument", "got an unexpected keyword argument
    'dimm'") for its builtins.  Without this, the message was Cython's ("takes exactly 2
    positional arguments (1 given)"), under the name of the function behind the entry
    (relu_nn, functional_softmax, or a helper the call reached: max_).  None, the error stands,
    when the arguments fit (the function raised for another reason); (outcome,) for a call
    that named a parameter by PyTorch's NumPy alias, made again (_called_with_torch_names); and
    for a call with a sparse COO tensor among its first two arguments (the compiled functions
    take dense tensors only), the sparse tensor's own op (tapegrad._sparse_coo)."""
    # A sparse tensor exists only once tapegrad._sparse_coo is loaded: no import otherwise.
    sparse = sys.modules.get("tapegrad._sparse_coo")
    if sparse is not None and (
            any(isinstance(a, sparse.SparseTensor) for a in args[:2]) or
            (args and isinstance(args[0], (list, tuple)) and     # torch.cat([sparse, ...])
             any(isinstance(a, sparse.SparseTensor) for a in args[0]))):
        verdict = sparse.public_call_on_sparse(name, args, kwargs)
        if verdict is not None:
            return verdict
    read = _called_with_real_tensors_read(entry, args, kwargs)
    if read is not None:
        return read
    # An object with __torch_function__ among the refused arguments: PyTorch's dispatch to it
    # (tapegrad.overrides), found here so that no ordinary call looks for it.
    from .overrides import dispatch_refused_call
    dispatched = dispatch_refused_call(entry, args, kwargs)
    if dispatched is not None:
        return dispatched
    return _reworded(entry, name, error, args, kwargs, False)


def method_error(entry, name: str, error, args: tuple, kwargs: dict):
    """The exception a Tensor method's call (a TensorMethod: out_arg_call.h asks only for a call
    that raised a TypeError) raises instead, in the words of PyTorch's method, which counts its
    arguments after self: "mul(): argument 'other' (position 1)", "pow() received an invalid
    combination of arguments - got (NoneType)", "transpose() missing 1 required positional
    argument"; None, the error stands (Tensor.mul(3, y), called with no tensor for self, is a
    call of the function); (outcome,) for a call made again under NumPy's aliases' PyTorch
    names (x.add(x2=y))."""
    if not args or not isinstance(args[0], _core.TensorBase):
        return None
    read = _called_with_real_tensors_read(entry, args, kwargs)
    if read is not None:
        return read
    sparse = sys.modules.get("tapegrad._sparse_coo")      # (dense.add(sparse): binding_error's)
    if sparse is not None and len(args) > 1 and isinstance(args[1], sparse.SparseTensor):
        return sparse.public_call_on_sparse(name, args, kwargs)
    return _reworded(entry, name, error, args, kwargs, True)


def method_entry(name: str, op, like=None, refuses_out: bool | None = None):
    """`op` as Tensor's method `name`: behind a TensorMethod (out_arg_call.h), which calls it
    through vectorcall with self first and gives a call that raised a TypeError method_error's
    wording; with the __name__, __qualname__ and __doc__ of `like` (default op).  refuses_out:
    op takes out= as the function, which PyTorch's methods never do (default: whether op's
    parameters have out; x.cummax(0, out=...) had written into out)."""
    if refuses_out is None:
        refuses_out = _takes_out(op)
    method = _with_autocast_policy(_core.TensorMethod(name, op, refuses_out), "Tensor", name)
    for attr in ("__name__", "__qualname__", "__doc__"):
        value = getattr(op if like is None else like, attr, None)
        if value is not None:
            setattr(method, attr, value)
    method.__module__ = f"{__package__}.tensor"     # (pickled by name: Tensor.<name> there)
    return method


# Tensor's Python-level methods that write a source tensor into self (or return the written
# copy): behind an entry, as the compiled ones are, so that a source of a dispatching class (a
# bfloat16 source into a float32 self) reaches its __torch_function__, as PyTorch dispatches on
# every argument; a plain function method dispatches on self only (its subclass's replacement).
# The bfloat16 handler then refuses a source of another dtype where PyTorch does.
_WRITES_FROM_SOURCE = frozenset((
    "index_put_", "index_put", "put_", "index_copy_", "index_add_", "index_add",
    "index_reduce_", "masked_scatter_", "scatter_", "scatter", "scatter_add_", "scatter_add",
    "scatter_reduce_", "scatter_reduce", "lerp_", "index_fill_", "index_fill", "masked_fill_",
    "as_strided_scatter"))


# Tensor's public methods PyTorch runs without __torch_function__ (Python code that never asks:
# as_subclass, and the removed functions that only raise): left plain functions.
_UNDISPATCHED_METHODS = frozenset(("as_subclass", "eig", "lstsq", "solve", "symeig",
                                   "reinforce"))


def install_methods(cls) -> None:
    """Tensor's public methods behind method entries, which dispatch to torch function modes
    and to the __torch_function__ of subclasses among their arguments however they are called
    (t.detach(), or Tensor.detach(t) in a mode's handler), as PyTorch's C methods do.  A Python
    method marked as handing self to the compiled op of its name (tensor.py's _compiled_op: add,
    mul, sum ...) is that op itself behind one, with its docstring; the generic ones were made
    so (_extra_ops._method); another Python method is itself behind one (a call through C costs
    it ~30 ns more than the interpreter's inlined call: a plain function would skip the
    dispatch), and so are TensorBase's compiled methods (detach, requires_grad_ ...)."""
    for name, fn in list(vars(cls).items()):
        if name.startswith("_") or name in _UNDISPATCHED_METHODS:
            continue
        if isinstance(fn, types.FunctionType):
            if getattr(fn, "__compiled_op__", False):
                op = getattr(_core, name)       # (a public entry's function)
                op = getattr(op, "__out_arg_of__", op)
                setattr(cls, name, method_entry(name, op, fn, _takes_out(op)))
            else:
                setattr(cls, name, method_entry(name, fn))
                DISPATCH_ONLY_METHODS.add(name)
        elif type(fn).__name__ == "cython_function_or_method":
            setattr(cls, name, method_entry(name, fn))
    for name, fn in list(vars(_core.TensorBase).items()):
        if not name.startswith("_") and type(fn).__name__ == "cython_function_or_method":
            setattr(cls, name, method_entry(name, fn))
            DISPATCH_ONLY_METHODS.add(name)
    _name_methods(cls)


# The Tensor methods behind entries only so that they dispatch (Python code, and TensorBase's
# detach, backward ...): the profiler records no event of their own for them (tapegrad/
# profiler.py), the ops they run record theirs, as before they were entries.
DISPATCH_ONLY_METHODS: set = set()


def _name_methods(cls) -> None:
    """Each public method of `cls` answers to its own name, as PyTorch's do (x.arccosh is
    "arccosh", x.clip "clip"): an entry is its name's own object and takes it; a plain function
    made under another name (apply_'s _apply_) takes it too, a copy where two names share it."""
    seen = {id(fn) for name, fn in vars(cls).items()
            if isinstance(fn, types.FunctionType) and fn.__name__ == name}
    for name, fn in list(vars(cls).items()):
        if name.startswith("_") or getattr(fn, "__name__", name) == name:
            continue
        if isinstance(fn, _core.TensorMethod):
            fn.__name__ = name
            fn.__qualname__ = f"{cls.__name__}.{name}"
        elif isinstance(fn, types.FunctionType):
            if id(fn) in seen:              # (another public name's already: this one's copy)
                shared = fn
                fn = types.FunctionType(shared.__code__, shared.__globals__, name,
                                        shared.__defaults__, shared.__closure__)
                fn.__kwdefaults__ = shared.__kwdefaults__
                fn.__dict__.update(shared.__dict__)
                fn.__doc__ = shared.__doc__
                setattr(cls, name, fn)
            seen.add(id(fn))
            fn.__name__ = name
            fn.__qualname__ = f"{cls.__name__}.{name}"
            fn.__module__ = cls.__module__      # (pickled by name: Tensor.<name> there)


_core._set_argument_error(argument_error, binding_error, method_error)


def redirect_layers(modules) -> None:
    """The nn layer classes of `modules` (tapegrad.nn.modules) hold the entries where they held
    the plain functions: staticmethod class attributes and default arguments."""
    for cls in vars(modules).values():
        if not isinstance(cls, type):
            continue
        for klass in cls.__mro__:
            for attr, v in list(vars(klass).items()):
                if isinstance(v, staticmethod) and id(v.__func__) in _entry_of:
                    setattr(klass, attr, staticmethod(_entry_of[id(v.__func__)]))
                elif isinstance(v, types.FunctionType):
                    _redirect_defaults(v)


def _redirect_defaults(fn) -> None:
    if fn.__defaults__ and any(id(d) in _entry_of for d in fn.__defaults__):
        fn.__defaults__ = tuple(_entry_of.get(id(d), d) for d in fn.__defaults__)
    if fn.__kwdefaults__ and any(id(d) in _entry_of for d in fn.__kwdefaults__.values()):
        fn.__kwdefaults__ = {k: _entry_of.get(id(d), d) for k, d in fn.__kwdefaults__.items()}
