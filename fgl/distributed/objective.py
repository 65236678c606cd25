"""The training objective evaluated on the cluster: one round trip per
evaluation.

Every worker holds, per shard, the learner's own ``Objective`` over the
shard's encoded data (``fgl.learn.learner``: the engine's kernels on the
worker's threads) without the prior.  An evaluation scatters the weights
once (to one worker, whom the others fetch them from; not pickled into
every task), runs one task
per shard, adds the partial objectives and gradients in a tree of tasks
where they lie (``fgl.distributed.reduce``) and brings one gradient to the
driver, which adds the Gaussian prior once (Sutton & McCallum eq. 1.21).
L-BFGS (``fgl.learn.lbfgs``) then runs on the driver as on one machine.

A lost worker's shard objectives are futures Dask recomputes from their
lineage (re-reading and re-encoding the shards on another worker); an
evaluation interrupted by the loss is retried.  BP's settings, which
recoveries tighten, are the driver's and travel with every evaluation, so
a recomputed shard objective uses them too.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from fgl.distributed.compile import EncodedShards
from fgl.distributed.recipe import ModelRecipe
from fgl.distributed.reduce import tree_reduce
from fgl.engines.graph.warm_start import ERROR_PER_VARIABLE
from fgl.engines.program import InferenceStats
from fgl.errors import FglError
from fgl.learn.objective import Objective, add_prior, inverse_variance, same_evaluation

ATTEMPTS = 6                     # tries of one evaluation when workers are lost
RECONNECT_SECONDS = 120          # how long a retry waits for a worker to be there
NO_PRIOR = np.array([np.inf])    # sigma = inf: 1/sigma^2 = 0, the prior is the driver's


def shard_objective(recipe: ModelRecipe, jobs: int, encode: Callable, *args) -> Objective:
    """A shard's objective without the prior, over the data ``encode(*args)``
    (on its worker, which keeps it)."""
    return Objective(recipe.build().program, encode(*args), NO_PRIOR, jobs, "cold")


@dataclass
class Partial:
    """Σ over some shards of the objective and gradient, their inference
    statistics, and each worker's compute seconds."""

    f: float
    grad: np.ndarray
    stats: InferenceStats | None
    seconds: dict[str, float] = field(default_factory=dict)


def evaluate_shard(objective: Objective, w: np.ndarray, bp: dict | None) -> Partial:
    """One shard's part of an evaluation at ``w`` with BP settings ``bp``."""
    from distributed import get_worker

    t0 = time.perf_counter()
    objective.restore_bp_settings(bp)
    f, g = objective(w)
    return Partial(f, g, objective.stats, {get_worker().address: time.perf_counter() - t0})


def add_partials(*parts: Partial) -> Partial:
    """The sum of partial results, in order."""
    grad = parts[0].grad.copy()
    f, stats, seconds = parts[0].f, parts[0].stats, dict(parts[0].seconds)
    for p in parts[1:]:
        grad += p.grad
        f += p.f
        stats = _merge_stats(stats, p.stats)
        for worker, s in p.seconds.items():
            seconds[worker] = seconds.get(worker, 0.0) + s
    return Partial(f, grad, stats, seconds)


def _merge_stats(a: InferenceStats | None, b: InferenceStats | None) -> InferenceStats | None:
    if a is None or b is None:
        return a or b
    return InferenceStats(a.instances + b.instances, a.not_converged + b.not_converged,
                          max(a.max_iterations, b.max_iterations),
                          max(a.max_residual, b.max_residual), a.sweeps + b.sweeps)


def refine_shard(objective: Objective, bp: dict | None, decrease: float, value: float,
                 size: int) -> tuple[str | None, dict | None]:
    """Refine a shard's BP (``Objective.refine``, judged by the whole data
    set's ``size``) from the driver's settings ``bp``: what changed, and the
    settings it leaves."""
    objective.restore_bp_settings(bp)
    return objective.refine(decrease, value, size), objective.bp_settings()


def shard_variables(objective: Objective) -> int:
    """The variables a shard's BP runs over."""
    return objective.variables


def tighten_shard(objective: Objective) -> tuple[str | None, dict | None]:
    """Tighten a shard's BP (``Objective.tighten``): what changed, and the
    settings now in force."""
    return objective.tighten(), objective.bp_settings()


def _lost_worker(e: BaseException) -> bool:
    """Whether an error is the cluster's (a lost worker or connection, a
    task cancelled with it) rather than the task's own."""
    import asyncio

    return isinstance(e, (OSError, asyncio.CancelledError, asyncio.TimeoutError)) or \
        type(e).__module__.split(".")[0] == "distributed"


@dataclass
class Round:
    """What the last evaluation cost: the slowest worker's compute seconds,
    the whole round trip's, and the bytes moved (the weights to every
    worker, one gradient back from each)."""

    slowest: float
    seconds: float
    bytes_moved: int
    workers: int


class DistributedObjective:
    """f(w) and ∇f(w) summed over the cluster's shards, plus the prior: a
    ``fgl.learn.objective.TrainingObjective`` (BP always starts cold on the
    workers, so there is nothing to ``accept``)."""

    def __init__(self, client, encoded: EncodedShards, sigma: np.ndarray, jobs: int):
        self.client = client
        self.inv_var = inverse_variance(sigma)
        self.held = encoded.held   # lost shards are rebuilt from them
        # shards dealt round the workers (elsewhere when one is lost)
        workers = sorted(client.scheduler_info()["workers"])
        self.shards = [client.submit(shard_objective, encoded.recipe, jobs, *encoder,
                                     workers=[workers[i % len(workers)]],
                                     allow_other_workers=True, pure=False)
                       for i, encoder in enumerate(encoded.encoders)]
        self.bp: dict | None = None
        self.variables: int | None = None   # BP's, over every shard (asked at the first refine)
        self.stats: InferenceStats | None = None
        self.last: Round | None = None
        self.retried = 0

    def _round(self, fn, *args):
        """Run ``fn(shard objective, *args)`` on every shard; a lost worker's
        shards are recomputed by Dask and the round retried."""
        for attempt in range(ATTEMPTS):
            try:
                return fn(*args)
            except Exception as e:
                if not _lost_worker(e):
                    raise
                if attempt + 1 == ATTEMPTS:
                    raise FglError(f"the cluster lost workers {ATTEMPTS} times in one "
                                   f"evaluation ({type(e).__name__}: {e}); training stopped "
                                   "without a result") from None
                self.retried += 1
                time.sleep(0.5 * 2 ** attempt)   # (the scheduler notices the loss meanwhile)
                self.client.wait_for_workers(1, timeout=RECONNECT_SECONDS)

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        t0 = time.perf_counter()
        total = self._round(self._evaluate, w)
        grad = total.grad
        prior = add_prior(grad, w, self.inv_var) if len(w) else 0.0
        self.stats = total.stats
        workers = len(total.seconds)
        self.last = Round(max(total.seconds.values(), default=0.0), time.perf_counter() - t0,
                          2 * w.nbytes * workers, workers)
        return float(total.f + prior), grad

    def _evaluate(self, w: np.ndarray) -> Partial:
        # to one worker; the others fetch it from there (a broadcast would wait on a
        # worker the scheduler does not yet know is lost)
        w_f = self.client.scatter(w, hash=False)
        parts = [self.client.submit(evaluate_shard, s, w_f, self.bp, pure=False)
                 for s in self.shards]
        return tree_reduce(self.client, parts, add_partials).result()

    def tighten(self) -> str | None:
        """Tighten BP on every shard (``Objective.tighten``) and keep the
        most tightened settings for the following evaluations."""
        found = self._round(lambda: self.client.gather(
            [self.client.submit(tighten_shard, s, pure=False) for s in self.shards]))
        notes = [note for note, _ in found if note]
        settings = [bp for _, bp in found if bp]
        if settings:
            self.bp = max(settings, key=lambda bp: max(side["damping"] for side in bp.values()))
        return max(notes, key=len) if notes else None

    def refine(self, decrease: float, objective: float) -> str | None:
        """Refine BP on every shard (``Objective.refine``), judged by the
        variables of all shards, as on one machine."""
        if self.variables is None:
            self.variables = sum(self._round(lambda: self.client.gather(
                [self.client.submit(shard_variables, s, pure=False) for s in self.shards])))
        if not self.variables:   # (no BP: nothing to refine, and no round trip to say so)
            return None
        found = self._round(lambda: self.client.gather(
            [self.client.submit(refine_shard, s, self.bp, decrease, objective, self.variables,
                                pure=False) for s in self.shards]))
        note, bp = found[0] if found else (None, None)
        if note:
            self.bp = bp
        return note

    def approximate(self) -> bool:
        return self.bp is not None

    def accept(self) -> None:
        pass

    def bp_settings(self) -> dict | None:
        return self.bp

    def restore_bp_settings(self, saved: dict | None) -> None:
        self.bp = saved

    def resume_slack(self, f: float) -> float:
        return same_evaluation(f)   # (the workers start BP cold)

    def precision(self, f: float) -> float:
        """BP's error on each side, over every shard's variables
        (``WarmStart.error``); 0 before the first refine counts them."""
        if self.bp is None or not self.variables:
            return 0.0
        return sum(side["tol"] * max(abs(f), ERROR_PER_VARIABLE * self.variables)
                   for side in self.bp.values())

    def release(self) -> None:
        """Let the workers free the shards."""
        self.shards, self.held = [], []
