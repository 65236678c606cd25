"""Exact pattern-sparse chain engine (Ye et al. 2009 §3; Cuong et al. 2014 §2 with L = 1).

The model's label patterns define forward states P and transitions S = P x Y
(``fgl.engines.sequence.structure.ChainStructure``): forward, backward, transition
marginals and Viterbi cost O(|P|·n) per position, O(T·n·|P|) per sequence —
never O(T·n^k).  Pattern marginals P(y_{t-|z|+1..t} = z | x) are transition
marginals accumulated up the parent tree (Cuong et al. 2014 §2.3.2).

The exact log-space recursion, in both semirings, is the span kernel
(``fgl.engines.sequence.span_lattice``) at L = 1 — a [T, |Z|] potential table is a
[T, 1, |Z|] view: it gives the MAP labelling and the gold counts, and log Z
and marginals whenever the fast paths below would not be exact.

The fast paths (``sequence_marginals``, ``batch_expectations``: training)
run the sum-product recursion on scaled vectors: each forward/backward
vector is normalised and its log scale kept (Sutton & McCallum §1.4.6),
which needs one ``exp`` per transition instead of three; when a scale could
underflow the sequence goes to the span kernel.  When only single labels
carry observations (a first-order CRF with plain transition weights, or
unobserved high-order patterns), every transition factor is a label factor
times a constant, and the factored path (``_factored_forward``) needs one
``exp`` per label and token and no per-token transition table; in a
first-order chain, the expected transition counts of a whole sequence are
then one matrix product (``_add_taken_first_order``, BLAS).  Each path, and
the factored one per kind of chain (first order or not: the chain's
tables say, ``StateTables.first_order``), has a kernel of its own, chosen
in Python once per call over many sequences (a model whose transitions
carry per-token features goes to the scaled one, ``static_blocks``; the
factored kernel declines when the static potentials' range rules it out,
and the scaled one takes the call): a first run compiles only the code its
model takes.

Why one module of some 1,000 lines: the scaled and the factored path share
their block loops (``_forward_push``, ``_backward_step``) and the checks
that decide when to fall back (their bounds in ``fgl.engines.sequence.
scaling``; the factored path's vectorised ``_exps`` is bounded by the same
checks), and the batch kernels choose between them per sequence; apart,
the rule for when the fast paths are exact would be spread over modules.

``ChainStructure`` (``fgl.engines.sequence.structure``) types the potential-table
API's arguments.
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
    cum_range,
    extend_blocks,
    label_exps,
    static_cumulative,
    static_tables,
)
from fgl.engines.sequence.structure import ChainStructure
from fgl.engines.vector_math import exp_neg
from fgl.jit import njit

# row_dense of a row whose n features are the labels' single-label patterns in label order
FULL_ROW = -2


class ChainFeatures(NamedTuple):
    """A chain program's feature table: the fields of
    ``span_lattice.FeatureTable``, plus ``dynamic[z]``, whether some per-token row
    feeds pattern z (every single label counts as dynamic),
    ``row_dense[r]``, the dense row d >= 0 that scores and counts row r as
    one vector over the labels, ``FULL_ROW`` when row r's own features are
    that vector (one per label, in label order), else -1, and the patterns
    that are dynamic and those that are not (``np.flatnonzero`` of
    ``dynamic`` and of its negation: numba's compiles anew for each kernel
    on a first run)."""

    row_ptr: np.ndarray
    feat_pattern: np.ndarray
    feat_s: np.ndarray
    const_feats: np.ndarray
    dynamic: np.ndarray
    row_dense: np.ndarray
    dynamic_patterns: np.ndarray
    static_patterns: np.ndarray


# --------------------------------------------------------------------------
# the scaled path (Sutton & McCallum §1.4.6; its shared pieces in
# ``fgl.engines.sequence.scaling``)


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _exp_transition_scores(pot, tables, sc, epsi, low):
    """``epsi[t, p·n + y] = exp(Ψ(t, p·y) - shift_t)``, block by block: the
    parent of p·y is p_suffix[p]·y, so each block is its parent block times
    the exp of the block's own pattern potentials — one ``exp`` per label and
    per pattern whose potential varies with t; position-independent ones
    (``sc.dynamic`` False, e.g. plain transitions) use ``sc.static_exp``.
    ``shift_t`` is the largest label potential.  ``sc.cum_lo``/``cum_hi``
    bound each static block's values relative to block ε.  Returns Σ_t
    shift_t and stores the smallest epsi of each t in ``low``, or returns
    NaN when a value left [exp(MIN_EXPONENT), exp(MAX_EXPONENT)]."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    T = pot.shape[0]
    n = tables.n_labels
    s_pattern = tables.s_pattern
    p_suffix = tables.p_suffix
    p_order = tables.p_order
    label_z = tables.label_z
    dynamic = sc.dynamic
    block_dynamic = sc.block_dynamic
    static_exp = sc.static_exp
    cum_lo = sc.cum_lo
    cum_hi = sc.cum_hi
    lo = np.exp(MIN_EXPONENT)
    hi = np.exp(MAX_EXPONENT)
    shift = 0.0
    for t in range(T):
        row = epsi[t]
        # block ε: transition ε·y carries the label's pattern
        m, eps_lo = label_exps(pot[t], label_z, n, row)
        shift += m
        mn, mx = extend_blocks(row, pot[t], n, eps_lo, p_order, p_suffix, s_pattern,
                               block_dynamic, dynamic, static_exp, cum_lo, cum_hi)
        if not (mn >= lo and mx <= hi):
            return np.nan
        low[t] = mn
    return shift


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _scaled_forward_backward(epsi, low, tables, alpha, beta, scale):
    """Forward and backward on scaled vectors (Sutton & McCallum §1.4.6),
    block by block (``_forward_push``, ``_backward_step``).  Returns the log
    of the product of forward scales, or NaN when a product came near the
    ends of the floating-point range (mass could be lost), so the caller
    falls back to log space."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    T = epsi.shape[0]
    n = tables.n_labels
    P = tables.n_forward
    s_next = tables.s_next
    p_next_run = tables.p_next_run
    run_blocks = tables.run_blocks
    run_ptr = tables.run_ptr
    gather_blocks = tables.gather_blocks
    # _factored_forward repeats this frame around the shared push (_forward_push);
    # its underflow check, label factor and log of the scales differ
    alpha[0, :] = 0.0
    alpha[0, 0] = 1.0
    log_scale = 0.0
    for t in range(T):
        row = alpha[t + 1]
        row[:] = 0.0
        e_row = epsi[t]
        prev = alpha[t]
        if _may_underflow(prev, low[t]):  # a·epsi may underflow: check every product
            for p in range(P):
                a = prev[p]
                for y in range(n):
                    if a != 0.0 and a * e_row[p * n + y] < TINY:
                        return np.nan
        _forward_push(prev, e_row, s_next, p_next_run, run_blocks, run_ptr, gather_blocks, n,
                      row)
        scale[t] = _normalise(row)
        log_scale += np.log(scale[t])
    beta[T, :] = 1.0
    for t in range(T - 1, -1, -1):
        if not _backward_step(epsi[t], beta[t + 1], 1.0 / scale[t], s_next, p_next_run,
                              run_blocks, gather_blocks, n, beta[t]):
            return np.nan
    return log_scale


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _normalise(row):
    """Scale ``row`` to sum 1; returns the sum it had."""
    c = 0.0
    for v in row:
        c += v
    inv = 1.0 / c
    for q in range(row.shape[0]):
        row[q] *= inv
    return c


@njit(cache=True, nogil=True, inline="always")
def _may_underflow(prev, low):
    """Whether some non-zero forward value times the smallest factor of the
    step (``low``) falls below TINY."""
    risky = False
    for a in prev:   # (no short circuit: a branch per value stops vectorisation)
        risky |= (a != 0.0) & (a * low < TINY)
    return risky


@njit(nogil=True, fastmath=SAFE_FAST, error_model="numpy", inline="always")
def _add_four(dst, a0, s0, a1, s1, a2, s2, a3, s3):
    """dst += a0·s0 + a1·s1 + a2·s2 + a3·s3 in one loop over dst: a short
    loop's overhead and dst's loads and stores paid once for four terms."""
    for y in range(dst.shape[0]):
        dst[y] += a0 * s0[y] + a1 * s1[y] + a2 * s2[y] + a3 * s3[y]


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy", inline="always")
def _forward_push(prev, factor, s_next, p_next_run, run_blocks, run_ptr, gather_blocks, n, out):
    """out[next(p·y)] += prev[p] · factor[p·n + y] for every forward state p
    and label y.  A block whose successors are a run of states
    (``run_blocks``) is one vector update, four consecutive blocks onto the
    same run (``run_ptr``, found once per structure: every block of a
    first-order chain) one update of four terms (``_add_four``).  The
    others (``gather_blocks``) gather — separate loops, as a loop that may
    take either form is not vectorised.  Inlined: as a call per token, the
    forward pass of a first-order chain took 159-165 ns per token on
    CoNLL-2000 (n = 22), inlined 141-148.  (Per-step helpers take their
    arrays, not the tables bundle: a bundle passed to a call that is not
    inlined is copied.)"""
    for k in range(run_ptr.shape[0] - 1):
        i, j = run_ptr[k], run_ptr[k + 1]   # blocks i..j-1 push onto the same run
        q0 = p_next_run[run_blocks[i]]
        dst = out[q0:q0 + n]
        while i + 4 <= j:
            p0, p1, p2, p3 = run_blocks[i], run_blocks[i + 1], run_blocks[i + 2], run_blocks[i + 3]
            a0, a1, a2, a3 = prev[p0], prev[p1], prev[p2], prev[p3]
            _add_four(dst, a0, factor[p0 * n:(p0 + 1) * n], a1, factor[p1 * n:(p1 + 1) * n],
                      a2, factor[p2 * n:(p2 + 1) * n], a3, factor[p3 * n:(p3 + 1) * n])
            i += 4
        while i < j:
            p = run_blocks[i]
            a = prev[p]
            src = factor[p * n:(p + 1) * n]
            for y in range(n):
                dst[y] += a * src[y]
            i += 1
    for p in gather_blocks:
        a = prev[p]
        base = p * n
        for y in range(n):
            out[s_next[base + y]] += a * factor[base + y]


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _backward_step(factor, nxt, inv, s_next, p_next_run, run_blocks, gather_blocks, n, out):
    """out[p] = inv · Σ_y factor[p·n + y] · nxt[next(p·y)] for every forward
    state p, run blocks four at a time (four sums in one label loop) and
    gather blocks in separate loops; False when a value reached HUGE (the
    scaled path would lose precision)."""
    m = run_blocks.shape[0]
    i = 0
    while i + 4 <= m:
        p0, p1, p2, p3 = run_blocks[i], run_blocks[i + 1], run_blocks[i + 2], run_blocks[i + 3]
        s0 = factor[p0 * n:(p0 + 1) * n]
        s1 = factor[p1 * n:(p1 + 1) * n]
        s2 = factor[p2 * n:(p2 + 1) * n]
        s3 = factor[p3 * n:(p3 + 1) * n]
        t0 = nxt[p_next_run[p0]:p_next_run[p0] + n]
        t1 = nxt[p_next_run[p1]:p_next_run[p1] + n]
        t2 = nxt[p_next_run[p2]:p_next_run[p2] + n]
        t3 = nxt[p_next_run[p3]:p_next_run[p3] + n]
        c0 = c1 = c2 = c3 = 0.0
        for y in range(n):
            c0 += s0[y] * t0[y]
            c1 += s1[y] * t1[y]
            c2 += s2[y] * t2[y]
            c3 += s3[y] * t3[y]
        out[p0] = c0 * inv
        out[p1] = c1 * inv
        out[p2] = c2 * inv
        out[p3] = c3 * inv
        i += 4
    for p in run_blocks[i:]:
        q0 = p_next_run[p]
        src = factor[p * n:(p + 1) * n]
        tgt = nxt[q0:q0 + n]
        acc = 0.0
        for y in range(n):
            acc += src[y] * tgt[y]
        out[p] = acc * inv
    for p in gather_blocks:
        base = p * n
        acc = 0.0
        for y in range(n):
            acc += factor[base + y] * nxt[s_next[base + y]]
        out[p] = acc * inv
    ok = True
    for p in range(out.shape[0]):  # not a max: a max chain is not vectorised
        ok &= out[p] < HUGE
    return ok


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy", inline="always")
def _backward_first_order(cum_t, g, inv, n, out):
    """``_backward_step`` of a first-order chain, where every state p
    moves to state 1 + y on label y: out[p] = inv · Σ_y cum[p·n + y] ·
    g[1 + y], summed as vector updates over the states, four labels at a
    time, from the transposed factors ``cum_t[y, p]`` (the dot products of
    ``_backward_step`` each end in a horizontal sum: about 0.6x its time
    at n = 22).  False when a value reached HUGE."""
    out[:] = 0.0
    y = 0
    while y + 4 <= n:
        _add_four(out, g[1 + y], cum_t[y], g[2 + y], cum_t[y + 1], g[3 + y], cum_t[y + 2],
                  g[4 + y], cum_t[y + 3])
        y += 4
    for y in range(y, n):
        a = g[1 + y]
        src = cum_t[y]
        for p in range(out.shape[0]):
            out[p] += a * src[p]
    ok = True
    for p in range(out.shape[0]):
        out[p] *= inv
        ok &= out[p] < HUGE
    return ok


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _scaled_marginals(epsi, alpha, beta, scale, tables, marg):
    """Transition marginals from the scaled vectors, accumulated block by
    block into the parent blocks (longest first), so that ``marg[t, s]`` =
    P(s is a suffix of y_{1:t})."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    T = epsi.shape[0]
    n = tables.n_labels
    p_next_run = tables.p_next_run
    s_next = tables.s_next
    p_suffix = tables.p_suffix
    p_order = tables.p_order
    run_blocks = tables.run_blocks
    gather_blocks = tables.gather_blocks
    for t in range(T):
        m_row = marg[t]
        e_row = epsi[t]
        nb = beta[t + 1]
        inv = 1.0 / scale[t]
        for p in run_blocks:
            a = alpha[t, p] * inv
            q0 = p_next_run[p]
            dst = m_row[p * n:(p + 1) * n]
            src = e_row[p * n:(p + 1) * n]
            nxt = nb[q0:q0 + n]
            for y in range(n):
                dst[y] = a * src[y] * nxt[y]
        for p in gather_blocks:
            a = alpha[t, p] * inv
            base = p * n
            for y in range(n):
                m_row[base + y] = a * e_row[base + y] * nb[s_next[base + y]]
        span_lattice.accumulate_up(m_row, p_suffix, p_order, n)


@njit(cache=True, nogil=True, inline="always")
def _scaled_sequence(pot, tables, sc, epsi, alpha, beta, scale, marg):
    """log Z and accumulated transition marginals on the scaled path, or NaN
    when it would not be exact.  Reads ``pot`` only for labels and dynamic
    patterns."""
    shift = _exp_transition_scores(pot, tables, sc, epsi, scale)
    if not np.isfinite(shift):
        return np.nan
    # ``scale`` holds each row's smallest epsi until the forward pass overwrites it
    log_scale = _scaled_forward_backward(epsi, scale, tables, alpha, beta, scale)
    if not np.isfinite(log_scale):
        return np.nan
    _scaled_marginals(epsi, alpha, beta, scale, tables, marg)
    return log_scale + shift




# the factored path logs the product of its scales when it leaves [1/LOG_BAND, LOG_BAND]
LOG_BAND = 1e50


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def _exps(x):
    """``x[i] = exp(x[i])`` in place for x <= 0, as one vectorised loop
    (``fgl.engines.vector_math.exp_neg``) — libm's ``exp`` is a call per
    value.  Values below -708 give exp(-708), -inf gives 0 (the callers'
    range checks reject both); NaN stays NaN."""
    for i in range(x.shape[0]):
        x[i] = exp_neg(x[i])


class FactoredScratch(NamedTuple):
    """The factored path's arrays for one sequence of T tokens, as one
    argument: ``e`` [T, n] and ``low`` [T] (each step's label factors and
    smallest factor), ``alpha`` and ``beta`` [T + 1, P], ``scale`` [T],
    ``g`` [T, P], ``lab_marg`` [T, n] (written: the label marginals) and
    ``product`` (``taken_scratch``)."""

    e: np.ndarray
    low: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    scale: np.ndarray
    g: np.ndarray
    lab_marg: np.ndarray
    product: np.ndarray


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _factored_forward(pot, tables, cum, c_lo, work: FactoredScratch, first_order):
    """The factored path's label factors and forward pass (its scaled
    vectors α̂ and scales into ``work``): the scaled path (Sutton &
    McCallum §1.4.6) when only block ε varies with t — every pattern longer
    than one label is observation-free, as in a first-order CRF with plain
    transition weights.  Each transition factor is then ``e[t, y] ·
    cum[p·n + y]``: one ``exp`` per label and token (all of a sequence's in
    one vectorised ``_exps``), no per-token transition table, and state q's
    incoming mass is scaled by ``e[t, last label of q]`` once, in the pass
    that sums it.  Returns the log of the forward scales' product plus the
    shifts, or NaN when the scaled values would not be exact — the range
    checks of ``_scaled_sequence``, with ``c_lo`` the smallest ``cum_lo``
    (``low[t]``, the smallest factor of step t, is ``_exps`` of the
    smallest exponent: exact to the ulp, far inside TINY's margin).
    ``first_order``: the chain is first order (``StateTables.first_order``), and the
    loop over its states reads a contiguous slice instead of going through
    p_label (vectorised)."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    e, low, alpha, scale = work.e, work.low, work.alpha, work.scale
    T = pot.shape[0]
    n = tables.n_labels
    P = tables.n_forward
    label_z = tables.label_z
    p_label = tables.p_label
    p_next_run = tables.p_next_run
    s_next = tables.s_next
    run_blocks = tables.run_blocks
    run_ptr = tables.run_ptr
    gather_blocks = tables.gather_blocks
    lo = np.exp(MIN_EXPONENT)
    shift = 0.0
    for t in range(T):
        z_row = pot[t]
        row = e[t]
        m = -np.inf
        mn = np.inf
        for y in range(n):
            v = z_row[label_z[y]]
            row[y] = v
            m = max(m, v)
            mn = min(mn, v)
        shift += m
        for y in range(n):
            row[y] -= m
        low[t] = mn - m
    _exps(e.reshape(T * n))
    _exps(low)
    for t in range(T):
        low[t] *= c_lo
        if not low[t] >= lo:
            return np.nan
    # the forward frame of _scaled_forward_backward: its push is shared
    # (_forward_push); its underflow check, label factor and log of the scales are not
    alpha[0, :] = 0.0
    alpha[0, 0] = 1.0
    log_scale = 0.0
    prod = 1.0  # the product of the scales since log_scale was last updated
    for t in range(T):
        row = alpha[t + 1]
        row[:] = 0.0
        prev = alpha[t]
        if _may_underflow(prev, low[t]):  # a product may underflow: check every one
            for q in range(P):
                a = prev[q]
                for y in range(n):
                    if a != 0.0 and a * e[t, y] * cum[q * n + y] < TINY:
                        return np.nan
        _forward_push(prev, cum, s_next, p_next_run, run_blocks, run_ptr, gather_blocks, n, row)
        c = 0.0
        if first_order:
            r1 = row[1:]
            et = e[t]
            for y in range(n):
                v = r1[y] * et[y]
                r1[y] = v
                c += v
        else:
            for q in range(1, P):  # every state but ε ends in its label's factor (ε gets none)
                v = row[q] * e[t, p_label[q]]
                row[q] = v
                c += v
        inv = 1.0 / c
        for q in range(1, P):
            row[q] *= inv
        scale[t] = c
        prod *= c  # TINY <= c <= n·exp(MAX_EXPONENT): prod stays a normal number
        if not (prod > 1.0 / LOG_BAND and prod < LOG_BAND):
            log_scale += np.log(prod)
            prod = 1.0
    log_scale += np.log(prod)
    return log_scale + shift


# The factored path's backward pass and counts after ``_factored_forward``, a function per
# kind of chain (``StateTables.first_order``, decided in Python), so a first run compiles one kind's
# only.  Each writes ``lab_marg[t, y]`` = P(y_t = y | x) = Σ_{q ends in y} α̂(t+1, q)·
# β̂(t+1, q), and adds Σ_t α̂(t, p)·g_t(q), q = next(p·y), to ``taken[p·n + y]`` (g_t(q) =
# e[t, label of q]·β̂(t+1, q)): times ``cum[p·n + y]``, the expected number of times
# transition p·y is taken.  Each returns False (``taken`` untouched) when a backward value
# reached HUGE (the scaled values would not be exact).


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _first_order_counts(tables, cum_t, work: FactoredScratch, taken):
    """The counts of a first-order chain: state q >= 1 ends in label q - 1,
    so its loops over the states read contiguous slices, its backward steps
    are ``_backward_first_order``'s on ``cum_t`` (``first_order_factors``)
    and its counts one matrix product (``_add_taken_first_order``)."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    e, low, alpha, beta, scale = work.e, work.low, work.alpha, work.beta, work.scale
    g, lab_marg = work.g, work.lab_marg
    T = e.shape[0]
    n = tables.n_labels
    beta[T, :] = 1.0
    for t in range(T - 1, -1, -1):
        gt = g[t]
        gt[0] = 0.0
        g1 = gt[1:]
        nb1 = beta[t + 1, 1:]
        et = e[t]
        for y in range(n):
            g1[y] = et[y] * nb1[y]
        if not _backward_first_order(cum_t, gt, 1.0 / scale[t], n, beta[t]):
            return False
    for t in range(T):
        low[t] = 1.0 / scale[t]  # (low is free once the forward pass has run)
    _add_taken_first_order(alpha, g, low, tables.run_blocks, n, taken, work.product)
    for t in range(T):
        m_row = lab_marg[t]
        na1 = alpha[t + 1, 1:]
        nb1 = beta[t + 1, 1:]
        for y in range(n):
            m_row[y] = na1[y] * nb1[y]
    return True


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _general_counts(tables, cum, work: FactoredScratch, taken):
    """The counts of any chain: backward steps through the state tables
    (``_backward_step``), counts by ``_add_taken``."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    e, low, alpha, beta, scale = work.e, work.low, work.alpha, work.beta, work.scale
    g, lab_marg = work.g, work.lab_marg
    T = e.shape[0]
    n = tables.n_labels
    P = tables.n_forward
    p_label = tables.p_label
    p_next_run = tables.p_next_run
    s_next = tables.s_next
    run_blocks = tables.run_blocks
    gather_blocks = tables.gather_blocks
    beta[T, :] = 1.0
    for t in range(T - 1, -1, -1):
        nb = beta[t + 1]
        gt = g[t]
        gt[0] = 0.0
        for q in range(1, P):
            gt[q] = e[t, p_label[q]] * nb[q]
        if not _backward_step(cum, gt, 1.0 / scale[t], s_next, p_next_run, run_blocks,
                              gather_blocks, n, beta[t]):
            return False
    for t in range(T):
        low[t] = 1.0 / scale[t]  # (low is free once the forward pass has run)
    _add_taken(alpha, g, low, s_next, p_next_run, run_blocks, gather_blocks, n, taken)
    for t in range(T):
        m_row = lab_marg[t]
        na = alpha[t + 1]
        nb = beta[t + 1]
        m_row[:] = 0.0
        for q in range(1, P):
            m_row[p_label[q]] += na[q] * nb[q]
    return True


def first_order_factors(tables, cum: np.ndarray) -> np.ndarray:
    """``cum`` as [n, P], transposed, when the chain is first order (the
    factored path's first-order loops and ``_backward_first_order``), else
    an empty [0, P] array; as ``_expectations`` makes it once per call."""
    P = tables.n_forward
    if not tables.first_order:
        return np.empty((0, P))
    return cum.reshape(P, tables.n_labels).T.copy()


def taken_scratch(max_t: int, tables, cum_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scratch of ``_add_taken_first_order`` for up to ``max_t`` tokens
    (none when ``cum_t`` is empty: not a first-order chain)."""
    P = tables.n_forward
    return np.empty((max_t if cum_t.shape[0] > 0 else 0, P)), np.empty((P, P))


def _factored_sequence(pot: np.ndarray, tables, cum: np.ndarray, cum_t: np.ndarray,
                       c_lo: float, work: FactoredScratch, taken: np.ndarray) -> float:
    """The factored path of one sequence, from Python, as ``_expectations``
    takes it (the first-order counts when ``cum_t``,
    ``first_order_factors``, is not empty): log Z, or NaN (``taken``
    untouched) when the scaled values would not be exact."""
    first_order = cum_t.shape[0] > 0
    log_z = _factored_forward(pot, tables, cum, c_lo, work, first_order)
    if not np.isfinite(log_z):
        return np.nan
    ok = _first_order_counts(tables, cum_t, work, taken) if first_order \
        else _general_counts(tables, cum, work, taken)
    return log_z if ok else np.nan


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _add_taken(alpha, g, inv, s_next, p_next_run, run_blocks, gather_blocks, n, taken):
    """taken[p·n + y] += Σ_t inv[t] · alpha[t, p] · g[t, next(p·y)]: a run
    block's sum four positions at a time (``_add_four``), gather blocks one
    by one.  No test for alpha = 0: a
    branch here stops vectorisation."""
    T = inv.shape[0]
    for p in run_blocks:
        q0 = p_next_run[p]
        dst = taken[p * n:(p + 1) * n]
        t = 0
        while t + 4 <= T:
            a0 = alpha[t, p] * inv[t]
            a1 = alpha[t + 1, p] * inv[t + 1]
            a2 = alpha[t + 2, p] * inv[t + 2]
            a3 = alpha[t + 3, p] * inv[t + 3]
            _add_four(dst, a0, g[t, q0:q0 + n], a1, g[t + 1, q0:q0 + n], a2, g[t + 2, q0:q0 + n],
                      a3, g[t + 3, q0:q0 + n])
            t += 4
        for t in range(t, T):
            a = alpha[t, p] * inv[t]
            src = g[t, q0:q0 + n]
            for y in range(n):
                dst[y] += a * src[y]
    for p in gather_blocks:
        base = p * n
        for t in range(T):
            a = alpha[t, p] * inv[t]
            gt = g[t]
            for y in range(n):
                taken[base + y] += a * gt[s_next[base + y]]


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy", inline="always")
def _add_taken_first_order(alpha, g, inv, run_blocks, n, taken, product):
    """``_add_taken`` of a first-order chain, where every block is a run onto
    state 1: taken[p·n + y] += Σ_t inv[t]·alpha[t, p]·g[t, 1 + y] is one
    matrix product Âᵀ·G over the sequence, made by BLAS (dgemm, register
    blocked, where the loops of ``_add_taken`` wait on their loads and
    stores: on T = 24 tokens and n = 22 labels, 34 against 106 ns per
    token); G is ``g`` as it lies, its column of state ε unused.
    ``product``: ``taken_scratch``."""
    a, out = product
    T = inv.shape[0]
    P = alpha.shape[1]
    for t in range(T):
        it = inv[t]
        for p in range(P):
            a[t, p] = alpha[t, p] * it
    np.dot(a[:T].T, g[:T], out)
    for p in run_blocks:
        src = out[p, 1:]
        dst = taken[p * n:(p + 1) * n]
        for y in range(n):
            dst[y] += src[y]


# --------------------------------------------------------------------------
# potential-table API (one sequence)


class Workspace:
    """Scratch arrays for sequences of up to T positions (reusable): the
    span kernel's at L = 1, whose α, β and marginals the scaled path
    shares."""

    def __init__(self, st: ChainStructure, T: int):
        self.span = span_lattice.workspace(T, 1, st.tables)
        self.alpha, self.beta = self.span.alpha, self.span.beta
        self.marg = self.span.marg.reshape(T, st.n_backward)
        self.epsi = np.empty((T, st.n_backward))
        self.scale = np.empty(T)


def _unit_spans(st: ChainStructure) -> np.ndarray:
    """Every label's span length limit in a chain: 1."""
    return np.ones(st.n_labels, dtype=np.int64)


def log_partition(st: ChainStructure, pot: np.ndarray) -> float:
    """log Z of one sequence with potentials ``pot[t, z]``."""
    return pattern_marginals(st, pot)[0]


def pattern_marginals(st: ChainStructure, pot: np.ndarray) -> tuple[float, np.ndarray]:
    """log Z and P(y_{t-|z|+1..t} = z | x) for every position t and pattern z."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    ws = Workspace(st, pot.shape[0])
    log_z = sequence_marginals(st, pot, ws)
    return log_z, ws.marg[:pot.shape[0], st.pattern_s].copy()


def sequence_marginals(st: ChainStructure, pot: np.ndarray, ws: Workspace) -> float:
    """log Z of one sequence (``pot`` C-contiguous); ``ws.marg[t, s]``
    receives the accumulated transition marginals (the scaled path, or the
    span kernel when it is not exact).  ``ws`` may be reused across
    sequences of up to its length."""
    T, n_z = pot.shape
    sc = static_tables(np.zeros(n_z), np.ones(n_z, np.bool_), st.tables)  # all dynamic
    log_z = _scaled_sequence(pot, st.tables, sc, ws.epsi[:T], ws.alpha[:T + 1],
                             ws.beta[:T + 1], ws.scale[:T], ws.marg[:T])
    if not np.isfinite(log_z):
        log_z = span_lattice.sequence_marginals(pot.reshape(T, 1, n_z), T, st.tables,
                                                _unit_spans(st), ws.span)
    return float(log_z)


def viterbi(st: ChainStructure, pot: np.ndarray) -> tuple[np.ndarray, float]:
    """The highest-scoring labelling and its score."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T, n_z = pot.shape
    labels = np.empty(T, dtype=np.int64)
    best = span_lattice.viterbi(pot.reshape(T, 1, n_z), T, st.tables, _unit_spans(st),
                                span_lattice.workspace(T, 1, st.tables), labels,
                                np.empty(T, dtype=np.int64))
    return labels, float(best)


# --------------------------------------------------------------------------
# batch kernels over encoded features (the training and tagging path)
#
# Attribute rows are either per-token (listed in the encoded data) or
# constant — the ``bias`` row of a template, active with value 1 at every
# token.  Constant rows' features (``const_feats``) are scored once per
# call, their expected counts are Σ_t of the marginals, and a pattern fed
# only by them has a position-independent potential whose exp is computed
# once (``dynamic`` False) — CRFsuite's trick for transition weights.
# Frequent rows whose features all have single-label patterns are *dense*
# (``row_dense[r]`` >= 0), rows of one feature per label in label order *full*
# (``FULL_ROW``): either is scored and counted as one vector over the labels
# (``fgl.engines.sequence.chain_program.ChainProgram._dense_rows``).  The gold counts
# are the span kernel's (``span_lattice.gold_counts`` with L = 1).


@njit(cache=True, nogil=True)
def static_potentials(features, tables, w):
    """The constant rows' potential of every pattern."""
    out = np.zeros(tables.n_patterns)
    feat_pattern = features.feat_pattern
    for k in features.const_feats:
        out[feat_pattern[k]] += w[k]
    return out


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def potentials(a, T, units, features, tables, w, static, fill, w_dense, lab, pot):
    """pot[t, z] = static[z] + Σ over per-token attributes r at t of value ·
    Σ_{k in row r, pattern k = z} w[k]: the feature scoring of the sequence
    of T tokens from token ``a``, for the patterns in ``fill`` (every pattern
    a per-token row can touch must be among them).  A dense row d =
    ``row_dense[r]`` >= 0 adds its weight vector ``w_dense[d]`` over the
    labels in one vector operation, a full row its features' weights
    (``lab`` is scratch of n_labels)."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    n = tables.n_labels
    label_z = tables.label_z
    unit_ptr = units.unit_ptr
    unit_row = units.unit_row
    unit_val = units.unit_val
    row_ptr = features.row_ptr
    feat_pattern = features.feat_pattern
    row_dense = features.row_dense
    for t in range(T):
        row = pot[t]
        for z in fill:
            row[z] = static[z]
        lab[:] = 0.0
        # batch_expectations walks the rows alike to gather counts; one loop for
        # scatter and gather would branch in the innermost loop
        for j in range(unit_ptr[a + t], unit_ptr[a + t + 1]):
            r = unit_row[j]
            v = unit_val[j]
            d = row_dense[r]
            if d >= 0:
                src = w_dense[d]
                for y in range(n):
                    lab[y] += v * src[y]
            elif d == FULL_ROW:
                src = w[row_ptr[r]:row_ptr[r] + n]
                for y in range(n):
                    lab[y] += v * src[y]
            else:
                for k in range(row_ptr[r], row_ptr[r + 1]):
                    row[feat_pattern[k]] += v * w[k]
        for y in range(n):
            row[label_z[y]] += lab[y]


# the paths of ``batch_expectations``: each is compiled on its own, when first taken, so a
# first run compiles only the path its model takes (about 4 s less on a cold cache: the
# span kernel's log-space path is compiled only once a sequence needs it)
# (the factored path in two variants: a first-order chain's loops and the general ones)
_FIRST_ORDER, _FACTORED, _SCALED, _LOG_SPACE = 0, 1, 2, 3


def batch_expectations(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr, grad_dense):
    """Σ log Z over sequences i0..i1 and, into ``grad``, the expected feature
    counts E[f_k] = Σ_t value · P(pattern of k ends at t | x); a dense row's
    counts go to ``grad_dense[d, y]`` instead.  ``grad`` is a compact layout
    (``fgl.engines.sequence.encoded.row_block_sums``): the constant rows'
    features first, in order, and row r's features from ``grad_ptr[r]``.  ``features.dynamic`` must
    hold every single-label pattern.  The factored path takes every
    sequence (its first-order kernel when ``tables.first_order``) unless the
    static potentials rule it out (a block of them varies with t:
    ``static_blocks``, decided here, or their range is unsafe: the kernel
    declines before any work), the scaled path then; a sequence that path
    cannot scale goes to the span kernel in log space."""
    redo = np.zeros(max(i1 - i0, 0), dtype=np.bool_)
    args = (i0, i1, units, features, tables, w, w_dense, grad, grad_ptr, grad_dense, redo)
    total, taken = 0.0, False
    if static_blocks(features, tables):   # (else a first run need not compile the factored path)
        factored = _expectations_first_order if tables.first_order else _expectations_factored
        total, taken = factored(*args)
    if not taken:
        total = _expectations_scaled(*args)[0]
    if redo.any():
        total += _expectations_log_space(*args)[0]
    return total


def static_blocks(features: ChainFeatures, tables) -> bool:
    """Whether every block but ε holds only static patterns (no transition
    out of a longer state has a per-token feature): the factored path's
    condition on the model, known without the weights (its kernel checks
    the static potentials' range, and declines, itself)."""
    n, P = tables.n_labels, tables.n_forward
    s_pattern = tables.s_pattern[n:P * n]
    known = s_pattern >= 0
    return not features.dynamic[s_pattern[known]].any()


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _expectations_first_order(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr,
                              grad_dense, redo):
    return _expectations(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr,
                         grad_dense, redo, _FIRST_ORDER)


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _expectations_factored(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr,
                           grad_dense, redo):
    return _expectations(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr,
                         grad_dense, redo, _FACTORED)


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _expectations_scaled(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr,
                         grad_dense, redo):
    return _expectations(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr,
                         grad_dense, redo, _SCALED)


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _expectations_log_space(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr,
                            grad_dense, redo):
    return _expectations(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr,
                         grad_dense, redo, _LOG_SPACE)


@njit(nogil=True, fastmath=SAFE_FAST, error_model="numpy", inline="always")
def _expectations(i0, i1, units, features, tables, w, w_dense, grad, grad_ptr, grad_dense, redo,
                  path):
    """``batch_expectations`` on one path (a constant, so each compiled
    variant holds only its own: inlined, the other branches are pruned):
    (Σ log Z, True), or (0, False) when the path is factored and the static
    potentials rule it out (nothing written).  The fast paths mark in
    ``redo`` (indexed from i0) the sequences they cannot scale and leave
    them out; the log-space path takes only those."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    seq_ptr = units.seq_ptr
    unit_ptr = units.unit_ptr
    unit_row = units.unit_row
    unit_val = units.unit_val
    row_ptr = features.row_ptr
    feat_s = features.feat_s
    row_dense = features.row_dense
    dynamic = features.dynamic
    dynamic_patterns = features.dynamic_patterns
    static_patterns = features.static_patterns
    max_t = span_lattice.longest(seq_ptr, i0, i1)
    n = tables.n_labels
    P = tables.n_forward
    S = P * n
    n_patterns = tables.n_patterns
    static = static_potentials(features, tables, w)
    sc = static_tables(static, dynamic, tables)
    c_lo, c_hi = cum_range(sc)
    if path <= _FACTORED:  # every block but ε static, their range safe, or the path declines
        declined = not c_hi <= np.exp(MAX_EXPONENT)
        for p in range(1, P):
            declined |= sc.block_dynamic[p]
        if declined:
            return 0.0, False
    cum = static_cumulative(sc.static_exp, tables)
    if path == _FIRST_ORDER:  # cum as [n, P], transposed, and _add_taken_first_order's scratch
        cum_t = cum.reshape((P, n)).T.copy()
        product = (np.empty((max_t, P)), np.empty((P, P)))
    else:
        cum_t = np.empty((0, P))
        product = (np.empty((0, P)), np.empty((P, P)))
    e_lab = np.empty((max_t, n))
    lab = np.empty(n)
    lab_marg = np.empty((max_t, n))
    g = np.empty((max_t, P))
    own_sum = np.zeros(S)  # the factored path's transition counts (then up the tree)
    pot = np.empty((max_t, 1, n_patterns))  # the span kernel's view at L = 1
    pot2 = pot.reshape((max_t, n_patterns))
    work = span_lattice.workspace(max_t, 1, tables)  # α, β, marginals shared with the lattice
    alpha = work.alpha
    beta = work.beta
    marg = work.marg.reshape((max_t, S))
    epsi = np.empty((max_t, S))
    scale = np.empty(max_t)
    low = np.empty(max_t)
    unit_len = np.ones(n, dtype=np.int64)
    marg_sum = np.zeros(S)
    total = 0.0
    # the sequence walk all batch kernels open with: the per-sequence work differs,
    # and sharing the walk would take that work as a callback
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0 or (path == _LOG_SPACE and not redo[i - i0]):
            continue
        potentials(a, T, units, features, tables, w, static, dynamic_patterns, w_dense, lab,
                   pot2)
        if path <= _FACTORED:
            scratch = FactoredScratch(e_lab[:T], low[:T], alpha[:T + 1], beta[:T + 1], scale[:T],
                                      g[:T], lab_marg[:T], product)
            log_z = _factored_forward(pot2[:T], tables, cum, c_lo, scratch, path == _FIRST_ORDER)
            if path == _FIRST_ORDER:
                if np.isfinite(log_z) and not _first_order_counts(tables, cum_t, scratch, own_sum):
                    log_z = np.nan
            elif np.isfinite(log_z) and not _general_counts(tables, cum, scratch, own_sum):
                log_z = np.nan
        elif path == _SCALED:
            log_z = _scaled_sequence(pot2[:T], tables, sc, epsi[:T], alpha[:T + 1],
                                     beta[:T + 1], scale[:T], marg[:T])
        else:  # the span kernel reads every pattern's potential
            for t in range(T):
                for z in static_patterns:
                    pot2[t, z] = static[z]
            log_z = span_lattice.sequence_marginals(pot, T, tables, unit_len, work)
        if path != _LOG_SPACE and not np.isfinite(log_z):
            redo[i - i0] = True   # (the factored path added nothing to own_sum for it)
            continue
        total += log_z
        for t in range(T):
            if path <= _FACTORED:  # every per-token feature has a single-label pattern
                m_row = lab_marg[t]
            else:
                m_row = marg[t]
                for s in range(S):
                    marg_sum[s] += m_row[s]
            labels = m_row[:n]  # P(y_t = y): block ε, accumulated
            # the walk of potentials(), gathering where it scatters (kept apart:
            # one loop for both would branch in the innermost loop)
            for j in range(unit_ptr[a + t], unit_ptr[a + t + 1]):
                r = unit_row[j]
                v = unit_val[j]
                d = row_dense[r]
                if d >= 0:
                    dst = grad_dense[d]
                    for y in range(n):
                        dst[y] += v * labels[y]
                elif d == FULL_ROW:
                    dst = grad[grad_ptr[r]:grad_ptr[r] + n]
                    for y in range(n):
                        dst[y] += v * labels[y]
                else:
                    shift = grad_ptr[r] - row_ptr[r]
                    for k in range(row_ptr[r], row_ptr[r + 1]):
                        grad[k + shift] += v * m_row[feat_s[k]]
    if path <= _FACTORED:  # (cum is finite only then)
        own_sum *= cum
    span_lattice.accumulate_up(own_sum, tables.p_suffix, tables.p_order, n)
    const_feats = features.const_feats
    for i in range(const_feats.shape[0]):  # (the constant rows open grad's layout)
        s = feat_s[const_feats[i]]
        grad[i] += marg_sum[s] + own_sum[s]
    return total, True


@njit(cache=True, nogil=True)
def batch_viterbi(i0, i1, units, features, tables, w, w_dense, out):
    """MAP labelling of sequences i0..i1 into ``out`` (flat over tokens):
    the span kernel at L = 1 (``span_lattice.viterbi``'s steps, called from
    here: one level of compiled code less on a first run)."""
    seq_ptr = units.seq_ptr
    max_t = span_lattice.longest(seq_ptr, i0, i1)
    n = tables.n_labels
    n_patterns = tables.n_patterns
    static = static_potentials(features, tables, w)
    all_patterns = np.empty(n_patterns, dtype=np.int64)  # (np.arange compiles more on a first run)
    for z in range(n_patterns):
        all_patterns[z] = z
    lab = np.empty(n)
    pot = np.empty((max_t, 1, n_patterns))
    pot2 = pot.reshape((max_t, n_patterns))
    work = span_lattice.workspace(max_t, 1, tables)
    starts = np.empty(max_t, dtype=np.int64)
    cnt = np.empty(1, dtype=np.int64)  # span_lattice.label_counts at L = 1: every label
    cnt[0] = n
    # the sequence walk all batch kernels open with: the per-sequence work differs,
    # and sharing the walk would take that work as a callback
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0:
            continue
        potentials(a, T, units, features, tables, w, static, all_patterns, w_dense, lab, pot2)
        span_lattice.span_scores(pot, T, tables, cnt, False, work.psi)
        span_lattice.forward(T, tables, cnt, True, work)
        span_lattice.trace_back(T, tables, work, out[a:a + T], starts)
