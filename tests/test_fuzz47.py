"""Regressions found by differential fuzzing (session fuzz47), each checked against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    """(exception type, message) or ('ok', result dtype) of fn()."""
    try:
        r = fn()
    except Exception as e:      # noqa: BLE001 (the exception is the outcome compared)
        return type(e).__name__, str(e)
    r = r[0] if isinstance(r, tuple) else r
    return "ok", str(r.dtype)


# -- bfloat16 operands of two floating dtypes where PyTorch refuses the mix ----------------------
# A bfloat16 tensor is a float32 array marked by its class; an op computed whole on the storage
# saw one dtype and promoted silently where PyTorch's kernel refuses (fuzz 67302167, 67303134).

def _mixed_calls(L):
    B = L.bfloat16
    x, w, v = L.ones(2, 3).to(B), L.ones(3, 3), L.ones(3)
    F = L.nn.functional
    return {
        "mha": lambda: L.nn.MultiheadAttention(3, 1)(x, x, x),
        "mha_empty": lambda: L.nn.MultiheadAttention(1, 1)(*[L.zeros(2, 0, 1).to(B)] * 3,
                                                          need_weights=False),
        "mha_kdim": lambda: L.nn.MultiheadAttention(3, 1, kdim=2, vdim=2)(x, x[:, :2], x[:, :2]),
        "mha_batch_first": lambda: L.nn.MultiheadAttention(3, 1, batch_first=True)(
            x[None], x[None], x[None]),
        "encoder_layer": lambda: L.nn.TransformerEncoderLayer(4, 1, 8, dropout=0.0)(
            L.ones(2, 4).to(B)),
        "multi_dot": lambda: L.linalg.multi_dot([x, w, w]),
        "multi_dot_last": lambda: L.linalg.multi_dot([x, w.to(B), w]),
        "vecdot": lambda: L.linalg.vecdot(x, w[:2]),
        "cross_entropy_weight": lambda: F.cross_entropy(x.float(), L.tensor([0, 1]),
                                                        weight=v.to(B)),
        "cross_entropy_smoothing": lambda: F.cross_entropy(
            x.float(), L.tensor([0, 1]), weight=v.to(B), label_smoothing=0.1),
        "embedding_bag": lambda: F.embedding_bag(L.tensor([[0, 1]]), w.to(B),
                                                 per_sample_weights=L.ones(1, 2), mode="sum"),
        "embedding_bag_psw": lambda: F.embedding_bag(
            L.tensor([[0, 1]]), w, per_sample_weights=L.ones(1, 2).to(B), mode="sum"),
        "grid_sample": lambda: F.grid_sample(L.ones(1, 1, 2, 2).to(B), L.zeros(1, 1, 1, 2),
                                             align_corners=False),
        "conv_tbc": lambda: L.conv_tbc(L.ones(2, 1, 3).to(B), L.ones(1, 3, 2), L.ones(2)),
    }


KEY_PHRASES = {"mha": "same dtype", "mha_empty": "same dtype", "mha_kdim": "same dtype",
               "mha_batch_first": "same dtype", "encoder_layer": "same dtype",
               "multi_dot": "all tensors must have be the same dtype",
               "multi_dot_last": "all tensors must have be the same dtype",
               "vecdot": "Expected x and y to have the same dtype",
               "cross_entropy_weight": "expected scalar type Float but found BFloat16",
               "cross_entropy_smoothing": "expected scalar type Float but found BFloat16",
               "embedding_bag": "to have the same type as tensor",
               "embedding_bag_psw": "to have the same type as tensor",
               "grid_sample": "expected scalar type BFloat16 but found Float",
               "conv_tbc": "must have the same dtype"}


@pytest.mark.parametrize("name", sorted(KEY_PHRASES))
def test_bfloat16_mixed_dtype_refused_as_pytorch(name):
    want = _outcome(_mixed_calls(torch)[name])
    got = _outcome(_mixed_calls(tg)[name])
    assert want[0] == "RuntimeError" and KEY_PHRASES[name] in want[1]
    assert got[0] == want[0] and KEY_PHRASES[name] in got[1], got


def test_bfloat16_calls_pytorch_allows_still_run():
    # (the same ops where the dtypes agree, or where PyTorch lets one operand differ)
    def calls(L):
        B = L.bfloat16
        x, w, v = L.ones(2, 3).to(B), L.ones(3, 3), L.ones(3)
        F = L.nn.functional
        return [
            lambda: L.linalg.multi_dot([x, w.to(B), w.to(B)]),
            lambda: L.linalg.vecdot(x, x),
            lambda: F.cross_entropy(x.float(), x.float().softmax(-1), weight=v.to(B)),
            lambda: F.cross_entropy(x, L.tensor([0, 1]), weight=v.to(B)),
            lambda: L.conv_tbc(L.ones(2, 1, 3).to(B), L.ones(1, 3, 2).to(B), L.ones(2)),
            lambda: L.conv_tbc(L.ones(2, 1, 3), L.ones(1, 3, 2), L.ones(2).to(B)),
            lambda: L.nn.MultiheadAttention(3, 1).to(B)(x, x, x),
        ]
    for mine, theirs in zip(calls(tg), calls(torch)):
        assert _outcome(mine) == _outcome(theirs)


def test_conv_tbc_bfloat16_result_has_the_input_dtype():
    # a float32 bias promoted the result to float32 (SILENT dtype; PyTorch: the input's dtype)
    def run(L):
        x = L.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 1, 3) / 7).to(L.bfloat16)
        w = L.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(1, 3, 2)).to(L.bfloat16)
        y = L.conv_tbc(x, w, L.tensor([0.1, -0.2]))
        return y.dtype, y.float().numpy()
    (dt, got), (want_dt, want) = run(tg), run(torch)
    assert str(dt) == str(want_dt) == "torch.bfloat16"
    # (PyTorch adds the bias into a bfloat16 product: bfloat16 rounding apart)
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=1e-3)


# -- LSTM under CPU autocast: cast only where PyTorch's oneDNN kernel runs ------------------------

def _lstm_dtypes(L, x_shape, packed=False, x_dtype=None, grad=True):
    L.manual_seed(0)
    m = L.nn.LSTM(2, 2)
    if x_dtype is not None:
        m = m.to(getattr(L, x_dtype))
    x = L.zeros(x_shape, dtype=getattr(L, x_dtype or "float32"))
    if packed:
        x = L.nn.utils.rnn.pack_padded_sequence(x, [x_shape[0], 1])
    with L.autocast("cpu", dtype=L.bfloat16), L.set_grad_enabled(grad):
        y, (h, c) = m(x)
    return str((y.data if packed else y).dtype), str(h.dtype), str(c.dtype)


@pytest.mark.parametrize("case", [
    dict(x_shape=(2, 0, 2)), dict(x_shape=(3, 2, 2), packed=True), dict(x_shape=(2, 1, 2)),
    dict(x_shape=(2, 2)), dict(x_shape=(2, 1, 2), x_dtype="float16"),
    dict(x_shape=(2, 1, 2), x_dtype="float16", grad=False), dict(x_shape=(2, 1, 2),
                                                               x_dtype="float64")])
def test_lstm_autocast_dtype_matches_pytorch(case):
    # an empty batch or a packed sequence misses PyTorch's oneDNN kernel (where autocast casts):
    # float32 results, where tapegrad gave bfloat16 (SILENT dtype; fuzz 67302467, 67303629)
    assert _lstm_dtypes(tg, **case) == _lstm_dtypes(torch, **case)


def test_packed_lstm_under_autocast_stays_close_to_pytorch():
    def run(L):
        rng = np.random.default_rng(1)
        m = L.nn.LSTM(3, 2)
        with L.no_grad():
            for _, p in m.named_parameters():
                p.copy_(L.tensor(rng.standard_normal(tuple(p.shape)).astype("float32")))
        x = L.tensor(rng.standard_normal((4, 2, 3)).astype("float32"), requires_grad=True)
        p = L.nn.utils.rnn.pack_padded_sequence(x, [4, 2])
        with L.autocast("cpu", dtype=L.bfloat16):
            y, (h, _) = m(p)
        (y.data.sum() + h.sum()).backward()
        return y.data.detach().numpy(), x.grad.numpy(), str(m.weight_ih_l0.grad.dtype)
    got, want = run(tg), run(torch)
    assert got[2] == want[2] == "torch.float32"
    # (its matmuls run in bfloat16 in both: agreement to bfloat16's precision)
    np.testing.assert_allclose(got[0], want[0], atol=2e-2)
    np.testing.assert_allclose(got[1], want[1], atol=2e-2)


# -- create_graph gradients of bfloat16 ops reaching inputs of another dtype ----------------------

def test_group_norm_create_graph_parameter_gradients_keep_their_dtype():
    # a bfloat16 activation through a float32 GroupNorm: the create_graph backward (differentiable
    # ops on the bfloat16 input) gave bfloat16 weight and bias gradients; PyTorch's engine casts
    # each gradient to its input's dtype (SILENT dtype; fuzz 67302431)
    def run(L):
        rng = np.random.default_rng(3)
        m = L.nn.GroupNorm(2, 4)
        x = L.tensor(rng.standard_normal((2, 4, 3)).astype("float32")).to(L.bfloat16)
        x.requires_grad_()
        W = L.tensor(rng.standard_normal((2, 4, 3)).astype("float32")).to(L.bfloat16)
        gs = L.autograd.grad((m(x) * W).sum(), [x, m.weight, m.bias], create_graph=True)
        return [(str(g.dtype), g.detach().float().numpy()) for g in gs]
    got, want = run(tg), run(torch)
    assert [d for d, _ in got] == [d for d, _ in want] == [
        "torch.bfloat16", "torch.float32", "torch.float32"]
    for (_, a), (_, b) in zip(got[1:], want[1:]):
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("input_dtype", ["float32", "float16"])
def test_custom_function_bfloat16_gradient_cast_to_the_input_dtype(input_dtype):
    def run(L):
        class Twice(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return (g * 2).to(L.bfloat16)
        x = L.tensor([0.3, -1.7], dtype=getattr(L, input_dtype), requires_grad=True)
        g, = L.autograd.grad(Twice.apply(x).sum(), x, create_graph=True)
        return str(g.dtype), g.detach().double().numpy(), g.requires_grad
    got, want = run(tg), run(torch)
    assert got[0] == want[0] == f"torch.{input_dtype}" and got[2] == want[2]
    np.testing.assert_array_equal(got[1], want[1])


# -- custom Functions returning an input (or a view of one) of dtype bfloat16 --------------------

def _identity_outputs(L):
    class Identity(L.autograd.Function):
        @staticmethod
        def forward(ctx, *ts):
            return ts if len(ts) > 1 else ts[0]

        @staticmethod
        def backward(ctx, *gs):
            return gs

    class Flat(L.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.view(-1)

        @staticmethod
        def backward(ctx, g):
            return g.view(2, 2)
    x = L.tensor([[0.5, -1.25], [2.0, 3.0]]).to(L.bfloat16).requires_grad_()
    y = L.tensor([[1.5, 0.25], [-2.0, 1.0]]).to(L.bfloat16)
    outs = [Identity.apply(x), Identity.apply(x, y)[1], Identity.apply(y), Flat.apply(x)]
    (outs[0] * outs[1]).sum().backward()
    return [(str(o.dtype), o.requires_grad) for o in outs] + [(str(x.grad.dtype),
                                                               x.grad.float().tolist())]


def test_function_returning_its_bfloat16_input_keeps_the_dtype():
    # the output made a view of the input's float32 storage read float32 (SILENT dtype)
    assert _identity_outputs(tg) == _identity_outputs(torch)


@pytest.mark.parametrize("module_dtype", ["float32", "bfloat16"])
def test_module_backward_hook_passes_bfloat16_inputs_on(module_dtype):
    # a full backward hook wraps the module's inputs in an identity Function, whose bfloat16
    # output read float32: a float32 Linear ran on a bfloat16 input (PyTorch refuses) and a
    # bfloat16 Linear refused it (fuzz 67400028)
    def run(L):
        m = L.nn.Linear(2, 3)
        with L.no_grad():
            m.weight.copy_(L.tensor([[0.5, -0.25], [1.0, 2.0], [-1.5, 0.75]]))
            m.bias.copy_(L.tensor([0.125, -0.5, 1.0]))
        m = m.to(getattr(L, module_dtype))
        seen = []
        m.register_full_backward_hook(lambda mod, gi, go: seen.append(str(gi[0].dtype)))
        x = L.tensor([[0.5, -1.0], [2.0, 0.25]]).to(L.bfloat16).requires_grad_()
        try:
            y = m(x)
        except RuntimeError as e:
            return "RuntimeError", "same dtype" in str(e)
        y.float().sum().backward()
        return str(y.dtype), str(x.grad.dtype), seen, x.grad.float().tolist()
    assert run(tg) == run(torch)


# -- error precedence ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["empty_dim", "zero_dim", "other_dim", "bool_0d"])
def test_kthvalue_of_bool_checks_the_size_first(case):
    def run(L):
        x = {"empty_dim": L.zeros(0, 3, dtype=L.bool), "zero_dim": L.zeros(2, 0, dtype=L.bool),
             "other_dim": L.zeros(0, 3, dtype=L.bool), "bool_0d": L.tensor(True)}[case]
        dim = {"empty_dim": 0, "zero_dim": 1, "other_dim": 1, "bool_0d": 0}[case]
        return _outcome(lambda: x.kthvalue(1, dim).values)
    got, want = run(tg), run(torch)
    assert got[0] == want[0] and got[1].split(":")[0] == want[1].split(":")[0]


def test_integer_mean_dtype_error_before_the_dim_check():
    def run(L):
        return _outcome(lambda: L.tensor([[1, 2]]).mean(-3))
    got, want = run(tg), run(torch)
    assert got[0] == want[0] == "RuntimeError" and "could not infer output dtype" in got[1]


# -- batch norm of an empty batch ---------------------------------------------------------------

@pytest.mark.parametrize("param_dtype", ["float64", "bfloat16", "float32"])
def test_batch_norm_of_an_empty_bfloat16_batch_skips_the_kernel_dtype_rule(param_dtype):
    # PyTorch returns an empty input's copy before its kernel's mixed-dtype check
    def run(L):
        m = L.nn.BatchNorm1d(2).to(getattr(L, param_dtype))
        x = L.ones(0, 2, 3).to(L.bfloat16).requires_grad_()
        y = m(x)
        y.sum().backward()
        return (str(y.dtype), tuple(y.shape), m.running_mean.tolist(), m.running_var.tolist(),
                int(m.num_batches_tracked), str(m.weight.grad.dtype), m.weight.grad.tolist())
    assert run(tg) == run(torch)


def test_native_batch_norm_refuses_an_empty_input_in_training():
    for L in (tg, torch):
        x = L.ones(0, 2, 2)
        with pytest.raises(RuntimeError, match="input tensor must have at least one element"):
            L.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
        assert tuple(L.native_batch_norm(x, None, None, L.zeros(2), L.ones(2), False, 0.1,
                                         1e-5)[0].shape) == (0, 2, 2)


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("shape, dim", [((2, 0), 1), ((2, 0), 0), ((), 0), ((), None),
                                        ((2, 3), 1)])
def test_median_of_bool_checks_an_empty_dim_first(name, shape, dim):
    def run(L):
        x = L.zeros(shape, dtype=L.bool)
        return _outcome(lambda: getattr(x, name)() if dim is None else getattr(x, name)(dim))
    got, want = run(tg), run(torch)
    assert got == want


# -- module full backward hooks and create_graph ------------------------------------------------

@pytest.mark.parametrize("scale", [None, 2.0])
def test_full_backward_hook_runs_once_per_backward_pass_with_create_graph(scale):
    # the hook's call kept the outputs' gradients after running: the double backward, reaching
    # the input identity alone, ran the hook again and scaled the second derivative (SILENT;
    # PyTorch's BackwardHook resets them, fuzz 67401624)
    def run(L):
        lin = L.nn.Linear(2, 2, bias=False).double()
        lin.weight = L.nn.Parameter(L.tensor([[1.7, 0.27], [0.68, 0.24]], dtype=L.float64))
        x = L.tensor([[0.8, 1.6], [0.2, 2.0]], dtype=L.float64, requires_grad=True)
        calls = []

        def hook(mod, gi, go):
            calls.append(1)
            return None if scale is None else tuple(None if g is None else g * scale for g in gi)
        lin.register_full_backward_hook(hook)
        y = lin(L.tanh(x))
        W = L.tensor([[0.3, -1.2], [0.5, 0.7]], dtype=L.float64)
        G = L.autograd.grad((y * W).sum(), [lin.weight, x], create_graph=True)
        G2 = L.autograd.grad(sum((g * 1.5).sum() for g in G), [lin.weight, x])
        return len(calls), [g.detach().numpy() for g in G + G2]
    (n, got), (m, want) = run(tg), run(torch)
    assert n == m
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
