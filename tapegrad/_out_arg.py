"""The ``out=`` keyword of the public functions that take it in PyTorch (``torch.tanh(x, out=y)``,
``torch.cat(ts, out=y)``, ``torch.max(x, 1, out=(values, indices))`` ...).

One mechanism for all of them: the function is wrapped once, in the public functions' entry
(tapegrad/_public_calls.py's `install`, given OUT_FUNCTIONS for the tapegrad namespace), and a
call with ``out`` computes the result as usual and hands it to the core's ``write_out``
(src/tapegrad/ops_inplace.pxi), which applies PyTorch's rules: refused when grad mode is on and an argument requires grad, each result
cast to its out tensor's dtype when the cast is "same kind" (else "result type Float can't be cast
to the desired output type Long"), out resized to the result's shape (with PyTorch's deprecation
warning unless it was empty), out's version bumped.  A call without ``out`` goes straight to the
function.

The names are the public functions whose PyTorch signature has ``out`` (read from torch 2.13's
signatures when this list was written); those of them that already take ``out`` themselves (the
core's add, mul, matmul ...) are left alone.
"""
from __future__ import annotations as _annotations

import numpy as np

from . import _core

# torch functions with an out= variant (elementwise math, comparisons, reductions along a dim,
# products, joins, factories ...).
OUT_FUNCTIONS = """
abs absolute acos acosh addcdiv addcmul addmm all amax amin aminmax any arange arccos arccosh
arcsin arcsinh arctan arctan2 arctanh argmax argmin asin asinh atan atan2 atanh baddbmm
bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm cat
ceil clamp clamp_max clamp_min clip column_stack concat concatenate cos cosh cumprod cumsum diag
diff divide dot dstack empty eq erf exp expm1 eye fix floor floor_divide fmod frac full gather ge ger
greater greater_equal gt histc histogram hstack index_add index_copy index_select isneginf isposinf le lerp
less less_equal linspace log log10 log1p log2 logaddexp logical_and logical_not logical_or
logical_xor logspace logsumexp lt masked_select matrix_power max maximum mean median min minimum
mm mode msort multiply mv nan_to_num nanmean nanmedian nansum ne neg negative norm not_equal ones
outer pow prod reciprocal remainder round row_stack rsqrt sgn sigmoid sign signbit sin sinh sort
sqrt square stack std subtract sum tan tanh topk tril triu true_divide trunc var vstack where
xlogy zeros
addbmm addmv addr angle chain_matmul cholesky cholesky_inverse cholesky_solve complex copysign
deg2rad digamma erfc erfinv exp2 float_power fmax fmin frobenius_norm gcd geqrf heaviside hypot i0
igamma igammac inverse lcm ldexp lgamma logaddexp2 logit lu_solve mvlgamma nextafter
nuclear_norm polar polygamma qr rad2deg range renorm sinc svd triangular_solve vdot
div take conj_physical isin cross lu softmax log_softmax lu_unpack slogdet
""".split()

# The same for torch.linalg, torch.special and torch.fft (their entry names them as PyTorch's
# messages do: "linalg_norm(): argument 'out' must be Tensor, not int").
LINALG_OUT_FUNCTIONS = """
cholesky cholesky_ex cond cross det eig eigh eigvals eigvalsh householder_product inv inv_ex
ldl_factor ldl_factor_ex ldl_solve lu lu_factor lu_factor_ex lu_solve matmul matrix_norm matrix_power matrix_rank multi_dot
norm pinv qr slogdet solve solve_ex solve_triangular svd svdvals tensorinv tensorsolve vecdot
vector_norm
""".split()
SPECIAL_OUT_FUNCTIONS = """
airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 chebyshev_polynomial_t chebyshev_polynomial_u
chebyshev_polynomial_v chebyshev_polynomial_w digamma entr erf erfc erfcx erfinv exp2 expit expm1
gammainc gammaincc gammaln hermite_polynomial_h hermite_polynomial_he i0 i0e i1 i1e
laguerre_polynomial_l legendre_polynomial_p log1p log_ndtr logit logsumexp modified_bessel_i0
modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 multigammaln ndtr ndtri polygamma psi
round scaled_modified_bessel_k0 scaled_modified_bessel_k1 shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w sinc
spherical_bessel_j0 xlog1py xlogy zeta
""".split()
FFT_OUT_FUNCTIONS = """
fft fft2 fftfreq fftn hfft hfft2 hfftn ifft ifft2 ifftn ihfft ihfft2 ihfftn irfft irfft2 irfftn
rfft rfft2 rfftfreq rfftn
""".split()

# Functions whose out tensor's dtype is the dtype they compute in (PyTorch passes it as their
# dtype): the factories, and the sums and products (torch.sum(x_float, 1, out=long) sums the
# values cast to long).
DTYPE_FROM_OUT = frozenset("""
arange empty eye full linspace logspace ones zeros sum prod nansum cumsum cumprod range
fft_fftfreq fft_rfftfreq
""".split())

# The ops whose out PyTorch refuses in any dtype but the result's (where the others cast a
# result into any out of the same kind), with PyTorch's message for each (read from torch 2.13's
# errors; placeholders: {out} / {result} name dtypes as ScalarType does, "Float", {out_c} /
# {result_c} as C does, "float", and {name} the op).  Applied to each result of a tuple-returning op (max's values
# and indices), by the core's write_out; a tuple holds one per result of the op's tuple-returning
# overload, and leaves its single-result overloads (max(x), max(x, y)) casting as any op.
_EXPECTED = "Expected out tensor to have dtype {result_c}, but got {out_c} instead"
_FOUND = "Found dtype {out} but expected {result}"
_SCALAR_TYPE = "expected scalar_type {result} but found {out}"
EXACT_OUT_DTYPE = {
    **dict.fromkeys("""abs absolute ceil fix floor frac neg negative round sgn sign trunc
                       bitwise_not conj_physical clamp clamp_min clamp_max clip""".split(),
                    _FOUND),
    # (max and min along a dim; their single-result overloads cast)
    **dict.fromkeys(("max", "min"), (_EXPECTED, _EXPECTED)),
    **dict.fromkeys("""sort msort topk norm matmul mm bmm mv addmm addmv baddbmm tril
                       triu gather diag cross inverse argmax argmin aminmax renorm index_add
                       index_copy triangular_solve frobenius_norm qr svd lu_unpack isin
                       linalg_cholesky linalg_cholesky_ex linalg_cross linalg_det
                       linalg_eigh linalg_eigvalsh linalg_inv
                       linalg_inv_ex linalg_lu linalg_lu_factor linalg_lu_factor_ex
                       linalg_lu_solve linalg_matmul linalg_matrix_power
                       linalg_qr linalg_slogdet linalg_solve linalg_solve_ex
                       linalg_solve_triangular linalg_svd linalg_svdvals
                       linalg_vecdot linalg_vector_norm softmax log_softmax""".split(), _EXPECTED),
    **dict.fromkeys(("cummax", "cummin", "logcumsumexp"), _SCALAR_TYPE),
    "where": "Expected out type to be {result} but got {out}",
    **dict.fromkeys(("amax", "amin"), "Expected the dtype for input and out to match, but got "
                    "{result} for input's dtype and {out} for out's dtype."),
    "linalg_norm": "linalg.norm expected out tensor dtype {result} but got: {out}",
    **dict.fromkeys(("linalg_matrix_norm", "nuclear_norm"),
                    "linalg.matrix_norm expected out tensor dtype {result} but got: {out}"),
    **dict.fromkeys(("linalg_multi_dot", "chain_matmul"),
                    "multi_dot(): expected out tensor to have dtype {result_c} but got {out_c}"),
    **dict.fromkeys(("dot", "vdot"), "result dtype {out} does not match input dtype {result}"),
    **dict.fromkeys(("index_select", "masked_select"),
                    "{name}(): self and result must have the same scalar type"),
    **dict.fromkeys(("all", "any"), "{name} only supports bool tensor for result, got: {out}"),
    "nan_to_num": "nan_to_num: dtype of out: {out} should be same as input: {result}",
    **dict.fromkeys(("signbit", "isneginf", "isposinf"),
                    "{name} does not support non-boolean outputs."),
    "take": "take(): self and out expected to have the same dtype, but got self.dtype = {result} "
            "and out.dtype = {out}",
    "kthvalue": ("output values must be of same type as input",
                 "output indices must be of scalar type Long"),
    **dict.fromkeys(("quantile", "nanquantile"),
                    "quantile() out tensor must be same dtype as the input tensor"),
    **dict.fromkeys(("complex", "polar"), "Expected object of scalar type {result} but got scalar "
                    "type {out} for argument 'out'"),
    **dict.fromkeys(("tensordot", "inner"), "tensordot: Expected the output tensor to have dtype "
                    "{result}, but got an output tensor with dtype {out}"),
    "histc": "torch.histogram: input tensor and hist tensor should have the same dtype, but got "
             "input {result_c} and hist {out_c}",
    "histogram": ("torch.histogram: input tensor and hist tensor should have the same dtype, but "
                  "got input {result_c} and hist {out_c}",
                  "torch.histogram: input tensor and bin_edges tensor should have the same dtype, "
                  "but got input {result_c} and bin_edges {out_c} for dimension 0"),
    "heaviside": "heaviside is not yet implemented for tensors with different dtypes.",
    "mode": tuple(f"expected scalar type '{{result}}' but got '{{out}}' for {which} output"
                  for which in ("values", "indices")),
    **dict.fromkeys(("median", "nanmedian"), (
        "Expected tensor for 'values' to have the same type as tensor for argument #2 'self'; but "
        "type torch.{out}Tensor does not equal torch.{result}Tensor (while checking arguments "
        "for median)",
        "Expected tensor for argument #1 'indices' to have scalar type Long; but got "
        "torch.{out}Tensor instead (while checking arguments for median)")),
    "float_power": "the output given to float_power has dtype {out} but the operation's result "
                   "requires dtype {result}",
}

# An out of another shape is resized with PyTorch's deprecation warning (the core's RESIZED),
# except by the factories, which resize it silently, and by the range factories, which word it
# their own way.
_RANGE_RESIZED = (("The number of elements in the out tensor of shape {shape} is {numel} which "
                   "does not match the computed number of elements {n}. Note that this may occur "
                   "as a result of rounding error. The out tensor will be resized to a tensor of "
                   "shape {result_tuple}."), "aten/src/ATen/native/RangeFactories.cpp:199")
OUT_RESIZE_WARNING = {
    **dict.fromkeys("empty eye full linspace logspace ones zeros range".split()),
    **dict.fromkeys(("arange", "fft_fftfreq", "fft_rfftfreq"), _RANGE_RESIZED),
}

# The ops whose refusal of an out their result cannot be cast to (a float result into an int64
# out) is not TensorIterator's RuntimeError "result type Float can't be cast to the desired
# output type Long": PyTorch's joins all go through cat's check, a TypeError in cat's words.
# The linalg ops below cast into any out their result can be cast to (eig's complex64
# eigenvalues into a complex128 out, matrix_rank's int64 into int32 or float64) and refuse the
# others in their own words ({result} names the result's dtype, {out} the out's).
_SAFELY_CASTABLE = "Expected {which} to be safely castable from {{result}} dtype, but got {which} " \
                   "with dtype {{out}}"
UNCASTABLE_OUT = {
    **dict.fromkeys(
        "cat concat concatenate stack hstack vstack dstack column_stack row_stack".split(),
        (TypeError, "torch.cat(): input types can't be cast to the desired output type {out}")),
    "linalg_eig": (RuntimeError, tuple("torch.linalg.eig: " + _SAFELY_CASTABLE.format(which=w)
                                       for w in ("eigenvalues", "eigenvectors"))),
    "linalg_eigvals": (RuntimeError,
                       "torch.linalg.eigvals: " + _SAFELY_CASTABLE.format(which="eigenvalues")),
    **{name: (RuntimeError, prefix + _SAFELY_CASTABLE.format(which="result"))
       for name, prefix in (("linalg_cond", "linalg.cond: "),
                            ("linalg_matrix_rank", "torch.linalg.matrix_rank: "),
                            ("linalg_tensorinv", "tensorinv: "),
                            ("linalg_tensorsolve", "tensorsolve: "),
                            ("linalg_householder_product", "torch.linalg.householder_product: "))},
}
# The ops whose out PyTorch refuses when it partly shares memory with an input
# (torch.exp(x[:4], out=x[2:]): "unsupported operation: some elements of the input tensor and
# the written-to tensor refer to a single memory location"), each checked against torch 2.13:
# the elementwise ops, the joins, the scans, the gathers and sorts.  Its reductions (sum, mean,
# amax ...), products (mm, matmul, dot), diag, tril/triu and isin leave an overlap unchecked,
# and so does tapegrad.  name -> whether an input that is all of out with out's layout is refused
# too: the elementwise ops allow it (torch.exp(x, out=x)), the joins and gathers do not
# (torch.cat([x], out=x)).
_PARTIAL_OVERLAP_REFUSED = """
abs absolute acos acosh arccos arccosh arcsin arcsinh arctan arctanh asin asinh atan atanh ceil
cos cosh deg2rad digamma erf erfc erfinv exp exp2 expm1 fix floor frac i0 lgamma log log10 log1p
log2 logit nan_to_num neg negative rad2deg reciprocal round rsqrt sgn sigmoid sign sin sinc sinh
sqrt square tan tanh trunc angle
add sub subtract mul multiply div divide true_divide floor_divide atan2 arctan2 fmod remainder
pow maximum minimum fmax fmin hypot copysign xlogy logaddexp logaddexp2 eq ne not_equal lt less
le less_equal gt greater ge greater_equal heaviside nextafter logical_and logical_or logical_xor
where clamp clamp_min clamp_max clip addcmul addcdiv lerp
bitwise_not logical_not conj_physical float_power bitwise_and bitwise_or bitwise_xor
bitwise_left_shift bitwise_right_shift gcd lcm ldexp igamma igammac
cumsum cumprod diff sort topk addmm outer ger max min median nanmedian mode
""".split()
_ANY_OVERLAP_REFUSED = """
cat concat concatenate stack hstack vstack index_select gather take masked_select index_add
index_copy kthvalue
""".split()
OVERLAP_CHECKED_OUT = {**dict.fromkeys(_PARTIAL_OVERLAP_REFUSED, False),
                       **dict.fromkeys(_ANY_OVERLAP_REFUSED, True)}
# Of those, the ops whose overlap checks see out as given, before it is resized: TensorIterator's
# (its build checks memory overlap before it resizes outputs) and index_select, take,
# masked_select, which check first too.  An expand() of another shape than the result's is
# refused there for its shared elements (torch.index_select(y, 1, i, out=x.expand(2, 6))); the
# other ops (gather, cat, the scans and sorts, addmm) resize it and compute (torch 2.13).
OUT_CHECKED_BEFORE_RESIZE = frozenset(
    set(_PARTIAL_OVERLAP_REFUSED)
    - set("cumsum cumprod sort topk addmm max min median nanmedian mode".split())
    | set("index_select take masked_select".split()))
# The ops whose explicit dtype= PyTorch refuses unless it is out's dtype (the result would be
# computed in one dtype and stored in another), with its message for each (torch 2.13's words;
# placeholders {dtype} / {out} name dtypes as ScalarType does, {dtype_c} / {out_c} as C does).
DTYPE_ARG_MATCHES_OUT = {
    **dict.fromkeys("sum prod cumsum cumprod mean".split(),
                    "Expected out tensor to have dtype {dtype_c}, but got {out_c} instead"),
    **dict.fromkeys(("nansum", "nanmean"),
                    "nansum: provided dtype must match dtype of result. Got {out} and {dtype}."),
    **dict.fromkeys("""arange empty eye full linspace logspace ones zeros range fft_fftfreq
                       fft_rfftfreq""".split(),
                    "dtype {dtype} does not match dtype of out parameter ({out})"),
}
# The ops whose out= without a dtype= runs their kernel in out's dtype, a kernel of floating
# types only (PyTorch's nansum_out, and nanmean_out through it): a floating input with an out of
# another kind (int64, bool, complex) is refused before anything is computed, in the kernel's
# words, where a sum would cast.  name -> (the kernel's name, the refusal of an input that is
# not floating, or None when such an input is summed as it is).
KERNEL_DTYPE_OUT = {
    "nansum": ("nansum_cpu", None),
    "nanmean": ("nansum_cpu", "nanmean(): integral types and 'Bool' are not supported for "
                              "nanmean, even for empty tensors."),
}
# The special functions PyTorch has no derivative for.
_SPECIAL_WITHOUT_DERIVATIVE = ["special_" + n for n in """
airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 chebyshev_polynomial_t chebyshev_polynomial_u
chebyshev_polynomial_v chebyshev_polynomial_w hermite_polynomial_h hermite_polynomial_he
laguerre_polynomial_l legendre_polynomial_p modified_bessel_i0 modified_bessel_i1
modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0 scaled_modified_bessel_k1
shifted_chebyshev_polynomial_t shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w spherical_bessel_j0""".split()]
# The ops whose results PyTorch never differentiates (bool and index results, counts, the
# special functions above): an operand that requires grad does not stop their out= (each
# checked against torch 2.13; an out that requires grad does, but for
# OUT_REQUIRING_GRAD_WRITTEN's).
NONDIFFERENTIABLE_OUT = frozenset("""
eq ne not_equal lt less le less_equal gt greater ge greater_equal logical_and logical_or
logical_xor logical_not isin histc argmax argmin signbit isneginf isposinf all any
linalg_matrix_rank
""".split() + _SPECIAL_WITHOUT_DERIVATIVE)
# The exact-out ops whose complex input gives a real result: PyTorch takes that result into a
# real out of any dtype it casts to, and into a complex out of the input's dtype only
# (torch.abs(complex64, out=float64 / complex64) compute, out=complex128 raises).
COMPLEX_TO_FLOAT_OUT = frozenset(("abs", "absolute"))
# The factories that take out= (PyTorch's bindings with a requires_grad argument): their
# autograd refusal names the aten op ("aten::zeros(): functions with out=..."), and out's
# requires_grad is set to the call's requires_grad once written (so torch.arange(1, n + 1,
# out=param) under no_grad, DimeNet's frequency init, leaves param frozen as in PyTorch).
# name -> whether the factory resizes out first, which refuses an out that requires grad
# (torch 2.13: empty, and randn in tapegrad/_random.py).  rand/randn/randint/randperm/normal
# apply the same rules in tapegrad/_random.py.
FACTORY_OUT = {**dict.fromkeys("""arange eye full linspace logspace ones zeros range fft_fftfreq
                                  fft_rfftfreq""".split(), False),
               "empty": True}
# The ops whose out= overloads take only tensors where their others take a Python number too:
# PyTorch's parser refuses such a call before any check of out (whose shape and values it
# leaves as they were).  name -> ((position, parameter) of each such argument, whether the
# refusal lists the overloads).  where's out overload is where(Tensor condition, Tensor input,
# Tensor other, *, out): "where(): argument 'other' (position 3) must be Tensor, not float".
# remainder and the bitwise ops have a (Number self, Tensor other) overload without out: a call
# matches none of their overloads, "remainder() received an invalid combination of arguments".
# (read from torch 2.13's errors)
_NUMBER_SELF_OVERLOADS = ("\n * (Tensor input, Tensor other, *, Tensor out = None)"
                          "\n * (Number self, Tensor other)"
                          "\n * (Tensor input, Number other, *, Tensor out = None)\n")
OUT_TENSOR_ARGUMENTS = {
    "where": (((1, "input"), (2, "other")), None),
    **dict.fromkeys("""remainder bitwise_and bitwise_or bitwise_xor bitwise_left_shift
                       bitwise_right_shift""".split(), (((0, "input"),), _NUMBER_SELF_OVERLOADS)),
}


def _refuse_numbers(name: str, args: tuple, kwargs: dict) -> None:
    """PyTorch's TypeError for a call with out= that gives a Python number where the out
    overload takes a tensor (OUT_TENSOR_ARGUMENTS)."""
    arguments, overloads = OUT_TENSOR_ARGUMENTS[name]
    for position, parameter in arguments:
        given = position < len(args)
        value = args[position] if given else kwargs.get(parameter, _core.TensorBase)
        if isinstance(value, _core.TensorBase) or value is _core.TensorBase:
            continue
        if not isinstance(value, (bool, int, float, complex)):
            continue                    # (refused by the op itself, in its own words)
        if overloads is not None:
            from .tensor import invalid_arguments
            raise invalid_arguments(name, args, kwargs, overloads)
        where = f" (position {position + 1})" if given else ""
        raise TypeError(f"{name}(): argument '{parameter}'{where} must be Tensor, not "
                        f"{type(value).__name__}")


_core._set_out_tensor_arguments(dict.fromkeys(OUT_TENSOR_ARGUMENTS, _refuse_numbers))

# Of NONDIFFERENTIABLE_OUT, the ops whose out PyTorch writes even when out itself requires grad
# (it stays a leaf that requires grad): no autograd check guards their kernels (torch 2.13; linalg.matrix_rank,
# argmax ... refuse it).
OUT_REQUIRING_GRAD_WRITTEN = frozenset("""
eq ne not_equal lt less le less_equal gt greater ge greater_equal logical_and logical_or
logical_xor logical_not histc""".split() + _SPECIAL_WITHOUT_DERIVATIVE)


def _copied_into_out(name: str, out, operands: tuple, fn, kwargs):
    """out= of an op PyTorch composes of others and ends with a copy of the result into out:
    with an operand that requires grad it is recorded, out's grad_fn CopyBackwards, and the
    gradient flows through it (torch.linalg.norm(x, out=o); o.backward() reaches x)."""
    result = fn(*operands, **(kwargs or {}))
    with _no_grad():        # (out's rules as without grad: its dtype checks, its resize)
        _core._write_out(name, out, operands, lambda *_, **__: result.detach(), kwargs)
    # the same values again, recorded (out has result's shape and a dtype it casts to now)
    return out.copy_(result)  # out-resized-by-write-out


def _not_differentiable_into_out(aten_name):
    """out= of an op whose out variant PyTorch has no derivative for, called with an operand
    that requires grad: computed, written into out as without grad, and out then requires grad
    with a node whose backward raises "derivative for aten::<op> is not implemented"."""
    def record(name: str, out, operands: tuple, fn, kwargs):
        with _no_grad():
            _core._write_out(name, out, operands, fn, kwargs)
        from ._more_math import without_derivative
        op = aten_name(operands) if callable(aten_name) else aten_name
        result = without_derivative(operands, out.detach()._array.copy(),
                                    f"derivative for aten::{op} is not implemented",
                                    RuntimeError)
        _core._adopt_in_place_result(out, result)
        return out
    return record


def _no_grad():
    from .grad_mode import no_grad
    return no_grad()


# name -> how its out= with an operand that requires grad is recorded (torch 2.13: the
# composites that end in a copy into out, and the out variants without a derivative).
RECORDED_OUT = {
    **dict.fromkeys("""nuclear_norm linalg_cond linalg_matrix_norm linalg_norm linalg_tensorinv
                       special_ndtr""".split(), _copied_into_out),
    **{name: _not_differentiable_into_out(name)
       for name in "floor_divide heaviside conj_physical softmax log_softmax".split()},
    # (diag of a matrix copies its diagonal, of a vector embeds it)
    "diag": _not_differentiable_into_out(
        lambda operands: "diagonal_copy" if operands and operands[0].dim() == 2 else
        "diag_embed"),
}
# The aten op PyTorch's autograd refusal names for an alias or a composite (read from torch
# 2.13's errors): alias -> op.
OUT_REFUSAL_NAMES = {
    **{f"arc{f}": f"a{f}" for f in ("cos", "cosh", "sin", "sinh", "tan", "tanh", "tan2")},
    "absolute": "abs", "clip": "clamp", "divide": "div", "true_divide": "div", "fix": "trunc",
    "multiply": "mul", "negative": "neg", "subtract": "sub", "diff": "sub", "square": "pow",
    "msort": "sort", "nanmean": "nansum", "norm": "linalg_vector_norm", "frobenius_norm": "norm",
    "cross": "linalg_cross", "inverse": "linalg_inv_ex", "lu_solve": "linalg_lu_solve",
    "linalg_cholesky": "linalg_cholesky_ex", "linalg_det": "_linalg_det",
    "linalg_eigvalsh": "_linalg_eigh", "linalg_inv": "linalg_inv_ex", "linalg_matmul": "matmul",
    "linalg_solve": "_linalg_solve_ex", "linalg_svdvals": "_linalg_svd", "linalg_vecdot": "sum",
    **{f"special_{f}": f for f in """digamma erf erfc erfinv exp2 expm1 i0 log1p logit logsumexp
                                     round sinc xlogy""".split()},
    "special_expit": "sigmoid", "special_gammainc": "igamma", "special_gammaincc": "igammac",
    "special_gammaln": "lgamma", "special_multigammaln": "mvlgamma", "special_psi": "digamma",
}
_core._set_out_autograd(OUT_REQUIRING_GRAD_WRITTEN, RECORDED_OUT, OUT_REFUSAL_NAMES)
_core._set_out_rules(EXACT_OUT_DTYPE, OUT_RESIZE_WARNING, UNCASTABLE_OUT, OVERLAP_CHECKED_OUT,
                     DTYPE_ARG_MATCHES_OUT, NONDIFFERENTIABLE_OUT, COMPLEX_TO_FLOAT_OUT,
                     FACTORY_OUT, KERNEL_DTYPE_OUT, OUT_CHECKED_BEFORE_RESIZE)


# -- for functions written in Python that handle out= themselves -------------------------------

def compute_then_write(name: str, out, operands, compute):
    """compute() run without recording, its result (a tensor, or a tuple matching a tuple `out`)
    written into out by the core's write_out (refused if an operand or out requires grad while
    grad mode is on); returns out."""
    return _core._write_out(name, out, tuple(operands), lambda *_: compute(), None)


def write_into(name: str, out, result):
    """result's values in out (cast to out's dtype, out resized to result's shape)."""
    return _core._write_out(name, out, (), lambda: result, None)


def require_dtype(name: str, out, np_dtype, label: str = "Long") -> None:
    """Ops whose out must have one exact dtype (nonzero's Long indices)."""
    if isinstance(out, _core.TensorBase) and out._array.dtype != np.dtype(np_dtype):
        raise RuntimeError(f"{name}: Expected out tensor to have scalar type {label} but got "
                           f"scalar type{_core.scalar_type_name_of(out._array.dtype)}")
