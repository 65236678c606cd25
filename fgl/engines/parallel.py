"""Parallel work over instances, and sums that are the same bits for any
number of threads.

Work is split into contiguous runs of instances, one thread each (the numba
kernels release the GIL).  Sums over the data — the objective and its
gradient — are made over ``blocks`` fixed by the data alone and added in
block order (``ordered_reduce``), so that they, and a training run, are the
same bits for any number of threads.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Sequence

import numpy as np


def contiguous_runs(ptr: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """Items 0..n-1 whose costs add up to ``ptr`` (``ptr[i]`` the cost of
    items before i, ``ptr[n]`` the total) cut into at most ``parts``
    non-empty contiguous runs of about equal cost."""
    n = len(ptr) - 1
    bounds = np.searchsorted(ptr, np.linspace(0, ptr[-1], parts + 1)[1:-1])
    cuts = [0, *sorted(set(int(b) for b in bounds)), n]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def resolve_jobs(jobs: int | None) -> int:
    """``None`` or 0 means every core; more than the cores means every core
    (a thread per job beyond them only adds memory and switching)."""
    return min(jobs, cores()) if jobs and jobs > 0 else cores()


_POOLS: dict[int, ThreadPoolExecutor] = {}


def thread_pool(workers: int) -> ThreadPoolExecutor:
    """A pool of ``workers`` threads, made once and reused by every
    evaluation (the numba kernels release the GIL)."""
    if workers not in _POOLS:
        _POOLS[workers] = ThreadPoolExecutor(workers, thread_name_prefix="fgl")
    return _POOLS[workers]


def pooled(workers: int, fn: Callable, items: Sequence) -> list:
    """``[fn(x) for x in items]`` on the pool of ``workers`` threads.  When
    one raises (a stop request: ``fgl.stopping``), or the waiting thread is
    interrupted, the items not yet started are cancelled and those running
    are waited for (a stop request ends them at their next safe point):
    nothing runs on after the error is raised here."""
    futures = [thread_pool(workers).submit(fn, x) for x in items]
    try:
        return [f.result() for f in futures]
    except BaseException:
        for f in futures:
            f.cancel()
        wait(futures)
        raise


def map_instances(jobs: int, n: int, fn: Callable[[int], object]) -> list:
    """``[fn(i) for i in range(n)]``, on up to ``jobs`` threads."""
    jobs = min(resolve_jobs(jobs), max(n, 1))
    if jobs == 1:
        return [fn(i) for i in range(n)]
    return pooled(jobs, fn, range(n))


# The blocks sums are made over: a partition of the data fixed by the data alone, so that
# a sum over it — an objective, a gradient — is the same bits for any number of threads
# (a block's sums cost a pass over the features: blocks are large enough for that not to
# count, and a data set smaller than one block is summed as one run, as it always was)
BLOCK_COST = 20_000          # tokens of a chain or segment block, at least
GRAPH_BLOCK_COST = 200_000   # factor-table entries of a factor-graph block, at least
MAX_BLOCKS = 64              # blocks at most


def blocks(ptr: np.ndarray, least: int | None = None) -> list[tuple[int, int]]:
    """Items 0..n-1 of costs ``ptr`` (as for ``contiguous_runs``) cut into
    contiguous blocks of about equal cost, how many depending on the data
    only: ``least`` (default ``BLOCK_COST``) each at least, ``MAX_BLOCKS``
    at most, one per item at most."""
    n = len(ptr) - 1
    if n <= 0:
        return []
    least = BLOCK_COST if least is None else least
    total = float(ptr[-1])
    k = max(1, min(n, MAX_BLOCKS, int(np.ceil(total / least)) if total > 0 else 1))
    return contiguous_runs(ptr, k)


def ordered_reduce(jobs: int, n_blocks: int, compute: Callable, combine: Callable[[int, object],
                   None], scratch: Callable[[], tuple] | None = None) -> None:
    """``combine(k, compute(k, *s))`` for k = 0, 1, ..., n_blocks - 1 on up
    to ``jobs`` threads, each computing blocks into scratch arrays ``s`` of
    its own (made here, in the calling thread: see ``run_parallel``) and
    combining them *in block order*, one at a time, before it takes the next
    block: what ``combine`` adds up is the same, bit for bit, for any
    ``jobs``.  ``compute`` must give a block's result from its scratch
    alone (zero what it reuses).  An error in one thread — a stop request:
    ``fgl.stopping`` — ends the others at their next block and is raised."""
    threads = min(resolve_jobs(jobs), n_blocks)
    if threads <= 1:
        s = scratch() if scratch else ()
        for k in range(n_blocks):
            combine(k, compute(k, *s))
        return
    scratches = [scratch() if scratch else () for _ in range(threads)]
    turn = threading.Condition()
    state = {"taken": 0, "done": 0, "failed": False}

    def worker(t: int) -> None:
        s = scratches[t]
        while True:
            with turn:
                if state["failed"] or state["taken"] >= n_blocks:
                    return
                k = state["taken"]
                state["taken"] += 1
            try:
                result = compute(k, *s)
                with turn:
                    while state["done"] != k and not state["failed"]:
                        turn.wait()
                    if state["failed"]:
                        return
                    combine(k, result)
                    state["done"] += 1
                    turn.notify_all()
            except BaseException:
                with turn:
                    state["failed"] = True
                    turn.notify_all()
                raise

    pooled(threads, worker, range(threads))
