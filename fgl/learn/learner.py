"""The learner: one training engine for every compiled program.

Objective (Sutton & McCallum eq. 1.21): the negative conditional log-likelihood plus a
Gaussian (L2) prior with a per-feature sigma (per template, Cuong et al. 2014
footnote 5),

    f(w) = Σ_i [log Z(x_i) - log Z(y_i, x_i)] + Σ_k w_k² / (2 σ_k²),

where Z(y, x) is the program clamped to the gold labels — exp(w·F(x, y))
when every variable is observed, a sum over the hidden ones otherwise
(Sutton & McCallum eq. 1.46-1.48).  Its gradient (Sutton & McCallum eq.
1.22, 1.52): expected minus clamped-expected feature counts plus w / σ².  The program supplies both
(``fgl.engines.program.Program``); L-BFGS (``fgl.learn.lbfgs``) minimises.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from numba import njit
from threadpoolctl import threadpool_limits

from fgl.engines.data import resolve_jobs
from fgl.engines.program import InferenceStats, Program
from fgl.learn.lbfgs import minimize_lbfgs


@dataclass
class TrainingLog:
    """What happened during training: one row per L-BFGS iteration."""

    iterations: list[dict] = field(default_factory=list)
    evaluations: int = 0
    eval_seconds: float = 0.0
    seconds: float = 0.0
    objective: float = float("nan")
    converged: bool = False
    message: str = ""
    inference: InferenceStats | None = None  # approximate inference in the last evaluation


@njit(cache=True, nogil=True)
def _add_prior(grad, w, inv_var):
    """grad += w / σ² in place; returns Σ w² / (2σ²).  ``inv_var`` holds
    1/σ² per weight, or one value for all."""
    total = 0.0
    same = inv_var.shape[0] == 1
    for k in range(w.shape[0]):
        p = (inv_var[0] if same else inv_var[k]) * w[k]
        grad[k] += p
        total += p * w[k]
    return 0.5 * total


class Objective:
    """f(w) and ∇f(w) for a program on encoded training data.

    With every variable observed, the gold side is the score w·F(x, y) of
    the gold counts F, computed once here; with hidden variables it is the
    clamped program, run at every evaluation.  ``stats`` holds the last
    evaluation's approximate-inference statistics (None for exact engines).
    """

    def __init__(self, program: Program, data: object, sigma: np.ndarray, jobs: int = 0):
        self.program, self.data, self.jobs = program, data, resolve_jobs(jobs)
        sigma = np.asarray(sigma, dtype=np.float64)
        if sigma.size and (sigma == sigma.flat[0]).all():  # one prior for every weight
            sigma = sigma.flat[:1]
        self.inv_var = 1.0 / np.square(sigma)
        self.gold_counts = None if program.has_hidden else program.gold_counts(data)
        self.stats: InferenceStats | None = None

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        model = self.program.expectations(w, self.data, self.jobs)
        grad = model.counts  # the program's fresh array: update it in place
        if self.gold_counts is None:
            gold = self.program.clamped_expectations(w, self.data, self.jobs)
            gold_log_z, observed = gold.log_z, gold.counts
        else:
            gold_log_z, observed = float(w @ self.gold_counts), self.gold_counts
        grad -= observed
        self.stats = model.stats
        prior = _add_prior(grad, w, self.inv_var) if len(w) else 0.0
        return float(model.log_z - gold_log_z + prior), grad


def train_lbfgs(program: Program, data: object, sigma: np.ndarray, *,
                max_iter: int = 200, tol: float = 1e-5, period: int = 10, jobs: int = 0,
                w0: np.ndarray | None = None,
                progress: Callable[[dict], None] | None = None) -> tuple[np.ndarray, TrainingLog]:
    """Minimise the objective with L-BFGS (``fgl.learn.lbfgs``).

    Stops after ``max_iter`` iterations, or when the objective improved by
    less than ``tol`` (relative) over the last ``period`` iterations, or
    when the gradient norm falls below 1e-5·max(1, ‖w‖) — CRFsuite's
    stopping rules.  ``progress`` receives each iteration's row (iteration,
    objective, gradient norm, evaluations, seconds, and the approximate
    inference statistics of the last evaluation or None).
    """
    objective = Objective(program, data, sigma, jobs)
    log = TrainingLog()
    start = time.perf_counter()
    history: list[float] = []

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        t0 = time.perf_counter()
        f, g = objective(w)
        log.evaluations += 1
        log.eval_seconds += time.perf_counter() - t0
        return f, g

    def callback(it: int, f: float, w: np.ndarray, g: np.ndarray, evaluations: int) -> bool:
        history.append(f)
        row = {"iteration": it, "objective": f, "gradient_norm": float(np.linalg.norm(g)),
               "evaluations": evaluations, "seconds": time.perf_counter() - start,
               "inference": objective.stats}
        log.iterations.append(row)
        if progress is not None:
            progress(row)
        if len(history) > period:
            old = history[-1 - period]
            if (old - f) / max(abs(f), 1e-300) < tol:
                log.message = f"objective improved by less than {tol:g} over {period} iterations"
                return True
        return False

    # BLAS threads would only spin against the numba threads doing the real
    # work (the optimiser's dot products run on 10^5-10^6 weights)
    with threadpool_limits(limits=1, user_api="blas"):
        result = minimize_lbfgs(fun, np.zeros(program.n_features) if w0 is None else w0,
                                max_iter=max_iter, callback=callback)
    log.seconds = time.perf_counter() - start
    log.objective = float(result.f)
    log.inference = objective.stats
    log.converged = result.converged
    if not log.message:
        log.message = result.message
    return result.x, log
