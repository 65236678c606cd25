"""``fgl convert crfpp``: a CRF++ or Wapiti template file as an fgl spec."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fgl.errors import FglError


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "convert", help="convert a CRF++ / Wapiti template file to a spec",
        description="Write the fgl spec equivalent to a CRF++ (or Wapiti) feature template "
                    "file: each U line a state template, each B line a transition template, "
                    "each * line both, over the same cells (%x[row,col]).  See "
                    "docs/crfpp.md for what maps to what and the one difference at "
                    "sentence edges.",
        epilog="example: fgl convert crfpp template --columns word,pos,chunk -o chunk.fgl")
    p.add_argument("format", choices=("crfpp", "wapiti"),
                   help="the template format (both read the same way)")
    p.add_argument("template", help="the template file")
    p.add_argument("-o", "--output", metavar="SPEC",
                   help="where to write the spec (default: standard output)")
    p.add_argument("--columns", metavar="NAMES",
                   help="the data's column names in file order, the last being the output, "
                        "as in word,pos,chunk (CRF++ numbers the input columns 0, 1, ...; "
                        "default col0,col1,...: the columns the template reads, then one "
                        "output column)")
    p.add_argument("-c", type=float, default=1.0, dest="c",
                   help="CRF++'s -c (default 1): the spec's sigma is its square root")
    p.add_argument("--encoding", default="utf-8", help="the template file's encoding")


def run(a: argparse.Namespace) -> int:
    from fgl.io.crfpp import convert_file

    columns = a.columns.split(",") if a.columns is not None else None
    spec = convert_file(a.template, columns, a.c, a.encoding)
    if a.output is None:
        sys.stdout.write(spec)
        return 0
    path = Path(a.output)
    try:
        path.write_text(spec, encoding="utf-8")
    except OSError as e:
        raise FglError(f"{path}: cannot write the spec: {e}") from None
    templates = sum(line.startswith("template ") for line in spec.splitlines())
    print(f"{path}: {templates} templates from {a.template}; check it with `fgl check {path}`")
    return 0
