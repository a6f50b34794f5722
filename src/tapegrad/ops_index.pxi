# ---------------------------------------------------------------------------------------------
# Indexing (reading).  The key is normalised to numpy form (tensors become arrays) and kept in aux
# with the input's shape and dtype; the VJP scatters the gradient into zeros of the input's shape.
# Advanced (integer-array or mask) keys scatter with np.add.at, which accumulates repeated indices.
# ---------------------------------------------------------------------------------------------


cdef object normalize_index_item(object item, list advanced):
    if isinstance(item, TensorBase):
        arr = (<TensorBase>item)._array
        if arr.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        advanced.append(True)
        return arr
    if isinstance(item, (list, np.ndarray)):
        arr = np.asarray(item)
        if arr.dtype.kind not in "biu" and arr.size > 0:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        advanced.append(True)
        return arr.astype(NP_INT64) if arr.size == 0 else arr
    if isinstance(item, bool):
        advanced.append(True)
        return item
    if item is None or item is Ellipsis or isinstance(item, (int, slice)):
        return item
    if isinstance(item, np.integer):
        return int(item)
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     f"Variables are valid indices (got {type(item).__name__})")


cdef object normalize_key(object key, list advanced):
    if isinstance(key, tuple):
        return tuple(normalize_index_item(k, advanced) for k in key)
    return normalize_index_item(key, advanced)


cdef object vjp_index(Record* r, object g):
    shape, dt, key, advanced = <tuple>r.aux
    z = np.zeros(shape, dtype=dt)
    if advanced:
        np.add.at(z, key, g)                            # repeated indices accumulate
    else:
        z[key] = g
    return z


cdef int OP_SELECT = register_op("SelectBackward0", vjp_index)
cdef int OP_SLICE = register_op("SliceBackward0", vjp_index)
cdef int OP_INDEX = register_op("IndexBackward0", vjp_index)


cdef object index_op(TensorBase x, object key):
    cdef Py_ssize_t inp[1]
    cdef Record* r
    cdef list advanced = []
    nkey = normalize_key(key, advanced)
    A = x._array
    try:
        out = A[nkey]
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None
    out = nd(out)
    cdef TensorBase res = wrap(out)
    if not grad_enabled():
        return res
    begin_record(1)
    inp[0] = node_for_input(x)
    if inp[0] < 0:
        return res
    op = OP_INDEX if advanced else (OP_SELECT if isinstance(nkey, int) else OP_SLICE)
    r = record_op(op, res, 1, inp)
    keep(&r.aux, (A.shape, A.dtype, nkey, bool(advanced)))
    return res
