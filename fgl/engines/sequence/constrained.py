"""Constrained forward-backward: the probability of a labelled stretch of a sequence
(Sutton & McCallum §1.3.3, after Culotta & McCallum).

The confidence of an extracted segment is P(y_u..y_v = the predicted labels | x)
= Z_constrained / Z, where the constrained lattice admits only labellings that
take the predicted labels at positions u..v.  Written over the span lattice of
``fgl.engines.sequence.span_lattice`` (a chain is the case L = 1), a clamp is a run of
consecutive spans (start, length, label): one span per token for a chain
chunk, the one segment (u, d, y) for a semi-Markov model.  Clamping a span
to label y keeps, from every forward state p, only the transition p·y —
every state and pattern that disagrees with the clamp gets no mass, however
high the order (Ye et al. 2009 §3) — so with the unconstrained α and β at
hand,

    Z_constrained = Σ_q α'(v + 1, q) β(v + 1, q),  α' = α(u) pushed through the clamped spans,

O(|P|) per clamped span: one forward-backward pass, O(T·n·|P|) (chain) or
O(T·|P|·Σ_y L_y) (semi-Markov), then every segment of a sequence in O(T·|P|)
more.  For a semi-Markov segment this is the sum over the segmentations
that contain exactly that segment.  Everything is in log space.
"""
from __future__ import annotations

import numpy as np

from fgl.engines.sequence import span_lattice
from fgl.jit import njit


@njit(cache=True, nogil=True)
def lattice(pot, T, tables, max_len, distinct, work):
    """Span scores, α and β of one sequence into ``work`` (``pot[u, d-1,
    z]``, labels numbered by non-increasing ``max_len``); returns log Z."""
    cnt = span_lattice.label_counts(max_len, pot.shape[1])
    span_lattice.span_scores(pot, T, tables, cnt, distinct, work.psi)
    span_lattice.forward(T, tables, cnt, False, work)
    span_lattice.backward(T, tables, cnt, work)
    return span_lattice.logsumexp_row(work.alpha[T])


@njit(cache=True, nogil=True, inline="always")
def _log_add(a, b):
    """log(exp(a) + exp(b))."""
    if a < b:
        a, b = b, a
    if b == -np.inf:
        return a
    return a + np.log1p(np.exp(b - a))


@njit(cache=True, nogil=True)
def clamped_log_z(work, tables, span_u, span_d, span_y, clamp_ptr, out):
    """``out[c]`` = log of the total weight of the labellings that contain
    spans ``clamp_ptr[c]..clamp_ptr[c+1]-1`` (span j: tokens ``span_u[j]``..
    ``span_u[j] + span_d[j] - 1`` labelled ``span_y[j]``; the spans of one
    clamp consecutive), from ``work`` as ``lattice`` left it."""
    psi = work.psi
    alpha = work.alpha
    beta = work.beta
    n = tables.n_labels
    P = tables.n_forward
    s_next = tables.s_next
    cur = np.empty(P)
    nxt = np.empty(P)
    for c in range(out.shape[0]):
        j0 = clamp_ptr[c]
        j1 = clamp_ptr[c + 1]
        cur[:] = alpha[span_u[j0]]
        for j in range(j0, j1):
            ps = psi[span_u[j], span_d[j] - 1]
            nxt[:] = -np.inf
            for p in range(P):
                a = cur[p]
                if a == -np.inf:
                    continue
                s = p * n + span_y[j]
                q = s_next[s]
                nxt[q] = _log_add(nxt[q], a + ps[s])
            cur[:] = nxt
        nb = beta[span_u[j1 - 1] + span_d[j1 - 1]]
        total = -np.inf
        for q in range(P):
            total = _log_add(total, cur[q] + nb[q])
        out[c] = total


def confidences(pot: np.ndarray, tables, max_len: np.ndarray, distinct: bool,
                span_u: np.ndarray, span_d: np.ndarray, span_y: np.ndarray,
                clamp_ptr: np.ndarray) -> np.ndarray:
    """Z_constrained / Z of every clamp of one sequence (``lattice``'s
    arguments, then ``clamped_log_z``'s; labels in the kernel's numbering)."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T, L = pot.shape[:2]
    out = np.empty(len(clamp_ptr) - 1)
    if not len(out):
        return out
    work = span_lattice.workspace(T, L, tables)
    log_z = lattice(pot, T, tables, np.asarray(max_len, dtype=np.int64), distinct, work)
    clamped_log_z(work, tables, np.asarray(span_u, dtype=np.int64),
                  np.asarray(span_d, dtype=np.int64), np.asarray(span_y, dtype=np.int64),
                  np.asarray(clamp_ptr, dtype=np.int64), out)
    return np.minimum(np.exp(out - log_z), 1.0)
