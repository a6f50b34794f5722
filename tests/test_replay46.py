"""Issue 19's layer replays (replay46): the packed GEMM blocked over k (same bits: each element
stays one k-ordered chain of FMAs), re-run factories and shape ops dropped from a replay when
nothing reads their results, and layer_norm as a replay step of its own.  Each keeps eager's
values bit for bit, compiled equals eager over calls with changing inputs, and both follow
PyTorch."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core

F = tg.nn.functional


def _torch():
    return pytest.importorskip("torch")


def _bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# -- the packed GEMM in blocks of k -----------------------------------------------------------------

def _chain_reference(a, b, bias=None, add=None):
    """c = a @ b (+ bias) (+ add) with each element one chain of fused multiply-adds in k order,
    the way the packed kernels accumulate, emulated in float64: the product of two float32 is
    exact there and the sum is rounded twice (float64, then float32), which can differ from one
    FMA only in rare halfway cases; these seeded operands have none)."""
    M, K = a.shape
    N = b.shape[1]
    acc = np.zeros((M, N), np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for k in range(K):                  # fma: the exact product plus acc, rounded once
        acc = (np.outer(a64[:, k], b64[k]) + acc.astype(np.float64)).astype(np.float32)
    if bias is not None:
        acc = acc + bias
    if add is not None:
        acc = acc + add
    return acc


@pytest.mark.parametrize("T,B,I,H", [(35, 20, 32, 128), (3, 50, 161, 9), (1, 1, 300, 33),
                                     (13, 11, 150, 40)])
def test_blocked_gemm_is_one_fma_chain_per_element(T, B, I, H):
    """Input projection (K = I), its gradients (dx: K = 4H; dW_ih: K = T*B, the transposed
    variant) over k longer than a block (128) and with ragged tails: every element equals one
    float32 FMA chain in k order, as before the blocking (no partial sums added together)."""
    rng = np.random.default_rng(I + H)
    x = rng.standard_normal((T, B, I)).astype(np.float32)
    w = rng.standard_normal((4 * H, I)).astype(np.float32)
    b = rng.standard_normal(4 * H).astype(np.float32)
    gi = _core._rnn_input_projection(x, w, b)
    ref = _chain_reference(x.reshape(T * B, I), w.T, b)
    assert _bits_equal(gi.reshape(T * B, 4 * H), ref)
    dgi = rng.standard_normal((T, B, 4 * H)).astype(np.float32)
    dx, dw, _ = _core._rnn_input_grads(dgi, x, w, True, True, False)
    assert _bits_equal(dx.reshape(T * B, I), _chain_reference(dgi.reshape(T * B, 4 * H), w))
    assert _bits_equal(dw, _chain_reference(dgi.reshape(T * B, 4 * H).T.copy(),
                                            x.reshape(T * B, I)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_gemm_rows_do_not_depend_on_the_call(dtype):
    """A row's result is the same whether it is computed alone or among many, and whatever K
    (the recurrent layers rely on it: a step's product of B rows equals the sequence's)."""
    rng = np.random.default_rng(5)
    for K in (7, 128, 129, 160, 161, 300, 512):
        x = rng.standard_normal((9, 1, K)).astype(dtype)
        w = rng.standard_normal((40, K)).astype(dtype)
        whole = _core._rnn_input_projection(x, w, None)
        for r in (0, 4, 8):
            one = _core._rnn_input_projection(x[r:r + 1].copy(), w, None)
            assert _bits_equal(one[0], whole[r:r + 1][0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_gradients_follow_torch(dtype):
    """The LSTM layer's gradients (its weight gradients sum T*B = 700 rows: several k blocks)
    against PyTorch's."""
    torch = _torch()
    torch.manual_seed(0)
    ref = torch.nn.LSTM(16, 24, num_layers=2).to(getattr(torch, dtype))
    ours = tg.nn.LSTM(16, 24, num_layers=2).to(getattr(tg, dtype))
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((140, 5, 16)).astype(dtype)
    xt, xo = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    ref(xt)[0].square().sum().backward()
    ours(xo)[0].square().sum().backward()
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), **tol)
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), err_msg=name, **tol)


# -- dead factories and shape ops ---------------------------------------------------------------

def _lstm_model(dtype):
    nn = tg.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(8, 12, num_layers=2)
            self.head = nn.Linear(12, 5)

        def forward(self, x):
            out, _ = self.lstm(x)           # the final states (a stack of each layer's) unused
            return self.head(out)

    tg.manual_seed(0)
    return Model().to(getattr(tg, dtype))


def _step(model, fn, x, y, opt):
    opt.zero_grad()
    out = fn(x)
    loss = F.cross_entropy(out.reshape(-1, 5), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_step_without_its_dead_states_equals_eager(dtype):
    """The LSTM's zeros for the initial state and the stack of its final states, which nothing
    reads, are not in the replay; the compiled step (model and loss) equals eager bit for bit
    over steps with changing inputs, values, weights and gradients."""
    eager, comp = _lstm_model(dtype), _lstm_model(dtype)
    comp.load_state_dict(eager.state_dict())
    ope = tg.optim.SGD(eager.parameters(), lr=0.1)
    opc = tg.optim.SGD(comp.parameters(), lr=0.1)
    compiled = tg.compile(lambda x: comp(x))
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = tg.tensor(rng.standard_normal((6, 3, 8)).astype(dtype))
        y = tg.tensor(rng.integers(0, 5, (6, 3)))
        le = _step(eager, eager, x, y, ope)
        lc = _step(comp, compiled, x, y, opc)
        assert _bits_equal(le.detach().numpy(), lc.detach().numpy())
        for (n, p), (_, q) in zip(eager.named_parameters(), comp.named_parameters()):
            assert _bits_equal(p.detach().numpy(), q.detach().numpy()), n
    assert compiled.stats["replays"] == 3, compiled.explain()
    calls = [getattr(c[0], "__name__", "") for c in compiled._last_plan.program.calls()]
    assert "zeros" not in calls and "stack" not in calls, calls


def test_dead_shape_ops_are_dropped_and_live_ones_kept():
    """A reshape / cat / zeros nobody reads is not replayed; the same ops reaching the output
    are; the replay equals eager and PyTorch."""
    torch = _torch()

    def fn(x, w):
        tg.cat([x, x]).reshape(-1)              # dead
        tg.zeros(3, 4)                          # dead
        z = tg.cat([x * w, x]).reshape(2, -1)   # live
        return z.tanh().sum()

    compiled = tg.compile(fn)
    rng = np.random.default_rng(4)
    for _ in range(3):
        a = rng.standard_normal((2, 3))
        x = tg.tensor(a, requires_grad=True)
        w = tg.tensor(a[::-1].copy())
        out = compiled(x, w)
        out.backward()
        xt = torch.tensor(a, requires_grad=True)
        torch.cat([xt * torch.tensor(a[::-1].copy()), xt]).reshape(2, -1).tanh().sum().backward()
        np.testing.assert_allclose(out.item(), fn(x.detach(), w).item(), rtol=0, atol=0)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    calls = [getattr(c[0], "__name__", "") for c in compiled._last_plan.program.calls()]
    assert calls.count("cat") == 1 and "zeros" not in calls, calls


def test_dead_pure_op_with_out_argument_is_kept():
    """An out= argument writes into a tensor: such a call is not pure, and a compiled function
    making it does what eager does (here: runs eagerly, as any in-place write of a closure
    tensor), never skipped."""
    buf = tg.zeros(4)

    def fn(x):
        tg.cat([x, x], out=buf)
        return (x * 2).sum()

    compiled = tg.compile(fn)
    for v in (1.0, 2.0, 3.0):
        compiled(tg.full((2,), v))
        assert buf.tolist() == [v] * 4


def test_dropped_step_guard_shapes_still_hold():
    """A dead stack's operands change shape: the signature guard sends the call back to capture
    (a dropped step is never skipped on shapes it was not captured with), and a stack eager
    refuses raises from the compiled call too."""
    def fn(x, h, g):
        tg.stack([h, g])                        # dead
        return (x * 3).sum()

    compiled = tg.compile(fn)
    x = tg.ones(3, requires_grad=True)
    for _ in range(2):
        compiled(x, tg.ones(2), tg.ones(2))
    assert compiled.stats == {"captures": 1, "replays": 1, "eager": 0, "guard_failures": 0}
    compiled(x, tg.ones(5), tg.ones(5))
    assert compiled.stats["captures"] == 2
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        compiled(x, tg.ones(5), tg.ones(4))


# -- layer_norm as a replay step -------------------------------------------------------------------

def _ln_cases():
    # (weight given, bias given)
    return [(True, True), (True, False), (False, True), (False, False)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("wb", _ln_cases())
def test_layer_norm_replay_step_equals_eager(dtype, wb):
    """layer_norm (with or without weight and bias) replays as its own step, not a re-run op;
    values and gradients equal eager's bit for bit over calls with changing inputs and
    parameters, and follow PyTorch."""
    torch = _torch()
    rng = np.random.default_rng(7)
    has_w, has_b = wb
    w = tg.tensor(rng.standard_normal(6).astype(dtype), requires_grad=True) if has_w else None
    b = tg.tensor(rng.standard_normal(6).astype(dtype), requires_grad=True) if has_b else None

    def fn(x):
        return (F.layer_norm(x * 2, (6,), w, b) * x).sum()

    compiled = tg.compile(fn)
    for step in range(4):
        a = rng.standard_normal((3, 5, 6)).astype(dtype) * (step + 1) + step
        xs = [tg.tensor(a, requires_grad=True) for _ in range(2)]
        params = [p for p in (w, b) if p is not None]
        outs, grads = [], []
        for f, x in ((fn, xs[0]), (compiled, xs[1])):
            for p in params:
                p.grad = None
            out = f(x)
            out.backward()
            outs.append(out.detach().numpy())
            grads.append([x.grad.numpy()] + [p.grad.numpy().copy() for p in params])
        assert _bits_equal(outs[0], outs[1])
        for ge, gc in zip(*grads):
            assert _bits_equal(ge, gc)
        xt = torch.tensor(a, requires_grad=True)
        wt = None if w is None else torch.tensor(w.detach().numpy(), requires_grad=True)
        bt = None if b is None else torch.tensor(b.detach().numpy(), requires_grad=True)
        ref = (torch.nn.functional.layer_norm(xt * 2, (6,), wt, bt) * xt).sum()
        ref.backward()
        tol = 1e-4 if dtype == "float32" else 1e-11
        np.testing.assert_allclose(outs[1], ref.detach().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(grads[1][0], xt.grad.numpy(), rtol=tol, atol=tol)
        if w is not None:                       # (the parameters move: new values each call)
            with tg.no_grad():
                w.mul_(0.9).add_(0.05)
    assert compiled.stats["replays"] == 3, compiled.explain()
    assert compiled._last_plan.program.calls() == []       # no re-run op: its own step


def test_layer_norm_replay_step_refuses_an_overwritten_input():
    """layer_norm's record refuses its backward once its input is written in place (PyTorch
    saves the input); the replay step, which saves the normalised rows instead, refuses it too
    (the capture notes the version check as a saved input)."""
    def fn(x, w):
        return F.layer_norm(x, (4,), w).sum()

    compiled = tg.compile(fn)
    w = tg.ones(4, requires_grad=True)
    for f in (fn, compiled, compiled, compiled):
        x = tg.randn(2, 4, requires_grad=True)
        y = x * 1                   # (a leaf requiring grad cannot be written in place)
        out = f(y, w)
        with tg.no_grad():
            y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()
    assert compiled.stats["replays"] == 2, compiled.explain()


def test_layer_norm_half_input_reruns_the_op():
    """A float16 input (statistics rounded to float16, PyTorch's rule) is not the replay step's:
    it re-runs the eager op, and still equals eager."""
    def fn(x, w):
        return F.layer_norm(x, (4,), w).float().sum()

    compiled = tg.compile(fn)
    w = tg.ones(4, dtype=tg.float16, requires_grad=True)
    rng = np.random.default_rng(8)
    for _ in range(3):
        a = rng.standard_normal((3, 4)).astype(np.float16)
        xe, xc = tg.tensor(a, requires_grad=True), tg.tensor(a, requires_grad=True)
        fn(xe, w).backward()
        compiled(xc, w).backward()
        assert _bits_equal(xe.grad.numpy(), xc.grad.numpy())
    names = [getattr(c[0], "__name__", "") for c in compiled._last_plan.program.calls()]
    assert "layer_norm" in names
