"""``fgl compare``: two models on the same data, with a significance test."""
from __future__ import annotations

import argparse

from fgl.cli.options import data_args, seed_arg, whole_arg
from fgl.cli.reporting import add_scheme_arg
from fgl.errors import DataError, FglError


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare two models on labelled data",
                       description="Tag FILE with both models and print their F1, the mean F1 "
                                   "over --partitions contiguous partitions with 95% "
                                   "t-intervals, and an approximate randomisation test of the "
                                   "F1 difference (each shuffle swaps the two outputs of a "
                                   "sequence with probability 1/2; p = (nc + 1) / (nt + 1)). "
                                   "F1 is the overall F1 of `fgl eval` under --scheme: chunk "
                                   "F1, or the micro F1 of the labels but O for plain labels.")
    p.add_argument("model_a")
    p.add_argument("model_b")
    p.add_argument("file", help="labelled data (the label columns of both models)")
    p.add_argument("--trials", type=whole_arg, default=10000,
                   help="shuffles of the randomisation test (default 10000)")
    p.add_argument("--partitions", type=whole_arg, default=10,
                   help="contiguous test partitions for the t-intervals (default 10)")
    p.add_argument("--seed", type=seed_arg, default=0,
                   help="random seed of the shuffles (a whole number from 0)")
    add_scheme_arg(p, "how tags make chunks, as in `fgl eval --scheme` (LAYER=SCHEME for one "
                      "output layer; repeatable)")
    data_args(p)


def run(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.cli.reporting import layer_schemes, located
    from fgl.data.schemes import TagError
    from fgl.evaluation.significance import compare

    if a.trials < 1 or a.partitions < 1:
        raise FglError("--trials and --partitions must be at least 1")
    models = [CRF.load(path, jobs=a.jobs) for path in (a.model_a, a.model_b)]
    tagged = [crf.tag_file(a.file, encoding=a.encoding, short_lines=a.short_lines)
              for crf in models]
    sentences = tagged[0][0]
    if not sentences:
        raise DataError("no sentences to compare on (the file is empty)", a.file, 1)
    outputs = [p.outputs for _, p in tagged]
    if outputs[0] != outputs[1]:
        raise FglError(f"the models label different columns ({', '.join(outputs[0])} and "
                       f"{', '.join(outputs[1])}); compare models of the same task")
    columns = [c.name for c in models[0].spec.columns]
    schemes = layer_schemes(models[0], a.scheme)
    scored = None
    if models[0].spec.input_format == "graph":   # as `fgl eval` scores graphs
        from fgl.io.graphs import scoring
        scored = scoring(sentences, models[0].spec)
        if scored.note():
            print(scored.note())
    elif len(sentences[0].rows[0]) != len(columns):
        raise DataError(f"comparing needs the label column(s) {', '.join(outputs[0])}",
                        sentences[0].file, sentences[0].lines[0])
    for out in outputs[0]:
        if len(outputs[0]) > 1:
            print(f"== {out}")
        pred_a, pred_b = tagged[0][1].layer(out), tagged[1][1].layer(out)
        if scored is None:
            gold, where = [s.column(columns.index(out)) for s in sentences], sentences
        else:   # nodes, not graphs, are what a shuffle swaps: one graph would give p = 1
            gold, where = scored.gold[out], [sentences[i] for i in scored.graphs]
            pred_a, pred_b = scored.select(pred_a), scored.select(pred_b)
            gold, pred_a, pred_b = ([[y] for seq in x for y in seq]
                                    for x in (gold, pred_a, pred_b))
            where = [g for g, seq in zip(where, scored.gold[out]) for _ in seq]
        try:
            result = compare(gold, pred_a, pred_b, trials=a.trials, partitions=a.partitions,
                             seed=a.seed, scheme=schemes[out])
        except TagError as e:
            raise located(e, where, out) from None
        print(result.format(a.model_a, a.model_b))
