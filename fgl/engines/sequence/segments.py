"""Exact high-order semi-Markov engine (Cuong et al. 2014 §2; first order: Sarawagi & Cohen 2004).

A segmentation splits the tokens 0..T-1 into consecutive segments, each
with a label and at most as many tokens as that label's limit; a label
pattern z matches at segment j when the labels of segments j-|z|+1..j equal
z, and contributes the potential of z on segment j's span.  With
``distinct`` no two adjacent segments share a label (a run of one label is
one segment).  Inference runs the state machine of the segment labels
(``fgl.engines.sequence.structure.ChainStructure``) over spans: O(T·|P|·Σ_y L_y) per
pass (Cuong et al. 2014 §2.5, with per-label limits L_y).  With L = 1 it is
exactly the chain engine.

Inside the engine, labels are numbered by non-increasing length limit
(``label_order``, ``engine_structure``; pattern ids are unchanged), so the
labels a span of d tokens may take are a prefix of every block of
transitions and the loops over them stay contiguous.

The sum-product recursion has two implementations:

* the span kernel (``fgl.engines.sequence.span_lattice``) in log space: exact for any
  potentials; it also decodes (max semiring) and is the fallback;
* the scaled path (training and marginals): probability-domain vectors
  normalised at every end position, their log scales kept (Sutton &
  McCallum §1.4.6, as in ``fgl.engines.sequence.chain``).  Span (u, d) carries its
  transition factors exp(Ψ - m(u, d)), m its largest label potential, with
  weight exp(m(u, d) - σ_u - ... - σ_{u+d-1}), σ_t the largest label
  potential of the one-token span at t: one-token spans have weight 1 and
  the shifts of every segmentation add up to Σ_t σ_t.  A span whose every
  product with the forward vector would be below TINY is skipped, and the
  other spans' products below TINY are counted; after the backward pass
  the share of Z these can carry (each at most TINY, times the largest β̂
  where it ends, over the scale there) must stay below _NEGLIGIBLE, or the
  sequence goes to the span kernel.  When only single labels vary between
  spans (longer patterns fed by constant rows only, as a first-order model
  with plain transitions) the factored form needs one ``exp`` per label and
  span and no per-span transition table (as ``chain._factored_sequence``).

This module holds the scaled path and the potential-table API
(``segment_marginals``, ``segment_viterbi``); the batch kernels over
encoded span features are ``fgl.engines.sequence.segments_batch``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.engines.sequence import span_lattice
from fgl.engines.sequence.scaling import (
    HUGE,
    MAX_EXPONENT,
    MIN_EXPONENT,
    SAFE_FAST,
    TINY,
    extend_blocks,
    label_exps,
    static_tables,
)
from fgl.engines.sequence.structure import ChainStructure
from fgl.jit import njit

# the scaled path is kept when the mass its skipped and underflowing
# products can carry stays below this share of Z
_NEGLIGIBLE = 1e-15


# --------------------------------------------------------------------------
# the engine's label numbering


def label_order(max_len: np.ndarray) -> np.ndarray:
    """``order[k]``: the label the engine numbers k — longest limit first,
    ties in label order."""
    return np.argsort(-np.asarray(max_len), kind="stable")


def engine_structure(st: ChainStructure, order: np.ndarray) -> ChainStructure:
    """``st`` with its labels renumbered by ``order`` (label ``order[k]``
    becomes k); pattern ids are unchanged."""
    if np.array_equal(order, np.arange(st.n_labels)):
        return st
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return ChainStructure.build(st.n_labels, [tuple(int(rank[y]) for y in z)
                                              for z in st.patterns])


# --------------------------------------------------------------------------
# the scaled path


class ScaledWork(NamedTuple):
    """Scratch of the scaled paths for up to T positions and spans of up to
    L tokens (``scaled_workspace``); the general path keeps its span factors
    in the span kernel's ``psi`` and its marginals in ``marg``, and shares
    its ``alpha`` and ``beta``."""

    e_lab: np.ndarray   # [T, L, n] the factored path's label factors
    lab: np.ndarray     # [T, L, n] the factored path's label marginals of each span
    off: np.ndarray     # [T, L] log weight of each span's factors
    low: np.ndarray     # [T, L] the smallest non-zero factor of each span (a bound)
    high: np.ndarray    # [T, L] the largest (a bound)
    weight: np.ndarray  # [T, L] the span's weight over the scale where it ends; 0: skipped
    sig: np.ndarray     # [T] σ_t
    lsc: np.ndarray     # [T + 1] log of the forward scale at each end position
    lost: np.ndarray    # [T + 1] bound on the forward mass skipped or underflowed there, scaled
    amin: np.ndarray    # [T + 1] the smallest non-zero α̂ at each position
    ones: np.ndarray    # [1, n] the general path's label factors
    tmp: np.ndarray     # [1, P] the factored path's mass per state before its label factor


@njit(cache=True, nogil=True)
def scaled_workspace(max_t, L, n, P):
    """Scratch of the scaled paths for sequences of up to ``max_t`` tokens."""
    return ScaledWork(np.zeros((max_t, L, n)), np.zeros((max_t, L, n)), np.empty((max_t, L)),
                      np.empty((max_t, L)), np.empty((max_t, L)), np.zeros((max_t, L)),
                      np.empty(max_t), np.zeros(max_t + 1), np.zeros(max_t + 1),
                      np.ones(max_t + 1), np.ones((1, n)), np.zeros((1, P)))


# The kernels below read a span's factors as row k = u·L + d - 1 of a table:
# the general path's ``F`` holds every span's transition factors; the
# factored path's ``F`` holds the one row ``cum`` and ``E`` every span's
# label factors, applied once per state (the label of q = next(p·y) is y).
# Their inner steps are inlined: a call per span costs more than its work
# when n and |P| are small.


@njit(cache=True, nogil=True, inline="always")
def _token_shifts(pot, T, tables, sig):
    """σ_t: the largest label potential of the one-token span at t (every
    label admits one token); returns Σ_t σ_t."""
    label_z = tables.label_z
    total = 0.0
    for t in range(T):
        m = -np.inf
        for y in range(tables.n_labels):
            m = max(m, pot[t, 0, label_z[y]])
        sig[t] = m
        total += m
    return total


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _span_factors(pot, T, tables, sc, cnt, distinct, epsi, ws):
    """``epsi[u, d-1, p·n + y] = exp(Ψ(u, d, p·y) - m(u, d))`` for the labels
    y < cnt[d-1] that admit d tokens, block by block as
    ``chain._exp_transition_scores`` (one ``exp`` per label and per dynamic
    pattern; static ones from ``sc.static_exp``); 0 where ``distinct``
    forbids p·y.  Writes each span's log weight m(u, d) - σ_u - ... -
    σ_{u+d-1} and factor bounds into ``ws``; returns Σ_t σ_t, or NaN when a
    factor left [exp(MIN_EXPONENT), exp(MAX_EXPONENT)]."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    L = epsi.shape[1]
    n = tables.n_labels
    P = tables.n_forward
    s_pattern = tables.s_pattern
    p_suffix = tables.p_suffix
    p_order = tables.p_order
    p_label = tables.p_label
    label_z = tables.label_z
    dynamic = sc.dynamic
    block_dynamic = sc.block_dynamic
    static_exp = sc.static_exp
    cum_lo = sc.cum_lo
    cum_hi = sc.cum_hi
    sig = ws.sig
    off = ws.off
    low = ws.low
    high = ws.high
    lo = np.exp(MIN_EXPONENT)
    hi = np.exp(MAX_EXPONENT)
    total = _token_shifts(pot, T, tables, sig)
    for u in range(T):
        shift = 0.0
        for dm in range(min(L, T - u)):
            shift += sig[u + dm]
            c = cnt[dm]
            row = epsi[u, dm]
            z_row = pot[u, dm]
            m, e_lo = label_exps(z_row, label_z, c, row)
            off[u, dm] = m - shift
            mn, mx = extend_blocks(row, z_row, c, e_lo, p_order, p_suffix, s_pattern,
                                   block_dynamic, dynamic, static_exp, cum_lo, cum_hi)
            if not (mn >= lo and mx <= hi):
                return np.nan
            low[u, dm] = mn
            high[u, dm] = mx
            if distinct:
                for p in range(1, P):
                    if p_label[p] < c:
                        row[p * n + p_label[p]] = 0.0
    return total


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _label_factors(pot, T, tables, cnt, c_lo, c_hi, ws):
    """The factored path's ``e_lab[u, d-1, y] = exp(pot[u, d-1, y] - m(u,
    d))`` for y < cnt[d-1] (0 for the others), with the span weights and
    bounds of ``_span_factors`` (``c_lo``/``c_hi``: bounds on the static
    factors ``cum``); returns Σ_t σ_t, or NaN when a factor fell below
    exp(MIN_EXPONENT)."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    L = ws.e_lab.shape[1]
    label_z = tables.label_z
    e_lab = ws.e_lab
    sig = ws.sig
    off = ws.off
    low = ws.low
    high = ws.high
    lo = np.exp(MIN_EXPONENT)
    total = _token_shifts(pot, T, tables, sig)
    for u in range(T):
        shift = 0.0
        for dm in range(min(L, T - u)):
            shift += sig[u + dm]
            c = cnt[dm]
            row = e_lab[u, dm]
            z_row = pot[u, dm]
            m, e_lo = label_exps(z_row, label_z, c, row)
            off[u, dm] = m - shift
            row[c:] = 0.0
            low[u, dm] = e_lo * c_lo
            high[u, dm] = c_hi
            if not low[u, dm] >= lo:
                return np.nan
    return total


@njit(cache=True, nogil=True, inline="always")
def _push(src, u, x, F, fi, c, s_next, p_next_run, run_blocks, gather_blocks, out, v):
    """out[v, next(p·y)] += x · src[u, p] · F[fi, p·n + y] for every forward
    state p and label y < c (``chain._forward_push`` over a prefix of
    labels, with a weight).  The tables are the caller's unpacked
    ``StateTables`` fields (inlined into loops, a bundle's field reads
    would each cost reference counting): n labels, ``s_next`` holding P·n
    for the P of ``p_next_run``."""
    n = s_next.shape[0] // p_next_run.shape[0]
    for p in run_blocks:
        a = src[u, p] * x
        q0 = p_next_run[p]
        base = p * n
        for y in range(c):
            out[v, q0 + y] += a * F[fi, base + y]
    for p in gather_blocks:
        a = src[u, p] * x
        base = p * n
        for y in range(c):
            out[v, s_next[base + y]] += a * F[fi, base + y]


@njit(cache=True, nogil=True, inline="always")
def _pull(out, u, x, F, fi, c, s_next, p_next_run, run_blocks, gather_blocks, nxt, v):
    """out[u, p] += x · Σ_{y < c} F[fi, p·n + y] · nxt[v, next(p·y)] for
    every forward state p (``chain._backward_step`` over a prefix of
    labels; the tables as for ``_push``)."""
    n = s_next.shape[0] // p_next_run.shape[0]
    for p in run_blocks:
        q0 = p_next_run[p]
        base = p * n
        acc = 0.0
        for y in range(c):
            acc += F[fi, base + y] * nxt[v, q0 + y]
        out[u, p] += x * acc
    for p in gather_blocks:
        base = p * n
        acc = 0.0
        for y in range(c):
            acc += F[fi, base + y] * nxt[v, s_next[base + y]]
        out[u, p] += x * acc


@njit(cache=True, nogil=True)
def _tiny_products(prev, x, F, fi, E, ei, c, n):
    """How many products x · prev[p] · F[fi, p·n + y] · E[ei, y] (y < c)
    with non-zero factors fall below TINY."""
    k = 0
    for p in range(prev.shape[0]):
        a = prev[p] * x
        if a != 0.0:
            for y in range(c):
                f = F[fi, p * n + y] * E[ei, y]
                if f != 0.0 and a * f < TINY:
                    k += 1
    return k


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _forward(F, E, factored, T, tables, cnt, alpha, ws):
    """Forward over span end positions on scaled vectors: span (u, d) adds
    its weight times α̂(u) times its factors.  Writes each span's weight over
    the scale where it ends to ``ws.weight`` (0 for the spans it skips) and
    a bound on the mass lost at each position, over its scale, to
    ``ws.lost``; returns the log of the product of the scales, or NaN (a
    weight, before or over its scale, past HUGE: the backward pass and the
    marginals multiply it by β̂ and the factors)."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    L = ws.weight.shape[1]
    n = tables.n_labels
    s_next = tables.s_next
    p_next_run = tables.p_next_run
    run_blocks = tables.run_blocks
    gather_blocks = tables.gather_blocks
    p_label = tables.p_label
    off = ws.off
    low = ws.low
    high = ws.high
    weight = ws.weight
    lsc = ws.lsc
    lost = ws.lost
    amin = ws.amin
    tmp = ws.tmp
    alpha[0, :] = 0.0
    alpha[0, 0] = 1.0
    total = 0.0
    for v in range(1, T + 1):
        row = alpha[v]
        row[:] = 0.0
        lost_v = 0.0
        lr = 0.0  # minus the log scales strictly inside the span
        for dm in range(min(L, v)):
            u = v - dm - 1
            if dm > 0:
                lr -= lsc[u + 1]
            c = cnt[dm]
            x = np.exp(lr + off[u, dm]) if dm else 1.0  # (a one-token span's offset is 0)
            bound = x * high[u, dm] * c
            if not bound >= TINY:  # every product is below TINY (Σ_p α̂(u, p) = 1)
                weight[u, dm] = 0.0
                lost_v += bound
                continue
            if not x <= HUGE:
                return np.nan
            weight[u, dm] = x
            k = u * L + dm
            fi = 0 if factored else k
            if amin[u] * low[u, dm] * x < TINY:  # some product may fall below TINY
                lost_v += TINY * _tiny_products(alpha[u], x, F, fi, E, k if factored else 0, c,
                                                 n)
            if factored:
                tmp[0, :] = 0.0
                _push(alpha, u, x, F, 0, c, s_next, p_next_run, run_blocks, gather_blocks, tmp, 0)
                for q in range(1, tmp.shape[1]):
                    row[q] += tmp[0, q] * E[k, p_label[q]]
            else:
                _push(alpha, u, x, F, k, c, s_next, p_next_run, run_blocks, gather_blocks, alpha,
                      v)
        scale = 0.0
        for q in range(row.shape[0]):
            scale += row[q]
        if not scale > 0.0:
            return np.nan
        inv = 1.0 / scale
        mn = 1.0
        for q in range(row.shape[0]):
            row[q] *= inv
            mn = min(mn, row[q] if row[q] > 0.0 else 1.0)
        amin[v] = mn
        for dm in range(min(L, v)):
            x = weight[v - dm - 1, dm] * inv
            if not x <= HUGE:  # (the spans that end here may carry no mass)
                return np.nan
            weight[v - dm - 1, dm] = x
        lost[v] = lost_v * inv
        lsc[v] = np.log(scale)
        total += lsc[v]
    return total


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _backward(F, E, factored, T, tables, cnt, beta, ws):
    """β̂ on the spans the forward pass kept, with its weights (so its
    scales).  Returns the share of Z the skipped and underflowed products
    can carry (an error δ in the forward sum at v, over its scale, moves Z
    by δ·β̂(v, q)), or inf when a β̂ reached HUGE."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    L = ws.weight.shape[1]
    s_next = tables.s_next
    p_next_run = tables.p_next_run
    run_blocks = tables.run_blocks
    gather_blocks = tables.gather_blocks
    p_label = tables.p_label
    weight = ws.weight
    lost = ws.lost
    g = ws.tmp
    beta[T, :] = 1.0
    share = lost[T]
    for u in range(T - 1, -1, -1):
        out = beta[u]
        out[:] = 0.0
        for dm in range(min(L, T - u)):
            x = weight[u, dm]
            if x == 0.0:
                continue
            k = u * L + dm
            v = u + dm + 1
            if factored:  # g(q): the label factor of q times β̂(v, q)
                for q in range(1, g.shape[1]):
                    g[0, q] = E[k, p_label[q]] * beta[v, q]
                _pull(beta, u, x, F, 0, cnt[dm], s_next, p_next_run, run_blocks, gather_blocks, g,
                      0)
            else:
                _pull(beta, u, x, F, k, cnt[dm], s_next, p_next_run, run_blocks, gather_blocks,
                      beta, v)
        mx = 0.0
        for p in range(out.shape[0]):
            mx = max(mx, out[p])
        if not mx < HUGE:
            return np.inf
        if u > 0:
            share += lost[u] * mx
    return share


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _span_marginals(F, T, tables, cnt, alpha, beta, ws, marg):
    """``marg[u, d-1, s]`` from the scaled vectors: each transition's own
    marginal α̂·weight·factor·β̂, accumulated up the parent tree (Cuong et
    al. 2014 §2.3.2); 0 for spans skipped, past the end, and for labels that
    do not admit d tokens."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    L = marg.shape[1]
    n = tables.n_labels
    s_next = tables.s_next
    p_next_run = tables.p_next_run
    p_suffix = tables.p_suffix
    p_order = tables.p_order
    run_blocks = tables.run_blocks
    gather_blocks = tables.gather_blocks
    weight = ws.weight
    for u in range(T):
        for dm in range(L):
            m_row = marg[u, dm]
            x = weight[u, dm] if u + dm < T else 0.0
            c = cnt[dm]
            if x == 0.0 or c < n:
                m_row[:] = 0.0
            if x == 0.0:
                continue
            k = u * L + dm
            nb = beta[u + dm + 1]
            for p in run_blocks:
                a = alpha[u, p] * x
                q0 = p_next_run[p]
                base = p * n
                for y in range(c):
                    m_row[base + y] = a * F[k, base + y] * nb[q0 + y]
            for p in gather_blocks:
                a = alpha[u, p] * x
                base = p * n
                for y in range(c):
                    m_row[base + y] = a * F[k, base + y] * nb[s_next[base + y]]
            span_lattice.accumulate_up(m_row, p_suffix, p_order, n)


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _factored_counts(cum, E, T, tables, cnt, alpha, beta, ws, taken):
    """The factored path's marginals: ``ws.lab[u, d-1, y]``, the
    probability that (u, u+d-1) is a segment labelled y, and, added to
    ``taken[p·n + y]``, Σ over spans of α̂(u, p)·x·g(next(p·y)) — times
    ``cum[p·n + y]``, the expected number of times transition p·y is taken
    (x: the span's weight; g(q): the label factor of q times β̂(q)).  α̂·x
    is multiplied first: x·β̂(q) may pass the largest double at a state q
    the forward pass never reaches (α̂ = 0, β̂ large), and 0·inf is NaN."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    L = ws.weight.shape[1]
    n = tables.n_labels
    s_next = tables.s_next
    p_next_run = tables.p_next_run
    run_blocks = tables.run_blocks
    gather_blocks = tables.gather_blocks
    p_label = tables.p_label
    lab = ws.lab.reshape((ws.lab.shape[0] * L, n))
    weight = ws.weight
    g = ws.tmp[0]
    g[0] = 0.0
    for u in range(T):
        for dm in range(min(L, T - u)):
            k = u * L + dm
            v = u + dm + 1
            for y in range(n):
                lab[k, y] = 0.0
            x = weight[u, dm]
            if x == 0.0:
                continue
            c = cnt[dm]
            for q in range(1, g.shape[0]):
                g[q] = E[k, p_label[q]] * beta[v, q]
            for p in run_blocks:
                a = alpha[u, p] * x
                q0 = p_next_run[p]
                base = p * n
                for y in range(c):
                    t = a * g[q0 + y]
                    taken[base + y] += t
                    lab[k, y] += t * cum[base + y]
            for p in gather_blocks:
                a = alpha[u, p] * x
                base = p * n
                for y in range(c):
                    t = a * g[s_next[base + y]]
                    taken[base + y] += t
                    lab[k, y] += t * cum[base + y]


@njit(cache=True, nogil=True, inline="always")
def scaled_sequence(pot, T, tables, sc, cnt, distinct, work, ws):
    """log Z of one sequence on the general scaled path, its span marginals
    into ``work.marg``; NaN when the path would not be exact.  Reads ``pot``
    only for labels and dynamic patterns; the span factors go to
    ``work.psi``."""
    epsi = work.psi
    shift = _span_factors(pot, T, tables, sc, cnt, distinct, epsi, ws)
    if not np.isfinite(shift):
        return np.nan
    F = epsi.reshape((epsi.shape[0] * epsi.shape[1], epsi.shape[2]))
    log_scale = _forward(F, ws.ones, False, T, tables, cnt, work.alpha, ws)
    if not (np.isfinite(log_scale)
            and _backward(F, ws.ones, False, T, tables, cnt, work.beta, ws) <= _NEGLIGIBLE):
        return np.nan
    _span_marginals(F, T, tables, cnt, work.alpha, work.beta, ws, work.marg)
    return log_scale + shift


@njit(cache=True, nogil=True, inline="always")
def factored_sequence(pot, T, tables, cum, c_lo, c_hi, cnt, work, ws, taken):
    """log Z of one sequence on the factored path (every pattern longer than
    one label static: ``cum``, the product of its static factors down its
    suffix chain, 0 for transitions ``distinct`` forbids; ``c_lo``/``c_hi``
    bound the others); span label marginals into ``ws.lab``, transition
    counts added to ``taken`` (see ``_factored_counts``).  NaN, and
    ``taken`` untouched, when the path would not be exact."""
    shift = _label_factors(pot, T, tables, cnt, c_lo, c_hi, ws)
    if not np.isfinite(shift):
        return np.nan
    F = cum.reshape((1, cum.shape[0]))
    e_lab = ws.e_lab
    E = e_lab.reshape((e_lab.shape[0] * e_lab.shape[1], e_lab.shape[2]))
    log_scale = _forward(F, E, True, T, tables, cnt, work.alpha, ws)
    if not (np.isfinite(log_scale)
            and _backward(F, E, True, T, tables, cnt, work.beta, ws) <= _NEGLIGIBLE):
        return np.nan
    _factored_counts(cum, E, T, tables, cnt, work.alpha, work.beta, ws, taken)
    return log_scale + shift


@njit(cache=True, nogil=True)
def sequence_marginals(pot, T, tables, max_len, distinct, work, ws):
    """log Z of one sequence (every pattern's potential in ``pot``) and its
    accumulated span-transition marginals in ``work.marg``: the scaled path,
    or the span kernel where it would not be exact."""
    n_z = tables.n_patterns
    sc = static_tables(np.zeros(n_z), np.ones(n_z, dtype=np.bool_), tables)  # all dynamic
    log_z = scaled_sequence(pot, T, tables, sc, span_lattice.label_counts(max_len, pot.shape[1]),
                            distinct, work, ws)
    if not np.isfinite(log_z):
        log_z = span_lattice.sequence_marginals(pot, T, tables, max_len, work, distinct)
    return log_z


# --------------------------------------------------------------------------
# potential-table API (one sequence)


def _limits(st: ChainStructure, L: int, max_len: np.ndarray | None) -> np.ndarray:
    """Every label's limit within the table's L lengths."""
    return np.full(st.n_labels, L, dtype=np.int64) if max_len is None else \
        np.minimum(np.asarray(max_len, dtype=np.int64), L)


def segment_marginals(st: ChainStructure, pot: np.ndarray, max_len: np.ndarray | None = None,
                      distinct: bool = False) -> tuple[float, np.ndarray]:
    """log Z and P(segment (u, u+d-1), last |z| segment labels = z | x) as
    ``marg[u, d-1, z]``, for potentials ``pot[u, d-1, z]`` (shape [T, L,
    |Z|]); ``max_len[y]``: label y's longest segment; ``distinct``: no two
    adjacent segments with the same label."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T, L, _ = pot.shape
    limits = _limits(st, L, max_len)
    order = label_order(limits)
    est = engine_structure(st, order)
    work = span_lattice.workspace(T, L, est.tables)
    log_z = sequence_marginals(pot, T, est.tables, limits[order], distinct, work,
                               scaled_workspace(T, L, st.n_labels, est.n_forward))
    return float(log_z), work.marg[:, :, est.pattern_s].copy()


def segment_viterbi(st: ChainStructure, pot: np.ndarray, max_len: np.ndarray | None = None,
                    distinct: bool = False) -> tuple[list[tuple[int, int, int]], float]:
    """The best segmentation as (first token, last token, label) triples and
    its score."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T, L, _ = pot.shape
    limits = _limits(st, L, max_len)
    order = label_order(limits)
    est = engine_structure(st, order)
    labels = np.empty(T, dtype=np.int64)
    starts = np.empty(T, dtype=np.int64)
    best = span_lattice.viterbi(pot, T, est.tables, limits[order],
                                span_lattice.workspace(T, L, est.tables), labels, starts, distinct)
    first = np.flatnonzero(starts).tolist()
    return [(u, v - 1, int(order[labels[u]])) for u, v in zip(first, first[1:] + [T])], \
        float(best)
