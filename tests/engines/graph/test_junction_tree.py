"""Tests of the exact junction-tree engine ``fgl.engines.graph.junction_tree``
(Koller & Friedman 2009 ch. 10) and of its place in the factor-graph
engine: ``infer auto`` (the default), ``infer junction_tree``, and gapped
clique templates such as ``(y[t-2], y[t])``.

Oracles: ``enumeration.exact`` (brute-force enumeration, itself checked against a
from-the-definition enumerator in test_belief_propagation.py) and, for the
max-marginals and MAP score, the enumeration below.  On chains, the
pattern-sparse chain engine.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.graph_cases import CHAIN_CASES, assert_matches_chain_engine, chain_engine_case

from fgl.api import CRF
from fgl.engines.graph.clique_tree import junction_tree_plan
from fgl.engines.graph.enumeration import exact
from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.factor_graph_program import FactorGraphProgram
from fgl.engines.graph.junction_tree import junction_tree
from fgl.errors import FglError
from fgl.io.rows import as_sentences
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.lang.settings import InferSettings
from fgl.learn.objective import Objective
from fgl.registry import choose, compile_model, explain

TOL = 1e-10
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------
# helpers


def random_graph(rng, n_vars: int, n_factors: int) -> tuple[list[int], list[list[int]]]:
    """Cards 1-3, factors of arity 0-3 over distinct variables (cycles
    welcome), some variables in no factor."""
    card = [int(c) for c in rng.integers(1, 4, size=n_vars)]
    factors = []
    for _ in range(n_factors):
        k = min(int(rng.integers(0, 4)), n_vars)
        factors.append([int(v) for v in rng.choice(n_vars, size=k, replace=False)])
    return card, factors


def scores(graph: FactorGraph, log_pot: np.ndarray) -> np.ndarray:
    """score(y) = Σ_f θ_f(y_f) for every assignment, as a [card...] array."""
    card = [int(c) for c in graph.card]
    out = np.zeros(card)
    for y in itertools.product(*[range(c) for c in card]):
        out[y] = math.fsum(
            log_pot[graph.tab_ptr[f] + sum(int(y[v]) * int(s) for v, s in zip(
                graph.factor_vars(f), graph.e_stride[graph.f_ptr[f]:graph.f_ptr[f + 1]]))]
            for f in range(graph.n_factors))
    return out


def normalised(log_v: np.ndarray) -> np.ndarray:
    m = log_v.max()
    if m == -np.inf:
        return np.zeros_like(log_v)
    p = np.exp(log_v - m)
    return p / p.sum()


def chain_with_gap(T: int, n: int, gap: int = 2) -> FactorGraph:
    factors = ([[t] for t in range(T)] + [[t - 1, t] for t in range(1, T)]
               + [[t - gap, t] for t in range(gap, T)])
    return FactorGraph.from_factors([n] * T, factors)


# --------------------------------------------------------------------------
# the engine against brute force


@SETTINGS
@given(n_vars=st.integers(0, 7), n_factors=st.integers(0, 9), seed=st.integers(0, 2**32 - 1),
       scale=st.sampled_from([0.3, 1.0, 3.0]), integer=st.booleans(), hard=st.booleans())
def test_equals_brute_force(n_vars, n_factors, seed, scale, integer, hard):
    rng = np.random.default_rng(seed)
    card, factors = random_graph(rng, n_vars, n_factors)
    g = FactorGraph.from_factors(card, factors)
    if integer:  # ties everywhere
        lp = rng.integers(-1, 2, size=g.n_table).astype(float)
    else:
        lp = rng.normal(scale=scale, size=g.n_table)
    if hard:  # clamped entries
        lp[rng.random(g.n_table) < 0.25] = -np.inf
    ref = exact(g, lp)
    r = junction_tree(g, lp)
    assert r.iterations == 0 and r.residual == 0.0 and r.converged and r.messages is None
    assert r.map_state is None
    if not np.isfinite(ref.log_z):
        assert r.log_z == -np.inf
        assert not np.isnan(r.factor_beliefs).any()
        return
    assert r.log_z == pytest.approx(ref.log_z, abs=TOL)
    for v, (a, b) in enumerate(zip(r.var_beliefs, ref.var_beliefs)):
        np.testing.assert_allclose(a, b, atol=TOL, rtol=0, err_msg=f"variable {v}")
    np.testing.assert_allclose(r.factor_beliefs, ref.factor_beliefs, atol=TOL, rtol=0)

    m = junction_tree(g, lp, use_max=True)
    assert m.map_score == pytest.approx(ref.map_score, abs=TOL)
    assert m.log_z == m.map_score
    sc = scores(g, lp)
    assert sc[tuple(m.map_state)] == pytest.approx(m.map_score, abs=1e-12)
    # beliefs: normalised max-marginals
    V = g.n_vars
    for v in range(V):
        mm = sc.max(axis=tuple(a for a in range(V) if a != v)) if V > 1 else sc
        np.testing.assert_allclose(m.var_beliefs[v], normalised(mm), atol=TOL, rtol=0)
    for f in range(g.n_factors):
        vs = [int(x) for x in g.factor_vars(f)]
        mm = sc.max(axis=tuple(a for a in range(V) if a not in vs)) if V else sc
        mm = mm.transpose(np.argsort(np.argsort(vs))).reshape(-1)
        np.testing.assert_allclose(m.factor_beliefs[g.tab_ptr[f]:g.tab_ptr[f + 1]],
                                   normalised(mm), atol=TOL, rtol=0)


def test_nothing_possible_gives_minus_infinity():
    g = chain_with_gap(4, 2)
    lp = np.full(g.n_table, -np.inf)
    r = junction_tree(g, lp)
    assert r.log_z == -np.inf
    assert all((b == 0).all() for b in r.var_beliefs) and (r.factor_beliefs == 0).all()
    m = junction_tree(g, lp, use_max=True)
    assert m.map_score == -np.inf and len(m.map_state) == 4


def test_bad_inputs():
    g = chain_with_gap(4, 2)
    with pytest.raises(ValueError, match="entries"):
        junction_tree(g, np.zeros(3))
    with pytest.raises(ValueError, match="finite or -inf"):
        junction_tree(g, np.full(g.n_table, np.nan))


def test_chain_matches_chain_engine():
    """A first-order chain against ``fgl.engines.sequence.chain`` (the cases of
    test_belief_propagation.py)."""
    rng = np.random.default_rng(7)
    for T, n in CHAIN_CASES:
        g, lp, factors, log_z, marg = chain_engine_case(T, n, rng)
        assert_matches_chain_engine(junction_tree(g, lp), g, factors, log_z, marg)
        assert junction_tree_plan(g).treewidth == (1 if T > 1 else 0)


def test_long_chain_with_gap_against_exact():
    """Larger than the hypothesis graphs: a chain with a gap-2 and a gap-3 edge."""
    rng = np.random.default_rng(3)
    factors = ([[t] for t in range(9)] + [[t - 1, t] for t in range(1, 9)]
               + [[t - 3, t - 1, t] for t in range(3, 9)])
    g = FactorGraph.from_factors([3] * 9, factors)
    lp = rng.normal(scale=2.0, size=g.n_table)
    ref, r, m = exact(g, lp), junction_tree(g, lp), junction_tree(g, lp, use_max=True)
    assert r.log_z == pytest.approx(ref.log_z, abs=TOL)
    np.testing.assert_allclose(r.factor_beliefs, ref.factor_beliefs, atol=TOL)
    assert m.map_score == pytest.approx(ref.map_score, abs=TOL)
    assert junction_tree_plan(g).treewidth == 3


# --------------------------------------------------------------------------
# the plan


def test_plan_sizes_and_cache():
    assert junction_tree_plan(chain_with_gap(10, 3)).treewidth == 2
    plan = junction_tree_plan(chain_with_gap(10, 3))
    assert (plan.largest_table, plan.complete) == (27, True)
    cycle = FactorGraph.from_factors([2] * 5, [[i, (i + 1) % 5] for i in range(5)])
    assert junction_tree_plan(cycle).treewidth == 2
    grid = FactorGraph.from_factors([3] * 9, [[r * 3 + c, r * 3 + c + 1] for r in range(3)
                                              for c in range(2)]
                                    + [[r * 3 + c, r * 3 + c + 3] for r in range(2)
                                       for c in range(3)])
    p = junction_tree_plan(grid)
    assert p.treewidth == 3 and p.largest_table == 81 and p.fits(81) and not p.fits(80)
    assert junction_tree_plan(grid) is p  # cached on the graph
    empty = FactorGraph.from_factors([], [[]])
    r = junction_tree(empty, np.array([1.5]))
    assert r.log_z == pytest.approx(1.5) and junction_tree(empty, np.array([1.5]),
                                                           use_max=True).map_score == 1.5
    lone = FactorGraph.from_factors([3, 2], [])  # no factors: uniform
    r = junction_tree(lone, np.zeros(0))
    assert r.log_z == pytest.approx(math.log(6))
    np.testing.assert_allclose(r.var_beliefs[0], [1 / 3] * 3)


def test_plan_stops_at_max_table():
    grid = FactorGraph.from_factors([3] * 16, [[r * 4 + c, r * 4 + c + 1] for r in range(4)
                                               for c in range(3)]
                                    + [[r * 4 + c, r * 4 + c + 4] for r in range(3)
                                       for c in range(4)])
    p = junction_tree_plan(grid, max_table=20)
    assert not p.complete and not p.fits(20) and p.largest_table > 20
    with pytest.raises(ValueError, match="max_table=20"):
        junction_tree(grid, np.zeros(grid.n_table), max_table=20)
    full = junction_tree_plan(grid)  # no limit: built again, complete
    assert full.complete and full.treewidth >= 4
    assert junction_tree_plan(grid, max_table=20) is full  # a complete plan answers every limit


# --------------------------------------------------------------------------
# in the factor-graph engine


def program(method: str, **settings) -> FactorGraphProgram:
    s = {"max_table": 30, "damping": 0.0, "max_iter": 200, "tol": 1e-10} if method == "auto" \
        else {"max_table": 30}
    s.update(settings)
    z = np.zeros(1, dtype=np.int64)
    return FactorGraphProgram(z, np.zeros(0, dtype=np.int64), z, z, method,
                              InferSettings(method, **s), False)


class _Data:
    def __init__(self, graphs):
        self.graphs = graphs
        self.n_sequences = len(graphs)


def test_auto_runs_small_cliques_exactly_and_the_rest_by_bp():
    small = chain_with_gap(6, 3)                   # clique tables of 27 entries
    big = FactorGraph.from_factors([4] * 4, [[0, 1], [1, 2], [2, 3], [3, 0]])  # 64 entries
    prog = program("auto")
    rng = np.random.default_rng(0)
    lp_small = rng.normal(size=small.n_table)
    lp_big = rng.normal(scale=0.3, size=big.n_table)
    r = prog.infer(small, lp_small, init=("ignored", "ignored"), tol=1e-3)
    assert r.iterations == 0 and r.messages is None
    assert r.log_z == pytest.approx(exact(small, lp_small).log_z, abs=TOL)
    b = prog.infer(big, lp_big)
    assert b.iterations > 0 and b.messages is not None
    warm = prog.warm_start(_Data([small, big, small]))
    for i, g, lp in [(0, small, lp_small), (1, big, lp_big), (2, small, lp_small)]:
        warm.record(i, prog.infer(g, lp))
    assert warm.latest[0] is None and warm.latest[1] is not None  # exact instances keep none
    note = warm.tighten()
    assert "did not converge" not in note  # exact instances are never stalled
    assert program("auto").warm_start(_Data([small, small])) is None  # nothing to warm
    assert program("junction_tree").warm_start(_Data([small])) is None
    assert program("auto", max_table=10).warm_start(_Data([small])).__class__.__name__ == \
        "WarmStart"


def test_infer_junction_tree_too_large_is_a_clear_error():
    big = FactorGraph.from_factors([4] * 4, [[0, 1], [1, 2], [2, 3], [3, 0]])
    with pytest.raises(FglError) as info:
        program("junction_tree").infer(big, np.zeros(big.n_table))
    msg = str(info.value)
    assert "infer junction_tree" in msg and "64 entries" in msg and "max_table = 30" in msg
    assert "infer junction_tree(max_table = 64)" in msg and "infer loopy" in msg


GAPPED = """
columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
template gap:   (y[t-2], y[t]) ~ bias
{infer}
train {{ max_iter = 15 }}
"""


def _synthetic(n: int = 14, seed: int = 1):
    """Labels A B C whose y[t] mostly follows y[t-2] (period 2 with noise);
    words are noisy copies of the labels."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(2, 7))
        y = [str(rng.choice(list("ABC"))) for _ in range(2)]
        while len(y) < T:
            y.append(y[-2] if rng.random() < 0.8 else str(rng.choice(list("ABC"))))
        y = y[:T]
        X.append([[lab.lower() if rng.random() < 0.6 else str(rng.choice(list("xyz")))]
                  for lab in y])
        Y.append(y)
    return X, Y


def _spec(infer: str = ""):
    return validate(parse_spec(GAPPED.format(infer=infer), "<test>"))


def test_gapped_spec_compiles_trains_and_is_exact(tmp_path):
    X, Y = _synthetic()
    choice = choose(_spec())
    assert choice.engine.name == "factor graph"
    assert "template 'gap' links (y[t-2], y[t]), not a contiguous window" in choice.reason
    assert "exact junction tree where the largest clique table ≤ 10000" in choice.title(_spec())
    crf = CRF(GAPPED.format(infer=""), jobs=1).fit(X, Y)
    pred = crf.predict(X)
    assert crf.training_log.iterations and [len(p) for p in pred] == [len(x) for x in X]
    assert crf.score(X, Y) > 50
    crf.save(tmp_path / "gap.fglm")
    assert CRF.load(tmp_path / "gap.fglm").predict(X) == pred
    # log Z and the objective equal brute-force enumeration (`infer exact`)
    log_z = crf.log_partition(X)
    crf_exact = CRF(GAPPED.format(infer="infer exact"), jobs=1).compile(X, Y)
    crf_exact.weights = crf.weights
    np.testing.assert_allclose(log_z, crf_exact.log_partition(X), atol=1e-9)
    data = as_sentences(X, Y, "train", None)
    jt_model, jt_data = compile_model(_spec(), data)
    ex_model, ex_data = compile_model(_spec("infer exact"), data)
    assert jt_model.program.n_features == ex_model.program.n_features == len(crf.weights)
    w = np.random.default_rng(0).normal(size=len(crf.weights))
    f1, g1 = Objective(jt_model.program, jt_data, jt_model.feat_sigma, jobs=1)(w)
    f2, g2 = Objective(ex_model.program, ex_data, ex_model.feat_sigma, jobs=1)(w)
    assert f1 == pytest.approx(f2, abs=1e-9)
    np.testing.assert_allclose(g1, g2, atol=1e-9)
    assert jt_model.decode(w, jt_data, 1).tokens() == ex_model.decode(w, ex_data, 1).tokens()


def test_explain_reports_treewidth_and_what_runs():
    X, Y = _synthetic()
    data = as_sentences(X, Y, "train", None)
    spec = _spec()
    model, enc = compile_model(spec, data)
    text = explain(spec, model, enc)
    assert "junction tree (min-fill, max_table = 10000): treewidth 2, largest clique table 27" \
        in text
    assert (f"runs: {len(X)} of {len(X)} instances exact by junction tree, "
            "0 by tree-reweighted BP") in text
    spec = _spec("infer loopy")
    model, enc = compile_model(spec, data)
    assert f"without the `infer` line {len(X)} of {len(X)} would run exactly" in \
        explain(spec, model, enc)


def test_infer_junction_tree_on_a_too_large_model_fails_clearly():
    X, Y = _synthetic()
    crf = CRF(GAPPED.format(infer="infer junction_tree(max_table = 10)"), jobs=1)
    with pytest.raises(FglError, match=r"needs a clique table of 27 entries.*max_table = 10"):
        crf.fit(X, Y)


@pytest.mark.parametrize("labels", ["(y[t-2], y[t-1])", "(y[t], y[t-1])", "(y[t-1], y[t+1])",
                                    "(y[t-3], y[t-1], y[t])", "(y[t-3..t-2], y[t])"])
def test_any_distinct_offsets_make_a_clique(labels):
    X, Y = _synthetic(n=8, seed=2)
    data = as_sentences(X, Y, "train", None)
    text = GAPPED.replace("(y[t-2], y[t])", labels)
    spec = validate(parse_spec(text.format(infer=""), "<test>"))
    assert choose(spec).engine.name == "factor graph"
    model, enc = compile_model(spec, data)
    ex_model, ex_data = compile_model(validate(parse_spec(text.format(infer="infer exact"),
                                                          "<test>")), data)
    w = np.random.default_rng(5).normal(size=model.program.n_features)
    f1, g1 = Objective(model.program, enc, model.feat_sigma, jobs=1)(w)
    f2, g2 = Objective(ex_model.program, ex_data, ex_model.feat_sigma, jobs=1)(w)
    assert f1 == pytest.approx(f2, abs=1e-9)
    np.testing.assert_allclose(g1, g2, atol=1e-9)
