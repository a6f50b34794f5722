"""tapegrad.backends.cuda: CUDA is not built in; its matmul flags exist and are settable."""


def is_built() -> bool:
    return False


class _MatmulFlags:
    """torch.backends.cuda.matmul: settable flags that have no effect without CUDA."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()
