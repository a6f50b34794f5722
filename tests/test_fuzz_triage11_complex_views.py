"""Regressions of the issue-16 fuzz findings of session 11 (seeds from 57 million) and of the
leftovers of session 10 it closed.

Each test compares with PyTorch where it is installed (the `torch` fixture skips cleanly without
it) and checks gradients against float64 finite differences where they are new.
"""
import warnings

import numpy as np
import pytest

import tapegrad as tg


# -- complex views rebased after an in-place write (seeds 56200222, 57000923) -------------------
# .real, .imag, view_as_real and view_as_complex read their base's storage as another dtype.
# They were no views to the autograd core: after an in-place write to their base (or to another
# view of it) their values followed the write but their gradient silently kept the old history.
# Now they are views whose history is regenerated from the base's (an AsStridedBackward0 over the
# storage's real numbers), as PyTorch regenerates a view's grad_fn.

def _base_write_cases(L):
    # name -> (leaf values -> a tensor used after an in-place write that changed its history)
    def real(a):
        z = a * (1 + 1j)
        r = z.real
        z.mul_(1j)
        return r

    def imag(a):
        z = a * (1 + 2j)
        r = z.imag
        z.exp_()
        return r

    def view_as_real(a):
        z = (a * (1 + 2j)).reshape(2, 2)
        r = L.view_as_real(z)
        z.mul_(2j)
        return r

    def view_as_complex(a):
        b = (a * 1.0).reshape(2, 2)
        v = L.view_as_complex(b)
        b.sigmoid_()
        return v

    def real_of_slice(a):
        z = a * (1 - 1j)
        r = z[1:].real
        z.mul_(1j)
        return r

    def slice_of_imag(a):
        z = a * (1 - 1j)
        r = z.imag[1:]
        z.mul_(0.5 + 1j)
        return r

    def write_through_sibling_view(a):
        z = a * (1 + 1j)
        r = z.imag
        z[1:].mul_(2j)                       # a write into another view of z
        return r

    def view_as_real_of_transpose(a):
        z = (a * (1 + 2j)).reshape(2, 2)
        r = L.view_as_real(z.t())
        z.tanh_()
        return r

    def view_as_complex_written_unrecorded(a):
        b = (a * 1.0).reshape(2, 2)
        v = L.view_as_complex(b)
        with L.no_grad():
            b.mul_(3)
        return v * b[:, 0]

    return {"real": real, "imag": imag, "view_as_real": view_as_real,
            "view_as_complex": view_as_complex, "real of a slice": real_of_slice,
            "slice of imag": slice_of_imag, "write through a sibling view": write_through_sibling_view,
            "view_as_real of a transpose": view_as_real_of_transpose,
            "view_as_complex, unrecorded write": view_as_complex_written_unrecorded}


BASE_WRITE_CASES = sorted(_base_write_cases(tg))


def _loss(L, v):
    w = L.tensor(np.linspace(-1.0, 2.0, v.numel()).reshape(v.shape))
    return ((v * w).real if v.is_complex() else v * w).sum()


@pytest.mark.parametrize("case", BASE_WRITE_CASES)
def test_complex_view_after_a_write_as_torch(torch, case):
    def run(L):
        a = L.tensor([1.5, -0.5, 0.25, 2.0], dtype=L.float64, requires_grad=True)
        v = _base_write_cases(L)[case](a)
        _loss(L, v).backward()
        return v.detach().numpy(), a.grad.numpy()

    for mine, theirs in zip(run(tg), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in BASE_WRITE_CASES if "unrecorded" not in c])
def test_complex_view_after_a_write_finite_differences(case):
    # (a write under no_grad is no function of the leaf autograd sees: not checked here)
    fn = _base_write_cases(tg)[case]
    a = tg.tensor([1.5, -0.5, 0.25, 2.0], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda a: _loss(tg, fn(a)), (a,))


@pytest.mark.parametrize("case", ["imag", "view_as_complex", "view_as_real"])
def test_complex_view_after_a_write_second_derivative_as_torch(torch, case):
    def run(L):
        a = L.tensor([1.5, -0.5, 0.25, 2.0], dtype=L.float64, requires_grad=True)
        v = _base_write_cases(L)[case](a)
        (g,) = L.autograd.grad(_loss(L, v * v), a, create_graph=True)
        (g2,) = L.autograd.grad((g * g).sum(), a)
        return g.detach().numpy(), g2.numpy()

    for mine, theirs in zip(run(tg), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10)


def test_complex_views_are_views_of_their_base(torch):
    def run(L):
        z = L.tensor(np.array([1 + 2j, 3 - 1j]), requires_grad=True) * 1.0
        x = L.tensor([[1.0, 2.0]], requires_grad=True) * 1.0
        views = [z.real, z.imag, L.view_as_real(z), L.view_as_complex(x)]
        with L.no_grad():
            no_grad_view = L.view_as_real(z)
        return ([v._base is z for v in views[:3]] + [views[3]._base is x]
                + [no_grad_view.requires_grad, no_grad_view._base is z])

    assert run(tg) == run(torch) == [True] * 4 + [True, True]


# -- writes into a complex view (siblings of 56200222) ------------------------------------------
# PyTorch records a write into .real / view_as_complex / ... as CopySlices on the base.  tapegrad
# cannot yet; where autograd would record it, the write now raises instead of leaving the base's
# gradient silently without it (docs/differences.md).

WRITE_INTO_VIEW_CASES = {
    "real": lambda L, z, b: z.real.mul_(3),
    "imag setitem": lambda L, z, b: z.imag.__setitem__(0, b[0, 0]),
    "view_as_real": lambda L, z, b: L.view_as_real(z).add_(1.0),
    "view_as_complex": lambda L, z, b: L.view_as_complex(b).mul_(1j),
}


@pytest.mark.parametrize("case", sorted(WRITE_INTO_VIEW_CASES))
def test_a_write_into_a_complex_view_is_refused_not_lost(torch, case):
    def run(L):
        a = L.tensor([1.5, -0.5], dtype=L.float64, requires_grad=True)
        z = a * (1 + 1j)
        b = (a * 2.0).reshape(1, 2)
        WRITE_INTO_VIEW_CASES[case](L, z, b)
        return z, b

    run(torch)                                          # PyTorch records it
    with pytest.raises(RuntimeError, match="not supported by tapegrad"):
        run(tg)


def test_a_write_into_a_complex_view_without_grad_reaches_the_base(torch):
    def run(L):
        z = L.tensor(np.array([1 + 2j, 3 - 1j]))
        z.imag.mul_(3)
        L.view_as_real(z)[0, 0] = 7.0
        return z.numpy().tolist()

    assert run(tg) == run(torch)


# -- add / sub / rsub with alpha, and where, on complex values (56100014, 56000544, 56100586,
# 56000775; again 57000038, 57001390) --------------------------------------------------------------
# The alpha check took every non-float result for an integral one ("For integral input tensors,
# argument alpha must not be a floating point number"); a complex Python number as add's other
# (with alpha) or as where's value was refused with TypeError.

ALPHA_CASES = {
    "add, float alpha": lambda L, z, x: L.add(z, z * 1.0, alpha=0.5),
    "sub, real other, float alpha": lambda L, z, x: L.sub(z, x, alpha=2.5),
    "add, real input, complex other": lambda L, z, x: L.add(x, z, alpha=1.5),
    "add, complex alpha": lambda L, z, x: L.add(z, z * 1, alpha=1 + 1j),
    "add, complex number other": lambda L, z, x: L.add(z, 2 + 1j, alpha=2),
    "add, real input, complex number other": lambda L, z, x: L.add(x, 2 + 1j, alpha=2),
    "add_, float alpha": lambda L, z, x: (z * 1).add_(x, alpha=0.5),
    "sub_, float alpha": lambda L, z, x: (z * 1).sub_(z, alpha=0.5),
    "rsub, float alpha": lambda L, z, x: L.rsub(z, x, alpha=2.0),
    "where, complex number other": lambda L, z, x: L.where(x > 0, x, 1 + 2j),
    "where, complex number input": lambda L, z, x: L.where(x > 0, 1j, x),
    "where, two complex numbers": lambda L, z, x: L.where(x > 0, 0.5j, 1 + 2j),
    "where, complex tensor and a number": lambda L, z, x: L.where(x > 0, z, 3.0),
}


@pytest.mark.parametrize("case", sorted(ALPHA_CASES))
def test_complex_alpha_and_where_as_torch(torch, case):
    def run(L):
        z = L.tensor(np.array([1 + 2j, -0.5j]), requires_grad=True)
        x = L.tensor([1.5, -2.0], requires_grad=True)
        r = ALPHA_CASES[case](L, z, x)
        out = [r.detach().numpy(), str(r.dtype)]
        if r.requires_grad:
            (r * L.tensor(np.array([1 - 1j, 2 + 0.5j]))).real.sum().backward()
            out += [None if t.grad is None else t.grad.numpy() for t in (z, x)]
        return out

    mine, theirs = run(tg), run(torch)
    assert mine[1] == theirs[1]
    for a, b in zip(mine[:1] + mine[2:], theirs[:1] + theirs[2:]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("args, message", [
    (("int", 0.5), "For integral input tensors, argument alpha must not be a floating point"),
    (("int", 1j), "For integral input tensors, argument alpha must not be a floating point"),
    (("float", 1j), "For non-complex input tensors, argument alpha must not be a complex"),
])
def test_alpha_refusals_as_torch(torch, args, message):
    kind, alpha = args
    for L in (torch, tg):
        x = L.tensor([1, 2]) if kind == "int" else L.tensor([1.0, 2.0])
        with pytest.raises(RuntimeError, match=message):
            L.add(x, x, alpha=alpha)


# -- view_as_complex of an empty tensor (56000183) ------------------------------------------------
# tapegrad's empty results have zero strides, which view_as_complex's layout checks refused.

@pytest.mark.parametrize("shape", [(0, 2), (3, 0, 2), (0, 0, 2)])
def test_view_as_complex_of_an_empty_tensor_as_torch(torch, shape):
    def run(L):
        x = L.zeros(shape, requires_grad=True)
        v = L.view_as_complex(x * 1.0)
        (v.real.sum() + v.imag.sum()).backward()
        return tuple(v.shape), str(v.dtype), tuple(x.grad.shape)

    assert run(tg) == run(torch)


# -- `v[...] = value` into a stale view without history (56200018) -------------------------------
# PyTorch's indexing returns the view itself for a key of Ellipsis and whole slices, so the write
# is an in-place op on it: a view that had no history when its base came to require grad counts
# as a leaf that requires grad, and the write is refused.  Other keys take a view first and run.

@pytest.mark.parametrize("key", [Ellipsis, (), (Ellipsis,), slice(None), (slice(None),) * 2,
                                 (slice(0, 5), Ellipsis), None, (Ellipsis, None), 0,
                                 (slice(1, None),)])
def test_setitem_whole_key_into_a_stale_view_as_torch(torch, key):
    def run(L):
        v0 = L.tensor(0.5, requires_grad=True)
        base = L.tensor([[-0.5], [0.25]])
        view = base.mT
        base[0:1] = L.tensor([[-0.125]], requires_grad=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                view[key] = v0
        except RuntimeError as e:
            return "RuntimeError", str(e)
        (view * L.tensor([[1.0, 2.0]])).sum().backward()
        return view.detach().numpy().tolist(), v0.grad.item()

    assert run(tg) == run(torch)
