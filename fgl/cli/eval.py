"""``fgl eval``: score a trained model on labelled data."""
from __future__ import annotations

import argparse

from fgl.cli.options import data_args, label_list
from fgl.cli.reporting import report


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate a model on labelled data",
                       description="Token accuracy, conlleval-style per-chunk-type P/R/F1 "
                                   "(BIO/IOB tags), or segment P/R/F1 (--scheme runs), and "
                                   "per-label P/R/F1; --labels adds a micro-average of "
                                   "token-level P/R/F1 over chosen labels.")
    p.add_argument("model")
    p.add_argument("file", help="labelled data (CoNLL columns, gold label last)")
    p.add_argument("--scheme", choices=("auto", "iob", "plain", "runs"), default="auto",
                   help="how tags make chunks: iob (B-/I-/E-/S- prefixes), plain (each "
                        "token is a chunk), runs (each maximal run of one label is a "
                        "segment); auto (default): the model's own segments for a segment "
                        "model `from change` (runs), else iob when any tag has a prefix, "
                        "else plain")
    p.add_argument("--ignore", action="append", metavar="LABEL",
                   help="a label (chunk type) that is not a chunk or segment; repeatable; "
                        "replaces the default O (--ignore '' ignores nothing)")
    p.add_argument("--labels", action="extend", type=label_list, metavar="L1,L2,...",
                   help="also print the micro-averaged token-level P/R/F1 over these labels "
                        "(e.g. the punctuation measure); repeatable")
    p.add_argument("--label", action="append", dest="labels", metavar="LABEL",
                   help="one label for --labels, taken as is (for labels with a comma: "
                        "--label , --label . --label '?'); repeatable")
    data_args(p)


def run(a: argparse.Namespace) -> None:
    from fgl.api import CRF

    report(CRF.load(a.model, jobs=a.jobs), a.file, a)
