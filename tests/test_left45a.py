"""Session 45 (left45a): differences from PyTorch the last session found and left -- the recurrent
layers against their cells, hardsigmoid/hardswish bits, the samplers' float parameters, arange's
tensor bounds, and out= views of another shape than the result's (index_select, gather)."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _same_bits(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    finite = ~np.isnan(theirs)
    assert (np.signbit(ours[finite]) == np.signbit(theirs[finite])).all()


# -- hardsigmoid / hardswish: PyTorch's kernels' expressions --------------------------------------

_SPECIAL = [np.inf, -np.inf, np.nan, 3.0, -3.0, 0.0, -0.0, 2.9999999, -2.99999, 1e30, -1e30]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", ["hardsigmoid", "hardswish"])
def test_hard_activations_bits_and_gradients(dtype, name):
    # hardsigmoid was x / 6 + 1/2 (PyTorch: clamp(x + 3, 0, 6) / 6) and its gradient grad / 6
    # (PyTorch: grad * float32(1/6), in float64 too); hardswish's x >= 3 piece was x (PyTorch:
    # x * 6 / 6) -- last-bit differences in thousands of 10,000 values
    rng = np.random.default_rng(3)
    with np.errstate(over="ignore"):
        x = np.concatenate([rng.standard_normal(10000) * 4, _SPECIAL]).astype(dtype)
    g = rng.standard_normal(x.size).astype(dtype)
    t = torch.tensor(x, requires_grad=True)
    y = getattr(torch.nn.functional, name)(t)
    y.backward(torch.tensor(g))
    a = tg.tensor(x, requires_grad=True)
    b = getattr(tg.nn.functional, name)(a)
    b.backward(tg.tensor(g))
    _same_bits(b.detach().numpy(), y.detach().numpy())
    _same_bits(a.grad.numpy(), t.grad.numpy())
    assert type(b.grad_fn).__name__ == type(y.grad_fn).__name__
    ti, ai = torch.tensor(x), tg.tensor(x)
    getattr(torch.nn.functional, name)(ti, inplace=True)
    getattr(tg.nn.functional, name)(ai, inplace=True)
    _same_bits(ai.numpy(), ti.numpy())


def test_hardsigmoid_float64_gradient_is_float32_sixth():
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    tg.nn.functional.hardsigmoid(x).sum().backward()
    assert x.grad.tolist() == [0.1666666716337204] * 3


# -- the in-place samplers' float parameters, arange's bounds -------------------------------------

def _outcome(fn):
    try:
        fn()
    except Exception as error:      # noqa: BLE001 - the type is what is compared
        return type(error), str(error)
    return None, None


@pytest.mark.parametrize("call", [
    lambda m, lib: lib.empty(3).normal_(m, 1.0),
    lambda m, lib: lib.empty(3).normal_(0.0, m),
    lambda m, lib: lib.empty(3).uniform_(m, 2.0),
    lambda m, lib: lib.empty(3).uniform_(-2.0, m),
    lambda m, lib: lib.empty(3).normal_(1j),
    lambda m, lib: lib.arange(0, 5, m),
    lambda m, lib: lib.arange(m),
    lambda m, lib: lib.arange(m, 5),
])
def test_number_parameters_refuse_tensors_requiring_grad(call):
    t_kind, t_msg = _outcome(lambda: call(torch.ones((), requires_grad=True), torch))
    g_kind, g_msg = _outcome(lambda: call(tg.ones((), requires_grad=True), tg))
    assert t_kind is TypeError and g_kind is TypeError
    assert g_msg.split(" - ")[0].split("(position")[0] == t_msg.split(" - ")[0].split("(position")[0]
    assert ("must be float, not" in t_msg) == ("must be float, not" in g_msg)


def test_number_parameters_take_plain_zero_dim_tensors():
    for lib in (torch, tg):
        lib.manual_seed(0)
        assert lib.empty(4).normal_(lib.tensor(5.0), lib.tensor(0.0)).tolist() == [5.0] * 4
        assert lib.empty(4).uniform_(lib.tensor(1), lib.tensor(1.0)).tolist() == [1.0] * 4
        assert lib.arange(0, 5, lib.tensor(2.0)).tolist() == [0.0, 2.0, 4.0]


# -- out= views of another shape than the result ---------------------------------------------------

def _out_cases(lib):
    y = lib.rand(3, 6)
    yield lambda: lib.index_select(y, 1, lib.tensor([0, 1]), out=lib.rand(1, 6).expand(2, 6))
    ind = lib.tensor([2, 1, 0])
    # gather resizes out first (a view of ind) and finds it overlapping its index
    yield lambda: lib.gather(ind.clone(), 0, ind[1:], out=ind[:1])
    yield lambda: lib.exp(y, out=lib.rand(1, 6).expand(2, 6))
    yield lambda: lib.take(y, lib.tensor([0, 1, 2]), out=lib.rand(1, 5).expand(2, 5))


@pytest.mark.parametrize("k", range(4))
def test_out_view_of_other_shape_overlap_errors(k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_kind, t_msg = _outcome(list(_out_cases(torch))[k])
        g_kind, g_msg = _outcome(list(_out_cases(tg))[k])
    assert t_kind is RuntimeError and g_kind is RuntimeError
    assert t_msg.startswith("unsupported operation")
    assert g_msg == t_msg


def test_out_view_of_other_shape_still_refused_without_overlap():
    # PyTorch resizes such a view and computes; tapegrad refuses by design (it cannot re-point a
    # view), but only once PyTorch's own checks have passed
    z = tg.zeros(4, 4)
    with pytest.warns(UserWarning, match="was resized"):
        with pytest.raises(RuntimeError, match="cannot resize a view"):
            tg.index_select(tg.rand(3, 6), 0, tg.tensor([0, 1]), out=z[:2, :3])
    with pytest.warns(UserWarning, match="was resized"):
        with pytest.raises(RuntimeError, match="cannot resize a view"):
            tg.gather(tg.rand(3, 6), 1, tg.tensor([[0, 1]] * 3), out=tg.rand(1, 6).expand(2, 6))
