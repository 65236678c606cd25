"""``fgl report``: a trained model's report, one self-contained HTML page."""
from __future__ import annotations

import argparse
import sys
import time

from fgl.cli.options import data_args, whole_arg
from fgl.cli.reporting import add_scheme_arg, layer_schemes


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="write a model's report: one HTML page to open in a browser",
        description="Write one self-contained HTML file (no network: styles, pictures and "
                    "its few lines of script inline) about a trained model: the spec with "
                    "numbered, highlighted lines; the engine and inference chosen and why (as "
                    "`fgl explain` says it); the training run and its curve (objective, "
                    "gradient norm, BP sweeps, recoveries); per template the strongest "
                    "weights per label, or its label matrix as a heat map.  Given labelled "
                    "DATA, also the evaluation (as `fgl eval` scores it), the confusion "
                    "matrix and an instance browser: the first and the worst instances, "
                    "tokens coloured by predicted label and shaded by its probability, the "
                    "gold label marked where it differs, and each one's factor graph.  See "
                    "docs/report.md.")
    p.add_argument("model", help="a model file written by `fgl train`")
    p.add_argument("data", nargs="?",
                   help="labelled data to evaluate and browse (CoNLL columns or JSON-lines "
                        "graphs, as for `fgl eval`; a quoted glob reads several files)")
    p.add_argument("-o", "--output", metavar="FILE", default="report.html",
                   help="the HTML file to write (default report.html)")
    p.add_argument("--first", type=whole_arg, default=5, metavar="N",
                   help="show the data's first N instances (default 5)")
    p.add_argument("--worst", type=whole_arg, default=10, metavar="N",
                   help="and the N others with the most wrong labels (default 10)")
    add_scheme_arg(p, "how tags make chunks for the evaluation, as for `fgl eval` (default "
                      "auto; LAYER=SCHEME for one output layer)")
    data_args(p)


def run(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.io.safe_files import check_output
    from fgl.io.sources import expand, files_label
    from fgl.report.model_report import build_report

    check_output(a.output, "report", [(a.model, "the model"),
                                      (a.data and expand(a.data), "the data")])
    t0 = time.perf_counter()
    crf = CRF.load(a.model, jobs=a.jobs)
    sentences, source = None, None
    if a.data is not None:
        print(f"fgl report: reading {a.data}", file=sys.stderr)
        sentences = crf.read(a.data, a.encoding, a.short_lines)
        source = files_label(expand(a.data))
        print(f"fgl report: decoding {len(sentences):,} instances; drawing the first "
              f"{a.first} and the {a.worst} with the most errors", file=sys.stderr)
    report = build_report(crf, sentences, first=a.first, worst=a.worst,
                          scheme=layer_schemes(crf, a.scheme), source=source)
    report.save(a.output)
    size = len(report.html.encode("utf-8"))
    print(f"wrote {a.output} ({size / 1e6:.2f} MB, {time.perf_counter() - t0:.1f}s)",
          file=sys.stderr)
