"""Debugging MoCo / SimCLR distributed helpers on one CPU process, in the style of
facebookresearch/moco's builder.py (concat_all_gather, _batch_shuffle_ddp with broadcast),
Spijkervet/SimCLR's GatherLayer and DINO's utils (is_dist_avail_and_initialized): a gloo process
group of world size 1 (written for this corpus, not a copy).  Collectives, async work handles,
object collectives, a DDP wrapper with no_sync, then destroy_process_group.  The rendezvous is a
file:// store in a fresh temporary directory, so no port is bound."""
import math
import os
import tempfile
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def det(*shape, phase=0.0, scale=1.0):
    n = math.prod(shape)
    k = torch.arange(n, dtype=torch.float32)
    return ((torch.sin(k * 0.377 + phase) + 0.5 * torch.cos(0.029 * k * k)) * scale).reshape(shape)


def is_dist_avail_and_initialized():
    if not dist.is_available():
        return False
    if not dist.is_initialized():
        return False
    return True


def get_world_size():
    if not is_dist_avail_and_initialized():
        return 1
    return dist.get_world_size()


print("before init:", is_dist_avail_and_initialized(), get_world_size())
store = os.path.join(tempfile.mkdtemp(), "dist_store")
dist.init_process_group(backend="gloo", init_method="file://" + store, rank=0, world_size=1)
print("after init:", dist.is_initialized(), dist.get_rank(), dist.get_world_size(), dist.get_backend())


@torch.no_grad()
def concat_all_gather(tensor):
    tensors_gather = [torch.ones_like(tensor) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(tensors_gather, tensor, async_op=False)
    output = torch.cat(tensors_gather, dim=0)
    return output


class GatherLayer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        output = [torch.zeros_like(input) for _ in range(dist.get_world_size())]
        dist.all_gather(output, input)
        return tuple(output)

    @staticmethod
    def backward(ctx, *grads):
        (input,) = ctx.saved_tensors
        grad_out = torch.zeros_like(input)
        grad_out[:] = grads[dist.get_rank()]
        return grad_out


k = det(4, 3)
g = concat_all_gather(k)
print("gathered", g.shape, torch.equal(g, k))
x = det(4, 3, phase=0.5).requires_grad_()
out = torch.cat(GatherLayer.apply(x), dim=0)
(out * torch.arange(12.).view(4, 3)).sum().backward()
print("gather layer grad", x.grad[1])


@torch.no_grad()
def batch_shuffle_ddp(x):
    batch_size_this = x.shape[0]
    x_gather = concat_all_gather(x)
    batch_size_all = x_gather.shape[0]
    num_gpus = batch_size_all // batch_size_this
    idx_shuffle = torch.arange(batch_size_all - 1, -1, -1)
    torch.distributed.broadcast(idx_shuffle, src=0)
    idx_unshuffle = torch.argsort(idx_shuffle)
    gpu_idx = torch.distributed.get_rank()
    idx_this = idx_shuffle.view(num_gpus, -1)[gpu_idx]
    return x_gather[idx_this], idx_unshuffle


shuffled, unshuffle = batch_shuffle_ddp(k)
print("shuffle", unshuffle.tolist(), torch.equal(shuffled[unshuffle], k))
t = torch.tensor([1.0, 2.0, 3.0])
dist.all_reduce(t)
print("all_reduce sum", t)
dist.all_reduce(t, op=dist.ReduceOp.MAX)
work = dist.all_reduce(t, op=dist.ReduceOp.SUM, async_op=True)
work.wait()
print("async", t, work.is_completed())
t /= dist.get_world_size()
dist.barrier()
objs = [None]
dist.all_gather_object(objs, {"acc": 0.5})
print("objects", objs)
lst = ["config"]
dist.broadcast_object_list(lst, src=0)
print("broadcast obj", lst)

model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(det(*p.shape, phase=i, scale=0.5))
ddp = nn.parallel.DistributedDataParallel(model)
print(ddp)
print(list(ddp.state_dict())[:2], ddp.module is model)
loss = ddp(k).pow(2).sum()
loss.backward()
print("ddp loss", round(loss.item(), 5), "grad", model[0].weight.grad[0])
with ddp.no_sync():
    ddp(k).sum().backward()
print("accumulated", model[2].bias.grad)
dist.destroy_process_group()
print("destroyed", dist.is_initialized())
