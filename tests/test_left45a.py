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


# -- recurrent layers: their steps are their cells' ------------------------------------------------

def _copy_cell_weights(lib, layer, cells, layer_index, direction):
    """Cell k's weights from the layer's layer_index/direction."""
    suffix = f"_l{layer_index}" + ("_reverse" if direction else "")
    with lib.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            source = getattr(layer, name + suffix, None)
            if source is not None:
                getattr(cells, name).copy_(source)


def _cell_loop(cell, x, h, reverse):
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    outs = [None] * x.shape[0]
    for t in steps:
        h = cell(x[t], h)
        outs[t] = h
    return outs, h


def _layer_vs_cells(lib, kind, dtype, bias, batch_first, bidirectional, num_layers, h0_given,
                    sizes, seed=0):
    """(layer output, cell-loop output, layer params' grads, cells' grads) for one config, the
    weights drawn by numpy (the same for tapegrad and PyTorch)."""
    I, H, B, T = sizes
    layer = getattr(lib.nn, kind)(I, H, num_layers=num_layers, bias=bias,
                                  batch_first=batch_first, bidirectional=bidirectional).to(dtype)
    weights = np.random.default_rng(seed + 1)
    with lib.no_grad():
        for p in layer.parameters():
            p.copy_(lib.tensor(weights.uniform(-0.3, 0.3, tuple(p.shape)), dtype=dtype))
    D = 2 if bidirectional else 1
    rng = np.random.default_rng(seed)
    x_np = rng.standard_normal((B, T, I) if batch_first else (T, B, I))
    h0_np = rng.standard_normal((num_layers * D, B, H))
    w_np = rng.standard_normal((B, T, D * H) if batch_first else (T, B, D * H))
    x = lib.tensor(x_np, dtype=dtype)
    h0 = lib.tensor(h0_np, dtype=dtype) if h0_given else None
    out, hn = layer(x, h0)
    (out * lib.tensor(w_np, dtype=dtype)).sum().backward()
    layer_grads = {n: p.grad.numpy().copy() for n, p in layer.named_parameters()}
    # the same computation by cells, layer by layer and direction by direction
    seq = x.transpose(0, 1) if batch_first else x
    cell_grads = {}
    cells = {}
    inp = seq
    for li in range(num_layers):
        dir_outs = []
        for d in range(D):
            cell = getattr(lib.nn, kind + "Cell")(inp.shape[-1], H, bias=bias).to(dtype)
            _copy_cell_weights(lib, layer, cell, li, d)
            cells[(li, d)] = cell
            h = (lib.tensor(h0_np[li * D + d], dtype=dtype) if h0_given
                 else lib.zeros(B, H, dtype=dtype))
            outs, _ = _cell_loop(cell, inp, h, d == 1)
            dir_outs.append(lib.stack(outs))
        inp = dir_outs[0] if D == 1 else lib.cat(dir_outs, -1)
    cell_out = inp.transpose(0, 1) if batch_first else inp
    (cell_out * lib.tensor(w_np, dtype=dtype)).sum().backward()
    for (li, d), cell in cells.items():
        suffix = f"_l{li}" + ("_reverse" if d else "")
        for n, p in cell.named_parameters():
            cell_grads[n + suffix] = p.grad.numpy().copy()
    return out.detach().numpy(), cell_out.detach().numpy(), layer_grads, cell_grads


_CONFIGS = [
    # (dtype, bias, batch_first, bidirectional, num_layers, h0 given, (I, H, B, T))
    ("float32", True, False, False, 1, False, (10, 20, 3, 6)),
    ("float32", False, False, False, 1, True, (10, 20, 3, 6)),
    ("float32", True, True, True, 2, True, (32, 64, 8, 10)),
    ("float64", True, False, True, 2, False, (10, 20, 3, 6)),
    ("float64", False, True, False, 1, True, (20, 48, 16, 12)),
    ("float32", True, False, False, 1, True, (50, 128, 32, 20)),
]


@pytest.mark.parametrize("kind", ["RNN", "GRU"])
@pytest.mark.parametrize("config", _CONFIGS)
def test_recurrent_layer_equals_its_cells_bit_for_bit(kind, config):
    # PyTorch's CPU RNN/GRU layer runs its cell's ops at each step: `torch.all(torch.eq(h_cell,
    # h_layer))` is True there; tapegrad's layer folded b_hh into the input bias, ran fast-math
    # tanh/sigmoid and its own GRU form, and its cells' linear summed in another order
    dtype_name, bias, batch_first, bidirectional, num_layers, h0_given, sizes = config
    dtype = getattr(tg, dtype_name)
    out, cell_out, layer_grads, cell_grads = _layer_vs_cells(
        tg, kind, dtype, bias, batch_first, bidirectional, num_layers, h0_given, sizes)
    np.testing.assert_array_equal(out, cell_out)
    assert bool(tg.all(tg.eq(tg.tensor(out), tg.tensor(cell_out))))
    # (the gradients are the same sums in another order: close, not equal bits)
    tol = 1e-4 if dtype_name == "float32" else 1e-11
    for name, g in cell_grads.items():
        np.testing.assert_allclose(layer_grads[name], g, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", ["RNN", "GRU"])
def test_recurrent_layer_against_pytorch(kind, torch_bits):
    # where PyTorch's own tanh and sigmoid round as tapegrad's, the layer is PyTorch's bit for
    # bit (products, biases, the cell's ops); everywhere within float32 rounding
    args = ("float32", True, False, False, 1, True, (32, 64, 8, 10))
    ours = _layer_vs_cells(tg, kind, tg.float32, *args[1:])
    theirs = _layer_vs_cells(torch, kind, torch.float32, *args[1:])
    assert np.array_equal(theirs[0], theirs[1])          # PyTorch's layer is its cells'
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    for name, g in theirs[2].items():
        np.testing.assert_allclose(ours[2][name], g, rtol=1e-4, atol=1e-5)


def test_linear_few_rows_sums_in_k_order(torch_bits):
    # PyTorch's (MKL's) float32 mm of a few rows sums each entry in k order; numpy's OpenBLAS
    # did not (8 x 32 @ 32 x 32: other last bits); a row's value no longer depends on how many
    # rows the product has (a layer projects all steps at once, its cell one step)
    rng = np.random.default_rng(5)
    for dtype in ("float32", "float64"):
        for M, K, N in ((8, 32, 32), (16, 64, 96), (8, 33, 64), (5, 100, 60)):
            x = rng.standard_normal((M, K)).astype(dtype)
            w = rng.standard_normal((N, K)).astype(dtype)
            b = rng.standard_normal(N).astype(dtype)
            ours = tg.nn.functional.linear(tg.tensor(x), tg.tensor(w), tg.tensor(b)).numpy()
            theirs = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w),
                                                torch.tensor(b)).numpy()
            torch_bits.assert_equal(ours, theirs)
            rows = tg.nn.functional.linear(tg.tensor(np.tile(x, (5, 1))), tg.tensor(w),
                                           tg.tensor(b)).numpy()
            np.testing.assert_array_equal(rows[:M], ours)


@pytest.mark.parametrize("kind", ["RNN", "GRU"])
def test_recurrent_layer_gradients_finite_differences(kind, gradcheck):
    layer = getattr(tg.nn, kind)(3, 4, bias=True).double()
    w_ih, w_hh, b_ih, b_hh = (p.detach().numpy().copy() for p in layer.parameters())
    fn = tg.rnn_tanh if kind == "RNN" else tg.gru

    def run(x, h0, wi, wh, bi, bh):
        out, hn = fn(x, h0, [wi, wh, bi, bh], True, 1, 0.0, False, False, False)
        return out.sum() + hn.sum() * 0.5

    rng = np.random.default_rng(2)
    gradcheck(run, rng.standard_normal((5, 2, 3)), rng.standard_normal((1, 2, 4)),
              w_ih, w_hh, b_ih, b_hh)
