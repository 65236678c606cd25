"""Exact k-best labellings of the chain and semi-Markov engines.

The max-semiring forward pass of the span lattice (``fgl.engines.sequence.
span_lattice``; Ye et al. 2009 §3.1.3, Cuong et al. 2014 §2.4) keeps, per end
position v and forward state q, the best *k* partial labellings that end
in q at v instead of the best one (a list Viterbi recursion), over the
pattern-sparse state machine of ``fgl.engines.sequence.structure``.  A
labelling (a segmentation with its labels; a chain's is one token per
span) is one path through the machine (each next state is the longest
suffix of the labels so far, so a labelling determines its path), so the
k best paths are the k best distinct labellings.

Every candidate into (v, q) extends an entry of a predecessor list
sorted best first, so a candidate no better than the worst of a full
list ends its predecessor's loop: O(T·Σ_y L_y·|P|·k log k) per sequence,
never an enumeration.  Ties are broken by the candidate's transition code
and predecessor rank, so the order is the same on every run.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.engines.sequence import chain, segments, segments_batch, span_lattice
from fgl.engines.sequence.encoded import EncodedData, run_parallel
from fgl.engines.sequence.structure import ChainStructure
from fgl.jit import njit


class NBest(NamedTuple):
    """The m <= k best labellings of one sequence, best first:
    ``labels[j, t]`` the label of token t's span in labelling j,
    ``starts[j, t]`` 1 where a span starts, ``scores[j]`` its score w·F(x, y)."""

    labels: np.ndarray
    starts: np.ndarray
    scores: np.ndarray


class Scoring(NamedTuple):
    """What scoring a sequence's potentials reads of the weights (the
    programs' ``scoring``): the weights, the constant rows' potentials
    ``static``, the patterns to ``fill`` and the dense rows' weights."""

    w: np.ndarray
    static: np.ndarray
    fill: np.ndarray
    w_dense: np.ndarray


@njit(cache=True, nogil=True, inline="always")
def chain_sequence_potentials(i, units, features, tables, scoring: Scoring, lab):
    """Chain sequence i's first token a, length T and potentials pot[t, z]
    (``chain.potentials``; ``lab``: scratch of one entry per label)."""
    a = units.seq_ptr[i]
    T = units.seq_ptr[i + 1] - a
    pot = np.empty((T, scoring.fill.shape[0]))
    chain.potentials(a, T, units, features, tables, scoring.w, scoring.static, scoring.fill,
                     scoring.w_dense, lab, pot)
    return a, T, pot


@njit(cache=True, nogil=True, inline="always")
def segment_sequence_potentials(i, span_limits: segments_batch.SpanLimits, units, features,
                                tables, scoring: Scoring, lab):
    """Segment sequence i's first token a, length T and span potentials
    pot[u, d-1, z] for spans of at most min(``span_limits.longest``, T)
    tokens (``segments_batch.potentials``)."""
    a = units.seq_ptr[i]
    T = units.seq_ptr[i + 1] - a
    L = min(span_limits.longest, T)
    pot = np.empty((T, L, scoring.fill.shape[0]))
    segments_batch.potentials(a, T, segments_batch.SpanLimits(span_limits.units_per_token, L,
                                                              span_limits.max_len,
                                                              span_limits.distinct),
                              units, features, tables, scoring.w, scoring.static, scoring.fill,
                              scoring.w_dense, lab, pot)
    return a, T, pot


class Found(NamedTuple):
    """The k best labellings of a batch of sequences, flat: sequence i (T
    tokens from token a) has ``count[i]`` of them; labelling j's label and
    span-start flag at token t are ``labels[k·a + j·T + t]`` and
    ``starts[...]`` (a [k, T] block per sequence), its score ``scores[k·i + j]``."""

    labels: np.ndarray
    starts: np.ndarray
    scores: np.ndarray
    count: np.ndarray

    @staticmethod
    def empty(data: EncodedData, k: int) -> "Found":
        return Found(np.zeros(k * data.n_tokens, dtype=np.int64),
                     np.zeros(k * data.n_tokens, dtype=np.int64),
                     np.zeros(k * data.n_sequences), np.zeros(data.n_sequences, dtype=np.int64))

    def split(self, data: EncodedData, k: int) -> list[NBest]:
        """Per sequence its ``NBest`` (views of the flat arrays)."""
        out = []
        for i in range(data.n_sequences):
            a, T, m = int(data.seq_ptr[i]), int(data.seq_ptr[i + 1] - data.seq_ptr[i]), \
                int(self.count[i])
            block = slice(k * a, k * a + m * T)
            out.append(NBest(self.labels[block].reshape(m, T), self.starts[block].reshape(m, T),
                             self.scores[k * i:k * i + m]))
        return out


@njit(cache=True, nogil=True, inline="always")
def _better(sa, ca, ra, sb, cb, rb):
    """Whether entry (score sa, code ca, rank ra) ranks before (sb, cb, rb):
    the higher score, then the lower code, then the lower rank."""
    if sa != sb:
        return sa > sb
    if ca != cb:
        return ca < cb
    return ra < rb


@njit(cache=True, nogil=True, inline="always")
def _swap(hs, hc, hr, i, j):
    """Exchange heap entries i and j."""
    hs[i], hs[j] = hs[j], hs[i]
    hc[i], hc[j] = hc[j], hc[i]
    hr[i], hr[j] = hr[j], hr[i]


@njit(cache=True, nogil=True)
def _sift_down(hs, hc, hr, m, i):
    """Restore the heap (worst entry at the root) below position i of m."""
    while True:
        j = 2 * i + 1
        if j >= m:
            return
        if j + 1 < m and _better(hs[j], hc[j], hr[j], hs[j + 1], hc[j + 1], hr[j + 1]):
            j += 1
        if not _better(hs[i], hc[i], hr[i], hs[j], hc[j], hr[j]):
            return
        _swap(hs, hc, hr, i, j)
        i = j


@njit(cache=True, nogil=True)
def _offer(hs, hc, hr, m, k, x, c, r):
    """Offer (x, c, r) to a heap of m entries holding the best k so far;
    returns the new m, or -1 when the heap was full and the entry no better
    than its worst (so no later, worse entry of the same list can enter)."""
    if m < k:
        i = m
        hs[i], hc[i], hr[i] = x, c, r
        while i > 0:   # sift up: the worst stays at the root
            parent = (i - 1) // 2
            if not _better(hs[parent], hc[parent], hr[parent], hs[i], hc[i], hr[i]):
                break
            _swap(hs, hc, hr, i, parent)
            i = parent
        return m + 1
    if not _better(x, c, r, hs[0], hc[0], hr[0]):
        return -1
    hs[0], hc[0], hr[0] = x, c, r
    _sift_down(hs, hc, hr, m, 0)
    return m


@njit(cache=True, nogil=True)
def _drain(hs, hc, hr, m, out_s, out_c, out_r):
    """Empty a heap of m entries into ``out_*`` best first."""
    for j in range(m - 1, -1, -1):
        out_s[j], out_c[j], out_r[j] = hs[0], hc[0], hr[0]
        hs[0], hc[0], hr[0] = hs[j], hc[j], hr[j]
        _sift_down(hs, hc, hr, j, 0)


@njit(cache=True, nogil=True)
def _kbest_forward(T, tables, cnt, psi, k, ks, kc, kr, km):
    """The k-best forward pass: ``ks/kc/kr[v, q, :km[v, q]]`` the scores,
    codes (d - 1)·S + s of the last span's transition and predecessor
    ranks of the best partial labellings ending in state q at token v,
    best first."""
    km[:, :] = 0   # (the start: one empty labelling in state 0 at token 0)
    ks[0, 0, 0] = 0.0
    kc[0, 0, 0] = -1
    kr[0, 0, 0] = 0
    km[0, 0] = 1
    if k == 1:
        _best_forward(T, tables, cnt, psi, ks, kc, kr, km)
        return
    L = psi.shape[1]
    n = tables.n_labels
    P = tables.n_forward
    s_next = tables.s_next
    S = P * n
    hs = np.empty((P, k))
    hc = np.empty((P, k), dtype=np.int64)
    hr = np.empty((P, k), dtype=np.int64)
    hm = np.zeros(P, dtype=np.int64)
    for v in range(1, T + 1):
        hm[:] = 0
        for dm in range(min(L, v)):
            u = v - dm - 1
            ps = psi[u, dm]
            for p in range(P):
                c_prev = km[u, p]
                for s in range(p * n, p * n + cnt[dm]):
                    if ps[s] == -np.inf:
                        continue
                    q = s_next[s]
                    code = dm * S + s
                    for r in range(c_prev):
                        m = _offer(hs[q], hc[q], hr[q], hm[q], k, ks[u, p, r] + ps[s], code, r)
                        if m < 0:
                            break
                        hm[q] = m
        for q in range(P):
            _drain(hs[q], hc[q], hr[q], hm[q], ks[v, q], kc[v, q], kr[v, q])
            km[v, q] = hm[q]


@njit(cache=True, nogil=True)
def _best_forward(T, tables, cnt, psi, ks, kc, kr, km):
    """``_kbest_forward`` at k = 1 without heaps (from the start it set):
    per (v, q) the best entry, a tie going to the lower code, as
    ``_better`` ranks them."""
    L = psi.shape[1]
    n = tables.n_labels
    P = tables.n_forward
    s_next = tables.s_next
    S = P * n
    for v in range(1, T + 1):
        best = ks[v, :, 0]
        code_of = kc[v, :, 0]
        for dm in range(min(L, v)):
            u = v - dm - 1
            ps = psi[u, dm]
            for p in range(P):
                if km[u, p] == 0:
                    continue
                base = ks[u, p, 0]
                for s in range(p * n, p * n + cnt[dm]):
                    if ps[s] == -np.inf:
                        continue
                    q = s_next[s]
                    x = base + ps[s]
                    code = dm * S + s
                    if km[v, q] == 0 or x > best[q] or (x == best[q] and code < code_of[q]):
                        best[q] = x
                        code_of[q] = code
                        kr[v, q, 0] = 0
                        km[v, q] = 1


@njit(cache=True, nogil=True)
def kbest(pot, T, tables, max_len, distinct, k, labels, starts, scores):
    """The k best labellings of one sequence (potentials ``pot[u, d-1, z]``,
    labels numbered by non-increasing ``max_len`` as for ``span_lattice.viterbi``):
    labelling j's span labels into ``labels[j, :T]``, 1 at each span's
    first token into ``starts[j, :T]``, its score into ``scores[j]``, best
    first.  Returns how many labellings there are (at most k)."""
    L = pot.shape[1]
    P = tables.n_forward
    S = tables.s_prev.shape[0]
    s_prev = tables.s_prev
    s_label = tables.s_label
    cnt = span_lattice.label_counts(max_len, L)
    psi = np.empty((T, L, S))
    span_lattice.span_scores(pot, T, tables, cnt, distinct, psi)
    ks = np.empty((T + 1, P, k))
    kc = np.empty((T + 1, P, k), dtype=np.int64)
    kr = np.empty((T + 1, P, k), dtype=np.int64)
    km = np.zeros((T + 1, P), dtype=np.int64)
    _kbest_forward(T, tables, cnt, psi, k, ks, kc, kr, km)
    # the best k over the final states: code q, rank r
    hs = np.empty(k)
    hc = np.empty(k, dtype=np.int64)
    hr = np.empty(k, dtype=np.int64)
    m = 0
    for q in range(P):
        for r in range(km[T, q]):
            got = _offer(hs, hc, hr, m, k, ks[T, q, r], q, r)
            if got < 0:
                break
            m = got
    fs = np.empty(k)
    fq = np.empty(k, dtype=np.int64)
    fr = np.empty(k, dtype=np.int64)
    _drain(hs, hc, hr, m, fs, fq, fr)
    for j in range(m):
        scores[j] = fs[j]
        q, r, v = fq[j], fr[j], T
        while v > 0:
            code = kc[v, q, r]
            dm = code // S
            s = code - dm * S
            u = v - dm - 1
            for t in range(u, v):
                labels[j, t] = s_label[s]
                starts[j, t] = 0
            starts[j, u] = 1
            r = kr[v, q, r]
            q = s_prev[s]
            v = u
    return m


@njit(cache=True, nogil=True)
def _kbest_into(pot, T, a, i, tables, max_len, distinct, k, found):
    """``kbest`` of sequence i (T tokens from token a) into ``found``."""
    block = found.labels[k * a:k * (a + T)].reshape((k, T))
    starts = found.starts[k * a:k * (a + T)].reshape((k, T))
    found.count[i] = kbest(pot, T, tables, max_len, distinct, k, block, starts,
                           found.scores[k * i:k * (i + 1)])


@njit(cache=True, nogil=True)
def batch_chain_kbest(i0, i1, units, features, tables, scoring, k, found):
    """The k best labellings of chain sequences i0..i1-1 into ``found``: each
    sequence's potentials (``chain.potentials``) and its k-best pass, in one
    call."""
    n = tables.n_labels
    lab = np.empty(n)
    max_len = np.ones(n, dtype=np.int64)
    for i in range(i0, i1):
        a, T, pot = chain_sequence_potentials(i, units, features, tables, scoring, lab)
        _kbest_into(pot.reshape((T, 1, pot.shape[1])), T, a, i, tables, max_len, False, k,
                    found)


@njit(cache=True, nogil=True)
def batch_segment_kbest(i0, i1, span_limits: segments_batch.SpanLimits, units, features, tables,
                        scoring, k, found):
    """The k best segmentations of sequences i0..i1-1 (spans as
    ``span_limits`` says, labels numbered by their limits' order,
    ``segments.label_order``) into ``found``, in one call."""
    lab = np.empty(tables.n_labels)
    for i in range(i0, i1):
        a, T, pot = segment_sequence_potentials(i, span_limits, units, features, tables, scoring,
                                                lab)
        _kbest_into(pot, T, a, i, tables, span_limits.max_len, span_limits.distinct, k, found)


def batch_nbest(data: EncodedData, k: int, jobs: int, kernel) -> list[NBest]:
    """Per sequence of ``data`` its k best labellings, by ``kernel(i0, i1,
    found)`` (a batch kernel above with the program's arguments bound) over
    runs of sequences, one thread each."""
    if k < 1:
        raise ValueError("k must be at least 1")
    found = Found.empty(data, k)
    run_parallel(jobs, data, lambda i0, i1: kernel(i0, i1, found))
    return found.split(data, k)


def span_nbest(tables, pot: np.ndarray, max_len: np.ndarray, distinct: bool, k: int) -> NBest:
    """The k best labellings of one sequence with potentials ``pot[u, d-1,
    z]`` over the engine's ``tables`` (labels numbered by non-increasing
    ``max_len``)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T = pot.shape[0]
    labels = np.zeros((k, T), dtype=np.int64)
    starts = np.zeros((k, T), dtype=np.int64)
    scores = np.empty(k)
    m = kbest(pot, T, tables, np.asarray(max_len, dtype=np.int64), distinct, k, labels, starts,
              scores)
    return NBest(labels[:m], starts[:m], scores[:m])


def chain_nbest(st: ChainStructure, pot: np.ndarray, k: int) -> NBest:
    """The k best labellings of a chain with potentials ``pot[t, z]``."""
    pot = np.asarray(pot, dtype=np.float64)
    return span_nbest(st.tables, pot.reshape(pot.shape[0], 1, -1),
                      np.ones(st.n_labels, dtype=np.int64), False, k)


def segment_nbest(st: ChainStructure, pot: np.ndarray, k: int,
                  max_len: np.ndarray | None = None, distinct: bool = False
                  ) -> list[tuple[list[tuple[int, int, int]], float]]:
    """The k best segmentations for potentials ``pot[u, d-1, z]``, each as
    (first token, last token, label) triples with its score (``max_len``,
    ``distinct`` as for ``segments.segment_viterbi``)."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T, L, _ = pot.shape
    limits = np.full(st.n_labels, L, dtype=np.int64) if max_len is None else \
        np.minimum(np.asarray(max_len, dtype=np.int64), L)
    order = segments.label_order(limits)
    best = span_nbest(segments.engine_structure(st, order).tables, pot, limits[order],
                      distinct, k)
    out = []
    for labels, starts, score in zip(*best):
        first = np.flatnonzero(starts).tolist()
        out.append(([(u, v - 1, int(order[labels[u]])) for u, v in zip(first, first[1:] + [T])],
                    float(score)))
    return out
