# ---------------------------------------------------------------------------------------------
# dtypes and PyTorch's type promotion.
#
# Promotion (torch.result_type): operands fall in three priority groups - tensors with dimensions,
# zero-dim tensors, Python scalars - and in three categories - bool < integer < floating.  The
# dimensioned tensors decide the dtype; a zero-dim tensor only changes it when its category is
# higher (then its own dtype is used); a Python scalar only when its category is higher still (then
# the default dtype of that category: float32 for floats, int64 for ints).
# ---------------------------------------------------------------------------------------------


_NO_BFLOAT16 = ("tapegrad cannot use torch.bfloat16 here: this call needs the dtype's numpy "
                "twin, and numpy has no bfloat16. tapegrad's bfloat16 tensors (float32 storage "
                "holding bfloat16 values, tapegrad/_bfloat16.py) are made by .to(torch.bfloat16), "
                ".bfloat16(), Module.to(torch.bfloat16) and the creation functions' "
                "dtype=torch.bfloat16, and computed by the ops on them; make this call in "
                "torch.float32 and convert its result")


class NoNumpyDtype:
    """The np_dtype of a dtype numpy lacks (bfloat16): numpy asks an object passed as a dtype
    for its `.dtype`, so any attempt to make or convert an array of it, and any look at its
    numpy properties, raises TypeError naming the dtype, never a silent other precision."""

    __slots__ = ("message",)

    def __init__(self, message):
        object.__setattr__(self, "message", message)

    def __getattr__(self, name):
        raise TypeError(object.__getattribute__(self, "message"))

    def __repr__(self):
        return "NoNumpyDtype(bfloat16)"


cdef class dtype:
    """A tensor element type; prints as PyTorch prints it (`torch.float32`) so scripts match."""

    _c_type_name = "torch.dtype"    # (its name in PyTorch's messages and type(x.dtype)'s repr)

    def __init__(self, str name, object np_dtype, int category, int itemsize=0):
        self.name = name
        self.category = category
        if isinstance(np_dtype, NoNumpyDtype):
            self.np_dtype = np_dtype          # a dtype with no numpy twin (its itemsize given)
            self.itemsize = itemsize
        else:
            self.np_dtype = np.dtype(np_dtype)
            self.itemsize = self.np_dtype.itemsize

    @property
    def is_floating_point(self):
        return self.category == CAT_FLOAT

    @property
    def is_complex(self):
        return self.category == CAT_COMPLEX

    @property
    def is_signed(self):
        if self.name in QUANTIZED_NAMES:
            raise RuntimeError("isSignedType not supported for quantized types")
        return self.name not in ("bool", "float8_e8m0fnu") and not self.name.startswith("uint")

    def to_complex(self):
        """The complex dtype whose parts are this float dtype (a complex dtype itself);
        PyTorch's RuntimeError for an integer or bool dtype."""
        if self.category == CAT_COMPLEX:
            return self
        paired = COMPLEX_OF_FLOAT.get(self.name)
        if paired is None:
            raise RuntimeError("Unknown Complex ScalarType for "
                               + SCALAR_TYPE_NAMES.get(self.name, self.name))
        return DTYPE_OF_NAME[paired]

    def to_real(self):
        """The dtype of a complex dtype's parts; any other dtype itself."""
        if self.category != CAT_COMPLEX:
            return self
        return DTYPE_OF_NAME[FLOAT_OF_COMPLEX[self.name]]

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


float16 = dtype("float16", np.float16, CAT_FLOAT)
float32 = dtype("float32", np.float32, CAT_FLOAT)
float64 = dtype("float64", np.float64, CAT_FLOAT)
uint8 = dtype("uint8", np.uint8, CAT_INT)
# PyTorch's "barebones" unsigned types: tensors of them exist (creation, conversion, printing,
# indexing), but PyTorch promotes them with no other dtype of their category or below
# (promote_pair) and implements few ops on them.
uint16 = dtype("uint16", np.uint16, CAT_INT)
uint32 = dtype("uint32", np.uint32, CAT_INT)
uint64 = dtype("uint64", np.uint64, CAT_INT)
int8 = dtype("int8", np.int8, CAT_INT)
int16 = dtype("int16", np.int16, CAT_INT)
int32 = dtype("int32", np.int32, CAT_INT)
int64 = dtype("int64", np.int64, CAT_INT)
bool_ = dtype("bool", np.bool_, CAT_BOOL)

# PyTorch's bfloat16: no numpy twin (NoNumpyDtype); its tensors are float32 arrays under a
# tensor class of their own, made and computed by tapegrad/_bfloat16.py.
bfloat16 = dtype("bfloat16", NoNumpyDtype(_NO_BFLOAT16), CAT_FLOAT, 2)

# PyTorch's float8 dtypes: no numpy twin either; a float8 tensor holds its bit patterns in a
# uint8 array under a class of its own (tapegrad/_float8.py), so moves, views and bit views are
# exact and element_size is 1.
NO_FLOAT8 = ("tapegrad cannot use a float8 dtype here: numpy has no float8 type. tapegrad's float8 "
             "tensors (their bits in uint8 storage, tapegrad/_float8.py) are made by .to(), "
             "view(dtype) and the creation functions' dtype=, and run the ops PyTorch's CPU build "
             "runs on them")
FLOAT8_NAMES = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                "float8_e8m0fnu")
float8_e4m3fn = dtype("float8_e4m3fn", NoNumpyDtype(NO_FLOAT8), CAT_FLOAT, 1)
float8_e5m2 = dtype("float8_e5m2", NoNumpyDtype(NO_FLOAT8), CAT_FLOAT, 1)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", NoNumpyDtype(NO_FLOAT8), CAT_FLOAT, 1)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", NoNumpyDtype(NO_FLOAT8), CAT_FLOAT, 1)
float8_e8m0fnu = dtype("float8_e8m0fnu", NoNumpyDtype(NO_FLOAT8), CAT_FLOAT, 1)
# "is this a float8 dtype": one set lookup (Tensor.to's path asks it of every conversion), here
# where the dtypes are made, because tapegrad/_float8.py loads only at the first float8 use
FLOAT8_DTYPES = frozenset((float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
                           float8_e8m0fnu))

# Complex dtypes: numpy holds the values; the ops that know complex arithmetic and PyTorch's
# conjugate Wirtinger gradients live in tapegrad/_complex.py, reached through complex_hook below.
# A category of their own, above floating: neither is_floating_point nor accepted by
# set_default_dtype.  complex32 (chalf) has no numpy twin: a name for dtype checks only.
NO_COMPLEX32 = ("tapegrad has no complex32 (chalf) tensors: numpy, which holds tapegrad's values, "
                "has no complex half type; torch.complex32 exists for dtype checks only. Use "
                "torch.complex64 (cfloat)")
complex64 = dtype("complex64", np.complex64, CAT_COMPLEX)
complex128 = dtype("complex128", np.complex128, CAT_COMPLEX)
complex32 = dtype("complex32", NoNumpyDtype(NO_COMPLEX32), CAT_COMPLEX, 4)

# PyTorch's quantized dtypes as names only, like bfloat16: the observers and fake-quantise
# modules of torch.ao.quantization take them as configuration (dtype=torch.qint8 picks the
# integer range), while quantized tensors themselves (torch.quantize_per_tensor), which PyTorch
# deprecates, are not provided.  Neither floating nor complex; is_signed raises as PyTorch's does.
NO_QUANTIZED = ("tapegrad has no quantized tensors: torch.qint8, quint8, qint32, quint4x2 and "
                "quint2x4 exist as configuration for torch.ao.quantization's observers and "
                "fake-quantize modules (quantisation-aware training in float); use "
                "torch.fake_quantize_per_tensor_affine for the quantise-dequantise step")
qint8 = dtype("qint8", NoNumpyDtype(NO_QUANTIZED), CAT_INT, 1)
quint8 = dtype("quint8", NoNumpyDtype(NO_QUANTIZED), CAT_INT, 1)
qint32 = dtype("qint32", NoNumpyDtype(NO_QUANTIZED), CAT_INT, 4)
quint4x2 = dtype("quint4x2", NoNumpyDtype(NO_QUANTIZED), CAT_INT, 1)
quint2x4 = dtype("quint2x4", NoNumpyDtype(NO_QUANTIZED), CAT_INT, 1)
QUANTIZED_NAMES = frozenset(("qint8", "quint8", "qint32", "quint4x2", "quint2x4"))

# A dict literal, built one item at a time: a 9-item tuple display would hold each item in its
# own temporary of the module's load function, stored again at each of its 500 error exits.
cdef dict DTYPE_OF_NAME = {"float16": float16, "float32": float32, "float64": float64,
                           "uint8": uint8, "int8": int8, "int16": int16, "int32": int32,
                           "int64": int64, "bool": bool_}
DTYPE_OF_NAME["complex64"] = complex64
DTYPE_OF_NAME["uint16"] = uint16
DTYPE_OF_NAME["uint32"] = uint32
DTYPE_OF_NAME["uint64"] = uint64
DTYPE_OF_NAME["complex128"] = complex128
cdef dict DTYPE_OF_NUM = {d.np_dtype.num: d for d in DTYPE_OF_NAME.values()}
# (numpy makes Python ints above int64's range unsigned long long: the same 64 bits as uint64)
DTYPE_OF_NUM.setdefault(np.dtype(np.ulonglong).num, uint64)
# On LP64 platforms numpy has two 64-bit integer types: int64 is C long ('l'), and long long ('q',
# from np.longlong, array.array('q'), ctypes) is a second type number for the same integers, which
# PyTorch reads as int64.  wrap_array views such arrays as the canonical type, so the kernels'
# type-number checks see one int64; the table entry covers arrays wrapped internally.
DTYPE_OF_NUM.setdefault(np.dtype(np.longlong).num, int64)
cdef int LONGLONG_NUM = (np.dtype(np.longlong).num if np.dtype(np.longlong).num != np.dtype(np.int64).num
                         else -1)
cdef int ULONGLONG_NUM = (np.dtype(np.ulonglong).num if np.dtype(np.ulonglong).num != np.dtype(np.uint64).num
                          else -1)
for _name_only in (bfloat16, complex32, qint8, quint8, qint32, quint4x2, quint2x4,
                   float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu):
    DTYPE_OF_NAME[_name_only.name] = _name_only
# dtype.to_complex / to_real (PyTorch pairs bfloat16 with complex64, having no complex bfloat16)
FLOAT_OF_COMPLEX = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}
COMPLEX_OF_FLOAT = {"float16": "complex32", "float32": "complex64", "float64": "complex128",
                    "bfloat16": "complex64"}
NP_FLOAT32 = np.dtype(np.float32)
NP_INT64 = np.dtype(np.int64)
NP_BOOL = np.dtype(np.bool_)
cdef object NP_FLOAT64 = np.dtype(np.float64)

# PyTorch's default dtype: what Python floats, float creation functions and the float results of
# integer inputs (true division, exp, sqrt, ...) get.  The one source of truth (creation functions
# and repr read it through get_default_dtype()).
DEFAULT_FLOAT = NP_FLOAT32


cpdef str type_name(object x):
    """The name PyTorch's messages give x's type ("must be Tensor, not numpy.ndarray"): the C
    type's tp_name, as its argument parser prints it: a class defined in Python by its name
    (Tensor, Parameter), a compiled one outside builtins with its module (numpy.ndarray,
    numpy.float64).  The one helper for every such message, Python and compiled.  PyTorch's own
    C types print with their module (torch.dtype, torch.Size, torch._C.Generator): ours are
    Python classes, which declare that name as `_c_type_name` in their class body (a subclass of
    theirs prints its own name, as in PyTorch), or classes compiled here (dtype), printed as
    PyTorch's `torch.` class of the same name, not by tapegrad's module path."""
    cdef object t = type(x)
    declared = t.__dict__.get("_c_type_name")
    if declared is not None:
        return declared
    cdef str name = (<PyTypeObject*>t).tp_name.decode("utf-8")
    if name.startswith("tapegrad._core."):
        return "torch." + name[len("tapegrad._core."):]
    return name


cpdef int user_stacklevel() except -1:
    """The `stacklevel` for warnings.warn, called where the warning is raised, that names the
    first line outside tapegrad (PyTorch's warnings come from C++ and point at the Python line
    that called in, whatever wrappers stand between it and the user here).  A frame is
    tapegrad's by its module (tapegrad or tapegrad.*); compiled functions have no frames, so
    called from one this starts at the Python function that called it.  The one rule for the
    Python modules and the compiled ones."""
    frame = sys._getframe(0)
    cdef int level = 1
    while frame is not None:
        name = frame.f_globals.get("__name__")
        if not (isinstance(name, str) and (name == "tapegrad" or name.startswith("tapegrad."))):
            break
        frame = frame.f_back
        level += 1
    return level


# PyTorch's C++ warnings (TORCH_WARN, TORCH_WARN_ONCE) end their message with the place in its
# sources that raised them, and a script printing str(w.message) prints that too.  Each call site
# here names PyTorch's (file:line, as PyTorch 2.13.0 reports it); the root is where its Linux
# wheels are built.  Warnings PyTorch raises from Python (warnings.warn) carry no such suffix and
# do not come through here.
TORCH_SOURCE_ROOT = "/__w/pytorch/pytorch/"


cpdef str triggered_internally(str message, str origin):
    """`message` as PyTorch's C++ warning raised at `origin` (its source file:line) reads."""
    return f"{message} (Triggered internally at {TORCH_SOURCE_ROOT}{origin}.)"


cpdef object torch_warn(str message, str origin):
    """PyTorch's TORCH_WARN: a UserWarning naming the user's line, on every call."""
    warnings.warn(triggered_internally(message, origin), UserWarning, stacklevel=user_stacklevel())


# The messages warn_once has shown: PyTorch's TORCH_WARN_ONCE warnings appear once per process,
# whatever line triggers them again (Python's default filter would repeat them per line).  A module
# attribute, so a test can clear it and see the warning again.
WARNED_ONCE = set()


cpdef object warn_once(str message, str origin):
    """PyTorch's TORCH_WARN_ONCE: a UserWarning naming the user's line, shown the first time
    only."""
    if message not in WARNED_ONCE:
        WARNED_ONCE.add(message)
        warnings.warn(triggered_internally(message, origin), UserWarning,
                      stacklevel=user_stacklevel())


cpdef object warn_complex_discard():
    """The one warning of a complex value cast to a real dtype (once per process, as PyTorch's
    copy kernel gives it, whichever op casts)."""
    warn_once("Casting complex values to real discards the imaginary part",
              "aten/src/ATen/native/Copy.cpp:307")


cpdef object complex_cast_to(object value, str target_kind):
    """A complex value (a tensor, an array or a number) written into or cast to a dtype of kind
    `target_kind`, as PyTorch converts it: to a real dtype its real part, with PyTorch's one
    warning per process (not numpy's ComplexWarning at every write); to bool it stays whole, the
    cast being a test of nonzero (1j is True), and to a complex dtype too."""
    if target_kind == "b" or target_kind == "c":
        return value
    warn_complex_discard()
    return value.real


def set_default_dtype(d):
    """Set the default floating point dtype (float32 at start; float64 or float16 allowed)."""
    global DEFAULT_FLOAT
    if not isinstance(d, dtype):
        raise TypeError(f"set_default_dtype(): argument 'd' must be torch.dtype, not "
                        f"{type_name(d)}")
    if (<dtype>d).category != CAT_FLOAT:
        raise TypeError("only floating-point types are supported as the default type")
    if isinstance((<dtype>d).np_dtype, NoNumpyDtype):
        raise TypeError("tapegrad cannot make torch.bfloat16 the default dtype (its bfloat16 "
                        "tensors are float32 storage under a class of their own, "
                        "tapegrad/_bfloat16.py): make float32 tensors and convert them with "
                        ".to(torch.bfloat16)")
    _capture_setting("the default dtype (set_default_dtype)")
    DEFAULT_FLOAT = (<dtype>d).np_dtype
    PROMOTION_CACHE.clear()                             # cached promotions used the old default
    return None


def get_default_dtype():
    """The default floating point dtype (see set_default_dtype)."""
    return DTYPE_OF_NUM[DEFAULT_FLOAT.num]


def _dtype_by_name(str name):
    return DTYPE_OF_NAME[name]


cdef inline dtype dtype_of_array(cnp.ndarray a):
    cdef object d = DTYPE_OF_NUM.get(cnp.PyArray_TYPE(a))
    if d is None:
        raise TypeError(f"tapegrad does not support numpy arrays of dtype {a.dtype}; supported: "
                        f"{', '.join(sorted(DTYPE_OF_NAME))}")
    return <dtype>d


cdef object numpy_dtype_of(object d):
    """Internal coercion: a tapegrad dtype, a numpy dtype or a Python type to the numpy dtype
    (for numpy arrays' own dtypes; a user's `dtype=` argument goes through to_np_dtype)."""
    if isinstance(d, dtype):
        return (<dtype>d).np_dtype
    if d is float:                                      # PyTorch: Python's float is double
        return NP_FLOAT64
    if d is int:
        return NP_INT64
    if d is bool:
        return NP_BOOL
    try:
        nd = np.dtype(d)
    except TypeError:
        raise TypeError(f"dtype must be a tapegrad dtype (e.g. tapegrad.float32), got {d!r}") from None
    if nd.num not in DTYPE_OF_NUM:
        raise TypeError(f"unsupported dtype {d!r}")
    return nd


cdef bint is_dtype_arg(object d):
    """What PyTorch's argument parser takes as a dtype: a dtype, or Python's float/int/bool/
    complex (never a string or a numpy dtype)."""
    return isinstance(d, dtype) or d is float or d is int or d is bool or d is complex


cdef object to_np_dtype(object d, str fn=None):
    """A user's `dtype=` argument of function `fn` to its numpy dtype: what PyTorch accepts, and
    PyTorch's TypeError ("zeros(): argument 'dtype' must be torch.dtype, not str") for the rest."""
    if not is_dtype_arg(d):
        raise TypeError(f"{fn + '(): ' if fn else ''}argument 'dtype' must be torch.dtype, not "
                        f"{type_name(d)}")
    return numpy_dtype_of(d)


cdef inline int np_category(int type_num) noexcept:
    if type_num == cnp.NPY_BOOL:
        return CAT_BOOL
    if cnp.PyTypeNum_ISFLOAT(type_num):
        return CAT_FLOAT
    if cnp.PyTypeNum_ISCOMPLEX(type_num):
        return CAT_COMPLEX
    return CAT_INT


cdef inline int scalar_category(object s) noexcept:
    """Category of a Python scalar operand (bool is tested first: it is a subclass of int).  A
    numpy integer scalar is an integer to PyTorch too; numpy's bool_ and complex scalars it reads
    as floating numbers (the float category is kept for them here)."""
    if isinstance(s, bool):
        return CAT_BOOL
    if isinstance(s, int):
        return CAT_INT
    if isinstance(s, float):
        return CAT_FLOAT
    if isinstance(s, complex):
        return CAT_COMPLEX
    if isinstance(s, np.integer):
        return CAT_INT
    return CAT_FLOAT


cdef dict PROMOTION_CACHE = {}


cdef inline long operand_code(object x) except -1:
    # tensors: 2 * numpy type number + (1 if zero-dim); Python scalars: 10000 + category
    if isinstance(x, TensorBase):
        a = <cnp.ndarray>(<TensorBase>x)._array
        return 2 * cnp.PyArray_TYPE(a) + (1 if cnp.PyArray_NDIM(a) == 0 else 0)
    if type(x) is int:      # (PyTorch's parser refuses an int beyond 64 bits as a Scalar)
        check_int64_argument(x)
    return 10000 + scalar_category(x)


# torch's ScalarType names, for error messages
SCALAR_TYPE_NAMES = {"bfloat16": "BFloat16", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
                     "float32": "Float", "float64": "Double", "float16": "Half",
                               "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                               "uint8": "Byte", "bool": "Bool", "uint16": "UInt16",
                               "uint32": "UInt32", "uint64": "UInt64",
                     "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
                     "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz",
                     "float8_e8m0fnu": "Float8_e8m0fnu"}


# How PyTorch's messages name a tensor's type (toString of its options): its legacy tensor class
# where one exists, else the backend's type name (there is no torch.BoolTensor in those messages)
BACKEND_TYPE_NAMES = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
                      "float16": "torch.HalfTensor", "int64": "torch.LongTensor",
                      "int32": "torch.IntTensor", "int16": "torch.ShortTensor",
                      "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
                      "bool": "CPUBoolType", "bfloat16": "CPUBFloat16Type",
                      "complex64": "CPUComplexFloatType", "complex128": "CPUComplexDoubleType",
                      "uint16": "CPUUInt16Type", "uint32": "CPUUInt32Type",
                      "uint64": "CPUUInt64Type"}


cdef inline str scalar_type_name(object np_dt):
    return SCALAR_TYPE_NAMES.get(np_dt.name, np_dt.name)


cdef bint torch_castable(object src, object dst) except -1:
    """PyTorch's canCast: whether an op's result of numpy dtype `src` may be written into a tensor
    of dtype `dst` (in-place ops, out=).  Only a cast down the kinds bool < integer < floating <
    complex is refused, and a non-bool into bool; any width and signedness within a kind passes
    (int64 into uint8 wraps, where numpy's "same_kind" would refuse it)."""
    cdef int cs = np_category(src.num), cd = np_category(dst.num)
    return cs <= cd


cdef inline bint barebones_unsigned(object d) noexcept:
    """uint16, uint32, uint64: dtypes PyTorch promotes with no other integer or bool dtype."""
    return d.num == cnp.NPY_UINT16 or d.num == cnp.NPY_UINT32 or d.num == cnp.NPY_UINT64


cdef object promote_pair(object a, object b):
    """PyTorch's promoteTypes: within a category numpy's rule; across categories the higher
    category's dtype wins as it is (int64 with float32 is float32, not numpy's float64)."""
    cdef int ca = np_category(a.num), cb = np_category(b.num)
    if (a.num != b.num and (barebones_unsigned(a) or barebones_unsigned(b))
            and ca <= CAT_INT and cb <= CAT_INT):
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {scalar_type_name(a)} and "
                           f"{scalar_type_name(b)}")
    if ca == cb:
        return np.promote_types(a, b)
    if (ca == CAT_COMPLEX and cb == CAT_FLOAT) or (cb == CAT_COMPLEX and ca == CAT_FLOAT):
        return np.promote_types(a, b)                   # complex64 with float64: complex128
    return a if ca > cb else b


cdef object complex_of(object real_dt):
    """The complex dtype with real_dt's precision (PyTorch's toComplexType)."""
    if real_dt.num == cnp.NPY_FLOAT64:
        return np.dtype(np.complex128)
    if real_dt.num == cnp.NPY_FLOAT16:
        raise TypeError(NO_COMPLEX32)
    return np.dtype(np.complex64)


cdef object overtaken(object out, int cat, object higher):
    """The dtype when `higher` (of a higher category, from a lower-priority operand: a zero-dim
    tensor or a Python scalar) overtakes `out` (category `cat`; None when there is none):
    PyTorch's combine_categories keeps a floating out's precision in a complex result."""
    if cat == CAT_FLOAT and np_category(higher.num) == CAT_COMPLEX:
        return complex_of(out)
    return higher


cdef object scalar_default(int sc):
    """The dtype a Python scalar of category sc brings: the default of its category."""
    if sc == CAT_COMPLEX:
        return complex_of(DEFAULT_FLOAT)
    return DEFAULT_FLOAT if sc == CAT_FLOAT else (NP_INT64 if sc == CAT_INT else NP_BOOL)


cdef object compute_result_dtype(long code_a, long code_b):
    cdef object dims = None, zeros = None, out = None
    cdef int cat = -1, sc
    cdef long c
    for c in (code_a, code_b):
        if c >= 10000:
            continue
        nd = (<dtype>DTYPE_OF_NUM[c // 2]).np_dtype
        if c % 2 == 0:
            dims = nd if dims is None else promote_pair(dims, nd)
        else:
            zeros = nd if zeros is None else promote_pair(zeros, nd)
    if dims is not None:
        out = dims
        cat = np_category(out.num)
    if zeros is not None and np_category(zeros.num) > cat:
        out = overtaken(out, cat, zeros)
        cat = np_category(out.num)
    for c in (code_a, code_b):
        if c < 10000:
            continue
        sc = c - 10000
        if sc > cat:
            out = overtaken(out, cat, scalar_default(sc))
            cat = sc
    return out


cdef object result_dtype(object a, object b):
    """The numpy dtype PyTorch gives `a (op) b` (each a TensorBase or a Python scalar)."""
    cdef long key = operand_code(a) * 100000 + operand_code(b)
    cdef object d = PROMOTION_CACHE.get(key)
    if d is None:
        d = compute_result_dtype(key // 100000, key % 100000)
        PROMOTION_CACHE[key] = d
    return d


def result_type(a, b):
    """torch.result_type: the dtype of `a (op) b` for tensors and Python scalars."""
    for x in (a, b):
        # (anything else, None or a string, would pass for a float)
        if not isinstance(x, (TensorBase, bool, int, float, complex, np.number, np.bool_)):
            got = ", ".join("torch.dtype" if isinstance(y, dtype) else type_name(y)
                            for y in (a, b))
            raise TypeError(f"result_type() received an invalid combination of arguments - got "
                            f"({got}), but expected one of:\n * (Tensor tensor, Tensor other)\n"
                            f" * (Number scalar, Tensor tensor)\n * (Tensor tensor, Number other)"
                            f"\n * (Number scalar1, Number scalar2)\n")
    return DTYPE_OF_NUM[result_dtype(a, b).num]


def np_dtype_of(d, fn=None):
    """The numpy dtype of a user's `dtype=` argument to function `fn` (PyTorch's TypeError for a
    string, a numpy dtype or anything but a dtype or Python's float/int/bool/complex)."""
    return to_np_dtype(d, fn)


def numpy_dtype(d):
    """The numpy dtype of a tapegrad dtype, numpy dtype or Python type (internal callers holding
    a numpy array's dtype; TypeError for a dtype tapegrad has no tensor type for)."""
    return numpy_dtype_of(d)


# C++ type names PyTorch's messages use (masked_fill, grad assignment).
C_TYPE_NAMES = {"bfloat16": "c10::BFloat16", "float32": "float", "float64": "double", "float16": "c10::Half",
                          "int64": "long int", "int32": "int", "int16": "short int",
                          "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
                          "uint16": "short unsigned int", "uint32": "unsigned int",
                          "uint64": "long unsigned int",
                          "complex64": "c10::complex<float>",
                          "complex128": "c10::complex<double>"}


# The largest finite value of each floating dtype a Python scalar may be converted to.
cdef dict FLOAT_MAX = {np.dtype(np.float16): 65504.0, np.dtype(np.float32): 3.4028234663852886e38,
                       np.dtype(np.complex64): 3.4028234663852886e38}

# The C++ type PyTorch's checked_convert names in "value cannot be converted to type ... without
# overflow" (its scalar accessors' type names).
cdef dict CHECKED_C_TYPES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
                             "int32": "int", "int64": "int64_t", "uint16": "uint16_t",
                             "uint32": "uint32_t", "uint64": "uint64_t", "float16": "c10::Half",
                             "float32": "float", "float64": "double",
                             "complex64": "c10::complex<float>",
                             "complex128": "c10::complex<double>"}


cdef dict INT_LIMITS = {}


cdef tuple int_limits(object dt):
    """(min, max) of integer dtype dt as Python ints (np.iinfo, cached: it costs a microsecond)."""
    limits = INT_LIMITS.get(dt)
    if limits is None:
        info = np.iinfo(dt)
        limits = INT_LIMITS[dt] = (int(info.min), int(info.max))
    return <tuple>limits


cdef object overflow_error(object dt, bint half_as_double):
    """PyTorch's error for a number that does not fit dtype `dt`."""
    name = "double" if half_as_double and dt.itemsize == 2 and dt.kind == "f" else (
        CHECKED_C_TYPES[dt.name])
    return RuntimeError(f"value cannot be converted to type {name} without overflow")


cdef inline int check_int64_argument(object v) except -1:
    """PyTorch's argument parser's range check of a Python int given as a number: it must fit
    64 bits, signed or unsigned, or OverflowError (with the parser's messages)."""
    if v >= (1 << 64):
        raise OverflowError("int too big to convert")
    if v < -(1 << 63):
        raise OverflowError("can't convert negative int to unsigned")
    return 0


cdef object scalar_to_dtype(object v, object dt, bint half_as_double=False):
    """A Python or numpy number `v` converted to numpy dtype `dt` as PyTorch's checked_convert
    does when a Scalar is written into a tensor (fill_, full, masked_fill, index_fill,
    x[key] = v, where's and clamp's numbers), returned as the Python number (bool, int, float
    or complex) that stores as it (a numpy scalar costs a microsecond to make).

    Its rules: a bool target takes any number's truth value; an integer must fit an integer
    target's range, except that an unsigned target also takes integers down to -max, stored
    modulo 2**bits (uint8's -200 is 56); a float for an integer target must be a number within
    the range before it is truncated toward zero; a finite number for a float target must lie
    within its finite range (float16's too unless `half_as_double`: x[key] = v and where check
    float16 as a double and round to inf, and name "double" in their errors); a complex number
    for a real target must have a zero imaginary part. Python ints beyond 64 bits are refused
    as PyTorch's argument parser does (OverflowError)."""
    cdef type t = type(v)
    if t is not float and t is not int and t is not bool and t is not complex:
        v = v.item() if isinstance(v, np.generic) else (
            int(v) if isinstance(v, int) else complex(v) if isinstance(v, complex) else float(v))
        t = type(v)
    cdef str kind = dt.kind
    if t is bool:
        return v if kind == "b" else (complex(v) if kind == "c" else
                                      float(v) if kind == "f" else int(v))
    if t is int:
        check_int64_argument(v)
    elif t is complex:
        if kind == "b":
            return v != 0
        if kind != "c":
            if v.imag != 0:
                raise overflow_error(dt, half_as_double)
            v = v.real
    if kind == "b":
        return bool(v)
    if kind == "i" or kind == "u":
        lo, hi = int_limits(dt)
        if type(v) is int:
            if v < (-hi if kind == "u" else lo) or v > hi:
                raise overflow_error(dt, half_as_double)
            return v % (hi + 1) if v < 0 and kind == "u" else v
        if not (<double>lo <= v <= <double>hi):        # (NaN fails too)
            raise overflow_error(dt, half_as_double)
        return int(v)
    limit = FLOAT_MAX.get(dt)
    if limit is not None:
        parts = (v.real, v.imag) if type(v) is complex else (v,)
        for part in parts:
            if abs(part) != float("inf") and abs(part) > <double>limit:
                if half_as_double and kind == "f" and dt.itemsize == 2:
                    with IeeeResults():         # (rounded to inf, as PyTorch's double -> Half)
                        return float(dt.type(v))
                raise overflow_error(dt, half_as_double)
    return complex(v) if kind == "c" else float(v)


cdef object wrapped_int(object v, object dt):
    """A Python int operand of an operator (&, <, ==) computed in integer dtype `dt`, as PyTorch
    casts its wrapped number: unchecked, keeping the low bits (two's complement), after its
    argument parser's 64-bit range check (made whatever `dt`: beside a float tensor too);
    other numbers and dtypes are returned as they are."""
    if not isinstance(v, int) or isinstance(v, bool):
        return v
    check_int64_argument(v)
    if dt.kind not in "iu":
        return v
    bits = 8 * dt.itemsize             # (a Python int: 1 << 64 must not overflow)
    v &= (1 << bits) - 1
    if dt.kind == "i" and v >= (1 << (bits - 1)):
        v -= 1 << bits
    return v


def _scalar_to_dtype(v, dt, half_as_double=False):
    """scalar_to_dtype for the Python-level ops (fill_, full, fill, lerp's weight): `v` as the
    number PyTorch stores in a `dt` tensor, or its error."""
    return scalar_to_dtype(v, np.dtype(dt), half_as_double)


cdef extern from *:
    """
    /* A compiled class's metatype becomes `meta`, a subclass of type (tapegrad/_torch_names.py's
     * TorchNamedClass): its repr, `type(x.dtype)`, prints PyTorch's name while __module__ and
     * pickling stay ours.  The class is a static type: every type slot the metatype inherits
     * from type reads it as a type, and its instances are untouched. */
    static int tg_set_metatype(PyObject *cls, PyObject *meta)
    {
        if (!PyType_Check(cls) || !PyType_Check(meta)
                || !PyType_IsSubtype((PyTypeObject *)meta, &PyType_Type)
                || ((PyTypeObject *)meta)->tp_basicsize != PyType_Type.tp_basicsize) {
            PyErr_SetString(PyExc_TypeError, "expected a class and a plain subclass of type");
            return -1;
        }
        /* the metatype's own __module__ would answer for the class (a static type keeps its
         * module in tp_name, not in its dict): the class's module goes into its dict first */
        PyObject *module = PyObject_GetAttrString(cls, "__module__");
        if (module == NULL)
            return -1;
        int failed = PyDict_SetItemString(((PyTypeObject *)cls)->tp_dict, "__module__", module);
        Py_DECREF(module);
        if (failed < 0)
            return -1;
        PyType_Modified((PyTypeObject *)cls);
        Py_INCREF(meta);        /* (the class is static: the reference is never given back) */
        Py_SET_TYPE(cls, (PyTypeObject *)meta);
        return 0;
    }
    """
    int tg_set_metatype(object cls, object meta) except -1


def _set_printed_metatype(cls, meta):
    """Give compiled class `cls` the metatype `meta` (tapegrad/_torch_names.py, once)."""
    tg_set_metatype(cls, meta)


# CPython's own messages about an object name its type by the C slot tp_name: "'torch.Size'
# object does not support item assignment", "... is not callable", "... has no attribute 'x'",
# "unsupported operand type(s) for -: 'torch.Size' and 'int'".  A class declaring its PyTorch
# name in `_c_type_name` gets it there, so those messages read as PyTorch's.  A Python class's
# __name__, __qualname__ and __module__ (so its repr and pickling) do not read tp_name; a
# compiled one's __name__ is tp_name's last part, the same name.  The names' bytes live here, as
# long as their classes (tapegrad's own, never released).
cdef dict TP_NAME_BYTES = {}


def _use_c_type_name(cls):
    """Point class `cls`'s tp_name at its declared `_c_type_name` (a class declaring none, a
    subclass included, keeps its own)."""
    name = cls.__dict__.get("_c_type_name")
    if name is None:
        return
    cdef bytes encoded = (<str>name).encode("utf-8")
    TP_NAME_BYTES[cls] = encoded
    (<PyTypeObject*>cls).tp_name = <char*>encoded
