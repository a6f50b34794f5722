"""Sparse CSR / CSC tensors (tapegrad._sparse_compressed) against PyTorch itself."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:Sparse")

DENSE = [[0., 1.5, 0., 0.], [2., 0., 0., -3.], [0., 0., 0., 0.]]


def _pair(layout_name, dense=DENSE, dtype="float32", requires_grad=False):
    """The same dense matrix converted to `layout_name` in both libraries."""
    t = torch.tensor(dense, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    g = tapegrad.tensor(dense, dtype=getattr(tapegrad, dtype), requires_grad=requires_grad)
    return getattr(g, "to_" + layout_name)(), getattr(t, "to_" + layout_name)()


@pytest.mark.parametrize("layout_name", ["sparse_csr", "sparse_csc"])
def test_dense_to_compressed_repr_and_parts(layout_name):
    ours, theirs = _pair(layout_name)
    assert repr(ours) == repr(theirs)
    assert str(ours.layout) == str(theirs.layout)
    assert ours.is_sparse_csr == theirs.is_sparse_csr and not ours.is_sparse
    assert ours._nnz() == theirs._nnz() and tuple(ours.shape) == tuple(theirs.shape)
    names = (("crow_indices", "col_indices") if layout_name == "sparse_csr"
             else ("ccol_indices", "row_indices"))
    for name in names:
        np.testing.assert_array_equal(getattr(ours, name)().numpy(),
                                      getattr(theirs, name)().numpy())
    np.testing.assert_array_equal(ours.values().numpy(), theirs.values().numpy())
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())
    assert repr(ours.to_sparse()) == repr(theirs.to_sparse())
    assert ours.to_sparse().is_coalesced() == theirs.to_sparse().is_coalesced()


def test_constructors_repr_dtypes_and_grad():
    args = ([0, 2, 3, 3], [0, 2, 1], [1., 2., 3.], (3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [
            (lambda m: m.sparse_csr_tensor(*args)),
            (lambda m: m.sparse_csc_tensor(*args, requires_grad=True)),
            (lambda m: m.sparse_csr_tensor(*args[:3])),
            (lambda m: m.sparse_csr_tensor([0, 2, 3, 3], [0, 2, 1], [1, 2, 3], (3, 3))),
            (lambda m: m.sparse_csr_tensor(*args, dtype=m.float64)),
            (lambda m: m.sparse_compressed_tensor(*args, layout=m.sparse_csc)),
            (lambda m: m.sparse_csr_tensor(m.tensor([0, 2, 3, 3], dtype=m.int32),
                                           m.tensor([0, 2, 1], dtype=m.int32), [1., 2., 3.])),
            (lambda m: m.sparse_csr_tensor([0, 1, 2], [0, 2], [[1., 2.], [3., 4.]], (2, 3, 2))),
            (lambda m: m.sparse_csr_tensor([0, 0, 0], [], [], (2, 2))),
        ]
        for make in cases:
            ours, theirs = make(tapegrad), make(torch)
            assert repr(ours) == repr(theirs)
            assert str(ours.crow_indices().dtype if ours.layout is tapegrad.sparse_csr
                       else ours.ccol_indices().dtype) == str(
                theirs.crow_indices().dtype if theirs.layout is torch.sparse_csr
                else theirs.ccol_indices().dtype)
            np.testing.assert_array_equal(ours.to_dense().detach().numpy(),
                                          theirs.to_dense().detach().numpy())


def test_values_requiring_grad_show_pytorchs_node():
    v = tapegrad.tensor([1., 2., 3.], requires_grad=True)
    c = tapegrad.sparse_csr_tensor([0, 2, 3, 3], [0, 2, 1], v, (3, 3))
    assert "grad_fn=<SparseCompressedTensorBackward0>" in repr(c)
    assert c.values().grad_fn.name() == "ValuesBackward0"


@pytest.mark.parametrize("call, exc, phrase", [
    (lambda m: m.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1., 2., 3.], (3, 3)), RuntimeError,
     r"crow_indices.shape\[-1\] must be equal to the number of rows \+ 1"),
    (lambda m: m.sparse_csr_tensor([0, 2, 3, 3], [0, 2, 1], [1., 2.], (3, 3)), RuntimeError,
     r"col_indices.shape\[-1\] must be equal to nnz"),
    (lambda m: m.sparse_csr_tensor([1, 2, 3, 3], [0, 2, 1], [1., 2., 3.], (3, 3)), RuntimeError,
     r"crow_indices\[..., 0\] == 0"),
    (lambda m: m.sparse_csr_tensor([0, 2, 3, 4], [0, 2, 1], [1., 2., 3.], (3, 3)), RuntimeError,
     r"crow_indices\[..., -1\] == nnz"),
    (lambda m: m.sparse_csr_tensor([0, 2, 3, 3], [0, 5, 1], [1., 2., 3.], (3, 3)), RuntimeError,
     r"0 <= col_indices < ncols"),
    (lambda m: m.sparse_csc_tensor([0, 2, 1, 3], [0, 2, 1], [1., 2., 3.], (3, 3)), RuntimeError,
     r"0 <= ccol_indices\[..., 1:\] - ccol_indices\[..., :-1\] <= nrows"),
    (lambda m: m.sparse_csr_tensor([0, 2, 3, 3], [2, 0, 1], [1., 2., 3.], (3, 3)), RuntimeError,
     r"are sorted and distinct"),
    (lambda m: m.sparse_csr_tensor(m.tensor([0, 2, 3, 3], dtype=m.int32), m.tensor([0, 2, 1]),
                                   [1., 2., 3.], (3, 3)), RuntimeError,
     r"must have the same dtype, bot got Int and Long"),
    (lambda m: m.sparse_csr_tensor(m.tensor([0, 1], dtype=m.int16),
                                   m.tensor([0], dtype=m.int16), [1.], (1, 1)), RuntimeError,
     r"dtype must be Int or Long, but got Short"),
    (lambda m: m.sparse_csr_tensor([0, 2, 3, 3], [0, 2, 1], [1., 2., 3.], (3,)), RuntimeError,
     r"tensor dimensionality must be sum of batch, base, and dense"),
    (lambda m: m.sparse_csr_tensor([0, 1], [0], [1], (1, 1), requires_grad=True), RuntimeError,
     r"Only Tensors of floating point and complex dtype can require gradients"),
    (lambda m: m.sparse_compressed_tensor([0, 1], [0], [1.], (1, 1)), RuntimeError,
     r"expected sparse compressed tensor layout but got none"),
    (lambda m: m.sparse_csr_tensor([0, 1], [0], [1.], (1, 1), layout=m.sparse_csc), RuntimeError,
     r"layout must be SparseCsr but got SparseCsc"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr(dense_dim=1), RuntimeError,
     r"dense_dim argument must be in \[0,0\] range, but 1 is given"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr().to_sparse_csr(dense_dim=0), RuntimeError,
     r"conversion from SparseCsr to SparseCsr with dense_dim argument given is not supported"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr().ccol_indices(), RuntimeError,
     r"ccol_indices expected sparse column compressed tensor layout but got SparseCsr"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csc().crow_indices(), RuntimeError,
     r"crow_indices expected sparse row compressed tensor layout but got SparseCsc"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr().indices(), RuntimeError,
     r"indices expected sparse coordinate tensor layout but got SparseCsr"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr().coalesce(), RuntimeError,
     r"coalesce expected sparse coordinate tensor layout but got SparseCsr"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr().sum(0), RuntimeError,
     r"reduction operations on CSR tensors with keepdim=False is unsupported"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr() / 2, RuntimeError,
     r"unsupported tensor layout: SparseCsr"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr().numpy(), TypeError,
     r"can't convert SparseCsr layout tensor to numpy"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr() + m.tensor([[0., 1.]]).to_sparse_csc(),
     RuntimeError, r"crow_indices expected sparse row compressed tensor layout but got SparseCsc"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csr() @ m.ones(3, 2), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(1x2 and 3x2\)"),
    (lambda m: m.tensor([[0., 1.]]).to_sparse_csc() @ m.ones(3, 2), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(1x2 and 3x2\)"),
])
def test_refusals_as_pytorchs(call, exc, phrase):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (PyTorch checks the index contents only so; tapegrad always does)
        with torch.sparse.check_sparse_tensor_invariants():
            with pytest.raises(exc, match=phrase):
                call(torch)
        with pytest.raises(exc, match=phrase):
            call(tapegrad)


def test_conversions_between_layouts():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for source in ("to_sparse", "to_sparse_csr", "to_sparse_csc"):
            for target in ("to_sparse_csr", "to_sparse_csc"):
                ours = getattr(getattr(tapegrad.tensor(DENSE), source)(), target)()
                theirs = getattr(getattr(torch.tensor(DENSE), source)(), target)()
                assert repr(ours) == repr(theirs), (source, target)
        ours = tapegrad.tensor(DENSE).to_sparse(layout=tapegrad.sparse_csc)
        assert repr(ours) == repr(torch.tensor(DENSE).to_sparse(layout=torch.sparse_csc))


@pytest.mark.parametrize("layout_name", ["sparse_csr", "sparse_csc"])
def test_value_ops_keep_the_layout(layout_name):
    ours, theirs = _pair(layout_name, requires_grad=True)
    for op in (lambda c: c * 2, lambda c: 3 * c, lambda c: c.neg(), lambda c: c.abs(),
               lambda c: c.to(_dt(c, "float64")), lambda c: c.clone(),
               lambda c: c.detach(), lambda c: c.t(), lambda c: c.transpose(0, 1),
               lambda c: c + c):
        assert repr(op(ours)) == repr(op(theirs))
    if layout_name == "sparse_csr":
        for dim in (0, 1):
            assert repr(ours.sum(dim, keepdim=True)) == repr(theirs.sum(dim, keepdim=True))
    else:
        for m, c in ((torch, theirs), (tapegrad, ours)):
            with pytest.raises(RuntimeError, match="only compressed sparse format supported for "
                                                   "sum.dim_IntList is CSR"):
                c.sum(0, keepdim=True)
    assert repr(ours.sum()) == repr(theirs.sum())
    dense_t, dense_g = torch.ones(3, 4), tapegrad.ones(3, 4)
    assert repr(ours + dense_g) == repr(theirs + dense_t)


def _dt(c, name):
    return getattr(torch if isinstance(c, torch.Tensor) else tapegrad, name)


@pytest.mark.parametrize("layout_name", ["sparse_csr", "sparse_csc"])
def test_products_values_and_gradients(layout_name):
    rng = np.random.default_rng(35)
    mat = rng.standard_normal((4, 2))
    vec = rng.standard_normal(4)
    left = rng.standard_normal((2, 4))
    ours, theirs = _pair(layout_name, dtype="float64")
    calls = [
        (lambda m, c, x: c @ x, mat), (lambda m, c, x: m.mm(c, x), mat),
        (lambda m, c, x: m.matmul(c, x), mat), (lambda m, c, x: m.sparse.mm(c, x), mat),
        (lambda m, c, x: m.mv(c, x), vec), (lambda m, c, x: c @ x, vec),
        (lambda m, c, x: m.addmm(m.ones(3, 2, dtype=m.float64), c, x, beta=2, alpha=3), mat),
        (lambda m, c, x: x @ c.t(), left),
    ]
    for call, operand in calls:
        xg = tapegrad.tensor(operand, requires_grad=True)
        xt = torch.tensor(operand, requires_grad=True)
        yg, yt = call(tapegrad, ours, xg), call(torch, theirs, xt)
        np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
        assert yg.grad_fn.name() == yt.grad_fn.name()
        weights = rng.standard_normal(tuple(yt.shape))
        (yg * tapegrad.tensor(weights)).sum().backward()
        (yt * torch.tensor(weights)).sum().backward()
        np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
        assert tapegrad.autograd.gradcheck(lambda x: call(tapegrad, ours, x),
                                           (tapegrad.tensor(operand, requires_grad=True),))


@pytest.mark.parametrize("layout_name", ["sparse_csr", "sparse_csc"])
def test_gradient_to_values_through_products(layout_name):
    """Values that require grad get the product's gradient (a compressed tensor over them)."""
    rng = np.random.default_rng(7)
    mat = rng.standard_normal((3, 2))
    cidx, pidx = ([0, 1, 3, 3], [2, 0, 2]) if layout_name == "sparse_csr" else \
        ([0, 1, 1, 3], [1, 0, 1])
    factory = layout_name + "_tensor"
    results = []
    for m in (tapegrad, torch):
        v = m.tensor([1.5, -2., 0.5], dtype=m.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = getattr(m, factory)(cidx, pidx, v, (3, 3))
        (c @ m.tensor(mat)).pow(2).sum().backward()
        results.append(v.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_leaf_gradients_dense_for_mm_compressed_for_sparse_mm():
    mat = np.arange(6.).reshape(3, 2)
    grads = []
    for m in (tapegrad, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = m.sparse_csr_tensor([0, 2, 3, 3], [0, 2, 1], [1., 2., 3.], (3, 3),
                                    requires_grad=True)
            b = m.sparse_csr_tensor([0, 2, 3, 3], [0, 2, 1], [1., 2., 3.], (3, 3),
                                    requires_grad=True)
        (a @ m.tensor(mat, dtype=m.float32)).sum().backward()
        m.sparse.mm(b, m.tensor(mat, dtype=m.float32)).sum().backward()
        grads.append((repr(a.grad), repr(b.grad)))
    assert grads[0] == grads[1]


def test_grad_of_to_dense_is_on_the_pattern():
    # (CSR: PyTorch's backward of a CSC leaf's to_dense fails, "Sparse CSC tensors do not have
    # is_contiguous"; tapegrad gives the CSC gradient on the pattern)
    reprs = []
    for m in (tapegrad, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = m.sparse_csr_tensor([0, 1, 2, 3], [0, 2, 0], [1., 2., 3.], (3, 3),
                                    requires_grad=True)
        (c.to_dense() * m.arange(9.).reshape(3, 3)).sum().backward()
        reprs.append(repr(c.grad))
    assert reprs[0] == reprs[1]


def test_conversion_from_dense_is_differentiable():
    for m in (tapegrad, torch):
        x = m.tensor(DENSE, dtype=m.float64, requires_grad=True)
        c = x.to_sparse_csc()
        assert c.grad_fn.name() == "ToSparseCscBackward0"
        (c.to_dense() * 2).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), (np.array(DENSE) != 0) * 2.)


def test_beta_warning_once_at_the_callers_line():
    import tapegrad._sparse_compressed as sc
    sc._beta_warned = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tapegrad.tensor([[1., 0.]]).to_sparse_csr()
        tapegrad.tensor([[1., 0.]]).to_sparse_csr()
    beta = [w for w in caught if "beta state" in str(w.message)]
    assert len(beta) == 1 and beta[0].filename == __file__


def test_layouts_are_named_as_pytorchs():
    for name in ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
        assert repr(getattr(tapegrad, name)) == repr(getattr(torch, name))


def test_pickle_round_trip():
    import pickle
    c = tapegrad.tensor(DENSE).to_sparse_csc()
    back = pickle.loads(pickle.dumps(c))
    assert repr(back) == repr(c)


def test_empty_factories_in_compressed_layouts():
    """zeros/empty/zeros_like/zero_ with a compressed layout gave a COO tensor, or failed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (lambda m: m.zeros(2, 3, layout=m.sparse_csr),
                     lambda m: m.zeros(2, 3, layout=m.sparse_csc, dtype=m.float64),
                     lambda m: m.zeros(2, 3, layout=m.sparse_csr, requires_grad=True),
                     lambda m: m.zeros_like(m.ones(2, 2), layout=m.sparse_csr),
                     lambda m: m.zeros_like(m.sparse_csr_tensor(
                         m.tensor([0, 1], dtype=m.int32), m.tensor([0], dtype=m.int32), [1.],
                         (1, 2))),
                     lambda m: m.tensor(DENSE).to_sparse_csc().zero_()):
            assert repr(make(tapegrad)) == repr(make(torch))
        for m in (torch, tapegrad):
            with pytest.raises(RuntimeError, match="Only batched sparse compressed"):
                m.zeros(3, layout=m.sparse_csr)
            with pytest.raises(RuntimeError, match="expected sparse compressed \\(non-block\\) "
                                                   "tensor layout but got SparseBsr"):
                m.zeros(2, 3, layout=m.sparse_bsr)


BLOCKY = [[0., 1., 0., 0.], [2., 0., 0., 0.], [0., 0., 5., 6.], [0., 0., 7., 0.],
          [0., 0., 0., 0.], [0., 3., 0., 0.]]


def test_blocked_layouts_convert_print_and_multiply():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (lambda m: m.tensor(BLOCKY).to_sparse_bsr((2, 2)),
                     lambda m: m.tensor(BLOCKY).to_sparse_bsc((2, 2)),
                     lambda m: m.tensor(BLOCKY).to_sparse_bsr((3, 1)),
                     lambda m: m.tensor(BLOCKY).to_sparse_bsr(2),
                     lambda m: m.tensor(BLOCKY).to_sparse(layout=m.sparse_bsc, blocksize=(2, 2)),
                     lambda m: m.tensor(BLOCKY).to_sparse().to_sparse_bsr((2, 2)),
                     lambda m: m.tensor(BLOCKY).to_sparse_bsr((2, 2)).t(),
                     lambda m: m.tensor(BLOCKY).to_sparse_bsc((2, 1)).transpose(0, 1),
                     lambda m: m.tensor(BLOCKY).to_sparse_bsr((2, 2)) * 2,
                     lambda m: m.tensor(BLOCKY).to_sparse_bsr((2, 2)).double(),
                     lambda m: m.tensor(BLOCKY).to_sparse_bsr((2, 2)).to_sparse_bsc((2, 2)),
                     lambda m: m.sparse_bsr_tensor([0, 1, 2], [0, 1],
                                                   m.arange(8.).reshape(2, 2, 2)),
                     lambda m: m.sparse_bsc_tensor([0, 1, 2], [0, 1],
                                                   m.arange(8.).reshape(2, 2, 2), (4, 4),
                                                   requires_grad=True),
                     lambda m: m.sparse_compressed_tensor([0, 2], [0, 1], m.ones(2, 1, 3),
                                                          layout=m.sparse_bsr)):
            ours, theirs = make(tapegrad), make(torch)
            assert repr(ours) == repr(theirs)
            assert ours._nnz() == theirs._nnz() and ours.is_sparse_csr == theirs.is_sparse_csr
            np.testing.assert_array_equal(ours.to_dense().detach().numpy(),
                                          theirs.to_dense().detach().numpy())
            assert repr(ours.to_sparse()) == repr(theirs.to_sparse())
            np.testing.assert_array_equal(ours.crow_indices().numpy() if
                                          ours.layout is tapegrad.sparse_bsr else
                                          ours.ccol_indices().numpy(),
                                          theirs.crow_indices().numpy() if
                                          theirs.layout is torch.sparse_bsr else
                                          theirs.ccol_indices().numpy())
            rhs = np.arange(ours.shape[1] * 2.).reshape(-1, 2)
            if ours.layout is tapegrad.sparse_bsc:      # (no CPU kernel in PyTorch)
                for m, c in ((torch, theirs), (tapegrad, ours)):
                    with pytest.raises(RuntimeError, match="addmm: computation on CPU is not "
                                       "implemented for Strided \\+ SparseBsc @ Strided"):
                        c @ m.tensor(rhs, dtype=c.dtype)
                    with pytest.raises(RuntimeError, match="operation not supported for mat "
                                       "with SparseBsc layout"):
                        m.mv(c, m.ones(c.shape[1], dtype=c.dtype))
                    with pytest.raises(RuntimeError, match="Strided @ SparseBsr"):
                        m.ones(1, c.shape[1], dtype=c.dtype) @ c.t()
                lhs = np.arange(ours.shape[0] * 2.).reshape(2, -1)
                np.testing.assert_allclose((tapegrad.tensor(lhs, dtype=ours.dtype) @ ours)
                                           .detach().numpy(),
                                           (torch.tensor(lhs, dtype=theirs.dtype) @ theirs)
                                           .detach().numpy())
                continue
            if len(set(ours.values().shape[1:3])) != 1:    # (PyTorch's MKL kernel refuses)
                for m, c in ((torch, theirs), (tapegrad, ours)):
                    with pytest.raises(RuntimeError, match="non-square blocks"):
                        c @ m.tensor(rhs, dtype=c.dtype)
                continue
            np.testing.assert_allclose((ours @ tapegrad.tensor(rhs, dtype=ours.dtype))
                                       .detach().numpy(),
                                       (theirs @ torch.tensor(rhs, dtype=theirs.dtype))
                                       .detach().numpy())


def test_blocked_gradients_reach_the_block_values():
    weights = np.arange(16.).reshape(4, 4)
    grads = []
    for m in (tapegrad, torch):
        v = m.tensor(np.arange(8.).reshape(2, 2, 2), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = m.sparse_bsr_tensor([0, 1, 2], [0, 1], v, (4, 4))
        assert "grad_fn=<SparseCompressedTensorBackward0>" in repr(b)
        (b.to_dense() * m.tensor(weights)).sum().backward()
        grads.append(v.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    x = tapegrad.tensor(np.arange(6.).reshape(6, 1).repeat(4, 1), requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda d: d.to_sparse_bsr((2, 2)).to_dense(), (x,))
    rhs = np.arange(8.).reshape(4, 2)
    b = tapegrad.tensor(BLOCKY, dtype=tapegrad.float64).to_sparse_bsr((2, 2))
    assert tapegrad.autograd.gradcheck(lambda r: b @ r,
                                       (tapegrad.tensor(rhs, requires_grad=True),))


@pytest.mark.parametrize("call, exc, phrase", [
    (lambda m: m.tensor(BLOCKY).to_sparse_bsr((4, 2)), RuntimeError,
     r"dense_to_sparse_bsr: tensor sparse size \(6,4\) must be divisible by given blocksize "
     r"\(4,2\)"),
    (lambda m: m.tensor(BLOCKY).to_sparse(layout=m.sparse_bsr), RuntimeError,
     r"conversion from Strided to SparseBsr without blocksize argument given is not supported"),
    (lambda m: m.tensor(BLOCKY).to_sparse_bsr((2, 2)).to_sparse_bsr((1, 1)), RuntimeError,
     r"with blocksize changed from \[2, 2\] to \[1, 1\] is not supported"),
    (lambda m: m.tensor(BLOCKY).to_sparse_bsr((2, 2)).to_sparse_csr(), RuntimeError,
     r"expected SparseCsr or SparseCsc layout but got SparseBsr"),
    (lambda m: m.sparse_bsr_tensor([0, 1], [0], [1., 2.]), RuntimeError,
     r"values must have dimensionality > sum of batch and block dimensionalities"),
    (lambda m: m.sparse_bsr_tensor([0, 1, 2], [0, 1], m.ones(2, 2, 2), (4, 5)), RuntimeError,
     r"tensor shape\[1\] \(=5\) must be divisible with blocksize\[1\] \(=2\)"),
    (lambda m: m.tensor(BLOCKY).to_sparse_bsr((2, 2)).sum(0, keepdim=True), RuntimeError,
     r"only compressed sparse format supported for sum.dim_IntList is CSR, but got layout "
     r"SparseBsr"),
])
def test_blocked_refusals_as_pytorchs(call, exc, phrase):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.sparse.check_sparse_tensor_invariants():
            with pytest.raises(exc, match=phrase):
                call(torch)
        with pytest.raises(exc, match=phrase):
            call(tapegrad)


def test_factories_take_pytorchs_argument_names():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (lambda m: m.sparse_csr_tensor(crow_indices=[0, 1], col_indices=[1],
                                                   values=[2.], size=(1, 2)),
                     lambda m: m.sparse_csc_tensor(ccol_indices=[0, 0, 1], row_indices=[0],
                                                   values=[2.], size=(1, 2)),
                     lambda m: m.sparse_bsr_tensor(crow_indices=[0, 1], col_indices=[0],
                                                   values=m.ones(1, 1, 2)),
                     lambda m: m.sparse_bsc_tensor(ccol_indices=[0, 1], row_indices=[0],
                                                   values=m.ones(1, 1, 2)),
                     lambda m: m.sparse_compressed_tensor(compressed_indices=[0, 1],
                                                          plain_indices=[0], values=[1.],
                                                          layout=m.sparse_csc)):
            assert repr(make(tapegrad)) == repr(make(torch))
        for m in (torch, tapegrad):
            with pytest.raises(TypeError, match="invalid combination of arguments"):
                m.sparse_csr_tensor()
