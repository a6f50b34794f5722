"""Session 26's own fixes, each checked against PyTorch where it is installed."""
import array

import numpy as np
import pytest

import tapegrad as tg


# -- numpy's second 64-bit integer type --------------------------------------------------------
# On LP64 platforms numpy's int64 is C long; long long (np.longlong, array.array('q')) is another
# type number for the same integers.  PyTorch reads it as int64; tapegrad refused it.

LONGLONG_SOURCES = {
    "from_numpy": lambda lib: lib.from_numpy(np.array([3, -1], dtype=np.longlong)),
    "tensor(array)": lambda lib: lib.tensor(np.array([3, -1], dtype=np.longlong)),
    "tensor(scalar)": lambda lib: lib.tensor(np.longlong(3)),
    "tensor([scalar])": lambda lib: lib.tensor([np.longlong(3), np.longlong(-1)]),
    "tensor(array.array q)": lambda lib: lib.tensor(array.array("q", [3, -1])),
    "as_tensor(array.array q)": lambda lib: lib.as_tensor(array.array("q", [3, -1])),
    "as_tensor(array)": lambda lib: lib.as_tensor(np.array([3, -1], dtype=np.longlong)),
}


@pytest.mark.parametrize("source", sorted(LONGLONG_SOURCES))
def test_long_long_arrays_are_int64(source):
    t = LONGLONG_SOURCES[source](tg)
    assert t.dtype == tg.int64
    torch = pytest.importorskip("torch")
    ref = LONGLONG_SOURCES[source](torch)
    assert str(ref.dtype) == str(t.dtype)
    assert t.tolist() == ref.tolist()


def test_long_long_array_shares_memory_and_indexes():
    a = np.array([1, 0], dtype=np.longlong)
    t = tg.from_numpy(a)
    a[0] = 0
    assert t.tolist() == [0, 0]
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    idx = tg.from_numpy(np.array([1, 0], dtype=np.longlong))
    loss = tg.nn.functional.cross_entropy(x, idx) + x[idx].sum() + x.gather(1, idx[:, None]).sum()
    loss.backward()
    ref = tg.tensor([1, 0])
    x2 = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (tg.nn.functional.cross_entropy(x2, ref) + x2[ref].sum() + x2.gather(1, ref[:, None]).sum()).backward()
    assert np.array_equal(x.grad.numpy(), x2.grad.numpy())


ULONGLONG_SOURCES = {
    "from_numpy": lambda lib: lib.from_numpy(np.array([3, 1], dtype=np.ulonglong)),
    "tensor(array)": lambda lib: lib.tensor(np.array([3, 1], dtype=np.ulonglong)),
    "as_tensor(array)": lambda lib: lib.as_tensor(np.array([3, 1], dtype=np.ulonglong)),
    "tensor(scalar)": lambda lib: lib.tensor(np.ulonglong(3)),
}


@pytest.mark.parametrize("source", sorted(ULONGLONG_SOURCES))
def test_unsigned_long_long_arrays_are_refused(source):
    # PyTorch takes numpy's uint64 (C unsigned long) but refuses unsigned long long
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.ulonglong"):
        ULONGLONG_SOURCES[source](tg)
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.ulonglong"):
        ULONGLONG_SOURCES[source](torch)


# -- @abstractmethod in subclasses of Dataset/Optimizer: enforced only where PyTorch's are ABCs ----

def _abstract_subclasses(lib):
    import abc
    data = lib.utils.data

    class PlainBase(data.Dataset):
        @abc.abstractmethod
        def describe(self): ...

        def __len__(self):
            return 0

    class WithABC(data.Dataset, abc.ABC):
        @abc.abstractmethod
        def describe(self): ...

    class Iterable(data.IterableDataset):
        @abc.abstractmethod
        def describe(self): ...

        def __iter__(self):
            return iter(())

    class Optim(lib.optim.Optimizer):
        @abc.abstractmethod
        def describe(self): ...

    return {"plain Dataset": lambda: PlainBase(), "Dataset with ABC": lambda: WithABC(),
            "IterableDataset": lambda: Iterable(),
            "Optimizer": lambda: Optim([lib.zeros(1, requires_grad=True)], {})}


@pytest.mark.parametrize("case", ["plain Dataset", "Dataset with ABC", "IterableDataset",
                                  "Optimizer"])
def test_abstract_methods_enforced_as_pytorch_does(case):
    def outcome(lib):
        try:
            _abstract_subclasses(lib)[case]()
        except TypeError as error:
            return "refused" if "abstract" in str(error) else str(error)
        return "made"
    expected = {"plain Dataset": "made", "Dataset with ABC": "refused",
                "IterableDataset": "refused", "Optimizer": "made"}[case]
    assert outcome(tg) == expected
    torch = pytest.importorskip("torch")
    assert outcome(torch) == expected


# -- clip_grad_value_ of a generator (SILENT: the sparse-gradient check used the generator up) ---

def test_clip_grad_value_clips_the_gradients_of_a_parameter_generator():
    def clipped(lib):
        model = lib.nn.Linear(3, 2)
        with lib.no_grad():
            model.weight.copy_(lib.tensor([[1.0, -2.0, 3.0], [0.5, 0.25, -4.0]]))
            model.bias.fill_(0.5)
        (model(lib.tensor([[1.0, 2.0, -3.0]])) ** 2).sum().backward()
        lib.nn.utils.clip_grad_value_(model.parameters(), clip_value=0.05)
        return [p.grad.tolist() for p in model.parameters()]
    got = clipped(tg)
    assert max(abs(v) for row in got[0] for v in row) == pytest.approx(0.05)
    torch = pytest.importorskip("torch")
    assert got == clipped(torch)
