"""DataLoader with num_workers > 0: same batches as in-process, seeding, errors, clean shutdown.

Every test runs under a watchdog (SIGALRM) so that a hung worker fails the test instead of CI.
"""
from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import os
import signal
import sys
import time
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.utils.data import (DataLoader, Dataset, IterableDataset, TensorDataset,
                                 get_worker_info)

pytestmark = [pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM"),
              # (more workers than this machine's CPUs warn, as in PyTorch: tested at the end)
              pytest.mark.filterwarnings("ignore:This DataLoader will create")]

WATCHDOG_SECONDS = 30


@pytest.fixture(autouse=True)
def watchdog():
    def expired(signum, frame):
        raise TimeoutError(f"test exceeded {WATCHDOG_SECONDS} s (a DataLoader worker hung?)")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(WATCHDOG_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
    gc.collect()
    assert multiprocessing.active_children() == []        # no worker outlives its test


def _as_lists(batches):
    out = []
    for b in batches:
        out.append([t.tolist() for t in b] if isinstance(b, list) else b.tolist())
    return out


class Squares(Dataset):
    def __len__(self):
        return 11

    def __getitem__(self, i):
        return {"x": tg.tensor([float(i), float(i * i)]), "i": i}


@pytest.mark.parametrize("num_workers", [1, 3])
def test_batches_equal_in_process_loading(num_workers):
    ds = TensorDataset(tg.arange(23.0).reshape(23, 1), tg.arange(23))
    for kw in ({"batch_size": 4}, {"batch_size": 4, "shuffle": True, "drop_last": True},
               {"batch_size": None}):
        tg.manual_seed(3)
        expected = _as_lists(DataLoader(ds, num_workers=0, **kw))
        tg.manual_seed(3)
        got = _as_lists(DataLoader(ds, num_workers=num_workers, **kw))
        assert got == expected
    tg.manual_seed(1)
    expected = [(b["x"].tolist(), b["i"].tolist())
                for b in DataLoader(Squares(), batch_size=3, shuffle=True)]
    tg.manual_seed(1)
    got = [(b["x"].tolist(), b["i"].tolist())
           for b in DataLoader(Squares(), batch_size=3, shuffle=True, num_workers=num_workers,
                               prefetch_factor=1)]
    assert got == expected


class Seeds(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return tg.tensor([info.id, info.num_workers, info.seed % 1000003,
                          int(tg.randint(0, 10 ** 6, ()).item())])


def test_worker_info_and_seeding():
    assert get_worker_info() is None
    tg.manual_seed(0)
    rows = tg.cat(list(DataLoader(Seeds(), num_workers=2))).tolist()
    assert [r[0] for r in rows] == [0, 1, 0, 1] and {r[1] for r in rows} == {2}
    assert (rows[1][2] - rows[0][2]) % 1000003 == 1          # seed = base_seed + worker id
    # base_seed is drawn from the main generator: the same seed gives the same streams
    tg.manual_seed(0)
    assert tg.cat(list(DataLoader(Seeds(), num_workers=2))).tolist() == rows
    tg.manual_seed(1)
    assert tg.cat(list(DataLoader(Seeds(), num_workers=2))).tolist() != rows


def _init_fn(worker_id):
    info = get_worker_info()
    info.dataset.tag = f"worker {worker_id} of {info.num_workers}"


class Tagged(Dataset):
    tag = "main"

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return self.tag


def test_worker_init_fn_runs_in_each_worker_on_its_own_copy():
    ds = Tagged()
    got = list(DataLoader(ds, batch_size=None, num_workers=2, worker_init_fn=_init_fn))
    assert got == ["worker 0 of 2", "worker 1 of 2"] and ds.tag == "main"
    # PyTorch 2.13's WorkerInfo is a frozen dataclass: the worker's error is re-raised as
    # dataclasses.FrozenInstanceError (before, PyTorch raised RuntimeError "Cannot assign ...")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'id'"):
        def bad_init(worker_id):
            get_worker_info().id = 5
        list(DataLoader(ds, num_workers=1, worker_init_fn=bad_init))


class Range7(IterableDataset):
    def __iter__(self):
        return iter(range(7))


class Sharded(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        wid = 0 if info is None else info.id
        return iter(range(100 * wid, 100 * wid + (10 if wid == 0 else 3)))


def test_iterable_dataset_each_worker_iterates_its_copy():
    # without get_worker_info() every worker yields the whole dataset (duplicates, as torch)
    got = _as_lists(DataLoader(Range7(), batch_size=2, num_workers=2))
    assert got == [[0, 1], [0, 1], [2, 3], [2, 3], [4, 5], [4, 5], [6], [6]]
    got = _as_lists(DataLoader(Sharded(), batch_size=2, num_workers=2))
    assert got == [[0, 1], [100, 101], [2, 3], [102], [4, 5], [6, 7], [8, 9]]
    got = _as_lists(DataLoader(Sharded(), batch_size=2, num_workers=2, drop_last=True))
    assert got == [[0, 1], [100, 101], [2, 3], [4, 5], [6, 7], [8, 9]]
    assert list(DataLoader(Range7(), batch_size=None, num_workers=3)) == \
        [v for v in range(7) for _ in range(3)]


class FailsAt(Dataset):
    def __init__(self, bad, exc=ValueError):
        self.bad, self.exc = bad, exc

    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc(f"bad index {i}")
        return i


def test_worker_exception_reaches_main_with_traceback():
    with pytest.raises(ValueError) as info:
        for _ in DataLoader(FailsAt(7), batch_size=2, num_workers=2):
            pass
    msg = str(info.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 1.\n"
                          "Original Traceback (most recent call last):\n")
    assert "in __getitem__" in msg and msg.rstrip().endswith("ValueError: bad index 7")
    with pytest.raises(KeyError) as info:
        list(DataLoader(FailsAt(0, KeyError), num_workers=1))
    assert "Caught KeyError in DataLoader worker process 0.\nOriginal Traceback" in str(info.value)


def test_break_and_exceptions_leave_no_processes():
    ds = TensorDataset(tg.arange(40.0))
    for i, _ in enumerate(DataLoader(ds, batch_size=2, num_workers=2)):
        if i == 1:
            break
    gc.collect()
    assert multiprocessing.active_children() == []
    with pytest.raises(ValueError):
        list(DataLoader(FailsAt(3), num_workers=2))
    gc.collect()
    assert multiprocessing.active_children() == []


def test_persistent_workers_live_across_epochs():
    ds = TensorDataset(tg.arange(10.0))
    loader = DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True)
    first = _as_lists(loader)
    pids = sorted(p.pid for p in multiprocessing.active_children())
    assert len(pids) == 2
    assert _as_lists(loader) == first == [[[0.0, 1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0, 7.0]],
                                          [[8.0, 9.0]]]
    for i, _ in enumerate(loader):                  # an abandoned epoch ...
        break
    assert _as_lists(loader) == first               # ... does not leak into the next
    assert sorted(p.pid for p in multiprocessing.active_children()) == pids
    del loader
    gc.collect()
    assert multiprocessing.active_children() == []


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(0.6)
        return i


def test_timeout_raises():
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=0.2))


class Dies(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        os._exit(3)


def test_dead_worker_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(DataLoader(Dies(), num_workers=1))


def test_pin_memory_accepted_with_torch_warning():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no "
                                         "accelerator is found"):
        got = _as_lists(DataLoader(TensorDataset(tg.arange(4.0)), batch_size=2, num_workers=1,
                                   pin_memory=True))
    assert got == [[[0.0, 1.0]], [[2.0, 3.0]]]


def test_argument_checks():
    ds = TensorDataset(tg.arange(4.0))
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    assert DataLoader(ds, num_workers=2).prefetch_factor == 2


@pytest.mark.skipif(sys.platform != "linux", reason="spawn is checked on Linux only")
def test_spawn_context_works_with_picklable_dataset():
    ds = TensorDataset(tg.arange(6.0), tg.arange(6))
    got = _as_lists(DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="spawn"))
    assert got == [[[0.0, 1.0, 2.0, 3.0], [0, 1, 2, 3]], [[4.0, 5.0], [4, 5]]]


def test_parity_with_torch_iterable_order(torch):
    class TorchRange(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            wid = info.id
            return iter(range(100 * wid, 100 * wid + (10 if wid == 0 else 3)))

    expected = [b.tolist() for b in torch.utils.data.DataLoader(TorchRange(), batch_size=2,
                                                                num_workers=2)]
    assert _as_lists(DataLoader(Sharded(), batch_size=2, num_workers=2)) == expected
    np.testing.assert_equal(expected[:2], [[0, 1], [100, 101]])


class SlowFirst(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 0:
            time.sleep(0.5)
        return i


def test_in_order_false_yields_batches_as_they_arrive():
    got = [b.item() for b in DataLoader(SlowFirst(), num_workers=2, in_order=False)]
    assert sorted(got) == list(range(6)) and got[0] != 0
    got = [b.item() for b in DataLoader(SlowFirst(), num_workers=2)]
    assert got == list(range(6))


def test_samples_viewing_a_big_tensor_cross_the_queue_compactly():
    from multiprocessing.reduction import ForkingPickler
    big = tg.arange(40000.0).reshape(400, 100)
    assert len(ForkingPickler.dumps(big[3])) < 2000          # not the whole 160 kB storage
    row = ForkingPickler.loads(ForkingPickler.dumps(big[3]))
    assert row.tolist() == big[3].tolist()
    got = list(DataLoader(TensorDataset(big), batch_size=None, num_workers=1))
    assert len(got) == 400 and got[7][0].tolist() == big[7].tolist()


def test_more_workers_than_cpus_warns_as_torch_at_construction_and_each_iterator():
    torch = pytest.importorskip("torch")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    outcomes = []
    for lib in (tg, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loader = lib.utils.data.DataLoader(list(range(4)), num_workers=usable + 1,
                                               batch_size=2)
            constructed = len(caught)
            batches = [b.tolist() for b in loader]
            lib.utils.data.DataLoader(list(range(4)), num_workers=usable)
        outcomes.append((constructed, len(caught), batches, str(caught[0].message)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][:2] == (1, 2)
