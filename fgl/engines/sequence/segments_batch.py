"""Batch kernels of the semi-Markov engine over encoded span features
(training and tagging; Cuong et al. 2014 §2).

Span (u, d) of the sequence that starts at token a is unit (a + u)·m + d - 1
of the encoded data, m its units per token (``span_lattice.Units``).  Features are
a chain program's table (``chain.ChainFeatures``): constant rows (``bias``,
active on every span) are scored once per call, and a pattern fed only by
them is static; frequent single-label rows are dense.  Each sequence takes
the factored or the general scaled path of ``fgl.engines.sequence.segments``
where it is exact, else the log-space span lattice
(``fgl.engines.sequence.span_lattice``), which also decodes and gives the gold
counts (``span_lattice.gold_counts``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.engines.sequence import chain, span_lattice
from fgl.engines.sequence.scaling import (
    MAX_EXPONENT,
    MIN_EXPONENT,
    SAFE_FAST,
    cum_range,
    static_cumulative,
    static_tables,
)
from fgl.engines.sequence.segments import factored_sequence, scaled_sequence, scaled_workspace
from fgl.engines.sequence.structure import StateTables
from fgl.jit import njit


class SpanLimits(NamedTuple):
    """A segment program's spans over its encoded data, as one argument:
    ``units_per_token`` (m: span (u, d) of the sequence that starts at token
    a is unit (a + u)·m + d - 1), ``longest`` (L: the most tokens a span
    holds), ``max_len`` (label y's limit, labels numbered by non-increasing
    limit) and ``distinct`` (no two adjacent segments share a label)."""

    units_per_token: int
    longest: int
    max_len: np.ndarray
    distinct: bool


@njit(cache=True, nogil=True)
def potentials(a, T, limits: SpanLimits, units, features, tables, w, static, fill, w_dense, lab,
               pot):
    """pot[u, d-1, z] for the spans of the sequence of T tokens from token
    ``a`` (unit (a + u)·m + d - 1, d <= L: ``limits``' units per token and
    longest span) and the patterns in ``fill``: ``chain.potentials`` over
    the sequence's units at once when they are rows of ``pot`` (``m`` = L)
    and few lie past the end, else over each start's run of units."""
    m, L = limits.units_per_token, limits.longest
    if m == L and T >= L:
        chain.potentials(a * m, T * m, units, features, tables, w, static, fill, w_dense, lab,
                         pot[:T].reshape((T * m, pot.shape[2])))
        return
    for u in range(T):
        chain.potentials((a + u) * m, min(L, T - u), units, features, tables, w, static, fill,
                         w_dense, lab, pot[u])


@njit(cache=True, nogil=True)
def distinct_cumulative(cum, tables):
    """``cum`` with 0 for every transition p·y whose y is p's last label."""
    out = cum.copy()
    n = tables.n_labels
    p_label = tables.p_label
    for p in range(1, tables.n_forward):
        out[p * n + p_label[p]] = 0.0
    return out


# the paths of ``batch_expectations``, each compiled on its own when first taken (as in
# ``chain.batch_expectations``): a first run compiles only the path its model takes
_FACTORED, _SCALED, _LOG_SPACE = 0, 1, 2


def batch_expectations(i0: int, i1: int, limits: SpanLimits, units: span_lattice.Units,
                       features: chain.ChainFeatures, tables: StateTables, w: np.ndarray,
                       w_dense: np.ndarray, grad: np.ndarray, grad_dense: np.ndarray) -> float:
    """Σ log Z over sequences i0..i1 and, into ``grad``, the expected feature
    counts (a dense row's into ``grad_dense[d, y]``), spans as ``limits``
    says.  Every sequence takes the factored path when every longer pattern
    is static (``_factored_path``), else the general scaled path, and the
    span kernel where these would not be exact."""
    redo = np.zeros(max(i1 - i0, 0), dtype=np.bool_)
    args = (i0, i1, limits, units, features, tables, w, w_dense, grad, grad_dense, redo)
    fast = _expectations_factored if _factored_path(features, tables, w, limits.distinct) \
        else _expectations_scaled
    total = fast(*args)
    if redo.any():
        total += _expectations_log_space(*args)
    return total


@njit(cache=True, nogil=True)
def _factored_path(features, tables, w, distinct):
    """Whether ``batch_expectations`` takes the factored path: no block of
    the static potentials varies and their range is safe."""
    sc = static_tables(chain.static_potentials(features, tables, w), features.dynamic, tables)
    c_lo, c_hi = cum_range(sc)
    for p in range(1, tables.n_forward):   # (loops: numpy's any, min and max compile more)
        if sc.block_dynamic[p]:
            return False
    return c_hi <= np.exp(MAX_EXPONENT) and c_lo >= np.exp(MIN_EXPONENT)


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _expectations_factored(i0, i1, limits, units, features, tables, w, w_dense, grad, grad_dense,
                           redo):
    return _expectations(i0, i1, limits, units, features, tables, w, w_dense, grad, grad_dense,
                         redo, _FACTORED)


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _expectations_scaled(i0, i1, limits, units, features, tables, w, w_dense, grad, grad_dense,
                         redo):
    return _expectations(i0, i1, limits, units, features, tables, w, w_dense, grad, grad_dense,
                         redo, _SCALED)


@njit(cache=True, nogil=True, fastmath=SAFE_FAST, error_model="numpy")
def _expectations_log_space(i0, i1, limits, units, features, tables, w, w_dense, grad, grad_dense,
                            redo):
    return _expectations(i0, i1, limits, units, features, tables, w, w_dense, grad, grad_dense,
                         redo, _LOG_SPACE)


@njit(nogil=True, fastmath=SAFE_FAST, error_model="numpy", inline="always")
def _expectations(i0, i1, limits: SpanLimits, units, features, tables, w, w_dense, grad,
                  grad_dense, redo, path):
    """``batch_expectations`` on one path (a constant: inlined, each compiled
    variant keeps only its own branch).  The fast paths mark in ``redo``
    (indexed from i0) the sequences they cannot scale and leave them out;
    the log-space path takes only those."""
    # fields unpacked once, here: a bundle field read in a loop costs reference counting
    m, L, max_len, distinct = (limits.units_per_token, limits.longest, limits.max_len,
                               limits.distinct)
    seq_ptr = units.seq_ptr
    unit_ptr = units.unit_ptr
    unit_row = units.unit_row
    unit_val = units.unit_val
    row_ptr = features.row_ptr
    feat_s = features.feat_s
    row_dense = features.row_dense
    dynamic = features.dynamic
    n = tables.n_labels
    P = tables.n_forward
    S = P * n
    max_t = span_lattice.longest(seq_ptr, i0, i1)
    Lm = min(L, max_t)
    within = SpanLimits(m, Lm, max_len, distinct)
    cnt = span_lattice.label_counts(max_len, Lm)
    static = chain.static_potentials(features, tables, w)
    dynamic_patterns = features.dynamic_patterns
    static_patterns = features.static_patterns
    sc = static_tables(static, dynamic, tables)
    cum = static_cumulative(sc.static_exp, tables)
    if distinct:
        cum = distinct_cumulative(cum, tables)
    c_lo, c_hi = cum_range(sc)
    pot = np.empty((max_t, Lm, tables.n_patterns))
    work = span_lattice.workspace(max_t, Lm, tables)
    ws = scaled_workspace(max_t, Lm, n, P)
    span_lab = ws.lab.reshape((max_t * Lm, n))
    span_marg = work.marg.reshape((max_t * Lm, S))
    lab = np.empty(n)
    marg_sum = np.zeros(S)
    own_sum = np.zeros(S)  # the factored path's transition counts (then up the tree)
    total = 0.0
    # the sequence walk all batch kernels open with: the per-sequence work differs,
    # and sharing the walk would take that work as a callback
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0 or (path == _LOG_SPACE and not redo[i - i0]):
            continue
        potentials(a, T, within, units, features, tables, w, static, dynamic_patterns, w_dense,
                   lab, pot)
        if path == _FACTORED:
            log_z = factored_sequence(pot, T, tables, cum, c_lo, c_hi, cnt, work, ws, own_sum)
        elif path == _SCALED:
            log_z = scaled_sequence(pot, T, tables, sc, cnt, distinct, work, ws)
        else:  # the span kernel reads every pattern's potential
            for u in range(T):
                for dm in range(min(Lm, T - u)):
                    for z in static_patterns:
                        pot[u, dm, z] = static[z]
            log_z = span_lattice.sequence_marginals(pot, T, tables, max_len, work, distinct)
        if path != _LOG_SPACE and not np.isfinite(log_z):
            redo[i - i0] = True   # (the factored path added nothing to own_sum for it)
            continue
        total += log_z
        # row u·Lm + d - 1: span (u, d)'s label marginals (every per-span feature has a
        # single-label pattern), or its transition marginals; P(span labelled y) at [., y]
        M = span_lab if path == _FACTORED else span_marg
        for u in range(T):
            for dm in range(min(Lm, T - u)):
                k = u * Lm + dm
                if path != _FACTORED:
                    for s in range(S):
                        marg_sum[s] += M[k, s]
                unit = (a + u) * m + dm
                # the walk of chain.potentials(), gathering where it scatters
                for j in range(unit_ptr[unit], unit_ptr[unit + 1]):
                    r = unit_row[j]
                    v = unit_val[j]
                    d = row_dense[r]
                    if d >= 0:
                        for y in range(n):
                            grad_dense[d, y] += v * M[k, y]
                    elif d == chain.FULL_ROW:
                        dst = grad[row_ptr[r]:row_ptr[r] + n]
                        for y in range(n):
                            dst[y] += v * M[k, y]
                    else:
                        for f in range(row_ptr[r], row_ptr[r + 1]):
                            grad[f] += v * M[k, feat_s[f]]
    if path == _FACTORED:
        own_sum *= cum
    span_lattice.accumulate_up(own_sum, tables.p_suffix, tables.p_order, n)
    for k in features.const_feats:
        grad[k] += marg_sum[feat_s[k]] + own_sum[feat_s[k]]
    return total


@njit(cache=True, nogil=True)
def batch_viterbi(i0, i1, limits: SpanLimits, units, features, tables, w, w_dense, labels,
                  starts):
    """Best segmentation of sequences i0..i1 (the span kernel, max
    semiring; spans as ``limits`` says): per token its segment's label into
    ``labels``, and 1 where a segment starts (else 0) into ``starts`` (both
    flat over tokens)."""
    m, L, max_len, distinct = (limits.units_per_token, limits.longest, limits.max_len,
                               limits.distinct)
    seq_ptr = units.seq_ptr
    max_t = span_lattice.longest(seq_ptr, i0, i1)
    Lm = min(L, max_t)
    within = SpanLimits(m, Lm, max_len, distinct)
    static = chain.static_potentials(features, tables, w)
    all_patterns = np.arange(tables.n_patterns)
    lab = np.empty(tables.n_labels)
    pot = np.empty((max_t, Lm, tables.n_patterns))
    work = span_lattice.workspace(max_t, Lm, tables)
    # the sequence walk all batch kernels open with: the per-sequence work differs,
    # and sharing the walk would take that work as a callback
    for i in range(i0, i1):
        a = seq_ptr[i]
        T = seq_ptr[i + 1] - a
        if T == 0:
            continue
        potentials(a, T, within, units, features, tables, w, static, all_patterns, w_dense, lab,
                   pot)
        span_lattice.viterbi(pot, T, tables, max_len, work, labels[a:a + T], starts[a:a + T],
                             distinct)
