"""Regressions found by tools/fuzz_train.py's session-33 loops (GAN gradient penalties, GPT-style
attention, torch.func training) and by the probes written alongside them."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _arr(lib, shape, phase):
    vals = np.sin(np.arange(int(np.prod(shape))) * 0.7 + phase).reshape(shape) * 0.5
    return lib.tensor(vals, dtype=lib.float64)


def _attention_penalty(lib, make_kv, causal):
    """A gradient penalty through scaled_dot_product_attention (3-D operands: PyTorch's math
    kernel, which has a double backward): the first-order gradient taken with
    create_graph=True, then the gradient of the penalty, by the same non-leaf h."""
    F = lib.nn.functional
    x = _arr(lib, (2, 4, 3), 5).requires_grad_(True)
    h = x * 1.5
    k, v = make_kv(lib, h)
    z = F.scaled_dot_product_attention(h, k, v, is_causal=causal)
    g, = lib.autograd.grad(z.pow(2).sum(), x, create_graph=True)
    penalty = (g.norm(2, dim=-1) - 1).pow(2).mean()
    g2, = lib.autograd.grad(penalty, x)
    return z.detach().numpy(), g.detach().numpy(), penalty.detach().numpy(), g2.numpy()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kv", ["same", "derived"])
def test_attention_create_graph_gradient_by_shared_input(kv, causal):
    # SILENT: under create_graph, attention's backward re-ran its composite from the saved
    # q, k, v and asked autograd.grad for each one's gradient: with q, k, v the same tensor
    # (self-attention on h) each got the total (3x), and with k = f(q) q's included the path
    # through k.  The first-order gradient itself was wrong, not just the second order.
    make_kv = {"same": lambda lib, h: (h, h),
               "derived": lambda lib, h: (h * 2.0, _arr(lib, (2, 4, 3), 1))}[kv]
    want = _attention_penalty(torch, make_kv, causal)
    got = _attention_penalty(tg, make_kv, causal)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_attention_create_graph_gradient_finite_differences():
    # float64 finite differences: the gradient taken with create_graph=True of self-attention on
    # one input (q = k = v = sin(x)) is the central difference of its sum, and equals the plain
    # backward's; its second derivative passes gradgradcheck
    F = tg.nn.functional
    fn = lambda t: (lambda h: F.scaled_dot_product_attention(h, h, h, is_causal=True))(t.sin())  # noqa: E731
    x0 = _arr(tg, (2, 3, 2), 4).numpy()
    x = tg.tensor(x0, requires_grad=True)
    graph, = tg.autograd.grad(fn(x).sum(), x, create_graph=True)
    plain, = tg.autograd.grad(fn(x).sum(), x)
    eps, numeric = 1e-6, np.zeros_like(x0)
    for idx in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[idx] = eps
        numeric[idx] = (fn(tg.tensor(x0 + d)).sum().item()
                        - fn(tg.tensor(x0 - d)).sum().item()) / (2 * eps)
    np.testing.assert_allclose(graph.detach().numpy(), numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(graph.detach().numpy(), plain.numpy(), rtol=1e-12, atol=1e-14)
    assert tg.autograd.gradgradcheck(fn, (x,))


def _gan_gp_step(lib):
    """One WGAN-GP discriminator step whose critic is self-attention over a short sequence (the
    loop the fuzzer's GAN draws, with an attention critic): D's parameter gradients."""
    nn, F = lib.nn, lib.nn.functional
    lib.set_default_dtype(lib.float64)
    try:
        proj = nn.Linear(3, 3)
        head = nn.Linear(3, 1)
        with lib.no_grad():
            for i, q in enumerate(list(proj.parameters()) + list(head.parameters())):
                q.copy_(_arr(lib, tuple(q.shape), i + 10))

        def D(s):
            h = proj(s)
            return head(F.scaled_dot_product_attention(h, h, h, is_causal=True).mean(1))

        real, fake = _arr(lib, (3, 4, 3), 1), _arr(lib, (3, 4, 3), 2)
        alpha = lib.linspace(0.2, 0.8, 3).reshape(-1, 1, 1)
        xi = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        gi, = lib.autograd.grad(D(xi).sum(), xi, create_graph=True)
        loss = D(fake).mean() - D(real).mean() + 10.0 * (
            (gi.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
        loss.backward()
        return [loss.detach().numpy()] + [q.grad.numpy() for q in
                                          list(proj.parameters()) + list(head.parameters())]
    finally:
        lib.set_default_dtype(lib.float32)


def test_gan_gradient_penalty_through_self_attention():
    for w, g in zip(_gan_gp_step(torch), _gan_gp_step(tg)):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
