"""as_strided exercises (inspired by jqhoogland's ARENA warm-up solutions): trace, matrix-vector
and matrix-matrix products, 1-d/2-d convolutions with stride and padding, and max pooling built
from as_strided views and einsum, each compared with the library op in value and in gradient
(float64), plus the view facts the exercises rely on (strides, storage offsets, contiguity,
a non-viewable transpose)."""
import torch
import torch.nn.functional as F



def det(*shape):
    """Deterministic float64 data (the random streams of the libraries differ)."""
    n = 1
    for d in shape:
        n *= d
    return torch.sin(torch.arange(n, dtype=torch.float64) * 0.37 + 0.1).reshape(shape)


def trace(m):
    n = m.shape[0]
    return m.as_strided((n,), (m.stride(0) + m.stride(1),)).sum()


def mv(m, v):
    rows, cols = m.shape
    return (m * v.as_strided((rows, cols), (0, v.stride(0)))).sum(1)


def mm(a, b):
    (i, j), k = a.shape, b.shape[1]
    sa, sb = a.stride(), b.stride()
    return (a.as_strided((i, j, k), (sa[0], sa[1], 0))
            * b.as_strided((i, j, k), (0, sb[0], sb[1]))).sum(1)


def pad1d(x, left, right, value=0.0):
    out = x.new_full((*x.shape[:-1], left + x.shape[-1] + right), value)
    out[..., left:left + x.shape[-1]] = x
    return out


def pad2d(x, left, right, top, bottom, value=0.0):
    b, c, h, w = x.shape
    out = x.new_full((b, c, top + h + bottom, left + w + right), value)
    out[..., top:top + h, left:left + w] = x
    return out


def conv1d(x, weights, stride=1, padding=0):
    x = pad1d(x, padding, padding)
    b, ci, w = x.shape
    co, _, kw = weights.shape
    ow = (w - kw) // stride + 1
    sb, sc, sw = x.stride()
    windows = x.as_strided((b, ci, ow, kw), (sb, sc, sw * stride, sw))
    return torch.einsum("bcwk,ock->bow", windows, weights)


def conv2d(x, weights, stride=(1, 1), padding=(0, 0)):
    x = pad2d(x, padding[1], padding[1], padding[0], padding[0])
    b, ci, h, w = x.shape
    co, _, kh, kw = weights.shape
    oh, ow = (h - kh) // stride[0] + 1, (w - kw) // stride[1] + 1
    sb, sc, sh, sw = x.stride()
    windows = x.as_strided((b, ci, oh, ow, kh, kw),
                           (sb, sc, sh * stride[0], sw * stride[1], sh, sw))
    return torch.einsum("bchwij,ocij->bohw", windows, weights)


def maxpool2d(x, kernel, stride=None, padding=0):
    stride = stride or kernel
    x = pad2d(x, padding, padding, padding, padding, float("-inf"))
    b, c, h, w = x.shape
    oh, ow = (h - kernel) // stride + 1, (w - kernel) // stride + 1
    sb, sc, sh, sw = x.stride()
    windows = x.as_strided((b, c, oh, ow, kernel, kernel),
                           (sb, sc, sh * stride, sw * stride, sh, sw))
    return windows.amax(dim=(-2, -1))


def compare(name, ours, theirs, *inputs):
    out_ours, out_theirs = ours(*inputs), theirs(*inputs)
    grad_out = torch.linspace(-1, 1, out_ours.numel(), dtype=out_ours.dtype).reshape(out_ours.shape)
    g_ours = torch.autograd.grad(out_ours, inputs, grad_out)
    g_theirs = torch.autograd.grad(out_theirs, inputs, grad_out)
    print(f"{name:10s} shape {tuple(out_ours.shape)} value {torch.allclose(out_ours, out_theirs)} "
          f"grads {[torch.allclose(a, b) for a, b in zip(g_ours, g_theirs)]} "
          f"checksum {out_ours.sum().item():.6f}")


m = torch.arange(16.0, dtype=torch.float64).reshape(4, 4).requires_grad_()
print("trace", trace(m), torch.trace(m))
print("trace of t()", trace(m.t()), "strides", m.t().stride())
big = det(40)
a = big.as_strided((3, 4), (2, 4), 8).clone().requires_grad_()
v = big.as_strided((4,), (3,), 5).clone().requires_grad_()
compare("mv", mv, lambda p, q: p @ q, a, v)
b = det(4, 5).t().contiguous().t().requires_grad_()
compare("mm", mm, lambda p, q: p @ q, a, b)

x1 = det(2, 3, 11).requires_grad_()
w1 = det(4, 3, 3).flip(0).requires_grad_()
compare("conv1d", conv1d, F.conv1d, x1, w1)
compare("conv1d s2p1", lambda x, w: conv1d(x, w, 2, 1),
        lambda x, w: F.conv1d(x, w, stride=2, padding=1), x1, w1)

x2 = det(2, 3, 7, 9).requires_grad_()
w2 = det(5, 3, 3, 2).flip(1).requires_grad_()
compare("conv2d", conv2d, F.conv2d, x2, w2)
compare("conv2d s/p", lambda x, w: conv2d(x, w, (2, 1), (1, 2)),
        lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(1, 2)), x2, w2)
compare("maxpool", lambda x: maxpool2d(x, 2), lambda x: F.max_pool2d(x, 2), x2)
compare("maxpool p1", lambda x: maxpool2d(x, 3, 2, 1),
        lambda x: F.max_pool2d(x, 3, stride=2, padding=1), x2)

windows = torch.arange(10).as_strided((4, 4), (2, 1))
print(windows, windows.is_contiguous(), windows.storage_offset())
print(torch.arange(10)[3:].as_strided((2, 3), (3, 1)))
print(torch.arange(10).unfold(0, 4, 2).equal(windows))
x = torch.arange(12.0).reshape(3, 4)
print(x.t().stride(), x.t().is_contiguous(), x[:, 1::2].stride(), x[1:].storage_offset())
try:
    x.t().view(-1)
except RuntimeError as e:
    print(type(e).__name__, str(e)[:60])
print(x.t().reshape(-1))
