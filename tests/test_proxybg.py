"""Regression tests from the recommender / metric-learning proxy task (session 33, proxybg):
dlrm-style row-wise sparse Adagrad (``grad.new(indices, values, size)`` on a sparse gradient,
dense += sparse, sparse_mask, in-place ops on ``_values()``) and module constructors given
numpy integers (sizes read from numpy arrays: LayerNorm, the padding modules, EmbeddingBag's
repr)."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _sparse_pair(indices, values, size):
    i, v = np.array(indices, dtype=np.int64), np.array(values, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (tapegrad.sparse_coo_tensor(tapegrad.tensor(i), tapegrad.tensor(v), size),
                torch.sparse_coo_tensor(torch.tensor(i), torch.tensor(v), size))


def _same_sparse(ours, theirs):
    assert ours.layout == tapegrad.sparse_coo and theirs.layout == torch.sparse_coo
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours._nnz() == theirs._nnz()
    assert ours.is_coalesced() == theirs.is_coalesced()
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())


@pytest.mark.parametrize("form", ["list", "tuple", "Size", "none"])
def test_sparse_new_from_indices_values_size(form):
    ours_s, theirs_s = _sparse_pair([[0, 2, 0]], [[1., 2.], [3., 4.], [5., 6.]], (4, 2))
    idx = np.array([[0, 3]], dtype=np.int64)
    vals = np.array([[7., 8.], [9., 10.]], dtype=np.float32)
    size = {"list": [4, 2], "tuple": (4, 2), "none": None}
    args_o, args_t = (tapegrad.tensor(idx), tapegrad.tensor(vals)), (torch.tensor(idx),
                                                                     torch.tensor(vals))
    if form == "Size":
        args_o, args_t = args_o + (tapegrad.Size([4, 2]),), args_t + (torch.Size([4, 2]),)
    elif size[form] is not None:
        args_o, args_t = args_o + (size[form],), args_t + (size[form],)
    _same_sparse(ours_s.new(*args_o), theirs_s.new(*args_t))


def test_sparse_new_keeps_the_values_dtype_and_makes_empty_tensors():
    ours_s, theirs_s = _sparse_pair([[1]], [2.], (3,))
    idx = np.array([[0, 2]], dtype=np.int64)
    for vals in (np.array([1, 5], dtype=np.int64), np.array([1.5, 2.5], dtype=np.float64)):
        _same_sparse(ours_s.new(tapegrad.tensor(idx), tapegrad.tensor(vals), [3]),
                     theirs_s.new(torch.tensor(idx), torch.tensor(vals), [3]))
    _same_sparse(ours_s.double().new(3, 2), theirs_s.double().new(3, 2))
    _same_sparse(ours_s.new(), theirs_s.new())
    _same_sparse(ours_s.new(tapegrad.Size([2, 2])), theirs_s.new(torch.Size([2, 2])))


def test_sparse_new_gradient_flows_to_the_values():
    ours_s, _ = _sparse_pair([[1]], [2.], (3,))
    v = tapegrad.tensor([1., 2.], requires_grad=True)
    s = ours_s.new(tapegrad.tensor([[0, 2]]), v, [3])
    assert type(s.grad_fn).__name__ == "SparseCooTensorWithDimsAndTensorsBackward0"
    (s.to_dense() * tapegrad.tensor([3., 4., 5.])).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [3., 5.])


def test_sparse_new_bad_arguments():
    ours_s, theirs_s = _sparse_pair([[1]], [2.], (3,))
    idx, vals = np.array([[0, 2]], dtype=np.int32), np.array([1., 2.], dtype=np.float32)
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
        theirs_s.new(torch.tensor(idx), torch.tensor(vals))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
        ours_s.new(tapegrad.tensor(idx), tapegrad.tensor(vals))
    # with a size PyTorch checks elsewhere, with another message
    with pytest.raises(RuntimeError, match="indices must be an int64 tensor"):
        theirs_s.new(torch.tensor(idx), torch.tensor(vals), [3])
    with pytest.raises(RuntimeError, match="indices must be an int64 tensor"):
        ours_s.new(tapegrad.tensor(idx), tapegrad.tensor(vals), [3])
    for s, mod in ((ours_s, tapegrad), (theirs_s, torch)):
        with pytest.raises(TypeError, match=r"SparseTensor.new\(sequence\) only accepts sizes"):
            s.new([2, 3])
        with pytest.raises(TypeError, match="new\\(\\) received an invalid combination"):
            s.new(mod.tensor(idx.astype(np.int64)), mod.tensor(vals), 3)
        with pytest.raises(TypeError, match="new\\(\\) received an invalid combination"):
            s.new([1.5, 2.5])


def _rowwise_sparse_adagrad_step(mod, weight, grad, momentum, lr, eps):
    """dlrm's RWSAdagrad update of an embedding table from its sparse gradient."""
    grad = grad.coalesce()
    grad_indices, grad_values, size = grad._indices(), grad._values(), grad.size()

    def make_sparse(values, row_wise):
        return grad.new(grad_indices, values, [size[0]] if row_wise else size)
    momentum_update = make_sparse(grad_values.pow(2).mean(dim=1), True)
    momentum.add_(momentum_update)
    std = momentum.sparse_mask(momentum_update.coalesce())
    std_values = std._values().sqrt_().add_(eps)
    weight.data.add_(make_sparse(grad_values / std_values.view(std_values.size()[0], 1), False),
                     alpha=-lr)


def test_rowwise_sparse_adagrad_matches_torch():
    table = np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2)
    batches = [np.array([1, 4, 1]), np.array([0, 4]), np.array([5, 5, 5, 2])]
    results = []
    for mod in (tapegrad, torch):
        emb = mod.nn.EmbeddingBag(6, 2, mode="sum", sparse=True)
        with mod.no_grad():
            emb.weight.copy_(mod.tensor(table))
        momentum = mod.full([6], 0.0, dtype=mod.float32)
        for rows in batches:
            idx = mod.tensor(rows)
            out = emb(idx, mod.tensor([0, 1]))
            emb.weight.grad = None
            (out * mod.tensor([[1., -2.], [0.5, 3.]])).sum().backward()
            assert emb.weight.grad.is_sparse
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _rowwise_sparse_adagrad_step(mod, emb.weight, emb.weight.grad, momentum, 0.1,
                                             1e-10)
        results.append((emb.weight.detach().numpy().copy(), momentum.numpy().copy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


def test_layer_norm_and_rms_norm_take_a_numpy_integer():
    n = np.int64(5)
    for name in ("LayerNorm", "RMSNorm"):
        ours, theirs = getattr(tapegrad.nn, name)(n), getattr(torch.nn, name)(n)
        assert ours.normalized_shape == theirs.normalized_shape == (5,)
        assert repr(ours) == repr(theirs)
        x = np.arange(10, dtype=np.float32).reshape(2, 5)
        np.testing.assert_allclose(ours(tapegrad.tensor(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,dims", [("ZeroPad2d", 4), ("ConstantPad1d", 3),
                                       ("ReflectionPad2d", 4), ("ReplicationPad1d", 3),
                                       ("CircularPad2d", 4)])
def test_padding_modules_take_a_numpy_integer(name, dims):
    args = (np.int64(1), 0.5) if name.startswith("Constant") else (np.int64(1),)
    ours, theirs = getattr(tapegrad.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    shape = (2, 3, 4, 4)[4 - dims:]
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(ours(tapegrad.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())


def test_embedding_bag_repr_shows_its_arguments_as_given():
    # PyTorch's EmbeddingBag formats its fields with repr (Embedding with str)
    n, d = np.int64(300), np.int64(4)
    for kwargs in ({}, {"max_norm": 1.0, "norm_type": 1.0, "scale_grad_by_freq": True,
                        "padding_idx": 2}):
        ours = tapegrad.nn.EmbeddingBag(n, d, mode="sum", **kwargs)
        theirs = torch.nn.EmbeddingBag(n, d, mode="sum", **kwargs)
        assert repr(ours) == repr(theirs)
    assert repr(tapegrad.nn.Embedding(n, d)) == repr(torch.nn.Embedding(n, d))


_PRODUCTS = {
    "torch.mm": lambda m, s, x: m.mm(s, x),
    "matmul": lambda m, s, x: m.matmul(s, x),
    "@": lambda m, s, x: s @ x,
    "Tensor.mm": lambda m, s, x: s.mm(x),
    "spmm": lambda m, s, x: m.spmm(s, x),
    "dsmm": lambda m, s, x: m.dsmm(s, x),
    "torch.addmm": lambda m, s, x: m.addmm(m.ones(4, 3), s, x, beta=0.5, alpha=2.0),
    "mv": lambda m, s, x: m.mv(s, x[:, 1]),
    "matrix @ vector": lambda m, s, x: s @ x[:, 2],
    "dense @ sparse": lambda m, s, x: m.mm(x.t(), s),
}


@pytest.mark.parametrize("name", list(_PRODUCTS))
def test_leaf_sparse_operand_gets_pytorch_gradient_layout(name):
    # SILENT: torch.mm & co. give a leaf sparse operand the full dense gradient
    # (grad_out @ mat2.T); tapegrad gave the gradient masked to the operand's pattern
    i = np.array([[0, 1, 1, 3, 2], [1, 0, 2, 3, 2]], dtype=np.int64)
    v = np.array([1., 2., 3., 4., 5.], dtype=np.float32)
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    grads = []
    for mod in (tapegrad, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = mod.sparse_coo_tensor(mod.tensor(i), mod.tensor(v), (4, 4), requires_grad=True)
        out = _PRODUCTS[name](mod, s, mod.tensor(x))
        out.pow(2).sum().backward()
        grads.append(s.grad)
    ours, theirs = grads
    assert ours.is_sparse == theirs.is_sparse
    assert str(ours.dtype) == str(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape)
    to_np = (lambda g: g.to_dense().numpy()) if theirs.is_sparse else (lambda g: g.numpy())
    np.testing.assert_allclose(to_np(ours), to_np(theirs), rtol=1e-6, atol=1e-6)


def test_dense_and_masked_sparse_gradients_accumulate_as_torch():
    i = np.array([[0, 1, 2], [1, 0, 2]], dtype=np.int64)
    v = np.array([1., -2., 3.], dtype=np.float32)
    x = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)
    grads = []
    for mod in (tapegrad, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = mod.sparse_coo_tensor(mod.tensor(i), mod.tensor(v), (3, 3), requires_grad=True)
        xt = mod.tensor(x)
        (mod.sparse.mm(s, xt).sum() + (s @ xt).pow(2).sum()).backward()
        (s.mm(xt) * 3).sum().backward()         # a second backward adds into the dense .grad
        grads.append(s.grad)
    ours, theirs = grads
    assert not theirs.is_sparse and not ours.is_sparse
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)



_OLD_FORMS = [
    # (call, the same call in the current signature), each as f(mod, a, b, v, B)
    (lambda m, a, b, v, B: m.addmm(1, a, -2, a, b.t()),
     lambda m, a, b, v, B: m.addmm(a, a, b.t(), beta=1, alpha=-2)),
    (lambda m, a, b, v, B: m.addmm(0.5, a, a, b), lambda m, a, b, v, B: m.addmm(a, a, b, beta=0.5)),
    (lambda m, a, b, v, B: a.addmm(0.5, -1, a, b),
     lambda m, a, b, v, B: a.addmm(a, b, beta=0.5, alpha=-1)),
    (lambda m, a, b, v, B: a.addmm(0.5, a, b), lambda m, a, b, v, B: a.addmm(a, b, beta=0.5)),
    (lambda m, a, b, v, B: a.clone().addmm_(2, 3, a, b),
     lambda m, a, b, v, B: a.clone().addmm_(a, b, beta=2, alpha=3)),
    (lambda m, a, b, v, B: m.addmv(2, v, 3, a, v), lambda m, a, b, v, B: m.addmv(v, a, v, beta=2, alpha=3)),
    (lambda m, a, b, v, B: v.addmv(2, a, v), lambda m, a, b, v, B: v.addmv(a, v, beta=2)),
    (lambda m, a, b, v, B: m.addr(2, a, 3, v, v), lambda m, a, b, v, B: m.addr(a, v, v, beta=2, alpha=3)),
    (lambda m, a, b, v, B: a.clone().addr_(2, 3, v, v),
     lambda m, a, b, v, B: a.clone().addr_(v, v, beta=2, alpha=3)),
    (lambda m, a, b, v, B: m.addbmm(2, a, 3, B, B), lambda m, a, b, v, B: m.addbmm(a, B, B, beta=2, alpha=3)),
    (lambda m, a, b, v, B: m.baddbmm(2, B, 3, B, B),
     lambda m, a, b, v, B: m.baddbmm(B, B, B, beta=2, alpha=3)),
    (lambda m, a, b, v, B: B.clone().baddbmm_(0.5, B, B),
     lambda m, a, b, v, B: B.clone().baddbmm_(B, B, beta=0.5)),
]


@pytest.mark.parametrize("k", range(len(_OLD_FORMS)))
def test_deprecated_scale_first_product_forms(k):
    # torch.addmm(1, sq + sq.t(), -2, x, x.t()): pre-1.0 metric-learning distance code
    old, new = _OLD_FORMS[k]
    a = np.array([[1., 2.], [3., -4.]], dtype=np.float32)
    b = np.array([[0.5, -1.], [2., 1.5]], dtype=np.float32)
    v = np.array([1., -2.], dtype=np.float32)
    results = []
    for mod in (tapegrad, torch):
        args = (mod.tensor(a), mod.tensor(b), mod.tensor(v), mod.stack([mod.tensor(a), mod.tensor(b)]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append(old(mod, *args).numpy())
        np.testing.assert_array_equal(results[-1], new(mod, *args).numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_deprecated_scale_first_product_gradient_and_errors():
    x = np.array([[0.3, -1.2, 0.5], [1.1, 0.4, -0.7], [0.0, 0.9, 0.2]], dtype=np.float32)
    grads = []
    for mod in (tapegrad, torch):
        e = mod.tensor(x, requires_grad=True)
        sq = e.pow(2).sum(dim=1, keepdim=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = mod.addmm(1, sq + sq.t(), -2, e, e.t())
        d.clamp(min=1e-6).sqrt().sum().backward()
        grads.append(e.grad.numpy())
        for bad in (lambda: mod.addmm(1, e, -2, e, e.t(), beta=2),
                    lambda: mod.addmm(e, e, e.t(), 3)):
            with pytest.raises(TypeError, match="addmm\\(\\) received an invalid combination"):
                bad()
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)
