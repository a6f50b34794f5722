"""torch.signal.windows, torch.compiler, torch.to_dlpack, utils.data.StackDataset and
DistributedSampler, optim.SparseAdam: values and errors against torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.signal import windows as W


WINDOW_NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
                "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def window_kwargs(name):
    return {"a": [0.5, 0.3, 0.2]} if name == "general_cosine" else {}


@pytest.mark.parametrize("name", WINDOW_NAMES)
def test_windows_match_torch(name):
    torch = pytest.importorskip("torch")
    assert sorted(W.__all__) == sorted(torch.signal.windows.__all__) == WINDOW_NAMES
    for M in (0, 1, 2, 7, 8):
        for sym in (True, False):
            for dtype in ("float32", "float64"):
                ours = getattr(W, name)(M, sym=sym, dtype=getattr(tg, dtype),
                                        **window_kwargs(name))
                theirs = getattr(torch.signal.windows, name)(M, sym=sym,
                                                             dtype=getattr(torch, dtype),
                                                             **window_kwargs(name))
                assert str(ours.dtype) == str(theirs.dtype) and ours.shape == theirs.shape
                tol = 1e-12 if dtype == "float64" else 2e-6
                np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)


def test_window_parameters_and_errors():
    torch = pytest.importorskip("torch")
    for ours, theirs in [(W.gaussian(5, std=2.0), torch.signal.windows.gaussian(5, std=2.0)),
                         (W.kaiser(6, beta=3.0, dtype=tg.float64),
                          torch.signal.windows.kaiser(6, beta=3.0, dtype=torch.float64)),
                         (W.exponential(6, center=1.0, sym=False),
                          torch.signal.windows.exponential(6, center=1.0, sym=False)),
                         (W.general_hamming(5, alpha=0.6),
                          torch.signal.windows.general_hamming(5, alpha=0.6))]:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    assert W.hann(5, requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="general_cosine requires non-negative window length, got M=-1"):
        W.hann(-1)
    with pytest.raises(ValueError, match="expects float32 or float64 dtypes, got: torch.int64"):
        W.hann(5, dtype=tg.int64)
    with pytest.raises(ValueError, match="Standard deviation must be positive"):
        W.gaussian(4, std=0)
    with pytest.raises(ValueError, match="Center must be None for symmetric windows"):
        W.exponential(4, center=1.0)
    with pytest.raises(ValueError, match="Coefficients cannot be empty"):
        W.general_cosine(4, a=[])
    with pytest.raises(TypeError, match="Coefficients must be a list/tuple"):
        W.general_cosine(4, a=3)


def test_compiler_disable_is_compiling_and_reset():
    seen = []

    @tg.compiler.disable
    def side(x):
        seen.append(tg.compiler.is_compiling())
        return x * 2

    def outer(x):
        seen.append(tg.compiler.is_compiling())
        return side(x) + 1

    compiled = tg.compile(outer)
    x = tg.ones(3)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(x).numpy(), [3.0, 3.0, 3.0])
    # is_compiling inside a capture, not inside the disabled function; `seen.append` changes
    # a list outer reads from outside, so outer captures twice (a first capture may fill a
    # cache) and then runs eagerly, appending at every call
    assert seen == [True, False, True, False, False, False]
    assert compiled.stats["eager"] == 1 and "torch.compiler.disable" in compiled.explain()
    assert side.__name__ == "side" and not tg.compiler.is_compiling()

    replayed = tg.compile(lambda a: a * 3)
    replayed(x)
    replayed(x)
    assert replayed.stats == {"captures": 1, "replays": 1, "eager": 0, "guard_failures": 0}
    tg.compiler.reset()
    replayed(x)
    assert replayed.stats["captures"] == 2


def test_to_dlpack_round_trip():
    t = tg.arange(4.0)
    capsule = tg.to_dlpack(t)
    assert type(capsule).__name__ == "PyCapsule"
    np.testing.assert_array_equal(tg.from_dlpack(capsule).numpy(), t.numpy())
    assert tg.to_dlpack is tg.utils.dlpack.to_dlpack


def test_stack_dataset():
    from tapegrad.utils.data import DataLoader, StackDataset, TensorDataset
    d = StackDataset(tg.arange(3), tg.arange(3) * 2)
    assert len(d) == 3 and [int(v) for v in d[1]] == [1, 2]
    named = StackDataset(a=tg.arange(3), b=[5, 6, 7])
    assert int(named[2]["a"]) == 2 and named[2]["b"] == 7
    assert [row["b"] for row in named.__getitems__([0, 2])] == [5, 7]
    batch = next(iter(DataLoader(named, batch_size=2)))
    assert batch["a"].tolist() == [0, 1] and batch["b"].tolist() == [5, 6]
    nested = next(iter(DataLoader(StackDataset(TensorDataset(tg.arange(4.0)), tg.arange(4)),
                                  batch_size=3)))
    assert nested[0][0].tolist() == [0.0, 1.0, 2.0] and nested[1].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(tg.arange(3), a=tg.arange(3))
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(tg.arange(3), tg.arange(4))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()


def test_distributed_sampler():
    from tapegrad.utils.data import DistributedSampler
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(10))
    s = DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)
    assert list(s) == [1, 4, 7, 0] and len(s) == 4
    s = DistributedSampler(range(10), num_replicas=3, rank=2, shuffle=False, drop_last=True)
    assert list(s) == [2, 5, 8] and len(s) == 3
    assert list(DistributedSampler(range(2), num_replicas=5, rank=4, shuffle=False)) == [0]
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval "
                       r"\[0, 2\]"):
        DistributedSampler(range(10), num_replicas=3, rank=3)
    shares = [DistributedSampler(range(10), num_replicas=2, rank=r, seed=3) for r in (0, 1)]
    assert sorted(list(shares[0]) + list(shares[1])) == list(range(10))
    first = list(shares[0])
    assert list(shares[0]) == first            # same epoch, same order
    for share in shares:
        share.set_epoch(1)
    assert sorted(list(shares[0]) + list(shares[1])) == list(range(10))


def test_sparse_adam_dense_gradients_and_row_update():
    p = tg.nn.Parameter(tg.ones(3, 2))
    opt = tg.optim.SparseAdam([p])
    (p * 2).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please "
                       "consider Adam instead"):
        opt.step()
    with pytest.raises(ValueError, match="Invalid learning rate: 0"):
        tg.optim.SparseAdam([p], lr=0)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        tg.optim.SparseAdam([p], betas=(0.9, 1.0))
    torch = pytest.importorskip("torch")
    from tapegrad.optim.sparse_adam import sparse_adam_rows
    rng = np.random.default_rng(0)
    start = rng.standard_normal((5, 3)).astype(np.float32)
    param = start.copy()
    state = {"exp_avg": np.zeros_like(param), "exp_avg_sq": np.zeros_like(param)}
    tp = torch.nn.Parameter(torch.tensor(start))
    topt = torch.optim.SparseAdam([tp], lr=0.01)
    for step, rows in enumerate(([0, 3], [3, 4], [1, 3]), start=1):
        values = rng.standard_normal((2, 3)).astype(np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # torch's note on sparse invariant checks
            tp.grad = torch.sparse_coo_tensor(torch.tensor([rows]), torch.tensor(values),
                                              (5, 3))
        topt.step()
        state["step"] = step
        sparse_adam_rows(param, np.array(rows), values, state, 0.01, 0.9, 0.999, 1e-8)
        np.testing.assert_allclose(param, tp.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert repr(opt).startswith("SparseAdam (")


# -- histogramdd ------------------------------------------------------------------------------

HIST_POINTS = [[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]]


def histogramdd_cases(lib):
    x = lib.tensor(HIST_POINTS)
    return [lib.histogramdd(x, bins=[3, 3], weight=lib.tensor([1.0, 2.0, 4.0, 8.0])),
            lib.histogramdd(x, bins=2, range=[0.0, 1.0, 0.0, 1.0], density=True),
            lib.histogramdd(x, bins=[lib.tensor([0.0, 1, 2]), lib.tensor([0.0, 1, 2])]),
            lib.histogramdd(lib.linspace(-1, 1, 24).reshape(2, 4, 3), bins=[2, 3, 4]),
            lib.histogramdd(lib.ones(3, 1), bins=2), lib.histogramdd(lib.empty(0, 2), bins=2),
            lib.histogramdd(x.double(), bins=(2, 3), density=True),
            lib.histogram(lib.empty(0), bins=2)]


def test_histogramdd_matches_torch():
    torch = pytest.importorskip("torch")
    for ours, theirs in zip(histogramdd_cases(tg), histogramdd_cases(torch)):
        assert type(ours).__name__ == type(theirs).__name__
        assert repr(ours).replace("tapegrad", "torch") == repr(theirs)
    x = tg.tensor(HIST_POINTS)
    with pytest.raises(RuntimeError, match="The size of bins must be equal to the innermost"):
        tg.histogramdd(x, bins=[3])
    with pytest.raises(RuntimeError, match="range should have 4 elements, but got 2"):
        tg.histogramdd(x, bins=2, range=[0.0, 1.0])
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
        tg.histogramdd(x.long(), bins=2)
    with pytest.raises(RuntimeError, match="min should not exceed max, but got min 1 max 0 for "
                       "dimension 0"):
        tg.histogramdd(x, bins=2, range=[1.0, 0.0, 0.0, 1.0])
    with pytest.raises(RuntimeError, match="input tensor should have at least 2 dimensions"):
        tg.histogramdd(tg.ones(3), bins=2)
    with pytest.raises(RuntimeError, match="excluding its innermost dimension"):
        tg.histogramdd(x, bins=2, weight=tg.ones(3))


# -- svd_lowrank / pca_lowrank ----------------------------------------------------------------

def rank_three(rows, cols):
    rng = np.random.default_rng(7)
    return rng.standard_normal((rows, 3)) @ rng.standard_normal((3, cols))


@pytest.mark.parametrize("shape, q", [((8, 5), 3), ((8, 5), 4), ((5, 8), 3), ((2, 8, 5), 3)])
def test_svd_lowrank_recovers_a_low_rank_matrix(shape, q):
    A = rank_three(shape[-2], shape[-1])
    if len(shape) == 3:
        A = np.stack([A, 2 * A])
    U, S, V = tg.svd_lowrank(tg.tensor(A), q=q)
    assert tuple(U.shape) == shape[:-1] + (q,) and tuple(V.shape) == shape[:-2] + (shape[-1], q)
    np.testing.assert_allclose((U @ tg.diag_embed(S) @ V.mT).numpy(), A, atol=1e-10)
    exact = np.linalg.svd(A, compute_uv=False)[..., :q]
    np.testing.assert_allclose(S.numpy(), exact, atol=1e-10)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(S.numpy(), torch.svd_lowrank(torch.tensor(A), q=q)[1].numpy(),
                               atol=1e-10)


def test_lowrank_gradients_and_pca():
    A = tg.tensor(rank_three(6, 4)[:, :3] + np.eye(6, 3), requires_grad=True)

    def top_values(a):
        tg.manual_seed(0)               # the same test matrix at every evaluation
        return tg.svd_lowrank(a, q=3)[1]

    assert tg.autograd.gradcheck(top_values, [A])
    data = rank_three(10, 4)
    U, S, V = tg.pca_lowrank(tg.tensor(data), q=3)
    centered = data - data.mean(0)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(centered, compute_uv=False)[:3],
                               atol=1e-10)
    assert tuple(tg.pca_lowrank(tg.tensor(data))[1].shape) == (4,)
    with pytest.raises(ValueError, match=r"q\(=9\) must be non-negative integer and not greater "
                       r"than min\(m, n\)=4"):
        tg.pca_lowrank(tg.tensor(data), q=9)
    with pytest.raises(ValueError, match=r"niter\(=-1\) must be non-negative integer"):
        tg.pca_lowrank(tg.tensor(data), niter=-1)


# -- quasirandom.SobolEngine ------------------------------------------------------------------

def sobol_session(lib, dims):
    e = lib.quasirandom.SobolEngine(dims)
    out = [e.draw(6), e.draw(3, dtype=lib.float64)]
    e.fast_forward(7)
    out += [e.draw(2)]
    e.reset()
    out += [e.draw(1)]
    e.reset()
    e.fast_forward(1)
    out += [e.draw(2), lib.quasirandom.SobolEngine(3).draw_base2(3), e.sobolstate]
    return out


@pytest.mark.parametrize("dims", [1, 5, 300])
def test_sobol_unscrambled_equals_torch(dims):
    torch = pytest.importorskip("torch")
    import torch.quasirandom  # noqa: F401
    for ours, theirs in zip(sobol_session(tg, dims), sobol_session(torch, dims)):
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_sobol_last_dimensions_equal_torch():
    torch = pytest.importorskip("torch")
    import torch.quasirandom  # noqa: F401
    ours = tg.quasirandom.SobolEngine(21201).draw(33, dtype=tg.float64)
    theirs = torch.quasirandom.SobolEngine(21201).draw(33, dtype=torch.float64)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_sobol_scrambled_and_errors():
    from tapegrad.quasirandom import SobolEngine
    e = SobolEngine(4, scramble=True, seed=7)
    assert repr(e) == "SobolEngine(dimension=4, scramble=True, seed=7)"
    x = e.draw(64, dtype=tg.float64).numpy()
    assert ((x >= 0) & (x < 1)).all()
    # a scrambled (0, m, s)-net still has one point in each of 64 equal slices per axis
    for d in range(4):
        assert len(np.unique(np.floor(x[:, d] * 64))) == 64
    np.testing.assert_array_equal(SobolEngine(4, scramble=True, seed=7).draw(64,
                                  dtype=tg.float64).numpy(), x)
    assert not np.array_equal(SobolEngine(4, scramble=True, seed=8).draw(64).numpy(),
                              x.astype(np.float32))
    with pytest.raises(ValueError, match=r"Supported range of dimensionality for SobolEngine is "
                       r"\[1, 21201\]"):
        SobolEngine(0)
    with pytest.raises(ValueError, match="require n to be a power of 2. 1 points have been "
                       r"previously generated, then: n=1\+2\*\*2=5"):
        SobolEngine(3).fast_forward(1).draw_base2(2)
    out = tg.empty(0)
    SobolEngine(2).draw(3, out=out)
    assert tuple(out.shape) == (3, 2) and out[1].tolist() == [0.5, 0.5]
