"""Faults found by running held-out scientific-ML scripts (PINNs with nested autograd.grad and
LBFGS, a Hamiltonian neural network, DeepONet) under tapegrad; each case replays the script's
call in both libraries and compares the outcome with PyTorch's."""
from __future__ import annotations

import io

import numpy as np
import pytest

import tapegrad as tg


def _load_outcome(lib, obj, **load_kwargs):
    """('ok', type name of the loaded object) or ('err', exception type, the refused global)."""
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    try:
        out = lib.load(buf, **load_kwargs)
    except Exception as e:     # noqa: BLE001  (the exception is what is compared)
        refused = str(e).split("Unsupported global: GLOBAL ")[-1].split(" ")[0]
        return ("err", type(e).__name__, refused)
    return ("ok", type(out).__name__)


# Training scripts checkpoint their loss history as an ndarray, or a loss from np.mean(...), next
# to the weights, then torch.load the file.  PyTorch >= 2.6 loads weights-only by default and
# refuses numpy values there; tapegrad loaded them, so the script went on where PyTorch stops.
NUMPY_CHECKPOINTS = {
    "loss_history_array": lambda lib: {"model": {"w": lib.ones(2)}, "losses": np.ones(3)},
    "int_array": lambda lib: {"idx": np.arange(4)},
    "zero_dim_array": lambda lib: np.array(2.0),
    "array_from_tensor": lambda lib: {"h": lib.ones(2).numpy()},
    "float64_loss": lambda lib: {"epoch": 3, "loss": np.float64(0.25)},
    "float32_scalar": lambda lib: np.float32(1.0),
    "bool_scalar": lambda lib: {"done": np.bool_(True)},
    "int64_step": lambda lib: {"step": np.int64(7)},
    "bare_dtype": lambda lib: np.dtype("float32"),
}


@pytest.mark.parametrize("case", sorted(NUMPY_CHECKPOINTS))
def test_weights_only_load_refuses_numpy_values_as_torch(case, torch):
    make = NUMPY_CHECKPOINTS[case]
    assert _load_outcome(tg, make(tg)) == _load_outcome(torch, make(torch))
    assert _load_outcome(tg, make(tg), weights_only=False) == \
        _load_outcome(torch, make(torch), weights_only=False)


def test_numpy_values_load_once_allowlisted():
    allow = [np._core.multiarray._reconstruct, np._core.multiarray.scalar, np.dtype]
    buf = io.BytesIO()
    tg.save({"w": tg.ones(2), "losses": np.arange(3.0), "loss": np.float64(0.5)}, buf)
    with tg.serialization.safe_globals(allow):
        out = tg.load(io.BytesIO(buf.getvalue()))
    assert out["losses"].tolist() == [0.0, 1.0, 2.0] and type(out["loss"]) is np.float64
    assert out["w"].tolist() == [1.0, 1.0]
    with pytest.raises(Exception, match="Weights only load failed"):
        tg.load(io.BytesIO(buf.getvalue()))          # the allowlist ended with the block


def test_tensors_and_plain_values_still_load_weights_only():
    # a tensor's storage is persisted as a plain array is: only a bare one is refused
    base = tg.arange(6.0)
    obj = {"base": base, "view": base[2:], "p": tg.nn.Parameter(tg.ones(2)), "lr": 0.1,
           "hist": [1.0, 2.0], "name": "pinn"}
    buf = io.BytesIO()
    tg.save(obj, buf)
    out = tg.load(io.BytesIO(buf.getvalue()))
    out["base"][3] = 100.0
    assert out["view"].tolist() == [2.0, 100.0, 4.0, 5.0] and out["hist"] == [1.0, 2.0]


# PyTorch's ravel is contiguous().view(-1): a transposed (non-contiguous) input is cloned, then
# viewed, so the printed grad_fn is ViewBackward0 (flatten and reshape copy through
# UnsafeViewBackward0 instead).
RAVEL_INPUTS = {
    "transposed": lambda T: (T.arange(6.0).reshape(2, 3).requires_grad_() * 1).t(),
    "strided": lambda T: (T.arange(6.0).reshape(2, 3).requires_grad_() * 1)[:, ::2],
    "contiguous": lambda T: T.arange(6.0).reshape(2, 3).requires_grad_() * 1,
}


@pytest.mark.parametrize("case", sorted(RAVEL_INPUTS))
def test_ravel_is_a_view_of_a_contiguous_copy_as_torch(case, torch):
    def facts(lib):
        t = RAVEL_INPUTS[case](lib)
        r = t.ravel()
        first = r.grad_fn.next_functions[0][0]
        return (r.tolist(), type(r.grad_fn).__name__, type(first).__name__,
                type(lib.ravel(t).grad_fn).__name__)
    assert facts(tg) == facts(torch)


# vmap over a BatchNorm in training mode (an ensemble of models, a per-sample Jacobian of a
# network with a norm layer): the running statistics would be updated once per sample in turn;
# PyTorch refuses.  tapegrad ran the per-sample loop and silently moved the running mean.
_BN_X = [[[0.1 * (8 * b + 2 * i + c) for c in range(2)] for i in range(4)] for b in range(3)]


def _vmapped_norm_outcome(lib, case):
    x = lib.tensor(_BN_X, dtype=lib.float64)
    F = lib.nn.functional
    rm, rv = lib.zeros(2, dtype=lib.float64), lib.ones(2, dtype=lib.float64)
    calls = {
        "module_train": lambda: (lib.func.vmap(bn)(x), bn.running_mean)[1],
        "functional_train": lambda: lib.func.vmap(lambda a: F.batch_norm(a, rm, rv, None, None,
                                                                         True))(x),
        "one_stat_batched": lambda: lib.func.vmap(
            lambda a, m: F.batch_norm(a, m, rv, training=True))(x, lib.zeros(3, 2,
                                                                              dtype=lib.float64)),
        "instance_norm_stats": lambda: lib.func.vmap(
            lambda a: F.instance_norm(a, rm, rv))(x.reshape(3, 2, 2, 2)),
        "eval": lambda: lib.func.vmap(lambda a: F.batch_norm(a, rm, rv))(x),
        "no_running_stats": lambda: lib.func.vmap(
            lambda a: F.batch_norm(a, None, None, training=True))(x),
        "stats_batched": lambda: lib.func.vmap(
            lambda a, m, v: F.batch_norm(a, m, v, training=True))(
                x, lib.zeros(3, 2, dtype=lib.float64), lib.ones(3, 2, dtype=lib.float64)),
    }
    bn = lib.nn.BatchNorm1d(2).double()
    try:
        out = calls[case]()
    except RuntimeError as e:
        return ("err", str(e).split("\n")[0])
    return ("ok", [round(v, 6) for v in out.reshape(-1).tolist()])


@pytest.mark.parametrize("case", ["module_train", "functional_train", "one_stat_batched",
                                  "instance_norm_stats", "eval", "no_running_stats",
                                  "stats_batched"])
def test_vmap_refuses_to_update_unbatched_running_stats_as_torch(case, torch):
    assert _vmapped_norm_outcome(tg, case) == _vmapped_norm_outcome(torch, case)


# A complex value written into a real tensor (copy_, x[k] = z, tensor(complex_array,
# dtype=float32)): PyTorch keeps the real part and warns once, with a UserWarning, for any
# complex -> real cast.  tapegrad let numpy's ComplexWarning through on every write, which a
# warnings filter on UserWarning (or numpy's category, as an error) tells apart.
def _seti(t, key, value):
    t[key] = value
    return t


COMPLEX_INTO_REAL = {
    "copy_": lambda T: T.zeros(2).copy_(T.tensor([1 + 2j, 3 - 1j])),
    "setitem_slice": lambda T: _seti(T.zeros(2), slice(None), T.tensor([1 + 2j, 3 - 1j])),
    "setitem_one": lambda T: _seti(T.zeros(2), 0, T.tensor(2 + 1j)),
    "setitem_recorded": lambda T: _seti(T.zeros(2, requires_grad=True) * 1, 1,
                                        T.tensor(2 + 1j)),
    "copy_recorded": lambda T: (T.zeros(2, requires_grad=True) * 1).copy_(
        T.tensor([1 + 2j, 3 - 1j])),
    "tensor_dtype": lambda T: T.tensor(np.array([1.5 + 1j]), dtype=T.float32),
    "as_tensor_dtype": lambda T: T.as_tensor(np.array([1.5 + 1j]), dtype=T.float64),
}


@pytest.mark.parametrize("case", sorted(COMPLEX_INTO_REAL))
def test_complex_into_real_keeps_real_part_with_torchs_warning(case, torch, fresh_once_warnings):
    import warnings
    make = COMPLEX_INTO_REAL[case]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = make(tg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (torch's warning is once per process)
        theirs = make(torch)
    assert ours.dtype == getattr(tg, str(theirs.dtype).split(".")[1])
    assert ours.tolist() == theirs.tolist()
    assert [(w.category, str(w.message)) for w in caught] == \
        [(UserWarning, "Casting complex values to real discards the imaginary part (Triggered "
                       "internally at /__w/pytorch/pytorch/aten/src/ATen/native/Copy.cpp:307.)")]
