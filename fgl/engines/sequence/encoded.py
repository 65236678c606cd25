"""Encoded data of the exact sequence engines.

``EncodedData`` is the integer-indexed form of a data set that the chain and
semi-Markov kernels read: per unit (a token; or a candidate segment for a
semi-Markov program), the active attribute rows and their values (CSR),
built once per data set, with the parallel runs and block sums over it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from fgl import stopping
from fgl.engines.parallel import blocks, contiguous_runs, ordered_reduce, pooled, resolve_jobs
from fgl.engines.program import RunGradient
from fgl.jit import njit


def unit_ones(count: int) -> np.ndarray:
    """The values of ``count`` binary attributes: a read-only view of one
    1.0 (stride 0), so binary data sets store no values at all.  Fewer
    than two are an array of their own: numpy calls a view of fewer than
    two elements contiguous, and numba would compile every kernel once
    more for that type."""
    return np.broadcast_to(np.ones(1), (count,)) if count >= 2 else np.ones(count)


def holds_exactly(vals: np.ndarray, dtype: type) -> bool:
    """Whether ``dtype`` holds every one of the float64 ``vals`` with the
    same bits once widened back (not -0.0 as int8 0, nor NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        back = vals.astype(dtype).astype(np.float64)
    return bool(np.array_equal(back.view(np.int64), vals.view(np.int64)))


def unit_values(vals: np.ndarray) -> np.ndarray:
    """Attribute values as training stores them (``fgl.compile.unit_rows``):
    ``unit_ones`` when every one is 1, else the narrowest of int8, float32
    and float64 that holds each exactly — so tagging meets the kernels with
    the type training compiled them for."""
    vals = np.ascontiguousarray(vals, dtype=np.float64)
    if np.all(vals == 1.0):
        return unit_ones(len(vals))
    return next(vals.astype(t) for t in (np.int8, np.float32, np.float64)
                if holds_exactly(vals, t))


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


def offset_type(count: int) -> type:
    """int32 for ids or offsets below ``count`` when it allows, else int64."""
    return np.int32 if count < 2**31 else np.int64


@dataclass
class BlockLayout:
    """The blocks of a data set (``blocks``) and the rows each counts into
    a compact gradient (``row_block_sums``): fixed by the data and the
    feature table, so made once per data set."""

    cuts: list[tuple[int, int]]
    rows: list[np.ndarray]   # per block: the first rows, then its scattered rows, ascending
    size: int                # the largest block's features

    @classmethod
    def build(cls, data: EncodedData, cuts: list[tuple[int, int]], row_ptr: np.ndarray,
              first_rows: np.ndarray, scattered: np.ndarray) -> "BlockLayout":
        """For blocks ``cuts`` of ``data`` (``blocks``): ``first_rows`` (rows
        every block counts, e.g. constant rows), then per block the rows r of
        its units with ``scattered[r]``."""
        if not cuts:
            return cls([], [], 0)
        m = data.units_per_token
        unit_cuts = np.array([data.seq_ptr[i0] * m for i0, _ in cuts]
                             + [data.seq_ptr[cuts[-1][1]] * m], dtype=np.int64)
        rows, ptr = block_rows(data.tok_ptr, data.tok_row, unit_cuts, scattered)
        narrow = offset_type(len(scattered))
        per_block = [np.concatenate([first_rows, np.sort(rows[ptr[k]:ptr[k + 1]])]).astype(narrow)
                     for k in range(len(cuts))]
        lengths = np.diff(row_ptr)
        return cls(cuts, per_block, max(int(lengths[r].sum()) for r in per_block))


def row_block_sums(layout: BlockLayout, jobs: int, n_features: int, row_ptr: np.ndarray,
                   w_dense: np.ndarray, dense_feats: np.ndarray, dense_slot: np.ndarray,
                   kernel: Callable) -> tuple[float, np.ndarray]:
    """``dense_block_sums`` with each block counted into a compact array of
    the rows it touches (``layout``), not a full-length one: row r's
    features start at ``grad_ptr[r]``, and ``kernel(i0, i1, grad, grad_ptr,
    grad_dense)`` counts into that layout.  The scratch per thread is the
    largest block's rows (on CoNLL-2000 with CRF++'s template a fifth of
    the features), only those are zeroed and added, and the sums are the
    bits ``dense_block_sums`` gives."""
    grad_sum = np.zeros(n_features)
    log_z = [0.0]

    def compute(k: int, grad: np.ndarray, grad_ptr: np.ndarray, grad_dense: np.ndarray
                ) -> tuple[float, tuple]:
        stopping.check()
        used = local_layout(layout.rows[k], row_ptr, grad_ptr)
        grad[:used] = 0.0
        grad_dense.fill(0.0)
        return (kernel(*layout.cuts[k], grad, grad_ptr, grad_dense),
                (grad, grad_ptr, grad_dense))

    def combine(k: int, result: tuple[float, tuple]) -> None:
        total, (grad, grad_ptr, grad_dense) = result
        log_z[0] += total
        add_rows(grad_sum, grad, layout.rows[k], row_ptr, grad_ptr)
        grad_sum[dense_feats] += grad_dense.reshape(-1)[dense_slot]

    ordered_reduce(jobs, len(layout.cuts), compute, combine,
                   lambda: (np.empty(layout.size),
                            np.empty(len(row_ptr) - 1, dtype=offset_type(layout.size)),
                            np.zeros_like(w_dense)))
    return log_z[0], grad_sum


@njit(cache=True, nogil=True)
def block_rows(tok_ptr, tok_row, unit_cuts, scattered):
    """Per block b (units ``unit_cuts[b]`` to ``unit_cuts[b+1]``), the
    distinct rows r of its units with ``scattered[r]``, in the order met:
    flat, with each block's offsets.  (The caller sorts them with numpy's
    sort: numba's compiles a quicksort of its own on a first run.)"""
    n_blocks = unit_cuts.shape[0] - 1
    mark = np.zeros(scattered.shape[0], dtype=np.bool_)
    ptr = np.zeros(n_blocks + 1, dtype=np.int64)
    out = np.empty(1024, dtype=np.int64)
    c = 0
    for b in range(n_blocks):
        lo = c
        for j in range(tok_ptr[unit_cuts[b]], tok_ptr[unit_cuts[b + 1]]):
            r = tok_row[j]
            if scattered[r] and not mark[r]:
                mark[r] = True
                if c == out.shape[0]:
                    grown = np.empty(2 * c, dtype=np.int64)
                    for i in range(c):   # (a slice copy compiles numba's shape-error message)
                        grown[i] = out[i]
                    out = grown
                out[c] = r
                c += 1
        for i in range(lo, c):
            mark[out[i]] = False
        ptr[b + 1] = c
    return out[:c].copy(), ptr


@njit(cache=True, nogil=True)
def group_unit_rows(tok_ptr, tok_row, tok_val, row_class, n_classes):
    """Within each unit, its attribute rows grouped by ``row_class`` (class
    0 first), stably, in place, with their values (``tok_val`` empty: none
    to move, every value being 1 as ``unit_ones`` stores them)."""
    with_values = tok_val.shape[0] > 0
    most = 0
    for u in range(tok_ptr.shape[0] - 1):
        most = max(most, tok_ptr[u + 1] - tok_ptr[u])
    rows = np.empty(most, dtype=tok_row.dtype)
    vals = np.empty(most, dtype=tok_val.dtype)
    for u in range(tok_ptr.shape[0] - 1):
        a, b = tok_ptr[u], tok_ptr[u + 1]
        for j in range(a, b):
            rows[j - a] = tok_row[j]
            if with_values:
                vals[j - a] = tok_val[j]
        at = a
        for c in range(n_classes):
            for i in range(b - a):
                if row_class[rows[i]] == c:
                    tok_row[at] = rows[i]
                    if with_values:
                        tok_val[at] = vals[i]
                    at += 1


@njit(cache=True, nogil=True)
def local_layout(rows, row_ptr, grad_ptr):
    """``grad_ptr[r]``: where row r's features start when ``rows`` are laid
    out one after another; returns the length of that layout."""
    at = 0
    for r in rows:
        grad_ptr[r] = at
        at += row_ptr[r + 1] - row_ptr[r]
    return at


@njit(cache=True, nogil=True)
def add_rows(total, part, rows, row_ptr, grad_ptr):
    """``total`` += the features of ``rows`` in the compact ``part``
    (laid out by ``grad_ptr``)."""
    for r in rows:
        shift = grad_ptr[r] - row_ptr[r]
        for k in range(row_ptr[r], row_ptr[r + 1]):
            total[k] += part[k + shift]


def summed(results: list[tuple[float, np.ndarray]]) -> tuple[float, np.ndarray]:
    """Sum per-thread (log Z, expected counts), in place in the first."""
    grad = results[0][1]
    for _, g in results[1:]:
        grad += g
    return sum(r[0] for r in results), grad


@njit(cache=True, nogil=True)
def run_rows(tok_ptr, tok_row, u0, u1, keep, mark):
    """The distinct rows r with ``keep[r]`` of units u0..u1-1, ascending
    (``mark``: all False, left so)."""
    out = np.empty(max(tok_ptr[u1] - tok_ptr[u0], 1), dtype=np.int64)
    c = 0
    for j in range(tok_ptr[u0], tok_ptr[u1]):
        r = tok_row[j]
        if keep[r] and not mark[r]:
            mark[r] = True
            out[c] = r
            c += 1
    rows = out[:c].copy()
    rows.sort()
    for r in rows:
        mark[r] = False
    return rows


@njit(cache=True, nogil=True)
def row_features(rows, row_ptr):
    """The features of ``rows``, row after row (each row's in order)."""
    total = 0
    for r in rows:
        total += row_ptr[r + 1] - row_ptr[r]
    out = np.empty(total, dtype=np.int64)
    c = 0
    for r in rows:
        for k in range(row_ptr[r], row_ptr[r + 1]):
            out[c] = k
            c += 1
    return out


@njit(cache=True, nogil=True)
def run_layout(tok_ptr, tok_row, u0, u1, first, keep, mark, row_ptr):
    """The rows a run of units u0..u1-1 reads — ``first``, then its rows r
    with ``keep[r]`` (``run_rows``) — and their features (``row_features``),
    in one call."""
    found = run_rows(tok_ptr, tok_row, u0, u1, keep, mark)
    rows = np.empty(first.shape[0] + found.shape[0], dtype=np.int64)
    rows[:first.shape[0]] = first
    rows[first.shape[0]:] = found
    return rows, row_features(rows, row_ptr)


@njit(cache=True, nogil=True)
def dot_at(w, index, values):
    """Σ_i w[index[i]] values[i], on this thread (a BLAS dot product of a
    gathered copy may wake BLAS's threads: milliseconds on a busy machine)."""
    total = 0.0
    for i in range(index.shape[0]):
        total += w[index[i]] * values[i]
    return total


class SequenceRuns:
    """Runs of sequences i0..i1-1 of an exact sequence program, one run at
    a time (``Program.instance_runs``, for stochastic gradient training):
    the features a run reads — the constant rows', then those of the rows
    its units hold, ascending — and its loss and gradient there.  This
    generic form takes them from ``expectations`` and ``gold_counts`` of the
    run alone (full-length vectors: its cost grows with the features); the
    chain program's own (``ChainRuns``) counts into the run's features only."""

    def __init__(self, program: "SequenceProgram", data: EncodedData):
        self.program, self.data = program, data
        self.row_ptr = np.asarray(program.row_ptr, dtype=np.int64)
        n_rows = len(self.row_ptr) - 1
        self.const_rows = np.unique(np.asarray(program.const_rows, dtype=np.int64))
        self.keep = np.ones(n_rows, dtype=np.bool_)
        self.keep[self.const_rows] = False
        self.mark = np.zeros(n_rows, dtype=np.bool_)
        self.last: tuple | None = None

    def rows(self, i0: int, i1: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows run i0..i1-1 reads — the constant ones, then its units'
        ascending — and their features (kept for the last run asked: a step
        asks ``support``, then ``gradient``)."""
        if self.last is None or self.last[0] != (i0, i1):
            m = self.data.units_per_token
            u0, u1 = int(self.data.seq_ptr[i0]) * m, int(self.data.seq_ptr[i1]) * m
            self.last = ((i0, i1), *run_layout(self.data.tok_ptr, self.data.tok_row, u0, u1,
                                               self.const_rows, self.keep, self.mark,
                                               self.row_ptr))
        return self.last[1], self.last[2]

    def support(self, i0: int, i1: int) -> np.ndarray:
        """The features run i0..i1-1 reads (and its gradient's index)."""
        return self.rows(i0, i1)[1]

    def gradient(self, w: np.ndarray, i0: int, i1: int) -> RunGradient:
        """The run's loss Σ [log Z(x_i) - w·F(x_i, y_i)] and its gradient
        at ``support(i0, i1)``, reading ``w`` there only."""
        index = self.support(i0, i1)
        sub = self.data.subset(i0, i1)
        model = self.program.expectations(w, sub, 1)
        gold = self.program.gold_counts(sub)[index]
        return RunGradient(model.log_z - dot_at(w, index, gold), index,
                           model.counts[index] - gold)


class SequenceProgram:
    """What the exact sequence programs (``ChainProgram``,
    ``SegmentProgram``) answer alike, over their ``feat_pattern`` and
    ``structure``: their sizes, no warm start, the perceptron's correction,
    runs of sequences one at a time."""

    feat_pattern: np.ndarray
    structure: Any
    row_ptr: np.ndarray
    const_rows: np.ndarray

    @property
    def n_features(self) -> int:
        return len(self.feat_pattern)

    def pattern_bounds(self) -> np.ndarray:
        """Per feature, one past the largest pattern id it may have (a model
        file's arrays are checked against it)."""
        return np.full(self.n_features, len(self.structure.patterns), dtype=np.int64)

    def warm_start(self, data: EncodedData, carry: bool | None = True) -> None:
        """Exact inference carries nothing between evaluations: None."""
        return None

    def instance_runs(self, data: EncodedData, carry: bool = True) -> SequenceRuns:
        """``data``'s sequences in runs, one at a time (``SequenceRuns``;
        ``carry``: exact inference has nothing to carry)."""
        return SequenceRuns(self, data)

    def mistakes(self, w: np.ndarray, data: EncodedData, i0: int, i1: int
                 ) -> np.ndarray | None:
        """Gold minus MAP-decoded feature counts of sequences i0..i1-1 decoded
        together (the perceptron's correction); None when every decoding is
        the gold one."""
        sub = data.subset(i0, i1)
        got = self.decode(w, sub, 1)
        labels = np.concatenate(got.assignments)
        starts = None if got.segment_starts is None else np.concatenate(got.segment_starts)
        if np.array_equal(labels, sub.gold) and (starts is None
                                                 or np.array_equal(starts, sub.starts)):
            return None
        decoded = dataclasses.replace(sub, gold=labels, starts=starts)
        return self.gold_counts(sub) - self.gold_counts(decoded)
