"""Training a ``fgl.api.CRF`` on a Dask cluster: compile on the workers
(``fgl.distributed.compile``), then L-BFGS on the driver with one round trip
per evaluation (``fgl.distributed.objective``), checkpoints and resume as on
one machine (``fgl.learn.checkpoint``).

Distributed training is L-BFGS (or OWL-QN, with l1) of the likelihood;
the perceptron, the ECRN, feature induction, local objectives and
``bp_start = warm`` (whose BP messages are per-worker state) are refused.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from fgl.distributed.cluster import connect, worker_threads
from fgl.distributed.compile import EncodedShards, Reading, compile_on_cluster
from fgl.distributed.objective import DistributedObjective
from fgl.distributed.shards import DEFAULT_SHARD_BYTES, by_document, expand, find_shards
from fgl.errors import FglError, TrainingError
from fgl.learn.checkpoint import load_checkpoint
from fgl.learn.learner import train_lbfgs

if TYPE_CHECKING:
    from fgl.api import CRF


def check_trainable(crf: "CRF", resume: Any = None) -> None:
    """Refuse what distributed training does not do, saying what it does."""
    s = crf.settings
    if crf._induces:
        raise FglError("feature induction (`induce`) runs on one machine; train without "
                       "dask/--dask-workers, or drop `induce`")
    if s["trainer"] != "lbfgs":
        raise FglError(f"trainer {s['trainer']} runs on one machine; distributed training is "
                       "L-BFGS (the default trainer)")
    if s["objective"] != "likelihood":
        raise FglError(f"objective '{s['objective']}' runs on one machine; distributed "
                       "training optimises the likelihood")
    if s["bp_start"] != "cold":
        raise FglError("bp_start = warm keeps BP messages per worker between evaluations; "
                       "distributed training starts BP cold (remove bp_start)")
    crf._check_objective()
    crf._check_trainer(resume)


def fit_on_cluster(crf: "CRF", paths: str | Path | Sequence[str | Path], *, dask: Any = None,
                   workers: int | None = None, encoding: str = "utf-8",
                   short_lines: str = "error", resume: str | Path | None = None,
                   shard_bytes: int = DEFAULT_SHARD_BYTES,
                   progress: Callable[[dict], None] | None = None) -> "CRF":
    """Train ``crf`` on the files ``paths`` (paths or globs) on the cluster
    ``dask`` (a client or a scheduler address) or on a local cluster of
    ``workers`` processes; sets ``crf.model``, ``weights`` and
    ``training_log`` as ``CRF.fit_file`` does.  ``progress`` receives every
    iteration's row, with the slowest worker's seconds (``slowest_worker``)
    and the bytes the last evaluation moved (``bytes_moved``)."""
    check_trainable(crf, resume)
    expand(paths)   # (a missing file before the cluster starts)
    saved = None if resume is None else load_checkpoint(resume)
    with connect(dask, workers) as client:
        t0 = time.perf_counter()
        shards = cluster_shards(crf, client, paths, shard_bytes)
        encoded = compile_shards(crf, client, shards, encoding, short_lines)
        if saved is not None:
            from fgl.api import _check_same_model
            _check_same_model(saved[0], encoded.model, str(resume))
        model = encoded.model
        objective = DistributedObjective(client, encoded, model.feat_sigma,
                                         worker_threads(client, crf.jobs))
        del encoded
        if crf.verbose:
            print(f"compiled on {len(client.scheduler_info()['workers'])} workers in "
                  f"{time.perf_counter() - t0:.1f}s: "
                  f"{sum(len(layer.labels) for layer in model.layers)} labels, "
                  f"{model.program.n_features} features, {len(shards)} shards",
                  file=sys.stderr)
        weights, log = _train(crf, model, objective, saved, progress)
    if not (np.isfinite(log.objective) and np.isfinite(weights).all()):
        raise TrainingError(f"training diverged: the objective became {log.objective} after "
                            f"{len(log.iterations)} iterations ({log.message}); no model kept "
                            "— check the data's numbers and the sigma")
    crf.weights, crf.training_log, crf.model = weights, log, model
    return crf


def cluster_shards(crf: "CRF", client: Any, paths: Any,
                   shard_bytes: int = DEFAULT_SHARD_BYTES) -> list:
    """The training files' shards, at least two per worker where the files
    can be cut."""
    workers = len(client.scheduler_info()["workers"])
    return find_shards(paths, by_document=by_document(crf.spec), shard_bytes=shard_bytes,
                       column_files=crf.spec.input_format != "graph",
                       min_shards=2 * max(workers, 1))


def compile_shards(crf: "CRF", client: Any, shards: list, encoding: str = "utf-8",
                   short_lines: str = "error") -> EncodedShards:
    """The CRF's spec compiled on the cluster against the shards."""
    spec = crf.spec
    base = Path(spec.file).parent if not spec.file.startswith("<") else Path(".")
    source = shards[0].path if len(shards) == 1 else f"{len(shards)} shards"
    return compile_on_cluster(client, spec, shards, base, crf.overrides,
                              Reading(spec, encoding, short_lines), source)


def _train(crf: "CRF", model, objective: DistributedObjective, saved,
           report: Callable[[dict], None] | None) -> tuple:
    should_stop = crf._stop_rule()

    def progress(row: dict) -> None:
        if objective.last is not None:
            row["slowest_worker"] = objective.last.slowest
            row["bytes_moved"] = objective.last.bytes_moved
        if crf.verbose:
            print_progress(row)
        if report is not None:
            report(row)

    s = crf.settings
    return train_lbfgs(model.program, None, model.feat_sigma, max_iter=int(s["max_iter"]),
                       tol=float(s["tol"]), w0=model.initial_weights(), progress=progress,
                       objective=objective, should_stop=should_stop,
                       checkpoint=crf._checkpointer(model),
                       resume=None if saved is None else saved[1], l1=float(s["l1"]))


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
