"""Regressions found running quantum / tensor-network scripts (statevector simulators, variational
circuits, density matrices, MPS) under tapegrad (proxy task proxybu)."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def test_real_imag_grad_fn_is_select():
    # A VQC's expectation <psi|O|psi>.real prints as tensor(..., grad_fn=<SelectBackward0>) in
    # PyTorch (real/imag are view_as_real(z).select(-1, k) there).
    for lib in (torch, tapegrad):
        psi = lib.tensor([0.6 + 0.0j, 0.0 + 0.8j], requires_grad=True)
        z = lib.vdot(psi, psi)
        assert z.real.grad_fn.name() == "SelectBackward0"
        assert z.imag.grad_fn.name() == "SelectBackward0"
        assert lib.real(z).grad_fn.name() == "SelectBackward0"
        assert "grad_fn=<SelectBackward0>" in repr(z.real)
    # the gradients through real / imag are unchanged
    grads = []
    for lib in (torch, tapegrad):
        psi = lib.tensor([0.6 + 0.1j, -0.2 + 0.8j], dtype=lib.complex128, requires_grad=True)
        h = lib.tensor([[1.0, 0.5j], [-0.5j, -1.0]], dtype=lib.complex128)
        e = lib.vdot(psi, h @ psi)
        (e.real * 2 + e.imag * 3).backward()
        grads.append(psi.grad.detach().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_svd_phase_dependent_loss_message():
    for lib in (torch, tapegrad):
        a = lib.tensor([[1 + 1j, 2], [0, 1j]], dtype=lib.complex128, requires_grad=True)
        u, s, vh = lib.linalg.svd(a)
        with pytest.raises(RuntimeError, match=r"^svd_backward: The singular vectors in the "
                                               r"complex case are specified up to"):
            u.real.sum().backward()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")    # (torch.func's jit.script use)
def test_func_transforms_through_real_imag():
    # torch.func.hessian / jacfwd of a variational energy <psi(t)|H|psi(t)>.real run vmap over
    # the complex intermediates: .real / .imag / .mH of a batched tensor
    def make_energy(lib):
        Hm = lib.tensor([[0.5, 1.0 - 0.5j], [1.0 + 0.5j, -0.5]], dtype=lib.complex128)

        def energy(t):
            psi = lib.stack([lib.cos(t[0]) + 0j, lib.exp(1j * t[1]) * lib.sin(t[0])])
            return lib.vdot(psi, Hm @ psi).real + psi.imag.sum()
        return energy

    t0 = [0.3, 0.7]
    res = {}
    for lib in (torch, tapegrad):
        t = lib.tensor(t0, dtype=lib.float64)
        e = make_energy(lib)
        res[lib.__name__] = (lib.func.hessian(e)(t).numpy(), lib.func.jacfwd(e)(t).numpy(),
                             lib.func.jacrev(lambda x: lib.exp(1j * x).imag)(t).numpy(),
                             lib.vmap(lambda a: (a.mH @ a).real)(
                                 lib.tensor([[[1j, 2.0]], [[1.0, -1j]]])).numpy())
    for a, b in zip(res["torch"], res["tapegrad"]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
    # the Hessian by finite differences of the gradient (float64)
    e = make_energy(tapegrad)
    g = tapegrad.func.grad(e)
    h = 1e-6
    fd = np.stack([(g(tapegrad.tensor([t0[0] + h * (i == 0), t0[1] + h * (i == 1)],
                                      dtype=tapegrad.float64)).numpy()
                    - g(tapegrad.tensor([t0[0] - h * (i == 0), t0[1] - h * (i == 1)],
                                        dtype=tapegrad.float64)).numpy()) / (2 * h)
                   for i in range(2)])
    np.testing.assert_allclose(res["tapegrad"][0], fd, rtol=1e-6, atol=1e-7)


def test_normal_complex_mean_and_result_dtype():
    for lib in (torch, tapegrad):
        lib.manual_seed(0)
        # normal(Tensor, Tensor) keeps the mean's dtype (no promotion with std's)
        assert lib.normal(lib.zeros(2), lib.ones(2, dtype=lib.float64)).dtype == lib.float32
        assert lib.normal(lib.zeros(2, dtype=lib.float64), lib.ones(2)).dtype == lib.float64
        assert lib.normal(lib.zeros(2, dtype=lib.cfloat),
                          lib.ones(2, dtype=lib.float64)).dtype == lib.complex64
        # complex normal about a complex mean: each part of variance std^2 / 2
        x = lib.normal(lib.full((100000,), 1 + 2j, dtype=lib.complex128), 2.0)
        assert x.dtype == lib.complex128
        np.testing.assert_allclose([x.real.mean().item(), x.imag.mean().item()], [1, 2],
                                   atol=0.05)
        np.testing.assert_allclose([x.real.var().item(), x.imag.var().item()], [2, 2], rtol=0.05)
        # the number overload with a complex dtype: mean on both parts
        y = lib.normal(1.0, 2.0, (100000,), dtype=lib.cfloat)
        assert y.dtype == lib.complex64
        np.testing.assert_allclose([y.real.mean().item(), y.imag.mean().item()], [1, 1],
                                   atol=0.05)
        np.testing.assert_allclose(y.real.var().item(), 2, rtol=0.05)
        with pytest.raises(RuntimeError, match="standard deviation to be non-complex"):
            lib.normal(lib.zeros(2, dtype=lib.cfloat), lib.ones(2, dtype=lib.cfloat))
        with pytest.raises(RuntimeError, match="automatic differentiation for outputs with "
                                               "complex dtype"):
            lib.normal(lib.zeros(2, dtype=lib.cfloat, requires_grad=True), 1.0)
        with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
            lib.normal(lib.zeros(2, dtype=lib.int64), 1.0)


def test_adadelta_complex_parameter_bitwise(torch_bits):
    # PyTorch's adadelta adds the weight decay and the step to a complex parameter with complex
    # arithmetic (alpha as alpha + 0j): a zero real part of -2j stayed -0.0 here (printed
    # "-0.0000-1.9903j" against PyTorch's "0.0000-1.9903j"), and other parts differed in the
    # last bit (fma on the real views)
    out = {}
    for lib in (torch, tapegrad):
        rows = []
        for dt in (lib.complex64, lib.complex128):
            for wd in (0.0, 0.1):
                p = lib.nn.Parameter(lib.tensor([1 + 1j, -2j, 0.3 - 0.7j, 1e-3 + 2.5j], dtype=dt))
                opt = lib.optim.Adadelta([p], lr=1.0, weight_decay=wd)
                for _ in range(4):
                    opt.zero_grad()
                    (p.abs() ** 2 + p.real * lib.tensor([0.3, 0.0, 0.3, 0.3])).sum().backward()
                    opt.step()
                rows.append(lib.view_as_real(p.detach()).numpy().copy())
        out[lib.__name__] = rows
    for a, b in zip(out["torch"], out["tapegrad"]):
        np.testing.assert_array_equal(np.signbit(b), np.signbit(a))
        torch_bits.assert_equal(b, a)
