"""Second derivatives (create_graph=True, then a Hessian-vector product) through layers whose
backward re-runs a composite, where one input depends on another: a recurrent layer's h0
computed from its input, one weight in several slots, and a tapegrad.compile'd call whose
argument is computed from another argument or from a parameter the call reads.  Each is
compared with PyTorch (float64, both levels) and checked by finite differences."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _values(seed, *shape):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape)


def _set_params(lib, module, seed):
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for _, p in sorted(module.named_parameters()):
            p.copy_(lib.tensor(rng.uniform(-0.7, 0.7, tuple(p.shape))))
    return module


def _grad_and_hvp(lib, outs, xs):
    """g = d(sum_k outs[k] * w_k)/dxs with create_graph, then d(sum_i g_i * v_i)/dxs."""
    total = 0
    for k, o in enumerate(outs):
        total = total + (o * lib.tensor(_values(50 + k, *o.shape))).sum()
    g = lib.autograd.grad(total, xs, create_graph=True, allow_unused=True)
    s = sum((gi * lib.tensor(_values(70 + i, *gi.shape))).sum()
            for i, gi in enumerate(g) if gi is not None)
    h = lib.autograd.grad(s, xs, allow_unused=True)
    return ([None if t is None else t.detach().numpy() for t in g],
            [None if t is None else t.numpy() for t in h])


def _assert_same(want, got):
    for level_w, level_g in zip(want, got):
        for a, b in zip(level_w, level_g):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def _recurrent(lib, mode, bidirectional):
    m = _set_params(lib, getattr(lib.nn, mode)(3, 4, bidirectional=bidirectional).double(), 1)
    x = lib.tensor(_values(2, 5, 2, 3), requires_grad=True)
    d = 2 if bidirectional else 1
    # the initial state is a function of the input: the layer's input and h0 share a history
    h0 = lib.tanh(x.sum(0).repeat(1, 2)[:, :4]).unsqueeze(0).expand(d, -1, -1)
    if mode == "LSTM":
        out, (h, c) = m(x, (h0, lib.sin(x[0]).repeat(1, 2)[:, :4].expand(d, -1, -1)))
        outs = (out, h, c)
    else:
        out, h = m(x, h0)
        outs = (out, h)
    return outs, [x] + list(m.parameters())


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("mode", ["RNN", "GRU", "LSTM"])
def test_recurrent_create_graph_with_h0_from_input(mode, bidirectional):
    # SILENT before: under create_graph the layer's backward re-ran its steps and asked for the
    # gradient by x and by h0 = f(x) itself, so x's included the path through h0, which the
    # sweep added again (the first-order gradient was wrong, not only the second)
    want = _grad_and_hvp(torch, *_recurrent(torch, mode, bidirectional))
    got = _grad_and_hvp(tapegrad, *_recurrent(tapegrad, mode, bidirectional))
    _assert_same(want, got)


def _finite_difference_check(f, x):
    """f's create_graph gradient against central differences of f, and the derivative of that
    gradient along v (a Hessian-vector product) against central differences of the gradient
    (float64; gradgradcheck alone would not see a wrong create_graph gradient: it checks the
    derivative of whatever that gradient is)."""
    w = tapegrad.tensor(_values(90, *f(x).shape))

    def scalar(a):
        return float((f(a) * w).sum())

    def gradient(a, create_graph):
        a = a.detach().requires_grad_()
        return a, tapegrad.autograd.grad((f(a) * w).sum(), a, create_graph=create_graph)[0]

    a, g = gradient(x, True)
    eps = 1e-6
    base = x.detach().numpy()
    numeric = np.zeros(base.shape)
    for i in np.ndindex(base.shape):
        step = np.zeros(base.shape)
        step[i] = eps
        numeric[i] = (scalar(tapegrad.tensor(base + step))
                      - scalar(tapegrad.tensor(base - step))) / (2 * eps)
    np.testing.assert_allclose(g.detach().numpy(), numeric, rtol=1e-6, atol=1e-8)
    v = _values(91, *base.shape)
    hvp = tapegrad.autograd.grad((g * tapegrad.tensor(v)).sum(), a)[0].numpy()
    plus = gradient(tapegrad.tensor(base + eps * v), True)[1].detach().numpy()
    minus = gradient(tapegrad.tensor(base - eps * v), True)[1].detach().numpy()
    np.testing.assert_allclose(hvp, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", ["RNN", "GRU", "LSTM"])
def test_recurrent_h0_from_input_finite_differences(mode):
    m = _set_params(tapegrad, getattr(tapegrad.nn, mode)(2, 2).double(), 3)
    x = tapegrad.tensor(_values(4, 3, 1, 2))

    def f(x):
        h0 = tapegrad.tanh(x[0]).unsqueeze(0)
        state = (h0, x[1].unsqueeze(0) * 0.5) if mode == "LSTM" else h0
        return m(x, state)[0]

    _finite_difference_check(f, x)


def _one_weight_everywhere(lib):
    m = _set_params(lib, lib.nn.GRU(3, 3, bidirectional=True).double(), 5)
    x = lib.tensor(_values(6, 3, 2, 3), requires_grad=True)
    w = lib.tensor(_values(7, 9, 3), requires_grad=True)
    weights = {n: w for n, _ in m.named_parameters() if "weight" in n}
    out, h = lib.func.functional_call(m, weights, (x, x[:2] * 1.0))
    return (out, h), [x, w]


def test_recurrent_one_weight_in_every_slot_create_graph():
    # SILENT before: each of the four weight slots got the gradient of all four
    _assert_same(_grad_and_hvp(torch, *_one_weight_everywhere(torch)),
                 _grad_and_hvp(tapegrad, *_one_weight_everywhere(tapegrad)))


def _linear(lib):
    lin = lib.nn.Linear(3, 3).double()
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(_values(8, 3, 3)))
        lin.bias.copy_(lib.tensor(_values(9, 3)))
    return lin


def _compiled_calls(lib, how, compiled):
    lin = _linear(lib)

    def f(a, b):
        return lib.tanh(lin(a)) * b + a * a * b

    def f_list(ab):
        return f(ab[0], ab[1])

    cf = lib.compile(f) if compiled else f
    cf_list = lib.compile(f_list) if compiled else f_list
    results = []
    for it in range(3):             # the first call captures, the next ones replay
        x = lib.tensor(_values(10 + it, 2, 3), requires_grad=True)
        if how == "arg_from_arg":
            o = cf(x, lib.sin(x) * 2)
        elif how == "first_from_second":
            o = cf(lib.sin(x), x)
        elif how == "in_a_list":
            o = cf_list([x, lib.cos(x)])
        else:                       # an argument computed from a parameter the call reads
            o = cf(x, x.sum() * lin.weight.sum())
        results.append(_grad_and_hvp(lib, [o], [x, lin.weight, lin.bias]))
    return results


@pytest.mark.parametrize("how", ["arg_from_arg", "first_from_second", "in_a_list",
                                 "arg_from_parameter"])
def test_compiled_call_create_graph_argument_from_other_input(how):
    # SILENT before: a replayed call's create_graph backward re-ran the call on its arguments
    # and asked for the gradient by each of them (and by the parameters it reads), so one
    # computed from another (or from a parameter) made the other collect that path twice
    want = _compiled_calls(torch, how, False)
    got = _compiled_calls(tapegrad, how, True)
    for w, g in zip(want, got):
        _assert_same(w, g)


def test_compiled_call_argument_from_argument_finite_differences():
    lin = _linear(tapegrad)
    cf = tapegrad.compile(lambda a, b: tapegrad.tanh(lin(a)) * b)
    x = tapegrad.tensor(_values(13, 2, 3), requires_grad=True)
    cf(x, tapegrad.sin(x))          # captured: the checks' calls replay
    _finite_difference_check(lambda a: cf(a, tapegrad.sin(a)), x)
