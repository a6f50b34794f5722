"""Faults found by running reinforcement-learning tutorial scripts (REINFORCE, actor-critic, DQN,
PPO, SAC, DDPG, TD3, TRPO idioms) with `import tapegrad as torch`; PyTorch is the oracle."""
import numpy as np
import pytest

import tapegrad as tg


def _linear_pair(torch, in_shape, seed=0):
    rng = np.random.RandomState(seed)
    w = rng.standard_normal((4, in_shape[-1]))
    b = rng.standard_normal(4)
    x = rng.standard_normal(in_shape)
    ours = [tg.tensor(a, requires_grad=True) for a in (w, b)] + [tg.tensor(x)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (w, b)] + [torch.tensor(x)]
    return ours, theirs


@pytest.mark.parametrize("in_shape", [(6, 3), (2, 5, 3), (3,)])
def test_create_graph_linear_weight_grad_is_laid_out_as_the_weight(torch, in_shape):
    """TRPO / natural-gradient code flattens autograd.grad(..., create_graph=True) results with
    g.view(-1); the weight's gradient of F.linear was a transposed view, so view raised."""
    (w, b, x), (tw, tb, tx) = _linear_pair(torch, in_shape)
    loss = tg.nn.functional.linear(x, w, b).tanh().pow(2).sum()
    tloss = torch.nn.functional.linear(tx, tw, tb).tanh().pow(2).sum()
    gw, gb = tg.autograd.grad(loss, [w, b], create_graph=True)
    tgw, tgb = torch.autograd.grad(tloss, [tw, tb], create_graph=True)
    assert gw.is_contiguous() == tgw.is_contiguous() is True
    assert gw.stride() == tgw.stride()
    flat = tg.cat([gw.view(-1), gb.view(-1)])
    tflat = torch.cat([tgw.view(-1), tgb.view(-1)])
    np.testing.assert_allclose(flat.detach().numpy(), tflat.detach().numpy(), rtol=1e-12, atol=1e-12)
    # the Hessian-vector product through the recorded gradient (conjugate-gradient step)
    v = np.linspace(-1.0, 1.0, flat.shape[0])
    hw, hb = tg.autograd.grad((flat * tg.tensor(v)).sum(), [w, b])
    thw, thb = torch.autograd.grad((tflat * torch.tensor(v)).sum(), [tw, tb])
    np.testing.assert_allclose(hw.numpy(), thw.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hb.numpy(), thb.numpy(), rtol=1e-10, atol=1e-12)


def test_create_graph_flat_grad_of_a_policy_network(torch):
    """The TRPO idiom end to end: flat_grad of a Categorical policy's log-likelihood through an
    nn.Sequential, then a Fisher/Hessian-vector product; values as PyTorch's."""
    rng = np.random.RandomState(1)
    params = [rng.standard_normal(s) * 0.5 for s in [(8, 3), (8,), (2, 8), (2,)]]
    x = rng.standard_normal((5, 3))
    acts = [0, 1, 1, 0, 1]

    def run(lib):
        net = lib.nn.Sequential(lib.nn.Linear(3, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2)).double()
        with lib.no_grad():
            for p, a in zip(net.parameters(), params):
                p.copy_(lib.tensor(a))
        dist = lib.distributions.Categorical(logits=net(lib.tensor(x)))
        loss = dist.log_prob(lib.tensor(acts)).mean()
        grads = lib.autograd.grad(loss, list(net.parameters()), create_graph=True)
        flat = lib.cat([g.view(-1) for g in grads])
        hvp = lib.autograd.grad((flat * flat.detach()).sum(), list(net.parameters()))
        return flat.detach().numpy(), lib.cat([g.contiguous().view(-1) for g in hvp]).numpy()

    ours, theirs = run(tg), run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10, atol=1e-12)


def test_create_graph_linear_weight_grad_finite_differences():
    """The recorded weight gradient is itself differentiable: its derivative (the Hessian's
    weight block along a direction) matches central finite differences in float64."""
    rng = np.random.RandomState(2)
    w0, x = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    direction = rng.standard_normal((3, 4))

    def grad_dot(w_arr):
        w = tg.tensor(w_arr, requires_grad=True)
        g, = tg.autograd.grad(tg.nn.functional.linear(tg.tensor(x), w).sin().sum(), [w],
                              create_graph=True)
        return g, w

    g, w = grad_dot(w0)
    h, = tg.autograd.grad((g.view(-1) * tg.tensor(direction.reshape(-1))).sum(), [w])
    eps = 1e-6
    fd = np.zeros_like(w0)
    for idx in np.ndindex(*w0.shape):
        wp, wm = w0.copy(), w0.copy()
        wp[idx] += eps
        wm[idx] -= eps
        fp = (grad_dot(wp)[0].detach().numpy() * direction).sum()
        fm = (grad_dot(wm)[0].detach().numpy() * direction).sum()
        fd[idx] = (fp - fm) / (2 * eps)
    np.testing.assert_allclose(h.numpy(), fd, rtol=1e-6, atol=1e-8)


_RANGES = [(-1, 1, 0.1), (0, 3, 0.3), (0.5, 40, 0.7), (0, 1, 0.01), (-5.3, 7.1, 0.13),
           (10, -3, -0.37), (0, 2 * np.pi, 0.1), (1e-3, 1.0, 1e-3), (-2, 2, 0.5), (3, 400.5, 1.5)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bounds", _RANGES)
def test_arange_float_values_are_atens_bit_for_bit(torch, bounds, dtype):
    """arange with a fractional step: ATen writes SIMD lanes (a rounded first value per vector
    plus k * step, fused multiply-adds), not numpy's start + i * delta; torch.arange(-1, 1, 0.1)
    printed -2.9802e-09 where tapegrad printed -2.2204e-16 (SILENT: values off in the last bits)."""
    ours = tg.arange(*bounds, dtype=getattr(tg, dtype)).numpy()
    theirs = torch.arange(*bounds, dtype=getattr(torch, dtype)).numpy()
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()


def test_arange_default_dtype_prints_as_pytorch(torch):
    assert str(tg.arange(-1, 1, 0.1)) == str(torch.arange(-1, 1, 0.1))
    assert tg.arange(0, 1, 0.1).tolist() == torch.arange(0, 1, 0.1).tolist()


@pytest.mark.parametrize("threads", [1, 2])
def test_arange_long_ranges_split_between_threads_as_atens(torch, threads):
    """Past ATen's grain size (32768 values) parallel_for splits the range, and each part starts
    its vector lanes at its own first index."""
    ours_before, theirs_before = tg.get_num_threads(), torch.get_num_threads()
    try:
        tg.set_num_threads(threads)
        torch.set_num_threads(threads)
        for dt in ("float32", "float64"):
            ours = tg.arange(0.25, 70000 * 0.77, 0.77, dtype=getattr(tg, dt)).numpy()
            theirs = torch.arange(0.25, 70000 * 0.77, 0.77, dtype=getattr(torch, dt)).numpy()
            assert ours.tobytes() == theirs.tobytes()
    finally:
        tg.set_num_threads(ours_before)
        torch.set_num_threads(theirs_before)


def _error_of(fn):
    try:
        fn()
    except Exception as e:          # noqa: BLE001 (the type is what is compared)
        return type(e), str(e)
    return None, None


_OBS = np.zeros(4, dtype=np.float32)
_NESTED_DATA = [
    ("FloatTensor", lambda lib: lib.FloatTensor((_OBS, {}))),              # gymnasium reset()
    ("FloatTensor", lambda lib: lib.FloatTensor((_OBS, {"lives": 3}))),
    ("tensor", lambda lib: lib.tensor((_OBS, {}), dtype=lib.float32)),
    ("LongTensor", lambda lib: lib.LongTensor((np.zeros(4, dtype=np.int64), {}))),
    ("FloatTensor", lambda lib: lib.FloatTensor([[1.0, 2.0], "ab"])),
    ("FloatTensor", lambda lib: lib.FloatTensor([{}, [1.0]])),
    ("FloatTensor", lambda lib: lib.FloatTensor([[1.0, "x"], 5])),
    ("FloatTensor", lambda lib: lib.FloatTensor([[1.0, 2.0], 5])),
    ("FloatTensor", lambda lib: lib.FloatTensor([[1.0], [None]])),
    ("FloatTensor", lambda lib: lib.FloatTensor([[1.0, 2.0], range(3)])),
]


@pytest.mark.parametrize("case", range(len(_NESTED_DATA)))
def test_nested_data_errors_as_pytorch(torch, case):
    """Inner elements are read as PyTorch's PySequence_Fast reads them (a dict, a string: any
    iterable), depth first: torch.FloatTensor(env.reset()) under gymnasium's (obs, info) raised
    TypeError 'not a sequence' where PyTorch raises ValueError 'expected sequence of length 4 at
    dim 1 (got 0)'."""
    import warnings
    make = _NESTED_DATA[case][1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _error_of(lambda: make(tg)), _error_of(lambda: make(torch))
    assert theirs[0] is not None
    assert ours == theirs


def _a3c_shared_adam_run(lib, step_value):
    """ikostrikov/pytorch-a3c's training step: a worker's model computes gradients, hands them to
    the shared model with `shared_param._grad = param.grad`, and a SharedAdam (Adam with its state
    filled in __init__) steps the shared model."""
    rng = np.random.RandomState(3)
    shared = lib.nn.Linear(4, 2)
    with lib.no_grad():
        for p in shared.parameters():
            p.copy_(lib.tensor(rng.uniform(-0.3, 0.3, tuple(p.shape)), dtype=lib.float32))
    shared.share_memory()
    opt = lib.optim.Adam(shared.parameters(), lr=0.01)
    for p in shared.parameters():
        state = opt.state[p]
        state["step"] = step_value(lib)
        state["exp_avg"] = p.data.new().resize_as_(p.data).zero_()
        state["exp_avg_sq"] = p.data.new().resize_as_(p.data).zero_()
    local = lib.nn.Linear(4, 2)
    x = lib.tensor(rng.standard_normal((5, 4)), dtype=lib.float32)
    for _ in range(3):
        local.load_state_dict(shared.state_dict())
        loss = local(x).pow(2).mean()
        local.zero_grad()
        loss.backward()
        for param, shared_param in zip(local.parameters(), shared.parameters()):
            shared_param._grad = param.grad
        opt.step()
    return shared.weight.detach().numpy(), opt.state[shared.weight]["step"].numpy()


def test_underscore_grad_is_the_grad_slot(torch):
    """SILENT before: `_grad` was a plain attribute, so the shared model of an A3C script never
    received gradients and Adam left it unchanged."""
    ours = _a3c_shared_adam_run(tg, lambda lib: lib.zeros(1))
    theirs = _a3c_shared_adam_run(torch, lambda lib: lib.zeros(1))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(ours[1], theirs[1])
    initial = np.random.RandomState(3).uniform(-0.3, 0.3, (2, 4)).astype(np.float32)
    assert np.abs(ours[0] - initial).min() > 1e-3             # three Adam steps of lr 0.01 each
    p = tg.nn.Parameter(tg.ones(2))
    g = tg.tensor([0.5, 0.25])
    p._grad = g
    assert p.grad is g and p._grad is g
    p.grad = None
    assert p._grad is None
    tp = torch.nn.Parameter(torch.ones(2))
    for value, t_value in ((tg.ones(3), torch.ones(3)), (5, 5)):
        ours_err = _error_of(lambda: setattr(p, "_grad", value))
        theirs_err = _error_of(lambda: setattr(tp, "_grad", t_value))
        assert ours_err == theirs_err and ours_err[0] is not None


@pytest.mark.parametrize("name", ["Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam",
                                  "RAdam", "RMSprop", "Rprop"])
def test_number_step_state_refused_as_pytorch(torch, name):
    """A pre-2.0 SharedAdam fills `state['step'] = 0`: PyTorch's step refuses it."""
    def run(lib):
        w = lib.nn.Parameter(lib.ones(3))
        opt = getattr(lib.optim, name)([w], lr=0.1)
        (w * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        opt.step()                                  # the state, filled as the optimizer fills it
        opt.state[w]["step"] = 0
        return _error_of(opt.step)
    assert run(tg) == run(torch)
    assert run(torch)[0] is RuntimeError
