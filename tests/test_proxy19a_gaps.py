"""What the session-19 proxy of public NLP tutorials (lyeoni/nlp-tutorial, joosthub's
pytorch-nlp-tutorial) found tapegrad doing differently: the grad_fn of a whole-tensor write
(copy_, x[:] = v: PyTorch's CopyBackwards, or FillBackward3 for a 0-d value) and of a leaf's .grad
after backward(create_graph=True) (a copy into a new tensor, CopyBackwards, not a clone)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg


def _name(fn):
    return None if fn is None else type(fn).__name__


def _edges(fn):
    return tuple(None if f is None else type(f).__name__ for f, _ in fn.next_functions)


def _write(lib, case):
    """Runs one write into a fresh tensor; returns (written tensor, the value's source leaf)."""
    y0 = lib.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    y = y0 * 2
    if case == "copy_":
        x = lib.zeros(2, 2)
        x.copy_(y)
    elif case == "copy_ broadcast":
        x = lib.zeros(2, 2)
        x.copy_(y[0])
    elif case == "copy_ 0-d":
        x = lib.zeros(2, 2)
        x.copy_(y.sum())
    elif case == "copy_ onto history":
        x = lib.ones(2, 2) * y
        x.copy_(y * 3)
    elif case == "copy_ other dtype":
        x = lib.zeros(2, 2, dtype=lib.float64)
        x.copy_(y)
    elif case == "copy_ into a view":
        x = lib.zeros(2, 2)
        x[0].copy_(y[1])
    elif case == "x[...] = v":
        x = lib.zeros(2, 2)
        x[...] = y
    elif case == "x[:] = v":
        x = lib.zeros(2, 2)
        x[:] = y
    elif case == "x[:, 0:2] = v":
        x = lib.zeros(2, 2)
        x[:, 0:2] = y
    elif case == "x[0:5] = row":
        x = lib.zeros(2, 2)
        x[0:5] = y[1]
    elif case == "x[...] = 0-d":
        x = lib.zeros(2, 2)
        x[...] = y.sum()
    elif case == "x[:] = number onto history":
        x = lib.ones(2, 2) * y
        x[:] = 3.0
    elif case == "0-d x[...] = 0-d":
        x = lib.zeros(())
        x[...] = y.sum()
    elif case == "x[0] = row":
        x = lib.zeros(2, 2)
        x[0] = y[1]
    else:
        raise AssertionError(case)
    return x, y0


_CASES = ["copy_", "copy_ broadcast", "copy_ 0-d", "copy_ onto history", "copy_ other dtype",
          "copy_ into a view", "x[...] = v", "x[:] = v", "x[:, 0:2] = v", "x[0:5] = row",
          "x[...] = 0-d", "x[:] = number onto history", "0-d x[...] = 0-d", "x[0] = row"]
# (PyTorch's setitem expands a broadcast value first: its edge is an ExpandBackward0 node, which
# tapegrad's record does not show; x[None] = v and x[bool mask] = v (IndexPutBackward0) differ
# the same way and are left out)
_EXPANDED = {"x[0:5] = row"}


@pytest.mark.parametrize("case", _CASES)
def test_whole_tensor_writes_are_named_as_pytorch_names_them(case, torch):
    ours, ours_leaf = _write(tg, case)
    theirs, their_leaf = _write(torch, case)
    assert _name(ours.grad_fn) == _name(theirs.grad_fn)
    if case not in _EXPANDED:
        assert _edges(ours.grad_fn) == _edges(theirs.grad_fn)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy())
    w = np.arange(ours.numel(), dtype=np.float64).reshape(tuple(ours.shape)) - 1.5
    (ours * tg.tensor(w, dtype=ours.dtype)).sum().backward()
    (theirs * torch.tensor(w, dtype=theirs.dtype)).sum().backward()
    np.testing.assert_allclose(ours_leaf.grad.numpy(), their_leaf.grad.numpy())


@pytest.mark.parametrize("case", ["copy_", "x[:] = v", "x[...] = 0-d", "copy_ onto history"])
def test_whole_tensor_writes_second_derivative(case, torch):
    # the renamed records keep the setitem rule: their graph VJP gives the same second
    # derivative as PyTorch's
    results = []
    for lib in (tg, torch):
        x, y0 = _write(lib, case)
        (g,) = lib.autograd.grad((x * x * x).sum(), y0, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), y0)
        results.append((g.detach().numpy(), gg.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_copy_gradient_matches_finite_differences(gradcheck):
    def f(y):
        x = tg.zeros(2, 3, dtype=tg.float64)
        x.copy_(y.sin())
        x[:, 1:] = y[:, :2] * y[:, 1:]
        return x * x
    gradcheck(f, np.array([[0.3, -1.2, 0.7], [2.0, 0.1, -0.4]]))


def _leaf_grad_after_create_graph(lib):
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # (the reference-cycle warning)
        ((x + 2) * (x + 5)).mean().backward(create_graph=True)
    first = (_name(x.grad.grad_fn), _edges(x.grad.grad_fn), x.grad.detach().numpy().copy())
    (gg,) = lib.autograd.grad(x.grad.sum(), x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (x * x).sum().backward(create_graph=True)
    second = (_name(x.grad.grad_fn), x.grad.detach().numpy().copy())
    return first, gg.numpy(), second


def test_leaf_grad_after_backward_with_create_graph_is_a_copy(torch):
    # PyTorch's AccumulateGrad under grad mode: the first .grad is a new tensor laid out as the
    # leaf and copy_'d into (CopyBackwards, edges (None, the gradient's node)), later ones an
    # out-of-place sum (AddBackward0); the .grad stays differentiable
    (f1, e1, v1), gg1, (s1, w1) = _leaf_grad_after_create_graph(tg)
    (f2, e2, v2), gg2, (s2, w2) = _leaf_grad_after_create_graph(torch)
    assert (f1, e1, s1) == (f2, e2, s2) == ("CopyBackwards", (None, "AddBackward0"),
                                            "AddBackward0")
    np.testing.assert_allclose(v1, v2)
    np.testing.assert_allclose(gg1, gg2)
    np.testing.assert_allclose(w1, w2)


def _stale_saved_value(lib, case):
    """The message of a backward through a value written in place after it was saved."""
    b = lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    c = b * 1
    if case == "mean(0)":
        c = c.mean(0)
    elif case == "fill_":
        c = c.fill_(2.0)
    d = c * c
    if case == "c[0:1] = v":
        c[:, 0:1] = b[:, :1] * 2
    elif case == "c[...] = 0-d":
        c[...] = b.sum()
    elif case == "copy_":
        c.copy_(b * 3)
    else:
        with lib.no_grad():
            c.mul_(1)
    with pytest.raises(RuntimeError) as info:
        d.sum().backward()
    return str(info.value).split(";")[0]


@pytest.mark.parametrize("case", ["c[0:1] = v", "c[...] = 0-d", "copy_", "mean(0)", "fill_",
                                  "plain"])
def test_modified_in_place_message_names_the_node_as_pytorch(case, torch):
    # PyTorch drops only "Backward0" (MeanBackward1 is "Mean1"), and names its hand-written
    # nodes with their namespace (torch::autograd::CopySlices)
    assert _stale_saved_value(tg, case) == _stale_saved_value(torch, case)


@pytest.mark.parametrize("other", [2.0, 3, -1.5])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_rsub_of_a_number_is_one_rsub_node(other, dtype, torch):
    # torch.rsub(t, number) is `number - t`: grad_fn RsubBackward1, dtype as the operator's
    x = np.array([1.0, -2.0, 0.5]) if dtype != "int64" else np.array([1, -2, 5])
    ours_in = tg.tensor(x, dtype=getattr(tg, dtype), requires_grad=dtype != "int64")
    their_in = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=dtype != "int64")
    ours, theirs = tg.rsub(ours_in, other), torch.rsub(their_in, other)
    assert ours.dtype == getattr(tg, str(theirs.dtype).split(".")[1])
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy())
    assert _name(ours.grad_fn) == _name(theirs.grad_fn)
    if dtype != "int64":
        (ours * ours).sum().backward()
        (theirs * theirs).sum().backward()
        np.testing.assert_allclose(ours_in.grad.numpy(), their_in.grad.numpy())


# -- x[advanced key] = v: PyTorch's index_put_ (IndexPutBackward0) where its indexing takes no
# view first; CopySlices where an int, a partial slice or None does --------------------------------

def _advanced_write_names(lib):
    keys = [lambda x, v: ([0, 1], v), lambda x, v: (lib.tensor([0, 1]), v),
            lambda x, v: (lib.tensor([True, False, True]), v),
            lambda x, v: (lib.tensor([True, False, True]), 5.0), lambda x, v: (x > 0, 5.0),
            lambda x, v: ((slice(None), [0, 1]), v.t()[:3, :2]),
            lambda x, v: ((Ellipsis, [0, 1]), v.t()[:3, :2]),
            lambda x, v: (([0, 1], [1, 2]), 7.0), lambda x, v: ((0, [0, 1]), v[0, :2]),
            lambda x, v: ((slice(1, None), [0, 1]), 7.0), lambda x, v: ((None, [0, 1]), 7.0)]
    out = []
    for make in keys:
        x = lib.ones(3, 3, requires_grad=True).clone()
        v = lib.full((2, 3), 2.0, requires_grad=True)
        key, value = make(x, v)
        x[key] = value
        (x * x).sum().backward()
        out.append((x.grad_fn.name().replace("torch::autograd::", ""),
                    [n.name().replace("torch::autograd::", "") if n else None
                     for n, _ in x.grad_fn.next_functions],
                    None if v.grad is None else v.grad.tolist()))
    return out


def test_advanced_writes_match_torch(torch):
    assert _advanced_write_names(tg) == _advanced_write_names(torch)


def test_index_put_record_second_order():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = tg.tensor([4.0, 5.0], requires_grad=True)
    y = x * 1
    y[[0, 2]] = v * v
    assert y.grad_fn.name() == "IndexPutBackward0"
    (gv,) = tg.autograd.grad((y * y).sum(), v, create_graph=True)
    assert gv.tolist() == [4 * 4.0 ** 3, 4 * 5.0 ** 3]          # d/dv (v^2)^2 = 4 v^3
    (ggv,) = tg.autograd.grad(gv.sum(), v)
    assert ggv.tolist() == [12 * 4.0 ** 2, 12 * 5.0 ** 2]


def _index_put_outcomes(lib):
    cases = [lambda x, v: x.index_put_((lib.tensor([0, 1]),), v),
             lambda x, v: x.index_put_((lib.tensor([True, False, True]),), v),
             lambda x, v: x.index_put_((lib.tensor([0, 1]), lib.tensor([2, 0])), v[0, :2]),
             lambda x, v: x.index_put_((lib.tensor([0, 0]),), v, accumulate=True),
             lambda x, v: x.index_put_((lib.tensor([0, 1]),), v.double()),
             lambda x, v: x.index_put_((lib.tensor([5]),), v[:1]),
             lambda x, v: x.index_put_((lib.tensor([-1, 0]),), v),
             lambda x, v: lib.index_put(x, (lib.tensor([0, 1]),), v)]
    out = []
    for f in cases:
        x = lib.ones(3, 3, requires_grad=True).clone()
        v = lib.full((2, 3), 2.0, requires_grad=True)
        try:
            r = f(x, v)
            (r * r).sum().backward()
        except (RuntimeError, IndexError) as e:
            out.append(type(e).__name__)
            continue
        out.append((r.grad_fn.name(), [n.name() if n else None for n, _ in r.grad_fn.next_functions],
                    v.grad.tolist(), r.tolist()))
    return out


def test_index_put_is_one_index_put_record_as_torch(torch):
    """index_put_ records IndexPutBackward0 on self's history (it was a CopyBackwards of an
    out-of-place result), accumulate=True too."""
    assert _index_put_outcomes(tg) == _index_put_outcomes(torch)
