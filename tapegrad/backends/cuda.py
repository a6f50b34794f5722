"""tapegrad.backends.cuda: CUDA is not built in; its matmul flags exist and are settable."""


def is_built() -> bool:
    return False


class _MatmulFlags:
    """torch.backends.cuda.matmul: settable flags that have no effect without CUDA."""

    def __init__(self) -> None:
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    # PyTorch keeps one setting behind both spellings: allow_tf32 reads "not 'highest'" from
    # torch.get_float32_matmul_precision(), and setting it sets that precision ('high' / 'highest')
    @property
    def allow_tf32(self) -> bool:
        from .._settings import get_float32_matmul_precision
        return get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value) -> None:
        from .._settings import set_float32_matmul_precision
        set_float32_matmul_precision("high" if value else "highest")


matmul = _MatmulFlags()


# scaled_dot_product_attention's backend flags (one record: tapegrad.nn.attention's).
def _sdp_flag(backend_name: str, doc: str):
    def enable(enabled: bool) -> None:
        from .. import _core
        from ..nn import attention
        # (not sdpa_kernel's with block, which restores the flags before the call ends)
        _core._capture_setting(f"an attention backend flag ({backend_name})")
        attention._set_enabled(attention.SDPBackend[backend_name], enabled)

    def is_enabled() -> bool:
        from ..nn import attention
        return attention._is_enabled(attention.SDPBackend[backend_name])

    enable.__doc__ = f"Enables or disables {doc} scaled dot product attention."
    is_enabled.__doc__ = f"Whether {doc} scaled dot product attention is enabled."
    return enable, is_enabled


enable_math_sdp, math_sdp_enabled = _sdp_flag("MATH", "math")
enable_flash_sdp, flash_sdp_enabled = _sdp_flag("FLASH_ATTENTION", "flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _sdp_flag("EFFICIENT_ATTENTION",
                                                                "memory efficient")
enable_cudnn_sdp, cudnn_sdp_enabled = _sdp_flag("CUDNN_ATTENTION", "cuDNN")


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """Deprecated context manager (PyTorch warns): the backends whose flag is True enabled
    inside the block."""
    import warnings

    from ..nn import attention
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
                  "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for "
                  "the new context manager, with updated signature.", FutureWarning,
                  stacklevel=2)
    B = attention.SDPBackend
    on = {b for b, flag in ((B.FLASH_ATTENTION, enable_flash), (B.MATH, enable_math),
                            (B.EFFICIENT_ATTENTION, enable_mem_efficient),
                            (B.CUDNN_ATTENTION, enable_cudnn)) if flag}
    return attention._flags(on)
