"""Issue 19 (replay speed), the MLP training step: the transposed layout of linear's product
(matmul_layout.pxi) moves its result with the SSE2 block transpose (kernels.c tg_transpose_4), and
the replayed step stays bit-identical to eager and equal to PyTorch's."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core


# shapes straddling the 4 x 4 blocks and the 32 x 32 tiles of the transpose, both ways round
TRANSPOSE_SHAPES = [(1, 3, 1), (2, 5, 3), (4, 8, 4), (5, 7, 9), (7, 3, 33), (31, 6, 65),
                    (33, 10, 31), (64, 17, 256), (130, 3, 5), (67, 129, 37)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,k,m", TRANSPOSE_SHAPES)
def test_transposed_product_is_a_copy_of_the_blas_result(n, k, m, dtype):
    rng = np.random.default_rng(n * 1000 + k * 10 + m)
    A = rng.standard_normal((n, k)).astype(dtype)
    W = rng.standard_normal((m, k)).astype(dtype)
    got = _core._matmul_transposed(A, W)
    want = np.ascontiguousarray(np.matmul(W, A.T).T)
    assert got.shape == (n, m) and got.dtype == dtype and got.flags.c_contiguous
    assert got.tobytes() == want.tobytes()          # moved bit for bit
    np.testing.assert_allclose(got, A @ W.T, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-5 if dtype == np.float32 else 1e-12)


def _mlp(lib, params, dtype):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(40, 72), nn.ReLU(), nn.Linear(72, 10))
    if dtype == np.float64:
        model = model.double()
    with lib.no_grad():
        for (name, p) in model.named_parameters():
            p.copy_(lib.from_numpy(params[name].astype(dtype)))
    return model


def _params(rng):
    return {"0.weight": rng.uniform(-0.2, 0.2, (72, 40)), "0.bias": rng.uniform(-0.2, 0.2, 72),
            "2.weight": rng.uniform(-0.1, 0.1, (10, 72)), "2.bias": rng.uniform(-0.1, 0.1, 10)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_replayed_mlp_step_bit_identical_to_eager_and_equal_to_torch(dtype):
    """The benchmark's step at a smaller size (its first layer's product, 96 x 40 x 72, large
    enough for the layout probing), over several SGD steps with changing inputs: compiled ==
    eager bit for bit (loss, every .grad, every updated parameter), both == PyTorch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    params = _params(rng)
    eager = _mlp(tg, params, dtype)
    comp = _mlp(tg, params, dtype)
    ref = torch.nn.Sequential(torch.nn.Linear(40, 72), torch.nn.ReLU(), torch.nn.Linear(72, 10))
    ref = ref.to(torch.float64 if dtype == np.float64 else torch.float32)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            p.copy_(torch.from_numpy(params[name].astype(dtype)))
    loss_fn = tg.nn.CrossEntropyLoss()
    fwd = tg.compile(lambda a, b: loss_fn(comp(a), b))
    opts = [tg.optim.SGD(eager.parameters(), lr=0.05), tg.optim.SGD(comp.parameters(), lr=0.05)]
    topt = torch.optim.SGD(ref.parameters(), lr=0.05)
    for step in range(6):
        x = rng.standard_normal((96, 40)).astype(dtype)
        y = rng.integers(0, 10, 96)
        for o in opts:
            o.zero_grad()
        le = loss_fn(eager(tg.from_numpy(x)), tg.from_numpy(y))
        le.backward()
        lc = fwd(tg.from_numpy(x), tg.from_numpy(y))
        lc.backward()
        topt.zero_grad()
        lt = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y))
        lt.backward()
        assert lc.item() == le.item()
        for (name, pe), pc, pt in zip(eager.named_parameters(), comp.parameters(),
                                      ref.parameters()):
            assert pc.grad.dtype == pe.grad.dtype == (tg.float64 if dtype == np.float64
                                                      else tg.float32)
            assert pc.grad.numpy().tobytes() == pe.grad.numpy().tobytes(), (step, name)
            np.testing.assert_allclose(pc.grad.numpy(), pt.grad.numpy(), rtol=1e-4, atol=1e-6)
        for o in opts:
            o.step()
        topt.step()
        for pe, pc, pt in zip(eager.parameters(), comp.parameters(), ref.parameters()):
            assert pc.detach().numpy().tobytes() == pe.detach().numpy().tobytes()
            np.testing.assert_allclose(pc.detach().numpy(), pt.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)
        np.testing.assert_allclose(lc.item(), lt.item(), rtol=1e-5)
    assert "replayed" in fwd.explain()
