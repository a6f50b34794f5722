"""Faults found by running held-out NLP scripts (a char-level LSTM language model, word2vec with
negative sampling, a small GPT with weight tying and scaled_dot_product_attention) under
tapegrad; each case replays the script's call in both libraries and compares with PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg


def _run(fn, lib):
    """('ok', array) or ('err', exception type name, first line of the message)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # (torch's one-time sparse-invariants notice)
            r = fn(lib)
    except Exception as e:     # noqa: BLE001  (the exception is what is compared)
        return ("err", type(e).__name__, str(e).split("\n")[0])
    return ("ok", r.detach().double().numpy())


def _same(torch, fn, atol=1e-5):
    mine, theirs = _run(fn, tg), _run(fn, torch)
    assert mine[0] == theirs[0], (mine, theirs)
    if mine[0] == "err":
        assert mine[1:] == theirs[1:]
    else:
        np.testing.assert_allclose(mine[1], theirs[1], atol=atol, rtol=1e-5)


_RNG = np.random.RandomState(0)
_Q, _K, _V = (_RNG.randn(2, 2, 4, 8).astype(np.float32) for _ in range(3))
_FLOAT_MASK = _RNG.randn(4, 4).astype(np.float32)
_BOOL_MASK = _RNG.rand(4, 4) > 0.3


def _sdpa(q=_Q, k=_K, v=_V, mask=_FLOAT_MASK, mask_grad=False, **kw):
    def call(T):
        m = T.from_numpy(np.array(mask))
        return T.nn.functional.scaled_dot_product_attention(
            T.from_numpy(q.copy()), T.from_numpy(k.copy()), T.from_numpy(v.copy()),
            attn_mask=m.requires_grad_() if mask_grad else m, is_causal=True, **kw)
    return call


# PyTorch's CPU flash kernel takes an explicit mask together with is_causal=True and applies
# both (a GPT with a padding mask, HF-style); only its math kernel refuses the pair.  tapegrad
# refused every such call.
CAUSAL_WITH_MASK_CASES = {
    "float_mask": _sdpa(),
    "bool_mask": _sdpa(mask=_BOOL_MASK),
    "padding_mask_4d": _sdpa(mask=np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool).reshape(2, 1, 1, 4)),
    "row_fully_masked": _sdpa(mask=np.arange(4)[None, :].repeat(4, 0) > 0),
    "float64": _sdpa(_Q.astype(np.float64), _K.astype(np.float64), _V.astype(np.float64),
                     _FLOAT_MASK.astype(np.float64)),
    "shorter_query": _sdpa(q=_Q[:, :, :2], mask=_FLOAT_MASK[:2]),
    "shorter_key": _sdpa(k=_K[:, :, :2], v=_V[:, :, :2], mask=_FLOAT_MASK[:, :2]),
    "gqa": _sdpa(q=_RNG.randn(2, 4, 4, 8).astype(np.float32), enable_gqa=True),
    "scale": _sdpa(scale=0.1),
    # the math kernel's cases still raise
    "three_dims": _sdpa(_Q[0], _K[0], _V[0]),
    "dropout": _sdpa(dropout_p=0.5),
    "mask_requires_grad": _sdpa(mask_grad=True),
    "value_head_size_differs": _sdpa(v=_RNG.randn(2, 2, 4, 6).astype(np.float32)),
    "batch_broadcast": _sdpa(q=_Q[:1]),
    "heads_differ_without_gqa": _sdpa(q=_RNG.randn(2, 4, 4, 8).astype(np.float32)),
}


@pytest.mark.parametrize("name", sorted(CAUSAL_WITH_MASK_CASES))
def test_sdpa_causal_with_explicit_mask(torch, name):
    _same(torch, CAUSAL_WITH_MASK_CASES[name])


def test_sdpa_causal_with_mask_gradients(torch):
    def grads(T):
        q = T.from_numpy(_Q.copy()).requires_grad_()
        k = T.from_numpy(_K.copy()).requires_grad_()
        out = T.nn.functional.scaled_dot_product_attention(
            q, k, T.from_numpy(_V.copy()), attn_mask=T.from_numpy(_FLOAT_MASK), is_causal=True)
        out.square().sum().backward()
        return T.cat([q.grad.flatten(), k.grad.flatten()])
    _same(torch, grads)


# A training loop that logs the gradient norm by hand (`p.grad.data.norm(2)`) over a word2vec
# model with nn.Embedding(sparse=True): the sparse gradient had no norm at all.
_IDX = np.array([[1, 2, 1, 4]])
_VALS = np.array([[1., -2], [3, 4], [-5, 0.5], [0, 2]], dtype=np.float32)


def _sparse_norm(*args, **kwargs):
    def call(T):
        s = T.sparse_coo_tensor(T.from_numpy(_IDX), T.from_numpy(_VALS), (6, 2))
        return s.norm(*args, **kwargs)
    return call


SPARSE_NORM_CASES = {
    "default": _sparse_norm(),
    "p2": _sparse_norm(2),
    "p1": _sparse_norm(1),
    "p3": _sparse_norm(3),
    "inf": _sparse_norm(float("inf")),
    "zero": _sparse_norm(0),
    "minus_one_reads_stored_zero": _sparse_norm(-1),
    "all_dims": _sparse_norm(2, dim=(1, 0)),
    "negative_dims": _sparse_norm(dim=[-1, 0]),
    "one_dim": _sparse_norm(dim=0),
    "repeated_dim": _sparse_norm(dim=(0, 0)),
    "dim_out_of_range": _sparse_norm(dim=5),
    "keepdim": _sparse_norm(keepdim=True),
    "dtype_none": _sparse_norm("fro", dtype=None),
}


@pytest.mark.parametrize("name", sorted(SPARSE_NORM_CASES))
def test_sparse_norm(torch, name):
    _same(torch, SPARSE_NORM_CASES[name])


@pytest.mark.parametrize("p", ["fro", 2])
def test_sparse_norm_refuses_dtype(torch, p):
    _same(torch, lambda T: T.sparse_coo_tensor(T.from_numpy(_IDX), T.from_numpy(_VALS), (6, 2))
          .norm(p, dtype=T.float64))


def test_sparse_embedding_grad_norm(torch):
    def grad_norm(T):
        emb = T.nn.Embedding(5, 3, sparse=True)
        with T.no_grad():
            emb.weight.copy_(T.from_numpy(np.arange(15, dtype=np.float32).reshape(5, 3) / 7))
        (emb(T.tensor([[1, 2, 1]])) ** 2).sum().backward()
        return T.stack([emb.weight.grad.data.norm(2), emb.weight.grad.norm(1)])
    _same(torch, grad_norm)


# Text-classification scripts build their bags from whatever integer tensor the tokens came in
# (bytes read as uint8, say) with int64 offsets: PyTorch promotes indices and offsets to one
# type before its Long/Int check, so those bags are taken (and float offsets are refused).
_TABLE = np.arange(12, dtype=np.float32).reshape(6, 2)


def _bag(index_dtype, offsets_dtype="int64", shape=(4,), offsets=(0, 2)):
    def call(T):
        index = T.tensor([1, 0, 5, 2], dtype=getattr(T, index_dtype)).reshape(shape)
        offs = None if offsets is None else T.tensor(offsets, dtype=getattr(T, offsets_dtype))
        return T.nn.functional.embedding_bag(index % 2 if index_dtype == "bool" else index,
                                             T.from_numpy(_TABLE), offs)
    return call


EMBEDDING_BAG_INDEX_DTYPE_CASES = {
    "uint8_with_long_offsets": _bag("uint8"),
    "int16_with_long_offsets": _bag("int16"),
    "int8_with_int32_offsets": _bag("int8", "int32"),
    "int32_with_int32_offsets": _bag("int32", "int32"),
    "long_with_float_offsets": _bag("int64", "float32"),
    "uint8_2d": _bag("uint8", shape=(2, 2), offsets=None),
    "float_2d": _bag("float32", shape=(2, 2), offsets=None),
    "float_with_long_offsets": _bag("float64"),
}


@pytest.mark.parametrize("name", sorted(EMBEDDING_BAG_INDEX_DTYPE_CASES))
def test_embedding_bag_index_dtypes(torch, name):
    _same(torch, EMBEDDING_BAG_INDEX_DTYPE_CASES[name])


@pytest.mark.parametrize("dtype", ["bool", "complex64", "uint8"])
def test_embedding_index_dtype_message(torch, dtype):
    _same(torch, lambda T: T.nn.functional.embedding(T.zeros(2, dtype=getattr(T, dtype)),
                                                     T.from_numpy(_TABLE)))


# A training script choosing `ptdtype = torch.float32` where bfloat16 is unsupported still wraps
# its step in torch.autocast('cpu', dtype=ptdtype): PyTorch warns and disables that autocast
# (only bfloat16 and float16 are CPU autocast dtypes); tapegrad raised NotImplementedError.
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("form", ["autocast", "amp_autocast", "cpu_amp_autocast"])
def test_cpu_autocast_with_unsupported_dtype_disables_itself(torch, dtype, form):
    def run(T):
        make = {"autocast": lambda d: T.autocast("cpu", dtype=d),
                "amp_autocast": lambda d: T.amp.autocast(device_type="cpu", dtype=d),
                "cpu_amp_autocast": lambda d: T.cpu.amp.autocast(dtype=d)}[form]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with make(getattr(T, dtype)):
                product = T.ones(2, 2) @ T.ones(2, 2)
                enabled = T.is_autocast_enabled()
        messages = [str(w.message) for w in caught if "CPU autocast" in str(w.message)]
        return str(product.dtype), enabled, messages
    assert run(tg) == run(torch)
