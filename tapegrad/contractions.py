"""einsum, addmm and baddbmm, composed from tapegrad's differentiable ops.

einsum reduces every equation to the ops the tape already differentiates: index_select for a
repeated subscript (a diagonal), sum for a subscript nobody else needs, and per pair of operands
one permute + reshape + (b)mm.  Gradients, create_graph and higher order come from those ops.
_int_mm and _weight_int8pack_mm (int8 products, which have no gradient) sit beside them.
"""
from __future__ import annotations as _annotations

import sys as _sys

import numpy as np

from ._deprecated_overloads import NOT_GIVEN, scale_first_product
from . import _core
from ._half_precision import in_float32_if_half
from .tensor import Tensor

_mm = _core.TORCH_FUNCTIONS["mm"]
_bmm = _core.TORCH_FUNCTIONS["bmm"]
from ._autocast import lower_precision_operands  # noqa: E402


def _is_bfloat16(t) -> bool:
    """Whether t is a bfloat16 tensor.  The bfloat16 dispatch runs these ops on the float32
    storage, where t.dtype reads float32: the dtype checks below ask this too, or a product of
    bfloat16 and float32 operands passed them (x.addmm_(bf16, bf16) ran in float32)."""
    bf16 = _sys.modules.get("tapegrad._bfloat16")      # (not loaded: no bfloat16 tensor exists)
    return bf16 is not None and bf16.is_bfloat16(t)


def _dtype_key(t):
    """t's dtype as PyTorch's checks compare it (bfloat16 apart from its float32 storage)."""
    return "bfloat16" if _is_bfloat16(t) else t._array.dtype


def _type_name(t) -> str:
    """PyTorch's ScalarType name of t's dtype (the core's one table: ComplexFloat too)."""
    return "BFloat16" if _is_bfloat16(t) else _core.scalar_type_name_of(t._array.dtype)


def _c_name(t) -> str:
    if _is_bfloat16(t):
        return "c10::BFloat16"
    from .nn._attention import _c_name as c_name
    return c_name(t)


def _check_product_dtypes(input, mat1, mat2) -> None:
    """addmm's and addbmm's dtype checks, in PyTorch's order: input against mat2, then mat1."""
    if _dtype_key(input) != _dtype_key(mat2):
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_type_name(input)} and {_type_name(mat2)}")
    if _dtype_key(mat1) != _dtype_key(mat2):
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_type_name(mat1)} and {_type_name(mat2)}")


# -- addmm / baddbmm ----------------------------------------------------------------------------

def _expand_error(target, input):
    """PyTorch's message when `input` cannot broadcast to the product's shape."""
    shape = tuple(input.shape)
    if len(shape) > len(target):
        return RuntimeError(f"expand(torch.{_type_name(input)}Tensor{{{list(shape)}}}, "
                            f"size={list(target)}): the number of sizes provided "
                            f"({len(target)}) must be greater or equal to the number of "
                            f"dimensions in the tensor ({len(shape)})")
    offset = len(target) - len(shape)
    for k in reversed(range(len(shape))):       # PyTorch names the last mismatching dimension
        s = shape[k]
        if s != 1 and s != target[offset + k]:
            return RuntimeError(f"The expanded size of the tensor ({target[offset + k]}) must "
                                f"match the existing size ({s}) at non-singleton dimension "
                                f"{offset + k}.  Target sizes: {list(target)}.  Tensor sizes: "
                                f"{list(shape)}")
    return None


def _zeroed(t, zero=0.0):
    """Zeros of t's shape that stay in t's graph (t receives a zero gradient, as PyTorch's
    input does through a zero beta), with no NaN/inf of t leaking into them (0 * nan).
    ``zero=-0.0`` gives the zero that adds to any x giving x exactly, signed zeros included."""
    from .creation import from_numpy
    return t.masked_fill(from_numpy(np.ones((), dtype=bool)), zero)


def kernel_scalar(value, dtype):
    """A Python/numpy scalar (beta, alpha, addcmul's value) as PyTorch's kernel of a ``dtype``
    result reads it: converted to that type, so an integer result truncates a float factor
    toward zero (alpha=0.5 is 0) and stays integer, a bool result takes its truth value, and a
    complex factor with an imaginary part is refused where the result is real."""
    if isinstance(value, _core.TensorBase):
        return value
    kind = np.dtype(dtype).kind
    if kind == "c":
        return value
    if isinstance(value, (complex, np.complexfloating)):
        if value.imag != 0:
            # PyTorch's error, naming the type its kernel computes in (float16's is float)
            _core._scalar_to_dtype(value, np.float32 if kind == "f" and np.dtype(dtype).itemsize
                                   == 2 else dtype)
        value = value.real
    if kind in "iu":
        _core._scalar_to_dtype(value, dtype)   # (PyTorch's checked conversion: its overflow error)
        return int(value)
    if kind == "b":
        return bool(value)
    # A numpy scalar becomes the Python number it holds: kernels compute with the factor in the
    # result's precision, never in its own numpy type (lerp's 1 - weight of an np.uint8 weight
    # wrapped around to 255)
    return value.item() if isinstance(value, np.generic) else value


def _scaled_sum(input, product, beta, alpha, drop_zero_alpha=False, empty_sum=False):
    """beta * input + alpha * product, beta and alpha read in the product's dtype (see
    kernel_scalar).  A zero beta ignores input's values (as PyTorch: NaN/inf in input do not
    leak) but keeps it in the graph (its gradient is zeros); so does a zero alpha for the
    product when `drop_zero_alpha` (PyTorch's addmm, addmv and addbmm, unlike its baddbmm
    and addr).  Where the product is dropped so, or is a sum of no terms (`empty_sum`: an
    inner dimension or addbmm's batch of size 0), PyTorch's result is beta * input itself,
    -0.0 kept: the dropped product is -0.0, which adds to anything without changing it."""
    error = _expand_error(tuple(product.shape), input)
    if error is not None:
        raise error
    dtype = product._array.dtype
    beta, alpha = kernel_scalar(beta, dtype), kernel_scalar(alpha, dtype)
    if empty_sum or (alpha == 0 and drop_zero_alpha):
        product = _zeroed(product, -0.0)
    elif alpha != 1:
        product = product * alpha
    if beta == 0:
        return product + _zeroed(input)
    return product + (input if beta == 1 else input * beta)


def _check_tensors(fn: str, named: tuple) -> None:
    """PyTorch's TypeError for the first of the (argument, name) pairs that is no tensor."""
    from ._extra_ops import _check_tensor
    for position, (t, name) in enumerate(named, 1):
        _check_tensor(t, fn, name, position)


def addmm(input, mat1, mat2, old_third=NOT_GIVEN, old_fourth=NOT_GIVEN, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2); input broadcasts to (n, p).  PyTorch checks the
    dtypes (input's, then mat1's, against mat2's) before the ranks.  A sparse COO mat1 (or
    mat2, which PyTorch refuses) is tapegrad.sparse.addmm's case."""
    if old_third is not NOT_GIVEN:      # PyTorch's deprecated scale-first forms
        input, mat1, mat2, beta, alpha = scale_first_product(
            "addmm", input, mat1, mat2, old_third, old_fourth, beta, alpha)
    if not (isinstance(mat1, _core.TensorBase) and isinstance(mat2, _core.TensorBase)):
        # A sparse tensor exists only once tapegrad._sparse_coo is loaded: no import otherwise.
        sparse = _sys.modules.get("tapegrad._sparse_coo")
        if sparse is not None and (isinstance(mat1, sparse.SparseTensor) or
                                   isinstance(mat2, sparse.SparseTensor)):
            return sparse.sparse_addmm(input, mat1, mat2, beta, alpha, "AddmmBackward0",
                                       masked_grad=False)
    _check_tensors("addmm", ((input, "input"), (mat1, "mat1"), (mat2, "mat2")))
    _check_product_dtypes(input, mat1, mat2)
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.dim() != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.dim()}-D tensor")
    # (float16: beta * input is added to the product's float32 accumulator, as PyTorch's addmm,
    # addmv and baddbmm do; the product rounded to float16 first was an ulp off: fuzz 60634316.
    # Not addbmm: PyTorch's adds each batch's product in turn, rounding each sum to float16.)
    return _core._name_grad_fn(in_float32_if_half(
        lambda i, a, b: _scaled_sum(i, _mm(a, b), beta, alpha, drop_zero_alpha=True,
                                    empty_sum=mat1.shape[1] == 0), input, mat1, mat2),
        "AddmmBackward0")


def baddbmm(input, batch1, batch2, old_third=NOT_GIVEN, old_fourth=NOT_GIVEN, *, beta=1,
            alpha=1):
    """beta * input + alpha * (batch1 @ batch2) per batch; input broadcasts to (b, n, p)."""
    if old_third is not NOT_GIVEN:      # PyTorch's deprecated scale-first forms
        input, batch1, batch2, beta, alpha = scale_first_product(
            "baddbmm", input, batch1, batch2, old_third, old_fourth, beta, alpha)
    _check_tensors("baddbmm", ((input, "input"), (batch1, "batch1"), (batch2, "batch2")))
    # (PyTorch reads the result's size, batch1.size(0), size(1) and batch2.size(2), before it
    # checks the ranks: a batch of fewer dims gives that read's IndexError)
    batch1.size(0), batch1.size(1), batch2.size(2)
    if batch1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, n, m = batch1.shape
    target = (b, n, batch2.shape[2])
    error = _expand_error(target, input)
    if error is not None:
        raise error
    if tuple(batch2.shape[:2]) != (b, m):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {m}] but got: [{batch2.shape[0]}, {batch2.shape[1]}].")
    if _dtype_key(input) != _dtype_key(batch1):
        raise RuntimeError(f"Input dtypes must be the same, got: input {_c_name(input)}, "
                           f"batch1: {_c_name(batch1)}, batch2: {_c_name(batch2)}")
    if _dtype_key(batch1) != _dtype_key(batch2):
        raise RuntimeError(f"expected scalar type {_type_name(batch1)} but found "
                           f"{_type_name(batch2)}")
    return _core._name_grad_fn(in_float32_if_half(
        lambda i, a, b: _scaled_sum(i, _bmm(a, b), beta, alpha, empty_sum=m == 0),
        input, batch1, batch2), "BaddbmmBackward0")



# -- _int_mm: int8 matrix product ---------------------------------------------------------------

def _int_mm(input, mat2, *, out=None):
    """input @ mat2 for int8 matrices (input may be uint8), accumulated and returned in int32, as
    quantized models call it.  Integer results have no gradient, so nothing is recorded.  The
    checks and their order are PyTorch's CPU kernel's (int_mm_out_cpu): the result is allocated
    from input.size(0) and mat2.size(1) first (a 1-d mat2 raises IndexError there), then ranks,
    inner sizes, dtypes, and an out tensor must already be int32 of the right size."""
    from .creation import from_numpy
    _check_tensors("_int_mm", ((input, "input"), (mat2, "mat2")))
    rows, cols = input.size(0), mat2.size(1)
    where = "int_mm_out_cpu: "
    for t, name in ((input, "self"), (mat2, "mat2")):
        if t.dim() != 2:
            raise RuntimeError(f"{where}Expected {name} to be of dimension 2 but got {t.dim()}")
    if input.size(1) != mat2.size(0):
        raise RuntimeError(f"{where}self.size(1) needs to match mat2.size(0) but got "
                           f"{input.size(1)} and {mat2.size(0)}")
    if input._array.dtype not in (np.int8, np.uint8):
        raise RuntimeError(f"{where}Expected self dtype to be int8 or uint8 but got {_c_name(input)}")
    if mat2._array.dtype != np.int8:
        raise RuntimeError(f"{where}Expected mat2 dtype to be of type int8 but got {_c_name(mat2)}")
    # int32 operands: numpy then accumulates in int32, wrapping on overflow as PyTorch's kernel does
    product = np.matmul(input._array.astype(np.int32), mat2._array.astype(np.int32))
    if out is None:
        return from_numpy(product)
    _check_tensors("_int_mm", ((out, "out"),))
    if out._array.dtype != np.int32:
        raise RuntimeError(f"{where}Expected result dtype to be of type kInt but got {_c_name(out)}")
    for dim, size in enumerate((rows, cols)):
        if out.dim() > dim and out.size(dim) != size:
            raise RuntimeError(f"{where}Expected result.size({dim}) to be {size} but got "
                               f"{out.size(dim)}")
    from ._out_arg import write_into
    return write_into("_int_mm", out, from_numpy(product))


def _weight_int8pack_mm(input, mat2, scales):
    """input @ (mat2 * scales[:, None]).T: float activations (M, K) times int8 weights (N, K)
    scaled per output channel, the weight-only int8 linear of quantized LLM inference on CPU.
    Computed in float32 (float16 input: rounded back to float16).  Checks in the order of
    PyTorch's CPU kernel, which reads input.size(1) and mat2.size(1) first (IndexError for a 1-d
    operand); like PyTorch, the result joins the graph but has no derivative."""
    from ._more_math import without_derivative
    _check_tensors("_weight_int8pack_mm", ((input, "input"), (mat2, "mat2"), (scales, "scales")))
    n, k = mat2.size(0), input.size(1)
    where = "_weight_int8pack_mm_cpu : "
    dtype = input._array.dtype
    if dtype not in (np.float32, np.float16):
        raise RuntimeError(f"{where}expect A to be either 32-bit or 16-bit float tensor.")
    if input.stride(1) != 1:
        raise RuntimeError(f"{where}A must be contiguous on the last dimension.")
    if mat2._array.dtype != np.int8:
        raise RuntimeError(f"{where}expect B to be int8 tensor.")
    if not mat2.is_contiguous():
        raise RuntimeError(f"{where}expect B to be contiguous.")
    if mat2.size(1) != k:
        raise RuntimeError(f"{where}expect B.size(1) == {k}")
    if scales.dim() != 1 or scales.size(0) != n:
        raise RuntimeError(f"{where}expect scales to be 1d tensor with size {n}")
    if scales._array.dtype != dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input)} but found {_type_name(scales)}")
    product = np.matmul(input._array.astype(np.float32), mat2._array.T.astype(np.float32))
    values = (product * scales._array.astype(np.float32)).astype(dtype)
    return without_derivative((input, scales), values,
                              "derivative for aten::_weight_int8pack_mm is not implemented",
                              RuntimeError)

# -- einsum: parsing ----------------------------------------------------------------------------

def _einsum_error(msg):
    return RuntimeError(f"einsum(): {msg}")


def _parse_term(term, start, operand_index):
    """Subscripts of one term: a list of letters with at most one "..." marker."""
    labels, k, has_ellipsis = [], 0, False
    while k < len(term):
        ch = term[k]
        if ch == ".":
            if term[k:k + 3] != "...":
                raise _einsum_error(f"found '.' for operand {operand_index} that is not part "
                                    f"of any ellipsis")
            if has_ellipsis:
                raise _einsum_error(f"found '.' for operand {operand_index} for which an "
                                    f"ellipsis was already found")
            labels.append("...")
            has_ellipsis = True
            k += 3
            continue
        if ch == " ":
            k += 1
            continue
        if not ch.isascii() or not ch.isalpha():
            raise _einsum_error(f"invalid subscript given at index {start + k} in the equation "
                                f"string, subscripts must be in [a-zA-Z]")
        labels.append(ch)
        k += 1
    return labels


def _parse_equation(equation, n_operands):
    lhs, arrow, rhs = equation.partition("->")
    terms, starts, pos = [], [], 0
    for term in lhs.split(","):
        terms.append(term)
        starts.append(pos)
        pos += len(term) + 1
    if len(terms) > n_operands:
        raise _einsum_error("fewer operands were provided than specified in the equation")
    if len(terms) < n_operands:
        raise _einsum_error("more operands were provided than specified in the equation")
    inputs = [_parse_term(t, s, i) for i, (t, s) in enumerate(zip(terms, starts))]
    if not arrow:
        return inputs, None
    if "->" in rhs:
        bad = len(lhs) + 2 + rhs.index("->")
        raise _einsum_error(f"invalid subscript given at index {bad} in the equation string, "
                            f"subscripts must be in [a-zA-Z]")
    output = _parse_term(rhs, len(lhs) + 2, "output")
    return inputs, output


def _from_sublists(args):
    """einsum(op1, sublist1, op2, sublist2, ..., [sublist_out]) as an equation string."""
    def letter(v):
        if v is Ellipsis:
            return "..."
        if not isinstance(v, int):
            raise TypeError(f"'{type(v).__name__}' object cannot be interpreted as an integer")
        if not 0 <= v < 52:
            raise ValueError("einsum(): subscript in subscript list is not within the valid "
                             "range [0, 52)")
        return chr(ord("A") + v) if v < 26 else chr(ord("a") + v - 26)
    operands = list(args[0::2][: len(args) // 2])
    sublists = list(args[1::2][: len(args) // 2])
    equation = ",".join("".join(letter(v) for v in s) for s in sublists)
    if len(args) % 2:
        equation += "->" + "".join(letter(v) for v in args[-1])
    return equation, operands


# -- einsum: evaluation -------------------------------------------------------------------------

def _take_diagonals(t, labels):
    """Collapse repeated subscripts of one operand into one dim (their diagonal)."""
    while True:
        seen = {}
        repeat = None
        for k, lab in enumerate(labels):
            if lab in seen:
                repeat = (seen[lab], k)
                break
            seen[lab] = k
        if repeat is None:
            return t, labels
        i, j = repeat
        others = [k for k in range(len(labels)) if k not in (i, j)]
        # a view, as PyTorch's (diagonal moves the collapsed dim last): einsum('ii->i', x) under
        # no_grad is a view of x that requires grad there (fuzz 60717960, 60719931)
        t = t.diagonal(0, i, j)
        labels = [labels[k] for k in others] + [labels[i]]


def _index(arr):
    from .creation import from_numpy
    return from_numpy(np.ascontiguousarray(arr, dtype=np.int64))


def _sum_out(t, labels, keep):
    """Sum over the dims whose labels are not in `keep`."""
    dims = [k for k, lab in enumerate(labels) if lab not in keep]
    if not dims:
        return t, labels
    t = t.sum(dim=tuple(dims))
    return t, [lab for k, lab in enumerate(labels) if k not in dims]


def _contract_pair(a, la, b, lb, needed, order):
    """Contract two operands with unique labels; labels in `needed` survive, shared others sum.

    `order` ranks all labels, the output's first in output order: a pair with nothing to sum
    multiplies its operands laid out in that order, as PyTorch's einsum does, so the product
    has PyTorch's grad_fn (MulBackward0) and strides (einsum('se,ec->sec') is contiguous and
    takes .view())."""
    size_a = dict(zip(la, a.shape))
    size_b = dict(zip(lb, b.shape))
    common = [lab for lab in la if lab in size_b]
    batch = [lab for lab in common if lab in needed]
    contract = [lab for lab in common if lab not in needed]
    # A contracted subscript of size 1 on one side broadcasts: sum the other side first.
    for lab in contract:
        if size_a[lab] != size_b[lab]:
            if size_a[lab] == 1:
                b = b.sum(dim=lb.index(lab), keepdim=True)
                size_b[lab] = 1
            else:
                a = a.sum(dim=la.index(lab), keepdim=True)
                size_a[lab] = 1
    a_only = [lab for lab in la if lab not in size_b]
    b_only = [lab for lab in lb if lab not in size_a]
    # PyTorch contracts with bmm only over subscripts longer than 1 on both sides (the others
    # were summed out above, or are 1 on both): without one it multiplies instead (promoting
    # mixed dtypes, as bmm would not).
    summed = [lab for lab in contract if size_a[lab] != 1]
    if not summed:
        kept = sorted(batch + a_only + b_only, key=order.index)

        def laid_out(t, lt, size):
            # (the subscripts kept, in `order`; 1 for the other operand's; size-1 contracted
            # subscripts dropped: a view of t)
            t = t.permute(tuple(lt.index(lab) for lab in kept if lab in size)
                          + tuple(lt.index(lab) for lab in contract))
            return t.reshape(tuple(size[lab] if lab in size else 1 for lab in kept))
        return laid_out(a, la, size_a) * laid_out(b, lb, size_b), kept
    # (the broadcast size: a 1 takes the other side's, 0 included, where max gave 1 against 0)
    batch_sizes = [size_b[lab] if size_a[lab] == 1 else size_a[lab] for lab in batch]
    a = a.permute(tuple(la.index(lab) for lab in batch + a_only + contract))
    b = b.permute(tuple(lb.index(lab) for lab in batch + contract + b_only))
    if any(size_a[lab] != s for lab, s in zip(batch, batch_sizes)):
        a = a.expand(*batch_sizes, *a.shape[len(batch):])
    if any(size_b[lab] != s for lab, s in zip(batch, batch_sizes)):
        b = b.expand(*batch_sizes, *b.shape[len(batch):])
    # (PyTorch's einsum reaches bmm through the dispatcher: autocast casts its operands, and
    # a bfloat16 cast needs the public bmm, which computes bfloat16 tensors)
    bmm = _bmm
    cast_a, cast_b = lower_precision_operands("bmm", a, b)
    if cast_a is not a or cast_b is not b:
        from . import bmm
        a, b = cast_a, cast_b
    if a._array.dtype == np.bool_:
        # bmm's dtype check (on the first operand) comes before its operands' comparison.
        raise NotImplementedError('"bmm" not implemented for \'Bool\'')
    if a.dtype != b.dtype:
        out_sizes = batch_sizes + [size_a[lab] for lab in a_only] + [size_b[lab] for lab in b_only]
        if b._array.dtype == np.bool_ or (0 not in out_sizes and
                                          all(size_a[lab] for lab in summed)):
            raise RuntimeError(f"expected scalar type {_type_name(a)} but found {_type_name(b)}")
        # PyTorch's bmm compares dtypes only when it multiplies anything: an empty product
        # (nothing to sum, or an empty output) is zeros in the second operand's dtype
        a = a.to(b.dtype)
    M = int(np.prod([size_a[lab] for lab in a_only], dtype=np.int64))
    K = int(np.prod([size_a[lab] for lab in contract], dtype=np.int64))
    N = int(np.prod([size_b[lab] for lab in b_only], dtype=np.int64))
    # (always bmm, a batch of one without batch subscripts, as PyTorch's: mm's backward lays a
    # column-major operand's gradient out column-major, bmm's does not)
    nb = int(np.prod(batch_sizes, dtype=np.int64))
    out = bmm(a.reshape(nb, M, K), b.reshape(nb, K, N))
    shape = batch_sizes + [size_a[lab] for lab in a_only] + [size_b[lab] for lab in b_only]
    return out.reshape(tuple(shape)), batch + a_only + b_only


def einsum(*args):
    """Einstein summation, PyTorch's einsum: `einsum('ij,jk->ik', a, b)`, the list form
    `einsum(eq, [a, b])`, and the sublist form `einsum(a, [0, 1], b, [1, 2], [0, 2])`."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation = args[0]
        operands = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) \
            else list(args[1:])
        for i, t in enumerate(operands):         # (PyTorch's parser, before the equation's)
            if not isinstance(t, _core.TensorBase):
                raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                                f"{_core.type_name(t)}")
    else:
        equation, operands = _from_sublists(args)
    inputs, output = _parse_equation(equation, len(operands))
    # (Mixed dtypes: a pair with a summed subscript raises as PyTorch's bmm; one without is a
    # promoting product - see _contract_pair.)

    # Name the dims an ellipsis covers by their distance from the right, so they align.
    n_ellipsis = 0
    expanded = []
    for i, (labels, t) in enumerate(zip(inputs, operands)):
        named = len(labels) - ("..." in labels)
        if "..." in labels:
            if t.dim() < named:
                raise _einsum_error(f"the number of subscripts in the equation ({named}) is more "
                                    f"than the number of dimensions ({t.dim()}) for operand {i}")
            covered = t.dim() - named
            n_ellipsis = max(n_ellipsis, covered)
            k = labels.index("...")
            labels = labels[:k] + [("...", covered - j) for j in range(covered)] + labels[k + 1:]
        elif named != t.dim():
            raise _einsum_error(f"the number of subscripts in the equation ({named}) does not "
                                f"match the number of dimensions ({t.dim()}) for operand {i} "
                                f"and no ellipsis was given")
        expanded.append(labels)
    ellipsis_labels = [("...", n_ellipsis - j) for j in range(n_ellipsis)]

    # Sizes: a subscript repeated in one operand must match; across operands sizes broadcast.
    sizes = {}
    for i, (labels, t) in enumerate(zip(expanded, operands)):
        own = {}
        for lab, s in zip(labels, t.shape):
            if lab in own and own[lab] != s:
                raise _einsum_error(f"subscript {lab} is repeated for operand {i} but the sizes "
                                    f"don't match, {s} != {own[lab]}")
            own[lab] = s
        for lab, s in own.items():
            prev = sizes.get(lab)
            if prev is not None and prev != s and prev != 1 and s != 1:
                name = lab if isinstance(lab, str) else "..."
                raise _einsum_error(f"subscript {name} has size {s} for operand {i} which does "
                                    f"not broadcast with previously seen size {prev}")
            sizes[lab] = s if prev is None or prev == 1 else prev

    if output is None:
        counts = {}
        for labels in inputs:
            for lab in labels:
                counts[lab] = counts.get(lab, 0) + 1
        out_labels = ellipsis_labels + sorted(lab for lab, c in counts.items()
                                              if c == 1 and lab != "...")
    else:
        out_labels = []
        for lab in output:
            if lab == "...":
                out_labels.extend(ellipsis_labels)
                continue
            if lab in out_labels:
                raise _einsum_error(f"output subscript {lab} appears more than once in the "
                                    f"output")
            if lab not in sizes:
                raise _einsum_error(f"output subscript {lab} does not appear in the equation "
                                    f"for any input operand")
            out_labels.append(lab)

    terms = []
    for labels, t in zip(expanded, operands):
        t, labels = _take_diagonals(t, labels)
        terms.append((t, labels))
    keep_out = set(out_labels)
    order = list(out_labels)
    for labels in expanded:
        order.extend(lab for lab in labels if lab not in order)
    result, res_labels = terms[0]
    for idx in range(len(terms)):
        if idx > 0:
            later = set().union(*[set(l) for _, l in terms[idx + 1:]]) if idx + 1 < len(terms) \
                else set()
            t, labels = terms[idx]
            t, labels = _sum_out(t, labels, keep_out | later | set(res_labels))
            result, res_labels = _contract_pair(result, res_labels, t, labels, keep_out | later,
                                                 order)
        else:
            rest = set().union(*[set(l) for _, l in terms[1:]]) if len(terms) > 1 else set()
            result, res_labels = _sum_out(result, res_labels, keep_out | rest)
    result, res_labels = _sum_out(result, res_labels, keep_out)
    # Output subscripts of size 1 here but larger elsewhere cannot occur after the contraction;
    # a label kept in the output always has its broadcast size.
    perm = [res_labels.index(lab) for lab in out_labels]
    if perm != list(range(len(perm))):
        result = result.permute(*perm)
    target = [sizes[lab] for lab in out_labels]
    if list(result.shape) != target:
        result = result.expand(tuple(target))
    return result


# einsum's home holds its public entry (tapegrad/_public_calls.py), the object tapegrad.einsum
# and torch.functional's einsum are (addmm and baddbmm get theirs, with out=, in tapegrad)
from ._public_calls import public_call as _public_call  # noqa: E402
einsum = _public_call("einsum", einsum)
