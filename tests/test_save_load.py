"""tapegrad.save / tapegrad.load of whole objects, weights-only loading, map_location."""
from __future__ import annotations

import builtins
import io
import pathlib
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tapegrad as tg
from tapegrad._device import device
from tapegrad import serialization

DATA = pathlib.Path(__file__).parent / "data"


def _bytes_of(obj) -> bytes:
    buf = io.BytesIO()
    tg.save(obj, buf)
    return buf.getvalue()


def _model():
    tg.manual_seed(0)
    return tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 2))


def test_state_dict_idiom_round_trips_with_safe_default(tmp_path):
    model = _model()
    tg.save(model.state_dict(), tmp_path / "m.pt")
    other = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 2))
    other.load_state_dict(tg.load(tmp_path / "m.pt"))
    x = tg.randn(5, 3)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())
    sd = tg.load(str(tmp_path / "m.pt"))
    assert type(sd) is OrderedDict and list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_whole_model_needs_weights_only_false(tmp_path):
    model = _model()
    tg.save(model, tmp_path / "model.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as info:
        tg.load(tmp_path / "model.pt")
    assert "weights_only" in str(info.value)
    # (the file is PyTorch's format: it names the class as PyTorch's file would)
    assert "Unsupported global: GLOBAL torch.nn.modules.container.Sequential" in str(info.value)
    assert "model.pt" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    loaded = tg.load(tmp_path / "model.pt", weights_only=False)
    assert type(loaded) is tg.nn.Sequential and type(loaded[0].weight) is tg.nn.Parameter
    x = tg.randn(2, 3)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())


def test_safe_globals_allow_a_class(tmp_path):
    tg.save(tg.nn.ReLU(), tmp_path / "r.pt")
    with serialization.safe_globals([tg.nn.ReLU]):
        assert type(tg.load(tmp_path / "r.pt")) is tg.nn.ReLU
    with pytest.raises(pickle.UnpicklingError):
        tg.load(tmp_path / "r.pt")


class _Evil:
    def __reduce__(self):
        return (exec, ("import builtins; builtins._tapegrad_pwned = True",))


def test_weights_only_never_runs_code(tmp_path):
    data = _bytes_of({"w": tg.ones(2), "x": _Evil()})
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL exec was not"):
        tg.load(io.BytesIO(data))
    assert not hasattr(builtins, "_tapegrad_pwned")


# What PyTorch's weights-only load asks the user to allowlist before numpy arrays and scalars load.
_NUMPY_VALUE_GLOBALS = [np._core.multiarray._reconstruct, np._core.multiarray.scalar, np.dtype]


def test_mixed_dict_of_tensors_and_plain_values(tmp_path):
    base = tg.arange(6.0)
    obj = {"p": tg.nn.Parameter(tg.ones(2)), "frozen": tg.nn.Parameter(tg.ones(1), False),
           "view": base[2:], "base": base, "t": base.view(2, 3).t(), "dtype": tg.float64,
           "size": tg.Size([2]), "device": device("cpu"), "np": np.float64(0.5),
           "arr": np.arange(3), "nested": [1, (2.5, "s", None, True), {"k": b"\x00"}],
           "int8": tg.tensor([1], dtype=tg.int8)}
    with serialization.safe_globals(_NUMPY_VALUE_GLOBALS):   # numpy values need them, as torch
        out = tg.load(io.BytesIO(_bytes_of(obj)))
    assert type(out["p"]) is tg.nn.Parameter and out["p"].requires_grad
    assert type(out["frozen"]) is tg.nn.Parameter and not out["frozen"].requires_grad
    out["base"][3] = 100.0          # views saved together keep sharing their storage (as torch)
    assert out["view"].tolist() == [2.0, 100.0, 4.0, 5.0]
    assert out["t"].tolist() == [[0.0, 100.0], [1.0, 4.0], [2.0, 5.0]]
    assert out["dtype"] is tg.float64 and out["size"] == tg.Size([2])
    assert type(out["size"]) is tg.Size and out["device"] == device("cpu")
    assert type(out["np"]) is np.float64 and out["arr"].tolist() == [0, 1, 2]
    assert out["nested"] == obj["nested"] and out["int8"].dtype == tg.int8


def test_model_and_optimizer_resume_bit_for_bit(tmp_path):
    def step(model, opt, i):
        rng = np.random.default_rng(i)
        x = tg.tensor(rng.standard_normal((4, 3)), dtype=tg.float32)
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()

    model = _model()
    opt = tg.optim.Adam(model.parameters(), lr=0.05)
    for i in range(4):
        step(model, opt, i)
    expected = [p.detach().numpy().copy() for p in model.parameters()]

    model = _model()
    opt = tg.optim.Adam(model.parameters(), lr=0.05)
    for i in range(2):
        step(model, opt, i)
    tg.save({"model": model, "opt": opt}, tmp_path / "ck.pt")
    ck = tg.load(tmp_path / "ck.pt", weights_only=False)
    model, opt = ck["model"], ck["opt"]
    for i in range(2, 4):
        step(model, opt, i)
    for e, p in zip(expected, model.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), e)


@pytest.mark.parametrize("map_location", ["cpu", device("cpu"), {"cpu": "cpu"},
                                          lambda storage, loc: storage,
                                          lambda storage, loc: None])
def test_map_location_cpu(map_location):
    out = tg.load(io.BytesIO(_bytes_of({"a": tg.ones(2)})), map_location=map_location)
    assert out["a"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("map_location", ["cuda", device("cuda"), {"cpu": "cuda"}])
def test_map_location_cuda_fails_as_torch_without_cuda(map_location):
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        tg.load(io.BytesIO(_bytes_of({"a": tg.ones(2)})), map_location=map_location)


def test_pickle_module_and_weights_only_conflict():
    data = _bytes_of([tg.ones(1)])
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit "
                                           "pickle_module is specified"):
        tg.load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    assert tg.load(io.BytesIO(data), pickle_module=pickle)[0].tolist() == [1.0]


def test_checkpoint_written_by_the_npz_format_loads():
    ck = tg.load(DATA / "checkpoint_npz_v1.pt")
    assert ck["epoch"] == 7 and ck["names"] == ["a", "b"] and ck["dtype"] is tg.float64
    assert list(ck["model"]) == ["weight", "bias"] and ck["model"]["weight"].shape == (2, 3)
    assert type(ck["p"]) is tg.nn.Parameter
    np.testing.assert_allclose(ck["optim"]["state"][0]["exp_avg"].numpy(), np.full((2, 3), 0.1))
    model = tg.nn.Linear(3, 2)
    model.load_state_dict(ck["model"])


def test_archive_layout(tmp_path):
    tg.save({"w": tg.tensor([1.0, 2.0])}, tmp_path / "c.pt")
    with zipfile.ZipFile(tmp_path / "c.pt") as z:
        assert sorted(z.namelist()) == ["c/.data/serialization_id", "c/.format_version",
                                        "c/.storage_alignment", "c/byteorder", "c/data.pkl",
                                        "c/data/0", "c/version"]
        assert np.frombuffer(z.read("c/data/0"), "<f4").tolist() == [1.0, 2.0]


def test_damaged_new_format_files_raise_runtime_error_naming_the_file(tmp_path):
    data = _bytes_of({"w": tg.tensor(np.arange(100, dtype=np.float32)), "n": [1, "x"]})
    path = tmp_path / "bad.pt"
    for cut in (4, len(data) // 3, len(data) - 5):
        path.write_bytes(data[:cut])
        with pytest.raises(RuntimeError, match="bad.pt") as info:
            tg.load(path)
        assert "corrupt" in str(info.value) or "not a tapegrad checkpoint" in str(info.value)
    rng = np.random.default_rng(1)
    for _ in range(100):
        bad = bytearray(data)
        for pos in rng.integers(0, len(bad), size=2):
            bad[pos] = rng.integers(256)
        try:
            out = tg.load(io.BytesIO(bytes(bad)))
        except RuntimeError:
            continue
        assert out["n"] == [1, "x"] and out["w"].tolist() == list(range(100))


def test_torch_parity_of_weights_only_refusal(torch, tmp_path):
    torch.save(torch.nn.Linear(2, 2), tmp_path / "t.pt")
    with pytest.raises(pickle.UnpicklingError) as expected:
        torch.load(tmp_path / "t.pt")
    tg.save(tg.nn.Linear(2, 2), tmp_path / "g.pt")
    with pytest.raises(pickle.UnpicklingError) as got:
        tg.load(tmp_path / "g.pt")
    for phrase in ("Weights only load failed", "Unsupported global: GLOBAL",
                   "nn.modules.linear.Linear was not an allowed global by default"):
        assert phrase in str(expected.value) and phrase in str(got.value)


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_every_pickle_protocol_loads_weights_only(protocol):
    obj = {"b": b"\x00\xff", "w": tg.ones(2), "n": np.float32(1.5), "s": {1},
           "o": OrderedDict(a=tg.float16), "c": 1 + 2j}
    buf = io.BytesIO()
    tg.save(obj, buf, pickle_protocol=protocol)
    with serialization.safe_globals(_NUMPY_VALUE_GLOBALS):
        out = tg.load(io.BytesIO(buf.getvalue()))
    assert out["b"] == b"\x00\xff" and out["w"].tolist() == [1.0, 1.0] and out["s"] == {1}
    assert out["o"]["a"] is tg.float16 and out["c"] == 1 + 2j and out["n"] == np.float32(1.5)


def _archive_with_pickle(payload: bytes, arrays=()) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/format", b"tapegrad-pickle 1")
        zf.writestr("archive/data.pkl", payload)
        for key, arr in enumerate(arrays):
            with zf.open(f"archive/data/{key}.npy", "w") as f:
                np.save(f, arr)
    return buf.getvalue()


def test_weights_only_refuses_hand_made_attacks():
    # a tensor whose array a BUILD would replace (the core would then read a non-array)
    buf = io.BytesIO()
    pickler = serialization._ArrayPersistingPickler(buf, 2)
    pickler.dump(tg.ones(2))
    # then ({}, {"_array": "boom"}) and BUILD
    attack = buf.getvalue()[:-1] + b"}}X\x06\x00\x00\x00_arrayX\x04\x00\x00\x00boom" \
        + b"s\x86b."
    with pytest.raises(pickle.UnpicklingError, match="BUILD of a Tensor object is not allowed"):
        tg.load(io.BytesIO(_archive_with_pickle(attack, pickler.arrays)))
    with pytest.raises(RuntimeError):
        tg.load(io.BytesIO(_archive_with_pickle(attack, pickler.arrays)))
    # the class itself is never handed out: calling it fails instead of making a bare tensor
    bare = b"\x80\x04ctapegrad\nTensor\n)\x81."
    with pytest.raises(RuntimeError, match="corrupt"):
        tg.load(io.BytesIO(_archive_with_pickle(bare)))
    # numpy dtypes other than plain numeric ones (here object) are refused
    bad_dtype = b"\x80\x04cnumpy\ndtype\nX\x02\x00\x00\x00O8\x89\x88\x87R."
    with serialization.safe_globals([np.dtype]), \
            pytest.raises(RuntimeError, match="not a plain numeric dtype"):
        tg.load(io.BytesIO(_archive_with_pickle(bad_dtype)))


@pytest.mark.parametrize("relative", ["missing_dir/model.pt", "a_dir_itself"])
def test_save_to_an_unwritable_path_raises_runtime_error_as_torch(tmp_path, relative):
    # RL scripts save checkpoints into './exp.../actor.pth' before creating the directory:
    # PyTorch's zip writer raises RuntimeError (naming the missing parent), not FileNotFoundError.
    torch = pytest.importorskip("torch")
    (tmp_path / "a_dir_itself").mkdir()
    path = str(tmp_path / relative)
    with pytest.raises(RuntimeError) as theirs:
        torch.save({"w": torch.zeros(2)}, path)
    with pytest.raises(RuntimeError) as ours:
        tg.save({"w": tg.zeros(2)}, path)
    if relative.startswith("missing"):
        assert str(ours.value) == str(theirs.value)
    else:
        assert str(ours.value) in str(theirs.value)


def test_legacy_format_save_to_a_missing_directory_keeps_open_error(tmp_path):
    torch = pytest.importorskip("torch")
    path = str(tmp_path / "missing_dir" / "model.pt")
    with pytest.raises(FileNotFoundError):
        torch.save({}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(FileNotFoundError):
        tg.save({}, path, _use_new_zipfile_serialization=False)


@pytest.mark.parametrize("map_location", ["cuda", device("cuda")])
def test_missing_file_reported_before_a_cuda_map_location(tmp_path, map_location):
    # PyTorch opens the file first: a notebook's torch.load('x.pt', map_location='cuda') on a
    # machine without the file says FileNotFoundError, not the CUDA error.
    with pytest.raises(FileNotFoundError):
        tg.load(str(tmp_path / "absent.pt"), map_location=map_location)
    path = tmp_path / "present.pt"
    tg.save({"a": tg.ones(2)}, str(path))
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        tg.load(str(path), map_location=map_location)
