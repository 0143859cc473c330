"""Process group and collectives on MPI (mpi4py), with ``torch.distributed``'s names and semantics.

Tensors go to MPI as raw buffers at their ``data_ptr()`` (no copy when contiguous; a
non-contiguous tensor is staged through a contiguous copy and written back). mpi4py releases the
GIL inside every MPI call (``with nogil`` around ``MPI_Allreduce``, ``MPI_Waitall``, ...), so
other Python threads run while a collective waits; ``tests/distributed/collectives.py`` checks
this by counting in a thread while rank 0 waits for a late rank 1.

Every collective first agrees with the other ranks on what it is about to do (one 14-integer
``MPI_Allreduce`` of the op, dtype, shape and root): a shape or dtype mismatch between ranks, or
a bad argument on one rank, raises ``RuntimeError`` on every rank instead of hanging or
corrupting a tensor. ``DistributedDataParallel`` checks the model once at construction and then
reduces its buckets without this check.

An uncaught exception on one rank must not leave the others waiting forever in a collective:
``init_process_group`` installs a ``sys.excepthook`` that prints the traceback and calls
``MPI_Abort`` on ``COMM_WORLD``, so ``mpiexec`` ends the whole job with an error.
(``python -m mpi4py train.py`` does the same from outside.)
"""

import enum
import importlib.util
import sys
import time
import traceback
import warnings
import zlib

import numpy as np

from .. import _core
from .._factories import empty
from ..autograd.grad_mode import no_grad

__all__ = [
    "Backend",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter_tensor",
    "send",
]

_NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


def is_available():
    """True when mpi4py is installed (``pip install "ferrograd[mpi]"``); MPI itself is only
    started by ``init_process_group``."""
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):
        return False


is_mpi_available = is_available


class Backend(str):
    """Backend names; only ``"mpi"`` exists here."""

    MPI = "mpi"

    def __new__(cls, name):
        return super().__new__(cls, name.lower())


class ReduceOp:
    """Reduction operations (``ReduceOp.SUM`` ...), with PyTorch's enum values."""

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9

        def __str__(self):
            return f"RedOpType.{self.name}"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


class ProcessGroup:
    """A group of ranks on its own MPI communicator: the world (a private duplicate of
    ``MPI.COMM_WORLD``, so user MPI traffic never matches ours) or one made by ``new_group``.

    ``ranks`` are the members' global ranks in group-rank order."""

    def __init__(self, comm, ranks):
        self.comm = comm
        self.ranks = list(ranks)
        self.group_rank = {g: i for i, g in enumerate(self.ranks)}

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return self.comm.Get_size()

    def name(self):
        return "MPI"


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = -100


group = GroupMember

_state: dict = {"pg": None, "excepthook": None, "groups": []}


def _mpi():
    # imported on first use: mpi4py is optional, and importing mpi4py.MPI initialises MPI
    from mpi4py import MPI

    return MPI


def _world(group=None):
    """The process group ``group`` names (None: the world); raises PyTorch's errors for no
    default group and for a group not made by ``new_group``."""
    pg = _state["pg"]
    if pg is None:
        raise ValueError(_NOT_INITIALIZED)
    if group is None or group is pg:
        return pg
    if not any(group is g for g in _state["groups"]):
        raise ValueError(
            f"Group {group} is not registered, please create group with torch.distributed.new_group API"
        )
    return group


def _not_member(group, opname):
    """True (after PyTorch's warning) when this rank is not in ``group``: the op does nothing."""
    if isinstance(group, int) and group == GroupMember.NON_GROUP_MEMBER:
        global_rank = -1 if _state["pg"] is None else _state["pg"].rank()
        warnings.warn(
            f"Running {opname} on global rank {global_rank} which does not belong to the given group.",
            stacklevel=3,
        )
        return True
    return False


# --- process group ---------------------------------------------------------------------------


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Starts MPI (if not yet started) and makes ``COMM_WORLD`` the default group.

    Run under ``mpiexec -n N python script.py``; ``rank`` and ``world_size``, when given, must
    agree with MPI's. ``init_method``, ``store`` and ``timeout`` have no meaning with MPI.
    """
    if _state["pg"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() != Backend.MPI:
        raise ValueError(f"ferrograd.distributed supports only the 'mpi' backend, got {backend!r}")
    if not is_available():
        raise RuntimeError(
            "ferrograd.distributed needs mpi4py and an MPI library: pip install \"ferrograd[mpi]\""
        )
    MPI = _mpi()
    comm = MPI.COMM_WORLD.Dup()
    for given, actual, what in ((world_size, comm.Get_size(), "world_size"), (rank, comm.Get_rank(), "rank")):
        if given not in (-1, None) and given != actual:
            comm.Free()
            raise ValueError(f"{what}={given} was given, but MPI started this process with {what}={actual}")
    pg = ProcessGroup(comm, range(comm.Get_size()))
    _state["pg"] = pg
    GroupMember.WORLD = pg
    _state["excepthook"] = sys.excepthook
    sys.excepthook = _abort_on_uncaught_exception


def _abort_on_uncaught_exception(exc_type, exc, tb):
    previous = _state["excepthook"] or sys.__excepthook__
    if previous is sys.__excepthook__:
        # the whole traceback in one write, so mpiexec forwards it whole or not at all
        sys.stderr.write("".join(traceback.format_exception(exc_type, exc, tb)))
    else:
        previous(exc_type, exc, tb)
    sys.stderr.flush()
    time.sleep(0.2)  # lets mpiexec forward the output before the abort kills the job
    _mpi().COMM_WORLD.Abort(1)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """A group of some of the world's ranks (all when ``ranks`` is None), on its own MPI
    communicator. Every rank of the world must call it, members or not, in the same order as
    the other ``new_group`` calls; non-members get ``GroupMember.NON_GROUP_MEMBER``."""
    world = _world()
    if use_local_synchronization:
        raise NotImplementedError("new_group(use_local_synchronization=True): every rank must call new_group")
    ranks = list(range(world.size())) if ranks is None else [int(r) for r in ranks]
    if sort_ranks:
        ranks = sorted(ranks)
    if len(ranks) > world.size():
        raise ValueError(
            "the new group's world size should be less or equal to the world size set by init_process_group"
        )
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError("The new group's rank should be within the world_size set by init_process_group")
    me = world.rank()
    member = me in ranks
    # collective over the world: members get a communicator ordered by their place in `ranks`
    comm = world.comm.Split(0 if member else _mpi().UNDEFINED, ranks.index(me) if member else 0)
    if not member:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, ranks)
    _state["groups"].append(pg)
    return pg


def get_process_group_ranks(group):
    """The global ranks of ``group`` (None: the world), in group-rank order."""
    return list(_world(group).ranks)


def get_group_rank(group, global_rank):
    """``global_rank``'s rank in ``group``."""
    if group is GroupMember.WORLD:
        return global_rank
    pg = _world(group)
    if global_rank not in pg.group_rank:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return pg.group_rank[global_rank]


def get_global_rank(group, group_rank):
    """The global rank of ``group``'s rank ``group_rank``."""
    if group is GroupMember.WORLD:
        return group_rank
    pg = _world(group)
    if not 0 <= group_rank < len(pg.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return pg.ranks[group_rank]


def destroy_process_group(group=None):
    """Frees ``group``'s communicator; without a group (or with the world) every group goes,
    and ferrograd.distributed is back to uninitialised."""
    if _state["pg"] is None:
        raise AssertionError("Process group cannot be None")
    pg = _world(group)
    if pg is not _state["pg"]:
        pg.comm.Free()
        _state["groups"] = [g for g in _state["groups"] if g is not pg]
        return
    for g in _state["groups"]:
        g.comm.Free()
    _state["groups"] = []
    pg.comm.Free()
    _state["pg"] = None
    GroupMember.WORLD = None
    if sys.excepthook is _abort_on_uncaught_exception:
        sys.excepthook = _state["excepthook"]


def is_initialized():
    return _state["pg"] is not None


def get_rank(group=None):
    """This process's rank in ``group`` (-1 if it is not a member)."""
    if isinstance(group, int) and group == GroupMember.NON_GROUP_MEMBER:
        return -1
    return _world(group).rank()


def get_world_size(group=None):
    """The number of ranks in ``group`` (-1 if this process is not a member)."""
    if isinstance(group, int) and group == GroupMember.NON_GROUP_MEMBER:
        return -1
    return _world(group).size()


def get_backend(group=None):
    _world(group)
    return Backend.MPI


# --- tensors as MPI buffers --------------------------------------------------------------------


def _mpi_type(dtype):
    MPI = _mpi()
    return {
        _core.float32: MPI.FLOAT,
        _core.float64: MPI.DOUBLE,
        _core.int64: MPI.INT64_T,
        _core.bool: MPI.C_BOOL,
    }[dtype]


def _buffer(tensor):
    """``[buffer, datatype]`` over a contiguous tensor's memory (no copy). mpi4py derives the
    counts from the byte size (per rank for all-gather and reduce-scatter)."""
    nbytes = tensor.numel() * tensor.element_size()
    memory = _mpi().buffer.fromaddress(tensor.data_ptr(), nbytes) if nbytes else bytearray(0)
    return [memory, _mpi_type(tensor.dtype)]


def _mpi_op(op, dtype):
    MPI = _mpi()
    op = ReduceOp.RedOpType(op)
    if dtype == _core.bool:
        table = {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.BOR: MPI.LOR,
                 ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND, ReduceOp.BAND: MPI.LAND,
                 ReduceOp.BXOR: MPI.LXOR}
    else:
        table = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
                 ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX}
        if dtype == _core.int64:
            table.update({ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR})
    if op == ReduceOp.AVG and not dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_type_name(dtype)}")
    if op not in table:
        raise RuntimeError(f"ProcessGroupMPI: ReduceOp.{op.name} is not supported for {dtype}")
    return table[op]


def _type_name(dtype):
    return {_core.int64: "Long", _core.bool: "Bool"}.get(dtype, str(dtype))


class _Staged:
    """A tensor's contiguous stand-in: the tensor itself, or a copy written back at the end."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.buffer = tensor if tensor.is_contiguous() else tensor.contiguous()

    def write_back(self):
        if self.buffer is not self.tensor:
            with _no_grad():
                self.tensor.copy_(self.buffer)


def _no_grad():
    return no_grad()


class Work:
    """A pending operation (``async_op=True``): ``wait()`` blocks until it is done (and applies
    what follows it, e.g. the division of ``ReduceOp.AVG``), ``is_completed()`` polls."""

    def __init__(self, requests, outputs=(), finish=None, keep=()):
        self._requests = list(requests)
        self._keep = keep  # the memory MPI reads or writes, alive until the operation is done
        self._outputs = list(outputs)
        self._finish = finish
        self._done = False
        self._source = None

    def _complete(self, statuses=None):
        self._done = True
        self._requests = []
        self._keep = ()
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish(statuses)

    def wait(self, timeout=None):
        if not self._done:
            MPI = _mpi()
            statuses = [MPI.Status() for _ in self._requests]
            MPI.Request.Waitall(self._requests, statuses)
            self._complete(statuses)
        return True

    def is_completed(self):
        if not self._done:
            MPI = _mpi()
            statuses = [MPI.Status() for _ in self._requests]
            if MPI.Request.Testall(self._requests, statuses):
                self._complete(statuses)
        return self._done

    def is_success(self):
        return self._done

    def exception(self):
        return None

    def result(self):
        self.wait()
        return self._outputs

    def source_rank(self):
        self.wait()
        return self._source


def _run(requests, outputs, finish, async_op, keep=()):
    work = Work(requests, outputs, finish, keep)
    if async_op:
        return work
    work.wait()
    return None


def _finisher(*steps):
    """One callable running each step (``write_back``, an AVG division, ...) in order."""

    def finish(statuses):
        for step in steps:
            step()

    return finish


def _average(tensor, op, size):
    if op == ReduceOp.AVG:
        return lambda: tensor.div_(size)
    return lambda: None


# --- agreement between ranks before each collective ------------------------------------------

_DTYPE_CODE = {_core.float32: 1, _core.float64: 2, _core.int64: 3, _core.bool: 4}
_FINGERPRINT_LEN = 7


def _check_tensor(tensor, name="tensor"):
    if not isinstance(tensor, _core.Tensor):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
            f"             but got {type(tensor)} instead."
        )


def _agree(pg, opname, tensor, extra=(), local_check=None):
    """Runs ``local_check`` and checks that every rank calls ``opname`` with the same dtype,
    shape and arguments; raises ``RuntimeError`` on every rank if not."""
    error = None
    try:
        if local_check is not None:
            local_check()
    except Exception as exc:  # noqa: BLE001  (re-raised below, after the ranks agreed)
        error = exc
    shape = tuple(tensor.shape) if tensor is not None else ()
    dtype = _DTYPE_CODE.get(tensor.dtype, 0) if tensor is not None else 0
    words = [
        0 if error is None else 1,
        zlib.crc32(opname.encode()),
        dtype,
        len(shape),
        zlib.crc32(repr(shape).encode()),
        zlib.crc32(repr(tuple(int(e) for e in extra)).encode()),
        0,
    ]
    mine = np.array(words + [-w for w in words], dtype=np.int64)
    agreed = np.empty_like(mine)
    pg.comm.Allreduce(mine, agreed, op=_mpi().MAX)
    highest, lowest = agreed[:_FINGERPRINT_LEN], -agreed[_FINGERPRINT_LEN:]
    if error is not None:
        raise error
    if highest[0]:
        raise RuntimeError(f"{opname}: the arguments were invalid on another rank (see its error)")
    if not (np.array_equal(highest, lowest)):
        raise RuntimeError(
            f"{opname}: the ranks called it with different tensors or arguments (shape, dtype, "
            f"root or op differ across ranks); this rank had dtype {tensor.dtype if tensor is not None else None}, "
            f"shape {list(shape)}, arguments {list(extra)}"
        )


def _check_root(pg, root, opname, what="root"):
    if not 0 <= root < pg.size():
        raise RuntimeError(f"ProcessGroupMPI::{opname}: invalid {what} rank: {root}")


# --- collectives --------------------------------------------------------------------------------


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` over all ranks, in place on every rank."""
    if _not_member(group, "all_reduce"):
        return None
    pg = _world(group)
    _check_tensor(tensor)
    _agree(pg, "all_reduce", tensor, (op,), lambda: _mpi_op(op, tensor.dtype))
    staged = _Staged(tensor)
    request = pg.comm.Iallreduce(_mpi().IN_PLACE, _buffer(staged.buffer), _mpi_op(op, tensor.dtype))
    finish = _finisher(staged.write_back, _average(tensor, op, pg.size()))
    return _run([request], [tensor], finish, async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copies ``tensor`` of rank ``src`` into ``tensor`` of every other rank."""
    if _not_member(group, "broadcast"):
        return None
    pg = _world(group)
    _check_tensor(tensor)
    src = _pick(pg, src, group_src)
    _agree(pg, "broadcast", tensor, (src,), lambda: _check_root(pg, src, "broadcast"))
    staged = _Staged(tensor)
    request = pg.comm.Ibcast(_buffer(staged.buffer), root=src)
    return _run([request], [tensor], _finisher(staged.write_back), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduces ``tensor`` over all ranks into ``tensor`` of rank ``dst`` (other ranks' tensors
    are left as they were)."""
    if _not_member(group, "reduce"):
        return None
    pg = _world(group)
    _check_tensor(tensor)
    dst = _pick(pg, dst, group_dst)

    def check():
        _check_root(pg, dst, "reduce")
        _mpi_op(op, tensor.dtype)

    _agree(pg, "reduce", tensor, (dst, op), check)
    staged = _Staged(tensor)
    MPI = _mpi()
    mpi_op = _mpi_op(op, tensor.dtype)
    if pg.rank() == dst:
        request = pg.comm.Ireduce(MPI.IN_PLACE, _buffer(staged.buffer), mpi_op, root=dst)
        finish = _finisher(staged.write_back, _average(tensor, op, pg.size()))
    else:
        request = pg.comm.Ireduce(_buffer(staged.buffer), None, mpi_op, root=dst)
        finish = None
    return _run([request], [tensor], finish, async_op)


def _pick(pg, rank, group_rank):
    """A rank given as a global rank or a group rank (PyTorch's ``src``/``group_src``), as
    ``pg``'s group rank."""
    if rank is not None and group_rank is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    if group_rank is not None:
        return int(group_rank)
    if rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    if pg is _state["pg"]:
        return int(rank)  # the world's ranks are global ranks (a bad one is caught later)
    return get_group_rank(pg, int(rank))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fills ``tensor_list[i]`` with ``tensor`` of rank ``i``."""
    if _not_member(group, "all_gather"):
        return None
    pg = _world(group)
    _check_tensor(tensor)

    def check():
        if len(tensor_list) != pg.size():
            raise RuntimeError(
                "ProcessGroupMPI::allgather: invalid output tensor list at index 0 "
                f"(expected length {pg.size()}, got {len(tensor_list)})"
            )
        for i, out in enumerate(tensor_list):
            _check_tensor(out, "tensor_list")
            if tuple(out.shape) != tuple(tensor.shape) or out.dtype != tensor.dtype:
                raise RuntimeError(
                    f"ProcessGroupMPI::allgather: invalid tensor size at index {i} "
                    f"(expected {_shape_str(tensor)}, got {_shape_str(out)})"
                )

    _agree(pg, "all_gather", tensor, (), check)
    gathered = empty((pg.size(),) + tuple(tensor.shape), dtype=tensor.dtype)
    source = _Staged(tensor)
    request = pg.comm.Iallgather(_buffer(source.buffer), _buffer(gathered))

    def scatter_into_list():
        with _no_grad():
            for out, part in zip(tensor_list, gathered.unbind(0)):
                out.copy_(part)

    return _run([request], tensor_list, _finisher(scatter_into_list), async_op, (source,))


def _shape_str(t):
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gathers every rank's ``input_tensor`` into ``output_tensor``, concatenated along the first
    dimension (or stacked: only the element count and dtype matter, as in PyTorch)."""
    if _not_member(group, "all_gather_into_tensor"):
        return None
    pg = _world(group)
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")

    def check():
        _same_dtype(output_tensor, input_tensor, "all_gather_into_tensor")
        if output_tensor.numel() != input_tensor.numel() * pg.size():
            raise ValueError(
                "Output tensor size must be equal to world_size times input tensor size"
            )

    _agree(pg, "all_gather_into_tensor", input_tensor, tuple(output_tensor.shape), check)
    source, target = _Staged(input_tensor), _Staged(output_tensor)
    request = pg.comm.Iallgather(_buffer(source.buffer), _buffer(target.buffer))
    return _run([request], [output_tensor], _finisher(target.write_back), async_op, (source,))


def _same_dtype(a, b, opname):
    if a.dtype != b.dtype:
        raise RuntimeError(f"{opname}: input and output tensors must have the same dtype, got {b.dtype} and {a.dtype}")


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input`` over all ranks and gives rank ``i`` the ``i``-th of ``world_size``
    equal chunks (along the flattened memory, i.e. the first dimension)."""
    if _not_member(group, "reduce_scatter_tensor"):
        return None
    pg = _world(group)
    _check_tensor(output, "output")
    _check_tensor(input, "input")

    def check():
        _same_dtype(output, input, "reduce_scatter_tensor")
        _mpi_op(op, input.dtype)
        if input.numel() != output.numel() * pg.size():
            raise ValueError("Input tensor size must be equal to world_size times output tensor size")

    _agree(pg, "reduce_scatter_tensor", input, (op,) + tuple(output.shape), check)
    source, target = _Staged(input), _Staged(output)
    request = pg.comm.Ireduce_scatter_block(
        _buffer(source.buffer), _buffer(target.buffer), _mpi_op(op, input.dtype)
    )
    finish = _finisher(target.write_back, _average(output, op, pg.size()))
    return _run([request], [output], finish, async_op, (source,))


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    if _not_member(group, "barrier"):
        return None
    pg = _world(group)
    return _run([pg.comm.Ibarrier()], [], None, async_op)


# --- point to point -------------------------------------------------------------------------------


def _peer(pg, rank, group_rank, name, opname):
    peer = _pick(pg, rank, group_rank)
    if peer == pg.rank():
        what = "destination" if name == "dst" else "source"
        raise ValueError(
            f"Invalid {what} rank: {what} rank should not be the same as the rank of the current process."
        )
    _check_root(pg, peer, opname, name)
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends ``tensor`` to ``dst`` without waiting; returns a ``Work``."""
    if _not_member(group, "isend"):
        return None
    pg = _world(group)
    _check_tensor(tensor)
    dst = _peer(pg, dst, group_dst, "dst", "send")
    staged = _Staged(tensor)
    request = pg.comm.Isend(_buffer(staged.buffer), dest=dst, tag=tag)
    return Work([request], [tensor], keep=(staged,))


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    if _not_member(group, "send"):
        return
    isend(tensor, dst, group, tag, group_dst).wait()


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor`` from ``src`` (any rank if None) without waiting. A message of
    another size raises ``RuntimeError`` on the receiving rank at ``wait()``."""
    if _not_member(group, "irecv"):
        return None
    pg = _world(group)
    _check_tensor(tensor)
    MPI = _mpi()
    if src is None and group_src is None:
        source = MPI.ANY_SOURCE
    else:
        source = _peer(pg, src, group_src, "src", "recv")
    staged = _Staged(tensor)
    request = pg.comm.Irecv(_buffer(staged.buffer), source=source, tag=tag)

    def finish(statuses):
        status = statuses[0]
        got = status.Get_count(_mpi_type(tensor.dtype))
        if got != tensor.numel():
            raise RuntimeError(
                f"recv: expected {tensor.numel()} elements of {tensor.dtype} from rank "
                f"{status.Get_source()}, but the message holds {got}"
            )
        work._source = status.Get_source()
        staged.write_back()

    work = Work([request], [tensor], finish)
    return work


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor``; returns the sender's global rank (-1 if not in ``group``)."""
    if _not_member(group, "recv"):
        return -1
    work = irecv(tensor, src, group, tag, group_src)
    try:
        work.wait()
    except _mpi().Exception as exc:
        raise RuntimeError(f"recv: {exc}") from None
    return _world(group).ranks[work._source]


# --- Python objects (pickled by mpi4py) -------------------------------------------------------


def all_gather_object(object_list, obj, group=None):
    """Fills ``object_list[i]`` (a list of ``world_size`` items) with ``obj`` of rank ``i``."""
    if _not_member(group, "all_gather_object"):
        return None
    pg = _world(group)
    for i, item in enumerate(pg.comm.allgather(obj)):
        object_list[i] = item


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replaces the items of ``object_list`` with those of rank ``src`` (same length everywhere)."""
    if _not_member(group, "broadcast_object_list"):
        return None
    pg = _world(group)
    src = _pick(pg, src, group_src)
    items = pg.comm.bcast(list(object_list) if pg.rank() == src else None, root=src)
    for i, item in enumerate(items):
        object_list[i] = item
