"""tapegrad.save writes PyTorch's own checkpoint format: torch.load reads it, and the file is
byte for byte torch.save's for the same object (but for the random serialization id)."""
import io
import os
import pickletools
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import serialization

torch = pytest.importorskip("torch")

_DTYPES = ["float16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32",
           "int64", "uint8", "uint16", "uint32", "uint64", "bool"]


def _saved(save, obj, path=None, **kw) -> bytes:
    if path is None:
        buf = io.BytesIO()
        save(obj, buf, **kw)
        return buf.getvalue()
    save(obj, path, **kw)
    with open(path, "rb") as fh:
        return fh.read()


def _without_serialization_id(data: bytes) -> bytes:
    """The archive with the random serialization id's bytes and CRC zeroed."""
    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = [i for i in z.infolist() if i.filename.endswith("/.data/serialization_id")][0]
    local = info.header_offset
    start = local + 30 + int.from_bytes(data[local + 26:local + 28], "little") \
        + int.from_bytes(data[local + 28:local + 30], "little")
    out[start:start + 40] = b"0" * 40
    out[start + 44:start + 48] = b"\0" * 4                  # the descriptor's CRC
    central = data.index(b"PK\x01\x02" + data[local + 4:local + 6], start)
    while central >= 0:
        n = int.from_bytes(data[central + 28:central + 30], "little")
        if data[central + 46:central + 46 + n] == info.filename.encode():
            out[central + 16:central + 20] = b"\0" * 4
        central = data.find(b"PK\x01\x02", central + 1)
    return bytes(out)


def _twin_state_dicts(make):
    """(torch state_dict, tapegrad state_dict of the same values and layout versions)."""
    torch.manual_seed(0)
    theirs = make(torch).state_dict()
    ours = make(tg).state_dict()
    for key, value in theirs.items():
        ours[key] = tg.tensor(value.numpy())
    return theirs, ours


_MODELS = {
    "conv_bn_linear": lambda M: M.nn.Sequential(M.nn.Conv2d(1, 4, 3), M.nn.BatchNorm2d(4),
                                                M.nn.ReLU(), M.nn.Flatten(),
                                                M.nn.Linear(4 * 4 * 4, 10)),
    "lstm": lambda M: M.nn.LSTM(5, 7, num_layers=2),
    "linear": lambda M: M.nn.Linear(6, 3),
}


@pytest.mark.parametrize("model", sorted(_MODELS))
def test_state_dict_file_is_torch_saves_byte_for_byte(tmp_path, model):
    theirs, ours = _twin_state_dicts(_MODELS[model])
    path = str(tmp_path / "temp.p")          # the quantization tutorials' print_size_of_model
    a = _saved(torch.save, theirs, path)
    b = _saved(tg.save, ours, path)
    assert os.path.getsize(path) == len(a)
    assert _without_serialization_id(a) == _without_serialization_id(b)
    a, b = _saved(torch.save, theirs), _saved(tg.save, ours)
    assert len(a) == len(b) and _without_serialization_id(a) == _without_serialization_id(b)


def _views(M):
    x = M.arange(12.0, dtype=M.float64).reshape(3, 4)
    return [x, x.t(), x[1:, 2:], x[:, ::2], M.tensor(2.5), M.ones(0, 3),
            M.ones(3).expand(4, 3), {str(d): M.ones(2, dtype=getattr(M, d)) for d in _DTYPES}]


@pytest.mark.parametrize("case", ["views", "params", "misc", "protocol4"])
def test_objects_saved_byte_for_byte(case):
    kw = {}
    if case == "views":
        make = _views
    elif case == "params":
        def make(M):
            t = M.ones(2, requires_grad=True)
            return [M.nn.Parameter(M.arange(3.0)), M.nn.Parameter(M.ones(1), requires_grad=False),
                    t, t]
    elif case == "misc":
        def make(M):
            return [M.Size([2, 3]), M.device("cpu"), M.float16, M.strided,
                    {"a": (1, 2.5, "s", None, b"xy", True)}]
    else:
        make, kw = _views, {"pickle_protocol": 4}
    a, b = _saved(torch.save, make(torch), **kw), _saved(tg.save, make(tg), **kw)
    assert _without_serialization_id(a) == _without_serialization_id(b)


def test_layout_is_pytorchs(tmp_path):
    data = _saved(tg.save, {"w": tg.tensor([1.0, 2.0]), "b": tg.tensor([3], dtype=tg.int64)},
                  str(tmp_path / "model.v2.pth"))
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = [i.filename for i in z.infolist()]
        assert names == ["model.v2/data.pkl", "model.v2/.format_version",
                         "model.v2/.storage_alignment", "model.v2/byteorder",
                         "model.v2/data/0", "model.v2/data/1", "model.v2/version",
                         "model.v2/.data/serialization_id"]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
        for info in z.infolist():           # every entry's data 64-byte aligned
            local = info.header_offset
            start = local + 30 + int.from_bytes(data[local + 26:local + 28], "little") \
                + int.from_bytes(data[local + 28:local + 30], "little")
            assert start % 64 == 0 and data[start:start + info.file_size] == z.read(info)
        assert z.read("model.v2/version") == b"3\n" and z.read("model.v2/byteorder") == b"little"
        assert len(z.read("model.v2/.data/serialization_id")) == 40
        assert np.frombuffer(z.read("model.v2/data/1"), "<i8").tolist() == [3]
        ops = [(op.name, arg) for op, arg, _ in pickletools.genops(z.read("model.v2/data.pkl"))]
    assert ops[0] == ("PROTO", 2)
    assert ("GLOBAL", "torch._utils _rebuild_tensor_v2") in ops
    assert ("GLOBAL", "torch FloatStorage") in ops and ("GLOBAL", "torch LongStorage") in ops
    assert not any("tapegrad" in str(arg) for _, arg in ops)


@pytest.mark.parametrize("name,root", [("ckpt", "ckpt"), ("a.b.pt", "a.b"), ("modèle.pt", "archive")])
def test_archive_folder_named_as_torch_names_it(tmp_path, name, root):
    import pathlib
    for save in (torch.save, tg.save):
        path = pathlib.Path(tmp_path / name)
        save({"x": 1}, path)
        with zipfile.ZipFile(path) as z:
            assert z.namelist()[0] == f"{root}/data.pkl"


@pytest.mark.parametrize("weights_only", [True, False])
def test_torch_loads_what_tapegrad_saved(weights_only):
    x = tg.arange(12.0).reshape(3, 4)
    p = tg.nn.Parameter(tg.randn(3))
    frozen = tg.nn.Parameter(tg.ones(2), requires_grad=False)
    obj = {"views": [x, x.t(), x[1:, 2:], x[:, ::2]],
           "dtypes": {d: tg.tensor([[1, 0], [2, 3]], dtype=getattr(tg, d)) for d in _DTYPES},
           "complex": tg.tensor([1 + 2j, -3j]), "zero_d": tg.tensor(7, dtype=tg.int8),
           "empty": tg.ones(0, 3), "p": p, "frozen": frozen, "leaf": tg.ones(2, requires_grad=True),
           "nested": [(1, "a"), {"k": [None, 2.5, b"\x00"]}], "size": tg.Size([4, 5])}
    buf = io.BytesIO()
    tg.save(obj, buf)
    buf.seek(0)
    out = torch.load(buf, weights_only=weights_only)
    views = out["views"]
    assert [v.stride() for v in views] == [(4, 1), (1, 4), (4, 1), (4, 2)]
    assert [v.storage_offset() for v in views] == [0, 0, 6, 0]
    assert len({v.untyped_storage().data_ptr() for v in views}) == 1     # one storage
    views[0][1, 2] = 100.0
    assert views[2][0, 0].item() == 100.0 and views[1][2, 1].item() == 100.0
    for d in _DTYPES:
        t = out["dtypes"][d]
        assert t.dtype == getattr(torch, d) and t.tolist() == obj["dtypes"][d].tolist()
    assert out["complex"].tolist() == [1 + 2j, -3j] and out["zero_d"].shape == ()
    assert out["empty"].shape == (0, 3)
    assert type(out["p"]) is torch.nn.Parameter and out["p"].requires_grad
    np.testing.assert_array_equal(out["p"].detach().numpy(), p.detach().numpy())
    assert type(out["frozen"]) is torch.nn.Parameter and not out["frozen"].requires_grad
    assert out["leaf"].requires_grad and out["nested"] == obj["nested"]
    assert type(out["size"]) is torch.Size and out["size"] == (4, 5)


def test_round_trip_tapegrad_torch_tapegrad():
    x = tg.arange(6.0).reshape(2, 3)
    obj = {"x": x, "t": x.t(), "row": x[1], "p": tg.nn.Parameter(tg.ones(2))}
    buf = io.BytesIO()
    tg.save(obj, buf)
    buf.seek(0)
    mid = torch.load(buf)
    buf = io.BytesIO()
    torch.save(mid, buf)
    buf.seek(0)
    back = tg.load(buf)
    assert [back[k].stride() for k in ("x", "t", "row")] == [(3, 1), (1, 3), (1,)]
    back["x"][1, 0] = 50.0                  # still one storage
    assert back["t"][0, 1].item() == 50.0 and back["row"][0].item() == 50.0
    assert type(back["p"]) is tg.nn.Parameter and back["p"].requires_grad


def test_model_and_optimizer_state_dicts_load_into_torch():
    torch.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 1))
    opt = tg.optim.Adam(model.parameters(), lr=0.01)
    model(tg.randn(5, 3)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    tg.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    ckpt = torch.load(buf)
    assert ckpt["model"]._metadata == model.state_dict()._metadata
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    twin.load_state_dict(ckpt["model"])
    twin_opt = torch.optim.Adam(twin.parameters(), lr=0.01)
    twin_opt.load_state_dict(ckpt["opt"])
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(twin(torch.from_numpy(x)).detach().numpy(),
                               model(tg.tensor(x)).detach().numpy(), rtol=1e-6)
    exp_avg = ckpt["opt"]["state"][0]["exp_avg"]
    np.testing.assert_array_equal(exp_avg.numpy(),
                                  opt.state_dict()["state"][0]["exp_avg"].numpy())


def test_tensor_attributes_and_whole_models_round_trip():
    t = tg.ones(2)
    t.tag = "w"
    buf = io.BytesIO()
    tg.save(t, buf)
    buf.seek(0)
    assert torch.load(buf).tag == "w"
    buf.seek(0)
    assert tg.load(buf).tag == "w"
    model = tg.nn.Sequential(tg.nn.Linear(3, 2))
    buf = io.BytesIO()
    tg.save(model, buf)
    buf.seek(0)
    loaded = tg.load(buf, weights_only=False)
    assert type(loaded) is tg.nn.Sequential and type(loaded[0].weight) is tg.nn.Parameter


def test_old_tapegrad_format_still_loads():
    x = tg.arange(6.0).reshape(2, 3)
    buf = io.BytesIO()
    serialization._save_tapegrad_format({"x": x, "t": x.t(), "n": [1, "a"]}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        assert "archive/format" in z.namelist()
    buf.seek(0)
    out = tg.load(buf)
    assert out["t"].tolist() == x.t().tolist() and out["n"] == [1, "a"]


def test_saving_and_loading_need_no_torch(tmp_path):
    # torch made unimportable: tapegrad writes torch's globals without importing them
    code = ("import sys; sys.modules['torch'] = None\n"
            "import tapegrad as tg, io\n"
            "b = io.BytesIO(); x = tg.arange(4.0)\n"
            "tg.save({'x': x, 'v': x[1:], 'p': tg.nn.Parameter(tg.ones(2))}, b); b.seek(0)\n"
            "o = tg.load(b); print(o['v'].tolist(), type(o['p']).__name__)\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tg.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1.0, 2.0, 3.0] Parameter"


def test_numpy_arrays_pickled_as_torch_pickles_them():
    buf = io.BytesIO()
    tg.save({"a": np.arange(3, dtype=np.int16)}, buf)
    buf.seek(0)
    globals_ = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, np.dtypes.Int16DType]
    with torch.serialization.safe_globals(globals_):
        assert torch.load(buf)["a"].tolist() == [0, 1, 2]
    buf.seek(0)
    with serialization.safe_globals(globals_):
        out = tg.load(buf)["a"]
    assert out.dtype == np.int16 and out.tolist() == [0, 1, 2]


def test_zip64_fields_past_four_gigabytes(monkeypatch):
    # entries and offsets past 4 GiB carry zip64 fields (tried here from 100 bytes on)
    from tapegrad import _torch_format
    monkeypatch.setattr(_torch_format, "_ZIP64_FROM", 100)
    buf = io.BytesIO()
    tg.save({"w": tg.arange(50.0), "v": tg.ones(3)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        assert z.testzip() is None and z.getinfo("archive/data/0").file_size == 200
    buf.seek(0)
    assert torch.load(buf)["w"].tolist() == list(range(50))
    buf.seek(0)
    assert tg.load(buf)["v"].tolist() == [1.0, 1.0, 1.0]


def _pickles(lib, obj):
    buf = io.BytesIO()
    lib.save(obj, buf)
    return zipfile.ZipFile(io.BytesIO(buf.getvalue())).read("archive/data.pkl"), buf


def test_a_dtype_met_twice_is_a_memo_reference_as_torch_writes_it():
    # (the second torch.float32 raised an AssertionError in the pickler: its global was
    # memoised but the dtype object was not looked up)
    torch = pytest.importorskip("torch")
    ours, _ = _pickles(tg, {"a": tg.float32, "b": [tg.int64, tg.float32]})
    theirs, _ = _pickles(torch, {"a": torch.float32, "b": [torch.int64, torch.float32]})
    assert ours == theirs


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")     # (torch's own save warns)
def test_quantized_tensors_saved_as_torch_saves_them():
    # torch._utils._rebuild_qtensor over a QUInt8Storage / QInt8Storage, qparams per tensor and
    # per channel: the same pickle; each library loads the other's file
    torch = pytest.importorskip("torch")

    def objects(lib):
        return {"q": lib.quantize_per_tensor(lib.tensor([1.0, 2.5, -1.0]), 0.1, 3, lib.quint8),
                "qc": lib.quantize_per_channel(lib.tensor([[1.0, 2.5], [-1.0, 0.5]]),
                                               lib.tensor([0.1, 0.2]), lib.tensor([1, 2]), 0,
                                               lib.qint8)}
    ours, buf = _pickles(tg, objects(tg))
    theirs, tbuf = _pickles(torch, objects(torch))
    assert ours == theirs
    for weights_only in (True, False):
        buf.seek(0)
        tbuf.seek(0)
        from_ours = torch.load(buf, weights_only=weights_only)
        from_theirs = tg.load(tbuf, weights_only=weights_only)
        for key in ("q", "qc"):
            assert repr(from_ours[key]) == repr(objects(torch)[key])
            assert repr(from_theirs[key]) == repr(objects(tg)[key])
            np.testing.assert_array_equal(from_theirs[key].int_repr().numpy(),
                                          from_ours[key].int_repr().numpy())
