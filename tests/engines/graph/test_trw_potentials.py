"""Tests of ``fgl.engines.graph.trw_potentials``: the scaled tables
ψ_f = exp(θ_f/ρ_f - max) that tree-reweighted BP's kernels read, tied
tables stored once."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.trw_potentials import reweighted_potentials


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 9), st.integers(1, 4))
def test_every_factor_reads_its_own_scaled_table_and_tied_ones_share_it(seed, V, n_rho):
    """Pairwise factors over a chain and random pairs, their θ drawn from
    three tables (a template's tied weights), sometimes -inf, ρ from
    ``n_rho`` values: each factor of two variables reads exp(θ/ρ - max)
    at psi_at, unary factors read none; with one θ for every pair, ψ holds
    one table per ρ (the cache keeps the last table of each size and ρ)."""
    rng = np.random.default_rng(seed)
    card = [3] * V
    pairs = [[v - 1, v] for v in range(1, V)] + [
        [int(a), int(b)] for a, b in rng.integers(0, V, (V, 2)) if a < b]
    factors = [[v] for v in range(V)] + pairs
    g = FactorGraph.from_factors(card, factors)
    shared = rng.normal(0.0, 3.0, (3, 9))
    shared[2, rng.integers(0, 9)] = -np.inf
    which = rng.integers(0, 3, len(pairs))
    log_pot = np.concatenate([rng.normal(0.0, 1.0, 3 * V)] + [shared[k] for k in which])
    rhos = rng.choice(np.linspace(0.2, 1.0, n_rho), len(pairs))
    rho = np.concatenate([np.ones(V), rhos])
    pot = reweighted_potentials(g, log_pot, rho)
    for f in range(V, g.n_factors):
        t = log_pot[g.tab_ptr[f]:g.tab_ptr[f + 1]] / rho[f]
        want = np.exp(t - t.max())
        got = pot.psi[pot.psi_at[f]:pot.psi_at[f] + 9]
        # (to a few ulp of the exponent's terms: θ/ρ - max and (θ - max θ)/ρ round apart)
        ulps = 4 * np.finfo(float).eps * (2 + np.abs(np.where(want > 0, t, 0)) + abs(t.max()))
        assert np.all(np.abs(got - want) <= ulps * want)
    # one θ for every pair (a template without observations): one ψ per ρ
    tied = np.concatenate([log_pot[:3 * V]] + [shared[0]] * len(pairs))
    assert len(reweighted_potentials(g, tied, rho).psi) == 9 * len(set(rhos.tolist()))
