"""Regressions found by differential sweeps of argument forms against PyTorch (sweep3):
nn.utils.rnn, torch.distributions and the indexing functions."""
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn.utils import rnn as tg_rnn

torch = pytest.importorskip("torch")
from torch.nn.utils import rnn as torch_rnn  # noqa: E402


# ---- nn.utils.rnn ---------------------------------------------------------------------------

@pytest.mark.parametrize("lengths, enforce_sorted", [
    ([[3, 2, 1]], True), ([[3, 2, 1]], False), (3, True), (3, False)])
def test_pack_padded_sequence_rejects_lengths_that_are_not_1d_as_pytorch(lengths, enforce_sorted):
    def run(lib, rnn):
        try:
            rnn.pack_padded_sequence(lib.zeros(3, 3, 2), lib.tensor(lengths),
                                     enforce_sorted=enforce_sorted)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return type(e), str(e).split(",")[0]
        return None
    assert run(tg, tg_rnn) == run(torch, torch_rnn)


@pytest.mark.parametrize("method", ["half", "long", "int", "short", "char", "byte", "double",
                                    "float", "is_pinned"])
def test_packed_sequence_has_the_conversions_of_pytorch(method):
    def run(lib, rnn):
        packed = rnn.pack_sequence([lib.ones(3, 2), lib.ones(1, 2)])
        out = getattr(packed, method)()
        return out if isinstance(out, bool) else (str(out.data.dtype), out.batch_sizes.tolist())
    assert run(tg, tg_rnn) == run(torch, torch_rnn)


# ---- distributions ---------------------------------------------------------------------------

BETA_A = [0.5, 1.0, 2.0, 0.5, 3.0, 1.0, 1.0]
BETA_B = [0.5, 1.0, 3.0, 3.0, 0.5, 0.5, 2.0]


def _values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def test_beta_mode_follows_pytorch_at_and_below_concentration_one():
    # SILENT before: (a - 1) / (a + b - 2) gave 0.5, -0.33, 1.33 and -0.0 where PyTorch's
    # Dirichlet rule gives 1, 0, 1 and nan
    expected = torch.distributions.Beta(torch.tensor(BETA_A), torch.tensor(BETA_B)).mode
    got = tg.distributions.Beta(tg.tensor(BETA_A), tg.tensor(BETA_B)).mode
    np.testing.assert_allclose(_values(got), _values(expected), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("concentration", [
    [[0.5, 0.5, 2.0], [0.5, 0.7, 0.2], [1.0, 1.0, 1.0], [2.0, 1.0, 0.5], [2.0, 3.0, 4.0]],
    [0.3, 0.9],
])
def test_dirichlet_mode_and_its_gradient_match_pytorch(concentration):
    def run(lib):
        c = lib.tensor(concentration, dtype=lib.float64, requires_grad=True)
        mode = lib.distributions.Dirichlet(c).mode
        weights = lib.tensor(np.arange(1.0, mode.shape[-1] + 1), dtype=lib.float64)
        (grad,) = lib.autograd.grad((mode * weights).sum(), c)
        return _values(mode), _values(grad)
    for got, expected in zip(run(tg), run(torch)):
        np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("count, param", [(3, {"probs": [0.2, 0.7]}),
                                          ([[2.0], [2.0]], {"logits": [0.2, -0.7]}),
                                          (0, {"probs": [0.5]})])
def test_binomial_entropy_and_enumerate_support_match_pytorch(count, param):
    def run(lib):
        (name, value), = param.items()
        p = lib.tensor(value, dtype=lib.float64, requires_grad=True)
        d = lib.distributions.Binomial(lib.tensor(count, dtype=lib.float64), **{name: p})
        entropy = d.entropy()
        (grad,) = lib.autograd.grad(entropy.sum(), p)
        return (d.has_enumerate_support, d.enumerate_support().tolist(),
                d.enumerate_support(expand=False).tolist(), _values(entropy), _values(grad))
    got, expected = run(tg), run(torch)
    assert got[:3] == expected[:3]
    for g, e in zip(got[3:], expected[3:]):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)


def test_binomial_entropy_of_mixed_counts_raises_as_pytorch():
    d = tg.distributions.Binomial(tg.tensor([2.0, 3.0]), tg.tensor([0.2, 0.7]))
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        d.entropy()
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        d.enumerate_support()


def test_independent_of_no_reinterpreted_dims_keeps_the_base_support():
    base = tg.distributions.Normal(tg.zeros(2), tg.ones(2))
    assert tg.distributions.Independent(base, 0).support is base.support
    assert tg.distributions.Independent(base, 1).support.event_dim == 1


@pytest.mark.parametrize("make, value", [
    (lambda D, lib: D.Beta(lib.tensor([2.0, 1.0, 0.5]), lib.tensor([1.0, 0.5, 1.0])),
     [1.0, 0.0, 0.0]),
    (lambda D, lib: D.Dirichlet(lib.tensor([[1.0, 2.0], [3.0, 1.0]])), [[0.0, 1.0], [1.0, 0.0]]),
    (lambda D, lib: D.Gamma(lib.tensor([1.0, 1.0, 2.0]), lib.tensor([1.0, 3.0, 3.0])),
     [0.0, -1.0, 0.5]),
    (lambda D, lib: D.Chi2(lib.tensor([2.0, 4.0])), [0.0, 0.0]),
])
def test_log_prob_at_a_boundary_with_concentration_one_matches_pytorch(make, value):
    # SILENT before: (c - 1) * log(0) = 0 * -inf gave nan where PyTorch's xlogy gives 0
    def run(lib):
        dist = make(lib.distributions, lib)
        dist._validate_args = False
        return _values(dist.log_prob(lib.tensor(value)))
    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-6)


def test_beta_and_gamma_log_prob_gradients_match_pytorch():
    def run(lib):
        a = lib.tensor([2.0, 1.0, 0.7], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([1.5, 0.5, 1.0], dtype=lib.float64, requires_grad=True)
        value = lib.tensor([0.3, 0.0, 0.9], dtype=lib.float64)
        lp = (lib.distributions.Beta(a, b, validate_args=False).log_prob(value).sum()
              + lib.distributions.Gamma(a, b).log_prob(value + 0.5).sum())
        return [_values(g) for g in lib.autograd.grad(lp, (a, b))]
    for got, expected in zip(run(tg), run(torch)):
        np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_gamma_log_prob_reads_the_value_in_the_parameters_dtype():
    def run(lib):
        d = lib.distributions.Gamma(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 3.0]))
        out = d.log_prob(lib.tensor([0.5, 0.25], dtype=lib.float64))
        return str(out.dtype), _values(d.log_prob([0.5, 0.25])).round(5).tolist()
    assert run(tg) == run(torch)


def test_beta_log_prob_of_a_half_precision_value_is_computed_in_the_parameters_dtype():
    def run(lib):
        d = lib.distributions.Beta(lib.tensor([2.0]), lib.tensor([3.0]))
        return d.log_prob(lib.tensor([0.5], dtype=lib.float16))
    got, expected = run(tg), run(torch)
    assert str(got.dtype) == str(expected.dtype)
    np.testing.assert_allclose(_values(got), _values(expected), rtol=1e-6)


def test_one_hot_categorical_log_prob_takes_a_bool_value():
    def run(lib):
        d = lib.distributions.OneHotCategorical(probs=lib.tensor([[0.2, 0.8], [0.6, 0.4]]))
        return _values(d.log_prob(lib.tensor([[True, False], [False, True]])))
    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-6)


def test_poisson_log_prob_rejects_a_list_value_as_pytorch():
    d = tg.distributions.Poisson(tg.tensor([1.0, 2.0]), validate_args=False)
    with pytest.raises(ValueError, match="Input arguments must all be"):
        d.log_prob([1.0, 2.0])


def test_expanded_multivariate_normal_names_only_the_matrix_it_was_given():
    def run(lib):
        d = lib.distributions.MultivariateNormal(lib.zeros(2), lib.eye(2) * 2)
        expanded = d.expand((3,))
        return repr(expanded).replace("torch.", "").replace("tapegrad.", ""), \
            _values(expanded.scale_tril).tolist()
    assert run(tg) == run(torch)


def test_geometric_of_a_sure_success_is_impossible_past_zero_failures():
    # SILENT before: clamped probs gave log_prob -36.04 (and gradient +1) where PyTorch gives -inf
    def run(lib):
        p = lib.tensor([1.0, 0.5, 1.0], dtype=lib.float64, requires_grad=True)
        lp = lib.distributions.Geometric(p).log_prob(lib.tensor([1.0, 2.0, 0.0],
                                                                dtype=lib.float64))
        (grad,) = lib.autograd.grad(lp.sum(), p)
        return _values(lp), _values(grad)
    for got, expected in zip(run(tg), run(torch)):
        np.testing.assert_array_equal(got, expected)


# ---- indexing functions ------------------------------------------------------------------------

def _raised(fn):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the type and words are what is compared
        return type(e).__name__, str(e)
    return "ok", tuple(out.shape), out.tolist()


@pytest.mark.parametrize("call", [
    lambda T, x, s: T.scatter_add(x, 0, T.tensor(0), s),
    lambda T, x, s: T.scatter_reduce(x, 0, T.tensor(0), s, "prod"),
    lambda T, x, s: T.scatter_reduce(x, 0, T.tensor(0), s, "mean"),
    lambda T, x, s: x.index_add(0, T.tensor(0), s),
    lambda T, x, s: x.index_reduce(0, T.tensor(0), s, "amax"),
    lambda T, x, s: x.index_reduce(0, T.tensor([0]), s, "prod"),
])
def test_accumulating_writes_into_a_0d_tensor_stay_0d(call):
    # SILENT before: numpy's ascontiguousarray turned the 0-d result into shape (1,)
    def run(T):
        x = T.tensor(1.5, requires_grad=True)
        s = T.tensor(2.0, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # index_reduce's "in beta"
            y = call(T, x, s)
        grads = T.autograd.grad(y * 3, (x, s))
        return tuple(y.shape), y.item(), [tuple(g.shape) for g in grads], [g.item() for g in grads]
    assert run(tg) == run(torch)


@pytest.mark.parametrize("call", [
    lambda T: T.zeros(3, 4).index_add(0, T.tensor([0, 1]), T.ones(3, 4)),
    lambda T: T.zeros(3, 4).index_add(1, T.tensor([0]), T.ones(4)),
    lambda T: T.zeros(3, 4).index_add(0, T.tensor([[0]]), T.ones(1, 4)),
    lambda T: T.zeros(3, 4).index_add(0, T.tensor([0.0]), T.ones(1, 4)),
    lambda T: T.zeros(3, 4).index_add(0, T.tensor([0]), 2.0),
    lambda T: T.zeros(3, 4).index_copy(0, T.tensor([0, 1]), T.ones(2, 5)),
    lambda T: T.zeros(3, 4, 2).index_copy(1, T.tensor([0, 1]), T.ones(3, 2, 3)),
    lambda T: T.tensor(1.0).index_copy(0, T.tensor([0]), T.tensor([2.0, 3.0])),
    lambda T: T.tensor([1.0, 2.0]).index_copy(0, T.tensor([1]), T.tensor(5.0)),
    lambda T: T.scatter_add(T.zeros(3, 4), 0, T.tensor([[0]]), T.ones(1, 1, dtype=T.float64)),
    lambda T: T.scatter_reduce(T.zeros(2), 0, T.tensor([0]), T.ones(1, dtype=T.float64), "sum"),
])
def test_index_add_and_index_copy_check_their_arguments_as_pytorch(call):
    assert _raised(lambda: call(tg)) == _raised(lambda: call(torch))


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("call", [
    # SILENT before: a float index was accepted, and bool and complex inputs reduced
    lambda T: T.tensor([1.0]).index_reduce(0, T.tensor([0.0]), T.tensor([1.0]), "prod"),
    lambda T: T.tensor([True]).index_reduce(0, T.tensor([0]), T.tensor([True]), "prod"),
    lambda T: T.tensor([1j]).index_reduce(0, T.tensor([0]), T.tensor([1j]), "amax"),
    lambda T: T.zeros(3, 4).index_reduce(0, T.tensor([5]), T.ones(1, 4), "prod"),
    lambda T: T.zeros(3, 4).index_reduce(0, T.tensor([-1]), T.ones(1, 4), "amin"),
    lambda T: T.zeros(3, 4).index_reduce(0, T.tensor([0, 1]), T.ones(2, 5), "prod"),
    lambda T: T.zeros(3, 4).index_reduce(1, T.tensor([0]), T.ones(4), "mean"),
    lambda T: T.zeros(3, 4).index_reduce(0, T.tensor([0, 1]), T.ones(3, 4), "prod"),
    lambda T: T.zeros(3, 4).index_reduce(0, T.tensor([[0]]), T.ones(1, 4), "prod"),
    lambda T: T.zeros(3, 4).index_reduce(0, T.tensor([0]), 2.0, "prod"),
    lambda T: T.tensor([1.0]).index_reduce(0, T.tensor([0]), T.tensor([1.0], dtype=T.float64),
                                           "prod"),
    lambda T: T.tensor(1.0).index_reduce(0, T.tensor([0]), T.tensor([2.0]), "amax"),
    lambda T: T.tensor([1.0, 2.0]).index_reduce(0, T.tensor([0]), T.tensor(2.0), "amax"),
    lambda T: T.tensor([-7, 3]).index_reduce(0, T.tensor([0, 0]), T.tensor([1, 2]), "mean"),
    lambda T: T.tensor([[1.0, 2.0], [3.0, 4.0]]).index_reduce(
        1, T.tensor([1, 1, 0]), T.tensor([[5.0, 6.0, 7.0], [0.5, 2.0, 9.0]]), "amax",
        include_self=False),
])
def test_index_reduce_checks_and_values_match_pytorch(call):
    assert _raised(lambda: call(tg)) == _raised(lambda: call(torch))


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_index_reduce_gradient_node_is_named_as_pytorch():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.index_reduce(0, tg.tensor([0]), tg.tensor([3.0]), "prod")
    assert y.grad_fn.name() == "IndexReduceBackward0"


def test_poisson_of_a_0d_rate_is_0d():
    assert tg.poisson(tg.tensor(2.0)).shape == torch.poisson(torch.tensor(2.0)).shape


@pytest.mark.parametrize("reduce", ["amax", "amin", "prod", "mean", "sum"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_scatter_reduce_of_0d_tensors_differentiates(reduce, create_graph):
    def run(T):
        x = T.tensor(1.5, requires_grad=True)
        s = T.tensor(1.5, requires_grad=True)
        y = T.scatter_reduce(x, 0, T.tensor(0), s, reduce)
        grads = T.autograd.grad(y * 3, (x, s), create_graph=create_graph)
        return tuple(y.shape), y.item(), [(tuple(g.shape), g.item()) for g in grads]
    assert run(tg) == run(torch)


@pytest.mark.parametrize("index", [[0, 0], [], [0], [1]])
def test_index_select_of_a_0d_tensor_takes_one_index(index):
    def run(T):
        return _raised(lambda: T.tensor(3.0).index_select(0, T.tensor(index, dtype=T.int64)))
    assert run(tg) == run(torch)


# ---- fft of 0-d inputs and dim arguments (a sibling of the 0-d ascontiguousarray bug) ----------

FFT_NAMES = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "fftn", "ifftn", "rfftn",
             "irfftn", "rfft2", "hfftn", "ihfftn", "fftshift", "ifftshift"]


@pytest.mark.parametrize("name", FFT_NAMES)
@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"dim": -1}, {"dim": (0,)}, {"dim": ()}])
def test_fft_of_a_0d_tensor_matches_pytorch(name, kwargs):
    # SILENT before: fftn / ifftn / fft2(dim=()) of a 0-d tensor returned shape (1,)
    def run(T):
        return _raised(lambda: getattr(T.fft, name)(T.tensor(3.0), **kwargs))
    assert run(tg) == run(torch)


@pytest.mark.parametrize("name", ["fft", "rfft", "fft2", "rfftn", "irfftn", "hfft2", "fftshift"])
@pytest.mark.parametrize("kwargs", [{"dim": ()}, {"dim": (0,)}, {"dim": 1.0}, {"dim": True}])
def test_fft_dim_argument_forms_match_pytorch(name, kwargs):
    def run(T):
        out = _raised(lambda: getattr(T.fft, name)(T.ones(3, 4), **kwargs))
        return out[:2] if out[0] == "ok" else out
    assert run(tg) == run(torch)


@pytest.mark.parametrize("call", [
    lambda T: T.scatter_reduce(T.tensor([True, False]), 0, T.tensor([0, 0]),
                               T.tensor([True, True]), "mean"),
    lambda T: T.scatter_reduce(T.tensor([1j, 2]), 0, T.tensor([0, 0]), T.tensor([1j, 2]), "amax"),
    lambda T: T.scatter_reduce(T.tensor([1j, 2]), 0, T.tensor([0, 0]), T.tensor([1j, 2]), "amin"),
    lambda T: T.scatter_reduce(T.tensor([1j]), 0, T.tensor([0, 0]), T.tensor([1j, 2]), "mean"),
    lambda T: T.scatter_reduce(T.tensor([1j]), 0, T.tensor([0, 0]), T.tensor([1j, 2]), "mean",
                               include_self=False),
    lambda T: T.unique(T.tensor([1j, 2, 1j])),
    lambda T: T.unique(T.tensor([[1j, 2], [1j, 2]]), dim=0),
    lambda T: T.unique_consecutive(T.tensor([1j, 1j, 2])),
    lambda T: T.unique_consecutive(T.tensor([[1j, 2], [1j, 2]]), dim=0),
    lambda T: T.topk(T.tensor([True, False]), 1),
    lambda T: T.histogram(T.tensor([1.0, 2.0], dtype=T.float16), bins=2),
    lambda T: T.histogram(T.tensor([1.0, 2.0], dtype=T.float16),
                          bins=T.tensor([0.0, 1.0, 2.0], dtype=T.float16)).hist,
    lambda T: T.searchsorted(T.tensor([False, True]), T.tensor([0.5, 2.0], dtype=T.float64)),
    lambda T: T.bucketize(T.tensor([True, False]), T.tensor([0.5, 2.5])),
    lambda T: T.bucketize(T.tensor([True, False]), T.tensor([False, True])),
    lambda T: T.searchsorted(T.tensor([1.0, 2.0]), T.tensor([1j])),
    lambda T: T.bucketize(T.tensor([1j]), T.tensor([1.0, 2.0])),
])
def test_dtype_support_of_reductions_and_searches_matches_pytorch(call):
    # accepting what PyTorch refuses (bool mean, complex order, complex unique), and refusing
    # what it takes (a bool sequence searched for float values)
    def run(T):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _raised(lambda: call(T))
        if out[0] == "ok":
            return out[:2] + (np.round(np.asarray(out[2], dtype=complex), 6).tolist(),)
        return out
    assert run(tg) == run(torch)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("shape, batch_first", [((0, 2, 3), False), ((0, 3), False),
                                                ((2, 0, 3), True), ((2, 0, 3), False)])
def test_recurrent_layers_refuse_an_empty_sequence_as_pytorch(kind, shape, batch_first):
    # before: an empty sequence returned an empty output and zero final states
    def run(T):
        T.manual_seed(0)
        layer = getattr(T.nn, kind)(3, 4, batch_first=batch_first)
        out = _raised(lambda: layer(T.zeros(*shape))[0])
        return out[:2]
    assert run(tg) == run(torch)


@pytest.mark.parametrize("kind", ["RNN", "GRU"])
def test_packed_batch_checks_its_initial_state_by_size_as_pytorch(kind):
    def run(T, rnn):
        T.manual_seed(0)
        layer = getattr(T.nn, kind)(3, 4)
        packed = rnn.pack_sequence([T.ones(3, 3), T.ones(2, 3)])
        return _raised(lambda: layer(packed, T.zeros(2, 4))[0].data)
    assert run(tg, tg_rnn) == run(torch, torch_rnn)


@pytest.mark.parametrize("call", [
    lambda T, rnn: rnn.PackedSequence((T.tensor([[1.0], [2.0], [3.0]]), T.tensor([2, 1]))),
    lambda T, rnn: rnn.PackedSequence(T.tensor([[1.0], [2.0], [3.0]])),
    lambda T, rnn: rnn.PackedSequence(T.tensor([[1.0], [2.0], [3.0]]), T.tensor([2, 1]),
                                      T.tensor([1, 0])),
    lambda T, rnn: rnn.pack_padded_sequence(T.zeros(2, 0), []),
    lambda T, rnn: rnn.invert_permutation(T.tensor([2, 0, 1])),
    lambda T, rnn: rnn.invert_permutation(None),
])
def test_packed_sequence_construction_matches_pytorch(call):
    def run(T, rnn):
        try:
            out = call(T, rnn)
        except Exception as e:  # noqa: BLE001 - the type and words are what is compared
            return type(e).__name__, str(e)
        if out is None:
            return None
        if isinstance(out, tuple):
            return [None if x is None else x.tolist() for x in out]
        return out.tolist()
    assert run(tg, tg_rnn) == run(torch, torch_rnn)


def test_rnn_utils_export_the_names_of_pytorch():
    assert sorted(tg_rnn.__all__) == sorted(torch_rnn.__all__)


@pytest.mark.parametrize("make_args", [
    lambda T, rnn: (rnn.pack_sequence([T.ones(2, 3, dtype=T.float64)]),),
    lambda T, rnn: (rnn.pack_sequence([T.ones(2, 3, dtype=T.int64)]),),
    lambda T, rnn: (rnn.pack_sequence([T.ones(2, 3)]), (T.zeros(1, 4), T.zeros(1, 4))),
])
def test_packed_lstm_errors_have_pytorch_types(make_args):
    # PyTorch's LSTM runs no argument checks on a packed batch; its kernel raises instead
    def run(T, rnn):
        T.manual_seed(0)
        try:
            T.nn.LSTM(3, 4)(*make_args(T, rnn))
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return type(e).__name__
        return "ok"
    assert run(tg, tg_rnn) == run(torch, torch_rnn)


@pytest.mark.parametrize("indices, dim", [([[-1], [-3]], 1), ([[7, -7, 100]], 1),
                                          ([[7, -7, 100]], 0), ([[3]], 1), ([[-1, 0, -2]], 0)])
def test_take_along_dim_takes_indices_modulo_the_dim_size(indices, dim):
    # before: a negative or past-the-end index raised where PyTorch wraps it
    def run(T):
        x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        y = T.take_along_dim(x, T.tensor(indices), dim)
        (grad,) = T.autograd.grad((y * T.arange(1.0, y.numel() + 1).reshape(y.shape)).sum(), x)
        return y.tolist(), grad.tolist()
    assert run(tg) == run(torch)


@pytest.mark.parametrize("call", [
    lambda T: T.take_along_dim(T.tensor([[1.0, 2.0]]), T.tensor([-1, 0])),
    lambda T: T.take_along_dim(T.zeros(2, 0), T.tensor([[1]]), 1),
    # SILENT before: int32 indices were accepted where PyTorch refuses them
    lambda T: T.zeros(2, 3).index_fill(1, T.tensor([1], dtype=T.int32), 0.0),
    lambda T: T.zeros(2, 3).index_fill(1, T.tensor([[1]]), 0.0),
    lambda T: T.zeros(2, 3).index_fill(1, T.tensor([[1.0]]), 0.0),
    lambda T: T.zeros(2, 3).index_copy(1, T.tensor([1], dtype=T.int32), T.ones(2, 1)),
    lambda T: T.zeros(2, 3).index_copy(1, T.tensor([[1]]), T.ones(2, 1)),
    lambda T: T.zeros(2, 3).index_copy(1, T.tensor([1, 0], dtype=T.int32), T.ones(2, 1)),
    lambda T: T.zeros(2, 3).index_copy(1, T.tensor([1]), T.ones(2, 1, dtype=T.float64)),
])
def test_index_fill_index_copy_and_take_along_dim_check_indices_as_pytorch(call):
    assert _raised(lambda: call(tg)) == _raised(lambda: call(torch))
