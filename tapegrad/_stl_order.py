"""The orders PyTorch's CPU kernels of sort, topk and mode leave to the C++ standard library,
where ties (or topk's sorted=False) make them the library's choice rather than the values'.

PyTorch sorts each row's (value, index) pairs with std::sort unless stable=True (sort_kernel in
aten/src/ATen/native/cpu/SortingKernel.cpp), selects topk's with std::partial_sort of the first k
when k * 64 <= the row's length, else std::nth_element at k - 1 followed (sorted=True) by std::sort
of the k - 1 before it (topk_impl_loop, TopKImpl.h), and finds mode's by std::sort of the pairs
and a scan (mode_kernel_impl).  None of these is stable, so among equal values the indices they
return, and with sorted=False the order of topk's values themselves, are what the algorithms'
steps make of the row: [3, 3, 1, 3].topk(2) is indices [1, 3], a sort of 17 or more elements
with ties moves equal ones out of their order, [5, 1, 4, 2, 3, 6, 0].topk(3, sorted=False) is
values [5, 6, 4].  A script that prints them prints those.

The functions here reproduce them: a row whose relevant values are all distinct has one answer
(the order numpy's stable sort gives, the cheap common case); a row with a tie among them is
ordered again by the same steps as GCC's libstdc++ (the library of PyTorch's Linux wheels):
introsort with its 16-element insertion-sort threshold, introselect, and the binary-heap partial
sort.  PyTorch's comparisons put NaN above every number (below, for the k smallest); mode's is a
plain `<`.
"""
from __future__ import annotations as _annotations

import numpy as np

_INSERTION_THRESHOLD = 16       # libstdc++'s _S_threshold for std::sort
# The replays run in C (order_kernels.c, _core._stl_order_c) for every real and integer dtype but
# uint64; the steps below, in Python (~1 us per element and level), are the reference the tests
# hold the kernels to and the fallback for the dtypes the kernels do not take.  A Python replay
# whose rows hold more than this many elements in all keeps numpy's stable order instead (the
# order among equal values PyTorch leaves unspecified), so it costs milliseconds, not seconds.
# (The C replay has no budget: a validation set's 10^4 tied scores, ROC curves and average
# precision sorted by argsort(descending=True), take PyTorch's order in milliseconds.)
REPLAY_BUDGET = 4096

# algorithm codes of _core._stl_order_c
_STD_SORT, _PARTIAL_SORT, _NTH_ELEMENT = 0, 1, 2


def within_budget(rows: int, width: int) -> bool:
    """Whether replaying `rows` rows of `width` elements in Python stays within REPLAY_BUDGET."""
    return rows * width <= REPLAY_BUDGET


def compiled_dtype(dtype: np.dtype) -> bool:
    """Whether the C replay takes rows of this dtype (then no budget applies)."""
    return dtype.kind == "f" or (dtype.kind in "biu" and dtype != np.uint64)


def _compiled(rows: np.ndarray, redo: np.ndarray, algo: int, k: int, sort_head: bool, cmp: int,
              width: int):
    """The replay of rows `redo` in C ((len(redo), width) positions), or None for a dtype the
    kernel does not take."""
    from ._core import _stl_order_c
    return _stl_order_c(rows, redo, algo, k, sort_head, cmp, width)


def sort_order(rows: np.ndarray, order: np.ndarray, descending: bool) -> np.ndarray:
    """The (m, n) order PyTorch's sort with stable=False gives the m rows of `rows` (m, n), given
    their stable `order`: std::sort sorts up to 16 elements by insertion, which is stable, and
    reorders ties beyond that."""
    n = rows.shape[1]
    if n <= _INSERTION_THRESHOLD:
        return order
    def reorder(pairs, less):
        _sort(pairs, 0, n, less)
        return pairs
    return _replayed(rows, order, _rows_with_ties(rows, order, n), descending, reorder,
                     (_STD_SORT, 0, False))


def _replayed(rows: np.ndarray, order: np.ndarray, redo: np.ndarray, first_larger: bool,
              reorder, compiled: tuple) -> np.ndarray:
    """`order` with each row r in `redo` replaced by the indices of reorder(pairs, less), the
    row's (value, index) pairs as a library algorithm leaves them (less: PyTorch's comparison,
    larger first when `first_larger`), cut to order's width; `order` itself when there is no
    row to replay, or they exceed REPLAY_BUDGET where the C kernel (given `compiled`: its
    algorithm code, k and sort_head) does not take the dtype."""
    n, width = rows.shape[1], order.shape[1]
    if redo.size == 0:
        return order
    algo, k, sort_head = compiled
    fast = _compiled(rows, redo, algo, k, sort_head, 0 if first_larger else 1, width)
    if fast is not None:
        order = order.copy()
        order[redo] = fast
        return order
    if not within_budget(redo.size, n):
        return order
    order = order.copy()
    less = _greater if first_larger else _less
    for r in redo:
        pairs = reorder(list(zip(rows[r].tolist(), range(n))), less)
        order[r] = [index for _, index in pairs[:width]]
    return order


def mode_position(row: np.ndarray) -> int:
    """The index PyTorch's CPU mode returns for a 1-d row: it std::sorts the (value, index) pairs
    by a plain `<` (which does not order NaN), then takes the first longest run of values that are
    not `!=` (a NaN is a run of its own) at the run's last pair."""
    fast = _compiled(row.reshape(1, -1), np.zeros(1, np.int64), _STD_SORT, 0, False, 2,
                     row.shape[0])
    if fast is not None:
        # the same scan, vectorised (10^6 pairs: ~1.4 s in the loop below): a run ends where
        # the next value is `!=` (NaN != NaN), and argmax keeps the first longest run
        order = fast[0]
        ordered = row[order]
        ends = np.flatnonzero(np.append(ordered[:-1] != ordered[1:], True))
        return int(order[ends[np.argmax(np.diff(ends, prepend=-1))]])
    pairs = list(zip(row.tolist(), range(row.shape[0])))
    _sort(pairs, 0, len(pairs), _plain_less)
    best, best_count, count = 0, 0, 0
    for j, (value, index) in enumerate(pairs):
        count += 1
        if j == len(pairs) - 1 or value != pairs[j + 1][0]:
            if count > best_count:
                best, best_count = index, count
            count = 0
    return best


def _rows_with_ties(rows: np.ndarray, order: np.ndarray, width: int) -> np.ndarray:
    """The rows whose first `width` values in `order` hold two equal ones (NaNs count as equal:
    PyTorch's comparisons order neither before the other)."""
    head = np.take_along_axis(rows, order[:, :width], axis=1)
    same = head[:, 1:] == head[:, :-1]
    if head.dtype.kind in "fc":
        same |= np.isnan(head[:, 1:]) & np.isnan(head[:, :-1])
    return np.flatnonzero(same.any(axis=1))


# Up to this many elements in all (or whenever topk takes nth_element), topk_order_c runs
# PyTorch's algorithm on every row in C: a few microseconds, where the stable head's numpy calls
# (a partition, masks, a sort of the k) cost ~70 us for a (64, 128) batch of logits.  Above it, on
# a std::partial_sort path, the partition in numpy is as fast and only rows with ties replay.
_TOPK_ALL_ROWS_C = 1 << 16


def topk_order_c(rows: np.ndarray, k: int, largest: bool, sorted_: bool):
    """topk_order's answer for all the (m, n) rows from the C replay of PyTorch's algorithm
    (exact for every row, ties or not), where that is the cheaper way; None otherwise (a dtype
    the kernel does not take, k = 0, or a large std::partial_sort call: topk_order then)."""
    m, n = rows.shape
    partial = k * 64 <= n
    if k == 0 or m == 0 or not compiled_dtype(rows.dtype) or (partial and m * n > _TOPK_ALL_ROWS_C):
        return None
    algo = _PARTIAL_SORT if partial else _NTH_ELEMENT
    return _compiled(rows, np.arange(m), algo, k, sorted_ and not partial, 0 if largest else 1, k)


def topk_order(rows: np.ndarray, order: np.ndarray, k: int, largest: bool,
               sorted_: bool) -> np.ndarray:
    """The (m, k) indices PyTorch's topk returns for each of the m rows of `rows` (m, n), given
    `order`, the first min(k + 1, n) columns of the rows' stable sort (largest first when
    `largest`; only those are read, so a caller can select them without sorting whole rows), of
    which the first k are the answer wherever the algorithms have no choice to make."""
    n = rows.shape[1]
    result = order[:, :k]
    if k == 0:
        return result
    partial = k * 64 <= n
    if not partial and not sorted_:
        redo = np.arange(rows.shape[0])
    else:
        redo = _rows_with_ties(rows, order, min(k + 1, n))

    def reorder(pairs, less):
        if partial:
            _partial_sort(pairs, 0, k, n, less)
        else:
            _nth_element(pairs, k - 1, n, less)
            if sorted_:
                _sort(pairs, 0, k - 1, less)
        return pairs
    compiled = (_PARTIAL_SORT, k, False) if partial else (_NTH_ELEMENT, k, sorted_)
    return _replayed(rows, result, redo, largest, reorder, compiled)


# PyTorch's comparisons: NaN first for the largest, last for the smallest (x != x is NaN);
# mode's plain `<`.
def _greater(x, y) -> bool:
    return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]


def _less(x, y) -> bool:
    return (x[0] == x[0] and y[0] != y[0]) or x[0] < y[0]


def _plain_less(x, y) -> bool:
    return x[0] < y[0]


# -- libstdc++'s algorithms on a[first:last], with `less` as the comparison ------------------------

def _lg(n: int) -> int:
    return n.bit_length() - 1


def _push_heap(a, first, hole, top, value, less):
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _adjust_heap(a, first, hole, length, value, less):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    _push_heap(a, first, hole, top, value, less)


def _make_heap(a, first, last, less):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(a, first, parent, length, a[first + parent], less)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(a, first, last, result, less):
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, less)


def _heap_select(a, first, middle, last, less):
    _make_heap(a, first, middle, less)
    for i in range(middle, last):
        if less(a[i], a[first]):
            _pop_heap(a, first, middle, i, less)


def _sort_heap(a, first, last, less):
    while last - first > 1:
        last -= 1
        _pop_heap(a, first, last, last, less)


def _partial_sort(a, first, middle, last, less):
    _heap_select(a, first, middle, last, less)
    _sort_heap(a, first, middle, less)


def _move_median_to_first(a, result, i, j, m, less):
    if less(a[i], a[j]):
        if less(a[j], a[m]):
            pick = j
        elif less(a[i], a[m]):
            pick = m
        else:
            pick = i
    elif less(a[i], a[m]):
        pick = i
    elif less(a[j], a[m]):
        pick = m
    else:
        pick = j
    a[result], a[pick] = a[pick], a[result]


def _unguarded_partition(a, first, last, pivot, less):
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _unguarded_partition_pivot(a, first, last, less):
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(a, first + 1, last, first, less)


def _unguarded_linear_insert(a, last, less):
    value = a[last]
    prev = last - 1
    while less(value, a[prev]):
        a[last] = a[prev]
        last = prev
        prev -= 1
    a[last] = value


def _insertion_sort(a, first, last, less):
    if first == last:
        return
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            value = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = value
        else:
            _unguarded_linear_insert(a, i, less)


def _introsort_loop(a, first, last, depth, less):
    while last - first > _INSERTION_THRESHOLD:
        if depth == 0:
            _partial_sort(a, first, last, last, less)
            return
        depth -= 1
        cut = _unguarded_partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _sort(a, first, last, less):
    """std::sort."""
    if last - first < 2:
        return
    _introsort_loop(a, first, last, _lg(last - first) * 2, less)
    if last - first > _INSERTION_THRESHOLD:
        _insertion_sort(a, first, first + _INSERTION_THRESHOLD, less)
        for i in range(first + _INSERTION_THRESHOLD, last):
            _unguarded_linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _nth_element(a, nth, last, less):
    """std::nth_element(a, a + nth, a + last)."""
    first = 0
    if first == last or nth == last:
        return
    depth = _lg(last - first) * 2
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last, less)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _unguarded_partition_pivot(a, first, last, less)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, less)
