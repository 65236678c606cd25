"""Exact pattern-sparse chain engine (Ye et al. 2009 §3; Cuong et al. 2014 §2 with L = 1).

A model's label patterns Z (every single label among them) define

* forward states P: the empty sequence, every label, every proper prefix of a
  pattern (Ye et al. 2009 §3.1.1) — prefix-closed, so the longest suffix of
  ``y_{1:t}`` in P is determined by the previous state and the new label
  (Proposition 1);
* transitions S = P x Y: ``s = p·y``, each with ``next[s]`` (the longest
  suffix of ``p·y`` in P), its pattern id when ``p·y`` is itself a pattern,
  and ``parent[s]``, the longest proper suffix of ``p·y`` in S.  Every
  pattern lies in S, so the potential of a transition,
  ``Ψ(t, s) = Σ_{z ∈ Z, z suffix of s} pot[t, z]``, is the pattern's own
  potential plus its parent's Ψ: O(|S|) per position (the conditional
  backward variables of Cuong et al. 2014 §2.3.2 use the same S).

Forward, backward, transition marginals and Viterbi then cost O(|P|·n) per
position, O(T·n·|P|) per sequence — never O(T·n^k).  Pattern marginals
P(y_{t-|z|+1..t} = z | x) are transition marginals accumulated up the parent
tree (Cuong et al. 2014 §2.3.2).

Sum-product and max-product are one kernel, ``_forward``, parameterised by the
semiring (``use_max``) and run in log space.  The training path
(``sequence_marginals``, ``_chunk_expectations``) is the same recursion on
scaled vectors: each forward/backward vector is normalised and its log scale
kept (Sutton & McCallum §1.4.6), which needs one ``exp`` per transition instead of
three; when a scale underflows it falls back to the log-space kernel.  When
only single labels carry observations (a first-order CRF with plain
transition weights, or unobserved high-order patterns), every transition
factor is a label factor times a constant, and ``_factored_sequence`` needs
one ``exp`` per label and token and no per-token transition table.

All tables are integer arrays built once per model by ``ChainStructure``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numba import njit

NEG_INF = -np.inf
# The scaled path is trusted only while every non-zero product stays inside
# [_TINY, _HUGE] and every transition's exp(Ψ - shift) inside
# [exp(_MIN_EXPONENT), exp(_MAX_EXPONENT)]; otherwise the log-space kernel
# recomputes the sequence.
_TINY = 1e-250
_HUGE = 1e250
_MIN_EXPONENT = -600.0
_MAX_EXPONENT = 60.0
# floating-point reassociation lets LLVM vectorise the scaled path's sums and
# products; no flag that assumes away NaN or infinity (the checks need them).
# The hot kernels also use numpy's error model: a division by zero gives inf
# (which the range checks catch) instead of a Python exception check per
# division.
_SAFE_FAST = {"reassoc", "contract", "nsz", "arcp"}


@dataclass
class ChainStructure:
    """The compiled state machine of a pattern set (built once per model)."""

    n_labels: int
    patterns: list[tuple[int, ...]]
    forward_states: list[tuple[int, ...]]
    s_prev: np.ndarray      # [S] forward state p of s = p·y
    s_label: np.ndarray     # [S] label y of s = p·y
    s_next: np.ndarray      # [S] longest suffix of p·y in P
    s_pattern: np.ndarray   # [S] pattern id of p·y, or -1
    s_parent: np.ndarray    # [S] longest proper suffix of p·y in S, or -1
    s_order: np.ndarray     # [S] transitions by increasing length
    pattern_s: np.ndarray   # [Z] the transition equal to each pattern
    p_suffix: np.ndarray    # [P] longest proper suffix of p in P (-1 for ε): the
                            #     parent of p·y is p_suffix[p]·y, block by block
    p_order: np.ndarray     # [P] forward states by increasing length
    p_next_run: np.ndarray  # [P] q0 when next(p·y) = q0 + y for every y, else -1
    p_label: np.ndarray     # [P] the last label of p (-1 for ε)

    @property
    def n_forward(self) -> int:
        """|P|, the number of forward states (the empty state included)."""
        return len(self.forward_states)

    @property
    def n_backward(self) -> int:
        """|S| = |P|·n, the number of transitions (backward states, Cuong et al. 2014)."""
        return len(self.s_prev)

    @classmethod
    def build(cls, n_labels: int, patterns: Sequence[tuple[int, ...]]) -> "ChainStructure":
        """Build P, S and the longest-suffix tables for ``patterns``
        (label-id tuples, oldest label first; every single label included)."""
        patterns = [tuple(int(v) for v in z) for z in patterns]
        if len(set(patterns)) != len(patterns):
            raise ValueError("patterns must be distinct")
        for z in patterns:
            if not z or min(z) < 0 or max(z) >= n_labels:
                raise ValueError(f"pattern {z} is empty or uses a label outside 0..{n_labels - 1}")
        missing = [y for y in range(n_labels) if (y,) not in set(patterns)]
        if missing:
            raise ValueError(f"every single label must be a pattern; missing {missing}")
        prefixes = {z[:k] for z in patterns for k in range(1, len(z))}
        forward = [()] + sorted(prefixes | {(y,) for y in range(n_labels)}, key=lambda p: (len(p), p))
        p_index = {p: i for i, p in enumerate(forward)}
        z_index = {z: i for i, z in enumerate(patterns)}
        n_s = len(forward) * n_labels
        s_seq = [forward[i] + (y,) for i in range(len(forward)) for y in range(n_labels)]
        s_index = {s: i for i, s in enumerate(s_seq)}

        def longest_suffix(seq: tuple[int, ...], table: dict, proper: bool) -> int:
            for k in range(1 if proper else 0, len(seq)):
                hit = table.get(seq[k:])
                if hit is not None:
                    return hit
            return -1

        s_prev = np.repeat(np.arange(len(forward)), n_labels).astype(np.int64)
        s_label = np.tile(np.arange(n_labels), len(forward)).astype(np.int64)
        s_next = np.array([longest_suffix(s, p_index, False) for s in s_seq], dtype=np.int64)
        s_pattern = np.array([z_index.get(s, -1) for s in s_seq], dtype=np.int64)
        s_parent = np.array([longest_suffix(s, s_index, True) for s in s_seq], dtype=np.int64)
        s_order = np.array(sorted(range(n_s), key=lambda i: len(s_seq[i])), dtype=np.int64)
        pattern_s = np.array([s_index[z] for z in patterns], dtype=np.int64)
        # every proper suffix search ends at ε (index 0), which the helper skips
        p_suffix = np.array([max(longest_suffix(p, p_index, True), 0) if p else -1
                             for p in forward], dtype=np.int64)
        p_order = np.array(sorted(range(len(forward)), key=lambda i: len(forward[i])),
                           dtype=np.int64)
        nxt = s_next.reshape(len(forward), n_labels)
        p_next_run = np.where((nxt - nxt[:, :1] == np.arange(n_labels)).all(axis=1),
                              nxt[:, 0], -1).astype(np.int64)
        p_label = np.array([p[-1] if p else -1 for p in forward], dtype=np.int64)
        return cls(n_labels, patterns, forward, s_prev, s_label, s_next, s_pattern,
                   s_parent, s_order, pattern_s, p_suffix, p_order, p_next_run, p_label)

    def blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """The forward states whose successors form a run (``p_next_run``
        >= 0), and the others."""
        return np.flatnonzero(self.p_next_run >= 0), np.flatnonzero(self.p_next_run < 0)

    def tables(self) -> tuple:
        """The integer tables the kernels take, in their argument order."""
        return (self.s_prev, self.s_label, self.s_next, self.s_pattern,
                self.s_parent, self.s_order, self.n_forward)


# --------------------------------------------------------------------------
# kernels


@njit(cache=True, nogil=True)
def _transition_scores(pot, s_pattern, s_parent, s_order, psi):
    """Ψ(t, s): the summed potential of every pattern that is a suffix of s."""
    for t in range(pot.shape[0]):
        for i in range(s_order.shape[0]):
            s = s_order[i]
            v = 0.0
            if s_pattern[s] >= 0:
                v = pot[t, s_pattern[s]]
            if s_parent[s] >= 0:
                v += psi[t, s_parent[s]]
            psi[t, s] = v


@njit(cache=True, nogil=True)
def _forward(psi, s_prev, s_next, n_forward, use_max, alpha, back, tmp, acc):
    """Log-space forward pass in the log-sum-exp (use_max False) or max
    semiring; ``back[t, q]`` records the arg-max transition (Ye et al. 2009 §3.1.3)."""
    T, S = psi.shape
    alpha[0, :] = -np.inf
    alpha[0, 0] = 0.0
    for t in range(T):
        row = alpha[t + 1]
        row[:] = -np.inf
        for s in range(S):
            v = alpha[t, s_prev[s]] + psi[t, s]
            tmp[s] = v
            q = s_next[s]
            if v > row[q]:
                row[q] = v
                back[t, q] = s
        if not use_max:
            acc[:] = 0.0
            for s in range(S):
                q = s_next[s]
                if row[q] > -np.inf:
                    acc[q] += np.exp(tmp[s] - row[q])
            for q in range(n_forward):
                if acc[q] > 0.0:
                    row[q] += np.log(acc[q])


@njit(cache=True, nogil=True)
def _backward(psi, s_next, n_labels, n_forward, beta):
    """Log-space backward pass: beta[t, p] sums every continuation of state p."""
    T = psi.shape[0]
    beta[T, :] = 0.0
    for t in range(T - 1, -1, -1):
        for p in range(n_forward):
            m = -np.inf
            for y in range(n_labels):
                s = p * n_labels + y
                v = psi[t, s] + beta[t + 1, s_next[s]]
                if v > m:
                    m = v
            if m == -np.inf:
                beta[t, p] = m
                continue
            a = 0.0
            for y in range(n_labels):
                s = p * n_labels + y
                a += np.exp(psi[t, s] + beta[t + 1, s_next[s]] - m)
            beta[t, p] = m + np.log(a)


@njit(cache=True, nogil=True)
def _log_marginals(psi, alpha, beta, log_z, s_prev, s_next, s_parent, s_order, marg):
    """Transition marginals, accumulated up the parent tree so that
    ``marg[t, s]`` = P(s is a suffix of y_{1:t})."""
    T, S = psi.shape
    for t in range(T):
        for s in range(S):
            marg[t, s] = np.exp(alpha[t, s_prev[s]] + psi[t, s] + beta[t + 1, s_next[s]] - log_z)
        for i in range(S - 1, -1, -1):
            s = s_order[i]
            if s_parent[s] >= 0:
                marg[t, s_parent[s]] += marg[t, s]


@njit(cache=True, nogil=True)
def _static_tables(static, s_pattern, dynamic, p_suffix, p_order, n_labels):
    """What the scaled path needs of the position-independent potentials,
    once per call over many sequences: each transition's exp of its own
    static potential (1 where p·y is not a pattern), which blocks hold a
    dynamic pattern, and bounds on a static block's values relative to block
    ε (the products of its static factors along the suffix chain)."""
    n = n_labels
    P = p_order.shape[0]
    static_exp = np.ones(P * n)
    block_dynamic = np.zeros(P, dtype=np.bool_)
    for s in range(P * n):
        if s_pattern[s] >= 0:
            static_exp[s] = np.exp(static[s_pattern[s]])
            if dynamic[s_pattern[s]]:
                block_dynamic[s // n] = True
    cum_lo = np.ones(P)
    cum_hi = np.ones(P)
    for i in range(1, P):
        p = p_order[i]
        q = p_suffix[p]
        f_lo = np.inf
        f_hi = 0.0
        for y in range(n):
            f_lo = min(f_lo, static_exp[p * n + y])
            f_hi = max(f_hi, static_exp[p * n + y])
        cum_lo[p] = cum_lo[q] * f_lo
        cum_hi[p] = cum_hi[q] * f_hi
    return static_exp, block_dynamic, cum_lo, cum_hi


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _exp_transition_scores(pot, s_pattern, p_suffix, p_order, n_labels, dynamic,
                           block_dynamic, static_exp, cum_lo, cum_hi, epsi, low):
    """``epsi[t, p·n + y] = exp(Ψ(t, p·y) - shift_t)``, block by block: the
    parent of p·y is p_suffix[p]·y, so each block is its parent block times
    the exp of the block's own pattern potentials — one ``exp`` per label and
    per pattern whose potential varies with t; position-independent ones
    (``dynamic`` False, e.g. plain transitions) use ``static_exp`` (1 where
    p·y is not a pattern).  ``shift_t`` is the largest label potential.
    ``cum_lo``/``cum_hi`` bound each static block's values relative to
    block ε (``_static_tables``).  Returns Σ_t shift_t and stores the
    smallest epsi of each t in ``low``, or returns NaN when a value left
    [exp(_MIN_EXPONENT), exp(_MAX_EXPONENT)]."""
    T = pot.shape[0]
    n = n_labels
    lo = np.exp(_MIN_EXPONENT)
    hi = np.exp(_MAX_EXPONENT)
    P = p_order.shape[0]
    shift = 0.0
    for t in range(T):
        row = epsi[t]
        m = -np.inf
        for y in range(n):  # block ε: transition ε·y carries the label's pattern
            m = max(m, pot[t, s_pattern[y]])
        shift += m
        eps_lo = 1.0
        for y in range(n):
            e = np.exp(pot[t, s_pattern[y]] - m)
            row[y] = e
            eps_lo = min(eps_lo, e)
        mn = eps_lo
        mx = 1.0
        for i in range(1, P):
            p = p_order[i]
            base = p * n
            par = p_suffix[p] * n
            if block_dynamic[p]:
                for y in range(n):
                    z = s_pattern[base + y]
                    f = np.exp(pot[t, z]) if z >= 0 and dynamic[z] else static_exp[base + y]
                    e = row[par + y] * f
                    row[base + y] = e
                    mn = min(mn, e)
                    mx = max(mx, e)
            else:
                dst = row[base:base + n]
                src = row[par:par + n]
                f = static_exp[base:base + n]
                for y in range(n):
                    dst[y] = src[y] * f[y]
                mn = min(mn, eps_lo * cum_lo[p])  # a bound: exact enough to be safe
                mx = max(mx, cum_hi[p])
        if not (mn >= lo and mx <= hi):
            return np.nan
        low[t] = mn
    return shift


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _scaled_forward_backward(epsi, low, s_next, p_next_run, run_blocks, gather_blocks, n_labels,
                             n_forward, alpha, beta, scale):
    """Forward and backward on scaled vectors (Sutton & McCallum §1.4.6), block by
    block: a block whose successors are a run of states (``run_blocks``) is
    one vector update; the others (``gather_blocks``) gather.  The two kinds
    are separate loops — a loop that may take either form is not
    vectorised.  Returns the log of the product of forward scales, or NaN
    when a product came near the ends of the floating-point range (mass
    could be lost), so the caller falls back to log space."""
    T = epsi.shape[0]
    n = n_labels
    alpha[0, :] = 0.0
    alpha[0, 0] = 1.0
    log_scale = 0.0
    for t in range(T):
        row = alpha[t + 1]
        row[:] = 0.0
        e_row = epsi[t]
        prev = alpha[t]
        if _may_underflow(prev, low[t]):  # a·epsi may underflow: check every product
            for p in range(n_forward):
                a = prev[p]
                for y in range(n):
                    if a != 0.0 and a * e_row[p * n + y] < _TINY:
                        return np.nan
        _forward_push(prev, e_row, s_next, p_next_run, run_blocks, gather_blocks, n, row)
        scale[t] = _normalise(row)
        log_scale += np.log(scale[t])
    beta[T, :] = 1.0
    for t in range(T - 1, -1, -1):
        e_row = epsi[t]
        nb = beta[t + 1]
        if not _backward_step(e_row, nb, 1.0 / scale[t], s_next, p_next_run, run_blocks,
                              gather_blocks, n, beta[t]):
            return np.nan
    return log_scale


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _normalise(row):
    """Scale ``row`` to sum 1; returns the sum it had."""
    c = 0.0
    for v in row:
        c += v
    inv = 1.0 / c
    for q in range(row.shape[0]):
        row[q] *= inv
    return c


@njit(cache=True, nogil=True)
def _may_underflow(prev, low):
    """Whether some non-zero forward value times the smallest factor of the
    step (``low``) falls below _TINY."""
    risky = False
    for a in prev:
        risky |= a != 0.0 and a * low < _TINY
    return risky


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _forward_push(prev, factor, s_next, p_next_run, run_blocks, gather_blocks, n, out):
    """out[next(p·y)] += prev[p] · factor[p·n + y] for every forward state p
    and label y, run blocks and gather blocks in separate loops."""
    for p in run_blocks:
        a = prev[p]
        q0 = p_next_run[p]
        dst = out[q0:q0 + n]
        src = factor[p * n:(p + 1) * n]
        for y in range(n):
            dst[y] += a * src[y]
    for p in gather_blocks:
        a = prev[p]
        base = p * n
        for y in range(n):
            out[s_next[base + y]] += a * factor[base + y]


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _backward_step(factor, nxt, inv, s_next, p_next_run, run_blocks, gather_blocks, n, out):
    """out[p] = inv · Σ_y factor[p·n + y] · nxt[next(p·y)] for every forward
    state p, run blocks and gather blocks in separate loops; False when a
    value reached _HUGE (the scaled path would lose precision)."""
    for p in run_blocks:
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
    mx = 0.0
    for p in range(out.shape[0]):
        mx = max(mx, out[p])
    return mx < _HUGE


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _accumulate_up(row, p_suffix, p_order, n):
    """Add each block p·Y of ``row`` into its parent block p_suffix[p]·Y,
    longest states first (children before parents), so that a transition's
    value becomes the total over every transition it is a suffix of."""
    for i in range(p_order.shape[0] - 1, 0, -1):
        p = p_order[i]
        # slices of one row: LLVM vectorises these (indices into the same
        # array it would not)
        dst = row[p_suffix[p] * n:(p_suffix[p] + 1) * n]
        src = row[p * n:(p + 1) * n]
        for y in range(n):
            dst[y] += src[y]


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _scaled_marginals(epsi, alpha, beta, scale, s_next, p_suffix, p_order, p_next_run,
                      run_blocks, gather_blocks, n_labels, marg):
    """Transition marginals from the scaled vectors, accumulated block by
    block into the parent blocks (longest first), so that ``marg[t, s]`` =
    P(s is a suffix of y_{1:t})."""
    T, S = epsi.shape
    n = n_labels
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
        _accumulate_up(m_row, p_suffix, p_order, n)


@njit(cache=True, nogil=True)
def _scaled_sequence(pot, s_next, s_pattern, p_suffix, p_order, p_next_run, run_blocks,
                     gather_blocks, n_forward, n_labels, dynamic, block_dynamic, static_exp,
                     cum_lo, cum_hi, epsi, alpha, beta, scale, marg):
    """log Z and accumulated transition marginals on the scaled path, or NaN
    when it would not be exact.  Reads ``pot`` only for labels and dynamic
    patterns."""
    shift = _exp_transition_scores(pot, s_pattern, p_suffix, p_order, n_labels, dynamic,
                                   block_dynamic, static_exp, cum_lo, cum_hi, epsi, scale)
    if not np.isfinite(shift):
        return np.nan
    # ``scale`` holds each row's smallest epsi until the forward pass overwrites it
    log_scale = _scaled_forward_backward(epsi, scale, s_next, p_next_run, run_blocks,
                                         gather_blocks, n_labels, n_forward, alpha, beta, scale)
    if not np.isfinite(log_scale):
        return np.nan
    _scaled_marginals(epsi, alpha, beta, scale, s_next, p_suffix, p_order, p_next_run,
                      run_blocks, gather_blocks, n_labels, marg)
    return log_scale + shift


@njit(cache=True, nogil=True)
def _static_cumulative(static_exp, p_suffix, p_order, n_labels):
    """``cum[p·n + y]``: the product of the static factors of p·y and of
    its suffixes down to (not including) block ε.  When no block but ε holds
    a dynamic pattern, ``epsi[t, p·n + y] = epsi[t, y] · cum[p·n + y]``."""
    n = n_labels
    cum = np.ones(p_order.shape[0] * n)
    for i in range(1, p_order.shape[0]):
        p = p_order[i]
        q = p_suffix[p]
        for y in range(n):
            cum[p * n + y] = static_exp[p * n + y] * (cum[q * n + y] if q > 0 else 1.0)
    return cum


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _factored_sequence(pot, label_z, run_blocks, gather_blocks, s_next, p_next_run, p_label, cum,
                       c_lo, n_labels, e, low, alpha, beta, scale, g, lab_marg, taken):
    """The scaled path (Sutton & McCallum §1.4.6) when only block ε varies with t —
    every pattern longer than one label is observation-free, as in a
    first-order CRF with plain transition weights.  Each transition factor
    is then ``e[t, y] · cum[p·n + y]``: one ``exp`` per label and token, no
    per-token transition table, and state q's incoming mass is scaled by
    ``e[t, last label of q]`` once.

    Blocks whose successors form a run of states (``run_blocks``) and the
    others (``gather_blocks``) are separate loops: a loop that may take
    either form is not vectorised.  Writes ``lab_marg[t, y]`` = P(y_t = y |
    x) = Σ_{q ends in y} α̂(t+1, q)·β̂(t+1, q), and adds Σ_t α̂(t, p)·g_t(q),
    q = next(p·y), to ``taken[p·n + y]`` (g_t(q) = e[t, label of q]·
    β̂(t+1, q)): times ``cum[p·n + y]``, the expected number of times
    transition p·y is taken.  Returns log Z, or NaN (``taken`` untouched)
    when the scaled values would not be exact — the range checks of
    ``_scaled_sequence``, with ``c_lo`` the smallest ``cum_lo``."""
    T = pot.shape[0]
    n = n_labels
    P = p_next_run.shape[0]
    lo = np.exp(_MIN_EXPONENT)
    shift = 0.0
    for t in range(T):
        m = -np.inf
        for y in range(n):
            m = max(m, pot[t, label_z[y]])
        shift += m
        e_lo = 1.0
        row = e[t]
        for y in range(n):
            v = np.exp(pot[t, label_z[y]] - m)
            row[y] = v
            e_lo = min(e_lo, v)
        low[t] = e_lo * c_lo
        if not low[t] >= lo:
            return np.nan
    alpha[0, :] = 0.0
    alpha[0, 0] = 1.0
    log_scale = 0.0
    for t in range(T):
        row = alpha[t + 1]
        row[:] = 0.0
        prev = alpha[t]
        if _may_underflow(prev, low[t]):  # a product may underflow: check every one
            for q in range(P):
                a = prev[q]
                for y in range(n):
                    if a != 0.0 and a * e[t, y] * cum[q * n + y] < _TINY:
                        return np.nan
        _forward_push(prev, cum, s_next, p_next_run, run_blocks, gather_blocks, n, row)
        for q in range(1, P):  # every state but ε ends in its label's factor
            row[q] *= e[t, p_label[q]]
        scale[t] = _normalise(row)
        log_scale += np.log(scale[t])
    beta[T, :] = 1.0
    for t in range(T - 1, -1, -1):
        nb = beta[t + 1]
        gt = g[t]
        gt[0] = 0.0
        for q in range(1, P):
            gt[q] = e[t, p_label[q]] * nb[q]
        if not _backward_step(cum, gt, 1.0 / scale[t], s_next, p_next_run, run_blocks,
                              gather_blocks, n, beta[t]):
            return np.nan
    for t in range(T):
        inv = 1.0 / scale[t]
        gt = g[t]
        for p in run_blocks:  # no test for a = 0: a branch here stops vectorisation
            a = alpha[t, p] * inv
            q0 = p_next_run[p]
            dst = taken[p * n:(p + 1) * n]
            src = gt[q0:q0 + n]
            for y in range(n):
                dst[y] += a * src[y]
        for p in gather_blocks:
            a = alpha[t, p] * inv
            base = p * n
            for y in range(n):
                taken[base + y] += a * gt[s_next[base + y]]
        m_row = lab_marg[t]
        m_row[:] = 0.0
        na = alpha[t + 1]
        nb = beta[t + 1]
        for q in range(1, P):
            m_row[p_label[q]] += na[q] * nb[q]
    return log_scale + shift


@njit(cache=True, nogil=True)
def _log_sequence(pot, s_prev, s_next, s_pattern, s_parent, s_order, n_forward, n_labels, psi,
                  alpha, beta, tmp, acc, back, marg):
    """log Z and accumulated transition marginals in log space (any range)."""
    T = psi.shape[0]
    _transition_scores(pot, s_pattern, s_parent, s_order, psi)
    _forward(psi, s_prev, s_next, n_forward, False, alpha, back, tmp, acc)
    _backward(psi, s_next, n_labels, n_forward, beta)
    log_z = _logsumexp_row(alpha[T])
    _log_marginals(psi, alpha, beta, log_z, s_prev, s_next, s_parent, s_order, marg)
    return log_z


@njit(cache=True, nogil=True)
def _logsumexp_row(row):
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
def _viterbi(pot, s_prev, s_label, s_next, s_pattern, s_parent, s_order, n_forward,
             psi, alpha, back, tmp, acc, out):
    """Max-product forward (the same kernel, max semiring) and trace-back."""
    T = pot.shape[0]
    _transition_scores(pot, s_pattern, s_parent, s_order, psi)
    _forward(psi, s_prev, s_next, n_forward, True, alpha, back, tmp, acc)
    q = 0
    best = -np.inf
    for p in range(n_forward):
        if alpha[T, p] > best:
            best = alpha[T, p]
            q = p
    for t in range(T - 1, -1, -1):
        s = back[t, q]
        out[t] = s_label[s]
        q = s_prev[s]
    return best


# --------------------------------------------------------------------------
# potential-table API (one sequence)


class Workspace:
    """Scratch arrays for sequences of up to T positions (reusable)."""

    def __init__(self, st: ChainStructure, T: int):
        S, P = st.n_backward, st.n_forward
        self.psi = np.empty((T, S))
        self.alpha = np.empty((T + 1, P))
        self.beta = np.empty((T + 1, P))
        self.tmp = np.empty(S)
        self.acc = np.empty(P)
        self.back = np.zeros((T, P), dtype=np.int64)
        self.scale = np.empty(T)
        self.epsi = np.empty((T, S))
        self.marg = np.empty((T, S))


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
    """log Z of one sequence; ``ws.marg[t, s]`` receives the accumulated
    transition marginals (the scaled path, or log space when it is not
    exact).  ``ws`` may be reused across sequences of up to its length."""
    T = pot.shape[0]
    n_z = len(st.patterns)
    dynamic = np.ones(n_z, np.bool_)  # a bare potential table: every pattern varies
    static_exp, block_dynamic, cum_lo, cum_hi = _static_tables(
        np.zeros(n_z), st.s_pattern, dynamic, st.p_suffix, st.p_order, st.n_labels)
    log_z = _scaled_sequence(pot, st.s_next, st.s_pattern, st.p_suffix, st.p_order,
                             st.p_next_run, *st.blocks(), st.n_forward, st.n_labels, dynamic,
                             block_dynamic, static_exp, cum_lo, cum_hi, ws.epsi[:T],
                             ws.alpha[:T + 1], ws.beta[:T + 1], ws.scale[:T], ws.marg[:T])
    if not np.isfinite(log_z):
        log_z = _log_sequence(pot, st.s_prev, st.s_next, st.s_pattern, st.s_parent, st.s_order,
                              st.n_forward, st.n_labels, ws.psi[:T], ws.alpha[:T + 1],
                              ws.beta[:T + 1], ws.tmp, ws.acc, ws.back[:T], ws.marg[:T])
    return float(log_z)


def viterbi(st: ChainStructure, pot: np.ndarray) -> tuple[np.ndarray, float]:
    """The highest-scoring labelling and its score."""
    pot = np.ascontiguousarray(pot, dtype=np.float64)
    T = pot.shape[0]
    ws = Workspace(st, T)
    out = np.empty(T, dtype=np.int64)
    best = _viterbi(pot, *st.tables(), ws.psi, ws.alpha, ws.back, ws.tmp, ws.acc, out)
    return out, float(best)


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
# (``row_dense[r]`` >= 0): scored and counted as one vector over the labels
# (``fgl.program.ChainProgram._dense_rows``).


@njit(cache=True, nogil=True)
def _longest(seq_ptr, i0, i1):
    """The longest of sequences i0..i1 (at least 1): the size of a chunk's
    scratch arrays."""
    max_t = 1
    for i in range(i0, i1):
        max_t = max(max_t, seq_ptr[i + 1] - seq_ptr[i])
    return max_t


@njit(cache=True, nogil=True)
def _static_potentials(const_feats, feat_pattern, w, n_patterns):
    out = np.zeros(n_patterns)
    for k in const_feats:
        out[feat_pattern[k]] += w[k]
    return out


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _potentials(a, T, tok_ptr, tok_row, tok_val, row_ptr, feat_pattern, w, static, fill,
                row_dense, w_dense, label_z, lab, pot):
    """pot[t, z] = static[z] + Σ over per-token attributes r at t of value ·
    Σ_{k in row r, pattern k = z} w[k]: the feature scoring of one sequence,
    for the patterns in ``fill`` (every pattern a per-token row can touch must
    be among them).  A dense row d = ``row_dense[r]`` >= 0 adds its weight
    vector ``w_dense[d]`` over the labels (pattern ``label_z[y]``) in one
    vector operation (``lab`` is scratch of n_labels)."""
    n = label_z.shape[0]
    for t in range(T):
        row = pot[t]
        for z in fill:
            row[z] = static[z]
        lab[:] = 0.0
        for j in range(tok_ptr[a + t], tok_ptr[a + t + 1]):
            r = tok_row[j]
            v = tok_val[j]
            d = row_dense[r]
            if d >= 0:
                src = w_dense[d]
                for y in range(n):
                    lab[y] += v * src[y]
            else:
                for k in range(row_ptr[r], row_ptr[r + 1]):
                    row[feat_pattern[k]] += v * w[k]
        for y in range(n):
            row[label_z[y]] += lab[y]


@njit(cache=True, nogil=True, fastmath=_SAFE_FAST, error_model="numpy")
def _chunk_expectations(i0, i1, seq_ptr, tok_ptr, tok_row, tok_val, row_ptr, feat_pattern,
                        feat_s, const_feats, dynamic, row_dense, w_dense, w, s_prev, s_next,
                        s_pattern, s_parent, s_order, p_suffix, p_order, p_next_run, p_label,
                        n_forward, n_labels, grad, grad_dense):
    """Σ log Z over sequences i0..i1 and, into ``grad``, the expected feature
    counts E[f_k] = Σ_t value · P(pattern of k ends at t | x); a dense row's
    counts go to ``grad_dense[d, y]`` instead.  ``dynamic`` must hold every
    single-label pattern."""
    max_t = _longest(seq_ptr, i0, i1)
    S = s_prev.shape[0]
    n = n_labels
    n_patterns = dynamic.shape[0]
    static = _static_potentials(const_feats, feat_pattern, w, n_patterns)
    dynamic_patterns = np.flatnonzero(dynamic)
    static_patterns = np.flatnonzero(~dynamic)
    static_exp, block_dynamic, cum_lo, cum_hi = _static_tables(
        static, s_pattern, dynamic, p_suffix, p_order, n_labels)
    cum = _static_cumulative(static_exp, p_suffix, p_order, n_labels)
    c_lo = min(1.0, cum_lo[1:].min()) if n_forward > 1 else 1.0
    c_hi = max(1.0, cum_hi[1:].max()) if n_forward > 1 else 1.0
    factored = not block_dynamic[1:].any() and c_hi <= np.exp(_MAX_EXPONENT)
    label_z = s_pattern[:n].copy()
    run_blocks = np.flatnonzero(p_next_run >= 0)
    gather_blocks = np.flatnonzero(p_next_run < 0)
    e_lab = np.empty((max_t, n))
    lab = np.empty(n)
    lab_marg = np.empty((max_t, n))
    g = np.empty((max_t, n_forward))
    own_sum = np.zeros(S)  # the factored path's transition counts (then up the tree)
    pot = np.empty((max_t, n_patterns))
    psi = np.empty((max_t, S))
    epsi = np.empty((max_t, S))
    marg = np.empty((max_t, S))
    alpha = np.empty((max_t + 1, n_forward))
    beta = np.empty((max_t + 1, n_forward))
    back = np.zeros((max_t, n_forward), dtype=np.int64)
    scale = np.empty(max_t)
    low = np.empty(max_t)
    tmp = np.empty(S)
    acc = np.empty(n_forward)
    marg_sum = np.zeros(S)
    total = 0.0
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0:
            continue
        _potentials(a, T, tok_ptr, tok_row, tok_val, row_ptr, feat_pattern, w, static,
                    dynamic_patterns, row_dense, w_dense, label_z, lab, pot)
        if factored:
            log_z = _factored_sequence(pot[:T], label_z, run_blocks, gather_blocks, s_next,
                                       p_next_run, p_label, cum, c_lo, n, e_lab[:T], low[:T],
                                       alpha[:T + 1], beta[:T + 1], scale[:T], g[:T],
                                       lab_marg[:T], own_sum)
        else:
            log_z = _scaled_sequence(pot[:T], s_next, s_pattern, p_suffix, p_order, p_next_run,
                                     run_blocks, gather_blocks, n_forward, n_labels, dynamic,
                                     block_dynamic, static_exp, cum_lo, cum_hi, epsi[:T],
                                     alpha[:T + 1], beta[:T + 1], scale[:T], marg[:T])
        fell_back = not np.isfinite(log_z)
        if fell_back:  # the log-space path reads every pattern's potential
            for t in range(T):
                for z in static_patterns:
                    pot[t, z] = static[z]
            log_z = _log_sequence(pot[:T], s_prev, s_next, s_pattern, s_parent, s_order,
                                  n_forward, n_labels, psi[:T], alpha[:T + 1], beta[:T + 1], tmp,
                                  acc, back[:T], marg[:T])
        total += log_z
        from_labels = factored and not fell_back
        for t in range(T):
            if from_labels:  # every per-token feature has a single-label pattern
                m_row = lab_marg[t]
            else:
                m_row = marg[t]
                for s in range(S):
                    marg_sum[s] += m_row[s]
            labels = m_row[:n]  # P(y_t = y): block ε, accumulated
            for j in range(tok_ptr[a + t], tok_ptr[a + t + 1]):
                r = tok_row[j]
                v = tok_val[j]
                d = row_dense[r]
                if d >= 0:
                    dst = grad_dense[d]
                    for y in range(n):
                        dst[y] += v * labels[y]
                else:
                    for k in range(row_ptr[r], row_ptr[r + 1]):
                        grad[k] += v * m_row[feat_s[k]]
    if factored:  # (cum is finite only then)
        own_sum *= cum
    _accumulate_up(own_sum, p_suffix, p_order, n)
    for k in const_feats:
        grad[k] += marg_sum[feat_s[k]] + own_sum[feat_s[k]]
    return total


@njit(cache=True, nogil=True)
def _chunk_viterbi(i0, i1, seq_ptr, tok_ptr, tok_row, tok_val, row_ptr, feat_pattern,
                   const_feats, row_dense, w_dense, w, s_prev, s_label, s_next, s_pattern,
                   s_parent, s_order, n_forward, n_patterns, out):
    """MAP labelling of sequences i0..i1 into ``out`` (flat over tokens)."""
    max_t = _longest(seq_ptr, i0, i1)
    S = s_prev.shape[0]
    static = _static_potentials(const_feats, feat_pattern, w, n_patterns)
    all_patterns = np.arange(n_patterns)
    label_z = s_pattern[:w_dense.shape[1]].copy()
    lab = np.empty(label_z.shape[0])
    pot = np.empty((max_t, n_patterns))
    psi = np.empty((max_t, S))
    alpha = np.empty((max_t + 1, n_forward))
    back = np.zeros((max_t, n_forward), dtype=np.int64)
    tmp = np.empty(S)
    acc = np.empty(n_forward)
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0:
            continue
        _potentials(a, T, tok_ptr, tok_row, tok_val, row_ptr, feat_pattern, w, static,
                    all_patterns, row_dense, w_dense, label_z, lab, pot)
        _viterbi(pot[:T], s_prev, s_label, s_next, s_pattern, s_parent, s_order, n_forward,
                 psi[:T], alpha[:T + 1], back[:T], tmp, acc, out[a:a + T])


@njit(cache=True, nogil=True)
def _gold_transitions(seq_ptr, gold, s_next, n_labels, out):
    """The transition s_t = p_{t-1}·y_t the gold labelling takes at each token."""
    for i in range(seq_ptr.shape[0] - 1):
        q = 0
        for t in range(seq_ptr[i], seq_ptr[i + 1]):
            s = q * n_labels + gold[t]
            out[t] = s
            q = s_next[s]


@njit(cache=True, nogil=True)
def _empirical_counts(gold_s, tok_ptr, tok_row, tok_val, row_ptr, feat_s, const_feats,
                      s_parent, counts):
    """Feature counts of the gold labelling: feature k fires at t when its
    pattern is a suffix of the gold transition, i.e. an ancestor of s_t."""
    on = np.zeros(s_parent.shape[0], dtype=np.bool_)
    for t in range(gold_s.shape[0]):
        s = gold_s[t]
        while s >= 0:
            on[s] = True
            s = s_parent[s]
        for j in range(tok_ptr[t], tok_ptr[t + 1]):
            r = tok_row[j]
            for k in range(row_ptr[r], row_ptr[r + 1]):
                if on[feat_s[k]]:
                    counts[k] += tok_val[j]
        for k in const_feats:
            if on[feat_s[k]]:
                counts[k] += 1.0
        s = gold_s[t]
        while s >= 0:
            on[s] = False
            s = s_parent[s]
