"""A factor graph program's tables from its weights, and its counts from
beliefs: the scatter and gather over each factor's attribute rows
(Sutton & McCallum eq. 1.54), the gold configurations, and clamping to
observed labels.  Compiled kernels shared by the per-instance path of
``fgl.engines.graph.factor_graph_program`` and the blocks of
``fgl.engines.graph.trw_training``."""
from __future__ import annotations

import numpy as np

from fgl.jit import njit


@njit(cache=True, nogil=True)
def factor_tables(f0, f1, tab_ptr, fac_ptr, fac_row, fac_val, row_ptr, feat_config, dense, w,
                  rep, out):
    """θ_f(x) = Σ over the factor's attributes of value · w[k] for the
    feature k with configuration x (Sutton & McCallum eq. 1.54).  A
    ``dense`` row (configurations 0, 1, ... in order: a template without
    observations weights its whole table, as a chain's transitions do) is
    added as one block, which vectorises; the same sums, in the same order.
    ``rep[f - f0]``: the factor whose table f's is (``tied_tables``); only
    those that are their own are written (identity: every one)."""
    # feature_expectations walks the rows alike to gather beliefs; one loop for
    # scatter and gather would branch in the innermost loop
    for f in range(f0, f1):
        if rep[f - f0] != f - f0:
            continue
        base = tab_ptr[f - f0]
        for i in range(base, tab_ptr[f - f0 + 1]):
            out[i] = 0.0
        for j in range(fac_ptr[f], fac_ptr[f + 1]):
            r = fac_row[j]
            v = fac_val[j]
            k0 = row_ptr[r]
            if dense[r]:
                for i in range(row_ptr[r + 1] - k0):
                    out[base + i] += v * w[k0 + i]
                continue
            for k in range(k0, row_ptr[r + 1]):
                out[base + feat_config[k]] += v * w[k]


@njit(cache=True, nogil=True)
def feature_expectations(f0, f1, tab_ptr, fac_ptr, fac_row, fac_val, row_ptr, feat_config,
                          dense, beliefs, rep, grad):
    """E[f_k] = Σ_factors value · b_f(configuration of k) (a ``dense`` row
    as one block, as in ``factor_tables``).  Factors tied to another
    (``rep[f - f0]`` not f - f0: the same rows and values) have their
    beliefs summed into that one's table (``trw_beliefs.beliefs``), which
    is read once for all of them."""
    # the walk of factor_tables, gathering where it scatters (kept apart: one
    # loop for both would branch in the innermost loop)
    for f in range(f0, f1):
        if rep[f - f0] != f - f0:
            continue
        base = tab_ptr[f - f0]
        for j in range(fac_ptr[f], fac_ptr[f + 1]):
            r = fac_row[j]
            v = fac_val[j]
            k0 = row_ptr[r]
            if dense[r]:
                for i in range(row_ptr[r + 1] - k0):
                    grad[k0 + i] += v * beliefs[base + i]
                continue
            for k in range(k0, row_ptr[r + 1]):
                grad[k] += v * beliefs[base + feat_config[k]]


@njit(cache=True, nogil=True)
def dense_rows(row_ptr, feat_config):
    """Per attribute row, whether its features weight configurations 0, 1,
    ... in order."""
    out = np.zeros(row_ptr.shape[0] - 1, dtype=np.bool_)
    for r in range(out.shape[0]):
        ok = True
        for k in range(row_ptr[r], row_ptr[r + 1]):
            ok = ok and feat_config[k] == k - row_ptr[r]
        out[r] = ok
    return out


@njit(cache=True, nogil=True)
def gold_index(gold, f_ptr, f_var, e_stride, out):
    """Each factor's gold configuration (flat index into its table)."""
    for f in range(f_ptr.shape[0] - 1):
        x = 0
        for e in range(f_ptr[f], f_ptr[f + 1]):
            x += gold[f_var[e]] * e_stride[e]
        out[f] = x


@njit(cache=True, nogil=True)
def clamp(card, f_ptr, f_var, tab_ptr, e_stride, gold, table):
    """Set θ_f(x) = -inf wherever x disagrees with an observed variable."""
    for f in range(tab_ptr.shape[0] - 1):
        for i in range(tab_ptr[f + 1] - tab_ptr[f]):
            for e in range(f_ptr[f], f_ptr[f + 1]):
                g = gold[f_var[e]]
                if g >= 0 and (i // e_stride[e]) % card[f_var[e]] != g:
                    table[tab_ptr[f] + i] = -np.inf
                    break


def tied_tables(tab_ptr: np.ndarray, f_ptr: np.ndarray, fac_ptr: np.ndarray,
                fac_row: np.ndarray, fac_val: np.ndarray) -> np.ndarray:
    """Per factor of one instance (``fac_ptr`` its rows, from its first
    factor), the first factor of the instance with the same arity, table
    size, attribute rows and values — whose θ table is then its own, entry
    for entry (every chain edge's transitions, when they read no
    observation) — or itself.  Factors of one variable stay their own
    (their θ joins their variable's belief)."""
    arity, size = np.diff(f_ptr), np.diff(tab_ptr)
    rep = np.arange(len(arity), dtype=np.int64)
    first: dict = {}
    for f in np.flatnonzero(arity >= 2):
        a, b = fac_ptr[f], fac_ptr[f + 1]
        key = (int(arity[f]), int(size[f]), fac_row[a:b].tobytes(), fac_val[a:b].tobytes())
        rep[f] = first.setdefault(key, int(f))
    return rep
