# ---------------------------------------------------------------------------------------------
# Dim arguments as PyTorch parses them, shared by every op family that takes a dim.
# ---------------------------------------------------------------------------------------------

# -- An integer argument as PyTorch's argument parser reads it ----------------------------------
# Its parser knows two integer kinds, and a dim (or index, size) is read as one of them: `int`
# (softmax's dim, max's dim, cat's dim ...) and `SymInt`/an element of `int[]` (sum's dims,
# narrow's start).  Both take a Python int (never a bool) and a numpy integer (never numpy.bool);
# the first also a 0-d integer tensor, the second any one-element integer or bool tensor and any
# __index__ object.  A float or float tensor is neither.  Each returns the Python int, or None
# where PyTorch refuses: the caller raises its op's own TypeError.

cpdef object int_param(object v):
    """`v` read as PyTorch's `int` parameter, or None (a 0-d integer tensor is an int there:
    torch.max(x, dim=torch.tensor(1)) reduces dim 1; torch.tensor(True) and torch.tensor([1])
    are refused)."""
    if type(v) is int:
        return v
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, TensorBase):
        A = (<TensorBase>v)._array
        if A.ndim == 0 and A.dtype.kind in "iu":
            return int(A)
    return None


cpdef object symint_param(object v):
    """`v` read as PyTorch's `SymInt` parameter or an element of an `int[]` (its
    is_int_or_symint), or None: `int_param`'s ints, any one-element integer or bool tensor
    (torch.sum(x, torch.tensor([1])) sums dim 1) and any object with __index__."""
    r = int_param(v)
    if r is not None or isinstance(v, (bool, np.bool_, float, np.floating)):
        return r
    if isinstance(v, TensorBase):
        A = (<TensorBase>v)._array
        return int(A.reshape(())) if A.size == 1 and A.dtype.kind in "iub" else None
    try:
        return operator.index(v)
    except TypeError:
        return None


cpdef object int_arg(object v, str fname, str argname, int pos=0, bint symint=False):
    """An integer argument as PyTorch's parser reads its type: `int` (a dim, chunk's chunks:
    int_param) or, with `symint`, `SymInt` (narrow's start, select's index, split's size:
    symint_param); PyTorch's TypeError otherwise (bools and floats are not ints), naming the
    argument's position where `pos` is given."""
    d = symint_param(v) if symint else int_param(v)
    if d is not None:
        return d
    where = f" (position {pos})" if pos else ""
    raise TypeError(f"{fname}(): argument '{argname}'{where} must be int, not {type_name(v)}")


# -- numpy's spellings PyTorch accepts on reductions: axis= for dim, keepdims= for keepdim ----------

cdef object dim_alias(str fname, object dim, object axis):
    """dim, or its alias `axis` (given at most once, as PyTorch's argument parser requires)."""
    if axis is None:
        return dim
    if dim is not None:
        raise TypeError(f"{fname}() got multiple values for argument 'dim' (alias 'axis')")
    return axis


cdef bint keepdim_alias(str fname, object keepdim, object keepdims) except -1:
    """keepdim, or its alias `keepdims`: a Python bool, as PyTorch's parser requires (an int, None
    or numpy bool there is a TypeError, not a truth value: x.sum(1, 2) must not keep dim 1)."""
    if keepdims is None:
        return check_bool(fname, "keepdim", keepdim)
    if keepdim is not False:
        if keepdim is True:
            raise TypeError(f"{fname}() got multiple values for argument 'keepdim' (alias "
                            "'keepdims')")
        check_bool(fname, "keepdim", keepdim)
    return check_bool(fname, "keepdim", keepdims)


cpdef bint check_bool(str fname, str name, object value, int position=0,
                      str overloads=None) except -1:
    """`value` of the bool parameter `name` of PyTorch's `fname`, as PyTorch's argument parser
    takes it: exactly a Python bool.  An int, None or a numpy bool is its TypeError, never a
    truth value (a.topk(2, 1, 0) must not mean largest=False).  The one check of every bool
    parameter (keepdim, descending, requires_grad, ceil_mode ...), cheap on the hot paths (the
    identity tests come first).  `position`: the one PyTorch's message names whichever way the
    argument came (its Python-level functions pass it on by position to an aten op: F.max_pool1d's
    ceil_mode is max_pool1d's 6th); a public entry adds the call's own position otherwise.
    `overloads`: the signatures of a function PyTorch knows under several, whose parser says
    "invalid combination" instead (the entry puts the call's arguments in its "got")."""
    if value is True:
        return True
    if value is False:
        return False
    if overloads is not None:
        raise TypeError(f"{fname}() received an invalid combination of arguments - got "
                        f"({name}={type_name(value)}), but expected one of:\n{overloads}")
    where = f" (position {position})" if position else ""
    raise TypeError(f"{fname}(): argument '{name}'{where} must be bool, not {type_name(value)}")


cdef tuple normalize_dims(object dim, int ndim, bint range_first=False,
                          bint one_element_tensor=True):
    """dim (None, int or sequence, negatives allowed) -> sorted tuple of axes; PyTorch's errors.
    Each dim is read as an element of PyTorch's `int[]` (symint_param: a one-element integer
    tensor is a dim).  One tensor given as `dim` is one dim: PyTorch's `int[1]` dims (sum's,
    var's, norm's) read any one-element integer or bool tensor so; an `int[]` with an `int`
    overload (any's, all's, count_nonzero's: `one_element_tensor` False) only a 0-d integer one.

    Which error a list both repeating a dim and holding one out of range raises follows
    PyTorch's op: its std, var, nansum and vector_norm check each dim in turn (range, then
    repeat), its sum, mean, amax, amin, logsumexp, count_nonzero, nanmean, any and all every
    dim's range before any repeat (`range_first`)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, TensorBase):
        single = symint_param(dim) if one_element_tensor else int_param(dim)
        if single is None:
            raise TypeError(f"dim must be an int or a tuple of ints, got {type_name(dim)}")
        dim = single
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    cdef int lo = -ndim if ndim > 0 else -1, hi = ndim - 1 if ndim > 0 else 0
    axes = []
    for item in dims:
        d = symint_param(item)
        if d is None:
            raise TypeError(f"dim must be an int or a tuple of ints, got {type_name(item)}")
        if d < lo or d > hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                             f"but got {d})")
        a = d + ndim if d < 0 else d
        if ndim == 0:
            a = 0
        if a in axes and not range_first:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        axes.append(a)
    if range_first:
        for i in range(len(axes)):
            if axes[i] in axes[:i]:
                raise RuntimeError(f"dim {axes[i]} appears multiple times in the list of dims")
    return tuple(sorted(axes)) if ndim > 0 else ()


def _normalize_dims(dim, int ndim, bint range_first=False):
    """normalize_dims for the Python-level reductions (nansum, nanmean, vector_norm)."""
    return normalize_dims(dim, ndim, range_first)
