"""Gaps found running public generative / meta-learning scripts (diffusion, VAEs, VQ-VAEs, flows,
EBMs, SimCLR, MAML, distillation, neural ODEs) under tapegrad; each test states its case."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


# ---- torch.distributed names used at import time (rosinality/vq-vae-2-pytorch) -----------------

def test_distributed_reduce_op_and_backend_names_exist_as_in_torch():
    import torch.distributed as tdist
    import tapegrad.distributed as dist

    # `def all_reduce(tensor, op=dist.ReduceOp.SUM)` evaluates the name when the script is imported
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        ours, theirs = getattr(dist.ReduceOp, name), getattr(tdist.ReduceOp, name)
        assert (str(ours), repr(ours), int(ours)) == (str(theirs), repr(theirs), int(theirs))
    assert dist.ReduceOp.SUM is dist.ReduceOp.RedOpType.SUM and dist.ReduceOp.SUM != dist.ReduceOp.MAX
    assert {dist.ReduceOp.SUM: 1}[dist.ReduceOp.SUM] == 1
    for name in ("GLOO", "NCCL", "MPI", "UCC", "UNDEFINED"):
        assert getattr(dist.Backend, name) == getattr(tdist.Backend, name)
    assert dist.Backend("GLOO") == tdist.Backend("GLOO") == "gloo"
    assert dist.group.WORLD is None and dist.GroupMember.WORLD is tdist.GroupMember.WORLD is None
    assert dist.GroupMember.NON_GROUP_MEMBER == tdist.GroupMember.NON_GROUP_MEMBER


@pytest.mark.parametrize("name, args", [
    ("all_reduce", lambda lib: (lib.ones(2),)),
    ("all_gather", lambda lib: ([lib.zeros(2)], lib.ones(2))),
    ("broadcast", lambda lib: (lib.ones(2), 0)),
    ("reduce", lambda lib: (lib.ones(2), 0)),
    ("all_gather_object", lambda lib: ([None], 1)),
    ("get_backend", lambda lib: ()),
    ("new_group", lambda lib: ()),
    ("send", lambda lib: (lib.ones(2), 1)),
])
def test_collectives_without_a_process_group_raise_value_error_as_torch(name, args):
    import torch.distributed as tdist
    import tapegrad.distributed as dist
    with pytest.raises(ValueError) as theirs:
        getattr(tdist, name)(*args(torch))
    with pytest.raises(ValueError, match="Default process group has not been initialized") as ours:
        getattr(dist, name)(*args(tg))
    assert str(ours.value) == str(theirs.value)


# ---- autograd.Function gradients for inputs that do not require grad (msurtsukov/neural-ode) ----

def _adjoint_like(lib, t_grad):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, t):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            # the time grid t never requires grad; its "gradient" has the batch shape
            return g * 3, t_grad(lib)

    x = lib.tensor([1.0, -2.0], requires_grad=True)
    t = lib.tensor([0.0, 1.0])
    (Scale.apply(x, t) ** 2).sum().backward()
    return x.grad.tolist()


@pytest.mark.parametrize("t_grad", [
    lambda lib: lib.ones(2, 4, 1),                      # not broadcastable to t's shape [2]
    lambda lib: lib.ones(5),
    lambda lib: lib.ones(2, dtype=lib.complex64),
])
def test_function_gradient_for_an_input_without_grad_is_dropped_unchecked(t_grad):
    assert _adjoint_like(tg, t_grad) == _adjoint_like(torch, t_grad) == [18.0, -36.0]


def test_function_gradient_checks_still_apply_to_inputs_that_require_grad():
    class Bad(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x, t):
            return x * t

        @staticmethod
        def backward(ctx, g):
            return (tg.ones(5), None) if Bad.bad_shape else (g, "not a tensor")

    x = tg.ones(2, requires_grad=True)
    Bad.bad_shape = True
    with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - got \[5\]"):
        Bad.apply(x, tg.ones(2)).sum().backward()
    Bad.bad_shape = False
    with pytest.raises(RuntimeError, match=r"expected Variable or None \(got str\)"):
        Bad.apply(x, tg.ones(2)).sum().backward()
