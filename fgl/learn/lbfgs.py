"""Limited-memory BFGS with a strong-Wolfe line search, for the learner.

Nocedal & Wright, *Numerical Optimization* (2nd ed., 2006): the two-loop
recursion (Algorithm 7.4) with the initial scaling γ = sᵀy / yᵀy (eq. 7.20),
L-BFGS (Algorithm 7.5), and the line search of Algorithm 3.5 with ``zoom``
(Algorithm 3.6) using safeguarded cubic interpolation (§3.5).  The defaults
follow CRFsuite's L-BFGS (6 corrections, c1 = 1e-4, c2 = 0.9, first step
1/‖g‖), so both trainers take comparable paths.

It lives here rather than in scipy for its memory, which is what the
problem needs: the iterate, the direction, one trial point, the gradients
(the objective hands over a fresh array per evaluation, kept rather than
copied) and 2·m correction vectors in single precision.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import njit

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
    """The last ``m`` correction pairs s = x_{k+1} - x_k, y = g_{k+1} - g_k.

    They are stored in single precision — 2·m vectors are the optimiser's
    largest buffers, and L-BFGS needs only an approximation of the inverse
    Hessian — while ρ = 1/(sᵀy), yᵀy and every sum of the recursion are
    computed in double precision."""

    def __init__(self, m: int):
        self.m = m
        self.s: np.ndarray | None = None  # [m, n] float32, allocated at the first pair
        self.y: np.ndarray | None = None
        self.order: list[int] = []        # rows in use, oldest first
        self.rho = np.zeros(m)
        self.yy = np.zeros(m)

    def record(self, x_new: np.ndarray, x: np.ndarray, g_new: np.ndarray, g: np.ndarray) -> None:
        """Add the pair of a step, replacing the oldest when full; a pair
        with sᵀy <= 1e-10·yᵀy (no positive curvature) is left out."""
        if self.s is None:
            self.s = np.empty((self.m, len(x)), dtype=np.float32)
            self.y = np.empty((self.m, len(x)), dtype=np.float32)
        if len(self.order) == self.m:
            self.order.pop(0)
        row = next(r for r in range(self.m) if r not in self.order)
        sy, yy = _store_pair(x_new, x, g_new, g, self.s[row], self.y[row])
        if sy > 1e-10 * yy:
            self.order.append(row)
            self.rho[row], self.yy[row] = 1.0 / sy, yy

    def direction(self, g: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out = -H·g by the two-loop recursion (Algorithm 7.4), with
        H₀ = γI, γ = sᵀy / yᵀy of the newest pair (eq. 7.20)."""
        if not self.order:
            return np.negative(g, out=out)
        _two_loop(g, self.s, self.y, self.rho, self.yy, np.array(self.order), out)
        return out


@njit(cache=True, nogil=True)
def _store_pair(x_new, x, g_new, g, s, y):
    """s = x_new - x, y = g_new - g (stored as float32); returns sᵀy and
    yᵀy of the double-precision differences."""
    sy = 0.0
    yy = 0.0
    for i in range(x.shape[0]):
        a = x_new[i] - x[i]
        b = g_new[i] - g[i]
        s[i] = a
        y[i] = b
        sy += a * b
        yy += b * b
    return sy, yy


@njit(cache=True, nogil=True)
def _two_loop(g, s, y, rho, yy, order, out):
    n = g.shape[0]
    count = order.shape[0]
    alpha = np.empty(count)
    for i in range(n):
        out[i] = -g[i]
    for j in range(count - 1, -1, -1):
        k = order[j]
        a = 0.0
        for i in range(n):
            a += s[k, i] * out[i]
        a *= rho[k]
        alpha[j] = a
        for i in range(n):
            out[i] -= a * y[k, i]
    newest = order[count - 1]
    gamma = 1.0 / (rho[newest] * yy[newest])
    for i in range(n):
        out[i] *= gamma
    for j in range(count):
        k = order[j]
        b = 0.0
        for i in range(n):
            b += y[k, i] * out[i]
        c = alpha[j] - b * rho[k]
        for i in range(n):
            out[i] += c * s[k, i]


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
    x = np.array(x0, dtype=np.float64)  # (a copy: the caller's x0 is left as it was)
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
        history.record(trial, x, g_new, g)
        x, trial = trial, x  # the accepted point becomes the iterate
        g = g_new
        if callback is not None and callback(it, f, x, g, evaluations):
            return LBFGSResult(x, f, g, it, evaluations, True, "stopped by the callback")
        if float(np.linalg.norm(g)) <= epsilon * max(1.0, float(np.linalg.norm(x))):
            return LBFGSResult(x, f, g, it, evaluations, True,
                               f"gradient norm below {epsilon:g}·max(1, |x|)")
        history.direction(g, d)
        step = 1.0
    return LBFGSResult(x, f, g, max_iter, evaluations, False,
                       f"reached the iteration limit ({max_iter})")
