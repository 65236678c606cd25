"""One training run, whoever starts it (``fgl.api.CRF`` on one machine, the
Dask driver of ``fgl.distributed.training``).

A ``TrainingRun`` chooses the spec's trainer (``fgl.learn.trainers``),
refuses what it does not do — every setting and override it does not read,
checkpoints and resume where it keeps none, an engine it does not train,
partially labelled data, a cluster — with one generic check, and then
trains: its stop rule (a time limit, ``request_stop`` from a signal or
another thread: ``fgl.stopping``), checkpoint policy, progress lines and the
divergence check are the same for every trainer.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from fgl import registry
from fgl.errors import FglError, IterationLimitWarning, SpecError, TrainingError
from fgl.lang import ast
from fgl.lang.overrides import OVERRIDES
from fgl.lang.settings import TrainSettings
from fgl.learn.checkpoint import TrainingState, check_same_model, load_checkpoint, save_checkpoint
from fgl.learn.exact_start import PART_MAX_ITER, PART_TOL, PartStart, planned, transfer
from fgl.learn.learner import NothingEvaluated, TrainingLog
from fgl.learn.trainers import choose, setting_errors
from fgl.learn.trainers.base import Fitted
from fgl.model import Model

# how L-BFGS and OWL-QN begin the message of a run they stopped at max_iter
# (fgl.learn.lbfgs, fgl.learn.owlqn)
ITERATION_LIMIT = "reached the iteration limit"


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside fgl, from the caller of
    this function's caller: a warning then names the user's own line (the
    ``fit`` call), not fgl's."""
    import inspect
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = inspect.currentframe().f_back, 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
        frame, level = frame.f_back, level + 1
    return level


class TrainingRun:
    """A training run of ``spec`` on the engine ``choice`` with ``settings``.

    ``checkpoint`` (a path) is saved every ``checkpoint_every`` iterations,
    when ``checkpoint_seconds`` have passed since the last save, and when
    training stops; ``resume`` (a checkpoint's path) continues a saved run.
    ``time_limit`` (seconds) stops training at the iterate reached;
    ``verbose`` prints a progress line per iteration (``progress`` receives
    every row instead, when given); ``dev_score(model, w)`` scores
    development data for feature induction's rounds."""

    def __init__(self, spec: ast.Spec, choice: registry.Choice, settings: TrainSettings, *,
                 checkpoint: Path | None = None, checkpoint_every: int = 10,
                 checkpoint_seconds: float | None = None, resume: str | Path | None = None,
                 time_limit: float | None = None, verbose: bool = False,
                 progress: Callable[[dict], None] | None = None,
                 dev_score: Callable[[Model, np.ndarray], float] | None = None):
        self.spec, self.choice, self.settings = spec, choice, settings
        self.trainer = choose(spec, settings)
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        self.checkpoint_seconds, self.resume = checkpoint_seconds, resume
        self.time_limit, self.verbose, self.dev_score = time_limit, verbose, dev_score
        self.progress = progress if progress is not None or not verbose else self._print
        self.resume_state: TrainingState | None = None
        self.started = False        # the optimiser has begun (fgl.cli.train's signal handler)
        self.stop_reason: str | None = None
        self._start = 0.0
        self._part: PartStart | None = None       # the exact part trained first (``start``)
        self._w0: np.ndarray | None = None

    @property
    def jobs(self) -> int:
        return self.settings.jobs

    # ------------------------------------------------------------ refusals

    def check(self, distributed: bool = False) -> None:
        """Refuse, before anything is read or compiled, what this run's
        trainer does not do (module docstring)."""
        errors = setting_errors(self.spec)
        if errors:
            raise errors[0]
        trainer, engine = self.trainer, self.choice.engine
        if trainer.check_spec is not None:
            trainer.check_spec(self.spec, engine, self.choice.reason)
        if trainer.engines is not None and engine.name not in trainer.engines:
            raise FglError(f"{trainer.display} trains {' and '.join(trainer.engines)} models; "
                           f"this spec runs on the {engine.name} engine: {self.choice.reason}")
        self._check_objective()
        extra = [k for k in OVERRIDES if k in self.settings.overridden
                 and k not in trainer.overrides_read
                 and not trainer.reads_setting(k, self.settings.value(k))]
        if not trainer.checkpoints:
            extra += [k for k, v in (("checkpoint", self.checkpoint), ("resume", self.resume))
                      if v]
        if extra:
            raise FglError(f"{trainer.display} takes no {', '.join(extra)}"
                           f"{trainer.override_hint}")
        if distributed:
            self._check_distributed()

    def _check_objective(self) -> None:
        """A training objective the engine does not offer, at the setting."""
        kind, engine = self.settings.value("objective"), self.choice.engine
        if kind in engine.objectives:
            return
        setting = next(s for s in self.spec.train if s.key == "objective")
        raise SpecError(f"train: objective '{kind}' is for factor-graph models (pair templates, "
                        f"several layers or graph input); this spec runs on the "
                        f"{engine.name} engine, whose likelihood is exact: remove it",
                        setting.loc.file, setting.loc.line, setting.loc.col)

    def _check_distributed(self) -> None:
        objective, bp_start = self.settings.value("objective"), self.settings.value("bp_start")
        if not self.trainer.distributed:
            raise FglError(f"{self.trainer.display} runs on one machine; distributed training "
                           "is L-BFGS (the default trainer)")
        if objective != "likelihood":
            raise FglError(f"objective '{objective}' runs on one machine; distributed "
                           "training optimises the likelihood")
        if bp_start == "warm":
            raise FglError("bp_start = warm keeps BP messages per worker between evaluations; "
                           "distributed training starts BP cold (remove bp_start)")
        if self.settings.value("start") == "exact_part":
            raise FglError("start = exact_part trains the spec's exact part on one machine; "
                           "distributed training starts at zero (remove start)")

    def check_data(self, model: Model, data: Any) -> int:
        """The training data's unlabelled nodes (trained by the marginal
        likelihood, which only L-BFGS on the likelihood optimises: other
        trainers and objectives are refused)."""
        free = model.unlabelled(data)
        objective = self.settings.value("objective")
        if free and not (self.trainer.partial_labels and objective == "likelihood"):
            what = (f"objective = {objective}" if self.trainer.partial_labels
                    else f"trainer = {self.settings.trainer}")
            raise FglError(f"the training data has {free} unlabelled nodes (null labels), which "
                           "train by the marginal likelihood (Sutton & McCallum §1.4.3): L-BFGS "
                           f"on the likelihood, the default; remove `{what}`")
        return free

    # ------------------------------------------------------------ resume and checkpoints

    def load_resumed(self) -> Model | None:
        """The model of the checkpoint to resume (read before compiling, so
        a bad file fails early), its state kept for the trainer."""
        if self.resume is None:
            return None
        saved, self.resume_state = load_checkpoint(self.resume)
        return saved

    def check_resumed(self, saved: Model | None, model: Model) -> None:
        """Refuse to resume a checkpoint of another spec or other features."""
        if saved is not None:
            check_same_model(saved, model, str(self.resume))

    def checkpointer(self, model: Model) -> Callable[[TrainingState, bool], None] | None:
        """What saves the run's state when a checkpoint is due (every
        ``checkpoint_every`` iterations, ``checkpoint_seconds`` after the
        last save, and when training stops)."""
        if self.checkpoint is None:
            return None
        last = [time.perf_counter()]

        def save(state: TrainingState, final: bool) -> None:
            now = time.perf_counter()
            if final or state.iteration % self.checkpoint_every == 0 or (
                    self.checkpoint_seconds is not None
                    and now - last[0] >= self.checkpoint_seconds):
                save_checkpoint(self.checkpoint, model, state,
                                {"iterations": state.iteration,
                                 "objective": state.objective, "seconds": state.seconds})
                last[0] = now
        return save

    # ------------------------------------------------------------ stopping

    def should_stop(self) -> str | None:
        """The reason to stop once ``request_stop`` was called or the time
        limit passed, else None."""
        if self.stop_reason is None and self.time_limit is not None \
                and time.perf_counter() - self._start > self.time_limit:
            self.stop_reason = f"stopped at the time limit ({self.time_limit:g} s)"
        return self.stop_reason

    def request_stop(self, reason: str) -> None:
        """End the run at its next safe point — after the current iteration,
        or inside an evaluation (``fgl.stopping``) — keeping the last
        finished iteration's weights, with ``reason`` as the log's message."""
        self.stop_reason = reason

    # ------------------------------------------------------------ training

    def exact_part(self) -> ast.Spec | None:
        """The spec's exact part when training starts from it (the trainer's
        ``start`` setting, ``fgl.learn.exact_start``; not when resuming)."""
        start = self.settings.value("start") if "start" in self.trainer.reads else None
        return planned(self.spec, start, self.resume_state is not None)

    def start_from(self, part: ast.Spec, model: Model, data: Any) -> None:
        """Train the exact ``part`` (its ``model``, compiled against the
        training ``data``) first, and start from its weights."""
        self._part = PartStart(part, model, data)

    def initial_weights(self, model: Model) -> np.ndarray:
        """Where the trainer starts: the exact part's weights carried over
        when the run trained it first, else ``model.initial_weights()``."""
        return model.initial_weights() if self._w0 is None else self._w0.copy()

    def fit(self, model: Model, data: Any) -> Fitted:
        """Train ``model`` on its encoded ``data`` with the run's trainer
        (its exact part first, when ``start_from`` gave one)."""
        self._begin(model)
        start = self._train_part(model)
        stopped = self.should_stop() if start is not None else None   # (while the part trained)
        try:
            if stopped is not None:
                raise NothingEvaluated(stopped, stopped)
            model, weights, log = self.trainer.fit(self, model, data)
        except NothingEvaluated as e:
            if start is None:
                raise
            weights = self.initial_weights(model)   # stopped: the part's weights are the model
            log = TrainingLog(objective=start["objective"], message=(
                f"{e.reason} inside the first iteration: the model holds the starting weights "
                f"(the exact part's{', stopped while it trained' if stopped else ''}; its "
                f"objective {start['objective']:.6g} is shown)"))
        log.start = start
        return self._finished(model, weights, log)

    def _train_part(self, model: Model) -> dict | None:
        part, self._part = self._part, None
        if part is None:
            return None
        # (the part's own iteration limit, not the run's: a run stopped early and one resumed
        # from its checkpoint start from the same part)
        options = self.settings.options()
        w, start = part.train(max_iter=PART_MAX_ITER,
                              tol=max(getattr(options, "tol", PART_TOL), PART_TOL),
                              jobs=self.jobs, memory=getattr(options, "memory", None),
                              should_stop=self.should_stop, verbose=self.verbose)
        self._w0, start["carried"] = transfer(part.model, w, model)
        if self.verbose:
            print(f"start: the exact part trained in {start['seconds']:.1f}s "
                  f"({start['iterations']} iterations, {start['message']}); its weights start "
                  f"{start['carried']:,} of {model.program.n_features:,} features",
                  file=sys.stderr)
        return start

    def fit_objective(self, model: Model, objective: Any) -> Fitted:
        """Train ``model`` on a given objective (a Dask cluster's)."""
        self._begin(model)
        return self._finished(*self.trainer.fit_objective(self, model, objective))

    def plan(self) -> str:
        """What trains and what runs inference, and why: the trainer (the
        rule that chose it) and the engine (``fgl.registry``, as ``fgl
        explain`` says it)."""
        t = self.trainer
        plan = (f"trainer: {t.name}, {t.title}\n  chosen: {t.chosen_when}\n"
                f"engine: {self.choice.title(self.spec)}\n  why: {self.choice.reason}")
        return plan if self._part is None else plan + "\n" + self._part.plan()

    def _begin(self, model: Model) -> None:
        if self.verbose:
            print(self.plan(), file=sys.stderr)
        if self.trainer.kernels:   # a first run compiles the kernels: say so (verbose or not)
            from fgl.engines.first_run import note_first_compile
            note_first_compile(self.choice.engine, self.trainer.kernels)
        self.stop_reason, self.started, self._start = None, True, time.perf_counter()

    def _finished(self, model: Model, weights: np.ndarray, log: TrainingLog) -> Fitted:
        if not (np.isfinite(log.objective) and np.isfinite(weights).all()):
            raise TrainingError(f"training diverged: the objective became {log.objective} "
                                f"after {len(log.iterations)} iterations ({log.message}); "
                                "no model kept — check the data's numbers and the sigma")
        if not log.converged and log.message.startswith(ITERATION_LIMIT):
            import re
            import warnings
            limit = re.search(r"\((\d+)\)", log.message)
            n = int(limit.group(1)) if limit else len(log.iterations)
            warnings.warn(IterationLimitWarning(
                f"training stopped at the iteration limit (max_iter = {n}) before its "
                f"convergence rule held: the weights are usable but not the optimum; raise it "
                f"(`train {{ max_iter = {4 * n} }}` in the spec, --max-iter {4 * n}, or "
                f"max_iter={4 * n} in Python) or loosen `tol`"), stacklevel=_caller_level())
        return model, weights, log

    def _print(self, row: dict) -> None:
        print(self.trainer.progress_line(row), file=sys.stderr)
