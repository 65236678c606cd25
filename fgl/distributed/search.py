"""Many models at once: independent training jobs on one Dask cluster, or
one after another on this machine.

Each (spec, sigma) pair is one job, run by one worker as a one-machine
training run on the training files (read on that worker), scored on the
development file when there is one; ``search`` returns one ``Trial`` per
job and ``table`` prints them.  (scikit-learn's ``GridSearchCV`` over the
``fgl.CRFEstimator`` can likewise spread its fits over a cluster with
``joblib.parallel_backend("dask")``.)
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from fgl.distributed.cluster import connect
from fgl.distributed.shards import expand
from fgl.errors import FglError


@dataclass
class Trial:
    """One training job's outcome; ``model`` is the model file's bytes."""

    spec: str
    sigma: float | None
    iterations: int
    objective: float
    seconds: float
    dev_f1: float | None
    message: str
    model: bytes


def train_one(spec: str, sigma: float | None, train: list[str], dev: list[str] | None,
              max_iter: int | None, encoding: str, jobs: int | None,
              verbose: bool = False) -> Trial:
    """Train one model on a worker and score it on ``dev`` (F1 of the first
    output, the evaluation scheme ``fgl eval`` uses by default; in graphs,
    the nodes ``fgl eval`` scores: the withheld ones where some are);
    ``verbose``: a line per training iteration on stderr."""
    from fgl.api import CRF, eval_scheme
    from fgl.evaluation.evaluate import evaluate
    from fgl.io.graphs import scoring

    crf = CRF(spec, sigma=sigma, max_iter=max_iter, jobs=jobs, verbose=verbose)
    t0 = time.perf_counter()
    if len(train) == 1:
        crf.fit_file(train[0], encoding=encoding)
    else:
        crf.fit_sentences([s for path in train for s in crf.read(path, encoding)],
                          source=f"{len(train)} files")
    seconds = time.perf_counter() - t0
    f1 = None
    if dev is not None:
        sentences, pred = crf.tag_file(dev, encoding)
        out = pred.outputs[0]
        if crf.spec.input_format == "graph":   # the nodes `fgl eval` scores
            scored = scoring(sentences, crf.spec)
            gold, guess = scored.gold[out], scored.select(pred.layer(out))
        else:
            column = [c.name for c in crf.spec.columns].index(out)
            gold, guess = [s.column(column) for s in sentences], pred.layer(out)
        f1 = evaluate(gold, guess, eval_scheme(crf.spec, "auto")).overall.f1
    fd, path = tempfile.mkstemp(suffix=".fglm")
    os.close(fd)
    try:
        crf.save(path)
        model = Path(path).read_bytes()
    finally:
        os.unlink(path)
    log = crf.training_log
    return Trial(spec, sigma, len(log.iterations), log.objective, seconds, f1, log.message,
                 model)


def search(specs: Sequence[str | Path], sigmas: Sequence[float | None], train: Any,
           dev: str | Path | None = None, *, dask: Any = None, workers: int | None = None,
           max_iter: int | None = None, encoding: str = "utf-8", jobs: int | None = 1,
           progress: Callable[[str], None] | None = None, verbose: bool = False
           ) -> list[Trial]:
    """Train every spec with every sigma (None: the spec's own) as
    independent jobs on the cluster (``dask``: a client or scheduler
    address; ``workers``: a local cluster of that many processes), or one
    after another in this process when both are None (no Dask needed); the
    trials in (spec, sigma) order.  ``train`` is a path, glob or list; the
    files must be readable by every worker.  ``jobs``: each run's threads
    (None: the spec's).  ``progress`` is given a line as each job starts
    (here) and as each ends (its dev F1 and seconds); ``verbose``: each
    local run prints a line per training iteration."""
    if not specs or not sigmas:
        raise FglError("search needs at least one spec and one sigma")
    files = expand(train)
    dev_files = None if dev is None else expand(dev)
    jobs_args = [(str(spec), sigma, files, dev_files, max_iter, encoding, jobs)
                 for spec in specs for sigma in sigmas]
    say = progress or (lambda line: None)
    if dask is None and workers is None:
        trials = []
        for k, args in enumerate(jobs_args):
            say(f"{_job_name(k, len(jobs_args), args[0], args[1])}: training")
            trials.append(train_one(*args, verbose=verbose))
            say(_finished(k, len(jobs_args), trials[-1]))
        return trials
    with connect(dask, workers) as client:
        from distributed import as_completed

        futures = [client.submit(train_one, *args, pure=False) for args in jobs_args]
        say(f"sigma grid: {len(futures)} training jobs sent to the cluster")
        number = {f.key: k for k, f in enumerate(futures)}
        for done in as_completed(futures):
            say(_finished(number[done.key], len(futures), done.result()))
        return client.gather(futures)


def _job_name(k: int, n: int, spec: str, sigma: float | None) -> str:
    shown = "the spec's" if sigma is None else f"{sigma:g}"
    return f"sigma grid {k + 1}/{n}: {Path(spec).name}, sigma {shown}"


def _finished(k: int, n: int, t: Trial) -> str:
    f1 = "no dev score" if t.dev_f1 is None else f"dev F1 {t.dev_f1:.2f}"
    return (f"{_job_name(k, n, t.spec, t.sigma)}: {f1}, {t.iterations} iterations, "
            f"{t.seconds:.1f}s ({t.message})")


def table(trials: list[Trial]) -> str:
    """The trials as a text table, the best development F1 marked."""
    best = max((t for t in trials if t.dev_f1 is not None), key=lambda t: t.dev_f1,
               default=None)
    width = max([4] + [len(Path(t.spec).name) for t in trials])
    lines = [f"{'spec':{width}s} {'sigma':>7s} {'iters':>6s} {'objective':>14s} "
             f"{'seconds':>8s} {'dev F1':>7s}"]
    for t in trials:
        sigma = "spec" if t.sigma is None else f"{t.sigma:g}"
        f1 = "-" if t.dev_f1 is None else f"{t.dev_f1:.2f}"
        mark = "  <- best" if t is best else ""
        lines.append(f"{Path(t.spec).name:{width}s} {sigma:>7s} {t.iterations:6d} "
                     f"{t.objective:14.6g} {t.seconds:8.1f} {f1:>7s}{mark}")
    return "\n".join(lines)


def best(trials: list[Trial]) -> Trial:
    """The trial with the best development F1."""
    scored = [t for t in trials if t.dev_f1 is not None]
    if not scored:
        raise FglError("choosing among models needs development data (--dev)")
    return max(scored, key=lambda t: t.dev_f1)
