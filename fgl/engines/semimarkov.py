"""Exact high-order semi-Markov engine (Cuong et al. 2014 §2).

A segmentation splits the tokens 0..T-1 into consecutive segments of
length 1..L, each with a label; a label pattern z matches at segment j when
the labels of segments j-|z|+1..j equal z, and contributes the potential of
z on segment j's span.  Inference is the span kernel (``fgl.engines.spans``)
over the state machine of the segment labels
(``fgl.engines.structure.ChainStructure``), in log space, O(T·L·n·|P|) per
pass (Cuong et al. 2014 §2.5); per-label length limits make Ψ = -inf for
segments of that label that are too long.  With L = 1 it is exactly the
chain engine.

This module holds the potential-table API (``segment_marginals``,
``segment_viterbi``) and the batch kernels over encoded span features:
unit (token u of a sequence starting at token a, length d) has index
(a + u)·L + d - 1 in the encoded data (``spans.Units``).  The gold counts
are the span kernel's (``spans.gold_counts``).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from fgl.engines import spans
from fgl.engines.structure import ChainStructure

# --------------------------------------------------------------------------
# potential-table API (one sequence)


def _limits(st: ChainStructure, L: int, max_len: np.ndarray | None) -> np.ndarray:
    return np.full(st.n_labels, L, dtype=np.int64) if max_len is None else \
        np.minimum(np.asarray(max_len, dtype=np.int64), L)


def segment_marginals(st: ChainStructure, pot: np.ndarray, max_len: np.ndarray | None = None
                      ) -> tuple[float, np.ndarray]:
    """log Z and P(segment (u, u+d-1), last |z| segment labels = z | x) as
    ``marg[u, d-1, z]``, for potentials ``pot[u, d-1, z]`` (shape [T, L, |Z|])."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T, L, _ = pot.shape
    work = spans.workspace(T, L, st.tables)
    log_z = spans.sequence_marginals(pot, T, st.tables, _limits(st, L, max_len), work)
    return float(log_z), work.marg[:, :, st.pattern_s].copy()


def segment_viterbi(st: ChainStructure, pot: np.ndarray, max_len: np.ndarray | None = None
                    ) -> tuple[list[tuple[int, int, int]], float]:
    """The best segmentation as (first token, last token, label) triples and
    its score."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T, L, _ = pot.shape
    labels = np.empty(T, dtype=np.int64)
    starts = np.empty(T, dtype=np.int64)
    best = spans.viterbi(pot, T, st.tables, _limits(st, L, max_len),
                         spans.workspace(T, L, st.tables), labels, starts)
    first = np.flatnonzero(starts).tolist()
    return [(u, v - 1, int(labels[u])) for u, v in zip(first, first[1:] + [T])], float(best)


# --------------------------------------------------------------------------
# batch kernels over encoded span features (training and tagging)


@njit(cache=True, nogil=True)
def potentials(a, T, L, units, features, w, pot):
    """pot[u, d-1, z]: the summed weight · value of every feature with
    pattern z active on span (u, d) of the sequence of T tokens from token
    ``a``."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    unit_ptr = units.unit_ptr
    unit_row = units.unit_row
    unit_val = units.unit_val
    row_ptr = features.row_ptr
    feat_pattern = features.feat_pattern
    for u in range(T):
        for dm in range(L):
            row = pot[u, dm]
            row[:] = 0.0
            unit = (a + u) * L + dm
            for j in range(unit_ptr[unit], unit_ptr[unit + 1]):
                r = unit_row[j]
                v = unit_val[j]
                for k in range(row_ptr[r], row_ptr[r + 1]):
                    row[feat_pattern[k]] += v * w[k]


@njit(cache=True, nogil=True)
def batch_expectations(i0, i1, L, units, features, tables, max_len, w, grad):
    """Σ log Z over sequences i0..i1 (segments of at most ``max_len[y]``
    tokens of label y, at most L); expected feature counts into ``grad``."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    seq_ptr = units.seq_ptr
    unit_ptr = units.unit_ptr
    unit_row = units.unit_row
    unit_val = units.unit_val
    row_ptr = features.row_ptr
    feat_s = features.feat_s
    max_t = spans.longest(seq_ptr, i0, i1)
    pot = np.empty((max_t, L, tables.n_patterns))
    work = spans.workspace(max_t, L, tables)
    marg = work.marg
    total = 0.0
    # the sequence walk all batch kernels open with: the per-sequence work differs,
    # and sharing the walk would take that work as a callback
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0:
            continue
        potentials(a, T, L, units, features, w, pot)
        total += spans.sequence_marginals(pot, T, tables, max_len, work)
        for u in range(T):
            for dm in range(min(L, T - u)):
                unit = (a + u) * L + dm
                m_row = marg[u, dm]
                for j in range(unit_ptr[unit], unit_ptr[unit + 1]):
                    r = unit_row[j]
                    v = unit_val[j]
                    for k in range(row_ptr[r], row_ptr[r + 1]):
                        grad[k] += v * m_row[feat_s[k]]
    return total


@njit(cache=True, nogil=True)
def batch_viterbi(i0, i1, L, units, features, tables, max_len, w, labels, starts):
    """Best segmentation of sequences i0..i1: per token its segment's label
    into ``labels``, and 1 where a segment starts (else 0) into ``starts``
    (both flat over tokens)."""
    seq_ptr = units.seq_ptr
    max_t = spans.longest(seq_ptr, i0, i1)
    pot = np.empty((max_t, L, tables.n_patterns))
    work = spans.workspace(max_t, L, tables)
    # the sequence walk all batch kernels open with: the per-sequence work differs,
    # and sharing the walk would take that work as a callback
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0:
            continue
        potentials(a, T, L, units, features, w, pot)
        spans.viterbi(pot, T, tables, max_len, work, labels[a:a + T], starts[a:a + T])
