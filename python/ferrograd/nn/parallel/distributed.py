"""``DistributedDataParallel``: gradients averaged across MPI ranks while backward runs.

How a step goes (PyTorch's reducer, in Python):

- At construction rank 0's parameters and buffers are broadcast, and the parameters that require
  grad are grouped into buckets of at most ``bucket_cap_mb`` MiB (the first one 1 MiB when the
  default is used), in reverse order of registration: roughly the order backward produces
  their gradients. Each bucket owns one flat buffer.
- ``forward`` arms the reducer (unless inside ``no_sync()`` or with grad disabled).
- Each parameter's ``register_post_accumulate_grad_hook`` copies its ``.grad``, divided by the
  world size, into its slot (one native pass, ``_core._copy_scaled_``; in place when ``.grad``
  already is the slot); when a bucket's last slot is filled its ``MPI_Iallreduce`` starts, so
  the reduction runs while backward continues. Buckets start in index order on every rank (MPI
  needs the same order everywhere); every later hook polls the pending requests so MPI makes
  progress.
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


class _Bucket:
    """Parameters whose gradients are reduced together through one flat buffer."""

    def __init__(self, params):
        self.params = params
        self.flat = zeros(sum(p.numel() for p in params), dtype=params[0].dtype)
        self.views, offset = [], 0
        for p in params:
            self.views.append(self.flat[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        self.pending = len(params)
        self.request = None
        self.buffer = None  # the MPI buffer over ``flat`` (made on first use, MPI is then up)


def _make_buckets(params, cap_bytes, first_cap_bytes):
    """Groups ``params`` (already in reverse registration order) into buckets of one dtype."""
    buckets, current, size = [], [], 0
    cap = first_cap_bytes
    for p in params:
        nbytes = p.numel() * p.element_size()
        if current and (size + nbytes > cap or p.dtype != current[0].dtype):
            buckets.append(_Bucket(current))
            current, size, cap = [], 0, cap_bytes
        current.append(p)
        size += nbytes
    if current:
        buckets.append(_Bucket(current))
    return buckets


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
        self.buckets = _make_buckets(list(reversed(params)), bucket_cap_bytes, first_bucket_bytes)
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
            bucket.request = None
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
        MPI = c10d._mpi()
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            if bucket.buffer is None:
                bucket.buffer = c10d._buffer(bucket.flat)
            bucket.request = self.pg.comm.Iallreduce(MPI.IN_PLACE, bucket.buffer, MPI.SUM)
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
        requests = [b.request for b in self.buckets[:self.next_bucket] if b.request is not None]
        if requests:
            c10d._mpi().Request.Testall(requests)

    def _record(self, what):
        if self.clock is not None:
            self.events.append((what, self.clock()))

    def _finalize(self):
        MPI = c10d._mpi()
        self._record("wait")
        MPI.Request.Waitall([b.request for b in self.buckets])
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
        self.reducer = _Reducer(self.process_group, params, self.bucket_bytes_cap, first,
                                find_unused_parameters, gradient_as_bucket_view)

    @property
    def broadcast_buffers(self):
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value):
        self.forward_sync_buffers = value

    def forward(self, *inputs, **kwargs):
        if self.forward_sync_buffers and self.require_forward_param_sync:
            buffers = list(self.module.buffers())
            if buffers and self.process_group.size() > 1:
                _broadcast_coalesced(self.process_group, buffers)
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
