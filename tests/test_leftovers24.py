"""Differences from PyTorch left open by earlier sessions, closed in session 24, each against torch.

- strides of a new empty tensor: numpy gives a fresh empty array zero strides, so
  `zeros(0, 16).stride()` was (0, 0) where PyTorch's is (16, 1);
- an out= that a join (cat, stack, hstack ...) cannot cast its result to: PyTorch refuses it in
  cat's words with a TypeError, not TensorIterator's RuntimeError.
"""
from __future__ import annotations

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

EMPTY_SHAPES = [(0,), (0, 16), (0, 3, 4), (2, 0, 4), (3, 0), (1, 0, 1), (0, 0)]


@pytest.mark.parametrize("shape", EMPTY_SHAPES)
@pytest.mark.parametrize("factory", ["zeros", "empty", "ones"])
def test_new_empty_tensor_strides(shape, factory):
    mine = getattr(tg, factory)(*shape)
    theirs = getattr(torch, factory)(*shape)
    assert mine.stride() == theirs.stride()
    assert mine.stride(-1) == theirs.stride(-1)
    assert mine.reshape(-1).stride() == theirs.reshape(-1).stride()
    assert mine.is_contiguous() == theirs.is_contiguous()


@pytest.mark.parametrize("key", [(slice(None), slice(0, 0)), (slice(0, 0),)])
def test_empty_view_keeps_its_strides(key):
    assert tg.zeros(3, 4)[key].stride() == torch.zeros(3, 4)[key].stride()


JOINS = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
         "row_stack"]


@pytest.mark.parametrize("name", JOINS)
def test_join_refuses_an_uncastable_out_as_pytorch(name):
    def outcome(lib):
        x = lib.ones(2)
        try:
            getattr(lib, name)([x, x], out=lib.empty(0, dtype=lib.int64))
        except Exception as e:     # noqa: BLE001 (the type is what is compared)
            return type(e).__name__, str(e)
        return None
    assert outcome(tg) == outcome(torch)
    assert outcome(tg)[0] == "TypeError"


@pytest.mark.parametrize("name", ["cat", "stack"])
def test_join_casts_into_a_castable_out(name):
    for lib in (tg, torch):
        x = lib.tensor([1.25, 2.5])
        out = lib.empty(0, dtype=lib.float16)
        getattr(lib, name)([x, x], out=out)
        assert out.dtype == lib.float16
    assert tg.cat([tg.tensor([1.25])] * 2, out=tg.empty(0, dtype=tg.float16)).tolist() == \
        torch.cat([torch.tensor([1.25])] * 2, out=torch.empty(0, dtype=torch.float16)).tolist()
