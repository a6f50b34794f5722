"""Tabular/Kaggle-style proxy (session 32, proxybc): the orders PyTorch's CPU sort, topk and mode
leave to libstdc++'s unstable algorithms among equal values (and topk's with sorted=False)."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(values, dtype=np.float32):
    a = np.asarray(values, dtype=dtype)
    return tapegrad.from_numpy(a.copy()), torch.from_numpy(a.copy())


def _same(ours, theirs):
    for x, y in zip(ours, theirs):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


# -- topk -------------------------------------------------------------------------------------------

def test_topk_ties_pick_pytorchs_indices():
    # popularity counts with ties: nth_element + sort choose among the equal ones
    ours, theirs = _both([3, 1, 3, 3, 2, 3, 1, 3])
    for k in range(1, 9):
        for largest in (True, False):
            _same(ours.topk(k, largest=largest), theirs.topk(k, largest=largest))
    ours, theirs = _both([5, 5, 1, 5], np.int64)
    _same(ours.topk(2), theirs.topk(2))
    assert ours.topk(2).indices.tolist() == [1, 3]


def test_topk_unsorted_order_is_nth_elements():
    ours, theirs = _both([5., 1., 4., 2., 3., 6., 0.])
    got = ours.topk(3, sorted=False)
    _same(got, theirs.topk(3, sorted=False))
    assert got.values.tolist() == [5., 6., 4.]
    _same(ours.topk(3, largest=False, sorted=False), theirs.topk(3, largest=False, sorted=False))


def test_topk_partial_sort_path_and_dims():
    # k * 64 <= n: std::partial_sort's heap; along dim 0 and with NaN (first for largest)
    rows = np.arange(200, dtype=np.float32) % 7
    ours, theirs = _both(rows)
    _same(ours.topk(3), theirs.topk(3))
    _same(ours.topk(3, largest=False), theirs.topk(3, largest=False))
    grid = np.random.RandomState(0).randint(0, 3, (20, 4)).astype(np.float64)
    grid[3, 1] = grid[7, 1] = np.nan
    ours, theirs = _both(grid, np.float64)
    for k in (1, 4, 19):
        _same(ours.topk(k, dim=0), theirs.topk(k, dim=0))
        _same(ours.topk(k, dim=0, sorted=False), theirs.topk(k, dim=0, sorted=False))


def test_topk_ties_keep_gradient_on_chosen_elements():
    x = tapegrad.tensor([2., 2., 1., 2.], requires_grad=True)
    xt = torch.tensor([2., 2., 1., 2.], requires_grad=True)
    (x.topk(2).values * tapegrad.tensor([1., 10.])).sum().backward()
    (xt.topk(2).values * torch.tensor([1., 10.])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def test_topk_fuzz_against_torch():
    rng = np.random.RandomState(5)
    for _ in range(150):
        n = int(rng.choice([3, 9, 17, 40, 130]))
        a = rng.randint(0, 3, (2, n)).astype(np.float32)
        k = int(rng.randint(0, n + 1))
        largest, sort = bool(rng.randint(2)), bool(rng.randint(2))
        ours, theirs = _both(a)
        _same(ours.topk(k, 1, largest, sort), theirs.topk(k, 1, largest, sort))


# -- sort -------------------------------------------------------------------------------------------

def test_sort_unstable_beyond_sixteen_with_ties():
    labels = [0, -3, 2, 1, -3, 2, 1, 0, -2, 0, 0, 0, -2, 0, 0, 1, 0, -2, 0, -2]
    for dtype in (np.int64, np.float32):
        ours, theirs = _both(labels, dtype)
        for desc in (False, True):
            _same(ours.sort(descending=desc), theirs.sort(descending=desc))
            _same([ours.argsort(descending=desc)], [theirs.argsort(descending=desc)])
            _same(ours.sort(descending=desc, stable=True), theirs.sort(descending=desc, stable=True))
    ours, theirs = _both(labels)
    assert ours.sort().indices.tolist()[:6] == [1, 4, 19, 17, 12, 8]
    # stable=True still keeps the input order of equal values
    assert ours.sort(stable=True).indices.tolist()[:6] == [1, 4, 8, 12, 17, 19]


def test_sort_unstable_2d_nan_and_small_rows():
    a = np.random.RandomState(1).randint(0, 4, (3, 25)).astype(np.float64)
    a[0, [2, 9, 20]] = np.nan
    ours, theirs = _both(a, np.float64)
    for dim in (0, 1):
        for desc in (False, True):
            _same(ours.sort(dim, desc), theirs.sort(dim, desc))
    _same([tapegrad.msort(ours.T)], [torch.msort(theirs.T)])
    ours, theirs = _both([2, 1, 2, 1, 2], np.int64)     # up to 16: insertion sort, stable
    _same(ours.sort(), theirs.sort())


def test_sort_radix_path_is_stable():
    # PyTorch sorts a 1-d integer tensor of >= 32768 ascending with fbgemm's stable radix sort
    a = np.random.RandomState(2).randint(0, 5, 40000)
    ours, theirs = _both(a, np.int64)
    _same(ours.sort(), theirs.sort())
    # below the radix path, std::sort's order (within the replay budget of _stl_order)
    _same(ours[:4000].sort(), theirs[:4000].sort())


def test_sort_beyond_the_python_replay_budget_takes_pytorchs_order():
    # 30,000 elements with ties: beyond the Python replay's budget, the C replay of std::sort
    # (order_kernels.c) gives PyTorch's order (numpy's stable order before)
    a = np.random.RandomState(2).randint(0, 5, 30000)
    ours, theirs = _both(a, np.int64)
    _same(ours.sort(), theirs.sort())
    _same(ours.sort(descending=True), theirs.sort(descending=True))


def test_sort_ties_gradient():
    v = np.array([1., 0., 1., 1., 0.] * 4, dtype=np.float64)
    x = tapegrad.tensor(v, requires_grad=True)
    xt = torch.tensor(v, requires_grad=True)
    w = np.arange(20.)
    (x.sort().values * tapegrad.tensor(w)).sum().backward()
    (xt.sort().values * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def test_pack_padded_sequence_unsorted_ties():
    lengths = [3, 5, 3, 2, 5, 3, 1, 3, 5, 2, 2, 3, 4, 4, 3, 5, 2, 3, 3, 1]
    p = tapegrad.nn.utils.rnn.pack_padded_sequence(tapegrad.zeros(20, 5, 1), tapegrad.tensor(lengths),
                                                   batch_first=True, enforce_sorted=False)
    pt = torch.nn.utils.rnn.pack_padded_sequence(torch.zeros(20, 5, 1), torch.tensor(lengths),
                                                 batch_first=True, enforce_sorted=False)
    assert p.sorted_indices.tolist() == pt.sorted_indices.tolist()
    assert p.unsorted_indices.tolist() == pt.unsorted_indices.tolist()


# -- mode -------------------------------------------------------------------------------------------

def test_mode_index_beyond_sixteen():
    row = [2, -2, 2, -2, -1, 0, -1, -1, 2, 0, 0, -1, -3, 1, 2, 0, -2, -2, 1, 0]
    ours, theirs = _both(row, np.int64)
    _same(ours.mode(), theirs.mode())
    assert ours.mode().indices.item() == 5
    a = np.random.RandomState(3).randint(0, 3, (4, 30)).astype(np.float32)
    a[1, 4] = np.nan
    ours, theirs = _both(a)
    _same(ours.mode(1), theirs.mode(1))
    _same(ours.mode(0), theirs.mode(0))
