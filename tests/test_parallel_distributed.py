"""nn.DataParallel / nn.parallel and torch.distributed on a CPU-only build: the names scripts
import exist; DataParallel runs the module in-process; before init_process_group anything
needing a process group raises PyTorch's error (the single-process gloo group itself is tested
in test_proxycf.py)."""
from __future__ import annotations

import pytest

import tapegrad as tg
from tapegrad import nn


def test_data_parallel_runs_the_module_and_prefixes_its_state():
    tg.manual_seed(0)
    inner = nn.Linear(3, 2)
    wrapped = nn.DataParallel(inner)
    x = tg.ones(4, 3)
    assert tg.equal(wrapped(x), inner(x)) and wrapped.module is inner
    assert list(wrapped.state_dict()) == ["module.weight", "module.bias"]
    assert wrapped.device_ids == [] and nn.parallel.DataParallel is nn.DataParallel
    assert repr(wrapped) == ("DataParallel(\n  (module): Linear(in_features=3, out_features=2, "
                             "bias=True)\n)")
    wrapped(x).sum().backward()
    assert inner.weight.grad.tolist() == [[4.0] * 3] * 2
    other = nn.DataParallel(nn.Linear(3, 2))
    other.load_state_dict(wrapped.state_dict())
    assert tg.equal(other.module.bias, inner.bias)


def _process_group_errors(lib):
    from importlib import import_module
    dist = import_module(f"{lib.__name__}.distributed")
    outcomes = []
    for call in (lambda: lib.nn.parallel.DistributedDataParallel(lib.nn.Linear(2, 2)),
                 dist.get_rank, dist.get_world_size, dist.destroy_process_group):
        with pytest.raises(Exception) as info:
            call()
        outcomes.append((type(info.value).__name__, str(info.value)))
    return dist.is_initialized(), outcomes


def test_distributed_before_init_process_group():
    from tapegrad.distributed import destroy_process_group, init_process_group  # noqa: F401
    assert tg.distributed.is_available() is True and tg.distributed.is_initialized() is False
    initialised, outcomes = _process_group_errors(tg)
    assert not initialised
    assert [kind for kind, _ in outcomes] == ["ValueError"] * 3 + ["AssertionError"]
    assert "Default process group has not been initialized" in outcomes[0][1]
    # PyTorch meets its peers first (here a one-process tcp:// rendezvous), then builds NCCL.
    with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
        tg.distributed.init_process_group(backend="nccl", init_method="tcp://127.0.0.1:29500",
                                          rank=0, world_size=1)


def test_process_group_errors_match_torch(torch):
    assert _process_group_errors(tg) == _process_group_errors(torch)
    m = tg.nn.DataParallel(tg.nn.Linear(2, 2))
    t = torch.nn.DataParallel(torch.nn.Linear(2, 2))
    assert repr(m) == repr(t) and list(m.state_dict()) == list(t.state_dict())
