"""Tests of the graph-structure routines of ``fgl.engines.graph.factor_graph``:
components and cycles, TRP spanning-tree covers, two-pass tree schedules and
the MAP decoding order (numba kernels over the flat arrays).

Oracles: networkx for connectivity and forests; a plain-Python sum-product
pass over a schedule (numpy tables, no fgl kernels) against brute-force
enumeration for "one two-pass sweep on a forest is exact"; and
``fgl.engines.graph.enumeration.exact`` for TRP through the engine.
"""
from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fgl.engines.graph.factor_graph import FACTOR_TO_VAR, VAR_TO_FACTOR, FactorGraph

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------
# generators


@st.composite
def factor_graphs(draw, max_vars=12, max_factors=16, max_arity=4):
    """Any factor graph: (card, factors), empty factors and isolated
    variables included."""
    n = draw(st.integers(0, max_vars))
    card = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    factors = []
    for _ in range(draw(st.integers(0, max_factors))):
        k = draw(st.integers(0, min(n, max_arity)))
        factors.append(draw(st.permutations(range(n)))[:k] if n else [])
    return card, factors


@st.composite
def forests(draw, max_vars=7, max_factors=10):
    """Factor forests: each factor joins at most one variable that earlier
    factors reached to fresh ones; unaries and empty factors anywhere;
    variable ids and factor order shuffled."""
    n = draw(st.integers(1, max_vars))
    card = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    used: list[int] = []
    fresh = list(range(n))
    factors = []
    for _ in range(draw(st.integers(0, max_factors))):
        kind = draw(st.sampled_from(["join", "join", "unary", "empty"]))
        if kind == "unary":
            factors.append([draw(st.integers(0, n - 1))])
        elif kind == "empty":
            factors.append([])
        else:
            fac = [draw(st.sampled_from(used))] if used and draw(st.booleans()) else []
            if not fac and not fresh:
                continue
            k = draw(st.integers(0 if fac else 1, min(len(fresh), 3)))
            fac += [fresh.pop() for _ in range(k)]
            if not fac:
                continue
            used += fac
            factors.append(fac)
    perm = draw(st.permutations(range(n)))
    factors = [[perm[v] for v in draw(st.permutations(f))] for f in factors]
    factors = draw(st.permutations(factors))
    return [card[perm.index(v)] for v in range(n)], factors


def bipartite(g: FactorGraph, edges=None) -> nx.Graph:
    """Every node of g, and the given edges (default all)."""
    h = nx.Graph()
    h.add_nodes_from(("v", i) for i in range(g.n_vars))
    h.add_nodes_from(("f", j) for j in range(g.n_factors))
    for e in range(g.n_edges) if edges is None else edges:
        h.add_edge(("v", int(g.f_var[e])), ("f", int(g.e_fac[e])))
    return h


def skip_chain(n_vars, doc_len, n_skip, seed=0):
    """Documents of chains with unaries and random skip pairs inside each."""
    rng = np.random.default_rng(seed)
    starts = range(0, n_vars, doc_len)
    factors = [[v] for v in range(n_vars)]
    for s in starts:
        factors += [[v, v + 1] for v in range(s, min(s + doc_len, n_vars) - 1)]
    for _ in range(n_skip):
        s = int(rng.choice(list(starts)))
        i, j = sorted(rng.choice(range(s, min(s + doc_len, n_vars)), 2, replace=False))
        factors.append([int(i), int(j)])
    return [3] * n_vars, factors


# --------------------------------------------------------------------------
# a plain-Python sum-product pass (the oracle for schedules)


def tables(g: FactorGraph, log_pot):
    return [np.exp(log_pot[g.tab_ptr[f]:g.tab_ptr[f + 1]]).reshape(
        [int(g.card[v]) for v in g.factor_vars(f)]) for f in range(g.n_factors)]


def run_schedule(g: FactorGraph, log_pot, sched_edge, sched_dir):
    """Messages after sending ``sched`` once from all-ones, and the
    normalised variable beliefs they give."""
    pots = tables(g, log_pot)
    fv = [np.ones(int(g.card[g.f_var[e]])) for e in range(g.n_edges)]
    vf = [np.ones(int(g.card[g.f_var[e]])) for e in range(g.n_edges)]
    for e, d in zip(sched_edge.tolist(), sched_dir.tolist()):
        v, f = int(g.f_var[e]), int(g.e_fac[e])
        if d == VAR_TO_FACTOR:
            m = np.ones(int(g.card[v]))
            for e2 in g.v_edge[g.v_ptr[v]:g.v_ptr[v + 1]]:
                if e2 != e:
                    m = m * fv[e2]
            vf[e] = m / m.sum()
        else:
            t = pots[f]
            k = e - int(g.f_ptr[f])
            for pos, e2 in enumerate(range(g.f_ptr[f], g.f_ptr[f + 1])):
                if e2 != e:
                    shape = [1] * t.ndim
                    shape[pos] = t.shape[pos]
                    t = t * vf[e2].reshape(shape)
            m = t.sum(axis=tuple(a for a in range(t.ndim) if a != k))
            fv[e] = m / m.sum()
    beliefs = []
    for v in range(g.n_vars):
        b = np.ones(int(g.card[v]))
        for e2 in g.v_edge[g.v_ptr[v]:g.v_ptr[v + 1]]:
            b = b * fv[e2]
        beliefs.append(b / b.sum())
    return beliefs


def brute_marginals(card, factors, log_pot):
    offs = np.concatenate([[0], np.cumsum([math.prod(card[v] for v in f) for f in factors])])
    vb = [np.zeros(c) for c in card]
    for y in itertools.product(*[range(c) for c in card]):
        s = 0.0
        for f, vs in enumerate(factors):
            i = 0
            for v in vs:
                i = i * card[v] + y[v]
            s += log_pot[offs[f] + i]
        for v, x in enumerate(y):
            vb[v][x] += math.exp(s)
    return [b / b.sum() for b in vb]


def check_two_pass(g: FactorGraph, tree, sched_edge, sched_dir):
    """The schedule sends each tree edge once each way, each message only
    after every other message into its sender, up to each component's root
    (its lowest-numbered variable) then back down."""
    tree = [int(e) for e in tree]
    assert sched_edge.dtype == np.int64 and sched_dir.dtype == np.int64
    assert sorted(zip(sched_edge.tolist(), sched_dir.tolist())) == sorted(
        [(e, VAR_TO_FACTOR) for e in tree] + [(e, FACTOR_TO_VAR) for e in tree])
    nbrs: dict = {}
    for e in tree:
        v, f = ("v", int(g.f_var[e])), ("f", int(g.e_fac[e]))
        nbrs.setdefault(v, set()).add(f)
        nbrs.setdefault(f, set()).add(v)
    sub = nx.Graph()
    sub.add_edges_from((("v", int(g.f_var[e])), ("f", int(g.e_fac[e]))) for e in tree)
    comp_of = {node: c for c, comp in enumerate(nx.connected_components(sub)) for node in comp}
    heard: dict = {}
    per_comp: dict = {}   # component -> its schedule entries (sender, receiver), in order
    for p, (e, d) in enumerate(zip(sched_edge.tolist(), sched_dir.tolist())):
        v, f = ("v", int(g.f_var[e])), ("f", int(g.e_fac[e]))
        s, r = (f, v) if d == FACTOR_TO_VAR else (v, f)
        assert nbrs[s] - {r} <= heard.get(s, set()), (p, s, r)
        heard.setdefault(r, set()).add(s)
        per_comp.setdefault(comp_of[s], []).append((s, r))
    for c, entries in per_comp.items():
        comp = {node for node, k in comp_of.items() if k == c}
        up = entries[:len(entries) // 2]
        senders_up = [s for s, _ in up]
        assert len(set(senders_up)) == len(senders_up)  # each node sends up once, to its parent
        # the root of each component is the one node that never sent up
        assert comp - set(senders_up) == {("v", min(i for k, i in comp if k == "v"))}


# --------------------------------------------------------------------------
# the layout


@SETTINGS
@given(factor_graphs())
def test_layout_enumerates_each_table_row_major(graph):
    """Entry i of factor f's table assigns its k-th variable
    (i // e_stride) % card, in the order of itertools.product over its
    variables (the first slowest); every CSR agrees with the factor lists."""
    card, factors = graph
    g = FactorGraph.from_factors(card, factors)
    assert [list(g.factor_vars(f)) for f in range(g.n_factors)] == [list(f) for f in factors]
    for f, fac in enumerate(factors):
        got = [tuple((i // int(g.e_stride[e])) % card[int(g.f_var[e])]
                     for e in range(g.f_ptr[f], g.f_ptr[f + 1]))
               for i in range(g.tab_ptr[f + 1] - g.tab_ptr[f])]
        assert got == list(itertools.product(*(range(card[v]) for v in fac)))
        assert all(g.e_fac[e] == f for e in range(g.f_ptr[f], g.f_ptr[f + 1]))
    for v in range(len(card)):
        edges = g.v_edge[g.v_ptr[v]:g.v_ptr[v + 1]].tolist()
        assert edges == [e for e in range(g.n_edges) if g.f_var[e] == v]
    assert np.diff(g.msg_ptr).tolist() == [card[v] for v in g.f_var.tolist()]
    assert np.diff(g.var_ptr).tolist() == list(card)
    assert all(a.dtype == np.int64 for a in g.arrays)


def test_from_csr_builds_what_from_factors_builds_and_refuses_alike():
    card, factors = skip_chain(40, 10, 15, seed=3)
    g = FactorGraph.from_factors(card, factors)
    ptr = np.cumsum([0] + [len(f) for f in factors])
    h = FactorGraph.from_csr(card, ptr, np.concatenate([np.asarray(f) for f in factors]))
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(g.arrays, h.arrays))
    with pytest.raises(ValueError, match=r"factor 1 uses variable 3 outside 0\.\.2"):
        FactorGraph.from_factors([2, 2, 2], [[0, 1], [2, 3]])
    with pytest.raises(ValueError, match=r"factor 1 repeats a variable: \[2, 0, 2\]"):
        FactorGraph.from_factors([2, 2, 2], [[0, 1], [2, 0, 2]])
    with pytest.raises(ValueError, match="domain of size >= 1"):
        FactorGraph.from_csr([2, 0], np.array([0, 1]), np.array([0]))


# --------------------------------------------------------------------------
# components, cycles


@SETTINGS
@given(factor_graphs())
def test_cycles_and_components_match_networkx(graph):
    card, factors = graph
    g = FactorGraph.from_factors(card, factors)
    h = bipartite(g)
    assert g.n_cycles() == g.n_edges - h.number_of_nodes() + nx.number_connected_components(h)
    assert g.is_tree() == (h.number_of_nodes() == 0 or nx.is_forest(h))
    assert isinstance(g.n_cycles(), int) and isinstance(g.is_tree(), bool)


def test_empty_graph():
    g = FactorGraph.from_factors([], [])
    assert g.n_cycles() == 0 and g.is_tree()
    (t,) = g.spanning_trees()
    assert t.dtype == np.int64 and t.size == 0
    se, sd = g.trp_schedule()
    assert se.size == sd.size == 0
    roots, order_f, order_e = g.decode_order()
    assert roots.size == order_f.size == order_e.size == 0


# --------------------------------------------------------------------------
# TRP tree covers


@SETTINGS
@given(factor_graphs(), st.integers(0, 2**32 - 1))
def test_trees_are_forests_covering_every_edge(graph, seed):
    card, factors = graph
    g = FactorGraph.from_factors(card, factors)
    h = bipartite(g)
    n_comp = nx.number_connected_components(h)
    trees = g.spanning_trees(seed=seed)
    assert isinstance(trees, list) and trees
    covered = np.zeros(g.n_edges, dtype=bool)
    for k, t in enumerate(trees):
        assert isinstance(t, np.ndarray) and t.dtype == np.int64
        assert np.all(np.diff(t) > 0)                       # sorted, distinct
        sub = bipartite(g, t.tolist())
        assert sub.number_of_nodes() == 0 or nx.is_forest(sub)
        if k == 0:
            assert nx.number_connected_components(sub) == n_comp  # the first spans
        else:
            assert not covered[t].any()     # the others: only edges not yet covered
        covered[t] = True
        check_two_pass(g, t, *g.tree_schedule(t))
    assert covered.all()
    if g.is_tree():
        assert len(trees) == 1 and trees[0].size == g.n_edges
    # cached per (max_trees, seed), and reproducible from the seed
    assert g.spanning_trees(seed=seed) is trees
    again = FactorGraph.from_factors(card, factors).spanning_trees(seed=seed)
    assert all(np.array_equal(a, b) for a, b in zip(trees, again))
    capped = g.spanning_trees(len(trees), seed=seed)
    assert all(np.array_equal(a, b) for a, b in zip(capped, trees)) and len(capped) == len(trees)
    if len(trees) > 1:
        with pytest.raises(ValueError, match="trees cover only"):
            g.spanning_trees(len(trees) - 1, seed=seed)


def test_a_cycle_needs_two_trees_and_one_is_refused():
    g = FactorGraph.from_factors([2, 2, 2], [[0, 1], [1, 2], [2, 0]])
    assert g.n_cycles() == 1
    assert len(g.spanning_trees()) == 2
    with pytest.raises(ValueError, match="1 trees cover only 5 of 6 edges"):
        g.spanning_trees(1)


def test_skip_chain_cover():
    """A skip chain of 40 documents: a spanning forest (one edge fewer per
    independent cycle), then a forest of the edges it left out — the
    cover's edges exactly the graph's — so a TRP iteration passes over
    each edge once."""
    card, factors = skip_chain(4000, 100, 600)
    g = FactorGraph.from_factors(card, factors)
    assert g.n_cycles() == 600
    trees = g.spanning_trees()
    assert len(trees) == 2
    assert trees[0].size == g.n_edges - g.n_cycles() and trees[1].size == g.n_cycles()
    for t in trees:
        assert nx.is_forest(bipartite(g, t.tolist()))
    assert np.array_equal(np.sort(np.concatenate(trees)), np.arange(g.n_edges))
    se, sd = g.trp_schedule()
    assert se.size == 2 * sum(t.size for t in trees)


# --------------------------------------------------------------------------
# two-pass schedules


@SETTINGS
@given(forests(), st.integers(0, 2**32 - 1))
def test_one_sweep_on_a_forest_is_exact(graph, seed):
    """Sum-product messages sent once in tree_schedule's order give the exact
    marginals on a forest (plain-Python messages against enumeration)."""
    card, factors = graph
    g = FactorGraph.from_factors(card, factors)
    assert g.is_tree()
    (tree,) = g.spanning_trees()
    se, sd = g.tree_schedule(tree)
    check_two_pass(g, tree, se, sd)
    assert np.array_equal(se, g.trp_schedule()[0])
    lp = np.random.default_rng(seed).normal(0.0, 1.0, g.n_table)
    got = run_schedule(g, lp, se, sd)
    for b, want in zip(got, brute_marginals(card, factors, lp)):
        np.testing.assert_allclose(b, want, atol=1e-10)


@SETTINGS
@given(forests(), st.integers(0, 2**32 - 1))
def test_trp_on_a_forest_equals_exact(graph, seed):
    from fgl.engines.graph.enumeration import exact
    from fgl.engines.graph.loopy import belief_propagation

    card, factors = graph
    g = FactorGraph.from_factors(card, factors)
    lp = np.random.default_rng(seed).normal(0.0, 1.0, g.n_table)
    r = belief_propagation(g, lp, schedule="trp")
    ex = exact(g, lp)
    assert r.converged and r.iterations <= 2
    assert r.log_z == pytest.approx(ex.log_z, abs=1e-9)
    for v in range(g.n_vars):
        np.testing.assert_allclose(r.var_beliefs[v], ex.var_beliefs[v], atol=1e-9)


@SETTINGS
@given(factor_graphs(), st.integers(0, 2**32 - 1))
def test_tree_schedule_of_any_edge_order_skips_cycle_closing_edges(graph, seed):
    """Given every edge, in any order, the schedule is the two-pass order of
    the breadth-first spanning forest it keeps."""
    card, factors = graph
    g = FactorGraph.from_factors(card, factors)
    edges = np.random.default_rng(seed).permutation(g.n_edges)
    se, sd = g.tree_schedule(edges)
    kept = np.unique(se)
    assert se.size == 2 * kept.size
    sub = bipartite(g, kept.tolist())
    assert sub.number_of_nodes() == 0 or nx.is_forest(sub)
    assert nx.number_connected_components(sub) == nx.number_connected_components(bipartite(g))
    check_two_pass(g, kept, se, sd)


def test_tree_schedule_on_a_chain():
    """Variables 0-1-2 joined by factors 0 and 1, unary factor 2 on variable
    2: up from the far leaf to variable 0, then back down."""
    g = FactorGraph.from_factors([2, 2, 2], [[0, 1], [1, 2], [2]])
    se, sd = g.tree_schedule(np.arange(g.n_edges))
    # edges: 0 (f0, v0), 1 (f0, v1), 2 (f1, v1), 3 (f1, v2), 4 (f2, v2)
    up = [(4, FACTOR_TO_VAR), (3, VAR_TO_FACTOR), (2, FACTOR_TO_VAR), (1, VAR_TO_FACTOR),
          (0, FACTOR_TO_VAR)]
    down = [(e, 1 - d) for e, d in reversed(up)]
    assert list(zip(se.tolist(), sd.tolist())) == up + down


# --------------------------------------------------------------------------
# MAP decoding order


@SETTINGS
@given(factor_graphs())
def test_decode_order(graph):
    card, factors = graph
    g = FactorGraph.from_factors(card, factors)
    roots, order_f, order_e = g.decode_order()
    for a in (roots, order_f, order_e):
        assert isinstance(a, np.ndarray) and a.dtype == np.int64
    assert sorted(order_f.tolist()) == list(range(g.n_factors))
    # a root per component that holds a variable: its lowest-numbered one
    h = bipartite(g)
    want = sorted(min(i for k, i in c if k == "v") for c in nx.connected_components(h)
                  if any(k == "v" for k, _ in c))
    assert roots.tolist() == want
    reached = set(roots.tolist())
    for f, e in zip(order_f.tolist(), order_e.tolist()):
        if e < 0:
            assert g.f_ptr[f] == g.f_ptr[f + 1]   # only empty factors have no parent
            continue
        assert g.e_fac[e] == f and int(g.f_var[e]) in reached
        reached.update(g.factor_vars(f).tolist())
    assert reached == set(range(g.n_vars))
    assert g.decode_order() is g.decode_order()
