"""The L-BFGS optimiser (``fgl.learn.lbfgs``): minima of known functions, the
strong Wolfe conditions at every accepted step, agreement with scipy's
L-BFGS-B on a CRF-like convex problem, and its stopping rules."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize, rosen, rosen_der

from fgl.learn.lbfgs import _cubic_minimiser, minimize_lbfgs


def _counted(fun):
    calls = []

    def wrapped(x):
        calls.append(x.copy())
        return fun(x)
    return wrapped, calls


def test_rosenbrock_minimum():
    fun, _ = _counted(lambda x: (float(rosen(x)), rosen_der(x)))
    res = minimize_lbfgs(fun, np.full(6, -1.2), max_iter=500, epsilon=1e-10)
    assert res.converged, res.message
    np.testing.assert_allclose(res.x, np.ones(6), atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 40), st.floats(1.0, 100.0), st.integers(0, 2**16))
def test_quadratic_minimum(n, condition, seed):
    """f = ½ xᵀAx - bᵀx with eigenvalues in [1, condition]: x* = A⁻¹b.
    (Far worse conditioning reaches the floor where rounding in f hides
    any decrease before ‖g‖ gets this small; the line search then stops,
    as in ``test_no_descent_possible_is_reported``.)"""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    A = q @ np.diag(np.geomspace(1.0, condition, n)) @ q.T
    b = rng.normal(size=n)
    res = minimize_lbfgs(lambda x: (0.5 * x @ A @ x - b @ x, A @ x - b), np.zeros(n),
                         max_iter=2000, epsilon=1e-5)
    assert res.converged, res.message
    # |x - x*| <= |g| / (smallest eigenvalue 1)
    x_star = np.linalg.solve(A, b)
    assert np.linalg.norm(res.x - x_star) <= 1e-5 * max(1.0, np.linalg.norm(res.x)) + 1e-12


def test_every_accepted_step_meets_the_strong_wolfe_conditions():
    c1, c2 = 1e-4, 0.9
    f_of = lambda x: (float(rosen(x)), rosen_der(x))  # noqa: E731
    steps = []

    def callback(it, f, x, g, evaluations):
        steps.append((x.copy(), f, g.copy()))
        return False

    x0 = np.array([-1.2, 1.0, -0.5, 2.0])
    minimize_lbfgs(f_of, x0, max_iter=40, callback=callback, epsilon=0.0)
    prev_x, (prev_f, prev_g) = x0, f_of(x0)
    for x, f, g in steps:
        d = x - prev_x  # the accepted step·direction
        slope0 = float(prev_g @ d)
        assert slope0 < 0
        assert f <= prev_f + c1 * slope0 + 1e-12
        assert abs(float(g @ d)) <= c2 * abs(slope0) + 1e-12
        prev_x, prev_f, prev_g = x, f, g


def test_agrees_with_scipy_on_a_logistic_regression():
    """An L2-regularised multinomial logistic regression (a CRF with no
    transitions): the same optimum as scipy's L-BFGS-B."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 15))
    y = rng.integers(0, 4, 200)

    def fun(wflat):
        W = wflat.reshape(15, 4)
        s = X @ W
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        z = p.sum(axis=1, keepdims=True)
        p /= z
        nll = float((np.log(z) + m).sum() - s[np.arange(200), y].sum())
        p[np.arange(200), y] -= 1.0
        return nll + 0.5 * float(wflat @ wflat), (X.T @ p).ravel() + wflat

    ours = minimize_lbfgs(fun, np.zeros(60), max_iter=500, epsilon=1e-9)
    ref = minimize(fun, np.zeros(60), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 500})
    assert ours.f == pytest.approx(ref.fun, rel=1e-10)
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-5)


def test_callback_stops_and_iteration_limit():
    fun = lambda x: (float(rosen(x)), rosen_der(x))  # noqa: E731
    res = minimize_lbfgs(fun, np.full(4, -1.0), callback=lambda it, *_: it == 3)
    assert res.iterations == 3 and res.converged
    res = minimize_lbfgs(fun, np.full(4, -1.0), max_iter=5, epsilon=0.0)
    assert res.iterations == 5 and not res.converged and "limit" in res.message


def test_steps_into_infinity_are_backed_off():
    """f = +inf outside x < 1: the line search comes back into the domain."""
    def fun(x):
        if x[0] >= 1.0:
            return math.inf, np.zeros(1)
        return float(-math.log(1.0 - x[0]) + 0.5 * x[0] ** 2), np.array([1.0 / (1.0 - x[0]) + x[0]])

    res = minimize_lbfgs(fun, np.array([-5.0]), max_iter=100, epsilon=1e-10)
    # minimum where 1/(1-x) + x = 0: x = (1 - sqrt(5)) / 2
    assert res.x[0] == pytest.approx((1 - math.sqrt(5)) / 2, abs=1e-7)


def test_no_descent_possible_is_reported():
    """A wrong gradient (pointing uphill) leaves the line search no step."""
    res = minimize_lbfgs(lambda x: (float(x @ x), -2.0 * x), np.ones(3), max_iter=10)
    assert not res.converged and "line search" in res.message
    np.testing.assert_array_equal(res.x, np.ones(3))


def test_cubic_minimiser_of_a_cubic():
    """The interpolant through two points of a cubic is the cubic itself."""
    f = lambda t: (t - 1.0) ** 3 - 3.0 * (t - 1.0) + 2.0  # noqa: E731   local min at t = 2
    df = lambda t: 3.0 * (t - 1.0) ** 2 - 3.0  # noqa: E731
    assert _cubic_minimiser(1.5, f(1.5), df(1.5), 3.0, f(3.0), df(3.0)) == pytest.approx(2.0)
