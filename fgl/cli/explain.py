"""``fgl explain``: the compiled program, its engine and its cost."""
from __future__ import annotations

import argparse

from fgl.cli.options import memory_arg, short_lines_arg


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="show the compiled program",
                       description="Show the engine chosen for SPEC and why, the labels, "
                                   "patterns, forward/backward states, features and the cost "
                                   "of one pass.  Sizes depend on the training data.")
    p.add_argument("spec")
    p.add_argument("--train", metavar="FILE", help="training data to compile against")
    memory_arg(p)
    p.add_argument("--encoding", default="utf-8")
    short_lines_arg(p)
    return p


def run(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.lang.checks import labels_text
    from fgl.lang.parser import read_spec

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
    print(crf.explain(a.train, encoding=a.encoding, short_lines=a.short_lines))
