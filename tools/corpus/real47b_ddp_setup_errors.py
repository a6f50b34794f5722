"""A DDP tutorial's setup function run as one process on a CPU machine: without the launcher's
environment the env:// rendezvous fails first (whatever backend is asked for); with a file://
rendezvous of one rank the backend itself is built, and only gloo exists in a CPU build."""
import os
import tempfile

import torch
import torch.distributed as dist

workdir = tempfile.mkdtemp()
for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
    os.environ.pop(var, None)


def setup(backend, **kwargs):
    try:
        dist.init_process_group(backend, **kwargs)
    except (ValueError, RuntimeError, AssertionError) as err:
        print(f"{backend!r}: {type(err).__name__}: {err}")
        return False
    print(f"{backend!r}: initialised as {dist.get_backend()!r}, rank {dist.get_rank()} of "
          f"{dist.get_world_size()}")
    return True


for backend in ("nccl", "gloo", "mpi"):
    setup(backend)

for i, backend in enumerate(("nccl", "ucc", "Gloo-ish", "cpu:gloo,cuda:nccl", "cuda:ucc", "gloo")):
    url = "file://" + os.path.join(workdir, f"store{i}")
    if setup(backend, init_method=url, rank=0, world_size=1):
        grads = torch.tensor([1.0, 2.0, 3.0])
        dist.all_reduce(grads)
        print("all_reduce over one rank:", grads / dist.get_world_size())
        dist.destroy_process_group()

os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
url = "file://" + os.path.join(workdir, "store_last")
if setup("cpu:gloo", init_method=url):
    print("initialized:", dist.is_initialized())
    dist.destroy_process_group()
print("initialized at exit:", dist.is_initialized())
