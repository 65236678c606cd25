"""Exact high-order semi-Markov engine (Cuong et al. 2014 §2).

A segmentation splits the tokens 0..T-1 into consecutive segments of
length 1..L, each with a label; a label pattern z matches at segment j when
the labels of segments j-|z|+1..j equal z, and contributes the potential of
z on segment j's span.  The forward states P, transitions S = P·Y and
longest-suffix tables are those of the chain engine
(``fgl.engines.chain.ChainStructure``) built over segment labels; what
changes is that a transition consumes a span (u, d) of d tokens:

* Ψ(u, d, s) = Σ_{z ∈ Z, z suffix of s} pot[u, d, z] (002 §2.3.1),
* α(v, q) = ⊕_{d ≤ L} ⊕_{s: next(s) = q} α(v - d, prev(s)) ⊗ Ψ(v - d, d, s),
* β(u, p) = ⊕_{d ≤ L} ⊕_y Ψ(u, d, p·y) ⊗ β(u + d, next(p·y)) — the
  conditional backward variables of 002 §2.3.2,
* P(u, v, s) = α(u, prev s) Ψ(u, d, s) β(v + 1, next s) / Z, accumulated up
  the parent tree into segment-pattern marginals P(u, v, z | x),
* Viterbi over (d, p, y) by the max semiring (002 §2.4).

Cost O(T·L·n·|P|) per pass (002 §2.5).  Per-label length limits make
Ψ = -inf for segments of that label that are too long.  Everything is in
log space; the forward pass is one kernel for both semirings.  With L = 1 it
is exactly the chain engine.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .chain import ChainStructure, _logsumexp_row, _longest


@njit(cache=True, nogil=True)
def _span_scores(pot, s_label, s_pattern, s_parent, s_order, max_len, psi):
    """psi[u, d-1, s] = Ψ(u, d, s); -inf where the label's limit is < d or
    the span runs past the end."""
    T, L, _ = pot.shape
    for u in range(T):
        for dm in range(L):
            if u + dm >= T:
                for s in range(psi.shape[2]):
                    psi[u, dm, s] = -np.inf
                continue
            for i in range(s_order.shape[0]):
                s = s_order[i]
                if dm >= max_len[s_label[s]]:
                    psi[u, dm, s] = -np.inf
                    continue
                v = 0.0
                if s_pattern[s] >= 0:
                    v = pot[u, dm, s_pattern[s]]
                if s_parent[s] >= 0:
                    v += psi[u, dm, s_parent[s]]
                psi[u, dm, s] = v


@njit(cache=True, nogil=True)
def _forward(psi, s_prev, s_next, n_forward, use_max, alpha, back, tmp, acc):
    """α over segment end positions, in the log-sum-exp or max semiring;
    ``back[v, q]`` = d·S + s of the best incoming (span, transition)."""
    T, L, S = psi.shape
    alpha[0, :] = -np.inf
    alpha[0, 0] = 0.0
    for v in range(1, T + 1):
        row = alpha[v]
        row[:] = -np.inf
        for dm in range(min(L, v)):
            u = v - dm - 1
            for s in range(S):
                x = alpha[u, s_prev[s]] + psi[u, dm, s]
                tmp[dm * S + s] = x
                q = s_next[s]
                if x > row[q]:
                    row[q] = x
                    back[v, q] = dm * S + s
        if not use_max:
            acc[:] = 0.0
            for dm in range(min(L, v)):
                for s in range(S):
                    q = s_next[s]
                    if row[q] > -np.inf:
                        acc[q] += np.exp(tmp[dm * S + s] - row[q])
            for q in range(n_forward):
                if acc[q] > 0.0:
                    row[q] += np.log(acc[q])


@njit(cache=True, nogil=True)
def _backward(psi, s_next, n_labels, n_forward, beta):
    T, L, S = psi.shape
    beta[T, :] = 0.0
    for u in range(T - 1, -1, -1):
        for p in range(n_forward):
            m = -np.inf
            for dm in range(min(L, T - u)):
                for y in range(n_labels):
                    s = p * n_labels + y
                    x = psi[u, dm, s] + beta[u + dm + 1, s_next[s]]
                    if x > m:
                        m = x
            if m == -np.inf:
                beta[u, p] = m
                continue
            a = 0.0
            for dm in range(min(L, T - u)):
                for y in range(n_labels):
                    s = p * n_labels + y
                    a += np.exp(psi[u, dm, s] + beta[u + dm + 1, s_next[s]] - m)
            beta[u, p] = m + np.log(a)


@njit(cache=True, nogil=True)
def _marginals(psi, alpha, beta, log_z, s_prev, s_next, s_parent, s_order, marg):
    """marg[u, d-1, s] = P(segment (u, u+d-1) whose transition has suffix s)."""
    T, L, S = psi.shape
    for u in range(T):
        for dm in range(L):
            if u + dm >= T:
                marg[u, dm, :] = 0.0
                continue
            for s in range(S):
                x = alpha[u, s_prev[s]] + psi[u, dm, s] + beta[u + dm + 1, s_next[s]] - log_z
                marg[u, dm, s] = np.exp(x) if x > -np.inf else 0.0
            for i in range(S - 1, -1, -1):
                s = s_order[i]
                if s_parent[s] >= 0:
                    marg[u, dm, s_parent[s]] += marg[u, dm, s]


@njit(cache=True, nogil=True)
def _sequence_marginals(pot, s_prev, s_label, s_next, s_pattern, s_parent, s_order, n_forward,
                        n_labels, max_len, psi, alpha, beta, back, tmp, acc, marg):
    T = pot.shape[0]
    _span_scores(pot, s_label, s_pattern, s_parent, s_order, max_len, psi)
    _forward(psi, s_prev, s_next, n_forward, False, alpha, back, tmp, acc)
    _backward(psi, s_next, n_labels, n_forward, beta)
    log_z = _logsumexp_row(alpha[T])
    _marginals(psi, alpha, beta, log_z, s_prev, s_next, s_parent, s_order, marg)
    return log_z


@njit(cache=True, nogil=True)
def _viterbi(pot, s_prev, s_label, s_next, s_pattern, s_parent, s_order, n_forward, max_len,
             psi, alpha, back, tmp, acc, seg_start, seg_len, seg_label):
    """Max-semiring forward and trace-back; fills the segments from the end
    and returns (best score, number of segments)."""
    T, L, S = psi.shape
    _span_scores(pot, s_label, s_pattern, s_parent, s_order, max_len, psi)
    _forward(psi, s_prev, s_next, n_forward, True, alpha, back, tmp, acc)
    q = 0
    best = -np.inf
    for p in range(n_forward):
        if alpha[T, p] > best:
            best = alpha[T, p]
            q = p
    v = T
    n = 0
    while v > 0:
        code = back[v, q]
        dm = code // S
        s = code - dm * S
        seg_start[n] = v - dm - 1
        seg_len[n] = dm + 1
        seg_label[n] = s_label[s]
        n += 1
        q = s_prev[s]
        v -= dm + 1
    return best, n


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
    S, P = st.n_backward, st.n_forward
    psi = np.empty((T, L, S))
    alpha = np.empty((T + 1, P))
    beta = np.empty((T + 1, P))
    back = np.zeros((T + 1, P), dtype=np.int64)
    marg = np.empty((T, L, S))
    log_z = _sequence_marginals(pot, st.s_prev, st.s_label, st.s_next, st.s_pattern,
                                st.s_parent, st.s_order, P, st.n_labels, _limits(st, L, max_len),
                                psi, alpha, beta, back, np.empty(L * S), np.empty(P), marg)
    return float(log_z), marg[:, :, st.pattern_s].copy()


def segment_viterbi(st: ChainStructure, pot: np.ndarray, max_len: np.ndarray | None = None
                    ) -> tuple[list[tuple[int, int, int]], float]:
    """The best segmentation as (first token, last token, label) triples and
    its score."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T, L, _ = pot.shape
    S, P = st.n_backward, st.n_forward
    starts, lens, labels = (np.zeros(T, dtype=np.int64) for _ in range(3))
    best, n = _viterbi(pot, st.s_prev, st.s_label, st.s_next, st.s_pattern, st.s_parent,
                       st.s_order, P, _limits(st, L, max_len), np.empty((T, L, S)),
                       np.empty((T + 1, P)), np.zeros((T + 1, P), dtype=np.int64),
                       np.empty(L * S), np.empty(P), starts, lens, labels)
    segs = [(int(starts[i]), int(starts[i] + lens[i] - 1), int(labels[i])) for i in range(n)]
    return segs[::-1], float(best)


# --------------------------------------------------------------------------
# batch kernels over encoded span features (training and tagging)
#
# Unit (token u of a sequence starting at token a, length d) has index
# (a + u)·L + d - 1; ``unit_ptr`` is the CSR over units of active attribute
# rows, as ``tok_ptr`` is for the chain engine.


@njit(cache=True, nogil=True)
def _potentials(a, T, L, unit_ptr, unit_row, unit_val, row_ptr, feat_pattern, w, pot):
    for u in range(T):
        for dm in range(L):
            pot[u, dm, :] = 0.0
            unit = (a + u) * L + dm
            for j in range(unit_ptr[unit], unit_ptr[unit + 1]):
                r = unit_row[j]
                v = unit_val[j]
                for k in range(row_ptr[r], row_ptr[r + 1]):
                    pot[u, dm, feat_pattern[k]] += v * w[k]


@njit(cache=True, nogil=True)
def _chunk_expectations(i0, i1, L, seq_ptr, unit_ptr, unit_row, unit_val, row_ptr,
                        feat_pattern, feat_s, w, s_prev, s_label, s_next, s_pattern, s_parent,
                        s_order, n_forward, n_labels, n_patterns, max_len, grad):
    """Σ log Z over sequences i0..i1; expected feature counts into ``grad``."""
    max_t = _longest(seq_ptr, i0, i1)
    S = s_prev.shape[0]
    pot = np.empty((max_t, L, n_patterns))
    psi = np.empty((max_t, L, S))
    marg = np.empty((max_t, L, S))
    alpha = np.empty((max_t + 1, n_forward))
    beta = np.empty((max_t + 1, n_forward))
    back = np.zeros((max_t + 1, n_forward), dtype=np.int64)
    tmp = np.empty(L * S)
    acc = np.empty(n_forward)
    total = 0.0
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0:
            continue
        _potentials(a, T, L, unit_ptr, unit_row, unit_val, row_ptr, feat_pattern, w, pot)
        total += _sequence_marginals(pot[:T], s_prev, s_label, s_next, s_pattern, s_parent,
                                     s_order, n_forward, n_labels, max_len, psi[:T],
                                     alpha[:T + 1], beta[:T + 1], back[:T + 1], tmp, acc,
                                     marg[:T])
        for u in range(T):
            for dm in range(min(L, T - u)):
                unit = (a + u) * L + dm
                for j in range(unit_ptr[unit], unit_ptr[unit + 1]):
                    r = unit_row[j]
                    v = unit_val[j]
                    for k in range(row_ptr[r], row_ptr[r + 1]):
                        grad[k] += v * marg[u, dm, feat_s[k]]
    return total


@njit(cache=True, nogil=True)
def _chunk_viterbi(i0, i1, L, seq_ptr, unit_ptr, unit_row, unit_val, row_ptr, feat_pattern, w,
                   s_prev, s_label, s_next, s_pattern, s_parent, s_order, n_forward, n_patterns,
                   max_len, labels, starts):
    """Best segmentation of sequences i0..i1: per token its segment's label,
    and 1 where a segment starts."""
    max_t = _longest(seq_ptr, i0, i1)
    S = s_prev.shape[0]
    pot = np.empty((max_t, L, n_patterns))
    psi = np.empty((max_t, L, S))
    alpha = np.empty((max_t + 1, n_forward))
    back = np.zeros((max_t + 1, n_forward), dtype=np.int64)
    tmp = np.empty(L * S)
    acc = np.empty(n_forward)
    seg_start = np.empty(max_t, dtype=np.int64)
    seg_len = np.empty(max_t, dtype=np.int64)
    seg_label = np.empty(max_t, dtype=np.int64)
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0:
            continue
        _potentials(a, T, L, unit_ptr, unit_row, unit_val, row_ptr, feat_pattern, w, pot)
        _, n = _viterbi(pot[:T], s_prev, s_label, s_next, s_pattern, s_parent, s_order,
                        n_forward, max_len, psi[:T], alpha[:T + 1], back[:T + 1], tmp, acc,
                        seg_start, seg_len, seg_label)
        for g in range(n):
            for t in range(seg_start[g], seg_start[g] + seg_len[g]):
                labels[a + t] = seg_label[g]
                starts[a + t] = 0
            starts[a + seg_start[g]] = 1


@njit(cache=True, nogil=True)
def _empirical_counts(L, seq_ptr, gold, starts, unit_ptr, unit_row, unit_val, row_ptr, feat_s,
                      s_next, s_parent, n_labels, counts):
    """Feature counts of the gold segmentations (``starts`` marks each
    segment's first token, ``gold`` its label on every token)."""
    on = np.zeros(s_parent.shape[0], dtype=np.bool_)
    for i in range(seq_ptr.shape[0] - 1):
        q = 0
        a, b = seq_ptr[i], seq_ptr[i + 1]
        u = a
        while u < b:
            v = u + 1
            while v < b and starts[v] == 0:
                v += 1
            s = q * n_labels + gold[u]
            x = s
            while x >= 0:
                on[x] = True
                x = s_parent[x]
            unit = u * L + (v - u - 1)
            for j in range(unit_ptr[unit], unit_ptr[unit + 1]):
                r = unit_row[j]
                for k in range(row_ptr[r], row_ptr[r + 1]):
                    if on[feat_s[k]]:
                        counts[k] += unit_val[j]
            x = s
            while x >= 0:
                on[x] = False
                x = s_parent[x]
            q = s_next[s]
            u = v
