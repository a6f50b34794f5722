# ---------------------------------------------------------------------------------------------
# Differentiable VJPs, for backward(create_graph=True) / autograd.grad(create_graph=True).
#
# With create_graph the sweep's adjoints are tensors and each record's VJP is computed with
# recorded tapegrad ops (under grad mode), so the gradients have a graph of their own and can be
# differentiated again, to any order.  Each supported op has a "graph VJP" next to its compiled
# array VJP (GRAPH_VJP, indexed by opcode like OP_VJP); it re-expresses the same formula with
# tensors:
#   - the adjoint G (a tensor, possibly with a graph);
#   - an input's value as the tensor that is that input's record's output (node_tensor): the
#     live tensor, or (if it died) a new tensor on the saved array that becomes that record's
#     output again, so gradients of the gradient reach the original graph; or the view an
#     in-place op on it wrote that output into (_note_written_view);
#   - inputs that need no gradient (-1) as constants.
# Records without a graph VJP raise NotImplementedError naming the op, rather than returning a
# gradient whose own derivative would silently be wrong.
#
# Every differentiable op has one (_graph_vjp_missing() lists none), and the ops the graph VJPs
# use are themselves among them, so gradients of any order work.  A graph VJP gives the same
# values as the compiled VJP; at ties and kinks it keeps the compiled VJP's (PyTorch's)
# conventions, and the masks, indices and random draws it uses are constants.
# ---------------------------------------------------------------------------------------------


ctypedef object (*graph_vjp_fn)(Py_ssize_t i, Record* r, object G, char* want)

cdef graph_vjp_fn GRAPH_VJP[MAX_OPS]


cdef object leaf_made_in(Record* rec):
    """_core's leaf_grad_dtype, read through the record's extra object."""
    return None if rec.extra == NULL else getattr(<object>rec.extra, "leaf_dtype", None)


cdef object node_tensor(Py_ssize_t k, object value):
    """The tensor that is record k's output: the live one, or a new one on `value` (the array
    saved for the value of that output), made record k's output again; or the view an in-place
    op on it wrote that output into, while it lives: PyTorch's node saved that view as its
    result, so the gradient of the gradient flows through the view's own history."""
    cdef TensorBase t
    live = None
    if TAPE.recs[k].extra != NULL:
        written = getattr(<object>TAPE.recs[k].extra, "written_view", None)
        if written is not None:
            live = written()
    if live is None and TAPE.recs[k].out != NULL:
        live = <object>TAPE.recs[k].out
    if value is not None and leaf_made_in(&TAPE.recs[k]) is not None:
        # a LEAF record its tensor left for another dtype (_core's split_accumulator): the
        # graph's operand is the value saved in the old dtype, on this record, as PyTorch's
        # saved view of the old storage still leads to the old accumulator
        t = wrap(nd(value))
        t._node = k
        t._requires_grad = True
        TAPE.recs[k].refcnt += 1
        return t
    if live is not None:
        return saved_on_node(<TensorBase>live, value)
    if value is None:
        raise RuntimeError(f"tapegrad: create_graph needs the value of a "
                           f"{OP_NAMES[TAPE.recs[k].op]} output whose tensor no longer exists "
                           "and that was not saved")
    t = wrap(nd(value))
    t._node = k
    t._requires_grad = True
    TAPE.recs[k].refcnt += 1
    TAPE.recs[k].out = <PyObject*>t
    return t


cdef object saved_on_node(TensorBase live, object value):
    """`live` as the graph operand for a value saved for it, unless that value is another array
    of its shape and dtype: a saved-tensor hook's unpacked copy, which the live tensor's later
    in-place writes (under no_grad, or through .data) did not reach.  PyTorch's saved variable
    is then the unpacked value on the node's edge: a tensor on `value` attached to live's node,
    so the gradient of the gradient reads the values the forward saw and still flows there."""
    cdef TensorBase t
    a = live._array
    if value is None or value is a or not cnp.PyArray_Check(value) or live._node < 0 \
            or value.dtype != a.dtype or value.shape != a.shape:
        return live
    t = wrap(value)
    t._node = live._node
    t._requires_grad = True
    TAPE.recs[live._node].refcnt += 1       # (not the record's output: `live` still is)
    return t


cdef inline object saved_value(Record* r, int j):
    return <object>r.saved[j] if r.saved[j] != NULL else None


cdef object in_value(Record* r, int j, object value):
    """Input j of record r as a graph operand: its record's output tensor, or a constant (a
    Python scalar stays one) when no gradient flows to it.  A no_grad view of a tensor that
    requires grad gets no gradient but still requires grad (PyTorch's saved variable does), so
    the gradient computed from it does too: a stand-in leaf with its value (fuzz 60645360)."""
    cdef Py_ssize_t k = rec_inputs(r)[j]
    cdef TensorBase stand_in
    if k >= 0:
        return node_tensor(k, value)
    if j < MAX_IN and r.flags & (RF_NO_GRAD_VIEW_INPUT << j) and value is not None \
            and not isinstance(value, TensorBase):
        stand_in = wrap(nd(value))
        stand_in._requires_grad = True
        return stand_in
    if value is None or isinstance(value, (int, float, complex, TensorBase)):
        return value
    return wrap(nd(value))


cdef inline object own_output(Py_ssize_t i, Record* r, int j):
    """Record i's own output as a graph operand (ops that save their output)."""
    return node_tensor(i, saved_value(r, j))


cdef object t_sum_to(object G, object shape):
    """Sum tensor G over broadcast dims down to `shape` (recorded)."""
    cdef tuple gs = tuple(G.shape)
    shape = tuple(shape)
    if gs == shape:
        return G
    cdef Py_ssize_t lead = len(gs) - len(shape), i
    axes = list(range(lead))
    for i in range(len(shape)):
        if shape[i] == 1 and gs[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        G = reduce_op(OP_SUM, <TensorBase>G, tuple(axes), True)
    # PyTorch's sum_to views only when leading dims were summed away: a keepdim sum alone is
    # already of the shape (and its grad_fn stays SumBackward1)
    if lead == 0:
        return G
    return reshape_to(<TensorBase>G, shape)


cdef object t_cast(object G, object dt):
    if G is None or dt is None or (<TensorBase>G)._array.dtype == dt:
        return G
    if dtype_kind(<cnp.ndarray>(<TensorBase>G)._array) == c'c' and dt.kind != "c":
        G = complex_call("real", (G,))         # a real input of a complex op: the real part
    return convert(<TensorBase>G, dt, False)


cdef object t_fit(object G, object shape, object dt):
    if G is None:
        return None
    if shape is not None:
        G = t_sum_to(G, shape)
    return t_cast(G, dt)


cdef tuple t_fit_binary(Record* r, object ga, object gb):
    if r.aux == NULL:
        return (ga, gb)
    cdef tuple aux = <tuple>r.aux
    return (t_fit(ga, aux[0], aux[1]), t_fit(gb, aux[2], aux[3]))


cdef object t_conj(object X):
    """conj(X) of a tensor (recorded) or a number; a real one passes unchanged."""
    if isinstance(X, TensorBase):
        if dtype_kind(<cnp.ndarray>(<TensorBase>X)._array) == c'c':
            return complex_unary("conj", <TensorBase>X)
        return X
    return conj_of(X)

cdef inline object g_mul(object a, object b):
    return binary_op(OP_MUL, a, b)


cdef inline object g_div(object a, object b):
    return binary_op(OP_DIV, a, b)


cdef inline object g_add(object a, object b):
    return binary_op(OP_ADD, a, b)


cdef inline object g_sub(object a, object b):
    return binary_op(OP_SUB, a, b)


cdef inline object g_neg(object a):
    return unary_op(OP_NEG, <TensorBase>a)


cdef inline object mask_like(object cond, object G):
    """A constant tensor: 1 where cond, else 0, in G's dtype."""
    return wrap(nd(cond).astype((<TensorBase>G)._array.dtype))


# -- values derived from the inputs ------------------------------------------------------------
# Some records save a value derived from their inputs (var saves x - mean, layer_norm xhat and
# rstd, the regression losses input - target) rather than the inputs themselves.  Their graph
# VJPs recompute that value with recorded ops (F below) for its derivative, and take its value
# from the saved array, bit for bit: `exact(saved, F)` = saved + (F - F.detach()).  When the input
# tensor no longer exists, F is computed on a stand-in ("phantom") tensor of record k: it feeds
# the recorded ops with index k as their input but is never made record k's output, and is
# released (no longer referring to k) before the graph VJP returns.  F's derivative must not
# depend on the stand-in's value: it is linear in the input, or invariant to a shift of it (its
# value is then the saved centered input).

cdef object exact(object value, object F):
    """A tensor with the value of array `value` and the graph (the derivatives) of tensor F."""
    V = wrap(nd(value))
    if F is None or not (<TensorBase>F)._requires_grad:
        return V
    FA = (<TensorBase>F)._array
    if not np.logical_and.reduce(np.isfinite(FA), axis=None):
        # F - F.detach() would be nan where F is not finite, and masking it would drop F's
        # derivative there (a NaN input's mse second derivative is still 2): record V directly
        # as a gradient-identity (clone) node of F instead
        if FA.shape == (<TensorBase>V)._array.shape and FA.dtype == (<TensorBase>V)._array.dtype:
            record_from(OP_CLONE, <TensorBase>V, (F,))
            return V
        D = where(wrap(nd(np.isfinite(FA))), g_sub(F, wrap(FA)), 0)
        return g_add(D, V)
    D = g_sub(F, wrap(FA))                              # 0, with F's derivative
    return g_add(D, V)


cdef object input_or_phantom(Record* r, int j, object value, list phantoms):
    """Input j of record r as a graph operand: its live tensor, a phantom on `value` (whose
    derivative-only role is described above) when the tensor is gone, None without gradient."""
    cdef Py_ssize_t k = rec_inputs(r)[j]
    cdef TensorBase t
    if k < 0:
        return None
    if TAPE.recs[k].out != NULL:
        return <object>TAPE.recs[k].out
    t = wrap(nd(value))
    t._node = k
    t._requires_grad = True
    TAPE.recs[k].refcnt += 1
    phantoms.append(t)
    return t


cdef int release_phantoms(list phantoms) except -1:
    """Detach the phantoms from their records (the recorded ops keep their own references)."""
    cdef TensorBase t
    cdef Py_ssize_t k
    for p in phantoms:
        t = <TensorBase>p
        k = t._node
        if k >= 0:
            t._node = -1
            t._requires_grad = False
            TAPE.decref(k)
    del phantoms[:]
    return 0


cdef inline object g_where(object cond, object a, object b):
    """where(cond, a, b) with a constant (numpy) condition."""
    return where(wrap(nd(cond)), a, b)


cdef object t_unreduce(object G, tuple aux):
    """A reduction's adjoint with the reduced dims re-inserted (size 1), as unreduce."""
    shape, axes, keepdim = aux[0], aux[1], aux[2]
    if not keepdim and axes:
        return reshape_to(<TensorBase>G, keep_shape(<tuple>shape, <tuple>axes))
    return G


cdef object own_output_kept(Py_ssize_t i, Record* r, int j, tuple aux):
    """A reduction's own output (saved in slot j with the reduced dims kept) as a graph operand
    with the reduced dims kept."""
    outk = saved_value(r, j)
    shape, axes, keepdim = aux[0], aux[1], aux[2]
    if keepdim or not axes:
        return node_tensor(i, outk)
    red = tuple([shape[a] for a in range(len(shape)) if a not in axes])
    Y = node_tensor(i, None if outk is None else outk.reshape(red))
    return reshape_to(<TensorBase>Y, keep_shape(<tuple>shape, <tuple>axes))


cdef object zeros_for(object shape, object dt):
    return wrap(np.zeros(tuple(shape), dtype=dt))


# -- gradients that read an input with derivative zero ----------------------------------------
# PyTorch's backward formulas of piecewise-linear ops read an input (abs: grad * x.sgn(); relu:
# threshold_backward(grad, result, 0); leaky_relu_backward(grad, x, slope)), so under create_graph
# their gradient requires grad even where the adjoint does not, and differentiating it again gives
# zeros, not "does not require grad".  A formula with a constant mask would lose that link:
# abs-like ops multiply by the recorded sign(x) (derivative zero, as sgn's), mask-like ones pass
# their gradient through a record that also reads x (through_input).

cdef object vjp_through_input(Record* r, object g):
    return (g if needs_grad(r, 0) else None, np.zeros_like(g) if needs_grad(r, 1) else None)


cdef int OP_THRESHOLD_BACKWARD = register_op("ThresholdBackwardBackward0", vjp_through_input)
cdef int OP_LEAKY_RELU_BACKWARD = register_op("LeakyReluBackwardBackward0", vjp_through_input)
cdef int OP_HARDTANH_BACKWARD = register_op("HardtanhBackwardBackward0", vjp_through_input)
cdef int OP_HARDSHRINK_BACKWARD = register_op("HardshrinkBackwardBackward0", vjp_through_input)
cdef int OP_SOFTSHRINK_BACKWARD = register_op("SoftshrinkBackwardBackward0", vjp_through_input)
# nll_loss's gradient is the output gradient placed at the targets: PyTorch's node still reads
# the input, so the gradient requires grad with it (a second derivative is zeros, not an error)
cdef int OP_NLL_BACKWARD = register_op("NllLossBackwardBackward0", vjp_through_input)
cdef int OP_NLL2D_BACKWARD = register_op("NllLoss2DBackwardBackward0", vjp_through_input)

# PyTorch's layer_norm double backward (NativeLayerNormBackwardBackward0) is one node reading the
# input and the weight: every gradient it returns requires grad, and the weight's and bias's
# have no derivative through them (autograd.grad gives None, not zeros).

cdef object vjp_link_without_gradient(Record* r, object g):
    return (g if needs_grad(r, 0) else None, None)


cdef int OP_LAYER_NORM_BACKWARD = register_op("NativeLayerNormBackwardBackward0",
                                              vjp_link_without_gradient)
# batch_norm's in evaluation (NativeBatchNormBackwardBackward0) likewise: the input's gradient,
# G * weight * rstd, requires grad with the input without a derivative to it.
cdef int OP_BATCH_NORM_BACKWARD = register_op("NativeBatchNormBackwardBackward0",
                                              vjp_link_without_gradient)


# A Python-level op whose PyTorch node saves an input that none of its records' VJPs reads
# (_guard_saved_version: pooling and padding written as compositions): PyTorch's gradients from
# that node all require grad with the input under create_graph, with derivative zero to it (a
# penalty on them gives the input zeros).  The adjoint entering the op's last record passes
# through this link to the input, so every gradient computed from it has a graph.

cdef object vjp_zero_to_read_input(Record* r, object g):
    shape, dt = <tuple>r.aux
    return (g if needs_grad(r, 0) else None, np.zeros(shape, dtype=dt) if needs_grad(r, 1) else None)


cdef int OP_READS_INPUT = register_op("ReadsInputBackward0", vjp_zero_to_read_input)


cdef object gv_zero_to_read_input(Py_ssize_t i, Record* r, object G, char* want):
    shape, dt = <tuple>r.aux
    return (G if want[0] else None, zeros_for(shape, dt) if want[1] else None)


cdef object linked_to_read_input(object G, TensorBase x):
    """Adjoint G as the output of an OP_READS_INPUT record that also reads x (see above); G
    itself when it already requires grad (its gradients then do) or x does not.  A Function
    record's adjoints come as a list (its outputs' gradients, then their records): each one."""
    cdef Py_ssize_t inp[2]
    if type(G) is list:
        return [linked_to_read_input(e, x) for e in <list>G]
    if not isinstance(G, TensorBase) or (<TensorBase>G)._requires_grad or not x._requires_grad:
        return G
    cdef TensorBase res = wrap((<TensorBase>G)._array)
    begin_record(2)                     # (the sweep pins the tape: indices do not move)
    inp[0] = node_for_input(<TensorBase>G)
    inp[1] = node_for_input(x)
    cdef Record* link = record_op(OP_READS_INPUT, res, 2, inp)
    keep(&link.aux, (tuple(x._array.shape), x._array.dtype))
    return res


cdef object gv_link_without_gradient(Py_ssize_t i, Record* r, object G, char* want):
    return (G if want[0] else None, None)


cdef object linked_without_gradient(int op, object V, Record* r):
    """V as `through_input` makes it, linked to the first of r's inputs that has a gradient,
    with no derivative through that link; V itself when it already requires grad."""
    cdef int j
    if V is None or (<TensorBase>V)._requires_grad:
        return V
    for j in range(r.n_in):
        if rec_inputs(r)[j] >= 0:
            return through_input(op, V, r, j)
    return V


# The backward formula a piecewise_where record's gradient goes through (its grad_fn under
# create_graph); hardsigmoid's PyTorch does not differentiate (its NotImplemented node raises).
cdef dict PIECEWISE_BACKWARD = {"hardtanh": OP_HARDTANH_BACKWARD,
                                "threshold": OP_THRESHOLD_BACKWARD,
                                "hardshrink": OP_HARDSHRINK_BACKWARD,
                                "softshrink": OP_SOFTSHRINK_BACKWARD,
                                "hardsigmoid": OP_NOT_IMPLEMENTED}


cdef object gv_through_input(Py_ssize_t i, Record* r, object G, char* want):
    return (G if want[0] else None,
            zeros_for(G.shape, (<TensorBase>G)._array.dtype) if want[1] else None)


cdef object through_input(int op, object V, Record* r, int j):
    """Gradient V (of input j of record r, so of its shape and dtype) as the output of an `op`
    record that also reads input j, with derivative zero."""
    cdef Py_ssize_t inp[2]
    if rec_inputs(r)[j] < 0:
        return V
    cdef TensorBase res = wrap((<TensorBase>V)._array)     # V is this graph VJP's own
    begin_record(2)                     # (the sweep pins the tape: indices do not move)
    inp[0] = node_for_input(<TensorBase>V)
    inp[1] = rec_inputs(r)[j]
    cdef Record* link = record_op(op, res, 2, inp)
    if op == OP_NOT_IMPLEMENTED:        # (its VJP names the formula it does not differentiate)
        keep(&link.aux, "aten::hardsigmoid_backward")
    return res


cdef object through_own_output(int op, object V, Py_ssize_t i):
    """through_input's link to record i's own output instead of an input: PyTorch's relu
    backward is threshold_backward(grad, result, 0), so the second pass goes through the result
    and a hook on it sees that pass's (zero) gradient (fuzz seed 60646768's class)."""
    cdef Py_ssize_t inp[2]
    cdef TensorBase res = wrap((<TensorBase>V)._array)     # V is this graph VJP's own
    begin_record(2)                     # (the sweep pins the tape: indices do not move)
    inp[0] = node_for_input(<TensorBase>V)
    inp[1] = i
    record_op(op, res, 2, inp)
    return res


# -- elementwise ---------------------------------------------------------------------------------

cdef object gv_add(Py_ssize_t i, Record* r, object G, char* want):
    return t_fit_binary(r, G if want[0] else None, G if want[1] else None)

cdef object gv_sub(Py_ssize_t i, Record* r, object G, char* want):
    return t_fit_binary(r, G if want[0] else None, g_neg(G) if want[1] else None)

cdef object gv_mul(Py_ssize_t i, Record* r, object G, char* want):
    ga = g_mul(G, in_value(r, 1, saved_value(r, 1))) if want[0] else None
    gb = g_mul(G, in_value(r, 0, saved_value(r, 0))) if want[1] else None
    return t_fit_binary(r, ga, gb)

cdef object gv_div(Py_ssize_t i, Record* r, object G, char* want):
    B = in_value(r, 1, saved_value(r, 1))
    ga = g_div(G, B) if want[0] else None
    gb = None
    if want[1]:
        A = in_value(r, 0, saved_value(r, 0))
        gb = g_mul(g_neg(G), g_div(g_div(A, B), B))      # as vjp_div: -grad * ((a / b) / b)
    return t_fit_binary(r, ga, gb)

cdef object gv_pow(Py_ssize_t i, Record* r, object G, char* want):
    A = in_value(r, 0, saved_value(r, 0))
    E = in_value(r, 1, saved_value(r, 1))
    EV = (<TensorBase>E)._array if isinstance(E, TensorBase) else E
    ga = gb = None
    if want[0]:
        # e * a**(e-1), 0 where e == 0 (PyTorch's convention)
        if isinstance(E, (int, float)):
            if E == 0:
                ga = wrap(np.zeros(tuple(G.shape), (<TensorBase>G)._array.dtype))
            else:
                ga = g_mul(G, g_mul(E, binary_op(OP_POW, A, E - 1)))
        else:
            ga = where(wrap(nd(EV == 0)), 0,
                       g_mul(G, g_mul(E, binary_op(OP_POW, A, g_sub(E, 1)))))
    if want[1]:
        # grad * (a**e * log(a), 0 where a == 0 and e >= 0): PyTorch's pow_backward_exponent,
        # grad outside the where, so the masked-out a**e * log(0) still meets the derivative
        # (0 * -inf): second derivatives at a == 0 are NaN as PyTorch's (fuzz 60661280)
        out = own_output(i, r, 2)
        if isinstance(A, (int, float)):
            log_a = math.log(A) if A > 0 else (-math.inf if A == 0 else math.nan)
            gb = g_mul(out, log_a)
            if A == 0:
                gb = where(wrap(nd(EV >= 0)), 0, gb)
        else:
            AV = (<TensorBase>A)._array
            gb = where(wrap(nd((AV == 0) & (EV >= 0))), 0,
                       g_mul(out, unary_op(OP_LOG, <TensorBase>A)))
        gb = g_mul(G, gb)
    return t_fit_binary(r, ga, gb)

cdef object gv_neg(Py_ssize_t i, Record* r, object G, char* want):
    return g_neg(G)

cdef object gv_exp(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, own_output(i, r, 0))

cdef object gv_log(Py_ssize_t i, Record* r, object G, char* want):
    return g_div(G, in_value(r, 0, saved_value(r, 0)))

# tanh's and sigmoid's gradients under create_graph are one record each, PyTorch's
# tanh_backward(grad, y) / sigmoid_backward(grad, y) (TanhBackwardBackward0 over the gradient's
# node and the output's node): the eager kernel's value (one rounding of 1 - y*y; (g*(1-y))*y) and
# derivatives.yaml's formulas for both operands.

cdef object vjp_tanh_backward(Record* r, object g):
    """out = G * (1 - Y*Y): dG = g * (1 - Y*Y), dY = g * (-2 * Y * G)."""
    G = <object>r.saved[0]
    Y = <object>r.saved[1]
    return (ew(TG_TANH_GRAD, g, Y) if needs_grad(r, 0) else None,
            nd(g * ((-2 * Y) * G)) if needs_grad(r, 1) else None)


cdef object vjp_sigmoid_backward(Record* r, object g):
    """out = G * (1 - Y) * Y: dG = g * (1 - Y) * Y, dY = g * (G * (1 - 2 * Y))."""
    G = <object>r.saved[0]
    Y = <object>r.saved[1]
    return (ew(TG_SIGMOID_GRAD, g, Y) if needs_grad(r, 0) else None,
            nd(g * (G * (-2 * Y + 1))) if needs_grad(r, 1) else None)


cdef int OP_TANH_BACKWARD = register_op("TanhBackwardBackward0", vjp_tanh_backward)
cdef int OP_SIGMOID_BACKWARD = register_op("SigmoidBackwardBackward0", vjp_sigmoid_backward)


cdef object activation_backward(int op, object G, object Y):
    """tanh_backward / sigmoid_backward(G, Y) as a graph operand (one record)."""
    GA = (<TensorBase>G)._array
    YA = (<TensorBase>Y)._array
    cdef TensorBase res = wrap(ew(TG_TANH_GRAD if op == OP_TANH_BACKWARD else TG_SIGMOID_GRAD,
                                  GA, YA))
    cdef Record* b = record_from(op, res, (G, Y))
    if b != NULL:
        save_value(b, 0, GA, G)
        save_value(b, 1, YA, Y)
    return res


cdef object gv_activation_backward(Py_ssize_t i, Record* r, object G2, char* want):
    G = in_value(r, 0, saved_value(r, 0))
    Y = in_value(r, 1, saved_value(r, 1))
    gg = activation_backward(r.op, G2, Y) if want[0] else None
    if not want[1]:
        return (gg, None)
    if r.op == OP_TANH_BACKWARD:
        return (gg, g_mul(G2, g_mul(g_mul(Y, -2), G)))
    return (gg, g_mul(G2, g_mul(G, binary_op(OP_ADD, g_mul(Y, -2), 1))))


cdef object gv_tanh(Py_ssize_t i, Record* r, object G, char* want):
    return activation_backward(OP_TANH_BACKWARD, G, own_output(i, r, 0))

cdef object gv_sigmoid(Py_ssize_t i, Record* r, object G, char* want):
    return activation_backward(OP_SIGMOID_BACKWARD, G, own_output(i, r, 0))

cdef object gv_relu(Py_ssize_t i, Record* r, object G, char* want):
    # the eager kernel's y <= 0 ? 0 : g: a NaN output passes the gradient, as PyTorch's
    return through_own_output(OP_THRESHOLD_BACKWARD,
                              g_where(np.logical_not(nd(<object>r.saved[0]) <= 0), G, 0), i)

cdef object gv_sqrt(Py_ssize_t i, Record* r, object G, char* want):
    return g_div(G, g_mul(own_output(i, r, 0), 2.0))

cdef object gv_sin(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, cos(in_value(r, 0, saved_value(r, 0))))

cdef object gv_cos(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, g_neg(sin(in_value(r, 0, saved_value(r, 0)))))

cdef object gv_abs(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, sign(<TensorBase>in_value(r, 0, <object>r.saved[0])))

cdef object gv_where(Py_ssize_t i, Record* r, object G, char* want):
    C = <object>r.saved[0]
    ga = where(wrap(C), G, 0) if want[0] else None
    gb = where(wrap(C), 0, G) if want[1] else None
    ga, gb = t_fit_binary(r, ga, gb)
    backward = (<tuple>r.aux)[4] if r.aux != NULL and len(<tuple>r.aux) > 4 else None
    if backward is not None and ga is not None:         # a piecewise activation (see above)
        ga = through_input(PIECEWISE_BACKWARD[backward], ga, r, 0)
    return (ga, gb)

cdef object gv_sign(Py_ssize_t i, Record* r, object G, char* want):
    return zeros_for(G.shape, (<TensorBase>G)._array.dtype)     # zero everywhere, as compiled

cdef object gv_log1p(Py_ssize_t i, Record* r, object G, char* want):
    return g_div(G, g_add(in_value(r, 0, saved_value(r, 0)), 1.0))

cdef object gv_expm1(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, g_add(own_output(i, r, 0), 1.0))

cdef object gv_rsqrt(Py_ssize_t i, Record* r, object G, char* want):
    Y = own_output(i, r, 0)
    return g_mul(g_mul(G, -0.5), g_mul(g_mul(Y, Y), Y))

cdef object gv_reciprocal(Py_ssize_t i, Record* r, object G, char* want):
    Y = own_output(i, r, 0)
    return g_mul(g_neg(G), g_mul(Y, Y))

cdef object gv_erf(Py_ssize_t i, Record* r, object G, char* want):
    X = in_value(r, 0, saved_value(r, 0))
    return g_mul(g_mul(G, M_2_SQRTPI), unary_op(OP_EXP, <TensorBase>g_neg(g_mul(X, X))))

cdef object gv_clamp_scalar(Py_ssize_t i, Record* r, object G, char* want):
    x = <object>r.saved[0]
    lo, hi = <tuple>r.aux
    if lo is None:                                      # gradient where min <= x <= max
        m = x <= hi
    elif hi is None:
        m = x >= lo
    else:
        m = np.logical_and(x >= lo, x <= hi)
    return g_where(m, G, 0)

cdef object gv_clamp_tensor(Py_ssize_t i, Record* r, object G, char* want):
    x = <object>r.saved[0]
    lo = saved_value(r, 1)
    hi = saved_value(r, 2)
    cdef tuple aux = <tuple>r.aux
    gx = glo = ghi = None
    if want[0]:
        if lo is None:
            m = x <= hi
        elif hi is None:
            m = x >= lo
        else:
            m = np.logical_and(x >= lo, x <= hi)
        gx = t_fit(g_where(m, G, 0), aux[0], aux[1])
    if lo is not None and want[1]:                      # PyTorch's clamp_backward_min_max
        m = np.logical_and(x < lo, lo < hi) if hi is not None else x < lo
        glo = t_fit(g_where(m, G, 0), aux[2], aux[3])
    if hi is not None and want[2]:
        m = np.logical_or(x > hi, hi < lo) if lo is not None else x > hi
        ghi = t_fit(g_where(m, G, 0), aux[4], aux[5])
    return (gx, glo, ghi)

cdef object gv_maximum(Py_ssize_t i, Record* r, object G, char* want):
    A = <object>r.saved[0]
    B = <object>r.saved[1]
    tie = A == B                                        # ties split the gradient evenly
    cdef bint is_max = r.op == OP_MAXIMUM
    ga = gb = None
    if want[0]:
        ga = g_where(tie, g_mul(G, 0.5), g_where(np.logical_not(A < B if is_max else A > B), G, 0))
    if want[1]:
        gb = g_where(tie, g_mul(G, 0.5), g_where(np.logical_not(A > B if is_max else A < B), G, 0))
    return t_fit_binary(r, ga, gb)


# -- ops_math: the same formulas as vjp_math1 / vjp_math2 ---------------------------------------

cdef object gv_math1(Py_ssize_t i, Record* r, object G, char* want):
    cdef int op = r.op
    if op == OP_FRAC:
        return G
    if r.saved[0] == NULL:                              # floor, ceil, round, trunc: zero
        return zeros_for(G.shape, (<TensorBase>G)._array.dtype)
    X = in_value(r, 0, saved_value(r, 0))
    if op == OP_LOG10:
        return g_div(G, g_mul(X, LN10))
    if op == OP_LOG2:
        return g_div(G, g_mul(X, LN2))
    if op == OP_SINH:
        return g_mul(G, cosh(<TensorBase>X))
    if op == OP_COSH:
        return g_mul(G, sinh(<TensorBase>X))
    if op == OP_ATAN:
        return g_div(G, g_add(g_mul(X, X), 1))
    root = sqrt(<TensorBase>binary_op(OP_RSUB, 1, g_mul(X, X)))    # asin / acos
    return g_div(G, root) if op == OP_ASIN else g_div(g_neg(G), root)

cdef object gv_math2(Py_ssize_t i, Record* r, object G, char* want):
    ga = gb = None
    if r.op == OP_ATAN2:
        A = in_value(r, 0, saved_value(r, 0))
        B = in_value(r, 1, saved_value(r, 1))
        den = g_add(g_mul(A, A), g_mul(B, B))
        # 0 where a^2 + b^2 is 0, as the compiled VJP, taken from the reciprocal of den itself
        # (PyTorch's): there the reciprocal's derivative, 0 * inf, makes second derivatives NaN
        zero = np.equal((<TensorBase>den)._array, 0)
        recip = g_where(zero, 0, reciprocal(<TensorBase>den))
        if want[0]:
            ga = g_mul(g_mul(G, B), recip)
        if want[1]:
            gb = g_mul(g_mul(G, g_neg(A)), recip)
        return t_fit_binary(r, ga, gb)
    if want[0]:
        ga = G
    if want[1]:                                         # the quotient is piecewise constant
        with IeeeResults():
            # (the compiled VJP's quotient, vjp_math2 in ops_math.pxi: floor_divide, not
            # floor(a / b), for remainder)
            if r.op == OP_FMOD or r.op == OP_FMOD_T:
                q = np.trunc(np.divide(<object>r.saved[0], <object>r.saved[1]))
            else:
                q = np.floor_divide(<object>r.saved[0], <object>r.saved[1])
        Q = wrap(nd(np.asarray(q)))
        B = in_value(r, 1, saved_value(r, 1))
        if isinstance(B, TensorBase) and (<TensorBase>B)._requires_grad:
            # PyTorch's -grad * floor(self / other) reads other through floor, whose derivative
            # is zeros: the gradient requires grad even for a constant grad, and a second grad
            # is zeros, not None (fuzz 62683198).  Q keeps q's values (and zeros' signs) as a
            # gradient-identity node of a zero-derivative where() of other.
            F = g_where(np.zeros((<TensorBase>Q)._array.shape, dtype=bool), B, 0)
            if (<TensorBase>F)._array.shape == (<TensorBase>Q)._array.shape and \
                    (<TensorBase>F)._array.dtype == (<TensorBase>Q)._array.dtype:
                record_from(OP_CLONE, <TensorBase>Q, (F,))
        gb = g_mul(g_neg(G), Q)
    return t_fit_binary(r, ga, gb)

cdef object gv_not_implemented(Py_ssize_t i, Record* r, object G, char* want):
    raise RuntimeError(f"derivative for {<object>r.aux} is not implemented")

cdef object gv_overlapping_slices(Py_ssize_t i, Record* r, object G, char* want):
    if want[0]:                         # (PyTorch's overlap error, as the eager VJP raises it)
        return OP_VJP[OP_OVERLAPPING_SLICES](r, (<TensorBase>G)._array)
    return gv_setitem(i, r, G, want)

cdef object gv_triangle(Py_ssize_t i, Record* r, object G, char* want):
    k = <Py_ssize_t>r.scalar
    return tril(<TensorBase>G, k) if r.op == OP_TRIL else triu(<TensorBase>G, k)


# -- activations (the same formulas as the compiled kernels; the unused branch of a where is fed a
# harmless value, so no inf * 0 appears in its derivative) --

cdef object gv_leaky_relu(Py_ssize_t i, Record* r, object G, char* want):
    return through_input(OP_LEAKY_RELU_BACKWARD,
                         g_where(<object>r.saved[0] > 0, G, g_mul(G, r.scalar)), r, 0)

# elu, softplus and gelu: PyTorch's gradient is one node (EluBackwardBackward0, ...) whose
# x-derivative is one product grad_grad * grad * f''(x); differentiating a composition of f' instead
# met an infinite grad_grad * grad in each term (inf - inf = NaN) or behind a where (0 where PyTorch's
# mask gives NaN) (fuzz14).  The eager kernel gives the value, a Function of
# tapegrad.nn._activation_kernels the derivatives.

cdef object compiled_activation_gradient(str name, Record* r, object G, tuple params):
    """Function `name` of _activation_kernels applied to the gradient G, record r's input, the
    eager VJP's value of G and the activation's parameters."""
    from tapegrad.nn import _activation_kernels
    return getattr(_activation_kernels, name).apply(
        G, in_value(r, 0, saved_value(r, 0)), OP_VJP[r.op](r, (<TensorBase>G)._array), *params)

cdef object gv_elu(Py_ssize_t i, Record* r, object G, char* want):
    return compiled_activation_gradient("EluBackward", r, G, (r.scalar,))

cdef object gv_softplus(Py_ssize_t i, Record* r, object G, char* want):
    return compiled_activation_gradient("SoftplusBackward", r, G, <tuple>r.aux)

cdef object sigmoid_of(object Z):
    """sigmoid(Z) with the values of the compiled kernels' 1 / (exp(-z) + 1) and the derivatives
    of the recorded sigmoid op: s (1 - s) stays finite where exp(-z) overflows (a recorded
    1 / (exp(-z) + 1) would give 0 * inf = NaN there)."""
    cdef TensorBase Zd = wrap((<TensorBase>Z)._array)  # no graph: the values only
    V = binary_op(OP_DIV, 1, g_add(unary_op(OP_EXP, <TensorBase>g_neg(Zd)), 1))
    return exact((<TensorBase>V)._array, sigmoid(<TensorBase>Z))

cdef object gv_silu(Py_ssize_t i, Record* r, object G, char* want):
    X = in_value(r, 0, saved_value(r, 0))
    S = sigmoid_of(X)
    return g_mul(g_mul(G, S), g_add(g_mul(X, binary_op(OP_RSUB, 1, S)), 1))

cdef object gv_gelu(Py_ssize_t i, Record* r, object G, char* want):
    return compiled_activation_gradient("GeluBackward", r, G, ("none" if r.scalar == 0 else "tanh",))


# -- reductions, linear algebra, shapes ----------------------------------------------------------

cdef object expand_back(object G, tuple aux):
    """The sum/mean VJP: G with the reduced dims restored (size 1), expanded to the input."""
    shape, axes, keepdim = aux[0], aux[1], aux[2]
    if not keepdim:
        kshape = list(shape)
        for a in axes:
            kshape[a] = 1
        G = reshape_to(<TensorBase>G, tuple(kshape))
    G = expand(<TensorBase>G, tuple(shape))
    if len(aux) > 3:
        G = t_cast(G, aux[3])
    return G

cdef object gv_sum(Py_ssize_t i, Record* r, object G, char* want):
    return expand_back(G, <tuple>r.aux)

cdef inline object mean_adjoint(object G, object count, bint empty):
    """G / count, the adjoint of a loss's mean reduction.  Of an empty input every gradient it
    scales is empty, so G stands unscaled (same values: none): divided by a count of 0, the
    derivative of those empty products (a sum of nothing, 0) would become 0 / 0 = NaN where
    PyTorch's formulas, dividing the expanded gradient, give 0 (fuzz seed 50006602)."""
    return G if empty else g_div(G, count)

cdef object gv_mean(Py_ssize_t i, Record* r, object G, char* want):
    if r.scalar == 0:
        # the mean of an empty input: divided after the expansion, as PyTorch's formula
        # (grad.expand(...) / n), so differentiating again sums an empty tensor (0) instead
        # of dividing a sum by n = 0 (NaN; fuzz seed 50006602)
        return g_div(expand_back(G, <tuple>r.aux), r.scalar)
    return expand_back(g_div(G, r.scalar), <tuple>r.aux)

cdef object gv_evenly(Py_ssize_t i, Record* r, object G, char* want):
    """amax/amin, max/min of all elements: the gradient split evenly among the extremal elements
    (a constant mask: its derivative is zero)."""
    A = <object>r.saved[0]
    cdef tuple aux = <tuple>r.aux
    outk = extremum_of_saved_input(A, <tuple>aux[1], r.op == OP_MAX_ALL or r.op == OP_AMAX, False)
    mask = np.equal(A, outk)
    if r.op == OP_MAX_ALL or r.op == OP_MIN_ALL:
        mask = np.logical_or(mask, np.logical_and(np.isnan(A), np.isnan(outk)))
    count = np.add.reduce(mask, axis=aux[1], keepdims=True, dtype=A.dtype)
    if r.op == OP_MAX_ALL or r.op == OP_MIN_ALL:                # (selected, as the VJP)
        return g_where(mask, g_div(t_unreduce(G, aux), wrap(nd(count))), 0)
    return g_mul(wrap(nd(mask)), g_div(t_unreduce(G, aux), wrap(nd(count))))

cdef object gv_select_dim(Py_ssize_t i, Record* r, object G, char* want):
    """max/min along a dim: the gradient to the index the forward returned."""
    shape, axis, keepdim, dt = <tuple>r.aux
    cdef Py_ssize_t n = len(shape)
    if n == 0:
        return t_cast(G, dt)
    idxk = <object>r.saved[0]
    if not keepdim:
        idxk = np.expand_dims(idxk, axis)
    Gk = G if keepdim else reshape_to(<TensorBase>G, tuple(idxk.shape))
    ar_shape = [1] * n
    ar_shape[axis] = shape[axis]
    mask = np.equal(np.arange(shape[axis]).reshape(ar_shape), idxk)
    return t_cast(g_where(mask, Gk, 0), dt)

cdef object running_products(object X, bint from_left):
    """Inclusive running products of X along its last dim (from the left, or from the right),
    recorded: Hillis-Steele doubling, log2(n) steps of n elements each."""
    cdef Py_ssize_t n = X.shape[len(X.shape) - 1], s = 1
    E = Ellipsis
    P = X
    while s < n:
        head = index_op(<TensorBase>P, (E, slice(0, n - s)))
        tail = index_op(<TensorBase>P, (E, slice(s, n)))
        if from_left:
            P = cat([index_op(<TensorBase>P, (E, slice(0, s))), g_mul(tail, head)], -1)
        else:
            P = cat([g_mul(head, tail), index_op(<TensorBase>P, (E, slice(n - s, n)))], -1)
        s *= 2
    return P


cdef object others_product_last(object X):
    """For each element of X along its last dim, the product of the others there, recorded in
    O(n log n): the running product from the left (shifted by one) times the one from the right
    (shifted by one); valid with any number of zeros, to any order."""
    shape = tuple(X.shape)
    cdef Py_ssize_t n = shape[len(shape) - 1]
    ones = wrap(np.ones(shape[:len(shape) - 1] + (1,), dtype=(<TensorBase>X)._array.dtype))
    if n == 1:
        return ones
    E = Ellipsis
    left = cat([ones, index_op(<TensorBase>running_products(X, True), (E, slice(0, n - 1)))], -1)
    right = cat([index_op(<TensorBase>running_products(X, False), (E, slice(1, n))), ones], -1)
    return g_mul(left, right)


cdef object others_product(object X, int axis):
    """For each element of X (along `axis`, or over all elements when axis < 0), the product of
    the other elements, recorded (others_product_last along the last dim)."""
    shape = tuple(X.shape)
    if axis < 0:
        Xf = reshape_to(<TensorBase>X, (1, int(np.prod(shape, dtype=np.int64))))
        return reshape_to(<TensorBase>others_product_last(Xf), shape)
    cdef Py_ssize_t last = len(shape) - 1
    Xt = transpose(<TensorBase>X, axis, last) if axis != last else X
    P = others_product_last(Xt)
    return transpose(<TensorBase>P, axis, last) if axis != last else P

cdef object gv_prod(Py_ssize_t i, Record* r, object G, char* want):
    A = <object>r.saved[0]
    cdef tuple aux = <tuple>r.aux
    in_dt = aux[4]
    X = t_cast(in_value(r, 0, A if A.dtype == in_dt else A.astype(in_dt)), A.dtype)
    Gk = t_unreduce(G, aux)
    if A.ndim == 0:
        return t_cast(Gk, in_dt)                                # (as the compiled VJP)
    if not np.logical_or.reduce(np.equal(A, 0), axis=None):
        return t_cast(g_mul(Gk, g_div(own_output_kept(i, r, 1, aux), X)), in_dt)  # prod / x
    # With zeros: the product of the other elements (its value from the compiled VJP).
    F = t_cast(g_mul(Gk, others_product(X, aux[3])), in_dt)
    if aux[3] < 0 and np.add.reduce(np.equal(A, 0), axis=None, dtype=NP_INT64) > 1:
        # (the compiled VJP gives zeros whatever the adjoint, as PyTorch's plain backward; its
        # create_graph formula multiplies: a NaN adjoint gives NaN)
        return F
    return exact(OP_VJP[r.op](r, (<TensorBase>G)._array), F)

cdef object gv_var(Py_ssize_t i, Record* r, object G, char* want):
    centered = <object>r.saved[0]
    cdef tuple aux = <tuple>r.aux
    cdef double dof = r.scalar
    if dof == 0 and len(aux) > 3 and aux[3]:
        # PyTorch: var() over all elements without degrees of freedom has the gradient
        # grad * where(x == mean, NaN, inf) (std's: its grad / (2 std) in place of grad): the
        # adjoint's graph times a constant (none of x's); `centered` holds equal_mean_factor
        Gk = t_unreduce(G, aux)
        if r.op == OP_STD:
            Gk = std_adjoint(i, r, Gk, aux)
        return g_mul(Gk, wrap(nd(np.multiply(centered, np.inf))))
    two_over = 2.0 / dof if dof != 0 else math.inf
    cdef list phantoms = []
    try:
        # x - mean(x), its derivative independent of x: a phantom on the centered value will do
        X = input_or_phantom(r, 0, centered, phantoms)
        C = exact(centered, g_sub(X, reduce_op(OP_MEAN, <TensorBase>X, aux[1], True)))
        Gk = t_unreduce(G, aux)
        if r.op == OP_STD:
            Gk = std_adjoint(i, r, Gk, aux)
        return g_mul(C, g_mul(Gk, two_over))
    finally:
        release_phantoms(phantoms)

cdef object std_adjoint(Py_ssize_t i, Record* r, object Gk, tuple aux):
    """std's adjoint as var's: Gk / (2 std), 0 where std == 0 (PyTorch's masked_fill)."""
    stdk = <object>r.saved[1]
    nz = np.not_equal(stdk, 0)
    S = own_output_kept(i, r, 1, aux)
    return g_where(nz, g_div(Gk, g_where(nz, g_mul(S, 2), 1)), 0)

cdef object gv_logsumexp(Py_ssize_t i, Record* r, object G, char* want):
    cdef tuple aux = <tuple>r.aux
    X = in_value(r, 0, saved_value(r, 0))
    Y = own_output_kept(i, r, 1, aux)
    E = exact(np.exp(np.subtract(<object>r.saved[0], <object>r.saved[1])),    # numpy's exp
              unary_op(OP_EXP, <TensorBase>g_sub(X, Y)))
    return g_mul(t_unreduce(G, aux), E)

cdef object gv_norm(Py_ssize_t i, Record* r, object G, char* want):
    A = <object>r.saved[0]
    outk = <object>r.saved[1]
    cdef tuple aux = <tuple>r.aux
    cdef double p = r.scalar
    if p == 0:
        return None
    Gk = t_unreduce(G, aux)
    X = t_cast(in_value(r, 0, A), A.dtype)
    if p == 1:
        return g_mul(sign(<TensorBase>X), Gk)
    if p == INFINITY or p == -INFINITY:
        mask = np.equal(np.abs(A), extremum_of_saved_input(A, <tuple>aux[1], p > 0, True))
        count = np.maximum(np.add.reduce(mask, axis=aux[1], keepdims=True, dtype=A.dtype), 1)
        return g_mul(g_mul(sign(<TensorBase>X), mask_like(mask, X)), g_div(Gk, wrap(nd(count))))
    # PyTorch's norm_backward, term for term: its subgradient 0 at the zero vector (and, for
    # p < 1, at zero elements) masks a quotient computed there, so the derivative of that
    # quotient, 0 * inf, makes second derivatives NaN at those points (as PyTorch's)
    Y = own_output_kept(i, r, 1, aux)
    at_zero = np.equal(outk, 0)
    if p == 2:
        return g_mul(Gk, g_where(at_zero, 0, g_div(X, Y)))
    if p < 1:
        powered = g_where(np.equal(A, 0), 0, binary_op(OP_POW, abs_(<TensorBase>X), p - 1))
        scaled = g_mul(sign(<TensorBase>X), powered)
        return g_mul(g_mul(scaled, Gk), binary_op(OP_POW, Y, 1 - p))
    if p < 2:
        scaled = g_mul(sign(<TensorBase>X), binary_op(OP_POW, abs_(<TensorBase>X), p - 1))
    else:
        scaled = g_mul(X, binary_op(OP_POW, abs_(<TensorBase>X), p - 2))
    return g_mul(scaled, g_where(at_zero, 0, g_div(Gk, binary_op(OP_POW, Y, p - 1))))

cdef object gv_repeat(Py_ssize_t i, Record* r, object G, char* want):
    padded, reps, shape = <tuple>r.aux
    cdef Py_ssize_t n = len(padded), j
    if n == 0:
        return reshape_to(<TensorBase>G, tuple(shape))
    inter = []
    for j in range(n):
        inter.append(reps[j])
        inter.append(padded[j])
    S = reduce_op(OP_SUM, reshape_to(<TensorBase>G, tuple(inter)), tuple(range(0, 2 * n, 2)),
                  False)
    return reshaped_if_needed(S, tuple(shape))    # (PyTorch's last node is the sum, SumBackward1)


cdef int check_grad_shape(Record* r, object G, tuple shape) except -1:
    """A graph VJP whose kernels index G by its output's shape refuses any other shape (an
    engine bug would otherwise read out of bounds: a mismatched G segfaulted gv_matmul)."""
    cdef tuple gs = tuple((<TensorBase>G)._array.shape)
    if gs != shape:
        raise RuntimeError(f"{OP_NAMES[r.op]}: the gradient has shape {list(gs)} but the "
                           f"output has shape {list(shape)}")
    return 0


cdef tuple matmul_result_shape(tuple shape_a, tuple shape_b):
    """The shape of A @ B (A, B of these shapes, already checked by the forward)."""
    cdef Py_ssize_t na = len(shape_a), nb = len(shape_b)
    if na == 1 and nb == 1:
        return ()
    if na == 1:
        return shape_b[:nb - 2] + shape_b[nb - 1:]
    if nb == 1:
        return shape_a[:na - 1]
    return tuple(np.broadcast_shapes(shape_a[:na - 2], shape_b[:nb - 2])) + (
        shape_a[na - 2], shape_b[nb - 1])


cdef object reshaped_if_needed(object g, tuple shape):
    """g in `shape`, with no view node when it already has it: PyTorch's adjoint of a 2-D
    product is the mm itself (MmBackward0), not a view of it."""
    if tuple((<TensorBase>g)._array.shape) == shape:
        return g
    return reshape_to(<TensorBase>g, shape)

cdef inline object t_node(object x):
    """x.t() of a 2-D tensor, recorded as PyTorch's TBackward0 (not TransposeBackward0)."""
    return permuted(OP_T, <TensorBase>x, [1, 0])

cdef object gv_matmul(Py_ssize_t i, Record* r, object G, char* want):
    shape_a, shape_b, trans_b, bias_shape, bias_dtype, layout = <tuple>r.aux
    cdef Py_ssize_t na = len(shape_a), nb = len(shape_b)
    if r.op == OP_ADDMM and na != 2:
        # linear's 2-D product of an N-d or 1-D input (its result views it): G in the input's rows
        check_grad_shape(r, G, (shape_prod(shape_a, 0, na - 1), shape_b[nb - 1]))
        G = reshape_to(<TensorBase>G, tuple(shape_a)[:na - 1] + (shape_b[nb - 1],))
    else:
        check_grad_shape(r, G, matmul_result_shape(tuple(shape_a), tuple(shape_b)))
    ga = gb = gc = None
    if want[0]:
        SB = saved_value(r, 1)
        if trans_b:
            B = transpose(<TensorBase>in_value(r, 1, None if SB is None else SB.T), -1, -2) \
                if nb > 1 else in_value(r, 1, SB)
        else:
            B = in_value(r, 1, SB)
        B = t_conj(B)                                   # (complex: g @ B^H)
        if nb == 1:
            ga = g_mul(G, B) if na == 1 else g_mul(unsqueeze(<TensorBase>G, -1), B)
        elif na == 2 and nb == 2 and <int>layout & A_COLUMN_MAJOR:
            # (B G^T)^T: laid out as A, as eager and PyTorch's mm backward (ops_linalg.pxi)
            ga = transpose(<TensorBase>matmul(B, transpose(<TensorBase>G, 0, 1)), 0, 1)
        else:
            G2 = G if na > 1 else unsqueeze(<TensorBase>G, -2)
            ga = matmul(G2, transpose(<TensorBase>B, -1, -2))
            ga = t_sum_to(ga, shape_a if na > 1 else (1, shape_a[na - 1]))
        ga = reshaped_if_needed(ga, tuple(shape_a))
    if want[1]:
        A = t_conj(in_value(r, 0, saved_value(r, 0)))   # (complex: A^H @ g)
        if trans_b and nb == 2:
            # linear's weight W (out, in) multiplies as W^T: its gradient is G^T @ A over the
            # input's rows, as the eager VJP and PyTorch compute it, so it comes out laid out as
            # W (C-contiguous), not as a transposed view of A^T @ G: a captured gradient then
            # supports g.view(-1) (flat_grad in TRPO / natural-gradient code).
            # PyTorch's graph is the gradient of W^T (its mm backward) under the TBackward0 of
            # the weight: the result's grad_fn is TBackward0, as a printed gradient shows.
            rows = shape_prod(shape_a, 0, na - 1)
            G2 = reshaped_if_needed(G, (rows, shape_b[1]))
            A2 = reshaped_if_needed(A, (rows, shape_b[0]))
            if <int>layout & B_COLUMN_MAJOR:
                # W^T is column-major: its gradient (G^T A)^T, laid out as W^T, then its t()
                gb = t_node(t_node(matmul(t_node(G2), A2)))
            else:                       # a W laid out otherwise: (A^T G)^T, as eager
                gb = t_node(matmul(t_node(A2), G2))
        elif nb == 2 and <int>layout & B_COLUMN_MAJOR:
            # (G^T A)^T over A's rows: laid out as B, as eager and PyTorch's mm backward
            rows = shape_prod(shape_a, 0, na - 1)
            gb = transpose(<TensorBase>matmul(
                transpose(<TensorBase>reshape_to(<TensorBase>G, (rows, shape_b[1])), 0, 1),
                reshape_to(<TensorBase>A, (rows, shape_b[0]))), 0, 1)
        elif na == 1:
            if nb == 1:
                gb = g_mul(G, A)
            elif nb == 2:
                # PyTorch's A^T @ G of the row A, an mm (MmBackward0): its zeros signed only
                # where it has more than one row and column (single_term_product), as eager's
                gb = matmul(reshape_to(<TensorBase>A, (shape_a[0], 1)), unsqueeze(<TensorBase>G, -2))
            else:
                gb = g_mul(reshape_to(<TensorBase>A, (shape_a[0], 1)), unsqueeze(<TensorBase>G, -2))
                gb = t_sum_to(gb, shape_b)
            gb = reshaped_if_needed(gb, tuple(shape_b))
        else:
            G2 = unsqueeze(<TensorBase>G, -1) if nb == 1 else G
            gb = matmul(transpose(<TensorBase>A, -1, -2), G2)
            gb = t_sum_to(gb, shape_b if nb > 1 else (shape_b[0], 1))
            gb = reshaped_if_needed(gb, tuple(shape_b))
            if trans_b and nb > 1:
                gb = transpose(<TensorBase>gb, 0, 1)
    if r.n_in == 3:
        if want[2]:
            gc = t_fit(G, bias_shape, bias_dtype)
        return (ga, gb, gc)
    return (ga, gb)

cdef object gv_outer(Py_ssize_t i, Record* r, object G, char* want):
    dta, dtb = <tuple>r.aux
    ga = t_cast(matmul(G, in_value(r, 1, saved_value(r, 1))), dta) if want[0] else None
    gb = t_cast(matmul(in_value(r, 0, saved_value(r, 0)), G), dtb) if want[1] else None
    return (ga, gb)

cdef object gv_dropout(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, wrap(<object>r.saved[0]))          # the (scaled) mask is a constant

cdef object gv_reshape(Py_ssize_t i, Record* r, object G, char* want):
    # PyTorch undoes an unsqueeze with squeeze(dim), a squeeze with unsqueeze (one per removed
    # dim; none when it removed none), a view with a view: the gradient's grad_fn shows which
    cdef tuple shape = <tuple>r.aux
    cdef tuple gshape = tuple((<TensorBase>G)._array.shape)
    cdef Py_ssize_t d
    if r.op == OP_UNSQUEEZE or r.op == OP_UNSQUEEZE_INPLACE:
        for d in range(len(gshape)):
            if gshape[d] == 1 and gshape[:d] + gshape[d + 1:] == shape:
                return G.squeeze(d)
    elif r.op in (OP_SQUEEZE, OP_SQUEEZE_DIM, OP_SQUEEZE_DIMS, OP_SQUEEZE_INPLACE,
                  OP_SQUEEZE_DIM_INPLACE, OP_SQUEEZE_DIMS_INPLACE):
        if gshape == shape:
            return G
        if len(shape) > len(gshape):
            res, k = G, 0
            for d in range(len(shape)):          # re-insert the removed size-1 dims in order
                if k < len(gshape) and shape[d] == gshape[k] and \
                        (shape[d] != 1 or len(shape) - d == len(gshape) - k):
                    k += 1
                else:
                    res = res.unsqueeze(d)
            if tuple(res.shape) == shape:
                return res
    return reshape_to(<TensorBase>G, shape)

cdef object gv_permute(Py_ssize_t i, Record* r, object G, char* want):
    # A transpose (or t()) is its own inverse, and PyTorch's VJP of one is the same op: the
    # adjoint's node has the forward node's name (a general permute's stays PermuteBackward0).
    name = record_name(r)
    res = permuted(OP_PERMUTE, <TensorBase>G, list(<tuple>r.aux))
    if name == "TransposeBackward0" or name == "TBackward0":
        _name_grad_fn(res, name)
    return res

cdef object gv_expand(Py_ssize_t i, Record* r, object G, char* want):
    return t_sum_to(G, <tuple>r.aux)

cdef object gv_identity(Py_ssize_t i, Record* r, object G, char* want):
    return G

cdef object gv_to_copy(Py_ssize_t i, Record* r, object G, char* want):
    return t_cast(G, <object>r.aux)

cdef object gv_softmax_family(Py_ssize_t i, Record* r, object G, bint log):
    Y = own_output(i, r, 0)
    axis, in_dt = <tuple>r.aux
    check_grad_shape(r, G, tuple((<TensorBase>Y)._array.shape))     # (a C row kernel reads G)
    G = t_cast(G, (<TensorBase>Y)._array.dtype)
    if log:
        graph = g_sub(G, g_mul(unary_op(OP_EXP, <TensorBase>Y),
                               reduce_op(OP_SUM, <TensorBase>G, axis, True)))
    else:
        GY = g_mul(G, Y)
        graph = g_sub(GY, g_mul(Y, reduce_op(OP_SUM, <TensorBase>GY, axis, True)))
    # the compiled VJP's values (its C row kernels round differently from this numpy graph)
    value = nn_softmax_grad_value((<TensorBase>G)._array, (<TensorBase>Y)._array, axis, log)
    res = _name_grad_fn(exact(value, graph), "LogSoftmaxBackwardDataBackward0" if log
                        else "SoftmaxBackwardDataBackward0")
    return t_cast(res, in_dt)

cdef object gv_softmax(Py_ssize_t i, Record* r, object G, char* want):
    return gv_softmax_family(i, r, G, False)

cdef object gv_log_softmax(Py_ssize_t i, Record* r, object G, char* want):
    return gv_softmax_family(i, r, G, True)


# -- indexing and its transpose ------------------------------------------------------------------
# x[key]'s VJP scatters G into zeros of x's shape (np.add.at for the advanced part).  With
# create_graph that scatter is recorded as an INDEX_SCATTER record (same aux as the indexing
# record), whose VJP indexes its gradient with the same key, and whose graph VJP records that
# indexing: the pair is closed under differentiation.

cdef object index_array(object g, tuple aux):
    shape, dt, key1, bshape, key2 = aux
    out = g
    if key1 is not None:
        out = out[key1]
    if key2 is not None:
        # numpy lays out x[:, idx] with the index's dims first (strided); PyTorch's index result
        # is row-major (a gradient's .view(-1) works there)
        return nd(np.array(advanced_index(out, key2), order="C", copy=True))
    return nd(np.array(out, copy=True))

cdef object vjp_index_scatter(Record* r, object g):
    return index_array(g, <tuple>r.aux)

cdef int OP_INDEX_SCATTER = register_op("IndexBackwardBackward0", vjp_index_scatter)


cdef object recorded_index(object G, tuple aux):
    """G[key] for the numpy keys of an indexing record's aux, recorded (IndexBackward0)."""
    aux = (tuple((<TensorBase>G)._array.shape), (<TensorBase>G)._array.dtype) + aux[2:]
    cdef TensorBase res = wrap(index_array((<TensorBase>G)._array, aux))
    cdef Record* rr = record_from(OP_INDEX, res, (G,))
    if rr != NULL:
        keep(&rr.aux, aux)
    return res


cdef object recorded_index_scatter(object G, tuple aux):
    cdef TensorBase res = wrap(scatter_index(aux, (<TensorBase>G)._array))
    cdef Record* rr = record_from(OP_INDEX_SCATTER, res, (G,))
    if rr != NULL:
        keep(&rr.aux, aux)
    return res

cdef object gv_cat(Py_ssize_t i, Record* r, object G, char* want):
    d, offsets, sizes, dtypes = <tuple>r.aux
    cdef Py_ssize_t n = r.n_in, j
    pre = (slice(None),) * <Py_ssize_t>d
    grads = []
    for j in range(n):
        if not want[j]:
            grads.append(None)
        elif offsets[j] < 0:                        # a skipped empty 1-d tensor
            grads.append(wrap(np.zeros((0,), dtype=dtypes[j])))
        else:
            key = pre + (slice(offsets[j], offsets[j] + sizes[j]),)
            # PyTorch narrows the adjoint to each input's span: the piece's node is a slice
            piece = _name_grad_fn(recorded_index(G, (None, None, key, None, None)),
                                  "SliceBackward0")
            grads.append(t_cast(piece, dtypes[j]))
    return grads[0] if n == 1 else tuple(grads)

cdef object gv_stack(Py_ssize_t i, Record* r, object G, char* want):
    d, dtypes = <tuple>r.aux
    cdef Py_ssize_t n = r.n_in, j
    pre = (slice(None),) * <Py_ssize_t>d
    grads = []
    for j in range(n):
        if not want[j]:
            grads.append(None)
        else:
            key = pre + (j, Ellipsis)
            # PyTorch selects each input's entry of the adjoint: the piece's node is a select
            piece = _name_grad_fn(recorded_index(G, (None, None, key, None, None)),
                                  "SelectBackward0")
            grads.append(t_cast(piece, dtypes[j]))
    return grads[0] if n == 1 else tuple(grads)

# The node PyTorch records for the gradient of a view or selection under create_graph, by the
# forward node's name (a printed higher-order gradient shows it): the adjoint of unbind stacks
# the outputs' gradients, split's concatenates them, gather's scatter-adds, ...  Indexing is
# named by its key (index_adjoint_name).
cdef dict ADJOINT_NAMES = {
    "UnbindBackward0": "StackBackward0", "SplitBackward0": "CatBackward0",
    "SplitWithSizesBackward0": "CatBackward0", "UnsafeSplitBackward0": "CatBackward0",
    "UnsafeSplitWithSizesBackward0": "CatBackward0",
    "DiagonalBackward0": "DiagonalBackwardBackward0", "UnfoldBackward0": "UnfoldBackwardBackward0",
    "AsStridedBackward0": "AsStridedBackward0", "FlipBackward0": "FlipBackward0",
    "MaskedSelectBackward0": "MaskedScatterBackward0", "TakeBackward0": "PutBackward0",
    "GatherBackward0": "ScatterAddBackward0", "IndexSelectBackward0": "IndexAddBackward0",
    "ConstantPadNdBackward0": "ConstantPadNdBackward0"}


cdef object first_basic_adjoint(object key1, tuple shape):
    """PyTorch applies a key's basic part dim by dim, skipping full slices, so the gradient's
    last node is the backward of the first int (a select), slice or None (an unsqueeze) in it;
    None when there is none."""
    if key1 is None:
        return None
    cdef tuple key = key1 if type(key1) is tuple else (key1,)
    cdef Py_ssize_t d = 0
    cdef Py_ssize_t consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    for k in key:
        if k is Ellipsis:
            d += len(shape) - consumed
        elif k is None:
            return "SqueezeBackward1"
        elif type(k) is slice:
            if (<slice>k).indices(shape[d]) != (0, shape[d], 1):
                return "SliceBackwardBackward0"
            d += 1
        else:
            return "SelectBackwardBackward0"
    return None


cdef object index_adjoint_name(Record* r, tuple aux):
    """The name PyTorch gives the create_graph gradient of indexing record r (aux: its
    index_aux); None to keep the recorded scatter's own."""
    name = ADJOINT_NAMES.get(record_name(r))
    if name is not None or r.op == OP_AS_STRIDED or r.op == OP_UNFOLD:
        return name
    name = first_basic_adjoint(aux[2], tuple(aux[0]))
    if name is not None:
        return name
    if aux[4] is not None:
        return "IndexPutImplBackward0"          # the advanced part: index's backward
    if r.op == OP_SLICE:
        return "SliceBackwardBackward0"         # x[:] alone is a slice in PyTorch too
    return None


cdef object gv_scatter_basic(Py_ssize_t i, Record* r, object G, char* want):
    shape, dt, key = (<tuple>r.aux)[:3]
    res = recorded_index_scatter(G, (shape, dt, key, None, None))
    name = ADJOINT_NAMES.get(record_name(r))
    return res if name is None else _name_grad_fn(res, name)

cdef object gv_index(Py_ssize_t i, Record* r, object G, char* want):
    cdef tuple aux = index_aux(r)
    if aux[4] is not None:
        aux = aux[:4] + (owned_key(aux[4]),)
    if isinstance(aux[2], str):
        return recorded_real_numbers_scatter(G, aux)
    if r.op == OP_ALIAS and record_name(r) == "AliasBackward0":
        return G                                # x[:, :] and x[...] are x: no node of their own
    res = recorded_index_scatter(G, aux)
    name = index_adjoint_name(r, aux)
    return res if name is None else _name_grad_fn(res, name)


cdef object recorded_real_numbers_scatter(object G, tuple aux):
    """scatter_real_numbers (a view reading its base's storage as another dtype) recorded: G
    as real numbers, scattered into the base's real numbers, read as the base's dtype."""
    from tapegrad._complex import view_as_complex, view_as_real
    shape, dt, _, bshape, key = aux
    cdef object R = G if not (<TensorBase>G)._array.dtype.kind == "c" else view_as_real(G)
    real_dt = np.zeros(0, dtype=dt).real.dtype
    res = recorded_index_scatter(R, (bshape, real_dt, None, bshape, key))
    return view_as_complex(res) if np.dtype(dt).kind == "c" else res

cdef object gv_index_scatter(Py_ssize_t i, Record* r, object G, char* want):
    return recorded_index(G, <tuple>r.aux)


cdef object gv_pad(Py_ssize_t i, Record* r, object G, char* want):
    in_shape, dt, src, dst = <tuple>r.aux
    cropped = recorded_index(G, (None, None, dst, None, None))
    return _name_grad_fn(recorded_index_scatter(cropped, (tuple(in_shape), dt, src, None, None)),
                         "ConstantPadNdBackward0")     # (its backward is a pad, by -pads)

cdef object owned_key(object key):
    """An index key with its arrays copied, for a record a create_graph gradient makes: the
    first record's saved index tensors (record.pxi, save_index) are checked when it runs, not
    when the gradient's own backward runs, and a write between the two must not move it."""
    if cnp.PyArray_Check(key):
        return np.array(key, copy=True)
    if type(key) is not tuple:
        return key
    return tuple([np.array(part, copy=True) if cnp.PyArray_Check(part) else part
                  for part in <tuple>key])


cdef object gv_take(Py_ssize_t i, Record* r, object G, char* want):
    """gather / index_select: G added at the gathered positions (the pair is closed)."""
    shape, shape1, dt, idx, gshape = <tuple>r.aux
    idx = owned_key(resolve_index_key(r, idx))
    Z = recorded_index_scatter(reshape_to(<TensorBase>G, tuple(gshape)),
                               (tuple(shape1), dt, None, tuple(shape1), idx))
    res = reshaped_if_needed(Z, tuple(shape))
    name = ADJOINT_NAMES.get(record_name(r))
    return res if name is None else _name_grad_fn(res, name)

cdef object gv_masked_fill(Py_ssize_t i, Record* r, object G, char* want):
    M = <object>r.saved[0]
    shape, vdt = <tuple>r.aux
    gi = None
    if want[0]:
        kept = g_where(M, 0, G)
        gi = t_sum_to(kept, shape)
        if gi is kept:                          # PyTorch's adjoint: G.masked_fill(mask, 0)
            _name_grad_fn(gi, "MaskedFillBackward0")
    if r.n_in == 1:
        return gi
    gv = None
    if want[1]:
        picked = recorded_index(G, (None, None, None, tuple(G.shape), M))
        gv = t_cast(reduce_op(OP_SUM, <TensorBase>picked, None, False), vdt)
    return (gi, gv)

cdef object gv_masked_select(Py_ssize_t i, Record* r, object G, char* want):
    M = <object>r.saved[0]
    shape, dt = <tuple>r.aux
    Z = recorded_index_scatter(G, (tuple(M.shape), dt, None, tuple(M.shape), M))
    res = t_sum_to(Z, shape)
    return _name_grad_fn(res, "MaskedScatterBackward0") if res is Z else res

cdef object gv_setitem(Py_ssize_t i, Record* r, object G, char* want):
    key, advanced, squeezed_shape, value_shape, value_dtype = <tuple>r.aux
    key = owned_key(resolve_index_key(r, key))
    gx = gv = None
    if want[0] and key is Ellipsis:
        # a write of all of self (copy_, x[...] = v; not through a view) is PyTorch's
        # CopyBackwards: zeros_like(grad), without a graph (fuzz seed 54000557)
        gx = wrap(np.zeros(tuple(G.shape), dtype=(<TensorBase>G)._array.dtype))
    elif want[0]:
        kept = np.ones(tuple(G.shape), dtype=bool)
        kept[key] = False                               # overwritten elements get no gradient
        gx = g_where(kept, G, 0)
    if want[1]:
        if advanced:
            picked = recorded_index(G, (None, None, None, tuple(G.shape), key))
        else:
            picked = recorded_index(G, (None, None, key, None, None))
        gv = t_cast(reshape_to(<TensorBase>t_sum_to(picked, squeezed_shape), tuple(value_shape)),
                    value_dtype)                        # (the value's own dtype, as eager)
    return (gx, gv)

cdef object gv_overwrite(Py_ssize_t i, Record* r, object G, char* want):
    """zero_, fill_, normal_, uniform_, normal(mean, std): zero gradients (constants); a tensor
    fill_ value gets the sum of G."""
    cdef tuple specs = <tuple>r.aux
    cdef int j
    grads = []
    for j in range(r.n_in):
        if not want[j]:
            grads.append(None)
            continue
        shape, dt, summed = <tuple>specs[j]
        if summed:
            S = reduce_op(OP_SUM, <TensorBase>G, None, False)
            grads.append(t_cast(reshape_to(<TensorBase>S, tuple(shape)), dt))
        else:
            grads.append(zeros_for(shape, dt))
    if r.n_in == 1:
        return grads[0]
    return tuple(grads)


# -- nn: embedding, losses, layer_norm ----------------------------------------------------------

cdef object gv_embedding(Py_ssize_t i, Record* r, object G, char* want):
    idx = (<object>r.saved[0]).reshape(-1).astype(np.int64)     # (embedding_rows; owned_key)
    scale = saved_value(r, 1)
    wshape, dt, padding_idx = <tuple>r.aux
    G2 = reshape_to(<TensorBase>G, (idx.shape[0], wshape[1]))
    if padding_idx >= 0:                                # the padding row gets no gradient
        G2 = g_where((idx == padding_idx).reshape(idx.shape[0], 1), 0, G2)
    gw = recorded_index_scatter(G2, (tuple(wshape), dt, None, tuple(wshape), idx))
    if scale is None:
        return gw
    # scale_grad_by_freq: the values scaled, the derivative not (PyTorch's
    # embedding_dense_double_backward gathers unscaled: the outer backward through the
    # embedding scales once more), which also makes it the derivative of the first derivative
    return exact(OP_VJP[r.op](r, (<TensorBase>G)._array), gw)

cdef tuple t_nll_grad(tuple aux, object tc, object wv, object valid, object G):
    """(N, C, K) gradient of nll_loss, recorded (see nn_nll_grad); and the scaled adjoint."""
    shape3, red, total = aux[0], aux[2], aux[3]
    N, K = shape3[0], shape3[2]
    tc = tc.reshape(N, K)                   # (saved in the target's shape: save_nll_target)
    if red == NN_RED_NONE:
        GS = reshape_to(<TensorBase>G, (N, K))
    elif red == NN_RED_MEAN:
        GS = g_div(G, wrap(nd(total)))
    else:
        GS = G
    V = g_where(valid, g_mul(wrap(nd(np.negative(wv))), GS), 0)     # exact zeros where ignored
    if shape3[1] == 0:          # no class: nothing to scatter, an empty gradient in the graph
        return expand(reshape_to(<TensorBase>V, (N, 1, K)), tuple(shape3)), GS
    grids = nn_index_grids(N, K)
    GX = recorded_index_scatter(V, (tuple(shape3), wv.dtype, None, tuple(shape3),
                                    (grids[0], tc, grids[1])))
    return GX, GS

cdef object gv_nll(Py_ssize_t i, Record* r, object G, char* want):
    aux = <tuple>r.aux
    GX, GS = t_nll_grad(aux, <object>r.saved[0], <object>r.saved[1], <object>r.saved[2], G)
    return linked_without_gradient(OP_NLL_BACKWARD if r.op == OP_NLL else OP_NLL2D_BACKWARD,
                                   reshape_to(<TensorBase>GX, tuple(aux[1])), r)

cdef object gv_ce_smooth(Py_ssize_t i, Record* r, object G, char* want):
    aux = <tuple>r.aux
    shape3, in_shape, red, total, ls, C, wvec = aux
    valid = <object>r.saved[2]
    wv = <object>r.saved[1]
    dt = wv.dtype
    GX, GS = t_nll_grad(aux, <object>r.saved[0], wv, valid, G)
    N, K = shape3[0], shape3[2]
    base = reshape_to(<TensorBase>g_where(valid, GS, 0), (N, 1, K))
    coef = dt.type(smoothing_share(ls, C))
    if wvec is None:
        sm = g_neg(g_mul(base, float(coef)))
    else:
        sm = g_neg(g_mul(base, wrap(nd(wvec.reshape(1, C, 1) * coef))))
    return reshape_to(<TensorBase>g_add(g_mul(GX, float(dt.type(1 - ls))), sm), tuple(in_shape))

cdef object gv_ce_probs(Py_ssize_t i, Record* r, object G, char* want):
    logp = <object>r.saved[0]
    tgt = <object>r.saved[1]
    wb = saved_value(r, 2)
    red, count, ls, gshape, dt_p, dt_t, other_axes, wshape, dt_w = <tuple>r.aux
    dt = logp.dtype
    cdef list phantoms = []
    try:
        P = t_cast(in_value(r, 0, logp if dt_p is None else logp.astype(dt_p)), dt)
        if rec_inputs(r)[1] < 0:
            T = wrap(tgt)
        elif ls == 0:
            T = t_cast(in_value(r, 1, tgt if dt_t is None else tgt.astype(dt_t)), dt)
        else:                                           # smoothed: affine in the target
            Tp = input_or_phantom(r, 1, np.zeros(tgt.shape, dt if dt_t is None else dt_t),
                                  phantoms)
            T = exact(tgt, g_add(g_mul(t_cast(Tp, dt), float(dt.type(1 - ls))),
                                 float(dt.type(smoothing_share(
                                     ls, tgt.shape[[a for a in range(tgt.ndim)
                                                    if a not in other_axes][0]])))))
        W = None
        if wb is not None:
            if r.n_in > 2 and rec_inputs(r)[2] >= 0:
                wval = wb.reshape(wshape)
                W = reshape_to(<TensorBase>t_cast(in_value(r, 2, wval if dt_w is None else
                                                           wval.astype(dt_w)), dt),
                               tuple(wb.shape))
            else:
                W = wrap(wb)
        if red == NN_RED_NONE:
            GS = reshape_to(<TensorBase>G, tuple(gshape))
        elif red == NN_RED_MEAN:
            GS = mean_adjoint(G, float(count), logp.size == 0)
        else:
            GS = G
        GSW = g_mul(GS, W) if W is not None else GS
        gp = gt = gw = None
        if want[0]:
            gp = t_cast(g_neg(g_mul(T, GSW)), dt_p)
        if want[1]:
            gt = g_neg(g_mul(P, GSW))
            if ls > 0:
                gt = g_mul(gt, 1 - ls)
            gt = t_cast(gt, dt_t)
        if r.n_in > 2 and want[2]:
            gw = g_neg(g_mul(g_mul(P, T), GS))
            if other_axes:
                gw = reduce_op(OP_SUM, <TensorBase>gw, other_axes, False)
            gw = t_cast(reshape_to(<TensorBase>gw, tuple(wshape)), dt_w)
        if r.n_in > 2:
            return (gp, gt, gw)
        return (gp, gt)
    finally:
        release_phantoms(phantoms)

cdef object t_pointwise_deriv(int kind, object D, object d, double param):
    """d f / d d, recorded (nn_pointwise_deriv's values; piecewise constant parts constant)."""
    if kind == NN_MSE:
        return g_mul(D, 2)
    if kind == NN_L1:
        return sign(<TensorBase>D)
    # smooth_l1 / huber: the value is the clamped d (finite at d = +-inf); its derivative is
    # PyTorch's *_loss_double_backward, a product with the mask |d| < beta, not a where(): an
    # infinite upstream gradient outside the mask gives inf * 0 = NaN there, as PyTorch's
    if kind == NN_SMOOTH_L1:
        q = d / param
        mask = wrap(nd(np.logical_and(q > -1, q < 1).astype(d.dtype)))
        return exact(np.minimum(np.maximum(q, -1), 1), g_div(g_mul(D, mask), param))
    mask = wrap(nd(np.logical_and(d > -param, d < param).astype(d.dtype)))
    return exact(np.minimum(np.maximum(d, -param), param), g_mul(D, mask))

cdef object t_pointwise_loss(int kind, object D, object d, double param):
    """The unweighted per-element loss f(d), recorded."""
    if kind == NN_MSE:
        return g_mul(D, D)
    if kind == NN_L1:
        return abs_(D)
    inside = np.abs(d) < param
    if kind == NN_SMOOTH_L1:
        return g_where(inside, g_div(g_mul(g_mul(D, D), 0.5), param), g_sub(abs_(D), 0.5 * param))
    return g_where(inside, g_mul(g_mul(D, D), 0.5), g_mul(param, g_sub(abs_(D), 0.5 * param)))

cdef object gv_pointwise(Py_ssize_t i, Record* r, object G, char* want):
    """mse / l1 / smooth_l1 / huber losses: saved d = input - target (recomputed for its
    derivative: linear, so a phantom input may stand in), the weight, the loss per element."""
    d = <object>r.saved[0]
    w = saved_value(r, 1)
    aux = <tuple>r.aux
    kind, red, div, param = aux[0], aux[1], aux[2], aux[3]
    refuse_mixed_huber_backward(aux, want[0], want[1])
    dt = d.dtype
    cdef list phantoms = []
    try:
        Xp = input_or_phantom(r, 0, np.zeros(aux[4], aux[5]), phantoms)
        Tp = input_or_phantom(r, 1, np.zeros(aux[6], aux[7]), phantoms)
        F = None
        if Xp is not None:
            F = t_cast(Xp, dt)
        if Tp is not None:
            F = g_neg(t_cast(Tp, dt)) if F is None else g_sub(F, t_cast(Tp, dt))
        D = exact(d, F)
        W = None
        if w is not None:
            if rec_inputs(r)[2] >= 0:
                W = t_cast(in_value(r, 2, w if aux[9] is None else w.astype(aux[9])), dt)
            else:
                W = wrap(w)
        if red == NN_RED_MEAN:
            DIV = wrap(nd(np.asarray(div)))
            if W is not None and kind != NN_HUBER and (<TensorBase>W)._requires_grad:
                DIV = exact(np.asarray(div), reduce_op(OP_SUM, <TensorBase>W, None, False))
            GS = mean_adjoint(G, DIV, d.size == 0)
        else:
            GS = G
        gi = gt = gw = None
        if want[0] or want[1]:
            GD = g_mul(t_pointwise_deriv(kind, D, d, param), GS)
            if W is not None:
                GD = g_mul(GD, W)
            if want[0]:
                gi = t_fit(GD, aux[4], aux[5])
            if want[1]:
                gt = t_fit(g_neg(GD), aux[6], aux[7])
        if r.n_in > 2 and want[2]:
            f = <object>r.saved[2]
            gw = t_fit(g_mul(exact(f, t_pointwise_loss(kind, D, d, param)), GS), aux[8], None)
            if red == NN_RED_MEAN and kind != NN_HUBER:     # sum(w f) / sum(w): also -out / sum(w)
                gw = g_sub(gw, g_mul(node_tensor(i, aux[10]), GS))
            gw = t_fit(gw, None, aux[9])
        if r.n_in > 2:
            return (gi, gt, gw)
        return (gi, gt)
    finally:
        release_phantoms(phantoms)

cdef object gv_bce(Py_ssize_t i, Record* r, object G, char* want):
    x = <object>r.saved[0]
    t = <object>r.saved[1]
    w = saved_value(r, 2)
    red, count = <tuple>r.aux
    GS = mean_adjoint(G, float(count), x.size == 0) if red == NN_RED_MEAN else G
    if w is not None:
        GS = g_mul(wrap(w), GS)
    X = in_value(r, 0, x)
    gx = gt = None
    if want[0]:
        # (x - t) / max((1 - x) x, EPSILON) * g: the clamped denominator is constant
        eps = x.dtype.type(BCE_EPSILON)
        den = g_where(np.logical_not((1 - x) * x < eps), g_mul(binary_op(OP_RSUB, 1, X), X),
                      float(eps))
        gx = g_mul(g_div(g_sub(X, in_value(r, 1, t)), den), GS)
    if want[1]:                                         # -logit(x), numpy's values
        L = exact(np.log1p(np.negative(x)) - np.log(x),
                  g_sub(log1p(g_neg(X)), unary_op(OP_LOG, <TensorBase>X)))
        gt = g_mul(L, GS)
    return (gx, gt)

cdef object gv_bce_logits(Py_ssize_t i, Record* r, object G, char* want):
    x = <object>r.saved[0]
    t = <object>r.saved[1]
    w, pw, red, count, xs, xd, ts, td = <tuple>r.aux
    GS = mean_adjoint(G, float(count), x.size == 0) if red == NN_RED_MEAN else G
    if w is not None:
        GS = g_mul(wrap(nd(w)), GS)
    X = t_cast(in_value(r, 0, x if xd is None else x.astype(xd)), x.dtype)
    T = t_cast(in_value(r, 1, t if td is None else t.astype(td)), t.dtype)
    # the compiled VJP's numpy values (exact()), with the derivatives of recorded ops
    l1p_v = np.log1p(np.exp(np.negative(np.abs(x))))
    ls_v = np.minimum(x, 0) - l1p_v
    # log sigmoid(x) = -softplus(-x) and log sigmoid(-x) = -softplus(x): derivatives sigmoid(-x)
    # and -sigmoid(x), right at x = 0 too (a rebuilt min(x, 0) - log1p(exp(-|x|)) has derivative
    # 0 there).  The threshold only keeps exp() finite: beyond it sigmoid rounds to 1 anyway.
    cdef double thr = 40.0 if x.dtype.itemsize >= 8 else 20.0
    gx = gt = None
    if want[0]:
        sig = exact(np.exp(ls_v), sigmoid(<TensorBase>X))
        if pw is None:
            gx = g_mul(g_sub(sig, T), GS)
        else:
            pt = g_mul(wrap(nd(pw)), T)
            gx = g_mul(g_sub(g_mul(g_sub(g_add(pt, 1), T), sig), pt), GS)
        gx = t_fit(gx, xs, xd)
    if want[1]:
        if pw is None:
            gt = g_mul(g_neg(X), GS)
        else:
            lsn = exact(np.minimum(np.negative(x), 0) - l1p_v,             # log sigmoid(-x)
                        g_neg(softplus(<TensorBase>X, 1.0, thr)))
            ls = exact(ls_v, g_neg(softplus(<TensorBase>g_neg(X), 1.0, thr)))  # log sigmoid(x)
            gt = g_mul(g_sub(lsn, g_mul(ls, wrap(nd(pw)))), GS)
        gt = t_fit(gt, ts, td)
    return (gx, gt)

cdef object gv_layer_norm(Py_ssize_t i, Record* r, object G, char* want):
    xhat = <object>r.saved[0]
    rstd = <object>r.saved[1]
    wc = saved_value(r, 2)
    cdef tuple aux = <tuple>r.aux
    in_shape, norm_shape, M, N, dt, wdt, eps = aux
    cdt = xhat.dtype
    cdef list phantoms = []
    try:
        # xhat and rstd recomputed for their derivatives (invariant to a shift of the input: a
        # phantom on xhat / rstd will do), their values the saved ones
        X = input_or_phantom(r, 0, (xhat / rstd).astype(dt).reshape(in_shape), phantoms)
        if X is not None:
            X2 = t_cast(reshape_to(<TensorBase>X, (M, N)), cdt)
            XC = g_sub(X2, reduce_op(OP_MEAN, <TensorBase>X2, 1, True))
            VAR = reduce_op(OP_MEAN, <TensorBase>g_mul(XC, XC), 1, True)
            RS = binary_op(OP_DIV, 1, sqrt(g_add(VAR, eps)))
            XHAT = exact(xhat, g_mul(XC, RS))
            RSTD = exact(rstd, RS)
        else:
            XHAT = wrap(xhat)
            RSTD = wrap(rstd)
        G2 = t_cast(reshape_to(<TensorBase>G, (M, N)), cdt)
        W = None
        if wc is not None:
            if rec_inputs(r)[1] >= 0:
                wval = wc.reshape(norm_shape)
                W = t_cast(reshape_to(<TensorBase>in_value(r, 1, wval if wval.dtype == wdt else
                                                           wval.astype(wdt)), (N,)), cdt)
            else:
                W = wrap(wc)
        gi = gw = gb = None
        if want[0]:
            GX = g_mul(G2, W) if W is not None else G2
            a = g_div(reduce_op(OP_SUM, <TensorBase>GX, 1, True), N)
            b = g_div(reduce_op(OP_SUM, <TensorBase>g_mul(GX, XHAT), 1, True), N)
            gi = g_mul(RSTD, g_sub(g_sub(GX, a), g_mul(XHAT, b)))
            gi = t_cast(reshape_to(<TensorBase>gi, tuple(in_shape)), dt)
        if r.n_in > 1 and want[1]:
            gw = reduce_op(OP_SUM, <TensorBase>g_mul(G2, XHAT), 0, False)
            gw = t_cast(reshape_to(<TensorBase>gw, tuple(norm_shape)), wdt)
        if r.n_in > 2 and want[2]:
            gb = reduce_op(OP_SUM, <TensorBase>G2, 0, False)
            gb = t_cast(reshape_to(<TensorBase>gb, tuple(norm_shape)), wdt)
        gw = linked_without_gradient(OP_LAYER_NORM_BACKWARD, gw, r)     # (see above)
        gb = linked_without_gradient(OP_LAYER_NORM_BACKWARD, gb, r)
        if r.n_in == 1:
            return gi
        if r.n_in == 2:
            return (gi, gw)
        return (gi, gw, gb)
    finally:
        release_phantoms(phantoms)


cdef object gv_batch_norm(Py_ssize_t i, Record* r, object G, char* want):
    # As gv_layer_norm, per channel over axes (0, 2) of the (N, C, S) view; in evaluation the
    # statistics are constants.
    xhat = <object>r.saved[0]
    rstd = <object>r.saved[1]
    wc = saved_value(r, 2)
    in_shape, dt, wdt, eps, training = <tuple>r.aux
    cdef tuple shape3 = tuple(xhat.shape)
    cdef Py_ssize_t C = shape3[1]
    cdt = xhat.dtype
    cdef list phantoms = []
    try:
        XHAT = wrap(xhat)
        RSTD = wrap(rstd)
        if training:
            # xhat and rstd recomputed for their derivatives (invariant to a shift of the input:
            # a phantom on xhat / rstd will do), their values the saved ones
            X = input_or_phantom(r, 0, (xhat / rstd).astype(dt).reshape(in_shape), phantoms)
            if X is not None:
                X3 = t_cast(reshape_to(<TensorBase>X, shape3), cdt)
                XC = g_sub(X3, reduce_op(OP_MEAN, <TensorBase>X3, (0, 2), True))
                VAR = reduce_op(OP_MEAN, <TensorBase>g_mul(XC, XC), (0, 2), True)
                RS = binary_op(OP_DIV, 1, sqrt(g_add(VAR, eps)))
                XHAT = exact(xhat, g_mul(XC, RS))
                RSTD = exact(rstd, RS)
        elif rec_inputs(r)[0] >= 0:
            # xhat = (x - running mean) * rstd: linear in the input
            X = input_or_phantom(r, 0, (xhat / rstd).astype(dt).reshape(in_shape), phantoms)
            X3 = t_cast(reshape_to(<TensorBase>X, shape3), cdt)
            XHAT = exact(xhat, g_mul(X3, RSTD))
        G3 = t_cast(reshape_to(<TensorBase>G, shape3), cdt)
        W = None
        if wc is not None:
            if rec_inputs(r)[1] >= 0:
                W = t_cast(reshape_to(<TensorBase>in_value(r, 1, wc if wc.dtype == wdt else
                                                           wc.astype(wdt)), (1, C, 1)), cdt)
            else:
                W = wrap(wc.reshape(1, C, 1))
        gi = gw = gb = None
        if want[0]:
            GX = g_mul(G3, W) if W is not None else G3
            if training:
                a = reduce_op(OP_MEAN, <TensorBase>GX, (0, 2), True)
                b = reduce_op(OP_MEAN, <TensorBase>g_mul(GX, XHAT), (0, 2), True)
                gi = g_mul(RSTD, g_sub(g_sub(GX, a), g_mul(XHAT, b)))
            else:
                gi = g_mul(GX, RSTD)
            gi = linked_without_gradient(OP_BATCH_NORM_BACKWARD,
                                         t_cast(reshape_to(<TensorBase>gi, tuple(in_shape)), dt),
                                         r)
        if r.n_in > 1 and want[1]:
            gw = t_cast(reduce_op(OP_SUM, <TensorBase>g_mul(G3, XHAT), (0, 2), False), wdt)
        if r.n_in > 2 and want[2]:
            gb = t_cast(reduce_op(OP_SUM, <TensorBase>G3, (0, 2), False), wdt)
        if r.n_in == 1:
            return gi
        if r.n_in == 2:
            return (gi, gw)
        return (gi, gw, gb)
    finally:
        release_phantoms(phantoms)


# -- complex ops (ops_complex.pxi): their formulas on tensors, the conjugates recorded ----------

cdef object gv_complex_mul(Py_ssize_t i, Record* r, object G, char* want):
    ga = g_mul(G, t_conj(in_value(r, 1, saved_value(r, 1)))) if want[0] else None
    gb = g_mul(G, t_conj(in_value(r, 0, saved_value(r, 0)))) if want[1] else None
    return t_fit_binary(r, ga, gb)

cdef object gv_complex_div(Py_ssize_t i, Record* r, object G, char* want):
    B = in_value(r, 1, saved_value(r, 1))
    ga = g_div(G, t_conj(B)) if want[0] else None
    gb = None
    if want[1]:
        A = in_value(r, 0, saved_value(r, 0))
        gb = g_mul(g_neg(G), t_conj(g_div(g_div(A, B), B)))
    return t_fit_binary(r, ga, gb)

cdef object gv_holomorphic(Py_ssize_t i, Record* r, object G, char* want):
    import tapegrad
    if HOLOMORPHIC_READS_OUTPUT[r.op]:
        W, divides = holomorphic_factor(r.op, None, own_output(i, r, 0), tapegrad)
    else:
        W, divides = holomorphic_factor(r.op, in_value(r, 0, saved_value(r, 0)), None, tapegrad)
    return g_div(G, t_conj(W)) if divides else g_mul(G, t_conj(W))

cdef object gv_conj(Py_ssize_t i, Record* r, object G, char* want):
    return t_conj(G)

cdef object gv_complex_abs(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, complex_call("sgn", (in_value(r, 0, saved_value(r, 0)),)))


cdef int register_graph_vjps() except -1:
    cdef int j
    for j in range(MAX_OPS):
        GRAPH_VJP[j] = NULL
    for op in (OP_ADD,):
        GRAPH_VJP[op] = gv_add
    for op in (OP_SUB, OP_RSUB):
        GRAPH_VJP[op] = gv_sub
    GRAPH_VJP[OP_MUL] = gv_mul
    GRAPH_VJP[OP_COMPLEX_MUL] = gv_complex_mul
    GRAPH_VJP[OP_COMPLEX_DIV] = gv_complex_div
    GRAPH_VJP[OP_COMPLEX_ABS] = gv_complex_abs
    from tapegrad._core import _conj_opcodes, _holomorphic_opcodes
    for op in _holomorphic_opcodes():
        GRAPH_VJP[op] = gv_holomorphic
    for op in _conj_opcodes():
        GRAPH_VJP[op] = gv_conj
    for op in (OP_DIV, OP_RDIV):
        GRAPH_VJP[op] = gv_div
    for op in (OP_POW, OP_POW_T, OP_POW_R):
        GRAPH_VJP[op] = gv_pow
    GRAPH_VJP[OP_NEG] = gv_neg
    GRAPH_VJP[OP_EXP] = gv_exp
    GRAPH_VJP[OP_LOG] = gv_log
    GRAPH_VJP[OP_TANH] = gv_tanh
    GRAPH_VJP[OP_RELU] = gv_relu
    GRAPH_VJP[OP_SIGMOID] = gv_sigmoid
    GRAPH_VJP[OP_SQRT] = gv_sqrt
    GRAPH_VJP[OP_SIN] = gv_sin
    GRAPH_VJP[OP_COS] = gv_cos
    GRAPH_VJP[OP_ABS] = gv_abs
    GRAPH_VJP[OP_WHERE] = gv_where
    GRAPH_VJP[OP_SIGN] = gv_sign
    GRAPH_VJP[OP_LOG1P] = gv_log1p
    GRAPH_VJP[OP_EXPM1] = gv_expm1
    GRAPH_VJP[OP_RSQRT] = gv_rsqrt
    GRAPH_VJP[OP_RECIPROCAL] = gv_reciprocal
    GRAPH_VJP[OP_ERF] = gv_erf
    for op in (OP_CLAMP, OP_CLAMP_MIN, OP_CLAMP_MAX):
        GRAPH_VJP[op] = gv_clamp_scalar
    for op in (OP_CLAMP_T, OP_CLAMP_MIN_T, OP_CLAMP_MAX_T):
        GRAPH_VJP[op] = gv_clamp_tensor
    for op in (OP_MAXIMUM, OP_MINIMUM):
        GRAPH_VJP[op] = gv_maximum
    GRAPH_VJP[OP_LEAKY_RELU] = gv_leaky_relu
    GRAPH_VJP[OP_ELU] = gv_elu
    GRAPH_VJP[OP_SOFTPLUS] = gv_softplus
    GRAPH_VJP[OP_SILU] = gv_silu
    GRAPH_VJP[OP_GELU] = gv_gelu
    for op in (OP_SUM, OP_SUM_DIM):
        GRAPH_VJP[op] = gv_sum
    for op in (OP_MEAN, OP_MEAN_DIM):
        GRAPH_VJP[op] = gv_mean
    for op in (OP_MAX_ALL, OP_MIN_ALL, OP_AMAX, OP_AMIN):
        GRAPH_VJP[op] = gv_evenly
    for op in (OP_MAX_DIM, OP_MIN_DIM):
        GRAPH_VJP[op] = gv_select_dim
    for op in (OP_PROD, OP_PROD_DIM):
        GRAPH_VJP[op] = gv_prod
    for op in (OP_VAR, OP_STD):
        GRAPH_VJP[op] = gv_var
    GRAPH_VJP[OP_LOGSUMEXP] = gv_logsumexp
    GRAPH_VJP[OP_NORM] = gv_norm
    for op in (OP_DOT, OP_MV, OP_MM, OP_BMM, OP_MATMUL_VM, OP_MATMUL_VIEW, OP_MATMUL_CLONE,
               OP_MATMUL_T, OP_ADDMM, OP_LINEAR_VIEW, OP_LINEAR_ADD):
        GRAPH_VJP[op] = gv_matmul
    for op in (OP_VIEW, OP_RESHAPE_ALIAS, OP_UNSAFE_VIEW, OP_SQUEEZE, OP_SQUEEZE_DIM,
               OP_SQUEEZE_DIMS, OP_UNSQUEEZE, OP_SQUEEZE_INPLACE, OP_SQUEEZE_DIM_INPLACE,
               OP_SQUEEZE_DIMS_INPLACE, OP_UNSQUEEZE_INPLACE):
        GRAPH_VJP[op] = gv_reshape
    for op in (OP_TRANSPOSE, OP_T, OP_PERMUTE, OP_TRANSPOSE_INPLACE, OP_T_INPLACE):
        GRAPH_VJP[op] = gv_permute
    GRAPH_VJP[OP_OUTER] = gv_outer
    GRAPH_VJP[OP_DROPOUT] = gv_dropout
    GRAPH_VJP[OP_EXPAND] = gv_expand
    GRAPH_VJP[OP_CLONE] = gv_identity
    GRAPH_VJP[OP_TO_COPY] = gv_to_copy
    GRAPH_VJP[OP_SOFTMAX] = gv_softmax
    GRAPH_VJP[OP_LOG_SOFTMAX] = gv_log_softmax
    for op in (OP_SELECT, OP_SLICE, OP_INDEX, OP_ALIAS, OP_INDEX_UNSQUEEZE, OP_AS_STRIDED,
               OP_UNFOLD):
        GRAPH_VJP[op] = gv_index
    GRAPH_VJP[OP_INDEX_SCATTER] = gv_index_scatter
    GRAPH_VJP[OP_CAT] = gv_cat
    GRAPH_VJP[OP_STACK] = gv_stack
    for op in (OP_SPLIT, OP_SPLIT_SIZES, OP_UNBIND, OP_UNSAFE_SPLIT, OP_UNSAFE_SPLIT_SIZES):
        GRAPH_VJP[op] = gv_scatter_basic
    GRAPH_VJP[OP_REPEAT] = gv_repeat
    GRAPH_VJP[OP_CONSTANT_PAD] = gv_pad
    for op in (OP_GATHER, OP_INDEX_SELECT):
        GRAPH_VJP[op] = gv_take
    for op in (OP_MASKED_FILL, OP_MASKED_FILL_T):
        GRAPH_VJP[op] = gv_masked_fill
    GRAPH_VJP[OP_MASKED_SELECT] = gv_masked_select
    for op in (OP_SETITEM, OP_COPY, OP_SETITEM_FILL, OP_INDEX_PUT):
        GRAPH_VJP[op] = gv_setitem
    GRAPH_VJP[OP_OVERLAPPING_SLICES] = gv_overlapping_slices
    for op in NN_OVERWRITE_OPS.values():
        GRAPH_VJP[<int>op] = gv_overwrite
    GRAPH_VJP[OP_EMBEDDING] = gv_embedding
    for op in (OP_NLL, OP_NLL2D, OP_NLL_VIEW):
        GRAPH_VJP[op] = gv_nll
    GRAPH_VJP[OP_CE_SMOOTH] = gv_ce_smooth
    for op in (OP_CE_PROBS, OP_CE_PROBS_MEAN):
        GRAPH_VJP[op] = gv_ce_probs
    for op in (OP_MSE_LOSS, OP_SMOOTH_L1_LOSS, OP_HUBER_LOSS, OP_PW_ABS, OP_PW_MEAN, OP_PW_SUM,
               OP_PW_MUL, OP_PW_DIV):
        GRAPH_VJP[op] = gv_pointwise
    GRAPH_VJP[OP_BCE] = gv_bce
    GRAPH_VJP[OP_BCE_LOGITS] = gv_bce_logits
    GRAPH_VJP[OP_LAYER_NORM] = gv_layer_norm
    GRAPH_VJP[OP_BATCH_NORM] = gv_batch_norm
    for op in (OP_LOG10, OP_LOG2, OP_SINH, OP_COSH, OP_ASIN, OP_ACOS, OP_ATAN, OP_FLOOR, OP_CEIL,
               OP_ROUND, OP_ROUND_DECIMALS, OP_TRUNC, OP_FRAC):
        GRAPH_VJP[op] = gv_math1
    for op in (OP_ATAN2, OP_FMOD, OP_FMOD_T, OP_REMAINDER, OP_REMAINDER_T):
        GRAPH_VJP[op] = gv_math2
    GRAPH_VJP[OP_NOT_IMPLEMENTED] = gv_not_implemented
    GRAPH_VJP[OP_THRESHOLD_BACKWARD] = gv_through_input
    GRAPH_VJP[OP_READS_INPUT] = gv_zero_to_read_input
    GRAPH_VJP[OP_LEAKY_RELU_BACKWARD] = gv_through_input
    GRAPH_VJP[OP_NLL_BACKWARD] = gv_through_input
    GRAPH_VJP[OP_NLL2D_BACKWARD] = gv_through_input
    for op in (OP_HARDTANH_BACKWARD, OP_HARDSHRINK_BACKWARD, OP_SOFTSHRINK_BACKWARD):
        GRAPH_VJP[op] = gv_through_input
    GRAPH_VJP[OP_LAYER_NORM_BACKWARD] = gv_link_without_gradient
    GRAPH_VJP[OP_BATCH_NORM_BACKWARD] = gv_link_without_gradient
    GRAPH_VJP[OP_TANH_BACKWARD] = gv_activation_backward
    GRAPH_VJP[OP_SIGMOID_BACKWARD] = gv_activation_backward
    GRAPH_VJP[OP_TRIL] = gv_triangle
    GRAPH_VJP[OP_TRIU] = gv_triangle
    return 0


register_graph_vjps()


def _graph_vjp_ops():
    """The grad_fn names whose backward can be recorded (create_graph=True), for docs and tests."""
    return sorted({OP_NAMES[j] for j in range(len(OP_NAMES)) if GRAPH_VJP[j] != NULL})


def _graph_vjp_missing():
    """(opcode, grad_fn name) of the differentiable ops without a graph VJP (several opcodes may
    share a name, so _graph_vjp_ops() alone cannot tell); custom Functions are handled apart, and
    so are the ops of replay steps only (KernelFunctionBackward, CrossEntropyReplayStep:
    records of a replay's steps, never on the tape; a create_graph backward re-runs the call
    eagerly)."""
    return [(j, OP_NAMES[j]) for j in range(len(OP_NAMES))
            if OP_VJP[j] != NULL and GRAPH_VJP[j] == NULL
            and j != OP_FUNCTION and j != OP_FN_OUTPUT
            and OP_NAMES[j] not in ("KernelFunctionBackward", "CrossEntropyReplayStep")]


# -- create_graph: the sweep with recorded VJPs (graph_vjp.pxi) ---------------------------------

cdef object graph_engine_run(tuple outputs, list grads, bint retain_graph, tuple inputs,
                             bint allow_unused, bint accumulate_grad):
    """engine_run for create_graph=True: seeds are tensors and so are the results."""
    cdef Py_ssize_t i, n = len(outputs)
    cdef TensorBase t
    cdef list roots = [], seeds = [], targets = None
    for i in range(n):
        t = <TensorBase>outputs[i]
        g = grads[i]
        if not isinstance(g, TensorBase):
            g = wrap(g)
        if (<TensorBase>g)._array.dtype != t._array.dtype:
            g = convert(<TensorBase>g, t._array.dtype, False)
        roots.append(node_for_input(t))
        seeds.append(g)
    if inputs is not None:
        targets = [(<TensorBase>x)._node for x in inputs]
    mode = SWEEP_ACCUMULATE if inputs is None else (SWEEP_INPUTS if accumulate_grad
                                                    else SWEEP_CAPTURE)
    if accumulate_grad:
        # Warned from one Python line (as PyTorch warns from one line of its autograd/graph.py),
        # so the default filter shows it once per process, not once per calling line.
        from tapegrad.autograd.graph import _warn_create_graph_cycle
        _warn_create_graph_cycle()
    with IeeeResults():
        captured = graph_sweep(roots, seeds, retain_graph, mode, targets)
    if accumulate_grad:
        return None
    cdef list results = list(captured_results(inputs, captured, allow_unused))
    for i in range(len(results)):       # (a target with a Tensor.grad_dtype: cast to it)
        if results[i] is not None:
            dt = _grad_creation_dtype(<TensorBase>inputs[i])
            if (<TensorBase>results[i])._array.dtype != dt:
                results[i] = convert(<TensorBase>results[i], dt, False)
    return tuple(results)


cdef object t_accumulate(dict adj, Py_ssize_t k, object g, Record* producer, Py_ssize_t q):
    """Add g, output q of `producer`'s recorded VJP (NULL: seed q), to record k's adjoint,
    summed first to k's recorded shape where it needs it (_core's arriving_shape)."""
    if TAPE.recs[k].extra != NULL and g is not UNDEFINED_GRAD:
        shape = arriving_shape(k, g, producer, q)
        if shape is not None:
            g = t_sum_to(g, shape)
    prev = adj.get(k)
    if g is UNDEFINED_GRAD:             # (adds nothing; the first real gradient replaces it)
        if prev is None:
            adj[k] = g
        return None
    adj[k] = g if prev is None or prev is UNDEFINED_GRAD else binary_op(OP_ADD, prev, g)


cdef int deliver_graph_grad(TensorBase t, object g, bint retained=False,
                            object made_in=None) except -1:
    """.grad accumulation with create_graph: a recorded copy the first time, then an
    out-of-place recorded sum (PyTorch's AccumulateGrad under grad mode).  The copy is PyTorch's
    (clone_obey_contract): a new tensor laid out as the leaf, copy_'d into (CopyBackwards).  A
    non-leaf's retained .grad (`retained`): its retains_grad hook's row-major clone
    (CloneBackward0) the first time."""
    A = t._array
    cdef TensorBase G = <TensorBase>g
    if G._array.shape != A.shape:
        if t._node >= 0 and TAPE.recs[t._node].extra != NULL and getattr(
                <object>TAPE.recs[t._node].extra, "out_shape", None) is not None:
            # (t's node keeps its recorded shape, which the gradient has: _core's
            # keeps_recorded_shape)
            A = G._array
        else:
            G = <TensorBase>expand(G, tuple(A.shape))
    # the leaf's dtype, or its Tensor.grad_dtype, or the one it had (sweep.pxi: leaf_grad_dtype)
    dt = made_in if made_in is not None else _grad_creation_dtype(t)
    if G._array.dtype != dt:
        G = <TensorBase>convert(G, dt, False)
    if t._grad is None and retained:
        E = wrap(np.array(G._array, order="C", copy=True))
        if G._requires_grad:
            record_from(OP_CLONE, <TensorBase>E, (G,))
        t._grad = E
    elif t._grad is None:
        # PyTorch's gradient layout contract: a leaf's first .grad has the leaf's strides when
        # the leaf is laid out densely (transposed, permuted), else row-major (a matmul VJP's
        # transposed result would otherwise stay transposed, and grad.view(n, -1) in an
        # optimizer fail).
        if not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A) and dense_layout(<cnp.ndarray>A):
            E = wrap(np.empty_like(A, dtype=dt))
        else:
            E = wrap(np.empty(A.shape, dtype=dt))
        setitem_op(E, Ellipsis, G, True, True)
        t._grad = E
    elif not isinstance(t._grad, TensorBase):      # a sparse .grad: the sum is dense
        t._grad = binary_op(OP_ADD, G, t._grad.to_dense())
    else:
        t._grad = binary_op(OP_ADD, t._grad, G)
    return 0


cdef Py_ssize_t graph_pass_undefined(dict adj, Py_ssize_t i, char* need, bint retain_graph,
                                     Py_ssize_t lowest) except -2:
    """graph_sweep's pass_undefined (sweep.pxi): record i got only the undefined gradient."""
    cdef list to = undefined_passes_to(i, need, retain_graph)
    cdef Py_ssize_t k, n_out
    if to is None:                      # a custom Function's output: its Function's slot
        k = TAPE.recs[i].inp[0]
        if need != NULL and not need[k]:
            return lowest
        n_out = <Py_ssize_t>TAPE.recs[k].scalar
        lst = adj.get(k)
        if lst is None:
            lst = [None] * n_out + [-1] * n_out
            adj[k] = lst
        lst[n_out + <Py_ssize_t>TAPE.recs[i].scalar] = i
        return k if k < lowest else lowest
    for k in to:
        if k not in adj:
            adj[k] = UNDEFINED_GRAD
        if k < lowest:
            lowest = k
    return lowest


cdef object graph_tensor_hooks(Py_ssize_t i, object g):
    """Record i's tensor hooks on its gradient g (a tensor), as the node starts (a leaf's
    AccumulateGrad pre-hooks too; another node's pre-hooks run after its retained .grad)."""
    if TAPE.recs[i].extra != NULL:
        g = run_graph_hooks(i, g, HOOKS_ALL if TAPE.recs[i].op == OP_LEAF else HOOKS_TENSOR)
        read = getattr(<object>TAPE.recs[i].extra, "read_input", None)
        if read is not None:
            g = linked_to_read_input(g, <TensorBase>read)
    return g


cdef int graph_accumulate_leaf(Py_ssize_t i, object g, int mode, Py_ssize_t* slot,
                               list captured) except -1:
    """LEAF record i's AccumulateGrad with create_graph (sweep.pxi's accumulate_leaf)."""
    cdef Record* rec = &TAPE.recs[i]
    cdef object token
    if mode == SWEEP_CAPTURE:
        if PROFILING and slot[i] >= 0:
            profile_captured(rec)
        # (a view taken under no_grad has no gradient accumulator in PyTorch: the gradient
        # reaching it is dropped, for autograd.grad as for .grad)
        if slot[i] >= 0 and not (rec.out != NULL and no_grad_view_drops_grad(<TensorBase>rec.out)):
            captured[slot[i]] = g
    elif leaf_takes_grad(rec):
        if PROFILING:
            token = profiler_open("torch::autograd::AccumulateGrad", None)
            deliver_graph_grad(<TensorBase>rec.out, g, False, leaf_made_in(rec))
            profiler_close(token)
        else:
            deliver_graph_grad(<TensorBase>rec.out, g, False, leaf_made_in(rec))
        if TAPE.recs[i].extra != NULL:
            run_post_accumulate_hooks(i)
    return 0


cdef int graph_deliver_ready_leaves(list ready, dict adj, char* need, int mode, Py_ssize_t* slot,
                                    list captured) except -1:
    """The leaves PyTorch's queue runs now (ReadyOrder, ready_order.pxi), in its order; one with
    no gradient or only the undefined one is left to the walk."""
    cdef Py_ssize_t k
    for k in ready:
        if need != NULL and not need[k]:
            continue
        g = adj.get(k)
        if g is None or g is UNDEFINED_GRAD:
            continue
        del adj[k]
        graph_accumulate_leaf(k, graph_tensor_hooks(k, g), mode, slot, captured)
    return 0


cdef object graph_sweep(list roots, list seeds, bint retain_graph, int mode, list targets):
    """sweep() with tensor adjoints and each record's VJP recorded (GRAPH_VJP), grad mode on."""
    cdef Py_ssize_t nr = len(roots), nt = 0 if targets is None else len(targets)
    cdef Py_ssize_t top = -1, lowest, stop = 0, i, k, j, lo, n
    cdef char* need = NULL
    cdef Py_ssize_t* slot = NULL
    cdef char want[MAX_IN]
    cdef char* wantp
    cdef Record rec
    cdef Py_ssize_t* ins
    cdef int q, prev_disabled
    cdef graph_vjp_fn gvjp
    cdef dict adj = {}
    cdef list captured = None
    cdef object token = None            # the profiler's event of the node running (PROFILING)
    cdef ReadyOrder order = None        # when leaves are delivered, if Python can see it
    for j in range(nr):
        k = roots[j]
        if k > top:
            top = k
    lowest = top
    for j in range(nr):
        k = roots[j]
        if k < lowest:
            lowest = k
    n = top + 1
    if n <= 0:
        return [None] * nt if mode == SWEEP_CAPTURE else None
    if targets is not None:
        need = <char*>calloc(n, 1)
        slot = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
        if need == NULL or slot == NULL:
            free(need)
            free(slot)
            raise MemoryError("tapegrad: cannot allocate the adjoint table for backward")
        for i in range(n):
            slot[i] = -1
        lo = n
        for j in range(nt):
            k = targets[j]
            if 0 <= k < n:
                need[k] = 1
                if slot[k] < 0:
                    slot[k] = j
                if k < lo:
                    lo = k
        for i in range(lo + 1, n):
            if need[i] or (TAPE.recs[i].flags & RF_FREE):
                continue
            ins = rec_inputs(&TAPE.recs[i])
            for q in range(TAPE.recs[i].n_in):
                k = ins[q]
                if k >= lo and need[k]:
                    need[i] = 1
                    break
        stop = lo
        if mode == SWEEP_CAPTURE:
            captured = [None] * nt
    TAPE.sweeping += 1
    for j in range(nr):
        TAPE.recs[<Py_ssize_t>roots[j]].refcnt += 1
    prev_disabled = set_grad_disabled(0)    # the VJPs are recorded: gradients get a graph
    try:
        order = ready_order_for(roots, n, need)
        for j in range(nr):
            t_accumulate(adj, <Py_ssize_t>roots[j], seeds[j], NULL, j)
        i = top
        while i >= lowest and i >= stop:
            if order is not None:
                graph_deliver_ready_leaves(order.reached(i), adj, need, mode, slot, captured)
            g = adj.pop(i, None)
            if g is None or (need != NULL and not need[i]):
                i -= 1
                continue
            if g is UNDEFINED_GRAD:
                lowest = graph_pass_undefined(adj, i, need, retain_graph, lowest)
                i -= 1
                continue
            g = graph_tensor_hooks(i, g)
            rec = TAPE.recs[i]
            if rec.op == OP_LEAF:
                graph_accumulate_leaf(i, g, mode, slot, captured)
                i -= 1
                continue
            if (rec.flags & RF_RETAIN_GRAD) and rec.out != NULL:
                deliver_graph_grad(<TensorBase>rec.out, g, True)
            if mode == SWEEP_CAPTURE and slot[i] >= 0:
                captured[slot[i]] = g
            if rec.extra != NULL and has_node_prehooks(i):
                g = run_graph_hooks(i, g, HOOKS_NODE_PRE)     # (last, as in sweep.pxi)
            if rec.op == OP_FN_OUTPUT:
                k = rec.inp[0]
                if need == NULL or need[k]:
                    lst = adj.get(k)
                    if lst is None:
                        lst = [None] * (2 * <Py_ssize_t>TAPE.recs[k].scalar)
                        for q in range(<Py_ssize_t>TAPE.recs[k].scalar):
                            lst[<Py_ssize_t>TAPE.recs[k].scalar + q] = -1
                        adj[k] = lst
                    j = <Py_ssize_t>rec.scalar
                    lst[j] = g if lst[j] is None else binary_op(OP_ADD, lst[j], g)
                    lst[<Py_ssize_t>TAPE.recs[k].scalar + j] = i
                    if k < lowest:
                        lowest = k
                i -= 1
                continue
            ins = rec_inputs(&rec)
            if rec.n_in <= MAX_IN:
                wantp = &want[0]
            else:
                wantp = <char*>malloc(rec.n_in)
            if wantp == NULL:
                raise MemoryError()
            try:
                any_needed = False
                for q in range(rec.n_in):
                    k = ins[q]
                    wantp[q] = 1 if (k >= 0 and (need == NULL or need[k])) else 0
                    if wantp[q]:
                        any_needed = True
                if not any_needed:
                    if PROFILING and mode == SWEEP_CAPTURE and slot != NULL and slot[i] >= 0:
                        profile_captured(&rec)
                    i -= 1
                    continue
                for q in range(MAX_SAVED):
                    Py_XINCREF(rec.saved[q])
                Py_XINCREF(rec.aux)
                Py_XINCREF(rec.extra)
                if PROFILING:           # (the node's events: evaluate_function, then the node)
                    token = profiler_open(record_name(&rec), None)
                try:
                    if rec.flags & RF_RELEASED:
                        raise RuntimeError(BACKWARD_TWICE)
                    if rec.flags & RF_PACKED:
                        unpack_saved(&rec)      # (saved_hooks.pxi)
                    check_saved_versions(&rec)
                    if rec.op == OP_FUNCTION:
                        if isinstance(<object>rec.aux, CompiledBackward):
                            # the inputs' adjoints so far are its seeds (as the plain sweep's
                            # take_compiled_seeds): summed onto in the eager order
                            gseeds = None
                            if not ANOMALY_MODE and not has_node_hooks(&rec):
                                for q in range(rec.n_in):
                                    k = ins[q]
                                    if wantp[q] and TAPE.recs[k].extra == NULL and k in adj:
                                        if gseeds is None:
                                            gseeds = [None] * rec.n_in
                                        gseeds[q] = adj.pop(k)
                            grads = (<CompiledBackward>rec.aux).graph_backward(
                                [g] if rec.scalar == ONE_RECORD else <list>g, gseeds)
                            if gseeds is not None:      # (those the call gave nothing: back)
                                for q in range(rec.n_in):
                                    if gseeds[q] is not None and (<tuple>grads)[q] is None:
                                        adj[ins[q]] = gseeds[q]
                        else:
                            # + the record's own index: a saved output that died without a
                            # gradient is revived as a new output of this record
                            grads = FUNCTION_BACKWARD(<object>rec.aux, g + [i], True)
                            # (its None: PyTorch's undefined gradient, as in sweep.pxi)
                            grads = tuple([UNDEFINED_GRAD if gk is None else gk
                                           for gk in grads])
                        if rec.n_in == 1:
                            grads = grads[0]
                    else:
                        gvjp = GRAPH_VJP[rec.op]
                        if gvjp == NULL:
                            raise NotImplementedError(
                                f"create_graph=True: tapegrad cannot yet differentiate the "
                                f"backward of {OP_NAMES[rec.op]} (opcode {rec.op}): its "
                                "gradient would have no graph of its own. The ops whose "
                                "backward can be recorded are listed by "
                                "tapegrad._core._graph_vjp_ops().")
                        grads = gvjp(i, &rec, g, wantp)
                        if has_node_hooks(&rec):
                            grads = run_node_hooks(&rec, grads, g, True)
                except BaseException as e:
                    if ANOMALY_MODE:
                        anomaly_reraise(&rec, e)
                    raise
                finally:
                    for q in range(MAX_SAVED):
                        Py_XDECREF(rec.saved[q])
                    Py_XDECREF(rec.aux)
                    Py_XDECREF(rec.extra)
                    if token is not None:
                        profiler_close(token)
                        token = None
                if rec.n_in == 1:
                    if grads is not None:
                        t_accumulate(adj, ins[0], grads, &rec, 0)
                        if ins[0] < lowest:
                            lowest = ins[0]
                else:
                    for q in range(rec.n_in):
                        k = ins[q]
                        if not wantp[q]:
                            continue
                        gk = (<tuple>grads)[q]
                        if gk is None:
                            continue
                        t_accumulate(adj, k, gk, &rec, q)
                        if k < lowest:
                            lowest = k
            finally:
                if wantp != &want[0]:
                    free(wantp)
            if order is not None:
                graph_deliver_ready_leaves(order.ran_record(i), adj, need, mode, slot, captured)
            if not retain_graph:
                TAPE.release_saved(i)
                if rec.op == OP_FUNCTION:
                    release_function_ctx(i)
            i -= 1
        if captured is not None:
            for j in range(nt):
                k = targets[j]
                if 0 <= k < n and slot[k] != j:
                    captured[j] = captured[slot[k]]
    finally:
        set_grad_disabled(prev_disabled)
        TAPE.sweeping -= 1
        adj.clear()
        free(need)
        free(slot)
        for j in range(nr):
            TAPE.decref(<Py_ssize_t>roots[j])
    return captured


GRAPH_ENGINE_RUN = graph_engine_run     # backward / grad with create_graph=True (ops_registry.pxi)
