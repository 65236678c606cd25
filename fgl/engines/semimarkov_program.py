"""The exact semi-Markov engine's batch interface (Cuong et al. 2014 §2).

``SemiMarkovProgram`` holds one model's state machine over segment labels,
its length limits and feature table over span attributes, and answers the
learner's and the models' questions over ``EncodedData`` (L units per
token) with the batch kernels of ``fgl.engines.semimarkov`` and the span
kernel's gold-count walk (``fgl.engines.spans``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fgl.engines import semimarkov, spans
from fgl.engines.data import EncodedData, run_parallel, sequence_log_z, summed
from fgl.engines.program import Decoding, Expectations, Marginals
from fgl.engines.structure import ChainStructure


@dataclass
class SemiMarkovProgram:
    """An exact high-order semi-Markov program (Cuong et al. 2014 §2): the state
    machine over segment labels, segments of at most ``max_length`` tokens
    (``label_max`` per label), and the feature table over span attributes."""

    structure: ChainStructure
    row_ptr: np.ndarray
    feat_pattern: np.ndarray
    max_length: int
    label_max: np.ndarray
    has_hidden: ClassVar[bool] = False

    def __post_init__(self) -> None:
        self.feat_s = self.structure.pattern_s[self.feat_pattern]
        # no span attribute is constant: every feature is read from the units
        self.features = spans.FeatureTable(self.row_ptr, self.feat_pattern, self.feat_s,
                                           np.zeros(0, dtype=np.int64))

    @property
    def n_features(self) -> int:
        return len(self.feat_pattern)

    def expectations(self, w: np.ndarray, data: EncodedData, jobs: int = 1,
                     warm: None = None) -> Expectations:
        """Σ log Z and expected counts (``warm``: exact inference carries
        nothing between calls, so there is none)."""
        units = spans.units(data)

        def work(i0: int, i1: int, grad: np.ndarray) -> tuple[float, np.ndarray]:
            total = semimarkov.batch_expectations(i0, i1, self.max_length, units, self.features,
                                                  self.structure.tables, self.label_max, w, grad)
            return total, grad

        return Expectations(*summed(run_parallel(jobs, data, work,
                                                 lambda: (np.zeros(self.n_features),))))

    def gold_counts(self, data: EncodedData) -> np.ndarray:
        counts = np.zeros(self.n_features)
        spans.gold_counts(spans.units(data), data.gold, data.starts, self.max_length,
                          self.features, self.structure.tables, counts)
        return counts

    def decode(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> Decoding:
        units = spans.units(data)
        labels = np.zeros(data.n_tokens, dtype=np.int64)
        starts = np.zeros(data.n_tokens, dtype=np.int64)

        def work(i0: int, i1: int) -> None:
            semimarkov.batch_viterbi(i0, i1, self.max_length, units, self.features,
                                     self.structure.tables, self.label_max, w, labels, starts)

        run_parallel(jobs, data, work)
        return Decoding(data.split(labels), data.split(starts))

    def potentials(self, w: np.ndarray, data: EncodedData, i: int) -> np.ndarray:
        """pot[u, d-1, z] of sequence ``i``."""
        a, T = int(data.seq_ptr[i]), int(data.seq_ptr[i + 1] - data.seq_ptr[i])
        pot = np.empty((T, self.max_length, len(self.structure.patterns)))
        semimarkov.potentials(a, T, self.max_length, spans.units(data), self.features, w, pot)
        return pot

    def marginals(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> Marginals:
        """Per sequence, P(token t lies in a segment labelled y | x) as a
        [T, n_labels] array."""
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
        return Marginals(out)

    def log_partition(self, w: np.ndarray, data: EncodedData, jobs: int = 1) -> np.ndarray:
        """log Z(x) of every sequence."""
        return sequence_log_z(self, w, data)
