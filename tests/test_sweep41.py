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


# --- Tensor subclasses and the __torch_function__ protocol as user code drives it ---------------

def _sub(T):
    class M(T.Tensor):
        pass
    return M


def test_make_subclass_shares_storage_and_sets_requires_grad():
    for T in (torch, tapegrad):
        M = _sub(T)
        base = T.ones(2)
        a = T.Tensor._make_subclass(M, base, True)
        assert type(a) is M and a.requires_grad and a.is_leaf and a.grad_fn is None
        b = T.Tensor._make_subclass(M, base)
        base[0] = 5.0
        assert b.tolist() == [5.0, 1.0] and not b.requires_grad
        with pytest.raises(TypeError, match="must be Tensor, not list"):
            T.Tensor._make_subclass(M, [1.0])
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            T.Tensor._make_subclass(int, T.ones(1))
        with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
            T.Tensor._make_subclass(M, T.ones(1, dtype=T.long), True)


def test_parameter_subclass_with_its_own_new_arguments():
    for T in (torch, tapegrad):
        class Tagged(T.nn.Parameter):
            def __new__(cls, data, tag=None):
                self = super().__new__(cls, data)
                self.tag = tag
                return self
        p = Tagged(T.ones(2), tag="x")
        m = T.nn.Module()
        m.p = p
        assert (p.tag, type(p).__name__, p.requires_grad) == ("x", "Tagged", True)
        assert [n for n, _ in m.named_parameters()] == ["p"]


def test_tensor_subclass_repr_names_the_subclass():
    for T in (torch, tapegrad):
        M = _sub(T)
        assert repr(T.arange(6.).reshape(2, 3).as_subclass(M)) == (
            "M([[0., 1., 2.],\n   [3., 4., 5.]])")
        assert repr(T.tensor([], dtype=T.long).as_subclass(M)) == "M([], dtype=torch.int64)"
        assert repr(T.tensor([1.0], requires_grad=True).as_subclass(M)) == (
            "M([1.], grad_fn=<AliasBackward0>)")
        assert repr(T.nn.Parameter(T.ones(1))) == "Parameter containing:\ntensor([1.], requires_grad=True)"


def test_has_and_handle_torch_function():
    for T in (torch, tapegrad):
        ov = T.overrides
        M = _sub(T)

        class Duck:
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return ("duck", func.__name__, [t.__name__ for t in types])

        class Refuses:
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented

        def scaled(x, k=2):
            if ov.has_torch_function_unary(x):
                return ov.handle_torch_function(scaled, (x,), x, k=k)
            return x * k

        assert not ov.has_torch_function((T.ones(1), T.nn.Parameter(T.ones(1)), 3))
        assert ov.has_torch_function((T.ones(1).as_subclass(M),))
        assert ov.has_torch_function_variadic(1, Duck()) and ov.has_torch_function([Duck()])
        with pytest.raises(TypeError, match="expected a sequence"):
            ov.has_torch_function(Duck())
        assert scaled(Duck()) == ("duck", "scaled", ["Duck"])
        with pytest.raises(TypeError, match="no implementation found for .*scaled.* on types that"):
            scaled(Refuses())
        # a subclass without an override: Tensor's default runs the function, returns an M
        out = scaled(T.tensor([1.0, 2.0]).as_subclass(M), k=3)
        assert type(out) is M and out.tolist() == [3.0, 6.0]
        assert scaled(T.tensor([1.0])).tolist() == [2.0]


def test_subclass_override_calls_tensor_default_through_super():
    for T in (torch, tapegrad):
        log = []

        class Logged(T.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(func.__name__)
                return super().__torch_function__(func, types, args, kwargs)

        def pair(x):
            if T.overrides.has_torch_function_unary(x):
                return T.overrides.handle_torch_function(pair, (x,), x)
            return x + 1, x - 1

        x = T.tensor([1.0, 2.0], requires_grad=True)
        a, b = pair(x.as_subclass(Logged))
        assert log == ["pair"] and type(a) is Logged and type(b) is Logged
        (a * b).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
