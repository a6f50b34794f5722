"""Regressions found by the fifteenth argument-form sweep (every name of PyTorch's signature table,
torch.overrides.get_testing_overrides, called positionally, by keyword and with its documented
defaults given explicitly; inspect.signature of the Python-level layers) against PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

# Not symmetric: which triangle a Cholesky factorization reads shows in its result.
_LOPSIDED = [[4.0, 1.0, 2.0], [0.5, 3.0, 0.1], [0.3, 0.2, 5.0]]


def _value_and_grad(lib, fn, array):
    leaf = lib.tensor(array, dtype=lib.float64, requires_grad=True)
    out = fn(lib, leaf)
    weights = lib.arange(out.numel(), dtype=lib.float64).reshape(tuple(out.shape))
    grad, = lib.autograd.grad((out * weights).sum(), leaf)
    return out.detach().numpy(), grad.numpy()


# -- Cholesky's upper factor reads the input's upper triangle (SILENT: it read the lower one) ----

@pytest.mark.parametrize("fn", [
    lambda lib, a: lib.linalg.cholesky(a, upper=True),
    lambda lib, a: lib.cholesky(a, True),
    lambda lib, a: lib.linalg.cholesky_ex(a, upper=True)[0],
    lambda lib, a: lib.linalg.cholesky(a, upper=False),
])
def test_cholesky_upper_reads_the_upper_triangle(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # (torch.cholesky's deprecation)
        got, want = _value_and_grad(tg, fn, _LOPSIDED), _value_and_grad(torch, fn, _LOPSIDED)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_cholesky_ex_upper_reports_the_upper_triangles_failure():
    # Positive-definite by its lower triangle, not by its upper one.
    a = [[4.0, 1.0, 2.0], [0.5, 3.0, 9.0], [0.3, 0.2, 5.0]]
    for upper in (False, True):
        got = tg.linalg.cholesky_ex(tg.tensor(a, dtype=tg.float64), upper=upper)
        want = torch.linalg.cholesky_ex(torch.tensor(a, dtype=torch.float64), upper=upper)
        assert int(got[1]) == int(want[1])
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-10, atol=1e-12)


def test_complex_cholesky_upper_is_not_a_conjugate_view():
    a = [[4.0, 1 + 1j, 2.0], [0.5, 3.0, 0.1j], [0.3, 0.2, 5.0]]
    for lib in (tg, torch):
        factor = lib.linalg.cholesky(lib.tensor(a, dtype=lib.complex128), upper=True)
        assert not factor.is_conj()
    got = tg.linalg.cholesky(tg.tensor(a, dtype=tg.complex128), upper=True).numpy()
    want = torch.linalg.cholesky(torch.tensor(a, dtype=torch.complex128), upper=True).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# -- multilabel_margin_loss: class indices must be Long (SILENT: a float target was truncated) --

@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_multilabel_margin_loss_refuses_a_target_that_is_not_long(dtype):
    x = np.array([[0.5, -2.0, 0.0], [1.0, 3.0, -1.0]])
    target = np.array([[0, 1, -1], [2, -1, 0]])
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="expected scalar type Long but found"):
            lib.nn.functional.multilabel_margin_loss(
                lib.tensor(x), lib.tensor(target).to(getattr(lib, dtype)))
    got = tg.nn.functional.multilabel_margin_loss(tg.tensor(x), tg.tensor(target))
    want = torch.nn.functional.multilabel_margin_loss(torch.tensor(x), torch.tensor(target))
    np.testing.assert_allclose(float(got), float(want), rtol=1e-12)


# -- nn.Hardtanh: PyTorch's old keyword names, and its AssertionError for crossed bounds ---------

def test_hardtanh_takes_the_deprecated_min_value_max_value():
    x = np.linspace(-3, 3, 7)
    for lib in (tg, torch):
        with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated"):
            lib.nn.Hardtanh(min_value=-2.0)
    with pytest.warns(FutureWarning):
        got = tg.nn.Hardtanh(min_value=-2.0, max_value=0.5)(tg.tensor(x))
    with pytest.warns(FutureWarning):
        want = torch.nn.Hardtanh(min_value=-2.0, max_value=0.5)(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    for lib in (tg, torch):
        with pytest.raises(AssertionError, match=r"max_val \(0\) must be greater than min_val"):
            lib.nn.Hardtanh(1, 0)


# -- NumPy's keyword aliases, which PyTorch's parser takes for every builtin op -------------------

_ALIAS_CALLS = [
    lambda lib, x, y: lib.add(x1=x, x2=y),
    lambda lib, x, y: lib.add(x, x2=y, alpha=2),
    lambda lib, x, y: lib.exp(x=x),
    lambda lib, x, y: lib.sum(a=x),
    lambda lib, x, y: lib.maximum(x, x2=y),
    lambda lib, x, y: lib.where(x > 0.5, x1=x, x2=y),
    lambda lib, x, y: lib.linalg.vector_norm(input=x, dim=1, keepdims=True),
    lambda lib, x, y: lib.linalg.norm(x=x),
    lambda lib, x, y: lib.fft.fft(x, axis=0).real,
    lambda lib, x, y: lib.mode(x, axis=0).values,
    lambda lib, x, y: lib.logsumexp(x, axis=1, keepdims=True),
    lambda lib, x, y: lib.special.erf(x=x),
    lambda lib, x, y: lib.nn.functional.gelu(x=x),
    lambda lib, x, y: x.add(x2=y),
    lambda lib, x, y: x.maximum(x2=y),
]


@pytest.mark.parametrize("index", range(len(_ALIAS_CALLS)))
def test_numpy_keyword_aliases_as_pytorch_parses_them(index):
    call = _ALIAS_CALLS[index]
    a = np.array([[0.3, 0.9, 0.1], [0.7, 0.2, 0.6]])
    b = a[::-1].copy()
    got, want = ([], [])
    for lib, into in ((tg, got), (torch, want)):
        x = lib.tensor(a, requires_grad=True)
        out = call(lib, x, lib.tensor(b))
        grad, = lib.autograd.grad(out.sum(), x)
        into += [out.detach().numpy(), grad.numpy()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_numpy_keyword_aliases_refusals():
    for lib in (tg, torch):
        x = lib.ones(2, 3)
        with pytest.raises(TypeError):
            lib.add(x, x, x2=x)                     # other given twice
        with pytest.raises(TypeError):
            lib.exp(input=x, x=x)
        with pytest.raises(TypeError):
            lib.nn.functional.softmax(x, axis=1)    # a Python function in PyTorch: no alias
        with pytest.raises(TypeError):
            lib.nn.functional.relu(x=x)


# -- keywords PyTorch's signatures have -----------------------------------------------------------

def test_concatenate_takes_dim_and_its_axis_alias():
    a = np.arange(6.0).reshape(2, 3)
    for kwargs in ({"dim": 1}, {"axis": 1}, {}):
        got = tg.concatenate([tg.tensor(a), tg.tensor(a + 1)], **kwargs)
        want = torch.concatenate([torch.tensor(a), torch.tensor(a + 1)], **kwargs)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for lib in (tg, torch):
        with pytest.raises(TypeError):
            lib.concatenate([lib.tensor(a)], dim=1, axis=0)


def test_cross_and_lu_take_out():
    a = np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 10]])
    results = []
    for lib in (tg, torch):
        x, y = lib.tensor(a), lib.tensor(a[::-1].copy())
        out = lib.empty(3, 3, dtype=lib.float64)
        returned = lib.cross(x, y, dim=1, out=out)
        assert returned is out
        lu, pivots = lib.empty(3, 3, dtype=lib.float64), lib.empty(3, dtype=lib.int32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # (torch.lu's deprecation)
            lib.lu(x, out=(lu, pivots))
        results.append([out.numpy(), lu.numpy(), pivots.numpy()])
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            lib.cross(x.clone().requires_grad_(), y, dim=1, out=lib.empty(3, 3, dtype=lib.float64))
    for g, w in zip(*results):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_gradient_takes_spacing_none_as_unspecified():
    a = np.array([[1.0, 2, 4], [4, 7, 6]])
    got = tg.gradient(tg.tensor(a), spacing=None, dim=None, edge_order=1)
    want = torch.gradient(torch.tensor(a), spacing=None, dim=None, edge_order=1)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)


# -- exception types and keywords of the shape and statistics ops -------------------------------

_REFUSED_ALIKE = [
    (RuntimeError, "cov\\(\\): expected input to have two or fewer dimensions",
     lambda lib: lib.cov(lib.ones(2, 2, 2))),
    (RuntimeError, "corrcoef\\(\\): expected input to have two or fewer dimensions",
     lambda lib: lib.corrcoef(lib.ones(2, 2, 2))),
    (RuntimeError, "diagonal dimensions cannot be identical 1, -1",
     lambda lib: lib.diagonal_scatter(lib.ones(3, 4), lib.ones(3), 0, 1, -1)),
    (ValueError, "Input dimension should be at least 3",
     lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.ones(3, 4), (2, 3))),
    (ValueError, "Input dimension should be at least 3",
     lambda lib: lib.nn.functional.adaptive_max_pool2d(lib.ones(3, 4), (2, 3))),
    (ValueError, "Input dimension should be at least 4",
     lambda lib: lib.nn.functional.adaptive_avg_pool3d(lib.ones(2, 3, 4), (1, 2, 3))),
    (ValueError, "Input dimension should be at least 4",
     lambda lib: lib.nn.functional.adaptive_max_pool3d(lib.ones(2, 3, 4), (1, 2, 3), True)),
    (TypeError, "multiple values for argument 'size'",
     lambda lib: lib.ones(3, 4).sum_to_size((1, 4), size=(1, 4))),
]


@pytest.mark.parametrize("index", range(len(_REFUSED_ALIKE)))
def test_refused_with_pytorchs_exception_type(index):
    kind, message, call = _REFUSED_ALIKE[index]
    for lib in (tg, torch):
        with pytest.raises(kind, match=message):
            call(lib)


def test_sum_to_size_takes_size_by_keyword():
    a = np.arange(12.0).reshape(3, 4)
    for size in ((1, 4), [4], (3, 1)):
        got = tg.tensor(a).sum_to_size(size=size)
        want = torch.tensor(a).sum_to_size(size=size)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- Tensor methods take no out= (PyTorch's never do): x.cummax(0, out=...) had written into out --

@pytest.mark.parametrize("name,args", [
    ("cummax", (0,)), ("cummin", (0,)), ("logcumsumexp", (0,)), ("kthvalue", (1,)),
    ("median", (0,)), ("nanmedian", (0,)), ("quantile", (0.5,)), ("nanquantile", (0.5,)),
    ("inner", "self"), ("kron", "self"), ("matmul", "self"), ("frexp", ()),
    ("narrow_copy", (0, 0, 1)), ("take_along_dim", "index"),
])
def test_tensor_methods_refuse_out(name, args):
    for lib in (tg, torch):
        x = lib.ones(3, 3)
        given = (x,) if args == "self" else (lib.tensor([[0]]), 0) if args == "index" else args
        expected = getattr(x, name)(*given)
        with pytest.raises(TypeError):
            getattr(x, name)(*given, out=expected)
        getattr(lib, name)(x, *given, out=expected)      # (the function takes it)


# -- max_unpool's output_size: a length other than nd or nd + 2 is refused (it was cut to its last
# -- nd sizes, silently), and checked before the native checks, as PyTorch's Python function does --

_UNPOOL_CALLS = [
    lambda lib, v, i, v1, i1: lib.nn.functional.max_unpool2d(v, i, 2, output_size=(1, 4, 5)),
    lambda lib, v, i, v1, i1: lib.nn.functional.max_unpool2d(v, i, 2, output_size=[5]),
    lambda lib, v, i, v1, i1: lib.nn.functional.max_unpool1d(v1, i1, 2, output_size=(2, 3)),
    lambda lib, v, i, v1, i1: lib.nn.functional.max_unpool2d(v, i.int(), 2, output_size=(1, 4, 5)),
    lambda lib, v, i, v1, i1: lib.nn.functional.max_unpool2d(v, i[..., :1], 2, output_size=(9, 9)),
    lambda lib, v, i, v1, i1: lib.nn.functional.max_unpool2d(v, i, 2, padding=3),
]


@pytest.mark.parametrize("index", range(len(_UNPOOL_CALLS)))
def test_max_unpool_output_size_checked_first(index):
    messages = []
    for lib in (tg, torch):
        x = lib.arange(16.0).reshape(1, 1, 4, 4)
        v, i = lib.nn.functional.max_pool2d(x, 2, return_indices=True)
        v1, i1 = lib.nn.functional.max_pool1d(x[0], 2, return_indices=True)
        with pytest.raises(ValueError) as caught:
            _UNPOOL_CALLS[index](lib, v, i, v1, i1)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_max_unpool_output_size_of_nd_plus_2():
    got, want = [], []
    for lib, into in ((tg, got), (torch, want)):
        x = lib.arange(16.0).reshape(1, 1, 4, 4)
        v, i = lib.nn.functional.max_pool2d(x, 2, return_indices=True)
        into.append(lib.nn.functional.max_unpool2d(v, i, 2, output_size=(1, 1, 5, 5)).numpy())
        into.append(lib.nn.MaxUnpool2d(2)(v, i, output_size=x.size()).numpy())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("shape", [(1, 2, 4, 5), (5,), (4, 0)])
def test_fold_refuses_other_dims_with_pytorchs_runtime_error(shape):
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="Expected 2D or 3D \\(batch mode\\) tensor"):
            lib.nn.functional.fold(lib.ones(*shape), (4, 5), 2)


# -- ConvTranspose's output_size leads with this input's non-spatial dims only (a 3-element size
# -- of a batched 2-d input was cut to its last two, silently) -----------------------------------

@pytest.mark.parametrize("nd,batched,size", [
    (2, True, (9, 9)), (2, True, (1, 3, 10, 10)), (2, True, (3, 10, 10)), (2, True, [10]),
    (2, False, (3, 10, 10)), (2, False, (1, 3, 10, 10)), (2, False, (10, 9)),
    (1, True, (10,)), (1, True, (2, 10)), (1, True, (1, 3, 10)), (1, False, (3, 10)),
    (3, True, (3, 9, 9, 9)), (3, True, (1, 3, 9, 9, 9)),
])
def test_conv_transpose_output_size_forms(nd, batched, size):
    outcomes = []
    for lib in (tg, torch):
        lib.manual_seed(0)
        layer = getattr(lib.nn, f"ConvTranspose{nd}d")(2, 3, 3, stride=2)
        x = lib.ones(*((1,) if batched else ()), 2, *(4,) * nd)
        try:
            outcomes.append(tuple(layer(x, output_size=size).shape))
        except ValueError as error:
            outcomes.append(str(error))
    assert outcomes[0] == outcomes[1]


# -- nextafter's gradient in input is 0 where input == other (SILENT: it was 1 everywhere) ---------

@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nextafter_gradient_is_zero_where_input_equals_other(dtype):
    nan, inf = float("nan"), float("inf")
    a = [nan, 0.5, nan, inf, 0.0, -0.0, 1.0, 0.3]
    b = [0.3, nan, nan, inf, -0.0, 0.0, 1.0, 0.2]
    got, want = [], []
    for lib, into in ((tg, got), (torch, want)):
        x = lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True)
        y = lib.tensor(b, dtype=getattr(lib, dtype), requires_grad=True)
        out = lib.nextafter(x, y)
        into += [g.numpy() for g in lib.autograd.grad((out * lib.arange(8.0)).sum(), (x, y))]
        xb = lib.tensor([[0.3], [0.5]], dtype=lib.float64, requires_grad=True)
        into += [lib.autograd.grad(lib.nextafter(xb, lib.tensor([0.3, 0.5, 0.9])).sum(), xb)[0]
                 .numpy()]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# -- embedding_bag: PyTorch's legacy argument order and its Python-level checks first -------------

_BAG_CALLS = [
    lambda lib, W, i2, i1, off: lib.nn.functional.embedding_bag(i2, W),
    lambda lib, W, i2, i1, off: lib.nn.functional.embedding_bag(W, i2),      # the legacy order
    lambda lib, W, i2, i1, off: lib.nn.functional.embedding_bag(W, i1, off, mode="max"),
    lambda lib, W, i2, i1, off: lib.nn.functional.embedding_bag(i2, W[0]),
    lambda lib, W, i2, i1, off: lib.nn.functional.embedding_bag(i2.float(), W[0]),
    lambda lib, W, i2, i1, off: lib.nn.functional.embedding_bag(i2, W.unsqueeze(0)),
    lambda lib, W, i2, i1, off: lib.nn.functional.embedding_bag(
        i2, W[0], per_sample_weights=lib.ones(3)),
]


@pytest.mark.parametrize("index", range(len(_BAG_CALLS)))
def test_embedding_bag_argument_order_and_checks(index):
    outcomes = []
    for lib in (tg, torch):
        W = lib.arange(12.0, dtype=lib.float64).reshape(4, 3).requires_grad_()
        i2, i1, off = lib.tensor([[0, 2], [1, 3]]), lib.tensor([0, 2, 1, 3]), lib.tensor([0, 1])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = _BAG_CALLS[index](lib, W, i2, i1, off)
                grad, = lib.autograd.grad(out.sum(), W)
                outcomes.append((out.tolist(), grad.tolist()))
            except ValueError as error:
                outcomes.append(str(error))
        outcomes.append([str(w.message)[:60] for w in caught])
    assert outcomes[:2] == outcomes[2:]


def test_max_unpool_of_too_few_dims_is_pytorchs_index_error():
    for lib in (tg, torch):
        with pytest.raises(IndexError, match="tuple index out of range"):
            lib.nn.functional.max_unpool3d(lib.ones(3, 4), lib.zeros(3, 4, dtype=lib.int64), 2)


# -- int arguments as PyTorch's parser reads them --------------------------------------------------

@pytest.mark.parametrize("index", ["tensor1", 1.0, None, "ones2", True, "np2", -1])
def test_select_scatter_index_is_an_int(index):
    outcomes = []
    for lib in (tg, torch):
        given = {"tensor1": lib.tensor(1), "ones2": lib.ones(2), "np2": np.int64(2)}.get(
            index, index) if isinstance(index, str) else index
        try:
            outcomes.append(lib.select_scatter(lib.ones(3, 4), lib.zeros(4), 0, given).tolist())
        except TypeError as error:
            outcomes.append(str(error))
    assert outcomes[0] == outcomes[1]


def test_tile_without_dims_is_refused():
    for lib in (tg, torch):
        with pytest.raises(TypeError, match='missing 1 required positional arguments: "dims"'):
            lib.ones(2, 3).tile()
