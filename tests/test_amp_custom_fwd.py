"""torch.amp.custom_fwd / custom_bwd (and the deprecated torch.cuda.amp spellings) on custom
Functions, as PyTorch's CPU build runs them: outside an enabled autocast they call through,
recording the autocast state on ctx for the backward."""
import warnings

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _story(lib):
    log = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class Doubled(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cuda", cast_inputs=lib.float32)
            def forward(ctx, x):
                return x * 2

            @staticmethod
            @lib.amp.custom_bwd(device_type="cuda")
            def backward(ctx, g):
                log.append((ctx._fwd_used_autocast, str(ctx._dtype)))
                return g * 2

        class Tripled(lib.autograd.Function):
            @staticmethod
            @lib.cuda.amp.custom_fwd
            def forward(ctx, x):
                return x * 3

            @staticmethod
            @lib.cuda.amp.custom_bwd
            def backward(ctx, g):
                return g * 3

        class OnCpu(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu")
            def forward(ctx, x):
                return x * 4

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                log.append(str(ctx._dtype))
                return g * 4
        x = lib.ones(2, dtype=lib.float64, requires_grad=True)
        for fn in (Doubled, Tripled, OnCpu):
            y = fn.apply(x)
            y.sum().backward()
            log.append((str(y.dtype), x.grad.tolist(), fn.forward.__name__))
        for bad in (lambda: lib.amp.custom_fwd(lambda c, v: v), lambda: lib.amp.custom_fwd(
                device_type=1), lambda: lib.amp.custom_bwd(device_type=None)):
            with pytest.raises((TypeError, ValueError)) as error:
                bad()
            log.append((type(error.value).__name__, str(error.value)))
    log.append([(w.category.__name__, str(w.message)) for w in caught])
    return log


def test_custom_fwd_and_bwd_as_torch():
    assert _story(tg) == _story(torch)
