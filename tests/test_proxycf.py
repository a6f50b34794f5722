"""Gaps found running self-supervised vision scripts (SimCLR, MoCo, BYOL, SimSiam, Barlow Twins,
VICReg, DINO, MAE, SwAV, kNN monitors) under tapegrad; each test states its case.

The one construct that differed: torch.distributed on a single CPU process.  People debug MoCo's
``concat_all_gather``, SimCLR's ``GatherLayer``, shuffle-BN's ``broadcast`` and DDP wrappers with
``init_process_group("gloo", rank=0, world_size=1)``; tapegrad said ``is_available()`` is False and
refused to create any group.  Each test runs the same session under both libraries (a file://
rendezvous, so no port is bound) and compares what they give."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import tapegrad as tg


@contextlib.contextmanager
def _world_of_one(lib, store):
    """A gloo group of one process (rendezvous in the file ``store``) for the block; always
    destroyed, so later tests see none."""
    lib.distributed.init_process_group("gloo", init_method=f"file://{store}",
                                       rank=0, world_size=1)
    try:
        yield lib.distributed
    finally:
        lib.distributed.destroy_process_group()


def _errors(calls):
    outcomes = []
    for call in calls:
        try:
            call()
            outcomes.append("ok")
        except Exception as e:      # noqa: BLE001 - the exception is what is compared
            outcomes.append((type(e).__name__, str(e)))
    return outcomes


def _collectives_session(lib, tmp_path):
    with _world_of_one(lib, tmp_path) as dist:
        out = [dist.is_available(), dist.is_gloo_available(), dist.is_initialized(), dist.get_rank(),
               dist.get_world_size(), str(dist.get_backend()), type(dist.group.WORLD).__name__,
               dist.GroupMember.WORLD is dist.group.WORLD]
        t = lib.tensor([1.0, -2.0, 3.0])
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT):
            assert dist.all_reduce(t, op=op) is None
        dist.reduce(t, dst=0)
        dist.broadcast(t, src=0)
        work = dist.all_reduce(t, async_op=True)
        out += [t.tolist(), work.wait(), work.is_completed(), type(work).__name__]
        # MoCo's concat_all_gather: ones_like placeholders overwritten by the gathered keys
        keys = lib.tensor([[0.5, 1.5], [2.5, -1.0]])
        gathered = [lib.ones_like(keys) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, keys)
        out.append(lib.cat(gathered).tolist())
        single = lib.zeros(2, 2)
        dist.all_gather_single(single, keys)
        out.append(single.tolist())
        into = [lib.zeros(2, 2)]
        dist.gather(keys, into, dst=0)
        scattered = lib.zeros(2, 2)
        dist.scatter(scattered, [keys * 2], src=0)
        reduced = lib.zeros(2, 2)
        dist.reduce_scatter(reduced, [keys + 1])
        out += [into[0].tolist(), scattered.tolist(), reduced.tolist()]
        objects = [None]
        dist.all_gather_object(objects, {"acc": 0.5})
        listed = ["config", 3]
        dist.broadcast_object_list(listed, src=0)
        dist.barrier()
        sub = dist.new_group([0])
        out += [objects, listed, dist.get_rank(sub), dist.get_world_size(sub)]
        out += _errors([
            lambda: dist.init_process_group("gloo", world_size=1, rank=0),
            lambda: dist.all_gather([lib.zeros(2), lib.zeros(2)], lib.ones(2)),
            lambda: dist.all_gather([lib.zeros(3)], lib.ones(2)),
            lambda: dist.all_gather([lib.zeros(2, 3)], lib.ones(2, 2)),
            lambda: dist.all_gather([lib.zeros(2, dtype=lib.long)], lib.ones(2)),
            lambda: dist.broadcast(lib.ones(2), src=1),
            lambda: dist.gather(lib.ones(2), dst=0),
            lambda: dist.all_gather_single(lib.zeros(4), lib.ones(2, 2)),
        ])
    out.append(dist.is_initialized())
    return out


def test_a_world_of_one_process_runs_every_collective_as_torch(torch, tmp_path):
    ours = _collectives_session(tg, tmp_path / "a")
    assert ours == _collectives_session(torch, tmp_path / "b")
    assert ours[:6] == [True, True, True, 0, 1, "gloo"] and ours[-1] is False


def test_collectives_stay_outside_autograd(torch, tmp_path):
    def run(lib, path):
        with _world_of_one(lib, path) as dist:
            x = lib.ones(2, requires_grad=True)
            y = x * 2
            out = [lib.zeros(2)]
            dist.all_gather(out, y)
            dist.all_reduce(x)              # a leaf that requires grad: no in-place error either
            return out[0].tolist(), out[0].requires_grad, out[0].grad_fn is None, y.grad_fn is not None
    assert run(tg, tmp_path / "a") == run(torch, tmp_path / "b") == ([2.0, 2.0], False, True, True)


def test_simclr_gather_layer_gradient_matches_torch(torch, tmp_path):
    def run(lib, path):
        class GatherLayer(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                output = [lib.zeros_like(x) for _ in range(lib.distributed.get_world_size())]
                lib.distributed.all_gather(output, x)
                return tuple(output)

            @staticmethod
            def backward(ctx, *grads):
                all_gradients = lib.stack(grads)
                lib.distributed.all_reduce(all_gradients)
                return all_gradients[lib.distributed.get_rank()]

        with _world_of_one(lib, path):
            z = lib.tensor([[0.3, -1.2, 0.8], [1.1, 0.4, -0.5]], dtype=lib.float64, requires_grad=True)
            feats = lib.nn.functional.normalize(lib.cat(GatherLayer.apply(z)), dim=1)
            logits = feats @ feats.t() / 0.5
            loss = lib.nn.functional.cross_entropy(logits, lib.arange(2))
            loss.backward()
            return loss.item(), z.grad.tolist()
    ours, theirs = run(tg, tmp_path / "a"), run(torch, tmp_path / "b")
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
    assert np.allclose(ours[1], theirs[1], rtol=1e-10, atol=0)


def test_ddp_over_one_rank_is_the_module(torch, tmp_path):
    def run(lib, path):
        with _world_of_one(lib, path):
            model = lib.nn.Linear(3, 2)
            with lib.no_grad():
                model.weight.copy_(lib.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
                model.bias.copy_(lib.tensor([0.05, -0.05]))
            ddp = lib.nn.parallel.DistributedDataParallel(model)
            x = lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
            ddp(x).pow(2).sum().backward()
            first = model.weight.grad.clone()
            with ddp.no_sync():
                ddp(x).sum().backward()
            return (repr(ddp), list(ddp.state_dict()), ddp.module is model, first.tolist(),
                    model.bias.grad.tolist())
    ours, theirs = run(tg, tmp_path / "a"), run(torch, tmp_path / "b")
    assert ours[:3] == theirs[:3]
    assert np.allclose(ours[3], theirs[3], rtol=1e-6) and np.allclose(ours[4], theirs[4], rtol=1e-6)


def test_distributed_sampler_reads_the_group(torch, tmp_path):
    def run(lib, path):
        with _world_of_one(lib, path):
            sampler = lib.utils.data.distributed.DistributedSampler(list(range(5)), shuffle=False)
            return sampler.num_replicas, sampler.rank, list(sampler)
    assert run(tg, tmp_path / "a") == run(torch, tmp_path / "b") == (1, 0, [0, 1, 2, 3, 4])


def test_env_rendezvous_names_the_missing_variable_as_torch(torch, monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)

    def attempts(lib):
        init = lib.distributed.init_process_group
        return _errors([lambda: init("gloo"), lambda: init("gloo", rank=0),
                        lambda: init("gloo", rank=0, world_size=1)])
    ours = attempts(tg)
    assert ours == attempts(torch)
    assert "MASTER_ADDR expected, but not set" in ours[2][1] and not tg.distributed.is_initialized()


def test_all_gather_into_tensor_is_deprecated_as_in_torch(torch, tmp_path):
    def run(lib, path):
        with _world_of_one(lib, path) as dist:
            out = lib.zeros(3)
            with pytest.warns(FutureWarning, match="all_gather_single"):
                dist.all_gather_into_tensor(out, lib.tensor([1.0, 2.0, 3.0]))
            return out.tolist()
    assert run(tg, tmp_path / "a") == run(torch, tmp_path / "b") == [1.0, 2.0, 3.0]


def test_a_group_of_several_processes_is_refused_not_awaited(tmp_path):
    # PyTorch would wait for the other ranks; tapegrad has none to wait for, so it says so.
    with pytest.raises(RuntimeError, match="world size 2"):
        tg.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 's'}",
                                          rank=0, world_size=2)
    assert not tg.distributed.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        tg.nn.parallel.DistributedDataParallel(tg.nn.Linear(2, 2))


def test_sync_batchnorm_with_a_group_rejects_cpu_input_as_torch(torch, tmp_path):
    # PyTorch syncs statistics only for accelerator tensors: in training mode with a group it
    # counts the batch, then raises; eval mode normalises with the running statistics.
    def run(lib, path):
        x = lib.arange(12.0).view(4, 3)
        bn = lib.nn.SyncBatchNorm(3)
        bn(x)
        with _world_of_one(lib, path):
            outcomes = _errors([lambda: bn(x), lambda: bn(x.view(4, 3, 1, 1))])
            counted = bn.num_batches_tracked.item()
            bn.eval()
            evaluated = bn(x)[0].tolist()
            model = lib.nn.SyncBatchNorm.convert_sync_batchnorm(
                lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.BatchNorm1d(3)))
            outcomes += _errors([lambda: lib.nn.parallel.DistributedDataParallel(model)])
        return outcomes, counted, evaluated
    ours, theirs = run(tg, tmp_path / "a"), run(torch, tmp_path / "b")
    assert ours[:2] == theirs[:2] and ours[1] == 3
    assert np.allclose(ours[2], theirs[2], rtol=1e-6)
