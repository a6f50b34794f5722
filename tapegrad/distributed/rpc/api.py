"""torch.distributed.rpc.api: the RRef type (a remote reference), which no value in a tapegrad
program is."""
from __future__ import annotations as _annotations

__all__ = ["RRef"]


class RRef:
    """A remote reference; creating one needs an RPC agent, which this build has not."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Current RPC agent is not set! Did you initialize the RPC framework "
                           "(e.g. by calling `rpc.init_rpc`)?")
