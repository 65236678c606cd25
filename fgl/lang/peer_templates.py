"""Recognising a CRF++ or Wapiti feature template given where a spec is
expected, so that the error says what the file is and what to do with it
(``fgl convert crfpp``, ``fgl.convert.crfpp``) instead of pointing at its
first ``U00:%x[...]`` as a syntax error."""
from __future__ import annotations

import re

# a template line: U/B/* (Wapiti also writes them in lower case), an optional id, and
# optionally ':' and the macros (no spaces in either)
_LINE = re.compile(r"[UuBb*][^\s:]*(:\S*)?")


def crfpp_template_line(text: str) -> int | None:
    """The number (1-based) of the first template line when every line of
    ``text`` that is not blank or a ``#`` comment is a CRF++/Wapiti
    template line and one of them reads a cell (``%x[``); else None."""
    first = None
    macro = False
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if _LINE.fullmatch(line) is None:
            return None
        macro |= "%x[" in line
        first = first or number
    return first if macro else None


def crfpp_template_message(file: str) -> str:
    """What to do with a CRF++/Wapiti template given as a spec."""
    return (f"this looks like a CRF++ (or Wapiti) feature template, not an fgl spec: convert "
            f"it with `fgl convert crfpp {file} --columns word,pos,label -o spec.fgl` (your "
            f"data's column names, the label last; docs/crfpp.md), then train spec.fgl")
