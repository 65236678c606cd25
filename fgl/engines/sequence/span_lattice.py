"""One state-machine kernel over spans (Ye et al. 2009 §3; Cuong et al. 2014 §2).

A labelling is a sequence of spans — segments of 1..L tokens, each with a
label — and the forward states P, transitions S = P·Y and suffix tables of
``fgl.engines.sequence.structure`` are built over the span labels.  A transition s
consumes a span (u, d) of d tokens:

* Ψ(u, d, s) = Σ_{z ∈ Z, z suffix of s} pot[u, d, z] (Cuong et al. 2014
  §2.3.1), for the labels whose length limit admits d; with ``distinct``
  (no two adjacent segments with the same label) -inf for p·y where y is
  the last label of p;
* α(v, q) = ⊕_{d ≤ L} ⊕_{s: next(s) = q} α(v - d, prev(s)) ⊗ Ψ(v - d, d, s),
  in the log-sum-exp or the max semiring (``forward``);
* β(u, p) = ⊕_{d ≤ L} ⊕_y Ψ(u, d, p·y) ⊗ β(u + d, next(p·y)) — the
  conditional backward variables of Cuong et al. 2014 §2.3.2;
* P(u, v, s) = α(u, prev s) Ψ(u, d, s) β(v + 1, next s) / Z, accumulated up
  the parent tree: the probability that (u, v) is a span and s a suffix of
  the labels up to it;
* the best labelling: the max semiring and a trace-back (Ye et al. 2009
  §3.1.3; Cuong et al. 2014 §2.4).

Per-label length limits skip work rather than add -inf: the kernels number
labels by non-increasing limit (``max_len[0] >= max_len[1] >= ...``; the
semi-Markov engine renumbers them so, ``fgl.engines.sequence.segments``), so the
labels a span of d tokens may take are 0..cnt[d-1]-1 (``label_counts``) and
every loop over spans of d tokens runs over that prefix of each block:
O(T·|P|·Σ_y L_y) per pass instead of O(T·L·n·|P|) (Cuong et al. 2014 §2.5).
Everything is in log space, so any range of potentials is exact.  A chain
is the case L = 1: its [T, |Z|] potentials are a [T, 1, |Z|] view, and the
chain engine (``fgl.engines.sequence.chain``) uses this kernel for Viterbi, for gold
counts and whenever its scaled fast paths would not be exact; so does the
semi-Markov engine.

Kernels take the number of positions T and scratch arrays (``SpanWork``,
sized for the longest sequence of a batch), and read the state machine as
``StateTables``, encoded data as ``Units`` and features as ``FeatureTable``:
named tuples of arrays, which numba passes as plain arguments.  Each kernel
copies the fields it reads into locals once, at its top (a field read in a
loop costs reference counting), so many kernels open with the same lines.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.engines.sequence.encoded import EncodedData
from fgl.jit import njit


class Units(NamedTuple):
    """Encoded data as the kernels read it: sequence i covers tokens
    ``seq_ptr[i]..seq_ptr[i+1]-1``; unit k (token k of a chain; span (u, d)
    at k = u·m + d - 1, m the data's units per token) has attribute rows
    ``unit_row[unit_ptr[k]:unit_ptr[k+1]]`` with values ``unit_val`` (CSR)."""

    seq_ptr: np.ndarray
    unit_ptr: np.ndarray
    unit_row: np.ndarray
    unit_val: np.ndarray


class FeatureTable(NamedTuple):
    """Feature k belongs to attribute row r when ``row_ptr[r] <= k <
    row_ptr[r+1]``, has label pattern ``feat_pattern[k]`` and ``feat_s[k]``,
    the transition equal to that pattern; ``const_feats`` are the features
    of rows active with value 1 on every unit."""

    row_ptr: np.ndarray
    feat_pattern: np.ndarray
    feat_s: np.ndarray
    const_feats: np.ndarray


class SpanWork(NamedTuple):
    """Scratch arrays of the kernel for up to T positions and spans of up
    to L tokens (``workspace``)."""

    psi: np.ndarray    # [T, L, S] Ψ(u, d, s) at [u, d - 1, s]
    alpha: np.ndarray  # [T + 1, P]
    beta: np.ndarray   # [T + 1, P]
    back: np.ndarray   # [T + 1, P] the best (d - 1)·S + s into each state
    tmp: np.ndarray    # [L·S]
    acc: np.ndarray    # [P]
    marg: np.ndarray   # [T, L, S] accumulated span-transition marginals


def units(data: EncodedData) -> Units:
    """The kernels' view of ``data``."""
    return Units(data.seq_ptr, data.tok_ptr, data.tok_row, data.tok_val)


@njit(cache=True, nogil=True)
def workspace(max_t, L, tables):
    """Scratch for sequences of up to ``max_t`` positions."""
    S = tables.s_prev.shape[0]
    P = tables.n_forward
    return SpanWork(np.empty((max_t, L, S)), np.empty((max_t + 1, P)),
                    np.empty((max_t + 1, P)), np.zeros((max_t + 1, P), dtype=np.int64),
                    np.empty(L * S), np.empty(P), np.empty((max_t, L, S)))


@njit(cache=True, nogil=True)
def longest(seq_ptr, i0, i1):
    """The longest of sequences i0..i1 (at least 1): the size of a batch's
    scratch arrays."""
    max_t = 1
    for i in range(i0, i1):
        max_t = max(max_t, seq_ptr[i + 1] - seq_ptr[i])
    return max_t


@njit(cache=True, nogil=True)
def logsumexp_row(row):
    """log Σ exp(row), shifted by the largest entry."""
    m = -np.inf
    for v in row:
        if v > m:
            m = v
    if m == -np.inf:
        return m
    a = 0.0
    for v in row:
        a += np.exp(v - m)
    return m + np.log(a)


@njit(cache=True, nogil=True)
def label_counts(max_len, L):
    """cnt[d-1]: how many labels admit spans of d tokens (d = 1..L) — labels
    0..cnt[d-1]-1, since the kernels number labels by non-increasing limit
    (a ValueError otherwise)."""
    cnt = np.zeros(L, dtype=np.int64)
    for y in range(max_len.shape[0]):
        if y > 0 and max_len[y] > max_len[y - 1]:
            raise ValueError("span kernels need labels numbered by non-increasing length limit")
        for dm in range(min(max_len[y], L)):
            cnt[dm] += 1
    return cnt


@njit(cache=True, nogil=True)
def span_scores(pot, T, tables, cnt, distinct, psi):
    """psi[u, d-1, p·n + y] = Ψ(u, d, p·y) for u < T, u + d <= T and the
    labels y < cnt[d-1] that admit d tokens, block by block: block ε holds
    the labels' potentials, and the parent of p·y is p_suffix[p]·y, so each
    block is its parent block plus the potentials of its own patterns.
    With ``distinct``, -inf where y is the last label of p (adjacent
    segments may not share a label).  Other entries are not written."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    L = pot.shape[1]
    n = tables.n_labels
    p_order = tables.p_order
    p_suffix = tables.p_suffix
    p_label = tables.p_label
    s_pattern = tables.s_pattern
    label_z = tables.label_z
    for u in range(T):
        for dm in range(min(L, T - u)):
            c = cnt[dm]
            row = psi[u, dm]
            z_row = pot[u, dm]
            for y in range(c):
                row[y] = z_row[label_z[y]]
            for i in range(1, p_order.shape[0]):
                p = p_order[i]
                dst = row[p * n:p * n + c]
                src = row[p_suffix[p] * n:p_suffix[p] * n + c]
                own = s_pattern[p * n:p * n + c]
                for y in range(c):
                    z = own[y]
                    dst[y] = src[y] + (z_row[z] if z >= 0 else 0.0)
            if distinct:
                for p in range(1, p_order.shape[0]):
                    if p_label[p] < c:
                        row[p * n + p_label[p]] = -np.inf


@njit(cache=True, nogil=True)
def forward(T, tables, cnt, use_max, work):
    """α over span end positions v = 1..T from ``work.psi``, in the
    log-sum-exp (``use_max`` False) or max semiring; ``back[v, q]`` records
    the arg-max (d - 1)·S + s (Ye et al. 2009 §3.1.3)."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    psi = work.psi
    alpha = work.alpha
    back = work.back
    tmp = work.tmp
    acc = work.acc
    L = psi.shape[1]
    n = tables.n_labels
    P = tables.n_forward
    s_next = tables.s_next
    S = P * n
    alpha[0, :] = -np.inf
    alpha[0, 0] = 0.0
    for v in range(1, T + 1):
        row = alpha[v]
        row[:] = -np.inf
        n_d = min(L, v)
        for dm in range(n_d):
            c = cnt[dm]
            prev = alpha[v - dm - 1]
            ps = psi[v - dm - 1, dm]
            off = dm * S
            for p in range(P):
                a = prev[p]
                for s in range(p * n, p * n + c):
                    x = a + ps[s]
                    if not use_max:
                        tmp[off + s] = x
                    q = s_next[s]
                    if x > row[q]:
                        row[q] = x
                        back[v, q] = off + s
        if use_max:
            continue
        acc[:] = 0.0  # log-sum-exp about each state's largest term
        for dm in range(n_d):
            off = dm * S
            for p in range(P):
                for s in range(p * n, p * n + cnt[dm]):
                    q = s_next[s]
                    if row[q] > -np.inf:
                        acc[q] += np.exp(tmp[off + s] - row[q])
        for q in range(row.shape[0]):
            if acc[q] > 0.0:
                row[q] += np.log(acc[q])


@njit(cache=True, nogil=True)
def backward(T, tables, cnt, work):
    """β(u, p): the log-sum of every continuation of state p from token u."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    psi = work.psi
    beta = work.beta
    tmp = work.tmp
    L = psi.shape[1]
    n = tables.n_labels
    P = tables.n_forward
    s_next = tables.s_next
    S = P * n
    beta[T, :] = 0.0
    for u in range(T - 1, -1, -1):
        row = beta[u]
        row[:] = -np.inf
        n_d = min(L, T - u)
        for dm in range(n_d):
            c = cnt[dm]
            ps = psi[u, dm]
            nb = beta[u + dm + 1]
            off = dm * S
            for p in range(P):
                m = row[p]
                for s in range(p * n, p * n + c):
                    x = ps[s] + nb[s_next[s]]
                    tmp[off + s] = x
                    m = max(m, x)
                row[p] = m
        for p in range(P):  # log-sum-exp about the largest term
            m = row[p]
            if m == -np.inf:
                continue
            a = 0.0
            for dm in range(n_d):
                for s in range(dm * S + p * n, dm * S + p * n + cnt[dm]):
                    a += np.exp(tmp[s] - m)
            row[p] = m + np.log(a)


@njit(cache=True, nogil=True, inline="always")
def accumulate_up(row, p_suffix, p_order, n):
    """Add each block p·Y of a transition row into its parent block
    p_suffix[p]·Y, longest states first (children before parents), so that
    a transition's value becomes the total over every transition it is a
    suffix of.  Inlined into its callers, once per row: it takes the arrays
    it reads rather than the ``StateTables`` bundle."""
    for i in range(p_order.shape[0] - 1, 0, -1):
        p = p_order[i]
        # slices of one row: LLVM vectorises these (indices into the same
        # array it would not)
        dst = row[p_suffix[p] * n:(p_suffix[p] + 1) * n]
        src = row[p * n:(p + 1) * n]
        for y in range(n):
            dst[y] += src[y]


@njit(cache=True, nogil=True)
def marginals(T, tables, cnt, log_z, work):
    """``marg[u, d-1, s]``: the probability that (u, u+d-1) is a span whose
    transition has suffix s — each transition's own marginal, accumulated up
    the parent tree (Cuong et al. 2014 §2.3.2); 0 past the end and for the
    labels that do not admit d tokens."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    psi = work.psi
    alpha = work.alpha
    beta = work.beta
    marg = work.marg
    L = psi.shape[1]
    n = tables.n_labels
    P = tables.n_forward
    s_next = tables.s_next
    p_suffix = tables.p_suffix
    p_order = tables.p_order
    for u in range(T):
        a_row = alpha[u]
        for dm in range(L):
            m_row = marg[u, dm]
            m_row[:] = 0.0
            if u + dm >= T:
                continue
            ps = psi[u, dm]
            nb = beta[u + dm + 1]
            for p in range(P):
                a = a_row[p] - log_z
                for s in range(p * n, p * n + cnt[dm]):
                    m_row[s] = np.exp(a + ps[s] + nb[s_next[s]])
            accumulate_up(m_row, p_suffix, p_order, n)


@njit(cache=True, nogil=True)
def sequence_marginals(pot, T, tables, max_len, work, distinct=False):
    """log Z of one sequence (potentials ``pot[u, d-1, z]`` for u < T;
    labels numbered by non-increasing ``max_len``) and, into ``work.marg``,
    its accumulated span-transition marginals."""
    cnt = label_counts(max_len, pot.shape[1])
    span_scores(pot, T, tables, cnt, distinct, work.psi)
    forward(T, tables, cnt, False, work)
    backward(T, tables, cnt, work)
    log_z = logsumexp_row(work.alpha[T])
    marginals(T, tables, cnt, log_z, work)
    return log_z


@njit(cache=True, nogil=True)
def viterbi(pot, T, tables, max_len, work, labels, starts, distinct=False):
    """The best labelling of one sequence: every token's span label into
    ``labels[:T]``, 1 at the first token of each span (else 0) into
    ``starts[:T]``; returns its score."""
    cnt = label_counts(max_len, pot.shape[1])
    span_scores(pot, T, tables, cnt, distinct, work.psi)
    forward(T, tables, cnt, True, work)
    return trace_back(T, tables, work, labels, starts)


@njit(cache=True, nogil=True, inline="always")
def trace_back(T, tables, work, labels, starts):
    """``viterbi``'s labelling from the max-semiring ``forward`` pass in
    ``work`` (its best predecessors ``back``), written as ``viterbi``
    writes it; returns its score.  Inlined: no code of its own to compile
    on a first run."""
    alpha = work.alpha
    back = work.back
    s_prev = tables.s_prev
    s_label = tables.s_label
    S = s_prev.shape[0]
    q = 0
    best = -np.inf
    for p in range(tables.n_forward):
        if alpha[T, p] > best:
            best = alpha[T, p]
            q = p
    v = T
    while v > 0:
        code = back[v, q]
        dm = code // S
        s = code - dm * S
        u = v - dm - 1
        for t in range(u, v):
            labels[t] = s_label[s]
            starts[t] = 0
        starts[u] = 1
        q = s_prev[s]
        v = u
    return best


@njit(cache=True, nogil=True)
def gold_counts(units, gold, starts, L, features, tables, counts):
    """Add the feature counts of the gold labellings to ``counts``.  A
    sequence's spans start where ``starts`` is 1 (at every token, for a
    chain) and carry the label ``gold`` has at their first token; span (u,
    d) is unit u·L + d - 1 (``L``: the data's units per token); a feature
    fires on a span's unit when its pattern is a suffix of the span's
    transition — an ancestor of it in the parent tree — and
    ``features.const_feats`` on every span whose transition they suffix."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    seq_ptr = units.seq_ptr
    unit_ptr = units.unit_ptr
    unit_row = units.unit_row
    unit_val = units.unit_val
    row_ptr = features.row_ptr
    feat_s = features.feat_s
    const_feats = features.const_feats
    n = tables.n_labels
    s_next = tables.s_next
    s_parent = tables.s_parent
    on = np.zeros(s_parent.shape[0], dtype=np.bool_)
    for i in range(seq_ptr.shape[0] - 1):
        q = 0
        u = seq_ptr[i]
        b = seq_ptr[i + 1]
        while u < b:
            v = u + 1
            while v < b and starts[v] == 0:
                v += 1
            s = q * n + gold[u]
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
            for k in const_feats:
                if on[feat_s[k]]:
                    counts[k] += 1.0
            x = s
            while x >= 0:
                on[x] = False
                x = s_parent[x]
            q = s_next[s]
            u = v
