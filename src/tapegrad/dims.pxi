# ---------------------------------------------------------------------------------------------
# Dim arguments as PyTorch parses them, shared by every op family that takes a dim.
# ---------------------------------------------------------------------------------------------

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


cdef tuple normalize_dims(object dim, int ndim, bint range_first=False):
    """dim (None, int or sequence, negatives allowed) -> sorted tuple of axes; PyTorch's errors.

    Which error a list both repeating a dim and holding one out of range raises follows
    PyTorch's op: its std, var, nansum and vector_norm check each dim in turn (range, then
    repeat), its sum, mean, amax, amin, logsumexp, count_nonzero, nanmean, any and all every
    dim's range before any repeat (`range_first`)."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    cdef int lo = -ndim if ndim > 0 else -1, hi = ndim - 1 if ndim > 0 else 0
    axes = []
    for d in dims:
        if isinstance(d, np.integer):
            d = int(d)
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"dim must be an int or a tuple of ints, got {type_name(d)}")
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
