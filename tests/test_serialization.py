"""tapegrad.save / tapegrad.load: round trips of nested structures, and unreadable files."""
from __future__ import annotations

import builtins
import io
import json
import pathlib
import pickle
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core, optim
from tapegrad._checkpoint_npz import save_npz
from tapegrad.serialization import load, save


def _round_trip(obj, tmp_path, how="str"):
    path = tmp_path / "ckpt.pt"
    if how == "str":
        save(obj, str(path))
        assert path.exists() and not (tmp_path / "ckpt.pt.npz").exists()
        return load(str(path))
    if how == "pathlib":
        save(obj, path)
        return load(path)
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf)


@pytest.mark.parametrize("how", ["str", "pathlib", "fileobj"])
def test_round_trip_nested_structure(tmp_path, how):
    w = tg.tensor([[1.5, -2.0], [3.25, 4.0]], requires_grad=True)
    obj = {
        "weights": OrderedDict([("w", w), ("b", tg.zeros(2, dtype=tg.float64))]),
        "ints": tg.tensor([1, 2, 3]),
        "mask": tg.tensor([True, False]),
        "small": [tg.tensor(7, dtype=tg.int8), tg.tensor([1.0], dtype=tg.float16),
                  tg.tensor([200], dtype=tg.uint8), tg.tensor([5], dtype=tg.int16),
                  tg.tensor([6], dtype=tg.int32)],
        "scalar": tg.tensor(2.5),
        "empty": tg.zeros(0, 3),
        "meta": (1, 2.5, "name", None, True, False, float("inf"), -0.0, 10 ** 30),
        3: "int key",
        (1, "a"): ["tuple key"],
        None: {"nested": {"deeper": [[], {}, ()]}},
    }
    out = _round_trip(obj, tmp_path, how)
    assert type(out) is dict and list(out) == list(obj)
    assert type(out["weights"]) is OrderedDict and list(out["weights"]) == ["w", "b"]
    lw = out["weights"]["w"]
    assert isinstance(lw, tg.Tensor) and lw.requires_grad and lw.is_leaf
    assert lw.dtype == tg.float32 and lw.tolist() == w.tolist()
    assert out["weights"]["b"].dtype == tg.float64 and not out["weights"]["b"].requires_grad
    assert out["ints"].dtype == tg.int64 and out["mask"].dtype == tg.bool
    assert [t.dtype for t in out["small"]] == [tg.int8, tg.float16, tg.uint8, tg.int16, tg.int32]
    assert out["small"][0].shape == tg.Size([]) and out["small"][0].item() == 7
    assert out["scalar"].shape == tg.Size([]) and out["scalar"].item() == 2.5
    assert out["empty"].shape == tg.Size([0, 3])
    assert out["meta"] == obj["meta"] and type(out["meta"]) is tuple
    assert str(out["meta"][7]) == "-0.0" and type(out["meta"][1]) is float
    assert out[3] == "int key" and out[(1, "a")] == ["tuple key"]
    assert out[None] == {"nested": {"deeper": [[], {}, ()]}}
    # loaded tensors own fresh, writable arrays
    assert lw._array is not w._array and lw._array.flags.writeable


def test_shared_tensors_load_as_one(tmp_path):
    t = tg.tensor([1.0, 2.0])
    out = _round_trip({"a": t, "b": [t, t.detach()]}, tmp_path)
    assert out["a"] is out["b"][0]
    assert out["b"][1] is not out["a"] and out["b"][1].tolist() == [1.0, 2.0]


def test_other_values(tmp_path):
    obj = {"np": np.arange(6, dtype=np.int16).reshape(2, 3), "npf": np.float64(0.1),
           "npb": np.bool_(True), "bytes": b"\x00\xff", "set": {1, 2}, "fs": frozenset("ab"),
           "counter": Counter([3, 3, 7]), "dtype": tg.float64, "size": tg.Size([2, 3]),
           "complex": 1 - 2j, "view": tg.tensor([[1.0, 2.0], [3.0, 4.0]])[:, 1]}
    with tg.serialization.safe_globals([np._core.multiarray._reconstruct,
                                        np._core.multiarray.scalar, np.dtype, frozenset]):
        out = _round_trip(obj, tmp_path)      # numpy values and frozensets need the allowlist,
                                              # as under torch
    assert out["np"].dtype == np.int16 and out["np"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert type(out["npf"]) is np.float64 and out["npf"] == 0.1
    assert type(out["npb"]) is np.bool_
    assert out["bytes"] == b"\x00\xff" and out["set"] == {1, 2} and out["fs"] == frozenset("ab")
    assert type(out["counter"]) is Counter and out["counter"] == Counter([3, 3, 7])
    assert out["dtype"] == tg.float64 and out["size"] == tg.Size([2, 3])
    assert type(out["size"]) is tg.Size and out["complex"] == 1 - 2j
    assert out["view"].tolist() == [2.0, 4.0]


def test_npz_format_refuses_unsupported_objects_at_save(tmp_path):
    with pytest.raises(TypeError,
                       match=r"cannot save an object of type .*object.* \(at obj\['x'\]"):
        save_npz({"x": object()}, tmp_path / "a.pt")
    with pytest.raises(TypeError, match="dtype object"):
        save_npz([np.array([{}], dtype=object)], tmp_path / "b.pt")
    cyc = []
    cyc.append(cyc)
    with pytest.raises(ValueError, match="self-referencing"):
        save_npz(cyc, tmp_path / "c.pt")


@pytest.mark.parametrize("how", ["str", "fileobj"])
def test_npz_format_still_loads(tmp_path, how):
    w = tg.tensor([[1.5, -2.0]], requires_grad=True)
    obj = {"w": w, "meta": [1, "x", None], "np": np.arange(3), "c": Counter("aab")}
    path = tmp_path / "old.pt"
    save_npz(obj, str(path))
    out = load(str(path)) if how == "str" else load(io.BytesIO(path.read_bytes()))
    assert out["w"].tolist() == [[1.5, -2.0]] and out["w"].requires_grad
    assert out["meta"] == [1, "x", None] and out["np"].tolist() == [0, 1, 2]
    assert out["c"] == Counter("aab")


def test_optimizer_and_scheduler_state_round_trip(tmp_path):
    p = tg.tensor([1.0, -1.0, 0.5], requires_grad=True)
    opt = optim.Adam([p], lr=0.01, amsgrad=True)
    sched = optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 2, 5])
    for _ in range(3):
        p.grad = tg.tensor([0.1, 0.2, -0.3])
        opt.step()
        sched.step()
    save({"model": {"p": p.detach()}, "optim": opt.state_dict(), "sched": sched.state_dict()},
         tmp_path / "ckpt.pt")
    ck = load(tmp_path / "ckpt.pt")

    q = tg.tensor(ck["model"]["p"].tolist(), requires_grad=True)
    opt2 = optim.Adam([q], lr=1.0, amsgrad=True)
    sched2 = optim.lr_scheduler.MultiStepLR(opt2, milestones=[1])
    opt2.load_state_dict(ck["optim"])
    sched2.load_state_dict(ck["sched"])
    assert sched2.milestones == Counter([2, 2, 5]) and sched2.get_last_lr() == sched.get_last_lr()
    assert ck["optim"]["param_groups"][0]["betas"] == (0.9, 0.999)
    for _ in range(3):
        for t in (p, q):
            t.grad = tg.tensor([0.3, -0.1, 0.2])
        opt.step()
        opt2.step()
        sched.step()
        sched2.step()
        np.testing.assert_array_equal(p._array, q._array)
        assert sched.get_last_lr() == sched2.get_last_lr()


def test_parameters_stay_parameters(tmp_path):
    nn = pytest.importorskip("tapegrad.nn")
    if not hasattr(nn, "Parameter"):
        pytest.skip("tapegrad.nn.Parameter is not available in this build")
    w = nn.Parameter(tg.tensor([1.0, 2.0]))
    out = _round_trip({"w": w}, tmp_path)
    assert isinstance(out["w"], nn.Parameter) and out["w"].requires_grad


# -- files that are not (intact) checkpoints ---------------------------------------------------

def _good_bytes():
    buf = io.BytesIO()
    save({"w": tg.tensor(np.arange(200, dtype=np.float32)), "n": [1, "x"]}, buf)
    return buf.getvalue()


def _expect_error(tmp_path, data: bytes, pattern: str):
    path = tmp_path / "bad.pt"
    path.write_bytes(data)
    with pytest.raises(RuntimeError, match=pattern) as info:
        load(path)
    assert "bad.pt" in str(info.value)         # the message names the file
    with pytest.raises(RuntimeError, match=pattern):
        load(io.BytesIO(data))


def test_foreign_and_empty_files(tmp_path):
    _expect_error(tmp_path, b"", "is empty")
    _expect_error(tmp_path, b"hello, world\n" * 10, "not a tapegrad checkpoint: not a zip archive")
    npy = io.BytesIO()
    np.save(npy, np.arange(3))
    _expect_error(tmp_path, npy.getvalue(), "not a zip archive")
    npz = io.BytesIO()
    np.savez(npz, x=np.arange(3))
    # (an npz that is not a checkpoint: the loader looks for either format's marker)
    _expect_error(tmp_path, npz.getvalue(),
                  "not a tapegrad checkpoint: it has no tapegrad manifest")
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.pt")


def test_pickles_are_never_loaded(tmp_path):
    class Evil:
        def __reduce__(self):
            return (exec, ("import builtins; builtins._tapegrad_pwned = True",))

    _expect_error(tmp_path, pickle.dumps({"w": Evil()}), "not a zip archive")
    # an npz whose array entry is a pickled object array, with a valid-looking manifest
    buf = io.BytesIO()
    manifest = {"format": "tapegrad", "version": 1,
                "root": {"ndarray": {"key": "a0", "dtype": "|O", "shape": [1]}}}
    np.savez(buf, a0=np.array([Evil()], dtype=object),
             __tapegrad_manifest__=np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8))
    _expect_error(tmp_path, buf.getvalue(), "corrupt")
    assert not hasattr(builtins, "_tapegrad_pwned")


def test_truncated_and_corrupted_files(tmp_path):
    data = _good_bytes()
    for cut in (5, len(data) // 2, len(data) - 10):
        _expect_error(tmp_path, data[:cut], "corrupt or truncated")
    # flip a byte inside the tensor's data: the zip's CRC check catches it
    start = data.index(np.arange(200, dtype=np.float32).tobytes()[:40])
    bad = bytearray(data)
    bad[start + 100] ^= 0x55
    _expect_error(tmp_path, bytes(bad), "corrupt")
    # fuzz: any damage raises RuntimeError (or leaves the content intact), never anything else
    rng = np.random.default_rng(0)
    for _ in range(200):
        bad = bytearray(data)
        for pos in rng.integers(0, len(bad), size=3):
            bad[pos] = rng.integers(256)
        try:
            out = load(io.BytesIO(bytes(bad)))
        except RuntimeError:
            continue
        assert out["n"] == [1, "x"] and out["w"].tolist() == list(range(200))


def _npz_with_manifest(manifest_bytes, **arrays):
    buf = io.BytesIO()
    np.savez(buf, __tapegrad_manifest__=np.frombuffer(manifest_bytes, dtype=np.uint8), **arrays)
    return buf.getvalue()


@pytest.mark.parametrize("manifest,arrays,pattern", [
    (b"{not json", {}, "corrupt or truncated"),
    (b'{"format": "other", "version": 1, "root": null}', {}, "not a tapegrad checkpoint"),
    (b'{"format": "tapegrad", "version": 99, "root": null}', {}, "format version 99"),
    (b'{"format": "tapegrad", "version": 1, "root": {"eval": "1+1"}}', {},
     "unknown manifest tag 'eval'"),
    (b'{"format": "tapegrad", "version": 1, "root": {"tensor": {"key": "t0", "dtype": "float32",'
     b' "shape": [2], "requires_grad": false}}}', {}, "missing array entry 't0'"),
    (b'{"format": "tapegrad", "version": 1, "root": {"tensor": {"key": "t0", "dtype": "float64",'
     b' "shape": [2], "requires_grad": false}}}', {"t0": np.zeros(2, np.float32)},
     "has dtype float32, the manifest says float64"),
    (b'{"format": "tapegrad", "version": 1, "root": {"tensor": {"key": "t0", "dtype": "float32",'
     b' "shape": [3], "requires_grad": false}}}', {"t0": np.zeros(2, np.float32)},
     "has shape"),
    (b'{"format": "tapegrad", "version": 1, "root": {"tensor": {"key": "t0", "dtype": "int64",'
     b' "shape": [2], "requires_grad": true}}}', {"t0": np.zeros(2, np.int64)},
     "invalid requires_grad"),
    (b'{"format": "tapegrad", "version": 1, "root": [1, 2]}', {}, "unexpected manifest node"),
])
def test_malformed_manifests(tmp_path, manifest, arrays, pattern):
    _expect_error(tmp_path, _npz_with_manifest(manifest, **arrays), pattern)


def test_torch_files_load_weights_only(torch, tmp_path):
    # PyTorch's own format loads (weights only); tests/test_torch_checkpoint_load.py has the rest
    torch.save({"w": torch.zeros(2)}, tmp_path / "theirs.pt")
    assert load(tmp_path / "theirs.pt")["w"].tolist() == [0.0, 0.0]


def test_npz_format_is_a_plain_npz(tmp_path):
    save_npz({"w": tg.tensor([1.0, 2.0])}, tmp_path / "c.pt")
    with zipfile.ZipFile(tmp_path / "c.pt") as z:
        assert sorted(z.namelist()) == ["__tapegrad_manifest__.npy", "t0.npy"]
    with np.load(tmp_path / "c.pt", allow_pickle=False) as z:
        assert z["t0"].tolist() == [1.0, 2.0]
        manifest = json.loads(z["__tapegrad_manifest__"].tobytes())
    assert manifest["format"] == "tapegrad" and manifest["version"] == 1
    assert manifest["root"] == {"dict": [["w", {"tensor": {
        "key": "t0", "dtype": "float32", "shape": [2], "requires_grad": False,
        "class": "Tensor"}}]]}


def test_writes_at_the_file_position_and_appends_nothing(tmp_path):
    path = pathlib.Path(tmp_path / "model")            # no .npz appended to the name
    save([1, 2], path)
    assert path.exists() and load(path) == [1, 2]
    assert isinstance(_core.wrap_array(np.zeros(1)), tg.Tensor)
