"""``fgl inspect``: a trained model's weights and training log."""
from __future__ import annotations

import argparse

from fgl.cli.options import memory_arg
from fgl.errors import FglError


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="show a trained model's weights and training log",
                       description="Per template: feature counts and the strongest weights "
                                   "(attribute -> labels), positive and negative, or the label "
                                   "matrix of a two-label template without observations (a "
                                   "transition table); the training log the model file keeps.")
    p.add_argument("model", help="a model file written by `fgl train`")
    p.add_argument("--top", type=int, default=10, help="weights shown per template (default 10)")
    p.add_argument("--template", metavar="NAME", help="only this template")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    memory_arg(p)


def run(a: argparse.Namespace) -> None:
    import json

    from fgl.api import CRF
    from fgl.report.inspect import format_inspection

    if a.top < 0:
        raise FglError("--top must be 0 or more")
    crf = CRF.load(a.model)
    names = [t.name for t in crf.model.templates]
    if a.template is not None and a.template not in names:
        raise FglError(f"{a.model}: no template '{a.template}'; the model has "
                       f"{', '.join(names)}")
    try:
        info = crf.inspect(a.top, a.template)
    except FglError as e:   # (over the memory budget)
        raise FglError(f"{a.model}: {e}") from None
    print(json.dumps(info, indent=1, ensure_ascii=False) if a.json else format_inspection(info))
