"""Tests of ``fgl.engines.graph.peeling`` and of tree-reweighted BP that
sweeps only the loopy core: the split against networkx's 2-core, and TRW
on cycles with trees hanging off them against the plain-numpy reference
(which sweeps every message) and brute force."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.brute_force import factor_graph_brute_force
from support.trw_reference import assert_matches_reference, dense_tables, reference_trw

from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.forest_cover import appearance_probabilities
from fgl.engines.graph.peeling import core_and_trees, sweep_orders
from fgl.engines.graph.trw import trw

TIGHT = {"tol": 1e-15, "max_iter": 20000}


@st.composite
def hung_cycles(draw, triples: bool = True):
    """(card, factors, log_pot): a cycle of 3-4 variables, trees of up to
    5 more variables hung off it (each joins an earlier variable), maybe a
    factor over three variables joining a variable to two new leaves, and
    unary factors; potentials uniform in [-s, s], s up to 10."""
    n_cycle = draw(st.integers(3, 4))
    factors = [[v, (v + 1) % n_cycle] for v in range(n_cycle)]
    V = n_cycle
    for _ in range(draw(st.integers(0, 5))):
        factors.append([draw(st.integers(0, V - 1)), V])
        V += 1
    if triples and draw(st.booleans()):
        factors.append([draw(st.integers(0, V - 1)), V, V + 1])
        V += 2
    factors += [[v] for v in range(V)]
    card = [draw(st.integers(2, 3)) for _ in range(V)]
    sizes = [int(np.prod([card[v] for v in f])) for f in factors]
    s = draw(st.floats(0.5, 10.0))
    log_pot = np.random.default_rng(draw(st.integers(0, 2**31 - 1))).uniform(-s, s, sum(sizes))
    return card, factors, log_pot


def _position(order):
    return {int(v): k for k, v in enumerate(order)}


def test_the_core_is_the_cycle_and_leaves_come_first():
    # cycle 0-1-2; a tree 2-3, 3-4, 3-5; a triple (1, 6, 7); 8 on its own
    card = [2] * 9
    factors = [[0, 1], [1, 2], [2, 0], [2, 3], [3, 4], [3, 5], [1, 6, 7], [8], [4]]
    g = FactorGraph.from_factors(card, factors)
    core, order = core_and_trees(g, appearance_probabilities(g))
    assert core.tolist() == [0, 1, 2]
    assert sorted(order.tolist()) == [3, 4, 5, 6, 7, 8]
    at = _position(order)
    assert at[4] < at[3] and at[5] < at[3]
    # each peeled variable's factor toward the core; -1 for the core and for 8, on its own
    toward = sweep_orders(g, appearance_probabilities(g)).toward
    assert toward.tolist() == [-1, -1, -1, 3, 4, 5, 6, 6, -1]


@settings(max_examples=40, deadline=None)
@given(hung_cycles(triples=False))
def test_the_core_is_networkx_2_core(case):
    card, factors, _ = case
    g = FactorGraph.from_factors(card, factors)
    core, order = core_and_trees(g, appearance_probabilities(g))
    G = nx.Graph()
    G.add_nodes_from(range(len(card)))
    G.add_edges_from(f for f in factors if len(f) == 2)
    assert core.tolist() == sorted(nx.k_core(G, 2).nodes)
    at = _position(order)
    # each peeled variable comes after every neighbour farther from the core
    dist = nx.multi_source_dijkstra_path_length(G, list(core.tolist()))
    for a, b in G.edges:
        if a in at and b in at:
            far, near = (a, b) if dist[a] > dist[b] else (b, a)
            assert at[far] < at[near]
    # and its factor toward the core is the edge to its neighbour one step nearer
    toward = sweep_orders(g, appearance_probabilities(g)).toward
    for v in range(len(card)):
        if v not in at:
            assert toward[v] == -1
            continue
        (u,) = set(factors[toward[v]]) - {v}
        assert dist[u] == dist[v] - 1


def test_a_factor_with_rho_below_one_stays_in_the_core():
    card = [2] * 4
    factors = [[0, 1], [1, 2], [2, 0], [2, 3]]
    g = FactorGraph.from_factors(card, factors)
    rho = np.array([2 / 3, 2 / 3, 2 / 3, 0.5])
    core, order = core_and_trees(g, rho)
    assert core.tolist() == [0, 1, 2, 3] and order.size == 0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hung_cycles(), st.booleans())
def test_trw_with_hanging_trees_matches_the_reference(case, bridge_below_one):
    """The reference sweeps every message in parallel; fgl's passes the
    trees once each way.  With ρ < 1 on one hanging factor, that factor
    stays in the core and must still agree."""
    card, factors, log_pot = case
    g = FactorGraph.from_factors(card, factors)
    rho = appearance_probabilities(g).copy()
    if bridge_below_one and len(card) > 4 and len(factors[len(card) - 1]) == 2:
        rho[len(card) - 1] = 0.5   # (a factor hung off the cycle, when there is one)
    r = trw(g, log_pot, rho=rho, **TIGHT)
    assume(r.converged)
    assert_matches_reference(r, card, factors, log_pot, rho)
    assert r.log_z >= factor_graph_brute_force(card, factors, log_pot)[0] - 1e-9


@settings(max_examples=15, deadline=None)
@given(hung_cycles(), st.integers(0, 2**31 - 1))
def test_a_clamped_leaf_in_a_hanging_tree_is_its_near_clamp(case, seed):
    """-inf entries send a tree's messages to the slow path, one variable
    at a time; a clamp by -60 stays on the fast one.  Both must give the
    same beliefs (they differ by e^-60)."""
    card, factors, log_pot = case
    assume(len(card) > 4)
    g = FactorGraph.from_factors(card, factors)
    leaf = len(card) - 1
    unary = factors.index([leaf])
    lo, hi = g.tab_ptr[unary], g.tab_ptr[unary + 1]
    keep = int(np.random.default_rng(seed).integers(hi - lo))
    hard, soft = log_pot.copy(), log_pot.copy()
    hard[lo:hi], soft[lo:hi] = -np.inf, log_pot[lo:hi] - 60.0
    hard[lo + keep], soft[lo + keep] = log_pot[lo + keep], log_pot[lo + keep]
    a, b = trw(g, hard, **TIGHT), trw(g, soft, **TIGHT)
    assume(a.converged and b.converged)
    np.testing.assert_allclose(a.var_flat, b.var_flat, atol=1e-9)
    assert a.log_z == pytest.approx(b.log_z, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 7), st.integers(0, 2**31 - 1))
def test_on_a_tree_one_pass_each_way_is_exact(n, seed):
    rng = np.random.default_rng(seed)
    card = [3] * n
    factors = [[int(rng.integers(v)), v] for v in range(1, n)] + [[v] for v in range(n)]
    g = FactorGraph.from_factors(card, factors)
    log_pot = rng.uniform(-20, 20, g.n_table)
    r = trw(g, log_pot, **TIGHT)
    log_z, vb, _, _ = factor_graph_brute_force(card, factors, log_pot)
    assert r.iterations == 1 and r.converged
    assert r.log_z == pytest.approx(log_z, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(r.var_flat, np.concatenate(vb), atol=1e-12)


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 3))
def test_chains_with_skip_edges_reach_the_reference_at_a_moderate_tol(seed, n_skips):
    """A chain of 14 variables with skip edges (its head and tail hang off
    the loops), run to a tol of 1e-10 as training runs TRW, not to the
    last bit: it must land where the reference's sweeps over every message
    do."""
    rng = np.random.default_rng(seed)
    n = 14
    factors = [[v, v + 1] for v in range(n - 1)]
    for _ in range(n_skips):
        a, b = sorted(rng.choice(n, 2, replace=False).tolist())
        if b > a + 1 and [a, b] not in factors:
            factors.append([a, b])
    factors += [[v] for v in range(n)]
    card = [3] * n
    g = FactorGraph.from_factors(card, factors)
    log_pot = rng.uniform(-3, 3, g.n_table)
    r = trw(g, log_pot, tol=1e-10, max_iter=20000)   # seed 1804, 2 skips: 5,057 sweeps
    assert r.converged
    rho = appearance_probabilities(g)
    ref_z, ref_bv, _, ok = reference_trw(card, factors, dense_tables(card, factors, log_pot), rho,
                                        tol=1e-13)
    assert ok
    np.testing.assert_allclose(r.var_flat, np.concatenate(ref_bv), atol=1e-7)
    assert r.log_z == pytest.approx(ref_z, abs=1e-7)
