"""In-place index and scatter ops make self the op's output, as PyTorch's do: its grad_fn is the
op's node (IndexCopyBackward0, ScatterAddBackward0, PutBackward0...), not CopyBackwards, also
for a self without history (Transformer-XL's adaptive softmax prints `out.index_copy_(0, i, -lp)`
on a zeros_like tensor). Values and gradients replayed in PyTorch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _ops(lib):
    i = lib.tensor([0, 2, 4])
    idx = lib.tensor([[0, 1, 2, 3], [1, 2, 3, 4], [0, 0, 0, 0]])
    return {
        "index_copy_": lambda o, w: o.index_copy_(0, i, w),
        "index_add_": lambda o, w: o.index_add_(0, i, w, alpha=2),
        "index_fill_": lambda o, w: o.index_fill_(0, i, w.sum()),
        "scatter_": lambda o, w: o.scatter_(0, idx, w),
        "scatter_add_": lambda o, w: o.scatter_add_(0, idx, w),
        "scatter_reduce_prod": lambda o, w: o.scatter_reduce_(0, idx, w, "prod"),
        "scatter_reduce_amax": lambda o, w: o.scatter_reduce_(0, idx, w, "amax",
                                                              include_self=False),
        "put_": lambda o, w: o.put_(lib.tensor([0, 5, 7]), w[0, :3]),
        "masked_fill_": lambda o, w: o.masked_fill_(o > 0.5, w.sum()),
        "chained": lambda o, w: o.index_add_(0, i, w).scatter_add_(0, idx, w * w),
    }


def _run(lib, name, with_history):
    w = lib.tensor(np.arange(12.).reshape(3, 4) / 7 + 0.5, dtype=lib.float32, requires_grad=True)
    out = lib.ones(5, 4) * w[0, 0] if with_history else lib.ones(5, 4)
    r = _ops(lib)[name](out, w)
    (r * lib.arange(20.).reshape(5, 4)).sum().backward()
    return (type(r.grad_fn).__name__, r is out, r.is_leaf, r._version,
            r.detach().numpy().copy(), w.grad.numpy().copy())


@pytest.mark.parametrize("with_history", [False, True])
@pytest.mark.parametrize("name", [
    "index_copy_", "index_add_", "index_fill_", "scatter_", "scatter_add_",
    "scatter_reduce_prod", "scatter_reduce_amax", "put_", "masked_fill_", "chained"])
def test_in_place_index_ops_are_the_ops_output(name, with_history):
    got = _run(tapegrad, name, with_history)
    want = _run(torch, name, with_history)
    assert got[:4] == want[:4]
    np.testing.assert_allclose(got[4], want[4], rtol=1e-6)
    np.testing.assert_allclose(got[5], want[5], rtol=1e-6)


def test_put_result_is_not_a_view():
    w = tapegrad.ones(3, requires_grad=True)
    r = tapegrad.ones(5, 4).put(tapegrad.tensor([0, 5, 7]), w)
    assert r._base is None
    assert type(r.grad_fn).__name__ == "PutBackward0"


def test_in_place_index_op_without_grad_stays_plain():
    # nothing requires grad: the write is a plain one, no history appears
    out = tapegrad.zeros(5, 4)
    r = out.index_copy_(0, tapegrad.tensor([0, 2]), tapegrad.ones(2, 4))
    assert r is out and r.grad_fn is None and not r.requires_grad and r._version == 1


@pytest.mark.parametrize("p", [0.5, 1.0])
@pytest.mark.parametrize("fn", ["alpha_dropout", "feature_alpha_dropout"])
def test_in_place_alpha_dropout_node_is_its_last_op(fn, p):
    # PyTorch's in-place alpha dropout ends in add_ (mul_ when p == 1): AddBackward0 /
    # MulBackward0, not CopyBackwards
    names = []
    for lib in (tapegrad, torch):
        w = lib.ones(2, 3, requires_grad=True)
        r = getattr(lib.nn.functional, fn)(w * 1, p, True, inplace=True)
        names.append(type(r.grad_fn).__name__)
    assert names[0] == names[1]


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("p", [0.0, 1.0])
@pytest.mark.parametrize("fn, shape", [("dropout1d", (2, 3)), ("dropout1d", (2, 3, 4)),
                                       ("dropout3d", (2, 2, 2, 2)), ("dropout3d", (1, 2, 2, 2, 2))])
def test_unbatched_channel_dropout_is_a_squeeze(fn, shape, p, training, inplace):
    # PyTorch's dropout1d/3d add a batch dim to unbatched input and take it away again: the
    # result is a squeeze (SqueezeBackward1 / SqueezeBackward4 in place) and, at p == 0 or in
    # eval mode, a view of the input rather than the input itself
    seen = []
    for lib in (tapegrad, torch):
        w = lib.ones(*shape, requires_grad=True)
        x = w * 2
        r = getattr(lib.nn.functional, fn)(x, p, training, inplace)
        r.sum().backward()
        seen.append((type(r.grad_fn).__name__, r is x, r._base is x, tuple(r.shape),
                     tuple(x.shape), r.sum().item(), w.grad.sum().item()))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("p", [0.5, 1.0])
@pytest.mark.parametrize("name", ["alpha_dropout_", "feature_alpha_dropout_", "feature_dropout_"])
def test_torch_in_place_dropouts_node_is_their_last_op(name, p):
    seen = []
    for lib in (tapegrad, torch):
        x = lib.ones(2, 3, requires_grad=True) * 2
        r = getattr(lib, name)(x, p, True)
        seen.append((type(r.grad_fn).__name__, r is x))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("with_history", [False, True])
def test_scatter_family_results_are_their_own_tensors(with_history):
    # masked_scatter/slice_scatter/diagonal_scatter/select_scatter: no _base and the op's own
    # node (was a view of a flat temporary, ViewBackward0); masked_scatter_ then becomes
    # MaskedScatterBackward0 in place (was CopyBackwards)
    seen = []
    for lib in (tapegrad, torch):
        w = lib.full((3, 3), 0.5, requires_grad=True)
        o = lib.ones(3, 3) * (w[0, 0] if with_history else 1)
        rs = [o.masked_scatter(o > 0, w), o.slice_scatter(w[:1], 0, 0, 1),
              o.diagonal_scatter(w[0]), o.select_scatter(w[0], 0, 1),
              o.clone().masked_scatter_(o > 0, w * 2)]
        sum(r.sum() for r in rs).backward()
        seen.append([(type(r.grad_fn).__name__, r._base is None, r.sum().item()) for r in rs]
                    + [w.grad.numpy().tolist()])
    assert seen[0] == seen[1]
