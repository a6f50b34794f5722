"""Regression tests of proxydd (knowledge-graph embedding and link-prediction scripts run
unchanged under tapegrad), each compared against PyTorch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(fn):
    return fn(tapegrad), fn(torch)


def _close(ours, theirs, atol=1e-6):
    np.testing.assert_allclose(np.asarray(ours.detach().tolist()), theirs.detach().numpy(),
                               rtol=1e-6, atol=atol)


# ---- index_select with a strided index (a column of a triples tensor, as RotatE's
# `index_select(entity_embedding, 0, sample[:, 0])`): the slice-run fast path read the index's
# buffer as packed and gathered other rows (SILENT)

TRIPLES = [[0, 1, 2], [3, 0, 1], [2, 2, 0], [1, 3, 3]]


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("column", ["first", "middle", "transposed", "every_other", "flipped"])
def test_index_select_strided_index(dim, column):
    def run(lib):
        P = lib.tensor(TRIPLES)
        index = {"first": P[:, 0], "middle": P[:, 1], "transposed": P.t()[1],
                 "every_other": P[::2, 1], "flipped": P.flip(0)[:, 1]}[column]
        x = lib.sin(lib.arange(20, dtype=lib.float64).view(4, 5) * 0.37).requires_grad_()
        y = lib.index_select(x, dim, index)
        (y * lib.linspace(0.5, 2.0, y.numel(), dtype=lib.float64).view_as(y)).sum().backward()
        return y, x.grad

    (y, g), (ty, tg) = _both(run)
    _close(y, ty)
    _close(g, tg)


def test_index_select_strided_index_gradcheck():
    index = tapegrad.tensor(TRIPLES)[:, 2]
    x = tapegrad.randn(4, 3, dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda t: t.index_select(0, index), (x,))


# ---- embedding's max_norm renorms the weight in place: it bumps the version counter, so a record
# that saved the weight before the lookup refuses its backward (PyTorch's error); it used the
# renormed rows, a silent wrong gradient (SILENT)

@pytest.mark.parametrize("saved", ["whole", "slice_with_row", "slice_without_row"])
def test_embedding_max_norm_bumps_version(saved):
    def run(lib):
        emb = lib.nn.Embedding(4, 3, max_norm=1.0)
        with lib.no_grad():
            emb.weight.copy_(lib.arange(12.0).view(4, 3) / 5)
        w = {"whole": emb.weight, "slice_with_row": emb.weight[2:],
             "slice_without_row": emb.weight[:2]}[saved]
        y = w.pow(2).sum()
        emb(lib.tensor([3]))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
        return emb.weight

    w, tw = _both(run)
    _close(w, tw)


def test_embedding_max_norm_bumps_version_when_no_row_is_over():
    def run(lib):
        w = lib.arange(12.0).view(4, 3) / 5
        before = w._version
        lib.nn.functional.embedding(lib.tensor([0]), w, max_norm=1.0)   # row 0's norm < 1
        return w._version - before

    assert run(tapegrad) == run(torch) == 1


def test_embedding_max_norm_gradient_after_renorm():
    # the lookup itself saves only the indices: its gradient is unaffected by the renorm
    def run(lib):
        emb = lib.nn.Embedding(4, 3, max_norm=1.0).double()
        with lib.no_grad():
            emb.weight.copy_(lib.arange(12.0, dtype=lib.float64).view(4, 3) / 5)
        a = emb(lib.tensor([1, 2]))
        b = emb(lib.tensor([2, 3]))
        (a.sum() + b.pow(2).sum()).backward()
        return emb.weight.grad

    g, tg = _both(run)
    _close(g, tg)


# ---- torch.sparse_coo_tensor(size=(m, n)): the size-only form by keyword (an empty adjacency
# to fill later) raised a TypeError

def test_sparse_coo_tensor_size_keyword():
    for lib in (tapegrad, torch):
        s = lib.sparse_coo_tensor(size=(2, 3), dtype=lib.float64)
        assert tuple(s.shape) == (2, 3) and s._nnz() == 0 and s.sparse_dim() == 2
        assert s.dtype == lib.float64
        assert s.to_dense().abs().sum().item() == 0
