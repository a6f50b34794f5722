"""Faults found running held-out tutorial scripts (helper proxyl) under tapegrad, checked against
PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _outcome(lib, fn):
    """(dtype name, values) of fn(lib), or (exception type name, message)."""
    try:
        result = fn(lib)
    except Exception as exc:    # noqa: BLE001 - the exception is what is compared
        return type(exc).__name__, str(exc)
    return str(result.dtype).rsplit(".", 1)[-1], result.tolist()


def _int8(lib, rows, cols, seed, dtype="int8", low=-128, high=128):
    values = np.random.RandomState(seed).randint(low, high, (rows, cols))
    return lib.tensor(values, dtype=getattr(lib, dtype))


# -- torch._int_mm (a quantization tutorial's int8 matmul: absent before) ------------------------

_INT_MM_CASES = {
    "int8": lambda lib: lib._int_mm(_int8(lib, 17, 16, 0), _int8(lib, 16, 16, 1)),
    # 200 products of 127 * -128 overflow int16 but not int32: the sum is exact in int32
    "accumulates_in_int32": lambda lib: lib._int_mm(lib.full((1, 200), 127, dtype=lib.int8),
                                                    lib.full((200, 1), -128, dtype=lib.int8)),
    "uint8_input": lambda lib: lib._int_mm(_int8(lib, 3, 4, 2, "uint8", 0, 256),
                                           _int8(lib, 4, 5, 3)),
    "no_rows": lambda lib: lib._int_mm(lib.ones(0, 4, dtype=lib.int8), _int8(lib, 4, 5, 3)),
    "uint8_mat2": lambda lib: lib._int_mm(_int8(lib, 3, 4, 0), _int8(lib, 4, 5, 1, "uint8", 0, 9)),
    "float_input": lambda lib: lib._int_mm(lib.ones(3, 4), _int8(lib, 4, 5, 1)),
    "long_mat2": lambda lib: lib._int_mm(_int8(lib, 3, 4, 0), lib.ones(4, 5, dtype=lib.long)),
    "half_input": lambda lib: lib._int_mm(lib.ones(3, 4, dtype=lib.float16), _int8(lib, 4, 5, 1)),
    "inner_mismatch": lambda lib: lib._int_mm(_int8(lib, 3, 4, 0), _int8(lib, 5, 5, 1)),
    "1d_input": lambda lib: lib._int_mm(lib.ones(3, dtype=lib.int8), _int8(lib, 3, 5, 1)),
    "1d_mat2": lambda lib: lib._int_mm(_int8(lib, 3, 4, 0), lib.ones(4, dtype=lib.int8)),
    "3d_mat2": lambda lib: lib._int_mm(_int8(lib, 3, 4, 0), lib.ones(4, 5, 2, dtype=lib.int8)),
    "list_input": lambda lib: lib._int_mm([[1]], lib.ones(1, 1, dtype=lib.int8)),
    "float_out": lambda lib: lib._int_mm(_int8(lib, 3, 4, 0), _int8(lib, 4, 5, 1),
                                         out=lib.empty(3, 5)),
    "short_out": lambda lib: lib._int_mm(_int8(lib, 3, 4, 0), _int8(lib, 4, 5, 1),
                                         out=lib.empty(2, 5, dtype=lib.int32)),
}


@pytest.mark.parametrize("case", sorted(_INT_MM_CASES))
def test_int_mm_matches_torch(torch, case):
    fn = _INT_MM_CASES[case]
    assert _outcome(tg, fn) == _outcome(torch, fn)


def test_int_mm_writes_out(torch):
    a, b = _int8(tg, 3, 4, 0), _int8(tg, 4, 5, 1)
    out = tg.zeros(3, 5, dtype=tg.int32)
    assert tg._int_mm(a, b, out=out) is out
    expected = torch._int_mm(_int8(torch, 3, 4, 0), _int8(torch, 4, 5, 1))
    assert out.tolist() == expected.tolist()
