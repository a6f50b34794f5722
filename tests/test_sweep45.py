"""Regression tests of sweep45 (module hooks, PackedSequence, load_state_dict, functional_call,
torch.testing), each compared against PyTorch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _dbl(lib):
    class Dbl(lib.nn.Module):
        def forward(self, X):
            return X * 2

        def right_inverse(self, X):
            return X / 2
    return Dbl


def _parametrized_call(lib):
    m = lib.nn.Linear(2, 2, bias=False)
    lib.nn.utils.parametrize.register_parametrization(m, "weight", _dbl(lib)())
    W = lib.tensor([[1., 2.], [7., 1.]], requires_grad=True)
    out = lib.func.functional_call(m, {"weight": W}, (lib.tensor([[1., 10.]]),))
    out.sum().backward()
    return out, m.parametrizations.weight.original.grad


def test_functional_call_replaces_parametrized_tensor():
    # SILENT before: the value given for a parametrized name was ignored (shadowed by the
    # parametrization's property), forward ran with the module's own weight.
    out, g = _parametrized_call(tapegrad)
    tout, tg = _parametrized_call(torch)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy())
    np.testing.assert_allclose(out.detach().numpy(), [[21., 17.]])
    np.testing.assert_allclose(g.numpy(), tg.numpy())


def test_functional_call_parametrization_without_right_inverse():
    for lib in (tapegrad, torch):
        class Sym(lib.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)
        m = lib.nn.Linear(2, 2)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Sym())
        with pytest.raises(RuntimeError, match="does not implement right_inverse"):
            lib.func.functional_call(m, {"weight": lib.ones(2, 2)}, (lib.ones(1, 2),))


def _writeback(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("running", lib.zeros(2))

        def forward(self, x):
            self.running = self.running + x
            return self.running * 1
    m = M()
    d = {"running": lib.tensor([1., 3.])}
    lib.func.functional_call(m, d, (lib.tensor([1., 2.]),))
    return d["running"], m.running


def test_functional_call_writes_reassigned_buffer_back_into_dict():
    # SILENT before: the caller's dict kept the old tensor where PyTorch stores forward's new one
    (d, own), (td, town) = _writeback(tapegrad), _writeback(torch)
    np.testing.assert_array_equal(d.numpy(), td.numpy())
    np.testing.assert_array_equal(d.numpy(), [2., 5.])
    np.testing.assert_array_equal(own.numpy(), town.numpy())


def _with_attr(lib, value_kind):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 3
            self.lin = lib.nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x) * self.k
    m = M()
    if value_kind == "nontensor_attr":
        return lib.func.functional_call(m, {"k": lib.ones(2)}, (lib.ones(1, 2),))
    if value_kind == "module_value":
        return lib.func.functional_call(m, {"lin": lib.nn.Linear(2, 2)}, (lib.ones(1, 2),))
    if value_kind == "list_value":
        return lib.func.functional_call(m, {"lin.weight": [[1., 2.], [3., 4.]]},
                                        (lib.ones(1, 2),))
    return lib.func.functional_call(m, {"nope.weight": lib.ones(2, 2)}, (lib.ones(1, 2),))


@pytest.mark.parametrize("kind,exc,phrase", [
    ("nontensor_attr", TypeError, r"attribute `k`: 3 is not an instance of torch.Tensor"),
    ("module_value", TypeError, r"is not an instance of torch.Tensor"),
    ("list_value", TypeError, r"\[\[1.0, 2.0\], \[3.0, 4.0\]\] is not an instance of torch.Tensor"),
    ("missing_path", AttributeError, r"M has no attribute `nope`"),
])
def test_functional_call_refuses_what_is_not_a_tensor(kind, exc, phrase):
    with pytest.raises(exc, match=phrase):
        _with_attr(torch, kind)
    with pytest.raises(exc, match=phrase):
        _with_attr(tapegrad, kind)


# -- torch.testing ---------------------------------------------------------------------------------

def _raises_alike(call, exc, phrase):
    for lib in (torch, tapegrad):
        with pytest.raises(exc, match=phrase):
            call(lib)


def _sparse(lib, indices, values):
    return lib.sparse_coo_tensor(lib.tensor(indices), lib.tensor(values), (3, 3))


def test_assert_close_sparse_coo_compares_entries():
    for lib in (torch, tapegrad):
        lib.testing.assert_close(_sparse(lib, [[0, 2], [1, 2]], [1., 2.]),
                                 _sparse(lib, [[0, 2], [1, 2]], [1., 2.]))
        lib.testing.assert_close(_sparse(lib, [[0], [0]], [3.]),
                                 lib.tensor([[3., 0, 0], [0, 0, 0], [0, 0, 0]]),
                                 check_layout=False)
    _raises_alike(lambda lib: lib.testing.assert_close(_sparse(lib, [[0, 1], [0, 1]], [1., 2.]),
                                                       _sparse(lib, [[0], [0]], [1.])),
                  AssertionError, "number of specified values in sparse COO tensors does not "
                                  "match: 2 != 1")
    _raises_alike(lambda lib: lib.testing.assert_close(_sparse(lib, [[0, 1], [0, 1]], [1., 2.]),
                                                       _sparse(lib, [[0, 1], [0, 2]], [1., 2.])),
                  AssertionError, "Sparse COO indices are not equal")
    _raises_alike(lambda lib: lib.testing.assert_close(_sparse(lib, [[0, 1], [0, 1]], [1., 2.]),
                                                       _sparse(lib, [[0, 1], [0, 1]], [1., 2.5])),
                  AssertionError, r"Sparse COO values are not close!\n\nMismatched elements: "
                                  r"1 / 2 \(50.0%\)\nGreatest absolute difference: 0.5 at index "
                                  r"\(1,\)")


def test_assert_allclose_deprecated_with_own_tolerances():
    for lib in (torch, tapegrad):
        with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated"):
            # float32 default rtol 1e-4 (assert_close's is 1.3e-6); NaNs equal; dtypes promoted
            lib.testing.assert_allclose(lib.tensor([1., float("nan")]),
                                        [1.00005, float("nan")])
            lib.testing.assert_allclose(lib.tensor([1.]), lib.tensor([1], dtype=lib.int64))
    with pytest.warns(FutureWarning):
        _raises_alike(lambda lib: lib.testing.assert_allclose(lib.tensor([1., 2.]),
                                                              lib.tensor([1., 3.])),
                      AssertionError, r"Greatest relative difference: 0.33333\d* at index \(1,\) "
                                      r"\(up to 0.0001 allowed\)")
        _raises_alike(lambda lib: lib.testing.assert_allclose(lib.tensor([1.]), lib.tensor([2.]),
                                                              msg="hello"),
                      AssertionError, "^hello$")


def test_make_tensor_complex_and_memory_format():
    for lib in (torch, tapegrad):
        t = lib.testing.make_tensor((50,), dtype=lib.complex64, device="cpu", low=-1, high=1,
                                    requires_grad=True)
        assert t.dtype == lib.complex64 and t.requires_grad
        assert bool((t.real.abs() <= 1).all()) and bool((t.imag.abs() <= 1).all())
        assert bool((t.imag != 0).any())
        c = lib.testing.make_tensor((2, 3, 4, 5), dtype=lib.float32, device="cpu",
                                    memory_format=lib.channels_last)
        assert c.stride() == (60, 1, 15, 3)
        n = lib.testing.make_tensor((2, 3), dtype=lib.float32, device="cpu", noncontiguous=True)
        assert n.stride() == (6, 2) and n.storage_offset() == 1
    _raises_alike(lambda lib: lib.testing.make_tensor((2, 3, 4, 5), dtype=lib.float32,
                                                      device="cpu", noncontiguous=True,
                                                      memory_format=lib.channels_last),
                  ValueError, "`noncontiguous` and `memory_format` are mutually exclusive")


@pytest.mark.parametrize("kwargs,phrase", [
    (dict(dtype="uint8", low=-10, high=-2),
     r"interval specified by `low` and `high` is \[-10, -2\), but torch.uint8 only supports "
     r"\[0, 256\)"),
    (dict(dtype="int8", low=200, high=300), r"torch.int8 only supports \[-128, 128\)"),
    (dict(dtype="float32", low=float("nan")), r"cannot be NaN, but got low=nan and high=9"),
])
def test_make_tensor_bound_errors(kwargs, phrase):
    kwargs = dict(kwargs)
    name = kwargs.pop("dtype")
    _raises_alike(lambda lib: lib.testing.make_tensor((2,), dtype=getattr(lib, name),
                                                      device="cpu", **kwargs),
                  ValueError, phrase)


# -- sorting empty tensors, pad_sequence's input checks --------------------------------------------

@pytest.mark.parametrize("shape,kwargs", [
    ((0,), dict(descending=True)), ((0,), {}), ((0, 3), dict(dim=0, descending=True)),
    ((3, 0), dict(dim=1)),
])
def test_sort_of_empty_tensor(shape, kwargs):
    # PyTorch's unstable sort order (std::sort's ties) reshaped an empty array to (-1, 0)
    x = tapegrad.ones(shape, requires_grad=True)
    values, indices = tapegrad.sort(x, **kwargs)
    tv, ti = torch.sort(torch.ones(shape), **kwargs)
    assert tuple(values.shape) == tuple(tv.shape) and tuple(indices.shape) == tuple(ti.shape)
    assert indices.dtype == tapegrad.int64
    values.sum().backward()
    assert tuple(x.grad.shape) == shape


@pytest.mark.parametrize("shape,k,dim", [((0, 3), 0, 0), ((3, 0), 0, 1)])
def test_topk_of_empty_tensor(shape, k, dim):
    v, i = tapegrad.topk(tapegrad.ones(shape), k, dim=dim)
    tv, ti = torch.topk(torch.ones(shape), k, dim=dim)
    assert tuple(v.shape) == tuple(tv.shape) and tuple(i.shape) == tuple(ti.shape)


def test_pack_padded_sequence_empty_batch_unsorted():
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="Cannot pack empty tensors"):
            lib.nn.utils.rnn.pack_padded_sequence(lib.ones(3, 0), [], enforce_sorted=False)


@pytest.mark.parametrize("make,exc,phrase", [
    (lambda lib: 5, RuntimeError,
     r"pad_sequence: Expected iterable for input sequences, but got arg of type: <class 'int'>"),
    (lambda lib: ["ab"], TypeError, "expected Tensor as element 0 in argument 0, but got str"),
    (lambda lib: [lib.ones(1), 3], TypeError,
     "expected Tensor as element 1 in argument 0, but got int"),
])
def test_pad_sequence_refuses_non_tensors(make, exc, phrase):
    for lib in (torch, tapegrad):
        with pytest.raises(exc, match=phrase):
            lib.nn.utils.rnn.pad_sequence(make(lib))


def _member_reference(lib):
    class Module(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = lib.nn.Linear(1, 1)

        def forward(self, x):
            return self.l1(x), tuple(self.parameters())
    m = Module()
    extra = lib.nn.Parameter(lib.tensor([1.]))
    w = lib.tensor([[2.]])
    out, params = lib.func.functional_call(m, {"l1.weight": w, "l1.extra": extra},
                                           (lib.tensor([[0.5]]),))
    return [p is w for p in params], [p is extra for p in params], hasattr(m.l1, "extra")


def test_functional_call_new_parameter_attribute_is_registered_during_the_call():
    # A Parameter given under a new name is set through Module.__setattr__ (so forward's
    # self.parameters() sees it, as in PyTorch) and deleted afterwards.
    assert _member_reference(tapegrad) == _member_reference(torch)
    assert _member_reference(tapegrad) == ([True, False, False], [False, False, True], False)


@pytest.mark.parametrize("rtol,atol,phrase", [
    (-1., 0., "rtol must be greater than or equal to zero, but got -1$"),
    (0., -1.5, "atol must be greater than or equal to zero, but got -1.5$"),
])
def test_negative_tolerances_refused(rtol, atol, phrase):
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match=phrase):
            lib.isclose(lib.ones(1), lib.ones(1), rtol=rtol, atol=atol)
    with pytest.raises(RuntimeError):
        torch.testing.assert_close(torch.ones(1), torch.ones(1), rtol=rtol, atol=atol)
    with pytest.raises(RuntimeError, match=phrase):
        tapegrad.testing.assert_close(tapegrad.ones(1), tapegrad.ones(1), rtol=rtol, atol=atol)
