"""Stochastic gradient descent on the L2-regularised likelihood, CRFsuite's
``l2sgd`` in kind, over any program's runs of instances
(``Program.instance_runs``).

The objective is L-BFGS's (``fgl.learn.objective``): f(w) = Σ_i f_i(w) with
f_i(w) = log Z(x_i) - log Z(y_i, x_i) + (1/N) Σ_k w_k² / (2 σ_k²), one term
per training instance (Vishwanathan, Schraudolph, Schmidt & Murphy 2006 §2:
stochastic gradient steps on one instance's term at a time, how large
CRFs are trained).  An epoch visits the data in runs of ``batch``
consecutive instances, in an order shuffled afresh each epoch from a fixed
seed, and steps along each run's gradient

    w <- (w - η_t ∇ loss_run(w)) / (1 + η_t B λ_k),   λ_k = 1 / (N σ_k²),

the L2 term taken as its proximal (implicit) step, which stays a shrinkage
for any η_t (the explicit 1 - η_t B λ_k of Bottou 2012 §5.1 turns negative
when η_t B λ_k > 1).  The rate falls as η_t = η_0 / (1 + λ η_0 t) (Bottou
2012 §5.2; CRFsuite's t0 = 1 / (λ η_0)), t the instances seen and λ the
mean of the λ_k.

The shrinkage costs no pass over the weights: they are held as w_k =
s_g v_k, one scale s_g per distinct prior (Bottou 2012 §5.1, one scale
there), so a step rescales the few s_g and changes v only where the run's
gradient is non-zero — its ``support``, the only weights the run reads,
which are made current (w = s v) before it.  A step then costs the run's
features, not the model's: on CoNLL-2000 with CRFsuite's features a
sentence reads about 1,700 of 453,010, and making them current and
stepping took 35-40 µs where the decay applied to every weight took
270-280 µs (2.4 s an epoch, against an epoch of about 3 s in all).  The
scales are folded into v when one falls below ``RESCALE_BELOW``.

η_0, unless given (``learning_rate``), is calibrated as Bottou's SGD does
(Bottou 2012 §5.2: γ_0 chosen on a small sample of the training data): on
a sample of ``CALIBRATION_SAMPLES`` instances, from the
starting weights, one epoch at each rate tried and the sample's objective
after it; from CRFsuite's first rate (0.1) rates a factor 2 apart are
tried up or down while the objective improves, and the best rate tried is
kept.

Training ends after ``epochs`` epochs, or by CRFsuite's rule on the best
objective estimate so far — an epoch's estimate is its losses, each taken
as its run was visited, plus the prior at the epoch's end — when it
improved by less than ``delta`` (relative) over the last ``period``
epochs.  Every epoch's order
and the calibration sample come from ``SEED``, and a run is computed on one
thread, so the weights are the same bits for any ``jobs``.  The scales are
folded into v at every epoch's end, so a checkpoint (``SGDState``, saved
between epochs) is the weights and a few numbers, and resumes to the same
bits — except that BP's messages are not saved: a resumed loopy model
restarts each instance's BP cold (under TRW the same fixed points, to BP's
tolerance).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from fgl import stopping
from fgl.errors import TrainingError
from fgl.jit import njit
from fgl.learn.learner import TrainingLog
from fgl.learn.sgd_state import SGDState

SEED = 0
CALIBRATION_SAMPLES = 1000   # instances in the calibration sample (CRFsuite's default)
FIRST_RATE = 0.1             # the first rate calibration tries (CRFsuite's calibration.eta)
RATE_FACTOR = 2.0            # rates tried a factor 2 apart (Bottou's SGD, CRFsuite)
MOST_TRIALS = 20             # the most rates calibration tries (CRFsuite's max_trials)
RESCALE_BELOW = 1e-9         # fold the scales into v when one falls below this


@njit(cache=True, nogil=True)
def materialise(w, v, scale, group, index):
    """w[k] = s_g v[k] at the features ``index`` (g the group of k)."""
    for i in range(index.shape[0]):
        k = index[i]
        w[k] = scale[group[k]] * v[k]


@njit(cache=True, nogil=True)
def gradient_step(v, scale, group, index, values, eta):
    """v[k] -= η values / s_g at the features ``index``: w moves by -η values."""
    for i in range(index.shape[0]):
        k = index[i]
        v[k] -= eta * values[i] / scale[group[k]]


@dataclass
class Prior:
    """The Gaussian prior as SGD applies it: per feature its group (one per
    distinct σ), per group 1/σ², and λ_g = 1/(N σ_g²) per instance."""

    group: np.ndarray
    inv_var: np.ndarray
    instances: int

    @classmethod
    def of(cls, sigma: np.ndarray, n_features: int, instances: int) -> "Prior":
        sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (n_features,))
        values, group = np.unique(sigma, return_inverse=True)
        return cls(group.astype(np.int32).reshape(-1), 1.0 / np.square(values), instances)

    @property
    def lam(self) -> np.ndarray:
        """λ_g per group."""
        return self.inv_var / self.instances

    @property
    def mean_lam(self) -> float:
        """λ of the rate schedule: the mean of λ_k over the features."""
        if not len(self.group):
            return 0.0
        counts = np.bincount(self.group, minlength=len(self.inv_var))
        return float(counts @ self.lam / len(self.group))

    def penalty(self, w: np.ndarray) -> float:
        """Σ_k w_k² / (2 σ_k²)."""
        per_group = np.bincount(self.group, weights=w * w, minlength=len(self.inv_var))
        return 0.5 * float(per_group @ self.inv_var)


def run_cuts(n: int, batch: int) -> list[tuple[int, int]]:
    """The runs of ``batch`` consecutive instances (the last may be shorter)."""
    return [(i, min(i + batch, n)) for i in range(0, n, batch)]


def epoch_order(epoch: int, n_runs: int) -> np.ndarray:
    """The order of the runs in ``epoch`` (0: the calibration sample's)."""
    return np.random.default_rng([SEED, epoch]).permutation(n_runs)


class Stepper:
    """SGD steps over runs of instances (module docstring) on a program's
    ``InstanceRuns``: ``w`` the working copy, current at each run's
    support before it runs."""

    def __init__(self, runs, prior: Prior, cuts: list[tuple[int, int]]):
        self.runs, self.prior, self.cuts = runs, prior, cuts
        self.lam, self.mean_lam = prior.lam, prior.mean_lam
        self.w = np.zeros(len(prior.group))

    def rate(self, eta0: float, t: int) -> float:
        """η_t = η_0 / (1 + λ η_0 t) (Bottou 2012 §5.2)."""
        return eta0 / (1.0 + self.mean_lam * eta0 * t)

    def step(self, state: SGDState, k: int) -> float:
        """One step on run ``k``; its loss at the weights before the step."""
        i0, i1 = self.cuts[k]
        index = self.runs.support(i0, i1)
        materialise(self.w, state.v, state.scale, state.group, index)
        got = self.runs.gradient(self.w, i0, i1)
        eta = self.rate(state.eta0, state.t)
        gradient_step(state.v, state.scale, state.group, got.index, got.values, eta)
        state.scale /= 1.0 + eta * (i1 - i0) * self.lam
        if state.scale.min() < RESCALE_BELOW:
            state.v *= state.scale[state.group]
            state.scale[:] = 1.0
        state.t += i1 - i0
        return got.loss

    def sample_objective(self, state: SGDState, sample: np.ndarray) -> float:
        """Σ loss over the runs ``sample`` plus their share of the prior, at
        the state's weights."""
        w = state.weights
        total = 0.0
        for k in sample:
            total += self.runs.gradient(w, *self.cuts[k]).loss
        size = sum(self.cuts[k][1] - self.cuts[k][0] for k in sample)
        return total + size / self.prior.instances * self.prior.penalty(w)

    def trial(self, w0: np.ndarray, eta: float, sample: np.ndarray) -> float:
        """The sample's objective after one epoch over it at rate ``eta``
        from ``w0`` (inf when it diverged)."""
        state = SGDState(w0.copy(), np.ones(len(self.lam)), self.prior.group, eta)
        with np.errstate(all="ignore"):
            try:
                for k in sample:
                    if not math.isfinite(self.step(state, k)):
                        return math.inf
                f = self.sample_objective(state, sample)
            except (ValueError, FloatingPointError):   # (BP refuses non-finite potentials)
                return math.inf
        return f if math.isfinite(f) else math.inf

    def calibrate(self, w0: np.ndarray, progress: Callable[[dict], None] | None
                  ) -> tuple[float, list[dict]]:
        """η_0 by Bottou's bracket (module docstring): the best rate tried, and the trials."""
        order = epoch_order(0, len(self.cuts))
        sizes = np.cumsum(np.array([b - a for a, b in self.cuts])[order])
        runs = min(len(order), int(np.searchsorted(sizes, CALIBRATION_SAMPLES)) + 1)
        sample, instances = order[:runs], int(sizes[runs - 1])
        trials: list[dict] = []

        def cost(eta: float) -> float:
            f = self.trial(w0, eta, sample)
            trials.append({"calibration": eta, "objective": f})
            if progress is not None:
                progress({**trials[-1], "trial": len(trials), "sample": instances})
            return f

        lo = FIRST_RATE
        c_lo = cost(lo)
        hi = lo * RATE_FACTOR
        c_hi = cost(hi)
        if c_lo <= c_hi:   # (smaller rates while they do better, or the smaller diverged)
            while len(trials) < MOST_TRIALS and (c_lo < c_hi or math.isinf(c_lo)):
                hi, c_hi = lo, c_lo
                lo /= RATE_FACTOR
                c_lo = cost(lo)
        else:
            while len(trials) < MOST_TRIALS and c_hi < c_lo:
                lo, c_lo = hi, c_hi
                hi *= RATE_FACTOR
                c_hi = cost(hi)
        best = min(trials, key=lambda t: t["objective"])
        if math.isinf(best["objective"]):
            raise TrainingError(f"trainer sgd: every learning rate tried down to {lo:g} "
                                "diverged on the calibration sample; give a smaller "
                                "`learning_rate` or a smaller sigma")
        return best["calibration"], trials


def train_sgd(program, data, sigma: np.ndarray, *, epochs: int = 50, batch: int = 1,
              learning_rate: float | None = None, period: int = 10, delta: float = 1e-6,
              w0: np.ndarray | None = None, progress: Callable[[dict], None] | None = None,
              should_stop: Callable[[], str | None] | None = None,
              checkpoint: Callable[[SGDState, bool], None] | None = None,
              resume: SGDState | None = None) -> tuple[np.ndarray, TrainingLog]:
    """SGD weights for ``program`` on ``data`` (module docstring) with the
    per-feature prior ``sigma``.  ``progress`` receives a row per
    calibration trial (calibration: the rate, objective: the sample's) and
    per epoch (iteration: the epoch, objective: its estimate,
    learning_rate: η at its end, instances, seconds).  ``should_stop`` is
    asked after every run (and inside BP: ``fgl.stopping``); a stop keeps
    the steps so far.  ``checkpoint(state, final)`` is called after every
    epoch and at a stop; ``resume`` continues such a state to the same
    bits (BP's messages aside)."""
    n = data.n_sequences
    if n == 0:
        raise TrainingError("trainer sgd: no training instances")
    prior = Prior.of(sigma, program.n_features, n)
    cuts = run_cuts(n, batch)
    stepper = Stepper(program.instance_runs(data, carry=True), prior, cuts)
    log, start = TrainingLog(), time.perf_counter()
    w0 = np.zeros(program.n_features) if w0 is None else np.asarray(w0, dtype=np.float64)
    with stopping.watching(should_stop):
        if resume is not None:
            state = resume
            state.scale, state.group = np.ones(len(prior.inv_var)), prior.group
        else:
            try:
                eta0, trials = (float(learning_rate), []) if learning_rate is not None \
                    else stepper.calibrate(w0, progress)
            except stopping.Stopped as e:
                log.message, log.objective = f"{e.reason} (calibrating)", prior.penalty(w0)
                return w0.copy(), log
            state = SGDState(w0.copy(), np.ones(len(prior.inv_var)), prior.group, eta0,
                             calibration=trials)
        log.iterations = list(state.rows)
        reason = _epochs(stepper, state, epochs, period, delta, log, progress, should_stop,
                         checkpoint, time.perf_counter() - state.seconds)
    log.message = reason
    log.seconds = time.perf_counter() - start
    w = state.weights
    log.objective = state.objective if state.objectives else prior.penalty(w)
    return w, log


def _epochs(stepper: Stepper, state: SGDState, epochs: int, period: int, delta: float,
            log: TrainingLog, progress: Callable[[dict], None] | None,
            should_stop: Callable[[], str | None] | None,
            checkpoint: Callable[[SGDState, bool], None] | None, start: float) -> str:
    """The epochs of ``train_sgd`` from ``state`` on; why they ended.  A
    stop inside an epoch keeps its steps in ``state``; the checkpoint then
    saved is the epoch's start, which a resume runs again."""
    cuts, n = stepper.cuts, stepper.prior.instances
    while state.epoch < epochs:
        begun = state.copy() if checkpoint is not None else None
        order = epoch_order(state.epoch + 1, len(cuts))
        reason, loss, done = None, 0.0, 0
        try:
            while done < len(cuts) and not reason:
                loss += stepper.step(state, int(order[done]))
                done += 1
                reason = stopping.poll()   # (an epoch can be long: asked after every run)
        except stopping.Stopped as e:   # (inside a run: its step is not taken)
            reason = e.reason
        except ValueError:   # (BP refuses the non-finite potentials of diverged weights)
            if np.isfinite(state.v).all():
                raise
            reason = f"the weights diverged in epoch {state.epoch + 1}"
        state.seconds = time.perf_counter() - start
        if done < len(cuts):   # (stopped inside the epoch)
            if begun is not None:
                checkpoint(begun, True)
            return reason
        state.fold()
        f = loss + stepper.prior.penalty(state.v)
        state.epoch += 1
        state.objectives.append(f)
        row = {"iteration": state.epoch, "objective": f, "eta0": state.eta0,
               "learning_rate": stepper.rate(state.eta0, state.t), "instances": n,
               "seconds": state.seconds}
        state.rows.append(row)
        log.iterations.append(row)
        if progress is not None:
            progress(row)
        if not math.isfinite(f):
            return f"the objective diverged at epoch {state.epoch}"
        rule = _converged(state.objectives, period, delta)
        log.converged = rule is not None
        reason = rule or reason or (should_stop() if should_stop is not None else None)
        if checkpoint is not None:
            checkpoint(state, bool(reason) or state.epoch >= epochs)
        if reason:
            return reason
    return f"reached the epoch limit ({epochs})"


def _converged(objectives: list[float], period: int, delta: float) -> str | None:
    """CRFsuite's rule on the best objective so far: the reason to stop when
    it improved by less than ``delta`` (relative) over the last ``period``
    epochs (never when ``delta`` is 0).  The best, not the last: the
    estimate is noisy, and a rise over the period (on a skip chain at a
    near-constant rate, 19 % in 10 epochs between two better ones) would
    end training at its worst."""
    if len(objectives) <= period or delta <= 0:
        return None
    before, now = min(objectives[:-period]), min(objectives)
    gain = (before - now) / max(abs(now), 1e-300)
    if gain < delta:
        return (f"the best objective improved by {gain:.3g} (< delta {delta:g}) over the last "
                f"{period} epochs")
    return None
