"""Factories' `layout=` argument and the `input=` keyword of the elementwise core functions, as
PyTorch takes them: torch.strided (or None) makes the dense result, torch.sparse_coo makes an
empty sparse tensor where PyTorch does (zeros, empty, zeros_like) and is refused with PyTorch's
exception elsewhere (it used to be accepted and ignored by the random factories, and refused as
an unexpected keyword by the others)."""
import numpy as np
import pytest

import tapegrad as tg

x = tg.ones(2, 3)

# (call, what PyTorch does with layout=sparse_coo: None = a sparse tensor, else (type, phrase))
FACTORIES = [
    ("zeros(2, 3, layout=L)", None),
    ("zeros(size=(4,), layout=L, dtype=tg.float64, requires_grad=True)", None),
    ("empty(2, 3, layout=L)", None),
    ("zeros_like(x, layout=L, dtype=tg.int64)", None),
    ("ones(2, layout=L)", (RuntimeError, "full(...) is not implemented for sparse layout")),
    ("full((2,), 1., layout=L)", (RuntimeError, "full(...) is not implemented for sparse layout")),
    ("arange(0, 3, 1, layout=L)", (NotImplementedError, "Could not run 'aten::arange.start_out'")),
    ("eye(2, 3, layout=L)", (NotImplementedError, "Could not run 'aten::eye.m_out'")),
    ("linspace(0, 1, 3, layout=L)", (NotImplementedError, "Could not run 'aten::linspace.out'")),
    ("logspace(0, 1, 3, layout=L)", (NotImplementedError, "Could not run 'aten::logspace.out'")),
    ("ones_like(x, layout=L)", (NotImplementedError, "Could not run 'aten::empty_strided'")),
    ("full_like(x, 2, layout=L)", (NotImplementedError, "Could not run 'aten::empty_strided'")),
    ("empty_like(x, layout=L)", (NotImplementedError, "Could not run 'aten::empty_strided'")),
    ("rand(2, layout=L)", (NotImplementedError, "Could not run 'aten::uniform_'")),
    ("randn(2, layout=L)", (NotImplementedError, "Could not run 'aten::normal_'")),
    ("randint(0, 3, (2,), layout=L)", (NotImplementedError, "Could not run 'aten::random_.from'")),
    ("randperm(3, layout=L)", (NotImplementedError, "Could not run 'aten::randperm.generator_out'")),
    ("normal(0., 1., (2,), layout=L)", (NotImplementedError, "Could not run 'aten::normal_'")),
    ("rand_like(x, layout=L)", (NotImplementedError, "Could not run 'aten::empty_strided'")),
    ("randn_like(x, layout=L)", (NotImplementedError, "Could not run 'aten::empty_strided'")),
    ("randint_like(x, 3, layout=L)", (NotImplementedError, "Could not run 'aten::empty_strided'")),
    ("tril_indices(3, 3, layout=L)", (NotImplementedError, "Could not run 'aten::tril_indices'")),
    ("range(0, 3, layout=L)", (NotImplementedError, "Could not run 'aten::range.out'")),
    ("empty_strided((2,), (1,), layout=L)", (NotImplementedError, "Could not run 'aten::empty_strided'")),
    ("hann_window(4, layout=L)", (RuntimeError, "hann_window is not implemented for sparse types")),
    ("fft.fftfreq(4, layout=L)", (NotImplementedError, "Could not run 'aten::arange.start_out'")),
]


def run(lib, call, layout):
    return eval(call, {"tg": lib, "x": lib.ones(2, 3), "L": layout, **{
        n: getattr(lib, n) for n in ("zeros", "empty", "zeros_like", "ones", "full", "arange",
                                     "eye", "linspace", "logspace", "ones_like", "full_like",
                                     "empty_like", "rand", "randn", "randint", "randperm",
                                     "normal", "rand_like", "randn_like", "randint_like",
                                     "tril_indices", "range", "empty_strided", "hann_window",
                                     "fft")}})


@pytest.mark.filterwarnings("ignore::UserWarning")      # torch.range is deprecated
@pytest.mark.parametrize("call,sparse", FACTORIES, ids=[c for c, _ in FACTORIES])
def test_strided_layout_is_the_dense_result(call, sparse):
    for layout in (tg.strided, None):
        out = run(tg, call, layout)
        assert out.layout is tg.strided and not getattr(out, "is_sparse", False)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("call,sparse", FACTORIES, ids=[c for c, _ in FACTORIES])
def test_sparse_coo_layout_as_pytorch(call, sparse):
    if sparse is None:
        out = run(tg, call, tg.sparse_coo)
        assert out.layout is tg.sparse_coo and out.is_sparse
        assert out._nnz() == 0 and out.sparse_dim() == out.dim()
        # (detach: an empty tensor's to_dense requires grad too, as PyTorch's)
        assert np.array_equal(out.to_dense().detach().numpy(), np.zeros(tuple(out.shape)))
    else:
        kind, phrase = sparse
        with pytest.raises(kind) as info:
            run(tg, call, tg.sparse_coo)
        assert phrase in str(info.value)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("call,sparse", FACTORIES, ids=[c for c, _ in FACTORIES])
def test_sparse_coo_layout_parity(torch, call, sparse):
    if sparse is None:
        got, want = run(tg, call, tg.sparse_coo), run(torch, call, torch.sparse_coo)
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype) == str(want.dtype) and got.requires_grad == want.requires_grad
        assert got.sparse_dim() == want.sparse_dim() and got._nnz() == want._nnz() == 0
    else:
        with pytest.raises(Exception) as want:
            run(torch, call, torch.sparse_coo)
        with pytest.raises(type(want.value)) as got:
            run(tg, call, tg.sparse_coo)
        assert str(want.value).split("\n")[0].startswith(str(got.value).split("\n")[0][:60])


def test_layout_must_be_a_layout():
    with pytest.raises(TypeError, match=r"ones\(\): argument 'layout' must be torch.layout, not int"):
        tg.ones(2, layout=1)
    with pytest.raises(TypeError, match=r"zeros\(\): argument 'layout' must be torch.layout, not str"):
        tg.zeros(2, layout="strided")


def test_refused_random_factory_leaves_the_stream_alone():
    tg.manual_seed(3)
    with pytest.raises(NotImplementedError):
        tg.rand(2, layout=tg.sparse_coo)
    after = tg.rand(3)
    tg.manual_seed(3)
    assert np.array_equal(after.numpy(), tg.rand(3).numpy())


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "relu", "neg"])
def test_unary_core_functions_take_input_keyword(torch, name):
    a = np.array([0.5, 1.5, 2.0])
    got = getattr(tg, name)(input=tg.tensor(a, requires_grad=True))
    want = getattr(torch, name)(input=torch.tensor(a, requires_grad=True))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-15)
    got.sum().backward()


def test_pow_takes_input_and_exponent_keywords(torch):
    a = np.array([0.5, 1.5, 2.0])
    t = tg.tensor(a, requires_grad=True)
    got = tg.pow(input=t, exponent=3)
    want = torch.pow(input=torch.tensor(a), exponent=3)
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-15)
    got.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 3 * a ** 2, rtol=1e-15)
    np.testing.assert_allclose(tg.nn.functional.tanh(input=tg.tensor(a)).numpy(),
                               np.tanh(a), rtol=1e-15)
