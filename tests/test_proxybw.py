"""Data pipelines and training infrastructure as PyTorch scripts use them (proxy task proxybw):
checkpoint loads (weights_only allowlist), DataLoader/sampler behaviour, metrics idioms."""
from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _round_trip(lib, obj, **kw):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **kw)


def test_weights_only_load_refuses_frozenset_as_torch():
    # PyTorch's weights-only allowlist has set but not frozenset
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL frozenset was not an allowed"):
        _round_trip(torch, {"f": frozenset([1, 2])})
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL frozenset was not an allowed"):
        _round_trip(tg, {"f": frozenset([1, 2])})
    # allowed by the user, or with weights_only=False, it loads
    for lib in (torch, tg):
        with lib.serialization.safe_globals([frozenset]):
            assert _round_trip(lib, {"f": frozenset([1, 2])}) == {"f": frozenset([1, 2])}
        assert _round_trip(lib, frozenset("ab"), weights_only=False) == frozenset("ab")
    assert _round_trip(tg, {"s": {3, 4}}) == _round_trip(torch, {"s": {3, 4}}) == {"s": {3, 4}}


def test_weights_only_load_accepts_layouts():
    expected = _round_trip(torch, {"layout": torch.strided, "sparse": torch.sparse_coo})
    out = _round_trip(tg, {"layout": tg.strided, "sparse": tg.sparse_coo})
    assert out["layout"] is tg.strided and out["sparse"] is tg.sparse_coo
    assert repr(out) == repr(expected)


@pytest.mark.parametrize("value, name", [(range(3), "range"), (slice(1, 2), "slice")])
def test_weights_only_error_names_builtins_bare(value, name):
    # PyTorch names a builtin as the user spells it in add_safe_globals([range])
    for lib in (torch, tg):
        with pytest.raises(pickle.UnpicklingError) as info:
            _round_trip(lib, {"v": value})
        assert f"GLOBAL {name} was not an allowed global" in str(info.value)
        assert f"safe_globals([{name}])" in str(info.value)


class _Config(dict):
    """A config object saved in a checkpoint (as pytorch-template saves its ConfigParser)."""


class _History(list):
    pass


@pytest.mark.parametrize("make, phrase", [
    (lambda: _Config(arch="Linear"), "Can only SETITEM"),
    (lambda: _History([0.5, 0.25]), "Can only extend lists"),
    (lambda: _History([0.5]), "Can only append to lists"),
])
def test_weights_only_load_fills_only_builtin_containers(make, phrase):
    # even allowlisted, a dict/list subclass gets no items in a weights-only load under torch
    for lib in (torch, tg):
        with lib.serialization.safe_globals([_Config, _History]):
            with pytest.raises(pickle.UnpicklingError, match=phrase):
                _round_trip(lib, {"config": make(), "epoch": 3})
        out = _round_trip(lib, {"config": make(), "epoch": 3}, weights_only=False)
        assert type(out["config"]) is type(make()) and out["config"] == make()
    # empty ones (no items to add) and the builtin containers load
    with tg.serialization.safe_globals([_Config, _History]):
        out = _round_trip(tg, {"c": _Config(), "h": _History(), "l": [1, [2]], "d": {"a": {}}})
    assert type(out["c"]) is _Config and type(out["h"]) is _History
    assert out["l"] == [1, [2]] and out["d"] == {"a": {}}


@pytest.fixture
def deterministic_mode():
    yield
    for lib in (torch, tg):
        lib.use_deterministic_algorithms(False)
        lib.utils.deterministic.fill_uninitialized_memory = True


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "complex64", "int8",
                                   "uint8", "int32", "int64", "bool"])
def test_deterministic_mode_fills_empty(deterministic_mode, dtype):
    # PyTorch fills uninitialised memory with NaN / the largest integer / True
    results = []
    for lib in (torch, tg):
        lib.use_deterministic_algorithms(True)
        dt = getattr(lib, dtype)
        x = lib.ones(2, 3, dtype=dt)
        made = [lib.empty(2, 3, dtype=dt), lib.empty_like(x), lib.empty_like(x.t()),
                x.new_empty((4,)), lib.empty_strided((2, 2), (1, 2), dtype=dt),
                lib.empty_permuted((2, 3), (1, 0), dtype=dt)]
        results.append([np.asarray(t.tolist(), dtype=complex).ravel() for t in made])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_array_equal(ours, theirs)


def test_deterministic_mode_fills_legacy_and_resize(deterministic_mode):
    out = []
    for lib in (torch, tg):
        lib.use_deterministic_algorithms(True)
        grown = lib.ones(2)
        grown.resize_(4)
        like = lib.ones(3)
        like.resize_as_(lib.ones(5))
        out.append([grown.tolist(), like.tolist(), lib.Tensor(2).tolist(),
                    lib.LongTensor(2).tolist(), lib.ones(1).new(2).tolist()])
    assert repr(out[1]) == repr(out[0])          # (nan == nan is False: compare the reprs)
    assert repr(out[0][0]) == "[1.0, 1.0, nan, nan]"


def test_fill_uninitialized_memory_switch(deterministic_mode):
    for lib in (torch, tg):
        assert lib.utils.deterministic.fill_uninitialized_memory is True
        with pytest.raises(RuntimeError, match="expected a bool, but got int"):
            lib.utils.deterministic.fill_uninitialized_memory = 1
        lib.use_deterministic_algorithms(True)
        lib.utils.deterministic.fill_uninitialized_memory = False
        assert lib.utils.deterministic.fill_uninitialized_memory is False
        assert lib.empty(3).shape == (3,)
    tg.utils.deterministic.fill_uninitialized_memory = True
    tg.use_deterministic_algorithms(False)
    assert tg.empty(0).shape == (0,)


def test_generator_clone_state():
    states = []
    for lib in (torch, tg):
        g = lib.Generator().manual_seed(11)
        lib.rand(4, generator=g)
        clone = g.clone_state()
        assert type(clone) is type(g) and clone is not g
        assert clone.initial_seed() == 11
        a = lib.rand(3, generator=g)
        b = lib.rand(3, generator=clone)
        assert lib.equal(a, b)
        with pytest.raises(NotImplementedError, match="graphsafe_get_state is not supported"):
            g.graphsafe_get_state()
        with pytest.raises(NotImplementedError, match="graphsafe_set_state is not supported"):
            g.graphsafe_set_state(clone)
        with pytest.raises(TypeError, match="expected a Generator, but got int"):
            g.graphsafe_set_state(1)
        states.append(a.shape)


@pytest.mark.parametrize("call, exc, phrase", [
    (lambda lib: lib.zeros(3).index_put_(lib.tensor([1]), lib.tensor(2.0)), TypeError,
     r"index_put_\(\): argument 'indices' \(position 1\) must be tuple of Tensors, not Tensor"),
    (lambda lib: lib.zeros(3).index_put_(lib.tensor([1]), lib.tensor(2.0), accumulate=True),
     TypeError, r"index_put_\(\): argument 'indices' \(position 1\) must be tuple of Tensors"),
    (lambda lib: lib.zeros(3).index_put_([1], lib.tensor(2.0)), TypeError,
     "expected Tensor as element 0 in argument 0, but got int"),
    (lambda lib: lib.zeros(3).index_put_([[1]], lib.tensor(2.0), True), TypeError,
     "expected Tensor as element 0 in argument 0, but got list"),
    (lambda lib: lib.zeros(3).index_put([1], lib.tensor(2.0)), TypeError,
     "expected Tensor as element 0 in argument 0, but got int"),
])
def test_index_put_indices_errors(call, exc, phrase):
    # a confusion-matrix update written with a bare index tensor instead of a tuple
    for lib in (torch, tg):
        with pytest.raises(exc, match=phrase):
            call(lib)


def test_confusion_matrix_index_put_accumulate():
    target = [0, 1, 2, 2, 1, 0, 0, 1]
    pred = [0, 2, 2, 1, 1, 0, 1, 1]
    out = []
    for lib in (torch, tg):
        cm = lib.zeros(3, 3, dtype=lib.long)
        t, p = lib.tensor(target), lib.tensor(pred)
        cm.index_put_((t, p), lib.ones_like(t), accumulate=True)
        out.append(cm.tolist())
    assert out[1] == out[0]
