"""Appearance probabilities of tree-reweighted BP: a cover of the factor
graph by factor forests (Wainwright, Jaakkola & Willsky 2005 §4).

Every factor f of two or more variables gets ρ_f ∈ (0, 1], the share of
the cover's forests that hold f (``fgl.engines.graph.trw`` uses them as the
counting numbers of its free energy).  ``appearance_probabilities`` builds
the forests greedily, each a maximal hyperforest found by Kruskal's
union-find over factors ordered by how often earlier forests held them
(ties at random, seeded), until every factor is held at least once and at
least ``forests`` forests are made.  Taking the least covered factors first
spreads ρ evenly, which is what the bound rewards.
"""
from __future__ import annotations

import numpy as np

from fgl.engines.graph.factor_graph import FactorGraph, find_root
from fgl.jit import njit

DEFAULT_FORESTS = 10   # the fewest forests of a cover (more when it takes more to cover)


@njit(cache=True, nogil=True)
def _hyperforest(order, f_ptr, f_var, n_vars, taken):
    """Kruskal over factors: take each factor of ``order`` whose variables
    lie in distinct trees of the forest so far (so the bipartite factor
    graph stays acyclic) and join them; ``taken[f] = True`` for each."""
    parent = np.arange(n_vars)
    roots = np.empty(max(1, f_var.shape[0]), dtype=np.int64)
    for k in range(order.shape[0]):
        f = order[k]
        a = f_ptr[f]
        b = f_ptr[f + 1]
        ok = True
        for j in range(a, b):
            r = find_root(parent, f_var[j])
            for i in range(j - a):
                if roots[i] == r:
                    ok = False
                    break
            if not ok:
                break
            roots[j - a] = r
        if not ok:
            continue
        for j in range(a + 1, b):
            parent[roots[j - a]] = roots[0]
        taken[f] = True


def appearance_probabilities(graph: FactorGraph, forests: int = DEFAULT_FORESTS,
                             seed: int = 0) -> np.ndarray:
    """ρ_f per factor: the share of a greedy cover by maximal factor
    forests holding f (module docstring); 1 for factors of fewer than two
    variables, and for every factor of a forest.  Cached on the graph."""
    key = ("rho", int(forests), int(seed))
    if key in graph.cache:
        return graph.cache[key]
    F = graph.n_factors
    arity = np.diff(graph.f_ptr)
    rho = np.ones(F)
    if graph.is_tree() or not (arity >= 2).any():
        graph.cache[key] = rho
        return rho
    rng = np.random.default_rng(seed)
    counts = np.zeros(F, dtype=np.int64)
    pair = arity >= 2
    n = 0
    while n < forests or not counts[pair].all():
        order = np.lexsort((rng.random(F), counts)).astype(np.int64)
        taken = np.zeros(F, dtype=np.bool_)
        _hyperforest(order, graph.f_ptr, graph.f_var, graph.n_vars, taken)
        counts += taken
        n += 1
    rho[pair] = counts[pair] / n
    graph.cache[key] = rho
    return rho


def uniform_appearance(graph: FactorGraph, value: float) -> np.ndarray:
    """ρ_f = ``value`` for every factor of two or more variables, 1 for the
    others (``infer trw(rho = ...)``).  Cached on the graph."""
    key = ("rho_uniform", float(value))
    if key not in graph.cache:
        rho = np.ones(graph.n_factors)
        rho[np.diff(graph.f_ptr) >= 2] = float(value)
        graph.cache[key] = rho
    return graph.cache[key]
