"""Interpretability-notebook idioms checked against PyTorch: sparse feature activations saved and
loaded (tapegrad.save / tapegrad.load round trips and PyTorch-written checkpoints, weights-only)."""
import io

import numpy as np
import pytest

import tapegrad

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _acts(lib):
    # ReLU feature activations of an SAE: mostly zeros, stored sparse to save space
    a = np.maximum(np.sin(np.arange(24) * 1.7).reshape(4, 6) - 0.5, 0)
    return lib.tensor(a, dtype=lib.float32)


def _roundtrip(t, **load_kwargs):
    buf = io.BytesIO()
    tapegrad.save(t, buf)
    buf.seek(0)
    return tapegrad.load(buf, **load_kwargs)


@pytest.mark.parametrize("layout", ["coo", "coalesced", "csr", "csc"])
@pytest.mark.parametrize("weights_only", [True, False])
def test_sparse_tensor_save_load_roundtrip(layout, weights_only):
    # PyTorch loads a saved sparse tensor with the default weights_only=True; tapegrad refused it
    dense = _acts(tapegrad)
    sparse = {"coo": dense.to_sparse(), "coalesced": dense.to_sparse().coalesce(),
              "csr": dense.to_sparse_csr(), "csc": dense.to_sparse_csc()}[layout]
    loaded = _roundtrip({"acts": sparse, "layer": 3}, weights_only=weights_only)
    assert loaded["layer"] == 3
    assert loaded["acts"].layout is sparse.layout
    assert tapegrad.equal(loaded["acts"].to_dense(), dense)


def test_uncoalesced_sparse_keeps_its_duplicates_through_save():
    t = tapegrad.sparse_coo_tensor(tapegrad.tensor([[0, 0], [1, 1]]), tapegrad.tensor([1.0, 2.0]),
                                   (2, 2), check_invariants=False)
    loaded = _roundtrip(t)
    assert not loaded.is_coalesced() and loaded._nnz() == 2
    assert loaded.to_dense()[0, 1].item() == 3.0


def test_sparse_leaf_requires_grad_survives_save():
    t = _acts(tapegrad).to_sparse().requires_grad_()
    assert _roundtrip(t).requires_grad


@pytest.mark.parametrize("bad", [
    "float_indices", "sparse_values", "bad_size", "bad_flag", "indices_out_of_range"])
def test_weights_only_load_refuses_malformed_sparse_records(bad):
    # the checked rebuild must refuse what could not come from a real tensor
    from tapegrad import serialization as ser
    idx = tapegrad.tensor([[0, 1], [1, 0]])
    vals = tapegrad.tensor([1.0, 2.0])
    args = {"float_indices": (idx.float(), vals, (2, 2), True, False),
            "sparse_values": (idx, vals.to_sparse(), (2, 2), True, False),
            "bad_size": (idx, vals, (2, "2"), True, False),
            "bad_flag": (idx, vals, (2, 2), "yes", False),
            "indices_out_of_range": (idx, vals, (1, 1), True, False)}[bad]
    with pytest.raises((ser.CheckpointError, RuntimeError)):
        ser._checked_rebuild_sparse(*args)


def test_pytorch_saved_sparse_checkpoint_loads(tmp_path):
    torch = pytest.importorskip("torch")
    dense = _acts(torch)
    path = tmp_path / "sparse_acts.pt"
    torch.save({"coo": dense.to_sparse(), "csr": dense.to_sparse_csr(),
                "csc": dense.to_sparse_csc(), "coalesced": dense.to_sparse().coalesce()}, path)
    for weights_only in (True, False):
        loaded = tapegrad.load(str(path), weights_only=weights_only)
        expected = torch.load(str(path), weights_only=weights_only)
        for key, t in expected.items():
            got = loaded[key]
            assert str(got.layout) == str(t.layout)
            np.testing.assert_array_equal(got.to_dense().numpy(), t.to_dense().numpy())
        assert loaded["coalesced"].is_coalesced() == expected["coalesced"].is_coalesced()


# -- writes into inference tensors outside inference mode ----------------------------------------
# PyTorch refuses them when the write bumps the version counter, after its kernel wrote: the
# caught error leaves the cached activation changed, and an argument error comes first.

_UNRECORDED_WRITES = {
    "add_": lambda a, lib: a.add_(1),
    "mul_": lambda a, lib: a.mul_(3),
    "setitem": lambda a, lib: a.__setitem__(slice(0, 2), 5.0),
    "view_fill_": lambda a, lib: a.view(3)[0].fill_(9),
    "zero_": lambda a, lib: a.zero_(),
    "sigmoid_": lambda a, lib: a.sigmoid_(),
    "index_add_": lambda a, lib: a.index_add_(0, lib.tensor([0]), lib.ones(1)),
    "copy_": lambda a, lib: a.copy_(lib.arange(3.0)),
    "bad_shape": lambda a, lib: a.add_(lib.ones(4)),
    "bad_dtype": lambda a, lib: a.add_(lib.tensor([1 + 1j])),
}


def _inference_write(lib, write):
    with lib.inference_mode():
        a = lib.ones(3) * 2
    with pytest.raises(RuntimeError) as err:
        write(a, lib)
    return a.tolist(), str(err.value).split(".")[0]


@pytest.mark.parametrize("name", sorted(_UNRECORDED_WRITES))
def test_inference_tensor_write_outside_inference_mode_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    write = _UNRECORDED_WRITES[name]
    assert _inference_write(tapegrad, write) == _inference_write(torch, write)


def test_inference_tensor_random_fill_writes_then_raises():
    with tapegrad.inference_mode():
        a = tapegrad.zeros(50)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        a.uniform_(1.0, 2.0)
    assert (a >= 1.0).all()


def test_recorded_write_into_inference_tensor_is_refused_with_pytorch_message():
    # a write autograd would record (the operand requires grad) is refused before it is
    # recorded: no history is attached to the inference tensor, and later graphs are unharmed
    w = tapegrad.ones(3, requires_grad=True)
    with tapegrad.inference_mode():
        a = tapegrad.ones(3) * 2
        v = a[1:]
    for write in (lambda: a.add_(w), lambda: a.mul_(w), lambda: v.add_(w[1:])):
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
            write()
    assert not a.requires_grad and a.grad_fn is None
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
