# tapegrad._factories: the common calls of the tensor factories, parsed and made in C.
#
# Scripts call zeros(3, 4), randn(t.shape, requires_grad=True), arange(n), full((2,), 0.5) in
# loops, where each call is a few microseconds of Python-level argument checks (creation.py,
# _random.py) around an allocation that costs a fraction of that.  Each function here reads
# one factory's call (its positional `args` and keyword `kwargs`) and, when every argument is
# of a plain kind -- ints, one tuple/list/Size of ints, a standard dtype, a bool requires_grad,
# the CPU -- makes the result; for anything else it returns None, and the caller
# (tapegrad/_meta.py's factory wrapper) takes the general path, which owns every error and every
# rarer form.  So a call that would fail never fails here: a refused argument is "not plain".
#
# A fast path computes what the general path computes, with the same numpy calls or, for the
# random factories, the same C samplers of numpy.random that numpy's Generator methods run
# (linked from numpy's libnpyrandom, its documented route for extensions): a seeded script draws
# the same stream bit for bit either way, under the bit generator's lock as numpy takes it.
#
# One extension module of the compiled core (_core.pyx describes the layering): it cimports only
# the core.

include "module_prelude.pxi"

from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.stdint cimport int64_t, uint64_t
from libc.math cimport ceil, fabs, floor, isfinite

# bitgen_t from numpy's C header directly: `from numpy.random cimport bitgen_t` reads
# numpy/random/__init__.pxd, which cimports numpy.random.bit_generator's classes, so this module
# imported numpy.random (with secrets, hmac, hashlib) when it loaded: ~12 ms of `import
# tapegrad` (issue 18's import-time target) for a stream no script has drawn yet.  numpy.random
# loads when the global stream is first made (tapegrad/_random.py).
cdef extern from "numpy/random/bitgen.h":
    ctypedef struct bitgen_t:
        pass

from tapegrad._core import plainly_shared, wrap_array

cdef extern from "numpy/random/distributions.h":
    void random_standard_normal_fill(bitgen_t *state, cnp.npy_intp cnt, double *out) nogil
    void random_standard_uniform_fill(bitgen_t *state, cnp.npy_intp cnt, double *out) nogil
    void random_bounded_uint64_fill(bitgen_t *state, uint64_t off, uint64_t rng,
                                    cnp.npy_intp cnt, bint use_masked, uint64_t *out) nogil


# -- what the general path's state may make a call not plain ---------------------------------

# Set once by configure(), from the Python modules that own the state.
cdef object DEVICE_MODULE = None        # tapegrad._device: _default (set_default_device)
cdef object DEVICE_TYPE = None          # tapegrad.device
cdef list CAPTURE_ROUTE = None          # tapegrad._meta.capture_route: [route or None]
cdef dict UNINITIALISED_FLAGS = None    # tapegrad._uninitialised.flags (deterministic fills)
cdef object DEFAULT_GENERATOR = None    # tapegrad._random.default_generator

# tapegrad dtype -> numpy dtype, for the dtypes a fast path makes (not complex: its first use
# sets a flag of the core's; not bfloat16 / float8, which their own modules make).
cdef dict PLAIN_DTYPES = {}

cdef object NP_F16 = np.dtype(np.float16)
cdef object NP_F64 = np.dtype(np.float64)


def configure(device_module, device_type, list capture_route, dict uninitialised_flags,
              default_generator):
    """Point the fast paths at the state they must see (called once, by tapegrad/_meta.py)."""
    global DEVICE_MODULE, DEVICE_TYPE, CAPTURE_ROUTE, UNINITIALISED_FLAGS, DEFAULT_GENERATOR
    DEVICE_MODULE = device_module
    DEVICE_TYPE = device_type
    CAPTURE_ROUTE = capture_route
    UNINITIALISED_FLAGS = uninitialised_flags
    DEFAULT_GENERATOR = default_generator
    from tapegrad._core import _dtype_by_name
    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                 "bool"):
        d = _dtype_by_name(name)
        PLAIN_DTYPES[d] = (<dtype>d).np_dtype


cdef bint ENABLED = True


def _set_enabled(bint flag):
    """Turn the fast paths off (tests compare them with the general path) or on again."""
    global ENABLED
    ENABLED = flag


cdef inline bint plain_state() except -1:
    """Whether the factories run as the fast paths assume: the CPU the default device (not
    meta, not an accelerator's error) and no tapegrad.compile capture routing the call."""
    if not ENABLED or CAPTURE_ROUTE is None or CAPTURE_ROUTE[0] is not None:
        return False
    default = DEVICE_MODULE._default
    return default is None or default._type == "cpu"


cdef inline bint is_cpu(object device) except -1:
    if type(device) is str:
        return device == "cpu"
    return type(device) is DEVICE_TYPE and device._type == "cpu"


# -- arguments --------------------------------------------------------------------------------

cdef struct Options:
    PyObject *np_dtype      # borrowed: a value of PLAIN_DTYPES, or NULL for the default
    bint requires_grad


cdef inline bint plain_options(dict kwargs, Options *opts, bint takes_generator=False,
                               bint takes_layout=True) except -1:
    """Read the keywords the factories share (dtype, requires_grad, device, pin_memory; layout
    but for tensor(); generator for the samplers) into `opts`: False when one is not plain, or
    not the factory's (the general path raises Python's TypeError for it)."""
    cdef object value
    opts.np_dtype = NULL
    opts.requires_grad = False
    if not kwargs:
        return True
    for key, value in kwargs.items():
        if key == "dtype":
            if value is not None:
                # (a tapegrad dtype first: an unhashable argument must reach the general
                # path's TypeError, not the dict's)
                np_dtype = PLAIN_DTYPES.get(value) if type(value) is dtype else None
                if np_dtype is None:
                    return False
                opts.np_dtype = <PyObject*>np_dtype
        elif key == "requires_grad":
            if value is True:
                opts.requires_grad = True
            elif value is not False:
                return False
        elif key == "device":
            if value is not None and not is_cpu(value):
                return False
        elif (takes_layout and key == "layout") or (takes_generator and key == "generator"):
            if value is not None:
                return False
        elif key == "pin_memory":
            if value is not False:
                return False
        else:
            return False
    return True


cdef inline object dtype_or_default(Options *opts):
    return DEFAULT_FLOAT if opts.np_dtype == NULL else <object>opts.np_dtype


cdef inline bint grad_refused(object np_dtype, bint requires_grad) except -1:
    """requires_grad=True on a dtype that cannot have gradients: the general path's error."""
    return requires_grad and (<cnp.dtype>np_dtype).kind != c'f'


cdef object plain_shape(tuple args):
    """The shape of sizes given as zeros(3, 4), zeros((3, 4)), zeros([3, 4]) or zeros(t.shape),
    each a non-negative Python int; None for anything else (no sizes, a float, a tensor ...)."""
    cdef Py_ssize_t n = len(args)
    cdef object seq = args
    if n == 1 and not type(args[0]) is int:
        seq = args[0]
        if not (isinstance(seq, tuple) or type(seq) is list):
            return None
    elif n == 0:
        return None
    return checked_shape(seq)


cdef object checked_shape(object seq):
    """tuple(seq) if seq holds at most 64 sizes, each a non-negative Python int below 2**40."""
    if len(seq) > 64:
        return None
    for s in seq:
        if type(s) is not int or not 0 <= <object>s < 1099511627776:
            return None
    return seq if type(seq) is tuple else tuple(seq)


cdef inline object made(object arr, bint requires_grad):
    return wrap_array(arr, requires_grad) if requires_grad else wrap(arr)


# -- zeros, ones, empty, full and their *_like ----------------------------------------------

cdef enum Fill:
    # what a factory puts into its new array
    FILL_ZEROS
    FILL_ONES
    FILL_NOTHING        # (empty: uninitialised memory)
    FILL_VALUE          # (full: a Python number)


cdef object new_tensor(object shape, object dt, Fill fill, object value, bint requires_grad):
    if fill == FILL_ZEROS:
        arr = np.zeros(shape, dt)
    else:
        arr = np.empty(shape, dt)
        if fill == FILL_ONES:
            arr.fill(1)
        elif fill == FILL_VALUE:
            # (PyTorch's checked conversion of the value, as the general path's _fill_scalar)
            arr.fill(scalar_to_dtype(value, dt, cnp.PyArray_SIZE(arr) == 1))
    return made(arr, requires_grad)


cdef inline bint plain_number(object value):
    return type(value) is float or type(value) is int or type(value) is bool


cdef object without_memory_format(dict kwargs):
    """kwargs without a memory_format=None (the default), or None when it asks for a format."""
    if kwargs and "memory_format" in kwargs:
        if kwargs["memory_format"] is not None:
            return None
        kwargs = dict(kwargs)
        del kwargs["memory_format"]
    return kwargs


cdef object sized_factory(tuple args, dict kwargs, Fill fill):
    """zeros / ones / empty(*size, dtype=, requires_grad=, device=) when plain, else None."""
    cdef Options opts
    if not plain_state() or not plain_options(kwargs, &opts):
        return None
    shape = plain_shape(args)
    if shape is None:
        return None
    dt = dtype_or_default(&opts)
    if grad_refused(dt, opts.requires_grad):
        return None
    return new_tensor(shape, dt, fill, None, opts.requires_grad)


def zeros(tuple args, dict kwargs):
    """zeros(*size, dtype=, requires_grad=, device=) when plain, else None."""
    return sized_factory(args, kwargs, FILL_ZEROS)


def ones(tuple args, dict kwargs):
    """ones(*size, ...) when plain, else None."""
    return sized_factory(args, kwargs, FILL_ONES)


def empty(tuple args, dict kwargs):
    """empty(*size, ...) when plain (and no deterministic fill of uninitialised memory is asked
    for), else None."""
    kwargs = without_memory_format(kwargs)
    if kwargs is None or UNINITIALISED_FLAGS["deterministic"]:
        return None
    return sized_factory(args, kwargs, FILL_NOTHING)


def full(tuple args, dict kwargs):
    """full(size, fill_value, dtype=, ...) with a Python float, int or bool value, else None."""
    cdef Options opts
    if len(args) != 2 or not plain_state() or not plain_options(kwargs, &opts):
        return None
    size, value = args
    if not (isinstance(size, tuple) or type(size) is list) or not plain_number(value):
        return None
    shape = checked_shape(size)
    if shape is None:
        return None
    if opts.np_dtype != NULL:
        dt = <object>opts.np_dtype
    elif type(value) is float:
        dt = DEFAULT_FLOAT
    elif type(value) is int:
        dt = NP_INT64
    else:
        dt = NP_BOOL
    if grad_refused(dt, opts.requires_grad):
        return None
    return new_tensor(shape, dt, FILL_VALUE, value, opts.requires_grad)


cdef object plain_like(tuple args, dict kwargs, Py_ssize_t n_args, Options *opts,
                       bint takes_generator=False):
    """The input of a *_like call (input, plus n_args - 1 more positional arguments) when it is a
    row-major Tensor (its layout then preserved by any new row-major array) and the keywords are
    plain; else None."""
    if len(args) != n_args or not plain_state():
        return None
    x = args[0]
    if type(x) is not TensorType or not cnp.PyArray_IS_C_CONTIGUOUS((<TensorBase>x)._array):
        return None
    kwargs = without_memory_format(kwargs)
    if kwargs is None or not plain_options(kwargs, opts, takes_generator):
        return None
    return x


cdef inline object like_dtype(object x, Options *opts):
    if opts.np_dtype != NULL:
        return <object>opts.np_dtype
    return <object><PyObject*>cnp.PyArray_DESCR((<TensorBase>x)._array)


cdef object like_factory(tuple args, dict kwargs, Fill fill):
    """zeros_like / ones_like / empty_like / full_like(input[, value], ...) when plain, else
    None."""
    cdef Options opts
    x = plain_like(args, kwargs, 2 if fill == FILL_VALUE else 1, &opts)
    if x is None:
        return None
    value = args[1] if fill == FILL_VALUE else None
    if fill == FILL_VALUE and not plain_number(value):
        return None
    if fill == FILL_NOTHING and UNINITIALISED_FLAGS["deterministic"]:
        return None
    dt = like_dtype(x, &opts)
    if dt not in PLAIN_DTYPES_NP or grad_refused(dt, opts.requires_grad):
        return None
    return new_tensor((<TensorBase>x)._array.shape, dt, fill, value, opts.requires_grad)


def zeros_like(tuple args, dict kwargs):
    return like_factory(args, kwargs, FILL_ZEROS)


def ones_like(tuple args, dict kwargs):
    return like_factory(args, kwargs, FILL_ONES)


def empty_like(tuple args, dict kwargs):
    return like_factory(args, kwargs, FILL_NOTHING)


def full_like(tuple args, dict kwargs):
    return like_factory(args, kwargs, FILL_VALUE)


cdef object drawn_like(tuple args, dict kwargs, bint gaussian):
    """rand_like / randn_like: x's shape and (unless given) dtype, drawn as rand / randn."""
    cdef Options opts
    x = plain_like(args, kwargs, 1, &opts, True)
    if x is None:
        return None
    return samples(gaussian, like_dtype(x, &opts), (<TensorBase>x)._array.shape,
                   opts.requires_grad)


def rand_like(tuple args, dict kwargs):
    return drawn_like(args, kwargs, False)


def randn_like(tuple args, dict kwargs):
    return drawn_like(args, kwargs, True)


# -- rand, randn, randint: numpy's samplers on the global stream ------------------------------

cdef object global_bit_generator():
    """The numpy BitGenerator of the global stream, None when its numpy Generator is not made
    yet (the general path makes it)."""
    numpy_generator = DEFAULT_GENERATOR._numpy
    return None if numpy_generator is None else numpy_generator.bit_generator


cdef inline bitgen_t *c_bitgen(object bit_generator):
    return <bitgen_t*>PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")


cdef object drawn_doubles(void (*fill)(bitgen_t*, cnp.npy_intp, double*) noexcept nogil,
                          object shape):
    """numpy's Generator.random / standard_normal of `shape` (float64): the same sampler on the
    same state, under the same lock; None when the global stream is not made yet."""
    bit_generator = global_bit_generator()
    if bit_generator is None:
        return None
    cdef bitgen_t *bitgen = c_bitgen(bit_generator)
    arr = np.empty(shape, NP_F64)
    cdef cnp.npy_intp n = cnp.PyArray_SIZE(arr)
    cdef double *out = <double*>cnp.PyArray_DATA(arr)
    with bit_generator.lock:
        if n > 8192:            # (numpy lets other threads run meanwhile; small draws keep it)
            with nogil:
                fill(bitgen, n, out)
        else:
            fill(bitgen, n, out)
    return arr


cdef object as_float32(object values):
    """float64 `values` rounded to float32 (numpy's astype: C's conversion, to nearest)."""
    arr = np.empty(values.shape, NP_FLOAT32)
    cdef cnp.npy_intp i, n = cnp.PyArray_SIZE(arr)
    cdef const double *src = <const double*>cnp.PyArray_DATA(values)
    cdef float *dst = <float*>cnp.PyArray_DATA(arr)
    for i in range(n):
        dst[i] = <float>src[i]
    return arr


cdef object uniform(object dt, object shape, bint requires_grad):
    """rand's samples (_random._uniform01): float64 draws rounded to dt, kept below 1."""
    cdef cnp.npy_intp i, n
    cdef float *f
    cdef float below
    if dt is not NP_FLOAT32 and dt is not NP_F64 and dt is not NP_F16:
        return None
    u = drawn_doubles(random_standard_uniform_fill, shape)
    if u is None:
        return None
    if dt is NP_FLOAT32:
        u = as_float32(u)
        below = 0.99999994039535522     # (the largest float32 below 1)
        f = <float*>cnp.PyArray_DATA(u)
        n = cnp.PyArray_SIZE(u)
        for i in range(n):
            if f[i] > below:
                f[i] = below
    elif dt is NP_F16:
        u = u.astype(dt)
        np.minimum(u, np.nextafter(np.float16(1), np.float16(0)), out=u)
    return made(u, requires_grad)


cdef object normal(object dt, object shape, bint requires_grad):
    """randn's samples (_random._standard_normal): float64 draws rounded to dt."""
    if dt is not NP_FLOAT32 and dt is not NP_F64 and dt is not NP_F16:
        return None
    values = drawn_doubles(random_standard_normal_fill, shape)
    if values is None:
        return None
    if dt is NP_FLOAT32:
        values = as_float32(values)
    elif dt is NP_F16:
        values = values.astype(dt)
    return made(values, requires_grad)


cdef inline object samples(bint gaussian, object dt, object shape, bint requires_grad):
    if gaussian:
        return normal(dt, shape, requires_grad)
    return uniform(dt, shape, requires_grad)


cdef object drawn_sized(tuple args, dict kwargs, bint gaussian):
    """rand / randn of a size: the default dtype unless given."""
    cdef Options opts
    if not plain_state() or not plain_options(kwargs, &opts, True):
        return None
    shape = plain_shape(args)
    if shape is None:
        return None
    return samples(gaussian, dtype_or_default(&opts), shape, opts.requires_grad)


def rand(tuple args, dict kwargs):
    return drawn_sized(args, kwargs, False)


def randn(tuple args, dict kwargs):
    return drawn_sized(args, kwargs, True)


def randint(tuple args, dict kwargs):
    """randint(high, size) or randint(low, high, size), int64 in [low, high) with Python int
    bounds: numpy's Generator.integers(low, high, size, dtype=int64) on the global stream."""
    cdef Options opts
    cdef Py_ssize_t n_args = len(args)
    cdef int64_t low = 0, high
    if n_args == 3:
        low_, high_, size = args
    elif n_args == 2:
        low_ = 0
        high_, size = args
    else:
        return None
    if type(low_) is not int or type(high_) is not int \
            or not -9223372036854775807 <= <object>low_ < <object>high_ <= 9223372036854775807:
        return None
    if not plain_state() or not plain_options(kwargs, &opts, True) or opts.requires_grad \
            or not (opts.np_dtype == NULL or <object>opts.np_dtype is NP_INT64):
        return None
    if not (isinstance(size, tuple) or type(size) is list):
        return None
    shape = checked_shape(size)
    if shape is None:
        return None
    low, high = low_, high_
    bit_generator = global_bit_generator()
    if bit_generator is None:
        return None
    cdef bitgen_t *bitgen = c_bitgen(bit_generator)
    arr = np.empty(shape, NP_INT64)
    cdef cnp.npy_intp n = cnp.PyArray_SIZE(arr)
    cdef uint64_t *out = <uint64_t*>cnp.PyArray_DATA(arr)
    cdef uint64_t span = <uint64_t>high - 1 - <uint64_t>low
    # (numpy's _rand_int64: offset low, range high - 1 - low, Lemire's method, not masked)
    with bit_generator.lock:
        if n > 8192:
            with nogil:
                random_bounded_uint64_fill(bitgen, <uint64_t>low, span, n, False, out)
        else:
            random_bounded_uint64_fill(bitgen, <uint64_t>low, span, n, False, out)
    return wrap(arr)


# -- arange, eye, tensor ------------------------------------------------------------------------

def arange(tuple args, dict kwargs):
    """arange(end), arange(start, end) or arange(start, end, step) with Python numbers: int64 for
    ints (the general path's own numpy call), and a float result (float32 / float64) where its
    values are whole numbers the dtype holds exactly (ATen's lanes then agree with any way of
    computing them: the general path's shortcut in _aten_range.py)."""
    cdef Options opts
    cdef Py_ssize_t n_args = len(args)
    cdef bint all_int = True
    if n_args == 0 or n_args > 3 or not plain_state() or not plain_options(kwargs, &opts):
        return None
    for v in args:
        if type(v) is int:
            if not -4503599627370496 < <object>v < 4503599627370496:      # (2**52)
                return None
        elif type(v) is float:
            all_int = False
        else:
            return None
    if n_args == 1:
        start, end, step = 0, args[0], 1
    else:
        start, end = args[0], args[1]
        step = args[2] if n_args == 3 else 1
    if not step or (end - start) * step < 0:
        return None
    dt = (NP_INT64 if all_int else DEFAULT_FLOAT) if opts.np_dtype == NULL \
        else <object>opts.np_dtype
    if dt is NP_INT64:
        if not all_int or opts.requires_grad:
            return None
        return wrap(np.arange(start, end, step, dtype=NP_INT64))
    if dt is not NP_FLOAT32 and dt is not NP_F64:
        return None
    return whole_float_range(start, end, step, dt, opts.requires_grad)


cdef object whole_float_range(double start, double end, double step, object dt,
                              bint requires_grad):
    """arange's float values from start by step below end when all are whole numbers that dt
    holds exactly; else None.  The count is numpy's (ceil((end - start) / step) in double)."""
    cdef double span, count_d, limit = 16777216.0 if dt is NP_FLOAT32 else 9007199254740992.0
    cdef cnp.npy_intp i, count
    if not (isfinite(start) and isfinite(end) and isfinite(step)):
        return None
    if start != floor(start) or step != floor(step):
        return None
    span = end - start
    count_d = ceil(span / step)
    if count_d < 0:
        count_d = 0
    if count_d > 1099511627776.0 or fabs(start) >= limit or fabs(start + step * count_d) >= limit:
        return None
    count = <cnp.npy_intp>count_d
    arr = np.empty(count, dt)
    cdef float *f = <float*>cnp.PyArray_DATA(arr)
    cdef double *d = <double*>cnp.PyArray_DATA(arr)
    if dt is NP_FLOAT32:
        for i in range(count):
            f[i] = <float>(<double>i * step + start)
    else:
        for i in range(count):
            d[i] = <double>i * step + start
    return made(arr, requires_grad)


def linspace(tuple args, dict kwargs):
    """linspace(start, end, steps) with Python numbers, steps >= 2, a float32 or float64 result:
    PyTorch's values as the general path computes them (the first half counted up from start,
    the second down from end, in the result's precision with one wider multiply-add)."""
    cdef Options opts
    cdef Py_ssize_t n, i, half
    if len(args) != 3 or not plain_state() or not plain_options(kwargs, &opts):
        return None
    start, end, steps = args
    for v in (start, end):
        if not (type(v) is float or (type(v) is int
                                     and -9007199254740992 < <object>v < 9007199254740992)):
            return None
    if type(steps) is not int or not 2 <= <object>steps < 1099511627776:
        return None
    dt = dtype_or_default(&opts)
    if dt is not NP_FLOAT32 and dt is not NP_F64:
        return None
    scalar_to_dtype(start, dt)          # (the general path's checked conversion of each end)
    scalar_to_dtype(end, dt)
    n = steps
    half = n // 2
    arr = np.empty(n, dt)
    cdef float s32, e32, step32
    cdef double s64, e64, step64
    cdef float *f = <float*>cnp.PyArray_DATA(arr)
    cdef double *d = <double*>cnp.PyArray_DATA(arr)
    if dt is NP_FLOAT32:
        s32, e32 = <float><double>start, <float><double>end
        step32 = (e32 - s32) / <float><double>(n - 1)
        if not isfinite(step32):
            return None         # (numpy's scalar overflow warning: the general path's)
        for i in range(n):
            if i < half:
                f[i] = <float>(<double>s32 + <double>step32 * <double>i)
            else:
                f[i] = <float>(<double>e32 - <double>step32 * <double>(n - i - 1))
    else:
        s64, e64 = <double>start, <double>end
        step64 = (e64 - s64) / <double>(n - 1)
        if not isfinite(step64):
            return None
        for i in range(n):
            if i < half:
                d[i] = <double>(<long double>s64 + <long double>step64 * <long double>i)
            else:
                d[i] = <double>(<long double>e64 - <long double>step64 * <long double>(n - i - 1))
    return made(arr, opts.requires_grad)


def eye(tuple args, dict kwargs):
    """eye(n) or eye(n, m) with Python ints."""
    cdef Options opts
    cdef Py_ssize_t n_args = len(args)
    if n_args == 0 or n_args > 2 or not plain_state() or not plain_options(kwargs, &opts):
        return None
    for v in args:
        if type(v) is not int or not 0 <= <object>v < 1099511627776:
            return None
    dt = dtype_or_default(&opts)
    if grad_refused(dt, opts.requires_grad):
        return None
    return made(np.eye(args[0], args[n_args - 1], dtype=dt), opts.requires_grad)


def tensor(tuple args, dict kwargs):
    """tensor(number) for a Python float, int or bool, and tensor(list of floats / ints, or of
    rows of them) with no dtype or float32 / float64: the general path's values and dtypes."""
    cdef Options opts
    if len(args) != 1 or not plain_state():
        return None
    if kwargs:
        if not plain_options(kwargs, &opts, False, False):
            return None
    else:
        opts.np_dtype = NULL
        opts.requires_grad = False
    data = args[0]
    if type(data) is list:
        return number_list_tensor(data, &opts)
    if type(data) is float:
        dt = DEFAULT_FLOAT if opts.np_dtype == NULL else <object>opts.np_dtype
        if dt is not NP_FLOAT32 and dt is not NP_F64:
            return None
        arr = np.empty((), dt)
        if dt is NP_FLOAT32:
            (<float*>cnp.PyArray_DATA(arr))[0] = <float><double>data
        else:
            (<double*>cnp.PyArray_DATA(arr))[0] = <double>data
        return made(arr, opts.requires_grad)
    if type(data) is int or type(data) is bool:
        if opts.np_dtype != NULL or opts.requires_grad \
                or not -9223372036854775808 <= <object>data <= 9223372036854775807:
            return None
        arr = np.empty((), NP_BOOL if type(data) is bool else NP_INT64)
        if type(data) is bool:
            (<cnp.npy_bool*>cnp.PyArray_DATA(arr))[0] = data is True
        else:
            (<int64_t*>cnp.PyArray_DATA(arr))[0] = <int64_t>data
        return wrap(arr)
    return None


def as_tensor(tuple args, dict kwargs):
    """as_tensor(list of numbers) as tensor() makes it, and as_tensor(ndarray) on the array's
    memory (a writable non-empty ndarray: from_numpy's common case); no dtype given."""
    cdef Options opts
    opts.np_dtype = NULL
    opts.requires_grad = False
    if len(args) != 1 or not plain_state():
        return None
    if kwargs and (len(kwargs) != 1 or not is_cpu(kwargs.get("device", 0))):
        return None
    data = args[0]
    if type(data) is list:
        return number_list_tensor(data, &opts)
    return plainly_shared(data)


cdef object number_list_tensor(list data, Options *opts):
    """tensor(data) of a plain list of numbers (plain_number_list): numpy's reading of it, in
    the default float dtype when a float is among them, else int64; or in dtype float32 /
    float64 when given.  None for anything else."""
    target = None if opts.np_dtype == NULL else <object>opts.np_dtype
    if target is not None and target is not NP_FLOAT32 and target is not NP_F64:
        return None
    if not plain_number_list(data):
        return None
    try:
        arr = np.array(data)
    except ValueError:
        return None                 # (ragged: the general path's error)
    if cnp.PyArray_TYPE(arr) == cnp.NPY_DOUBLE:
        if target is None:
            target = DEFAULT_FLOAT
    elif cnp.PyArray_TYPE(arr) != cnp.NPY_LONG:
        return None
    if target is None:
        return None if opts.requires_grad else wrap(arr)       # (ints: int64)
    with IeeeResults():             # (1e40 as float32 is inf, silently as in PyTorch)
        return made(arr.astype(target, copy=False), opts.requires_grad)


cdef bint plain_number_list(list data) except -1:
    """A non-empty list of Python floats and ints (within int64: numpy reads wider ones
    otherwise than PyTorch), or of such lists (a matrix's rows)."""
    if not data:
        return False
    if type(data[0]) is list:
        for row in data:
            if type(row) is not list or not row or not plain_numbers(<list>row):
                return False
        return True
    return plain_numbers(data)


cdef inline bint plain_numbers(list row) except -1:
    for v in row:
        if type(v) is not float and (type(v) is not int
                                     or not -9223372036854775808 <= <object>v
                                     <= 9223372036854775807):
            return False
    return True


# The numpy dtypes the *_like fast paths make (an input's own dtype may be any).
cdef frozenset PLAIN_DTYPES_NP = frozenset(np.dtype(t) for t in (
    np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
    np.bool_))

# factory name -> its fast path (tapegrad/_meta.py's wrapper asks it first).
FAST_PATHS = {"zeros": zeros, "ones": ones, "empty": empty, "full": full,
              "zeros_like": zeros_like, "ones_like": ones_like, "empty_like": empty_like,
              "full_like": full_like, "rand_like": rand_like, "randn_like": randn_like,
              "rand": rand, "randn": randn, "randint": randint, "arange": arange,
              "linspace": linspace, "eye": eye, "tensor": tensor, "as_tensor": as_tensor}
