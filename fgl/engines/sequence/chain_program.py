"""The exact chain engine's batch interface (Ye et al. 2009 §3).

``ChainProgram`` holds one model's pattern state machine and feature table
and answers the learner's and the models' questions over ``EncodedData``
with the batch kernels of ``fgl.engines.sequence.chain`` (and the gold-count walk of
``fgl.engines.sequence.span_lattice``), in parallel over runs of sequences.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from fgl.engines import background_compile
from fgl.engines.parallel import blocks
from fgl.engines.program import Decoding, Expectations, Marginals, RunGradient
from fgl.engines.sequence import chain, nbest, partition, span_lattice
from fgl.engines.sequence.encoded import (
    BlockLayout,
    EncodedData,
    SequenceProgram,
    SequenceRuns,
    group_unit_rows,
    local_layout,
    row_block_sums,
    run_parallel,
)
from fgl.engines.sequence.structure import ChainStructure
from fgl.jit import njit

# the dense rows' weights of a chain program stay within this many bytes (one core's L2
# on the machine measured: examples/profile_chain.py)
DENSE_BYTES = 1024 * 1024


def index_type(count: int) -> type:
    """The narrowest of int16 and int32 holding ids below ``count``."""
    return np.int16 if count <= np.iinfo(np.int16).max else np.int32


@dataclass
class ChainProgram(SequenceProgram):
    """An exact pattern-sparse chain program (Ye et al. 2009 §3): the state
    machine of the model's patterns plus its feature table.

    Feature k belongs to attribute row r when ``row_ptr[r] <= k <
    row_ptr[r+1]`` and has label pattern ``feat_pattern[k]``.
    """

    structure: ChainStructure
    row_ptr: np.ndarray
    feat_pattern: np.ndarray
    const_rows: np.ndarray  # rows active with value 1 at every token (bias rows)
    has_hidden: ClassVar[bool] = False

    def __post_init__(self) -> None:
        # narrow feature tables: a smaller cache footprint for the scattered reads of
        # feature scoring and expected counts, and 2 bytes per feature for each of
        # feat_pattern and feat_s when the patterns and states allow (15 MB apiece at
        # 7.4M features)
        self.row_ptr = np.ascontiguousarray(self.row_ptr, dtype=np.int32)
        self.feat_pattern = np.ascontiguousarray(self.feat_pattern,
                                                 dtype=index_type(len(self.structure.patterns)))
        self.feat_s = self.structure.pattern_s[self.feat_pattern].astype(
            index_type(self.structure.n_backward))
        self.row_is_const = np.zeros(len(self.row_ptr) - 1, dtype=np.bool_)
        self.row_is_const[self.const_rows] = True
        feat_const = np.repeat(self.row_is_const, np.diff(self.row_ptr))
        self.const_feats = np.flatnonzero(feat_const).astype(np.int64)
        self.dynamic = np.zeros(len(self.structure.patterns), dtype=np.bool_)
        self.dynamic[self.feat_pattern[~feat_const]] = True
        # the kernels read every label's potential per token
        self.dynamic[self.structure.s_pattern[:self.structure.n_labels]] = True
        self._dense_rows()
        # expected counts per block in a compact layout (``row_block_sums``): the constant
        # rows first, ascending (the kernel counts their features there in order), then
        # the block's rows counted feature by feature (neither constant nor dense)
        self.first_rows = np.flatnonzero(self.row_is_const).astype(np.int64)
        self.scattered = ~self.row_is_const & (self.row_dense < 0)
        self._held_layout: tuple[weakref.ref, BlockLayout] | None = None
        self.features = chain.ChainFeatures(self.row_ptr, self.feat_pattern, self.feat_s,
                                            self.const_feats, self.dynamic, self.row_dense,
                                            np.flatnonzero(self.dynamic),
                                            np.flatnonzero(~self.dynamic))

    def _dense_rows(self) -> None:
        """Pick the rows scored and counted as label vectors.  A *full* row
        (``chain.FULL_ROW``) has one feature per label, in label order, each
        of its label's single-label pattern (every row of a CRF++ template's
        unigram: the features are the vector, read where they are).  A
        *dense* row: of the others, per-token rows whose features all have
        single-label patterns, most frequent first (rows are numbered by
        frequency), while their weights fit in ``DENSE_BYTES``, copied into
        one matrix per evaluation.  A row is then one vector operation
        instead of a gather per feature, which costs a few cache misses (its
        row pointers, patterns, weights) even for a row of two features: on
        CoNLL-2000 with CRFsuite's features, 75 % of the attributes met fall
        in the 5,957 rows that fit in 1 MB, and an evaluation took 0.92-0.95x
        the time of the former rule (rows covering a quarter of the labels,
        within 512 KB: 56 % of the attributes; one thread, the two programs
        alternating in one process)."""
        st = self.structure
        n = st.n_labels
        lengths = np.diff(self.row_ptr)
        pattern_label = np.array([z[0] if len(z) == 1 else -1 for z in st.patterns])
        # rows with a feature of a longer pattern (no per-feature int64 temporaries: 59 MB
        # apiece at 7.4M features)
        longer = (pattern_label < 0)[self.feat_pattern]
        multi = np.zeros(len(lengths), dtype=np.bool_)
        nonempty = lengths > 0
        if nonempty.any():
            multi[nonempty] = np.logical_or.reduceat(longer, self.row_ptr[:-1][nonempty])
        del longer
        ok = nonempty & ~multi & ~self.row_is_const
        full = self._full_rows(ok & (lengths == n), pattern_label)
        rows = np.flatnonzero(ok)[:DENSE_BYTES // (8 * n)]
        self.row_dense = np.full(len(lengths), -1, dtype=np.int32)
        self.row_dense[full] = chain.FULL_ROW
        self.row_dense[rows] = np.arange(len(rows), dtype=np.int32)
        counts = lengths[rows]
        self.dense_feats = (np.repeat(self.row_ptr[rows] - np.cumsum(counts) + counts, counts)
                            + np.arange(counts.sum())).astype(np.int64)
        self.dense_slot = (np.repeat(np.arange(len(rows)), counts) * n
                           + pattern_label[self.feat_pattern[self.dense_feats]]).astype(np.int64)

    def _full_rows(self, candidates: np.ndarray, pattern_label: np.ndarray) -> np.ndarray:
        """Which ``candidates`` (rows of n single-label features) are full:
        feature y of the row has label y's pattern, whose state is y (the
        label's marginal, where the kernels count it)."""
        n = self.structure.n_labels
        rows = np.flatnonzero(candidates)
        full = np.zeros(len(candidates), dtype=np.bool_)
        if len(rows):
            at = self.row_ptr[rows][:, None] + np.arange(n)
            label = np.arange(n)
            full[rows] = ((pattern_label[self.feat_pattern[at]] == label)
                          & (self.feat_s[at] == label)).all(axis=1)
        return full

    def dense_weights(self, w: np.ndarray) -> np.ndarray:
        """The dense rows' weights as [rows, n_labels] (0 where a row has no
        feature for a label)."""
        out = np.zeros((int(self.row_dense.max(initial=-1)) + 1, self.structure.n_labels))
        out.reshape(-1)[self.dense_slot] = w[self.dense_feats]
        return out

    def expectations(self, w: np.ndarray, data: EncodedData, jobs: int = 1,
                     warm: None = None) -> Expectations:
        """Σ log Z and expected counts (``warm``: exact inference carries
        nothing between calls, so there is none)."""
        w_dense = self.dense_weights(w)
        units = span_lattice.units(data)
        background_compile.start([(chain.batch_viterbi, (   # (tagging's, on a cold cache)
            0, 0, units, self.features, self.structure.tables, w, w_dense,
            np.zeros(0, dtype=np.int64)))])

        def kernel(i0: int, i1: int, grad: np.ndarray, grad_ptr: np.ndarray,
                   grad_dense: np.ndarray) -> float:
            return chain.batch_expectations(i0, i1, units, self.features, self.structure.tables,
                                            w, w_dense, grad, grad_ptr, grad_dense)

        return Expectations(*row_block_sums(self._layout(data), jobs, self.n_features,
                                            self.row_ptr, w_dense, self.dense_feats,
                                            self.dense_slot, kernel))

    def instance_runs(self, data: EncodedData, carry: bool = True) -> "ChainRuns":
        """``data``'s sequences a run at a time, counted into the run's
        features only (``ChainRuns``)."""
        return ChainRuns(self, data)

    def __getstate__(self) -> dict:
        """Pickled (to a cluster's workers) without the layout held for local data."""
        return {**self.__dict__, "_held_layout": None}

    def _layout(self, data: EncodedData) -> BlockLayout:
        """``data``'s blocks and their rows, made at its first evaluation and
        kept while it lives (a training run evaluates the same data); its
        rows are then grouped (``_group_rows``)."""
        cuts = blocks(data.seq_ptr)
        held = self._held_layout
        if held is None or held[0]() is not data or held[1].cuts != cuts:
            self._group_rows(data)
            held = self._held_layout = (weakref.ref(data), BlockLayout.build(
                data, cuts, self.row_ptr, self.first_rows, self.scattered))
        return held[1]

    def _group_rows(self, data: EncodedData) -> None:
        """Each token's attribute rows in place, the rows scored as one
        vector (dense and full) first, then the others, each group in the
        order it had: the kernels branch on a row's kind, and in template
        order (5.1 changes of kind per token on CoNLL-2000 with CRFsuite's
        features, 2.0 grouped) the branch is mispredicted; an evaluation
        there took 0.95x the time.  The same sums, bit for bit: the vector
        rows add into one vector and the others into their own entries, each
        in its order.  Data whose arrays are read-only is left as it is."""
        vector = (self.row_dense >= 0) | (self.row_dense == chain.FULL_ROW)
        with_values = data.tok_val.strides != (0,)
        if (vector.all() or not vector.any() or not data.tok_row.flags.writeable
                or (with_values and not data.tok_val.flags.writeable)):
            return   # (one kind of row: nothing to group)
        kind = np.where(vector, 0, 1).astype(np.int8)
        group_unit_rows(data.tok_ptr, data.tok_row, data.tok_val if with_values else np.empty(0),
                        kind, np.int64(2))

    def gold_counts(self, data: EncodedData) -> np.ndarray:
        """Feature counts of the gold labelling: the span kernel's walk with
        every token a span of its own."""
        counts = np.zeros(self.n_features)
        span_lattice.gold_counts(span_lattice.units(data), data.gold,
                                 np.ones(data.n_tokens, dtype=np.int64), 1,
                                 self.features, self.structure.tables, counts)
        return counts

    def decode(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> Decoding:
        w_dense = self.dense_weights(w)
        units = span_lattice.units(data)
        out = np.zeros(data.n_tokens, dtype=np.int64)
        background_compile.wait()

        def work(i0: int, i1: int) -> None:
            chain.batch_viterbi(i0, i1, units, self.features, self.structure.tables, w, w_dense,
                                out)

        run_parallel(jobs, data, work)
        return Decoding(data.split(out))

    def scoring(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What scoring needs of ``w``, once per call over many sequences:
        the constant rows' potentials and the dense rows' weights."""
        return (chain.static_potentials(self.features, self.structure.tables, w),
                self.dense_weights(w))

    def potentials(self, w: np.ndarray, data: EncodedData, i: int,
                   scoring: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """pot[t, z] of sequence ``i``: the summed weight · value of every
        feature with pattern z active at t (``scoring``: ``self.scoring(w)``,
        when already at hand)."""
        a, T = int(data.seq_ptr[i]), int(data.seq_ptr[i + 1] - data.seq_ptr[i])
        static, w_dense = scoring if scoring is not None else self.scoring(w)
        st = self.structure
        pot = np.empty((T, len(st.patterns)))
        chain.potentials(a, T, span_lattice.units(data), self.features, st.tables, w, static,
                         np.arange(len(st.patterns)), w_dense, np.empty(st.n_labels), pot)
        return pot

    def nbest(self, w: np.ndarray, data: EncodedData, k: int, jobs: int = 1
              ) -> list[nbest.NBest]:
        """The k best labellings of every sequence, best first
        (``fgl.engines.sequence.nbest``): one kernel call per run of sequences."""
        scoring, units, tables = self.kernel_scoring(w), span_lattice.units(data), \
            self.structure.tables

        def kernel(i0: int, i1: int, found: nbest.Found) -> None:
            nbest.batch_chain_kbest(i0, i1, units, self.features, tables, scoring, k, found)

        return nbest.batch_nbest(data, k, jobs, kernel)

    def marginals(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> Marginals:
        """Per sequence, P(y_t = y | x) as a [T, n_labels] array."""
        st = self.structure
        scoring = self.scoring(w)
        return Marginals([chain.pattern_marginals(st, self.potentials(w, data, i, scoring))[1]
                          [:, :st.n_labels] for i in range(data.n_sequences)])

    def log_partition(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> np.ndarray:
        """log Z(x) of every sequence: one kernel call per run of sequences
        (``fgl.engines.sequence.partition``)."""
        scoring, units, tables = self.kernel_scoring(w), span_lattice.units(data), \
            self.structure.tables

        def kernel(i0: int, i1: int, out: np.ndarray) -> None:
            partition.batch_chain_log_z(i0, i1, units, self.features, tables, scoring, out)

        return partition.batch_log_z(data, jobs, kernel)

    def kernel_scoring(self, w: np.ndarray) -> nbest.Scoring:
        """``scoring(w)`` as the batch kernels take it, every pattern filled."""
        static, w_dense = self.scoring(w)
        return nbest.Scoring(w, static, np.arange(len(self.structure.patterns)), w_dense)


class ChainRuns(SequenceRuns):
    """``SequenceRuns`` of a chain program at the cost of the run's own
    features (on CoNLL-2000 with CRFsuite's features a sentence reads about
    1,700 of 453,010).  The batch kernel counts into a compact array of
    them (``row_block_sums``' layout); the dense rows the run holds are
    loaded into, and their counts read and cleared from, matrices kept for
    the data set (a whole dense matrix per call would cost the model, not
    the run).  The gold counts are subtracted in that layout too
    (``subtract_gold``)."""

    def __init__(self, program: ChainProgram, data: EncodedData):
        super().__init__(program, data)
        self.chain = program
        n = program.structure.n_labels
        self.w_dense = np.zeros((int(program.row_dense.max(initial=-1)) + 1, n))
        self.grad_dense = np.zeros_like(self.w_dense)
        self.slot = np.full(program.n_features, -1, dtype=np.int64)
        self.slot[program.dense_feats] = program.dense_slot
        self.grad_ptr = np.empty(len(self.row_ptr) - 1, dtype=np.int64)
        self.units = span_lattice.units(data)
        const = program.const_feats   # (the first features of every run's layout, in order)
        order = np.argsort(program.feat_s[const], kind="stable")
        self.consts = ConstantsByState(
            const[order], order.astype(np.int64),
            np.searchsorted(program.feat_s[const][order],
                            np.arange(len(program.structure.s_parent) + 1)))
        self.on = np.zeros(len(program.structure.s_parent), dtype=np.bool_)

    def gradient(self, w: np.ndarray, i0: int, i1: int) -> RunGradient:
        rows, index = self.rows(i0, i1)
        grad = np.zeros(local_layout(rows, self.row_ptr, self.grad_ptr))
        st = self.chain.structure
        move_dense(rows, self.row_ptr, self.chain.row_dense, self.slot, w, self.w_dense, grad,
                   self.grad_ptr, self.grad_dense, True)
        log_z = chain.batch_expectations(i0, i1, self.units, self.chain.features, st.tables, w,
                                         self.w_dense, grad, self.grad_ptr, self.grad_dense)
        move_dense(rows, self.row_ptr, self.chain.row_dense, self.slot, w, self.w_dense, grad,
                   self.grad_ptr, self.grad_dense, False)
        gold_score = subtract_gold(i0, i1, self.units, self.data.gold, self.row_ptr,
                                   self.chain.feat_s, self.consts, st.tables, w, grad,
                                   self.grad_ptr, self.on)
        return RunGradient(log_z - gold_score, index, grad)


@njit(cache=True, nogil=True)
def move_dense(rows, row_ptr, row_dense, slot, w, w_dense, grad, grad_ptr, grad_dense, load):
    """For the dense rows among ``rows``: before the kernel (``load``) their
    weights into ``w_dense``; after it their counts from ``grad_dense`` into
    the compact ``grad`` (at ``grad_ptr``), clearing ``grad_dense``."""
    n = w_dense.shape[1]
    for r in rows:
        d = row_dense[r]
        if d < 0:
            continue
        at = grad_ptr[r]
        for k in range(row_ptr[r], row_ptr[r + 1]):
            y = slot[k] - d * n
            if load:
                w_dense[d, y] = w[k]
            else:
                grad[at + k - row_ptr[r]] = grad_dense[d, y]
        if not load:
            grad_dense[d, :] = 0.0


class ConstantsByState(NamedTuple):
    """The constant features (active at every token; a run's layout holds
    them first) by the transition states whose gold count they take, as
    one argument: for state s, features ``by_s[ptr[s]:ptr[s + 1]]``, at
    ``at[ptr[s]:ptr[s + 1]]`` in the layout."""

    by_s: np.ndarray
    at: np.ndarray
    ptr: np.ndarray


@njit(cache=True, nogil=True)
def subtract_gold(i0, i1, units, gold, row_ptr, feat_s, consts: ConstantsByState, tables, w, grad,
                  grad_ptr, on):
    """Subtract the gold counts of sequences i0..i1-1 from ``grad`` (the
    run's compact layout: the constant features first, row r's from
    ``grad_ptr[r]``) and return their score w·F(x, y).  The gold walk of
    ``span_lattice.gold_counts`` at span length 1, counting into the run's own
    features instead of a full-length vector, and the constant features by
    the gold transition's states (``consts``) instead of testing every one
    at every token: a sentence's gold cost 38-49 µs that way, scattered
    over 3.6 MB."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    seq_ptr = units.seq_ptr
    unit_ptr = units.unit_ptr
    unit_row = units.unit_row
    unit_val = units.unit_val
    const_by_s, const_at, const_ptr = consts.by_s, consts.at, consts.ptr
    s_next, s_parent, n = tables.s_next, tables.s_parent, tables.n_labels
    score = 0.0
    for i in range(i0, i1):
        q = 0
        for u in range(seq_ptr[i], seq_ptr[i + 1]):
            s = q * n + gold[u]
            x = s
            while x >= 0:
                on[x] = True
                for j in range(const_ptr[x], const_ptr[x + 1]):
                    grad[const_at[j]] -= 1.0
                    score += w[const_by_s[j]]
                x = s_parent[x]
            for j in range(unit_ptr[u], unit_ptr[u + 1]):
                r = unit_row[j]
                v = unit_val[j]
                shift = grad_ptr[r] - row_ptr[r]
                for k in range(row_ptr[r], row_ptr[r + 1]):
                    if on[feat_s[k]]:
                        grad[k + shift] -= v
                        score += v * w[k]
            x = s
            while x >= 0:
                on[x] = False
                x = s_parent[x]
            q = s_next[s]
    return score
