"""Sums in PyTorch's order (src/tapegrad/cascade_sum.c): sum, mean, a broadcast operand's
gradient and nll_loss print PyTorch's floats bit for bit, eager and replayed alike.

numpy's pairwise order differs from PyTorch's cascade in the last place after ~10 float32 values,
so a mean-reduced loss printed a digit apart; every case below differed before the cascade.
"""
import itertools

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64"]


def same_bits(t, g):
    t = t.detach().numpy()
    g = np.asarray(g.detach().numpy())
    assert t.dtype == g.dtype and t.shape == g.shape
    assert t.tobytes() == g.tobytes(), f"max difference {np.abs(t - g).max()}"


def values(rng, shape, dtype):
    # spread over magnitudes, so that the order of the additions shows in the rounding
    a = rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_sum_and_mean_match_pytorch_bit_for_bit(dtype):
    rng = np.random.default_rng(0)
    # below a vector, whole vectors with tails, past the cascade's level sizes, and past
    # PyTorch's grain size (its big sums split into one chunk per thread)
    lengths = list(range(0, 80)) + [255, 256, 257, 1000, 4097, 32768, 32769, 100003]
    for n in lengths:
        a = values(rng, n, dtype)
        for fn in ("sum", "mean"):
            same_bits(getattr(torch.from_numpy(a), fn)(), getattr(tapegrad.from_numpy(a), fn)())


SHAPES_DIMS = [
    ((7, 9), [0, 1, (0, 1)]),
    ((64, 10), [0, 1]),
    ((100, 3), [0, 1]),
    ((33, 70), [0, 1, -1]),
    ((4, 5, 33), [0, 1, 2, (0, 1), (1, 2), (0, 2)]),
    ((8, 1, 40), [0, 2, (0, 1), (1, 2), (0, 2)]),
    ((3, 20000), [1]),
    ((2, 3, 4, 5), [1, (1, 2), (2, 3), (0, 1, 2), (0, 2), (1, 3), (0, 2, 3), (0, 1, 3)]),
    # a batch of images' per-channel statistics, as a hand-written batch norm takes them
    ((16, 8, 5, 5), [(0, 2, 3)]),
    ((64, 3, 32, 32), [(0, 2, 3)]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dims", SHAPES_DIMS)
def test_sum_and_mean_over_dims_match_pytorch(dtype, shape, dims):
    rng = np.random.default_rng(1)
    a = values(rng, shape, dtype)
    for dim, keepdim in itertools.product(dims, (False, True)):
        for fn in ("sum", "mean"):
            same_bits(getattr(torch.from_numpy(a), fn)(dim, keepdim=keepdim),
                      getattr(tapegrad.from_numpy(a), fn)(dim, keepdim=keepdim))


def test_sum_of_negative_zeros_is_positive_zero_as_in_pytorch():
    for lib in (torch, tapegrad):
        assert np.signbit(lib.tensor([-0.0, -0.0]).sum().item()) == 0
        assert np.signbit(lib.tensor([[-0.0], [-0.0]]).sum(0).numpy()).tolist() == [False]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,cols", [(5, 3), (16, 10), (17, 33), (64, 100), (300, 7)])
def test_broadcast_operand_gradient_matches_pytorch(dtype, rows, cols):
    """A bias's gradient is the column sum of the output's: PyTorch's sum_to order."""
    rng = np.random.default_rng(2)
    x, g = values(rng, (rows, cols), dtype), values(rng, (rows, cols), dtype)
    grads = []
    for lib in (torch, tapegrad):
        b = lib.zeros(cols, dtype=getattr(lib, dtype), requires_grad=True)
        c = lib.zeros(rows, 1, dtype=getattr(lib, dtype), requires_grad=True)
        (lib.tensor(x) + b + c).backward(lib.tensor(g))
        grads.append((b.grad, c.grad))
    same_bits(grads[0][0], grads[1][0])
    same_bits(grads[0][1], grads[1][1])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [1, 4, 15, 16, 17, 64, 257, 1000])
def test_nll_loss_matches_pytorch_with_ignored_targets_and_weights(dtype, batch):
    """nll_loss has its own eight-level cascade; ignored targets neither add nor carry."""
    rng = np.random.default_rng(3)
    classes = 7
    logp = values(rng, (batch, classes), dtype)
    target = rng.integers(0, classes, batch)
    ignored = target.copy()
    ignored[::3] = -100
    weight = rng.uniform(0.5, 2.0, classes).astype(dtype)
    for reduction, use_weight, tgt in itertools.product(("mean", "sum"), (False, True),
                                                        (target, ignored)):
        out = []
        for lib in (torch, tapegrad):
            kwargs = {"reduction": reduction}
            if use_weight:
                kwargs["weight"] = lib.tensor(weight)
            out.append(lib.nn.functional.nll_loss(lib.tensor(logp), lib.tensor(tgt), **kwargs))
        same_bits(*out)


@pytest.mark.parametrize("dtype", DTYPES)
def test_replayed_sums_equal_eager_and_pytorch(dtype):
    rng = np.random.default_rng(4)

    def step(lib, x, w, b):
        y = x * w + b
        return y.sum() + y.mean(0).sum() + (y * y).mean() + y.mean((0, 2)).sum()

    compiled = tapegrad.compile(lambda x, w, b: step(tapegrad, x, w, b))
    for _ in range(3):
        x, w, b = (values(rng, (37, 5, 10), dtype), values(rng, (37, 5, 10), dtype),
                   values(rng, 10, dtype))
        results = []
        for run in ("torch", "eager", "compiled"):
            lib = torch if run == "torch" else tapegrad
            xs, ws, bs = (lib.tensor(v, requires_grad=True) for v in (x, w, b))
            out = (step(lib, xs, ws, bs) if run != "compiled" else compiled(xs, ws, bs))
            out.backward()
            results.append((out, ws.grad, bs.grad))
        for k in range(3):
            same_bits(results[0][k], results[1][k])
            same_bits(results[0][k], results[2][k])


def test_big_sums_do_not_depend_on_the_thread_count():
    a = values(np.random.default_rng(5), 300001, "float32")
    before = tapegrad.get_num_threads()
    try:
        sums = []
        for n in (1, 2, 3):
            tapegrad.set_num_threads(n)
            sums.append(tapegrad.from_numpy(a).sum().numpy().tobytes())
    finally:
        tapegrad.set_num_threads(before)
    assert sums[0] == sums[1] == sums[2]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_pointwise_losses_reduce_as_pytorch(dtype, loss):
    """A regression loss printed each epoch: PyTorch reduces it with its sum / mean."""
    rng = np.random.default_rng(6)
    for shape in [(10,), (64, 10), (33, 70), (4, 3, 50)]:
        a, b = values(rng, shape, dtype), values(rng, shape, dtype)
        for reduction in ("mean", "sum"):
            same_bits(getattr(torch.nn.functional, loss)(torch.tensor(a), torch.tensor(b),
                                                          reduction=reduction),
                      getattr(tapegrad.nn.functional, loss)(tapegrad.tensor(a),
                                                             tapegrad.tensor(b),
                                                             reduction=reduction))


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_column_sums_match_pytorch(dtype):
    """`x[:, 0].sum()`: a strided run is summed with PyTorch's scalar cascade (chunked above its
    grain size as a contiguous one)."""
    rng = np.random.default_rng(7)
    for n in [1, 5, 17, 64, 1000, 40000, 100001]:
        a = values(rng, (n, 3), dtype)
        t, g = torch.from_numpy(a), tapegrad.from_numpy(a)
        same_bits(t[:, 1].sum(), g[:, 1].sum())
        same_bits(t[:, 2].mean(), g[:, 2].mean())
        same_bits(t[:, :1].sum(0), g[:, :1].sum(0))
        same_bits(t[:, 0].sum(0, keepdim=True), g[:, 0].sum(0, keepdim=True))
