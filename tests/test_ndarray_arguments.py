"""An ndarray where a public function takes a Tensor: PyTorch's argument parser refuses it with a
TypeError naming numpy.ndarray before anything runs; tapegrad's public entry (out_arg_call.h,
_public_calls.argument_error) gives the same on the error path, whatever the function ran into
first (an ndarray's missing attribute, its truth value, a shape check).  Type names in messages
are the C type's tp_name (_core.type_name), as PyTorch prints them."""
import re
import warnings

import numpy as np
import pytest

import tapegrad
import tapegrad.nn.functional as GF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

# (namespace, function, argument kinds) with an ndarray put in each tensor position in turn:
# f a (3, 3) float tensor, v a (3,) float tensor, l a (3,) index tensor
CELLS = [
    ("F", "mse_loss", "ff"), ("F", "l1_loss", "ff"), ("F", "smooth_l1_loss", "ff"),
    ("F", "huber_loss", "ff"), ("F", "binary_cross_entropy", "ff"),
    ("F", "cosine_embedding_loss", "ffv"), ("torch", "margin_ranking_loss", "fff"),
    ("F", "triplet_margin_loss", "fff"), ("F", "multi_margin_loss", "fl"),
    ("F", "cross_entropy", "fl"), ("F", "nll_loss", "fl"), ("F", "cosine_similarity", "ff"),
    ("F", "prelu", "fv"), ("F", "hardtanh", "f"), ("F", "relu6", "f"),
    ("F", "scaled_dot_product_attention", "fff"),
    ("torch", "cdist", "ff"), ("torch", "addmm", "fff"), ("torch", "addr", "vvv"),
    ("torch", "lerp", "fff"), ("torch", "searchsorted", "ff"), ("torch", "normal", "ff"),
    ("torch", "add", "ff"), ("torch", "atan2", "ff"), ("torch", "dot", "vv"),
    ("torch", "clamp", "fff"), ("torch", "eq", "ff"), ("linalg", "solve_ex", "ff"),
    ("linalg", "vander", "v"), ("linalg", "vecdot", "ff"),
]

def _value(T, kind):
    """f a (3, 3) float tensor, v a (3,) float tensor, l a (3,) index tensor, s a 0-d float
    tensor, i the int 1, d the float 0.5"""
    return {"f": lambda: T.full((3, 3), 0.5) + T.eye(3) * 0.25,
            "v": lambda: T.tensor([0.2, 0.5, 0.7]), "l": lambda: T.tensor([0, 2, 1]),
            "s": lambda: T.tensor(0.5), "i": lambda: 1, "d": lambda: 0.5}[kind]()


def _args(T, kinds, bad):
    args = [_value(T, k) for k in kinds]
    args[bad] = args[bad].numpy()
    return args


# Calls PyTorch accepts with tensors, where an ndarray in place of argument `bad` is refused
# with a TypeError and tapegrad computed with it (numpy's operators and float() took the array:
# silent), found by sweep() below (tools/ndarray_operand_grid.py --functions)
COMPUTED = [
    ("torch", "bernoulli", "fs", 1), ("torch", "bucketize", "vv", 0), ("torch", "celu", "fs", 1),
    ("torch", "celu_", "fs", 1), ("torch", "cosine_embedding_loss", "ffv", 1),
    ("torch", "fill", "fs", 1), ("torch", "fill_", "fs", 1), ("torch", "float_power", "ff", 0),
    ("torch", "full_like", "fs", 1), ("torch", "kl_div", "ff", 0), ("torch", "norm", "fs", 1),
    ("torch", "pdist", "fs", 1), ("torch", "pinverse", "fs", 1), ("torch", "rand_like", "f", 0),
    ("torch", "randint_like", "fi", 0), ("torch", "randn_like", "f", 0),
    ("torch", "resize_as_", "ff", 1), ("torch", "result_type", "ff", 0),
    ("torch", "result_type", "ff", 1), ("torch", "tensor_split", "fl", 1),
    ("torch", "normal", "ff", 0), ("torch", "normal", "ff", 1),
    ("F", "alpha_dropout", "f", 0), ("F", "alpha_dropout", "fs", 1), ("F", "celu", "fs", 1),
    ("F", "celu_", "fs", 1), ("F", "cosine_embedding_loss", "ffv", 1), ("F", "dropout", "fs", 1),
    ("F", "dropout1d", "fs", 1), ("F", "dropout2d", "fs", 1), ("F", "dropout3d", "fs", 1),
    ("F", "elu", "fs", 1), ("F", "elu_", "fs", 1), ("F", "feature_alpha_dropout", "f", 0),
    ("F", "feature_alpha_dropout", "fs", 1), ("F", "kl_div", "ff", 0),
    ("F", "leaky_relu", "fs", 1), ("F", "leaky_relu_", "fs", 1), ("F", "normalize", "fs", 1),
    ("F", "pdist", "fs", 1), ("F", "soft_margin_loss", "ff", 0), ("F", "softplus", "fs", 1),
    ("linalg", "diagonal", "f", 0), ("linalg", "lstsq", "ff", 1), ("linalg", "vecdot", "ff", 1),
    ("linalg", "vector_norm", "fs", 1),
]


@pytest.mark.parametrize("space,name,kinds,bad", COMPUTED)
def test_an_ndarray_tapegrad_computed_with_is_refused_as_pytorch_does(space, name, kinds, bad):
    T_ns, G_ns = _namespaces(space)
    t_type, t_msg = _raised(getattr(T_ns, name), _args(torch, kinds, bad))
    written = _args(tapegrad, kinds, bad)
    before = [a.clone() for a in written if isinstance(a, tapegrad.Tensor)]
    g_type, g_msg = _raised(getattr(G_ns, name), written)
    assert t_type is TypeError and g_type is TypeError, (t_msg, g_msg)
    assert "numpy.ndarray" in g_msg, g_msg
    if "must be Tensor, not numpy.ndarray" in t_msg:
        assert "must be Tensor, not numpy.ndarray" in g_msg, g_msg
    # refused before anything ran: an in-place function (fill_, resize_as_) wrote nothing
    after = [a for a in written if isinstance(a, tapegrad.Tensor)]
    assert [a.shape for a in after] == [b.shape for b in before]
    assert all(bool((a == b).all()) for a, b in zip(after, before))


SWEEP_TEMPLATES = ("f", "ff", "fff", "v", "vv", "vvv", "fv", "vf", "fl", "lf", "vl", "lv", "l",
                   "ll", "fi", "vi", "fd", "fs", "sf", "ffd", "fvv", "ffv", "fii", "vii", "fvi",
                   "ffi", "vvi")
SWEEP_SKIPS = frozenset(("tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "save",
                         "load", "compile", "vmap", "set_printoptions", "to_dlpack"))


def sweep(names=()):
    """Every public function of torch's namespaces that tapegrad has, called with each argument
    template above that PyTorch accepts; yields (space, name, template, position) where PyTorch
    refuses an ndarray in that tensor's place with a TypeError and tapegrad does not."""
    import torch.nn.functional as TF_
    spaces = {"torch": (torch, tapegrad), "F": (TF_, GF), "linalg": (torch.linalg, tapegrad.linalg),
              "special": (torch.special, tapegrad.special), "fft": (torch.fft, tapegrad.fft)}

    def outcome(fn, args):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn(*args)
        except Exception as e:  # noqa: BLE001 - the exception's type is what is compared
            return type(e)
        return None

    for space, (T_ns, G_ns) in spaces.items():
        for name in sorted(dir(T_ns)):
            if name.startswith("_") or name in SWEEP_SKIPS or (names and name not in names):
                continue
            t_fn, g_fn = getattr(T_ns, name, None), getattr(G_ns, name, None)
            if not callable(t_fn) or g_fn is None or isinstance(t_fn, type):
                continue
            seen = set()
            for kinds in SWEEP_TEMPLATES:
                torch.manual_seed(0)
                if outcome(t_fn, [_value(torch, k) for k in kinds]) is not None:
                    continue
                for bad, kind in enumerate(kinds):
                    if kind in "id" or bad in seen:
                        continue
                    if outcome(t_fn, _args(torch, kinds, bad)) is not TypeError:
                        continue
                    seen.add(bad)
                    if outcome(g_fn, _args(tapegrad, kinds, bad)) is not TypeError:
                        yield space, name, kinds, bad


def _raised(fn, args):
    with pytest.raises(Exception) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(*args)
    return info.type, str(info.value).split("\n")[0]


def _namespaces(space):
    return {"F": (TF, GF), "torch": (torch, tapegrad),
            "linalg": (torch.linalg, tapegrad.linalg)}[space]


@pytest.mark.parametrize("space,name,kinds,bad",
                         [c + (i,) for c in CELLS for i in range(len(c[2]))])
def test_ndarray_in_a_tensor_position_raises_typeerror(space, name, kinds, bad):
    T_ns, G_ns = _namespaces(space)
    t_type, t_msg = _raised(getattr(T_ns, name), _args(torch, kinds, bad))
    g_type, g_msg = _raised(getattr(G_ns, name), _args(tapegrad, kinds, bad))
    assert t_type is TypeError and g_type is TypeError, (t_msg, g_msg)
    assert "numpy.ndarray" in g_msg
    if "must be Tensor, not numpy.ndarray" in t_msg:
        assert "must be Tensor, not numpy.ndarray" in g_msg, g_msg


def test_the_message_names_the_argument_as_pytorch_does():
    a = np.ones((3, 3))
    t = tapegrad.ones(3, 3)
    with pytest.raises(TypeError, match=r"^addmm\(\): argument 'mat1' \(position 2\) must be "
                                        r"Tensor, not numpy.ndarray$"):
        tapegrad.addmm(t, a, t)
    with pytest.raises(TypeError, match=r"^add\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not numpy.ndarray$"):
        tapegrad.add(t, a)
    # a list argument and einsum's operands: PyTorch's element wording
    with pytest.raises(TypeError, match=r"^expected Tensor as element 1 in argument 0, but got "
                                        r"numpy.ndarray$"):
        tapegrad.cat([t, a])
    with pytest.raises(TypeError, match=r"^expected Tensor as element 1 in argument 1, but got "
                                        r"numpy.ndarray$"):
        tapegrad.einsum("ij,ij->", t, a)


# PyTorch's Python-level functions that read an attribute of the ndarray first: AttributeError
READS_FIRST = [("F", "dropout1d", "f"), ("F", "normalize", "f"), ("F", "softmin", "f"),
               ("F", "softsign", "f"), ("F", "margin_ranking_loss", "fff"),
               ("torch", "svd_lowrank", "f")]


@pytest.mark.parametrize("space,name,kinds", READS_FIRST)
def test_pytorchs_python_level_functions_raise_attributeerror(space, name, kinds):
    T_ns, G_ns = _namespaces(space)
    t_type, t_msg = _raised(getattr(T_ns, name), _args(torch, kinds, 0))
    g_type, g_msg = _raised(getattr(G_ns, name), _args(tapegrad, kinds, 0))
    assert t_type is g_type is AttributeError, (t_msg, g_msg)


def test_functions_that_take_arrays_and_other_errors_are_left_alone():
    a = np.ones((2, 2))
    assert tapegrad.as_tensor(a).shape == (2, 2)
    assert tapegrad.tensor(a).dtype == tapegrad.float64
    with pytest.raises(RuntimeError, match="size of tensor a"):     # no ndarray: unchanged
        tapegrad.add(tapegrad.ones(2), tapegrad.ones(3))


@pytest.mark.parametrize("value,name", [(np.ones(2), "numpy.ndarray"),
                                        (np.float64(1), "numpy.float64"), (1.5, "float"),
                                        ([1], "list"), (None, "NoneType")])
def test_type_name_is_pytorchs(value, name):
    assert tapegrad._core.type_name(value) == name
    assert tapegrad._core.type_name(tapegrad.ones(1)) == "Tensor"
    assert tapegrad._core.type_name(tapegrad.nn.Parameter(tapegrad.ones(1))) == "Parameter"
    with pytest.raises(TypeError) as t_info:
        torch.dot(torch.ones(2), value)
    with pytest.raises(TypeError) as g_info:
        tapegrad.dot(tapegrad.ones(2), value)
    assert f"not {name}" in str(t_info.value) and f"not {name}" in str(g_info.value)


# A 0-d integer ndarray where PyTorch reads an int: the call's own error (a range check's
# RuntimeError) stands; only the errors an ndarray in a Tensor's place produces are replaced.
@pytest.mark.parametrize("call", [
    lambda T: T.topk(T.ones(5), np.array(9)),
    lambda T: T.narrow(T.ones(5), 0, np.array(1), 9),
    lambda T: T.split(T.ones(5), [np.array(1), 9]),
])
def test_zero_d_int_array_keeps_the_calls_own_error(call):
    with pytest.raises(RuntimeError) as expected:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(tapegrad)
    assert str(got.value).split(" (")[0] == str(expected.value).split(" (")[0]




# The public entry walks a call's arguments once for both of its tests (out_arg_call.h's
# tg_any_argument): a meta tensor dispatches to the meta device, an ndarray turns a failed call's
# error into PyTorch's TypeError; each is found positional, by keyword, and in a list or tuple.
@pytest.mark.parametrize("call", [
    lambda T, t, x: T.add(t, x), lambda T, t, x: T.add(t, other=x),
    lambda T, t, x: T.add(input=t, other=x), lambda T, t, x: T.cat([t, x]),
    lambda T, t, x: T.cat((t, x)), lambda T, t, x: T.stack((x, t), dim=0),
])
def test_the_argument_walk_finds_meta_tensors_and_ndarrays_where_pytorch_does(call):
    results = [call(T, T.ones(2, device="meta"), T.ones(2, device="meta"))
               for T in (torch, tapegrad)]
    assert [(str(r.device), tuple(r.shape)) for r in results] == [
        (str(results[0].device), tuple(results[0].shape))] * 2
    assert str(results[1].device) == "meta"
    with pytest.raises(TypeError) as expected:
        call(torch, torch.ones(2), np.ones(2))
    with pytest.raises(TypeError) as got:
        call(tapegrad, tapegrad.ones(2), np.ones(2))
    # (PyTorch names no position for an argument given by keyword; some of tapegrad's own
    # messages do: the phrase compared is the rest)
    def phrase(error):
        return re.sub(r" \(position \d+\)", "", str(error.value))
    assert phrase(got) == phrase(expected)


# Where PyTorch takes an ndarray for what it is, the entry's verdict on a call that returned
# leaves it alone: questions about any object, the sparse constructors' data, 0-d integer arrays
# that PyTorch reads as ints
@pytest.mark.parametrize("expression", [
    "lib.is_tensor(np.ones(2))", "lib.is_storage(np.ones(2))", "lib.typename(np.ones(2))",
    "lib.sparse_coo_tensor(np.array([[0, 1]]), np.ones(2), (3,)).to_dense().tolist()",
    "lib.topk(lib.ones(3), np.array(2)).values.tolist()",
    "lib.narrow(lib.arange(5), 0, np.array(1), 2).tolist()",
    # repeats is PyTorch's SymInt (read through __index__); gumbel_softmax is Python there and
    # divides by tau
    "lib.repeat_interleave(lib.arange(3), np.array(2)).tolist()",
    "lib.arange(4).reshape(2, 2).repeat_interleave(np.array(2), dim=0).tolist()",
    "lib.nn.functional.gumbel_softmax(lib.zeros(2, 3), tau=np.array(0.5)).shape",
    "lib.nn.functional.gumbel_softmax(lib.zeros(2, 3), np.array(0.5), hard=True).sum().item()",
])
def test_calls_pytorch_takes_an_ndarray_in_are_left_alone(expression):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (PyTorch's sparse invariant-checks warning)
        got, expected = [eval(expression, {"lib": lib, "np": np}) for lib in (tapegrad, torch)]
    assert got == expected
