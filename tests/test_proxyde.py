"""What the proxy of multi-task / gradient-manipulation scripts (PCGrad, GradNorm, MGDA, CAGrad,
uncertainty weighting, MMoE, ...) found: clip_grad_norm_ over gradients of several dtypes.

PyTorch norms each gradient in its own dtype and stacks the norms, so the total norm's dtype is
the promotion of the gradients' (float16 with float32 gives float32), not the first gradient's;
tapegrad took the first's, so a float16 gradient listed first made the total float16 and scaled
the float32 gradients by a float16-rounded coefficient (a silent wrong result)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg

_VALUES = ([3.1, 4.7], [0.3, 12.9])


def _params(lib, dtypes):
    params = []
    for values, dtype in zip(_VALUES, dtypes):
        p = lib.nn.Parameter(lib.zeros(len(values), dtype=getattr(lib, dtype)))
        p.grad = lib.tensor(values, dtype=getattr(lib, dtype))
        params.append(p)
    return params


def _clip(lib, dtypes, norm_type):
    params = _params(lib, dtypes)
    total = lib.nn.utils.clip_grad_norm_(params, 1.0, norm_type=norm_type)
    grads = [p.grad.float().numpy() if p.grad.dtype == lib.bfloat16 else p.grad.numpy()
             for p in params]
    total_value = total.float().item()
    return str(total.dtype).split(".")[-1], total_value, grads


@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float16", "float32"),
                                    ("float16", "float64"), ("bfloat16", "float16"),
                                    ("float16", "float16"), ("bfloat16", "bfloat16")])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_total_dtype_and_scaled_gradients_match_torch(dtypes, norm_type):
    torch = pytest.importorskip("torch")
    want_dtype, want_total, want_grads = _clip(torch, dtypes, norm_type)
    got_dtype, got_total, got_grads = _clip(tg, dtypes, norm_type)
    assert got_dtype == want_dtype
    assert got_total == pytest.approx(want_total, rel=1e-6)
    for got, want in zip(got_grads, want_grads):
        assert got.dtype == want.dtype
        # the same rounding: a float16 gradient is scaled by the float32 coefficient and rounded
        # once; a float32 one is not scaled by a float16-rounded coefficient
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_float32_gradient_after_a_float16_one_is_scaled_by_the_float32_coefficient():
    # (no torch needed: the coefficient is 1 / (||(||g16||, ||g32||)|| + 1e-6) in float32)
    params = _params(tg, ("float16", "float32"))
    n16 = np.float16(np.linalg.norm(np.float16([3.1, 4.7]).astype(np.float32)))
    n32 = np.linalg.norm(np.float32([0.3, 12.9]))
    total = np.float32(np.linalg.norm(np.float32([n16, n32])))
    got = tg.nn.utils.clip_grad_norm_(params, 1.0)
    assert got.dtype == tg.float32 and got.item() == pytest.approx(float(total), rel=1e-7)
    coef = np.float32(1.0) / (total + np.float32(1e-6))
    np.testing.assert_allclose(params[1].grad.numpy(), np.float32([0.3, 12.9]) * coef, rtol=1e-7)


def test_get_total_norm_promotes_across_dtypes():
    total = tg.nn.utils.get_total_norm([tg.tensor([3.0, 4.0]),
                                        tg.tensor([12.0], dtype=tg.float64)])
    assert total.dtype == tg.float64 and total.item() == 13.0


def test_clip_errors_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, tg):
        p = lib.nn.Parameter(lib.zeros(0))
        p.grad = lib.zeros(0)
        q = lib.nn.Parameter(lib.ones(2))
        q.grad = lib.ones(2)
        with pytest.raises(RuntimeError, match="cannot compute the infinity norm on an empty"):
            lib.nn.utils.clip_grad_norm_([p, q], 1.0, norm_type="inf")
        assert lib.nn.utils.clip_grad_norm_([p, q], 1.0).item() == pytest.approx(math.sqrt(2))
        with pytest.raises(RuntimeError, match="the 1-th Tensor is not"):
            lib.nn.utils.get_total_norm([lib.ones(2), None])
        with pytest.raises(AttributeError, match="no attribute 'device'"):
            lib.nn.utils.get_total_norm([None, lib.ones(2)])
        with pytest.raises(TypeError, match=r"clamp\(\) received an invalid combination of "
                                            r"arguments - got \(float, max=float\)"):
            lib.nn.utils.clip_grads_with_norm_([q], 1.0, 10.0)


def test_per_task_clipping_in_a_shared_model_matches_torch():
    # the multi-task idiom: each task's loss backward, its head clipped, then the trunk
    torch = pytest.importorskip("torch")

    def run(lib):
        trunk = lib.nn.Linear(3, 4)
        heads = [lib.nn.Linear(4, 1), lib.nn.Linear(4, 2)]
        with lib.no_grad():
            for i, p in enumerate([*trunk.parameters(), *heads[0].parameters(),
                                   *heads[1].parameters()]):
                p.copy_(lib.linspace(-1.0, 1.0, p.numel()).reshape(p.shape) * (1 + i))
        x = lib.linspace(-1.0, 1.0, 15).reshape(5, 3)
        norms = []
        for k, head in enumerate(heads):
            loss = head(lib.tanh(trunk(x))).pow(2).mean() * (k + 1)
            loss.backward()
            norms.append(lib.nn.utils.clip_grad_norm_(head.parameters(), 0.5).item())
        norms.append(lib.nn.utils.clip_grad_norm_(trunk.parameters(), 1.0, norm_type=1).item())
        return norms, trunk.weight.grad.numpy().copy()

    want_norms, want_grad = run(torch)
    got_norms, got_grad = run(tg)
    np.testing.assert_allclose(got_norms, want_norms, rtol=1e-5)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-7)
