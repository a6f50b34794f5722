"""Regression tests from the audio / autoregressive-generative proxy task (session 31)."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _istft_warnings(lib, clear):
    clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="complex-valued input"):
            lib.istft(lib.zeros(17, 3, 2), 32)
    return [str(w.message) for w in caught if "window was not provided" in str(w.message)]


def test_istft_missing_window_warns_before_real_input_error():
    # PyTorch warns about the absent window first, then refuses the real (view_as_real) input
    from tapegrad import _core
    expected = _istft_warnings(torch, lambda: None)
    got = _istft_warnings(tapegrad, _core.WARNED_ONCE.clear)
    assert len(got) == 1
    assert got[0].startswith("A window was not provided. A rectangular window will be applied.Please")
    # torch's TORCH_WARN_ONCE may already have fired in this process; when it did not, both agree
    if expected:
        assert expected[0] == got[0]


def test_istft_missing_window_still_inverts():
    rs = np.random.RandomState(3)
    x = rs.randn(2, 300)
    ref = torch.istft(torch.stft(torch.from_numpy(x), 64, window=torch.ones(64), return_complex=True),
                      64, length=300)
    tx = tapegrad.from_numpy(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = tapegrad.istft(tapegrad.stft(tx, 64, window=tapegrad.ones(64), return_complex=True),
                             64, length=300)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-10, atol=1e-10)


def _ctc_inputs(lib):
    rs = np.random.RandomState(8)
    lp = lib.from_numpy(rs.randn(10, 2, 5)).log_softmax(-1) if lib is tapegrad else \
        torch.from_numpy(rs.randn(10, 2, 5)).log_softmax(-1)
    return lp, lib.tensor([[1, 2], [3, 3]])


@pytest.mark.parametrize("input_lengths, target_lengths, name", [
    ([10.5, 10.0], [2, 2], "input_lengths"),      # SILENT before: truncated to 10
    ([10.0, 10.0], [2, 2], "input_lengths"),
    ([10, 10], [2.0, 2.0], "target_lengths"),
    ([True, True], [2, 2], "input_lengths"),
])
def test_ctc_loss_float_length_tensors_are_refused(input_lengths, target_lengths, name):
    for lib in (torch, tapegrad):
        lp, tgt = _ctc_inputs(lib)
        with pytest.raises(RuntimeError, match=f"{name} must be integral"):
            lib.nn.functional.ctc_loss(lp, tgt, lib.tensor(input_lengths),
                                       lib.tensor(target_lengths))


def test_ctc_loss_float_lengths_win_over_log_probs_dtype():
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="input_lengths must be integral"):
            lib.nn.functional.ctc_loss(lib.zeros(10, 2, 5, dtype=lib.long),
                                       lib.tensor([[1, 2], [3, 3]]), lib.tensor([10.0, 10.0]),
                                       lib.tensor([2, 2]))


@pytest.mark.parametrize("input_lengths, target_lengths", [
    ("tensor", (2, 2)), ((10, 10), "tensor"), ([10.0, 10.0], [2, 2]), ("ab", (2, 2)),
])
def test_ctc_loss_lengths_of_mixed_or_float_kinds_are_a_type_error(input_lengths, target_lengths):
    for lib in (torch, tapegrad):
        lp, tgt = _ctc_inputs(lib)
        a = lib.tensor([10, 10]) if input_lengths == "tensor" else input_lengths
        b = lib.tensor([2, 2]) if target_lengths == "tensor" else target_lengths
        with pytest.raises(TypeError, match=r"ctc_loss\(\) received an invalid combination of "
                                            r"arguments - got \(Tensor, Tensor, "):
            lib.nn.functional.ctc_loss(lp, tgt, a, b)


def test_ctc_loss_float_after_int_in_a_list_is_an_unpack_error():
    for lib in (torch, tapegrad):
        lp, tgt = _ctc_inputs(lib)
        with pytest.raises(TypeError, match="argument 'input_lengths' failed to unpack the object "
                                            "at pos 2 with error \"type must be tuple of ints,but "
                                            "got float\""):
            lib.nn.functional.ctc_loss(lp, tgt, [10, 10.5], [2, 2])


def test_ctc_loss_integral_lengths_of_any_kind_agree():
    cases = [(lambda lib: lib.tensor([10, 7], dtype=lib.uint8), lambda lib: lib.tensor([2, 1], dtype=lib.int16)),
             (lambda lib: [10, 7], lambda lib: (2, 1)),
             (lambda lib: [lib.tensor(10), 7], lambda lib: [np.int64(2), 1])]
    for make_in, make_tgt in cases:
        out = {}
        for lib in (torch, tapegrad):
            lp, tgt = _ctc_inputs(lib)
            lp = lp.detach().requires_grad_()
            loss = lib.nn.functional.ctc_loss(lp, tgt, make_in(lib), make_tgt(lib), reduction="sum")
            loss.backward()
            out[lib] = (loss.item(), lp.grad.numpy())
        np.testing.assert_allclose(out[tapegrad][0], out[torch][0], rtol=1e-10)
        np.testing.assert_allclose(out[tapegrad][1], out[torch][1], rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int16", "bool", "float32"])
def test_multi_margin_loss_refuses_a_non_long_target(dtype):
    # SILENT before for the integer dtypes: an int32 target was computed with
    for lib in (torch, tapegrad):
        target = lib.tensor([0, 1]).to(getattr(lib, dtype))
        with pytest.raises(RuntimeError, match="expected scalar type Long but found"):
            lib.nn.functional.multi_margin_loss(lib.zeros(2, 3), target)


def test_multi_margin_loss_target_checks_keep_their_order():
    for lib in (torch, tapegrad):
        # the shape check, then the half refusal, come before the dtype check
        with pytest.raises(RuntimeError, match="target tensor should be 1-D"):
            lib.nn.functional.multi_margin_loss(lib.zeros(2, 3), lib.tensor([0, 1, 1], dtype=lib.int32))
        with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
            lib.nn.functional.multi_margin_loss(lib.zeros(2, 3, dtype=lib.half),
                                                lib.tensor([0, 1], dtype=lib.int32))
        with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
            lib.nn.functional.multi_margin_loss(lib.zeros(2, 3), lib.tensor([0, 5], dtype=lib.int32))
