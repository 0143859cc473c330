"""``DataLoader``: iterates over a dataset in batches, in this process or in workers.

Follows ``torch.utils.data.dataloader``.  With ``num_workers > 0`` each worker is a
``multiprocessing`` process (the platform's default start method unless
``multiprocessing_context`` says otherwise); it receives indices through its own
queue and sends collated batches back, pickled, through one shared result queue.
The main process hands out at most ``prefetch_factor * num_workers`` tasks at a
time and returns the batches in order.
"""

import itertools
import multiprocessing as python_multiprocessing
import os
import queue
import warnings
from math import ceil
from pickle import PicklingError
from typing import Generic, TypeVar

from ..._factories import randint
from . import _utils
from ._utils import ExceptionWrapper
from ._utils.fetch import _DatasetKind
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

_T_co = TypeVar("_T_co", covariant=True)

default_collate = _utils.collate.default_collate
default_convert = _utils.collate.default_convert

get_worker_info = _utils.worker.get_worker_info


class _InfiniteConstantSampler(Sampler):
    r"""Like ``itertools.repeat(None, None)``: the sampler of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


# The index queues of every running multi-process iterator, keyed by id(iterator).
# When an abandoned iterator is part of a reference cycle (e.g. held by a stored
# exception's traceback), the garbage collector would otherwise finalize its queues
# (stopping their feeder threads) before calling the iterator's __del__, and the
# final ``None`` sent by the shutdown would never reach the workers.
_live_index_queues: dict[int, list] = {}


def _new_base_seed(generator):
    return int(randint(0, 2**62, (), generator=generator).item())


def _cpu_count():
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


class DataLoader(Generic[_T_co]):
    r"""Combines a dataset and a sampler, and provides an iterable over the dataset.

    Args:
        dataset (Dataset): dataset from which to load the data.
        batch_size (int, optional): samples per batch (default: ``1``); ``None``
            disables automatic batching.
        shuffle (bool, optional): reshuffle the data at every epoch (default: ``False``).
        sampler (Sampler or Iterable, optional): the order of the indices; mutually
            exclusive with ``shuffle``.
        batch_sampler (Sampler or Iterable, optional): like ``sampler`` but yields
            lists of indices; mutually exclusive with ``batch_size``, ``shuffle``,
            ``sampler`` and ``drop_last``.
        num_workers (int, optional): number of worker processes; ``0`` loads in the
            main process (default: ``0``).
        collate_fn (Callable, optional): merges a list of samples into a batch.
        pin_memory (bool, optional): accepted; there is no accelerator, so it only warns.
        drop_last (bool, optional): drop the last incomplete batch (default: ``False``).
        timeout (numeric, optional): if positive, the timeout in seconds for
            collecting a batch from the workers (default: ``0``).
        worker_init_fn (Callable, optional): called in each worker with its id, after
            seeding and before loading.
        multiprocessing_context (str or multiprocessing context, optional): start
            method of the workers (default: the platform's default).
        generator (Generator, optional): used by ``RandomSampler`` and to draw the
            workers' ``base_seed``.
        prefetch_factor (int, optional, keyword-only): batches loaded in advance by each
            worker (default ``2`` when ``num_workers > 0``).
        persistent_workers (bool, optional): keep the workers alive between epochs.
        in_order (bool, optional): return batches in order (default ``True``).
    """

    __initialized = False

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=None,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        pin_memory=False,
        drop_last=False,
        timeout=0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor=None,
        persistent_workers=False,
        pin_memory_device="",
        in_order=True,
    ):
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; "
                "use num_workers=0 to disable multiprocessing."
            )

        if timeout < 0:
            raise ValueError("timeout option should be non-negative")

        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")

        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            elif batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"batch_sampler option, but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")

        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive "
                    "with batch_size, shuffle, sampler, and "
                    "drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError(
                    "batch_size=None option disables auto-batching "
                    "and is mutually exclusive with drop_last"
                )

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)

        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator

        if collate_fn is None:
            if self._auto_collation:
                collate_fn = _utils.collate.default_collate
            else:
                collate_fn = _utils.collate.default_convert

        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers

        self.__initialized = True
        # set by len(loader) on an IterableDataset, to warn when more batches come
        self._IterableDataset_len_called = None

        self._iterator = None

        self.check_worker_number_rationality()

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        else:
            self.check_worker_number_rationality()
            return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        if multiprocessing_context is not None:
            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid_start_methods = python_multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid_start_methods:
                        raise ValueError(
                            "multiprocessing_context option "
                            f"should specify a valid start method in {valid_start_methods!r}, but got "
                            f"multiprocessing_context={multiprocessing_context!r}"
                        )
                    multiprocessing_context = python_multiprocessing.get_context(multiprocessing_context)

                if not isinstance(multiprocessing_context, python_multiprocessing.context.BaseContext):
                    raise TypeError(
                        "multiprocessing_context option should be a valid context "
                        "object or a string specifying the start method, but got "
                        f"multiprocessing_context={multiprocessing_context}"
                    )
            else:
                raise ValueError(
                    "multiprocessing_context can only be used with "
                    "multi-process loading (num_workers > 0), but got "
                    f"num_workers={self.num_workers}"
                )

        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in (
            "batch_size",
            "batch_sampler",
            "sampler",
            "drop_last",
            "dataset",
            "persistent_workers",
        ):
            raise ValueError(
                f"{attr} attribute should not be set after {self.__class__.__name__} is initialized"
            )
        super().__setattr__(attr, val)

    def __iter__(self):
        # With persistent workers one iterator (and its workers) serves all epochs.
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        else:
            return self._get_iterator()

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        # what the iterator draws from: batches of indices, or single indices
        if self._auto_collation:
            return self.batch_sampler
        else:
            return self.sampler

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            # An estimate from len(dataset): workers may still split the last batch.
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = ceil(length / self.batch_size)
            return length
        else:
            return len(self._index_sampler)

    def check_worker_number_rationality(self):
        r"""Warn when more workers are asked for than there are CPUs."""
        if not self.num_workers:
            return
        max_num_worker_suggest = _cpu_count()
        cpuset_checked = hasattr(os, "sched_getaffinity")
        if max_num_worker_suggest is None or self.num_workers > max_num_worker_suggest:
            if max_num_worker_suggest is not None:
                suggested = (
                    f"Our suggested max number of worker in current system is {max_num_worker_suggest}"
                    f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is "
                    "smaller than what this DataLoader is going to create."
                )
            else:
                suggested = (
                    "DataLoader is not able to compute a suggested max number of worker in current system."
                )
            warnings.warn(
                f"This DataLoader will create {self.num_workers} worker processes in total. {suggested} "
                "Please be aware that excessive worker creation might get DataLoader running slow or even "
                "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                stacklevel=2,
            )


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn(
                "pin_memory_device is deprecated, the current accelerator will be used as the device,"
                f"ignore pin_memory_device='{loader.pin_memory_device}'.",
                stacklevel=2,
            )
        if loader.pin_memory:
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=2,
            )
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _new_base_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (
            self._dataset_kind == _DatasetKind.Iterable
            and self._IterableDataset_len_called is not None
            and self._num_yielded > self._IterableDataset_len_called
        ):
            warn_msg = (
                f"Length of IterableDataset {self._dataset} was reported to be {self._IterableDataset_len_called}"
                f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. "
            )
            if self._num_workers > 0:
                warn_msg += (
                    "For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples."
                )
            warnings.warn(warn_msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        if self._num_workers != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires num_workers == 0")
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind,
            self._dataset,
            self._auto_collation,
            self._collate_fn,
            self._drop_last,
        )

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        return self._dataset_fetcher.fetch(index)  # may raise StopIteration


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    r"""Iterates once over the DataLoader's dataset with worker processes.

    Task ``i`` (an index or a batch of indices) goes to worker ``i % num_workers``
    (skipping workers whose IterableDataset replica has ended); results arriving
    early wait in ``_task_info`` until their turn.  ``_task_info[idx]`` is
    ``(worker_id,)`` while the task is pending and ``(worker_id, data)`` once its
    result is in.  An exception raised in a worker is re-raised by ``__next__``
    (the iterator stays usable).  Shutdown (end of the data, or ``__del__``) sets
    ``done_event``, sends ``None`` to every worker, joins them, and terminates any
    that do not exit in time.
    """

    def __init__(self, loader):
        super().__init__(loader)

        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order

        if self._num_workers <= 0:
            raise AssertionError("num_workers must be greater than 0 for MultiProcessingDataLoaderIter")
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")

        if loader.multiprocessing_context is None:
            multiprocessing_context = python_multiprocessing
        else:
            multiprocessing_context = loader.multiprocessing_context

        self._worker_init_fn = loader.worker_init_fn
        # A forked process (e.g. a worker of another DataLoader) inherits a copy of this
        # iterator; only the process that started the workers may shut them down.
        self._owner_pid = os.getpid()
        self._worker_result_queue = multiprocessing_context.Queue()
        self._shutdown = False
        self._workers_done_event = multiprocessing_context.Event()

        self._index_queues = []
        self._workers = []
        _live_index_queues[id(self)] = self._index_queues
        try:
            for i in range(self._num_workers):
                index_queue = multiprocessing_context.Queue()
                # the main process never waits for this queue's feeder thread to flush
                index_queue.cancel_join_thread()
                w = multiprocessing_context.Process(
                    target=_utils.worker._worker_loop,
                    args=(
                        self._dataset_kind,
                        self._dataset,
                        index_queue,
                        self._worker_result_queue,
                        self._workers_done_event,
                        self._auto_collation,
                        self._collate_fn,
                        self._drop_last,
                        self._base_seed,
                        self._worker_init_fn,
                        i,
                        self._num_workers,
                        self._persistent_workers,
                    ),
                )
                w.daemon = True
                # Append before start(), so that a failed start still gets cleaned up.
                self._index_queues.append(index_queue)
                self._workers.append(w)
                try:
                    w.start()
                except (TypeError, AttributeError, PicklingError):
                    warnings.warn(
                        "Got pickle error when attempting to start a worker Process. "
                        "This might be because the worker Process arguments are not picklable. "
                        "Python 3.14+ changed the multiprocessing start method in non-Mac POSIX platforms "
                        "to 'forkserver', which requires the worker Process arguments to be picklable. "
                        "You can also try multiprocessing.set_start_method('fork').",
                        stacklevel=2,
                    )
                    raise
        except BaseException:
            # stop the workers that did start
            self._workers_status = [w.pid is not None for w in self._workers]
            self._shutdown_workers()
            raise

        self._data_queue = self._worker_result_queue
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0  # idx of the next task to be sent to workers
        self._rcvd_idx = 0  # idx of the next task to be returned in __next__
        # idx -> (worker_id,) while pending, (worker_id, data) once received
        self._task_info = {}
        # always equal to count(v for v in task_info.values() if len(v) == 1)
        self._tasks_outstanding = 0
        # whether each worker still has data (False once its IterableDataset ended)
        self._workers_status = [True for _ in range(self._num_workers)]
        self._workers_num_tasks = [0 for _ in range(self._num_workers)]
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # persistent workers: start a new epoch and wait for every acknowledgement
            for idx in range(self._num_workers):
                self._index_queues[idx].put(_utils.worker._ResumeIteration())
            resume_iteration_cnt = self._num_workers
            while resume_iteration_cnt > 0:
                return_idx, return_data = self._get_data()
                if isinstance(return_idx, _utils.worker._ResumeIteration):
                    resume_iteration_cnt -= 1
        # prime the prefetch loop
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout=_utils.MP_STATUS_CHECK_INTERVAL):
        # Returns (True, data) or (False, None) on timeout; raises if a worker died.
        try:
            data = self._data_queue.get(timeout=timeout)
            return (True, data)
        except Exception as e:
            failed_workers = []
            for worker_id, w in enumerate(self._workers):
                if self._workers_status[worker_id] and not w.is_alive():
                    failed_workers.append(w)
                    self._mark_worker_as_unavailable(worker_id)
            if len(failed_workers) > 0:
                pids_str = ", ".join(str(w.pid) for w in failed_workers)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids_str}) exited unexpectedly") from e
            if isinstance(e, queue.Empty):
                return (False, None)
            raise

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            else:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        else:
            while True:
                success, data = self._try_get_data()
                if success:
                    return data

    def _next_data(self):
        while True:
            # Skip the tasks of workers whose IterableDataset replica has ended.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx, None)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break  # has data or is still active
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                # no task is outstanding: the epoch is over
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            # the next result already arrived (out of order)
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            if self._shutdown or self._tasks_outstanding <= 0:
                raise AssertionError(
                    "Invalid iterator state: shutdown or no outstanding tasks when fetching next data"
                )
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable:
                if isinstance(data, _utils.worker._IterableDatasetStopIteration):
                    if self._persistent_workers:
                        self._workers_status[data.worker_id] = False
                    else:
                        self._mark_worker_as_unavailable(data.worker_id)
                    self._try_put_index()
                    continue

            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                # store the result until its turn comes
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        if self._tasks_outstanding >= max_tasks:
            raise AssertionError("Number of outstanding tasks exceeded maximum allowed tasks")

        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # find the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order:
                    break
                elif self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(self._workers_status):
                    break
        else:
            # no active worker: the index is dropped (an IterableDataset has ended)
            return

        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_idx):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id, shutdown=False):
        # Tell the worker to exit; its remaining tasks will be skipped.
        q = self._index_queues[worker_id]
        q.put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        # Called at the end of an epoch, on error, and from __del__ (an abandoned
        # iterator).  During interpreter shutdown the multiprocessing module cleans up
        # its daemonic children itself.
        if _utils is None or _utils.python_exit_status is True or _utils.python_exit_status is None:
            return
        if not self._shutdown and os.getpid() == self._owner_pid:
            self._shutdown = True
            try:
                # Workers skip any pending task once this is set, then exit on None.
                self._workers_done_event.set()
                for worker_id in range(len(self._workers)):
                    if self._persistent_workers or self._workers_status[worker_id]:
                        self._mark_worker_as_unavailable(worker_id, shutdown=True)
                for w in self._workers:
                    if w.pid is not None:
                        w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
                for q in self._index_queues:
                    q.cancel_join_thread()
                    q.close()
            finally:
                for w in self._workers:
                    if w.pid is not None and w.is_alive():
                        w.terminate()
                        w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
                self._worker_result_queue.cancel_join_thread()
                self._worker_result_queue.close()
                _live_index_queues.pop(id(self), None)

    def __del__(self):
        if hasattr(self, "_shutdown"):
            self._shutdown_workers()
