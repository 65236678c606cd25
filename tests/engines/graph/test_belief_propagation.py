"""Tests of ``fgl.engines.graph.factor_graph`` and the belief-propagation engine
``fgl.engines.graph.loopy`` at the level of log-potential tables.

Oracle: ``factor_graph_brute_force`` (``support.brute_force``) enumerates every
assignment straight from the definition (itertools + math.fsum), sharing no
code with the engine.
``exact`` is checked against it and then used as the reference on graphs too
large for the Python enumerator.

Conventions: factor f's table is row-major over its variables (first
slowest); score(y) = Σ_f θ_f(y_f); p(y) ∝ exp score(y).
"""
from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.brute_force import factor_graph_brute_force, table_index
from support.factor_graph_references import bethe_log_z, map_assignment, to_networkx
from support.graph_cases import (
    CHAIN_CASES,
    assert_matches_chain_engine,
    chain_engine_case,
    chain_graph,
)

from fgl.engines.graph.enumeration import exact
from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.loopy import BPResult, belief_propagation

TOL = 1e-8
SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------
# graph generators


def star_graph(k, card):
    return [card] * (k + 1), [[0, i] for i in range(1, k + 1)] + [[i] for i in range(k + 1)]


def nx_tree_graph(n, rng):
    t = nx.random_labeled_tree(n, seed=int(rng.integers(1 << 30)))
    card = [int(c) for c in rng.integers(1, 4, size=n)]
    factors = [[int(a), int(b)] if rng.random() < 0.5 else [int(b), int(a)] for a, b in t.edges]
    factors += [[v] for v in range(n) if rng.random() < 0.6]
    return card, factors


def mixed_tree_graph(n_factors, rng):
    """A factor tree grown one factor at a time: each new factor touches one
    existing variable and 0-2 fresh ones (unary, pairwise, ternary)."""
    card = [int(rng.integers(1, 4))]
    factors = []
    for _ in range(n_factors):
        anchor = int(rng.integers(len(card)))
        fresh = list(range(len(card), len(card) + int(rng.integers(0, 3))))
        card += [int(c) for c in rng.integers(1, 4, size=len(fresh))]
        vs = [anchor] + fresh
        rng.shuffle(vs)
        factors.append([int(v) for v in vs])
    return card, factors


def loopy_graph(n_vars, n_factors, rng, max_card=3, max_arity=3):
    card = [int(c) for c in rng.integers(2, max_card + 1, size=n_vars)]
    factors = [[v] for v in range(n_vars) if rng.random() < 0.5]
    for _ in range(n_factors):
        k = int(rng.integers(2, max_arity + 1))
        factors.append([int(v) for v in rng.choice(n_vars, size=min(k, n_vars), replace=False)])
    return card, factors


def potentials(graph, rng, scale, integer=False):
    if integer:
        return rng.integers(-1, 2, size=graph.n_table).astype(float)
    return rng.normal(scale=scale, size=graph.n_table)


def tree_case(kind, size, seed):
    rng = np.random.default_rng(seed)
    if kind == "chain":
        card, factors = chain_graph(size, int(rng.integers(1, 4)))
    elif kind == "star":
        card, factors = star_graph(size, int(rng.integers(2, 4)))
    elif kind == "nx":
        card, factors = nx_tree_graph(size + 1, rng)
    else:
        card, factors = mixed_tree_graph(size, rng)
    return card, factors, rng


def reference(card, factors, log_pot):
    """``factor_graph_brute_force`` when the state space is small, else
    ``exact`` (itself checked against it in test_exact_matches_brute_force)."""
    if math.prod(card) <= 20_000:
        return factor_graph_brute_force(card, factors, log_pot)
    r = exact(FactorGraph.from_factors(card, factors), log_pot)
    return r.log_z, r.var_beliefs, r.factor_beliefs, [(r.map_score, tuple(r.map_state))]


def with_hard_zeros(lp, rng, frac=0.2):
    """Some entries -inf (hard constraints)."""
    lp = lp.copy()
    lp[rng.random(lp.shape[0]) < frac] = -np.inf
    return lp


def assert_beliefs_close(res: BPResult, ref_vb, ref_fb, tol, msg=""):
    for v, (a, b) in enumerate(zip(res.var_beliefs, ref_vb)):
        np.testing.assert_allclose(a, b, atol=tol, rtol=0, err_msg=f"variable {v} {msg}")
    np.testing.assert_allclose(res.factor_beliefs, ref_fb, atol=tol, rtol=0,
                               err_msg=f"factor beliefs {msg}")


# --------------------------------------------------------------------------
# exact enumeration


@SETTINGS
@given(n_vars=st.integers(1, 5), n_factors=st.integers(0, 6), seed=st.integers(0, 2**32 - 1),
       integer=st.booleans())
def test_exact_matches_brute_force(n_vars, n_factors, seed, integer):
    rng = np.random.default_rng(seed)
    card, factors = loopy_graph(n_vars, n_factors, rng)
    factors.append([])  # a constant factor
    g = FactorGraph.from_factors(card, factors)
    lp = potentials(g, rng, 1.0, integer)
    log_z, vb, fb, scored = factor_graph_brute_force(card, factors, lp)
    r = exact(g, lp)
    assert r.log_z == pytest.approx(log_z, abs=1e-10)
    assert_beliefs_close(r, vb, fb, 1e-12)
    assert r.map_score == pytest.approx(scored[0][0], abs=1e-10)
    # first maximum in lexicographic order
    best = min(y for s, y in scored if s >= scored[0][0] - 1e-12)
    assert tuple(r.map_state) == best


def test_exact_refuses_large_state_spaces():
    g = FactorGraph.from_factors([10] * 7, [[i, i + 1] for i in range(6)])
    with pytest.raises(ValueError, match="10000000 states"):
        exact(g, np.zeros(g.n_table))


def test_bad_inputs():
    with pytest.raises(ValueError):
        FactorGraph.from_factors([2, 2], [[0, 0]])
    with pytest.raises(ValueError):
        FactorGraph.from_factors([2, 0], [[0, 1]])
    with pytest.raises(ValueError):
        FactorGraph.from_factors([2, 2], [[0, 2]])
    g = FactorGraph.from_factors([2, 3], [[0, 1]])
    assert g.n_table == 6
    with pytest.raises(ValueError):
        belief_propagation(g, np.zeros(5))
    with pytest.raises(ValueError):
        belief_propagation(g, np.zeros(6), schedule="random")
    with pytest.raises(ValueError):
        belief_propagation(g, np.full(6, np.nan))


# --------------------------------------------------------------------------
# trees: BP is exact


TREE_KINDS = st.sampled_from(["chain", "star", "nx", "mixed"])


@SETTINGS
@given(kind=TREE_KINDS, size=st.integers(1, 6), seed=st.integers(0, 2**32 - 1),
       schedule=st.sampled_from(["flooding", "trp"]), scale=st.sampled_from([0.3, 1.0, 3.0]),
       hard=st.booleans())
def test_tree_sum_product_is_exact(kind, size, seed, schedule, scale, hard):
    card, factors, rng = tree_case(kind, size, seed)
    g = FactorGraph.from_factors(card, factors)
    assert g.is_tree() and g.n_cycles() == 0
    lp = potentials(g, rng, scale)
    if hard:
        lp = with_hard_zeros(lp, rng)
    log_z, vb, fb, _ = reference(card, factors, lp)
    assume(np.isfinite(log_z))
    r = belief_propagation(g, lp, schedule=schedule)
    assert r.converged and r.residual < 1e-10
    assert r.log_z == pytest.approx(log_z, abs=TOL)
    assert_beliefs_close(r, vb, fb, TOL, schedule)
    if schedule == "trp":
        assert len(g.spanning_trees()) == 1 and r.iterations == 1   # one exact pass
    # the Bethe functional at the exact marginals is exact on a tree
    assert bethe_log_z(g, lp, vb, fb) == pytest.approx(log_z, abs=TOL)


@SETTINGS
@given(kind=TREE_KINDS, size=st.integers(1, 6), seed=st.integers(0, 2**32 - 1),
       schedule=st.sampled_from(["flooding", "trp"]), integer=st.booleans(), hard=st.booleans())
def test_tree_max_product_map(kind, size, seed, schedule, integer, hard):
    """Max-product on a tree: the decoded assignment's score is the maximum
    (also under ties, thanks to back-tracking) and it is the argmax when
    that is unique by a margin."""
    card, factors, rng = tree_case(kind, size, seed)
    g = FactorGraph.from_factors(card, factors)
    lp = potentials(g, rng, 1.0, integer)
    if hard:
        lp = with_hard_zeros(lp, rng)
    assume(math.prod(card) <= 20_000)
    _, _, _, scored = factor_graph_brute_force(card, factors, lp)
    assume(np.isfinite(scored[0][0]))
    y, score = map_assignment(g, lp, schedule=schedule)
    assert score == pytest.approx(scored[0][0], abs=TOL)
    assert score == pytest.approx(math.fsum(
        lp[g.tab_ptr[f] + table_index(card, vs, y)] for f, vs in enumerate(factors)), abs=1e-12)
    if len(scored) == 1 or scored[0][0] - scored[1][0] > 1e-6:
        assert tuple(y) == scored[0][1]
    r = belief_propagation(g, lp, schedule=schedule, use_max=True)
    assert r.converged and r.log_z == score
    for b in r.var_beliefs:
        assert b.sum() == pytest.approx(1.0)


def test_chain_matches_chain_engine():
    rng = np.random.default_rng(7)
    for T, n in CHAIN_CASES:
        g, lp, factors, log_z, marg = chain_engine_case(T, n, rng)
        for schedule in ("flooding", "trp"):
            r = belief_propagation(g, lp, schedule=schedule)
            assert_matches_chain_engine(r, g, factors, log_z, marg)


# --------------------------------------------------------------------------
# loopy graphs


@SETTINGS
@given(n_vars=st.integers(3, 10), n_factors=st.integers(2, 12), seed=st.integers(0, 2**32 - 1),
       schedule=st.sampled_from(["flooding", "trp"]))
def test_loopy_weak_potentials_close_to_exact(n_vars, n_factors, seed, schedule):
    """Sparse loopy graphs (at most n_vars + 2 non-unary factors, like a
    chain plus skip edges) with weak potentials: BP converges and its
    marginals are within 0.05 of exact (worst seen over 6000 random cases
    with these settings: 0.033)."""
    rng = np.random.default_rng(seed)
    card, factors = loopy_graph(n_vars, min(n_factors, n_vars + 2), rng)
    g = FactorGraph.from_factors(card, factors)
    lp = potentials(g, rng, 0.2)
    ex = exact(g, lp)
    r = belief_propagation(g, lp, schedule=schedule)
    msg = (f"{schedule}: Bethe log Z {r.log_z:.6f} vs exact {ex.log_z:.6f}, "
           f"{r.iterations} iterations, {g.n_cycles()} cycles")
    assert r.converged, msg
    for v in range(g.n_vars):
        np.testing.assert_allclose(r.var_beliefs[v], ex.var_beliefs[v], atol=0.05, err_msg=msg)
    assert abs(r.log_z - ex.log_z) < 0.5, msg
    # every normalised block sums to one
    for f in range(g.n_factors):
        assert r.factor_beliefs[g.tab_ptr[f]:g.tab_ptr[f + 1]].sum() == pytest.approx(1.0)


def test_loopy_schedules_and_damping_reach_the_same_fixed_point():
    rng = np.random.default_rng(3)
    card, factors = loopy_graph(8, 9, rng)
    g = FactorGraph.from_factors(card, factors)
    lp = potentials(g, rng, 0.5)
    runs = [belief_propagation(g, lp, schedule="flooding"),
            belief_propagation(g, lp, schedule="trp"),
            belief_propagation(g, lp, schedule="flooding", damping=0.5)]
    for r in runs:
        assert r.converged
        assert r.log_z == pytest.approx(runs[0].log_z, abs=1e-8)
        assert_beliefs_close(r, runs[0].var_beliefs, runs[0].factor_beliefs, 1e-8)
    # a warm start from a fixed point stops after one pass
    warm = belief_propagation(g, lp, init=runs[0].messages)
    assert warm.converged and warm.iterations == 1
    # the reported log Z is the Bethe functional of the reported beliefs
    assert bethe_log_z(g, lp, runs[0].var_beliefs, runs[0].factor_beliefs) == \
        pytest.approx(runs[0].log_z, abs=1e-12)


def frustrated_k4(J=0.65, fields=(0.2, 0.1, 0.0, 0.0)):
    """Four binary spins, all pairs coupled antiferromagnetically
    (θ(x, y) = -J if x == y else +J) — every triangle is frustrated — and weak
    fields breaking the flip symmetry."""
    n = len(fields)
    pairs = list(itertools.combinations(range(n), 2))
    g = FactorGraph.from_factors([2] * n, [[i] for i in range(n)] + [list(p) for p in pairs])
    lp = np.concatenate([[h, -h] for h in fields] + [[-J, J, J, -J] for _ in pairs])
    return g, lp


def test_frustrated_graph_flooding_oscillates_trp_converges():
    g, lp = frustrated_k4()
    flood = belief_propagation(g, lp, schedule="flooding", max_iter=500)
    assert not flood.converged and flood.iterations == 500
    assert flood.residual > 0.5  # a sustained oscillation, not slow convergence
    # ... a period-2 limit cycle: passes 500 and 502 agree, 501 differs
    f501 = belief_propagation(g, lp, schedule="flooding", max_iter=501)
    f502 = belief_propagation(g, lp, schedule="flooding", max_iter=502)
    np.testing.assert_allclose(f502.var_beliefs[0], flood.var_beliefs[0], atol=1e-6)
    assert np.abs(f501.var_beliefs[0] - flood.var_beliefs[0]).max() > 0.5
    for seed in range(3):  # whatever tree cover
        trp = belief_propagation(g, lp, schedule="trp", max_iter=500,
                                 trees=g.spanning_trees(seed=seed))
        assert trp.converged and trp.iterations < 150, trp.iterations
    damped = belief_propagation(g, lp, schedule="flooding", damping=0.5, max_iter=500)
    assert damped.converged
    ex = exact(g, lp)
    msg = f"TRP Bethe log Z {trp.log_z:.6f}, exact {ex.log_z:.6f}"
    assert trp.log_z == pytest.approx(damped.log_z, abs=1e-8), msg
    for v in range(4):
        np.testing.assert_allclose(trp.var_beliefs[v], damped.var_beliefs[v], atol=1e-8)
        np.testing.assert_allclose(trp.var_beliefs[v], ex.var_beliefs[v], atol=0.05, err_msg=msg)


@pytest.mark.parametrize("schedule", ["flooding", "trp"])
def test_bethe_gradient_is_factor_belief(schedule):
    """d(Bethe log Z)/dθ_f(x) = b_f(x) at a fixed point (central differences)."""
    rng = np.random.default_rng(11)
    g = FactorGraph.from_factors([2, 3, 2, 2], [[0, 1], [1, 2], [2, 3], [3, 0], [0, 2, 1], [1]])
    assert g.n_cycles() > 0
    lp = potentials(g, rng, 0.4)
    r = belief_propagation(g, lp, schedule=schedule, tol=1e-14, max_iter=5000)
    assert r.converged
    eps = 1e-5
    grad = np.empty(g.n_table)
    for i in range(g.n_table):
        d = np.zeros(g.n_table)
        d[i] = eps
        up = belief_propagation(g, lp + d, schedule=schedule, tol=1e-14, max_iter=5000)
        dn = belief_propagation(g, lp - d, schedule=schedule, tol=1e-14, max_iter=5000)
        grad[i] = (up.log_z - dn.log_z) / (2 * eps)
    np.testing.assert_allclose(grad, r.factor_beliefs, atol=1e-6)
    # and it is not the exact gradient (the graph is loopy)
    assert np.abs(exact(g, lp).factor_beliefs - r.factor_beliefs).max() > 1e-6


def test_loopy_max_product_decodes_a_good_assignment():
    rng = np.random.default_rng(5)
    card, factors = loopy_graph(7, 6, rng)
    g = FactorGraph.from_factors(card, factors)
    lp = potentials(g, rng, 1.0)
    ex = exact(g, lp)
    y, score = map_assignment(g, lp, schedule="trp", damping=0.3, max_iter=2000)
    assert y.shape == (7,) and all(0 <= y[v] < card[v] for v in range(7))
    assert score <= ex.map_score + 1e-12
    assert score == pytest.approx(math.fsum(
        lp[g.tab_ptr[f] + table_index(card, vs, y)] for f, vs in enumerate(factors)), abs=1e-12)


# --------------------------------------------------------------------------
# graph structure


@SETTINGS
@given(n_vars=st.integers(1, 12), n_factors=st.integers(0, 14), seed=st.integers(0, 2**32 - 1))
def test_spanning_trees_cover_the_graph(n_vars, n_factors, seed):
    rng = np.random.default_rng(seed)
    card, factors = loopy_graph(n_vars, n_factors, rng, max_arity=4)
    g = FactorGraph.from_factors(card, factors)
    nxg = to_networkx(g)
    assert nxg.number_of_nodes() == g.n_vars + g.n_factors
    assert nxg.number_of_edges() == g.n_edges
    assert g.n_cycles() == g.n_edges - nxg.number_of_nodes() + nx.number_connected_components(nxg)
    assert g.is_tree() == nx.is_forest(nxg)
    edge_nodes = {d["edge"]: (u, v) for u, v, d in nxg.edges(data=True)}
    trees = g.spanning_trees()
    covered = set()
    for k, t in enumerate(trees):
        sub = nx.Graph()
        sub.add_nodes_from(nxg.nodes)
        sub.add_edges_from(edge_nodes[int(e)] for e in t)
        assert nx.is_forest(sub)
        if k == 0:  # the first spans: as many components as the whole graph
            assert nx.number_connected_components(sub) == nx.number_connected_components(nxg)
        else:       # the others hold only edges not covered before
            assert not covered & {int(e) for e in t}
        covered.update(int(e) for e in t)
        # the two-pass schedule sends each tree edge once in each direction
        se, sd = g.tree_schedule(t)
        assert sorted(zip(se.tolist(), sd.tolist())) == sorted(
            [(int(e), 0) for e in t] + [(int(e), 1) for e in t])
    assert covered == set(range(g.n_edges))
    if g.is_tree():
        assert len(trees) == 1


def test_tree_schedule_is_leaves_to_root_then_back():
    """In the upward half every node sends to its parent only after hearing
    from all its children; the downward half mirrors it."""
    card, factors = mixed_tree_graph(8, np.random.default_rng(2))
    g = FactorGraph.from_factors(card, factors)
    (tree,) = g.spanning_trees()
    se, sd = g.tree_schedule(tree)
    half = len(se) // 2
    V = g.n_vars

    def sender(e, d):
        return ("f", int(g.e_fac[e])) if d == 1 else ("v", int(g.f_var[e]))

    def receiver(e, d):
        return ("v", int(g.f_var[e])) if d == 1 else ("f", int(g.e_fac[e]))

    nxg = to_networkx(g)
    heard: dict = {}
    for e, d in zip(se[:half], sd[:half]):
        s = sender(e, d)
        # all neighbours of s except the receiver have already sent to s
        others = set(nxg.neighbors(s)) - {receiver(e, d)}
        assert others <= heard.get(s, set())
        heard.setdefault(receiver(e, d), set()).add(s)
    assert V + g.n_factors - 1 == half


def test_trp_schedule_is_computed_once_per_graph():
    """Training runs TRP every evaluation: the schedule of the graph's own
    trees is cached, with or without an explicit tree count."""
    g = FactorGraph.from_factors([2, 2, 2], [[0, 1], [1, 2], [0, 2]])
    assert g.trp_schedule()[0] is g.trp_schedule()[0]
    first = g.trp_schedule(g.spanning_trees(3))
    assert g.trp_schedule(g.spanning_trees(3))[0] is first[0]


# --------------------------------------------------------------------------
# the scaled (probability-domain) kernels against the log-space ones


@SETTINGS
@given(n_vars=st.integers(1, 9), n_factors=st.integers(0, 11), seed=st.integers(0, 2**32 - 1),
       schedule=st.sampled_from(["flooding", "trp"]), use_max=st.booleans(),
       damping=st.sampled_from([0.0, 0.5]), scale=st.sampled_from([0.3, 2.0]),
       hard=st.booleans())
def test_scaled_kernels_match_log_space_kernels(n_vars, n_factors, seed, schedule, use_max,
                                                damping, scale, hard):
    """Both kernels run to a tight tolerance reach the same fixed point:
    same log Z (Bethe, or the MAP score), beliefs and decoded score.
    Factors of arity 1-4 exercise the pairwise fast path and the counter
    walk.  On loopy graphs only weak sum-product cases are compared: strong
    or max-product loopy BP may have several fixed points, and the two
    kernels damp differently (log space against probability domain), so
    they may reach different ones."""
    rng = np.random.default_rng(seed)
    card, factors = loopy_graph(n_vars, n_factors, rng, max_arity=4)
    g = FactorGraph.from_factors(card, factors)
    if not g.is_tree():
        use_max, scale = False, 0.3
    lp = potentials(g, rng, scale)
    if hard:
        lp = with_hard_zeros(lp, rng, 0.1)
    assume(np.isfinite(exact(g, lp).map_score))
    kw = dict(schedule=schedule, use_max=use_max, damping=damping, tol=1e-13, max_iter=3000)
    fast = belief_propagation(g, lp, **kw)
    slow = belief_propagation(g, lp, log_domain=True, **kw)
    assume(fast.converged and slow.converged)
    assert fast.log_z == pytest.approx(slow.log_z, abs=1e-8)
    assert_beliefs_close(fast, slow.var_beliefs, slow.factor_beliefs, 1e-8)


def test_scaled_kernels_fall_back_to_log_space_on_underflow():
    """Potentials 2000 apart underflow exp(θ - max θ) to zero: the scaled
    kernel gives up and the log-space one answers, exactly on a chain."""
    g = FactorGraph.from_factors([2, 2, 2], [[0, 1], [1, 2], [0], [2]])
    lp = np.array([0.0, -2000.0, -2000.0, 0.0,      # y0 == y1
                   0.0, -2000.0, -2000.0, 0.0,      # y1 == y2
                   -2000.0, 0.0,                    # y0 = 1 ...
                   0.0, -2000.0])                   # ... against y2 = 0
    ex = exact(g, lp)
    for use_max in (False, True):
        r = belief_propagation(g, lp, use_max=use_max)
        ref = belief_propagation(g, lp, use_max=use_max, log_domain=True)
        assert r.converged and r.log_z == pytest.approx(ref.log_z, abs=1e-9)
        assert r.log_z == pytest.approx(ex.map_score if use_max else ex.log_z, abs=1e-9)
        assert_beliefs_close(r, ex.var_beliefs if not use_max else ref.var_beliefs,
                             ex.factor_beliefs if not use_max else ref.factor_beliefs, 1e-9)


def tied_graph(n_vars, n_extra, rng, scale):
    """A chain whose pairwise factors all share one table (a transition
    template's), ``n_extra`` pairwise factors with tables of their own (loops),
    and 0-2 unary factors per variable, half of them sharing one table."""
    c = int(rng.integers(2, 4))
    factors = [[v, v + 1] for v in range(n_vars - 1)]
    tables = [rng.normal(scale=scale, size=c * c)] * len(factors)
    shared_unary = rng.normal(scale=scale, size=c)
    for v in range(n_vars):
        for _ in range(int(rng.integers(0, 3))):
            factors.append([v])
            tables.append(shared_unary if rng.random() < 0.5 else rng.normal(scale=scale, size=c))
    for _ in range(n_extra if n_vars > 2 else 0):
        factors.append([int(v) for v in rng.choice(n_vars, size=2, replace=False)])
        tables.append(rng.normal(scale=scale, size=c * c))
    return [c] * n_vars, factors, np.concatenate(tables)


@SETTINGS
@given(n_vars=st.integers(2, 9), n_extra=st.integers(0, 3), seed=st.integers(0, 2**32 - 1),
       schedule=st.sampled_from(["flooding", "trp"]), use_max=st.booleans(), hard=st.booleans())
def test_tied_tables_and_repeated_unary_factors(n_vars, n_extra, seed, schedule, use_max, hard):
    """Tables equal to an earlier one share its ψ, and a unary factor's
    belief and Bethe term come from its variable's belief (``bp_scaled``):
    on trees BP still equals exact enumeration, on loopy graphs the
    log-space kernels' fixed point, variables with two unary factors and
    hard zeros included."""
    rng = np.random.default_rng(seed)
    card, factors, lp = tied_graph(n_vars, n_extra, rng, 0.3 if n_extra else 2.0)
    if hard:
        lp = with_hard_zeros(lp, rng, 0.1)
    g = FactorGraph.from_factors(card, factors)
    ex = exact(g, lp)
    assume(np.isfinite(ex.map_score))
    use_max = use_max and g.is_tree()
    kw = dict(schedule=schedule, use_max=use_max, tol=1e-13, max_iter=3000)
    fast = belief_propagation(g, lp, **kw)
    assume(fast.converged)
    if g.is_tree():
        assert fast.log_z == pytest.approx(ex.map_score if use_max else ex.log_z, abs=1e-8)
        if not use_max:
            assert_beliefs_close(fast, ex.var_beliefs, ex.factor_beliefs, 1e-8)
        return
    slow = belief_propagation(g, lp, log_domain=True, **kw)
    assume(slow.converged)
    assert fast.log_z == pytest.approx(slow.log_z, abs=1e-8)
    assert_beliefs_close(fast, slow.var_beliefs, slow.factor_beliefs, 1e-8)
