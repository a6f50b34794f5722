"""linear / addmm / addmv / addr: which bias dtypes PyTorch accepts and which error it raises
first.  linear with a 0-d bias (or a product it cannot fuse) adds the bias in place, so an int64
or float64 0-d bias into a float32 product stays float32; the fused addmm path and addmv demand
one dtype and check it before the shapes."""
from __future__ import annotations

import math

import pytest

import tapegrad as tg


def _linear(T, xs, ws, bias, transpose=False):
    x = T.arange(float(math.prod(xs))).reshape(xs) / 7
    if transpose:
        x = x.transpose(-1, -2)
    w = T.arange(float(math.prod(ws))).reshape(ws) / 5
    return T.nn.functional.linear(x, w, bias(T))


CASES = {
    "1d_1d_int0d": lambda T: _linear(T, (11,), (11,), lambda T: T.tensor(2)),
    "1d_1d_double0d": lambda T: _linear(T, (11,), (11,), lambda T: T.tensor(0.5, dtype=T.float64)),
    "1d_1d_bool0d": lambda T: _linear(T, (3,), (3,), lambda T: T.tensor(True)),
    "1d_1d_int1d": lambda T: _linear(T, (3,), (3,), lambda T: T.tensor([1])),
    "1d_1d_float1d": lambda T: _linear(T, (3,), (3,), lambda T: T.tensor([1.0])),
    "1d_2d_int0d": lambda T: _linear(T, (3,), (4, 3), lambda T: T.tensor(1)),
    "1d_2d_double1d": lambda T: _linear(T, (3,), (4, 3), lambda T: T.ones(4, dtype=T.float64)),
    "2d_1d_int0d": lambda T: _linear(T, (2, 3), (3,), lambda T: T.tensor(0)),
    "2d_1d_float0d": lambda T: _linear(T, (2, 3), (3,), lambda T: T.tensor(0.0)),
    "2d_2d_int1d": lambda T: _linear(T, (2, 3), (4, 3), lambda T: T.arange(4)),
    "3d_2d_int0d": lambda T: _linear(T, (2, 2, 3), (4, 3), lambda T: T.tensor(1)),
    "3d_2d_double1d": lambda T: _linear(T, (2, 2, 3), (4, 3), lambda T: T.ones(4, dtype=T.float64)),
    "3d_strided_int0d": lambda T: _linear(T, (2, 3, 2), (4, 3), lambda T: T.tensor(1), True),
    "3d_strided_double1d": lambda T: _linear(T, (2, 3, 2), (4, 3),
                                             lambda T: T.ones(4, dtype=T.float64), True),
    "3d_1d_int0d": lambda T: _linear(T, (2, 2, 3), (3,), lambda T: T.tensor(1)),
    "addmm_int_self_1d_mat2": lambda T: T.addmm(T.tensor(0), T.ones(2, 3), T.ones(3)),
    "addmm_int_self_1d_mat1": lambda T: T.addmm(T.tensor(1), T.ones(3), T.ones(3, 4)),
    "addmm_int_mat1_1d": lambda T: T.addmm(T.ones(4), T.ones(3, dtype=T.int64), T.ones(3, 4)),
    "addmm_float_1d_mat1": lambda T: T.addmm(T.ones(4), T.ones(3), T.ones(3, 4)),
    "addmm_expand_last_dim": lambda T: T.addmm(T.ones(3, 2), T.ones(2, 5), T.ones(5, 3)),
    "addmv_int_input": lambda T: T.addmv(T.arange(2), T.ones(2, 3), T.ones(3)),
    "addmv_int0d_input": lambda T: T.addmv(T.tensor(1), T.ones(2, 3), T.ones(3)),
    "addmv_double_input": lambda T: T.addmv(T.ones(2, dtype=T.float64), T.ones(2, 3), T.ones(3)),
    "addmv_int_vec": lambda T: T.addmv(T.ones(2), T.ones(2, 3), T.ones(3, dtype=T.int64)),
    "addmv_all_int": lambda T: T.addmv(T.arange(2), T.ones(2, 3, dtype=T.int64),
                                       T.ones(3, dtype=T.int64)),
    "addmv_size_before_dtype": lambda T: T.addmv(T.arange(2), T.ones(2, 3), T.ones(4)),
    "addmv_rank_before_dtype": lambda T: T.addmv(T.arange(2), T.ones(3), T.ones(3)),
    "addmv_0d_size_mismatch": lambda T: T.addmv(T.tensor(1.0), T.ones(2, 3), T.ones(4)),
    "addmv_2d_input": lambda T: T.addmv(T.ones(2, 2), T.ones(2, 3), T.ones(3)),
    "addmv_broadcast_one": lambda T: T.addmv(T.ones(1), T.ones(2, 3), T.ones(3)),
    "addmv_method_double": lambda T: T.ones(2).addmv(T.ones(2, 3, dtype=T.float64),
                                                     T.ones(3, dtype=T.float64)),
    "addr_int_input_promotes": lambda T: T.addr(T.ones(2, 3, dtype=T.int64), T.ones(2), T.ones(3)),
    "addr_expand_error": lambda T: T.addr(T.arange(2), T.ones(2), T.ones(3)),
    "addr_expand_last_dim": lambda T: T.addr(T.ones(3, 2), T.ones(2), T.ones(3)),
}


def _outcome(fn, T):
    try:
        r = fn(T)
    except Exception as e:      # noqa: BLE001  (the exception is what is compared)
        return ("err", type(e).__name__, str(e).split("\n")[0])
    return ("ok", str(r.dtype), tuple(r.shape), r.double().reshape(-1).tolist())


@pytest.mark.parametrize("name", sorted(CASES))
def test_bias_dtype_rules_match_torch(torch, name):
    expected, got = _outcome(CASES[name], torch), _outcome(CASES[name], tg)
    if expected[0] == "ok" and got[0] == "ok":
        assert expected[:3] == got[:3]
        assert got[3] == pytest.approx(expected[3], rel=1e-6)
    else:
        assert got == expected


@pytest.mark.parametrize("xs,ws,transpose", [((5,), (5,), False), ((3,), (4, 3), False),
                                             ((2, 3, 5), (4, 5), False), ((2, 5, 3), (4, 5), True)])
def test_double_0d_bias_gradient_matches_torch(torch, xs, ws, transpose):
    def run(T):
        x = (T.arange(float(math.prod(xs))).reshape(xs) / 7)
        x = (x.transpose(-1, -2) if transpose else x).detach().requires_grad_()
        w = (T.arange(float(math.prod(ws))).reshape(ws) / 5).requires_grad_()
        b = T.tensor(0.3, dtype=T.float64, requires_grad=True)
        y = T.nn.functional.linear(x, w, b)
        (y * T.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        return (str(y.dtype), y.detach().double().reshape(-1).tolist(), str(b.grad.dtype),
                b.grad.item(), x.grad.double().reshape(-1).tolist(),
                w.grad.double().reshape(-1).tolist())
    expected, got = run(torch), run(tg)
    assert got[0] == expected[0] == "torch.float32" and got[2] == expected[2] == "torch.float64"
    for i in (1, 3, 4, 5):
        assert got[i] == pytest.approx(expected[i], rel=1e-5)


def test_double_0d_bias_gradcheck():
    x = tg.randn(2, 3, 4, dtype=tg.float64, requires_grad=True)
    w = tg.randn(5, 4, dtype=tg.float64, requires_grad=True)
    b = tg.tensor(0.25, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda x, w, b: tg.nn.functional.linear(x, w, b), (x, w, b))
