"""``fgl draw``: one instance's factor graph."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fgl.cli.options import memory_arg, short_lines_arg


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("draw", help="write one instance's factor graph as Graphviz DOT",
                       description="Unroll every template over one instance of FILE and write "
                                   "its factor graph (variables, factors coloured by template) "
                                   "as Graphviz DOT; render with `dot -Tpng g.dot -o g.png`.")
    p.add_argument("spec")
    p.add_argument("file", help="data (labels optional)")
    p.add_argument("--instance", type=int, default=0, help="which instance (default 0)")
    memory_arg(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    p.add_argument("--encoding", default="utf-8")
    short_lines_arg(p)


def run(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.io.draw import factor_graph_dot

    crf = CRF(Path(a.spec))
    dot = factor_graph_dot(crf.spec, crf.read(a.file, a.encoding, a.short_lines), a.instance,
                           Path(a.spec).parent)
    if a.output:
        Path(a.output).write_text(dot, encoding="utf-8")
    else:
        sys.stdout.write(dot)
