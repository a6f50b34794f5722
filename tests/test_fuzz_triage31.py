"""Regressions of the session-31 fuzz findings (fuzz18: compile-mode programs 62707300.., programs
60673005.. and 65020100.., surface 60806043..), each an explicit case compared with PyTorch."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- SILENT: the layout of a binary op's result with a promoted operand (fuzz 60673519) ---------
# numpy's cast (order "K") of an expanded operand puts its stride-0 dim innermost, and the
# result followed that cast: `e + 1j` of an expand e was strided where PyTorch's is row-major,
# so its flatten() was a copy (an in-place write through it missed the result) where PyTorch's
# is a view.  A complex op of two differently laid out tensors took numpy's row-major layout
# where PyTorch's follows the first operand.

LAYOUT_CASES = {
    "expand + complex number": lambda L: L.ones(4).expand(3, 4) + 1j,
    "expand * complex number": lambda L: L.full((4, 1), 0.5).expand(4, 3) * (2 - 1j),
    "expand + float64 tensor": lambda L: L.ones(4).expand(3, 4) + L.ones(3, 4, dtype=L.float64),
    "4-d expand + complex (the finding)": lambda L: L.full((4, 3, 4), 0.25).expand(2, 4, 3, 4)
    + (1 - 0.5j),
    "transposed real + complex": lambda L: L.ones(3, 4).t() + L.ones(4, 3, dtype=L.complex64),
    "transposed complex + complex": lambda L: L.ones(4, 3, dtype=L.complex64).t()
    + L.ones(3, 4, dtype=L.complex64),
    "transposed complex * real": lambda L: L.ones(4, 3, dtype=L.complex64).t() * L.ones(3, 4),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_binary_op_with_a_promoted_operand_has_torch_layout(case):
    make = LAYOUT_CASES[case]
    got, want = make(tg), make(torch)
    assert got.stride() == want.stride()
    assert got.is_contiguous() == want.is_contiguous()


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_flat_view_of_that_result_writes_through_as_in_torch(case):
    make = LAYOUT_CASES[case]

    def run(L):
        y = make(L)
        try:
            flat = y.view(-1)
        except RuntimeError:
            return "view refused", None
        flat.mul_(2)
        return "view", y.numpy().copy()

    (how_t, got), (how_p, want) = run(tg), run(torch)
    assert how_t == how_p
    if want is not None:
        np.testing.assert_array_equal(got, want)


def test_requires_grad_of_flatten_under_no_grad_of_such_a_result():
    # (the finding as the fuzzer saw it: a view keeps requires_grad under no_grad, a copy not)
    def run(L):
        x = L.full((4, 3, 4), 0.5, requires_grad=True)
        y = x.expand(2, 4, 3, 4) + (1 - 0.5j)
        with L.no_grad():
            f = y.flatten(0)
        return f.requires_grad, f._base is y
    assert run(tg) == run(torch) == (True, True)


# -- x[0] = x of a (1, 1) x (fuzz 65016220) -------------------------------------------------
# PyTorch's setitem drops every leading size-1 dim of the value, so the value of a (1, 1) x is
# 0-d; its expand to the target has stride 0, which PyTorch compares literally with the
# target's: a partial overlap, refused.  tapegrad took the stride 0 of a size-1 dim for any.

SELF_WRITE_CASES = {
    "(1, 1): x[0] = x": ((1, 1), lambda x: x.__setitem__(0, x)),
    "(1, 1, 1): x[0] = x": ((1, 1, 1), lambda x: x.__setitem__(0, x)),
    "(1, 1): x[:, 0] = x": ((1, 1), lambda x: x.__setitem__((slice(None), 0), x)),
    "(1,): x[0] = x": ((1,), lambda x: x.__setitem__(0, x)),
    "(1, 2): x[0] = x": ((1, 2), lambda x: x.__setitem__(0, x)),
    "(1, 1): x[...] = x": ((1, 1), lambda x: x.__setitem__(Ellipsis, x)),
    "(1, 3): x[0, :1] = x[:, 1:2]": ((1, 3), lambda x: x.__setitem__((0, slice(0, 1)),
                                                                    x[:, 1:2])),
}


@pytest.mark.parametrize("case", sorted(SELF_WRITE_CASES))
def test_setitem_of_a_tensor_into_its_own_element(case):
    shape, write = SELF_WRITE_CASES[case]

    def run(L):
        x = L.arange(float(np.prod(shape))).reshape(shape) + 1
        try:
            write(x)
        except RuntimeError as e:
            assert "refer to a single memory location" in str(e)
            return "refused", None
        return "ran", x.tolist()

    assert run(tg) == run(torch)


def test_setitem_into_own_element_through_a_graph_is_refused():
    # (the seed's program: a linear layer's (1,) output, unsqueezed and exp_()ed)
    def run(L):
        w = L.tensor([[0.5, 1.0, 2.0, 0.5]], dtype=L.float64, requires_grad=True)
        x = L.tensor([0.25, -1.0, 0.5, 1.5], dtype=L.float64)
        v = L.nn.functional.linear(x, w).unsqueeze(0).exp_()
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            v[0] = v
        return v.detach().numpy()
    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-12)


# -- linalg of a matrix with an infinity (fuzz 60673301) -------------------------------------

def _with(L, value, shape, pos=1):
    n = int(np.prod(shape))
    x = L.sin(L.arange(n, dtype=L.float64) * 1.7 + 0.3).reshape(shape)
    x.view(-1)[pos] = value
    return x


def test_svd_of_a_wide_matrix_with_an_infinity_returns():
    # numpy's LAPACK looped forever on it (pinv, svd, matrix_norm(x, 2) of this (3, 5) matrix);
    # PyTorch's SVD is NaN there.  Run apart, so a regression fails instead of hanging.
    code = ("import tapegrad as tg\n"
            "x = tg.sin(tg.arange(15, dtype=tg.float64) * 1.7 + 0.3).reshape(3, 5)\n"
            "x.view(-1)[1] = float('inf')\n"
            "print(int(tg.linalg.pinv(x).isnan().sum()), int(tg.linalg.svdvals(x).isnan().sum()),"
            " int(tg.linalg.matrix_norm(x, 2).isnan().sum()))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    x = _with(torch, float("inf"), (3, 5))
    want = (int(torch.linalg.pinv(x).isnan().sum()), int(torch.linalg.svdvals(x).isnan().sum()),
            int(torch.linalg.matrix_norm(x, 2).isnan().sum()))
    assert tuple(map(int, out.stdout.split())) == want == (15, 3, 1)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_matrix_exp_of_a_matrix_with_a_non_finite_element(value):
    # log2 of an infinite norm has no integer ceiling: OverflowError leaked out; PyTorch's
    # result is NaN in that matrix and the others of the batch their own
    def run(L):
        x = L.stack([_with(L, value, (2, 2), 0), L.tensor([[0.1, 0.2], [-0.3, 0.4]],
                                                          dtype=L.float64)])
        return L.linalg.matrix_exp(x).numpy()
    got, want = run(tg), run(torch)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    assert np.isnan(got[0]).all()


def test_matrix_exp_gradient_of_the_finite_matrix_in_that_batch():
    x = tg.tensor([[[float("inf"), 1.0], [1.0, 2.0]], [[0.1, 0.2], [-0.3, 0.4]]],
                  dtype=tg.float64, requires_grad=True)
    tg.linalg.matrix_exp(x).sum().backward()
    xt = torch.tensor([[0.1, 0.2], [-0.3, 0.4]], dtype=torch.float64, requires_grad=True)
    torch.linalg.matrix_exp(xt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[1], xt.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_eig_of_a_matrix_with_a_non_finite_element(value):
    for L in (tg, torch):
        x = _with(L, value, (3, 3))
        with pytest.raises(RuntimeError, match="input tensor should not contain infs or NaNs"):
            L.linalg.eig(x)
        with pytest.raises(RuntimeError, match="input tensor should not contain infs or NaNs"):
            L.linalg.eigvals(x.clone().requires_grad_())


def test_eigvals_of_a_batch_with_an_infinite_matrix():
    # (numpy's LinAlgError refused the whole batch; PyTorch's values are NaN for that matrix)
    def run(L):
        x = L.stack([_with(L, float("inf"), (2, 2), 0),
                     L.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=L.float64)])
        return L.linalg.eigvals(x).numpy()
    got, want = run(tg), run(torch)
    assert got.dtype == want.dtype
    assert np.isnan(got[0].real).all() and np.isnan(got[0].imag).all()
    np.testing.assert_allclose(np.sort_complex(got[1]), np.sort_complex(want[1]), rtol=1e-12)
