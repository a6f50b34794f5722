# ---------------------------------------------------------------------------------------------
# Complex tensors: the core's one door to tapegrad/_complex.py.
#
# Most compiled ops are real-valued: their VJPs multiply by derivatives without conjugating, so a
# complex operand must not reach them.  The elementwise entry points hand a complex operand, from
# their slow path only (the real fast path pays nothing), to the compiled complex ops of
# ops_complex.pxi, which fall back to COMPLEX_OPS (installed by _complex.py) for the ops they do
# not have; other entry points call COMPLEX_OPS directly.  Every other compiled op is guarded at
# record time (record_op): once any complex tensor exists, a record whose output or input is
# complex must be an op marked in COMPLEX_SAFE (the complex ops themselves, matmul, whose VJP
# conjugates, and the ops whose VJP is linear with real coefficients: shape ops, sums, indexing,
# casts) or an autograd.Function record (how _complex.py records); anything else raises instead
# of returning a silently wrong gradient.
# ---------------------------------------------------------------------------------------------

cdef object COMPLEX_OPS = None          # _complex.dispatch(name, args): the complex op `name`
cdef bint COMPLEX_IN_USE = False        # set once a complex tensor was made: record_op checks
cdef char COMPLEX_SAFE[MAX_OPS]         # opcodes whose VJP is right for complex values


def _install_complex_ops(dispatch, safe_names):
    """Called once by tapegrad/_complex.py: `dispatch(name, *args)` runs the complex op `name`;
    `safe_names` are the grad_fn names of compiled ops whose VJP is right for complex values."""
    global COMPLEX_OPS
    COMPLEX_OPS = dispatch
    cdef int code
    for code in range(len(OP_NAMES)):
        # (the compiled complex ops, ops_complex.pxi, marked themselves when registered)
        COMPLEX_SAFE[code] = COMPLEX_SAFE[code] or OP_NAMES[code] in safe_names


def _complex_in_use():
    """Called when a complex tensor is made: from now on record_op checks complex records."""
    global COMPLEX_IN_USE
    COMPLEX_IN_USE = True


cdef object complex_call(str name, tuple args):
    """Run the complex op `name` of _complex.py on args."""
    if COMPLEX_OPS is None:
        import tapegrad._complex                        # installs COMPLEX_OPS
    return COMPLEX_OPS(name, *args)
