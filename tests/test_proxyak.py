"""Gaps found running held-out classic-ML scripts (k-means / GMM, matrix factorisation, linear
regression) under tapegrad.  A tensor and the ndarray it shares memory with are separate
objects in PyTorch: changing the ndarray's shape, dtype or strides (`a.shape = (2, 3)`) leaves
the tensor's sizes alone, and each `t.numpy()` is a fresh ndarray."""
import numpy as np
import pytest

import tapegrad

# Each case: (build the tensor from ndarray `a`, or hand out an ndarray of tensor `t`), then
# reassign the ndarray's shape or dtype and read the tensor back.
_FROM_ARRAY = {
    "from_numpy": lambda lib, a: lib.from_numpy(a),
    "as_tensor": lambda lib, a: lib.as_tensor(a),
    "asarray": lambda lib, a: lib.asarray(a),
    "legacy_Tensor": lambda lib, a: lib.Tensor(a),
    "legacy_FloatTensor": lambda lib, a: lib.FloatTensor(a),
}
_TO_ARRAY = {
    "numpy": lambda t: t.numpy(),
    "numpy_force": lambda t: t.numpy(force=True),
    "np_asarray": lambda t: np.asarray(t),
    "data_numpy": lambda t: t.data.numpy(),
    "detach_numpy": lambda t: t.detach().numpy(),
}
_REASSIGN = {
    "shape": lambda a: setattr(a, "shape", (3, 2)),
    "dtype": lambda a: setattr(a, "dtype", np.int32),
}


def _read(t):
    return t.shape, str(t.dtype), t.tolist()


@pytest.mark.parametrize("make", sorted(_FROM_ARRAY))
@pytest.mark.parametrize("change", sorted(_REASSIGN))
def test_tensor_keeps_its_sizes_when_the_source_array_is_reshaped(torch, make, change):
    results = []
    for lib in (torch, tapegrad):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = _FROM_ARRAY[make](lib, a)
        _REASSIGN[change](a)
        results.append(_read(t))
    assert str(results[1]) == str(results[0])


@pytest.mark.parametrize("take", sorted(_TO_ARRAY))
@pytest.mark.parametrize("change", sorted(_REASSIGN))
def test_tensor_keeps_its_sizes_when_its_ndarray_is_reshaped(torch, take, change):
    results = []
    for lib in (torch, tapegrad):
        t = lib.arange(6, dtype=lib.float32).reshape(2, 3)
        _REASSIGN[change](_TO_ARRAY[take](t))
        results.append(_read(t))
    assert str(results[1]) == str(results[0])


def test_memory_is_still_shared_both_ways():
    a = np.arange(4.0)
    t = tapegrad.from_numpy(a)
    t.add_(1)
    a[0] = 9
    assert a.tolist() == [9.0, 2.0, 3.0, 4.0] and t.tolist() == a.tolist()
    u = t.numpy()
    assert u is not t.numpy() and np.shares_memory(u, a)
    u[1] = -1
    assert t[1].item() == -1


def test_empty_array_strides_still_come_from_numpy(torch):
    for make in ("from_numpy", "as_tensor", "legacy_Tensor"):
        got = _FROM_ARRAY[make](tapegrad, np.zeros((0, 3), dtype=np.float32)).stride()
        want = _FROM_ARRAY[make](torch, np.zeros((0, 3), dtype=np.float32)).stride()
        assert got == want, make


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_storage_array_is_a_fresh_object():
    s = tapegrad.arange(4.0).storage()
    arr = np.asarray(s)
    arr.shape = (2, 2)
    assert np.asarray(s).shape == (4,)


_BOOL_LOSS_CALLS = [
    "F.l1_loss(x, b)", "F.l1_loss(b, x)", "F.l1_loss(b, b)", "F.l1_loss(x, b, reduction='none')",
    "F.smooth_l1_loss(x, b, beta=0.0)", "nn.L1Loss()(x, b)",
    "F.binary_cross_entropy_with_logits(x, b)", "nn.BCEWithLogitsLoss(pos_weight=lib.ones(2))(x, b)",
    "F.binary_cross_entropy_with_logits(x, b, reduction='none')",
]


@pytest.mark.parametrize("call", _BOOL_LOSS_CALLS)
def test_losses_refuse_a_bool_operand_as_torch(torch, call):
    # l1_loss(x, mask) used to return a value where PyTorch refuses the bool subtraction
    messages = []
    for lib in (torch, tapegrad):
        F, nn = lib.nn.functional, lib.nn
        x = lib.tensor([[0.3, -1.2], [2.0, 0.1]])
        b = x > 0
        with pytest.raises(RuntimeError) as caught:
            eval(call)
        messages.append(str(caught.value))
    assert messages[1] == messages[0]


def test_target_size_warning_names_the_callers_line():
    x = tapegrad.zeros(2, 2)
    with pytest.warns(UserWarning, match="Using a target size") as caught:
        tapegrad.nn.functional.mse_loss(x, tapegrad.zeros(2))
    assert caught[0].filename == __file__
