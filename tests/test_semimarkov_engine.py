"""The exact high-order semi-Markov engine (``fgl.engines.semimarkov``,
Cuong et al. 2014 §2) at the level of potential tables, against exhaustive
enumeration of every segmentation, the shared oracle cases, and the chain
engine (L = 1)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from brute_force import semimarkov_brute_force
from conftest import require_shared
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fgl.engines.chain import pattern_marginals, viterbi
from fgl.engines.semimarkov import segment_marginals, segment_viterbi
from fgl.engines.structure import ChainStructure

RTOL, ATOL = 1e-9, 1e-12


@st.composite
def semi_problems(draw, max_n=3, max_T=6, max_L=3, max_len=4, elements=None):
    """(n, patterns, L, pot[T, L, |Z|]): singles first, extra segment-label
    patterns of length 2..max_len (orders up to 3), sometimes shuffled."""
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
        elements = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)
    pot = draw(hnp.arrays(np.float64, (T, L, len(patterns)), elements=elements))
    return n, patterns, L, pot


def _brute(n, patterns, L, pot):
    T = pot.shape[0]
    dense = {}
    for k in range(len(patterns)):
        table = np.zeros((T, T))
        for u in range(T):
            for d in range(1, min(L, T - u) + 1):
                table[u, u + d - 1] = pot[u, d - 1, k]
        dense[k] = table
    return semimarkov_brute_force(n, patterns, L, dense)


def _check(n, patterns, L, pot):
    T = pot.shape[0]
    st_ = ChainStructure.build(n, patterns)
    log_z, marg = segment_marginals(st_, pot)
    b_log_z, b_marg, b_segs, b_score = _brute(n, patterns, L, pot)
    scale = ATOL * max(1.0, float(np.abs(pot).sum()))
    np.testing.assert_allclose(log_z, b_log_z, rtol=RTOL, atol=scale)
    for k in range(len(patterns)):
        for u in range(T):
            for d in range(1, L + 1):
                want = b_marg[k][u, u + d - 1] if u + d <= T else 0.0
                np.testing.assert_allclose(marg[u, d - 1, k], want, rtol=RTOL, atol=ATOL)
    segs, score = segment_viterbi(st_, pot)
    np.testing.assert_allclose(score, b_score, rtol=RTOL, atol=scale)
    # the returned segmentation is valid and scores what was claimed
    assert segs[0][0] == 0 and segs[-1][1] == T - 1
    assert all(b[0] == a[1] + 1 and 1 <= b[1] - b[0] + 1 <= L for a, b in zip(segs, segs[1:]))
    rescored = 0.0
    for j, (u, v, _) in enumerate(segs):
        for k, z in enumerate(patterns):
            if j + 1 >= len(z) and tuple(s[2] for s in segs[j - len(z) + 1:j + 1]) == tuple(z):
                rescored += pot[u, v - u, k]
    np.testing.assert_allclose(rescored, score, rtol=RTOL, atol=scale)


@settings(max_examples=250, deadline=None)
@given(semi_problems())
def test_random_models_match_brute_force(problem):
    _check(*problem)


@settings(max_examples=80, deadline=None)
@given(semi_problems(elements=st.floats(-40.0, 40.0, allow_nan=False, allow_infinity=False)))
def test_large_potentials_match_brute_force(problem):
    _check(*problem)


@settings(max_examples=100, deadline=None)
@given(semi_problems(max_T=8, max_L=1))
def test_length_one_segments_are_the_chain_engine(problem):
    n, patterns, _, pot = problem
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
