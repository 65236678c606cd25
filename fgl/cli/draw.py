"""``fgl draw``: one instance's factor graph, as a picture or DOT."""
from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

from fgl.cli.options import (
    encoding_arg,
    lexicon_path_arg,
    memory_arg,
    short_lines_arg,
    spec_file,
    whole_arg,
)


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "draw", help="draw one instance's factor graph (SVG, PNG, PDF or DOT)",
        description="Unroll every template over one instance of FILE and draw its factor graph: "
                    "variables on a line in token order (a row per label layer; graph nodes "
                    "by id), factor squares coloured by template (20 colours, then dashed; "
                    "the key groups the templates by kind: unary, pairwise, long-range pair, "
                    "graph edge, higher-order), a variable's unary factors in a small grid "
                    "under it, skip edges as arcs, segments as brackets, words whole (turned "
                    "when long).  Given a trained model instead of a spec, variables are "
                    "coloured by predicted label, the label written in, and shaded by its "
                    "marginal probability (a key gives the shades); on labelled "
                    "data each is ringed green where the gold label agrees and red where not, "
                    "the gold label written above (a segment model: the gold segmentation "
                    "dashed under the words).  The format comes from -o's suffix (.svg, .png, "
                    ".pdf, .dot); without -o, DOT goes to stdout.")
    p.add_argument("spec", help="a spec (.fgl), or a model file written by `fgl train`")
    p.add_argument("file", help="data (labels optional)")
    p.add_argument("--instance", type=whole_arg, default=0,
                   help="which instance: a sentence, a document for `within document` specs, "
                        "a graph (default 0)")
    p.add_argument("--tokens", metavar="A:B",
                   help="draw positions A (from 0) up to B, not included (graph nodes for "
                        "graph input); default: the whole instance, or its first 30 "
                        "positions when it is longer")
    memory_arg(p)
    lexicon_path_arg(p)
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write here (.svg, .png, .pdf or .dot) instead of DOT on stdout")
    p.add_argument("--encoding", default="utf-8", type=encoding_arg)
    short_lines_arg(p)


def run(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.io.safe_files import check_output
    from fgl.report.draw import draw_instance, parse_tokens, picture_format

    tokens = parse_tokens(a.tokens) if a.tokens is not None else None
    if a.output:
        picture_format(a.output)     # a bad suffix or path fails before any work
        check_output(a.output, "drawing", [(spec_file(a.spec), "the spec or model"),
                                           (a.file, "the data")])
    if a.spec.endswith(".fglm") or zipfile.is_zipfile(a.spec):   # a model file (npz)
        crf = CRF.load(a.spec)
        trained, base_dir = crf, Path(a.spec).parent
    else:
        crf = CRF(Path(a.spec))
        trained, base_dir = None, Path(crf.spec.file).parent
    sentences = crf.read(a.file, a.encoding, a.short_lines)
    drawing = draw_instance(crf.spec, sentences, a.instance, tokens, base_dir, trained)
    for message in drawing.warnings:
        print(f"fgl: warning: {message}", file=sys.stderr)
    if a.output:
        drawing.save(a.output)
    else:
        sys.stdout.write(drawing.dot())
