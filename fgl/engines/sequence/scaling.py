"""The scaled sum-product path's shared pieces (Sutton & McCallum §1.4.6), used
by the chain engine (``fgl.engines.sequence.chain``) and the semi-Markov one
(``fgl.engines.sequence.segments``): the range checks that decide when a
scaled vector can be trusted, the position-independent ("static") potential
tables, and the fill of one position's forward-state blocks from its label
exponentials.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.jit import njit

# The scaled path is trusted only while every non-zero product stays inside
# [TINY, HUGE] and every transition's exp(Ψ - shift) inside
# [exp(MIN_EXPONENT), exp(MAX_EXPONENT)]; otherwise the span kernel
# recomputes the sequence in log space.
TINY = 1e-250
HUGE = 1e250
MIN_EXPONENT = -600.0
MAX_EXPONENT = 60.0
# floating-point reassociation lets LLVM vectorise the scaled path's sums and
# products; no flag that assumes away NaN or infinity (the checks need them).
# The hot kernels also use numpy's error model: a division by zero gives inf
# (which the range checks catch) instead of a Python exception check per
# division.
SAFE_FAST = {"reassoc", "contract", "nsz", "arcp"}


class ScaledTables(NamedTuple):
    """What the scaled path needs of the position-independent potentials
    (``static_tables``)."""

    dynamic: np.ndarray        # [Z] the pattern's potential varies with t
    block_dynamic: np.ndarray  # [P] block p·Y holds a dynamic pattern
    static_exp: np.ndarray     # [S] exp of the own static potential (1: no pattern)
    cum_lo: np.ndarray         # [P] lower bound of a static block relative to block ε
    cum_hi: np.ndarray         # [P] upper bound


@njit(cache=True, nogil=True)
def static_tables(static, dynamic, tables):
    """The ``ScaledTables`` of static potentials ``static[z]``, once per call
    over many sequences: each transition's exp of its own static potential,
    which blocks hold a dynamic pattern, and bounds on a static block's
    values relative to block ε (the products of its static factors along
    the suffix chain)."""
    n = tables.n_labels
    P = tables.n_forward
    s_pattern = tables.s_pattern
    p_order = tables.p_order
    p_suffix = tables.p_suffix
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
        lo = cum_lo[q] * f_lo
        hi = cum_hi[q] * f_hi
        # 0·inf (static potentials beyond ±709 on one suffix chain) bounds
        # nothing: 0 and inf send the sequence to the span kernel
        cum_lo[p] = lo if lo == lo else 0.0
        cum_hi[p] = hi if hi == hi else np.inf
    return ScaledTables(dynamic, block_dynamic, static_exp, cum_lo, cum_hi)


@njit(cache=True, nogil=True, inline="always")
def cum_range(sc):
    """The bounds of every static block relative to block ε and 1: (the
    least ``sc.cum_lo``, the largest ``sc.cum_hi``), by a loop (numpy's
    ``min``/``max`` compile their every array case on a first run)."""
    lo = hi = 1.0
    for p in range(1, sc.cum_lo.shape[0]):
        if sc.cum_lo[p] < lo:
            lo = sc.cum_lo[p]
        if sc.cum_hi[p] > hi:
            hi = sc.cum_hi[p]
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def label_max(z_row, label_z, c):
    """The largest potential of labels 0..c-1 (-inf when c = 0)."""
    m = -np.inf
    for y in range(c):
        m = max(m, z_row[label_z[y]])
    return m


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy", inline="always")
def label_exps(z_row, label_z, c, row):
    """``row[y] = exp(z_row[label_z[y]] - m)`` for the labels y < c, m the
    largest of their potentials; returns m and the smallest ``row[y]``."""
    m = label_max(z_row, label_z, c)
    e_lo = 1.0
    for y in range(c):
        e = np.exp(z_row[label_z[y]] - m)
        row[y] = e
        e_lo = min(e_lo, e)
    return m, e_lo


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy", inline="always")
def extend_blocks(row, z_row, c, e_lo, p_order, p_suffix, s_pattern, block_dynamic, dynamic,
                  static_exp, cum_lo, cum_hi):
    """Fill the forward-state blocks of one position's ``row`` (block ε,
    ``row[:c]``, already holding the label exponentials whose smallest is
    ``e_lo``) for the labels y < c: each block is its parent block times the
    exp of its own pattern potentials (``z_row``) where they vary, else
    ``static_exp``.  Returns the smallest and largest value written (for a
    static block, the bounds ``cum_lo``/``cum_hi``: exact enough to be safe).
    The tables are the caller's unpacked ``StateTables`` and ``ScaledTables``
    fields (inlined into a loop over positions, a bundle's field reads would
    each cost reference counting): P forward states (``p_order``), n labels
    (``s_pattern`` holds P·n)."""
    P = p_order.shape[0]
    n = s_pattern.shape[0] // P
    mn = e_lo
    mx = 1.0
    for i in range(1, P):
        p = p_order[i]
        base = p * n
        par = p_suffix[p] * n
        if block_dynamic[p]:
            for y in range(c):
                z = s_pattern[base + y]
                f = np.exp(z_row[z]) if z >= 0 and dynamic[z] else static_exp[base + y]
                e = row[par + y] * f
                row[base + y] = e
                mn = min(mn, e)
                mx = max(mx, e)
        else:
            dst = row[base:base + c]
            src = row[par:par + c]
            f = static_exp[base:base + c]
            for y in range(c):
                dst[y] = src[y] * f[y]
            mn = min(mn, e_lo * cum_lo[p])
            mx = max(mx, cum_hi[p])
    return mn, mx


@njit(cache=True, nogil=True)
def static_cumulative(static_exp, tables):
    """``cum[p·n + y]``: the product of the static factors of p·y and of
    its suffixes down to (not including) block ε.  When no block but ε holds
    a dynamic pattern, ``epsi[t, p·n + y] = epsi[t, y] · cum[p·n + y]``."""
    n = tables.n_labels
    p_order = tables.p_order
    p_suffix = tables.p_suffix
    cum = np.ones(p_order.shape[0] * n)
    for i in range(1, p_order.shape[0]):
        p = p_order[i]
        q = p_suffix[p]
        for y in range(n):
            cum[p * n + y] = static_exp[p * n + y] * (cum[q * n + y] if q > 0 else 1.0)
    return cum
