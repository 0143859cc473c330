"""The DataLoader worker process: its loop, seeding and ``get_worker_info``, and the
``ExceptionWrapper`` that carries a worker's exception to the main process."""

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

from ...._core import set_num_threads
from ...._functions import manual_seed
from .fetch import _DatasetKind

MP_STATUS_CHECK_INTERVAL = 5.0
r"""Interval (seconds) at which workers check that the main process is alive, and
the main process checks that its workers are."""


class KeyErrorMessage(str):
    r"""str subclass that returns itself in repr (KeyError repr()s its argument)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    r"""Wraps an exception plus its traceback text to send it across processes."""

    def __init__(self, exc_info=None, where="in background"):
        # Keep only the type and the formatted text: storing exc_info would keep the
        # traceback (and its frames) alive and cannot be pickled.
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        r"""Re-raise the wrapped exception (same type) in the current process."""
        # e.g. "Caught ValueError in DataLoader worker process 2.\nOriginal Traceback ..."
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # the exception type cannot be built from one message argument
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            # break the cycle frame -> exception -> traceback -> frame, which would keep
            # the DataLoader iterator (and its workers) alive until the next gc run
            del exception


class ManagerWatchdog:
    r"""Tells whether the process that started this worker is still alive."""

    def __init__(self):
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self):
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    r"""Information about the current DataLoader worker process.

    Attributes:
        id: the worker id (0 to num_workers - 1)
        num_workers: total number of workers
        seed: random seed set for this worker
        dataset: this worker's copy of the dataset
    """

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


def get_worker_info():
    r"""Information about the current DataLoader worker process, or ``None`` in the
    main process.

    The result has ``id``, ``num_workers``, ``seed`` (``base_seed + id``, also used
    to seed ``ferrograd``, ``random`` and numpy in the worker) and ``dataset``
    (this worker's copy, e.g. to shard an :class:`IterableDataset`).
    """
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    r"""Sent by a worker whose IterableDataset replica is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    r"""Sent to persistent workers at the start of a new epoch."""

    seed: object = None


def _generate_state(base_seed, worker_id):
    # numpy's SeedSequence hashing as in PyTorch (MIT licensed: Copyright (c) 2015
    # Melissa E. O'Neill, (c) 2019 NumPy Developers), so that numpy's stream in a
    # worker does not coincide with `random`'s, seeded with the same number.
    INIT_A = 0x43B0D7E5
    MULT_A = 0x931E8875
    INIT_B = 0x8B51F9DD
    MULT_B = 0x58F38DED
    MIX_MULT_L = 0xCA01F9DD
    MIX_MULT_R = 0x4973F715
    XSHIFT = 4 * 8 // 2
    MASK32 = 0xFFFFFFFF

    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4

    hash_const_A = INIT_A

    def hash_(value):
        nonlocal hash_const_A
        value = (value ^ hash_const_A) & MASK32
        hash_const_A = (hash_const_A * MULT_A) & MASK32
        value = (value * hash_const_A) & MASK32
        value = (value ^ (value >> XSHIFT)) & MASK32
        return value

    def mix(x, y):
        result_x = (MIX_MULT_L * x) & MASK32
        result_y = (MIX_MULT_R * y) & MASK32
        result = (result_x - result_y) & MASK32
        result = (result ^ (result >> XSHIFT)) & MASK32
        return result

    for i in range(len(pool)):
        pool[i] = hash_(entropy[i])

    # mix all bits together so that late bits can affect earlier bits
    for i_src in range(len(pool)):
        for i_dst in range(len(pool)):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_(pool[i_src]))

    hash_const_B = INIT_B
    state = []
    for i_dst in range(4):
        data_val = pool[i_dst]
        data_val = (data_val ^ hash_const_B) & MASK32
        hash_const_B = (hash_const_B * MULT_B) & MASK32
        data_val = (data_val * hash_const_B) & MASK32
        data_val = (data_val ^ (data_val >> XSHIFT)) & MASK32
        state.append(data_val)
    return state


def _worker_loop(
    dataset_kind,
    dataset,
    index_queue,
    data_queue,
    done_event,
    auto_collation,
    collate_fn,
    drop_last,
    base_seed,
    init_fn,
    worker_id,
    num_workers,
    persistent_workers,
):
    # Protocol (as PyTorch's): the main process sends (idx, index) tasks and finally
    # None; the worker answers (idx, data), where data may be an ExceptionWrapper or,
    # for an exhausted IterableDataset, _IterableDatasetStopIteration.  After
    # done_event is set, tasks are skipped until None arrives.
    try:
        set_num_threads(1)
        seed = base_seed + worker_id
        random.seed(seed)
        manual_seed(seed)
        np.random.seed(_generate_state(base_seed, worker_id))

        global _worker_info
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        init_exception = None

        try:
            if init_fn is not None:
                init_fn(worker_id)

            fetcher = _DatasetKind.create_fetcher(
                dataset_kind, dataset, auto_collation, collate_fn, drop_last
            )
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        # An IterableDataset replica may end before the others: the worker then sets
        # iteration_end and only waits for the final None.
        iteration_end = False

        watchdog = ManagerWatchdog()

        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                # acknowledge, and start a new epoch with a fresh fetcher
                data_queue.put((r, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(
                    dataset_kind, dataset, auto_collation, collate_fn, drop_last
                )
                continue
            elif r is None:
                # the final signal
                break
            elif done_event.is_set() or iteration_end:
                # skip work until the final signal arrives
                continue
            idx, index = r
            if init_exception is not None:
                data = init_exception
                init_exception = None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, idx, index, r  # save memory
    except KeyboardInterrupt:
        # the main process raises KeyboardInterrupt anyway
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
