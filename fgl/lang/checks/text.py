"""How the checker shows what it found: locations, offsets, label and
column references as written, values, and "did you mean" hints."""
from __future__ import annotations

import difflib

from fgl.lang.ast import ColumnRef, LabelRef, Loc, Spec


def loc_of(x, fallback: Loc) -> Loc:
    """The location of a parsed name or value, else ``fallback`` (the
    enclosing node's, for hand-built specs)."""
    loc = getattr(x, "loc", None)
    return loc if isinstance(loc, Loc) else fallback


def end_loc(spec: Spec) -> Loc:
    """Just after the spec's last character."""
    lines = spec.text.rstrip().split("\n") if spec.text.strip() else [""]
    return Loc(spec.file, len(lines), len(lines[-1]) + 1)


def did_you_mean(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def offsets(lo: int, hi: int, lo_base: str = "t", hi_base: str | None = None) -> str:
    """``t-2..t+2``, ``u-1``, ``u..v``: an offset range as written."""
    hi_base = lo_base if hi_base is None else hi_base

    def one(base: str, k: int) -> str:
        return base if k == 0 else f"{base}{k:+d}"
    if (lo_base, lo) == (hi_base, hi):
        return one(lo_base, lo)
    return f"{one(lo_base, lo)}..{one(hi_base, hi)}"


def column_ref(e: ColumnRef) -> str:
    return f"{e.column}[{offsets(e.lo, e.hi, e.lo_base, e.hi_base)}]"


def label_ref(r: LabelRef) -> str:
    return f"{r.var}[{offsets(r.lo, r.hi, r.index)}]"


def labels_text(refs: list[LabelRef]) -> str:
    """A template's labels as written: `y[t-2..t]` or `(y[i], y[j])`."""
    shown = ", ".join(label_ref(r) for r in refs)
    return shown if len(refs) == 1 else f"({shown})"


def show(v) -> str:
    return f"'{v}'" if isinstance(v, str) else repr(v)
