"""``DistributedDataParallel``: gradients averaged across MPI ranks while backward runs.

How a step goes (PyTorch's reducer, in Python):

- At construction rank 0's parameters and buffers are broadcast, and the parameters that require
  grad are grouped into buckets of at most ``bucket_cap_mb`` MiB (the first one 1 MiB when the
  default is used), in reverse order of registration: roughly the order backward produces
  their gradients. Each bucket owns one flat buffer: when all ranks share a node (and the
  bucket is float32/float64), its rank's segment of an MPI shared-memory window, reduced with
  plain loads and stores (``_SharedMemoryReduction``); otherwise a tensor reduced with
  ``MPI_Iallreduce``.
- ``forward`` arms the reducer (unless inside ``no_sync()`` or with grad disabled).
- Each parameter's ``register_post_accumulate_grad_hook`` copies its ``.grad``, divided by the
  world size, into its slot (one native pass, ``_core._copy_scaled_``; in place when ``.grad``
  already is the slot); when a bucket's last slot is filled its all-reduce starts, so the
  reduction runs while backward continues. Buckets start in index order on every rank (MPI
  needs the same order everywhere); every later hook polls the reductions in flight so they
  make progress.
- At the end of backward (a final callback of the engine, PyTorch's
  ``Variable._execution_engine.queue_callback``, queued by the first hook) the reducer waits for
  all buckets and copies the averages back into ``.grad``, before ``backward()`` returns
  (with ``gradient_as_bucket_view=True`` each ``.grad`` is its slot of the bucket instead, so
  nothing is copied back and a gradient already in its slot is not copied in). With
  ``find_unused_parameters=True`` the parameters the forward graph cannot reach are marked ready
  at forward time, as PyTorch does. A parameter that never gets its gradient leaves the
  reduction unfinished, and the next ``forward`` raises PyTorch's "Expected to have finished
  reduction" error.
"""

import os
import warnings
from contextlib import contextmanager

import numpy as np

from ... import _core
from ..._core import cat
from ..._factories import zeros
from ...autograd.grad_mode import no_grad
from ...autograd.variable import Variable
from ...distributed import distributed_c10d as c10d
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_DEFAULT_BUCKET_CAP_MB = 25
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
_MB = 1024 * 1024

_UNFINISHED_REDUCTION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This "
    "error indicates that your module has parameters that were not used in producing loss. You "
    "can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't able "
    "to locate the output tensors in the return value of your module's `forward` function. "
    "Please include the loss function and the structure of the return value of `forward` of "
    "your module when reporting this issue (e.g. list, dict, iterable)."
)


# Set to False to reduce every bucket with MPI_Iallreduce even when all ranks share a node
# (tests/distributed/ddp.py runs both ways).
_SHARED_MEMORY_REDUCTION = True

_NUMPY_DTYPES = {_core.float32: np.float32, _core.float64: np.float64}


class _SharedMemoryReduction:
    """A bucket's all-reduce through memory that every rank maps (an MPI shared-memory window,
    one segment per rank): a reduce-scatter and an all-gather made of plain vectorised loads,
    adds and stores, in three phases, each entered once every rank has finished the previous
    one:

    1. every rank has filled its segment: rank ``r`` sums part ``r`` of all segments, in rank
       order, into its own segment;
    2. every part is summed: each rank copies the other parts from their owners' segments (so
       the result is bitwise the same everywhere);
    3. every rank has copied: each segment may be written again, and backward may return.

    A rank announces the end of a phase by storing the phase's number (counted since the
    bucket was made, the same on every rank) into the 64-byte header of its segment, after an
    ``MPI_Win_sync``; the others read the headers (and ``MPI_Win_sync`` before reading the
    data). This replaces ``MPI_Ibarrier``, which took ~40 us per phase here even when the ranks
    arrived together; a wait spins on the headers, yielding the core every few thousand reads.

    Used when all ranks run on one node, instead of ``MPI_Iallreduce``, whose intra-node path
    copies through the kernel (CMA) and sums with a scalar loop. Like MPI's non-blocking
    collectives, a phase advances when the reducer polls (every gradient hook) or waits (end
    of backward). The window is never freed: the bucket's tensors live in it.
    """

    HEADER = 64  # bytes before a segment's data: the phase counter, on its own cache line

    def __init__(self, comm, numel, dtype):
        MPI = c10d._mpi()
        self.comm = comm.Dup()
        self.rank, size = self.comm.Get_rank(), self.comm.Get_size()
        itemsize = np.dtype(_NUMPY_DTYPES[dtype]).itemsize
        info = MPI.Info.Create()
        info.Set("alloc_shared_noncontig", "true")  # each segment on its own pages
        self.win = MPI.Win.Allocate_shared(self.HEADER + numel * itemsize, 1, info=info, comm=self.comm)
        info.Free()
        self.win.Lock_all(MPI.MODE_NOCHECK)  # the passive epoch Win_sync needs
        memory = [self.win.Shared_query(k)[0] for k in range(size)]
        self.counters = [np.frombuffer(m, np.int64, count=1) for m in memory]
        self.counters[self.rank][0] = 0
        self.segments = [np.frombuffer(m, _NUMPY_DTYPES[dtype], count=numel, offset=self.HEADER)
                         for m in memory]
        # the tensor keeps the window alive
        address = memory[self.rank].address + self.HEADER
        self.flat = _core._from_ptr(address, numel, dtype, [numel], [1], self.win)
        bounds = [k * numel // size for k in range(size + 1)]
        self.parts = [slice(bounds[k], bounds[k + 1]) for k in range(size)]
        mine = self.parts[self.rank]
        self.scratch = np.empty(mine.stop - mine.start, _NUMPY_DTYPES[dtype]) if size > 2 else None
        self.phase = 0
        self.count = 0  # phases announced so far
        self.comm.Barrier()  # every header is zero before anyone announces

    def _announce(self):
        self.win.Sync()  # this rank's stores into its segment before the header's
        self.count += 1
        self.counters[self.rank][0] = self.count

    def _everyone_there(self):
        count = self.count
        for counter in self.counters:
            if counter[0] < count:
                return False
        self.win.Sync()  # the other ranks' stores before their headers are visible
        return True

    def start(self):
        self._announce()
        self.phase = 1

    def progress(self, block):
        """Advances through the phases every rank has reached (all of them, waiting, if
        ``block``); True when the reduction is complete."""
        while self.phase:
            spins = 0
            while not self._everyone_there():
                if not block:
                    return False
                spins += 1
                if spins % 4096 == 0:
                    os.sched_yield()  # let another process have the core a moment
            segments, mine = self.segments, self.segments[self.rank]
            if self.phase == 1:
                part = self.parts[self.rank]
                if self.scratch is None:
                    np.add(segments[0][part], segments[1][part], out=mine[part])
                else:
                    np.add(segments[0][part], segments[1][part], out=self.scratch)
                    for segment in segments[2:]:
                        np.add(self.scratch, segment[part], out=self.scratch)
                    mine[part] = self.scratch
            elif self.phase == 2:
                for k, part in enumerate(self.parts):
                    if k != self.rank:
                        mine[part] = segments[k][part]
            else:
                self.phase = 0
                return True
            self._announce()
            self.phase += 1
        return True


class _Bucket:
    """Parameters whose gradients are reduced together through one flat buffer."""

    def __init__(self, params, comm):
        self.params = params
        numel, dtype = sum(p.numel() for p in params), params[0].dtype
        self.shared = None
        if (comm is not None and _SHARED_MEMORY_REDUCTION and numel > 0 and dtype in _NUMPY_DTYPES
                and comm.Get_size() > 1):
            self.shared = _SharedMemoryReduction(comm, numel, dtype)
            self.flat = self.shared.flat
            self.flat.zero_()
        else:
            self.flat = zeros(numel, dtype=dtype)
        self.views, offset = [], 0
        for p in params:
            self.views.append(self.flat[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        self.pending = len(params)
        self.request = None
        self.buffer = None  # the MPI buffer over ``flat`` (made on first use, MPI is then up)

    def start(self, comm):
        """Starts the all-reduce (sum) of ``flat`` over ``comm``'s ranks."""
        if self.shared is not None:
            self.shared.start()
            return
        MPI = c10d._mpi()
        if self.buffer is None:
            self.buffer = c10d._buffer(self.flat)
        self.request = comm.Iallreduce(MPI.IN_PLACE, self.buffer, MPI.SUM)

    def progress(self, block):
        """Lets the all-reduce advance (to its end if ``block``); True when it is done."""
        if self.shared is not None:
            return self.shared.progress(block)
        if self.request is None:
            return True
        if block:
            self.request.Wait()
        elif not self.request.Test():
            return False
        self.request = None
        return True


def _make_buckets(params, cap_bytes, first_cap_bytes, comm):
    """Groups ``params`` (already in reverse registration order) into buckets of one dtype."""
    buckets, current, size = [], [], 0
    cap = first_cap_bytes
    for p in params:
        nbytes = p.numel() * p.element_size()
        if current and (size + nbytes > cap or p.dtype != current[0].dtype):
            buckets.append(_Bucket(current, comm))
            current, size, cap = [], 0, cap_bytes
        current.append(p)
        size += nbytes
    if current:
        buckets.append(_Bucket(current, comm))
    return buckets


def _node_comm(comm):
    """``comm`` when all its ranks share one node's memory, else None."""
    MPI = c10d._mpi()
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    together = node.Get_size() == comm.Get_size()
    node.Free()
    return comm if together else None


def _output_tensors(obj):
    """The tensors in a forward's return value (nested tuples, lists, dicts)."""
    stack, found = [obj], []
    while stack:
        item = stack.pop()
        if isinstance(item, _core.Tensor):
            found.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def _reachable_leaves(outputs):
    """ids of the leaf tensors the graphs of ``outputs`` accumulate into (no recursion)."""
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    leaves = {id(t) for t in outputs if t.grad_fn is None and t.requires_grad}
    seen = set()
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None or id(nxt) in seen:
                continue
            seen.add(id(nxt))
            variable = getattr(nxt, "variable", None)
            if variable is not None:
                leaves.add(id(variable))
            else:
                stack.append(nxt)
    return leaves


def _broadcast_coalesced(pg, tensors, src=0):
    """Broadcasts ``tensors`` from ``src`` with one ``MPI_Bcast`` per dtype."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    with no_grad():
        for group in by_dtype.values():
            flat = cat([t.detach().reshape(-1) for t in group])
            pg.comm.Bcast(c10d._buffer(flat), root=src)
            offset = 0
            for t in group:
                t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                offset += t.numel()


class _Reducer:
    """Bucketed, overlapped gradient averaging (see the module docstring)."""

    def __init__(self, pg, params, bucket_cap_bytes, first_bucket_bytes, find_unused_parameters,
                 gradient_as_bucket_view):
        self.pg = pg
        self.as_view = gradient_as_bucket_view
        self.params = params
        self.find_unused_parameters = find_unused_parameters
        self.buckets = _make_buckets(list(reversed(params)), bucket_cap_bytes, first_bucket_bytes,
                                     _node_comm(pg.comm))
        self.index = {id(p): k for k, p in enumerate(params)}
        self.slot = {}
        for b, bucket in enumerate(self.buckets):
            for i, p in enumerate(bucket.params):
                self.slot[id(p)] = (b, i)
        self.scale = 1.0 / pg.size()
        self.armed = False
        self.next_bucket = 0
        self.used = None
        self.used_request = None
        self.handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]
        # timing hooks for benches/ddp_bench.py: perf_counter at each launch and at the final wait
        self.clock = None
        self.events = []

    def prepare(self, outputs):
        """Arms the reducer for the backward of this forward's ``outputs``."""
        for bucket in self.buckets:
            bucket.pending = len(bucket.params)
        self.next_bucket = 0
        self.armed = True
        self.finish_queued = False
        self.events = []
        if self.find_unused_parameters:
            self._mark_unused(_reachable_leaves(_output_tensors(outputs)))

    def _mark_unused(self, reachable):
        self.used = np.array([id(p) in reachable for p in self.params], dtype=np.int64)
        self.global_used = np.empty_like(self.used)
        self.used_request = self.pg.comm.Iallreduce(self.used, self.global_used, op=c10d._mpi().MAX)
        for p, used in zip(self.params, self.used):
            if not used:
                self._grad_ready(p)

    def _grad_ready(self, p):
        if not self.armed:
            return
        engine = Variable._execution_engine
        if not self.finish_queued and engine._in_backward():
            engine.queue_callback(self._finish)
            self.finish_queued = True
        b, i = self.slot[id(p)]
        bucket = self.buckets[b]
        view = bucket.views[i]
        grad = p.grad
        if grad is None:
            view.zero_()
        else:
            # divided by the world size on its way in (one pass; in place when .grad is the slot)
            _core._copy_scaled_(view, grad, self.scale)
            if self.as_view and grad is not view:
                p.grad = view  # later steps accumulate into the bucket directly
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready_buckets()
        else:
            self._poll()

    def _launch_ready_buckets(self):
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            self.buckets[self.next_bucket].start(self.pg.comm)
            self._record("launch")
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets) and not self.finish_queued:
            self._finalize()

    def _finish(self):
        """The end-of-backward callback: every bucket has started unless a parameter got no
        gradient (then the next forward raises)."""
        self.finish_queued = False
        if self.armed and self.next_bucket == len(self.buckets):
            self._finalize()

    def _poll(self):
        for bucket in self.buckets[:self.next_bucket]:
            bucket.progress(block=False)

    def _record(self, what):
        if self.clock is not None:
            self.events.append((what, self.clock()))

    def _finalize(self):
        self._record("wait")
        for bucket in self.buckets:
            bucket.progress(block=True)
        if self.used_request is not None:
            self.used_request.Wait()
            self.used_request = None
        self._record("done")
        globally_used = self.global_used if self.find_unused_parameters else None
        with no_grad():
            for bucket in self.buckets:
                for p, view in zip(bucket.params, bucket.views):
                    grad = p.grad
                    if grad is view:
                        continue
                    if grad is not None:
                        grad.copy_(view)
                    elif globally_used is None or globally_used[self.index[id(p)]]:
                        p.grad = view if self.as_view else view.clone()
        self.armed = False


class DistributedDataParallel(Module):
    """Data-parallel training on MPI ranks: wrap the model, train as usual.

    Takes PyTorch's arguments; ``device_ids``, ``output_device``, ``dim``, ``check_reduction``,
    ``static_graph`` and the mixed-precision/mesh options have no effect on CPU/MPI.
    ``gradient_as_bucket_view=True`` makes each ``.grad`` a view of its bucket, as in PyTorch:
    no copy back after the all-reduce, and less memory.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None,
                 init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False,
                 bucket_cap_mb_list=None, batched_grad_copy=False, forward_sync_buffers=None):
        super().__init__()
        self.process_group = c10d._world(process_group)
        self.module = module
        self.dim = dim
        self.static_graph = False
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.find_unused_parameters = find_unused_parameters
        self.forward_sync_buffers, init_sync_buffers = _buffer_sync_flags(
            broadcast_buffers, forward_sync_buffers
        )
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        params = _unique(p for p in module.parameters() if p.requires_grad)
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter "
                "that requires a gradient."
            )
        self.bucket_bytes_cap = int((bucket_cap_mb or _DEFAULT_BUCKET_CAP_MB) * _MB)
        first = _DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        if init_sync:
            _verify_param_shape_across_processes(self.process_group, list(module.parameters()))
            states = list(module.parameters())
            if init_sync_buffers:
                states += [b for b in module.buffers()]
            _broadcast_coalesced(self.process_group, _unique(states))
        self.modules_buffers = list(module.buffers())
        self.reducer = _Reducer(self.process_group, params, self.bucket_bytes_cap, first,
                                find_unused_parameters, gradient_as_bucket_view)

    @property
    def broadcast_buffers(self):
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value):
        self.forward_sync_buffers = value

    def forward(self, *inputs, **kwargs):
        # as PyTorch: a module without buffers at construction never syncs any (no walk of the
        # module tree per step); one with buffers syncs the buffers it has now
        if self.forward_sync_buffers and self.require_forward_param_sync and self.modules_buffers:
            self.modules_buffers = list(self.module.buffers())
            if self.modules_buffers and self.process_group.size() > 1:
                _broadcast_coalesced(self.process_group, self.modules_buffers)
        sync = _core.is_grad_enabled() and self.require_backward_grad_sync
        if sync and self.reducer.armed:
            raise RuntimeError(_UNFINISHED_REDUCTION)
        output = self.module(*inputs, **kwargs)
        if sync:
            self.reducer.prepare(output)
        return output

    @contextmanager
    def no_sync(self):
        """Inside, forward/backward accumulate gradients locally; the first synchronised backward
        after it averages the accumulated ``.grad``."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _buffer_sync_flags(broadcast_buffers, forward_sync_buffers):
    """(sync buffers before each forward, sync buffers at construction), as PyTorch 2.13 reads
    the deprecated ``broadcast_buffers`` and ``forward_sync_buffers``."""
    if broadcast_buffers is not None:
        if forward_sync_buffers is not None:
            message = (
                "Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                "`broadcast_buffers` is deprecated and its value is ignored when "
                "`forward_sync_buffers` is provided."
            )
        else:
            message = (
                "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: "
                "unlike `broadcast_buffers=False`, `forward_sync_buffers=False` still syncs "
                "buffers at init. If you rely on buffers NOT being synced at init (e.g. "
                "rank-local buffers), keep using `broadcast_buffers=False` until "
                "`init_sync_buffers` is available."
            )
        warnings.warn(message, FutureWarning, stacklevel=3)
    if forward_sync_buffers is not None:
        return forward_sync_buffers, True
    effective = True if broadcast_buffers is None else broadcast_buffers
    return effective, effective


def _unique(tensors):
    seen, out = set(), []
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _verify_param_shape_across_processes(pg, params):
    shapes = [(tuple(p.shape), str(p.dtype)) for p in params]
    everyone = pg.comm.allgather(shapes)
    for rank, theirs in enumerate(everyone):
        if len(theirs) != len(shapes):
            raise RuntimeError(
                f"DDP expects same model across all ranks, but Rank {pg.rank()} has "
                f"{len(shapes)} params, while rank {rank} has inconsistent {len(theirs)} params."
            )
        for i, (mine, other) in enumerate(zip(shapes, theirs)):
            if mine != other:
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {pg.rank()} has "
                    f"parameter {i} with shape/dtype {mine}, while rank {rank} has {other}."
                )
