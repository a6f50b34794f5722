"""Faults found by running held-out tutorial scripts (simo-an/pytorch-tutorial,
jinkyukim-me/pytorch-tutorials, Yue-Jiang/pytorch-tutorial) unchanged under tapegrad."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _write_through_resize(lib, make, size):
    base = make(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = base.resize(*size)
    out.view(-1)[0] = 100
    return base.numpy().copy(), out.numpy().copy()


@pytest.mark.parametrize("make, size", [
    (lambda lib: lib.arange(1, 5), (4, 1)),                         # the tutorial's case
    (lambda lib: lib.arange(6.0).reshape(2, 3), (3, 2)),
    (lambda lib: lib.arange(6.0).reshape(2, 3).t(), (6,)),          # non-contiguous: a copy
    (lambda lib: lib.arange(6.0).reshape(2, 3)[:, 1:], (4,)),
])
def test_resize_shares_a_contiguous_tensors_storage(torch, make, size):
    # Tensor.resize is new(self).contiguous().view(size) in PyTorch: writing through the result
    # of a contiguous tensor changes it (tapegrad used to return a copy, silently).
    got_base, got_out = _write_through_resize(tg, make, size)
    want_base, want_out = _write_through_resize(torch, make, size)
    np.testing.assert_array_equal(got_base, want_base)
    np.testing.assert_array_equal(got_out, want_out)


def test_resize_as_shares_storage_and_keeps_grad(torch):
    for lib in (tg, torch):
        a = lib.arange(4.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = a.resize_as(lib.zeros(2, 2))
        b[0, 0] = 5
        assert a.tolist() == [5.0, 1.0, 2.0, 3.0]
        w = lib.arange(4.0, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (w.resize(2, 2) * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        assert w.grad.tolist() == [1.0, 2.0, 3.0, 4.0]


_KEEPDIM_CALLS = [
    ("sum", lambda lib, a, k: a.sum(1, k)), ("mean", lambda lib, a, k: a.mean(1, k)),
    ("prod", lambda lib, a, k: a.prod(1, k)), ("amax", lambda lib, a, k: a.amax(1, k)),
    ("amin", lambda lib, a, k: a.amin(1, k)), ("max", lambda lib, a, k: a.max(1, keepdim=k)),
    ("min", lambda lib, a, k: a.min(1, keepdim=k)), ("argmax", lambda lib, a, k: a.argmax(1, k)),
    ("argmin", lambda lib, a, k: a.argmin(keepdim=k)), ("logsumexp", lambda lib, a, k: a.logsumexp(1, k)),
    ("var", lambda lib, a, k: a.var(1, keepdim=k, correction=0)),
    ("std", lambda lib, a, k: lib.std(a, 1, keepdim=k)), ("sum_keepdims", lambda lib, a, k: a.sum(1, keepdims=k)),
    ("nansum", lambda lib, a, k: a.nansum(1, k)), ("nanmean", lambda lib, a, k: a.nanmean(1, k)),
    ("median", lambda lib, a, k: a.median(1, k)), ("nanmedian", lambda lib, a, k: a.nanmedian(1, k)),
    ("kthvalue", lambda lib, a, k: a.kthvalue(1, 1, k)), ("mode", lambda lib, a, k: a.mode(1, k)),
    ("quantile", lambda lib, a, k: a.quantile(0.5, 1, k)), ("var_mean", lambda lib, a, k: lib.var_mean(a, 1, keepdim=k)),
    ("aminmax", lambda lib, a, k: lib.aminmax(a, dim=1, keepdim=k)),
    ("linalg_vector_norm", lambda lib, a, k: lib.linalg.vector_norm(a, 2, 1, k)),
    ("linalg_norm", lambda lib, a, k: lib.linalg.norm(a, dim=1, keepdim=k)),
    ("linalg_matrix_norm", lambda lib, a, k: lib.linalg.matrix_norm(a, keepdim=k)),
    ("norm", lambda lib, a, k: a.norm(2, 1, k)), ("norm_kw", lambda lib, a, k: lib.norm(a, dim=1, keepdim=k)),
    ("pairwise_distance", lambda lib, a, k: lib.nn.functional.pairwise_distance(a, a, keepdim=k)),
]


@pytest.mark.parametrize("value", [2, 1, 0, None, 1.0, np.True_], ids=repr)
@pytest.mark.parametrize("name, call", _KEEPDIM_CALLS, ids=[n for n, _ in _KEEPDIM_CALLS])
def test_keepdim_must_be_a_bool(torch, name, call, value):
    # x.sum(1, 2) (meaning dims 1 and 2) is a TypeError in PyTorch; tapegrad used to read 2 as
    # keepdim=True and return a silently different shape.
    if name == "sum_keepdims" and value is None:
        pytest.skip("keepdims=None is tapegrad's 'alias not given'")
    with pytest.raises(TypeError) as expected:
        call(torch, torch.ones(2, 3), value)
    with pytest.raises(TypeError, match="keepdim") as got:
        call(tg, tg.ones(2, 3), value)
    if "must be bool" in str(expected.value):
        assert f"must be bool, not {type(value).__module__ + '.' if type(value).__module__ == 'numpy' else ''}" \
            f"{type(value).__name__}" in str(got.value)


@pytest.mark.parametrize("name, call", _KEEPDIM_CALLS, ids=[n for n, _ in _KEEPDIM_CALLS])
def test_keepdim_bools_still_work(torch, name, call):
    for k in (True, False):
        want = call(torch, torch.arange(6.0).reshape(2, 3), k)
        got = call(tg, tg.arange(6.0).reshape(2, 3), k)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda a: a.broadcast_to(2, 2, 3), lambda a: a.broadcast_to((2, 2, 3)),
    lambda a: a.broadcast_to(size=[2, 2, 3]), lambda a: a[0, 0].broadcast_to(3),
    lambda a: a.flip(0, 1), lambda a: a.flip(2), lambda a: a.flip(dims=[0, 2]),
])
def test_method_packs_loose_ints_into_its_sequence(torch, call):
    # Tensor.broadcast_to(2, 2, 3) works in PyTorch (its method parser packs the ints);
    # tapegrad raised TypeError.
    want = call(torch.arange(6.0).reshape(1, 2, 3))
    got = call(tg.arange(6.0).reshape(1, 2, 3))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("call", [lambda a: a.broadcast_to(), lambda a: a.broadcast_to(2, size=3),
                                  lambda a: a.flip()])
def test_method_sequence_argument_errors(torch, call):
    with pytest.raises(TypeError) as expected:
        call(torch.ones(3))
    with pytest.raises(TypeError) as got:
        call(tg.ones(3))
    assert str(got.value) == str(expected.value)
