"""Cases from a differential sweep of linear algebra, creation ops and FFT against the
hand-written tests of PyTorch's test/test_linalg.py, test_tensor_creation_ops.py and
test_spectral_ops.py; each one failed before its fix and is checked against torch here."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    """(exception type name, message) of a call, or ('ok', None)."""
    try:
        fn()
    except Exception as e:      # noqa: BLE001 (the type is what is compared)
        return type(e).__name__, str(e)
    return "ok", None


def _same_outcome(make):
    """make(lib) runs under torch and tapegrad with the same exception type and message."""
    assert _outcome(lambda: make(tg)) == _outcome(lambda: make(torch))


def _matrix(lib, *shape, dtype="float64"):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) + 3 * np.eye(shape[-2], shape[-1])
    return lib.tensor(a, dtype=getattr(lib, dtype))


# -- LU ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(2, 0, 3), (0, 3), (0, 0), (2, 3, 0)])
def test_lu_get_infos_on_empty_matrices(shape):
    # torch.lu(..., get_infos=True) raised numpy's ValueError (argmax of an empty sequence)
    # when the matrices have no diagonal; PyTorch gives zero infos of the batch's shape.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tg.lu(tg.ones(shape), get_infos=True)
        want = torch.lu(torch.ones(shape), get_infos=True)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_array_equal(g.numpy(), w.numpy())


# -- out= dtypes of the linalg ops that cast -----------------------------------------------------

_CASTING_OUT_OPS = {
    "eigvals": lambda L, A, out: L.linalg.eigvals(A, out=out),
    "eig": lambda L, A, out: L.linalg.eig(A, out=(out, L.empty(0, dtype=out.dtype)))[0],
    "eig_vectors": lambda L, A, out: L.linalg.eig(A, out=(L.empty(0, dtype=L.complex64), out))[1],
    "cond": lambda L, A, out: L.linalg.cond(A, out=out),
    "matrix_rank": lambda L, A, out: L.linalg.matrix_rank(A, out=out),
    "tensorinv": lambda L, A, out: L.linalg.tensorinv(A, ind=1, out=out),
    "tensorsolve": lambda L, A, out: L.linalg.tensorsolve(A, A[0], out=out),
    "householder_product": lambda L, A, out: L.linalg.householder_product(A, A[0] / 4, out=out),
}


@pytest.mark.parametrize("op", sorted(_CASTING_OUT_OPS))
@pytest.mark.parametrize("out_dtype", ["float64", "complex128", "int32", "int64", "float16",
                                       "bool"])
def test_linalg_out_casts_as_pytorch(op, out_dtype):
    # These ops refused any out dtype but the result's ("Expected out tensor to have dtype
    # c10::complex<float>"); PyTorch casts into any out the result can be cast to
    # (eigvals' complex64 into complex128, matrix_rank's int64 into int32) and refuses the
    # others as "Expected result to be safely castable from Float dtype, ...".
    def make(lib):
        out = lib.empty(0, dtype=getattr(lib, out_dtype))
        res = _CASTING_OUT_OPS[op](lib, _matrix(lib, 3, 3, dtype="float32"), out)
        assert res is out
        return out

    assert _outcome(lambda: make(tg)) == _outcome(lambda: make(torch))
    if _outcome(lambda: make(torch))[0] == "ok" and op not in ("eig", "eig_vectors"):
        got, want = make(tg), make(torch)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        np.testing.assert_allclose(got.numpy().astype(np.complex128),
                                   want.numpy().astype(np.complex128), rtol=2e-3, atol=1e-3)


# -- logspace ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "float32", "float64",
                                   "float16"])
@pytest.mark.parametrize("start,base", [(2.5, 4), (0.3, 10), (-1, 2), (40, 10), (0.5, -2),
                                        (-3, 10), (-2.5, 2)])
def test_logspace_of_one_step_is_base_to_the_start_as_given(dtype, start, base):
    # SILENT: one step of an integer dtype raised base to the truncated start (int64 4 ** 2.5
    # was 16; PyTorch fills base ** start computed in double: 32, checked as fill_ checks).
    _same_outcome(lambda L: L.logspace(start, 3, 1, base=base, dtype=getattr(L, dtype)))
    got = _outcome(lambda: tg.logspace(start, 3, 1, base=base, dtype=getattr(tg, dtype)))
    if got[0] == "ok":
        np.testing.assert_array_equal(
            tg.logspace(start, 3, 1, base=base, dtype=getattr(tg, dtype)).numpy(),
            torch.logspace(start, 3, 1, base=base, dtype=getattr(torch, dtype)).numpy())


@pytest.mark.parametrize("start,end", [(-2.5, 3), (2.5, -1.5), (2.5, 300), (-1, 3.5)])
def test_logspace_checks_the_endpoints_as_given(start, end):
    # uint8 refused -2 but took -2.5 (truncated first); PyTorch refuses both.
    _same_outcome(lambda L: L.logspace(start, end, 4, base=2, dtype=L.uint8).tolist())


# -- Tensor.real / Tensor.imag assignment --------------------------------------------------------

_PART_ASSIGNMENTS = {
    "real_tensor": lambda L, x: setattr(x, "real", L.tensor([1., 2, 3])),
    "imag_of_an_element": lambda L, x: setattr(x[1], "imag", L.tensor(5.)),
    "imag_number": lambda L, x: setattr(x, "imag", 7),
    "real_0d_broadcast": lambda L, x: setattr(x, "real", L.tensor(2.)),
    "real_int_tensor": lambda L, x: setattr(x, "real", L.tensor([1, 2, 3])),
    "real_wrong_shape": lambda L, x: setattr(x, "real", L.ones(2)),
    "real_str": lambda L, x: setattr(x, "real", "a"),
    "real_none": lambda L, x: setattr(x, "real", None),
    "imag_complex_number": lambda L, x: setattr(x, "imag", 1j),
    "real_of_a_real_tensor": lambda L, x: setattr(x.real.clone(), "real", L.ones(3)),
    "imag_of_a_real_tensor": lambda L, x: setattr(x.real.clone(), "imag", L.ones(3)),
}


@pytest.mark.parametrize("case", sorted(_PART_ASSIGNMENTS))
def test_real_and_imag_can_be_assigned(case):
    # `z.real = v` / `z[n].imag = v` (test_spectral_ops' istft of a sine builds its input so)
    # raised AttributeError: the properties had no setter. PyTorch copies v into the part.
    def make(lib):
        x = lib.tensor([0.5 + 1j, -1, 2j], dtype=lib.complex64)
        _PART_ASSIGNMENTS[case](lib, x)
        return x

    assert _outcome(lambda: make(tg)) == _outcome(lambda: make(torch))
    if _outcome(lambda: make(torch))[0] == "ok":
        np.testing.assert_array_equal(make(tg).numpy(), make(torch).numpy())


# -- istft ---------------------------------------------------------------------------------------

def test_istft_padding_warning_is_shown_once():
    # PyTorch's "The length of signal is shorter than the length parameter" is TORCH_WARN_ONCE
    # (test_istft_round_trip_with_padding asserts it once per process); it came on every call.
    window = tg.hamming_window(256, dtype=tg.float64)
    spectrum = tg.stft(tg.ones(2, 500, dtype=tg.float64), 256, 254, window=window,
                       pad_mode="constant", return_complex=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            tg.istft(spectrum, 256, 254, window=window, length=500)
    shorter = [w for w in caught if "shorter than the length parameter" in str(w.message)]
    assert len(shorter) == 1 and shorter[0].category is UserWarning


# -- error types ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda L, A: L.norm(A, "nuc", dim=0),
    lambda L, A: A.norm("nuc", 0, True),
    lambda L, A: L.linalg.norm(A, "fro", dim=0),
    lambda L, A: L.linalg.norm(A, "nuc", dim=1),
    lambda L, A: L.linalg.matrix_norm(A, "fro", dim=0),
    lambda L, A: L.norm(A, "fro", dim=0),
    lambda L, A: L.norm(A, "nuc", dim=(0,)),
])
def test_string_norms_of_one_int_dim(call):
    # linalg.norm / torch.norm with a matrix order and an int dim raised the parser's TypeError;
    # PyTorch passes [dim] on: "linalg.matrix_norm: dim must be a 2-tuple. Got 0" (torch.norm's
    # 'fro' is a vector norm then; matrix_norm itself refuses the int as TypeError).
    _same_outcome(lambda L: call(L, L.ones(3, 4, 5)).tolist())


@pytest.mark.parametrize("fn", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128", "int64", "float64"])
def test_fftfreq_dtypes(fn, dtype):
    # complex dtypes pass PyTorch's floating check and fail in arange (NotImplementedError)
    _same_outcome(lambda L: getattr(L.fft, fn)(4, dtype=getattr(L, dtype)).tolist())
    _same_outcome(lambda L: getattr(L.fft, fn)(4.0))


@pytest.mark.parametrize("fn", ["ihfftn", "ihfft2"])
@pytest.mark.parametrize("kw", [dict(dim=(0, 1, 0)), dict(dim=(2, -1)), dict(s=(1,), dim=(0, 1)),
                                dict(dim=(3,)), dict(s=(10, 10, 10, 10)), dict(dim=[]), {}])
def test_ihfftn_checks_dims_before_the_dtype(fn, kw):
    # a complex input met the dtype refusal first (RuntimeError where PyTorch's is the dims'
    # IndexError "Dimension out of range", or "ihfftn must transform at least one axis")
    _same_outcome(lambda L: getattr(L.fft, fn)(L.ones(10, 10, 10, dtype=L.complex64), **kw))


@pytest.mark.parametrize("call", [
    lambda L: L.full(2, 3),
    lambda L: L.full(np.int64(2), 3),
    lambda L: L.full(L.tensor([2, 3]), 1),
    lambda L: L.full(L.Size([2]), 1),
    lambda L: L.linalg.svd(L.eye(3), driver="gesvd"),
    lambda L: L.linalg.svdvals(L.eye(3), driver="gesvd"),
    lambda L: L.linalg.svd(L.eye(3), driver=None).S,
    lambda L: L.linalg.pinv(L.eye(3), rtol=L.tensor([0.1j])),
    lambda L: L.linalg.pinv(L.eye(3), atol=L.tensor(1j), hermitian=True),
    lambda L: L.linalg.matrix_rank(L.eye(3), atol=L.tensor(1j)),
    lambda L: L.linalg.matrix_rank(L.eye(3), rtol=L.tensor([0.1j])),
    lambda L: L.multinomial(L.ones(2 ** 24 + 1), 1),
    lambda L: L.multinomial(L.ones(0, 2 ** 24 + 1), 1),
    lambda L: L.multinomial(-L.ones(2 ** 24 + 1), 1),
])
def test_refusals_where_pytorch_refuses(call):
    # each of these computed (full of an int size, an svd driver on the CPU, a complex
    # tolerance, more than 2^24 categories) where PyTorch raises
    _same_outcome(lambda L: call(L).shape)


@pytest.mark.parametrize("shifts,dims", [((), ()), ((), 1), ([], None), (1, ()), (1, []), ([1, 1], ()),
                                         ((1, 2), (0,)), (-1, None), ([2], [1])])
def test_roll_shifts_and_dims(shifts, dims):
    # an empty shifts was accepted (PyTorch: "`shifts` required"); an empty dims with one
    # shift raised "must align" where PyTorch rolls the flattened tensor
    _same_outcome(lambda L: L.arange(8).view(2, 4).roll(shifts, dims).tolist())


def test_roll_with_empty_dims_is_differentiable_as_the_flat_roll():
    got, want = (lib.arange(6.).view(2, 3).requires_grad_() for lib in (tg, torch))
    for x, lib in ((got, tg), (want, torch)):
        (x.roll(1, ()) * lib.arange(6.).view(2, 3)).sum().backward()
    np.testing.assert_array_equal(got.grad.numpy(), want.grad.numpy())


@pytest.mark.parametrize("base,expanded", [
    ((3, 1, 3, 3), (3, 3, 3, 3)), ((1, 3, 3), (4, 3, 3)), ((3, 3), (3, 3, 3)), ((1, 1, 3, 3), (2, 2, 3, 3)),
    ((1, 2, 3, 3), (4, 2, 3, 3)), ((2, 1, 3, 3), (2, 2, 3, 3)), ((3, 1), (3, 3)), ((1, 3, 1, 3, 3), (2, 3, 2, 3, 3))])
@pytest.mark.parametrize("op", ["triu_", "tril_"])
def test_triangle_in_place_on_expanded_tensors(base, expanded, op):
    # tril_/triu_ wrote an expanded 4-d tensor whose inner batch dim shares memory; PyTorch
    # writes in place only up to 3 dims or when the batch dims are a contiguous stack (the
    # first may be expanded), else refuses ("more than one element ... single memory location")
    def make(lib):
        b = lib.arange(float(int(np.prod(base)))).reshape(base).clone().expand(*expanded)
        return getattr(b, op)(1).tolist()
    _same_outcome(make)
    if _outcome(lambda: make(torch))[0] == "ok":
        assert make(tg) == make(torch)


@pytest.mark.parametrize("call", [
    lambda L: L.zeros((2, 3), dtype=L.float32, out=L.empty(2, 3, dtype=L.float64)),
    lambda L: L.ones((2,), dtype=L.int64, out=L.empty(2)),
    lambda L: L.full((2,), 1., dtype=L.float64, out=L.empty(2)),
    lambda L: L.empty((2,), dtype=L.float64, out=L.empty(2)),
    lambda L: L.eye(2, dtype=L.float64, out=L.empty(2)),
    lambda L: L.arange(3, dtype=L.float64, out=L.empty(2)),
    lambda L: L.linspace(0, 1, 3, dtype=L.float64, out=L.empty(2)),
    lambda L: L.logspace(0, 2, 3, dtype=L.float64, out=L.empty(2)),
    lambda L: L.fft.fftfreq(3, dtype=L.float64, out=L.empty(3)),
    lambda L: L.sum(L.ones(3), 0, dtype=L.float64, out=L.empty(())),
    lambda L: L.cumprod(L.ones(3), 0, dtype=L.float64, out=L.empty(3)),
    lambda L: L.nansum(L.ones(3), 0, dtype=L.float64, out=L.empty(())),
    lambda L: L.sum(L.ones(3, dtype=L.int64), 0, dtype=L.int32, out=L.empty((), dtype=L.int64)),
    lambda L: L.zeros(2, dtype=L.float64, out=L.empty(2, dtype=L.float64)),
    lambda L: L.sum(L.ones(3), 0, dtype=L.float64, out=L.empty((), dtype=L.float64)),
])
def test_dtype_argument_must_be_outs_dtype(call):
    # SILENT-ish: a dtype= other than out's was ignored (the values written in out's dtype);
    # PyTorch refuses it (test_zeros_dtype_out_match): "dtype Float does not match dtype of
    # out parameter (Double)", the sums in their own words
    _same_outcome(lambda L: call(L).tolist())


@pytest.mark.parametrize("call", [
    lambda L: L.linalg.lstsq(L.ones(2, 3), L.tensor(1.)),
    lambda L: L.linalg.lstsq(L.ones(2, 3), L.tensor(1, dtype=L.int64)),
    lambda L: L.linalg.cond(L.ones(3)),
    lambda L: L.linalg.cond(L.ones(3), "fro"),
    lambda L: L.linalg.cond(L.ones(3), "nuc"),
    lambda L: L.linalg.cond(L.ones(3), 2),
])
def test_linalg_rank_messages(call):
    # lstsq of a 0-d other gave the rank-difference message (PyTorch: "other must have at least
    # 1 dimension", checked before the dtypes); cond named "tensor A" for every order
    _same_outcome(call)
