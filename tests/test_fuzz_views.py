"""Regressions of the loud differences the issue-16 fuzz runs found around views and in-place
writes (docs/differences.md, "Fuzz findings"): PyTorch's refusals that tapegrad lacked.

Each case runs the same code under tapegrad and, when it is installed, under torch: both must
raise the same exception type with the same key phrase, or both run and agree.
"""
import numpy as np
import pytest

import tapegrad as tg


def outcome(fn, L):
    """("ok", value) or (exception type name, message)."""
    try:
        value = fn(L)
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return type(e).__name__, str(e)
    if isinstance(value, (tg.Tensor,)) or type(value).__name__ == "Tensor":
        value = value.detach().numpy().tolist()
    return "ok", value


def check(fn, torch, phrase):
    """fn raises RuntimeError with `phrase` under tapegrad (and under torch when given)."""
    kind, msg = outcome(fn, tg)
    assert kind == "RuntimeError" and phrase in msg, (kind, msg)
    if torch is not None:
        tkind, tmsg = outcome(fn, torch)
        assert tkind == "RuntimeError" and phrase in tmsg, (tkind, tmsg)


def check_runs(fn, torch):
    kind, value = outcome(fn, tg)
    assert kind == "ok", value
    if torch is not None:
        tkind, tvalue = outcome(fn, torch)
        assert tkind == "ok", tvalue
        np.testing.assert_allclose(value, tvalue)


@pytest.fixture
def maybe_torch(request):
    try:
        import torch
    except ImportError:
        return None
    return torch


# -- outputs of split / chunk / unbind (program seeds 700003, 701251, 704350, 705105, ...) ------

MULTI = "This view is the output of a function that returns multiple views"


def _graph(L):
    x = L.ones(4, 3, requires_grad=True)
    return x * 2


MULTI_OUTPUT_WRITES = {
    "split_mul_": ("Output 0 of Split is a view and is being modified inplace.",
                   lambda L: _graph(L).split(2)[0].mul_(2)),
    "split_second_output": ("Output 1 of Split is a view and is being modified inplace.",
                            lambda L: _graph(L).split(2)[1].add_(1)),
    "split_one_piece": ("Output 0 of Split is a view", lambda L: _graph(L).split(4)[0].add_(1)),
    "split_sizes": ("Output 0 of SplitWithSizes is a view",
                    lambda L: _graph(L).split([1, 3])[0].add_(1)),
    "chunk_sigmoid_": ("Output 1 of Split is a view", lambda L: _graph(L).chunk(2)[1].sigmoid_()),
    "unbind_add_": ("Output 2 of Unbind is a view", lambda L: _graph(L).unbind(1)[2].add_(1)),
    # (PyTorch names the select it writes through: "Output 0 of Select")
    "unbind_setitem": ("is a view and is being modified inplace",
                       lambda L: _graph(L).unbind(1)[2].__setitem__(0, 5.0)),
    "copy_": ("Output 0 of Split is a view",
              lambda L: _graph(L).split(2)[0].copy_(L.zeros(2, 3))),
    "select_of_output": ("Output 0 of Select is a view and is being modified inplace.",
                         lambda L: _graph(L).split(2)[0][0].add_(1)),
    "view_of_output": ("Output 0 of View is a view", lambda L: _graph(L).split(2)[0].view(-1).add_(1)),
    "leaf_base": ("Output 0 of Split is a view",
                  lambda L: L.ones(4, 3, requires_grad=True).split(2)[0].add_(1)),
    "value_requires_grad": ("A view was created in no_grad mode and is being modified inplace "
                            "with grad mode enabled. " + MULTI,
                            lambda L: L.ones(4, 3).split(2)[0].mul_(
                                L.ones(2, 3, requires_grad=True))),
}


@pytest.mark.parametrize("name", sorted(MULTI_OUTPUT_WRITES))
def test_in_place_write_to_a_multi_output_view_raises(name, maybe_torch):
    phrase, fn = MULTI_OUTPUT_WRITES[name]
    check(fn, maybe_torch, phrase)
    check(fn, maybe_torch, MULTI)


def _base_written_then_view_read(how, read):
    def fn(L):
        x = L.ones(4, 3, requires_grad=True)
        y = x * 2
        p, q = y.split(2)
        v = p[0] if read == "select" else p
        if how == "recorded":
            y.add_(1)
        elif how == "no_grad":
            with L.no_grad():
                y.add_(1)
        elif how == "sibling":
            y[3] = 7.0
        elif how == "own_no_grad":
            with L.no_grad():
                p.add_(1)
        if read == "is_leaf":
            return v.is_leaf
        return (v * 1).sum()
    return fn


@pytest.mark.parametrize("how", ["recorded", "no_grad", "sibling", "own_no_grad"])
@pytest.mark.parametrize("read", ["op", "select", "is_leaf"])
def test_multi_output_view_refused_after_its_storage_is_written(how, read, maybe_torch):
    check(_base_written_then_view_read(how, read), maybe_torch,
          "its base or another view of its base has been modified inplace. " + MULTI)


MULTI_OUTPUT_ALLOWED = {
    # nothing requires grad: the write is not recorded
    "no_grad_base": lambda L: L.ones(4, 3).chunk(2)[0].add_(1).sum(),
    # written under no_grad, the base then read
    "under_no_grad": lambda L: _under_no_grad(L),
    # requires_grad read without the graph; detach() leaves the view's history alone
    "requires_grad_read": lambda L: _requires_grad_after_write(L),
    # a view of a leaf written under no_grad (the optimizer idiom through split)
    "leaf_under_no_grad": lambda L: _leaf_split_no_grad(L),
    # tensor_split / hsplit return ordinary views
    "tensor_split": lambda L: (_graph(L).tensor_split(2)[0].add_(1), 1)[1],
}


def _under_no_grad(L):
    y = _graph(L)
    p, q = y.split(2)
    with L.no_grad():
        p.add_(1)
    return y.sum()


def _requires_grad_after_write(L):
    y = _graph(L)
    p, q = y.split(2)
    with L.no_grad():
        y.add_(1)
    return float(p.requires_grad) + p.detach().sum()


def _leaf_split_no_grad(L):
    x = L.ones(4, 3, requires_grad=True)
    with L.no_grad():
        x.split(2)[0].mul_(3)
    return x.sum()


@pytest.mark.parametrize("name", sorted(MULTI_OUTPUT_ALLOWED))
def test_multi_output_view_writes_pytorch_allows(name, maybe_torch):
    check_runs(MULTI_OUTPUT_ALLOWED[name], maybe_torch)


def test_multi_output_views_without_torch():
    x = tg.ones(4, 3, requires_grad=True)
    p, q = (x * 2).split(2)
    with pytest.raises(RuntimeError, match="Output 1 of Split is a view and is being modified"):
        q.add_(1)
    # the refusal left everything usable: the gradient is the ordinary one
    (p.sum() + q.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 3), 2.0))


# -- views taken in no_grad, and views of them (seeds 701412, 705492) ---------------------------

NO_GRAD_RULE = "Given that this use case is ambiguous and error-prone, it is forbidden."


def _no_grad_view_case(case):
    def fn(L):
        x = L.ones(4, 3, requires_grad=True)
        y = x * 2
        with L.no_grad():
            v = y[0]
        if case == "view_of_it_written":
            w = v.unsqueeze(0)
            w.add_(1)
            return w
        if case == "view_of_it_base_written":
            w = v.unsqueeze(0)
            y.add_(1)
            return w.grad_fn
        if case == "base_written_in_no_grad":
            with L.no_grad():
                y.add_(1)
            return (v + 1).sum()
        if case == "itself_written_in_no_grad":
            with L.no_grad():
                v.add_(1)
            return (v * 2).sum()
        raise AssertionError(case)
    return fn


NO_GRAD_CASES = {
    "view_of_it_written": "Output 0 of Unsqueeze is a view of a view which was created in no_grad "
                          "mode and is being modified inplace with grad mode enabled.",
    "view_of_it_base_written": "Output 0 of Unsqueeze is a view of a view which was created in "
                               "no_grad mode and its base or another view of its base has been "
                               "modified inplace with grad mode enabled.",
    "base_written_in_no_grad": "A view was created in no_grad mode and its base or another view "
                               "of its base has been modified inplace with grad mode enabled.",
    "itself_written_in_no_grad": "A view was created in no_grad mode and its base or another "
                                 "view of its base has been modified inplace",
}


@pytest.mark.parametrize("case", sorted(NO_GRAD_CASES))
def test_no_grad_view_rules(case, maybe_torch):
    check(_no_grad_view_case(case), maybe_torch, NO_GRAD_CASES[case])
    check(_no_grad_view_case(case), maybe_torch, NO_GRAD_RULE)


def test_view_of_a_no_grad_view_keeps_its_grad_fn():
    x = tg.ones(4, 3, requires_grad=True)
    with tg.no_grad():
        v = x[0]
    w = v.unsqueeze(0)
    assert type(w.grad_fn).__name__ == "UnsqueezeBackward0"
    assert w.requires_grad and not w.is_leaf


# -- in-place sources that partly overlap the destination (seeds 700293, 705201, 1000459) --------

OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single memory"


def _v(L):
    return L.arange(8.0).reshape(2, 4)


OVERLAPPING_WRITES = {
    "shifted_add_": lambda L: (lambda a: a[1:].add_(a[:-1]))(L.arange(6.0)),
    "shifted_iadd": lambda L: (lambda a: a[1:].__iadd__(a[:-1]))(L.arange(6.0)),
    "row_times_whole": lambda L: (lambda v: v[0:1].mul_(v))(_v(L)),
    "whole_times_row": lambda L: (lambda v: v.mul_(v[0]))(_v(L)),
    "element_of_itself": lambda L: (lambda v: v.add_(v[0, 1]))(_v(L)),
    "transpose": lambda L: (lambda a: a.mul_(a.t()))(L.arange(4.0).reshape(2, 2)),
    "copy_shifted": lambda L: (lambda a: a[1:].copy_(a[:-1]))(L.arange(6.0)),
    "setitem_shifted": lambda L: (lambda a: a.__setitem__(slice(1, None), a[:-1]))(L.arange(6.0)),
    "size_one_dim_strides": lambda L: (lambda v: v.__setitem__(slice(None, None, 2), v))(
        L.arange(2.0).reshape(1, 2)),
    "mask_value_is_self": lambda L: (lambda a: a.__setitem__(a > 2, a))(L.arange(6.0)),
    "index_value_overlaps": lambda L: (lambda a: a.__setitem__(L.tensor([0, 1]), a[1:3]))(
        L.arange(6.0)),
    "recorded": lambda L: (lambda a: a[1:].add_(a[:-1]))(L.arange(6.0, requires_grad=True) * 1),
    # copy_ compares its source before broadcasting it; setitem a same-shape value as it is
    "copy_broadcast_row": lambda L: (lambda a: a.copy_(a[0]))(L.arange(8.0).reshape(2, 4)),
    "setitem_same_shape_other_strides": lambda L: (lambda a: a[0:1].__setitem__(
        Ellipsis, a[0:2:2]))(L.arange(12.0).reshape(2, 6)),
}


@pytest.mark.parametrize("name", sorted(OVERLAPPING_WRITES))
def test_in_place_source_overlapping_the_destination_raises(name, maybe_torch):
    check(OVERLAPPING_WRITES[name], maybe_torch, OVERLAP)


OVERLAP_ALLOWED = {
    "same_tensor": lambda L: (lambda a: a.mul_(a))(L.arange(6.0)),
    "same_layout_views": lambda L: (lambda a: a.t().add_(a.t()))(L.arange(6.0).reshape(2, 3)),
    "copy_itself": lambda L: (lambda a: a.copy_(a.detach()))(L.arange(6.0)),
    "disjoint_rows": lambda L: (lambda v: (v[0].mul_(v[1]), v)[1])(_v(L)),
    "strided_unchecked": lambda L: (lambda a: (a[::2].add_(a[1::2]), a)[1])(L.arange(6.0)),
    "mask_value_copied": lambda L: (lambda a: (a.__setitem__(a > 2, a[a > 2] * 2), a)[1])(
        L.arange(6.0)),
    "reshaped_alias": lambda L: (lambda a: a.view(2, 3).add_(a.reshape(2, 3)))(L.arange(6.0)),
    # (seed 133: the value's leading size-1 dim is dropped before the layouts are compared)
    "leading_one_value": lambda L: (lambda a: (a.__setitem__(0, a[...]), a)[1])(
        L.arange(6.0).reshape(2, 3)[0:1]),
    # (a broadcast value is expanded first: stride 0, left unchecked as in PyTorch)
    "setitem_broadcast_row": lambda L: (lambda a: (a.__setitem__(Ellipsis, a[3]), a)[1])(
        L.arange(12.0).reshape(4, 3)),
    "setitem_same_layout": lambda L: (lambda a: (a[1:2].__setitem__(Ellipsis, a[1:2]), a)[1])(
        L.arange(12.0).reshape(2, 6)),
}


@pytest.mark.parametrize("name", sorted(OVERLAP_ALLOWED))
def test_in_place_sources_pytorch_allows(name, maybe_torch):
    check_runs(OVERLAP_ALLOWED[name], maybe_torch)


def test_overlapping_source_leaves_the_tensor_unchanged():
    a = tg.arange(6.0)
    with pytest.raises(RuntimeError, match=OVERLAP):
        a[1:] += a[:-1]
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    a.mul_(a)
    assert a.tolist() == [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]


# -- x[index] = value of another dtype (seed 700276) --------------------------------------------

INDEX_PUT = "Index put requires the source and destination dtypes match"


def _put(key, dtype, value_dtype, value_shape=(3,), no_grad=False):
    def fn(L):
        x = L.arange(6.0, dtype=getattr(L, dtype))
        v = L.ones(value_shape, dtype=getattr(L, value_dtype))
        k = key(L, x)
        if no_grad:
            with L.no_grad():
                x[k] = v
        else:
            x[k] = v
        return x
    return fn


INDEX_PUT_REFUSED = {
    "mask_no_grad": _put(lambda L, x: x > 2, "float32", "float64", no_grad=True),
    "mask": _put(lambda L, x: x > 2, "float32", "float64"),
    "index_tensor": _put(lambda L, x: L.tensor([0, 1, 2]), "float32", "float64"),
    "index_list": _put(lambda L, x: [0, 1, 2], "float64", "float32"),
    "one_element_index": _put(lambda L, x: L.tensor([0, 1, 2]), "float32", "float64", (1,)),
    "int_value": _put(lambda L, x: x > 2, "float32", "int64"),
    "empty_index": _put(lambda L, x: [], "float32", "float64", (0,)),
}


@pytest.mark.parametrize("name", sorted(INDEX_PUT_REFUSED))
def test_index_put_of_another_dtype_raises(name, maybe_torch):
    check(INDEX_PUT_REFUSED[name], maybe_torch,
          INDEX_PUT if name != "int_value" else "got Float for the destination and Long")


INDEX_PUT_CASTS = {
    "slice": _put(lambda L, x: slice(0, 3), "float32", "float64"),
    "mask_one_element": _put(lambda L, x: x > 2, "float32", "float64", (1,)),
    "mask_scalar": _put(lambda L, x: x > 2, "float32", "float64", ()),
    "python_bool": _put(lambda L, x: True, "float32", "float64", (6,)),
}


@pytest.mark.parametrize("name", sorted(INDEX_PUT_CASTS))
def test_setitem_keys_that_cast_the_value(name, maybe_torch):
    check_runs(INDEX_PUT_CASTS[name], maybe_torch)
    assert INDEX_PUT_CASTS[name](tg).dtype == tg.float32
