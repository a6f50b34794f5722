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
