"""Storage.from_buffer (fastai's `torch.ByteTensor(torch.ByteStorage.from_buffer(img.tobytes()))`
and apex-style raw reads): values, dtypes, byte orders, count/offset, copies, the deprecation
warning's line, and every error (type and message) against PyTorch."""
from __future__ import annotations

import array
import warnings

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

CASES = [
    "lib.UntypedStorage.from_buffer(b'ab')",
    "lib.UntypedStorage.from_buffer(b'abcd', 'little', dtype=lib.int16)",
    "lib.UntypedStorage.from_buffer(b'abcd', dtype=lib.int16)",
    "lib.UntypedStorage.from_buffer(bytes([0, 1]), 'big', dtype=lib.int16)",
    "lib.FloatStorage.from_buffer(bytes(7), 'little')",
    "lib.FloatStorage.from_buffer(bytes(8), 'middle')",
    "lib.FloatStorage.from_buffer(bytes(7), 'middle')",
    "lib.FloatStorage.from_buffer(bytes(9), 'little', offset=1)",
    "lib.FloatStorage.from_buffer(bytes(9), 'little', offset=2)",
    "lib.FloatStorage.from_buffer(bytes(8), 'little', count=3)",
    "lib.FloatStorage.from_buffer(bytes(8), 'little', count=1, offset=6)",
    "lib.FloatStorage.from_buffer(bytes(8), 'little', offset=9)",
    "lib.FloatStorage.from_buffer(bytes(8), None)",
    "lib.FloatStorage.from_buffer(bytes(4), 'little', dtype=lib.int32)",
    "lib.FloatStorage.from_buffer(bytes([0, 0, 128, 63, 0, 0, 0, 64]), 'little')",
    "lib.DoubleStorage.from_buffer(bytes(16), 'native')",
    "lib.IntStorage.from_buffer(bytes([1, 0, 0, 0, 2, 0, 0, 0]), 'little', count=1, offset=4)",
    "lib.IntStorage.from_buffer(bytes([0, 0, 0, 1, 0, 0, 0, 2]), 'big')",
    "lib.LongStorage.from_buffer(bytes(8), byte_order='little')",
    "lib.HalfStorage.from_buffer(bytes([0, 60]), 'little')",
    "lib.BoolStorage.from_buffer(bytes([0, 1, 2]))",
    "lib.BoolStorage.from_buffer(bytes([0, 1, 2]), 'little')",
    "lib.CharStorage.from_buffer(bytes([255, 1]))",
    "lib.ByteStorage.from_buffer(b'abcdef', count=10)",
    "lib.ByteStorage.from_buffer(b'abcdef', offset=7)",
    "lib.ByteStorage.from_buffer(b'abcdef', offset=-1)",
    "lib.ByteStorage.from_buffer(b'abcdef', count=0)",
    "lib.ByteStorage.from_buffer(b'abc', count=-5)",
    "lib.ByteStorage.from_buffer(b'abc', 'little', 2, 1)",
    "lib.ByteStorage.from_buffer(b'ab', 'middle')",
    "lib.ByteStorage.from_buffer(b'abc', None)",
    "lib.ByteStorage.from_buffer(b'abc', dtype=lib.int16)",
    "lib.ByteStorage.from_buffer('abc')",
    "lib.ByteStorage.from_buffer([1, 2])",
    "lib.ByteStorage.from_buffer(memoryview(b'xy'))",
    "lib.ByteStorage.from_buffer(bytearray(b'xyz'))",
    "lib.ByteStorage.from_buffer(array.array('i', [1, 2]))",
    "lib.ByteStorage.from_buffer(b'')",
    "lib.TypedStorage.from_buffer(b'ab')",
    "lib.TypedStorage.from_buffer(b'abcd', 'big', dtype=lib.int16)",
    "lib.ByteTensor(lib.ByteStorage.from_buffer(bytes(range(12)))).view(2, 2, -1).permute(2, 0, 1)",
    "lib.tensor([], dtype=lib.uint8).set_(lib.ByteStorage.from_buffer(b'abc'))",
]


def _outcome(lib, expr):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = eval(expr, {"lib": lib, "array": array})
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return type(e).__name__, str(e)
    kind = type(r).__name__
    if kind == "Tensor":
        return kind, str(r.dtype), r.shape, r.tolist()
    return kind, str(getattr(r, "dtype", "")), r.size(), r.tolist()


@pytest.mark.parametrize("expr", CASES)
def test_from_buffer_matches_torch(expr):
    assert _outcome(tg, expr) == _outcome(torch, expr)


@pytest.mark.parametrize("lib", [tg, torch])
def test_from_buffer_copies(lib):
    data = bytearray(b"abc")
    storage = lib.ByteStorage.from_buffer(data)
    data[0] = 0
    assert storage.tolist() == [97, 98, 99]
