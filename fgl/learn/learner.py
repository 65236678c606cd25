"""The learner: one training engine for every compiled program.

Objective (Sutton & McCallum eq. 1.21): the negative conditional log-likelihood plus a
Gaussian (L2) prior with a per-feature sigma (per template, Cuong et al. 2014
footnote 5),

    f(w) = Σ_i [log Z(x_i) - log Z(y_i, x_i)] + Σ_k w_k² / (2 σ_k²),

where Z(y, x) is the program clamped to the gold labels — exp(w·F(x, y))
when every variable is observed, a sum over the hidden ones otherwise
(Sutton & McCallum eq. 1.46-1.48).  Its gradient (Sutton & McCallum eq.
1.22, 1.52): expected minus clamped-expected feature counts plus w / σ².
The program supplies both (``fgl.engines.program.Program``); L-BFGS
(``fgl.learn.lbfgs``) minimises.

Under approximate inference (loopy BP / TRP, Sutton & McCallum §1.4.4) the
objective is the Bethe approximation and its gradient the beliefs' expected
counts — the two agree only at a BP fixed point, to the tolerance BP ran
to.  Where BP has several fixed points (strong couplings around loops) the
one reached depends on the starting messages, so by default every
evaluation starts BP cold, from uniform messages, and the objective is a
function of the weights.  ``bp_start = "warm"`` instead starts each
instance from its messages at the optimiser's current iterate (the
``WarmStart`` the ``Objective`` owns, one for the model and one for the
clamped program; ``train_lbfgs`` calls ``Objective.accept()`` whenever the
iterate moves to the last evaluated point): fewer passes per evaluation,
every trial point of one line search from the same messages, but an
objective that depends on the path.  (Measured on 100 CoNLL-2003 articles,
skip chain, TRP to 1e-4, 60 iterations: cold 184 evaluations, 21 s, final
objective 949 and no failed line search; warm 371 evaluations, 163 s,
objective 1130 and four.)  When the line search finds no acceptable step,
``train_lbfgs`` recovers: ``Objective.tighten`` runs BP to a tenth of the
tolerance with twice the passes (damped, if instances did not converge),
the current point is re-evaluated and the search restarts along steepest
descent.  Every recovery is logged (``TrainingLog.recoveries``), reported
to ``progress`` as a row with a ``"recovery"`` entry, and counted in the
final message.

A run can be saved between iterations and resumed exactly
(``fgl.learn.checkpoint``): ``train_lbfgs(checkpoint=...)`` hands the
``TrainingState`` over after every iteration, ``resume=`` continues from
one.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from numba import njit
from threadpoolctl import threadpool_limits

from fgl import stopping
from fgl.engines.parallel import resolve_jobs
from fgl.engines.program import InferenceStats, Program
from fgl.errors import FglError, TrainingError
from fgl.learn.checkpoint import TrainingState
from fgl.learn.lbfgs import LBFGSResult, LBFGSState, minimize_lbfgs, recovery_note
from fgl.learn.owlqn import l1_penalty, minimize_owlqn

BP_SETTINGS = ("tol", "max_iter", "damping")


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
    # one dict per recovery from a failed line search (fgl.learn.lbfgs): iteration, message,
    # objective and gradient_norm at the point training restarted from, evaluations so far
    recoveries: list[dict] = field(default_factory=list)
    # feature induction (fgl.learn.induction): one row per round, and the induced features
    # ("test -> label") in the order added
    rounds: list[dict] = field(default_factory=list)
    induced: list[str] = field(default_factory=list)


OPTIMISER_MEMORY = 6  # L-BFGS correction pairs (CRFsuite's default)


@njit(cache=True, nogil=True)
def add_prior(grad, w, inv_var):
    """grad += w / σ² in place; returns Σ w² / (2σ²).  ``inv_var`` holds
    1/σ² per weight, or one value for all."""
    total = 0.0
    same = inv_var.shape[0] == 1
    for k in range(w.shape[0]):
        p = (inv_var[0] if same else inv_var[k]) * w[k]
        grad[k] += p
        total += p * w[k]
    return 0.5 * total


def inverse_variance(sigma: np.ndarray) -> np.ndarray:
    """1/σ² per weight for ``add_prior``, or one value when all are equal."""
    sigma = np.asarray(sigma, dtype=np.float64)
    if sigma.size and (sigma == sigma.flat[0]).all():  # one prior for every weight
        sigma = sigma.flat[:1]
    return 1.0 / np.square(sigma)


class Objective:
    """f(w) and ∇f(w) for a program on encoded training data.

    With every variable observed, the gold side is the score w·F(x, y) of
    the gold counts F, computed once here; with hidden variables it is the
    clamped program, run at every evaluation.  ``stats`` holds the last
    evaluation's approximate-inference statistics (None for exact engines).

    A program that runs BP (``warm_start(data)``, the loopy program) gets
    a ``WarmStart`` per side, held here (``warm``, ``warm_clamped``): BP's
    settings, which ``tighten`` changes, and under ``bp_start = "warm"`` the
    messages — each evaluation then starts BP from those of the last
    evaluation ``accept()`` was called after (cold until the first).  Under
    ``"cold"`` (the default) every evaluation starts from uniform messages.
    """

    def __init__(self, program: Program, data: object, sigma: np.ndarray, jobs: int = 0,
                 bp_start: str = "cold"):
        if bp_start not in ("cold", "warm"):
            raise ValueError(f"bp_start must be 'cold' or 'warm', not {bp_start!r}")
        self.program, self.data, self.jobs = program, data, resolve_jobs(jobs)
        self.inv_var = inverse_variance(sigma)
        self.gold_counts = None if program.has_hidden else program.gold_counts(data)
        self.stats: InferenceStats | None = None
        make = getattr(program, "warm_start", None)
        carry = bp_start == "warm"
        self.warm = make(data, carry) if make is not None else None
        self.warm_clamped = make(data, carry) if make is not None and program.has_hidden \
            else None

    def tighten(self) -> str | None:
        """Make the following evaluations more precise — BP to a tenth of
        its tolerance, with twice the passes and, if instances did not
        converge, damped (``WarmStart.tighten``) — and say so; None when
        there is nothing to tighten (exact engines and ``infer exact``, or
        BP at its tightest)."""
        if self.warm is None:
            return None
        note = self.warm.tighten()
        clamped = self.warm_clamped.tighten() if self.warm_clamped is not None else None
        if clamped is not None and clamped != note:
            note = f"{note or 'model: unchanged'}; clamped program: {clamped}"
        return note

    def bp_settings(self) -> dict | None:
        """BP's settings per side as recoveries left them (for a
        checkpoint), None when no BP runs."""
        sides = {"model": self.warm, "clamped": self.warm_clamped}
        saved = {side: {k: getattr(warm, k) for k in BP_SETTINGS}
                 for side, warm in sides.items() if warm is not None}
        return saved or None

    def restore_bp_settings(self, saved: dict | None) -> None:
        """Put back what ``bp_settings`` returned."""
        for side, warm in {"model": self.warm, "clamped": self.warm_clamped}.items():
            if warm is not None and saved and side in saved:
                warm.tol = float(saved[side]["tol"])
                warm.max_iter = int(saved[side]["max_iter"])
                warm.damping = float(saved[side]["damping"])

    def accept(self) -> None:
        """The weights of the last evaluation are the optimiser's new
        iterate: later evaluations start BP from that evaluation's messages
        (``WarmStart.accept``)."""
        for warm in (self.warm, self.warm_clamped):
            if warm is not None:
                warm.accept()

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        model = self.program.expectations(w, self.data, self.jobs, warm=self.warm)
        grad = model.counts  # the program's fresh array: update it in place
        if self.gold_counts is None:
            gold = self.program.clamped_expectations(w, self.data, self.jobs,
                                                     warm=self.warm_clamped)
            gold_log_z, observed = gold.log_z, gold.counts
        else:
            gold_log_z, observed = float(w @ self.gold_counts), self.gold_counts
        grad -= observed
        self.stats = model.stats
        prior = add_prior(grad, w, self.inv_var) if len(w) else 0.0
        return float(model.log_z - gold_log_z + prior), grad


def _tightener(objective) -> Callable[[], str | None] | None:
    """The objective's ``tighten`` when it runs approximate inference
    (``bp_settings()`` not None), else None: an exact objective's failed
    line search is retried along steepest descent, an approximate one's
    ends when ``tighten`` can change nothing (``fgl.learn.lbfgs``)."""
    tighten = getattr(objective, "tighten", None)
    settings = getattr(objective, "bp_settings", None)
    if tighten is None or (settings is not None and settings() is None):
        return None
    return tighten


def train_lbfgs(program: Program, data: object, sigma: np.ndarray, *,
                max_iter: int = 200, tol: float = 1e-5, period: int = 10, jobs: int = 0,
                w0: np.ndarray | None = None,
                progress: Callable[[dict], None] | None = None,
                objective: Objective | None = None,
                max_recoveries: int = 5,
                bp_start: str = "cold",
                should_stop: Callable[[], str | None] | None = None,
                checkpoint: Callable[[TrainingState, bool], None] | None = None,
                resume: TrainingState | None = None,
                l1: float | np.ndarray = 0.0
                ) -> tuple[np.ndarray, TrainingLog]:
    """Minimise the objective with L-BFGS (``fgl.learn.lbfgs``): the
    likelihood ``Objective`` of ``program`` on ``data``, or the given
    ``objective`` (any callable w -> (f, gradient) with a ``stats``
    attribute, e.g. ``fgl.learn.local_objectives``; its ``tighten() ->
    str | None`` and ``accept()``, if it has them, are used as
    ``Objective``'s are).

    Stops after ``max_iter`` iterations, or when the objective improved by
    less than ``tol`` (relative) over the last ``period`` iterations, or
    when the gradient norm falls below 1e-5·max(1, ‖w‖) — CRFsuite's
    stopping rules — or when the line search fails and up to
    ``max_recoveries`` recoveries (module docstring) do not get it going.
    ``bp_start`` ("cold" or "warm") is where the ``Objective`` made here
    starts BP at each evaluation (module docstring).  ``should_stop()``,
    asked after every iteration, ends training at the current iterate when
    it returns a reason (a time limit, a signal), which becomes the log's
    message.
    ``checkpoint(state, final)`` receives the ``TrainingState`` after
    every iteration (``final``: training stops there, by a stopping rule,
    ``should_stop`` or the iteration limit); it decides what to save.
    ``resume`` continues a saved state: the objective is evaluated at its
    weights first and must match the saved objective (else FglError: other
    data or settings), then training goes on as the saved run would have;
    ``max_iter`` counts the saved run's iterations too.
    ``l1`` (one value, or one per weight) adds Σ l1_k |w_k| to the
    objective — L1, or elastic net with the Gaussian prior — minimised by
    OWL-QN (``fgl.learn.owlqn``) instead of L-BFGS.
    ``progress`` receives each iteration's row (iteration, objective,
    gradient norm, evaluations, seconds, and the approximate inference
    statistics of the last evaluation or None), and for each recovery a row
    of the same keys (the point training restarts from) plus
    ``"recovery"``: what went wrong and what was done.  Recovery rows are in
    ``log.recoveries``, not ``log.iterations``.
    """
    if objective is None:
        objective = Objective(program, data, sigma, jobs, bp_start)
    log = TrainingLog()
    start = time.perf_counter()
    history: list[float] = []
    l1 = np.atleast_1d(np.asarray(l1, dtype=np.float64))
    if resume is not None:
        _check_resume(objective, resume, l1)
        history = list(resume.objectives)
        log.iterations, log.recoveries = list(resume.rows), list(resume.recoveries)
        log.evaluations, log.eval_seconds = resume.lbfgs.evaluations, resume.eval_seconds
        start -= resume.seconds

    accept = getattr(objective, "accept", None)
    last_gradient: list = [None]  # the array the last evaluation returned
    start_point: list = [None]    # (x0, f, g) once evaluated: where a stop in iteration 1 ends

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        t0 = time.perf_counter()
        f, g = objective(w)
        log.evaluations += 1
        log.eval_seconds += time.perf_counter() - t0
        last_gradient[0] = g
        if log.evaluations == 1 and resume is None:  # the starting point
            start_point[0] = (w, f, g)
            if accept is not None:
                accept()
        return f, g

    def accepted(g: np.ndarray) -> None:
        """The optimiser's iterate moved to where its gradient ``g`` was
        computed: if that was the last evaluation, tell the objective."""
        if accept is not None and g is last_gradient[0]:
            accept()

    def callback(it: int, f: float, w: np.ndarray, g: np.ndarray, evaluations: int) -> bool:
        accepted(g)
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
        # (after the stopping rule: a run resumed from here goes on as if not stopped)
        reason = should_stop() if should_stop is not None else None
        if reason:
            log.message = reason
            return True
        return False

    last_state: list = [None if resume is None else resume.lbfgs]  # the last finished iteration

    def saved(state: LBFGSState) -> None:
        last_state[0] = state
        if checkpoint is not None:
            bp = getattr(objective, "bp_settings", None)
            checkpoint(TrainingState(state, OPTIMISER_MEMORY, list(history), log.iterations,
                                     log.recoveries, log.eval_seconds,
                                     time.perf_counter() - start, bp() if bp else None),
                       bool(log.message) or state.iteration >= max_iter)

    def on_recovery(record: dict) -> None:
        stats = objective.stats
        if stats is not None and stats.not_converged:
            where = "at the restart point" if record["reevaluated"] else "in the last evaluation"
            record["message"] += (f"; {where} BP left {stats.not_converged} of "
                                  f"{stats.instances} instances unconverged (residual up to "
                                  f"{stats.max_residual:.2g})")
        if record["reevaluated"] and accept is not None:  # that evaluation is the iterate's
            accept()
        log.recoveries.append(record)
        history.clear()  # objectives before a tightening are not comparable with those after
        if progress is not None:
            progress({"iteration": record["iteration"], "objective": record["objective"],
                      "gradient_norm": record["gradient_norm"],
                      "evaluations": record["evaluations"],
                      "seconds": time.perf_counter() - start, "inference": objective.stats,
                      "recovery": record["message"]})

    # BLAS threads would only spin against the numba threads doing the real
    # work (the optimiser's dot products run on 10^5-10^6 weights)
    with threadpool_limits(limits=1, user_api="blas"):
        x0 = np.zeros(program.n_features) if w0 is None else w0
        common = dict(m=OPTIMISER_MEMORY, max_iter=max_iter, callback=callback,
                      tighten=_tightener(objective), on_recovery=on_recovery,
                      max_recoveries=max_recoveries, checkpoint=saved,
                      resume=None if resume is None else resume.lbfgs)
        try:
            with stopping.watching(should_stop):
                result = minimize_owlqn(fun, x0, l1, **common) if (l1 > 0).any() else \
                    minimize_lbfgs(fun, x0, **common)
        except stopping.Stopped as e:
            # a stop request heard inside an evaluation (fgl.stopping): the run ends at
            # the last finished iteration, as if asked right after it
            result = _stopped_at(last_state[0], start_point[0], e.reason, log, start)
            log.message = result.message
            if checkpoint is not None and last_state[0] is not None:
                saved(last_state[0])   # (final: log.message is set)
    log.seconds = time.perf_counter() - start
    log.objective = float(result.f)
    log.inference = objective.stats
    log.converged = result.converged
    if not log.message:
        log.message = result.message  # (says how many recoveries there were, if any)
    elif log.recoveries:
        log.message += recovery_note(len(log.recoveries))
    return result.x, log


def _stopped_at(state: LBFGSState | None, first: tuple | None, reason: str,
                log: TrainingLog, start: float) -> LBFGSResult:
    """The result of a run stopped inside an evaluation: the iterate of its
    last finished iteration (``state``), else the evaluated starting point
    (``first``: x0, f, g); TrainingError when not even that was evaluated."""
    if state is not None:
        return LBFGSResult(state.x, state.f, state.g, state.iteration, state.evaluations,
                           False, reason, list(state.recoveries))
    if first is not None:
        x, f, g = first
        return LBFGSResult(x, f, g, 0, log.evaluations, False,
                           f"{reason} inside the first iteration: the model holds the "
                           "starting weights", [])
    raise TrainingError(
        f"{reason} before the first evaluation of the objective ended (after "
        f"{time.perf_counter() - start:.1f} s): there are no trained weights, so no model was "
        "written; allow more time, or make an evaluation cheaper (fewer BP passes: a "
        "smaller max_iter or a looser tol in the infer line, or damping)")


def _check_resume(objective, resume: TrainingState, l1: np.ndarray) -> None:
    """Restore BP's settings and check that the objective at the saved
    weights is the saved one: the same spec, data and priors."""
    if resume.m != OPTIMISER_MEMORY:
        raise FglError(f"the checkpoint's L-BFGS keeps {resume.m} correction pairs; this fgl "
                       f"keeps {OPTIMISER_MEMORY}")
    restore = getattr(objective, "restore_bp_settings", None)
    if restore is not None:
        restore(resume.bp)
    f, _ = objective(resume.lbfgs.x)
    f += l1_penalty(resume.lbfgs.x, l1) if (l1 > 0).any() else 0.0
    saved = resume.lbfgs.f
    if not abs(f - saved) <= 1e-8 * max(1.0, abs(saved)):
        raise FglError(f"cannot resume: the checkpoint's objective was {saved:.12g}, on this "
                       f"data with these settings it is {f:.12g}; resume with the training "
                       "data, spec and sigma of the run that wrote it")
    accept = getattr(objective, "accept", None)
    if accept is not None:
        accept()
