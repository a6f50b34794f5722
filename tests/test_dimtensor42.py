"""Dims given as a 0-d integer tensor, a numpy integer or a one-element tensor, read as PyTorch's
argument parser reads them (dims.pxi: int_param for an `int` dim, symint_param for an element of
an `int[]` or a SymInt), each form compared with torch: values, dtype, shape, return type, or
the exception type where PyTorch refuses the form.

The SILENT bug this guards: torch.max(x, dim=torch.tensor(1)), x.max(t, True) and min's same
forms returned the elementwise maximum of x and the tensor instead of (values, indices)."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _x(lib):
    return lib.tensor([[1., 5., 3.], [4., 2., 6.]])


# Each dim form made for one library (tapegrad or torch): an integer 0-d tensor (int64, int32,
# uint8, negative), the forms PyTorch reads only in some places (a bool 0-d tensor, a
# one-element 1-d tensor), those it never reads as an int (a float tensor), numpy integers and
# a tuple holding a tensor.
FORMS = {
    "t0": lambda lib: lib.tensor(1),
    "t32": lambda lib: lib.tensor(1, dtype=lib.int32),
    "tu8": lambda lib: lib.tensor(1, dtype=lib.uint8),
    "tneg": lambda lib: lib.tensor(-1),
    "tbool": lambda lib: lib.tensor(True),
    "tfloat": lambda lib: lib.tensor(1.),
    "t1d": lambda lib: lib.tensor([1]),
    "np64": lambda lib: np.int64(1),
    "np32": lambda lib: np.int32(1),
    "tuple_t0": lambda lib: (lib.tensor(1),),
    "tuple_t1d": lambda lib: (lib.tensor([1]),),
}

# op name -> f(lib, x, d): the op applied with dim form d
OPS = {
    "max_kw": lambda lib, x, d: lib.max(x, dim=d),
    "max_pos": lambda lib, x, d: lib.max(x, d),
    "max_keepdim": lambda lib, x, d: lib.max(x, d, True),
    "max_keepdim_kw": lambda lib, x, d: lib.max(x, d, keepdim=False),
    "Tensor.max_kw": lambda lib, x, d: x.max(dim=d),
    "Tensor.max_pos": lambda lib, x, d: x.max(d),
    "Tensor.max_keepdim": lambda lib, x, d: x.max(d, True),
    "min_kw": lambda lib, x, d: lib.min(x, dim=d),
    "min_pos": lambda lib, x, d: lib.min(x, d),
    "Tensor.min_keepdim": lambda lib, x, d: x.min(d, False),
    "sum": lambda lib, x, d: lib.sum(x, d),
    "Tensor.sum_kw": lambda lib, x, d: x.sum(dim=d),
    "mean": lambda lib, x, d: x.mean(d),
    "amax": lambda lib, x, d: lib.amax(x, d),
    "amin": lambda lib, x, d: x.amin(dim=d),
    "argmax": lambda lib, x, d: lib.argmax(x, d),
    "argmin": lambda lib, x, d: x.argmin(dim=d),
    "aminmax": lambda lib, x, d: lib.aminmax(x, dim=d),
    "softmax": lambda lib, x, d: lib.softmax(x, d),
    "F.softmax": lambda lib, x, d: lib.nn.functional.softmax(x, dim=d),
    "log_softmax": lambda lib, x, d: x.log_softmax(d),
    "logsumexp": lambda lib, x, d: lib.logsumexp(x, d),
    "std": lambda lib, x, d: x.std(d),
    "var": lambda lib, x, d: lib.var(x, dim=d),
    "var_mean": lambda lib, x, d: lib.var_mean(x, d),
    "std_mean": lambda lib, x, d: lib.std_mean(x, dim=d),
    "norm_p": lambda lib, x, d: lib.norm(x, 2, d),
    "vector_norm": lambda lib, x, d: lib.linalg.vector_norm(x, dim=d),
    "linalg.norm": lambda lib, x, d: lib.linalg.norm(x, dim=d),
    "tensordot": lambda lib, x, d: lib.tensordot(x, x, dims=([d], [d])),
    "any": lambda lib, x, d: (x > 2).any(d),
    "all": lambda lib, x, d: lib.all(x > 2, dim=d),
    "prod": lambda lib, x, d: x.prod(d),
    "count_nonzero": lambda lib, x, d: lib.count_nonzero(x, d),
    "normalize": lambda lib, x, d: lib.nn.functional.normalize(x, dim=d),
    "cosine_similarity": lambda lib, x, d: lib.nn.functional.cosine_similarity(x, x, d),
    "cat": lambda lib, x, d: lib.cat([x, x], d),
    "stack": lambda lib, x, d: lib.stack([x, x], d),
    "squeeze": lambda lib, x, d: x.unsqueeze(1).squeeze(d),
    "unsqueeze": lambda lib, x, d: x.unsqueeze(d),
    "transpose": lambda lib, x, d: x.transpose(d, 0),
    "flip": lambda lib, x, d: x.flip(d),
    "roll": lambda lib, x, d: lib.roll(x, 1, d),
    "cumsum": lambda lib, x, d: x.cumsum(d),
    "gather": lambda lib, x, d: x.gather(d, lib.tensor([[0, 1, 0], [1, 0, 1]])),
    "index_select": lambda lib, x, d: x.index_select(d, lib.tensor([0])),
    "narrow": lambda lib, x, d: x.narrow(d, 0, 1),
    "select": lambda lib, x, d: x.select(d, 0),
    "split": lambda lib, x, d: x.split(1, d),
    "chunk": lambda lib, x, d: x.chunk(2, d),
    "sort": lambda lib, x, d: lib.sort(x, dim=d),
    "topk": lambda lib, x, d: x.topk(1, d),
    "kthvalue": lambda lib, x, d: x.kthvalue(1, d),
    "median": lambda lib, x, d: x.median(d),
    "mode": lambda lib, x, d: lib.mode(x, d),
    "cummax": lambda lib, x, d: x.cummax(d),
    "cummin": lambda lib, x, d: lib.cummin(x, d),
    "logcumsumexp": lambda lib, x, d: x.logcumsumexp(d),
    "index_add": lambda lib, x, d: x.index_add(d, lib.tensor([0]), lib.ones(2, 1)),
    "scatter": lambda lib, x, d: x.scatter(d, lib.tensor([[0, 1, 0], [1, 0, 1]]), 0.),
}


def _outcome(lib, op, form):
    """What op(form) gives under lib: ('value', result) or ('error', exception type name)."""
    try:
        return "value", OPS[op](lib, _x(lib), FORMS[form](lib))
    except (TypeError, IndexError, RuntimeError, ValueError) as e:
        return "error", type(e).__name__


def _assert_same(got, want):
    if isinstance(want, tuple):                         # return types and split's tuples
        assert type(got).__name__ == type(want).__name__
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
        return
    assert str(got.dtype) == str(want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("op", sorted(OPS))
def test_dim_form_as_torch(op, form):
    want_kind, want = _outcome(torch, op, form)
    got_kind, got = _outcome(tapegrad, op, form)
    assert got_kind == want_kind, (got, want)
    if want_kind == "error":
        assert got == want
    else:
        _assert_same(got, want)


def test_max_min_tensor_dim_is_the_reduction_not_the_elementwise_op():
    """The SILENT case itself, with the gradient going to the returned index."""
    x = tapegrad.tensor([[1., 5., 3.], [4., 2., 6.]], requires_grad=True)
    values, indices = tapegrad.max(x, dim=tapegrad.tensor(1))
    assert values.tolist() == [5., 6.] and indices.tolist() == [1, 2]
    values.sum().backward()
    assert x.grad.tolist() == [[0., 1., 0.], [0., 0., 1.]]
    low = x.min(tapegrad.tensor(-1), True)
    assert low.values.tolist() == [[1.], [2.]] and low.indices.tolist() == [[0], [1]]


def test_max_positional_tensor_stays_elementwise():
    """torch.max(x, t) alone by position is max(input, other), even for a 0-d integer t."""
    x = _x(tapegrad)
    assert tapegrad.max(x, tapegrad.tensor(4)).tolist() == [[4., 5., 4.], [4., 4., 6.]]
    assert tapegrad.min(x, other=tapegrad.tensor(2)).tolist() == [[1., 2., 2.], [2., 2., 2.]]


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.max(x, x, True),                 # a non-integer tensor as the dim
    lambda lib, x: lib.max(x, x, keepdim=False),
    lambda lib, x: lib.max(x, dim=lib.tensor(1), other=x),
    lambda lib, x: lib.max(x, other=x, keepdim=True),
])
def test_max_refused_combinations_as_torch(call):
    with pytest.raises(TypeError):
        call(torch, _x(torch))
    with pytest.raises(TypeError):
        call(tapegrad, _x(tapegrad))
