"""The built-in observation functions: their text rewrites and markers.

The language declares the built-ins (``fgl.lang.builtins``: signatures,
regex classes, attribute names); this module implements what they do to a
token's text.
"""
from __future__ import annotations

from typing import Callable

from fgl.lang import ast
from fgl.lang.builtins import REGEX_CLASSES

# what pad(...) reads before the first token and after the last: texts with a space,
# which no token of a column can be (columns are split on whitespace)
START_MARKER = "<sequence start>"
END_MARKER = "<sequence end>"


def shape(word: str, collapse: bool = True) -> str:
    """Map upper-case letters to A, lower-case to a, digits to D; keep other
    characters.  With ``collapse`` runs of one class become one symbol."""
    out: list[str] = []
    for ch in word:
        c = "A" if ch.isupper() else "a" if ch.islower() else "D" if ch.isdigit() else ch
        if not (collapse and out and out[-1] == c):
            out.append(c)
    return "".join(out)


def regex_classes(word: str) -> list[str]:
    """Names of every McCallum 2003 regex class that matches the whole token."""
    return [name for name, rx in REGEX_CLASSES if rx.fullmatch(word)]


# ---------------------------------------------------------------- text rewrites

TEXT_FUNCTIONS = ("lower", "prefix", "suffix", "shape", "longshape")


def shifted(values: list, off: int, T: int) -> tuple[list[int], list, list[int]]:
    """``values[t + off]`` at the T token positions t: how far before the
    sequence each of the first positions reads (1, 2, ...: start markers'
    distances), the texts of the positions inside, how far past its end
    each of the last ones reads (end markers' distances)."""
    before = [-t - off for t in range(min(T, -off))]
    inside = values[max(off, 0):max(0, min(T + off, T))]
    after = [t + off - T + 1 for t in range(max(0, T - off), T)]
    return before, inside, after


def pad_reach(call: ast.Call) -> int:
    """How far outside the sequence ``pad(e[, n])`` gives a marker: its
    parameter, else without limit."""
    return call.params[0] if call.params else 1 << 62


def text_function(call: ast.Call) -> Callable[[str], str]:
    """The text rewrite of a ``lower``/``prefix``/``suffix``/``shape``/
    ``longshape`` call."""
    n = call.params[0] if call.params else 0
    return {
        "lower": str.lower,
        "prefix": lambda s: s[:n],
        "suffix": lambda s: s[-n:],
        "shape": shape,
        "longshape": lambda s: shape(s, collapse=False),
    }[call.func]
