"""Regressions from fuzz25 (session 34): the differential fuzzer's complex and integer programs
(tools/fuzz.py, seeds >= COMPLEX_FROM), each finding as an explicit case checked against
PyTorch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(fn):
    return fn(torch), fn(tapegrad)


# -- integer paths --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_lcm_wraps_then_takes_the_absolute_value_as_pytorch(dtype):
    # SILENT before: an int32 / int64 lcm whose product wraps came out negative (numpy's
    # |a| / gcd * |b| wraps after the absolute value; PyTorch's |a / gcd * b| before it)
    big = {"int8": 127, "int16": 30001, "int32": 1230910003, "int64": 5446287336568797217,
           "uint8": 255}[dtype]
    a = np.array([big, 100, 7, 0, big], dtype=dtype)
    b = np.array([3, 3, 2, 5, 2] if dtype == "uint8" else [3, -3, -2, 5, 2], dtype=dtype)

    def run(lib):
        x, y = lib.tensor(a), lib.tensor(b)
        z = x.clone()
        z.lcm_(y)
        return lib.lcm(x, y), z, lib.lcm(x[0], y[0])

    for t, g in zip(*_both(run)):
        assert str(g.dtype) == str(t.dtype)
        np.testing.assert_array_equal(g.numpy(), t.numpy())


# -- index_put with one mask and a one-element value is PyTorch's masked_fill_ -------------------

MASKED_FILL_PUTS = {
    "float32 0-d into float64": (lambda L: L.float64, lambda L: L.tensor(5.5)),
    "(1, 1) float32 into float64": (lambda L: L.float64, lambda L: L.tensor([[5.5]])),
    "int64 into float32": (lambda L: L.float32, lambda L: L.tensor(3)),
    "float into int64 (truncated)": (lambda L: L.int64, lambda L: L.tensor(2.7)),
    "float into bool": (lambda L: L.bool, lambda L: L.tensor(0.0)),
    "complex with imag 0 into float64": (lambda L: L.float64, lambda L: L.tensor(2 + 0j)),
}


@pytest.mark.parametrize("case", sorted(MASKED_FILL_PUTS))
@pytest.mark.parametrize("fn", ["index_put", "index_put_"])
def test_index_put_of_one_mask_and_one_value_casts_the_value_as_pytorch(case, fn):
    # before: refused with "Index put requires the source and destination dtypes match" (found
    # by the complex programs: c.index_put((mask,), torch.tensor(1j)) of a complex128 c)
    dtype, value = MASKED_FILL_PUTS[case]

    def run(lib):
        x = lib.tensor(np.arange(6.0).reshape(2, 3) - 2).to(dtype(lib))
        mask = lib.tensor([[True, False, True], [False, False, True]])
        if fn == "index_put":
            out = x.index_put((mask,), value(lib))
        else:
            out = x.index_put_((mask,), value(lib))
        return out

    t, g = _both(run)
    assert str(g.dtype) == str(t.dtype)
    np.testing.assert_array_equal(g.numpy(), t.numpy())


def test_index_put_masked_fill_gradient_reaches_the_value_in_its_dtype():
    def run(lib):
        x = lib.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=lib.float64, requires_grad=True)
        v = lib.tensor(2.5, requires_grad=True)                    # float32
        w = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64)
        out = x.index_put((lib.tensor([False, True]),), v)
        (out * w).sum().backward()
        return out, x.grad, v.grad

    (to, tx, tv), (go, gx, gv) = _both(run)
    assert go.grad_fn.name() == to.grad_fn.name()
    np.testing.assert_array_equal(go.detach().numpy(), to.detach().numpy())
    np.testing.assert_array_equal(gx.numpy(), tx.numpy())
    assert str(gv.dtype) == str(tv.dtype) == "torch.float32"
    np.testing.assert_array_equal(gv.numpy(), tv.numpy())


@pytest.mark.parametrize("lib", [torch, tapegrad], ids=["torch", "tapegrad"])
def test_index_put_masked_fill_refusals_as_pytorch(lib):
    x = lib.zeros(2, 3, dtype=lib.float64)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        x.index_put((lib.tensor([1, 0], dtype=lib.uint8),), lib.tensor(5.0))
    with pytest.raises(RuntimeError, match="value cannot be converted to type double"):
        x.index_put((lib.tensor([True, False]),), lib.tensor(2 + 1j))
    # accumulate, two indices, or more than one value: index_put_'s own dtype check
    for args, kw in [(((lib.tensor([True, False]),), lib.tensor(5.0)), {"accumulate": True}),
                     (((lib.tensor([True, False]), lib.tensor([True, False, True])),
                       lib.tensor(5.0)), {}),
                     (((lib.tensor([True, False]),), lib.tensor([5.0, 6.0, 7.0])), {})]:
        with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                               "dtypes match"):
            x.index_put(*args, **kw)


def test_setitem_of_a_complex_number_through_a_mask_into_a_real_tensor_does_not_warn():
    # before: numpy's ComplexWarning leaked out of x[mask] = tensor(2+0j) (PyTorch converts the
    # number silently; an imaginary part is refused)
    import warnings

    def run(lib):
        x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            x[lib.tensor([True, False])] = lib.tensor(2 + 0j)
        return x

    t, g = _both(run)
    np.testing.assert_array_equal(g.numpy(), t.numpy())


# -- conj() of a tensor without history, then a recorded write into the tensor ------------------

@pytest.mark.parametrize("through", ["itself", "reshape", "slice"])
def test_conj_taken_before_a_recorded_write_gets_the_writes_history(through):
    # SILENT before (fuzz 65203012): z.conj() taken while nothing required grad stayed without
    # history after z.mul_(w) with w requiring grad, so w's gradient through the conj was lost
    # (alone: "does not require grad"; beside another loss term: silently missing)
    def run(lib):
        z = lib.tensor(np.array([1 + 2j, 3 - 1j, 0.5j, 2], dtype=np.complex64))
        c = z.conj()
        w = lib.tensor([1.0, -2.0, 3.0, 0.5], requires_grad=True)
        u = lib.tensor([0.5, 1.5, -1.0, 2.0], requires_grad=True)
        target = {"itself": z, "reshape": z.reshape(-1), "slice": z[:]}[through]
        target.mul_(w)
        assert c.requires_grad and c.grad_fn.name() == "ConjBackward0"
        weights = lib.tensor(np.array([1 - 1j, 2, 1j, 3], dtype=np.complex64))
        loss = (c * weights).real.sum() + (u * u).sum()
        loss.backward()
        return c.detach().resolve_conj(), w.grad, u.grad

    for t, g in zip(*_both(run)):
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-6)


def test_conj_taken_under_no_grad_stays_a_no_grad_view_after_the_write():
    for lib in (torch, tapegrad):
        z = lib.tensor(np.array([1 + 2j, 3 - 1j], dtype=np.complex64))
        with lib.no_grad():
            c = z.conj()
        z.mul_(lib.tensor([1.0, 2.0], requires_grad=True))
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
            (c * 2).real.sum().backward()


@pytest.mark.parametrize("fn", ["index_put", "index_put_"])
def test_index_put_checks_the_index_count_before_the_value_dtype(fn):
    # before: a 0-d self with one mask and a value of another dtype raised the dtype mismatch
    # (RuntimeError); PyTorch counts the indices first (IndexError; fuzz 65203603)
    for lib in (torch, tapegrad):
        x = lib.tensor(1.0, dtype=lib.float64)
        with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
            getattr(x, fn)((lib.tensor(True),), lib.tensor(1j))
