"""``fgl tag``: label a data file with a trained model."""
from __future__ import annotations

import argparse
import sys

from fgl.cli.options import data_args
from fgl.cli.reporting import warn_convergence


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tag", help="label a data file with a trained model",
                       description="Write FILE back with one predicted label column appended "
                                   "(input columns only, or with gold labels: both work).")
    p.add_argument("model", help="a model file written by `fgl train`")
    p.add_argument("file", help="data to label (CoNLL columns)")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    data_args(p)


def run(a: argparse.Namespace) -> None:
    import json

    from fgl.api import CRF
    from fgl.io.conll import has_docstart, write_conll

    crf = CRF.load(a.model, jobs=a.jobs)
    sentences, tagged = crf.tag_file(a.file, encoding=a.encoding, short_lines=a.short_lines)
    warn_convergence(crf.spec, tagged.stats, "decoding")
    pred = tagged.tokens()
    out = open(a.output, "w", encoding="utf-8") if a.output else sys.stdout
    try:
        if crf.spec.input_format == "graph":  # one JSON line per graph: node id -> labels
            for graph, labels in zip(sentences, pred):
                print(json.dumps({"labels": dict(zip(graph.node_ids, labels))},
                                 ensure_ascii=False), file=out)
        else:
            extra = [[list(y) if isinstance(y, tuple) else [y] for y in labels] for labels in pred]
            write_conll(out, sentences, extra, docstart=has_docstart(a.file, a.encoding))
    finally:
        if a.output:
            out.close()
