"""The potentials of a tree-reweighted BP run (``fgl.engines.graph.trw``):
θ, ρ, and the scaled tables ψ_f = exp(θ_f / ρ_f - max) that the
probability-domain kernels of ``fgl.engines.graph.bp_scaled`` read
(Wainwright, Jaakkola & Willsky 2005 §5.2: the messages take θ_f / ρ_f)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.engines.graph import bp_scaled
from fgl.engines.graph.factor_graph import FactorGraph
from fgl.jit import njit


class ReweightedPotentials(NamedTuple):
    """The potentials of one TRW run, as one argument of its kernels
    (θ_f / ρ_f is taken where it is read, from θ and ρ: a table of it per
    run cost as much as the ψ tables)."""

    log_pot: np.ndarray   # θ, flat (tab_ptr layout; a tied factor's entries unused)
    rho: np.ndarray       # [F] appearance probabilities
    psi: np.ndarray       # exp(θ_f / ρ_f - max), factors of 2+ variables, tied tables once
    psi_at: np.ndarray    # [F] offset of factor f's table in psi
    # [F] offset of factor f's θ in log_pot: tab_ptr[f], or the table of the factor f is tied
    # to (``table_kernels.tied_tables``), where ``trw_beliefs.beliefs`` also sums f's belief
    theta_at: np.ndarray


def reweighted_potentials(graph: FactorGraph, log_pot: np.ndarray,
                          rho: np.ndarray) -> ReweightedPotentials:
    """θ with its scaled reweighted tables ψ for ``graph``'s factors
    (``reweighted_tables``), every factor its own table."""
    psi = np.empty(graph.n_table)
    psi_at = np.zeros(graph.n_factors, dtype=np.int64)
    rep = np.arange(graph.n_factors, dtype=np.int64)
    used = reweighted_tables(log_pot, rho, graph.tab_ptr, graph.f_ptr, rep, psi, psi_at)
    return ReweightedPotentials(log_pot, rho, psi[:used], psi_at,
                                np.ascontiguousarray(graph.tab_ptr[:-1], dtype=np.int64))


# ψ tables shared through a direct-mapped cache of this many slots, keyed by size and ρ
TIE_SLOTS = 64


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def reweighted_tables(log_pot, rho, tab_ptr, f_ptr, rep, psi, psi_at):
    """For factors of two or more variables ψ_f = exp((θ_f - max θ_f) / ρ_f)
    = exp(θ_f / ρ_f - max) at psi[psi_at[f]:] (the scaled kernels' tables,
    ``fgl.engines.graph.bp_scaled``; a unary factor's θ joins its
    variable's belief and needs none); θ_f is read at tab_ptr[rep[f]]
    (``table_kernels.tied_tables``).  Templates tie θ, and a forest cover
    gives few distinct ρ (on 150 CoNLL-2003 skip-chain articles 20): a
    factor whose θ and ρ equal those of its ``rep``, or of the last factor
    in its slot of a small cache keyed by table size and ρ, shares that
    one's ψ instead of taking an exponential per entry.  Returns how much
    of ``psi`` is used."""
    recent = np.full(TIE_SLOTS, -1, dtype=np.int64)
    used = 0
    for f in range(tab_ptr.shape[0] - 1):
        if f_ptr[f + 1] - f_ptr[f] < 2:
            continue
        t0 = tab_ptr[rep[f]]
        n = tab_ptr[f + 1] - tab_ptr[f]
        r = rho[f]
        if rep[f] != f and rho[rep[f]] == r:
            psi_at[f] = psi_at[rep[f]]
            continue
        slot = (n * 7919 + int(r * 1048576.0)) % TIE_SLOTS
        g = recent[slot]
        if (g >= 0 and rho[g] == r and tab_ptr[g + 1] - tab_ptr[g] == n
                and (rep[g] == rep[f]
                     or bp_scaled.equal_tables(log_pot, tab_ptr[rep[g]], t0, n))):
            psi_at[f] = psi_at[g]
            continue
        recent[slot] = f
        bp_scaled.exp_shifted(log_pot, t0, n, psi, used, r)
        psi_at[f] = used
        used += n
    return used
