"""How many items an observation expression gives at one position.

A window gives one item per offset, a bag ``word[u..v]`` one per token of
the longest segment, ``tokens(e)`` one per word of its text, ``class(e)``
up to one per regex class and ``either(e)`` those of both ends; a union
adds its parts' items and a conjunction *multiplies* them, so a few wide
parts conjoined give millions of attributes per token.  The checker refuses
an expression whose bound passes ``MAX_ITEMS`` (counting a text as one
word); reading data refuses a text with so many words that a conjunction
of its bags would (``fgl.features.observations``).
"""
from __future__ import annotations

import math
from typing import Iterator, Mapping

from fgl.lang import ast
from fgl.lang.builtins import REGEX_CLASSES

# the built-ins that keep a range's positions in order (zip pairs them, pad marks the ends)
POSITIONAL_FUNCTIONS = ("lower", "prefix", "suffix", "shape", "longshape", "pad")
MAX_ITEMS = 100_000  # the most items an expression may give at one position


def most_items(e: ast.ObsExpr, named: Mapping[str, ast.ObsDef], segment: int = 1,
               words: Mapping[str, int] | None = None,
               memo: dict[str, int] | None = None) -> int:
    """The most items ``e`` gives at one position: ``segment`` is the
    longest segment, ``words[c]`` the most words a text of column ``c``
    holds (1 when not given); ``memo`` keeps named observations' counts."""
    words = words or {}
    memo = {} if memo is None else memo

    def count(x: ast.ObsExpr) -> int:
        if isinstance(x, ast.ColumnRef):
            width = x.hi - x.lo + 1
            if x.lo_base != x.hi_base:     # u-a..v+b: the segment's tokens and a + b more
                width += segment - 1
            return max(width, 1)
        if isinstance(x, ast.NameRef):
            d = named.get(x.name)
            if d is None:
                return 1
            if x.name not in memo:
                memo[x.name] = 1           # (a cycle, reported by the checker, counts 1)
                memo[x.name] = count(d.expr)
            return memo[x.name]
        if isinstance(x, ast.Call):
            if x.func == "count":
                return 1
            if x.func == "zip" and isinstance(x.arg, ast.Conj):
                return min(count(p) for p in x.arg.parts)
            if x.func == "tokens":
                factor = max((words.get(r.column, 1) for r in column_refs(x.arg, named)),
                             default=1)
            else:
                factor = {"either": 2, "class": len(REGEX_CLASSES)}.get(x.func, 1)
            return factor * count(x.arg)
        if isinstance(x, ast.Conj):
            return math.prod(count(p) for p in x.parts)
        if isinstance(x, ast.Disj):
            return sum(count(p) for p in x.parts)
        return 1

    return count(e)


def range_ref(e: ast.ObsExpr, named: Mapping[str, ast.ObsDef],
              seen: frozenset[str] = frozenset()) -> ast.ColumnRef | None:
    """The column range under ``e`` when ``e`` reads one position by position
    (a column reference, under text built-ins, ``pad`` and names), else None."""
    if isinstance(e, ast.ColumnRef):
        return e
    if isinstance(e, ast.NameRef) and e.name in named and e.name not in seen:
        return range_ref(named[e.name].expr, named, seen | {e.name})
    if isinstance(e, ast.Call) and e.func in POSITIONAL_FUNCTIONS:
        return range_ref(e.arg, named, seen)
    return None


def range_width(ref: ast.ColumnRef) -> tuple[bool, int]:
    """How long a range is: (False, n) for n positions, (True, k) for a
    u..v range of the segment's length plus k."""
    return (ref.lo_base != ref.hi_base, ref.hi - ref.lo + (ref.lo_base == ref.hi_base))


def longest_segment(spec: ast.Spec) -> int:
    """The longest segment ``spec`` allows (1 without segments)."""
    seg = spec.segments
    lengths = [] if seg is None else [seg.max_length, *seg.per_label.values()]
    return max((n for n in lengths if isinstance(n, int) and n > 0), default=1)


def column_refs(e: ast.ObsExpr, named: Mapping[str, ast.ObsDef],
                seen: set[str] | None = None) -> Iterator[ast.ColumnRef]:
    """Every column reference ``e`` reads, through named observations."""
    seen = set() if seen is None else seen
    if isinstance(e, ast.ColumnRef):
        yield e
    elif isinstance(e, ast.NameRef):
        if e.name in named and e.name not in seen:
            seen.add(e.name)
            yield from column_refs(named[e.name].expr, named, seen)
    elif isinstance(e, ast.Call) and e.arg is not None:
        yield from column_refs(e.arg, named, seen)
    elif isinstance(e, (ast.Conj, ast.Disj)):
        for p in e.parts:
            yield from column_refs(p, named, seen)


def _bag_columns(e: ast.ObsExpr, named: Mapping[str, ast.ObsDef], seen: set[str]) -> set[str]:
    """The columns read by the tokens(...) bags inside ``e``, through names."""
    if isinstance(e, ast.NameRef):
        if e.name not in named or e.name in seen:
            return set()
        seen.add(e.name)
        return _bag_columns(named[e.name].expr, named, seen)
    if isinstance(e, ast.Call) and e.arg is not None:
        found = _bag_columns(e.arg, named, seen)
        if e.func == "tokens":
            found |= {r.column for r in column_refs(e.arg, named)}
        return found
    if isinstance(e, (ast.Conj, ast.Disj)):
        return set().union(*(_bag_columns(p, named, seen) for p in e.parts))
    return set()


def _conjunctions(e: ast.ObsExpr) -> Iterator[ast.Conj]:
    """The conjunctions written in ``e`` (names not followed)."""
    if isinstance(e, ast.Conj):
        yield e
    if isinstance(e, ast.Call) and e.arg is not None:
        yield from _conjunctions(e.arg)
    elif isinstance(e, (ast.Conj, ast.Disj)):
        for p in e.parts:
            yield from _conjunctions(p)


def bag_conjunctions(spec: ast.Spec) -> list[tuple[ast.Conj, set[str]]]:
    """The conjunctions of ``spec`` with tokens(...) bags inside (at any
    depth, through names), each with the columns those bags read: where the
    data's texts decide how many items there are."""
    named = {d.name: d for d in spec.observations}
    exprs = [d.expr for d in spec.observations]
    exprs += [e for tpl in spec.templates for e in tpl.observations]
    out = []
    for e in exprs:
        for conj in _conjunctions(e):
            columns = _bag_columns(conj, named, set())
            if columns:
                out.append((conj, columns))
    return out
