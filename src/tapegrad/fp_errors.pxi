# ---------------------------------------------------------------------------------------------
# IEEE results without warnings.  numpy reports overflow to inf, 0/0 = nan, inf - inf and the like
# as RuntimeWarnings; PyTorch returns those values silently.  Every numpy call of the core that can
# produce one runs inside `with IeeeResults():`, which is numpy's errstate(all="ignore").
#
# Why not np.errstate itself: it costs about 2 us per use (a Python object, keyword parsing and a
# new error-state object each time), and an MLP training step enters it several times.  Since
# numpy 2.0 the error state is one context variable holding an immutable object; this guard sets
# that variable to an "ignore all" object derived once from the state it finds (so a user's
# np.setbufsize or np.seterrcall stays in force) and resets it on exit, through the C API.
# With numpy 1.x, which keeps the state elsewhere, it falls back to np.errstate.
# ---------------------------------------------------------------------------------------------

cimport cython
from cpython.contextvars cimport PyContextVar_Set, PyContextVar_Reset, get_value


def _numpy_error_state():
    """numpy's error-state context variable and the function that builds a state from the
    current one with some fields changed, or (None, None) where numpy keeps the state elsewhere."""
    try:
        from numpy._core import _ufunc_config
        from numpy._core._multiarray_umath import _make_extobj
        return _ufunc_config._extobj_contextvar, _make_extobj
    except (ImportError, AttributeError):
        return None, None


cdef object NP_ERROR_STATE
cdef object NP_MAKE_ERROR_STATE
NP_ERROR_STATE, NP_MAKE_ERROR_STATE = _numpy_error_state()

# The last "ignore all" state built, and the state it was built from.
cdef object ignore_all_state = None
cdef object ignore_all_source = None


cdef object ignore_all_for(object current):
    """The "ignore all" state for `current` (itself if it already is one this guard built)."""
    global ignore_all_state, ignore_all_source
    if current is ignore_all_state:                  # nested guards: nothing to change
        return current
    if current is not ignore_all_source:
        ignore_all_state = NP_MAKE_ERROR_STATE(all="ignore")
        ignore_all_source = current
    return ignore_all_state


@cython.final
@cython.freelist(8)
cdef class IeeeResults:
    """Context manager: numpy's floating-point errors are ignored inside (np.errstate(all=
    "ignore")), at the cost of two context-variable operations."""

    def __enter__(self):
        if NP_ERROR_STATE is None:
            self.fallback = np.errstate(all="ignore")
            self.fallback.__enter__()
            return None
        self.token = PyContextVar_Set(NP_ERROR_STATE,
                                      ignore_all_for(get_value(NP_ERROR_STATE)))
        return None

    def __exit__(self, *exc_info):
        if self.fallback is not None:
            self.fallback.__exit__(*exc_info)
            self.fallback = None
        elif self.token is not None:
            PyContextVar_Reset(NP_ERROR_STATE, self.token)
            self.token = None
        return None
