"""``fgl check``: parse and check a spec."""
from __future__ import annotations

import argparse
import sys

from fgl.errors import FglError, SpecError


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="validate a spec", description="Parse and check a spec; "
                       "report every error as file:line:col.")
    p.add_argument("spec")


def run(a: argparse.Namespace) -> int:
    from fgl.lang.checks import check_spec
    from fgl.lang.parser import parse_spec
    from fgl.lang.stdlib import resolve_spec_path

    path = resolve_spec_path(a.spec)
    try:
        text = path.read_text(encoding="utf-8-sig")   # as read_spec reads it
    except (OSError, UnicodeDecodeError) as e:
        raise FglError(f"{path}: cannot read spec: {e}") from None
    notes: list[SpecError] = []
    try:
        errors = check_spec(parse_spec(text, str(path)), path.parent, notes)
    except SpecError as e:  # a syntax error: reported like every other spec error
        errors = [e]
    for err in errors + notes:    # errors first, then warnings, each in source order
        print(err, file=sys.stderr)
    if errors:
        return 1
    print(f"{path}: ok")
    return 0
