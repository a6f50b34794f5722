"""Idioms from public physics/tutorial scripts (real44b probe), compared with PyTorch.

The probe found no behavioural difference; these pin the idioms it exercised so a regression in
masked writes through strided views, duplicate-index writes or pair enumeration shows up here.
"""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(fn):
    return fn(torch), fn(tg)


def test_masked_inplace_through_strided_view_writes_back():
    # lattice[:, :, i::2, j::2][mask] *= -1: getitem(mask) copies, imul, setitem into the view.
    def run(T):
        s = T.tensor(np.where(np.arange(64).reshape(1, 1, 8, 8) % 3 == 0, 1.0, -1.0), dtype=T.float32)
        for i, j in ((0, 0), (1, 0), (0, 1), (1, 1)):
            sub = s[:, :, i::2, j::2]
            s[:, :, i::2, j::2][sub * (i + 1) > 0] *= -1
        return s.numpy(), s.sum(axis=(1, 2, 3)).numpy()
    (a, sa), (b, sb) = _both(run)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(sa, sb)


def test_conv2d_same_padding_neighbour_sum():
    k = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], np.float32)[None, None]
    x = np.where(np.arange(50).reshape(2, 1, 5, 5) % 4 == 1, 1.0, -1.0).astype(np.float32)
    a, b = _both(lambda T: (-T.tensor(x) * T.nn.functional.conv2d(T.tensor(x), T.tensor(k), padding='same')).numpy())
    np.testing.assert_array_equal(a, b)


def test_duplicate_index_tuple_assignment_last_write_wins():
    def run(T):
        v = T.zeros((2, 6))
        ic = T.tensor([[0, 2], [0, 3], [2, 5]])
        v[:, ic[:, 0]], v[:, ic[:, 1]] = T.arange(6.).reshape(2, 3), -T.arange(6.).reshape(2, 3)
        return v.numpy()
    a, b = _both(run)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("r,rep", [(2, False), (3, False), (2, True), (4, False)])
def test_combinations_and_diff(r, rep):
    def run(T):
        c = T.combinations(T.arange(4), r, with_replacement=rep)
        d = T.diff(T.stack([c[:, 0], c[:, -1]]).T).squeeze()
        return c.numpy(), str(c.dtype), d.numpy(), T.diff(T.arange(7.).reshape(1, 7), n=2, axis=1).numpy()
    a, b = _both(run)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]
    np.testing.assert_array_equal(a[2], b[2])
    np.testing.assert_array_equal(a[3], b[3])
