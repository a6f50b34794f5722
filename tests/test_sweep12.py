"""Regressions found by the twelfth argument-form sweep (in-place writes into views, writes
through .data and .detach(), results that alias their input) against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _raises_like(fn):
    """fn(lib) raises the same exception type, with the same first line, in both libraries."""
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(want.type) as got:
        fn(tg)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


# -- a leaf made from a view: PyTorch checks its base, a leaf, and names the view ---------------

@pytest.mark.parametrize("write", [
    lambda a: a.mul_(2),                    # the leaf itself is a view of arange's result
    lambda a: a[1:].add_(1),                # a view of it
    lambda a: a.t().zero_(),
    lambda a: a.diagonal().copy_(a.new_ones(3)),
    lambda a: a.select(1, 2).fill_(3.0),
])
def test_write_into_leaf_made_from_view_names_view_of_leaf(write):
    _raises_like(lambda lib: write(lib.arange(12.).reshape(3, 4).requires_grad_()))


def test_leaf_made_from_view_still_writable_in_no_grad_and_differentiable():
    def run(lib):
        a = lib.arange(12.).reshape(3, 4).requires_grad_()
        with lib.no_grad():
            a[1:].mul_(2)
        (a * a).sum().backward()
        return a.grad.numpy()
    np.testing.assert_array_equal(run(tg), run(torch))


# -- .data = tensor: the dtype must still be able to carry the gradient -------------------------

@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_set_data_to_non_float_refused_when_requires_grad(dtype):
    def run(lib):
        a = lib.ones(3, requires_grad=True)
        a.data = lib.zeros(3, dtype=getattr(lib, dtype))
    _raises_like(run)


def test_set_data_to_non_float_allowed_without_grad_and_complex_allowed_with():
    def run(lib):
        b = lib.ones(3)
        b.data = lib.zeros(2, dtype=lib.int64)
        a = lib.ones(3, requires_grad=True)
        a.data = lib.zeros(3, dtype=lib.complex64)
        return str(b.dtype), str(a.dtype), a.requires_grad
    assert run(tg) == run(torch)


# -- resize_ to the same shape is no write --------------------------------------------------------

def test_resize_version_bumps_only_on_shape_change():
    def run(lib):
        a = lib.zeros(3)
        seen = []
        for shape in [(3,), (5,), (5,), (2, 2), (2, 2)]:
            a.resize_(*shape)
            seen.append(a._version)
        return seen
    assert run(tg) == run(torch)


# -- out= that partly shares memory with an input: refused, as PyTorch does -----------------------

def _overlap_refused(lib):
    return ("unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location")


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.exp(x[:4], out=x[2:6]),
    lambda lib, x: lib.neg(x[2:6], out=x[:4]),
    lambda lib, x: lib.add(x[:4], 1, out=x[2:6]),
    lambda lib, x: lib.mul(x[:4], x[1:5], out=x[2:6]),
    lambda lib, x: lib.pow(x[:4], 2, out=x[2:6]),
    lambda lib, x: lib.clamp(x[:4], 0, 3, out=x[2:6]),
    lambda lib, x: lib.where(x[:4] > 1, x[:4], x[1:5], out=x[2:6]),
    lambda lib, x: lib.cat([x[:2], x[1:3]], out=x[2:6]),
    lambda lib, x: lib.cumsum(x[:4], 0, out=x[2:6]),
    lambda lib, x: lib.index_select(x, 0, lib.tensor([0, 1, 2]), out=x[1:4]),
    lambda lib, x: lib.sort(x[:4], out=(x[1:5], lib.zeros(4, dtype=lib.int64))),
    lambda lib, x: lib.max(x[:4].view(2, 2), 1, out=(x[2:4], lib.zeros(2, dtype=lib.int64))),
])
def test_out_partly_overlapping_an_input_is_refused(call):
    def run(lib):
        call(lib, lib.arange(8.))
    _raises_like(run)
    with pytest.raises(RuntimeError, match=_overlap_refused(tg)):
        run(tg)


@pytest.mark.parametrize("call, same_values", [
    (lambda lib, x: lib.exp(x, out=x), True),                   # the same elements: elementwise
    (lambda lib, x: lib.add(x[:4], 1, out=x[4:]), True),        # separate memory
    (lambda lib, x: lib.exp(x[::2], out=x[1::2]), True),        # interleaved, not dense: unchecked
    # reductions leave it unchecked (the values then depend on the order of the writes)
    (lambda lib, x: lib.sum(x.view(2, 4), 0, out=x[:4]), False),
])
def test_out_overlap_allowed_where_pytorch_allows_it(call, same_values):
    def run(lib):
        x = lib.arange(8.)
        call(lib, x)
        return x.numpy()
    got, want = run(tg), run(torch)
    if same_values:
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.cat([x], out=x),
    lambda lib, x: lib.index_select(x, 0, lib.arange(8), out=x),
    lambda lib, x: lib.gather(x, 0, lib.arange(8), out=x),
    lambda lib, x: lib.take(x, lib.arange(8), out=x),
])
def test_out_that_is_the_input_refused_by_joins_and_gathers(call):
    _raises_like(lambda lib: call(lib, lib.arange(8.)))


# -- index and scatter writes whose source shares memory with the target -------------------------

@pytest.mark.parametrize("write", [
    lambda lib, x: x[:6].index_copy_(0, lib.tensor([0, 1]), x[1:3]),
    lambda lib, x: x[:6].index_copy_(0, lib.arange(6), x[:6]),          # all of it, same layout
    lambda lib, x: x.index_copy_(0, lib.arange(12), x),
    lambda lib, x: x[:6].index_add_(0, lib.tensor([0, 1]), x[1:3], alpha=2),
    lambda lib, x: x[:6].scatter_(0, lib.tensor([0, 1]), x[1:3]),
    lambda lib, x: x[:6].scatter_add_(0, lib.tensor([0, 1]), x[1:3]),
    lambda lib, x: x[:6].scatter_reduce_(0, lib.tensor([0, 1]), x[1:3], "sum"),
    lambda lib, x: x[:6].index_put_((lib.tensor([0, 1]),), x[1:3], accumulate=True),
])
def test_index_and_scatter_writes_refuse_a_source_sharing_memory(write):
    _raises_like(lambda lib: write(lib, lib.arange(1., 13.)))


def test_index_and_scatter_writes_from_separate_memory_unchanged():
    def run(lib):
        x = lib.arange(1., 13.)
        x[:6].index_copy_(0, lib.tensor([0, 1]), x[8:10])
        x[:6].scatter_add_(0, lib.tensor([2, 2]), x[10:12])
        x[:6].index_put_((lib.tensor([4]),), x[7:8], accumulate=True)
        return x.numpy().tolist()
    assert run(tg) == run(torch)


# -- the legacy constructors read an ndarray as torch.from_numpy does (SILENT before: a copy) ------

@pytest.mark.parametrize("ctor, dtype", [
    ("Tensor", np.float32), ("FloatTensor", np.float32), ("DoubleTensor", np.float64),
    ("LongTensor", np.int64), ("BoolTensor", np.bool_),
])
def test_legacy_constructor_shares_an_array_of_its_dtype(ctor, dtype):
    def run(lib):
        a = np.arange(6).astype(dtype).reshape(2, 3)[:, 1:]
        t = getattr(lib, ctor)(a)
        t[0, 0] = 0
        t.view(-1) if t.is_contiguous() else None
        return a.tolist(), t.stride(), t._version
    assert run(tg) == run(torch)


@pytest.mark.parametrize("ctor", ["Tensor", "DoubleTensor", "LongTensor", "HalfTensor"])
def test_legacy_constructor_converts_another_dtype_into_a_copy_keeping_its_layout(ctor):
    def run(lib):
        a = np.arange(6, dtype=np.int32).reshape(2, 3).T
        t = getattr(lib, ctor)(a)
        t[0, 0] = 7
        return a.tolist(), str(t.dtype), t.stride(), t.tolist()
    assert run(tg) == run(torch)


def test_legacy_constructor_of_shared_array_is_a_differentiable_leaf():
    def run(lib):
        a = np.arange(3, dtype=np.float32)
        t = lib.Tensor(a).requires_grad_()
        (t * t).sum().backward()
        return t.grad.tolist(), t.is_leaf
    assert run(tg) == run(torch)


# -- requires_grad_ on a result of the graph, accumulation into an expanded .grad ----------------

def test_requires_grad_true_on_a_non_leaf_is_a_no_op_as_in_pytorch():
    def run(lib):
        a = lib.ones(2, requires_grad=True)
        x = (a * 2)[1:]
        assert x.requires_grad_(True) is x
        x.sum().backward()
        return a.grad.tolist(), x.is_leaf
    assert run(tg) == run(torch)


@pytest.mark.parametrize("write", [
    lambda x: x.requires_grad_(False),
    lambda x: setattr(x, "requires_grad", True),
    lambda x: setattr(x, "requires_grad", False),
])
def test_requires_grad_changes_on_a_non_leaf_still_refused(write):
    _raises_like(lambda lib: write(lib.ones(2, requires_grad=True) * 2))


def test_backward_into_an_expanded_grad_refused():
    def run(lib):
        a = lib.ones(2, 3, requires_grad=True)
        a.grad = lib.ones(1, 3).expand(2, 3)
        (a * 2).sum().backward()
    _raises_like(run)


# -- Module conversions keep the grad object, as PyTorch's param.grad.data = ... -----------------

@pytest.mark.parametrize("convert", [
    lambda m, lib: m.double(),
    lambda m, lib: m.half(),
    lambda m, lib: m.to(lib.float64),
    lambda m, lib: m._apply(lambda t: t.double()),
])
def test_module_conversion_keeps_the_grad_object(convert):
    def run(lib):
        m = lib.nn.Linear(2, 2)
        m.weight.grad = lib.ones(2, 2)
        g = m.weight.grad
        convert(m, lib)
        return m.weight.grad is g, str(g.dtype), g.tolist()
    assert run(tg) == run(torch)
