"""Regression tests from the proxy task on neural-field and tensor-craft scripts (session 32):
storage printing and the byte-wise casts of an untyped storage (tisnik's PyTorch examples)."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("make", [
    lambda m: type(m.tensor([1, 2]).untyped_storage()),
    lambda m: type(m.tensor([1.0]).storage()),
    lambda m: m.UntypedStorage,
    lambda m: m.TypedStorage,
])
def test_storage_classes_print_under_torch_names(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(make(tapegrad)) == repr(make(torch))


@pytest.mark.parametrize("method", ["int", "half", "float", "double", "long", "short", "char",
                                    "byte", "bool"])
@pytest.mark.parametrize("values, dtype", [([10], "int64"), ([1, 0, 300], "int16"),
                                           ([1.5, -2.0], "float32")])
def test_untyped_storage_casts_each_byte(method, values, dtype):
    ours = tapegrad.tensor(values, dtype=getattr(tapegrad, dtype)).untyped_storage()
    theirs = torch.tensor(values, dtype=getattr(torch, dtype)).untyped_storage()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = getattr(ours, method)(), getattr(theirs, method)()
    assert str(got.dtype) == str(want.dtype)
    assert got.size() == want.size() == ours.nbytes()
    np.testing.assert_array_equal(np.array(got.tolist()), np.array(want.tolist()))
    assert str(got) == str(want)


def test_untyped_storage_cast_is_a_copy():
    t = tapegrad.tensor([7, 8], dtype=tapegrad.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copy = t.untyped_storage().byte()
    assert copy.data_ptr() != t.untyped_storage().data_ptr()
    copy[0] = 99
    assert t.tolist() == [7, 8]
