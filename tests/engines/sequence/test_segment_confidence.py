"""Segment confidence by constrained forward-backward
(``fgl.engines.sequence.constrained.confidences``) against exhaustive
enumeration (``brute_force``): a first-order chain, a high-order chain with
sparse patterns (Ye et al. 2009) and a semi-Markov model with per-label
limits, each on tiny random instances, to 1e-10."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.brute_force import (
    chain_enumerate,
    logsumexp,
    semimarkov_matches,
    semimarkov_segmentations,
)
from support.potential_tables import chain_confidences, segment_confidences

from fgl.engines.sequence.structure import ChainStructure

TOL = 1e-10
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def chain_problems(draw, max_order: int):
    """(n labels, patterns with every single label, potentials [T, |Z|], chunks)."""
    n = draw(st.integers(2, 3))
    T = draw(st.integers(1, 5))
    patterns = [(y,) for y in range(n)]
    for _ in range(draw(st.integers(0, 6))):
        k = draw(st.integers(2, max_order + 1))
        z = tuple(draw(st.integers(0, n - 1)) for _ in range(k))
        if z not in patterns:
            patterns.append(z)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pot = rng.normal(0.0, draw(st.sampled_from([0.5, 2.0, 8.0])), (T, len(patterns)))
    chunks = []
    for _ in range(draw(st.integers(1, 4))):
        u = draw(st.integers(0, T - 1))
        k = draw(st.integers(1, T - u))
        chunks.append((u, [draw(st.integers(0, n - 1)) for _ in range(k)]))
    return n, patterns, pot, chunks


def chain_oracle(n, patterns, pot, chunks):
    items = list(chain_enumerate(n, patterns, pot))
    log_z = logsumexp([s for _, s, _ in items])
    return [math.exp(logsumexp([s for y, s, _ in items if list(y[u:u + len(lab)]) == lab])
                     - log_z) for u, lab in chunks]


@SETTINGS
@given(chain_problems(max_order=1))
def test_first_order_chain_chunk_confidence(problem):
    n, patterns, pot, chunks = problem
    got = chain_confidences(ChainStructure.build(n, patterns), pot, chunks)
    np.testing.assert_allclose(got, chain_oracle(n, patterns, pot, chunks), rtol=TOL, atol=TOL)


@SETTINGS
@given(chain_problems(max_order=3))
def test_high_order_chain_chunk_confidence(problem):
    """Clamping must remove every forward state that disagrees with the
    clamped labels, including states that remember labels before the chunk."""
    n, patterns, pot, chunks = problem
    got = chain_confidences(ChainStructure.build(n, patterns), pot, chunks)
    np.testing.assert_allclose(got, chain_oracle(n, patterns, pot, chunks), rtol=TOL, atol=TOL)


@st.composite
def segment_problems(draw):
    n = draw(st.integers(2, 3))
    T = draw(st.integers(1, 5))
    L = draw(st.integers(1, 3))
    max_len = [draw(st.integers(1, L)) for _ in range(n)]
    max_len[draw(st.integers(0, n - 1))] = 1  # some label must fill every gap
    distinct = draw(st.booleans()) and n >= 3
    patterns = [(y,) for y in range(n)]
    for _ in range(draw(st.integers(0, 4))):
        z = tuple(draw(st.integers(0, n - 1)) for _ in range(draw(st.integers(2, 3))))
        if z not in patterns:
            patterns.append(z)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pot = rng.normal(0.0, 2.0, (T, L, len(patterns)))
    segs = []
    for _ in range(draw(st.integers(1, 4))):
        u = draw(st.integers(0, T - 1))
        y = draw(st.integers(0, n - 1))
        d = draw(st.integers(1, min(max_len[y], T - u)))
        segs.append((u, u + d - 1, y))
    return n, patterns, pot, L, max_len, distinct, segs


@SETTINGS
@given(segment_problems())
def test_semi_markov_segment_confidence(problem):
    """The confidence of (u, v, y) is the total probability of the
    segmentations that contain exactly that segment."""
    n, patterns, pot, L, max_len, distinct, segs = problem
    T = pot.shape[0]
    items = []
    for seg in semimarkov_segmentations(n, T, L, max_len, distinct):
        score = math.fsum(pot[u, v - u, k] for k, u, v in semimarkov_matches(patterns, seg))
        items.append((set(seg), score))
    log_z = logsumexp([s for _, s in items])
    want = [math.exp(logsumexp([s for seg, s in items if x in seg]) - log_z) for x in segs]
    got = segment_confidences(ChainStructure.build(n, patterns), pot, segs,
                              np.array(max_len), distinct)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


def test_a_chunk_of_every_token_has_the_labelling_probability():
    """Clamping the whole sequence leaves one labelling: exp(score - log Z)."""
    st_ = ChainStructure.build(2, [(0,), (1,), (0, 1), (1, 1, 0)])
    pot = np.random.default_rng(3).normal(0, 3, (4, 4))
    items = {y: s for y, s, _ in chain_enumerate(2, st_.patterns, pot)}
    log_z = logsumexp(list(items.values()))
    (got,) = chain_confidences(st_, pot, [(0, [1, 1, 0, 1])])
    assert abs(got - math.exp(items[(1, 1, 0, 1)] - log_z)) < TOL
