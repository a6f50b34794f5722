"""Regression tests for gaps found running signal/sequence, capsule, point-cloud and Bayesian
scripts (session 30, proxyaq)."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def test_sparse_module_exposes_the_package_as_torch():
    # Capsule-network scripts build one-hot targets through torch.sparse's own `import torch`.
    labels_t = torch.tensor([2, 0, 3])
    labels_g = tapegrad.tensor([2, 0, 3])
    want = torch.sparse.torch.eye(4).index_select(dim=0, index=labels_t)
    got = tapegrad.sparse.torch.eye(4).index_select(dim=0, index=labels_g)
    assert tapegrad.sparse.torch is tapegrad
    assert got.dtype == tapegrad.float32 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("shape, pad_mode, error", [
    ((1, 1, 2, 40), "reflect", (NotImplementedError, "Padding size 2 is not supported for 4D")),
    ((1, 1, 2, 40), "constant", (RuntimeError, r"stft\(torch.FloatTensor\[1, 1, 2, 56\]")),
    ((), "reflect", (RuntimeError, "Padding size should be less than")),
    ((), "constant", (RuntimeError, r"stft\(torch.FloatTensor\[1, 1, 17\]")),
])
def test_stft_centers_every_input_before_checking_its_rank(shape, pad_mode, error):
    # torch.functional.stft pads any input (a >3D one as a whole), so the error a bad rank
    # gets is F.pad's, or the refusal naming the padded shape.
    for mod in (torch, tapegrad):
        x = mod.ones(*shape) if shape else mod.tensor(1.0)
        with pytest.raises(error[0], match=error[1]):
            mod.stft(x, 16, 4, window=mod.hann_window(16), pad_mode=pad_mode, return_complex=True)


def test_stft_center_padding_of_a_3d_signal_is_unchanged():
    data = np.random.RandomState(1).randn(2, 1, 50)
    want = torch.stft(torch.tensor(data).flatten(0, 1), 16, 4, window=torch.hann_window(16, dtype=torch.float64),
                      return_complex=True)
    got = tapegrad.stft(tapegrad.tensor(data).flatten(0, 1), 16, 4,
                        window=tapegrad.hann_window(16, dtype=tapegrad.float64), return_complex=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("input_lengths, target_lengths, phrase", [
    ([12, -1, 9], [4, 2, 4], "Expected input_lengths to have value at least 0, but got value -1"),
    ([12, 10, 9], [4, -2, 4], "Expected target_lengths to have value at least 0, but got value -2"),
    ([13, -1, 9], [4, 2, 4], "Expected input_lengths to have value at most 12, but got value 13"),
    ([-1, 13, 9], [4, 2, 4], "Expected input_lengths to have value at least 0, but got value -1"),
])
def test_ctc_loss_refuses_negative_lengths(input_lengths, target_lengths, phrase):
    # A negative length used to be taken as an empty (target) or all-padding (input) sequence:
    # a finite or inf loss where PyTorch refuses the call.
    targets = [[1, 2, 2, 3], [4, 5, 1, 1], [3, 3, 3, 1]]
    for mod in (torch, tapegrad):
        log_probs = mod.zeros(12, 3, 6).log_softmax(2)
        with pytest.raises(RuntimeError, match=phrase):
            mod.nn.functional.ctc_loss(log_probs, mod.tensor(targets), mod.tensor(input_lengths),
                                       mod.tensor(target_lengths), reduction="none")


def test_ctc_loss_refuses_negative_length_of_concatenated_targets():
    for mod in (torch, tapegrad):
        log_probs = mod.zeros(12, 2, 6).log_softmax(2)
        with pytest.raises(RuntimeError, match="target_lengths to have value at least 0, but got "
                                               "value -1"):
            mod.nn.functional.ctc_loss(log_probs, mod.tensor([1, 2, 3, 4]), mod.tensor([12, 10]),
                                       mod.tensor([5, -1]))


@pytest.mark.parametrize("label", [6, 11, -1])
def test_ctc_loss_names_a_label_outside_the_classes(label):
    # (PyTorch's CPU kernel reads such a label out of bounds: no reference value exists)
    log_probs = tapegrad.zeros(12, 1, 6).log_softmax(2)
    with pytest.raises(IndexError, match=f"target label {label} is out of bounds for log_probs "
                                         "with 6 classes"):
        tapegrad.nn.functional.ctc_loss(log_probs, tapegrad.tensor([[1, label]]),
                                        tapegrad.tensor([12]), tapegrad.tensor([2]))


def test_max_unpool1d_invalid_index_names_the_2d_volume():
    # PyTorch unpools 1-d through its 2-d kernel: the refused index names a length x 1 volume.
    for mod in (torch, tapegrad):
        with pytest.raises(RuntimeError, match=r"invalid max index: 9 \(output volumes are of "
                                               r"size 4x1\)"):
            mod.nn.functional.max_unpool1d(mod.ones(1, 1, 2), mod.tensor([[[9, 1]]]), 2)
