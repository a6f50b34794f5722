"""Leftovers reported by this session's helpers, each checked against PyTorch: create_graph
gradients of a kernel node's unsaved arguments, packed-LSTM size errors, the return types'
attributes, matrix constraints given fewer than two dims."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:      # (the type and the message are what is compared)
        return (type(e).__name__, str(e))


# -- create_graph: every output of a backward node that reads a saved input requires grad -----

@pytest.mark.parametrize("conv", ["conv1d", "conv2d"])
def test_conv_bias_gradient_requires_grad_under_create_graph(conv):
    # PyTorch's ConvolutionBackward0 reads the input and the weight, so its bias gradient (a sum
    # of the output gradient) requires grad too; tapegrad's did not, and differentiating it
    # raised "element 0 of tensors does not require grad"
    rng = np.random.default_rng(0)
    spatial = (5,) if conv == "conv1d" else (5, 4)
    arrays = [rng.random((2, 3) + spatial), rng.random((4, 3) + (2,) * len(spatial)),
              rng.random(4)]

    def run(lib):
        X, W, B = (lib.tensor(a, requires_grad=True) for a in arrays)
        grads = lib.autograd.grad(getattr(lib.nn.functional, conv)(X, W, B).pow(2).sum(),
                                  [X, W, B], create_graph=True)
        flags = [g.requires_grad for g in grads]
        grads[2].sum().backward()
        return flags, [None if t.grad is None else t.grad.numpy() for t in (X, W, B)]

    (ours, our_grads), (theirs, their_grads) = run(tg), run(torch)
    assert ours == theirs == [True, True, True]
    for a, b in zip(our_grads, their_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_linear_bias_gradient_still_has_no_graph():
    # (linear's bias gradient is a sum of the output gradient in PyTorch too: no graph)
    rng = np.random.default_rng(1)
    arrays = [rng.random((2, 5)), rng.random((4, 5)), rng.random(4)]

    def run(lib):
        X, W, B = (lib.tensor(a, requires_grad=True) for a in arrays)
        grads = lib.autograd.grad(lib.nn.functional.linear(X, W, B).sum(), [X, W, B],
                                  create_graph=True)
        return [g.requires_grad for g in grads]

    assert run(tg) == run(torch)


# -- packed LSTM: PyTorch skips the argument checks, its kernel refuses the sizes ----------------

def _packed_lstm_errors(lib):
    from importlib import import_module
    pack = import_module(lib.__name__ + ".nn.utils.rnn").pack_padded_sequence
    lib.manual_seed(0)
    m = lib.nn.LSTM(3, 2)
    packed = pack(lib.ones(3, 2, 3), [3, 1])
    cases = [lambda: m(pack(lib.ones(3, 2, 4), [3, 1])),
             lambda: m(pack(lib.ones(3, 2, 5), [3, 1])),
             lambda: m(lib.ones(3, 2, 4)),
             lambda: m(packed, (lib.zeros(1, 3, 2), lib.zeros(1, 2, 2))),
             lambda: m(packed, (lib.zeros(1, 2, 2), lib.zeros(1, 3, 2))),
             lambda: m(lib.ones(3, 2, 3), (lib.zeros(1, 3, 2), lib.zeros(1, 3, 2))),
             lambda: lib.nn.GRU(3, 2)(pack(lib.ones(3, 2, 4), [3, 1]))]
    return [_outcome(lambda: (f(), None)[1]) for f in cases]


def test_packed_lstm_size_errors_match_pytorch():
    assert _packed_lstm_errors(tg) == _packed_lstm_errors(torch)


# -- return types: PyTorch's struct sequences, no namedtuple `_fields` -------------------------

def _return_types(lib):
    x = lib.tensor([[3., 1., 2.], [0., 5., 4.]])
    sq = lib.tensor([[2., 1.], [1., 3.]])
    return [lib.topk(x, 2), lib.sort(x), lib.max(x, 1), x.min(1), lib.kthvalue(x, 1),
            lib.mode(x), lib.median(x, 1), lib.svd(sq), lib.linalg.qr(sq),
            lib.linalg.slogdet(sq), lib.aminmax(x), lib.cummax(x, 1), lib.linalg.eigh(sq),
            lib.linalg.lu_factor(sq), lib.histogram(x), lib.frexp(x)]


def _shape_of(r):
    t = type(r)
    return (t.__name__, isinstance(r, tuple), len(r), hasattr(r, "_fields"),
            tuple(t.__match_args__), t.n_fields,
            sorted(a for a in dir(r) if not a.startswith("__")),
            type(pickle.loads(pickle.dumps(r))).__name__, repr(r).replace("tapegrad", "torch"))


def test_return_types_have_pytorchs_attributes():
    ours, theirs = _return_types(tg), _return_types(torch)
    for a, b in zip(ours, theirs):
        assert _shape_of(a) == _shape_of(b)


def test_return_type_class_pattern_binds_its_fields():
    match tg.topk(tg.tensor([3.0, 1.0, 2.0]), 2):
        case tg.return_types.topk(values, indices):
            assert values.tolist() == [3.0, 2.0] and indices.tolist() == [0, 2]
        case _:
            pytest.fail("a topk result did not match its own class pattern")


# -- matrix constraints: fewer than two dims are refused (tril's RuntimeError) -----------------

@pytest.mark.parametrize("name", ["lower_cholesky", "lower_triangular", "corr_cholesky"])
@pytest.mark.parametrize("shape", [(2,), (), (2, 2)])
def test_matrix_constraints_refuse_vectors(name, shape):
    # lower_triangular.check(ones(2)) answered False silently; the others raised ValueError
    # or TypeError (numpy's) where PyTorch raises RuntimeError / IndexError
    def run(lib):
        constraint = getattr(__import__(lib.__name__ + ".distributions.constraints",
                                        fromlist=["x"]), name)
        return _outcome(lambda: constraint.check(lib.ones(shape)).tolist())

    assert run(tg) == run(torch)


# -- KL(Uniform || q) where it is infinite: NaN gradients, as PyTorch's -------------------------

@pytest.mark.parametrize("q", ["Gamma", "Beta", "Chi2", "Pareto"])
def test_infinite_uniform_kl_gradients_are_nan(q):
    def run(lib):
        D = __import__(lib.__name__ + ".distributions", fromlist=["x"])
        T = lib.tensor
        other = {"Gamma": lambda: D.Gamma(T([2.]), T([1.])),
                 "Beta": lambda: D.Beta(T([2.]), T([1.])),
                 "Chi2": lambda: D.Chi2(T([2.])),
                 "Pareto": lambda: D.Pareto(T([1.]), T([2.]))}[q]()
        low = T([-3.], requires_grad=True)
        kl = D.kl.kl_divergence(D.Uniform(low, T([3.])), other)
        kl.sum().backward()
        return kl.tolist(), low.grad.tolist()

    ours, theirs = run(tg), run(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])


# -- create_graph: composite pooling/padding ops whose PyTorch node saves the input ------------

@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("op", ["avg", "adaptive_avg", "adaptive_max", "reflect", "replicate",
                                "circular"])
def test_composite_gradients_require_grad_with_the_saved_input(op, nd):
    # PyTorch's AvgPool/AdaptivePool/ReflectionPad/ReplicationPad nodes read self, so their
    # gradient requires grad under create_graph and a penalty on it gives the input zeros;
    # tapegrad's (compositions whose VJPs read only the adjoint) raised "does not require grad"
    # (circular padding is a composition in PyTorch too: no graph)
    arr = np.random.default_rng(nd).random((2, 3) + (6,) * nd)

    def run(lib):
        F = lib.nn.functional
        x = lib.tensor(arr, requires_grad=True)
        y = {"avg": lambda: getattr(F, f"avg_pool{nd}d")(x, 2),
             "adaptive_avg": lambda: getattr(F, f"adaptive_avg_pool{nd}d")(x, 4),
             "adaptive_max": lambda: getattr(F, f"adaptive_max_pool{nd}d")(x, 4),
             "reflect": lambda: F.pad(x, (1, 2) * nd, mode="reflect"),
             "replicate": lambda: F.pad(x, (1, 2) * nd, mode="replicate"),
             "circular": lambda: F.pad(x, (1, 2) * nd, mode="circular")}[op]()
        g, = lib.autograd.grad(y.sum(), [x], create_graph=True)     # (a constant adjoint)
        if not g.requires_grad:
            return False, g.detach().numpy(), None
        (g * g).sum().backward()
        return True, g.detach().numpy(), x.grad.numpy()

    ours, theirs = run(tg), run(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10, atol=1e-12)
    if theirs[2] is not None:
        np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-10, atol=1e-12)
