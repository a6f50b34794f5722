"""Regressions of the session-33 fuzz triage (fuzz24: programs from 65101400 and 62723800,
surface from 60817200, training loops from 6000), each case stated explicitly and compared with
PyTorch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _operands(lib):
    A = lib.tensor(np.arange(12.).reshape(4, 3) / 7 + np.eye(4, 3), requires_grad=True)
    tau = lib.tensor([0.5, 1.2, 0.7], dtype=lib.float64, requires_grad=True)
    C = lib.tensor(np.arange(8.).reshape(4, 2) / 3 - 1, requires_grad=True)
    S = lib.tensor([[3., 1, 0], [1, 4, 1], [0, 1, 5]], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([1., 2, 3], dtype=lib.float64, requires_grad=True)
    return A * 1, tau * 1, C * 1, S * 1, b * 1


# (op, which operand a later in-place write hits: "out" or an index into the operands PyTorch's
# node saves)
_SAVED = {
    "householder_product": (lambda lib, A, tau, C, S, b: lib.linalg.householder_product(A, tau),
                            lambda A, tau, C, S, b: [A, tau]),
    "ormqr": (lambda lib, A, tau, C, S, b: lib.ormqr(A, tau, C),
              lambda A, tau, C, S, b: [A, tau, C]),
    "lstsq": (lambda lib, A, tau, C, S, b: lib.linalg.lstsq(A, C).solution,
              lambda A, tau, C, S, b: [A, C]),
    "lstsq_square": (lambda lib, A, tau, C, S, b: lib.linalg.lstsq(S, C[:3]).solution,
                     lambda A, tau, C, S, b: [S]),
    "solve_vector": (lambda lib, A, tau, C, S, b: lib.linalg.solve(S, b),
                     lambda A, tau, C, S, b: [S]),
}


def _run(lib, op, which):
    f, saved = _SAVED[op]
    ops = _operands(lib)
    y = f(lib, *ops)
    target = y if which == "out" else saved(*ops)[which]
    with lib.no_grad():
        target.mul_(1.0)
    try:
        y.sum().backward()
    except RuntimeError as e:
        return str(e)
    return None


@pytest.mark.parametrize("op,which", [(op, w) for op in _SAVED for w in ("out", 0, 1, 2)
                                      if w == "out" or w < len(_SAVED[op][1](*range(5)))])
def test_linalg_composites_guard_saved_tensors(op, which):
    # fuzz 65101510 / 65102139: householder_product, ormqr, lstsq and a vector solve are built
    # here from recorded ops (or copied into LAPACK's layout), whose records saved copies; an
    # in-place write to the result (or to A) before the backward went unnoticed where PyTorch's
    # node, which saves its result and operands, raises
    want = _run(torch, op, which)
    got = _run(tapegrad, op, which)
    assert (want is None) == (got is None), (want, got)
    if want is not None:
        assert "modified by an inplace operation" in got
        assert want.split(", is at")[0] == got.split(", is at")[0]


def test_householder_product_output_written_through_mask_names_its_node():
    # the seed's shape: a masked setitem on the product, then backward
    def run(lib):
        a, tau = lib.geqrf(lib.tensor(np.arange(6.).reshape(3, 2) + np.eye(3, 2)))
        a.requires_grad_()
        Q = lib.linalg.householder_product(a, tau)
        Q[Q > 0] = 0.5
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            Q.sum().backward()
        return str(info.value)
    assert run(tapegrad).split(", is at")[0] == run(torch).split(", is at")[0]
    assert "output 0 of LinalgHouseholderProduct," in run(tapegrad)


def test_custom_function_saved_output_error_names_the_function():
    # PyTorch's message names the node that saved its output ("output 0 of Twice"), not the
    # CopySlices of the setitem that wrote it since
    def run(lib):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                y, = ctx.saved_tensors
                return g * 2

        y = Twice.apply(lib.ones(3, requires_grad=True))
        y[0] = 5
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            y.sum().backward()
        return str(info.value)
    assert "output 0 of Twice," in run(torch)
    assert run(tapegrad) == run(torch)

