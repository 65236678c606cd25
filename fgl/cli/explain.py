"""``fgl explain``: the compiled program, its engine and its cost."""
from __future__ import annotations

import argparse
from pathlib import Path

from fgl.cli.options import encoding_arg, lexicon_path_arg, memory_arg, short_lines_arg, whole_arg
from fgl.errors import FglError


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="show the compiled program",
                       description="Show the engine chosen for SPEC and why, the labels, "
                                   "patterns, forward/backward states, features and the cost "
                                   "of one pass.  Sizes depend on the training data.")
    p.add_argument("spec")
    p.add_argument("--train", action="append", metavar="FILE",
                   help="training data to compile against (- for standard input, a quoted "
                        "glob, or repeated: read in order as one file)")
    memory_arg(p)
    lexicon_path_arg(p)
    p.add_argument("--encoding", default="utf-8", type=encoding_arg)
    short_lines_arg(p)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--dask", metavar="ADDRESS",
                       help="compile on this Dask cluster (--train may be a quoted glob) and "
                            "estimate one training evaluation's communication against its "
                            "compute, measured there")
    where.add_argument("--dask-workers", type=whole_arg, metavar="N",
                       help="the same on a Dask cluster of N worker processes on this machine")
    p.add_argument("--bandwidth", type=float, default=1e9, metavar="BYTES_PER_S",
                   help="network bandwidth the communication estimate assumes (default 1e9)")
    return p


def run(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.lang.checks import labels_text
    from fgl.lang.parser import read_spec

    if not a.bandwidth > 0 or a.bandwidth == float("inf"):
        raise FglError(f"--bandwidth takes bytes per second, a positive number; found "
                       f"{a.bandwidth:g}")
    spec = read_spec(a.spec)
    print(f"spec {a.spec}: {len(spec.observations)} observation functions, "
          f"{len(spec.templates)} templates")
    crf = CRF(spec)
    if not a.train:
        for tpl in spec.templates:
            kind = tpl.patterns.kind.replace("_", " ") if tpl.patterns else "default"
            where = f", {len(tpl.where)} conditions" if tpl.where else ""
            print(f"  {tpl.name}: {labels_text(tpl.labels)} patterns {kind}, "
                  f"{len(tpl.observations)} observations{where}")
        print(crf.explain())
        print("labels, patterns and state counts depend on the data: add --train FILE")
        return
    if a.dask is not None or a.dask_workers is not None:
        _explain_on_cluster(crf, a)
        return
    _explain_on_data(crf, a)
    _explain_aggregates(crf, a)


def _explain_aggregates(crf, a: argparse.Namespace) -> None:
    """Per template reading aggregates, what they read on ``--train``
    (``fgl.compile.aggregate_summary``)."""
    from fgl.lang.aggregates import spec_aggregates

    if spec_aggregates(crf.spec):
        from fgl.compile.aggregate_summary import aggregate_summary

        base = Path(a.spec).parent
        print("\n".join(aggregate_summary(crf.spec, crf.read(a.train, a.encoding,
                                                              a.short_lines), base)))


def _explain_on_data(crf, a: argparse.Namespace) -> None:
    """The engine and the program's sizes on ``--train``: estimated from
    counts when its features may be many (``fgl.compile.estimate``; the
    counts of one streaming pass, ``fgl.compile.tally``, when the data allows),
    else compiled and counted exactly."""
    from fgl.compile import estimate
    from fgl.compile.footprint import SizedOnly, sizing_only
    from fgl.compile.tally import tally_columns
    from fgl.io.sources import expand, files_label

    files = expand(a.train)
    source = files_label(files)
    counted = estimate.counted_tally(
        crf.spec, crf.engine.engine.name,
        lambda: tally_columns(crf.spec, files, a.encoding, a.short_lines))
    sentences = None
    if counted is None:
        sentences = crf.read(a.train, a.encoding, a.short_lines)
        counted = estimate.counted_sentences(crf.spec, crf.engine.model, sentences, source)
    lines = estimate.sized_lines(crf.spec, counted, crf.settings)
    if lines is not None:
        print("\n".join([crf.explain(), *lines]))
        return
    try:   # (should the bound miss, a huge table is still counted and sized, not built)
        with sizing_only():
            text = crf.explain(a.train, a.encoding, a.short_lines, sentences=sentences)
    except SizedOnly as e:
        text = "\n".join([crf.explain(), *e.lines])
    print(text)


def _explain_on_cluster(crf, a: argparse.Namespace) -> None:
    """Compile on the cluster, then time evaluations there and print the
    per-evaluation communication estimate against the compute."""
    from fgl import registry
    from fgl.distributed import cost
    from fgl.distributed.cluster import connect, worker_threads
    from fgl.distributed.objective import DistributedObjective
    from fgl.distributed.training import check_trainable, cluster_shards, compile_shards

    check_trainable(crf)
    with connect(a.dask, a.dask_workers) as client:
        shards = cluster_shards(crf, client, a.train)
        encoded = compile_shards(crf, client, shards, a.encoding, a.short_lines)
        model = encoded.model
        print(registry.explain(crf.spec, model))
        print(f"training data: {len(shards)} shards, {encoded.n_instances} instances, "
              f"{encoded.n_tokens} tokens (held by the workers)")
        objective = DistributedObjective(client, encoded, model.feat_sigma,
                                         worker_threads(client, crf.jobs))
        measured = cost.measure(objective, model.initial_weights(), encoded.n_tokens)
    print("\n".join(cost.lines(measured, a.bandwidth)))
