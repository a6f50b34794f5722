"""What the session-35 proxy of public bioinformatics/chemistry scripts (selene's DeepSEA/DanQ,
SMILES RNN generators, a peptide transformer, hand-written molecular GNNs, force fields from
autograd) found: masked transformer inference (float padding masks on PyTorch's fused paths),
pooling argument messages, and index_add/index_reduce of a 0-d source."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as tnn
import tapegrad.nn.functional as TF

torch = pytest.importorskip("torch")


def _same_weights(tmod, pmod, seed=0, scale=0.3):
    """Copy one set of uniform weights into a tapegrad module and its PyTorch twin."""
    rng = np.random.RandomState(seed)
    tparams = dict(tmod.named_parameters())
    with torch.no_grad():
        for name, p in pmod.named_parameters():
            w = rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)
            p.copy_(torch.from_numpy(w))
            with tg.no_grad():
                tparams[name].copy_(tg.from_numpy(w.copy()))


def _pair(make_t, make_p):
    tmod, pmod = make_t(), make_p()
    _same_weights(tmod, pmod)
    return tmod.eval(), pmod.eval()


def _run(tmod, pmod, x, **masks):
    """The module's output under no_grad on both sides (the masks given as numpy arrays)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            want = pmod(torch.from_numpy(x), **{k: torch.from_numpy(v) for k, v in masks.items()})
        with tg.no_grad():
            got = tmod(tg.from_numpy(x), **{k: tg.from_numpy(v) for k, v in masks.items()})
    if isinstance(want, tuple):
        want, got = want[0], got[0]
    return got.numpy(), want.numpy()


_X = np.random.RandomState(1).randn(2, 3, 8).astype(np.float32)
_PAD = np.array([[True, True, True], [False, True, False]])


# -- SILENT: MultiheadAttention's fast path is not taken with float masks --------------------------

@pytest.mark.parametrize("mask", ["key_padding_mask", "attn_mask"])
def test_mha_inference_with_float_mask_keeps_zero_attention_not_nan(mask):
    # PyTorch's MultiheadAttention runs its NaN-giving fused kernel only for bool masks: a float
    # mask (-inf where masked) takes the ordinary path, where a query with no key attends
    # nothing (the output is out_proj's bias), not NaN.
    tmod, pmod = _pair(lambda: tnn.MultiheadAttention(8, 2, batch_first=True),
                       lambda: torch.nn.MultiheadAttention(8, 2, batch_first=True))
    if mask == "key_padding_mask":
        m = np.where(_PAD, -np.inf, 0.0).astype(np.float32)
    else:
        m = np.where(np.array([[False, True, True], [True, True, True], [False] * 3]),
                     -np.inf, 0.0).astype(np.float32)
    got, want = _run(lambda x, **k: tmod(x, x, x, need_weights=False, **k),
                     lambda x, **k: pmod(x, x, x, need_weights=False, **k), _X, **{mask: m})
    assert not np.isnan(want).any()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_mha_inference_with_bool_mask_still_gives_nan_of_the_fused_kernel():
    tmod, pmod = _pair(lambda: tnn.MultiheadAttention(8, 2, batch_first=True),
                       lambda: torch.nn.MultiheadAttention(8, 2, batch_first=True))
    got, want = _run(lambda x, **k: tmod(x, x, x, need_weights=False, **k),
                     lambda x, **k: pmod(x, x, x, need_weights=False, **k), _X,
                     key_padding_mask=_PAD)
    assert np.isnan(want[0]).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- SILENT: TransformerEncoderLayer's fused inference reads float masks as boolean -------------

def _layer(lib):
    return lib.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)


@pytest.mark.parametrize("masks", [
    {"src_key_padding_mask": _PAD},                                          # bool: NaN rows
    {"src_key_padding_mask": np.where(_PAD, -1e9, 0.0).astype(np.float32)},  # NaN rows too
    {"src_key_padding_mask": np.array([[0, -0.5, 0], [0, 0, 0.3]], np.float32)},  # soft = hard
    {"src_mask": np.array([[False, True, True], [True, True, True], [False] * 3])},
])
def test_encoder_layer_inference_masks_as_pytorch_fused_kernel(masks):
    tmod, pmod = _pair(lambda: _layer(tg), lambda: _layer(torch))
    got, want = _run(tmod, pmod, _X, **masks)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_encoder_layer_training_mode_adds_a_soft_float_mask():
    tmod, pmod = _pair(lambda: _layer(tg), lambda: _layer(torch))
    tmod.train(), pmod.train()
    soft = np.array([[0, -0.5, 0], [0, 0, 0.3]], np.float32)
    got, want = _run(tmod, pmod, _X, src_key_padding_mask=soft)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- SILENT: TransformerEncoder's nested-tensor path with a float padding mask -------------------

@pytest.mark.parametrize("pad", [
    np.array([[0, 0, -1e9, -1e9], [0] * 4, [0, -1e9, -1e9, -1e9]], np.float32),
    np.array([[0, 0, -0.5, -0.5], [0] * 4, [0, 2.0, 2.0, 2.0]], np.float32),
])
def test_encoder_inference_zeros_and_drops_float_padded_positions(pad):
    # PyTorch packs the batch into a nested tensor: every nonzero entry of the padding mask
    # is a dropped position, zero in the output (a -1e9 mask as much as a bool one).
    def make(lib):
        return lib.nn.TransformerEncoder(_layer(lib), 2)
    tmod, pmod = _pair(lambda: make(tg), lambda: make(torch))
    x = np.random.RandomState(2).randn(3, 4, 8).astype(np.float32)
    got, want = _run(tmod, pmod, x, src_key_padding_mask=pad)
    assert (want[pad != 0] == 0).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- pooling argument messages ---------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, phrase", [
    (dict(kernel_size=3, padding=2), r"max_pool1d\(\) padding should be at most half of kernel "
                                     r"size, but got padding=2 and kernel_size=3"),
    (dict(kernel_size=3, padding=2, dilation=2), r"max_pool1d\(\) padding should be at most half"),
    (dict(kernel_size=3, padding=2, return_indices=True),
     r"pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
     r"dilation=1"),
])
def test_max_pool1d_padding_message(kwargs, phrase):
    x = torch.ones(1, 1, 8)
    with pytest.raises(RuntimeError, match=phrase):
        torch.nn.functional.max_pool1d(x, **kwargs)
    with pytest.raises(RuntimeError, match=phrase):
        TF.max_pool1d(tg.ones(1, 1, 8), **kwargs)


def test_max_pool2d_padding_message_names_the_failing_dim():
    phrase = r"but got pad=2, kernel_size=3 and dilation=1"
    with pytest.raises(RuntimeError, match=phrase):
        torch.nn.functional.max_pool2d(torch.ones(1, 1, 8, 8), (1, 3), padding=(0, 2))
    with pytest.raises(RuntimeError, match=phrase):
        TF.max_pool2d(tg.ones(1, 1, 8, 8), (1, 3), padding=(0, 2))


@pytest.mark.parametrize("size, phrase", [
    (None, r"must be tuple of ints, not NoneType"),
    (2.0, r"must be tuple of ints, not float"),
    (True, r"must be tuple of ints, not bool"),
    ((None,), r"must be tuple of ints, but found element of type NoneType at pos 0"),
    ((2.5,), r"must be tuple of ints, but found element of type float at pos 0"),
    ((2, None), r"failed to unpack the object at pos 2"),
])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_pool1d_output_size_must_be_ints(size, phrase, kind):
    # (the 2-d and 3-d pools take None for "keep this size"; the 1-d one's parser refuses it)
    name = f"adaptive_{kind}_pool1d"
    full = rf"{name}\(\): argument 'output_size'.*{phrase}"
    with pytest.raises(TypeError, match=full):
        getattr(torch.nn.functional, name)(torch.ones(1, 1, 8), size)
    with pytest.raises(TypeError, match=full):
        getattr(TF, name)(tg.ones(1, 1, 8), size)


def test_adaptive_pool1d_integer_like_sizes_still_pool():
    for size in (np.int64(2), (2,), [tg.tensor(2)]):
        assert tuple(TF.adaptive_max_pool1d(tg.ones(1, 1, 8), size).shape) == (1, 1, 2)


# -- index_add_ / index_reduce_ of a 0-d source ------------------------------------------------------

@pytest.mark.parametrize("n", [0, 2])
def test_index_add_zero_dim_source_with_other_than_one_index_is_index_error(n):
    phrase = "Dimension specified as 0 but tensor has no dimensions"
    with pytest.raises(IndexError, match=phrase):
        torch.zeros(3).index_add_(0, torch.arange(n), torch.tensor(5.0))
    with pytest.raises(IndexError, match=phrase):
        tg.zeros(3).index_add_(0, tg.arange(n), tg.tensor(5.0))


def test_index_add_zero_dim_self_and_source_one_index():
    want = torch.zeros(()).index_add_(0, torch.tensor([0]), torch.tensor(5.0))
    got = tg.zeros(()).index_add_(0, tg.tensor([0]), tg.tensor(5.0))
    assert got.item() == want.item() == 5.0


def test_index_reduce_warns_only_after_its_argument_checks():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Number of indices"):
            tg.zeros(3).index_reduce_(0, tg.tensor([0, 1]), tg.ones(1), "prod")
    assert not [w for w in seen if "index_reduce" in str(w.message)]
