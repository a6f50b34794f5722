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
