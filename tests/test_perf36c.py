"""A replay folds relu into the max pooling that alone reads its output (issue 19, LeNet-5 step):
the fused kernels (pooling of relu(x), relu's gradient masked into the pooling's) equal the two
ops bit for bit, and a compiled conv -> relu -> max-pool block equals eager bit for bit, values
and gradients, float32 and float64, over calls with changing inputs."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core
from tapegrad.nn import functional as F


def _geom(x, k, s=None, p=0, d=1, ceil=False):
    """The pooling geometry _MaxPool2d's kernels take, read from a real max_pool2d call."""
    from tapegrad.nn import _pool_ops
    seen = []
    orig = _pool_ops._MaxPool2d.kernel_forward

    def spy(x4, geom):
        seen.append(geom)
        return orig(x4, geom)
    _pool_ops._MaxPool2d.kernel_forward = staticmethod(spy)
    try:
        F.max_pool2d(tg.from_numpy(x), k, s, p, d, ceil_mode=ceil)
    finally:
        _pool_ops._MaxPool2d.kernel_forward = staticmethod(orig)
    return seen[0]


def _relu(a):
    return np.where(a < 0, a.dtype.type(0), a)         # TG_RELU: x < 0 ? 0 : x (keeps -0.0, NaN)


def _bits(a):
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("args", [dict(k=2), dict(k=3, s=2, p=1), dict(k=2, s=1),
                                  dict(k=3, s=2, ceil=True), dict(k=2, s=2, p=1, d=2)])
def test_relu_max_pool_kernels_equal_the_two_ops(dtype, args):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 9, 11)).astype(dtype)
    # ties, signed zeros, all-negative windows and a NaN: the cases where relu decides the bits
    x[0, 0, :4, :4] = -1.0
    x[0, 1, 2:6, 2:6] = -0.0
    x[1, 2, 1, 1] = np.nan
    x[2, 3, :, :3] = 0.0
    geom = _geom(x, args["k"], args.get("s"), args.get("p", 0), args.get("d", 1),
                 args.get("ceil", False))
    y0, i0 = _core._max_pool2d_arrays(_relu(x), geom)
    y1, i1 = _core._max_pool2d_arrays(x, geom, True)
    np.testing.assert_array_equal(_bits(y1), _bits(y0))
    np.testing.assert_array_equal(i1, i0)
    gy = rng.standard_normal(y0.shape).astype(dtype)
    gy[0, 0] = -gy[0, 0]
    g_pool = _core._max_pool2d_grad_array(gy, i0, geom)
    relu_out = _relu(x)
    expect = np.where(relu_out <= 0, dtype(0), g_pool)     # TG_RELU_GRAD: b <= 0 ? 0 : a
    got = _core._max_pool2d_grad_array(gy, i1, geom, x)
    np.testing.assert_array_equal(_bits(got), _bits(expect))


def test_relu_max_pool_kernel_refuses_a_mask_of_another_size():
    x = np.ones((1, 1, 4, 4), np.float32)
    geom = _geom(x, 2)
    y, idx = _core._max_pool2d_arrays(x, geom, True)
    with pytest.raises(ValueError, match="size"):
        _core._max_pool2d_grad_array(y, idx, geom, np.ones((1, 1, 2, 2), np.float32))


def _block(dtype):
    tg.manual_seed(3)
    nn = tg.nn
    return nn.Sequential(nn.Conv2d(2, 5, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(5, 4, 3), nn.ReLU(), nn.MaxPool2d(2, 1), nn.Flatten(),
                         nn.Linear(4, 3)).to(tg.float32 if dtype == np.float32
                                                     else tg.float64)


def _run(compiled, dtype, xs):
    model = _block(dtype)

    def f(x):
        return (model(x) ** 2).sum()
    fn = tg.compile(f) if compiled else f
    outs = []
    for xa in xs:
        x = tg.from_numpy(xa).requires_grad_(True)
        for p in model.parameters():
            p.grad = None
        loss = fn(x)
        loss.backward()
        outs.append([loss.detach().numpy().copy(), x.grad.numpy().copy()]
                    + [p.grad.numpy().copy() for p in model.parameters()])
    return outs, fn


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_conv_relu_pool_equals_eager_bit_for_bit(dtype):
    rng = np.random.default_rng(11)
    xs = []
    for i in range(5):
        x = rng.standard_normal((3, 2, 8, 8)).astype(dtype)
        if i == 3:
            x[0] = -np.abs(x[0]) - 5.0          # a sample whose first relu is zero everywhere
        xs.append(x)
    got, fn = _run(True, dtype, xs)
    want, _ = _run(False, dtype, xs)
    assert fn.stats["replays"] == 4, fn.explain()
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(_bits(np.asarray(a)), _bits(np.asarray(b)))
    # both relus are folded into their poolings and each pooling into its convolution
    # (test_perflenet.py): conv-pool, conv-pool, then the re-run flatten, linear, pow and sum
    # (without the folding: 10 steps)
    assert fn.explain().startswith("replayed: 6 steps"), fn.explain()


def test_relu_is_not_folded_when_its_output_is_read_elsewhere():
    tg.manual_seed(0)
    conv = tg.nn.Conv2d(1, 2, 3, padding=1)

    def f(x):
        r = F.relu(conv(x))
        return F.max_pool2d(r, 2).sum() + r.sum(), r
    fn = tg.compile(f)
    rng = np.random.default_rng(2)
    for _ in range(3):
        xa = rng.standard_normal((2, 1, 6, 6)).astype(np.float32)
        x1 = tg.from_numpy(xa).requires_grad_(True)
        x2 = tg.from_numpy(xa).requires_grad_(True)
        l1, r1 = fn(x1)
        l2, r2 = f(x2)
        (l1 + r1.mean()).backward()
        (l2 + r2.mean()).backward()
        np.testing.assert_array_equal(l1.detach().numpy(), l2.detach().numpy())
        np.testing.assert_array_equal(r1.detach().numpy(), r2.detach().numpy())
        np.testing.assert_array_equal(x1.grad.numpy(), x2.grad.numpy())
    assert fn.stats["replays"] == 2, fn.explain()


def test_relu_max_pool_gradient_matches_torch_and_finite_differences():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    xa = rng.standard_normal((2, 3, 6, 6))
    w = rng.standard_normal((3, 3, 3, 3))

    def f(x, wt):
        return (F.max_pool2d(F.relu(F.conv2d(x, wt, padding=1)), 2) ** 2).sum()
    fn = tg.compile(f)
    for _ in range(2):
        x = tg.from_numpy(xa.copy()).requires_grad_(True)
        wt = tg.from_numpy(w.copy()).requires_grad_(True)
        fn(x, wt).backward()
    tx = torch.from_numpy(xa.copy()).requires_grad_(True)
    tw = torch.from_numpy(w.copy()).requires_grad_(True)
    tf = torch.nn.functional
    (tf.max_pool2d(tf.relu(tf.conv2d(tx, tw, padding=1)), 2) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(wt.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert tg.autograd.gradcheck(fn, (tg.from_numpy(xa[:1, :, :4, :4].copy()).requires_grad_(True),
                                      tg.from_numpy(w.copy()).requires_grad_(True)))


def _unbatched(x):
    return F.max_pool2d(F.relu(x * 2), 2)


def _with_indices(x):
    return F.max_pool2d(F.relu(x * 2), 2, return_indices=True)


def _ceil_padded(x):
    return F.max_pool2d(F.relu(x + 1), 3, 2, 1, ceil_mode=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("f, shape", [(_unbatched, (3, 6, 6)), (_with_indices, (2, 3, 6, 6)),
                                      (_ceil_padded, (2, 3, 7, 7))])
def test_folded_relu_pool_variants_equal_eager(f, shape, dtype):
    rng = np.random.default_rng(4)
    fn = tg.compile(f)
    for _ in range(3):
        xa = rng.standard_normal(shape).astype(dtype)
        res = []
        for g in (fn, f):
            x = tg.from_numpy(xa.copy()).requires_grad_(True)
            out = g(x)
            outs = out if isinstance(out, tuple) else (out,)
            (outs[0] * outs[0]).sum().backward()
            res.append([o.detach().numpy().copy() for o in outs] + [x.grad.numpy().copy()])
        for a, b in zip(*res):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    assert fn.explain() == "replayed: 2 steps" and fn.stats["replays"] == 2
