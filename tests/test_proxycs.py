"""torch.func in research code (proxy corpus 'proxycs'): vmap's refusal of writes into captured
tensors, backward() inside a transform, and the idioms the corpus scripts exercise."""
import pytest

import tapegrad as tg
from tapegrad.func import grad, vmap


# -- in-place writes into a tensor vmap does not map over -----------------------------------------

def _captured_writes(lib):
    """In-place ops writing a batched x into the captured tensor c, with ``lib``'s tensors."""
    i = lib.tensor([0])
    return {
        "index_add_": lambda c, x: c.index_add_(0, i, x[:1]),
        "index_copy_": lambda c, x: c.index_copy_(0, i, x[:1]),
        "scatter_": lambda c, x: c.scatter_(0, i, x[:1]),
        "scatter_add_": lambda c, x: c.scatter_add_(0, i, x[:1]),
        "masked_fill_": lambda c, x: c.masked_fill_(x > 4, 1.0),
        "copy_": lambda c, x: c.copy_(x),
        "addcmul_": lambda c, x: c.addcmul_(x, x),
        "lerp_": lambda c, x: c.lerp_(x, 0.5),
        "clamp_": lambda c, x: c.clamp_(min=x),
        "fill_": lambda c, x: c.fill_(x[0]),
        "put_": lambda c, x: c.put_(i, x[:1]),
        "add_": lambda c, x: c.add_(x),
        "iadd": lambda c, x: c.__iadd__(x),
        "sub_": lambda c, x: c.sub_(x),
    }


_PHRASES = {"index_add_": "vmap: index_add_(", "index_copy_": "vmap: aten::index_copy_(",
            "scatter_": "vmap: aten::scatter_(", "scatter_add_": "vmap: scatter_add_(",
            "masked_fill_": "vmap: inplace arithmetic(", "copy_": "vmap: inplace arithmetic(",
            "addcmul_": "vmap: aten::addcmul_(", "lerp_": "vmap: aten::lerp_(",
            "clamp_": "vmap: aten::clamp_(", "fill_": "vmap: fill_(", "put_": "vmap: aten::put_(",
            "add_": "output with shape [3] doesn't match the broadcast shape [4, 3]",
            "iadd": "output with shape [3] doesn't match the broadcast shape [4, 3]",
            "sub_": "vmap: inplace arithmetic("}


def _write_under_vmap(lib, name, randomness="error"):
    """(error message or None, the captured tensor afterwards)."""
    op = _captured_writes(lib)[name]
    captured = lib.zeros(3)

    def f(x):
        op(captured, x)
        return x * 2
    try:
        lib.func.vmap(f, randomness=randomness)(lib.arange(12.).reshape(4, 3))
    except RuntimeError as e:
        return str(e), captured.tolist()
    return None, captured.tolist()


@pytest.mark.parametrize("name", sorted(_PHRASES))
@pytest.mark.parametrize("randomness", ["error", "different"])
def test_write_into_captured_tensor_is_refused(name, randomness):
    # SILENT before: the batched run failed on the plain tensor's method, vmap then ran the
    # function once per sample, each sample wrote into the same captured tensor and every row
    # of the result was its last state (index_add_ returned [18, 0, 0] four times).  With
    # randomness='different' even add_'s refusal was answered by that loop.
    message, captured = _write_under_vmap(tg, name, randomness)
    assert message is not None and message.startswith(_PHRASES[name])
    assert captured == [0.0, 0.0, 0.0]       # untouched


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name", sorted(_PHRASES))
def test_write_into_captured_tensor_matches_torch(name):
    torch = pytest.importorskip("torch")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (PyTorch's "no batching rule" performance warning)
        expected = _write_under_vmap(torch, name)
    got = _write_under_vmap(tg, name)
    assert got[1] == expected[1]
    assert got[0].split(" is not possible")[0] == expected[0].split(" is not possible")[0]


def test_writes_that_vmap_allows_still_work():
    # into a tensor made from a batched one, into a batched input's clone, an unbatched value
    # into a batched tensor, and a plain tensor's in-place op with plain arguments
    def f(x):
        y = tg.zeros_like(x)
        y.copy_(x)
        z = x.clone()
        z += tg.ones(3)
        z.index_add_(0, tg.tensor([0]), tg.ones(1))
        w = tg.zeros(3)
        w.add_(tg.ones(3))
        return y + z + w
    x = tg.arange(12.).reshape(4, 3)
    out = vmap(f)(x)
    expected = x + x + 1 + 1
    expected[:, 0] += 1
    assert tg.equal(out, expected)


def test_tensor_class_restored_after_vmap():
    before = dict(vars(tg.Tensor))
    vmap(lambda x: x * 2)(tg.ones(2, 3))
    try:
        vmap(lambda x: tg.zeros(3).copy_(x))(tg.ones(2, 3))
    except RuntimeError:
        pass
    assert dict(vars(tg.Tensor)) == before


# -- backward() inside a transform ---------------------------------------------------------------

@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_backward_inside_transform_is_refused(transform):
    def uses_backward(x):
        y = (x ** 2).sum()
        y.backward()
        return y
    fn = grad(uses_backward) if transform == "grad" else vmap(uses_backward)
    with pytest.raises(RuntimeError, match="backward\\(\\) called inside a functorch transform"):
        fn(tg.ones(3) if transform == "grad" else tg.ones(2, 3))
    # and backward works again afterwards
    x = tg.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# -- transforms nested inside grad return plain results -------------------------------------------

# torch.func's hessian (forward-mode) warns about torch.jit.script on first use (torch's own code)
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_grad_of_loss_with_inner_jacrev_returns_plain_gradient():
    # the inner jacrev's fresh input, freed when it returned, was taken for a tensor of the
    # caller's: grad's result then kept its graph (requires_grad, a grad_fn) unlike PyTorch's
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        w1 = lib.tensor([[0.3, -0.2], [0.1, 0.5], [-0.4, 0.2]], dtype=lib.float64)
        w2 = lib.tensor([[0.7, -0.3, 0.2]], dtype=lib.float64)
        x = lib.tensor([0.5, -1.0], dtype=lib.float64)

        def u(p, z):
            return (p["w2"] @ lib.tanh(p["w1"] @ z)).squeeze()

        def loss(p):
            du = lib.func.jacrev(u, argnums=1)(p, x)
            d2u = lib.func.hessian(u, argnums=1)(p, x)
            return u(p, x) * du[0] + d2u.trace()
        g = lib.func.grad(loss)({"w1": w1, "w2": w2})
        results.append(g)
    for k in ("w1", "w2"):
        assert not results[1][k].requires_grad and results[1][k].grad_fn is None
        assert results[1][k].flatten().tolist() == pytest.approx(results[0][k].flatten().tolist(), rel=1e-10)


# -- vmap of class-index losses --------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("sample_dims", [1, 2])
def test_vmap_class_index_loss_matches_torch(loss, reduction, sample_dims):
    torch = pytest.importorskip("torch")
    import numpy as np
    logits = np.sin(np.arange(3 * 5 * 4).reshape(3, 5, 4) * 0.7)
    targets = np.array([[0, 1, 2, 3, 0], [1, 1, 3, 0, 2], [3, 3, 3, 3, 3]])
    results = []
    for lib in (torch, tg):
        x = lib.tensor(logits if sample_dims == 2 else logits[:, 0], dtype=lib.float64,
                       requires_grad=True)
        t = lib.tensor(targets if sample_dims == 2 else targets[:, 0])
        def per_sample(xs, ts):
            # (looked up inside: vmap's wrappers see the call, as F.cross_entropy(...) in a script)
            return getattr(lib.nn.functional, loss)(xs, ts, reduction=reduction, ignore_index=3)
        out = lib.func.vmap(per_sample)(x, t)
        (g,) = lib.autograd.grad(out.nan_to_num().sum(), x)
        results.append((out, g))
    (out_t, g_t), (out_g, g_g) = results
    assert out_g.grad_fn.name() == out_t.grad_fn.name()
    assert out_g.shape == out_t.shape
    np.testing.assert_allclose(out_g.detach().numpy(), out_t.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g_g.numpy(), g_t.numpy(), rtol=1e-12)


# -- attention under vmap ------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("mask", [None, "shared", "batched", "causal"])
def test_vmap_scaled_dot_product_attention_matches_torch(mask):
    torch = pytest.importorskip("torch")
    import numpy as np
    q = np.sin(np.arange(3 * 2 * 4 * 5).reshape(3, 2, 4, 5) * 0.3)
    k = np.cos(np.arange(3 * 2 * 6 * 5).reshape(3, 2, 6, 5) * 0.2)
    v = np.sin(np.arange(2 * 6 * 5).reshape(2, 6, 5) * 0.1)       # shared by the samples
    m = np.arange(3 * 4 * 6).reshape(3, 4, 6) % 3 != 0
    results = []
    for lib in (torch, tg):
        qt = lib.tensor(q, requires_grad=True)
        kt = lib.tensor(k, requires_grad=True)
        vt = lib.tensor(v, requires_grad=True)
        F = lib.nn.functional
        if mask == "batched":
            out = lib.func.vmap(lambda a, b, mm: F.scaled_dot_product_attention(
                a, b, vt, attn_mask=mm))(qt, kt, lib.tensor(m))
        else:
            shared = lib.tensor(m[0]) if mask == "shared" else None
            out = lib.func.vmap(lambda a, b: F.scaled_dot_product_attention(
                a, b, vt, attn_mask=shared, is_causal=mask == "causal"))(qt, kt)
        grads = lib.autograd.grad((out * out).sum(), (qt, kt, vt))
        results.append([out.detach().numpy()] + [g.numpy() for g in grads])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")
def test_per_sample_grads_through_multihead_attention():
    # MultiheadAttention under vmap(grad): its fused path read the array a BatchedTensor has not
    torch = pytest.importorskip("torch")
    import numpy as np
    results = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        attn = lib.nn.MultiheadAttention(4, 2, batch_first=True).double()
        with lib.no_grad():
            for i, p in enumerate(attn.parameters()):
                p.copy_(lib.linspace(-1, 1, p.numel()).reshape(p.shape).sin() * (0.3 + 0.1 * i))
        params = {k: p.detach() for k, p in attn.named_parameters()}
        x = lib.tensor(np.sin(np.arange(3 * 5 * 4).reshape(3, 5, 4) * 0.4))

        def loss(p, sample):
            out, _ = lib.func.functional_call(attn, p, (sample[None],) * 3,
                                              {"need_weights": False})
            return (out ** 2).sum()
        g = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0))(params, x)
        results.append({k: t.numpy() for k, t in g.items()})
        if lib is tg:       # the same, sample by sample
            for i in range(3):
                gi = lib.func.grad(loss)(params, x[i])
                for k in gi:
                    np.testing.assert_allclose(g[k][i].numpy(), gi[k].numpy(), rtol=1e-12,
                                               atol=1e-14)
    # (PyTorch's float64 flash kernel differs from the math kernel by ~1e-8 relative)
    for k in results[0]:
        np.testing.assert_allclose(results[1][k], results[0][k], rtol=1e-6, atol=1e-9)


# -- modules under vmap(grad): per-sample gradients ----------------------------------------------

def _per_sample_grads(lib, make_module, sample_shape):
    import numpy as np
    lib.manual_seed(0)
    module = make_module(lib.nn).double()
    with lib.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(lib.linspace(-1, 1, p.numel()).reshape(p.shape).sin() * (0.4 + 0.1 * i))
    params = {k: p.detach() for k, p in module.named_parameters()}
    n = 2 * int(np.prod(sample_shape))
    x = lib.tensor(np.sin(np.arange(n).reshape((2,) + sample_shape) * 0.37))

    def loss(p, sample):
        return (lib.func.functional_call(module, p, (sample[None],)) ** 2).sum()
    g = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0))(params, x)
    return {k: t.numpy() for k, t in g.items()}


_MODULES = {
    # modules that called their kernel directly, which then read a BatchedTensor's array
    "pixel_shuffle": (lambda nn: nn.Sequential(nn.Conv2d(1, 4, 1), nn.PixelShuffle(2)), (1, 3, 3)),
    "pixel_unshuffle": (lambda nn: nn.Sequential(nn.Conv2d(1, 1, 1), nn.PixelUnshuffle(2)),
                        (1, 4, 4)),
    "channel_shuffle": (lambda nn: nn.Sequential(nn.Conv2d(4, 4, 1), nn.ChannelShuffle(2)),
                        (4, 2, 2)),
    "mish_hardswish": (lambda nn: nn.Sequential(nn.Linear(3, 4), nn.Mish(), nn.Linear(4, 4),
                                                nn.Hardswish()), (3,)),
}


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")
@pytest.mark.parametrize("name", sorted(_MODULES))
def test_per_sample_grads_of_modules_match_torch(name):
    torch = pytest.importorskip("torch")
    import numpy as np
    make, shape = _MODULES[name]
    expected = _per_sample_grads(torch, make, shape)
    got = _per_sample_grads(tg, make, shape)
    for k in expected:
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make, op", [
    (lambda nn: nn.LSTM(4, 6, batch_first=True), "lstm.input"),
    (lambda nn: nn.GRU(4, 6, num_layers=2), "gru.input"),
    (lambda nn: nn.RNN(4, 6), "rnn_tanh.input"),
    (lambda nn: nn.LSTMCell(4, 6), "lstm_cell"),
])
def test_recurrent_layers_under_vmap_refused_as_pytorch(make, op):
    # PyTorch has no batching rule nor fallback for its fused recurrent kernels
    module = make(tg.nn)
    x = tg.ones(2, 5, 4) if op != "lstm_cell" else tg.ones(2, 4)
    with pytest.raises(RuntimeError, match=f"Batching rule not implemented for aten::{op}"):
        vmap(module)(x)
    cell = tg.nn.GRUCell(4, 6)          # (the GRU and RNN cells are composite ops: they map)
    assert vmap(cell)(tg.ones(2, 4)).shape == (2, 6)


def test_isinstance_tensor_inside_vmap():
    # PyTorch's batched tensors are Tensors: code converting non-tensors took the other branch
    seen = []

    def f(x):
        seen.append((isinstance(x, tg.Tensor), tg.is_tensor(x),
                     isinstance(x, tg.nn.Parameter), isinstance(x, tg.Size)))
        return x if isinstance(x, tg.Tensor) else tg.tensor(x)
    vmap(f)(tg.ones(2, 3))
    assert seen == [(True, True, False, False)]
    assert not isinstance(object(), tg.Tensor) and isinstance(tg.ones(1), tg.Tensor)
    assert "__instancecheck__" not in vars(type(tg.Tensor))     # removed after the vmap
