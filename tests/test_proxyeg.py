"""Hand-written evaluation code (meters, confusion matrices, rankings) run against PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


# -- storage.resize_ (torchnet's APMeter grows its buffers through the storage) -----------------

def _ap_meter_buffers(lib, batches):
    """torchnet's APMeter.add: grow the storage by 1.5x, resize the tensor into it, copy."""
    scores = lib.FloatTensor(lib.FloatStorage())
    sizes = []
    for out in batches:
        out = lib.tensor(out)
        if scores.storage().size() < scores.numel() + out.numel():
            new_size = int(scores.storage().size() * 1.5)
            scores.storage().resize_(new_size + out.numel())
        offset = scores.size(0) if scores.dim() > 0 else 0
        scores.resize_(offset + out.size(0), out.size(1))
        scores.narrow(0, offset, out.size(0)).copy_(out)
        sizes.append((scores.storage().size(), tuple(scores.shape)))
    return scores.numpy().copy(), sizes


def test_typed_storage_resize_grows_meter_buffers():
    torch = pytest.importorskip("torch")
    batches = [np.arange(8.0, dtype=np.float32).reshape(4, 2) + 10 * k for k in range(4)]
    got, got_sizes = _quiet(lambda: _ap_meter_buffers(tg, batches))
    want, want_sizes = _quiet(lambda: _ap_meter_buffers(torch, batches))
    np.testing.assert_array_equal(got, want)
    assert got_sizes == want_sizes


def test_storage_resize_moves_every_view():
    """Tensors viewing a storage (the one that asked and its views) see the new memory."""
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        a = lib.arange(6.0)
        b = a[2:]
        c = a.view(2, 3).t()
        storage = a.untyped_storage()
        assert storage.resize_(40) is storage
        assert a.untyped_storage().nbytes() == 40 and b.untyped_storage().nbytes() == 40
        a[3] = 100.0
        np.testing.assert_array_equal(b.numpy(), [2.0, 100.0, 4.0, 5.0])
        np.testing.assert_array_equal(c.numpy(), [[0.0, 100.0], [1.0, 4.0], [2.0, 5.0]])
        assert a._version == 1
        a.resize_(10)                # inside the resized storage: still an alias of b
        a[9] = 7.0
        assert _quiet(lambda: a.storage().size()) == 10
        assert a.data_ptr() == b.data_ptr() - 8


def test_storage_resize_of_empty_tensor_storage():
    """torch.FloatTensor(storage): after storage.resize_, tensor.resize_ fills that storage."""
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        storage = _quiet(lambda: lib.FloatStorage())
        t = lib.FloatTensor(storage)
        assert storage.resize_(5) is None        # TypedStorage.resize_ returns None
        assert tuple(t.shape) == (0,) and _quiet(lambda: t.storage().size()) == 5
        t.resize_(5).fill_(2.0)
        assert storage.tolist() == [2.0] * 5


def test_storage_resize_errors():
    torch = pytest.importorskip("torch")
    cases = [lambda lib: lib.UntypedStorage(3).resize_(-1),
             lambda lib: _quiet(lambda: lib.FloatStorage(3)).resize_(-1),
             lambda lib: _quiet(lambda: lib.FloatStorage(3)).resize_(2.5),
             lambda lib: lib.UntypedStorage(8)[2:4].resize_(10)]
    for case in cases:
        with pytest.raises(RuntimeError) as want:
            case(torch)
        with pytest.raises(RuntimeError) as got:
            case(tg)
        assert str(got.value) == str(want.value)


def test_legacy_storage_constructor_warns_at_the_caller():
    """PyTorch warns (once per process) when a typed storage is built, not only when a tensor's
    storage() is read."""
    from tapegrad import storage as storages
    storages._warned_typed = False
    with pytest.warns(UserWarning, match="TypedStorage is deprecated") as record:
        tg.FloatStorage(2)
    assert record[0].filename == __file__


# -- bfloat16 refusals name the dtype (an index or class-target argument in bfloat16) ------------

def _refusal(lib, fn):
    try:
        fn(lib)
    except Exception as error:      # noqa: BLE001  (the type is what is compared)
        return type(error), str(error)
    return None


@pytest.mark.parametrize("case", [
    lambda lib: lib.bincount(lib.tensor([1.0, 2.0], dtype=lib.bfloat16)),
    lambda lib: lib.histogramdd(lib.tensor([[1.0], [2.0]], dtype=lib.bfloat16), bins=[2]),
    lambda lib: lib.nn.functional.nll_loss(lib.zeros(3, 4), lib.zeros(3, dtype=lib.bfloat16)),
    lambda lib: lib.nn.functional.nll_loss(lib.zeros(3, 4), lib.zeros(3, 4, dtype=lib.bfloat16)),
    lambda lib: lib.nn.functional.nll_loss(lib.zeros(3, 4, dtype=lib.bfloat16), lib.zeros(3, 4)),
    lambda lib: lib.nn.functional.nll_loss(lib.zeros(3, 4, dtype=lib.bfloat16),
                                           lib.zeros(3, dtype=lib.float16)),
    lambda lib: lib.nn.functional.nll_loss(lib.zeros(3, 4, dtype=lib.bfloat16),
                                           lib.zeros(3, dtype=lib.long), weight=lib.ones(4)),
    lambda lib: lib.nn.functional.cross_entropy(lib.zeros(3, 4),
                                                lib.zeros(3, dtype=lib.bfloat16)),
    lambda lib: lib.nn.functional.cross_entropy(lib.zeros(3, 4, dtype=lib.bfloat16),
                                                lib.zeros(3, dtype=lib.bfloat16)),
])
def test_bfloat16_index_and_target_refusals(case):
    torch = pytest.importorskip("torch")
    want = _refusal(torch, case)
    assert want is not None
    assert _refusal(tg, case) == want


def test_bfloat16_probability_target_still_computes():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        logits = lib.zeros(3, 4)
        loss = lib.nn.functional.cross_entropy(logits, lib.full((3, 4), 0.25, dtype=lib.bfloat16))
        assert loss.dtype == lib.float32 and abs(float(loss) - float(np.log(4))) < 1e-3


# -- PyTorch's order among ties for large rows (the C replay of libstdc++'s algorithms) ----------

def test_stl_replay_in_c_matches_the_python_steps():
    """order_kernels.c's std::sort / partial_sort / nth_element against _stl_order's Python
    transcription, on rows full of ties (and NaN), for each comparison."""
    from tapegrad import _core, _stl_order as stl
    rng = np.random.default_rng(5)
    less_of = {0: stl._greater, 1: stl._less, 2: stl._plain_less}
    for n in (17, 40, 300, 1000):
        for dtype in (np.float32, np.int64, np.uint8):
            rows = rng.integers(0, 4, size=(3, n)).astype(dtype)
            if dtype == np.float32:
                rows[rng.random(rows.shape) < 0.05] = np.nan
            for cmp, less in less_of.items():
                for algo, k, head in ((0, 0, False), (1, 5, False), (2, 7, True), (2, 7, False)):
                    got = _core._stl_order_c(rows, np.arange(3), algo, k, head, cmp, n)
                    for r in range(3):
                        pairs = list(zip(rows[r].tolist(), range(n)))
                        if algo == 0:
                            stl._sort(pairs, 0, n, less)
                        elif algo == 1:
                            stl._partial_sort(pairs, 0, k, n, less)
                        else:
                            stl._nth_element(pairs, k - 1, n, less)
                            if head:
                                stl._sort(pairs, 0, k - 1, less)
                        assert got[r].tolist() == [i for _, i in pairs], (n, dtype, cmp, algo)


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_large_tied_sorts_take_pytorchs_order(dtype):
    """A validation set of 6000 scores on a few levels: argsort(descending=True), sort, topk and
    mode name PyTorch's positions among the ties (beyond the Python replay's 4096-element
    budget they took numpy's stable order: ROC/AP code iterating the sorted labels differed)."""
    torch = pytest.importorskip("torch")
    values = (np.arange(6000) * 7919 % 13 % 5).astype(dtype)
    got_x, want_x = tg.tensor(values), torch.tensor(values)
    for fn in (lambda t: t.argsort(descending=True), lambda t: t.sort().indices,
               lambda t: t.view(3, -1).sort(dim=1, descending=True).indices,
               lambda t: t.topk(50).indices, lambda t: t.topk(3000, sorted=False).indices,
               lambda t: t.topk(10, largest=False).indices,
               lambda t: t.view(4, -1).mode(1).indices):
        np.testing.assert_array_equal(fn(got_x).numpy(), fn(want_x).numpy())


def test_torchnet_auc_with_tied_scores_matches():
    """torchnet's AUCMeter walks the labels in sort order: with tied scores the area depends on
    that order (SILENT before: a different AUC for 6000 tied scores)."""
    torch = pytest.importorskip("torch")
    scores = (np.arange(6000) * 31 % 17 % 4 / 4).astype(np.float64)
    labels = (np.arange(6000) * 13 % 7 < 3).astype(np.int64)

    def area(lib):
        _, order = lib.sort(lib.tensor(scores), 0, True)
        y = lib.tensor(labels)[order].double()
        tpr = lib.cat([lib.zeros(1, dtype=lib.float64), y.cumsum(0) / y.sum()])
        fpr = lib.cat([lib.zeros(1, dtype=lib.float64), (1 - y).cumsum(0) / (1 - y).sum()])
        return float(lib.trapz(tpr, fpr))
    assert area(tg) == area(torch)
