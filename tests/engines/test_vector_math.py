"""``fgl.engines.vector_math``'s exp and log against libm's (numpy's), over
their whole ranges and at the edges the callers rely on."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.engines.vector_math import EXP_FLOOR, exp_neg, log_pos
from fgl.jit import njit

ULP = np.finfo(np.float64).eps


@njit(cache=False, fastmath={"contract"}, error_model="numpy")
def _exps(x, out):
    for i in range(x.shape[0]):
        out[i] = exp_neg(x[i])


@njit(cache=False, fastmath={"contract"}, error_model="numpy")
def _logs(y, out):
    for i in range(y.shape[0]):
        out[i] = log_pos(y[i])


def _exp(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    _exps(np.ascontiguousarray(x, dtype=np.float64), out)
    return out


def _log(y: np.ndarray) -> np.ndarray:
    out = np.empty_like(y)
    _logs(np.ascontiguousarray(y, dtype=np.float64), out)
    return out


def test_exp_is_within_two_ulp_over_its_range():
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.exponential(5.0, 200_000), rng.uniform(EXP_FLOOR, 0.0, 200_000),
                        -rng.uniform(0, 1e-3, 1000), [0.0, -0.0, EXP_FLOOR, -1e-300]])
    want = np.exp(x)
    assert np.all(np.abs(_exp(x) - want) <= 2 * ULP * want)


def test_exp_edges():
    out = _exp(np.array([0.0, -np.inf, -800.0, np.nan, -np.log(2.0)]))
    assert out[0] == 1.0 and out[1] == 0.0
    # clamped (the callers never pass below it)
    assert abs(out[2] - np.exp(EXP_FLOOR)) <= 2 * ULP * np.exp(EXP_FLOOR)
    assert np.isnan(out[3])
    assert out[4] == 0.5


def test_log_is_within_two_ulp_over_the_normal_numbers():
    rng = np.random.default_rng(1)
    y = np.concatenate([np.exp(rng.uniform(-700, 700, 200_000)),
                        1.0 + rng.uniform(-1e-6, 1e-6, 1000),
                        np.sqrt(2.0) * (1.0 + rng.uniform(-1e-9, 1e-9, 1000)),
                        [np.finfo(np.float64).tiny, np.finfo(np.float64).max, 0.5, 2.0]])
    want = np.log(y)
    got = _log(y)
    # relative to the result, or to one ulp of log 2 near y = 1 where log y -> 0
    assert np.all(np.abs(got - want) <= 2 * ULP * np.maximum(np.abs(want), ULP))
    assert _log(np.array([1.0]))[0] == 0.0


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=-745.0, max_value=0.0))
def test_exp_matches_libm_everywhere_it_is_asked(x):
    want = np.exp(max(x, EXP_FLOOR))
    assert abs(_exp(np.array([x]))[0] - want) <= 2 * ULP * want


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=2.2250738585072014e-308, allow_infinity=False))
def test_log_matches_libm_on_any_normal_number(y):
    want = np.log(y)
    assert abs(_log(np.array([y]))[0] - want) <= 2 * ULP * max(abs(want), ULP)
