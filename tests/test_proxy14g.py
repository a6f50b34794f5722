"""What the session-14 proxy g of public scripts (EdwardRaff/Inside-Deep-Learning,
spro/practical-pytorch and char-rnn.pytorch, bentrevett/pytorch-sentiment-analysis,
cs230-stanford/cs230-code-examples, Shawn1993/cnn-text-classification-pytorch, locuslab/TCN,
tkipf/pygcn, Diego999/pyGAT, adambielski/siamese-triplet, jaxony/unet-pytorch) found tapegrad
doing differently from PyTorch, each checked against torch."""
from __future__ import annotations

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _message(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is compared by the caller
        return type(e), str(e)
    return None, None


# -- Tensor.reinforce: removed in PyTorch 0.4; 0.3-era REINFORCE scripts still call it ----------

def test_reinforce_raises_pytorchs_removal_error():
    expected = _message(lambda: torch.ones(2).reinforce(1.0))
    assert expected[0] is RuntimeError
    assert _message(lambda: tg.ones(2).reinforce(1.0)) == expected
    assert _message(lambda: tg.ones(2, requires_grad=True).multinomial(1).reinforce(0.5)) == expected


# -- torch.sparse.FloatTensor & co: PyTorch's legacy sparse constructors (tkipf/pygcn) ------------

import warnings  # noqa: E402

import numpy as np  # noqa: E402

_I = [[0, 1, 1], [1, 0, 2]]
_V = [1.0, 2.0, 3.0]


def _build(lib, cls_name, form):
    i = lib.tensor(_I)
    v = lib.tensor(_V)
    cls = getattr(lib.sparse, cls_name)
    args = {"indices, values, shape": (i, v, (2, 3)), "indices, values, Size": (i, v, lib.Size([2, 3])),
            "indices, values": (i, v), "float64 values": (i, v.double(), (2, 3)),
            "int values": (i, lib.tensor([1, 2, 3]), (2, 3)), "sizes": (2, 3),
            "Size": (lib.Size([4, 2]),), "empty": ()}[form]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(*args)


_WARNING_CALLS = """
import warnings, sys
warnings.simplefilter("always")
import {lib} as lib
i = lib.tensor([[0, 1], [1, 0]]); v = lib.tensor([1.0, 2.0])
calls = [lambda: lib.sparse.FloatTensor(i, v, (2, 2)), lambda: lib.sparse.DoubleTensor(i, v, (2, 2)),
         lambda: lib.sparse.FloatTensor(i, v), lambda: lib.sparse.LongTensor(2, 3),
         lambda: lib.sparse.FloatTensor(), lambda: lib.sparse.FloatTensor(i, v), lambda: lib.sparse.IntTensor(4)]
for call in calls:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    print([(w.category.__name__, str(w.message).split(" (Triggered internally")[0], w.filename == "<string>")
           for w in caught])
"""


def test_sparse_legacy_constructor_warns_once_per_form_as_torch():
    import subprocess
    import sys
    outs = [subprocess.run([sys.executable, "-c", _WARNING_CALLS.format(lib=lib)], capture_output=True,
                           text=True, check=True).stdout for lib in ("torch", "tapegrad")]
    assert outs[1] == outs[0]
    assert outs[0].count("deprecated") == 4


@pytest.mark.parametrize("cls_name", ["FloatTensor", "DoubleTensor", "LongTensor"])
@pytest.mark.parametrize("form", ["indices, values, shape", "indices, values, Size", "indices, values",
                                  "float64 values", "int values", "sizes", "Size", "empty"])
def test_sparse_legacy_constructor_matches_torch(cls_name, form):
    t, g = _build(torch, cls_name, form), _build(tg, cls_name, form)
    assert str(g.layout) == str(t.layout) and str(g.dtype) == str(t.dtype)
    assert tuple(g.shape) == tuple(t.shape) and g._nnz() == t._nnz()
    assert g.sparse_dim() == t.sparse_dim() and g.dense_dim() == t.dense_dim()
    np.testing.assert_array_equal(g.to_dense().numpy(), t.to_dense().numpy())
    assert isinstance(g, getattr(tg.sparse, cls_name)) == isinstance(t, getattr(torch.sparse, cls_name))
    assert isinstance(g, tg.sparse.FloatTensor) == isinstance(t, torch.sparse.FloatTensor)


@pytest.mark.parametrize("make", [
    lambda lib: lib.sparse.FloatTensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2)),
    lambda lib: lib.sparse.FloatTensor(lib.tensor([[0, 1]]).int(), lib.tensor([1.0, 2.0]), (2,)),
    lambda lib: lib.sparse.FloatTensor(lib.tensor([[0, 1]]), lib.tensor([1.0, 2.0]), (2,), 3),
    lambda lib: lib.sparse.FloatTensor("a"),
    lambda lib: lib.sparse.FloatTensor(lib.zeros(2, 2)),
])
def test_sparse_legacy_constructor_errors_match_torch(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _message(lambda: make(torch))
        got = _message(lambda: make(tg))
    assert expected[0] is not None and got[0] is expected[0]
    assert got[1].split("\n")[0] == expected[1].split("\n")[0]


def test_sparse_legacy_class_attributes_match_torch():
    for name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
                 "IntTensor", "ShortTensor", "CharTensor", "ByteTensor"):
        t, g = getattr(torch.sparse, name), getattr(tg.sparse, name)
        assert (g.__name__, repr(g), str(g.dtype), g.is_sparse) == \
            (t.__name__, repr(t), str(t.dtype), t.is_sparse)
        dense_t, dense_g = getattr(torch, name), getattr(tg, name, None)
        if dense_g is not None:     # the dense legacy classes print as PyTorch's too
            assert repr(dense_g) == repr(dense_t)
        if name != "BFloat16Tensor":    # (tapegrad has no bfloat16 tensors)
            assert not isinstance(tg.zeros(2, dtype=g.dtype), g)


def test_pygcn_spmm_through_legacy_sparse_adjacency_gradients_match_torch():
    """pygcn's GraphConvolution: torch.spmm(adj, x @ W) with adj a torch.sparse.FloatTensor."""
    rs = np.random.RandomState(0)
    dense = (rs.rand(5, 5) < 0.4) * rs.rand(5, 5) + np.eye(5)
    rows, cols = np.nonzero(dense)
    x, w = rs.standard_normal((5, 3)), rs.standard_normal((3, 2))
    results = []
    for lib in (torch, tg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            adj = lib.sparse.FloatTensor(lib.from_numpy(np.vstack((rows, cols)).astype(np.int64)),
                                         lib.from_numpy(dense[rows, cols].astype(np.float32)), lib.Size([5, 5]))
        xx = lib.tensor(x, dtype=lib.float32)
        ww = lib.tensor(w, dtype=lib.float32, requires_grad=True)
        out = lib.spmm(adj, lib.mm(xx, ww))
        (out.tanh().sum()).backward()
        results.append((out.detach().numpy(), ww.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


# -- a custom Function saving a sparse tensor (Diego999/pyGAT's SpecialSpmmFunction) -------------

def _special_spmm(lib):
    class SpecialSpmmFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, indices, values, shape, b):
            assert indices.requires_grad == False  # noqa: E712 - verbatim
            a = lib.sparse_coo_tensor(indices, values, shape)
            ctx.save_for_backward(a, b)
            ctx.N = shape[0]
            return lib.matmul(a, b)

        @staticmethod
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors
            grad_values = grad_b = None
            if ctx.needs_input_grad[1]:
                grad_a_dense = grad_output.matmul(b.t())
                edge_idx = a._indices()[0, :] * ctx.N + a._indices()[1, :]
                grad_values = grad_a_dense.view(-1)[edge_idx]
            if ctx.needs_input_grad[3]:
                grad_b = a.t().matmul(grad_output)
            return None, grad_values, None, grad_b
    return SpecialSpmmFunction


@pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_function_saving_a_sparse_tensor_matches_torch(dtype):
    rs = np.random.RandomState(1)
    n = 6
    rows, cols = np.nonzero((rs.rand(n, n) < 0.4) | np.eye(n, dtype=bool))
    vals, b = rs.rand(len(rows)), rs.standard_normal((n, 3))
    results = []
    for lib in (torch, tg):
        dt = getattr(lib, dtype)
        fn = _special_spmm(lib)
        v = lib.tensor(vals, dtype=dt, requires_grad=True)
        bb = lib.tensor(b, dtype=dt, requires_grad=True)
        idx = lib.tensor(np.vstack((rows, cols)))
        y = fn.apply(idx, v, lib.Size([n, n]), bb)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), v.grad.numpy(), bb.grad.numpy(), type(y.grad_fn).__name__))
    for a, g in zip(results[0][:3], results[1][:3]):
        np.testing.assert_allclose(g, a, rtol=1e-5, atol=1e-6)
    assert results[1][3] == results[0][3]


def test_function_saving_a_sparse_tensor_gradcheck():
    rs = np.random.RandomState(2)
    rows, cols = np.nonzero(rs.rand(4, 4) < 0.5)
    fn = _special_spmm(tg)
    idx = tg.tensor(np.vstack((rows, cols)))
    v = tg.tensor(rs.rand(len(rows)), dtype=tg.float64, requires_grad=True)
    b = tg.tensor(rs.standard_normal((4, 2)), dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda v, b: fn.apply(idx, v, tg.Size([4, 4]), b), (v, b))


def test_save_for_backward_still_refuses_non_tensors():
    class Bad(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"):
        Bad.apply(tg.ones(2, requires_grad=True))


# -- torch.load of a whole pickled module (spro/char-rnn.pytorch's generate.py) ----------------

def test_weights_only_refusal_of_a_pickled_module_matches_torch(tmp_path):
    """PyTorch's message prints its warning in bold (ANSI escapes); the text up to the
    unpickler's own detail is the same."""
    results = []
    for lib in (torch, tg):
        path = tmp_path / f"{lib.__name__}.pt"
        lib.save(lib.nn.Linear(2, 1), str(path))
        kind, message = _message(lambda: lib.load(str(path)))
        results.append((kind.__name__, message.split("WeightsUnpickler error: ")[0]))
    assert results[1] == results[0]
    assert "\x1b[1mdo those steps only if you trust the source of the checkpoint\x1b[0m" in results[0][1]


# -- a BatchSampler subclass with its own __iter__ (adambielski/siamese-triplet) -----------------

def _balanced_batch_sampler(lib, call_super):
    class BalancedBatchSampler(lib.utils.data.BatchSampler):
        """Yields [i, i + 1] pairs from the end: its own order, whatever BatchSampler would do."""
        def __init__(self, n):
            if call_super:
                super().__init__(lib.utils.data.SequentialSampler(range(n)), 2, False)
            self.n = n
            self.batch_size = 2

        def __iter__(self):
            for start in range(self.n - 2, -1, -2):
                yield [start, start + 1]

        def __len__(self):
            return self.n // 2
    return BalancedBatchSampler


@pytest.mark.parametrize("call_super", [False, True])
def test_batch_sampler_subclass_iter_is_used_as_torch(call_super):
    outs = []
    for lib in (torch, tg):
        data = lib.utils.data.TensorDataset(lib.arange(8.0), lib.arange(8) * 10)
        loader = lib.utils.data.DataLoader(data, batch_sampler=_balanced_batch_sampler(lib, call_super)(8))
        outs.append([(x.tolist(), y.tolist(), str(x.dtype)) for x, y in loader] + [len(loader)])
    assert outs[1] == outs[0]
    assert outs[0][0][0] == [6.0, 7.0]
