"""``fgl dump``: every weight of a trained model, one per line (``fgl.report.dump``)."""
from __future__ import annotations

import argparse

from fgl.errors import FglError

FORMAT = """\
One line per feature, tab-separated:
  template  attribute  labels  weight
labels: the feature's labels, oldest first, joined by one space (a
transition's 'B-NP I-NP' is from B-NP to I-NP); attribute: 'bias' for a
template without observations; weight: the shortest decimal that reads back
as the same number.  Templates in the spec's order, attributes sorted by
name, so the same model always prints the same text and two models of one
spec line up for diff.  The first line names the columns (--no-header
leaves it out).  Every weight appears once (`fgl inspect` shows the
strongest; this shows all).

examples:
  fgl dump chunker.fglm > weights.tsv
  fgl dump chunker.fglm --template trans --non-zero
  fgl dump chunker.fglm | grep -P '\\tw=bank\\t'
  diff <(fgl dump a.fglm) <(fgl dump b.fglm)"""


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dump", help="print every weight of a trained model, one per line",
                       description="Print every weight of a trained model once, with its "
                                   "template, attribute and labels (CRF++'s crf_learn -t, "
                                   "wapiti dump), for grep and diff.",
                       epilog=FORMAT, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a model file written by `fgl train`")
    p.add_argument("--template", metavar="NAME", action="append",
                   help="only this template (repeat for several)")
    p.add_argument("--non-zero", action="store_true",
                   help="leave out weights that are exactly 0 (e.g. after L1 training)")
    p.add_argument("--no-header", action="store_true", help="no column-name line first")


def run(a: argparse.Namespace) -> None:
    import sys

    from fgl.api import CRF
    from fgl.report.dump import HEADER, dump_lines

    crf = CRF.load(a.model)
    names = [t.name for t in crf.model.templates]
    unknown = [t for t in a.template or [] if t not in names]
    if unknown:
        raise FglError(f"{a.model}: no template '{unknown[0]}'; the model has "
                       f"{', '.join(names)}")
    out = sys.stdout
    if not a.no_header:
        out.write(HEADER + "\n")
    chunk: list[str] = []
    for line in dump_lines(crf.model, crf.weights, set(a.template) if a.template else None,
                           a.non_zero, crf.attribute_name):
        chunk.append(line)
        if len(chunk) >= 65536:
            out.write("\n".join(chunk) + "\n")
            chunk.clear()
    if chunk:
        out.write("\n".join(chunk) + "\n")
