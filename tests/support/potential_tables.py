"""Segment confidences on bare potential tables (one sequence, the
structure's own label numbering): the adapters by which
tests/engines/sequence/test_segment_confidence.py drives
``fgl.engines.sequence.constrained.confidences`` against enumeration."""
from __future__ import annotations

import numpy as np

from fgl.engines.sequence.constrained import confidences
from fgl.engines.sequence.segments import engine_structure, label_order
from fgl.engines.sequence.structure import ChainStructure


def chain_confidences(st: ChainStructure, pot: np.ndarray,
                      chunks: list[tuple[int, list[int]]]) -> np.ndarray:
    """P(y_u..y_{u+k-1} = labels | x) for every chunk ``(u, labels)`` of a
    chain with potentials ``pot[t, z]``."""
    pot = np.asarray(pot, dtype=np.float64)
    T, n_z = pot.shape
    span_u = [u + k for u, labels in chunks for k in range(len(labels))]
    span_y = [y for _, labels in chunks for y in labels]
    clamp_ptr = np.cumsum([0] + [len(labels) for _, labels in chunks])
    return confidences(pot.reshape(T, 1, n_z), st.tables, np.ones(st.n_labels, dtype=np.int64),
                       False, span_u, np.ones(len(span_u), dtype=np.int64), span_y, clamp_ptr)


def segment_confidences(st: ChainStructure, pot: np.ndarray,
                        segments: list[tuple[int, int, int]],
                        max_len: np.ndarray | None = None, distinct: bool = False
                        ) -> np.ndarray:
    """P(the segmentation contains segment (u, v) labelled y | x) for every
    ``(u, v, y)`` (inclusive), potentials ``pot[u, d-1, z]`` (shape [T, L,
    |Z|]); ``max_len`` and ``distinct`` as in
    ``fgl.engines.sequence.segments.segment_marginals``."""
    pot = np.asarray(pot, dtype=np.float64)
    T, L, _ = pot.shape
    limits = (np.full(st.n_labels, L, dtype=np.int64) if max_len is None
              else np.minimum(np.asarray(max_len, dtype=np.int64), L))
    order = label_order(limits)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    est = engine_structure(st, order)
    return confidences(pot, est.tables, limits[order], distinct, [u for u, _, _ in segments],
                       [v - u + 1 for u, v, _ in segments], [rank[y] for _, _, y in segments],
                       np.arange(len(segments) + 1))
