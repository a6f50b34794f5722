"""torch.nn.attention.sdpa_kernel / SDPBackend and torch.backends.cuda's *_sdp flags: which
scaled_dot_product_attention backends may run (on the CPU: math or flash, else PyTorch's error)."""
import warnings

import pytest

import tapegrad as tg


def _scenario(L):
    from importlib import import_module
    attention = import_module(L.__name__ + ".nn.attention")
    B, cuda, F = attention.SDPBackend, L.backends.cuda, L.nn.functional
    q = L.ones(1, 2, 3, 4, dtype=L.float64)
    out = [repr(B.MATH), str(B.FLASH_ATTENTION), B.CUDNN_ATTENTION.value, list(B.__members__)]

    def attempt(fn):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - the exception is the compared value
            return type(e).__name__, str(e)

    def flags():
        return (cuda.math_sdp_enabled(), cuda.flash_sdp_enabled(),
                cuda.mem_efficient_sdp_enabled(), cuda.cudnn_sdp_enabled())

    for backends in ([B.EFFICIENT_ATTENTION], [B.FLASH_ATTENTION], B.CUDNN_ATTENTION, B.MATH,
                     [B.MATH, B.EFFICIENT_ATTENTION], []):
        with attention.sdpa_kernel(backends) as ctx:
            out.append((ctx, flags(), attempt(lambda: F.scaled_dot_product_attention(q, q, q)
                                              .sum().item())))
    out.append(flags())
    manager = attention.sdpa_kernel("math")          # checked on entering the block
    out.append(attempt(lambda: manager.__enter__()))
    mha = L.nn.MultiheadAttention(4, 2)
    x = L.ones(3, 1, 4)
    try:
        cuda.enable_math_sdp(False)
        cuda.enable_flash_sdp(False)
        out.append(flags())
        out.append(attempt(lambda: F.scaled_dot_product_attention(q, q, q)))
        out.append(tuple(mha(x, x, x)[0].shape))     # need_weights: no sdpa
        out.append(attempt(lambda: mha(x, x, x, need_weights=False)))
    finally:
        cuda.enable_math_sdp(True)
        cuda.enable_flash_sdp(True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cuda.sdp_kernel(enable_math=False, enable_flash=False):
            out.append(flags())
    out.append([w.category.__name__ for w in caught])
    out.append(flags())
    return out


def test_sdpa_backend_selection_matches_pytorch():
    torch = pytest.importorskip("torch")
    assert _scenario(tg) == _scenario(torch)


def test_flags_restored_after_an_error_in_the_block():
    from tapegrad.nn.attention import SDPBackend, sdpa_kernel
    with pytest.raises(ValueError):
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            raise ValueError
    assert tg.backends.cuda.math_sdp_enabled() and tg.backends.cuda.flash_sdp_enabled()
