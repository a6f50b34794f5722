"""Data pipelines and training infrastructure as PyTorch scripts use them (proxy task proxybw):
checkpoint loads (weights_only allowlist), DataLoader/sampler behaviour, metrics idioms."""
from __future__ import annotations

import io
import pickle

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
