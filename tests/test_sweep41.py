"""Session 30 sweep41: DLPack exchange, torch.utils.weak, flop counting, namedtuple returns."""
import copy
import gc

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


# --- DLPack -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["complex64", "complex128", "uint16", "uint32", "uint64"])
def test_from_dlpack_takes_every_dtype_tapegrad_has(dt):
    src = np.array([[1, 2], [3, 4]], dtype=dt)
    got = tapegrad.from_dlpack(src)
    want = torch.from_dlpack(src.copy())
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    cap = tapegrad.utils.dlpack.to_dlpack(tapegrad.tensor(src))
    np.testing.assert_array_equal(tapegrad.utils.dlpack.from_dlpack(cap).numpy(), src)


def test_to_dlpack_exports_a_tensor_that_requires_grad_detached():
    for T in (torch, tapegrad):
        a = T.tensor([1.0, 2.0], requires_grad=True)
        b = T.utils.dlpack.from_dlpack(T.utils.dlpack.to_dlpack(a))
        assert not b.requires_grad
        np.testing.assert_array_equal(b.numpy(), [1.0, 2.0])
        # the protocol method keeps refusing, as PyTorch's does
        with pytest.raises(BufferError, match="require gradient"):
            a.__dlpack__()


def test_dlpack_capsule_consumed_twice_and_non_tensor_errors():
    for T in (torch, tapegrad):
        cap = T.utils.dlpack.to_dlpack(T.ones(3))
        T.from_dlpack(cap)
        with pytest.raises(RuntimeError, match="consumed only once"):
            T.from_dlpack(cap)
        with pytest.raises(TypeError, match="must be Tensor, not numpy.ndarray"):
            T.utils.dlpack.to_dlpack(np.ones(3))


# --- torch.utils.weak -------------------------------------------------------------------------

def test_weak_id_key_dictionary_keys_by_identity_and_drops_dead_keys():
    for T in (torch, tapegrad):
        d = T.utils.weak.WeakIdKeyDictionary()
        a, b = T.ones(2), T.ones(2)
        d[a] = 1
        d[b] = 2
        assert (len(d), d[a], d[b], a in d, T.ones(2) in d, 5 in d) == (2, 1, 2, True, False, False)
        assert d.get(a.clone(), "miss") == "miss"
        with pytest.raises(KeyError):
            d[a.clone()]
        del a
        gc.collect()
        assert len(d) == 1 and list(d.values()) == [2]
        assert d.pop(b) == 2 and len(d) == 0 and d.pop(b, "x") == "x"
        with pytest.raises(TypeError, match="cannot create weak reference to 'int'"):
            d[5] = 1


def test_weak_id_key_dictionary_mapping_protocol():
    for T in (torch, tapegrad):
        ks = [T.zeros(1) for _ in range(4)]
        d = T.utils.weak.WeakTensorKeyDictionary({k: i for i, k in enumerate(ks)})
        it = iter(d)
        next(it)
        del ks[2]
        gc.collect()
        assert (len(list(it)), len(d)) == (2, 3)
        e = d.copy()
        assert type(e).__name__ == "WeakIdKeyDictionary" and e == d and e[ks[0]] == 0
        assert len(copy.deepcopy(d)) == 3
        n = T.zeros(1)
        f = d | {n: 9}
        assert len(f) == 4 and len(d) == 3
        d |= {n: 8}
        assert d[n] == 8 and d.setdefault(n, 1) == 8
        assert repr(d).startswith("<WeakIdKeyDictionary at 0x")


def test_weak_id_ref_and_tensor_weak_ref():
    for T in (torch, tapegrad):
        a = T.zeros(1)
        r, r2 = T.utils.weak.WeakIdRef(a), T.utils.weak.WeakIdRef(a)
        other = T.utils.weak.WeakIdRef(T.zeros(1))
        assert r() is a and r == r2 and hash(r) == hash(r2) == id(a)
        tr = T.utils.weak.TensorWeakRef(a)
        assert tr() is a
        del a
        gc.collect()
        assert r() is None and tr() is None and r != other and r == r
