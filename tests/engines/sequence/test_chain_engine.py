"""Tests of the exact pattern-sparse chain engine (``fgl.engines.sequence.chain``)
at the level of potential tables, against exhaustive enumeration.

Conventions (0-based t): score(y) = sum_t sum_{z: t >= |z|-1, y[t-|z|+1..t] == z}
pot[t, z]; marginal[t, z] = P(y[t-|z|+1..t] == z), 0 when t < |z|-1.

Sequences are required to have T >= 1 except in ``test_empty_sequence``, which
accepts either a ValueError or the single empty labelling (log Z = 0).

Tolerances: marginals to rtol=1e-9, atol=1e-12. log Z and scores to rtol=1e-9
and an absolute tolerance of 1e-12 times the problem's magnitude
(max(1, sum |pot|)), because a log Z that happens to be near 0 is the
difference of terms of that magnitude.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.brute_force import (
    chain_all_scores,
    chain_brute_force,
    chain_dense_dp,
    chain_score,
    logsumexp,
    semimarkov_brute_force,
)
from support.paths import require_shared, shared_dir

from fgl.engines.sequence.chain import log_partition, pattern_marginals, viterbi
from fgl.engines.sequence.structure import ChainStructure

RTOL = 1e-9
ATOL = 1e-12


def _scalar_atol(pot) -> float:
    return ATOL * max(1.0, float(np.abs(np.asarray(pot)).sum()))


def assert_scalar_close(actual, expected, pot, what):
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=_scalar_atol(pot), err_msg=what)


# ----------------------------------------------------------------------------
# hypothesis strategies
# ----------------------------------------------------------------------------

SMALL = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)
LARGE = st.one_of(
    st.floats(-50.0, 50.0, allow_nan=False, allow_infinity=False),
    st.sampled_from([-50.0, 50.0, -3.0, 3.0, 0.0]),
)


@st.composite
def chain_problems(draw, max_n=3, max_T=6, max_len=4, max_extra=8, elements=SMALL,
                   min_T=1):
    """(n_labels, patterns, pot): every single label first, then distinct extra
    patterns of length 2..max_len; the whole list is sometimes shuffled."""
    n = draw(st.integers(1, max_n))
    T = draw(st.integers(min_T, max_T))
    labels = st.integers(0, n - 1)
    pattern = st.integers(2, max_len).flatmap(
        lambda m: st.lists(labels, min_size=m, max_size=m).map(tuple))
    extras = list(dict.fromkeys(draw(st.lists(pattern, max_size=max_extra))))
    patterns = [(a,) for a in range(n)] + extras
    if draw(st.booleans()):
        patterns = list(draw(st.permutations(patterns)))
    pot = draw(hnp.arrays(np.float64, (T, len(patterns)), elements=elements))
    return n, patterns, pot


def check_against_brute_force(n, patterns, pot):
    """Every engine output against exhaustive enumeration."""
    T, K = pot.shape
    s = ChainStructure.build(n, list(patterns))
    assert [tuple(z) for z in s.patterns] == [tuple(z) for z in patterns]

    b_logz, b_marg, b_labels, b_score = chain_brute_force(n, patterns, pot)

    logz = log_partition(s, pot.copy())
    assert_scalar_close(logz, b_logz, pot, "log_partition")

    logz2, marg = pattern_marginals(s, pot.copy())
    assert_scalar_close(logz2, b_logz, pot, "pattern_marginals logZ")
    marg = np.asarray(marg)
    assert marg.shape == (T, K)
    np.testing.assert_allclose(marg, b_marg, rtol=RTOL, atol=ATOL, err_msg="marginals")

    labels, score = viterbi(s, pot.copy())
    labels = np.asarray(labels)
    assert labels.shape == (T,)
    assert np.issubdtype(labels.dtype, np.integer)
    assert labels.min() >= 0 and labels.max() < n
    assert_scalar_close(score, b_score, pot, "viterbi score")
    # the returned labelling really achieves the optimum
    assert_scalar_close(chain_score(patterns, pot, labels), b_score, pot,
                        "score of the viterbi labelling")
    scores = sorted(chain_all_scores(n, patterns, pot).values(), reverse=True)
    if len(scores) == 1 or scores[0] - scores[1] > 1e-6 * max(1.0, abs(scores[0])):
        np.testing.assert_array_equal(labels, b_labels, err_msg="unique MAP labelling")


# ----------------------------------------------------------------------------
# the oracle itself
# ----------------------------------------------------------------------------

class TestBruteForceOracle:
    """The brute force must be right, or every comparison is meaningless."""

    def test_singles_T1(self):
        a, b = 0.3, -1.2
        logz, marg, best, score = chain_brute_force(2, [(0,), (1,)], np.array([[a, b]]))
        assert logz == pytest.approx(math.log(math.exp(a) + math.exp(b)), rel=1e-15)
        pa = math.exp(a) / (math.exp(a) + math.exp(b))
        np.testing.assert_allclose(marg, [[pa, 1 - pa]], rtol=1e-14)
        assert list(best) == [0] and score == a

    def test_singles_T2_factorises(self):
        pot = np.array([[0.5, 2.0], [-1.0, -0.25]])
        logz, marg, best, score = chain_brute_force(2, [(0,), (1,)], pot)
        expect = sum(math.log(math.exp(r[0]) + math.exp(r[1])) for r in pot)
        assert logz == pytest.approx(expect, rel=1e-15)
        for t in range(2):
            e = np.exp(pot[t]) / np.exp(pot[t]).sum()
            np.testing.assert_allclose(marg[t], e, rtol=1e-14)
        assert list(best) == [1, 1] and score == pytest.approx(1.75)

    def test_pair_pattern_by_hand(self):
        # patterns: 0, 1, (0,1); T = 2. Labellings: 00, 01, 10, 11.
        pot = np.array([[0.1, 0.2, 9.0],    # (0,1) at t=0 never fires
                        [0.3, 0.4, 1.5]])
        s00 = 0.1 + 0.3
        s01 = 0.1 + 0.4 + 1.5
        s10 = 0.2 + 0.3
        s11 = 0.2 + 0.4
        Z = math.exp(s00) + math.exp(s01) + math.exp(s10) + math.exp(s11)
        logz, marg, best, score = chain_brute_force(2, [(0,), (1,), (0, 1)], pot)
        assert logz == pytest.approx(math.log(Z), rel=1e-15)
        assert marg[0, 2] == 0.0
        assert marg[1, 2] == pytest.approx(math.exp(s01) / Z, rel=1e-14)
        assert marg[0, 0] == pytest.approx((math.exp(s00) + math.exp(s01)) / Z, rel=1e-14)
        assert list(best) == [0, 1] and score == pytest.approx(s01, rel=1e-15)

    def test_huge_potentials_stay_finite(self):
        pot = np.array([[1000.0, -1000.0], [800.0, 800.0]])
        logz, marg, _, _ = chain_brute_force(2, [(0,), (1,)], pot)
        assert logz == pytest.approx(1800.0 + math.log(2.0), rel=1e-15)
        np.testing.assert_allclose(marg, [[1.0, 0.0], [0.5, 0.5]], atol=1e-15)

    def test_logsumexp(self):
        assert logsumexp([]) == -math.inf
        assert logsumexp([-math.inf, -math.inf]) == -math.inf
        assert logsumexp([0.0, 0.0]) == pytest.approx(math.log(2), rel=1e-15)
        assert logsumexp([-1e4, 0.0]) == 0.0

    @settings(max_examples=25, deadline=None)
    @given(chain_problems(max_n=3, max_T=5))
    def test_dense_dp_agrees_with_enumeration(self, problem):
        n, patterns, pot = problem
        logz, _, _, best = chain_brute_force(n, patterns, pot)
        d_logz, d_best = chain_dense_dp(n, patterns, pot)
        assert d_logz == pytest.approx(logz, rel=1e-12, abs=1e-12)
        assert d_best == pytest.approx(best, rel=1e-12, abs=1e-12)

    def test_semimarkov_L1_reduces_to_chain(self):
        rng = np.random.default_rng(7)
        patterns = [(0,), (1,), (2,), (1, 0), (2, 1, 0)]
        T = 4
        pot = rng.normal(size=(T, len(patterns)))
        sm_pot = {k: np.diag(pot[:, k]) for k in range(len(patterns))}
        c = chain_brute_force(3, patterns, pot)
        s = semimarkov_brute_force(3, patterns, 1, sm_pot)
        assert s[0] == pytest.approx(c[0], rel=1e-14)
        for k in range(len(patterns)):
            np.testing.assert_allclose(np.diag(s[1][k]), c[1][:, k], rtol=1e-12, atol=1e-15)
        assert [lab for _, _, lab in s[2]] == list(c[2])
        assert s[3] == pytest.approx(c[3], rel=1e-14)

    def test_semimarkov_by_hand(self):
        # n = 1, T = 2, L = 2: segmentations {[0,0],[1,1]} and {[0,1]}.
        pot = {0: np.array([[0.5, 2.0], [0.0, -0.5]]), 1: np.full((2, 2), 1.0)}
        logz, marg, best, score = semimarkov_brute_force(1, [(0,), (0, 0)], 2, pot)
        a = 0.5 + (-0.5) + 1.0       # two unit segments; (0,0) fires at the second
        b = 2.0                      # one segment of length 2
        assert logz == pytest.approx(math.log(math.exp(a) + math.exp(b)), rel=1e-15)
        pb = math.exp(b) / (math.exp(a) + math.exp(b))
        assert marg[0][0, 1] == pytest.approx(pb, rel=1e-14)
        assert marg[0][0, 0] == pytest.approx(1 - pb, rel=1e-14)
        assert marg[1][1, 1] == pytest.approx(1 - pb, rel=1e-14)
        assert marg[1][0, 0] == 0.0 and marg[1][0, 1] == 0.0
        assert best == [(0, 1, 0)] and score == b


def _oracle_cases(name):
    path = shared_dir() / "oracles" / name
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"{path} absent (the ../shared directory next to the repo is missing)"),
            id="absent")]
    cases = json.loads(path.read_text())["cases"]
    return [pytest.param(c, id=f"case{i}") for i, c in enumerate(cases)]


def _chain_case(case):
    lab = {name: i for i, name in enumerate(case["labels"])}
    patterns = [tuple(lab[a] for a in p["pattern"]) for p in case["patterns"]]
    pot = np.array([p["potential"] for p in case["patterns"]], dtype=np.float64).T.copy()
    marg = np.array([p["marginal"] for p in case["patterns"]], dtype=np.float64).T
    mp = np.array([lab[a] for a in case["map"]], dtype=np.int64)
    return len(lab), patterns, pot.reshape(case["T"], len(patterns)), marg, mp


@pytest.mark.parametrize("case", _oracle_cases("chain_cases.json"))
def test_brute_force_matches_shared_chain_oracle(case):
    n, patterns, pot, marg, mp = _chain_case(case)
    logz, m, best, score = chain_brute_force(n, patterns, pot)
    assert logz == pytest.approx(case["logZ"], rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(m, marg, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(best, mp)
    assert score == pytest.approx(case["map_score"], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("case", _oracle_cases("semimarkov_cases.json"))
def test_brute_force_matches_shared_semimarkov_oracle(case):
    lab = {name: i for i, name in enumerate(case["labels"])}
    T, L = case["T"], case["max_segment_length"]
    patterns = [tuple(lab[a] for a in p["pattern"]) for p in case["patterns"]]
    pot, expect = {}, {}
    for k, p in enumerate(case["patterns"]):
        pot[k] = np.full((T, T), np.nan)          # unused spans must never be read
        expect[k] = np.zeros((T, T))
        for u, v, x in p["potential"]:
            pot[k][u - 1, v - 1] = x
        for u, v, x in p["marginal"]:
            expect[k][u - 1, v - 1] = x
    logz, marg, best, score = semimarkov_brute_force(len(lab), patterns, L, pot)
    assert logz == pytest.approx(case["logZ"], rel=1e-12, abs=1e-12)
    for k in pot:
        np.testing.assert_allclose(marg[k], expect[k], rtol=1e-9, atol=1e-12)
    assert [(u + 1, v + 1, case["labels"][a]) for u, v, a in best] == \
        [tuple(x) for x in case["map"]]
    assert score == pytest.approx(case["map_score"], rel=1e-12, abs=1e-12)


# ----------------------------------------------------------------------------
# the engine: structure
# ----------------------------------------------------------------------------

class TestStructure:
    def test_missing_single_label_raises(self):
        with pytest.raises(ValueError):
            ChainStructure.build(3, [(0,), (2,), (0, 1)])

    def test_missing_all_singles_raises(self):
        with pytest.raises(ValueError):
            ChainStructure.build(2, [(0, 1), (1, 0)])

    def test_patterns_kept_in_order(self):
        pats = [(1, 0), (1,), (0, 0, 1), (0,)]
        s = ChainStructure.build(2, pats)
        assert [tuple(z) for z in s.patterns] == pats

    def test_appendix_b_state_counts(self):
        # Cuong et al. 2014 Appendix B: Z = {P, O, L, LOL}; P = {eps, P, O, L, LO} and
        # S = {P, O, L, PP, PO, PL, OP, OO, OL, LP, LO, LL, LOP, LOO, LOL}.
        s = ChainStructure.build(3, [(0,), (1,), (2,), (2, 1, 2)])
        assert s.n_forward == 5
        assert s.n_backward == 15


# ----------------------------------------------------------------------------
# the engine: Cuong et al. 2014 Appendix B (ln Z = 12.696, Table 14)
# ----------------------------------------------------------------------------

# labels P=0, O=1, L=2; patterns P, O, L, LOL; Table 11 potentials (rows t = 1..8)
APPENDIX_B_PATTERNS = [(0,), (1,), (2,), (2, 1, 2)]
APPENDIX_B_POT = np.array([
    [1, 0, 0, 0],
    [0, 1, 0, 0],
    [0, 1, 0, 0],
    [0, 0, 1, 0],
    [0, 1, 0, 0],
    [0, 0, 1, 1],
    [0, 1, 0, 0],
    [0, 1, 0, 0],
], dtype=np.float64)
APPENDIX_B_TABLE14 = np.array([
    [0.58, 0.21, 0.21, 0.00],
    [0.21, 0.58, 0.21, 0.00],
    [0.21, 0.58, 0.21, 0.03],
    [0.16, 0.16, 0.68, 0.08],
    [0.16, 0.68, 0.16, 0.01],
    [0.16, 0.16, 0.68, 0.39],
    [0.21, 0.58, 0.21, 0.01],
    [0.21, 0.58, 0.21, 0.08],
])


def test_appendix_b_brute_force_matches_paper():
    logz, marg, best, score = chain_brute_force(3, APPENDIX_B_PATTERNS, APPENDIX_B_POT)
    assert round(logz, 3) == 12.696
    np.testing.assert_allclose(marg, APPENDIX_B_TABLE14, atol=0.005 + 1e-12)


def test_appendix_b_log_partition_is_12_696():
    s = ChainStructure.build(3, APPENDIX_B_PATTERNS)
    logz = log_partition(s, APPENDIX_B_POT.copy())
    assert round(logz, 3) == 12.696
    assert logz == pytest.approx(12.695659919508063, rel=1e-12)


def test_appendix_b_marginals_table14():
    s = ChainStructure.build(3, APPENDIX_B_PATTERNS)
    logz, marg = pattern_marginals(s, APPENDIX_B_POT.copy())
    assert round(logz, 3) == 12.696
    np.testing.assert_allclose(marg, APPENDIX_B_TABLE14, atol=0.005 + 1e-12)
    _, b_marg, _, _ = chain_brute_force(3, APPENDIX_B_PATTERNS, APPENDIX_B_POT)
    np.testing.assert_allclose(marg, b_marg, rtol=RTOL, atol=ATOL)


def test_appendix_b_viterbi():
    s = ChainStructure.build(3, APPENDIX_B_PATTERNS)
    labels, score = viterbi(s, APPENDIX_B_POT.copy())
    np.testing.assert_array_equal(labels, [0, 1, 1, 2, 1, 2, 1, 1])   # P O O L O L O O
    assert score == pytest.approx(9.0, rel=1e-12)


# ----------------------------------------------------------------------------
# the engine: shared oracle file
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("case", _oracle_cases("chain_cases.json"))
def test_engine_matches_shared_chain_oracle(case):
    n, patterns, pot, marg_expect, map_expect = _chain_case(case)
    s = ChainStructure.build(n, patterns)
    logz = log_partition(s, pot.copy())
    assert_scalar_close(logz, case["logZ"], pot, "logZ")
    logz2, marg = pattern_marginals(s, pot.copy())
    assert_scalar_close(logz2, case["logZ"], pot, "pattern_marginals logZ")
    np.testing.assert_allclose(marg, marg_expect, rtol=RTOL, atol=ATOL)
    labels, score = viterbi(s, pot.copy())
    assert_scalar_close(score, case["map_score"], pot, "map_score")
    assert_scalar_close(chain_score(patterns, pot, labels), case["map_score"], pot,
                        "score of the returned labelling")
    scores = sorted(chain_all_scores(n, patterns, pot).values(), reverse=True)
    if len(scores) == 1 or scores[0] - scores[1] > 1e-6:
        np.testing.assert_array_equal(labels, map_expect)


def test_shared_dir_helper_skips_cleanly():
    """require_shared() on a missing path must skip, not error."""
    with pytest.raises(pytest.skip.Exception):
        require_shared("definitely", "not", "here.json")


# ----------------------------------------------------------------------------
# the engine: property tests against brute force
# ----------------------------------------------------------------------------

@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain_problems(elements=SMALL))
def test_random_small_potentials(problem):
    check_against_brute_force(*problem)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain_problems(elements=LARGE))
def test_random_large_potentials(problem):
    check_against_brute_force(*problem)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain_problems(max_T=4, elements=st.floats(-1000.0, 1000.0)))
def test_random_extreme_potentials(problem):
    """|pot| up to 1000: exp of any single score over/underflows, so only a
    log-space computation (or a scaled one that never loses a state) passes."""
    check_against_brute_force(*problem)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain_problems(max_n=2, max_T=30, max_len=4, min_T=7, elements=LARGE))
def test_long_sequences_against_dense_dp(problem):
    """T up to 30 (too long to enumerate): log Z and the MAP score against an
    explicit n^k-state dynamic programme."""
    n, patterns, pot = problem
    s = ChainStructure.build(n, patterns)
    d_logz, d_best = chain_dense_dp(n, patterns, pot)
    logz, marg = pattern_marginals(s, pot.copy())
    assert_scalar_close(logz, d_logz, pot, "logZ")
    assert_scalar_close(log_partition(s, pot.copy()), d_logz, pot, "log_partition")
    labels, score = viterbi(s, pot.copy())
    assert_scalar_close(score, d_best, pot, "viterbi score")
    assert_scalar_close(chain_score(patterns, pot, labels), d_best, pot,
                        "score of the viterbi labelling")
    singles = [patterns.index((a,)) for a in range(n)]
    np.testing.assert_allclose(marg[:, singles].sum(axis=1), 1.0, rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------
# the engine: internal consistency of marginals
# ----------------------------------------------------------------------------

@st.composite
def full_family_problems(draw, elements=LARGE):
    """Singles + every pair (+ sometimes every triple) + random extras, shuffled."""
    n = draw(st.integers(1, 3))
    T = draw(st.integers(1, 8))
    patterns = [(a,) for a in range(n)]
    patterns += list(itertools.product(range(n), repeat=2))
    with_triples = draw(st.booleans())
    if with_triples:
        patterns += list(itertools.product(range(n), repeat=3))
    extra = st.lists(st.integers(0, n - 1), min_size=4, max_size=4).map(tuple)
    patterns += list(dict.fromkeys(draw(st.lists(extra, max_size=3))))
    patterns = list(draw(st.permutations(patterns)))
    pot = draw(hnp.arrays(np.float64, (T, len(patterns)), elements=elements))
    return n, patterns, pot, with_triples


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(full_family_problems())
def test_marginal_consistency(problem):
    n, patterns, pot, with_triples = problem
    T = pot.shape[0]
    s = ChainStructure.build(n, patterns)
    _, marg = pattern_marginals(s, pot.copy())
    idx = {z: i for i, z in enumerate(patterns)}
    tol = dict(rtol=1e-9, atol=1e-12)

    assert np.all(marg >= -1e-12) and np.all(marg <= 1 + 1e-12)
    single = marg[:, [idx[(a,)] for a in range(n)]]
    np.testing.assert_allclose(single.sum(axis=1), 1.0, **tol)
    for z, i in idx.items():
        np.testing.assert_array_equal(marg[: len(z) - 1, i], 0.0)   # t < |z|-1

    for t in range(1, T):
        for b in range(n):
            # sum over the first label of a pair = single marginal of its last label
            np.testing.assert_allclose(sum(marg[t, idx[(a, b)]] for a in range(n)),
                                       marg[t, idx[(b,)]], **tol)
            # sum over the last label = single marginal of the first one, one step back
            np.testing.assert_allclose(sum(marg[t, idx[(b, c)]] for c in range(n)),
                                       marg[t - 1, idx[(b,)]], **tol)
    if with_triples:
        for t in range(2, T):
            for b, c in itertools.product(range(n), repeat=2):
                np.testing.assert_allclose(sum(marg[t, idx[(a, b, c)]] for a in range(n)),
                                           marg[t, idx[(b, c)]], **tol)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain_problems(max_T=12, elements=SMALL),
       st.lists(st.floats(-700.0, 700.0), min_size=12, max_size=12))
def test_shift_invariance(problem, shifts):
    """Adding c_t to every single-label potential at t adds sum c_t to log Z and
    changes neither the marginals nor the MAP labelling (c_t up to +-700, so a
    non-log-space engine overflows)."""
    n, patterns, pot = problem
    T = pot.shape[0]
    s = ChainStructure.build(n, patterns)
    shifted = pot.copy()
    for a in range(n):
        shifted[:, patterns.index((a,))] += np.asarray(shifts[:T])
    c = math.fsum(shifts[:T])
    logz, marg = pattern_marginals(s, pot.copy())
    logz_s, marg_s = pattern_marginals(s, shifted)
    np.testing.assert_allclose(logz_s, logz + c, rtol=RTOL, atol=1e-9 * max(1.0, abs(c)))
    # float64 rounding of pot+c (|c| <= 700) perturbs each potential by ~1e-13
    np.testing.assert_allclose(marg_s, marg, rtol=1e-8, atol=1e-10)
    lab, best = viterbi(s, pot.copy())
    lab_s, best_s = viterbi(s, shifted)
    np.testing.assert_allclose(best_s, best + c, rtol=RTOL, atol=1e-9 * max(1.0, abs(c)))
    assert chain_score(patterns, pot, lab_s) == pytest.approx(best, rel=1e-9, abs=1e-8)


# ----------------------------------------------------------------------------
# the engine: edge cases
# ----------------------------------------------------------------------------

def test_single_label():
    """n = 1: one labelling; log Z is its score, every reachable marginal is 1."""
    patterns = [(0, 0), (0,), (0, 0, 0)]
    pot = np.array([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0], [0.25, 0.0, -2.0]])
    s = ChainStructure.build(1, patterns)
    expect = 2.0 + (0.5 - 1.0) + (0.25 + 0.0 - 2.0)
    logz, marg = pattern_marginals(s, pot.copy())
    assert logz == pytest.approx(expect, rel=1e-12)
    assert log_partition(s, pot.copy()) == pytest.approx(expect, rel=1e-12)
    np.testing.assert_allclose(marg, [[0, 1, 0], [1, 1, 0], [1, 1, 1]], atol=1e-12)
    labels, score = viterbi(s, pot.copy())
    np.testing.assert_array_equal(labels, [0, 0, 0])
    assert score == pytest.approx(expect, rel=1e-12)


def test_single_position():
    """T = 1: longer patterns never fire, whatever their potential."""
    patterns = [(0,), (1,), (1, 0), (0, 1, 1)]
    pot = np.array([[0.2, -0.7, 100.0, -100.0]])
    s = ChainStructure.build(2, patterns)
    logz, marg = pattern_marginals(s, pot.copy())
    assert logz == pytest.approx(math.log(math.exp(0.2) + math.exp(-0.7)), rel=1e-12)
    p0 = math.exp(0.2) / (math.exp(0.2) + math.exp(-0.7))
    np.testing.assert_allclose(marg, [[p0, 1 - p0, 0.0, 0.0]], rtol=1e-12, atol=1e-15)
    labels, score = viterbi(s, pot.copy())
    np.testing.assert_array_equal(labels, [0])
    assert score == pytest.approx(0.2, rel=1e-12)


@pytest.mark.parametrize("pot", [
    # a state made negligible early by -800 and made dominant later by +1600
    [[0.0, -800.0, 0.0], [0.0, 0.0, 1600.0]],
    # label 1 at t=0 is e^-800 behind (underflows to 0 when exponentiated),
    # then (1,1) gains 1400 at t=1 and t=2 while the 0-path gains 760 at each
    # step (640 behind: small, but not small enough to trigger any fallback).
    # Truth: y = 111, log Z = 2000. A scaled forward pass that drops the state
    # gets log Z = 1520 and NaN marginals.
    [[0.0, -800.0, 0.0], [760.0, 0.0, 1400.0], [760.0, 0.0, 1400.0]],
    # same with e^-736: the state survives as a subnormal, with ~11 bits of
    # precision left (log Z error ~2e-5, NaN marginals at t=0).
    [[0.0, -736.0, 0.0], [760.0, 0.0, 1400.0], [760.0, 0.0, 1400.0]],
], ids=["drop-then-boost", "underflow-lag-800", "subnormal-lag-736"])
def test_underflowed_state_is_not_lost(pot):
    """Log-space stability: a labelling whose prefix is astronomically
    unlikely but whose continuation dominates must still be counted."""
    patterns = [(0,), (1,), (1, 0)] if len(pot) == 2 else [(0,), (1,), (1, 1)]
    check_against_brute_force(2, patterns, np.array(pot))


ADVERSARIAL = st.one_of(
    st.sampled_from([0.0, -700.0, 700.0, -800.0, 800.0, -1400.0, 1400.0]),
    st.floats(-1500.0, 1500.0, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain_problems(max_n=2, min_T=3, max_T=5, max_len=3, max_extra=4, elements=ADVERSARIAL))
def test_random_adversarial_magnitudes(problem):
    """Potentials of several hundred, where exp() of differences sits around the
    float64 underflow threshold (e^-745) and scaling tricks break."""
    check_against_brute_force(*problem)


def test_empty_sequence():
    """T = 0 is either rejected with ValueError or treated as the single empty
    labelling (log Z = 0, no marginals, empty MAP with score 0)."""
    s = ChainStructure.build(2, [(0,), (1,), (0, 1)])
    pot = np.zeros((0, 3))
    try:
        logz, marg = pattern_marginals(s, pot)
    except ValueError:
        return
    assert logz == 0.0
    assert np.asarray(marg).shape == (0, 3)
    assert log_partition(s, pot) == 0.0
    labels, score = viterbi(s, pot)
    assert len(labels) == 0 and score == 0.0
