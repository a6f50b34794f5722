"""tapegrad.load reads checkpoints written by PyTorch's torch.save (weights only): published
state dicts (RL repositories ship their trained policies as .pth files) load with their values,
dtypes, geometry and Parameters; anything beyond weights is refused as a weights-only load
refuses it."""
import pickle
import zipfile

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _roundtrip(tmp_path, obj, **kw):
    path = tmp_path / "ckpt.pth"
    torch.save(obj, path)
    return tg.load(path, **kw)


def test_state_dict_loads_into_the_same_model(tmp_path):
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    theirs(torch.randn(5, 3))                       # running stats move
    sd = _roundtrip(tmp_path, theirs.state_dict())
    ours = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.BatchNorm1d(4), tg.nn.Linear(4, 2))
    assert str(ours.load_state_dict(sd)) == "<All keys matched successfully>"
    assert sd._metadata == theirs.state_dict()._metadata
    x = np.random.RandomState(0).randn(6, 3).astype(np.float32)
    ours.eval(); theirs.eval()
    np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    for k, v in theirs.state_dict().items():
        assert str(sd[k].dtype) == str(v.dtype) and tuple(sd[k].shape) == tuple(v.shape)


@pytest.mark.parametrize("make", [
    lambda: torch.arange(12.0).view(3, 4).t(),                 # strided view
    lambda: torch.arange(10)[2:7:2],                          # offset and step
    lambda: torch.tensor([1, 2], dtype=torch.int32),
    lambda: torch.tensor([True, False]),
    lambda: torch.ones(3, dtype=torch.float16),
    lambda: torch.tensor(2.5, dtype=torch.float64),
    lambda: torch.zeros(0, 3),
])
def test_tensor_values_and_dtypes(tmp_path, make):
    t = make()
    ours = _roundtrip(tmp_path, {"t": t})["t"]
    assert str(ours.dtype) == str(t.dtype) and tuple(ours.shape) == tuple(t.shape)
    np.testing.assert_array_equal(ours.numpy(), t.numpy())


def test_parameters_shared_storage_and_plain_values(tmp_path):
    base = torch.arange(6.0)
    obj = {"p": torch.nn.Parameter(torch.ones(2)), "a": base[:3], "b": base[3:], "n": 3,
           "s": "x", "size": torch.Size([2, 3]), "l": [1.5, None]}
    got = _roundtrip(tmp_path, obj, map_location="cpu")
    assert isinstance(got["p"], tg.nn.Parameter) and got["p"].requires_grad
    assert got["a"].tolist() == [0.0, 1.0, 2.0] and got["b"].tolist() == [3.0, 4.0, 5.0]
    assert (got["n"], got["s"], tuple(got["size"]), got["l"]) == (3, "x", (2, 3), [1.5, None])


def test_map_location_callable_sees_each_storage(tmp_path):
    seen = []
    got = _roundtrip(tmp_path, {"w": torch.ones(2)},
                     map_location=lambda storage, loc: seen.append(loc) or storage)
    assert seen == ["cpu"] and got["w"].tolist() == [1.0, 1.0]


def test_whole_module_pickle_is_refused_as_weights_only(tmp_path):
    torch.save(torch.nn.Linear(2, 2), tmp_path / "m.pt")
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(tmp_path / "m.pt")
    with pytest.raises(pickle.UnpicklingError) as ours:
        tg.load(tmp_path / "m.pt")
    assert "Unsupported global" in str(theirs.value) and "Unsupported global" in str(ours.value)


def test_truncated_storage_is_a_runtime_error(tmp_path):
    torch.save({"w": torch.ones(4)}, tmp_path / "ok.pt")
    with zipfile.ZipFile(tmp_path / "ok.pt") as src, zipfile.ZipFile(tmp_path / "bad.pt", "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            dst.writestr(item, data[:-4] if "/data/" in item.filename else data)
    with pytest.raises(RuntimeError, match="bytes"):
        tg.load(tmp_path / "bad.pt")


def test_trusted_load_reads_numpy_values_torch_wrote(tmp_path):
    # weights_only=False trusts the pickle, as torch.load does: numpy arrays and scalars (a loss
    # history, a float64 loss) come back as numpy objects; the default still refuses them
    torch.save({"w": torch.ones(2), "h": np.arange(3.0), "f": np.float64(2.5)}, tmp_path / "n.pt")
    theirs = torch.load(tmp_path / "n.pt", weights_only=False)
    ours = tg.load(tmp_path / "n.pt", weights_only=False)
    assert isinstance(ours["w"], tg.Tensor) and ours["w"].tolist() == theirs["w"].tolist()
    assert type(ours["h"]) is np.ndarray and ours["h"].tolist() == [0.0, 1.0, 2.0]
    assert type(ours["f"]) is np.float64 and ours["f"] == 2.5
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        tg.load(tmp_path / "n.pt")


def test_trusted_load_of_a_whole_torch_module_builds_tapegrads(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Tanh())
    model.eval()
    torch.save(model, tmp_path / "m.pt")
    ours = tg.load(tmp_path / "m.pt", weights_only=False)
    assert isinstance(ours, tg.nn.Sequential) and isinstance(ours[1], tg.nn.BatchNorm1d)
    assert repr(ours) == repr(model) and ours.training is False
    x = np.linspace(-1, 1, 12).reshape(4, 3).astype(np.float32)
    np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(),
                               model(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in model.named_buffers()]


def test_trusted_load_names_a_torch_global_tapegrad_lacks(tmp_path):
    # (statically quantized layers are outside tapegrad's scope)
    torch.save(torch.ao.nn.quantized.ReLU6(), tmp_path / "relu6.pt")
    with pytest.raises(AttributeError, match="ReLU6"):
        tg.load(tmp_path / "relu6.pt", weights_only=False)
