"""The exact semi-Markov engine's batch interface (Cuong et al. 2014 §2).

``SegmentProgram`` holds one model's state machine over segment labels,
its length limits and feature table over span attributes, and answers the
learner's and the models' questions over ``EncodedData`` (m units per token,
m >= the longest span any of its sequences can hold) with the batch
kernels of ``fgl.engines.sequence.segments_batch`` and the span lattice's
gold-count walk (``fgl.engines.sequence.span_lattice``).  The kernels
number labels by non-increasing length limit; the program translates gold
labels in and decoded labels out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fgl.engines import background_compile
from fgl.engines.program import Decoding, Expectations, Marginals
from fgl.engines.sequence import nbest, partition, segments, segments_batch, span_lattice
from fgl.engines.sequence.chain_program import ChainProgram
from fgl.engines.sequence.encoded import (
    EncodedData,
    SequenceProgram,
    dense_block_sums,
    run_parallel,
)
from fgl.engines.sequence.structure import ChainStructure


@dataclass
class SegmentProgram(SequenceProgram):
    """An exact high-order semi-Markov program (Cuong et al. 2014 §2): the
    state machine over segment labels, segments of at most ``label_max[y]``
    tokens for label y (``max_length``: the longest of them), no two
    adjacent segments with the same label when ``distinct``, and the feature
    table over span attributes (``const_rows``: the rows active on every
    span, ``bias``)."""

    structure: ChainStructure
    row_ptr: np.ndarray
    feat_pattern: np.ndarray
    label_max: np.ndarray
    const_rows: np.ndarray
    distinct: bool = False
    has_hidden: ClassVar[bool] = False

    def __post_init__(self) -> None:
        self.label_max = np.asarray(self.label_max, dtype=np.int64)
        self.max_length = int(self.label_max.max())
        self.order = segments.label_order(self.label_max)
        self.rank = np.empty_like(self.order)
        self.rank[self.order] = np.arange(len(self.order))
        self.limits = self.label_max[self.order]
        self.machine = segments.engine_structure(self.structure, self.order)
        # a chain program's feature table over the engine's labels: constant
        # rows scored once per call, static patterns, dense rows
        self.table = ChainProgram(self.machine, self.row_ptr, self.feat_pattern, self.const_rows)
        self.features = self.table.features

    def expectations(self, w: np.ndarray, data: EncodedData, jobs: int = 1,
                     warm: None = None) -> Expectations:
        """Σ log Z and expected counts (``warm``: exact inference carries
        nothing between calls, so there is none)."""
        w_dense = self.table.dense_weights(w)
        units = span_lattice.units(data)
        limits = self.span_limits(data, self.max_length)
        background_compile.start([(segments_batch.batch_viterbi, (   # (tagging's, cold cache)
            0, 0, limits, units, self.features, self.machine.tables, w, w_dense,
            np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))])

        def kernel(i0: int, i1: int, grad: np.ndarray, grad_dense: np.ndarray) -> float:
            return segments_batch.batch_expectations(
                i0, i1, limits, units, self.features, self.machine.tables, w, w_dense, grad,
                grad_dense)

        return Expectations(*dense_block_sums(data.seq_ptr, jobs, self.n_features, w_dense,
                                              self.table.dense_feats, self.table.dense_slot,
                                              kernel))

    def gold_counts(self, data: EncodedData) -> np.ndarray:
        counts = np.zeros(self.n_features)
        span_lattice.gold_counts(span_lattice.units(data), self.rank[data.gold], data.starts,
                                 data.units_per_token, self.features, self.machine.tables, counts)
        return counts

    def decode(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> Decoding:
        w_dense = self.table.dense_weights(w)
        units = span_lattice.units(data)
        labels = np.zeros(data.n_tokens, dtype=np.int64)
        starts = np.zeros(data.n_tokens, dtype=np.int64)
        limits = self.span_limits(data, self.max_length)
        background_compile.wait()

        def work(i0: int, i1: int) -> None:
            segments_batch.batch_viterbi(i0, i1, limits, units, self.features,
                                         self.machine.tables, w, w_dense, labels, starts)

        run_parallel(jobs, data, work)
        return Decoding(data.split(self.order[labels]), data.split(starts))

    def nbest(self, w: np.ndarray, data: EncodedData, k: int, jobs: int = 1
              ) -> list[nbest.NBest]:
        """The k best segmentations of every sequence, best first
        (``fgl.engines.sequence.nbest``), in the model's label ids: one
        kernel call per run of sequences."""
        scoring = self.kernel_scoring(w)
        units, limits = span_lattice.units(data), self.span_limits(data, self.max_length)

        def kernel(i0: int, i1: int, found: nbest.Found) -> None:
            nbest.batch_segment_kbest(i0, i1, limits, units, self.features, self.machine.tables,
                                      scoring, k, found)

        return [got._replace(labels=self.order[got.labels])
                for got in nbest.batch_nbest(data, k, jobs, kernel)]

    def potentials(self, w: np.ndarray, data: EncodedData, i: int) -> np.ndarray:
        """pot[u, d-1, z] of sequence ``i`` (d up to the longest span it holds)."""
        a, T = int(data.seq_ptr[i]), int(data.seq_ptr[i + 1] - data.seq_ptr[i])
        L = min(self.max_length, T)
        st = self.machine
        static, w_dense = self.table.scoring(w)
        pot = np.empty((T, L, len(st.patterns)))
        segments_batch.potentials(a, T, self.span_limits(data, L), span_lattice.units(data),
                                  self.features, st.tables, w, static,
                                  np.arange(len(st.patterns)), w_dense, np.empty(st.n_labels),
                                  pot)
        return pot

    def span_limits(self, data: EncodedData, longest: int) -> segments_batch.SpanLimits:
        """The kernels' ``SpanLimits`` over ``data``, spans of at most
        ``longest`` tokens."""
        return segments_batch.SpanLimits(int(data.units_per_token), int(longest), self.limits,
                                         bool(self.distinct))

    def marginals(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> Marginals:
        """Per sequence, P(token t lies in a segment labelled y | x) as a
        [T, n_labels] array (patterns 0..n-1 are the single labels)."""
        st = self.machine
        n = st.n_labels
        out = []
        for i in range(data.n_sequences):
            pot = self.potentials(w, data, i)
            T, L = pot.shape[:2]
            work = span_lattice.workspace(T, L, st.tables)
            segments.sequence_marginals(pot, T, st.tables, self.limits, self.distinct, work,
                                        segments.scaled_workspace(T, L, n, st.n_forward))
            marg = work.marg[:, :, st.pattern_s[:n]]
            tok = np.zeros((T, n))
            for u in range(T):
                for dm in range(min(L, T - u)):
                    tok[u:u + dm + 1] += marg[u, dm]
            out.append(tok)
        return Marginals(out)

    def log_partition(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> np.ndarray:
        """log Z(x) of every sequence: one kernel call per run of sequences
        (``fgl.engines.sequence.partition``)."""
        scoring, units = self.kernel_scoring(w), span_lattice.units(data)
        limits = self.span_limits(data, self.max_length)

        def kernel(i0: int, i1: int, out: np.ndarray) -> None:
            partition.batch_segment_log_z(i0, i1, limits, units, self.features,
                                          self.machine.tables, scoring, out)

        return partition.batch_log_z(data, jobs, kernel)

    def kernel_scoring(self, w: np.ndarray) -> nbest.Scoring:
        """The table's scoring of ``w`` as the batch kernels take it, every
        pattern filled."""
        static, w_dense = self.table.scoring(w)
        return nbest.Scoring(w, static, np.arange(len(self.machine.patterns)), w_dense)
