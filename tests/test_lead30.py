"""The lead's own fixes of session 30, each checked against torch."""
import numpy as np
import pytest

import tapegrad as tg


# -- group norm is one node with PyTorch's closed-form backward (fuzz 65006598) -----------------

def _one_value_groups_then_normalize(lib, dtype):
    """x used twice: through group norm of one-value groups (output 0, whose gradient is 0)
    followed by normalize of those zeros (an upstream gradient ~1e12), and directly."""
    F = lib.nn.functional
    x = lib.tensor(np.array([0.3473537266254425, -0.18674172461032867], dtype=dtype)
                   .reshape(2, 1, 1), requires_grad=True)
    normalised = F.normalize(F.group_norm(x, 1).logsumexp(-2), dim=1)
    direct = lib.transpose_copy(x, 0, -1)
    weights = lib.tensor(np.array([1.0016157627105713, -0.5772937536239624], dtype=dtype)
                         .reshape(direct.shape))
    ((direct * weights).sum() + (normalised * lib.tensor([[-0.8, 1.1]], dtype=x.dtype)).sum()
     ).backward()
    return x.grad.flatten().tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_group_norm_gradient_keeps_the_other_uses_contribution(dtype, torch):
    # SILENT before: the composed group norm added +g and -g (~1e14) into x's adjoint as separate
    # terms, and the direct use's gradient (~1) added between them was rounded away: x.grad 0
    got = _one_value_groups_then_normalize(tg, dtype)
    want = _one_value_groups_then_normalize(torch, dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got, [1.0016157627105713, -0.5772937536239624], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,groups,affine", [((2, 4, 3), 2, 2), ((3, 6, 2, 2), 3, 1),
                                                 ((1, 4, 5), 4, 0), ((4, 8), 2, 2),
                                                 ((2, 6, 3, 2, 2), 6, 1)])
def test_group_norm_first_and_second_derivatives_match_torch(shape, groups, affine, dtype, torch):
    rng = np.random.default_rng(len(shape) * 10 + groups)
    x, gy = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    w, b = (rng.standard_normal(shape[1]).astype(dtype) for _ in range(2))
    results = []
    for lib in (torch, tg):
        leaves = [lib.tensor(x, requires_grad=True)]
        if affine:
            leaves.append(lib.tensor(w, requires_grad=True))
        if affine == 2:
            leaves.append(lib.tensor(b, requires_grad=True))
        y = lib.nn.functional.group_norm(leaves[0], groups, *leaves[1:])
        grads = lib.autograd.grad(y, leaves, lib.tensor(gy), create_graph=True)
        penalty = sum((g * g).sum() for g in grads) + (y * y * y).sum()
        second = lib.autograd.grad(penalty, leaves)
        results.append([type(y.grad_fn).__name__, [g.requires_grad for g in grads]]
                       + [t.detach().numpy() for t in (y, *grads, *second)])
    tol = 2e-4 if dtype == "float32" else 1e-10
    assert results[0][:2] == results[1][:2]
    for want, got in zip(results[0][2:], results[1][2:]):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_group_norm_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(3)
    args = tuple(tg.tensor(rng.standard_normal(s), requires_grad=True)
                 for s in ((2, 4, 3), (4,), (4,)))
    fn = lambda x, w, b: tg.nn.functional.group_norm(x, 2, w, b)     # noqa: E731
    assert tg.autograd.gradcheck(fn, args)
    assert tg.autograd.gradgradcheck(fn, args)


# -- a node post-hook sees nn.Linear's gradients in PyTorch's order -------------------------------

def _linear_hook_view(lib, batch_shape):
    lib.manual_seed(0)
    m = lib.nn.Linear(2, 4)
    with lib.no_grad():
        m.weight.copy_(lib.arange(8.0).reshape(4, 2) / 8)
        m.bias.copy_(lib.arange(4.0) / 4)
    x = lib.ones(*batch_shape, 2, requires_grad=True)
    seen = []

    def hook(module, grad_input, grad_output):
        seen.append([None if g is None else (tuple(g.shape), g.sum().item()) for g in grad_input])
        # a replacement in the same (PyTorch's) order: the bias's gradient doubled, the input's
        # zeroed
        if len(grad_input) == 3:
            return (grad_input[0] * 2, grad_input[1] * 0, grad_input[2])

    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        m.register_backward_hook(hook)
        (m(x) * lib.arange(4.0)).sum().backward()
    return seen, m.bias.grad.tolist(), m.weight.grad.tolist(), x.grad.tolist()


@pytest.mark.parametrize("batch_shape", [(3,), ()])
def test_deprecated_module_backward_hook_on_linear_sees_torchs_grad_input(batch_shape, torch):
    # before: (input, weight, bias) in the record's order, the weight's not transposed, so a
    # hook indexing grad_input[0] as the bias (as the old tutorials do) read the input's
    assert _linear_hook_view(tg, batch_shape) == _linear_hook_view(torch, batch_shape)


# -- what differs per CPU follows PyTorch on this CPU -------------------------------------------

def test_cpu_capability_is_torchs(torch):
    # before: always "DEFAULT"
    assert tg.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()


@pytest.mark.parametrize("n", [17, 100, 1000, 30_000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sums_and_arange_are_atens_bit_for_bit_on_this_cpu(n, dtype, torch):
    # before: on an AVX-512 CPU tapegrad summed in 64-byte vectors, ATen (whose sum kernel has
    # no AVX-512 build) in 32-byte ones: the last bit differed.  (Up to PyTorch's grain of
    # 32,768 values: past it both split by thread count, which other tests change in torch.)
    a = np.random.default_rng(n).standard_normal(n).astype(dtype)
    assert tg.tensor(a).sum().numpy().tobytes() == torch.tensor(a).sum().numpy().tobytes()
    assert tg.arange(-1, 1, 2 / n, dtype=getattr(tg, dtype)).numpy().tobytes() == \
        torch.arange(-1, 1, 2 / n, dtype=getattr(torch, dtype)).numpy().tobytes()
