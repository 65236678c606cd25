"""CRF++ and Wapiti feature templates as an fgl spec (``fgl convert crfpp``).

A template file holds one template per line: ``U00:%x[-1,0]/%x[0,0]`` (a
unigram template: the cells of the macros ``%x[row,col]`` — the token
``row`` positions away, input column ``col`` — joined with any literal
text, conjoined with the current label), ``B`` or ``B01:%x[0,0]`` (a
bigram template over the previous and the current label), and in Wapiti
files ``*...`` (both).  Blank lines and ``#`` lines are skipped.

Each line becomes an fgl template named after its id (the text before
``:``; a Wapiti ``*`` line two), with the features CRF++ builds:

* every cell is read as ``pad(col[t+row])``: outside the sentence CRF++
  writes ``_B-k`` / ``_B+k`` (k the distance past the edge) and fgl one
  start or end marker whatever the distance.  The two agree except where
  a template's cells fall outside alike at two positions, e.g.
  ``%x[-2,0]`` alone: CRF++ has ``_B-2`` at the first token and ``_B-1``
  at the second, fgl one attribute for both (:func:`merged_markers`; the
  converted spec names every such template);
* every (attribute, label) and (attribute, label pair) is a feature
  (``support = all``), as CRF++ makes them;
* CRF++ builds bigram features from the second token on, so a bigram
  template with macros also tests ``regex(col[t-1], "")`` (true wherever
  there is a previous token): attributes seen only at a sentence's first
  token are not made.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from fgl.errors import FglError, SpecError, shorten

MAX_ROW = 8   # CRF++ reads rows -8..8 (its boundary symbols _B-1.._B-8, _B+1.._B+8)
MAX_COLUMN_DIGITS = 6   # a column number of a macro (no data file has a million columns)

_MACRO = re.compile(r"%x\[\s*(-?\d+)\s*,\s*(\d+)\s*\]")
_NAME = re.compile(r"[^\W\d]\w*")
_KINDS = {"U": "U", "u": "U", "B": "B", "b": "B", "*": "*"}


@dataclass(frozen=True)
class Cell:
    """One macro ``%x[row,col]``: the token ``row`` positions from the
    current one, input column ``col``."""

    row: int
    col: int


@dataclass(frozen=True)
class TemplateLine:
    """One template line: its kind (``U``, ``B`` or ``*``), id, cells in
    order (``at``: the column of each in the file), text and line number."""

    kind: str
    id: str
    cells: tuple[Cell, ...]
    at: tuple[int, ...]
    text: str
    line: int


def parse_templates(text: str, file: str = "<template>") -> list[TemplateLine]:
    """The template lines of a CRF++ / Wapiti template file; a malformed
    line is a SpecError at its ``file:line:col``."""
    out = []
    text = text.removeprefix("\ufeff")   # (a byte-order mark some editors write first)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip())
        kind = _KINDS.get(line[0])
        if kind is None:
            raise SpecError(f"a template line starts with U (unigram), B (bigram) or, in "
                            f"Wapiti files, * (both); found '{line[0]}' in '{line}'",
                            file, lineno, indent + 1)
        cells, pos = [], 0
        while (pos := line.find("%", pos)) >= 0:
            m = _MACRO.match(line, pos)
            if m is None:
                raise SpecError(_bad_macro(line, pos), file, lineno, indent + pos + 1)
            # (digits without sign and leading zeros: int() of 4,300 digits or more fails)
            row_digits, col_digits = (g.lstrip("-").lstrip("0") or "0" for g in m.groups())
            if len(col_digits) > MAX_COLUMN_DIGITS:
                raise SpecError(f"column {shorten(m.group(2), 20)} in '{shorten(m.group(0), 40)}' "
                                "is out of range: a template reads the data's columns 0, 1, ...",
                                file, lineno, indent + pos + 1)
            if len(row_digits) > 1 or int(row_digits) > MAX_ROW:
                raise SpecError(f"row {shorten(m.group(1), 20)} in '{shorten(m.group(0), 40)}' "
                                f"is out of range: CRF++ reads rows -{MAX_ROW}..{MAX_ROW}",
                                file, lineno, indent + pos + 1)
            row = -int(row_digits) if m.group(1).startswith("-") else int(row_digits)
            col = int(col_digits)
            cells.append((Cell(row, col), indent + pos + 1))
            pos = m.end()
        colon = line.find(":")
        first = line.find("%")
        ident = line[:colon] if colon >= 0 and (first < 0 or colon < first) else line[0]
        out.append(TemplateLine(kind, ident, tuple(c for c, _ in cells),
                                tuple(at for _, at in cells), line, lineno))
    return out


def _bad_macro(line: str, pos: int) -> str:
    found = line[pos:pos + 12]
    if line[pos + 1:pos + 2] in ("t", "m", "T", "M", "X"):
        return (f"'{found}...': only %x[row,col] macros are converted (Wapiti's %t, %m and "
                f"case-folding commands are not); write such a test in fgl as "
                f"regex(column[t+row], \"...\")")
    return f"expected a macro %x[row,col] such as %x[-1,0]; found '{found}'"


def default_columns(lines: list[TemplateLine]) -> list[str]:
    """``col0 .. colK`` for the input columns the templates read (K the
    largest column number), then ``col{K+1}``, the output."""
    k = max((c.col for tl in lines for c in tl.cells), default=0)
    return [f"col{i}" for i in range(k + 2)]


def convert(text: str, columns: list[str] | None = None, file: str = "<template>",
            c: float = 1.0, f: int = 1) -> str:
    """The fgl spec equivalent to the CRF++ / Wapiti template ``text``:
    ``columns`` names the data's columns in order, the last being the
    output (default: :func:`default_columns`); ``c`` is CRF++'s ``-c``
    (its L2 term is ||w||²/2C, so sigma = √C); ``f`` is CRF++'s ``-f``, its
    feature cut-off (a feature string seen fewer than ``f`` times in
    training gets no weights), which is fgl's ``min_count``."""
    lines = parse_templates(text, file)
    if not lines:
        raise FglError(f"{file}: no template lines (U..., B or *...); a template file holds "
                       "lines such as U00:%x[0,0] and B")
    cols = list(columns) if columns is not None else default_columns(lines)
    _check_columns(cols)
    if not (c > 0 and math.isfinite(c)):
        raise FglError(f"-c must be a positive number; found {c}")
    if isinstance(f, bool) or not isinstance(f, int) or f < 0:
        raise FglError(f"-f must be a whole number >= 0; found {f}")
    inputs, output = cols[:-1], cols[-1]
    for tl in lines:
        for cell, at in zip(tl.cells, tl.at):
            if cell.col >= len(inputs):
                raise SpecError(f"column {cell.col} is not an input column: the columns are "
                                f"{_numbered(cols)}, the last ({output}) being the output; "
                                "name the data's columns with --columns", file, tl.line, at)
    body, names = [], set()
    for tl in lines:
        body += _templates(tl, inputs, names)
    head = [f"# Converted by `fgl convert crfpp` from {Path(file).name} (see docs/crfpp.md).",
            "# Each line is a template named after its id, over the same cells:",
            "# %x[row,col] is pad(column[t+row]), so a cell outside the sentence gives",
            "# fgl's start or end marker where CRF++ writes _B-k / _B+k (k rows past",
            "# the edge).  Every (attribute, label) is a feature (support = all), as",
            "# in CRF++; bigram templates with cells test regex(column[t-1], \"\")",
            "# because CRF++ reads them from the second token on.",
            *_merge_note(lines),
            f"model \"{Path(file).name} (converted from CRF++)\"", "",
            f"columns {', '.join(cols)}", f"output {output}", ""]
    tail = ["", "train {",
            f"  sigma = {_number(math.sqrt(c))}   # CRF++ -c {_number(c)}: an L2 term "
            "||w||^2 / 2C, sigma = sqrt(C)",
            *([f"  min_count = {f}   # CRF++ -f {f}: attributes seen fewer than {f} times in "
               "training get no weights"] if f > 1 else []),
            "}"]
    spec = "\n".join(head + body + tail) + "\n"
    _check_spec(spec, file)
    return spec


def _merge_note(lines: list[TemplateLine]) -> list[str]:
    """Header lines saying whether any template merges CRF++ boundary symbols."""
    if not any(merged_markers(tl.cells, tl.kind == "B") for tl in lines):
        return ["# Every CRF++ boundary symbol has its own fgl attribute here."]
    return ["# What differs: fgl's marker does not say how far past the edge a cell",
            "# is, so where a template's cells fall outside alike at two positions,",
            "# one fgl attribute stands for two CRF++ ones (noted at each template)."]


def _check_columns(cols: list[str]) -> None:
    if len(cols) < 2:
        raise FglError(f"--columns needs at least two names, the input columns then the "
                       f"output; found {','.join(cols) or 'none'}")
    for name in cols:
        if not _NAME.fullmatch(name):
            raise FglError(f"column name '{name}' is not a name fgl can read (a letter or _ "
                           "then letters, digits or _), as in --columns word,pos,chunk")
    dup = sorted({n for n in cols if cols.count(n) > 1})
    if dup:
        raise FglError(f"column name{'s' if len(dup) > 1 else ''} {', '.join(dup)} given "
                       "twice in --columns")


def _numbered(cols: list[str]) -> str:
    return ", ".join(f"{i} {name}" for i, name in enumerate(cols))


def _number(x: float) -> str:
    return f"{x:.10g}"


def _name(tl: TemplateLine, kind: str, taken: set[str]) -> str:
    """The fgl template name of a line: its id when that is an fgl name,
    with U/B for Wapiti's ``*``, else kind + line number; made unique."""
    ident = tl.id[1:] if tl.kind == "*" else tl.id
    if tl.kind == "*":
        ident = kind + ident
    base = ident if _NAME.fullmatch(ident) else f"{kind}_line{tl.line}"
    name, k = base, 2
    while name.lower() in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name.lower())
    return name


def _expression(cells: tuple[Cell, ...], inputs: list[str], bigram: bool) -> str | None:
    """The fgl observation of a line's cells, each padded, and for a bigram
    template the test that there is a previous token."""
    if not cells:
        return None
    parts = [f"pad({inputs[c.col]}[{_offset(c.row)}])" for c in cells]
    if bigram:
        parts.append(f"regex({inputs[0]}[t-1], \"\")")
    return " & ".join(parts)


def merged_markers(cells: tuple[Cell, ...], bigram: bool = False) -> list[str]:
    """CRF++ boundary symbols that fgl's one start (end) marker stands for
    together in a template with these cells, as ``"_B-2 = _B-1"``: CRF++
    writes _B-k for a cell k rows before the first token, fgl the same
    marker whatever k, so two positions near an edge whose cells fall
    outside alike give one fgl attribute where CRF++ has two.  (A bigram
    template is read from the second token on.)"""
    rows = {c.row for c in cells}
    out = []
    for sign, symbol in ((-1, "-"), (1, "+")):
        reach = max((sign * r for r in rows if sign * r > 0), default=0)
        seen: dict[frozenset, list[str]] = {}
        for d in range(1 if bigram and sign < 0 else 0, reach):
            # d tokens lie between the position and the edge on this side
            outside = frozenset(r for r in rows if sign * r > d)
            seen.setdefault(outside, []).append(
                "/".join(f"_B{symbol}{sign * r - d}" for r in sorted(outside, key=abs)))
        out += [" = ".join(v) for v in seen.values() if len(v) > 1]
    return out


def _offset(row: int) -> str:
    return "t" if row == 0 else f"t{row:+d}"


def _templates(tl: TemplateLine, inputs: list[str], taken: set[str]) -> list[str]:
    out = [f"# line {tl.line}: {tl.text}"]
    for kind in ("U", "B"):
        if tl.kind not in (kind, "*"):
            continue
        merged = merged_markers(tl.cells, kind == "B")
        if merged:
            out.append(f"# one fgl marker for CRF++'s {'; '.join(merged)}")
        name = _name(tl, kind, taken)
        window = "y[t]" if kind == "U" else "y[t-1..t]"
        expr = _expression(tl.cells, inputs, kind == "B")
        if expr is None and kind == "U":
            expr = "bias"
        if expr is None:
            out.append(f"template {name}: {window}")
        else:
            out.append(f"obs {name} = {expr}")
            out.append(f"template {name}: {window} ~ {name} (support = all)")
    return out


def _check_spec(spec: str, file: str) -> None:
    """The converted spec must pass fgl's own checks (a column name the
    spec language reserves, say, would not)."""
    from fgl.lang.checks import check_spec
    from fgl.lang.parser import parse_spec

    try:
        errors = check_spec(parse_spec(spec, "<converted>"), Path("."), [])
    except SpecError as e:
        errors = [e]
    if errors:
        raise FglError(f"{file}: the converted spec does not check: "
                       + "; ".join(str(e) for e in errors))


def convert_file(path: str | Path, columns: list[str] | None = None, c: float = 1.0,
                 encoding: str = "utf-8", f: int = 1) -> str:
    """:func:`convert` on the template file at ``path``."""
    from fgl.data.inputs import read_capped

    try:
        text = read_capped(path).decode(encoding)   # a file or pipe, at most FGL_MAX_INPUT
    except (OSError, UnicodeDecodeError) as e:
        raise FglError(f"{path}: cannot read template: {e}") from None
    return convert(text, columns, str(path), c, f)
