"""Differences found by differential fuzzing (tools/fuzz.py, session 41b) and by hand-written
compile-guard programs: each test fails without its fix."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as tF


def _values(t):
    return np.asarray(t.detach().float().numpy() if t.dtype == tg.bfloat16 else t.detach().numpy())


# -- compile: constant subscripts of closure / global containers are guarded ----------------------

CONFIG = {"scale": 2.0, "inner": {"shift": 1.0}}
SIZES = [3.0]


def _config_scaled(t):
    return t * CONFIG["scale"] + CONFIG["inner"]["shift"] - SIZES[0]


def test_compile_rechecks_a_global_config_dict_and_list():
    # SILENT before: the capture baked in CONFIG["scale"] and replayed the stale number
    compiled = tg.compile(_config_scaled)
    x = tg.tensor([1.0, -2.0, 3.0])
    for scale, shift, size in [(2.0, 1.0, 3.0), (2.0, 1.0, 3.0), (5.0, 1.0, 3.0), (5.0, -4.0, 3.0),
                               (5.0, -4.0, 0.5), (-0.0, -4.0, 0.5)]:
        CONFIG["scale"], CONFIG["inner"]["shift"], SIZES[0] = scale, shift, size
        expected = _values(_config_scaled(x))
        got = _values(compiled(x))
        np.testing.assert_array_equal(got, expected)
        assert np.array_equal(np.signbit(got), np.signbit(expected))
    CONFIG["inner"] = {"shift": 10.0}                 # the inner dict rebound
    np.testing.assert_array_equal(_values(compiled(x)), _values(_config_scaled(x)))
    CONFIG.update(scale=2.0, inner={"shift": 1.0})


def test_compile_rechecks_a_closure_dict_and_its_tensor_items():
    params = {"w": tg.tensor([1.0, 2.0], requires_grad=True)}

    def loss(x):
        return (x * params["w"]).sum()

    compiled = tg.compile(loss)
    x = tg.tensor([3.0, 4.0])
    for step in range(4):
        if step == 2:
            params["w"] = tg.tensor([-1.0, 0.5], requires_grad=True)   # a new tensor, same shape
        eager, got = loss(x), compiled(x)
        assert got.item() == eager.item()
        params["w"].grad = None
        got.backward()
        np.testing.assert_array_equal(params["w"].grad.numpy(), x.numpy())


MODE = "double"
OFFSET = None
CAST_TO = tg.float32


def _by_mode(t):
    t = t.to(CAST_TO)
    t = t * 2 if MODE == "double" else t - 1
    return t if OFFSET is None else t + OFFSET


def test_compile_rechecks_global_strings_none_and_dtypes():
    # SILENT before: a global mode string, an optional (None) setting or a dtype held by name
    # was baked into the capture and the replay kept the old branch / cast
    global MODE, OFFSET, CAST_TO
    compiled = tg.compile(_by_mode)
    x = tg.tensor([1.0, -2.0, 3.0])
    try:
        for mode, offset, dtype in [("double", None, tg.float32), ("double", None, tg.float32),
                                    ("minus", None, tg.float32), ("minus", 5.0, tg.float32),
                                    ("minus", 5.0, tg.float64), ("double", None, tg.float64)]:
            MODE, OFFSET, CAST_TO = mode, offset, dtype
            eager, got = _by_mode(x), compiled(x)
            assert got.dtype == eager.dtype
            np.testing.assert_array_equal(got.numpy(), eager.numpy())
    finally:
        MODE, OFFSET, CAST_TO = "double", None, tg.float32


def test_compile_keeps_replaying_an_unchanged_config():
    compiled = tg.compile(_config_scaled)
    x = tg.tensor([1.0, 2.0])
    for _ in range(3):
        compiled(x)
    assert compiled.stats["replays"] == 2 and compiled.stats["guard_failures"] == 0


# -- bfloat16 ----------------------------------------------------------------------------------

def test_triplet_margin_with_distance_loss_bfloat16_rounds_each_step_as_pytorch():
    # fuzz programs seed 66400638: tapegrad combined float32 distances, 5 bfloat16 ulp off
    torch = pytest.importorskip("torch")
    a = np.array([0.70703125, -0.9453125, -1.4921875, 5.96875], np.float32)
    p = np.array([0.6501824855804443, 1.793827772140503, -1.552357792854309, 0.2037864625453949],
                 np.float32)
    n = np.array([-0.0, -1.0136414766311646, 1.400507926940918, -0.6121633052825928], np.float32)
    for reduction in ("sum", "none"):
        want = torch.nn.functional.triplet_margin_with_distance_loss(
            *(torch.tensor(v).to(torch.bfloat16) for v in (a, p, n)), margin=2.0,
            reduction=reduction)
        got = tF.triplet_margin_with_distance_loss(
            *(tg.tensor(v).to(tg.bfloat16) for v in (a, p, n)), margin=2.0, reduction=reduction)
        assert got.dtype == tg.bfloat16
        np.testing.assert_array_equal(_values(got), want.float().numpy())


@pytest.mark.parametrize("shape", [(1, 2, 3, 3), (1, 2, 3, 3, 3)])
def test_local_response_norm_bfloat16_beyond_3d_has_no_kernel(shape):
    # PyTorch averages with avg_pool3d there, which has no bfloat16 CPU kernel
    x = tg.ones(shape, dtype=tg.bfloat16)
    with pytest.raises(NotImplementedError, match="avg_pool3d_out_frame.*BFloat16"):
        tF.local_response_norm(x, 2)
    assert tF.local_response_norm(tg.ones(2, 3, 4, dtype=tg.bfloat16), 2).dtype == tg.bfloat16


# -- linalg --------------------------------------------------------------------------------------

def test_cholesky_error_order_found_in_logarithmically_many_factorizations(monkeypatch):
    # fuzz programs seed 66400774: one factorization per order hung a 1024 x 1024 bfloat16
    # cholesky (its argument check runs the float32 factorization) for minutes
    import tapegrad.linalg as tg_linalg
    rng = np.random.default_rng(1)
    n = 64
    a = rng.standard_normal((n, n))
    a = a @ a.T + n * np.eye(n)
    factorizations = []
    real = tg_linalg._lapack_cholesky
    monkeypatch.setattr(tg_linalg, "_lapack_cholesky",
                        lambda arr: factorizations.append(arr.shape) or real(arr))
    for broken in (1, 2, 37, 63, 64):
        b = a.copy()
        b[broken - 1, broken - 1] = -1e6
        factorizations.clear()
        with pytest.raises(tg.linalg.LinAlgError,
                           match=f"the leading minor of order {broken} is not positive-definite"):
            tg.linalg.cholesky(tg.tensor(b))
        assert len(factorizations) <= 2 + 7


_CDIST_CASES = [((2, 3), "bfloat16", (2, 3), "float32"), ((2, 3), "float32", (2, 3), "bfloat16"),
                ((2, 3), "bfloat16", (2, 3), "float64"), ((2, 3), "float64", (2, 3), "bfloat16"),
                ((0, 3), "bfloat16", (2, 3), "float32"), ((2, 3), "bfloat16", (0, 3), "float32"),
                ((0, 3), "float32", (2, 3), "bfloat16"), ((0, 3), "bfloat16", (2, 3), "bfloat16"),
                ((2, 3), "bfloat16", (0, 3), "bfloat16"), ((2, 3), "bfloat16", (2, 4), "float32")]


@pytest.mark.parametrize("s1, d1, s2, d2", _CDIST_CASES)
def test_cdist_with_a_bfloat16_operand_as_pytorch(s1, d1, s2, d2):
    # fuzz programs seed 66400102: the kernel is x1's (an empty result takes x1's dtype and
    # runs none; a bfloat16 x2 under a float kernel is refused with "expected scalar type")
    torch = pytest.importorskip("torch")

    def run(lib):
        try:
            return lib.cdist(lib.ones(s1, dtype=getattr(lib, d1)), lib.ones(s2, dtype=getattr(lib, d2)))
        except Exception as e:          # noqa: BLE001 - compared with PyTorch's
            return e
    want, got = run(torch), run(tg)
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
    else:
        assert not isinstance(got, Exception), got
        assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_lu_and_det_of_an_empty_float16_input_run_as_pytorch(shape):
    # fuzz programs seed 66400502: PyTorch reaches no kernel for an empty input, so float16 runs
    torch = pytest.importorskip("torch")
    want_lu, want_piv = torch.linalg.lu_factor(torch.zeros(shape, dtype=torch.float16))
    lu, piv = tg.linalg.lu_factor(tg.zeros(shape, dtype=tg.float16))
    assert (str(lu.dtype), str(piv.dtype), tuple(lu.shape), tuple(piv.shape)) == \
        (str(want_lu.dtype), str(want_piv.dtype), tuple(want_lu.shape), tuple(want_piv.shape))
    P, L, U = tg.linalg.lu(tg.zeros(shape, dtype=tg.float16))
    assert P.dtype == L.dtype == U.dtype == tg.float16
    det = tg.linalg.det(tg.zeros(shape, dtype=tg.float16))
    want = torch.linalg.det(torch.zeros(shape, dtype=torch.float16))
    assert det.dtype == tg.float16 and tuple(det.shape) == tuple(want.shape)
    np.testing.assert_array_equal(det.numpy(), want.numpy())
    with pytest.raises(NotImplementedError, match="lu_cpu.*Half"):
        tg.linalg.lu_factor(tg.zeros(2, 2, dtype=tg.float16))


# -- in-place writes into leaves ---------------------------------------------------------------

def _leaf():
    return tg.tensor([1.0, 2.0], requires_grad=True)


@pytest.mark.parametrize("write, message", [
    (lambda: _leaf()[1:].index_put_((tg.tensor([-2]),), tg.tensor(1.0), accumulate=True),
     "a view of a leaf Variable"),
    (lambda: _leaf()[1:].index_put_((tg.tensor([-2]),), tg.tensor(1.0)), "a view of a leaf"),
    (lambda: _leaf().index_put_((tg.tensor([5]),), tg.tensor(1.0)), "a leaf Variable"),
    (lambda: _leaf().masked_scatter_(tg.tensor([True, True, True]), tg.ones(3)), "a leaf Variable"),
])
def test_a_write_into_a_leaf_is_refused_before_its_arguments_are_checked(write, message):
    # fuzz programs seed 66410549: tapegrad raised the IndexError of the index first
    with pytest.raises(RuntimeError, match=message):
        write()


def test_index_put_still_checks_indices_of_other_tensors():
    with pytest.raises(IndexError, match="out of bounds"):
        tg.tensor([1.0, 2.0]).index_put_((tg.tensor([5]),), tg.tensor(1.0))
    x = tg.tensor([1.0, 2.0], requires_grad=True) * 1
    x.index_put_((tg.tensor([1, 1]),), tg.tensor([3.0, 4.0]), accumulate=True)
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 9.0])
