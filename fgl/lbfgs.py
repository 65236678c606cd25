"""Limited-memory BFGS with a strong-Wolfe line search, for the learner.

Nocedal & Wright, *Numerical Optimization* (2nd ed., 2006): the two-loop
recursion (Algorithm 7.4) with the initial scaling γ = sᵀy / yᵀy (eq. 7.20),
L-BFGS (Algorithm 7.5), and the line search of Algorithm 3.5 with ``zoom``
(Algorithm 3.6) using safeguarded cubic interpolation (§3.5).  The defaults
follow CRFsuite's L-BFGS (6 corrections, c1 = 1e-4, c2 = 0.9, first step
1/‖g‖), so both trainers take comparable paths.

It lives here rather than in scipy because its memory is what the problem
needs — the iterate, the gradient, one trial point and 2·m correction
vectors — and the learner's objective already hands over a fresh gradient
array per evaluation, which is kept rather than copied.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

Function = Callable[[np.ndarray], tuple[float, np.ndarray]]


@dataclass
class LBFGSResult:
    x: np.ndarray
    f: float
    g: np.ndarray
    iterations: int
    evaluations: int
    converged: bool
    message: str


class _History:
    """The last ``m`` correction pairs (s, y) and ρ = 1/(sᵀy), oldest first;
    the arrays of dropped pairs are reused."""

    def __init__(self, m: int):
        self.m = m
        self.s: list[np.ndarray] = []
        self.y: list[np.ndarray] = []
        self.rho: list[float] = []

    def slots(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Arrays to write the next pair into (the oldest pair's when full)."""
        if len(self.s) < self.m:
            return np.empty(n), np.empty(n)
        self.rho.pop(0)
        return self.s.pop(0), self.y.pop(0)

    def push(self, s: np.ndarray, y: np.ndarray, sy: float) -> None:
        self.s.append(s)
        self.y.append(y)
        self.rho.append(1.0 / sy)

    def direction(self, g: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out = -H·g by the two-loop recursion (Algorithm 7.4)."""
        np.negative(g, out=out)
        alpha = []
        for s, y, rho in zip(reversed(self.s), reversed(self.y), reversed(self.rho)):
            a = rho * float(s @ out)
            out -= a * y
            alpha.append(a)
        if self.s:
            y = self.y[-1]
            out *= 1.0 / (self.rho[-1] * float(y @ y))   # γ = sᵀy / yᵀy
        for s, y, rho, a in zip(self.s, self.y, self.rho, reversed(alpha)):
            b = rho * float(y @ out)
            out += (a - b) * s
        return out


def _cubic_minimiser(a: float, fa: float, da: float, b: float, fb: float, db: float) -> float:
    """The minimiser of the cubic through (a, fa, da) and (b, fb, db)
    (Nocedal & Wright eq. 3.59), or NaN when it has none."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    disc = d1 * d1 - da * db
    if disc < 0.0:
        return math.nan
    d2 = math.copysign(math.sqrt(disc), b - a)
    denom = db - da + 2.0 * d2
    if denom == 0.0:
        return math.nan
    return b - (b - a) * (db + d2 - d1) / denom


class _LineSearch:
    """Find a step along ``d`` meeting the strong Wolfe conditions
    (Algorithms 3.5 and 3.6).  Evaluates ``fun`` at ``x + step·d`` in the
    caller's ``trial`` buffer, which holds the accepted point on return."""

    def __init__(self, fun: Function, c1: float, c2: float, max_evals: int):
        self.fun, self.c1, self.c2, self.max_evals = fun, c1, c2, max_evals
        self.evaluations = 0

    def _point(self, x, d, step, trial):
        np.multiply(d, step, out=trial)
        trial += x

    def _eval(self, x, d, step, trial):
        self._point(x, d, step, trial)
        f, g = self.fun(trial)
        self.evaluations += 1
        return f, g, float(g @ d)

    def search(self, x, f0, d, dphi0, step, trial):
        """(f, g) at an accepted step, or None when ``max_evals`` run out
        without any step of sufficient decrease."""
        self.evaluations = 0
        self.f0, self.dphi0 = f0, dphi0
        lo = (0.0, f0, dphi0, None)  # (step, f, dphi, g): best sufficient decrease so far
        while self.evaluations < self.max_evals:
            f, g, dphi = self._eval(x, d, step, trial)
            if not math.isfinite(f):
                step = 0.5 * (lo[0] + step)  # stepped out of the domain: come back
                continue
            point = (step, f, dphi, g)
            if f > f0 + self.c1 * step * dphi0 or (lo[3] is not None and f >= lo[1]):
                return self._zoom(x, d, trial, lo, point)
            if abs(dphi) <= -self.c2 * dphi0:
                return f, g
            if dphi >= 0.0:
                return self._zoom(x, d, trial, point, lo)
            lo = point
            step *= 2.0
        return self._best(x, d, trial, lo)

    def _zoom(self, x, d, trial, lo, hi):
        """Shrink the bracket between ``lo`` (sufficient decrease, lowest f)
        and ``hi``."""
        f0, dphi0 = self.f0, self.dphi0
        while self.evaluations < self.max_evals:
            a, b = lo[0], hi[0]
            step = _cubic_minimiser(a, lo[1], lo[2], b, hi[1], hi[2])
            # safeguard: stay well inside the bracket, else bisect
            inner_lo, inner_hi = sorted((a + 0.1 * (b - a), b - 0.1 * (b - a)))
            if not inner_lo <= step <= inner_hi:
                step = 0.5 * (a + b)
            f, g, dphi = self._eval(x, d, step, trial)
            if not math.isfinite(f):
                hi = (step, math.inf, math.nan, None)  # forces bisection next
                continue
            point = (step, f, dphi, g)
            if f > f0 + self.c1 * step * dphi0 or f >= lo[1]:
                hi = point
                continue
            if abs(dphi) <= -self.c2 * dphi0:
                return f, g
            if dphi * (b - a) >= 0.0:
                hi = lo
            lo = point
        return self._best(x, d, trial, lo)

    def _best(self, x, d, trial, lo):
        """Out of evaluations: settle for the best step of sufficient
        decrease, if any."""
        step, f, _, g = lo
        if g is None:
            return None
        self._point(x, d, step, trial)
        return f, g


def minimize_lbfgs(fun: Function, x0: np.ndarray, *, m: int = 6, max_iter: int = 200,
                   epsilon: float = 1e-5, c1: float = 1e-4, c2: float = 0.9,
                   max_linesearch: int = 20,
                   callback: Callable[[int, float, np.ndarray, np.ndarray, int], bool] | None = None
                   ) -> LBFGSResult:
    """Minimise ``fun`` (returning f and a fresh gradient array) from ``x0``.

    Stops after ``max_iter`` iterations, when ‖g‖ ≤ ``epsilon``·max(1, ‖x‖)
    (CRFsuite's test), when the line search finds no acceptable step, or
    when ``callback(iteration, f, x, g, evaluations)`` returns True.
    """
    x = np.array(x0, dtype=np.float64)
    n = x.shape[0]
    f, g = fun(x)
    evaluations = 1
    history = _History(m)
    search = _LineSearch(fun, c1, c2, max_linesearch)
    d = np.negative(g)
    trial = np.empty(n)
    gnorm = float(np.linalg.norm(g))
    if gnorm <= epsilon * max(1.0, float(np.linalg.norm(x))):
        return LBFGSResult(x, f, g, 0, evaluations, True, "the initial point is stationary")
    step = 1.0 / gnorm
    for it in range(1, max_iter + 1):
        dphi0 = float(g @ d)
        if not dphi0 < 0.0:  # not a descent direction (rounding): restart along -g
            history = _History(m)
            np.negative(g, out=d)
            dphi0 = -float(g @ g)
        found = search.search(x, f, d, dphi0, step, trial)
        evaluations += search.evaluations
        if found is None:
            return LBFGSResult(x, f, g, it - 1, evaluations, False,
                               "the line search found no step that decreases the objective")
        f, g_new = found
        s, y = history.slots(n)
        np.subtract(trial, x, out=s)
        np.subtract(g_new, g, out=y)
        x, trial = trial, x  # the accepted point becomes the iterate
        g = g_new
        sy = float(s @ y)
        if sy > 1e-10 * float(y @ y):  # curvature condition: keep H positive definite
            history.push(s, y, sy)
        if callback is not None and callback(it, f, x, g, evaluations):
            return LBFGSResult(x, f, g, it, evaluations, True, "stopped by the callback")
        if float(np.linalg.norm(g)) <= epsilon * max(1.0, float(np.linalg.norm(x))):
            return LBFGSResult(x, f, g, it, evaluations, True,
                               f"gradient norm below {epsilon:g}·max(1, |x|)")
        history.direction(g, d)
        step = 1.0
    return LBFGSResult(x, f, g, max_iter, evaluations, False,
                       f"reached the iteration limit ({max_iter})")
