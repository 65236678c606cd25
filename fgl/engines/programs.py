"""The seam between compiler, engines and learner.

A compiled *program* answers three questions about encoded instances —
Σ log Z with expected feature counts, empirical (gold) counts, and the MAP
labelling — so the learner (``fgl.learner``) is one piece of code for every
engine.  ``EncodedData`` is the integer-indexed form of a data set that the
engines' numba kernels read: per token, the active attribute rows and their
values (CSR), built once per data set.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fgl.engines import chain, semimarkov


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

    def chunks(self, jobs: int) -> list[tuple[int, int]]:
        """Split the sequences into ``jobs`` contiguous runs of about equal
        token counts (the unit of parallel work)."""
        n = self.n_sequences
        jobs = max(1, min(jobs, n))
        bounds = np.searchsorted(self.seq_ptr, np.linspace(0, self.n_tokens, jobs + 1)[1:-1])
        cuts = [0, *sorted(set(int(b) for b in bounds)), n]
        return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def resolve_jobs(jobs: int | None) -> int:
    """``None`` or 0 means every core."""
    return jobs if jobs and jobs > 0 else (os.cpu_count() or 1)


_POOLS: dict[int, ThreadPoolExecutor] = {}
# the dense rows' weights of a chain program stay within this many bytes (L2)
DENSE_BYTES = 512 * 1024


def thread_pool(workers: int) -> ThreadPoolExecutor:
    """A pool of ``workers`` threads, made once and reused by every
    evaluation (the numba kernels release the GIL)."""
    if workers not in _POOLS:
        _POOLS[workers] = ThreadPoolExecutor(workers, thread_name_prefix="fgl")
    return _POOLS[workers]


def _run_parallel(jobs: int, data: EncodedData, fn, scratch=None) -> list:
    """Run ``fn(i0, i1, *scratch())`` on contiguous runs of sequences, one
    thread each.  ``scratch`` (the per-part output arrays) is called here,
    in the calling thread: arrays a worker thread allocates come from its
    own malloc arena, whose freed memory the other threads cannot reuse."""
    args = [(i0, i1, *(scratch() if scratch else ())) for i0, i1 in data.chunks(resolve_jobs(jobs))]
    if len(args) == 1:
        return [fn(*args[0])]
    return list(thread_pool(len(args)).map(lambda a: fn(*a), args))


def _total(results: list[tuple[float, np.ndarray]]) -> tuple[float, np.ndarray]:
    """Sum the per-thread (log Z, expected counts) in place."""
    grad = results[0][1]
    for _, g in results[1:]:
        grad += g
    return sum(r[0] for r in results), grad


def cached_gold_expectations(program, w: np.ndarray, data) -> tuple[float, np.ndarray]:
    """(w · F(x, y), F(x, y)) of a fully observed program, with the
    empirical counts F computed once per data set."""
    counts = getattr(data, "_empirical", None)
    if counts is None:
        counts = program.empirical_counts(data)
        data._empirical = counts
    return float(w @ counts), counts


class Program(Protocol):
    """What every compiled program offers: the learner uses
    ``expectations`` and ``gold_expectations`` only; decoding and marginals
    serve tagging (general CRFs decode per instance, see
    ``fgl.loopy_program``)."""

    n_features: int

    def expectations(self, w: np.ndarray, data: EncodedData, jobs: int) -> tuple[float, np.ndarray]:
        """Σ_i log Z(x_i) and the expected feature counts under the model."""

    def gold_expectations(self, w: np.ndarray, data: EncodedData, jobs: int) -> tuple[float, np.ndarray]:
        """log Z of the program clamped to the gold labels and its expected
        counts: the gold score and counts when every variable is observed
        (Sutton & McCallum eq. 1.47, 1.52 with hidden variables)."""

    def decode(self, w: np.ndarray, data: EncodedData, jobs: int
               ) -> tuple[np.ndarray, np.ndarray | None]:
        """The MAP label of every token (flat, in data order) and, for
        segment programs, 1 where a segment starts (else None)."""

    def label_marginals(self, w: np.ndarray, data: EncodedData) -> list[np.ndarray]:
        """Per sequence, P(y_t = y | x) as a [T, n_labels] array."""


@dataclass
class ChainProgram:
    """An exact pattern-sparse chain program (Ye et al. 2009 §3): the state
    machine of the model's patterns plus its feature table.

    Feature k belongs to attribute row r when ``row_ptr[r] <= k <
    row_ptr[r+1]`` and has label pattern ``feat_pattern[k]``.
    """

    structure: chain.ChainStructure
    row_ptr: np.ndarray
    feat_pattern: np.ndarray
    const_rows: np.ndarray  # rows active with value 1 at every token (bias rows)

    def __post_init__(self) -> None:
        # 32-bit feature tables: half the cache footprint for the scattered
        # reads of feature scoring and expected counts
        self.row_ptr = np.ascontiguousarray(self.row_ptr, dtype=np.int32)
        self.feat_pattern = np.ascontiguousarray(self.feat_pattern, dtype=np.int32)
        self.feat_s = self.structure.pattern_s[self.feat_pattern].astype(np.int32)
        self.row_is_const = np.zeros(len(self.row_ptr) - 1, dtype=np.bool_)
        self.row_is_const[self.const_rows] = True
        feat_const = np.repeat(self.row_is_const, np.diff(self.row_ptr))
        self.const_feats = np.flatnonzero(feat_const).astype(np.int64)
        self.dynamic = np.zeros(len(self.structure.patterns), dtype=np.bool_)
        self.dynamic[self.feat_pattern[~feat_const]] = True
        # the kernels read every label's potential per token
        self.dynamic[self.structure.s_pattern[:self.structure.n_labels]] = True
        self._dense_rows()

    def _dense_rows(self) -> None:
        """Pick the rows scored and counted as dense label vectors: per-token
        rows whose features all have single-label patterns and cover at least
        a quarter of the labels, most frequent first (rows are numbered by
        frequency), while their weights fit in ``DENSE_BYTES``.  Most feature
        touches fall in a few such rows (on CoNLL-2000 chunking, 86 % in
        2,978 rows), and a dense row is one vector operation instead of a
        gather per feature."""
        st = self.structure
        n = st.n_labels
        lengths = np.diff(self.row_ptr)
        pattern_label = np.array([z[0] if len(z) == 1 else -1 for z in st.patterns])
        feat_label = pattern_label[self.feat_pattern]
        multi = np.zeros(len(lengths) + 1, dtype=np.int64)  # features per row with a longer pattern
        np.add.at(multi, np.repeat(np.arange(len(lengths)), lengths), feat_label < 0)
        ok = (lengths > 0) & (4 * lengths >= n) & (multi[:-1] == 0) & ~self.row_is_const
        rows = np.flatnonzero(ok)[:DENSE_BYTES // (8 * n)]
        self.row_dense = np.full(len(lengths), -1, dtype=np.int32)
        self.row_dense[rows] = np.arange(len(rows), dtype=np.int32)
        counts = lengths[rows]
        self.dense_feats = (np.repeat(self.row_ptr[rows] - np.cumsum(counts) + counts, counts)
                            + np.arange(counts.sum())).astype(np.int64)
        self.dense_slot = (np.repeat(np.arange(len(rows)), counts) * n
                           + feat_label[self.dense_feats]).astype(np.int64)

    def dense_weights(self, w: np.ndarray) -> np.ndarray:
        """The dense rows' weights as [rows, n_labels] (0 where a row has no
        feature for a label)."""
        out = np.zeros((int(self.row_dense.max(initial=-1)) + 1, self.structure.n_labels))
        out.reshape(-1)[self.dense_slot] = w[self.dense_feats]
        return out

    @property
    def n_features(self) -> int:
        return len(self.feat_pattern)

    def expectations(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> tuple[float, np.ndarray]:
        st = self.structure
        w_dense = self.dense_weights(w)

        def work(i0: int, i1: int, grad: np.ndarray, grad_dense: np.ndarray
                 ) -> tuple[float, np.ndarray]:
            total = chain._chunk_expectations(
                i0, i1, data.seq_ptr, data.tok_ptr, data.tok_row, data.tok_val, self.row_ptr,
                self.feat_pattern, self.feat_s, self.const_feats, self.dynamic, self.row_dense,
                w_dense, w, st.s_prev, st.s_next, st.s_pattern, st.s_parent, st.s_order,
                st.p_suffix, st.p_order, st.p_next_run, st.p_label, st.n_forward, st.n_labels,
                grad, grad_dense)
            grad[self.dense_feats] += grad_dense.reshape(-1)[self.dense_slot]
            return total, grad

        return _total(_run_parallel(jobs, data, work,
                                    lambda: (np.zeros(self.n_features), np.zeros_like(w_dense))))

    def empirical_counts(self, data: EncodedData) -> np.ndarray:
        st = self.structure
        gold_s = np.empty(data.n_tokens, dtype=np.int64)
        chain._gold_transitions(data.seq_ptr, data.gold, st.s_next, st.n_labels, gold_s)
        counts = np.zeros(self.n_features)
        chain._empirical_counts(gold_s, data.tok_ptr, data.tok_row, data.tok_val, self.row_ptr,
                                self.feat_s, self.const_feats, st.s_parent, counts)
        return counts

    def gold_expectations(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> tuple[float, np.ndarray]:
        return cached_gold_expectations(self, w, data)

    def decode(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> tuple[np.ndarray, None]:
        st = self.structure
        w_dense = self.dense_weights(w)
        out = np.zeros(data.n_tokens, dtype=np.int64)

        def work(i0: int, i1: int) -> None:
            chain._chunk_viterbi(i0, i1, data.seq_ptr, data.tok_ptr, data.tok_row, data.tok_val,
                                 self.row_ptr, self.feat_pattern, self.const_feats,
                                 self.row_dense, w_dense, w, *st.tables(), len(st.patterns), out)

        _run_parallel(jobs, data, work)
        return out, None

    def scoring(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What scoring needs of ``w``, once per call over many sequences:
        the constant rows' potentials and the dense rows' weights."""
        return (chain._static_potentials(self.const_feats, self.feat_pattern, w,
                                         len(self.structure.patterns)),
                self.dense_weights(w))

    def potentials(self, w: np.ndarray, data: EncodedData, i: int,
                   scoring: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """pot[t, z] of sequence ``i``: the summed weight · value of every
        feature with pattern z active at t (``scoring``: ``self.scoring(w)``,
        when already at hand)."""
        a, T = int(data.seq_ptr[i]), int(data.seq_ptr[i + 1] - data.seq_ptr[i])
        static, w_dense = scoring if scoring is not None else self.scoring(w)
        n_z, n = len(self.structure.patterns), self.structure.n_labels
        pot = np.empty((T, n_z))
        chain._potentials(a, T, data.tok_ptr, data.tok_row, data.tok_val, self.row_ptr,
                          self.feat_pattern, w, static, np.arange(n_z), self.row_dense, w_dense,
                          self.structure.s_pattern[:n].copy(), np.empty(n), pot)
        return pot

    def label_marginals(self, w: np.ndarray, data: EncodedData) -> list[np.ndarray]:
        st = self.structure
        scoring = self.scoring(w)
        return [chain.pattern_marginals(st, self.potentials(w, data, i, scoring))[1][:, :st.n_labels]
                for i in range(data.n_sequences)]


@dataclass
class SemiMarkovProgram:
    """An exact high-order semi-Markov program (Cuong et al. 2014 §2): the state
    machine over segment labels, segments of at most ``max_length`` tokens
    (``label_max`` per label), and the feature table over span attributes."""

    structure: chain.ChainStructure
    row_ptr: np.ndarray
    feat_pattern: np.ndarray
    max_length: int
    label_max: np.ndarray

    def __post_init__(self) -> None:
        self.feat_s = self.structure.pattern_s[self.feat_pattern]

    @property
    def n_features(self) -> int:
        return len(self.feat_pattern)

    def expectations(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> tuple[float, np.ndarray]:
        st = self.structure

        def work(i0: int, i1: int, grad: np.ndarray) -> tuple[float, np.ndarray]:
            total = semimarkov._chunk_expectations(
                i0, i1, self.max_length, data.seq_ptr, data.tok_ptr, data.tok_row, data.tok_val,
                self.row_ptr, self.feat_pattern, self.feat_s, w, *st.tables(), st.n_labels,
                len(st.patterns), self.label_max, grad)
            return total, grad

        return _total(_run_parallel(jobs, data, work, lambda: (np.zeros(self.n_features),)))

    def empirical_counts(self, data: EncodedData) -> np.ndarray:
        st = self.structure
        counts = np.zeros(self.n_features)
        semimarkov._empirical_counts(self.max_length, data.seq_ptr, data.gold, data.starts,
                                     data.tok_ptr, data.tok_row, data.tok_val, self.row_ptr,
                                     self.feat_s, st.s_next, st.s_parent, st.n_labels, counts)
        return counts

    def gold_expectations(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> tuple[float, np.ndarray]:
        return cached_gold_expectations(self, w, data)

    def decode(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> tuple[np.ndarray, np.ndarray]:
        st = self.structure
        labels = np.zeros(data.n_tokens, dtype=np.int64)
        starts = np.zeros(data.n_tokens, dtype=np.int64)

        def work(i0: int, i1: int) -> None:
            semimarkov._chunk_viterbi(i0, i1, self.max_length, data.seq_ptr, data.tok_ptr,
                                      data.tok_row, data.tok_val, self.row_ptr, self.feat_pattern,
                                      w, *st.tables(), len(st.patterns), self.label_max,
                                      labels, starts)

        _run_parallel(jobs, data, work)
        return labels, starts

    def potentials(self, w: np.ndarray, data: EncodedData, i: int) -> np.ndarray:
        """pot[u, d-1, z] of sequence ``i``."""
        a, T = int(data.seq_ptr[i]), int(data.seq_ptr[i + 1] - data.seq_ptr[i])
        pot = np.empty((T, self.max_length, len(self.structure.patterns)))
        semimarkov._potentials(a, T, self.max_length, data.tok_ptr, data.tok_row, data.tok_val,
                               self.row_ptr, self.feat_pattern, w, pot)
        return pot

    def label_marginals(self, w: np.ndarray, data: EncodedData) -> list[np.ndarray]:
        """P(token t lies in a segment labelled y | x)."""
        st = self.structure
        out = []
        for i in range(data.n_sequences):
            _, marg = semimarkov.segment_marginals(st, self.potentials(w, data, i), self.label_max)
            T = marg.shape[0]
            tok = np.zeros((T, st.n_labels))
            for u in range(T):
                for dm in range(min(self.max_length, T - u)):
                    tok[u:u + dm + 1] += marg[u, dm, :st.n_labels]
            out.append(tok)
        return out
