"""What the proxy of sequence tutorials (b-etienne/Seq2seq-PyTorch, spro/char-rnn.pytorch,
jinglescode/time-series-forecasting-pytorch, bentrevett/pytorch-seq2seq,
wangboyu-langya/bilstm-sentiment-analysis-twitter) and probes of their idioms found:
pad_sequence promoted mixed dtypes where PyTorch keeps the first sequence's dtype (a silent
dtype and value difference), and the padded / packed batches showed other grad_fn names than
PyTorch's (CopySlices, PackPaddedSequenceBackward0), which a script printing them sees."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn.utils import rnn as tg_rnn


def _both(torch, build):
    """build(lib, rnn_module) under PyTorch and under tapegrad."""
    from torch.nn.utils import rnn as torch_rnn
    return build(torch, torch_rnn), build(tg, tg_rnn)


@pytest.mark.parametrize("first, second", [
    ([1, 2], [1.5]),                   # int first: the float is truncated into it
    ([1.5], [1, 2]),                   # float first: the ints are converted
    ([True], [3, 4]),                  # bool first: nonzero values become True
    ([1.0, 2.0], [7]),
])
def test_pad_sequence_keeps_the_first_sequences_dtype(torch, first, second):
    def build(lib, rnn):
        return rnn.pad_sequence([lib.tensor(first), lib.tensor(second)], padding_value=2.7)
    want, got = _both(torch, build)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_pad_sequence_mixed_float_widths_take_the_first(torch):
    def build(lib, rnn):
        return rnn.pad_sequence([lib.ones(2, dtype=lib.float32),
                                 lib.full((1,), 1.1, dtype=lib.float64)], batch_first=True)
    want, got = _both(torch, build)
    assert str(got.dtype) == str(want.dtype) == "torch.float32"
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("value", [-1, 256.0, float("nan")])
def test_pad_sequence_padding_value_that_does_not_fit_raises(torch, value):
    def build(lib, rnn):
        try:
            rnn.pad_sequence([lib.tensor([1, 2], dtype=lib.uint8), lib.tensor([3])],
                             padding_value=value)
        except RuntimeError as e:
            return str(e)
        return None
    want, got = _both(torch, build)
    assert want is not None and got == want


@pytest.mark.parametrize("value", [None, "a"])
def test_pad_sequence_padding_value_must_be_a_number(torch, value):
    from torch.nn.utils import rnn as torch_rnn
    with pytest.raises(TypeError) as want:
        torch_rnn.pad_sequence([torch.ones(2), torch.ones(1)], padding_value=value)
    with pytest.raises(TypeError) as got:
        tg_rnn.pad_sequence([tg.ones(2), tg.ones(1)], padding_value=value)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_values_grads_and_grad_fn(torch, batch_first, side):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, 3)) for n in (4, 2, 5)]
    weights = rng.standard_normal((5, 3, 3) if not batch_first else (3, 5, 3))

    def build(lib, rnn):
        seqs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = rnn.pad_sequence(seqs, batch_first=batch_first, padding_value=-0.5,
                               padding_side=side)
        (out * lib.tensor(weights)).sum().backward()
        return out, [s.grad.numpy() for s in seqs]
    (want, want_grads), (got, got_grads) = _both(torch, build)
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__ == "CopySlices"
    assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_pad_sequence_gradient_matches_finite_differences(gradcheck):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 2)), rng.standard_normal((1, 2))
    weights = tg.tensor(rng.standard_normal((3, 2, 2)))
    gradcheck(lambda x, y: tg_rnn.pad_sequence([x, y], padding_value=0.25) * weights, a, b)


@pytest.mark.parametrize("how", ["sorted", "unsorted_batch_first", "pack_sequence"])
def test_packed_data_grad_fn_is_pytorchs(torch, how):
    def build(lib, rnn):
        x = lib.ones(3, 2, 4, requires_grad=True)
        if how == "sorted":
            return rnn.pack_padded_sequence(x, [3, 2])
        if how == "unsorted_batch_first":
            return rnn.pack_padded_sequence(x, lib.tensor([1, 2, 1]), batch_first=True,
                                            enforce_sorted=False)
        return rnn.pack_sequence([x[0], x[1, :1], x[2, :2]], enforce_sorted=False)
    want, got = _both(torch, build)
    assert type(got.data.grad_fn).__name__ == type(want.data.grad_fn).__name__
    assert repr(got) == repr(want)


# -- scaled_dot_product_attention: the node PyTorch's kernel choice leaves -----------------------

@pytest.mark.parametrize("case", ["2d", "3d", "4d", "4d_causal", "4d_other_value_size",
                                  "4d_strided_query", "5d", "4d_bool_mask"])
def test_sdpa_grad_fn_follows_pytorchs_kernel_choice(torch, case):
    rng = np.random.default_rng(2)
    shape = {"2d": (3, 4), "3d": (2, 3, 4), "5d": (1, 2, 2, 3, 4)}.get(case, (2, 2, 3, 4))
    q, k = rng.standard_normal(shape), rng.standard_normal(shape)
    v = rng.standard_normal(shape[:-1] + (5,)) if case == "4d_other_value_size" else \
        rng.standard_normal(shape)
    weights = rng.standard_normal(shape[:-1] + v.shape[-1:])

    def build(lib, rnn):
        F = lib.nn.functional
        qt, kt, vt = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
        query = qt
        if case == "4d_strided_query":   # last dim not contiguous: PyTorch's math kernel
            query = qt.transpose(-1, -2).contiguous().transpose(-1, -2)
        kwargs = {"is_causal": True} if case == "4d_causal" else {}
        if case == "4d_bool_mask":
            kwargs = {"attn_mask": lib.tensor(np.tri(3, 3, dtype=bool))}
        out = F.scaled_dot_product_attention(query, kt, vt, **kwargs)
        (out * lib.tensor(weights)).sum().backward()
        return out, [t.grad.numpy() for t in (qt, kt, vt)]
    (want, want_grads), (got, got_grads) = _both(torch, build)
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
    assert got.grad_fn is got.grad_fn
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("ndim", [0, 1])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_padded_sequence_of_fewer_than_two_dims_raises_pytorchs_error(torch, ndim,
                                                                            batch_first,
                                                                            enforce_sorted):
    def build(lib, rnn):
        x = lib.tensor(1.0) if ndim == 0 else lib.arange(3.0)
        with pytest.raises(IndexError) as e:
            rnn.pack_padded_sequence(x, [1 if ndim == 0 else 3], batch_first=batch_first,
                                     enforce_sorted=enforce_sorted)
        return str(e.value)
    want, got = _both(torch, build)
    assert got == want


# -- F.pad's constant value: read as a double, checked as fill_ checks it -----------------------

@pytest.mark.parametrize("dtype, value", [
    ("uint8", -1), ("uint8", 256), ("uint8", 255.5), ("uint8", float("nan")),
    ("uint8", float("inf")), ("uint8", 2.7), ("uint8", True), ("uint8", 255),
    ("int64", -2 ** 64), ("int64", float("nan")), ("int64", 2 ** 53 + 1), ("int64", -2.7),
    ("float32", 1e40), ("float32", float("nan")), ("float32", -3), ("float16", 7e4),
    ("bool", 0.5), ("bool", 0), ("complex64", 2.5),
])
def test_pad_value_conversion_matches_pytorch(torch, dtype, value):
    """An out-of-range value raised numpy's OverflowError/ValueError, and 1e40 into float32 gave
    a silent inf (PyTorch: RuntimeError)."""
    def build(lib, rnn):
        x = lib.tensor([1, 2]).to(getattr(lib, dtype))
        try:
            out = lib.nn.functional.pad(x, (1, 0), value=value)
        except RuntimeError as e:
            return "RuntimeError", str(e)
        return str(out.dtype), repr(out.tolist())     # (repr: NaN equals itself)
    want, got = _both(torch, build)
    assert got == want


@pytest.mark.parametrize("value", [1 + 2j, "a", [1], "tensor1d"])
def test_pad_value_that_is_not_a_float_is_a_type_error(torch, value):
    def build(lib, rnn):
        v = lib.tensor([1.5]) if value == "tensor1d" else value
        with pytest.raises(TypeError) as e:
            lib.nn.functional.pad(lib.ones(2), (1, 0), value=v)
        return str(e.value)
    want, got = _both(torch, build)
    assert got == want
