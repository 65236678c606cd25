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

from fgl.jit import njit
from fgl.learn.lbfgs import (
    Callback,
    Function,
    History,
    Iterate,
    LBFGSResult,
    LBFGSState,
    iteration_done,
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


def _backtrack(fun: Function, state: Iterate, c: np.ndarray, d: np.ndarray, step: float,
               pg: np.ndarray, trial: np.ndarray) -> tuple | None:
    """Backtracking along ``d`` projected on the orthant (Andrew & Gao 2007
    §3.2): (ℓ, its gradient, f) at the first step of sufficient decrease in
    ``trial``, or None after ``MAX_BACKTRACKS`` halvings."""
    for _ in range(MAX_BACKTRACKS):
        slope = _project_step(state.x, d, step, pg, trial)
        if slope < 0.0:
            t_loss, t_g = fun(trial)
            state.evaluations += 1
            t_f = t_loss + l1_penalty(trial, c)
            if math.isfinite(t_f) and t_f <= state.f + GAMMA * slope:
                return t_loss, t_g, t_f
        step *= 0.5
    return None


def _recover(state: Iterate, fun: Function, c: np.ndarray, pg: np.ndarray, it: int,
             tighten: Callable[[], str | None] | None, max_recoveries: int, fresh: bool,
             on_recovery: Callable[[dict], None] | None) -> str | None:
    """After backtracking found no decrease at iteration ``it``: tighten the
    objective (re-evaluating the iterate) and restart, or say why training
    stops (None: recovered)."""
    failed = "backtracking found no step that decreases the objective"
    note = tighten() if tighten is not None else None
    if len(state.recoveries) >= max_recoveries or (note is None and fresh):
        return failed
    if note is not None:
        loss, state.g = fun(state.x)
        state.evaluations += 1
        state.f = loss + pseudo_gradient(state.x, state.g, c, pg)
    state.recovered({"iteration": it, "objective": float(state.f),
                     "message": f"iteration {it}: {failed}; "
                                + (f"{note}; re-evaluated the current point; " if note else "")
                                + "cleared the L-BFGS memory and retried along −◇f",
                     "gradient_norm": float(np.linalg.norm(pg)),
                     "evaluations": state.evaluations, "reevaluated": note is not None},
                    on_recovery)
    return None


def minimize_owlqn(fun: Function, x0: np.ndarray | None, l1: np.ndarray, *, m: int = 6,
                   max_iter: int = 200, epsilon: float = 1e-5,
                   callback: Callback | None = None,
                   tighten: Callable[[], str | None] | None = None,
                   on_recovery: Callable[[dict], None] | None = None,
                   max_recoveries: int = 5,
                   checkpoint: Callable[[LBFGSState], None] | None = None,
                   resume: LBFGSState | None = None, jobs: int = 1) -> LBFGSResult:
    """Minimise ``fun(x)`` (ℓ and its gradient) + Σ l1_k |x_k| from ``x0``
    (the L-BFGS direction on up to ``jobs`` threads).

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
        s, history, it = Iterate(x, 0.0, g, 1, []), History(m, jobs), 0
    else:
        if resume.direction is not None:
            raise ValueError("an L-BFGS state with its next direction cannot resume OWL-QN")
        s = Iterate(np.array(resume.x, dtype=np.float64), resume.f, resume.g,
                    resume.evaluations, list(resume.recoveries))
        history, it, loss = resume.history, resume.iteration, 0.0
        history.jobs = jobs
    n = s.x.shape[0]
    pg, d, trial = np.empty(n), np.empty(n), np.empty(n)
    penalty = pseudo_gradient(s.x, s.g, c, pg)
    if resume is None:
        s.f = loss + penalty
    converged = f"pseudo-gradient norm below {epsilon:g}·max(1, |x|)"
    if s.stationary(epsilon, pg):
        return s.result(it, True, "the initial point is stationary" if resume is None else
                        converged)
    first = resume is None    # the first step from an empty memory is 1/|◇f|
    it += 1
    while it <= max_iter:
        history.direction(pg, d)
        _agree(d, pg)
        step = 1.0 / float(np.linalg.norm(pg)) if first or not history.order else 1.0
        found = _backtrack(fun, s, c, d, step, pg, trial)
        if found is None:
            stop = _recover(s, fun, c, pg, it, tighten, max_recoveries, not history.order,
                            on_recovery)
            if stop is not None:
                return s.result(it - 1, False, stop)
            history, first = History(m, jobs), True
            if s.stationary(epsilon, pg):
                return s.result(it - 1, True, converged)
            continue
        first = False
        t_loss, t_g, s.f = found
        history.record(trial, s.x, t_g, s.g)     # pairs of ℓ's gradients (§3.2)
        s.x, trial = trial, s.x
        s.g = t_g
        pseudo_gradient(s.x, s.g, c, pg)
        if iteration_done(callback, checkpoint,
                          LBFGSState(s.x, s.f, s.g, it, s.evaluations, history, s.recoveries)):
            return s.result(it, True, "stopped by the callback")
        if s.stationary(epsilon, pg):
            return s.result(it, True, converged)
        it += 1
    return s.result(max_iter, False, f"reached the iteration limit ({max_iter})")
