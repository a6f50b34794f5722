/* The out= wrapper of a public function (tapegrad/_out_arg.py, ops_inplace.pxi's WithOut).
 *
 * Most calls of torch.exp, torch.sum, torch.cat ... pass no `out`, and at small sizes a call costs
 * ~150 ns, so the wrapper must cost next to nothing on that path.  A Cython class's __call__ takes
 * the call through tp_call: a tuple for the arguments, a dict for the keywords, then the same again
 * to call the function (~60-120 ns, 1.4-1.5x the op at sizes 1-16).  This type implements the
 * vectorcall protocol instead: a call without `out` is forwarded to the function with the caller's
 * own argument vector (one indirect call, no allocation), and only a call naming `out` builds the
 * tuple and dict and goes to the Python-level rules (`slow_call`, ops_inplace.pxi's
 * _call_with_out: write_out's resizing, casting and autograd refusal).
 *
 * The same type is the one entry of every public function of tapegrad's namespaces (tapegrad,
 * nn.functional, special, linalg, fft; tapegrad/_public_calls.py wraps them once, at import),
 * which is where the meta device dispatches: once a meta tensor has been made
 * (tg_out_arg_set_meta), a call with a meta tensor among its arguments (or in a list or tuple
 * argument) goes to the meta device's `entry`; before, the test is one NULL compare.  A function
 * PyTorch gives no out= (takes_out 0) forwards `out` to the function like any other keyword.
 *
 * It is also where tapegrad.compile's capture sees the public functions: while a capture runs
 * (tg_out_arg_set_capture_route), a call without out= goes to the route, capture.pxi's
 * _capture_op_call(function, args, kwargs), which notes it on the capturing thread and runs it as
 * it is on any other.  No name is rebound for a capture; outside one, the test is one NULL
 * compare.  (A call naming out= writes into a tensor the call did not make: not replayable, so it
 * is not routed; the capture notes the write.)
 *
 * While a profiler is active (tg_set_profiler), every call of either entry is one event of the
 * profiler's (tapegrad/profiler.py, src/tapegrad/profiling.pxi): open(name, operands) before the
 * call, close(token) after it, whatever its outcome.  Outside one, the test is one NULL compare.
 *
 * Included by one module (_ops_inplace), so everything here is static.
 */
#ifndef TAPEGRAD_OUT_ARG_CALL_H
#define TAPEGRAD_OUT_ARG_CALL_H

#include <Python.h>
#include <structmember.h>
#include <stddef.h>

/* What both entries, WithOut and TensorMethod (below), start with: their object handling (GC,
 * deallocation) is written once, for this. */
typedef struct {
    PyObject_HEAD
    PyObject *fn;               /* the wrapped function, called as it is when out is absent */
    PyObject *name;             /* torch's name of the function (messages) */
    PyObject *dict;             /* __name__, __qualname__, __doc__, __signature__, __wrapped__ */
    vectorcallfunc vectorcall;
    char autocast;              /* its CPU autocast policy (tapegrad/_autocast.py), 0: none */
} TgEntry;

typedef struct {
    PyObject_HEAD
    PyObject *fn;               /* (TgEntry's fields, first) */
    PyObject *name;
    PyObject *dict;
    vectorcallfunc vectorcall;
    char autocast;
    char dtype_from_out;        /* the function computes in out's dtype (factories, sums) */
    char takes_out;             /* PyTorch's function has out= (else `out` is the function's) */
    char in_place;              /* its name ends in '_': it writes its input (fill_, resize_as_) */
} TgOutArg;

/* _call_with_out(fn, name, dtype_from_out, args, kwargs), set once by tg_out_arg_type(). */
static PyObject *tg_out_arg_slow_call = NULL;

static int
tg_kwnames_name_out(PyObject *kwnames)
{
    Py_ssize_t i, n = PyTuple_GET_SIZE(kwnames);
    for (i = 0; i < n; i++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "out") == 0)
            return 1;
    }
    return 0;
}

/* The meta tensor classes (NULL until the first meta tensor) and the meta device's entry,
 * entry("call", (function, name, args, kwargs)): set by tg_out_arg_set_meta. */
static PyTypeObject *tg_meta_type = NULL, *tg_meta_parameter_type = NULL;
static PyObject *tg_meta_entry = NULL;

static inline int
tg_is_meta(PyObject *a)
{
    PyTypeObject *t = Py_TYPE(a);
    return t == tg_meta_type || (t == tg_meta_parameter_type && t != NULL);
}

/* Whether any of a call's n arguments (positional then keyword values) is an object `is_kind`
 * accepts, or a list or tuple holding one (torch.cat's tensors): the one walk of the arguments
 * that the meta device's dispatch and the ndarray error path share. */
static inline __attribute__((always_inline)) int
tg_any_argument(PyObject *const *args, Py_ssize_t n, int (*is_kind)(PyObject *))
{
    Py_ssize_t i, j, m;
    PyObject *a;
    for (i = 0; i < n; i++) {
        a = args[i];
        if (is_kind(a))
            return 1;
        if (PyList_CheckExact(a)) {
            m = PyList_GET_SIZE(a);
            for (j = 0; j < m; j++)
                if (is_kind(PyList_GET_ITEM(a, j)))
                    return 1;
        } else if (PyTuple_CheckExact(a)) {
            m = PyTuple_GET_SIZE(a);
            for (j = 0; j < m; j++)
                if (is_kind(PyTuple_GET_ITEM(a, j)))
                    return 1;
        }
    }
    return 0;
}

/* PyTorch's __torch_function__ dispatch for Tensor subclasses.  tapegrad/overrides.py registers
 * each Tensor subclass that keeps the protocol (not nn.Parameter's kind, which opts out) in
 * tg_subclass_types when the class is made; from then on a public function's or a Tensor
 * method's call with an instance of one among its arguments goes to
 * tg_subclass_handler(<entry>, args, kwargs) instead (handle_torch_function's way: the subclass's
 * __torch_function__ with the entry as `func`).  Until the first such class the check is one
 * NULL test.  Tensor's default __torch_function__ runs the call with the dispatch off
 * (tg_subclass_dispatch_off, per thread as PyTorch's DisableTorchFunctionSubclass guard). */
#if defined(_MSC_VER)
#define TG_THREAD_LOCAL __declspec(thread)
#else
#define TG_THREAD_LOCAL __thread
#endif
static PyObject *tg_subclass_types = NULL;          /* a set of types */
static PyObject *tg_subclass_handler = NULL;
static PyTypeObject *tg_tensor_base_type = NULL;
static TG_THREAD_LOCAL int tg_subclass_dispatch_off = 0;

/* *slot = a new reference to `value`, which must be callable (`what` names it in the error):
 * how the handlers below (subclass dtype, autocast, function modes) are installed. */
static int
tg_store_callable(PyObject **slot, PyObject *value, const char *what)
{
    if (!PyCallable_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be callable", what);
        return -1;
    }
    Py_INCREF(value);
    Py_XSETREF(*slot, value);
    return 0;
}

/* Dtypes whose every use goes to the handler too (torch.bfloat16, from the first bfloat16
 * tensor on: tapegrad/_bfloat16.py makes `zeros(3, dtype=torch.bfloat16)` there, whose arguments
 * hold no tensor of its kind; the float8 dtypes likewise, tapegrad/_float8.py).  A fixed array:
 * the check is a few pointer compares; tg_dispatching_dtype is its first entry (NULL: none). */
#define TG_MAX_DISPATCHING_DTYPES 8
static PyObject *tg_dispatching_dtypes[TG_MAX_DISPATCHING_DTYPES] = {NULL};
static int tg_n_dispatching_dtypes = 0;
#define tg_dispatching_dtype (tg_dispatching_dtypes[0])

static int
tg_is_dispatching_subclass(PyObject *a)
{
    PyTypeObject *t = Py_TYPE(a);
    for (int i = 0; i < tg_n_dispatching_dtypes; i++)
        if (a == tg_dispatching_dtypes[i])
            return 1;
    /* (a set lookup of a type cannot fail: types hash by identity) */
    return tg_subclass_types != NULL && PyType_IsSubtype(t, tg_tensor_base_type)
           && PySet_Contains(tg_subclass_types, (PyObject *)t) == 1;
}

static int
tg_set_subclass_dispatch(PyObject *types, PyObject *tensor_base, PyObject *handler)
{
    if (!PySet_Check(types) || !PyType_Check(tensor_base) || !PyCallable_Check(handler)) {
        PyErr_SetString(PyExc_TypeError, "expected a set, the tensor base type and a callable");
        return -1;
    }
    Py_INCREF(types);
    Py_XSETREF(tg_subclass_types, types);
    Py_INCREF(tensor_base);
    Py_XSETREF(tg_tensor_base_type, (PyTypeObject *)tensor_base);
    Py_INCREF(handler);
    Py_XSETREF(tg_subclass_handler, handler);
    return 0;
}

/* `dtype`'s uses go to `handler` (the subclass handler) from now on (a dtype already listed
 * stays listed once). */
static int
tg_set_dispatching_dtype(PyObject *dtype, PyObject *handler)
{
    if (tg_store_callable(&tg_subclass_handler, handler, "the subclass handler") < 0)
        return -1;
    for (int i = 0; i < tg_n_dispatching_dtypes; i++)
        if (tg_dispatching_dtypes[i] == dtype)
            return 0;
    if (tg_n_dispatching_dtypes == TG_MAX_DISPATCHING_DTYPES) {
        PyErr_SetString(PyExc_RuntimeError, "too many dispatching dtypes");
        return -1;
    }
    Py_INCREF(dtype);
    tg_dispatching_dtypes[tg_n_dispatching_dtypes++] = dtype;
    return 0;
}

/* Whether self[key] = value goes to the subclass handler for its value: a value of a
 * dispatching class into a self of another (PyTorch's __setitem__ dispatches on every
 * argument; a dispatching self's own __setitem__ is its class's replacement, overrides.py). */
static int
tg_setitem_value_dispatches(PyObject *self, PyObject *value)
{
    return tg_subclass_handler != NULL && !tg_subclass_dispatch_off
           && Py_TYPE(value) != Py_TYPE(self) && tg_is_dispatching_subclass(value);
}

/* The subclass handler (a new reference; set whenever tg_setitem_value_dispatches answers 1). */
static PyObject *
tg_subclass_handler_ref(void)
{
    Py_INCREF(tg_subclass_handler);
    return tg_subclass_handler;
}

/* Turns the dispatch off (off=1) or back on for this thread (off=-1: leaves it); the previous
 * setting. */
static int
tg_subclass_dispatch_set_off(int off)
{
    int previous = tg_subclass_dispatch_off;
    if (off >= 0)
        tg_subclass_dispatch_off = off;
    return previous;
}

/* The number of arguments in a vectorcall's vector: positional, then one per keyword. */
static inline Py_ssize_t
tg_argument_count(size_t nargsf, PyObject *kwnames)
{
    return PyVectorcall_NARGS(nargsf) + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
}

/* A vectorcall's positional arguments as a tuple (a new reference, NULL on error). */
static PyObject *
tg_positional(PyObject *const *args, size_t nargsf)
{
    Py_ssize_t i, n = PyVectorcall_NARGS(nargsf);
    PyObject *tuple = PyTuple_New(n);
    if (tuple == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]);
    }
    return tuple;
}

/* The profiler's open(name, operands) -> token and close(token) while one is active, else NULL:
 * set by tg_set_profiler. */
static PyObject *tg_profiler_open = NULL, *tg_profiler_close = NULL;

static int
tg_set_profiler(PyObject *open_event, PyObject *close_event)
{
    if (open_event == Py_None) {
        Py_CLEAR(tg_profiler_open);
        Py_CLEAR(tg_profiler_close);
        return 0;
    }
    if (!PyCallable_Check(open_event) || !PyCallable_Check(close_event)) {
        PyErr_SetString(PyExc_TypeError, "the profiler's hooks must be callable or None");
        return -1;
    }
    Py_INCREF(open_event);
    Py_XSETREF(tg_profiler_open, open_event);
    Py_INCREF(close_event);
    Py_XSETREF(tg_profiler_close, close_event);
    return 0;
}

/* body(entry, args...) as one profiler event named as the entry (a WithOut or a TensorMethod),
 * its operands the call's positional arguments (what record_shapes lists: a keyword's value,
 * relu's inplace=False, is no operand of PyTorch's op): the result, or NULL with the call's error
 * (or the profiler's) set. */
static PyObject *
tg_profiled_call(vectorcallfunc body, PyObject *callable, PyObject *const *args, size_t nargsf,
                 PyObject *kwnames)
{
    PyObject *name = ((TgEntry *)callable)->name;
    PyObject *operands, *token, *result, *closed, *type, *value, *tb;
    PyObject *open_args[2];

    operands = tg_positional(args, nargsf);
    if (operands == NULL)
        return NULL;
    open_args[0] = name;
    open_args[1] = operands;
    token = PyObject_Vectorcall(tg_profiler_open, open_args, 2, NULL);
    Py_DECREF(operands);
    if (token == NULL)
        return NULL;
    result = body(callable, args, nargsf, kwnames);
    PyErr_Fetch(&type, &value, &tb);
    if (tg_profiler_close != NULL) {    /* close(token, result): a FlopCounterMode reads it */
        PyObject *close_args[2] = {token, result != NULL ? result : Py_None};
        closed = PyObject_Vectorcall(tg_profiler_close, close_args, 2, NULL);
    }
    else
        closed = Py_NewRef(Py_None);
    Py_DECREF(token);
    if (closed == NULL) {       /* (the profiler's own error wins) */
        Py_XDECREF(result);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return NULL;
    }
    Py_DECREF(closed);
    PyErr_Restore(type, value, tb);
    return result;
}

/* `vectorcall`, an entry type's vectorcall: `body` (inlined), or, while a profiler is active,
 * body as one of its events.  Outside one, the cost is one NULL compare. */
#define TG_ENTRY_VECTORCALL(vectorcall, body)                                                  \
    static PyObject *                                                                          \
    vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)    \
    {                                                                                          \
        if (tg_profiler_open != NULL)                                                          \
            return tg_profiled_call(body, callable, args, nargsf, kwnames);                    \
        return body(callable, args, nargsf, kwnames);                                          \
    }

static int
tg_out_arg_set_meta(PyObject *tensor_cls, PyObject *parameter_cls, PyObject *entry)
{
    if (!PyType_Check(tensor_cls) || (parameter_cls != Py_None && !PyType_Check(parameter_cls))) {
        PyErr_SetString(PyExc_TypeError, "the meta tensor classes must be types");
        return -1;
    }
    Py_INCREF(tensor_cls);
    Py_XSETREF(tg_meta_type, (PyTypeObject *)tensor_cls);
    if (parameter_cls != Py_None) {
        Py_INCREF(parameter_cls);
        Py_XSETREF(tg_meta_parameter_type, (PyTypeObject *)parameter_cls);
    }
    Py_INCREF(entry);
    Py_XSETREF(tg_meta_entry, entry);
    return 0;
}

/* _capture_op_call while a capture runs, else NULL: set by tg_out_arg_set_capture_route. */
static PyObject *tg_capture_route = NULL;

static int
tg_out_arg_set_capture_route(PyObject *route)
{
    if (route == Py_None) {
        Py_CLEAR(tg_capture_route);
        return 0;
    }
    if (!PyCallable_Check(route)) {
        PyErr_SetString(PyExc_TypeError, "the capture route must be callable or None");
        return -1;
    }
    Py_INCREF(route);
    Py_XSETREF(tg_capture_route, route);
    return 0;
}

/* numpy.ndarray and _public_calls.argument_error(function, name, error, args, kwargs), set once
 * by tg_out_arg_set_argument_error: a call with an ndarray among its arguments (or in a list or
 * tuple argument) gets PyTorch's TypeError from it ("must be Tensor, not numpy.ndarray"), whatever
 * the function's own code ran into first (error: what it raised), or where the function computed
 * with the array (error None: numpy's operators and conversions take it).  A call without an
 * ndarray pays one walk of its arguments (a few compares each). */
static PyTypeObject *tg_ndarray_type = NULL;
static PyObject *tg_argument_error = NULL;

/* _public_calls.binding_error(entry, name, error, args, kwargs), set with argument_error: a call
 * without an ndarray that raised a TypeError gets its verdict (PyTorch's wording, under PyTorch's
 * name, of a call that does not fit the function's parameters; None: the error stands; a
 * 1-tuple: the outcome of the call made again with NumPy's keyword aliases renamed).  Only
 * failed calls pay for it. */
static PyObject *tg_binding_error = NULL;

/* _public_calls.method_error(entry, name, error, args, kwargs), set with argument_error: a
 * Tensor method's call (TensorMethod below, self first among args) that raised a TypeError gets
 * its verdict: PyTorch's wording for a method, which counts positions after self and leaves
 * self out of "got (...)" (the core's messages count them as the function's do); None: the
 * error stands.  Only failed calls pay for it. */
static PyObject *tg_method_error = NULL;

static int
tg_out_arg_set_argument_error(PyObject *ndarray_type, PyObject *handler, PyObject *binding,
                              PyObject *method)
{
    if (!PyType_Check(ndarray_type) || !PyCallable_Check(handler) || !PyCallable_Check(binding)
            || !PyCallable_Check(method)) {
        PyErr_SetString(PyExc_TypeError, "the ndarray type must be a type, the handlers callable");
        return -1;
    }
    Py_INCREF(ndarray_type);
    Py_XSETREF(tg_ndarray_type, (PyTypeObject *)ndarray_type);
    Py_INCREF(handler);
    Py_XSETREF(tg_argument_error, handler);
    Py_INCREF(binding);
    Py_XSETREF(tg_binding_error, binding);
    Py_INCREF(method);
    Py_XSETREF(tg_method_error, method);
    return 0;
}

/* An ndarray or a direct subclass (np.memmap, np.matrix, np.recarray): two compares, as every
 * successful call with arguments asks (a walk of the whole base-type chain, or
 * PyObject_TypeCheck's MRO search, made every small op ~6% slower; bench/large_tensors.py's
 * sizes 1-16).  A subclass of a subclass is not seen here: such a call computes as before. */
static inline int
tg_is_ndarray(PyObject *a)
{
    PyTypeObject *t = Py_TYPE(a);
    return t == tg_ndarray_type || t->tp_base == tg_ndarray_type;
}

/* The capture route now (a new reference), or None: what tests read to see none is left. */
static PyObject *
tg_out_arg_capture_route(void)
{
    PyObject *route = tg_capture_route != NULL ? tg_capture_route : Py_None;
    Py_INCREF(route);
    return route;
}

/* The call's arguments as a tuple and a dict, then handler(<head...>, positional, keywords). */
static PyObject *
tg_out_arg_call_with(PyObject *handler, PyObject *head, PyObject *const *args, size_t nargsf,
                     PyObject *kwnames, int unpack_head)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), i;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *positional, *keywords, *result, *packed;

    positional = tg_positional(args, nargsf);
    if (positional == NULL)
        return NULL;
    keywords = PyDict_New();
    if (keywords == NULL) {
        Py_DECREF(positional);
        return NULL;
    }
    for (i = 0; i < nkw; i++) {
        if (PyDict_SetItem(keywords, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
            Py_DECREF(positional);
            Py_DECREF(keywords);
            return NULL;
        }
    }
    if (unpack_head) {          /* handler(*head, positional, keywords) */
        PyObject *all = PyTuple_New(PyTuple_GET_SIZE(head) + 2);
        if (all == NULL) {
            result = NULL;
        } else {
            for (i = 0; i < PyTuple_GET_SIZE(head); i++) {
                Py_INCREF(PyTuple_GET_ITEM(head, i));
                PyTuple_SET_ITEM(all, i, PyTuple_GET_ITEM(head, i));
            }
            PyTuple_SET_ITEM(all, i, positional);
            PyTuple_SET_ITEM(all, i + 1, keywords);
            result = PyObject_Call(handler, all, NULL);
            Py_DECREF(all);
            return result;
        }
    } else {                    /* handler("call", (*head, positional, keywords)) */
        packed = PyTuple_Pack(4, PyTuple_GET_ITEM(head, 0), PyTuple_GET_ITEM(head, 1),
                              positional, keywords);
        result = packed == NULL ? NULL
                 : PyObject_CallFunction(handler, "sO", "call", packed);
        Py_XDECREF(packed);
    }
    Py_DECREF(positional);
    Py_DECREF(keywords);
    return result;
}

/* CPU autocast (tapegrad/_autocast.py).  An entry whose op is on one of PyTorch's CPU autocast
 * lists carries its policy in `autocast` (set when the entry is made); while autocast is on in
 * this thread (tg_autocast_on), a call of such an entry goes to
 * handler(<entry>, policy, args, kwargs), which casts the floating tensor arguments and calls the
 * entry again with the flag off (PyTorch's autocast kernel excludes its dispatch key the same way,
 * so the op's inner ops are not cast again).  An entry with no policy tests only its own byte; one
 * with a policy reads the thread-local flag too (initial-exec model, as grad_mode.pxi's word: no
 * __tls_get_addr call). */
#if defined(__GNUC__) && defined(__GLIBC__) && defined(__ELF__)
#define TG_AUTOCAST_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define TG_AUTOCAST_TLS_MODEL
#endif
static TG_THREAD_LOCAL int tg_autocast_on TG_AUTOCAST_TLS_MODEL = 0;
static PyObject *tg_autocast_handler = NULL;

/* Sets this thread's flag (on: 1 or 0; -1 leaves it); returns its previous value. */
static int
tg_autocast_set_on(int on)
{
    int previous = tg_autocast_on;
    if (on >= 0)
        tg_autocast_on = on;
    return previous;
}

static int
tg_autocast_set_handler(PyObject *handler)
{
    return tg_store_callable(&tg_autocast_handler, handler, "the autocast handler");
}

/* The call through the handler: handler(entry, policy, args, kwargs). */
static PyObject *
tg_autocast_call(PyObject *callable, int policy, PyObject *const *args, size_t nargsf,
                 PyObject *kwnames)
{
    PyObject *head, *result;
    if (tg_autocast_handler == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tapegrad: autocast is on but has no handler");
        return NULL;
    }
    head = Py_BuildValue("(Oi)", callable, policy);
    if (head == NULL)
        return NULL;
    result = tg_out_arg_call_with(tg_autocast_handler, head, args, nargsf, kwnames, 1);
    Py_DECREF(head);
    return result;
}

/* Whether a call goes to __torch_function__: a torch function mode is active in this thread, or
 * the call's arguments hold an instance of a dispatching Tensor subclass (and that dispatch is
 * on); then tg_subclass_call sends it to the mode's or the subclass's handler. */
static inline int tg_in_function_mode(void);

static inline int
tg_dispatches_to_subclass(PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (tg_in_function_mode())
        return 1;       /* (a mode comes first: tg_subclass_call hands the call to it) */
    return (tg_subclass_types != NULL || tg_dispatching_dtype != NULL) && !tg_subclass_dispatch_off
           && tg_any_argument(args, tg_argument_count(nargsf, kwnames), tg_is_dispatching_subclass);
}

/* PyTorch's torch function modes (tapegrad/overrides.py: TorchFunctionMode).  While this
 * thread's mode stack is not empty, a public function's or Tensor method's call goes to
 * tg_mode_handler(<entry>, args, kwargs) first (handle_torch_function's way: the top mode's
 * __torch_function__, popped while it runs).  The handler is set at the first mode a program
 * enters, so until then the check is one NULL compare; tg_function_modes is this thread's depth. */
static PyObject *tg_mode_handler = NULL;
static TG_THREAD_LOCAL Py_ssize_t tg_function_modes = 0;

static int
tg_set_function_modes(PyObject *handler, Py_ssize_t depth)
{
    if (depth < 0) {
        PyErr_SetString(PyExc_ValueError, "the function modes' depth must be >= 0");
        return -1;
    }
    if (tg_store_callable(&tg_mode_handler, handler, "the function modes' handler") < 0)
        return -1;
    tg_function_modes = depth;
    return 0;
}

static inline int
tg_in_function_mode(void)
{
    return tg_mode_handler != NULL && tg_function_modes > 0;
}

static PyObject *
tg_subclass_call(PyObject *entry, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (tg_in_function_mode()) {
        PyObject *result, *head = PyTuple_Pack(1, entry);
        if (head == NULL)
            return NULL;
        result = tg_out_arg_call_with(tg_mode_handler, head, args, nargsf, kwnames, 1);
        Py_DECREF(head);
        return result;
    }

    PyObject *result, *head = PyTuple_Pack(1, entry);
    if (head == NULL)
        return NULL;
    result = tg_out_arg_call_with(tg_subclass_handler, head, args, nargsf, kwnames, 1);
    Py_DECREF(head);
    return result;
}

/* A handler's verdict on a call: handler(function, name, error, args, kwargs), `error` what the
 * function raised (NULL: it returned).  A new reference to the exception to raise instead, to
 * None (the call's own outcome stands), or NULL with an error set.  argument_error (a call with
 * an ndarray argument) is given the wrapped function, binding_error the entry itself (its
 * signature has out= where PyTorch's has it), method_error the method's entry. */
static PyObject *
tg_out_arg_verdict(PyObject *handler, PyObject *function, PyObject *name, PyObject *error,
                   PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *head, *verdict;
    head = PyTuple_Pack(3, function, name, error != NULL ? error : Py_None);
    if (head == NULL)
        return NULL;
    verdict = tg_out_arg_call_with(handler, head, args, nargsf, kwnames, 1);
    Py_DECREF(head);
    return verdict;
}

/* The call's outcome (`result`, or NULL with its error set) as handler's verdict on it has it:
 * the outcome itself (None), the verdict's exception raised (NULL returned), or, for a verdict
 * that is a 1-tuple, the outcome it holds: binding_error's and method_error's call made again
 * with the keywords PyTorch's parser reads as NumPy's aliases (x2= for other=) renamed. */
static PyObject *
tg_out_arg_judged(PyObject *handler, PyObject *function, PyObject *name, PyObject *result,
                  PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *type = NULL, *value = NULL, *tb = NULL, *verdict;

    if (result == NULL) {
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (value == NULL) {        /* (an error without a value: nothing to judge) */
            PyErr_Restore(type, value, tb);
            return NULL;
        }
    }
    verdict = tg_out_arg_verdict(handler, function, name, value, args, nargsf, kwnames);
    if (verdict == Py_None) {
        Py_DECREF(verdict);
        if (result == NULL)
            PyErr_Restore(type, value, tb);
        return result;
    }
    Py_XDECREF(result);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (verdict != NULL && PyTuple_CheckExact(verdict) && PyTuple_GET_SIZE(verdict) == 1) {
        result = PyTuple_GET_ITEM(verdict, 0);
        Py_INCREF(result);
        Py_DECREF(verdict);
        return result;
    }
    if (verdict != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(verdict), verdict);
        Py_DECREF(verdict);
    }
    return NULL;
}

/* An in-place function (fill_, resize_as_) with an ndarray argument: argument_error's verdict
 * before the call, since PyTorch's parser refuses before anything is written.  0 to go on with
 * the call, -1 with PyTorch's exception (or another error) set.  (Any other function is judged
 * on its outcome, so that an error it words as PyTorch does stands.) */
static int
tg_out_arg_refused_in_place(TgOutArg *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames)
{
    PyObject *verdict;
    if (!self->in_place || tg_argument_error == NULL
            || !tg_any_argument(args, tg_argument_count(nargsf, kwnames), tg_is_ndarray))
        return 0;
    verdict = tg_out_arg_verdict(tg_argument_error, self->fn, self->name, NULL, args, nargsf,
                                 kwnames);
    if (verdict == NULL)
        return -1;
    if (verdict == Py_None) {
        Py_DECREF(verdict);
        return 0;
    }
    PyErr_SetObject((PyObject *)Py_TYPE(verdict), verdict);
    Py_DECREF(verdict);
    return -1;
}

/* The call's outcome (`result`, or NULL with the error set), unless an ndarray is among its
 * arguments and argument_error gives PyTorch's exception instead, or the call failed with a
 * TypeError and binding_error gives PyTorch's wording of it (raised, NULL returned). */
static PyObject *
tg_out_arg_checked(TgOutArg *self, PyObject *result, PyObject *const *args, size_t nargsf,
                   PyObject *kwnames)
{
    if (tg_argument_error == NULL)
        return result;
    if (tg_any_argument(args, tg_argument_count(nargsf, kwnames), tg_is_ndarray))
        return tg_out_arg_judged(tg_argument_error, self->fn, self->name, result, args, nargsf,
                                 kwnames);
    if (result == NULL && PyErr_ExceptionMatches(PyExc_TypeError))
        return tg_out_arg_judged(tg_binding_error, (PyObject *)self, self->name, NULL, args,
                                 nargsf, kwnames);
    return result;
}

static inline PyObject *
tg_out_arg_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    TgOutArg *self = (TgOutArg *)callable;
    PyObject *head, *result;

    if (tg_dispatches_to_subclass(args, nargsf, kwnames))
        return tg_subclass_call(callable, args, nargsf, kwnames);
    if (tg_meta_type != NULL
            && tg_any_argument(args, tg_argument_count(nargsf, kwnames), tg_is_meta)) {
        /* the meta device: dispatch(<this function>, name, args, kwargs) */
        head = PyTuple_Pack(2, callable, self->name);
        if (head == NULL)
            return NULL;
        result = tg_out_arg_call_with(tg_meta_entry, head, args, nargsf, kwnames, 0);
        Py_DECREF(head);
        return result;
    }
    if (self->autocast && tg_autocast_on)
        return tg_autocast_call(callable, self->autocast, args, nargsf, kwnames);
    if (tg_out_arg_refused_in_place(self, args, nargsf, kwnames) < 0)
        return NULL;
    if (!self->takes_out || kwnames == NULL || !tg_kwnames_name_out(kwnames)) {
        if (tg_capture_route != NULL) {
            /* a capture runs: _capture_op_call(<the function>, args, kwargs) */
            head = PyTuple_Pack(1, self->fn);
            if (head == NULL)
                return NULL;
            result = tg_out_arg_call_with(tg_capture_route, head, args, nargsf, kwnames, 1);
            Py_DECREF(head);
            return tg_out_arg_checked(self, result, args, nargsf, kwnames);
        }
        /* The function's own vectorcall, as PyObject_Vectorcall finds it, minus that call's
         * result check: our caller checks the result we return (~35 instructions a call). */
        vectorcallfunc fn_call = PyVectorcall_Function(self->fn);
        result = fn_call != NULL ? fn_call(self->fn, args, nargsf, kwnames)
                                 : PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
        return tg_out_arg_checked(self, result, args, nargsf, kwnames);
    }
    head = Py_BuildValue("(OOO)", self->fn, self->name, self->dtype_from_out ? Py_True : Py_False);
    if (head == NULL)
        return NULL;
    result = tg_out_arg_call_with(tg_out_arg_slow_call, head, args, nargsf, kwnames, 1);
    Py_DECREF(head);
    return tg_out_arg_checked(self, result, args, nargsf, kwnames);
}

TG_ENTRY_VECTORCALL(tg_out_arg_vectorcall, tg_out_arg_call)

/* A new entry of `type` (WithOut, TensorMethod) calling `fn`, named `name`: its TgEntry fields
 * set, the others zero. */
static TgEntry *
tg_entry_new(PyTypeObject *type, PyObject *name, PyObject *fn, vectorcallfunc vectorcall)
{
    TgEntry *self;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "%.100s(): fn must be callable, not %.100s",
                     type->tp_name, Py_TYPE(fn)->tp_name);
        return NULL;
    }
    self = (TgEntry *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(fn);
    self->fn = fn;
    Py_INCREF(name);
    self->name = name;
    self->dict = NULL;
    self->vectorcall = vectorcall;
    return self;
}

/* WithOut(name, fn, dtype_from_out, takes_out=True) */
static PyObject *
tg_out_arg_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"name", "fn", "dtype_from_out", "takes_out", NULL};
    PyObject *name, *fn;
    int dtype_from_out, takes_out = 1;
    TgOutArg *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UOp|p:WithOut", keywords,
                                     &name, &fn, &dtype_from_out, &takes_out))
        return NULL;
    self = (TgOutArg *)tg_entry_new(type, name, fn, tg_out_arg_vectorcall);
    if (self == NULL)
        return NULL;
    self->dtype_from_out = (char)dtype_from_out;
    self->takes_out = (char)takes_out;
    self->in_place = PyUnicode_GET_LENGTH(name) > 1
                     && PyUnicode_READ_CHAR(name, PyUnicode_GET_LENGTH(name) - 1) == '_';
    return (PyObject *)self;
}

static int
tg_entry_traverse(TgEntry *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fn);
    Py_VISIT(self->name);
    Py_VISIT(self->dict);
    return 0;
}

static int
tg_entry_clear(TgEntry *self)
{
    Py_CLEAR(self->fn);
    Py_CLEAR(self->name);
    Py_CLEAR(self->dict);
    return 0;
}

static void
tg_entry_dealloc(TgEntry *self)
{
    PyObject_GC_UnTrack(self);
    tg_entry_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The name it is known by: __qualname__ as _out_arg.with_out copied it, else torch's name. */
static PyObject *
tg_out_arg_qualname(TgOutArg *self)
{
    PyObject *qualname = self->dict ? PyDict_GetItemString(self->dict, "__qualname__") : NULL;
    if (qualname == NULL)
        qualname = self->name;
    Py_INCREF(qualname);
    return qualname;
}

static PyObject *
tg_out_arg_repr(TgOutArg *self)
{
    PyObject *qualname = tg_out_arg_qualname(self), *repr;
    repr = PyUnicode_FromFormat("<function %S>", qualname);
    Py_DECREF(qualname);
    return repr;
}

/* Pickled by name, as a function is (pickle looks the name up in __module__). */
static PyObject *
tg_out_arg_reduce(TgOutArg *self, PyObject *Py_UNUSED(ignored))
{
    return tg_out_arg_qualname(self);
}

static PyMethodDef tg_out_arg_methods[] = {
    {"__reduce__", (PyCFunction)tg_out_arg_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}
};

static PyMemberDef tg_out_arg_members[] = {
    {"__out_arg_of__", T_OBJECT, offsetof(TgOutArg, fn), READONLY,
     "the wrapped function (what replay's routes map back to)"},
    {"name", T_OBJECT, offsetof(TgOutArg, name), READONLY, NULL},
    {"dtype_from_out", T_BOOL, offsetof(TgOutArg, dtype_from_out), READONLY, NULL},
    {"takes_out", T_BOOL, offsetof(TgOutArg, takes_out), READONLY, NULL},
    {"_autocast_policy", T_BYTE, offsetof(TgOutArg, autocast), 0,
     "its CPU autocast policy (tapegrad/_autocast.py; 0: none)"},
    {NULL, 0, 0, 0, NULL}
};

/* (entry) -> its inspect.Signature with PyTorch's keyword-only out=: computed on the first
 * inspect.signature(entry), not when the entry is made (an inspect.signature per out= function
 * was a tenth of `import tapegrad`).  Set by tapegrad/_public_calls.py. */
static PyObject *tg_out_arg_signature_hook = NULL;

static PyObject *
tg_out_arg_set_signature_hook(PyObject *hook)
{
    Py_INCREF(hook);
    Py_XSETREF(tg_out_arg_signature_hook, hook);
    Py_RETURN_NONE;
}

/* __signature__: the one set (or computed before), else, for an entry that takes out=, the
 * hook's; an entry without out= has none (inspect then follows __wrapped__). */
static PyObject *
tg_out_arg_get_signature(TgOutArg *self, void *Py_UNUSED(closure))
{
    PyObject *dict = PyObject_GenericGetDict((PyObject *)self, NULL), *sig;
    if (dict == NULL)
        return NULL;
    sig = PyDict_GetItemString(dict, "__signature__");
    if (sig != NULL) {
        Py_INCREF(sig);
    } else if (self->takes_out && tg_out_arg_signature_hook != NULL) {
        sig = PyObject_CallOneArg(tg_out_arg_signature_hook, (PyObject *)self);
        if (sig != NULL && PyDict_SetItemString(dict, "__signature__", sig) < 0)
            Py_CLEAR(sig);
    } else {
        PyErr_SetString(PyExc_AttributeError, "__signature__");
    }
    Py_DECREF(dict);
    return sig;
}

static int
tg_out_arg_set_signature(TgOutArg *self, PyObject *value, void *Py_UNUSED(closure))
{
    PyObject *dict = PyObject_GenericGetDict((PyObject *)self, NULL);
    int rc;
    if (dict == NULL)
        return -1;
    if (value == NULL) {
        rc = PyDict_DelItemString(dict, "__signature__");
        if (rc < 0 && PyErr_ExceptionMatches(PyExc_KeyError)) {
            PyErr_Clear();
            rc = 0;
        }
    } else {
        rc = PyDict_SetItemString(dict, "__signature__", value);
    }
    Py_DECREF(dict);
    return rc;
}

static PyGetSetDef tg_out_arg_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"__signature__", (getter)tg_out_arg_get_signature, (setter)tg_out_arg_set_signature, NULL,
     NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PyTypeObject TgOutArg_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tapegrad._ops_inplace.WithOut",
    .tp_basicsize = sizeof(TgOutArg),
    .tp_dealloc = (destructor)tg_entry_dealloc,
    .tp_vectorcall_offset = offsetof(TgOutArg, vectorcall),
    .tp_repr = (reprfunc)tg_out_arg_repr,
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A public function of tapegrad: PyTorch's keyword-only out= where PyTorch has it "
              "(tapegrad/_out_arg.py), and the meta device's dispatch (tapegrad/_public_calls.py).",
    .tp_traverse = (traverseproc)tg_entry_traverse,
    .tp_clear = (inquiry)tg_entry_clear,
    .tp_methods = tg_out_arg_methods,
    .tp_members = tg_out_arg_members,
    .tp_getset = tg_out_arg_getset,
    .tp_dictoffset = offsetof(TgOutArg, dict),
    .tp_new = tg_out_arg_new,
};

/* The type, readied, with the Python-level handler of calls that name out. */
static PyObject *
tg_out_arg_type(PyObject *slow_call)
{
    if (PyType_Ready(&TgOutArg_Type) < 0)
        return NULL;
    Py_INCREF(slow_call);
    Py_XDECREF(tg_out_arg_slow_call);
    tg_out_arg_slow_call = slow_call;
    Py_INCREF(&TgOutArg_Type);
    return (PyObject *)&TgOutArg_Type;
}

/* -- TensorMethod: a method of Tensor --------------------------------------------------------
 *
 * TensorMethod(name, fn) is what Tensor's class holds for each of its Python-level and compiled
 * methods (tapegrad/_public_calls.py install_methods): `t.mul(y)` calls fn(t, y) through
 * vectorcall with the caller's own vector (a method descriptor, as a function is: no bound
 * method is made for a call), and only a call that raised a TypeError goes to method_error,
 * which words it as PyTorch's method does.  The function's own messages are a function's
 * ("mul(): argument 'other' (position 2)", "got (Tensor, str)"): the same op serves
 * tapegrad.mul(t, y) and t.mul(y), and only the failed call learns which it was. */
typedef struct {
    PyObject_HEAD
    PyObject *fn;               /* (TgEntry's fields, first): fn(self, *args, **kwargs) */
    PyObject *name;
    PyObject *dict;
    vectorcallfunc vectorcall;
    char autocast;
    char refuses_out;           /* fn takes out= as the function, which PyTorch's method has not */
} TgMethod;

/* PyTorch's descriptor errors for a method called through the class without a tensor. */
static PyObject *
tg_method_bad_self(TgMethod *self, PyObject *first)
{
    if (first == NULL)
        PyErr_Format(PyExc_TypeError,
                     "unbound method TensorBase.%U() needs an argument",
                     self->name);
    else
        PyErr_Format(PyExc_TypeError,
                     "descriptor '%U' for 'torch._C.TensorBase' objects doesn't apply to a "
                     "'%s' object", self->name, Py_TYPE(first)->tp_name);
    return NULL;
}

static inline PyObject *
tg_method_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    TgMethod *self = (TgMethod *)callable;
    vectorcallfunc fn_call = PyVectorcall_Function(self->fn);
    PyObject *result;
    if (tg_dispatches_to_subclass(args, nargsf, kwnames))
        return tg_subclass_call(callable, args, nargsf, kwnames);
    /* Tensor.add(2.0, t) is refused, as PyTorch's method descriptor refuses a self that is no
     * tensor: fn would take 2.0 as its input and compute 2.0 + t. */
    if (PyVectorcall_NARGS(nargsf) == 0 || !PyObject_TypeCheck(args[0], tg_tensor_base_type))
        return tg_method_bad_self(self, PyVectorcall_NARGS(nargsf) ? args[0] : NULL);
    if (kwnames != NULL && self->refuses_out && tg_kwnames_name_out(kwnames)) {
        PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument 'out'",
                     self->name);
        return NULL;
    }
    if (self->autocast && tg_autocast_on)
        return tg_autocast_call(callable, self->autocast, args, nargsf, kwnames);
    result = fn_call != NULL ? fn_call(self->fn, args, nargsf, kwnames)
                             : PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    if (result != NULL || tg_method_error == NULL || !PyErr_ExceptionMatches(PyExc_TypeError))
        return result;
    return tg_out_arg_judged(tg_method_error, callable, self->name, NULL, args, nargsf, kwnames);
}

TG_ENTRY_VECTORCALL(tg_method_vectorcall, tg_method_call)

/* TensorMethod(name, fn, refuses_out=False) */
static PyObject *
tg_method_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"name", "fn", "refuses_out", NULL};
    PyObject *name, *fn;
    int refuses_out = 0;
    TgMethod *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UO|p:TensorMethod", keywords, &name, &fn,
                                     &refuses_out))
        return NULL;
    self = (TgMethod *)tg_entry_new(type, name, fn, tg_method_vectorcall);
    if (self == NULL)
        return NULL;
    self->refuses_out = (char)refuses_out;
    return (PyObject *)self;
}

/* t.mul: a bound method, as a function's __get__ gives; Tensor.mul: the method itself. */
static PyObject *
tg_method_get(PyObject *self, PyObject *obj, PyObject *Py_UNUSED(type))
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *
tg_method_repr(TgMethod *self)
{
    return PyUnicode_FromFormat("<function Tensor.%U>", self->name);
}

/* Pickled by name, as a function is: Tensor.<name> of its __module__. */
static PyObject *
tg_method_reduce(TgMethod *self, PyObject *Py_UNUSED(ignored))
{
    return PyUnicode_FromFormat("Tensor.%U", self->name);
}

static PyMethodDef tg_method_methods[] = {
    {"__reduce__", (PyCFunction)tg_method_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}
};

static PyMemberDef tg_method_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(TgMethod, fn), READONLY,
     "the method's function (its signature is the method's)"},
    {"name", T_OBJECT, offsetof(TgMethod, name), READONLY, NULL},
    {"_autocast_policy", T_BYTE, offsetof(TgMethod, autocast), 0,
     "its CPU autocast policy (tapegrad/_autocast.py; 0: none)"},
    {NULL, 0, 0, 0, NULL}
};

static PyTypeObject TgMethod_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tapegrad._ops_inplace.TensorMethod",
    .tp_basicsize = sizeof(TgMethod),
    .tp_dealloc = (destructor)tg_entry_dealloc,
    .tp_vectorcall_offset = offsetof(TgMethod, vectorcall),
    .tp_repr = (reprfunc)tg_method_repr,
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A method of tapegrad.Tensor: its function, and PyTorch's wording of a method's "
              "argument errors (tapegrad/_public_calls.py).",
    .tp_traverse = (traverseproc)tg_entry_traverse,
    .tp_clear = (inquiry)tg_entry_clear,
    .tp_methods = tg_method_methods,
    .tp_members = tg_method_members,
    .tp_getset = tg_out_arg_getset,
    .tp_descr_get = tg_method_get,
    .tp_dictoffset = offsetof(TgMethod, dict),
    .tp_new = tg_method_new,
};

/* The type TensorMethod's calls require of self (TensorBase), given before any call. */
static PyObject *
tg_method_type(PyObject *tensor_base)
{
    if (!PyType_Check(tensor_base)) {
        PyErr_SetString(PyExc_TypeError, "expected the tensor base type");
        return NULL;
    }
    if (PyType_Ready(&TgMethod_Type) < 0)
        return NULL;
    Py_INCREF(tensor_base);
    Py_XSETREF(tg_tensor_base_type, (PyTypeObject *)tensor_base);
    Py_INCREF(&TgMethod_Type);
    return (PyObject *)&TgMethod_Type;
}

#endif
