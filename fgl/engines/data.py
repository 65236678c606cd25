"""Encoded data and parallel work for the exact sequence engines.

``EncodedData`` is the integer-indexed form of a data set that the chain and
semi-Markov kernels read: per unit (a token; or a candidate segment for a
semi-Markov program), the active attribute rows and their values (CSR),
built once per data set.  Work is split into contiguous runs of sequences,
one thread each (the numba kernels release the GIL).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


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
    return list(thread_pool(len(args)).map(lambda a: fn(*a), args))


def map_instances(jobs: int, n: int, fn: Callable[[int], object]) -> list:
    """``[fn(i) for i in range(n)]``, on up to ``jobs`` threads."""
    jobs = min(resolve_jobs(jobs), max(n, 1))
    if jobs == 1:
        return [fn(i) for i in range(n)]
    return list(thread_pool(jobs).map(fn, range(n)))


RUNS_PER_THREAD = 4  # reduce_instances: runs of instances per thread, for balance


def reduce_instances(jobs: int, n: int, fn: Callable[[int, object], None],
                     accumulator: Callable[[], object], cost: Sequence[float]) -> list:
    """Run ``fn(i, acc)`` for every i in range(n) on up to ``jobs`` threads;
    returns the accumulators, in order.  The instances are cut into
    contiguous runs of about equal total ``cost`` (``RUNS_PER_THREAD`` per
    thread), each with an accumulator of its own; a free thread takes the
    next run (instances differ in cost: BP may need 2 passes on one and 50
    on the next).  Each run's sums are made in order, so they — and a
    training run — are the same on every run with the same ``jobs``.  The
    accumulators are made here, in the calling thread (see
    ``run_parallel``)."""
    jobs = min(resolve_jobs(jobs), max(n, 1))
    ptr = np.concatenate([[0.0], np.cumsum(np.asarray(cost, dtype=np.float64))])
    runs = contiguous_runs(ptr, 1 if jobs == 1 else jobs * RUNS_PER_THREAD) or [(0, 0)]
    accs = [accumulator() for _ in runs]

    def work(k: int) -> None:
        for i in range(*runs[k]):
            fn(i, accs[k])

    if len(runs) == 1:
        work(0)
    else:
        list(thread_pool(jobs).map(work, range(len(runs))))
    return accs


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
