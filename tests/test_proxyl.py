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


# -- torch._weight_int8pack_mm (the same family: weight-only int8 linear on CPU) -----------------

def _pack_operands(lib, dtype="float32", rows=4):
    rng = np.random.RandomState(5)
    a = lib.tensor(rng.randn(rows, 16), dtype=getattr(lib, dtype))
    b = lib.tensor(rng.randint(-128, 128, (8, 16)), dtype=lib.int8)
    scales = lib.tensor(rng.rand(8) / 64, dtype=getattr(lib, dtype))
    return a, b, scales


_PACK_ERRORS = {
    "double_input": lambda lib: lib._weight_int8pack_mm(*_pack_operands(lib, "float64")),
    "float_scales_for_half": lambda lib: lib._weight_int8pack_mm(
        _pack_operands(lib, "float16")[0], *_pack_operands(lib)[1:]),
    "uint8_weight": lambda lib: (lambda a, b, s: lib._weight_int8pack_mm(
        a, b.to(lib.uint8), s))(*_pack_operands(lib)),
    "strided_weight": lambda lib: (lambda a, b, s: lib._weight_int8pack_mm(
        a, b[:, :15], s))(*_pack_operands(lib)),
    "short_weight": lambda lib: (lambda a, b, s: lib._weight_int8pack_mm(
        a, b[:, :15].contiguous(), s))(*_pack_operands(lib)),
    "input_not_last_contiguous": lambda lib: (lambda a, b, s: lib._weight_int8pack_mm(
        a.t().contiguous().t(), b, s))(*_pack_operands(lib)),
    "short_scales": lambda lib: (lambda a, b, s: lib._weight_int8pack_mm(
        a, b, s[:7]))(*_pack_operands(lib)),
    "1d_input": lambda lib: (lambda a, b, s: lib._weight_int8pack_mm(
        a[0], b, s))(*_pack_operands(lib)),
    # torch.tensor of a (0, 16) ndarray has strides (0, 0): "not contiguous on the last dimension"
    "empty_rows_from_numpy": lambda lib: lib._weight_int8pack_mm(*_pack_operands(lib, rows=0)),
    "1d_weight": lambda lib: (lambda a, b, s: lib._weight_int8pack_mm(
        a, b[0], s))(*_pack_operands(lib)),
}


@pytest.mark.parametrize("case", sorted(_PACK_ERRORS))
def test_weight_int8pack_mm_errors_match_torch(torch, case):
    fn = _PACK_ERRORS[case]
    assert _outcome(tg, fn) == _outcome(torch, fn)


@pytest.mark.parametrize("dtype, rows", [("float32", 4), ("float16", 3)])
def test_weight_int8pack_mm_values_match_torch(torch, dtype, rows):
    got = tg._weight_int8pack_mm(*_pack_operands(tg, dtype, rows))
    expected = torch._weight_int8pack_mm(*_pack_operands(torch, dtype, rows))
    assert got.dtype == getattr(tg, dtype) and tuple(got.shape) == tuple(expected.shape)
    tol = 1e-5 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(got.numpy().astype(np.float64),
                               expected.numpy().astype(np.float64), rtol=tol, atol=tol)


def test_weight_int8pack_mm_has_no_derivative(torch):
    outcomes = []
    for lib in (tg, torch):
        a, b, scales = _pack_operands(lib)
        result = lib._weight_int8pack_mm(a.requires_grad_(), b, scales)
        assert result.requires_grad
        with pytest.raises(RuntimeError) as info:
            result.sum().backward()
        outcomes.append(str(info.value))
    assert outcomes[0] == outcomes[1]
