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
#     output again, so gradients of the gradient reach the original graph;
#   - inputs that need no gradient (-1) as constants.
# Records without a graph VJP raise NotImplementedError naming the op, rather than returning a
# gradient whose own derivative would silently be wrong.
#
# Ops that the graph VJPs use are themselves supported, so gradients of any order work:
# add, sub, mul, div, pow, neg, exp, log, tanh, sigmoid, relu, sqrt, sin, cos, abs, sum, mean,
# matmul / mm / bmm / mv / dot / linear, reshape / view / squeeze / unsqueeze / flatten,
# transpose / t / permute, expand, clone, dtype conversion, indexing (select, slice, advanced)
# and its transpose (the scatter below), cat, stack, split / chunk / unbind, where, softmax,
# log_softmax, outer, dropout, custom Functions.
# ---------------------------------------------------------------------------------------------


ctypedef object (*graph_vjp_fn)(Py_ssize_t i, Record* r, object G, char* want)

cdef graph_vjp_fn GRAPH_VJP[MAX_OPS]


cdef object node_tensor(Py_ssize_t k, object value):
    """The tensor that is record k's output: the live one, or a new one on `value` (the array
    saved for the value of that output), made record k's output again."""
    cdef TensorBase t
    if TAPE.recs[k].out != NULL:
        return <object>TAPE.recs[k].out
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


cdef inline object saved_value(Record* r, int j):
    return <object>r.saved[j] if r.saved[j] != NULL else None


cdef object in_value(Record* r, int j, object value):
    """Input j of record r as a graph operand: its record's output tensor, or a constant (a
    Python scalar stays one) when no gradient flows to it."""
    cdef Py_ssize_t k = rec_inputs(r)[j]
    if k >= 0:
        return node_tensor(k, value)
    if value is None or isinstance(value, (int, float, TensorBase)):
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
    return reshape_to(<TensorBase>G, shape)


cdef object t_cast(object G, object dt):
    if G is None or dt is None or (<TensorBase>G)._array.dtype == dt:
        return G
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
        gb = g_div(g_mul(g_neg(G), A), g_mul(B, B))
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
        # a**e * log(a), 0 where a == 0 and e >= 0
        out = own_output(i, r, 2)
        if isinstance(A, (int, float)):
            log_a = math.log(A) if A > 0 else (-math.inf if A == 0 else math.nan)
            gb = g_mul(G, g_mul(out, log_a))
            if A == 0:
                gb = where(wrap(nd(EV >= 0)), 0, gb)
        else:
            AV = (<TensorBase>A)._array
            gb = where(wrap(nd((AV == 0) & (EV >= 0))), 0,
                       g_mul(G, g_mul(out, unary_op(OP_LOG, <TensorBase>A))))
    return t_fit_binary(r, ga, gb)

cdef object gv_neg(Py_ssize_t i, Record* r, object G, char* want):
    return g_neg(G)

cdef object gv_exp(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, own_output(i, r, 0))

cdef object gv_log(Py_ssize_t i, Record* r, object G, char* want):
    return g_div(G, in_value(r, 0, saved_value(r, 0)))

cdef object gv_tanh(Py_ssize_t i, Record* r, object G, char* want):
    Y = own_output(i, r, 0)
    return g_mul(G, binary_op(OP_RSUB, 1, g_mul(Y, Y)))

cdef object gv_sigmoid(Py_ssize_t i, Record* r, object G, char* want):
    Y = own_output(i, r, 0)
    return g_mul(G, g_mul(Y, binary_op(OP_RSUB, 1, Y)))

cdef object gv_relu(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, mask_like(nd(<object>r.saved[0]) > 0, G))

cdef object gv_sqrt(Py_ssize_t i, Record* r, object G, char* want):
    return g_div(G, g_mul(own_output(i, r, 0), 2.0))

cdef object gv_sin(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, cos(in_value(r, 0, saved_value(r, 0))))

cdef object gv_cos(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, g_neg(sin(in_value(r, 0, saved_value(r, 0)))))

cdef object gv_abs(Py_ssize_t i, Record* r, object G, char* want):
    return g_mul(G, wrap(ucall(TG_SIGN, <object>r.saved[0])))

cdef object gv_where(Py_ssize_t i, Record* r, object G, char* want):
    C = <object>r.saved[0]
    ga = where(wrap(C), G, 0) if want[0] else None
    gb = where(wrap(C), 0, G) if want[1] else None
    return t_fit_binary(r, ga, gb)


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

cdef object gv_mean(Py_ssize_t i, Record* r, object G, char* want):
    return expand_back(g_div(G, r.scalar), <tuple>r.aux)

cdef object gv_matmul(Py_ssize_t i, Record* r, object G, char* want):
    shape_a, shape_b, trans_b, bias_shape, bias_dtype = <tuple>r.aux
    cdef Py_ssize_t na = len(shape_a), nb = len(shape_b)
    ga = gb = gc = None
    if want[0]:
        SB = saved_value(r, 1)
        if trans_b:
            B = transpose(<TensorBase>in_value(r, 1, None if SB is None else SB.T), -1, -2) \
                if nb > 1 else in_value(r, 1, SB)
        else:
            B = in_value(r, 1, SB)
        if nb == 1:
            ga = g_mul(G, B) if na == 1 else g_mul(unsqueeze(<TensorBase>G, -1), B)
        else:
            G2 = G if na > 1 else unsqueeze(<TensorBase>G, -2)
            ga = matmul(G2, transpose(<TensorBase>B, -1, -2))
            ga = t_sum_to(ga, shape_a if na > 1 else (1, shape_a[na - 1]))
        ga = reshape_to(<TensorBase>ga, tuple(shape_a))
    if want[1]:
        A = in_value(r, 0, saved_value(r, 0))
        if na == 1:
            if nb == 1:
                gb = g_mul(G, A)
            else:
                gb = g_mul(reshape_to(<TensorBase>A, (shape_a[0], 1)), unsqueeze(<TensorBase>G, -2))
                gb = t_sum_to(gb, shape_b)
        else:
            G2 = unsqueeze(<TensorBase>G, -1) if nb == 1 else G
            gb = matmul(transpose(<TensorBase>A, -1, -2), G2)
            gb = t_sum_to(gb, shape_b if nb > 1 else (shape_b[0], 1))
        gb = reshape_to(<TensorBase>gb, tuple(shape_b))
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
    return reshape_to(<TensorBase>G, <tuple>r.aux)

cdef object gv_permute(Py_ssize_t i, Record* r, object G, char* want):
    return permuted(OP_PERMUTE, <TensorBase>G, list(<tuple>r.aux))

cdef object gv_expand(Py_ssize_t i, Record* r, object G, char* want):
    return t_sum_to(G, <tuple>r.aux)

cdef object gv_identity(Py_ssize_t i, Record* r, object G, char* want):
    return G

cdef object gv_to_copy(Py_ssize_t i, Record* r, object G, char* want):
    return t_cast(G, <object>r.aux)

cdef object gv_softmax(Py_ssize_t i, Record* r, object G, char* want):
    Y = own_output(i, r, 0)
    axis, in_dt = <tuple>r.aux
    G = t_cast(G, (<TensorBase>Y)._array.dtype)
    GY = g_mul(G, Y)
    return t_cast(g_sub(GY, g_mul(Y, reduce_op(OP_SUM, <TensorBase>GY, axis, True))), in_dt)

cdef object gv_log_softmax(Py_ssize_t i, Record* r, object G, char* want):
    Y = own_output(i, r, 0)
    axis, in_dt = <tuple>r.aux
    G = t_cast(G, (<TensorBase>Y)._array.dtype)
    return t_cast(g_sub(G, g_mul(unary_op(OP_EXP, <TensorBase>Y),
                             reduce_op(OP_SUM, <TensorBase>G, axis, True))), in_dt)


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
        out = out[key2]
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
            grads.append(t_cast(recorded_index(G, (None, None, key, None, None)), dtypes[j]))
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
            grads.append(t_cast(recorded_index(G, (None, None, key, None, None)), dtypes[j]))
    return grads[0] if n == 1 else tuple(grads)

cdef object gv_scatter_basic(Py_ssize_t i, Record* r, object G, char* want):
    shape, dt, key = <tuple>r.aux
    return recorded_index_scatter(G, (shape, dt, key, None, None))

cdef object gv_index(Py_ssize_t i, Record* r, object G, char* want):
    return recorded_index_scatter(G, index_aux(r))

cdef object gv_index_scatter(Py_ssize_t i, Record* r, object G, char* want):
    return recorded_index(G, <tuple>r.aux)


cdef int register_graph_vjps() except -1:
    cdef int j
    for j in range(MAX_OPS):
        GRAPH_VJP[j] = NULL
    for op in (OP_ADD,):
        GRAPH_VJP[op] = gv_add
    for op in (OP_SUB, OP_RSUB):
        GRAPH_VJP[op] = gv_sub
    GRAPH_VJP[OP_MUL] = gv_mul
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
    for op in (OP_SUM, OP_SUM_DIM):
        GRAPH_VJP[op] = gv_sum
    for op in (OP_MEAN, OP_MEAN_DIM):
        GRAPH_VJP[op] = gv_mean
    for op in (OP_DOT, OP_MV, OP_MM, OP_BMM, OP_MATMUL_VM, OP_MATMUL_VIEW, OP_MATMUL_CLONE,
               OP_MATMUL_T, OP_ADDMM, OP_LINEAR_VIEW, OP_LINEAR_ADD):
        GRAPH_VJP[op] = gv_matmul
    for op in (OP_VIEW, OP_RESHAPE_ALIAS, OP_UNSAFE_VIEW, OP_SQUEEZE, OP_SQUEEZE_DIM,
               OP_SQUEEZE_DIMS, OP_UNSQUEEZE):
        GRAPH_VJP[op] = gv_reshape
    for op in (OP_TRANSPOSE, OP_T, OP_PERMUTE):
        GRAPH_VJP[op] = gv_permute
    GRAPH_VJP[OP_OUTER] = gv_outer
    GRAPH_VJP[OP_DROPOUT] = gv_dropout
    GRAPH_VJP[OP_EXPAND] = gv_expand
    GRAPH_VJP[OP_CLONE] = gv_identity
    GRAPH_VJP[OP_TO_COPY] = gv_to_copy
    GRAPH_VJP[OP_SOFTMAX] = gv_softmax
    GRAPH_VJP[OP_LOG_SOFTMAX] = gv_log_softmax
    for op in (OP_SELECT, OP_SLICE, OP_INDEX, OP_ALIAS, OP_INDEX_UNSQUEEZE):
        GRAPH_VJP[op] = gv_index
    GRAPH_VJP[OP_INDEX_SCATTER] = gv_index_scatter
    GRAPH_VJP[OP_CAT] = gv_cat
    GRAPH_VJP[OP_STACK] = gv_stack
    for op in (OP_SPLIT, OP_SPLIT_SIZES, OP_UNBIND):
        GRAPH_VJP[op] = gv_scatter_basic
    return 0


register_graph_vjps()


def _graph_vjp_ops():
    """The grad_fn names whose backward can be recorded (create_graph=True), for docs and tests."""
    return sorted({OP_NAMES[j] for j in range(len(OP_NAMES)) if GRAPH_VJP[j] != NULL})
