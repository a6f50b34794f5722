"""as_strided (function and method) and diagonal as a true view of any layout (issue 15)."""
import numpy as np
import pytest

import tapegrad as tg


def _outcome(T, fn):
    try:
        out = fn(T)
    except Exception as e:     # noqa: BLE001  (the exception is the outcome compared)
        return type(e).__name__, " ".join(str(e).split()[:5])
    return "ok", (tuple(out.shape), out.tolist())


# (storage shape, how the input is made from it, size, stride, storage_offset)
CASES = {
    "transposed_window": lambda T: T.as_strided(T.arange(12.).reshape(3, 4), (2, 2), (1, 2)),
    "overlapping": lambda T: T.arange(6.).as_strided((3, 3), (1, 1)),
    "offset": lambda T: T.arange(12.).reshape(3, 4).as_strided((2,), (1,), 10),
    "of_a_slice": lambda T: T.arange(12.).reshape(3, 4)[1:].as_strided((2,), (1,)),
    "of_a_transpose": lambda T: T.arange(12.).reshape(3, 4).t().as_strided((2, 2), (1, 1)),
    "zero_strides": lambda T: T.tensor(5.).as_strided((2, 2), (0, 0)),
    "empty": lambda T: T.arange(12.).as_strided((0,), (1,), 100),
    "int_dtype": lambda T: T.arange(6).as_strided([2, 2], [2, 1], 1),
    "out_of_bounds": lambda T: T.arange(12.).as_strided((2,), (1,), 11),
    "length_mismatch": lambda T: T.arange(12.).as_strided((2, 2), (1,)),
    "negative_stride": lambda T: T.arange(12.).as_strided((2,), (-1,)),
    "negative_size": lambda T: T.arange(12.).as_strided((-1,), (1,)),
    "negative_offset": lambda T: T.arange(12.).as_strided((2,), (1,), -1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_matches_torch(torch, name):
    assert _outcome(tg, CASES[name]) == _outcome(torch, CASES[name])


GRAD_CASES = [
    ((6,), None, (3, 3), (1, 1), 0),            # overlapping windows: gradients accumulate
    ((3, 4), None, (2, 3), (4, 1), 1),
    ((3, 4), (1, 0), (2, 3), (4, 1), 1),        # a transposed (non-contiguous) input
    ((2, 3), None, (2, 2, 2), (0, 3, 1), 0),    # a zero stride repeats elements
    ((), None, (2, 3), (0, 0), 0),              # a 0-d input
]


@pytest.mark.parametrize("case", GRAD_CASES)
def test_gradient_matches_torch(torch, case):
    shape, perm, size, stride, offset = case
    values = np.random.default_rng(0).standard_normal(shape)
    results = []
    for T in (tg, torch):
        x = T.tensor(values, requires_grad=True)
        y = x * 1
        if perm:
            y = y.permute(perm)
        v = y.as_strided(size, stride, offset)
        w = T.arange(float(np.prod(size))).reshape(size).to(v.dtype)
        (v.sin() * w).sum().backward()
        results.append((v.detach().numpy().copy(), x.grad.numpy().copy(),
                        type(v.grad_fn).__name__))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])
    assert results[0][2] == results[1][2] == "AsStridedBackward0"


def test_gradcheck(gradcheck):
    gradcheck(lambda x: tg.as_strided(x * 1, (3, 3), (1, 1)).sin(), np.linspace(-1, 1, 6))
    gradcheck(lambda x: (x * 1).t().as_strided((2, 2), (2, 1), 1).exp(),
              np.linspace(-1, 1, 6).reshape(2, 3))
    gradcheck(lambda x: (x * 1).diagonal(1).exp(), np.linspace(-1, 1, 12).reshape(3, 4))
    gradcheck(lambda x: (x * 1).permute(2, 0, 1).diagonal(0, 0, 2).exp(),
              np.linspace(-1, 1, 24).reshape(2, 3, 4))


def test_second_derivative_matches_torch(torch):
    x = torch.randn(6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: (t * 1).as_strided((2, 3), (2, 1), 1).pow(3),
                                        (x,))
    a = tg.tensor(x.detach().numpy(), requires_grad=True)
    (g,) = tg.autograd.grad((a * 1).as_strided((2, 3), (2, 1), 1).pow(3).sum(), a,
                            create_graph=True)
    g.sum().backward()
    (gt,) = torch.autograd.grad((x * 1).as_strided((2, 3), (2, 1), 1).pow(3).sum(), x,
                                create_graph=True)
    gt.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), x.grad.numpy())


def test_is_a_view_without_torch():
    z = tg.zeros(6)
    v = z.as_strided((2, 2), (2, 1), 1)
    v[0, 1] = 7.0
    assert z.tolist() == [0.0, 0.0, 7.0, 0.0, 0.0, 0.0]
    assert z._version == v._version == 1
    z.add_(1)
    assert v.tolist() == [[1.0, 8.0], [1.0, 1.0]]
    x = tg.arange(6.0, requires_grad=True)
    w = tg.as_strided(x * 1, (3, 3), (1, 1))
    (w * tg.arange(9.0).reshape(3, 3)).sum().backward()
    assert x.grad.tolist() == [0.0, 4.0, 12.0, 12.0, 8.0, 0.0]
    assert tg.as_strided(tg.arange(6.0), (2, 3), (1, 1)).tolist() == [[0, 1, 2], [1, 2, 3]]
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 48"):
        tg.arange(12.0).as_strided((2,), (1,), 11)


@pytest.mark.parametrize("shape,perm,offset,d1,d2", [
    ((3, 4), None, 0, 0, 1), ((3, 4), None, -2, 1, 0), ((2, 3, 4), None, 1, 0, 2),
    ((2, 3, 4), (2, 0, 1), 0, 2, 1), ((4, 3), None, 5, 0, 1), ((2, 3, 3), (0, 2, 1), 0, 1, 2)])
def test_diagonal_is_a_view_of_any_layout(torch, shape, perm, offset, d1, d2):
    out = []
    for T in (tg, torch):
        x = T.arange(float(np.prod(shape))).reshape(shape).requires_grad_()
        y = x * 1
        if perm:
            y = y.permute(perm)
        d = y.diagonal(offset, d1, d2)
        (d * T.arange(float(d.numel())).reshape(d.shape)).sum().backward()
        z = T.zeros(shape)
        if perm:
            z = z.permute(perm)
        z.diagonal(offset, d1, d2).fill_(1.0)       # writes reach z: a view
        out.append((d.tolist(), x.grad.tolist(), z.tolist()))
    assert out[0] == out[1]


def test_as_strided_on_meta(torch):
    for T in (tg, torch):
        m = T.randn(4, 4, device="meta", requires_grad=True)
        v = m.as_strided((3, 3), (1, 1))
        assert v.is_meta and tuple(v.shape) == (3, 3)
        assert type(v.grad_fn).__name__ == "AsStridedBackward0"
