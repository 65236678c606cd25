"""Encoded data and parallel work for the exact sequence engines.

``EncodedData`` is the integer-indexed form of a data set that the chain and
semi-Markov kernels read: per unit (a token; or a candidate segment for a
semi-Markov program), the active attribute rows and their values (CSR),
built once per data set.  Work is split into contiguous runs of sequences,
one thread each (the numba kernels release the GIL).  Sums over the data —
the objective and its gradient — are made over ``blocks`` fixed by the data
alone and added in block order (``ordered_reduce``), so that they, and a
training run, are the same bits for any number of threads.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from fgl import stopping


def unit_ones(count: int) -> np.ndarray:
    """The values of ``count`` binary attributes: a read-only view of one
    1.0 (stride 0), so binary data sets store no values at all."""
    return np.broadcast_to(np.ones(1), (count,))


@dataclass
class EncodedData:
    """Sequences as flat integer arrays (CSR over units: tokens for chain
    programs; (token, segment length) pairs, ``units_per_token`` = L of them
    per token, for semi-Markov programs)."""

    seq_ptr: np.ndarray   # [N+1] token offset of each sequence
    tok_ptr: np.ndarray   # [units+1] offset of each unit's attributes
    tok_row: np.ndarray   # [nnz] attribute row (template, attribute) ids, int32
    tok_val: np.ndarray   # [nnz] attribute values (``unit_ones`` when all are 1)
    gold: np.ndarray | None  # [tokens] gold (segment) label ids, or None
    starts: np.ndarray | None = None  # [tokens] 1 where a gold segment starts
    units_per_token: int = 1

    @property
    def n_sequences(self) -> int:
        return len(self.seq_ptr) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.seq_ptr[-1])

    def subset(self, i0: int, i1: int) -> "EncodedData":
        """Sequences ``i0..i1-1`` on their own (views, no copies)."""
        a, b = int(self.seq_ptr[i0]), int(self.seq_ptr[i1])
        m = self.units_per_token
        lo, hi = int(self.tok_ptr[a * m]), int(self.tok_ptr[b * m])
        return EncodedData(self.seq_ptr[i0:i1 + 1] - a, self.tok_ptr[a * m:b * m + 1] - lo,
                           self.tok_row[lo:hi], self.tok_val[lo:hi],
                           None if self.gold is None else self.gold[a:b],
                           None if self.starts is None else self.starts[a:b], m)

    def split(self, flat: np.ndarray) -> list[np.ndarray]:
        """A flat per-token array cut into one view per sequence."""
        return [flat[self.seq_ptr[i]:self.seq_ptr[i + 1]] for i in range(self.n_sequences)]

    def chunks(self, jobs: int) -> list[tuple[int, int]]:
        """Split the sequences into ``jobs`` contiguous runs of about equal
        token counts (the unit of parallel work)."""
        return contiguous_runs(self.seq_ptr, max(1, min(jobs, self.n_sequences)))


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


def run_parallel(jobs: int, data: EncodedData, fn: Callable,
                 scratch: Callable[[], tuple] | None = None) -> list:
    """Run ``fn(i0, i1, *scratch())`` on contiguous runs of sequences, one
    thread each.  ``scratch`` (the per-part output arrays) is called here,
    in the calling thread: arrays a worker thread allocates come from its
    own malloc arena, whose freed memory the other threads cannot reuse."""
    args = [(i0, i1, *(scratch() if scratch else ())) for i0, i1 in data.chunks(resolve_jobs(jobs))]
    if len(args) <= 1:      # (none: no sequences)
        return [fn(*a) for a in args]
    return pooled(len(args), lambda a: fn(*a), args)


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


def dense_block_sums(seq_ptr: np.ndarray, jobs: int, n_features: int, w_dense: np.ndarray,
                     dense_feats: np.ndarray, dense_slot: np.ndarray,
                     kernel: Callable) -> tuple[float, np.ndarray]:
    """Σ log Z and expected counts of an exact sequence engine over blocks
    of sequences fixed by the data (``blocks``), added in block order
    (``ordered_reduce``): the same bits for any ``jobs``.  ``kernel(i0, i1,
    grad, grad_dense)`` adds sequences i0..i1-1's counts to zeroed sparse
    ``grad`` and dense (``w_dense``-shaped) ``grad_dense`` and returns their
    Σ log Z; the dense counts join the sparse at ``dense_feats`` by
    ``dense_slot``.  A training run's stop request is heard between blocks."""
    cuts = blocks(seq_ptr)
    grad_sum = np.zeros(n_features)
    log_z = [0.0]

    def compute(k: int, grad: np.ndarray, grad_dense: np.ndarray) -> tuple[float, np.ndarray]:
        stopping.check()
        grad.fill(0.0)
        grad_dense.fill(0.0)
        total = kernel(*cuts[k], grad, grad_dense)
        grad[dense_feats] += grad_dense.reshape(-1)[dense_slot]
        return total, grad

    def combine(k: int, result: tuple[float, np.ndarray]) -> None:
        log_z[0] += result[0]
        np.add(grad_sum, result[1], out=grad_sum)

    ordered_reduce(jobs, len(cuts), compute, combine,
                   lambda: (np.zeros(n_features), np.zeros_like(w_dense)))
    return log_z[0], grad_sum


def summed(results: list[tuple[float, np.ndarray]]) -> tuple[float, np.ndarray]:
    """Sum per-thread (log Z, expected counts), in place in the first."""
    grad = results[0][1]
    for _, g in results[1:]:
        grad += g
    return sum(r[0] for r in results), grad


def sequence_log_z(program, w: np.ndarray, data: EncodedData) -> np.ndarray:
    """log Z(x) of every sequence of ``data``: an exact program's
    ``expectations`` on each sequence alone."""
    return np.array([program.expectations(w, data.subset(i, i + 1)).log_z
                     for i in range(data.n_sequences)])
