"""OWL-QN: L-BFGS for objectives with an L1 term (L1 and elastic net).

Andrew & Gao, "Scalable training of L1-regularized log-linear models"
(ICML 2007), §3: minimise f(x) = ℓ(x) + Σ_k c_k |x_k| with ℓ smooth (the
negative log-likelihood with any Gaussian prior — elastic net when both
are on).  Each iteration

* takes the pseudo-gradient ◇f (§3.1: ∂ℓ + c·sign(x) off zero; at zero the
  one-sided derivative that points downhill, or 0 when neither does);
* turns the L-BFGS direction −H·◇f, whose correction pairs hold gradients
  of ℓ only (§3.2), into one that agrees in sign with −◇f (components that
  do not are zeroed);
* searches along it by backtracking, projecting every trial point onto the
  orthant of the current point (signs of x, or of −◇f where x is 0;
  coordinates that would cross zero stay at exactly 0), until
  f(x') ≤ f(x) + γ·◇f(x)ᵀ(x' − x).

Every accepted step decreases f itself, so the objective with its L1 term
falls monotonically, and weights reach exact zeros.  It shares L-BFGS's
history, state, callback, checkpoint and resume conventions
(``fgl.learn.lbfgs``).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numba import njit

from fgl.learn.lbfgs import (
    Callback,
    Function,
    History,
    LBFGSResult,
    LBFGSState,
    iteration_done,
    recovery_note,
)

GAMMA = 1e-4          # sufficient decrease (Andrew & Gao §3.3)
MAX_BACKTRACKS = 30


@njit(cache=True, nogil=True)
def pseudo_gradient(x, g, c, out):
    """out = ◇f(x) for f = ℓ + Σ c|x| with ∇ℓ(x) = g; returns Σ c|x|."""
    same = c.shape[0] == 1
    penalty = 0.0
    for k in range(x.shape[0]):
        ck = c[0] if same else c[k]
        if x[k] > 0.0:
            out[k] = g[k] + ck
            penalty += ck * x[k]
        elif x[k] < 0.0:
            out[k] = g[k] - ck
            penalty -= ck * x[k]
        elif g[k] + ck < 0.0:
            out[k] = g[k] + ck
        elif g[k] - ck > 0.0:
            out[k] = g[k] - ck
        else:
            out[k] = 0.0
    return penalty


@njit(cache=True, nogil=True)
def _agree(d, pg):
    """Zero the components of direction d that do not descend along −◇f."""
    for k in range(d.shape[0]):
        if d[k] * pg[k] >= 0.0:
            d[k] = 0.0


@njit(cache=True, nogil=True)
def _project_step(x, d, step, pg, out):
    """out = x + step·d projected onto the orthant of x (where x is 0:
    the sign of −◇f); returns ◇f·(out − x)."""
    slope = 0.0
    for k in range(x.shape[0]):
        orthant = x[k] if x[k] != 0.0 else -pg[k]
        v = x[k] + step * d[k]
        if v * orthant <= 0.0:
            v = 0.0
        out[k] = v
        slope += pg[k] * (v - x[k])
    return slope


def l1_penalty(x: np.ndarray, c: np.ndarray) -> float:
    """Σ c_k |x_k| (``c`` one value or one per weight)."""
    return float(np.sum(np.abs(x) * c)) if c.shape[0] > 1 else float(c[0] * np.abs(x).sum())


def minimize_owlqn(fun: Function, x0: np.ndarray | None, l1: np.ndarray, *, m: int = 6,
                   max_iter: int = 200, epsilon: float = 1e-5,
                   callback: Callback | None = None,
                   tighten: Callable[[], str | None] | None = None,
                   on_recovery: Callable[[dict], None] | None = None,
                   max_recoveries: int = 5,
                   checkpoint: Callable[[LBFGSState], None] | None = None,
                   resume: LBFGSState | None = None) -> LBFGSResult:
    """Minimise ``fun(x)`` (ℓ and its gradient) + Σ l1_k |x_k| from ``x0``.

    As ``minimize_lbfgs``, but ``f`` in results, callbacks and states is the
    whole objective with its L1 term, ``g`` the gradient of ℓ, and the
    stationarity test uses the pseudo-gradient.  When backtracking finds no
    decrease, ``tighten`` (approximate objectives) is asked to make ℓ more
    precise and the search restarts along −◇f from an empty memory, at
    most ``max_recoveries`` times.
    """
    c = np.ascontiguousarray(l1, dtype=np.float64)
    if resume is None:
        x = np.array(x0, dtype=np.float64)
        loss, g = fun(x)
        evaluations, history, recoveries, it = 1, History(m), [], 0
    else:
        x, g, loss = np.array(resume.x, dtype=np.float64), resume.g, 0.0
        evaluations, history = resume.evaluations, resume.history
        recoveries, it = list(resume.recoveries), resume.iteration
    n = x.shape[0]
    pg, d, trial = np.empty(n), np.empty(n), np.empty(n)
    penalty = pseudo_gradient(x, g, c, pg)
    f = loss + penalty if resume is None else resume.f

    def result(iterations: int, converged: bool, message: str) -> LBFGSResult:
        return LBFGSResult(x, f, g, iterations, evaluations, converged,
                           message + recovery_note(len(recoveries)), recoveries)

    def stationary() -> bool:
        return float(np.linalg.norm(pg)) <= epsilon * max(1.0, float(np.linalg.norm(x)))

    if stationary():
        return result(it, True, "the initial point is stationary" if resume is None else
                      f"pseudo-gradient norm below {epsilon:g}·max(1, |x|)")
    first = resume is None    # the first step from an empty memory is 1/|◇f|
    it += 1
    while it <= max_iter:
        history.direction(pg, d)
        _agree(d, pg)
        step = 1.0 / float(np.linalg.norm(pg)) if first or not history.order else 1.0
        found = None
        for _ in range(MAX_BACKTRACKS):
            slope = _project_step(x, d, step, pg, trial)
            if slope < 0.0:
                t_loss, t_g = fun(trial)
                evaluations += 1
                t_f = t_loss + l1_penalty(trial, c)
                if math.isfinite(t_f) and t_f <= f + GAMMA * slope:
                    found = (t_loss, t_g, t_f)
                    break
            step *= 0.5
        if found is None:
            failed = "backtracking found no step that decreases the objective"
            note = tighten() if tighten is not None else None
            if len(recoveries) >= max_recoveries or (note is None and not history.order):
                return result(it - 1, False, failed)
            if note is not None:
                loss, g = fun(x)
                evaluations += 1
                f = loss + pseudo_gradient(x, g, c, pg)
            record = {"iteration": it, "objective": float(f),
                      "message": f"iteration {it}: {failed}; "
                                 + (f"{note}; re-evaluated the current point; " if note else "")
                                 + "cleared the L-BFGS memory and retried along −◇f",
                      "gradient_norm": float(np.linalg.norm(pg)), "evaluations": evaluations,
                      "reevaluated": note is not None}
            recoveries.append(record)
            if on_recovery is not None:
                on_recovery(record)
            history, first = History(m), True
            if stationary():
                return result(it - 1, True, f"pseudo-gradient norm below {epsilon:g}·max(1, |x|)")
            continue
        first = False
        t_loss, t_g, f = found
        history.record(trial, x, t_g, g)     # pairs of ℓ's gradients (§3.2)
        x, trial = trial, x
        g = t_g
        pseudo_gradient(x, g, c, pg)
        if iteration_done(callback, checkpoint,
                          LBFGSState(x, f, g, it, evaluations, history, recoveries)):
            return result(it, True, "stopped by the callback")
        if stationary():
            return result(it, True, f"pseudo-gradient norm below {epsilon:g}·max(1, |x|)")
        it += 1
    return result(max_iter, False, f"reached the iteration limit ({max_iter})")
