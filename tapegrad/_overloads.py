"""PyTorch's overloaded builtins: the functions of the torch namespace and the Tensor methods
that PyTorch's argument parser knows under more than one signature.  A call that fits none of them
raises "received an invalid combination of arguments - got (...)" where a builtin with one
signature says what Python would ("missing 1 required positional argument", "takes 2 positional
arguments but 3 were given"): tapegrad/_public_calls.py words a call that does not fit one of
these so.  Found by calling each of PyTorch's builtins with 25 arguments (every signature refuses
that many: an overloaded one says "invalid combination", another "takes ... positional
arguments"); tests/test_methods19.py checks the lists against the installed PyTorch.
"""

FUNCTIONS = frozenset((
    "add", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "addmv_", "addr", "all", "any",
    "arange", "argsort", "baddbmm", "bartlett_window", "bernoulli", "bitwise_and",
    "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "blackman_window", "bmm", "bucketize", "clamp", "clamp_", "clamp_max", "clamp_max_",
    "clamp_min", "clamp_min_", "clip", "clip_", "conv1d", "conv2d", "conv3d", "copysign",
    "count_nonzero", "ctc_loss", "cumulative_trapezoid", "dequantize", "div", "divide", "dsmm", "dsplit",
    "embedding_bag", "eq", "eye", "fake_quantize_per_tensor_affine", "fill", "fill_",
    "float_power", "floor_divide", "fmod",
    "ge", "gradient", "greater", "greater_equal", "gru", "gt", "hamming_window", "hann_window",
    "histogram", "histogramdd", "hsplit", "index_fill", "is_autocast_enabled", "isin",
    "kaiser_window", "le", "lerp", "less", "less_equal", "linspace", "logspace", "lstm", "lt",
    "masked_fill", "max", "mean", "median", "min", "mm", "moveaxis", "movedim", "multiply",
    "nanmedian", "nanquantile", "narrow", "ne", "normal", "not_equal", "nuclear_norm", "pow",
    "prod", "quantile", "quantize_per_tensor", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like",
    "randperm", "remainder", "repeat_interleave", "result_type", "rnn_relu", "rnn_tanh",
    "round", "round_", "rsub",
    "scatter", "searchsorted", "set_autocast_enabled", "sort", "sparse_bsc_tensor",
    "sparse_bsr_tensor", "sparse_compressed_tensor", "sparse_coo_tensor", "sparse_csc_tensor",
    "sparse_csr_tensor", "spmm",
    "squeeze", "squeeze_copy", "std", "std_mean", "sub", "subtract", "sum", "tensor_split",
    "trapezoid", "trapz", "true_divide", "var", "var_mean", "view_copy", "vsplit", "where",
    "xlogy", "xlogy_"))

METHODS = frozenset((
    "add", "add_", "addbmm", "addbmm_", "addcdiv", "addcdiv_", "addcmul", "addcmul_", "addmm",
    "addmm_", "addmv", "addmv_", "addr", "addr_", "all", "any", "argsort", "baddbmm",
    "baddbmm_", "bernoulli", "bernoulli_", "bitwise_and", "bitwise_and_",
    "bitwise_left_shift", "bitwise_left_shift_", "bitwise_or", "bitwise_or_",
    "bitwise_right_shift", "bitwise_right_shift_", "bitwise_xor", "bitwise_xor_", "clamp",
    "clamp_", "clamp_max", "clamp_max_", "clamp_min", "clamp_min_", "clip", "clip_", "copy_",
    "copysign", "copysign_", "count_nonzero", "cuda", "div", "div_", "divide", "divide_",
    "dsplit", "eq", "eq_", "fill_", "float_power", "float_power_", "floor_divide",
    "floor_divide_", "fmod", "fmod_", "ge", "ge_", "greater", "greater_", "greater_equal",
    "greater_equal_", "gt", "gt_", "histogram", "hsplit", "index_fill", "index_fill_", "le",
    "le_", "lerp", "lerp_", "less", "less_", "less_equal", "less_equal_", "lt", "lt_",
    "masked_fill", "masked_fill_", "max", "mean", "median", "min", "moveaxis", "movedim",
    "multiply", "multiply_", "nanmedian", "nanquantile", "narrow", "ne", "ne_", "new",
    "nonzero", "not_equal", "not_equal_", "pow", "pow_", "prod", "quantile", "random_",
    "remainder", "remainder_", "repeat_interleave", "round", "round_", "scatter", "scatter_",
    "set_", "sort", "squeeze", "squeeze_", "std", "sub", "sub_", "subtract", "subtract_",
    "sum", "tensor_split", "to", "to_sparse", "true_divide", "true_divide_", "type", "var",
    "view", "vsplit", "where", "xlogy", "xlogy_"))


# The signatures (function form: a method's drop `Tensor input`) of overloaded builtins whose
# argument of a wrong type tapegrad's op refuses in one signature's words ("view(): argument
# 'size' (position 1) must be tuple of ints"), where PyTorch's parser, several of whose
# signatures take that many arguments, lists them all (tapegrad/_public_calls.py).  Read from
# torch 2.13.
_FACTORY_KEYWORDS = ("Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
                     "torch.device device = None, bool pin_memory = False, "
                     "bool requires_grad = False")
SIGNATURES = {
    "view": ("(Tensor input, torch.dtype dtype)", "(Tensor input, tuple of ints size)"),
    "squeeze": ("(Tensor input)", "(Tensor input, int dim)",
                "(Tensor input, tuple of ints dim)"),
    "narrow": ("(Tensor input, int dim, Tensor start, int length)",
               "(Tensor input, int dim, int start, int length)"),
}
SIGNATURES["repeat_interleave"] = (
    "(Tensor input, Tensor repeats, int dim = None, *, int output_size = None)",
    "(Tensor repeats, *, int output_size = None)",
    "(Tensor input, int repeats, int dim = None, *, int output_size = None)")
SIGNATURES.update(dict.fromkeys(("movedim", "moveaxis"), (
    "(Tensor input, int source, int destination)",
    "(Tensor input, tuple of ints source, tuple of ints destination)")))
SIGNATURES.update(dict.fromkeys(("rand", "randn"), (
    f"(tuple of ints size, *, torch.Generator generator, {_FACTORY_KEYWORDS})",
    f"(tuple of ints size, *, {_FACTORY_KEYWORDS})")))
SIGNATURES["linspace"] = tuple(
    f"({start} start, {end} end, int steps, *, {_FACTORY_KEYWORDS})"
    for start, end in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"),
                       ("Number", "Number")))
SIGNATURES["logspace"] = tuple(s.replace("int steps, *", "int steps, float base = 10.0, *")
                               for s in SIGNATURES["linspace"])
SIGNATURES["pow"] = ("(Tensor input, Tensor exponent, *, Tensor out = None)",
                     "(Number self, Tensor exponent, *, Tensor out = None)",
                     "(Tensor input, Number exponent, *, Tensor out = None)")

SIGNATURES.update(dict.fromkeys(("max", "min"), (
    "(Tensor input, *, Tensor out = None)", "(Tensor input, Tensor other, *, Tensor out = None)",
    "(Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)")))

# The methods whose signatures are not the functions' less `Tensor input` (the function's
# repeat_interleave(counts) has no method form: x.repeat_interleave() is refused).
METHOD_SIGNATURES = {
    "repeat_interleave": ("(Tensor repeats, int dim = None, *, int output_size = None)",
                          "(int repeats, int dim = None, *, int output_size = None)"),
    "pow": ("(Tensor exponent)", "(Number exponent)"),
}

# PyTorch's lists for the builtins whose entries take `dim` (or the split points) in several
# spellings under one Python signature with a sentinel default, which says nothing a reader of
# PyTorch's message would recognise.  Read only when the call fits no signature at all (np.mean(x)
# calls x.mean(axis=None, dtype=None, out=None)): an argument of a wrong type keeps the op's own
# words, which SIGNATURES would turn into a list.  Methods take no out=.  From torch 2.13.
UNFIT_SIGNATURES = {}
for _name, _dim in (("mean", "tuple of ints dim"), ("sum", "tuple of ints dim"),
                    ("prod", "int dim")):
    METHOD_SIGNATURES[_name] = ("(*, torch.dtype dtype = None)",
                                f"({_dim}, bool keepdim = False, *, torch.dtype dtype = None)")
    UNFIT_SIGNATURES[_name] = (
        "(Tensor input, *, torch.dtype dtype = None"
        + (", Tensor out = None)" if _name == "mean" else ")"),
        f"(Tensor input, {_dim}, bool keepdim = False, *, torch.dtype dtype = None, "
        "Tensor out = None)")
UNFIT_SIGNATURES["tensor_split"] = ("(Tensor input, tuple of ints indices, int dim = 0)",
                                    "(Tensor input, Tensor tensor_indices_or_sections, int dim = 0)",
                                    "(Tensor input, int sections, int dim = 0)")
UNFIT_SIGNATURES.update(dict.fromkeys(("hsplit", "vsplit", "dsplit"), (
    "(Tensor input, int sections)", "(Tensor input, tuple of ints indices)")))
