"""Regressions found by the eleventh argument-form sweep (products and contractions outside
linalg, structured-matrix helpers, window and spacing functions) against PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _grads(lib, fn, *arrays):
    leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    out = fn(lib, *leaves)
    return [g.detach().numpy() for g in lib.autograd.grad(out.sum(), leaves)]


# -- cdist / pdist -------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib, x, y: lib.cdist(x, y, p=float("inf")),
    lambda lib, x, y: lib.cdist(x.unsqueeze(0), y.unsqueeze(0), p=float("inf")),
    lambda lib, x, y: lib.pdist(lib.cat([x, y]), p=float("inf")),
])
def test_cdist_inf_gradient_reaches_every_tied_coordinate(fn):
    # PyTorch's cdist/pdist give sign(diff) to each coordinate at the maximum; the norm's
    # gradient it was built on split that evenly between ties (silently halved or thirded)
    x = [[1.0, -1.0, 0.5], [2.0, 2.0, -2.0], [0.3, 0.1, 0.2]]
    y = [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    for got, want in zip(_grads(tg, fn, x, y), _grads(torch, fn, x, y)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_cdist_inf_gradient_matches_finite_differences_away_from_ties(gradcheck):
    rng = np.random.default_rng(0)
    gradcheck(lambda a, b: tg.cdist(a, b, p=float("inf")), rng.normal(size=(3, 4)),
              rng.normal(size=(2, 4)))


def test_cdist_refuses_an_unknown_compute_mode():
    for lib in (tg, torch):
        with pytest.raises(ValueError, match="foo is not a valid value for compute_mode"):
            lib.cdist(lib.ones(2, 2), lib.ones(2, 2), compute_mode="foo")


# -- once-per-process deprecation warnings -------------------------------------------------------

def _warning_count(lib, call, times=3):
    count = 0
    for _ in range(times):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(lib)
        count += len(caught)
    return count


_A = [[2.0, 1.0, 1.0], [1.0, 2.0, 1.0], [1.0, 1.0, 2.0]]


@pytest.mark.parametrize("call", [
    lambda lib: lib.chain_matmul(lib.tensor(_A)),
    lambda lib: lib.cross(lib.tensor(_A), lib.tensor(_A)),
    lambda lib: lib.triangular_solve(lib.ones(3, 1), lib.tensor(_A)),
    lambda lib: lib.qr(lib.tensor(_A)),
    lambda lib: lib.lu(lib.tensor(_A)),
    lambda lib: lib.lu_solve(lib.ones(3, 1), *lib.linalg.lu_factor(lib.tensor(_A))),
    lambda lib: lib.frobenius_norm(lib.tensor(_A), (0, 1)),
    lambda lib: lib.nuclear_norm(lib.tensor(_A)),
    lambda lib: lib.cholesky(lib.tensor(_A)),
    lambda lib: lib.tensor(1.0).H,
    lambda lib: lib.zeros(3).index_reduce(0, lib.tensor([0]), lib.ones(1), "prod"),
    lambda lib: lib.stft(lib.ones(64), 16, window=lib.hann_window(16), return_complex=False),
    lambda lib: lib.stft(lib.ones(64), 16, return_complex=True),
    lambda lib: lib.istft(lib.stft(lib.ones(64), 16, window=lib.ones(16), return_complex=True),
                          16),
    lambda lib: lib.set_default_tensor_type(lib.FloatTensor),
])
def test_deprecation_warnings_appear_once_per_process(call):
    # TORCH_WARN_ONCE in PyTorch: each appeared on every call here
    torch_count = _warning_count(torch, call)
    assert torch_count <= 1
    tg._core.WARNED_ONCE.clear()
    assert _warning_count(tg, call) == 1


@pytest.mark.filterwarnings("ignore:Using torch.cross without specifying the dim")
def test_cross_without_dim_needs_a_dim_of_size_3():
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="no dimension of size 3 in input"):
            lib.cross(lib.ones(2, 4), lib.ones(2, 4))


# -- tensordot's dims ----------------------------------------------------------------------------

@pytest.mark.parametrize("dims, error", [
    (([1.5], [0]), TypeError),          # was truncated to dim 1 silently
    (([1], [True]), TypeError),         # was taken as dim 1
    (([1], [0, 1.5]), TypeError),
    (([1], 0), TypeError),
    (([1], "a"), TypeError),
    (([1], [0], [2]), ValueError),
    (([1],), ValueError),
    ("ab", RuntimeError),
    (None, RuntimeError),
    (1.0, RuntimeError),
])
def test_tensordot_refuses_dims_as_pytorch_does(dims, error):
    messages = []
    for lib in (torch, tg):
        with pytest.raises(error) as info:
            lib.tensordot(lib.ones(3, 4), lib.ones(4, 2), dims=dims)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_tensordot_takes_integer_tensors_and_tuples_as_dims():
    a, b = np.arange(12.0).reshape(3, 4), np.arange(8.0).reshape(4, 2)
    want = torch.tensordot(torch.tensor(a), torch.tensor(b), dims=([1], [torch.tensor(0)]))
    got = tg.tensordot(tg.tensor(a), tg.tensor(b), dims=((1,), [tg.tensor(0)]))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- tensor_split / hsplit / vsplit / dsplit -----------------------------------------------------

def _parts(result):
    return [t.tolist() for t in result]


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.tensor_split(x, sections=3),
    lambda lib, x: lib.tensor_split(x, indices=[1, 4]),
    lambda lib, x: lib.tensor_split(x, indices=(2,), dim=-1),
    lambda lib, x: lib.tensor_split(x, tensor_indices_or_sections=lib.tensor([1, 4])),
    lambda lib, x: x.tensor_split(sections=4),
    lambda lib, x: lib.hsplit(x, sections=3),
    lambda lib, x: lib.hsplit(x, indices=[1, 2]),
    lambda lib, x: x.hsplit(indices=[5]),
    lambda lib, x: lib.vsplit(x.reshape(2, 3), sections=2),
    lambda lib, x: lib.dsplit(x.reshape(1, 2, 3), indices=[1]),
])
def test_splits_take_the_keyword_of_each_pytorch_signature(call):
    # sections=/indices=/tensor_indices_or_sections= were refused as an invalid combination
    assert _parts(call(tg, tg.arange(6))) == _parts(call(torch, torch.arange(6)))


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.tensor_split(x, [2.0]),          # was split at 2
    lambda lib, x: lib.tensor_split(x, [True, 1]),
    lambda lib, x: lib.tensor_split(x, 2.0),
    lambda lib, x: lib.tensor_split(x, sections=[2]),
    lambda lib, x: lib.tensor_split(x, indices=2),
    lambda lib, x: lib.tensor_split(x, tensor_indices_or_sections=2),
    lambda lib, x: lib.tensor_split(x, 2, sections=2),
    lambda lib, x: lib.hsplit(x, lib.tensor([1])),       # was split at 1
    lambda lib, x: lib.hsplit(x, 2.0),
    lambda lib, x: lib.vsplit(x.reshape(2, 3), indices=1),
])
def test_splits_refuse_points_no_signature_takes(call):
    for lib in (torch, tg):
        with pytest.raises(TypeError, match="received an invalid combination of arguments"):
            call(lib, lib.arange(6))


# -- small refusals ------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint8", "int16", "bool",
                                   "complex64", "bfloat16"])
def test_triangle_indices_refuse_dtypes_their_kernels_lack(fn, dtype):
    # a float or bool dtype gave coordinates in it
    messages = []
    for lib in (torch, tg):
        with pytest.raises(NotImplementedError) as info:
            getattr(lib, fn)(3, 4, 1, dtype=getattr(lib, dtype))
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    for lib in (torch, tg):
        assert str(getattr(lib, fn)(3, 4, dtype=lib.int32).dtype) == "torch.int32"


@pytest.mark.parametrize("args", [(1, -1, 1), (0, -2, 1)])
def test_unfold_negative_size_is_pytorchs_runtime_error(args):
    # numpy's ValueError about a broadcast shape escaped
    for lib in (torch, tg):
        with pytest.raises(RuntimeError, match=f"size is {args[1]} but must be >= 0"):
            lib.ones(2, 3).unfold(*args)


def test_meshgrid_without_indexing_warns_once_per_process():
    def call(lib):
        lib.meshgrid(lib.arange(2), lib.arange(3))
    assert _warning_count(torch, call) <= 1
    assert _warning_count(tg, call) == 1


# -- ranges and windows --------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.linspace(lib.tensor([0.0]), 1, 3),          # was read as its value
    lambda lib: lib.linspace(0, lib.ones(1, 1), 3),
    lambda lib: lib.linspace(lib.tensor([0.0]), lib.tensor([1.0]), 3),
    lambda lib: lib.logspace(lib.tensor([0.0]), 1, 3),
])
def test_range_endpoints_must_be_0d_tensors(call):
    messages = []
    for lib in (torch, tg):
        with pytest.raises(RuntimeError) as info:
            call(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("call", [
    lambda lib: lib.logspace(0, 1, 3, dtype=lib.bool),          # gave [True, True, True]
    lambda lib: lib.arange(0, 3, dtype=lib.complex64),          # gave a complex range
    lambda lib: lib.arange(3, dtype=lib.complex128),
    lambda lib: lib.hann_window(4, dtype=lib.complex64),
    lambda lib: lib.kaiser_window(4, dtype=lib.complex128),
])
def test_range_kernels_refuse_bool_and_complex(call):
    messages = []
    for lib in (torch, tg):
        with pytest.raises(NotImplementedError) as info:
            call(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("steps", [0, 1])
def test_one_or_no_bool_range_values_need_no_kernel(steps):
    for fn in ("linspace", "logspace"):
        got = getattr(tg, fn)(0, 1, steps, dtype=tg.bool)
        want = getattr(torch, fn)(0, 1, steps, dtype=torch.bool)
        assert got.tolist() == want.tolist() and got.dtype == tg.bool


@pytest.mark.parametrize("fn", ["hann_window", "hamming_window", "blackman_window",
                                "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8, 33])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_follow_pytorchs_formulas_in_their_dtype(fn, n, periodic, dtype):
    # computed in float64 by another formula, blackman's ends were -1.4e-17 (PyTorch: 0)
    got = getattr(tg, fn)(n, periodic, dtype=getattr(tg, dtype)).numpy()
    want = getattr(torch, fn)(n, periodic, dtype=getattr(torch, dtype)).numpy()
    assert got.dtype == want.dtype
    if dtype == "float64":
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
    else:
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-7)


@pytest.mark.parametrize("fn", ["hann_window", "hamming_window", "blackman_window",
                                "bartlett_window", "kaiser_window"])
def test_window_length_is_parsed_as_an_int(fn):
    # a 0-d integer tensor crashed (AttributeError); a float failed inside numpy
    got = getattr(tg, fn)(tg.tensor(4)).numpy()
    np.testing.assert_allclose(got, getattr(torch, fn)(torch.tensor(4)).numpy(), rtol=2e-7)
    for bad in (5.0, True, 4.0):
        messages = []
        for lib in (torch, tg):
            with pytest.raises(TypeError) as info:
                getattr(lib, fn)(bad if not isinstance(bad, float) or bad != 4.0
                                 else lib.tensor(4.0))
            messages.append(str(info.value))
        assert messages[0] == messages[1]


# -- more contraction refusals -------------------------------------------------------------------

@pytest.mark.parametrize("p", [0, 1, 2, float("inf")])
def test_distances_between_rows_of_no_coordinates_are_zero(p):
    # p = inf raised vector_norm's error about an empty dimension
    for fn in (lambda lib: lib.cdist(lib.ones(2, 0), lib.ones(3, 0), p=p),
               lambda lib: lib.pdist(lib.ones(3, 0), p=p)):
        got, want = fn(tg), fn(torch)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("call, error", [
    (lambda lib: lib.einsum("i->i"), ValueError),
    (lambda lib: lib.einsum(), ValueError),
    (lambda lib: lib.einsum("i->i", [1, 2]), TypeError),
    (lambda lib: lib.einsum("i->i", 3), TypeError),
    (lambda lib: lib.einsum("ij", lib.ones(2, 2), "x"), TypeError),
])
def test_einsum_refuses_missing_or_non_tensor_operands(call, error):
    messages = []
    for lib in (torch, tg):
        with pytest.raises(error) as info:
            call(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_linalg_cross_dim_out_of_range_is_pytorchs_index_error():
    for lib in (torch, tg):
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                             r"of \[-1, 0\], but got 1\)"):
            lib.linalg.cross(lib.ones(3), lib.ones(3), dim=1)


# -- integer arguments that were truncated or widened -------------------------------------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.rot90(lib.arange(6).reshape(2, 3), 1.5),    # was the identity
    lambda lib: lib.rot90(lib.arange(6).reshape(2, 3), True),
    lambda lib: lib.tril_indices(3.0, 3),
    lambda lib: lib.triu_indices(3, True),
    lambda lib: lib.tril_indices(3, 3, 1.0),
    lambda lib: lib.roll(lib.arange(3), 1.0),
    lambda lib: lib.roll(lib.arange(6).reshape(2, 3), lib.tensor([1, 1]), (0, 1)),
])
def test_integer_arguments_refuse_floats_bools_and_tensors(call):
    messages = []
    for lib in (torch, tg):
        with pytest.raises(TypeError) as info:
            call(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_integer_arguments_take_0d_integer_tensors():
    x = np.arange(6).reshape(2, 3)
    for fn in (lambda lib, t: lib.rot90(t, lib.tensor(1)),
               lambda lib, t: lib.tril_indices(lib.tensor(3), 3),
               lambda lib, t: lib.roll(t, lib.tensor(1))):
        assert fn(tg, tg.tensor(x)).tolist() == fn(torch, torch.tensor(x)).tolist()


def test_take_along_dim_without_dim_takes_int32_indices():
    # its flattened gather takes int32; only the dim form wants int64
    x = np.arange(6).reshape(2, 3)
    for lib in (tg, torch):
        got = lib.take_along_dim(lib.tensor(x), lib.tensor([5, 0], dtype=lib.int32))
        assert got.tolist() == [5, 0]
        with pytest.raises(RuntimeError, match="dtype of indices should be Long but got Int"):
            lib.take_along_dim(lib.tensor(x), lib.tensor([[0]], dtype=lib.int32), 1)


@pytest.mark.parametrize("call", [
    lambda lib: lib.arange(lib.tensor([3])),                 # was read as 3
    lambda lib: lib.arange(lib.tensor([[3.0]])),
    lambda lib: lib.arange(0, 3, lib.tensor([0.5])),
    lambda lib: lib.arange(lib.tensor([0]), 3),
    lambda lib: lib.logspace(0, 1, 3, base=lib.tensor([2.0])),
])
def test_number_arguments_take_0d_tensors_only(call):
    for lib in (torch, tg):
        with pytest.raises(TypeError):
            call(lib)


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
def test_range_number_arguments_take_0d_tensors_only():
    for lib in (torch, tg):
        with pytest.raises(TypeError, match=r"range\(\): argument 'end' \(position 2\) must be "
                                            r"Number, not Tensor"):
            lib.range(0, lib.tensor([2]))
    assert tg.range(tg.tensor(0), tg.tensor(2.0)).tolist() == [0.0, 1.0, 2.0]


def test_0d_tensor_range_arguments_are_read():
    for fn in (lambda lib: lib.arange(lib.tensor(3)), lambda lib: lib.arange(lib.tensor(0.5), 3),
               lambda lib: lib.logspace(0, 1, 3, base=lib.tensor(2.0))):
        got, want = fn(tg), fn(torch)
        assert got.dtype == getattr(tg, str(want.dtype).split(".")[1])
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_logspace_past_an_integer_range_is_quiet():
    # numpy's "invalid value encountered in cast" RuntimeWarning leaked
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tg.logspace(0, 30, 3, dtype=tg.int64)
    assert got.tolist() == torch.logspace(0, 30, 3, dtype=torch.int64).tolist()


@pytest.mark.parametrize("eq, shapes", [("i,i->i", [(0,), (1,)]), ("i,i->i", [(1,), (0,)]),
                                        ("bij,bjk->bik", [(0, 2, 3), (1, 3, 2)])])
def test_einsum_broadcasts_a_kept_size_1_subscript_against_0(eq, shapes):
    # the kept size was max(1, 0) = 1: an expand error
    def run(lib):
        xs = [lib.ones(s, dtype=lib.float64, requires_grad=True) for s in shapes]
        out = lib.einsum(eq, *xs)
        return [out] + list(lib.autograd.grad(out.sum(), xs, allow_unused=True))
    for got, want in zip(run(tg), run(torch)):
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def test_profiler_counts_no_flops_for_a_batch_broadcast_to_0():
    # the batch of (0, 2, 3) @ (1, 3, 2) was counted as 1 matrix product, not 0
    def flops(lib):
        from importlib import import_module
        profiler = import_module(f"{lib.__name__}.profiler")
        with profiler.profile(activities=[profiler.ProfilerActivity.CPU], with_flops=True) as prof:
            lib.matmul(lib.ones(0, 2, 3), lib.ones(1, 3, 2))
            lib.matmul(lib.ones(2, 2, 3), lib.ones(1, 3, 2))
        return sum(e.flops for e in prof.key_averages() if e.flops)
    assert flops(tg) == flops(torch) == 48
