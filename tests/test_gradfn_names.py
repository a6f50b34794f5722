"""grad_fn names of composite ops: tapegrad builds sort from an index, hardtanh from a where,
flip from index_select ...; the result's node must still carry PyTorch's name for the op
(SortBackward0, HardtanhBackward0, FlipBackward0), since scripts print tensors with their grad_fn.

Each case runs with L = tapegrad and L = torch (the oracle; skipped without torch) and compares
`grad_fn.name()` and `type(grad_fn).__name__`.  Renaming must not touch gradients, the identity
of the grad_fn object, next_functions or node hooks.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def inputs(L):
    x = L.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=L.float64, requires_grad=True)
    w = L.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], dtype=L.float64, requires_grad=True)
    v = L.tensor([0.3, -0.8, 1.7, 4.0, -3.5], dtype=L.float64, requires_grad=True)
    A = L.tensor([[2.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.1, 0.2, 1.5]], dtype=L.float64,
                 requires_grad=True)
    return x, w, v, A


# label -> fn(L, F, x, w, v, A) returning a tensor whose grad_fn is compared
CASES = {
    # sorting and selection (values output)
    "sort": lambda L, F, x, w, v, A: x.sort(1)[0],
    "sort transposed": lambda L, F, x, w, v, A: x.t().sort(0)[0],
    "sort 0-d": lambda L, F, x, w, v, A: v[0].sort()[0],
    "topk": lambda L, F, x, w, v, A: x.topk(2)[0],
    "kthvalue": lambda L, F, x, w, v, A: v.kthvalue(2)[0],
    "kthvalue keepdim": lambda L, F, x, w, v, A: x.kthvalue(2, 1, keepdim=True)[0],
    "mode": lambda L, F, x, w, v, A: v.mode()[0],
    "cummax": lambda L, F, x, w, v, A: v.cummax(0)[0],
    "cummin": lambda L, F, x, w, v, A: x.cummin(1)[0],
    "median dim": lambda L, F, x, w, v, A: x.median(1)[0],
    "nanmedian dim": lambda L, F, x, w, v, A: x.nanmedian(0, keepdim=True)[0],
    "quantile": lambda L, F, x, w, v, A: x.quantile(0.5),
    "quantile dim keepdim": lambda L, F, x, w, v, A: x.quantile(0.5, dim=1, keepdim=True),
    "nanquantile lower": lambda L, F, x, w, v, A: x.nanquantile(0.5, 0, interpolation="lower"),
    # activations
    "hardtanh": lambda L, F, x, w, v, A: F.hardtanh(v),
    "relu6": lambda L, F, x, w, v, A: F.relu6(v),
    "hardswish": lambda L, F, x, w, v, A: F.hardswish(v),
    "hardsigmoid": lambda L, F, x, w, v, A: F.hardsigmoid(v),
    "threshold": lambda L, F, x, w, v, A: F.threshold(v, 0.1, 20.0),
    "softshrink": lambda L, F, x, w, v, A: F.softshrink(v),
    "hardshrink": lambda L, F, x, w, v, A: F.hardshrink(v),
    "logsigmoid": lambda L, F, x, w, v, A: F.logsigmoid(v),
    "celu": lambda L, F, x, w, v, A: F.celu(v),
    "glu": lambda L, F, x, w, v, A: F.glu(A[:, :2]),
    "mish": lambda L, F, x, w, v, A: F.mish(v),
    "selu": lambda L, F, x, w, v, A: F.selu(v),
    "rrelu eval": lambda L, F, x, w, v, A: F.rrelu(v),
    # reorderings
    "flip": lambda L, F, x, w, v, A: x.flip(0),
    "flip transposed": lambda L, F, x, w, v, A: x.t().flip(1),
    "roll": lambda L, F, x, w, v, A: x.roll(1, 1),
    "roll flat": lambda L, F, x, w, v, A: x.roll(2),
    "rot90": lambda L, F, x, w, v, A: A.rot90(),
    "rot90 twice": lambda L, F, x, w, v, A: A.rot90(2),
    "fliplr": lambda L, F, x, w, v, A: A.fliplr(),
    "flipud": lambda L, F, x, w, v, A: A.flipud(),
    "atleast_2d of 0-d": lambda L, F, x, w, v, A: L.atleast_2d(v[0]),
    "atleast_2d": lambda L, F, x, w, v, A: L.atleast_2d(v),
    "atleast_3d": lambda L, F, x, w, v, A: L.atleast_3d(x),
    "kron": lambda L, F, x, w, v, A: L.kron(x, A),
    # diagonals
    "diag of a matrix": lambda L, F, x, w, v, A: x[:, :2].diag(),
    "diag of a vector": lambda L, F, x, w, v, A: v.diag(1),
    "diagonal": lambda L, F, x, w, v, A: A.diagonal(),
    "trace": lambda L, F, x, w, v, A: A.trace(),
    "diag_embed": lambda L, F, x, w, v, A: L.diag_embed(v),
    # copies with some elements written
    "scatter": lambda L, F, x, w, v, A: x.scatter(1, L.tensor([[0, 2], [1, 0]]), w[:, :2]),
    "scatter value": lambda L, F, x, w, v, A: x.scatter(1, L.tensor([[0], [1]]), 2.0),
    "index_fill": lambda L, F, x, w, v, A: v.index_fill(0, L.tensor([0]), 2.0),
    "index_fill tensor": lambda L, F, x, w, v, A: A.index_fill(0, L.tensor([0]), A[0, 0]),
    "index_copy": lambda L, F, x, w, v, A: x.index_copy(0, L.tensor([1]), w[:1]),
    "masked_scatter": lambda L, F, x, w, v, A: x.masked_scatter(x > 0, w),
    "put": lambda L, F, x, w, v, A: x.put(L.tensor([0, 4]), w[0, :2]),
    "take": lambda L, F, x, w, v, A: x.take(L.tensor([0, 4])),
    # fused arithmetic
    "addmm": lambda L, F, x, w, v, A: L.addmm(A[:2, :2], x, w.T),
    "baddbmm": lambda L, F, x, w, v, A: L.baddbmm(A[None, :2, :2], x[None], w.T[None]),
    "addmv": lambda L, F, x, w, v, A: L.addmv(v[:2], x, A[0]),
    "addr": lambda L, F, x, w, v, A: L.addr(A, A[0], A[1]),
    "addbmm": lambda L, F, x, w, v, A: L.addbmm(A[:2, :2], x[None], w.T[None]),
    "addcmul": lambda L, F, x, w, v, A: L.addcmul(x, x, w),
    "addcdiv": lambda L, F, x, w, v, A: L.addcdiv(x, x, w),
    "lerp": lambda L, F, x, w, v, A: L.lerp(x, w, 0.3),
    "lerp far": lambda L, F, x, w, v, A: L.lerp(x, w, 0.7),
    "lerp tensor weight": lambda L, F, x, w, v, A: L.lerp(x, w, L.full_like(x, 0.3)),
    # reductions and distances
    "var_mean": lambda L, F, x, w, v, A: L.var_mean(x)[0],
    "var_mean mean": lambda L, F, x, w, v, A: L.var_mean(x, 1)[1],
    "std_mean": lambda L, F, x, w, v, A: L.std_mean(x, 1)[0],
    "nansum": lambda L, F, x, w, v, A: x.nansum(),
    "aminmax min": lambda L, F, x, w, v, A: L.aminmax(x)[0],
    "aminmax max dim": lambda L, F, x, w, v, A: L.aminmax(x, dim=1)[1],
    "vector_norm 1": lambda L, F, x, w, v, A: L.linalg.vector_norm(v, 1),
    "vector_norm inf": lambda L, F, x, w, v, A: L.linalg.vector_norm(v, float("inf")),
    "dist": lambda L, F, x, w, v, A: L.dist(x, w),
    "dist 1": lambda L, F, x, w, v, A: L.dist(x, w, 1),
    "cdist": lambda L, F, x, w, v, A: L.cdist(x, w),
    "pdist": lambda L, F, x, w, v, A: F.pdist(A),
    "linalg.cross": lambda L, F, x, w, v, A: L.linalg.cross(A, A.flip(0)),
    "cross": lambda L, F, x, w, v, A: L.cross(A, A.flip(0), dim=1),
    "renorm": lambda L, F, x, w, v, A: A.renorm(2, 0, 1),
    "block_diag": lambda L, F, x, w, v, A: L.block_diag(A, x),
    # elementwise
    "nan_to_num": lambda L, F, x, w, v, A: v.nan_to_num(),
    "exp2": lambda L, F, x, w, v, A: L.exp2(v),
    "logaddexp": lambda L, F, x, w, v, A: L.logaddexp(x, w),
    "vdot": lambda L, F, x, w, v, A: L.vdot(A[0], A[1]),
    "igamma": lambda L, F, x, w, v, A: L.igamma(x.abs() + 1, w),
    "igammac": lambda L, F, x, w, v, A: L.igammac(x.abs().detach() + 1, w),
    "sinc": lambda L, F, x, w, v, A: L.sinc(x),
    "copysign number": lambda L, F, x, w, v, A: L.copysign(x, -1.0),
    "copysign tensor": lambda L, F, x, w, v, A: L.copysign(x, w),
    # resampling and pooling
    "interpolate nearest": lambda L, F, x, w, v, A: F.interpolate(x[None], scale_factor=2),
    "interpolate nearest 2-d": lambda L, F, x, w, v, A: F.interpolate(x[None, None], size=(3, 4)),
    "interpolate linear": lambda L, F, x, w, v, A: F.interpolate(x[None], size=5, mode="linear"),
    "interpolate nearest-exact": lambda L, F, x, w, v, A: F.interpolate(
        x[None], size=5, mode="nearest-exact"),
    "interpolate bilinear": lambda L, F, x, w, v, A: F.interpolate(
        x[None, None], scale_factor=2, mode="bilinear"),
    "interpolate bicubic aa": lambda L, F, x, w, v, A: F.interpolate(
        x[None, None], size=(1, 2), mode="bicubic", antialias=True),
    "adaptive_avg_pool1d": lambda L, F, x, w, v, A: F.adaptive_avg_pool1d(x[None], 2),
    # linear algebra
    "matrix_exp": lambda L, F, x, w, v, A: L.linalg.matrix_exp(A),
    "pinv": lambda L, F, x, w, v, A: L.linalg.pinv(A),
    "lstsq": lambda L, F, x, w, v, A: L.linalg.lstsq(A, x.T).solution,
    "logdet": lambda L, F, x, w, v, A: L.logdet(A),
    "torch.cholesky": lambda L, F, x, w, v, A: L.cholesky(A @ A.T + L.eye(3, dtype=L.float64)),
    "torch.cholesky upper": lambda L, F, x, w, v, A: L.cholesky(A @ A.T + L.eye(3, dtype=L.float64),
                                                                upper=True),
}


def names(L, make):
    import importlib
    F = importlib.import_module(L.__name__ + ".nn.functional")
    y = make(L, F, *inputs(L))
    return y.grad_fn.name(), type(y.grad_fn).__name__


@pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated")
@pytest.mark.parametrize("label", list(CASES))
def test_grad_fn_name_is_pytorchs(label):
    torch = pytest.importorskip("torch")
    assert names(tg, CASES[label]) == names(torch, CASES[label])


def _set_first(y):
    y[0] = 1.0
    return y


# PyTorch's hand-written nodes name themselves with their namespace ("torch::autograd::CopySlices")
CASES["setitem"] = lambda L, F, x, w, v, A: _set_first(x * 1)
CASES["copy_"] = lambda L, F, x, w, v, A: (x * 1).copy_(w * 2)


IN_PLACE = {
    "hardtanh": lambda F, y: F.hardtanh(y, inplace=True),
    "relu6": lambda F, y: F.relu6(y, inplace=True),
    "selu": lambda F, y: F.selu(y, inplace=True),
    "celu": lambda F, y: F.celu(y, inplace=True),
    "mish": lambda F, y: F.mish(y, inplace=True),
    "hardswish": lambda F, y: F.hardswish(y, inplace=True),
    "hardsigmoid": lambda F, y: F.hardsigmoid(y, inplace=True),
    "threshold": lambda F, y: F.threshold(y, 0.1, 2.0, inplace=True),
    "rrelu": lambda F, y: F.rrelu(y, inplace=True),
}


@pytest.mark.parametrize("label", list(IN_PLACE))
def test_in_place_activation_names_pytorchs_node(label):
    torch = pytest.importorskip("torch")
    import importlib
    seen = []
    for L in (tg, torch):
        F = importlib.import_module(L.__name__ + ".nn.functional")
        x, _, v, _ = inputs(L)
        y = v * 1
        z = IN_PLACE[label](F, y)
        view = IN_PLACE[label](F, (x * 1)[0])       # a view's node is named after the view
        seen.append((z is y, z.grad_fn.name(), type(view.grad_fn).__name__))
    assert seen[0] == seen[1]


# -- renaming changes only the name -----------------------------------------------------------------

RENAMED = ["sort", "topk", "kthvalue", "hardtanh", "mish", "glu", "flip", "roll", "scatter",
           "addmm", "lerp", "var_mean", "dist", "cdist", "interpolate nearest"]


@pytest.mark.parametrize("label", RENAMED)
def test_renamed_node_keeps_gradients_identity_and_edges(label):
    torch = pytest.importorskip("torch")
    grads = {}
    for L in (tg, torch):
        import importlib
        F = importlib.import_module(L.__name__ + ".nn.functional")
        leaves = inputs(L)
        y = CASES[label](L, F, *leaves)
        assert y.grad_fn is y.grad_fn
        assert len(y.grad_fn.next_functions) >= 1
        y.retain_grad()
        (y * y).sum().backward()
        grads[L.__name__] = ([None if t.grad is None else t.grad.detach().numpy().copy()
                              for t in leaves], y.grad.detach().numpy().copy())
    (ours, our_y), (theirs, their_y) = grads["tapegrad"], grads["torch"]
    np.testing.assert_allclose(our_y, their_y)
    for a, b in zip(ours, theirs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b)


def test_hooks_on_a_renamed_node_fire():
    x = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values = x.sort()[0]
    node = values.grad_fn
    assert type(node).__name__ == "SortBackward0"
    seen = []
    node.register_prehook(lambda grad_outputs: seen.append("pre"))
    node.register_hook(lambda grad_inputs, grad_outputs: seen.append("post"))
    (values * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert seen == ["pre", "post"]
    assert x.grad.tolist() == [3.0, 1.0, 2.0]


def test_without_grad_nothing_is_named():
    x = tg.tensor([3.0, 1.0, 2.0])
    assert x.sort()[0].grad_fn is None
    with tg.no_grad():
        assert tg.tensor([1.0], requires_grad=True).flip(0).grad_fn is None


def test_a_grad_fn_already_handed_out_keeps_its_class():
    x = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
    y = x * 2
    node = y.grad_fn
    tg._core._name_grad_fn(y, "SortBackward0")
    assert y.grad_fn is node and type(node).__name__ == "MulBackward0"
    assert tg._core._name_grad_fn(x, "SortBackward0") is x     # a leaf: untouched
    assert x.grad_fn is None

