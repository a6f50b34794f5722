"""Findings of differential fuzzing session 29 (tools/fuzz.py, new seeds), each against PyTorch."""
import numpy as np
import pytest

import tapegrad


def _both(fn):
    torch = pytest.importorskip("torch")
    return fn(torch), fn(tapegrad)


def _values(t):
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    return t.numpy()


# -- views of a conj() taken under no_grad outlive the conj() result (fuzz 65300208) -------------
# The conj link followed the conj() tensor object: once the temporary died, a view of it
# (z.conj().imag, z.conj()[0:1], ...) stopped seeing writes to z and its writes stopped reaching z.

@pytest.mark.parametrize("view", ["imag", "real", "slice", "reshape"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_no_grad_view_of_conj_sees_later_writes(view, requires_grad):
    def run(L):
        z = L.tensor([1 + 2j, 3 - 1j], dtype=L.complex64, requires_grad=requires_grad) * 1
        with L.no_grad():
            v = {"imag": lambda c: c.imag, "real": lambda c: c.real,
                 "slice": lambda c: c[0:1], "reshape": lambda c: c.reshape(-1)}[view](z.conj())
        z.mul_(0.5 - 2j)
        return _values(v)
    t, g = _both(run)
    np.testing.assert_array_equal(g, t)


def test_write_through_view_of_dropped_conj_reaches_source():
    def run(L):
        z = L.tensor([1 + 2j, 3 - 1j], dtype=L.complex64)
        with L.no_grad():
            im = z.conj().imag
            head = z.conj()[0:1]
        im.mul_(3)
        first = _values(z).copy()
        head.fill_(5 + 5j)
        second = _values(z).copy()
        z.add_(1j)
        return first, second, _values(im), _values(head)
    t, g = _both(run)
    for a, b in zip(g, t):
        np.testing.assert_array_equal(a, b)


def test_conj_keeps_source_views_in_step_after_source_tensor_dies():
    def run(L):
        z = L.tensor([1 + 2j, 3 - 1j], dtype=L.complex64)
        head = z[0:1]
        c = z.detach().conj()       # the detached alias dies at once; z's storage lives on
        c.mul_(2)
        return _values(head), _values(z)
    t, g = _both(run)
    for a, b in zip(g, t):
        np.testing.assert_array_equal(a, b)


def test_fuzz_65300208_program():
    def run(L):
        v1 = L.tensor(np.array([1.1303804578177246, -1.002374953522568]))
        v2 = L.tensor(np.array(complex(-0.8191148638725281, -0.7327504754066467),
                               dtype="complex64"), requires_grad=True)
        v6 = v1 + v2
        with L.no_grad():
            v10 = v6.conj().imag
        v6.mul_(0.5 - 2j)
        (v6 * L.tensor([0.5, -1.5], dtype=L.float64)).real.sum().backward()
        return _values(v10), v2.grad.numpy()
    t, g = _both(run)
    for a, b in zip(g, t):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# -- fft.ihfft's result is a conj() view in PyTorch (fuzz 65301814) ------------------------------

def test_ihfft_carries_the_conjugate_bit():
    def run(L):
        x = L.tensor([0.34, 0.74, -0.2], dtype=L.float64, requires_grad=True)
        y = L.fft.ihfft(x)
        flags = (y.is_conj(), y.conj().is_conj(), L.fft.ihfft2(x.detach().reshape(1, 3)).is_conj(),
                 L.fft.ihfftn(x.detach()).is_conj())
        with pytest.raises(RuntimeError, match="unresolved conjugated"):
            L.view_as_real(y)
        z = y.exp_()                        # an in-place write keeps the bit
        (L.view_as_real(z.conj()) * L.tensor([1.0, 2.0], dtype=L.float64)).sum().backward()
        return flags, z.is_conj(), x.grad.numpy()
    (tf, tz, tg), (gf, gz, gg) = _both(run)
    assert gf == tf and gz == tz
    np.testing.assert_allclose(gg, tg, rtol=1e-12)


# -- F.embedding_bag of a 2-D input with no columns (fuzz 60901006) -------------------------------

@pytest.mark.parametrize("shape", [(2, 0), (0, 0), (0, 3)])
def test_embedding_bag_of_empty_rows_refuses_as_torch(shape):
    def run(L):
        w = L.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
        try:
            out = L.nn.functional.embedding_bag(L.zeros(shape, dtype=L.int64), w, mode="max")
        except RuntimeError as e:
            return str(e)
        return tuple(out.shape)
    t, g = _both(run)
    assert g == t


# -- vmap refuses ops of data-dependent shape as PyTorch (fuzz transforms 2313) -------------------

@pytest.mark.parametrize("body", [
    "torch.nonzero(a)", "a.nonzero()", "a.nonzero(as_tuple=True)[0]", "torch.where(a > 0)[0]",
    "torch.unique(a)", "torch.unique(a, dim=0)", "torch.unique_consecutive(a)",
    "a[a.reshape(-1).nonzero()[:, 0]]"])
def test_vmap_refuses_dynamic_shape_ops(body):
    def run(L):
        fn = eval(f"lambda a: {body}", {"torch": L})
        try:
            L.func.vmap(fn)(L.tensor([[1.0, 2.0], [3.0, 4.0]]))
        except RuntimeError as e:
            return str(e)
        return "ran"
    t, g = _both(run)
    assert g == t


@pytest.mark.filterwarnings("ignore::DeprecationWarning")    # (torch's jacfwd: jit.script)
@pytest.mark.filterwarnings("ignore::UserWarning")          # (torch's batching fallback)
def test_jacfwd_and_unbatched_nonzero_still_compute():
    def run(L):
        x = L.tensor([1.0, -2.0, 3.0, 0.5], dtype=L.float64)
        f = lambda a: a[a.nonzero()[:, 0]] * a.sum()    # noqa: E731
        g = lambda a: a * L.nonzero(L.ones(3)).sum()     # noqa: E731
        return (L.func.jacfwd(f)(x).numpy(), L.func.jacrev(f)(x).numpy(),
                L.func.vmap(g)(x.reshape(2, 2)).numpy())
    t, g = _both(run)
    for a, b in zip(g, t):
        np.testing.assert_allclose(a, b, rtol=1e-12)
