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


# ---- gradcheck / gradgradcheck options and failures

def _x(lib, dtype="float64"):
    return lib.tensor([[0.3, -0.7, 1.2], [0.5, 0.1, -0.4]], dtype=getattr(lib, dtype),
                      requires_grad=True)


def test_gradcheck_forward_ad_with_complex_values():
    # the forward-mode Jacobian had one column per complex output element where the numerical
    # one has two (numpy's broadcast ValueError), and missed a complex input's imaginary
    # direction
    cases = [
        (lambda a: a * a.conj() + a.exp(), "complex128"),
        (lambda a: a.abs(), "complex128"),
        (lambda a: a * (1 + 2j), "float64"),
    ]
    for f, dtype in cases:
        for lib in (torch, tapegrad):
            x = lib.tensor([1 + 1j, 2 - 0.5j] if dtype == "complex128" else [0.3, -0.7],
                           dtype=getattr(lib, dtype), requires_grad=True)
            assert lib.autograd.gradcheck(f, (x,), check_forward_ad=True)


def _wrong_conj_jvp(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, g):
            return g.conj() * 2
    return F


def test_gradcheck_forward_ad_catches_wrong_complex_jvp():
    for lib in (torch, tapegrad):
        x = lib.tensor([1 + 1j, 2 - 0.5j], dtype=lib.complex128, requires_grad=True)
        F = _wrong_conj_jvp(lib)
        assert not lib.autograd.gradcheck(F.apply, (x,), check_forward_ad=True,
                                          check_backward_ad=False, raise_exception=False)
        with pytest.raises(RuntimeError, match="Jacobian computed with forward mode mismatch"):
            lib.autograd.gradcheck(F.apply, (x,), check_forward_ad=True, check_backward_ad=False)


def test_gradcheck_batched_checks():
    F = tapegrad.nn.functional
    w = tapegrad.tensor([[0.1, 0.2, 0.3]], dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda a, w: F.linear(a, w).softmax(-1) * a,
                                       (_x(tapegrad), w), check_batched_grad=True,
                                       check_forward_ad=True, check_batched_forward_grad=True)
    assert tapegrad.autograd.gradgradcheck(lambda a: (a ** 3).sum(1) * a[:, 0], (_x(tapegrad),),
                                           check_batched_grad=True)
    for lib in (torch, tapegrad):
        assert lib.autograd.gradcheck(lambda a, b: a @ b.t(), (_x(lib), _x(lib)),
                                      check_batched_grad=True)


def test_gradcheck_option_assertions():
    for lib in (torch, tapegrad):
        gc, ggc = lib.autograd.gradcheck, lib.autograd.gradgradcheck
        x = _x(lib)
        with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or "
                                                 "check_backward_ad"):
            gc(lambda a: a, (x,), check_backward_ad=False)
        with pytest.raises(AssertionError, match="check_batched_grad=True requires "
                                                 "check_backward_ad"):
            gc(lambda a: a, (x,), check_batched_grad=True, check_backward_ad=False,
               check_forward_ad=True)
        with pytest.raises(AssertionError, match="check_batched_forward_grad=True requires "
                                                 "check_forward_ad"):
            gc(lambda a: a, (x,), check_batched_forward_grad=True)
        with pytest.raises(AssertionError, match="Expected at least one of check_fwd_over_rev"):
            ggc(lambda a: a, (x,), check_rev_over_rev=False)
        with pytest.raises(AssertionError, match="check_undefined_grad=True requires "
                                                 "check_rev_over_rev"):
            ggc(lambda a: a, (x,), check_rev_over_rev=False, check_fwd_over_rev=True)
        assert ggc(lambda a: a ** 3, (x,), check_rev_over_rev=False, check_fwd_over_rev=True,
                   check_undefined_grad=False)
        assert ggc(lambda a: a ** 3, (x,), gen_non_contig_grad_outputs=True)


def _wrong_jvp_of_backward(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return G.apply(g)

        @staticmethod
        def jvp(ctx, t):
            return t * 2

    class G(lib.autograd.Function):
        @staticmethod
        def forward(ctx, g):
            return g * 2

        @staticmethod
        def backward(ctx, gg):
            return gg * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 5                # wrong: the backward's forward derivative is 2
    return F


def test_gradgradcheck_fwd_over_rev_is_checked():
    # gradgradcheck ignored check_fwd_over_rev: a wrong jvp of the backward passed
    for lib in (torch, tapegrad):
        F = _wrong_jvp_of_backward(lib)
        assert lib.autograd.gradgradcheck(F.apply, (_x(lib),))
        assert not lib.autograd.gradgradcheck(F.apply, (_x(lib),), check_fwd_over_rev=True,
                                              raise_exception=False)


def test_gradcheck_bad_inputs_and_outputs():
    for lib in (torch, tapegrad):
        x = lib.tensor([1.], dtype=lib.float64).expand(3).requires_grad_()
        with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
            lib.autograd.gradcheck(lambda a: a.exp(), (x,))
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool "
                                               "tensors is not supported"):
            lib.autograd.gradcheck(lambda a: a > 0, (_x(lib),))


# ---- backward / grad: a complex grad_output for a real output (or the reverse) is refused; it
# lost its imaginary part silently (with numpy's ComplexWarning)

@pytest.mark.parametrize("out_dtype,grad_dtype", [("float32", "complex64"),
                                                  ("complex64", "float32")])
def test_backward_complex_grad_output_for_real_output_is_refused(out_dtype, grad_dtype):
    for lib in (torch, tapegrad):
        x = lib.ones(2, dtype=getattr(lib, out_dtype), requires_grad=True)
        g = lib.ones(2, dtype=getattr(lib, grad_dtype))
        match = (rf"Mismatch in dtype: grad_output\[0\] has a dtype of torch.{grad_dtype} and "
                 rf"output\[0\] has a dtype of torch.{out_dtype}")
        with pytest.raises(RuntimeError, match=match):
            (x * 2).backward(g)
        with pytest.raises(RuntimeError, match=match):
            lib.autograd.grad(x * 2, x, g)
    # other dtype mismatches are cast, as PyTorch does
    x = tapegrad.ones(2, requires_grad=True)
    (x * 2).backward(tapegrad.ones(2, dtype=tapegrad.float64))
    assert x.grad.dtype == tapegrad.float32


def test_make_dual_inside_vmap_raises_runtime_error():
    for lib in (torch, tapegrad):
        fa = lib.autograd.forward_ad
        x = lib.tensor([0.3, -0.7], dtype=lib.float64)

        def jvp(tangent):
            with fa.dual_level():
                return fa.unpack_dual(fa.make_dual(x, tangent).sin()).tangent
        with pytest.raises(RuntimeError, match="Batching rule not implemented for "
                                               "aten::_make_dual"):
            lib.vmap(jvp)(lib.ones(2, 2, dtype=lib.float64))


# ---- grad_fn._saved_* of repeat, tril/triu, index_select (missing: AttributeError)

def test_saved_attributes_of_repeat_tril_index_select():
    out = []
    for lib in (torch, tapegrad):
        m = lib.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        r = m.repeat(2, 1, 3)
        lo, up = m.tril(), m.triu(1)
        s = m.index_select(1, lib.tensor([1, 1, 0]))
        out.append((r.grad_fn._saved_repeats, tuple(r.grad_fn._saved_self_sym_sizes),
                    lo.grad_fn._saved_diagonal, up.grad_fn._saved_diagonal,
                    s.grad_fn._saved_dim, s.grad_fn._saved_index.tolist(),
                    str(s.grad_fn._saved_index.dtype).split(".")[-1],
                    tuple(s.grad_fn._saved_self_sym_sizes)))
    assert out[1] == out[0]
