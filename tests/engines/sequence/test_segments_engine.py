"""The exact high-order semi-Markov engine (``fgl.engines.sequence.segments``,
Cuong et al. 2014 §2) at the level of potential tables, against exhaustive
enumeration of every segmentation (with per-label length limits and with
no two adjacent segments of one label), the shared oracle cases, and the
chain engine (L = 1).  Each implementation is checked on its own: the
log-space span kernel, the general scaled path and the factored scaled
path (the last two may give up, never be wrong)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.brute_force import semimarkov_brute_force
from support.paths import require_shared

from fgl.engines.sequence import segments as sm
from fgl.engines.sequence import segments_batch, span_lattice
from fgl.engines.sequence.chain import pattern_marginals, viterbi
from fgl.engines.sequence.scaling import (
    MAX_EXPONENT,
    MIN_EXPONENT,
    static_cumulative,
    static_tables,
)
from fgl.engines.sequence.segments import segment_marginals, segment_viterbi
from fgl.engines.sequence.structure import ChainStructure

RTOL, ATOL = 1e-9, 1e-12
SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
FINITE = dict(allow_nan=False, allow_infinity=False)


@st.composite
def semi_problems(draw, max_n=3, max_T=6, max_L=3, max_len=4, elements=None, constrained=True):
    """(n, patterns, L, pot[T, L, |Z|], limits, distinct): singles first,
    extra segment-label patterns of length 2..max_len (orders up to 3),
    sometimes shuffled; per-label limits in 1..L and the no-equal-neighbours
    rule when ``constrained`` (two labels or more for it)."""
    n = draw(st.integers(1, max_n))
    T = draw(st.integers(1, max_T))
    L = draw(st.integers(1, max_L))
    labels = st.integers(0, n - 1)
    pattern = st.integers(2, max_len).flatmap(
        lambda m: st.lists(labels, min_size=m, max_size=m).map(tuple))
    patterns = [(a,) for a in range(n)] + list(dict.fromkeys(draw(st.lists(pattern, max_size=6))))
    if draw(st.booleans()):
        patterns = list(draw(st.permutations(patterns)))
    if elements is None:
        elements = st.floats(-3.0, 3.0, **FINITE)
    pot = draw(hnp.arrays(np.float64, (T, L, len(patterns)), elements=elements))
    limits = np.full(n, L, dtype=np.int64)
    distinct = False
    if constrained:
        limits = np.array(draw(st.lists(st.integers(1, L), min_size=n, max_size=n)))
        distinct = n > 1 and draw(st.booleans())
    return n, patterns, L, pot, limits, distinct


def _brute(n, patterns, L, pot, limits=None, distinct=False):
    T = pot.shape[0]
    dense = {}
    for k in range(len(patterns)):
        table = np.zeros((T, T))
        for u in range(T):
            for d in range(1, min(L, T - u) + 1):
                table[u, u + d - 1] = pot[u, d - 1, k]
        dense[k] = table
    return semimarkov_brute_force(n, patterns, L, dense, limits, distinct)


def _brute_marg(b_marg, T, L, k):
    """The oracle's marginals of pattern k as [T, L] (span (u, d) at [u, d-1])."""
    return np.array([[b_marg[k][u, u + d - 1] if u + d <= T else 0.0 for d in range(1, L + 1)]
                     for u in range(T)])


def _check(n, patterns, L, pot, limits=None, distinct=False):
    T = pot.shape[0]
    st_ = ChainStructure.build(n, patterns)
    log_z, marg = segment_marginals(st_, pot, limits, distinct)
    b_log_z, b_marg, b_segs, b_score = _brute(n, patterns, L, pot, limits, distinct)
    scale = ATOL * max(1.0, float(np.abs(pot).sum()))
    np.testing.assert_allclose(log_z, b_log_z, rtol=RTOL, atol=scale)
    for k in range(len(patterns)):
        np.testing.assert_allclose(marg[:, :, k], _brute_marg(b_marg, T, L, k), rtol=RTOL,
                                   atol=ATOL)
    segs, score = segment_viterbi(st_, pot, limits, distinct)
    np.testing.assert_allclose(score, b_score, rtol=RTOL, atol=scale)
    # the returned segmentation is valid and scores what was claimed
    cap = np.full(n, L) if limits is None else limits
    assert segs[0][0] == 0 and segs[-1][1] == T - 1
    assert all(b[0] == a[1] + 1 for a, b in zip(segs, segs[1:]))
    assert all(1 <= v - u + 1 <= cap[y] for u, v, y in segs)
    assert not distinct or all(a[2] != b[2] for a, b in zip(segs, segs[1:]))
    rescored = 0.0
    for j, (u, v, _) in enumerate(segs):
        for k, z in enumerate(patterns):
            if j + 1 >= len(z) and tuple(s[2] for s in segs[j - len(z) + 1:j + 1]) == tuple(z):
                rescored += pot[u, v - u, k]
    np.testing.assert_allclose(rescored, score, rtol=RTOL, atol=scale)


@settings(max_examples=250, deadline=None)
@given(semi_problems(constrained=False))
def test_random_models_match_brute_force(problem):
    _check(*problem)


@settings(max_examples=250, deadline=None)
@given(semi_problems())
def test_limits_and_distinct_neighbours_match_brute_force(problem):
    """Per-label limits and `adjacent distinct`: log Z, marginals and the
    MAP segmentation of every path the public API may take."""
    _check(*problem)


@settings(max_examples=80, deadline=None)
@given(semi_problems(elements=st.floats(-40.0, 40.0, **FINITE)))
def test_large_potentials_match_brute_force(problem):
    _check(*problem)


# --------------------------------------------------------------------------
# each path on its own, in the engine's label numbering


def _engine(st_, limits):
    order = sm.label_order(limits)
    return order, sm.engine_structure(st_, order), limits[order]


@settings(max_examples=300, **SLOW)
@given(semi_problems(elements=st.sampled_from([0.5, 2.0, 30.0, 1000.0]).flatmap(
    lambda s: st.floats(-s, s, **FINITE))))
def test_each_path_matches_brute_force(problem):
    """The span kernel in log space always, the general scaled path whenever
    it does not give up (it must not with small potentials)."""
    n, patterns, L, pot, limits, distinct = problem
    T = pot.shape[0]
    _, est, lim = _engine(ChainStructure.build(n, patterns), limits)
    b_log_z, b_marg, _, _ = _brute(n, patterns, L, pot, limits, distinct)
    atol = ATOL * max(1.0, float(np.abs(pot).sum()))
    work = span_lattice.workspace(T, L, est.tables)
    log_z = span_lattice.sequence_marginals(pot, T, est.tables, lim, work, distinct)
    runs = [(log_z, work.marg.copy())]
    work = span_lattice.workspace(T, L, est.tables)
    sc = static_tables(np.zeros(len(patterns)), np.ones(len(patterns), np.bool_), est.tables)
    fast = sm.scaled_sequence(pot, T, est.tables, sc, span_lattice.label_counts(lim, L), distinct,
                              work, sm.scaled_workspace(T, L, n, est.n_forward))
    if np.abs(pot).max() < 1.0:
        assert np.isfinite(fast)
    event("scaled path exact" if np.isfinite(fast) else "scaled path gave up")
    if np.isfinite(fast):
        runs.append((fast, work.marg))
    for got_z, got_marg in runs:
        np.testing.assert_allclose(got_z, b_log_z, rtol=RTOL, atol=atol)
        for k in range(len(patterns)):
            np.testing.assert_allclose(got_marg[:, :, est.pattern_s[k]],
                                       _brute_marg(b_marg, T, L, k), rtol=RTOL, atol=ATOL)


@settings(max_examples=300, **SLOW)
@given(semi_problems(elements=st.sampled_from([0.5, 2.0, 30.0, 1000.0]).flatmap(
    lambda s: st.floats(-s, s, **FINITE))))
def test_factored_path_matches_brute_force(problem):
    """Longer patterns static (the same potential on every span): each
    span's label marginals, and the expected number of times each transition
    is taken, agree with the oracle."""
    n, patterns, L, pot, limits, distinct = problem
    T = pot.shape[0]
    longer = np.array([len(z) > 1 for z in patterns])
    pot[:, :, longer] = pot[0, 0, longer]
    order, est, lim = _engine(ChainStructure.build(n, patterns), limits)
    tables = est.tables
    P, S = est.n_forward, est.n_backward
    sc = static_tables(np.where(longer, pot[0, 0], 0.0), ~longer, tables)
    cum = static_cumulative(sc.static_exp, tables)
    if distinct:
        cum = segments_batch.distinct_cumulative(cum, tables)
    c_lo = min(1.0, sc.cum_lo[1:].min()) if P > 1 else 1.0
    c_hi = max(1.0, sc.cum_hi[1:].max()) if P > 1 else 1.0
    if c_hi > np.exp(MAX_EXPONENT) or c_lo < np.exp(MIN_EXPONENT):
        event("factored path not taken")
        return  # the batch kernel takes the general path (tested above)
    fast_pot = pot.copy()
    fast_pot[:, :, longer] = np.nan  # read from ``cum``, never from pot
    ws = sm.scaled_workspace(T, L, n, P)
    taken = np.zeros(S)
    fast_z = sm.factored_sequence(fast_pot, T, tables, cum, c_lo, c_hi,
                                  span_lattice.label_counts(lim, L),
                                  span_lattice.workspace(T, L, tables), ws, taken)
    if np.abs(pot).max() < 1.0:
        assert np.isfinite(fast_z)
    event("factored path exact" if np.isfinite(fast_z) else "factored path gave up")
    if not np.isfinite(fast_z):
        np.testing.assert_array_equal(taken, 0.0)  # untouched when it gives up
        return
    b_log_z, b_marg, _, _ = _brute(n, patterns, L, pot, limits, distinct)
    np.testing.assert_allclose(fast_z, b_log_z, rtol=RTOL,
                               atol=ATOL * max(1.0, float(np.abs(pot).sum())))
    for k, y in enumerate(order):
        np.testing.assert_allclose(ws.lab[:T, :, k],
                                   _brute_marg(b_marg, T, L, patterns.index((int(y),))),
                                   rtol=RTOL, atol=ATOL)
    taken *= cum
    span_lattice.accumulate_up(taken, tables.p_suffix, tables.p_order, n)
    for z in range(len(patterns)):
        want = sum(b_marg[z][u, v] for u in range(T) for v in range(u, T))
        assert taken[est.pattern_s[z]] == pytest.approx(want, rel=RTOL, abs=1e-10)


def test_scaled_path_skips_negligible_long_spans():
    """Long spans far less likely than their tokens one by one are skipped
    (their mass is negligible), not a reason to give up: log Z and the
    marginals still equal the span kernel's."""
    n, T, L = 2, 40, 40
    st_ = ChainStructure.build(n, [(0,), (1,), (0, 1)])
    rng = np.random.default_rng(0)
    pot = rng.normal(0.0, 1.0, (T, L, 3))
    pot[:, 0, :2] += 30.0  # every one-token span scores far above longer ones
    work = span_lattice.workspace(T, L, st_.tables)
    ws = sm.scaled_workspace(T, L, n, st_.n_forward)
    sc = static_tables(np.zeros(3), np.ones(3, np.bool_), st_.tables)
    cnt = span_lattice.label_counts(np.full(n, L), L)
    fast = sm.scaled_sequence(pot, T, st_.tables, sc, cnt, False, work, ws)
    assert np.isfinite(fast) and not ws.weight[:T - 20, 20:].any()
    fast_marg = work.marg.copy()
    slow = span_lattice.sequence_marginals(pot, T, st_.tables, np.full(n, L), work)
    assert fast == pytest.approx(slow, rel=RTOL)
    np.testing.assert_allclose(fast_marg, work.marg, rtol=RTOL, atol=ATOL)


@settings(max_examples=100, deadline=None)
@given(semi_problems(max_T=8, max_L=1, constrained=False))
def test_length_one_segments_are_the_chain_engine(problem):
    n, patterns, _, pot, _, _ = problem
    st_ = ChainStructure.build(n, patterns)
    log_z, marg = segment_marginals(st_, pot)
    c_log_z, c_marg = pattern_marginals(st_, pot[:, 0, :])
    np.testing.assert_allclose(log_z, c_log_z, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(marg[:, 0, :], c_marg, rtol=RTOL, atol=ATOL)
    segs, score = segment_viterbi(st_, pot)
    labels, c_score = viterbi(st_, pot[:, 0, :])
    np.testing.assert_allclose(score, c_score, rtol=RTOL, atol=1e-12)


def test_per_label_length_limits_exclude_long_segments():
    st_ = ChainStructure.build(2, [(0,), (1,)])
    pot = np.zeros((4, 3, 2))
    pot[:, 2, 1] = 10.0  # label 1 loves length-3 segments ...
    _, marg = segment_marginals(st_, pot, max_len=np.array([3, 2]))
    assert np.all(marg[:, 2, 1] == 0.0)  # ... but may not have them
    segs, _ = segment_viterbi(st_, pot, max_len=np.array([3, 2]))
    assert all(v - u + 1 <= 2 for u, v, y in segs if y == 1)


def test_span_kernel_needs_labels_numbered_by_limit():
    st_ = ChainStructure.build(2, [(0,), (1,)])
    pot = np.zeros((3, 2, 2))
    with pytest.raises(ValueError, match="non-increasing length limit"):
        span_lattice.sequence_marginals(pot, 3, st_.tables, np.array([1, 2]),
                                        span_lattice.workspace(3, 2, st_.tables))


def _cases():
    path = require_shared("oracles", "semimarkov_cases.json")
    return json.loads(path.read_text())["cases"]


def test_shared_semimarkov_oracle():
    for c in _cases():
        labels, T, L = c["labels"], c["T"], c["max_segment_length"]
        patterns = [tuple(labels.index(y) for y in p["pattern"]) for p in c["patterns"]]
        st_ = ChainStructure.build(len(labels), patterns)
        pot = np.zeros((T, L, len(patterns)))
        for k, p in enumerate(c["patterns"]):
            for u, v, val in p["potential"]:
                pot[u - 1, v - u, k] = val
        log_z, marg = segment_marginals(st_, pot)
        assert log_z == pytest.approx(c["logZ"], rel=RTOL)
        for k, p in enumerate(c["patterns"]):
            for u, v, val in p["marginal"]:
                assert marg[u - 1, v - u, k] == pytest.approx(val, rel=RTOL, abs=ATOL)
        segs, score = segment_viterbi(st_, pot)
        assert score == pytest.approx(c["map_score"], rel=RTOL)
        assert [[u + 1, v + 1, labels[y]] for u, v, y in segs] == c["map"]
