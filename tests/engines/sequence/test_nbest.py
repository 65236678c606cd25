"""k-best labellings of the chain and semi-Markov engines
(``fgl.engines.sequence.nbest``) against exhaustive enumeration: the k best
scores, labellings that are distinct, valid and score what is claimed, and
every labelling strictly better than the k-th among those returned."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.brute_force import chain_all_scores, semimarkov_matches, semimarkov_segmentations
from test_chain_engine import chain_problems
from test_segments_engine import semi_problems

from fgl.engines.sequence.nbest import chain_nbest, segment_nbest
from fgl.engines.sequence.structure import ChainStructure

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
TOL = 1e-9


def _check_ranking(found: list[tuple[tuple, float]], truth: dict[tuple, float], k: int) -> None:
    """``found`` (labelling, score) best first against every labelling's score."""
    ranked = sorted(truth.values(), reverse=True)
    assert len(found) == min(k, len(truth))
    np.testing.assert_allclose([s for _, s in found], ranked[:len(found)], rtol=TOL, atol=TOL)
    keys = [y for y, _ in found]
    assert len(set(keys)) == len(keys)   # distinct labellings
    for y, s in found:
        np.testing.assert_allclose(s, truth[y], rtol=TOL, atol=TOL)
    last = found[-1][1]
    better = {y for y, s in truth.items() if s > last + TOL}
    assert better <= set(keys)   # nothing strictly better was left out


@settings(**SLOW)
@given(chain_problems(max_n=3, max_T=5), st.integers(1, 12))
def test_chain_kbest_matches_enumeration(problem, k):
    n, patterns, pot = problem
    best = chain_nbest(ChainStructure.build(n, patterns), pot, k)
    assert (best.starts == 1).all()
    found = [(tuple(int(v) for v in y), float(s)) for y, s in zip(best.labels, best.scores)]
    _check_ranking(found, chain_all_scores(n, patterns, pot), k)


def _segment_scores(n, patterns, L, pot, limits, distinct) -> dict[tuple, float]:
    T = pot.shape[0]
    out = {}
    for seg in semimarkov_segmentations(n, T, L, limits, distinct):
        out[tuple(seg)] = sum(pot[u, v - u, k] for k, u, v in
                              semimarkov_matches([tuple(z) for z in patterns], seg))
    return out


@settings(**SLOW)
@given(semi_problems(max_T=5), st.integers(1, 12))
def test_segment_kbest_matches_enumeration(problem, k):
    n, patterns, L, pot, limits, distinct = problem
    best = segment_nbest(ChainStructure.build(n, patterns), pot, k, limits, distinct)
    found = [(tuple(seg), s) for seg, s in best]
    _check_ranking(found, _segment_scores(n, patterns, L, pot, limits, distinct), k)


def test_ties_come_in_one_order():
    """Equal scores everywhere: every labelling ties, and two runs agree."""
    st_ = ChainStructure.build(2, [(0,), (1,), (0, 1)])
    pot = np.zeros((4, 3))
    a, b = chain_nbest(st_, pot, 5), chain_nbest(st_, pot, 5)
    assert len(a.scores) == 5 and (a.scores == 0).all()
    assert (a.labels == b.labels).all()
    assert len({tuple(y) for y in a.labels}) == 5
