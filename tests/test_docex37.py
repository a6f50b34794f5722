"""Differences found by running PyTorch's docstring examples under tapegrad
(tools/docstring_examples.py), each checked against torch."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as tF
from tapegrad.nn.utils.rnn import pad_sequence, unpad_sequence


def _torch():
    return pytest.importorskip("torch")


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__, str(info.value)


# ------------------------------------------------------------------- nn.utils.rnn.unpad_sequence
def _unpad_trace(m, rnn):
    """What a caller sees: its padded tensor afterwards, the pieces, the gradient through them."""
    lengths = m.tensor([3, 1, 2])
    x = rnn.pad_sequence([m.arange(6., dtype=m.float64).reshape(3, 2),
                          m.ones(1, 2, dtype=m.float64),
                          m.full((2, 2), 2., dtype=m.float64)]).requires_grad_()
    padded = x * 1
    pieces = rnn.unpad_sequence(padded, lengths)
    shape_after = tuple(padded.shape)          # PyTorch transposed the caller's tensor in place
    sum((p * (i + 1)).sum() for i, p in enumerate(pieces)).backward()
    pieces[0].add_(100.)                      # a copy: the padded batch is left alone
    return shape_after, [p.tolist() for p in pieces], x.grad.tolist(), padded.sum().item()


def test_unpad_sequence_transposes_the_callers_batch_in_place_as_torch():
    torch = _torch()
    import torch.nn.utils.rnn as trnn
    import tapegrad.nn.utils.rnn as grnn
    assert _unpad_trace(tg, grnn) == _unpad_trace(torch, trnn)


def test_unpad_sequence_refuses_a_leaf_that_requires_grad_and_keeps_batch_first():
    padded = pad_sequence([tg.ones(2, 3), tg.ones(1, 3)]).requires_grad_()
    kind, text = _raised(lambda: unpad_sequence(padded, tg.tensor([2, 1])))
    assert kind == "RuntimeError" and "leaf Variable that requires grad" in text
    batch = pad_sequence([tg.ones(2, 3), tg.ones(1, 3)], batch_first=True)
    pieces = unpad_sequence(batch, tg.tensor([2, 1]), batch_first=True)
    assert tuple(batch.shape) == (2, 2, 3) and [tuple(p.shape) for p in pieces] == [(2, 3), (1, 3)]


# ------------------------------------------------------------------------------- F.bilinear
@pytest.mark.parametrize("with_bias", [True, False])
def test_bilinear_grad_fn_values_and_gradients_match_torch(with_bias):
    torch = _torch()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in [(2, 3, 4), (2, 3, 5), (6, 4, 5), (6,)]]

    def run(m, F):
        x1, x2, w, b = [m.tensor(a, requires_grad=True) for a in arrays]
        out = F.bilinear(x1, x2, w, b if with_bias else None)
        (out * out).sum().backward()
        grads = [t.grad.numpy() for t in (x1, x2, w)] + ([b.grad.numpy()] if with_bias else [])
        return type(out.grad_fn).__name__, out.detach().numpy(), grads

    name, values, grads = run(tg, tF)
    t_name, t_values, t_grads = run(torch, torch.nn.functional)
    assert name == t_name == ("AddBackward0" if with_bias else "ViewBackward0")
    np.testing.assert_allclose(values, t_values, rtol=1e-12)
    for g, t in zip(grads, t_grads):
        np.testing.assert_allclose(g, t, rtol=1e-10)


def test_bilinear_gradcheck_float64():
    rng = np.random.default_rng(1)
    inputs = [tg.tensor(rng.standard_normal(s), requires_grad=True)
              for s in [(3, 2), (3, 4), (5, 2, 4), (5,)]]
    assert tg.autograd.gradcheck(tF.bilinear, inputs)


# --------------------------------------------------------------- to_sparse(layout=, blocksize=)
def test_to_sparse_compressed_layout_with_blocksize_raises_as_torch():
    torch = _torch()
    cases = [(lambda m: m.tensor([[1, 0], [0, 0], [2, 3]]), name)
             for name in ("sparse_csr", "sparse_csc")]
    for make, layout in cases:
        for coo in (False, True):
            def attempt(m):
                x = make(m)
                x = x.to_sparse() if coo else x
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return _raised(lambda: x.to_sparse(layout=getattr(m, layout), blocksize=(3, 1)))
            assert attempt(tg) == attempt(torch)
    # without a blocksize the conversion still works
    csr = tg.tensor([[1, 0], [0, 0], [2, 3]]).to_sparse(layout=tg.sparse_csr)
    assert csr.col_indices().tolist() == [0, 0, 1]


# -------------------------------------------------------------------- native_channel_shuffle
def test_native_channel_shuffle_values_errors_and_no_derivative_as_torch():
    torch = _torch()

    def run(m):
        x = m.arange(16., dtype=m.float64).reshape(1, 4, 2, 2).requires_grad_()
        out = m.nn.functional.native_channel_shuffle(x, 2)
        same = m.native_channel_shuffle(x, 2).tolist() == out.tolist()
        return (out.tolist(), out.requires_grad, same,
                _raised(lambda: out.sum().backward()),
                _raised(lambda: m.nn.functional.native_channel_shuffle(m.ones(2, 2), 2)),
                _raised(lambda: m.nn.functional.native_channel_shuffle(m.ones(1, 3, 2), 2)),
                _raised(lambda: m.nn.functional.native_channel_shuffle(m.ones(1, 4, 2), 0)))

    assert run(tg) == run(torch)


# ------------------------------------------------------------ autograd.enforce_grad_layout_policy
def test_enforce_grad_layout_policy_switches_per_thread_and_restores():
    from tapegrad.autograd.grad_mode import is_grad_layout_enforcement_enabled as enabled
    assert enabled()
    p = tg.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
    with tg.autograd.enforce_grad_layout_policy(False):
        assert not enabled()
        seen = []
        worker = threading.Thread(target=lambda: seen.append(enabled()))
        worker.start()
        worker.join()
        assert seen == [True]                 # thread-local, as PyTorch's
        (p * 2).sum().backward()
    assert enabled()
    assert p.grad.tolist() == tg.full((4, 2, 3), 2.).tolist()

    @tg.autograd.enforce_grad_layout_policy(False)
    def inside():
        return enabled()

    assert enabled() and inside() is False and enabled()
    assert "enforce_grad_layout_policy" in tg.autograd.__all__


# ------------------------------------------------------------------ quantized_max_pool1d / 2d
@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
def test_quantized_max_pool_matches_torch(dtype):
    torch = _torch()
    values = np.array([[[1., 2., -3.], [0., 5., 4.]], [[7., 8., 9.], [1., 1., 1.]]], np.float32)
    zero_point = 3 if dtype == "quint8" else -2

    def run(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            qx = m.quantize_per_tensor(m.tensor(values), 0.5, zero_point, getattr(m, dtype))
        outs = [m.quantized_max_pool1d(qx, [2]), m.quantized_max_pool1d(qx, [2], [1], [1]),
                m.quantized_max_pool2d(qx.reshape(1, 2, 2, 3), [2, 2], [], [1, 0], [1, 1], True),
                m.quantized_max_pool2d(qx.reshape(2, 2, 3), 2, 1)]
        errors = [_raised(lambda: m.quantized_max_pool2d(m.ones(1, 2, 2), [2, 2]))[0],
                  _raised(lambda: m.quantized_max_pool1d(qx, [2], [1], [3]))]
        kept = [(o.int_repr().tolist(), o.q_scale(), o.q_zero_point(), str(o.dtype)) for o in outs]
        return kept, errors

    assert run(tg) == run(torch)


# ----------------------------------------------------------------------------- func.rearrange
_REARRANGE_CASES = [
    ("b h w c -> b c h w", {}), ("b h w c -> (b h) w c", {}), ("b h w c -> h (b w) c", {}),
    ("b h w c -> b (c h w)", {}), ("b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2}),
    ("b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2}), ("b ... c -> c ... b", {}),
    ("b h w c -> b 1 (h w) () c", {}),
]


@pytest.mark.parametrize("pattern,lengths", _REARRANGE_CASES)
def test_rearrange_values_match_torch(pattern, lengths):
    torch = _torch()
    values = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)
    ours = tg.func.rearrange(tg.tensor(values), pattern, **lengths)
    theirs = torch.func.rearrange(torch.tensor(values), pattern, **lengths)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_rearrange_list_errors_and_gradient():
    torch = _torch()

    def errors(m):
        x = m.ones(2, 3, 4)
        out = []
        for pattern, lengths in [("a b -> a b", {}), ("a b c -> a b", {}),
                                 ("a b c -> a b c", {"e": 2}), ("a b (c d) -> a b c d", {"d": 3}),
                                 ("a a c -> a c", {}), ("a b c -> a b c (", {}),
                                 ("a b (c d) -> a b c d", {})]:
            out.append(_raised(lambda: m.func.rearrange(x, pattern, **lengths))[0])
        stacked = m.func.rearrange([x, 2 * x], "n a b c -> a (n b) c")
        return out, tuple(stacked.shape), stacked.sum().item()

    assert errors(tg) == errors(torch)
    x = tg.tensor(np.random.default_rng(2).standard_normal((2, 6)), requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: tg.func.rearrange(t, "a (b c) -> c (a b)", c=3), (x,))
    assert "rearrange" in tg.func.__all__
