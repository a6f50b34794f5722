"""Regressions of the session-21 fuzz findings (seeds 63005800-, 60614500-, 60700900-).

Each test asserts the right values without torch where it can and, where torch is installed,
compares with it (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


# -- an in-place op through a view that overlaps itself (seed 63005906, silent) -------------------
# PyTorch records `view.op_()` on the base (CopySlices): the gradient of the op's input is
# assigned into the base's gradient at the view's positions, once per base element.  tapegrad
# computed the op on a copy of the view, whose gradient went back through the view's history
# (unfold's backward), which added it once per position: the elements an unfold window shares
# with the next got twice the gradient.  Every in-place path had the mechanism: the compiled
# binary ops, the ops computed in Python from a clone (Tensor.<op>_), the in-place activations,
# tril_/triu_, and the index/scatter ops written back with copy_.

IN_PLACE_OPS = {
    "sub_": lambda v, L: v.sub_(0.0),
    "add_ tensor": lambda v, L: v.add_(L.zeros(v.shape, dtype=v.dtype)),
    "mul_ grad operand": lambda v, L: v.mul_(L.ones(v.shape[-1], dtype=v.dtype,
                                                    requires_grad=True)),
    "iadd": lambda v, L: v.__iadd__(0.0),
    "ipow": lambda v, L: v.__ipow__(1),
    "relu_": lambda v, L: v.relu_(),
    "clamp_": lambda v, L: v.clamp_(-100, 100),
    "abs_": lambda v, L: v.abs_(),
    "nan_to_num_": lambda v, L: v.nan_to_num_(),
    "tril_": lambda v, L: v.tril_(5),
    "masked_fill_": lambda v, L: v.masked_fill_(L.zeros(v.shape, dtype=L.bool), 0.0),
    "lerp_": lambda v, L: v.lerp_(v.detach(), 0.0),
    "F.relu inplace": lambda v, L: L.nn.functional.relu(v, inplace=True),
    "F.elu inplace": lambda v, L: L.nn.functional.elu(v, inplace=True),
    "F.hardtanh inplace": lambda v, L: L.nn.functional.hardtanh(v, -100, 100, inplace=True),
    "F.relu6 inplace": lambda v, L: L.nn.functional.relu6(v, inplace=True),
    "F.threshold inplace": lambda v, L: L.nn.functional.threshold(v, -100.0, 0.0, inplace=True),
    "F.celu inplace": lambda v, L: L.nn.functional.celu(v, inplace=True),
    "F.rrelu inplace": lambda v, L: L.nn.functional.rrelu(v, inplace=True),
    "index_fill_": lambda v, L: v.index_fill_(-1, L.tensor([0]), 7.0),
    "index_add_": lambda v, L: v.index_add_(-1, L.tensor([0]), L.zeros(2, 2, 1, dtype=v.dtype)),
    "index_copy_": lambda v, L: v.index_copy_(0, L.tensor([0]), v[:1].detach()),
    "scatter_": lambda v, L: v.scatter_(-1, L.zeros(2, 2, 1, dtype=L.long), 9.0),
    "scatter_add_": lambda v, L: v.scatter_add_(-1, L.zeros(2, 2, 1, dtype=L.long),
                                                L.zeros(2, 2, 1, dtype=v.dtype)),
    "scatter_reduce_": lambda v, L: v.scatter_reduce_(-1, L.zeros(2, 2, 1, dtype=L.long),
                                                      L.zeros(2, 2, 1, dtype=v.dtype), "sum"),
    "index_put_ accumulate": lambda v, L: v.index_put_((L.tensor([0]),),
                                                       L.zeros(2, 2, dtype=v.dtype),
                                                       accumulate=True),
}


def _overlapping_write(L, op):
    """x -> x * 1 -> unfold(-1, 2, 1) (windows share an element) -> op in place -> weighted sum."""
    x = L.tensor(np.arange(1, 7.0).reshape(2, 3), requires_grad=True)
    v = (x * 1).unfold(-1, 2, 1)
    IN_PLACE_OPS[op](v, L)
    (v * L.tensor(np.arange(1, 9.0).reshape(2, 2, 2))).sum().backward()
    return v.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("op", sorted(IN_PLACE_OPS))
def test_in_place_through_overlapping_view_counts_each_element_once(op):
    value, grad = _overlapping_write(tg, op)
    # the view's values are unchanged by these ops, so the gradient is the weights' sum over
    # the positions that read each element (unfold's backward of the weights), once
    if op not in ("index_fill_", "scatter_", "index_copy_", "F.relu6 inplace"):
        assert grad.tolist() == [[1.0, 5.0, 4.0], [5.0, 13.0, 8.0]]


@pytest.mark.parametrize("op", sorted(IN_PLACE_OPS))
def test_in_place_through_overlapping_view_matches_torch(torch, op):
    value, grad = _overlapping_write(tg, op)
    t_value, t_grad = _overlapping_write(torch, op)
    np.testing.assert_allclose(value, t_value)
    np.testing.assert_allclose(grad, t_grad, rtol=1e-12)


def test_in_place_through_overlapping_view_second_derivative(torch):
    # the fuzz seed's shape: F.normalize -> smooth_l1_loss -> unfold -> sub_, differentiated
    # twice (create_graph): the first and second derivatives both counted shared elements twice
    def run(L):
        F = L.nn.functional
        rng = np.random.default_rng(5)
        x = L.tensor(rng.standard_normal((3, 3)), requires_grad=True)
        t = L.tensor(rng.standard_normal((3, 3)), requires_grad=True)
        v = F.smooth_l1_loss(F.normalize(x, p=float("inf"), dim=-1), t, reduction="none",
                             beta=0.5).unfold(-1, 2, 1)
        v.sub_(-0.0)
        w = L.tensor(rng.standard_normal(v.shape))
        gx, gt = L.autograd.grad((v * w).sum(), [x, t], create_graph=True)
        g2 = L.autograd.grad((gx * 1.5).sum() + (gt * 0.5).sum(), [x, t])
        return [a.detach().numpy() for a in (gx, gt) + tuple(g2)]
    for mine, theirs in zip(run(tg), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_in_place_through_as_strided_overlap(torch):
    # an as_strided view whose rows share elements; a tensor operand's gradient still sees every
    # position (PyTorch's CopySlices passes it the whole gradient slice)
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        b = L.tensor([[1.0, 1.0], [1.0, 1.0]], requires_grad=True)
        v = (x * 1).as_strided((2, 2), (1, 1))
        v.mul_(b)
        (v * L.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return x.grad.numpy(), b.grad.numpy()
    for mine, theirs in zip(run(tg), run(torch)):
        np.testing.assert_allclose(mine, theirs)


def test_in_place_through_ordinary_view_unchanged(torch):
    # views that do not overlap themselves keep their path (no extra record in the graph)
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    v = (x * 1).t()
    v.sub_(1.0)
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    names = [type(f).__name__ for f, _ in v.grad_fn.next_functions[0][0].next_functions]
    assert "WhereBackward0" not in names
