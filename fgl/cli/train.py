"""``fgl train``: compile a spec against training data and fit its weights."""
from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from pathlib import Path

from fgl.cli.options import data_args, lexicon_path_arg, spec_file, whole_arg
from fgl.cli.reporting import report, warn_convergence
from fgl.lang.overrides import OVERRIDE_DEFS


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a spec on a data file",
                       description="Compile SPEC against the training data and fit its weights "
                                   "by the spec's trainer (the trainers are listed below); "
                                   "write the model file.")
    p.add_argument("spec", help="the model spec (.fgl)")
    p.add_argument("--train", required=True, action="append", metavar="FILE",
                   help="training data (CoNLL columns; JSON lines for `input graph` specs); "
                        "- for standard input, a quoted glob ('data/tr*.txt', sorted); "
                        "repeatable: the files are read in order as one")
    p.add_argument("--dev", action="append", metavar="FILE",
                   help="development data, evaluated after training (and scored after every "
                        "round of feature induction); a glob or repeated, as --train")
    p.add_argument("-o", "--output", required=True, metavar="MODEL", help="model file to write")
    for row in OVERRIDE_DEFS:   # (--jobs: data_args, shared with fgl tag)
        if row.flag is not None:
            p.add_argument(row.flag, dest=row.key, type=whole_arg if row.whole else float,
                           metavar=row.metavar, help=row.help)
    p.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="stop training after this long and write the model reached; Ctrl-C "
                        "or SIGTERM likewise stop after the current iteration (a second one "
                        "aborts)")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="save the training run here every --checkpoint-every iterations and "
                        "when training stops (a time limit, Ctrl-C, SIGTERM); the file is also "
                        "a model file (default with --resume: the resumed file)")
    p.add_argument("--checkpoint-every", type=whole_arg, default=10, metavar="N",
                   help="iterations between checkpoints (default 10)")
    p.add_argument("--checkpoint-seconds", type=float, metavar="SECONDS",
                   help="also save a checkpoint when this long has passed since the last")
    p.add_argument("--resume", metavar="FILE",
                   help="continue the run saved in this checkpoint, with the same spec and "
                        "training data; it goes on as the uninterrupted run would have, and "
                        "--max-iter counts the saved iterations too")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-iteration progress")
    p.add_argument("--sigma-grid", metavar="S1,S2,...",
                   help="train one model per sigma (as independent jobs with --dask or "
                        "--dask-workers, else one after another here), print a table, and "
                        "write the one with the best --dev F1")
    cluster = p.add_argument_group("training on a Dask cluster (pip install 'fgl[dask]')")
    where = cluster.add_mutually_exclusive_group()
    where.add_argument("--dask", metavar="ADDRESS",
                       help="the scheduler of a Dask cluster (tcp://host:8786); each worker "
                            "reads and encodes its own shards of --train")
    where.add_argument("--dask-workers", type=whole_arg, metavar="N",
                       help="a Dask cluster of N worker processes on this machine")
    data_args(p)
    lexicon_path_arg(p)
    plain = p.format_help

    def format_help() -> str:   # the trainers, from their registry, when help is asked for
        from fgl.learn.trainers import trainers_help
        return f"{plain()}\n{trainers_help()}\n"
    p.format_help = format_help


def run(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.io.sources import expand
    from fgl.modelfile.model_files import check_writable

    inputs = [(spec_file(a.spec), "the spec"), (expand(a.train), "the training data"),
              (a.dev and expand(a.dev), "the development data")]
    check_writable(a.output, "model", [*inputs, (a.resume, "the checkpoint --resume reads"),
                                       (a.checkpoint, "the --checkpoint file")])
    if a.checkpoint is not None:     # (before training, not after; --resume's file may be it)
        check_writable(a.checkpoint, "checkpoint", inputs)
    if a.sigma_grid is not None:
        _sigma_grid(a)
        return

    crf = CRF(Path(a.spec), verbose=not a.quiet, time_limit=a.time_limit,
              checkpoint=a.checkpoint or a.resume, checkpoint_every=a.checkpoint_every,
              checkpoint_seconds=a.checkpoint_seconds, dask=a.dask,
              dask_workers=a.dask_workers,
              **{row.key: getattr(a, row.key) for row in OVERRIDE_DEFS})
    t0 = time.perf_counter()
    with _signals_of_training(crf) as hold:
        crf.fit_file(a.train, encoding=a.encoding, short_lines=a.short_lines, resume=a.resume,
                     dev=a.dev)
        hold()   # a trained model: signals wait until it is written
        _trained(crf, time.perf_counter() - t0)
        crf.save(a.output)
        print(f"wrote {a.output}", file=sys.stderr)
    if a.dev:
        report(crf, a.dev, a)


def _trained(crf, seconds: float) -> None:
    """What the training run did, on stderr."""
    log = crf.training_log
    from fgl.learn.trainers import choose

    trainer = choose(crf.spec, crf.settings)   # (its closing line: Trainer.summary)
    print(f"trained in {seconds:.1f}s: {trainer.summary(log)}", file=sys.stderr)
    warn_convergence(crf.spec, log.inference, "the last training evaluation")
    if crf.checkpoint:
        print(f"checkpoint {crf.checkpoint} (iteration {len(log.iterations)}; "
              f"--resume {crf.checkpoint} continues it)", file=sys.stderr)


def _sigma_grid(a: argparse.Namespace) -> None:
    """``--sigma-grid``: one training job per sigma (on the cluster, or one
    after another here), a table of the results, the best model on --dev
    written to -o."""
    from fgl.distributed.search import best, search, table
    from fgl.errors import FglError
    from fgl.io.safe_files import signals_held, write_bytes

    if not a.dev:
        raise FglError("--sigma-grid chooses the model by its F1 on development data: add "
                       "--dev FILE")
    try:
        sigmas = [float(v) for v in a.sigma_grid.split(",")]
    except ValueError:
        raise FglError(f"--sigma-grid takes sigmas separated by commas (1,3,10); found "
                       f"{a.sigma_grid!r}") from None
    if not all(v > 0 for v in sigmas):
        raise FglError(f"--sigma-grid: every sigma must be positive; found {a.sigma_grid}")
    trials = search([a.spec], sigmas, a.train, a.dev, dask=a.dask, workers=a.dask_workers,
                    max_iter=a.max_iter, encoding=a.encoding,
                    jobs=a.jobs or (1 if a.dask or a.dask_workers else None),
                    progress=None if a.quiet else lambda line: print(line, file=sys.stderr),
                    verbose=not a.quiet)
    with signals_held():    # trained models: signals wait until the chosen one is written
        chosen = best(trials)
        write_bytes(a.output, chosen.model, "model")
    print(table(trials))    # (after the write: a closed stdout loses the table, not the model)
    print(f"wrote {a.output} (sigma {chosen.sigma:g}, dev F1 {chosen.dev_f1:.2f})",
          file=sys.stderr)


@contextlib.contextmanager
def _signals_of_training(crf):
    """SIGINT and SIGTERM from reading the data to writing the model.

    Before the optimiser starts — reading the data, extracting features,
    encoding — there is no model to keep: a signal ends the run there
    (``Interrupted``), writing nothing.  While training, the first one asks
    the run to stop at its next safe point (after the current iteration,
    or inside a long evaluation: ``fgl.stopping``) and the model reached is
    then written; a second one interrupts as usual.  Once training is over
    (the block calls the ``hold`` it is given) they are held until the
    block ends, after the model file's rename, and then delivered as they
    would have been: no signal loses a trained model.  A signal the process
    inherited as ignored stays ignored."""
    from fgl.stopping import Interrupted

    caught = [s for s in (signal.SIGINT, signal.SIGTERM)
              if signal.getsignal(s) is not signal.SIG_IGN]
    old = {s: signal.getsignal(s) for s in caught}
    pending: list[int] = []
    holding = False

    def restore() -> None:
        for s in caught:
            signal.signal(s, old[s] if old[s] is not None else signal.SIG_DFL)

    def handler(signum, frame) -> None:
        if holding:
            pending.append(signum)
            return
        name = signal.Signals(signum).name
        restore()
        if not getattr(crf, "training_started", False):
            raise Interrupted(signum, "before training (while reading and compiling)")
        print(f"fgl: {name}: stopping at the next safe point and writing the model reached "
              "(again to abort)", file=sys.stderr)
        crf.request_stop(f"stopped by {name}")

    def hold() -> None:
        nonlocal holding
        holding = True
        for s in caught:     # (again: a first signal while training put the old ones back)
            signal.signal(s, handler)

    for s in caught:
        signal.signal(s, handler)
    try:
        yield hold
    finally:
        restore()
        for s in dict.fromkeys(pending):
            signal.raise_signal(s)
