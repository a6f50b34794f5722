"""Regression tests of sweep42 (forward-mode AD, the autograd graph API, grad accumulation,
dtype handling in backward), each compared against PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

# torch's first dual_level imports decompositions that call the deprecated torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


# ---- copy_ / setitem of a real value into a complex tensor: the value's gradient is the real
# part of the incoming one, with no numpy ComplexWarning leaking out of backward

def _real_into_complex(lib, how, x):
    if how == "copy":
        y = lib.zeros(2, dtype=lib.complex64)
        y.copy_(x)
    elif how == "slice":
        y = lib.zeros(3, dtype=lib.complex64)
        y[1:] = x
    else:
        y = lib.zeros(2, 2, dtype=lib.complex64)
        y[0].copy_(x)
    return (y * (1 + 2j)).abs().sum()


@pytest.mark.parametrize("how", ["copy", "slice", "view_copy"])
def test_real_value_written_into_complex_gets_real_grad_without_warning(how):
    grads = []
    for lib in (torch, tapegrad):
        x = lib.tensor([1.5, -2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _real_into_complex(lib, how, x).backward()
        assert x.grad.dtype == lib.float32
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_real_value_written_into_complex_double_backward_gradcheck():
    x = tapegrad.tensor([1.5, -2.0], dtype=tapegrad.float64, requires_grad=True)

    def f(x):
        y = tapegrad.zeros(3, dtype=tapegrad.complex128)
        y[1:] = x
        return (y * (1 + 2j) * y).real

    assert tapegrad.autograd.gradcheck(f, (x,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tapegrad.autograd.gradgradcheck(f, (x,))


# ---- forward AD: level errors

def test_forward_ad_nested_level_message():
    for lib in (torch, tapegrad):
        fa = lib.autograd.forward_ad
        with fa.dual_level():
            with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
                fa.enter_dual_level()


def test_forward_ad_exit_without_level_message():
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="Dual level must be a positive number"):
            lib.autograd.forward_ad.exit_dual_level()
        with pytest.raises(RuntimeError, match="not the last one that was created"):
            lib.autograd.forward_ad.exit_dual_level(level=0)


# ---- forward AD: an in-place write to a dual tensor made tapegrad's tangents silently stale
# (the source of the tangent sweep moved with the write); it is refused now

def test_forward_ad_inplace_write_to_dual_is_not_silently_wrong():
    fa_t = torch.autograd.forward_ad
    x = torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True)
    with fa_t.dual_level():
        d = fa_t.make_dual(x * 1, torch.tensor([3., 4.], dtype=torch.float64))
        d.mul_(2)
        expected = fa_t.unpack_dual(d * 1).tangent.detach().numpy()
    np.testing.assert_allclose(expected, [6., 8.])

    fa = tapegrad.autograd.forward_ad
    x = tapegrad.tensor([1., 2.], dtype=tapegrad.float64, requires_grad=True)
    with fa.dual_level():
        d = fa.make_dual(x * 1, tapegrad.tensor([3., 4.], dtype=tapegrad.float64))
        y = d * 5
        d.mul_(2)
        for t in (d, d * 1, y):
            with pytest.raises(RuntimeError, match="modified by an in-place operation after "
                                                   "make_dual"):
                fa.unpack_dual(t)
    with fa.dual_level():
        # a write under no_grad (not recorded) is refused as well
        d = fa.make_dual(tapegrad.tensor([1., 2.], dtype=tapegrad.float64),
                         tapegrad.tensor([3., 4.], dtype=tapegrad.float64))
        with tapegrad.no_grad():
            d.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an in-place operation"):
            fa.unpack_dual(d)

    # in-place writes into other tensors, taking a dual's values, keep working
    out = []
    for lib in (torch, tapegrad):
        fa = lib.autograd.forward_ad
        with fa.dual_level():
            d = fa.make_dual(lib.tensor([0.5, 1.5, 2.5], dtype=lib.float64),
                             lib.tensor([1., -2., 3.], dtype=lib.float64))
            y = lib.tensor([2., 3., 4.], dtype=lib.float64)
            y.mul_(d)
            base = lib.zeros(2, 3, dtype=lib.float64)
            base[1].copy_(d.sin())
            out.append([fa.unpack_dual(y).tangent.numpy(), fa.unpack_dual(base).tangent.numpy()])
    for a, b in zip(*out):
        np.testing.assert_allclose(b, a, rtol=1e-12)


# ---- torch.autograd.graph.allow_mutation_on_saved_tensors

def _mutate_saved(lib):
    x = lib.tensor([0.5, 1.0, -2.0], requires_grad=True)
    y = x * 1
    z = (y ** 3).sum() + y.exp().sum()
    e = x.exp()
    y.sin_()
    e.mul_(3)
    (z + e.sum()).backward()
    return x.grad.numpy(), y.detach().numpy(), e.detach().numpy()


def test_allow_mutation_on_saved_tensors_backward_uses_saved_values():
    out = []
    for lib in (torch, tapegrad):
        with lib.autograd.graph.allow_mutation_on_saved_tensors() as ctx:
            out.append(_mutate_saved(lib))
        assert type(ctx).__name__ == "_AllowMutationOnSavedContext"
    for a, b in zip(*out):
        np.testing.assert_allclose(b, a, rtol=1e-6)
    # without the block, backward refuses the modified saved values
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _mutate_saved(lib)


def test_allow_mutation_on_saved_tensors_errors():
    for lib in (torch, tapegrad):
        AM = lib.autograd.graph.allow_mutation_on_saved_tensors
        with AM():
            x = lib.tensor([1., 2.], requires_grad=True)
            z = (x * 1).pow(2).sum()
        with pytest.raises(AssertionError, match="Trying to backward outside of the "
                                                 "'allow_mutation_on_saved_tensors' context"):
            z.backward()
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with AM():
                with AM():
                    pass


def test_allow_mutation_on_saved_tensors_double_backward():
    out = []
    for lib in (torch, tapegrad):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            x = lib.tensor([1., 2.], dtype=lib.float64, requires_grad=True)
            y = x * 1
            g, = lib.autograd.grad((y ** 3).sum(), x, create_graph=True)
            y.mul_(5)
            g.sum().backward()
            out.append(x.grad.numpy())
    np.testing.assert_allclose(out[1], out[0])
