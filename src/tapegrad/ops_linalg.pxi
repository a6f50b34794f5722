# ---------------------------------------------------------------------------------------------
# Linear algebra: matmul / @ (1-D, 2-D, batched, broadcast-batched), mm, bmm, mv, dot, outer and
# nn.functional.linear.
#
# Forward and VJP are np.matmul (a C-level ufunc, BLAS for float32/float64).  One VJP serves them
# all: dA = g @ B^T and dB = A^T @ g, with 1-D operands lifted to matrices and batch dims that
# broadcasting added or stretched summed away (sum_to).  When one operand is a plain matrix and
# the other is batched (a linear layer on a batch), the matrix's gradient is one folded GEMM instead
# of a batch of products and a reduction.
#
# PyTorch routes matmul through dot / mv / mm / a folded mm / bmm depending on the operands' dims
# (and, for the folded paths, on which operand requires grad); the grad_fn name and the error
# messages follow that route, so matmul_route() reproduces it.  Operands must share a dtype, as in
# PyTorch (integer products are allowed, without grad).
# ---------------------------------------------------------------------------------------------


cdef inline str cpp_type_name(object np_dt):
    return C_TYPE_NAMES.get(np_dt.name, np_dt.name)


cdef Py_ssize_t shape_prod(object shape, Py_ssize_t start, Py_ssize_t stop):
    cdef Py_ssize_t n = 1, i
    for i in range(start, stop):
        n *= <Py_ssize_t>shape[i]
    return n


cdef inline object last(object shape):
    return shape[len(shape) - 1]


cdef inline object second_last(object shape):
    return shape[len(shape) - 2]


# -- PyTorch's shape and dtype checks, with its messages -----------------------------------------

cdef int check_mm(Py_ssize_t n, Py_ssize_t k, Py_ssize_t m, Py_ssize_t p, object dta,
                  object dtb) except -1:
    if k != m:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {m}x{p})")
    if dta != dtb:
        raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                           f"{cpp_type_name(dta)} != {cpp_type_name(dtb)}")
    if dta.kind == "b":
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    return 0


cdef int check_mv(Py_ssize_t n, Py_ssize_t k, Py_ssize_t m, object dtm, object dtv) except -1:
    if k != m:
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({m})")
    if dtm != dtv:
        raise RuntimeError("addmv input tensors must have the same dtype, but got "
                           f"{scalar_type_name(dtv)}, {scalar_type_name(dtm)}, and "
                           f"{scalar_type_name(dtv)}")
    if dtm.kind == "b":
        raise NotImplementedError("\"addmv_impl_cpu\" not implemented for 'Bool'")
    return 0


cdef int check_dot(Py_ssize_t n, Py_ssize_t m, object dta, object dtb) except -1:
    if dta != dtb:
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{scalar_type_name(dta)} and {scalar_type_name(dtb)}")
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to "
                           f"have the same number of elements, but got {n} and {m} elements "
                           "respectively")
    if dta.kind == "b":
        raise NotImplementedError("\"dot\" not implemented for 'Bool'")
    return 0


cdef int check_bmm(Py_ssize_t b1, Py_ssize_t k, Py_ssize_t b2, Py_ssize_t m, object dta,
                   object dtb) except -1:
    if b1 != b2 or k != m:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b1}, {k}] but got: [{b2}, {m}].")
    if dta != dtb:
        raise RuntimeError(f"expected scalar type {scalar_type_name(dta)} but found "
                           f"{scalar_type_name(dtb)}")
    if dta.kind == "b":
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    return 0


cdef object product(object A, object B):
    """np.matmul(A, B) as an ndarray, as PyTorch's mm (or mv, dot) computes it (single-term zeros
    signed: single_term_product); IEEE results (inf, nan) without numpy's warnings."""
    if A.dtype.kind == "f":
        with IeeeResults():
            return folded_product(A, B)
    return nd(np.matmul(A, B))


cdef object folded_product(object A, object B, object bias=None, bint mm=True):
    """A @ B with a C-contiguous N-D A (N > 2) and a matrix B as one GEMM over A's rows folded into
    a matrix (numpy's matmul runs one small GEMM per leading index, which is slower for a layer's
    (batch, seq, features) input); other operands as np.matmul.  The caller owns the errstate.
    `bias`: a row added to the result's rows (product_a_bt's).  `mm`: as product's."""
    single = single_term_product(A, B) if mm else None
    if single is not None:
        return plus_bias(single, bias)
    if (cnp.PyArray_Check(A) and cnp.PyArray_Check(B) and cnp.PyArray_NDIM(<cnp.ndarray>A) > 2
            and cnp.PyArray_NDIM(<cnp.ndarray>B) == 2
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A)
            and last(A.shape) == B.shape[0]):
        nd_a = cnp.PyArray_NDIM(<cnp.ndarray>A)
        shape = A.shape
        out = product_a_bt(A.reshape(shape_prod(shape, 0, nd_a - 1), last(shape)), B, bias)
        return out.reshape(shape[:nd_a - 1] + (B.shape[1],))
    return product_a_bt(A, B, bias)


# PyTorch's mm of float32/float64 matrices is MKL's gemm, which stores an entry with a single term
# (inner dimension 1: an outer product as a matmul, a batch-of-1 Linear's weight gradient) as the
# product itself, so a zero product keeps its sign (0 * -1 is -0.0, printed `-0.`); numpy's BLAS
# adds the product to +0.0.  A product with one row or one column is MKL's gemv in PyTorch, which
# also sums from +0.0, as np.matmul does.  Non-zero entries are the same either way (one rounded
# product), so the broadcast product reproduces gemm's bits exactly and costs less.

cdef object single_term_product(object A, object B):
    """A @ B as PyTorch's mm computes it when the inner dimension is 1 and that mm has more than one
    row and column, both operands float32 or both float64: the broadcast product A * B.  The mm
    is A's rows (its leading dims folded) by B's columns for a matrix B (mm, a folded batch of A),
    or B's columns (its leading dims folded) by A's rows for a matrix A and a batch B (matmul's
    transposed fold).  None for any other product."""
    if not (cnp.PyArray_Check(A) and cnp.PyArray_Check(B)):
        return None
    cdef cnp.ndarray a = <cnp.ndarray>A, b = <cnp.ndarray>B
    cdef int t = cnp.PyArray_TYPE(a), da = cnp.PyArray_NDIM(a), db = cnp.PyArray_NDIM(b)
    if (da < 2 or db < 2 or (da > 2 and db > 2)
            or (t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64) or cnp.PyArray_TYPE(b) != t
            or cnp.PyArray_DIM(a, da - 1) != 1 or cnp.PyArray_DIM(b, db - 2) != 1):
        return None
    if db == 2:
        if cnp.PyArray_SIZE(a) < 2 or cnp.PyArray_DIM(b, 1) < 2:
            return None
    elif cnp.PyArray_SIZE(b) < 2 or cnp.PyArray_DIM(a, 0) < 2:
        return None
    return nd(np.multiply(a, b))


cdef object mm_product(object A, object B):
    """A @ B as PyTorch's mm computes it (the gradients' products), B a matrix: the single-term
    product where it applies, else np.matmul.  (A batch B is bmm's in a gradient as often as a
    transposed fold's: np.matmul's.)  The caller owns the errstate."""
    single = single_term_product(A, B) if B.ndim == 2 else None
    return nd(np.matmul(A, B)) if single is None else single


# PyTorch's bmm (and matmul's batched route) multiplies small products, contraction * rows * cols
# below 400, with its own loop instead of BLAS: each entry a sum from zero of the terms in order,
# each product rounded to the dtype, no fused multiply-add.  Its bits differ from a BLAS kernel's
# (a batch of rotations R @ R^T: exact zeros there where BLAS leaves 1e-8, and the tensor then
# prints in another format), so the batched forward of float32/float64 takes the same loop.
cdef Py_ssize_t SMALL_BMM_WORK = 400


ctypedef fused bmm_real:
    float
    double


cdef void small_bmm_loop(const bmm_real* a, const bmm_real* b, bmm_real* out, Py_ssize_t count,
                         Py_ssize_t n, Py_ssize_t k, Py_ssize_t p) noexcept nogil:
    """out[m] = a[m] @ b[m] for `count` contiguous (n, k) @ (k, p) products, each entry summed
    from zero over k in order with every product rounded to the dtype (this module is compiled
    without FMA contraction: no -mfma, so the compiler cannot fuse them)."""
    cdef Py_ssize_t m, i, j, t
    cdef bmm_real acc
    for m in range(count):
        for i in range(n):
            for j in range(p):
                acc = 0
                for t in range(k):
                    acc = acc + a[i * k + t] * b[t * p + j]
                out[i * p + j] = acc
        a += n * k
        b += k * p
        out += n * p


cdef object small_batched_product(object A, object B):
    """A @ B (batched, dims broadcast) as PyTorch's small-bmm loop computes it, or None where
    PyTorch uses BLAS (the work at or above SMALL_BMM_WORK, or not float32/float64)."""
    if A.dtype != B.dtype or (A.dtype != np.float32 and A.dtype != np.float64):
        return None
    A2 = A if A.ndim > 1 else A[None, :]            # (a vector operand: one row / one column)
    B2 = B if B.ndim > 1 else B[:, None]
    cdef Py_ssize_t n = second_last(A2.shape), k = last(A2.shape), p = last(B2.shape), j
    if n * k * p >= SMALL_BMM_WORK:
        return None
    cdef cnp.ndarray Ab, Bb
    if (A2.shape[:A2.ndim - 2] == B2.shape[:B2.ndim - 2] and cnp.PyArray_IS_C_CONTIGUOUS(A2)
            and cnp.PyArray_IS_C_CONTIGUOUS(B2)):
        batch = A2.shape[:A2.ndim - 2]      # (the common case: no broadcast, no copy)
        Ab, Bb = A2, B2
    else:
        batch = np.broadcast_shapes(A2.shape[:A2.ndim - 2], B2.shape[:B2.ndim - 2])
        Ab = np.ascontiguousarray(np.broadcast_to(A2, batch + (n, k)))
        Bb = np.ascontiguousarray(np.broadcast_to(B2, batch + (k, p)))
    cdef cnp.ndarray acc = np.empty(batch + (n, p), dtype=A.dtype)
    cdef Py_ssize_t count = 1
    for j in batch:
        count *= j
    if A.dtype == np.float64:
        small_bmm_loop(<double*>cnp.PyArray_DATA(Ab), <double*>cnp.PyArray_DATA(Bb),
                       <double*>cnp.PyArray_DATA(acc), count, n, k, p)
    else:
        small_bmm_loop(<float*>cnp.PyArray_DATA(Ab), <float*>cnp.PyArray_DATA(Bb),
                       <float*>cnp.PyArray_DATA(acc), count, n, k, p)
    if A.ndim == 1:
        acc = acc[..., 0, :]
    if B.ndim == 1:
        acc = acc[..., 0]
    return acc


cdef object batched_product(object A, object B):
    """A @ B on PyTorch's bmm route: its small-product loop, else the BLAS product."""
    out = small_batched_product(A, B)
    if out is not None:
        return out
    if A.ndim > 1 and B.ndim > 1 and A.size * B.size > 0:
        # a batch of one product is PyTorch's mm (its single-term zeros signed, above)
        batch = np.broadcast_shapes(A.shape[:A.ndim - 2], B.shape[:B.ndim - 2])
        if shape_prod(batch, 0, len(batch)) == 1:
            out = single_term_product(A.reshape(A.shape[A.ndim - 2:]),
                                      B.reshape(B.shape[B.ndim - 2:]))
            if out is not None:
                return out.reshape(batch + out.shape)
    if A.dtype.kind == "f":
        with IeeeResults():             # (bmm's BLAS sums from +0.0: no single-term product)
            return folded_product(A, B, None, False)
    return nd(np.matmul(A, B))


# -- the VJP --------------------------------------------------------------------------------------
# PyTorch's mm backward (mm_mat1_backward, mm_mat2_backward) gives the gradient of a matrix
# operand laid out column by column (a transposed contiguous one: `w.t()`, `q.t()`) in that same
# layout, computed as a transposed product ((g^T A)^T for the right operand, (B g^T)^T for the
# left).  So the gradient of w in `x @ w.t()` comes back to w row-major, as w is, and its
# `.view(-1)` works (flat_grad in TRPO-style code, `torch.autograd.grad` of hand-written layers).
# The record keeps which operands were column-major (mm_layout: A_COLUMN_MAJOR, B_COLUMN_MAJOR in
# _ops_linalg.pxd); the replay reads its slots'.

cdef bint column_major(object X):
    """PyTorch's test: a matrix whose strides are (1, rows) in elements."""
    if cnp.PyArray_NDIM(<cnp.ndarray>X) != 2:
        return False
    cdef cnp.npy_intp item = cnp.PyArray_ITEMSIZE(<cnp.ndarray>X)
    return (cnp.PyArray_STRIDE(<cnp.ndarray>X, 0) == item
            and cnp.PyArray_STRIDE(<cnp.ndarray>X, 1) == item * cnp.PyArray_DIM(<cnp.ndarray>X, 0))


cdef int mm_layout(object A, object B):
    """A_COLUMN_MAJOR / B_COLUMN_MAJOR for a product that PyTorch computes with mm (B, as
    multiplied, a matrix; the flag of A only when A is one too, not a folded batch or a vector)."""
    if cnp.PyArray_NDIM(<cnp.ndarray>B) != 2:
        return 0
    return ((A_COLUMN_MAJOR if column_major(A) else 0)
            | (B_COLUMN_MAJOR if column_major(B) else 0))


cdef object matmul_grad_a(object g, object B, tuple shape_a, bint column_major_result=False):
    """Gradient of A in A @ B (A of shape `shape_a`), from the output's adjoint g; a matrix A
    laid out column-major gets it in that layout (column_major_result: see above)."""
    cdef Py_ssize_t na = len(shape_a), nb = B.ndim, bc, n, k, p
    if column_major_result and na == 2 and nb == 2:
        return mm_product(B, g.T).T
    if nb == 1:
        if na == 1:
            return nd(np.multiply(g, B))                # dot: g is 0-d
        return nd(np.multiply(g[..., None], B))         # (batch, n) x (k,) -> (batch, n, k)
    g2 = g if na > 1 else g[..., None, :]               # (batch, n, p)
    if na > 2 and nb == 2:
        # a batch of A against one matrix B: one GEMM over the folded rows of g
        p = last(g.shape)
        n = shape_prod(g.shape, 0, g.ndim - 1)          # (spelled out: p may be 0)
        return mm_product(g.reshape(n, p), B.T).reshape(shape_a)
    if na <= 2 and nb > 2:
        # A is one matrix used against every batch of B: one GEMM over the folded batch.
        bc = shape_prod(B.shape, 0, nb - 2)
        k = second_last(B.shape)
        p = last(B.shape)
        n = second_last(g2.shape)
        g3 = g2.reshape(bc, n, p).transpose(1, 0, 2).reshape(n, bc * p)
        b3 = B.reshape(bc, k, p).transpose(0, 2, 1).reshape(bc * p, k)
        ga = mm_product(g3, b3)
    else:
        ga = mm_product(g2, B.swapaxes(-1, -2))
        ga = sum_to(ga, shape_a if na > 1 else (1, last(shape_a)))
    return ga.reshape(shape_a)


cdef object matmul_grad_b(object g, object A, tuple shape_b, bint column_major_result=False):
    """Gradient of B in A @ B (B of shape `shape_b`), from the output's adjoint g; a matrix B
    laid out column-major gets it in that layout, from A's rows folded as mm multiplies them."""
    cdef Py_ssize_t na = A.ndim, nb = len(shape_b), rows, k, p
    if column_major_result and nb == 2:
        rows = shape_prod(A.shape, 0, na - 1)
        return mm_product(g.reshape(rows, last(g.shape)).T,
                          A.reshape(rows, last(A.shape))).T
    if na == 1:
        if nb == 1:
            return nd(np.multiply(g, A))
        k = A.shape[0]
        if nb == 2:         # PyTorch's A^T @ g of the row A as mm multiplies it (its zeros' signs)
            return mm_product(A.reshape(k, 1), g.reshape(1, last(g.shape)))
        return nd(np.multiply(A.reshape(k, 1), g[..., None, :]))   # (k,1) x (batch,1,p)
    g2 = g[..., None] if nb == 1 else g                 # (batch, n, p)
    if nb <= 2 and na > 2:
        # B is one matrix used against every batch of A: one GEMM over the folded batch.
        rows = shape_prod(A.shape, 0, na - 1)
        k = last(A.shape)
        p = last(g2.shape)
        gb = mm_product(A.reshape(rows, k).T, g2.reshape(rows, p))
    else:
        gb = mm_product(A.swapaxes(-1, -2), g2)
        gb = sum_to(gb, shape_b if nb > 1 else (shape_b[0], 1))
    return gb.reshape(shape_b)


cdef object vjp_matmul(Record* r, object g):
    """aux = (shape of A, shape of B as multiplied, B transposed (linear's weight), bias shape,
    bias dtype, mm_layout); saved = (A if B needs grad, B if A needs grad)."""
    cdef tuple aux = <tuple>r.aux
    shape_a, shape_b, trans_b, bias_shape, bias_dtype, layout = aux
    ga = gb = None
    # (complex operands: the gradients multiply by the conjugates, g @ B^H and A^H @ g)
    if needs_grad(r, 0):
        ga = matmul_grad_a(g, conj_of(<object>r.saved[1]), <tuple>shape_a,
                           (<int>layout & A_COLUMN_MAJOR) != 0)
    if needs_grad(r, 1):
        A = conj_of(<object>r.saved[0])
        if trans_b and len(<tuple>shape_b) == 2:
            # linear's weight W (out, in) multiplies as W^T, which is column-major when W is
            # row-major: then its gradient g^T @ A comes out in W's own layout, contiguous (no
            # transposed copy when it becomes W.grad); a 1-D input is one row, multiplied as
            # PyTorch's mm does (an outer product instead gave -0.0 where x is 0 and g
            # negative: PyTorch's sum starts at +0.0; with a bias, the compiled step's 1-D
            # record differed from eager's folded one: fuzz 61401252)
            rows = shape_prod(A.shape, 0, A.ndim - 1)
            A2 = A.reshape(rows, last(A.shape))
            g2 = g.reshape(rows, last(g.shape))
            if <int>layout & B_COLUMN_MAJOR:
                gb = mm_product(g2.T, A2)
            else:                       # a W laid out otherwise: PyTorch's A^T g, transposed
                gb = mm_product(A2.T, g2).T
        else:
            gb = None
            if r.op == OP_MATMUL_T or r.op == OP_MATMUL_CLONE:
                # matrix @ batch, folded by transposing: PyTorch's gradient of the folded B^T is
                # g^T @ A, an mm whose inner dimension is A's rows (single-term when one)
                gb = single_term_product(A.T, g)
            if gb is None:
                gb = matmul_grad_b(g, A, <tuple>shape_b, (<int>layout & B_COLUMN_MAJOR) != 0)
            if trans_b:
                gb = gb.T
    if r.n_in == 3:
        return (ga, gb, fit_grad(g, bias_shape, bias_dtype) if needs_grad(r, 2) else None)
    return (ga, gb)


OP_DOT = register_op("DotBackward0", vjp_matmul)
OP_MV = register_op("MvBackward0", vjp_matmul)
OP_MM = register_op("MmBackward0", vjp_matmul)
OP_BMM = register_op("BmmBackward0", vjp_matmul)
OP_MATMUL_VM = register_op("SqueezeBackward4", vjp_matmul)      # 1-D @ 2-D
OP_MATMUL_VIEW = register_op("UnsafeViewBackward0", vjp_matmul)  # batched, folded
OP_MATMUL_CLONE = register_op("CloneBackward0", vjp_matmul)     # matrix @ batch
OP_MATMUL_T = register_op("TransposeBackward0", vjp_matmul)     # ... already contiguous
OP_ADDMM = register_op("AddmmBackward0", vjp_matmul)            # linear, 2-D input + bias
OP_LINEAR_VIEW = register_op("ViewBackward0", vjp_matmul)       # linear, N-D input + bias
OP_LINEAR_ADD = register_op("AddBackward0", vjp_matmul)         # linear, other + bias


# -- the nodes PyTorch shows for linear (grad_fn.next_functions) ----------------------------------
# One record computes linear, where PyTorch's graph has addmm(bias, input as a matrix, weight.t())
# (or mm without a bias) and the views around it; the layout shows PyTorch's nodes in its order
# (graph_layout.pxi).  A plain matmul's record shows its operands in order.

cdef tuple LINEAR_WEIGHT = ("TBackward0", (1,))


cdef object linear_input(tuple shape_a, bint bias, bint copied):
    """Linear's input as PyTorch's product takes it: a matrix as it is, a vector unsqueezed (viewed,
    with a bias), a batch viewed as a matrix (copied first when its rows do not merge)."""
    cdef Py_ssize_t n = len(shape_a)
    if n == 2:
        return 0
    if n == 1 and not bias:
        return ("UnsqueezeBackward0", (0,))
    if copied:
        return ("UnsafeViewBackward0", (("CloneBackward0", (0,)),))
    return ("ViewBackward0", (0,))


def linear_edges(fn):
    """The layout of a matmul-family record's node (graph_layout.pxi): PyTorch's nodes for a
    linear record, None (the operands in order) for a plain product."""
    shape_a, shape_b, trans_b, bias_shape, _, _ = fn._aux
    if not trans_b or len(shape_b) != 2:
        return None
    cdef int op = fn._opcode
    # (a 1-D bias reaches OP_LINEAR_ADD only when a batch input's rows did not merge)
    x = linear_input(shape_a, bias_shape is not None,
                     op == OP_LINEAR_ADD and len(bias_shape) == 1)
    if op == OP_ADDMM:
        return (2, x, LINEAR_WEIGHT)
    if op == OP_LINEAR_VIEW:
        return (("AddmmBackward0", (2, x, LINEAR_WEIGHT)),)
    if op == OP_LINEAR_ADD:
        return (("UnsafeViewBackward0", (("MmBackward0", (x, LINEAR_WEIGHT)),)), 2)
    if op == OP_MM:
        return (x, LINEAR_WEIGHT)
    return (("MmBackward0", (x, LINEAR_WEIGHT)),)   # the view of a vector's or a batch's product


cdef int register_linear_layouts() except -1:
    cdef int op
    for op in (OP_MM, OP_MATMUL_VM, OP_MATMUL_VIEW, OP_ADDMM, OP_LINEAR_VIEW, OP_LINEAR_ADD):
        register_edges(op, linear_edges)
    return 0


register_linear_layouts()


# -- matmul's route -------------------------------------------------------------------------------

cdef enum:
    R_DOT = 0
    R_MV = 1
    R_VM = 2
    R_MM = 3
    R_FOLD = 4           # the larger operand folded into a matrix: mm / mv, then a view
    R_FOLD_T = 5         # matrix @ batch, folded by transposing: mm, then a transposed copy
    R_BMM = 6            # broadcast batches: bmm, then a view


cdef bint should_fold(object A, object B, bint req_a, bint req_b):
    """PyTorch's test for multiplying by folding the larger operand into a matrix (mm/mv)."""
    cdef Py_ssize_t da = A.ndim, db = B.ndim, i, dim_t1, dim_t2
    cdef bint a_larger = da >= db
    dim_t1 = da if a_larger else db
    dim_t2 = db if a_larger else da
    if not (dim_t1 >= 3 and dim_t2 <= 2):
        return False
    if (req_b if a_larger else req_a):
        return True
    if da == 2:
        return False
    t1 = A if a_larger else B.swapaxes(-1, -2)
    if cnp.PyArray_SIZE(t1) == 0:
        return True
    shape = t1.shape
    strides = t1.strides
    for i in range(dim_t1 - 2):
        if strides[i] != strides[i + 1] * shape[i + 1]:
            return False
    return True


cdef int matmul_route(object A, object B, bint req_a, bint req_b) except -1:
    """The path PyTorch's matmul takes for A @ B, after its shape and dtype checks."""
    cdef Py_ssize_t da = A.ndim, db = B.ndim, rows
    if da == 0 or db == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    dta = A.dtype
    dtb = B.dtype
    if da == 1 and db == 1:
        check_dot(A.shape[0], B.shape[0], dta, dtb)
        return R_DOT
    if da == 2 and db == 1:
        check_mv(A.shape[0], A.shape[1], B.shape[0], dta, dtb)
        return R_MV
    if da == 1 and db == 2:
        check_mm(1, A.shape[0], B.shape[0], B.shape[1], dta, dtb)
        return R_VM
    if da == 2 and db == 2:
        check_mm(A.shape[0], A.shape[1], B.shape[0], B.shape[1], dta, dtb)
        return R_MM
    if should_fold(A, B, req_a, req_b):
        if db > da:                                     # fold B^T; A (or A^T) is the right side
            rows = shape_prod(B.shape, 0, db - 2) * last(B.shape)
            if da == 2:
                check_mm(rows, second_last(B.shape), A.shape[1], A.shape[0], dtb, dta)
                return R_FOLD_T
            check_mv(rows, second_last(B.shape), A.shape[0], dtb, dta)
            return R_FOLD
        rows = shape_prod(A.shape, 0, da - 1)
        if db == 2:
            check_mm(rows, last(A.shape), B.shape[0], B.shape[1], dta, dtb)
        else:
            check_mv(rows, last(A.shape), B.shape[0], dta, dtb)
        return R_FOLD
    if da == 3 and db == 3 and A.shape[0] != B.shape[0]:
        # a size-1 batch of an operand that requires grad is squeezed away first
        if A.shape[0] == 1 and req_a:
            return matmul_route(A[0], B, req_a, req_b)
        if B.shape[0] == 1 and req_b:
            return matmul_route(A, B[0], req_a, req_b)
    batch_a = tuple([A.shape[i] for i in range(da - 2)]) if da > 2 else ()
    batch_b = tuple([B.shape[i] for i in range(db - 2)]) if db > 2 else ()
    batch = broadcast_shapes_torch(batch_a, batch_b)
    rows = shape_prod(batch, 0, len(batch))
    check_bmm(rows, last(A.shape), rows, second_last(B.shape) if db > 1 else B.shape[0], dta, dtb)
    return R_BMM


cdef int route_op(int route, object out):
    if route == R_DOT:
        return OP_DOT
    if route == R_MV:
        return OP_MV
    if route == R_VM:
        return OP_MATMUL_VM
    if route == R_MM:
        return OP_MM
    if route == R_FOLD_T:
        # PyTorch copies the transposed product unless it is already contiguous
        if (cnp.PyArray_SIZE(out) == 0 or last(out.shape) == 1 or second_last(out.shape) == 1):
            return OP_MATMUL_T
        return OP_MATMUL_CLONE
    return OP_MATMUL_VIEW


cdef TensorBase matmul_record(int op, object out, TensorBase a, TensorBase b, object A, object B,
                              bint trans_b, object bias=None):
    """Wrap `out` (= A @ B [+ bias]) and record it with the shared VJP."""
    cdef Record* r
    cdef TensorBase res = wrap(out)
    r = record_from(op, res, (a, b) if bias is None else (a, b, bias))
    if r != NULL:
        if needs_grad(r, 1):
            save_value(r, 0, A, a)
        if needs_grad(r, 0):
            save_value(r, 1, B, b)
        layout = mm_layout(a._array, B)
        if bias is None:
            keep(&r.aux, (A.shape, B.shape, trans_b, None, None, layout))
        else:
            keep(&r.aux, (A.shape, B.shape, trans_b, (<TensorBase>bias)._array.shape,
                          (<TensorBase>bias)._array.dtype, layout))
    return res


# A sparse COO operand (tapegrad._sparse_coo, a Python class over the dense ops): torch.mm,
# torch.matmul and torch.mv hand the product to it.  The test runs only when an operand is not a
# tensor, so a dense product never pays for it.
cdef object SPARSE_PRODUCT = None


def _set_sparse_product(fn):
    """Called once by tapegrad/_sparse_coo.py: fn(name, a, b) -> product or NotImplemented."""
    global SPARSE_PRODUCT
    SPARSE_PRODUCT = fn


cdef inline object sparse_product(str name, object a, object b):
    if SPARSE_PRODUCT is None:
        return NotImplemented
    return SPARSE_PRODUCT(name, a, b)


cdef inline TensorBase require_tensor(object x, str fn, str arg, int pos):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type_name(x)}")
    return <TensorBase>x


def matmul(input, other, *, out=None):
    """Matrix product with NumPy/PyTorch semantics: 1-D operands are vectors (dot, matrix-vector,
    vector-matrix), N-D operands are batches of matrices whose batch dims broadcast.  out=: the
    result is written into `out` (not differentiable)."""
    if out is not None:
        return write_out("matmul", out, (input, other), matmul, None)
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        if replayable_mm(input, other):
            res = matmul_eager(input, other)
            capture_step((SK_MATMUL, 0, 0, input, other, None, res))
            return res
        return capture_call(matmul, (input, other), None)
    return matmul_eager(input, other)


cdef bint replayable_mm(object a, object b):
    # Two float matrices of one dtype: the replay runs their product and its VJP itself
    # (SK_MATMUL); other shapes re-run matmul whole (SK_CALL).
    if not (isinstance(a, TensorBase) and isinstance(b, TensorBase)):
        return False
    A = (<TensorBase>a)._array
    B = (<TensorBase>b)._array
    return (cnp.PyArray_NDIM(<cnp.ndarray>A) == 2 and cnp.PyArray_NDIM(<cnp.ndarray>B) == 2
            and cnp.PyArray_TYPE(<cnp.ndarray>A) == cnp.PyArray_TYPE(<cnp.ndarray>B)
            and is_float_num(cnp.PyArray_TYPE(<cnp.ndarray>A)))


cdef object matmul_eager(input, other):
    if is_meta_tensor(input) or is_meta_tensor(other):  # a meta operand of a CPU tensor's op
        return meta_entry("matmul", (input, other))
    if not (isinstance(input, TensorBase) and isinstance(other, TensorBase)):
        res = sparse_product("matmul", input, other)
        if res is not NotImplemented:
            return res
    cdef TensorBase a = require_tensor(input, "matmul", "input", 1)
    cdef TensorBase b = require_tensor(other, "matmul", "other", 2)
    A = a._array
    B = b._array
    fresh(a)
    fresh(b)
    cdef int route = matmul_route(A, B, a._requires_grad, b._requires_grad)
    out = batched_product(A, B) if route == R_BMM else product(A, B)
    if grad_enabled() and (a._requires_grad or b._requires_grad):
        A, B = saved_operands(route, A, B, a._requires_grad, b._requires_grad)
    return matmul_record(route_op(route, out), out, a, b, A, B, False)


cdef tuple saved_operands(int route, object A, object B, bint req_a, bint req_b):
    """The operands matmul's record saves: PyTorch saves them as it multiplied them, folded into
    a matrix (the batch of matrix @ batch transposed first) or expanded to the common batch and
    flattened to 3-D, by reshape(): a copy where the dims do not merge, which a later in-place
    write to the operand leaves intact.  A snapshot is saved in those cases (and only where the
    other operand's gradient reads it), so such a write is not refused here where PyTorch
    computes the gradient from the forward's values; where PyTorch's reshape is a view, the
    operand itself is saved and the write is refused, as in PyTorch."""
    cdef bint b_folded
    if route == R_FOLD or route == R_FOLD_T:
        # the larger operand is folded; an operand whose size-1 batch was squeezed away
        # (matmul_route) is the smaller one
        b_folded = B.ndim > A.ndim or (A.ndim == B.ndim and A.shape[0] == 1 and req_a)
        if b_folded:
            if req_a and not merges(B.swapaxes(-1, -2), 1):
                B = B.copy()
        elif req_b and not A.flags.c_contiguous and not merges(A, 1):
            A = A.copy()
    elif route == R_BMM:
        batch = broadcast_shapes_torch(A.shape[:A.ndim - 2] if A.ndim > 2 else (),
                                       B.shape[:B.ndim - 2] if B.ndim > 2 else ())
        # (a C-contiguous operand that already has the whole batch always merges: the usual
        # case, decided without the numpy calls)
        if req_b and not (A.flags.c_contiguous and A.ndim > 2 and A.shape[:A.ndim - 2] == batch):
            A2 = A if A.ndim > 1 else A[None, :]
            if not merges(np.broadcast_to(A2, batch + A2.shape[A2.ndim - 2:]), 2):
                A = A.copy()
        if req_a and not (B.flags.c_contiguous and B.ndim > 2 and B.shape[:B.ndim - 2] == batch):
            B2 = B if B.ndim > 1 else B[:, None]
            if not merges(np.broadcast_to(B2, batch + B2.shape[B2.ndim - 2:]), 2):
                B = B.copy()
    return A, B


cdef bint merges(object X, int keep):
    """Whether X's leading dims (all but the last `keep`) merge into one without a copy, as
    PyTorch's reshape decides a view."""
    shape = (shape_prod(X.shape, 0, X.ndim - keep),) + tuple(X.shape[X.ndim - keep:])
    try:
        np.reshape(X, shape, copy=False)
    except ValueError:
        return False
    return True


def _matmul_op(self, other):
    """Tensor.__matmul__: self @ other (only tensors: an ndarray is numpy's, see as_operand;
    a real PyTorch tensor is read as a tensor)."""
    if not isinstance(other, TensorBase):
        other = real_torch_tensor(other)
        if other is NotImplemented:
            return NotImplemented
    if AUTOCAST_THREADS:        # (the entry casts if this thread autocasts, else calls matmul)
        return AUTOCAST_MATMUL(self, other)
    if PROFILING:
        return profiled_call("matmul", matmul, (self, other))
    return matmul(self, other)


def _rmatmul_op(self, other):
    """Tensor.__rmatmul__: other @ self (only tensors, a real PyTorch tensor read as one;
    PyTorch refuses other operands)."""
    if not isinstance(other, TensorBase):
        other = real_torch_tensor(other)
        if other is NotImplemented:
            return NotImplemented
    if AUTOCAST_THREADS:
        return AUTOCAST_MATMUL(other, self)
    if PROFILING:
        return profiled_call("matmul", matmul, (other, self))
    return matmul(other, self)


def mm(input, mat2):
    """Matrix product of two 2-D tensors (no broadcasting); either may be sparse COO."""
    if not (isinstance(input, TensorBase) and isinstance(mat2, TensorBase)):
        res = sparse_product("mm", input, mat2)
        if res is not NotImplemented:
            return res
    cdef TensorBase a = require_tensor(input, "mm", "input", 1)
    cdef TensorBase b = require_tensor(mat2, "mm", "mat2", 2)
    A = a._array
    B = b._array
    if A.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if B.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    check_mm(A.shape[0], A.shape[1], B.shape[0], B.shape[1], A.dtype, B.dtype)
    return matmul_record(OP_MM, product(A, B), a, b, A, B, False)


def bmm(input, mat2):
    """Batched matrix product of two 3-D tensors with the same batch size (no broadcasting)."""
    cdef TensorBase a = require_tensor(input, "bmm", "input", 1)
    cdef TensorBase b = require_tensor(mat2, "bmm", "mat2", 2)
    A = a._array
    B = b._array
    if A.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if B.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    check_bmm(A.shape[0], A.shape[2], B.shape[0], B.shape[1], A.dtype, B.dtype)
    return matmul_record(OP_BMM, batched_product(A, B), a, b, A, B, False)


def mv(input, vec):
    """Product of a 2-D matrix (dense or sparse COO) and a 1-D vector."""
    if not (isinstance(input, TensorBase) and isinstance(vec, TensorBase)):
        res = sparse_product("mv", input, vec)
        if res is not NotImplemented:
            return res
    cdef TensorBase a = require_tensor(input, "mv", "input", 1)
    cdef TensorBase b = require_tensor(vec, "mv", "vec", 2)
    A = a._array
    B = b._array
    if A.ndim != 2 or B.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {A.ndim}, {B.ndim}")
    check_mv(A.shape[0], A.shape[1], B.shape[0], A.dtype, B.dtype)
    return matmul_record(OP_MV, product(A, B), a, b, A, B, False)


def dot(input, tensor):
    """Inner product of two 1-D tensors of the same size and dtype."""
    cdef TensorBase a = require_tensor(input, "dot", "input", 1)
    cdef TensorBase b = require_tensor(tensor, "dot", "tensor", 2)
    A = a._array
    B = b._array
    if A.ndim != 1 or B.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {A.ndim}D and {B.ndim}D tensors")
    check_dot(A.shape[0], B.shape[0], A.dtype, B.dtype)
    return matmul_record(OP_DOT, product(A, B), a, b, A, B, False)


# -- outer ----------------------------------------------------------------------------------------

cdef object vjp_outer(Record* r, object g):
    """out[i, j] = a[i] * b[j]: da = g @ b, db = g^T @ a (cast back to each input's dtype)."""
    dta, dtb = <tuple>r.aux             # (each value is saved only for the other's gradient)
    return (fit_grad(np.matmul(g, <object>r.saved[1]), None, dta) if needs_grad(r, 0) else None,
            fit_grad(np.matmul(<object>r.saved[0], g), None, dtb) if needs_grad(r, 1) else None)


OP_OUTER = register_op("MulBackward0", vjp_outer)     # PyTorch: a.unsqueeze(1) * b


def outer(input, vec2):
    """Outer product of two 1-D tensors: out[i, j] = input[i] * vec2[j] (dtypes promote)."""
    cdef Record* r
    cdef TensorBase a = require_tensor(input, "outer", "input", 1)
    cdef TensorBase b = require_tensor(vec2, "outer", "vec2", 2)
    if a._array.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {a._array.ndim}-D")
    if b._array.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {b._array.ndim}-D")
    if is_complex_operand(a) or is_complex_operand(b):
        return complex_call("mul", (a.unsqueeze(1), b.unsqueeze(0)))
    dt = promote_pair(a._array.dtype, b._array.dtype)
    A = operand_value(a, dt)
    B = operand_value(b, dt)
    if A.dtype.kind == "f":
        with IeeeResults():
            out = nd(np.multiply.outer(A, B))
    else:
        out = nd(np.multiply.outer(A, B))
    cdef TensorBase res = wrap(out)
    r = record_from(OP_OUTER, res, (a, b))
    if r != NULL:
        # as PyTorch's MulBackward0 (outer is a.unsqueeze(1) * b there): each operand saved only
        # for the other's gradient, so a write into one the backward does not read computes
        if needs_grad(r, 1):
            save_value(r, 0, A, a)
        if needs_grad(r, 0):
            save_value(r, 1, B, b)
        keep(&r.aux, (a._array.dtype, b._array.dtype))
    return res


# -- nn.functional.linear -------------------------------------------------------------------------

cdef int check_expand(tuple src, tuple target, object dt) except -1:
    """PyTorch's Tensor.expand check (addmm broadcasts its `self` to the product's shape)."""
    cdef Py_ssize_t ns = len(src), nt = len(target), i
    if ns > nt:
        raise RuntimeError(f"expand(torch.{scalar_type_name(dt)}Tensor{{{list(src)}}}, "
                           f"size={list(target)}): "
                           f"the number of sizes provided ({nt}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({ns})")
    for i in range(1, ns + 1):
        if src[ns - i] != 1 and src[ns - i] != target[nt - i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[nt - i]}) must match the "
                               f"existing size ({src[ns - i]}) at non-singleton dimension "
                               f"{nt - i}.  Target sizes: {list(target)}.  Tensor sizes: "
                               f"{list(src)}")
    return 0


def linear(input, weight, bias=None):
    """y = input @ weight^T + bias (torch.nn.functional.linear): input (*, in), weight
    (out, in) or (in,), bias broadcastable to the result."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        if not linear_replayable(input, weight, bias):
            return capture_call(linear, (input, weight, bias), None)
        CAPTURE.depth += 1          # (its inner work is the replay step's)
        try:
            res = linear_eager(input, weight, bias)
        finally:
            CAPTURE.depth -= 1
        capture_op(OP_ADDMM, (input, weight, bias), 2 if bias is None else 3, None,
                   <TensorBase>res)
        return res
    return linear_eager(input, weight, bias)


cdef bint linear_replayable(input, weight, bias) except -1:
    """Whether linear's replay step (replay_linear) takes these operands: float tensors of one
    dtype, a matrix weight (anything else re-runs the eager op at each replay)."""
    if not (isinstance(input, TensorBase) and isinstance(weight, TensorBase)
            and (bias is None or isinstance(bias, TensorBase))):
        return False
    X = (<TensorBase>input)._array
    W = (<TensorBase>weight)._array
    if X.dtype.kind != "f" or W.dtype != X.dtype or W.ndim != 2 or X.ndim == 0:
        return False
    return bias is None or (<TensorBase>bias)._array.dtype == X.dtype


cdef object linear_eager(input, weight, bias=None):
    cdef TensorBase x = require_tensor(input, "linear", "input", 1)
    cdef TensorBase w = require_tensor(weight, "linear", "weight", 2)
    cdef TensorBase c
    if is_complex_operand(x) or is_complex_operand(w) or is_complex_operand(bias):
        return complex_call("linear", (x, w, bias))
    cdef Py_ssize_t rows, k
    X = x._array
    W = w._array
    cdef Py_ssize_t dx = X.ndim, dw = W.ndim
    if dx == 0 or dw == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are "
                           f"{dx}D and {dw}D")
    if dw > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {dw}D")
    Wt = W.T
    fresh(x)
    fresh(w)
    if bias is None:
        if dx > 2 and dw == 2 and not X.flags.c_contiguous and X.dtype.kind == "f":
            X = np.ascontiguousarray(X)         # (see linear_values)
        route = matmul_route(X, Wt, x._requires_grad, w._requires_grad)
        out = product(X, Wt)
        return matmul_record(route_op(route, out), out, x, w, X, Wt, True)
    c = require_tensor(bias, "linear", "bias", 3)
    C = c._array
    if dx == 2 or (C.ndim == 1 and c_contiguous(X)):
        # PyTorch's fused addmm(bias, input folded to 2-D, weight.t()) (then a view if not 2-D)
        rows = shape_prod(X.shape, 0, dx - 1)
        k = last(X.shape)
        # addmm checks the dtypes (bias against weight, then input against weight) before
        # the shapes: nn.Linear on a uint8 image names the dtypes, not the sizes
        if C.dtype != W.dtype:
            raise RuntimeError("self and mat2 must have the same dtype, but got "
                               f"{scalar_type_name(C.dtype)} and {scalar_type_name(W.dtype)}")
        if X.dtype != W.dtype:
            raise RuntimeError("mat1 and mat2 must have the same dtype, but got "
                               f"{scalar_type_name(X.dtype)} and {scalar_type_name(W.dtype)}")
        if dw != 2:
            raise RuntimeError("mat2 must be a matrix, got 1-D tensor")
        check_mm(rows, k, Wt.shape[0], Wt.shape[1], X.dtype, W.dtype)
        check_expand(C.shape, (rows, Wt.shape[1]), C.dtype)   # names it only on error
    else:
        matmul_route(X, Wt, x._requires_grad, w._requires_grad)
        out_shape = tuple([X.shape[i] for i in range(dx - 1)]) + ((Wt.shape[1],) if dw == 2 else ())
        broadcast_shapes_torch(out_shape, C.shape)
        # PyTorch adds the bias into the product in place (output.add_(bias)): the sum must
        # cast back to the product's dtype, which only a bias of a higher category (int into
        # float, float into int) prevents; a float64 bias into a float32 product is cast
        if np_category(C.dtype.num) > np_category(X.dtype.num):
            raise RuntimeError(f"result type {scalar_type_name(C.dtype)} can't be cast to the "
                               f"desired output type {scalar_type_name(X.dtype)}")
    out, op, X = linear_values(X, W, C)
    if op == OP_LINEAR_VIEW and not (CAPTURE is not None and capturing()):
        # PyTorch's result is a view (ViewBackward0) of its 2-D addmm result, which is its _base:
        # an in-place write through another view of the result rewrites the 2-D tensor's
        # history, and the result's retained .grad keeps only what reaches the result itself
        # (fuzz 57100206, 57301596).  The 2-D product's record keeps the input's own shape:
        # its VJPs take the gradient in the input's rows (gv_matmul).  (Under tapegrad.compile
        # the call is one replay step, whose record is the N-d product.)
        folded = matmul_record(OP_ADDMM, cnp.PyArray_Reshape(<cnp.ndarray>out, (rows, Wt.shape[1])),
                               x, w, X, Wt, True, c)
        return view_result(<TensorBase>folded, out)
    cdef TensorBase res = matmul_record(op, out, x, w, X, Wt, True, c)
    if op == OP_LINEAR_ADD:
        version_of(res).value = 1       # (PyTorch adds the bias into the product in place)
    return res


cdef inline bint c_contiguous(object A) noexcept:
    """A.flags.c_contiguous without building numpy's flags object (linear's per-call path)."""
    return cnp.PyArray_Check(A) and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A)


cdef tuple linear_values(object X, object W, object C):
    """linear's forward on checked arrays, bias C given: (result, opcode, the input as
    multiplied), for the eager op and its replay step alike."""
    cdef Py_ssize_t dx = X.ndim
    cdef bint x_contiguous = c_contiguous(X)
    cdef int op
    if dx > 2 and W.ndim == 2 and not x_contiguous and X.dtype.kind == "f":
        # PyTorch folds a strided N-D input into a matrix with a copy; one contiguous copy here
        # lets the product (and the weight's gradient, which saves it) run as one GEMM
        X = np.ascontiguousarray(X)
    if dx == 2 or (C.ndim == 1 and x_contiguous):
        op = OP_ADDMM if dx == 2 else OP_LINEAR_VIEW
    else:
        op = OP_LINEAR_ADD
    # PyTorch's fused float16 addmm adds the bias to the float32 accumulator and rounds once
    # (the product rounded to float16 first was a float16 ulp off; fuzz 60634316)
    cdef bint half_fused = op != OP_LINEAR_ADD and X.dtype.itemsize == 2
    # a bias row of the product's dtype is added by the product itself (product_a_bt: in its
    # transposing copy when it takes that way), the same additions as add_into's below
    cdef bint bias_in_product = (op != OP_LINEAR_ADD and not half_fused
                                 and X.shape[dx - 1] != 0 and bias_row(C, X, W))
    with IeeeResults():                                 # one errstate for product and add
        if half_fused:
            out = folded_product(X.astype(NP_FLOAT32), W.T.astype(NP_FLOAT32))
        else:
            out = folded_product(X, W.T, C if bias_in_product else None)
        if X.shape[dx - 1] == 0 and out.size:
            # no in_features: PyTorch's result is the bias itself, -0.0 kept; -0.0 is the zero
            # that adds to it without changing it (the empty product's +0.0 does not)
            out.fill(-0.0)
        if op != OP_LINEAR_ADD and out.ndim > 0:         # C expands to the product's shape
            if not bias_in_product:
                add_into(out, C)                        # the product is fresh: add in place
        else:
            out = nd(np.add(out, C, dtype=out.dtype, casting="unsafe"))
        if half_fused:
            out = out.astype(X.dtype)
    return out, op, X


cdef object replay_linear(Record* r, tuple ins, object attrs):
    """linear's replay step (replay_fn): its forward as linear_eager computes it (the operands
    passed its checks at capture: the guards keep their shapes and dtypes), the record as
    matmul_record fills it."""
    X, W, C = ins if len(ins) == 3 else (ins[0], ins[1], None)
    Wt = W.T
    cdef int layout = mm_layout(X, Wt)      # (of the input as given, as matmul_record's)
    cdef int op
    if C is None:
        if X.ndim > 2 and not X.flags.c_contiguous:
            X = np.ascontiguousarray(X)
        out = product(X, Wt)
        op = route_op(matmul_route(X, Wt, needs_grad(r, 0), needs_grad(r, 1)), out)
    else:
        out, op, X = linear_values(X, W, C)
    r.op = op
    if needs_grad(r, 1):
        keep(&r.saved[0], X)
    if needs_grad(r, 0):
        keep(&r.saved[1], Wt)
    keep(&r.aux, (X.shape, Wt.shape, True, None if C is None else C.shape,
                  None if C is None else C.dtype, layout))
    return out


register_replay(OP_ADDMM, replay_linear)


_LINALG_OPS = dict(matmul=matmul, mm=mm, bmm=bmm, mv=mv, dot=dot, outer=outer)
# -- tril / triu ---------------------------------------------------------------------------------
# The lower / upper triangle (of the last two dims) from diagonal `diagonal` on; the gradient is
# the same triangle of the output's gradient.  scalar = diagonal.

cdef object vjp_triangle(Record* r, object g):
    k = <Py_ssize_t>r.scalar
    return nd(np.tril(g, k) if r.op == OP_TRIL else np.triu(g, k))


OP_TRIL = register_op("TrilBackward0", vjp_triangle)
OP_TRIU = register_op("TriuBackward0", vjp_triangle)


cdef object triangle_values(object A, object diagonal, bint lower):
    """np.tril(A, diagonal) (lower) or np.triu(A, diagonal) as a C-contiguous copy of A with the
    zeros written row by row (memset: the zero of every dtype is all zero bytes, as np.where's
    zeros(1, dtype) is); None for an empty A or a diagonal beyond int64 (numpy's path).  numpy
    builds an index mask and selects through np.where: a 64 x 64 triu took 3x PyTorch's time."""
    cdef Py_ssize_t rows = A.shape[A.ndim - 2], cols = A.shape[A.ndim - 1], size = A.size
    if size == 0 or not -2 ** 62 < diagonal < 2 ** 62:
        return None
    # (a diagonal beyond the matrix acts as one just past it)
    cdef Py_ssize_t k = max(-rows - 1, min(cols + 1, diagonal)), i, b, edge
    cdef cnp.ndarray out = <cnp.ndarray>np.array(A, order="C")
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(out), batches = size // (rows * cols)
    cdef char* row = <char*>cnp.PyArray_DATA(out)
    for b in range(batches):
        for i in range(rows):
            if lower:               # keep j <= i + k
                edge = max(i + k + 1, 0)
                if edge < cols:
                    memset(row + edge * item, 0, (cols - edge) * item)
            else:                   # keep j >= i + k
                edge = min(i + k, cols)
                if edge > 0:
                    memset(row, 0, edge * item)
            row += cols * item
    return out


cdef object triangle(int op, TensorBase input, object diagonal):
    cdef str name = "tril" if op == OP_TRIL else "triu"
    A = input._array
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    k = operator.index(diagonal)
    out = triangle_values(A, k, op == OP_TRIL)
    if out is None:
        # (contiguous whatever A's layout, as PyTorch's)
        out = nd(np.ascontiguousarray(np.tril(A, k) if op == OP_TRIL else np.triu(A, k)))
    cdef TensorBase res = wrap(out)
    cdef Record* r = record1(op, res, input)
    if r != NULL:
        r.scalar = k
    return res


def tril(TensorBase input, diagonal=0):
    """The lower triangle of the last two dims: elements on and below diagonal `diagonal`
    (0: the main one, > 0 above it, < 0 below), zeros elsewhere; batched over leading dims."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(tril, (input, diagonal), None)
    return triangle(OP_TRIL, input, diagonal)


def triu(TensorBase input, diagonal=0):
    """The upper triangle of the last two dims: elements on and above diagonal `diagonal`."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(triu, (input, diagonal), None)
    return triangle(OP_TRIU, input, diagonal)


cdef object outside_triangle(int op, TensorBase input, object diagonal):
    """The elements of the last two dims that tril / triu set to zero (a bool mask of that
    shape) where input's elements share memory (inplace_apply writes just those then); else
    None."""
    A = input._array
    if A.ndim < 2 or not overlaps_itself(A):
        return None
    if not batches_in_place(A):
        # PyTorch computes such a tensor's triangle apart and copies it back: a copy into
        # elements that share memory, which it refuses
        raise RuntimeError(overlapping_write_message())
    keep = np.ones(A.shape[-2:], dtype=np.bool_)
    k = operator.index(diagonal)
    return ~(np.tril(keep, k) if op == OP_TRIL else np.triu(keep, k))


cdef bint batches_in_place(object A):
    """Whether PyTorch's tril_ / triu_ write self in place (its checkTrilTriuBatchContiguous):
    up to 3 dims always; beyond, each batch dim must be laid out as in a contiguous stack of the
    matrices, except the first, which may also be expanded (stride 0) or of size 1."""
    if A.ndim <= 3:
        return True
    cdef Py_ssize_t expected = A.shape[A.ndim - 1] * A.shape[A.ndim - 2]
    cdef int i
    for i in range(A.ndim - 3, -1, -1):
        stride = A.strides[i] // A.itemsize
        if i == 0 and (stride == 0 or A.shape[0] == 1):
            continue
        if stride != expected:
            return False
        expected *= A.shape[i]
    return True


def tril_(TensorBase self, diagonal=0):
    """tril in place."""
    return inplace_apply(self, tril, (diagonal,), outside_triangle(OP_TRIL, self, diagonal))


def triu_(TensorBase self, diagonal=0):
    """triu in place."""
    return inplace_apply(self, triu, (diagonal,), outside_triangle(OP_TRIU, self, diagonal))


_LINALG_OPS.update(tril=tril, triu=triu)
TENSOR_METHODS.update(tril_=tril_, triu_=triu_)
TENSOR_METHODS.update(_LINALG_OPS)
TENSOR_METHODS.update(__matmul__=_matmul_op, __rmatmul__=_rmatmul_op)
TORCH_FUNCTIONS.update(_LINALG_OPS)
TORCH_FUNCTIONS.update(ger=outer)
NN_FUNCTIONS.update(linear=linear)
