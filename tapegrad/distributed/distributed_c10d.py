"""torch.distributed.distributed_c10d for one process: a gloo process group of world size 1.

tapegrad runs in a single process, and that is the one process group it can form: what people
do when they debug MoCo's ``concat_all_gather``, SimCLR's ``GatherLayer`` or shuffle-BN's
``broadcast`` on a CPU (``init_process_group("gloo", rank=0, world_size=1)``).  With one rank
every collective is exact: a reduction over one tensor is that tensor, a gather of one tensor
is a copy of it, a broadcast from rank 0 changes nothing.  So each collective checks its
arguments as PyTorch's gloo backend does and then copies (or leaves) values; nothing is
recorded on the tape, since PyTorch's collectives are not differentiable either.

A group of more than one process cannot be formed here: ``init_process_group`` raises instead
of waiting for peers that will never come.  Without a default group every call that needs one
raises PyTorch's uninitialised-group error.
"""
from __future__ import annotations as _annotations

import enum
import os
import pickle
import warnings
from datetime import timedelta

from .._torch_names import TorchNamedClass, object_repr

__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
           "all_gather_into_tensor", "all_gather_object", "all_gather_single", "all_reduce", "all_to_all", "barrier",
           "broadcast", "broadcast_object_list", "destroy_process_group", "gather", "get_backend",
           "get_rank", "get_world_size", "group", "init_process_group", "irecv", "is_available",
           "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "isend", "new_group", "recv", "reduce", "reduce_scatter",
           "scatter", "send"]

_NOT_INITIALISED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class _RedOpType(enum.Enum):
    """The reduction kinds; PyTorch's pybind enum prints as ``RedOpType.SUM`` and converts to int."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"RedOpType.{self.name}"


_RedOpType.__name__ = _RedOpType.__qualname__ = "RedOpType"


class ReduceOp:
    """``dist.ReduceOp.SUM`` etc.: scripts name these at import time (as default arguments of their
    all-reduce helpers), so they must exist even though no collective can run here."""
    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM


class Backend(str):
    """A backend name, lower-cased as PyTorch's ``Backend("GLOO") == "gloo"``."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        return str.__new__(cls, name.lower())


class GroupMember:
    """``GroupMember.WORLD`` is the default process group, None until one is initialised."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:
    """``dist.group.WORLD``: the default process group, None until one is initialised."""
    WORLD = None


class ProcessGroup(metaclass=TorchNamedClass):
    """A group of ranks; here always the single rank 0 of this process."""

    __repr__ = object_repr

    def __init__(self, backend: str) -> None:
        self._backend = backend

    def rank(self) -> int:
        return 0

    def size(self) -> int:
        return 1


class Work(metaclass=TorchNamedClass):
    """The handle an ``async_op=True`` collective returns; with one rank the work is already done."""

    __repr__ = object_repr

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True


def is_available() -> bool:
    """True: a single-process gloo group can be initialised (PyTorch's CPU build says True too)."""
    return True


def is_initialized() -> bool:
    """Whether ``init_process_group`` has created the default process group."""
    return group.WORLD is not None


def is_nccl_available() -> bool:
    return False


def is_gloo_available() -> bool:
    return True


def is_mpi_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """True when the process was started by torchrun (it sets TORCHELASTIC_RUN_ID)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def _default_group() -> ProcessGroup:
    if group.WORLD is None:
        raise ValueError(_NOT_INITIALISED)
    return group.WORLD


def _set_default_group(pg) -> None:
    group.WORLD = GroupMember.WORLD = pg


# -- creating and destroying the default group ------------------------------------------------

_MPI_MISSING = ("Distributed package doesn't have MPI built in. MPI is only included if you build "
                "PyTorch from source on a host that has MPI installed.")
# Backends PyTorch knows by name but a CPU build lacks (their own RuntimeError), and those it knows
# only as plugins, none registered (its AssertionError naming the c10d backend type).
_UNBUILT_BACKENDS = ("nccl", "xccl")
_PLUGIN_BACKENDS = ("ucc", "fake")


def _backend_request(backend) -> str:
    """The lower-cased backend string a request names (None: gloo).  MPI is refused here, before
    any rendezvous, because PyTorch checks for it first (MPI brings its own rendezvous)."""
    if backend is None:
        return Backend.GLOO
    name = str(backend).lower()
    if name == Backend.MPI:
        raise RuntimeError(_MPI_MISSING)
    return name


def _backend_name(request: str) -> str:
    """The backend a request resolves to once its process group is formed: gloo, or PyTorch's
    error for one not built in (RuntimeError) or not known (AssertionError).  A per-device string
    ("cpu:gloo,cuda:nccl") builds every backend it lists, so each must be gloo here too."""
    if ":" in request:
        for part in request.split(","):
            name = part.split(":", 1)[-1]
            if name != Backend.GLOO:
                _refuse_backend(name, plugin=name not in _UNBUILT_BACKENDS + (Backend.MPI,))
        return request  # reported as given (get_backend() == "cpu:gloo")
    if request != Backend.GLOO:
        _refuse_backend(request, plugin=request in _PLUGIN_BACKENDS)
    return Backend.GLOO


def _refuse_backend(name: str, plugin: bool):
    if name == Backend.MPI:
        raise RuntimeError(_MPI_MISSING)
    if name in _UNBUILT_BACKENDS:
        raise RuntimeError(f"Distributed package doesn't have {name.upper()} built in")
    if plugin:
        raise AssertionError(f"Unknown c10d backend type {name.upper()}")
    raise AssertionError(f"Unknown backend type {name}")


def _rendezvous(init_method, world_size: int, rank: int) -> tuple:
    """(rank, world_size) as PyTorch's rendezvous handlers read them: env:// from the environment
    (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, in that order, unless given as arguments),
    tcp:// and file:// from the arguments."""
    scheme = (init_method or "env://").split("://", 1)[0]
    if scheme == "env":
        def env(name):
            value = os.environ.get(name)
            if value is None:
                raise ValueError("Error initializing torch.distributed using env:// rendezvous: "
                                 f"environment variable {name} expected, but not set")
            return value
        rank = rank if rank != -1 else int(env("RANK"))
        world_size = world_size if world_size != -1 else int(env("WORLD_SIZE"))
        env("MASTER_ADDR")
        int(env("MASTER_PORT"))
        return rank, world_size
    for value, what in ((rank, "rank"), (world_size, "world size")):
        if value == -1:
            raise ValueError(f"Error initializing torch.distributed using {scheme}:// rendezvous: "
                             f"{what} parameter missing")
    return rank, world_size


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Create the default process group: gloo, one process (rank 0 of world size 1)."""
    if group.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    # PyTorch meets its peers (the rendezvous, with its errors) before it builds the backend.
    request = _backend_request(backend)
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout}")
    if store is None:
        rank, world_size = _rendezvous(init_method, world_size, rank)
    name = _backend_name(request)
    if world_size != 1:
        # PyTorch would wait here for world_size - 1 peer processes; tapegrad never starts any.
        raise RuntimeError(f"tapegrad runs one process: a process group of world size {world_size} "
                           "cannot be formed (only init_process_group(..., world_size=1, rank=0))")
    if rank != 0:
        raise RuntimeError(f"Invalid rank {rank} for a process group of world size 1")
    _set_default_group(ProcessGroup(name))


def destroy_process_group(group=None) -> None:
    """Destroy the default group (AssertionError when there is none, as PyTorch raises)."""
    if not is_initialized():
        raise AssertionError("Process group cannot be None")
    _set_default_group(None)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None) -> ProcessGroup:
    """A subgroup of the world: with one rank, a group holding rank 0."""
    default = _default_group()
    if ranks is not None and any(r != 0 for r in ranks):
        raise ValueError(f"The new group's rank should be within the world_size set by "
                         f"init_process_group, got {sorted(ranks)}")
    return ProcessGroup(default._backend if backend is None else _backend_name(_backend_request(backend)))


def get_rank(group=None) -> int:
    _default_group()
    return 0


def get_world_size(group=None) -> int:
    _default_group()
    return 1


def get_backend(group=None) -> str:
    return Backend((group or _default_group())._backend)


# -- collectives on one rank ------------------------------------------------------------------

def _done(async_op: bool):
    return Work() if async_op else None


def _copy_into(dest, source) -> None:
    """Write ``source``'s values into ``dest`` as a collective does: outside autograd."""
    from ..grad_mode import no_grad
    with no_grad():
        dest.copy_(source)


def _check_root(kind: str, root: int) -> None:
    if root != 0:
        raise RuntimeError(f"ProcessGroupGloo::{kind}: invalid root rank: {root}")


def _check_outputs(kind: str, outputs, tensor) -> None:
    """gloo's checks of an output list against the input: one tensor per rank, same shape."""
    if len(outputs) != 1:
        raise RuntimeError(f"ProcessGroupGloo::{kind}: invalid output tensor list at index 0 "
                           f"(expected length 1, got {len(outputs)})")
    _check_like(kind, outputs[0], tensor)


def _check_like(kind: str, out, tensor) -> None:
    if out.dtype != tensor.dtype:
        raise ValueError(f"Invalid usage of tensors with different dtypesFound {out.dtype} and  "
                         f"{tensor.dtype}")
    if tuple(out.shape) != tuple(tensor.shape):
        def sizes(t):
            return "(" + ", ".join(str(n) for n in t.shape) + ")"
        raise RuntimeError(f"ProcessGroupGloo::{kind}: invalid tensor size at index 0 "
                           f"(expected {sizes(tensor)}, got {sizes(out)})")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce over the ranks, in place: one rank's tensor is its own reduction, for every op."""
    _default_group()
    return _done(async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce onto rank ``dst``: with one rank the tensor is already the result."""
    _default_group()
    _check_root("reduce", 0 if dst is None else dst)
    return _done(async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Send rank ``src``'s tensor to every rank: rank 0 is the only source and already holds it."""
    _default_group()
    _check_root("broadcast", 0 if src is None else src)
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list`` (one entry per rank) with each rank's tensor: here one copy."""
    _default_group()
    _check_outputs("allgather", tensor_list, tensor)
    _copy_into(tensor_list[0], tensor)
    return _done(async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenate every rank's tensor into ``output_tensor``: with one rank gloo gathers into a
    list of one, so the output must have the input's shape and dtype, and receives a copy."""
    _default_group()
    if output_tensor.dtype != input_tensor.dtype:
        raise RuntimeError("ProcessGroupGloo::allgather: invalid tensor type at index 0 (expected "
                           f"dtype {input_tensor.dtype}, got {output_tensor.dtype})")
    _check_like("allgather", output_tensor, input_tensor)
    _copy_into(output_tensor, input_tensor)
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """PyTorch 2.13's deprecated name of ``all_gather_single`` (it warns, then gathers)."""
    warnings.warn("`torch.distributed.all_gather_into_tensor` is deprecated. "
                  "Please use `torch.distributed.all_gather_single` instead.", FutureWarning,
                  stacklevel=2)
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Collect every rank's tensor on ``dst`` (rank 0, which must pass ``gather_list``)."""
    _default_group()
    _check_root("gather", 0 if dst is None else dst)
    if gather_list is None:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    _check_outputs("gather", gather_list, tensor)
    _copy_into(gather_list[0], tensor)
    return _done(async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Give each rank its entry of ``scatter_list`` (held by ``src``): rank 0 gets entry 0."""
    _default_group()
    _check_root("scatter", 0 if src is None else src)
    if scatter_list is None:
        raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
    _check_outputs("scatter", scatter_list, tensor)
    _copy_into(tensor, scatter_list[0])
    return _done(async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce the lists over ranks and give rank i entry i: here ``input_list[0]`` itself."""
    _default_group()
    _check_outputs("reduce_scatter", input_list, output)
    _copy_into(output, input_list[0])
    return _done(async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank i sends input entry j to rank j: with one rank, output entry 0 is input entry 0."""
    _default_group()
    _check_outputs("alltoall", output_tensor_list, input_tensor_list[0])
    if len(input_tensor_list) != 1:
        raise RuntimeError(f"ProcessGroupGloo::alltoall: invalid input tensor list "
                           f"(expected length 1, got {len(input_tensor_list)})")
    _copy_into(output_tensor_list[0], input_tensor_list[0])
    return _done(async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait for every rank: the only rank is here."""
    _default_group()
    return _done(async_op)


def all_gather_object(object_list, obj, group=None) -> None:
    """Put every rank's picklable ``obj`` into ``object_list``: here a copy, made by pickling as
    PyTorch's transport does, in entry 0."""
    _default_group()
    object_list[0] = pickle.loads(pickle.dumps(obj))


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None) -> None:
    """Give every rank ``src``'s objects: rank 0 already holds them."""
    _default_group()
    _check_root("broadcast", 0 if src is None else src)


def _no_peer(name: str):
    def point_to_point(tensor, *args, **kwargs):
        _default_group()
        raise RuntimeError("Invalid destination rank: destination rank should not be the same as "
                           "the rank of the current process.")
    point_to_point.__name__ = point_to_point.__qualname__ = name
    point_to_point.__doc__ = "Point-to-point transfer: a world of one process has no peer."
    return point_to_point


# Sending and receiving need a second process, which a world of one never has.
send = _no_peer("send")
recv = _no_peer("recv")
isend = _no_peer("isend")
irecv = _no_peer("irecv")
