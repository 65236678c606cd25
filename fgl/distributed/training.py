"""Training a ``fgl.api.CRF`` on a Dask cluster: compile on the workers
(``fgl.distributed.compile``), then L-BFGS on the driver with one round trip
per evaluation (``fgl.distributed.objective``), checkpoints and resume as on
one machine (``fgl.learn.checkpoint``).

Distributed training is L-BFGS (or OWL-QN, with l1) of the likelihood, in
the same ``fgl.learn.run.TrainingRun`` as on one machine; the perceptron,
the ECRN, feature induction, local objectives and ``bp_start = warm``
(whose BP messages are per-worker state) are refused.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from fgl.distributed.cluster import connect, worker_threads
from fgl.distributed.compile import EncodedShards, Reading, compile_on_cluster
from fgl.distributed.objective import DistributedObjective
from fgl.distributed.shards import DEFAULT_SHARD_BYTES, by_document, expand, find_shards
from fgl.lang import ast
from fgl.lang.settings import TrainSettings
from fgl.learn.learner import TrainingLog
from fgl.learn.run import TrainingRun


class Trainee(Protocol):
    """What the driver reads and sets of the ``fgl.api.CRF`` it trains."""

    spec: ast.Spec
    settings: TrainSettings
    jobs: int
    verbose: bool
    model: Any
    weights: np.ndarray | None
    training_log: TrainingLog | None

    def training_run(self, resume: str | Path | None = None, dev: Any = None,
                     progress: Callable[[dict], None] | None = None) -> TrainingRun: ...


def check_trainable(crf: Trainee, resume: Any = None,
                    progress: Callable[[dict], None] | None = None) -> TrainingRun:
    """The CRF's training run, refusing what distributed training does not
    do (``TrainingRun.check``), saying what it does."""
    run = crf.training_run(resume, progress=progress)
    run.check(distributed=True)
    return run


def fit_on_cluster(crf: Trainee, paths: str | Path | Sequence[str | Path], *, dask: Any = None,
                   workers: int | None = None, encoding: str = "utf-8",
                   short_lines: str = "error", resume: str | Path | None = None,
                   shard_bytes: int = DEFAULT_SHARD_BYTES,
                   progress: Callable[[dict], None] | None = None) -> Trainee:
    """Train ``crf`` on the files ``paths`` (paths or globs) on the cluster
    ``dask`` (a client or a scheduler address) or on a local cluster of
    ``workers`` processes; sets ``crf.model``, ``weights`` and
    ``training_log`` as ``CRF.fit_file`` does.  ``progress`` receives every
    iteration's row, with the slowest worker's seconds (``slowest_worker``)
    and the bytes the last evaluation moved (``bytes_moved``)."""
    cluster_rows: list = [None]   # the objective, once made: its last round's figures
    run = check_trainable(crf, resume, lambda row: _report(row, cluster_rows[0], crf.verbose,
                                                           progress))
    expand(paths)   # (a missing file before the cluster starts)
    saved = run.load_resumed()
    with connect(dask, workers) as client:
        t0 = time.perf_counter()
        shards = cluster_shards(crf, client, paths, shard_bytes)
        encoded = compile_shards(crf, client, shards, encoding, short_lines)
        run.check_resumed(saved, encoded.model)
        model = encoded.model
        objective = DistributedObjective(client, encoded, model.feat_sigma,
                                         worker_threads(client, crf.jobs))
        cluster_rows[0] = objective
        del encoded
        if crf.verbose:
            print(f"compiled on {len(client.scheduler_info()['workers'])} workers in "
                  f"{time.perf_counter() - t0:.1f}s: "
                  f"{sum(len(layer.labels) for layer in model.layers)} labels, "
                  f"{model.program.n_features} features, {len(shards)} shards",
                  file=sys.stderr)
        crf.model, crf.weights, crf.training_log = run.fit_objective(model, objective)
    return crf


def _report(row: dict, objective: DistributedObjective | None, verbose: bool,
            progress: Callable[[dict], None] | None) -> None:
    """An iteration's row, with the last round's slowest worker and bytes moved."""
    if objective is not None and objective.last is not None:
        row["slowest_worker"] = objective.last.slowest
        row["bytes_moved"] = objective.last.bytes_moved
    if verbose:
        print_progress(row)
    if progress is not None:
        progress(row)


def cluster_shards(crf: Trainee, client: Any, paths: Any,
                   shard_bytes: int = DEFAULT_SHARD_BYTES) -> list:
    """The training files' shards, at least two per worker where the files
    can be cut."""
    workers = len(client.scheduler_info()["workers"])
    return find_shards(paths, by_document=by_document(crf.spec), shard_bytes=shard_bytes,
                       column_files=crf.spec.input_format != "graph",
                       min_shards=2 * max(workers, 1))


def compile_shards(crf: Trainee, client: Any, shards: list, encoding: str = "utf-8",
                   short_lines: str = "error") -> EncodedShards:
    """The CRF's spec compiled on the cluster against the shards."""
    spec = crf.spec
    base = Path(spec.file).parent if not spec.file.startswith("<") else Path(".")
    source = shards[0].path if len(shards) == 1 else f"{len(shards)} shards"
    return compile_on_cluster(client, spec, shards, base, crf.settings,
                              Reading(spec, encoding, short_lines), source)


def print_progress(row: dict) -> None:
    """One line per iteration: the learner's, plus the slowest worker's
    compute time and the bytes the last evaluation moved."""
    if "recovery" in row:
        print(f"  recovery: {row['recovery']}", file=sys.stderr)
        return
    bp = row.get("inference")
    effort = "" if bp is None or bp.max_iterations == 0 else (
        f"  BP: <= {bp.max_iterations} iterations, {bp.not_converged}/{bp.instances} "
        "not converged")
    cluster = ""
    if "slowest_worker" in row:
        cluster = (f"  slowest worker {row['slowest_worker']:.3f}s  "
                   f"moved {human_bytes(row['bytes_moved'])}/eval")
    print(f"iter {row['iteration']:4d}  objective {row['objective']:.6g}  "
          f"|grad| {row['gradient_norm']:.4g}  evals {row['evaluations']}  "
          f"{row['seconds']:.1f}s{cluster}{effort}", file=sys.stderr)


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"
