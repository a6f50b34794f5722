"""torch.autocast on the CPU (tapegrad/_autocast.py, tapegrad/amp.py): which ops cast their inputs
and to what, the casts on the graph, the state, nesting, the cache, custom_fwd / custom_bwd and
GradScaler beside it, all against PyTorch."""
import threading
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as TF

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402


def _pair(*shape, seed=0, dtype=np.float32):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return tg.tensor(a), torch.tensor(a)


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


# (name, fn(lib, functional, tensors...), shapes): each runs under tapegrad and torch
_X34, _W54, _A44 = (3, 4), (5, 4), (4, 4)
OPS = [
    # lower_precision_fp
    ("linear", lambda L, Fn, x, w: Fn.linear(x, w), (_X34, _W54)),
    ("matmul", lambda L, Fn, x, a: L.matmul(x, a), (_X34, _A44)),
    ("@", lambda L, Fn, x, a: x @ a, (_X34, _A44)),
    ("Tensor.mm", lambda L, Fn, x, a: x.mm(a), (_X34, _A44)),
    ("mm", lambda L, Fn, x, a: L.mm(x, a), (_X34, _A44)),
    ("bmm", lambda L, Fn, x, a: L.bmm(x[None], a[None]), (_X34, _A44)),
    ("addmm", lambda L, Fn, x, a: L.addmm(a[0], x, a), (_X34, _A44)),
    ("baddbmm", lambda L, Fn, x, a: L.baddbmm(x[None], x[None], a[None]), (_X34, _A44)),
    ("addbmm", lambda L, Fn, x, a: L.addbmm(x, x[None], a[None]), (_X34, _A44)),
    ("conv1d", lambda L, Fn, x, w: Fn.conv1d(x, w), ((1, 2, 5), (3, 2, 2))),
    ("conv2d", lambda L, Fn, x, w: Fn.conv2d(x, w), ((1, 2, 5, 5), (3, 2, 2, 2))),
    ("conv_transpose1d", lambda L, Fn, x, w: Fn.conv_transpose1d(x, w), ((1, 2, 5), (2, 3, 3))),
    ("prelu", lambda L, Fn, x, w: Fn.prelu(x, w[:1]), (_X34, (1,))),
    ("sdpa", lambda L, Fn, q: Fn.scaled_dot_product_attention(q[None], q[None], q[None]),
     (_X34,)),
    ("linalg.vecdot", lambda L, Fn, x: L.linalg.vecdot(x, x), (_X34,)),
    # fp32 (given float16 inputs)
    ("mse_loss", lambda L, Fn, x, y: Fn.mse_loss(x.half(), y.half()), (_X34, _X34)),
    ("l1_loss", lambda L, Fn, x, y: Fn.l1_loss(x.half(), y), (_X34, _X34)),
    ("cross_entropy", lambda L, Fn, x: Fn.cross_entropy(x.half(), L.tensor([0, 1, 2])), (_X34,)),
    ("nll_loss", lambda L, Fn, x: Fn.nll_loss(x.half(), L.tensor([0, 1, 2])), (_X34,)),
    ("bce_with_logits", lambda L, Fn, x, y: Fn.binary_cross_entropy_with_logits(
        x.half(), y.sigmoid()), (_X34, _X34)),
    ("prod", lambda L, Fn, x: x.half().prod(), (_X34,)),
    ("torch.prod", lambda L, Fn, x: L.prod(x.half(), 0), (_X34,)),
    ("cdist", lambda L, Fn, x: L.cdist(x.half(), x.half()), (_X34,)),
    ("linalg.inv", lambda L, Fn, a: L.linalg.inv(a.half() + 4 * L.eye(4).half()), (_A44,)),
    # not listed: the inputs' dtypes
    ("softmax", lambda L, Fn, x: Fn.softmax(x.half(), -1), (_X34,)),
    ("relu", lambda L, Fn, x: Fn.relu(x), (_X34,)),
    ("add", lambda L, Fn, x: x.half() + x, (_X34,)),
    ("sum", lambda L, Fn, x: x.half().sum(), (_X34,)),
    ("mv", lambda L, Fn, a: L.mv(a, a[0]), (_A44,)),
    # promote
    ("cat", lambda L, Fn, x: L.cat([x.half(), x]), (_X34,)),
    ("stack_half", lambda L, Fn, x: L.stack([x.half(), x.half()]), (_X34,)),
    ("stack_double", lambda L, Fn, x: L.stack([x.half(), x.double()]), (_X34,)),
    ("index_copy", lambda L, Fn, x: x.index_copy(0, L.tensor([0]), x[:1].half()), (_X34,)),
    # not cast: float64, integers
    ("mm_float64", lambda L, Fn, x, a: L.mm(x.double(), a.double()), (_X34, _A44)),
    ("mm_int64", lambda L, Fn, x, a: L.mm(x.long(), a.long()), (_X34, _A44)),
    ("linear_half_in", lambda L, Fn, x, w: Fn.linear(x.half(), w.half()), (_X34, _W54)),
]


@pytest.mark.parametrize("name,fn,shapes", OPS, ids=[o[0] for o in OPS])
def test_output_dtype_and_value_as_torch(name, fn, shapes):
    ours, theirs = zip(*(_pair(*s, seed=i) for i, s in enumerate(shapes)))
    with tg.autocast("cpu", dtype=tg.float16):
        got = fn(tg, TF, *ours)
    with torch.autocast("cpu", dtype=torch.float16):
        want = fn(torch, F, *theirs)
    assert _dtype_name(got) == _dtype_name(want)
    tol = 2e-3 if want.dtype == torch.float16 else 1e-5
    np.testing.assert_allclose(got.detach().double().numpy(), want.detach().double().numpy(),
                               rtol=tol, atol=tol)


def test_outside_autocast_nothing_is_cast():
    x, _ = _pair(3, 4)
    assert (x @ x.t()).dtype == tg.float32
    assert TF.linear(x, x).dtype == tg.float32
    assert not tg.is_autocast_enabled("cpu")


class _Net:
    """The same two-layer classifier in either library."""

    def __init__(self, L, seed=0):
        rng = np.random.default_rng(seed)
        self.params = [L.tensor(rng.standard_normal(s).astype(np.float32) * 0.5,
                                requires_grad=True)
                       for s in ((8, 6), (8,), (3, 8), (3,))]

    def loss(self, L, Fn, x, y):
        w1, b1, w2, b2 = self.params
        h = Fn.relu(x @ w1.t() + b1)       # (float16 product + float32 bias: float32)
        logits = Fn.linear(h, w2, b2)       # float16
        return Fn.cross_entropy(logits, y), logits


def test_small_model_forward_backward_float16_as_torch():
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((5, 6)).astype(np.float32)
    ys = np.array([0, 1, 2, 1, 0])
    results = []
    for L, Fn in ((tg, TF), (torch, F)):
        net = _Net(L)
        with L.autocast("cpu", dtype=L.float16):
            loss, logits = net.loss(L, Fn, L.tensor(xs), L.tensor(ys))
        loss.backward()
        results.append((loss, logits, [p.grad for p in net.params]))
    (loss, logits, grads), (tloss, tlogits, tgrads) = results
    assert _dtype_name(logits) == _dtype_name(tlogits) == "float16"
    assert _dtype_name(loss) == _dtype_name(tloss) == "float32"
    np.testing.assert_allclose(logits.detach().double().numpy(),
                               tlogits.detach().double().numpy(), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-3)
    for g, tgrad in zip(grads, tgrads):
        assert g.dtype == tg.float32 and tgrad.dtype == torch.float32
        np.testing.assert_allclose(g.numpy(), tgrad.numpy(), rtol=5e-3, atol=5e-3)


def test_cast_is_on_the_graph_as_torch():
    x, _ = _pair(3, 4)
    w = tg.randn(5, 4, requires_grad=True)
    b = tg.randn(5, requires_grad=True)
    with tg.autocast("cpu", dtype=tg.float16):
        y = TF.linear(x, w, b)
        z = x @ w.t()
    names = [type(n).__name__ if n is not None else None for n, _ in y.grad_fn.next_functions]
    assert type(y.grad_fn).__name__ == "AddmmBackward0"
    assert names == ["ToCopyBackward0", None, "TBackward0"]
    assert [type(n).__name__ if n is not None else None
            for n, _ in z.grad_fn.next_functions] == [None, "ToCopyBackward0"]


def test_state_nesting_and_enabled_false_inside():
    assert tg.get_autocast_dtype("cpu") == tg.bfloat16
    x, _ = _pair(3, 4)
    with tg.autocast("cpu", dtype=tg.float16):
        assert tg.is_autocast_enabled("cpu") and not tg.is_autocast_enabled()
        assert tg.get_autocast_dtype("cpu") == tg.float16
        with tg.autocast("cpu", enabled=False):
            assert not tg.is_autocast_enabled("cpu")
            assert tg.get_autocast_dtype("cpu") == tg.float16     # (the outer one's, as torch)
            assert (x @ x.t()).dtype == tg.float32
        with tg.autocast("cpu"):        # nested, no dtype: the one in effect
            assert (x @ x.t()).dtype == tg.float16
        assert tg.is_autocast_enabled("cpu") and (x @ x.t()).dtype == tg.float16
    assert not tg.is_autocast_enabled("cpu")
    assert tg.get_autocast_dtype("cpu") == tg.bfloat16
    assert (x @ x.t()).dtype == tg.float32


def test_decorator_and_exception_restore_state():
    @tg.autocast("cpu", dtype=tg.float16)
    def forward(x):
        return tg.mm(x, x.t())

    x, _ = _pair(3, 4)
    assert forward(x).dtype == tg.float16
    assert not tg.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError):
        with tg.autocast("cpu", dtype=tg.float16):
            tg.mm(x, x)                 # (3x4 @ 3x4)
    assert not tg.is_autocast_enabled("cpu") and (x @ x.t()).dtype == tg.float32


def test_autocast_is_per_thread():
    x, _ = _pair(3, 4)
    seen = []
    with tg.autocast("cpu", dtype=tg.float16):
        t = threading.Thread(target=lambda: seen.append((x @ x.t()).dtype))
        t.start()
        t.join()
        assert (x @ x.t()).dtype == tg.float16
    assert seen == [tg.float32]


def _cast_node(y):
    """The ToCopyBackward0 a linear's weight went through (behind its TBackward0)."""
    return y.grad_fn.next_functions[2][0].next_functions[0][0]


def test_weight_cache_as_torch():
    lin = tg.nn.Linear(4, 3)
    x = tg.randn(2, 4)
    with tg.autocast("cpu", dtype=tg.float16):
        y1, y2 = lin(x), lin(x)
        assert _cast_node(y1) is _cast_node(y2)
        with tg.no_grad():
            lin(x)
        (y1 + y2).sum().backward()
    assert lin.weight.grad.dtype == tg.float32
    with tg.autocast("cpu", dtype=tg.float16, cache_enabled=False):
        assert not tg.is_autocast_cache_enabled()
        assert _cast_node(lin(x)) is not _cast_node(lin(x))
    assert tg.is_autocast_cache_enabled()
    with tg.autocast("cpu", dtype=tg.float16):     # (the cache was cleared at the exit)
        assert _cast_node(lin(x)) is not _cast_node(y1)


def test_no_grad_cast_is_not_cached():
    # a cast made under no_grad records nothing: reusing it would leave the weight without grad
    lin = tg.nn.Linear(4, 3)
    x = tg.randn(2, 4)
    with tg.autocast("cpu", dtype=tg.float16):
        with tg.no_grad():
            lin(x)
        lin(x).sum().backward()
    assert lin.weight.grad is not None and lin.weight.grad.dtype == tg.float32


def test_cpu_amp_autocast_deprecated_alias():
    with pytest.warns(FutureWarning, match=r"torch\.cpu\.amp\.autocast\(args\.\.\.\)"):
        ctx = tg.cpu.amp.autocast(dtype=tg.float16)
    x, _ = _pair(3, 4)
    with ctx:
        assert (x @ x.t()).dtype == tg.float16
    with pytest.warns(FutureWarning):
        assert tg.cpu.amp.autocast().fast_dtype == tg.bfloat16


def test_unsupported_dtype_warns_and_disables_as_torch():
    with pytest.warns(UserWarning, match="CPU Autocast only supports"):
        ctx = tg.autocast("cpu", dtype=tg.float32)
    x, _ = _pair(3, 4)
    with ctx:
        assert not tg.is_autocast_enabled("cpu")
        assert (x @ x.t()).dtype == tg.float32


def test_bfloat16_refused_at_the_first_cast_not_at_enter():
    x, _ = _pair(3, 4)
    with tg.autocast("cpu"):            # bfloat16 by default
        y = (x.relu() + 1).sum()        # no listed op: runs
        assert y.dtype == tg.float32
        assert (x.long() @ x.long().t()).dtype == tg.int64      # nothing to cast
        try:
            x @ x.t()
        except NotImplementedError as e:
            assert "torch.bfloat16" in str(e) and "autocast" in str(e)
        else:       # bfloat16 tensors have landed: then the product is a bfloat16 one
            assert (x @ x.t()).dtype == tg.bfloat16
    assert not tg.is_autocast_enabled("cpu")


def test_custom_fwd_keeps_float64_and_runs_without_autocast():
    seen = {}

    class Probe(tg.autograd.Function):
        @staticmethod
        @tg.amp.custom_fwd(device_type="cpu", cast_inputs=tg.float32)
        def forward(ctx, a, b):
            seen.update(a=a.dtype, b=b.dtype, enabled=tg.is_autocast_enabled("cpu"))
            return a * 2

        @staticmethod
        @tg.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd_enabled"] = tg.is_autocast_enabled("cpu")
            return g * 2, None

    a = tg.randn(3, requires_grad=True)
    with tg.autocast("cpu", dtype=tg.float16):
        out = Probe.apply(a.half(), tg.ones(3, dtype=tg.float64))
    assert seen == {"a": tg.float32, "b": tg.float64, "enabled": False}
    out.sum().backward()
    assert seen["bwd_enabled"] is False and a.grad.dtype == tg.float32


def test_grad_scaler_step_beside_autocast_as_torch():
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((5, 6)).astype(np.float32)
    ys = np.array([0, 1, 2, 1, 0])
    after = []
    for L, Fn in ((tg, TF), (torch, F)):
        net = _Net(L, seed=3)
        opt = L.optim.SGD(net.params, lr=0.1)
        scaler = L.amp.GradScaler("cpu", init_scale=1024.0)
        for _ in range(2):
            opt.zero_grad()
            with L.autocast("cpu", dtype=L.float16):
                loss, _ = net.loss(L, Fn, L.tensor(xs), L.tensor(ys))
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        after.append(([p.detach().numpy().copy() for p in net.params], scaler.get_scale()))
    (ours, our_scale), (theirs, their_scale) = after
    assert our_scale == their_scale
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p, q, rtol=2e-3, atol=2e-3)


def test_set_autocast_enabled_cpu_switches_the_ops():
    x, _ = _pair(3, 4)
    tg.set_autocast_dtype("cpu", tg.float16)
    tg.set_autocast_enabled("cpu", True)
    try:
        assert (x @ x.t()).dtype == tg.float16
    finally:
        tg.set_autocast_enabled("cpu", False)
        tg.set_autocast_dtype("cpu", tg.bfloat16)
    assert (x @ x.t()).dtype == tg.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert not tg.is_autocast_cpu_enabled()


@pytest.mark.parametrize("need_weights,masked", [(True, True), (True, False), (False, False)])
def test_multihead_attention_under_autocast_as_torch(need_weights, masked):
    # PyTorch's composite reaches linear / bmm / baddbmm / sdpa through the dispatcher: each
    # casts, so the output and the weights are float16
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(4, 2)
    ours = tg.nn.MultiheadAttention(4, 2)
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    s = np.random.default_rng(4).standard_normal((5, 2, 4)).astype(np.float32)
    mask = np.random.default_rng(5).standard_normal((5, 5)).astype(np.float32)
    outs = []
    for L, m in ((tg, ours), (torch, theirs)):
        x = L.tensor(s)
        with L.autocast("cpu", dtype=L.float16):
            outs.append(m(x, x, x, need_weights=need_weights,
                          attn_mask=L.tensor(mask) if masked else None))
    (o, w), (to, tw) = outs
    assert _dtype_name(o) == _dtype_name(to) == "float16"
    np.testing.assert_allclose(o.detach().double().numpy(), to.detach().double().numpy(),
                               rtol=5e-3, atol=5e-3)
    if need_weights:
        assert _dtype_name(w) == _dtype_name(tw)
        np.testing.assert_allclose(w.detach().double().numpy(), tw.detach().double().numpy(),
                                   rtol=5e-3, atol=5e-3)


def test_cuda_custom_fwd_casts_no_cpu_tensor_as_torch():
    # SILENT before: with CUDA autocast switched on by hand, custom_fwd(device_type='cuda',
    # cast_inputs=float16) cast the CPU float32 input to float16, where PyTorch casts only
    # tensors on the device the decorator names
    results = []
    for L in (tg, torch):
        class Probe(L.autograd.Function):
            @staticmethod
            @L.amp.custom_fwd(device_type="cuda", cast_inputs=L.float16)
            def forward(ctx, a):
                return a * 2

            @staticmethod
            @L.amp.custom_bwd(device_type="cuda")
            def backward(ctx, g):
                return g

        L.set_autocast_enabled("cuda", True)
        try:
            results.append(_dtype_name(Probe.apply(L.ones(2))))
        finally:
            L.set_autocast_enabled("cuda", False)
    assert results == ["float32", "float32"]


def test_bfloat16_autocast_as_torch():
    """(session 38 merge) bfloat16 autocast once bfloat16 tensors exist: a bfloat16 activation
    meeting a float32 layer is cast by the layer's policy (it went to the bfloat16 handler first,
    which refused the mixed product), the autocast dtype set while torch.bfloat16 dispatches
    stays bfloat16 (it was stored as float32), and a float32 weight's gradient through the cast
    is bfloat16-valued, as PyTorch's."""
    results = []
    for lib in (tg, torch):
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        assert lib.get_autocast_dtype("cpu") == lib.bfloat16
        model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
        with lib.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(lib.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1) / 3)
        x = lib.linspace(-2, 2, 12).reshape(3, 4)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            y = model(x)
            loss = y.float().pow(2).mean()
        loss.backward()
        results.append((str(y.dtype), y.float().tolist(), loss.item(),
                        model[2].weight.grad.tolist(), str(model[0].weight.grad.dtype)))
    ours, theirs = results
    assert ours[0] == theirs[0] == "torch.bfloat16" and ours[4] == theirs[4] == "torch.float32"
    assert ours[1] == theirs[1]
    assert ours[2] == pytest.approx(theirs[2], rel=1e-6)
    assert np.array_equal(ours[3], theirs[3])       # last layer: one cast from the loss
