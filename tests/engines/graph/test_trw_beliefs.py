"""The pairwise factor beliefs of ``fgl.engines.graph.trw_beliefs`` from
scaled tables against the same beliefs taken in log space, entry by entry."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.engines.graph.trw_beliefs import _pairwise_belief, _scaled_pairwise_belief


def _case(rng, n0, n1, spread):
    log_pot = rng.uniform(-spread, spread, n0 * n1)
    r = float(rng.uniform(0.2, 1.0))
    scaled = log_pot / r
    psi = np.exp(scaled - scaled.max())
    lcav = rng.uniform(-spread, spread, n0 + n1)
    return log_pot, psi, lcav, r


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([2, 3, 5, 9]), st.sampled_from([2, 3, 9]),
       st.floats(0.1, 60.0))
def test_scaled_pairwise_beliefs_are_the_log_space_ones(seed, n0, n1, spread):
    log_pot, psi, lcav, r = _case(np.random.default_rng(seed), n0, n1, spread)
    bf_log, bf_scaled = np.empty(n0 * n1), np.empty(n0 * n1)
    want = _pairwise_belief(log_pot, 0, n0, n1, lcav, 0, n0, r, bf_log, np.empty(n0 + n1))
    got = _scaled_pairwise_belief(log_pot, psi, 0, 0, n0, n1, lcav, 0, n0, r, bf_scaled,
                                  np.empty(n0 + n1))
    assert got == pytest.approx(want, rel=1e-11, abs=1e-11)
    np.testing.assert_allclose(bf_scaled, bf_log, rtol=1e-11, atol=1e-300)
    # the share is <b_f, θ_f> + ρ_f H(b_f), taken from the belief and θ directly
    logits = log_pot / r + np.add.outer(lcav[:n0], lcav[n0:]).ravel()
    b = np.exp(logits - logits.max())
    b /= b.sum()
    np.testing.assert_allclose(bf_log, b, rtol=1e-11, atol=1e-300)
    h = -np.sum(b[b > 0] * np.log(b[b > 0]))
    assert got == pytest.approx(b @ log_pot + r * h, rel=1e-9, abs=1e-9 * spread)


def test_a_belief_lost_to_underflow_is_left_to_log_space():
    """ψ peaks at (0, 0), the cavities at (1, 1) by e^1000 each: every
    scaled product underflows, so the scaled form declines (NaN) and the log
    space one puts the belief where the cavities are."""
    log_pot, r = np.array([0.0, -2000.0, -2000.0, -1500.0]), 1.0
    psi = np.exp(log_pot)
    lcav = np.array([-1000.0, 0.0, -1000.0, 0.0])
    bf = np.empty(4)
    assert np.isnan(_scaled_pairwise_belief(log_pot, psi, 0, 0, 2, 2, lcav, 0, 2, r, bf,
                                            np.empty(4)))
    _pairwise_belief(log_pot, 0, 2, 2, lcav, 0, 2, r, bf, np.empty(4))
    np.testing.assert_allclose(bf, [0.0, 0.0, 0.0, 1.0], atol=1e-200)
