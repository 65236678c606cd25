"""Training by L-BFGS (OWL-QN when l1 > 0): the default trainer.

``train_lbfgs`` minimises a ``TrainingObjective`` (``fgl.learn.objective``:
the likelihood of any compiled program, or a local objective) with L-BFGS
(``fgl.learn.lbfgs``), or OWL-QN (``fgl.learn.owlqn``) when an L1 penalty is
given.  Under approximate inference the line search allows for the
objective's error (``TrainingObjective.precision``; ``fgl.learn.lbfgs``).
When it finds no acceptable step it recovers: ``tighten`` runs BP more
precisely (``WarmStart.tighten``), the current point is re-evaluated and
the search restarts along steepest descent; an objective at its most
precise whose steepest-descent search fails too has converged to its
precision.  Every recovery is logged (``TrainingLog.recoveries``), reported
to ``progress`` as a row with a ``"recovery"`` entry and the seconds it
cost, and counted in the final message.  Every evaluation is counted by
kind — at an iterate, a rejected trial, in a failed search or recovery —
with BP's sweeps (``TrainingLog.spent``, ``sweeps``, ``time_account``).  Between
iterations ``refine`` may make an inexact objective more precise as the
steps shrink (TRW training starts BP loose: ``WarmStart.refine``); the
stopping rule counts only iterations since the last refinement, and never
stops while one is still possible.

A run can be saved between iterations and resumed exactly
(``fgl.learn.checkpoint``): ``train_lbfgs(checkpoint=...)`` hands the
``TrainingState`` over after every iteration, ``resume=`` continues from
one.  The trainers ``lbfgs`` and ``owlqn`` (``fgl.learn.trainers.lbfgs``)
run it.
"""
from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from fgl import stopping
from fgl.compile.budget import release_freed_memory
from fgl.engines.program import InferenceStats, Program
from fgl.errors import FglError, TrainingError
from fgl.learn.checkpoint import TrainingState
from fgl.learn.lbfgs import LBFGSResult, LBFGSState, minimize_lbfgs, recovery_note
from fgl.learn.objective import Objective, TrainingObjective
from fgl.learn.owlqn import l1_penalty, minimize_owlqn


@dataclass
class TrainingLog:
    """What happened during training: one row per L-BFGS iteration."""

    iterations: list[dict] = field(default_factory=list)
    evaluations: int = 0
    eval_seconds: float = 0.0
    seconds: float = 0.0
    # where the evaluations went, per kind (``EVALUATION_KINDS``): [count, seconds] each
    spent: dict[str, list] = field(default_factory=lambda: {k: [0, 0.0]
                                                            for k in EVALUATION_KINDS})
    sweeps: int = 0   # BP passes summed over every instance of every evaluation
    compile_seconds: float | None = None   # reading and compiling the data (the caller's)
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
    # the exact part trained first (fgl.learn.exact_start): templates, engine, iterations,
    # evaluations, seconds, objective, message, carried (features it started)
    start: dict | None = None

    def time_account(self) -> str:
        """Where the run's seconds went: compiling (when known), the
        evaluations by kind — at the iterates, trial points the line search
        rejected, evaluations of failed searches and their re-evaluations
        (recoveries) — BP's sweeps, and the optimiser's own arithmetic
        (everything else: directions, checkpoints, progress)."""
        compiled = self.compile_seconds
        parts = [] if compiled is None else [f"compile {compiled:.1f}s"]
        if self.start is not None:
            parts.append(f"exact part first {self.start['seconds']:.1f}s "
                         f"({self.start['iterations']} iterations)")
        kinds = [f"{n} {EVALUATION_KINDS[k]} {t:.1f}s" for k, (n, t) in self.spent.items()
                 if n]
        if kinds:
            sweeps = f"; BP {self.sweeps:,} sweeps" if self.sweeps else ""
            parts.append(f"evaluations {self.eval_seconds:.1f}s ({', '.join(kinds)}{sweeps})")
        parts.append(f"optimiser {max(self.seconds - self.eval_seconds, 0.0):.1f}s")
        return "time: " + "; ".join(parts)

    def summary(self, trainer: str) -> dict:
        """What a model file keeps of the run (``trainer``: the spec's)."""
        return {"iterations": len(self.iterations), "objective": self.objective,
                "seconds": self.seconds, "evaluations": self.evaluations,
                "converged": self.converged, "recoveries": len(self.recoveries),
                "message": self.message, "trainer": trainer,
                **({} if self.start is None else {"start": self.start})}


OPTIMISER_MEMORY = 6  # L-BFGS correction pairs (CRFsuite's default)
# ... under approximate inference, where an evaluation costs many optimiser steps: on 150
# CoNLL-2003 clique skip-chain articles (and 100 Dutch ones) the skip chain took 253 evaluations
# where 6 pairs took 322 (253 against 295), and its exact part 272 where 6 took 405 (252, 352)
APPROXIMATE_MEMORY = 24


def optimiser_memory(memory: int | None, approximate: bool) -> int:
    """The L-BFGS correction pairs of a run: the `memory` setting, else
    ``APPROXIMATE_MEMORY`` where evaluations run approximate inference (the
    trainer asks of the spec's engine: the factor graph) and CRFsuite's 6
    elsewhere."""
    if memory is not None:
        return int(memory)
    return APPROXIMATE_MEMORY if approximate else OPTIMISER_MEMORY


def prior_shape(sigma: np.ndarray | float, n: int) -> np.ndarray | None:
    """σ_k / max σ per weight: the shape of L-BFGS's initial inverse
    Hessian, H₀ = γ·diag of its squares (``fgl.learn.lbfgs``), where the
    templates' priors differ; None where one σ serves every weight (H₀ =
    γI, CRFsuite's) or some σ is not a positive finite number.  The
    curvature of the objective along w_k is at least 1/σ_k²: with the
    prior's shape, on 150 CoNLL-2003 articles the clique skip chain (skip
    factor at σ = 0.5, the chain at 10) reached its rule in 193
    evaluations from the exact part instead of 260, on 100 Dutch articles
    in 185 instead of 226, each to a lower objective."""
    sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (n,))
    if not n or not (np.isfinite(sigma) & (sigma > 0)).all() or (sigma == sigma[0]).all():
        return None
    return sigma / sigma.max()


# the kinds of evaluation ``TrainingLog.spent`` counts, with how the time account names them
EVALUATION_KINDS = {"iterate": "at iterates", "rejected": "rejected line-search trials",
                    "recovery": "in failed searches and recoveries",
                    "resumed": "in the run resumed from"}


class _Run:
    """One L-BFGS run's bookkeeping between the optimiser and the objective:
    evaluation counts and times, the iteration rows and stopping rules, the
    recoveries and checkpoints (``train_lbfgs``'s parameters)."""

    def __init__(self, objective: TrainingObjective, *, max_iter: int, tol: float, period: int,
                 progress: Callable[[dict], None] | None,
                 should_stop: Callable[[], str | None] | None,
                 checkpoint: Callable[[TrainingState, bool], None] | None,
                 resume: TrainingState | None, memory: int):
        self.objective, self.max_iter, self.tol, self.period = objective, max_iter, tol, period
        self.memory = memory
        self.progress, self.should_stop, self.checkpoint = progress, should_stop, checkpoint
        self.resume = resume
        self.log = TrainingLog()
        self.start = time.perf_counter()
        self.history: list[float] = []
        # the array the last evaluation returned, not kept alive (a rejected trial's is freed)
        self.last_gradient: Callable[[], np.ndarray | None] = lambda: None
        self.start_point: tuple | None = None  # (x0, f, g) once evaluated (a stop in iteration 1)
        self.pending: list[float] = []   # seconds of the evaluations since the last iterate
        self.last_state = None if resume is None else resume.lbfgs  # the last finished iteration
        if resume is not None:
            self.history = list(resume.objectives)
            self.log.iterations, self.log.recoveries = list(resume.rows), list(resume.recoveries)
            self.log.evaluations = resume.lbfgs.evaluations
            self.log.eval_seconds = resume.eval_seconds
            self.log.spent["resumed"] = [resume.lbfgs.evaluations, resume.eval_seconds]
            self.start -= resume.seconds

    def evaluate(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """The objective at ``w``, counted and timed; the first evaluation of
        a fresh run is the starting point (the objective's first iterate)."""
        t0 = time.perf_counter()
        f, g = self.objective(w)
        seconds = time.perf_counter() - t0
        self.log.evaluations += 1
        self.log.eval_seconds += seconds
        stats = self.objective.stats
        self.log.sweeps += stats.sweeps if stats is not None else 0
        self.last_gradient = weakref.ref(g)
        if self.log.evaluations == 1:
            # (the first evaluation built the program's per-data structures, e.g. TRW's joined
            # arrays, freeing the graphs' own: 41 MB of RSS on all of Dutch CoNLL-2002)
            release_freed_memory()
        if self.log.evaluations == 1 and self.resume is None:
            self.start_point = (w, f, g)
            self.objective.accept()
            self._spend("iterate", [seconds])
        else:
            self.pending.append(seconds)
        return f, g

    def _spend(self, kind: str, seconds: list[float]) -> None:
        """Count evaluations of ``seconds`` as ``kind`` (``EVALUATION_KINDS``)."""
        entry = self.log.spent[kind]
        entry[0] += len(seconds)
        entry[1] += sum(seconds)

    def iteration(self, it: int, f: float, w: np.ndarray, g: np.ndarray,
                  evaluations: int) -> bool:
        """After iteration ``it``: log its row, then whether to stop (the
        relative-improvement rule, else ``should_stop``)."""
        if g is self.last_gradient():   # the iterate is the last evaluated point
            self.objective.accept()
        if self.pending:   # (the last evaluation is the iterate's, the others were rejected)
            self._spend("iterate", self.pending[-1:])
            self._spend("rejected", self.pending[:-1])
            self.pending = []
        refined = self.objective.refine(self.history[-1] - f, f) if self.history else None
        self.history.append(f)
        stalled = len(self.history) > self.period and \
            (self.history[-1 - self.period] - f) / max(abs(f), 1e-300) < self.tol
        if stalled and not refined:   # (not converged while the objective can be made finer)
            refined = self.objective.refine(0.0, f)
        row = {"iteration": it, "objective": f, "gradient_norm": float(np.linalg.norm(g)),
               "evaluations": evaluations, "seconds": time.perf_counter() - self.start,
               "inference": self.objective.stats}
        if refined:
            row["refined"] = refined
            self.history = [f]   # (objectives of a coarser inference are not compared with finer)
        self.log.iterations.append(row)
        if self.progress is not None:
            self.progress(row)
        if stalled and not refined:
            self.log.message = (f"objective improved by less than {self.tol:g} over "
                                f"{self.period} iterations")
            return True
        # (after the stopping rule: a run resumed from here goes on as if not stopped)
        reason = self.should_stop() if self.should_stop is not None else None
        if reason:
            self.log.message = reason
            return True
        return False

    def save(self, state: LBFGSState) -> None:
        """A finished iteration's state: kept, and handed to ``checkpoint``."""
        self.last_state = state
        self.start_point = None   # (a stop now falls back to this state: free the first gradient)
        if self.checkpoint is not None:
            log = self.log
            self.checkpoint(TrainingState(state, self.memory, list(self.history),
                                          log.iterations, log.recoveries, log.eval_seconds,
                                          time.perf_counter() - self.start,
                                          self.objective.bp_settings()),
                            bool(log.message) or state.iteration >= self.max_iter)

    def recovered(self, record: dict) -> None:
        """A recovery from a failed line search: logged and reported."""
        stats = self.objective.stats
        if stats is not None and stats.not_converged:
            where = "at the restart point" if record["reevaluated"] else "in the last evaluation"
            record["message"] += (f"; {where} BP left {stats.not_converged} of "
                                  f"{stats.instances} instances unconverged (residual up to "
                                  f"{stats.max_residual:.2g})")
        if record["reevaluated"]:  # that evaluation is the iterate's
            self.objective.accept()
        record["seconds"] = sum(self.pending)   # (the failed search's evaluations and after)
        self._spend("recovery", self.pending)
        self.pending = []
        self.log.recoveries.append(record)
        self.history.clear()  # objectives before a tightening are not comparable with after
        if self.progress is not None:
            self.progress({"iteration": record["iteration"], "objective": record["objective"],
                           "gradient_norm": record["gradient_norm"],
                           "evaluations": record["evaluations"],
                           "seconds": time.perf_counter() - self.start,
                           "inference": stats, "recovery": record["message"],
                           "spent": record["seconds"]})

    def stopped(self, reason: str) -> LBFGSResult:
        """A stop request heard inside an evaluation (``fgl.stopping``): the
        run ends at the last finished iteration, as if asked right after it."""
        result = _stopped_at(self.last_state, self.start_point, reason, self.log, self.start)
        self.log.message = result.message
        if self.checkpoint is not None and self.last_state is not None:
            self.save(self.last_state)   # (final: log.message is set)
        return result

    def finish(self, result: LBFGSResult) -> tuple[np.ndarray, TrainingLog]:
        log = self.log
        self._spend("rejected", self.pending)   # (a search that ended the run)
        self.pending = []
        log.seconds = time.perf_counter() - self.start
        log.objective = float(result.f)
        log.inference = self.objective.stats
        log.converged = result.converged
        if not log.message:
            log.message = result.message  # (says how many recoveries there were, if any)
        elif log.recoveries:
            log.message += recovery_note(len(log.recoveries))
        return result.x, log


def train_lbfgs(program: Program, data: object, sigma: np.ndarray, *,
                max_iter: int = 200, tol: float = 1e-5, period: int = 10, jobs: int = 0,
                w0: np.ndarray | None = None,
                progress: Callable[[dict], None] | None = None,
                objective: TrainingObjective | None = None,
                max_recoveries: int = 5,
                bp_start: str = "auto",
                should_stop: Callable[[], str | None] | None = None,
                checkpoint: Callable[[TrainingState, bool], None] | None = None,
                resume: TrainingState | None = None,
                l1: float | np.ndarray = 0.0, memory: int | None = None
                ) -> tuple[np.ndarray, TrainingLog]:
    """Minimise the objective with L-BFGS (``fgl.learn.lbfgs``): the
    likelihood ``Objective`` of ``program`` on ``data``, or the given
    ``objective`` (a ``TrainingObjective``, e.g. ``fgl.learn.local_objectives``).

    Stops after ``max_iter`` iterations, or when the objective improved by
    less than ``tol`` (relative) over the last ``period`` iterations, or
    when the gradient norm falls below 1e-5·max(1, ‖w‖) — CRFsuite's
    stopping rules — or when the line search fails and up to
    ``max_recoveries`` recoveries (module docstring) do not get it going;
    an exact objective's failed line search is retried along steepest
    descent, an approximate one's ends when ``tighten`` can change nothing.
    ``bp_start`` ("auto", "cold" or "warm") is where the ``Objective`` made here
    starts BP at each evaluation (``fgl.learn.objective``).  ``should_stop()``,
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
    ``memory``: the correction pairs kept (None: ``optimiser_memory``'s
    choice for the objective).
    ``progress`` receives each iteration's row (iteration, objective,
    gradient norm, evaluations, seconds, and the approximate inference
    statistics of the last evaluation or None), and for each recovery a row
    of the same keys (the point training restarts from) plus
    ``"recovery"``: what went wrong and what was done.  Recovery rows are in
    ``log.recoveries``, not ``log.iterations``.
    """
    if objective is None:
        objective = Objective(program, data, sigma, jobs, bp_start)
    release_freed_memory()   # (e.g. the full-length gold counts the objective made and freed)
    l1 = np.atleast_1d(np.asarray(l1, dtype=np.float64))
    m = optimiser_memory(memory, objective.approximate())
    if resume is not None:
        _check_resume(objective, resume, l1, m)
    run = _Run(objective, max_iter=max_iter, tol=tol, period=period, progress=progress,
               should_stop=should_stop, checkpoint=checkpoint, resume=resume, memory=m)
    # BLAS threads would only spin against the numba threads doing the real
    # work (the optimiser's dot products run on 10^5-10^6 weights)
    with threadpool_limits(limits=1, user_api="blas"):
        x0 = np.zeros(program.n_features) if w0 is None else w0
        common = dict(m=m, max_iter=max_iter, callback=run.iteration, jobs=jobs,
                      tighten=objective.tighten if objective.approximate() else None,
                      on_recovery=run.recovered, max_recoveries=max_recoveries,
                      checkpoint=run.save, resume=None if resume is None else resume.lbfgs)
        try:
            with stopping.watching(should_stop):
                result = minimize_owlqn(run.evaluate, x0, l1, **common) if (l1 > 0).any() \
                    else minimize_lbfgs(run.evaluate, x0, precision=objective.precision,
                                    scale=prior_shape(sigma, len(x0)), **common)
        except stopping.Stopped as e:
            result = run.stopped(e.reason)
    return run.finish(result)


class NothingEvaluated(TrainingError):
    """A run stopped (``reason``) before its first evaluation ended: no
    weights of its own (``fgl.learn.run`` keeps an exact part's, when it
    started from one)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def _stopped_at(state: LBFGSState | None, first: tuple | None, reason: str,
                log: TrainingLog, start: float) -> LBFGSResult:
    """The result of a run stopped inside an evaluation: the iterate of its
    last finished iteration (``state``), else the evaluated starting point
    (``first``: x0, f, g); TrainingError when not even that was evaluated."""
    if state is not None:
        return LBFGSResult(state.x, state.f, state.gradient(), state.iteration,
                           state.evaluations, False, reason, list(state.recoveries))
    if first is not None:
        x, f, g = first
        return LBFGSResult(x, f, g, 0, log.evaluations, False,
                           f"{reason} inside the first iteration: the model holds the "
                           "starting weights", [])
    raise NothingEvaluated(reason,
        f"{reason} before the first evaluation of the objective ended (after "
        f"{time.perf_counter() - start:.1f} s): there are no trained weights, so no model was "
        "written; allow more time, or make an evaluation cheaper (fewer BP passes: a "
        "smaller max_iter or a looser tol in the infer line, or damping)")


def _check_resume(objective: TrainingObjective, resume: TrainingState, l1: np.ndarray,
                  m: int) -> None:
    """Restore BP's settings and check that the objective at the saved
    weights is the saved one (to the objective's ``resume_slack``): the
    same spec, data and priors, and the run's ``m`` correction pairs."""
    if resume.m != m:
        raise FglError(f"the checkpoint's L-BFGS keeps {resume.m} correction pairs; this run "
                       f"keeps {m} (the train setting `memory`): resume with the memory of "
                       "the run that wrote it")
    objective.restore_bp_settings(resume.bp)
    f, _ = objective(resume.lbfgs.x)
    f += l1_penalty(resume.lbfgs.x, l1) if (l1 > 0).any() else 0.0
    saved = resume.lbfgs.f
    if not abs(f - saved) <= objective.resume_slack(saved):
        raise FglError(f"cannot resume: the checkpoint's objective was {saved:.12g}, on this "
                       f"data with these settings it is {f:.12g}; resume with the training "
                       "data, spec and sigma of the run that wrote it")
    objective.accept()
