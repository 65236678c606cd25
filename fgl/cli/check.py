"""``fgl check``: parse and check a spec."""
from __future__ import annotations

import argparse
import sys

from fgl.cli.options import lexicon_path_arg
from fgl.errors import SpecError


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="validate a spec", description="Parse and check a spec; "
                       "report every error as file:line:col.")
    p.add_argument("spec", help="a spec file (.fgl), stdlib:NAME, or - for standard input")
    lexicon_path_arg(p)


def run(a: argparse.Namespace) -> int:
    from fgl.lang.checks import check_spec
    from fgl.lang.parser import parse_spec, read_spec_text
    from fgl.learn.trainers import setting_errors

    text, name, base = read_spec_text(a.spec)   # as read_spec reads it
    notes: list[SpecError] = []
    try:
        spec = parse_spec(text, name)
        errors = check_spec(spec, base, notes)
        errors = sorted(errors + setting_errors(spec), key=lambda e: (e.line or 0, e.col or 0))
    except SpecError as e:  # a syntax error: reported like every other spec error
        errors = [e]
    for err in errors + notes:    # errors first, then warnings, each in source order
        print(err, file=sys.stderr)
    if errors:
        return 1
    print(f"{name}: ok")
    return 0
