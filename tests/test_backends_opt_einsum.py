"""torch.backends.opt_einsum: availability, the flags and their errors as PyTorch's (both read
the same environment: opt_einsum importable or not)."""
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _session(backends):
    o = backends.opt_einsum
    out = [(o.enabled, o.strategy, o.is_available(), o.get_opt_einsum() is None)]
    for flag in (True, False):
        try:
            out.append(o.set_flags(flag))
        except ValueError as e:
            out.append(("ValueError", str(e)))
    with o.flags(enabled=False):
        out.append(o.enabled)
    out.append((o.enabled, o.strategy))
    return out


def test_flags_as_pytorch():
    assert _session(tapegrad.backends) == _session(torch.backends)
