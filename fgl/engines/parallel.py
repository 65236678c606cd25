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
# scratch sets per thread for factor-graph blocks (ordered_reduce): on 150 CoNLL-2003
# skip-chain articles under TRW, two threads took 0.84x the time of one set each
GRAPH_SETS = 2


def blocks(ptr: np.ndarray, least: int | None = None) -> list[tuple[int, int]]:
    """Items 0..n-1 of costs ``ptr`` (as for ``contiguous_runs``) cut into
    contiguous blocks of about equal cost, how many depending on the data
    only: ``least`` (default ``BLOCK_COST``) each at least, ``MAX_BLOCKS``
    at most, one per item at most, and when more than one, an even number,
    from 8 on a multiple of 4, where the items allow (on CoNLL-2000, 12
    blocks instead of 11: with 11, one of two threads ran the last block
    alone; each block more costs its sums, ~1 % of a block's time)."""
    n = len(ptr) - 1
    if n <= 0:
        return []
    least = BLOCK_COST if least is None else least
    total = float(ptr[-1])
    k = max(1, min(n, MAX_BLOCKS, int(np.ceil(total / least)) if total > 0 else 1))
    if k > 1:   # (even, so that 2 threads end together; from 8 on, 4 threads too)
        step = 2 if k < 8 else 4
        k = min(n, MAX_BLOCKS, -(-k // step) * step)
    return contiguous_runs(ptr, k)


def ordered_reduce(jobs: int, n_blocks: int, compute: Callable, combine: Callable[[int, object],
                   None], scratch: Callable[[], tuple] | None = None, sets: int = 1) -> None:
    """``combine(k, compute(k, *s))`` for k = 0, 1, ..., n_blocks - 1 on up
    to ``jobs`` threads, each computing blocks into scratch arrays ``s``
    (made here, in the calling thread: see ``run_parallel``), while the
    results are combined *in block order*, one at a time: what ``combine``
    adds up is the same, bit for bit, for any ``jobs``.  ``compute`` must
    give a block's result from its scratch alone (zero what it reuses); a
    result may be the scratch itself, which is not reused before it is
    combined.

    There are ``sets`` scratch sets per thread.  A thread whose block is
    done before an earlier one leaves its result to be combined in turn and
    takes the next block into a free set; it waits only when every set
    holds a result still waiting for an earlier block.  With one set per
    thread it waits for every earlier block; blocks of very unequal cost —
    loopy inference, whose sweeps vary by instance — want more
    (``GRAPH_SETS``).  An error in one thread — a stop request:
    ``fgl.stopping`` — ends the others at their next block and is raised."""
    threads = min(resolve_jobs(jobs), n_blocks)
    if threads <= 1:
        s = scratch() if scratch else ()
        for k in range(n_blocks):
            combine(k, compute(k, *s))
        return
    free = [scratch() if scratch else () for _ in range(max(1, sets) * threads)]
    ready: dict[int, tuple] = {}   # block -> (result, its scratch), waiting for its turn
    turn = threading.Condition()
    state = {"taken": 0, "done": 0, "failed": False}

    def worker(_: int) -> None:
        while True:
            with turn:
                while not (state["failed"] or state["taken"] >= n_blocks or free):
                    turn.wait()
                if state["failed"] or state["taken"] >= n_blocks:
                    return
                k = state["taken"]
                state["taken"] += 1
                s = free.pop()
            try:
                result = compute(k, *s)
                with turn:
                    ready[k] = (result, s)
                    while state["done"] in ready and not state["failed"]:
                        j = state["done"]
                        result_j, s_j = ready.pop(j)
                        combine(j, result_j)
                        state["done"] += 1
                        free.append(s_j)
                    turn.notify_all()
            except BaseException:
                with turn:
                    state["failed"] = True
                    turn.notify_all()
                raise

    pooled(threads, worker, range(threads))
