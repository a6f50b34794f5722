"""Differences found by running public PyTorch tutorial scripts that use matplotlib, pandas and
scikit-learn unchanged (task real45a)."""
import collections

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
pd = pytest.importorskip("pandas")


def _outcome(lib, make):
    """(dtype name, values) of the tensor make(lib) builds, or (exception type, message)."""
    try:
        t = make(lib)
    except Exception as e:          # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e)
    return str(t.dtype), repr(t.tolist())    # (repr: nan equals nan)


def _same(make):
    assert _outcome(tg, make) == _outcome(torch, make)


# ---- torch.tensor & co. read a pandas Series item by item, not by __array__ ----------------

SERIES = {
    "float64": lambda: pd.Series([1.5, 2.25, -3.0]),
    "float32": lambda: pd.Series([1.5, 2.0], dtype="float32"),
    "int32": lambda: pd.Series([1, 2], dtype="int32"),
    "int64": lambda: pd.Series([4, 5, 6]),
    "uint8": lambda: pd.Series([1, 200], dtype="uint8"),
    "bool": lambda: pd.Series([True, False]),
    "category codes (int8)": lambda: pd.Series(pd.Categorical(["a", "b", "a"]).codes),
    "float index": lambda: pd.Index([1.5, 2.0]),
    "with nan": lambda: pd.Series([1.5, np.nan]),
    "empty": lambda: pd.Series([], dtype="float64"),
    "shuffled index": lambda: pd.Series([10., 20., 30.], index=[2, 0, 1]),
}


@pytest.mark.parametrize("kind", list(SERIES))
def test_tensor_of_a_series_keeps_its_dtype(kind):
    # torch.tensor(df["price"]) is float64 in PyTorch (each item is a numpy.float64); tapegrad
    # read the Series by __array__ and silently made it float32 (int32 -> int64, int8 -> int64)
    make = SERIES[kind]
    _same(lambda lib: lib.tensor(make()))
    _same(lambda lib: lib.as_tensor(make()))
    _same(lambda lib: lib.tensor(make(), dtype=lib.float64))
    _same(lambda lib: lib.FloatTensor(make()))
    _same(lambda lib: lib.zeros(1, dtype=lib.int32).new_tensor(make()))


def test_tensor_of_a_series_gradient_flows():
    s = pd.Series([0.5, -1.25, 2.0])
    ours, theirs = tg.tensor(s, requires_grad=True), torch.tensor(s, requires_grad=True)
    (ours ** 3).sum().backward()
    (theirs ** 3).sum().backward()
    assert ours.dtype == tg.float64 and theirs.dtype == torch.float64
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-15)


@pytest.mark.parametrize("make", [
    lambda: pd.Series([1., 2.], index=["a", "b"]),         # Series[0] looks up a label
    lambda: pd.Series([1., 2.], index=[0, 5]),             # label 0 exists, label 1 does not
    lambda: pd.DataFrame({"a": [1., 2.], "b": [3, 4]}),     # DataFrame[0] is a column label
    lambda: pd.DataFrame(np.arange(6.).reshape(3, 2)),      # columns 0, 1 of a 3-row frame
    lambda: pd.DataFrame(np.arange(4.).reshape(2, 2)),      # iterates over its column labels
    lambda: pd.DataFrame({"a": [1., 2.], "b": [3, 4]}).iloc[0],
    lambda: pd.Series(pd.to_datetime(["2020-01-01"])),
    lambda: pd.Series(["x", "y"]),
], ids=["str index", "gap in index", "frame", "int-labelled frame", "square frame", "row",
        "timestamps", "strings"])
def test_tensor_of_a_series_or_frame_refused_as_in_torch(make):
    # tapegrad took every one of these through numpy (a DataFrame became its values)
    for build in (lambda lib: lib.tensor(make()), lambda lib: lib.tensor(make(), dtype=lib.float64),
                  lambda lib: lib.Tensor(make())):
        _same(build)


@pytest.mark.parametrize("make", [
    lambda: [pd.Series([1., 2.]), pd.Series([3., 4.])],
    lambda: pd.Series([[1., 2.], [3., 4.]]),
    lambda: pd.Series([1, 2.5], dtype=object),
    lambda: collections.deque([np.float64(1), 2]),
    lambda: (pd.Series([1, 2], dtype="int16"), [np.int16(3), np.int16(4)]),
], ids=["list of series", "series of lists", "object series", "deque", "mixed nesting"])
def test_sequence_objects_nested_as_in_torch(make):
    _same(lambda lib: lib.tensor(make()))
    _same(lambda lib: lib.LongTensor(make()))


# ---- matplotlib takes tapegrad tensors as PyTorch's, whatever "torch" is in sys.modules ----

def _matplotlib():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def test_matplotlib_unpacks_tapegrad_tensors_to_arrays():
    # Here sys.modules["torch"] is PyTorch, as it is absent under `import tapegrad as torch`:
    # matplotlib's torch test (cbook._is_torch_array) looked only there and kept our tensors
    plt = _matplotlib()
    from matplotlib import cbook
    for lib in (tg, torch):
        out = cbook._unpack_to_numpy(lib.linspace(0, 1, 5))
        assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert not cbook._is_torch_array([1.0])
    plt.close("all")


def test_matplotlib_stem_and_plot_of_tensors_as_in_torch():
    plt = _matplotlib()
    import warnings
    for lib in (tg, torch):
        x = lib.linspace(0, 1, 5)
        fig, ax = plt.subplots()
        stem = ax.stem(x, x ** 2)           # tapegrad: TypeError from np.min(tensor)
        np.testing.assert_allclose(stem.markerline.get_ydata(), (x ** 2).numpy())
        w = lib.ones(5, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (tapegrad warned about float() of a grad tensor)
            with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that "
                                                   "requires grad"):
                ax.plot(x, w)
        plt.close(fig)
