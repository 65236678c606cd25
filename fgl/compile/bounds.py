"""Upper bounds on what observation expressions make over counted data:
the distinct attribute keys of each, the items it gives at one unit, and
the key spaces it prefixes them by — the estimator that ``fgl explain``
(``fgl.compile.estimate``) and the training and tagging budgets
(``fgl.compile.sequence_budget``) share.

One pass over the data counts the distinct values of each column (and,
under ``tokens``, of each column's words, ``count_columns``).  An
expression's attributes are bounded bottom-up: a column read at k offsets
makes at most k x (its distinct values) attributes, a conjunction at most
the product of its parts', a union the sum — and no expression more than
(units) x (items it gives at one unit), its occurrences in the data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from fgl.data.sentence import Sentence
from fgl.lang import ast
from fgl.lang.builtins import REGEX_CLASSES

# what a built-in makes of its argument's (keys, items, namespaces): "same" keeps
# them (a function of one value), "test" one yes/no key per namespace
_SAME = {"lower", "prefix", "suffix", "shape", "longshape", "either"}
_TEST = {"regex", "lexicon"}


@dataclass
class Bound:
    """Upper bounds on an expression over the data: distinct attribute
    ``keys``, ``items`` it gives at one unit, and key ``spaces`` (the
    offsets or parts its keys are prefixed by)."""

    keys: int
    items: int
    spaces: int


BIAS = Bound(1, 1, 1)   # the one key of a template without observations


@dataclass
class ColumnCounts:
    """Distinct values per text column, distinct words per column (for
    ``tokens``; counted only when asked), and the most words in one field."""

    values: dict[str, int]
    words: dict[str, int]
    most_words: dict[str, int]
    dims: dict[str, int]


def count_columns(spec: ast.Spec, sentences: Iterable[Sentence],
                  word_columns: set[str]) -> ColumnCounts:
    """One pass over labelled sentences: distinct values of each column the
    spec reads (the words of ``word_columns``), and each vector column's
    dimension."""
    names = [c.name for c in spec.columns]
    kinds = {c.name: c.kind for c in spec.columns}
    read = [(j, n) for j, n in enumerate(names) if n != ast.SKIP_COLUMN]
    seen: dict[str, set] = {n: set() for _, n in read}
    words: dict[str, set] = {n: set() for n in word_columns}
    most = dict.fromkeys(word_columns, 0)
    dims: dict[str, int] = {}
    for sent in sentences:
        if not sent.rows or len(sent.rows[0]) != len(names):
            continue   # (a file without the label column: compiling refuses it, located)
        for j, name in read:
            field = [row[j] for row in sent.rows]
            seen[name].update(field)
            if kinds[name] == "vector" and name not in dims:
                dims[name] = field[0].count(",") + 1
            if name in words:
                for text in field:
                    split = text.split()
                    words[name].update(split)
                    most[name] = max(most[name], len(split))
    return ColumnCounts({n: len(s) for n, s in seen.items()},
                        {n: len(s) for n, s in words.items()}, most, dims)


class Bounds:
    """``Bound``s of observation expressions over counted data, whose units
    number ``units`` and cover up to ``span`` tokens."""

    def __init__(self, spec: ast.Spec, counts: ColumnCounts, units: int, span: int):
        self.counts, self.units, self.span = counts, units, span
        self.kinds = {c.name: c.kind for c in spec.columns}
        self.named = {d.name: d.expr for d in spec.observations}
        self.memo: dict[str, Bound] = {}

    def of(self, e: ast.ObsExpr) -> Bound:
        """The bound of ``e``, capped by its occurrences in the data."""
        b = self._raw(e)
        return Bound(min(b.keys, self.units * b.items), b.items, b.spaces)

    def _raw(self, e: ast.ObsExpr) -> Bound:
        if isinstance(e, ast.ColumnRef):
            return self._column(e)
        if isinstance(e, ast.NameRef):
            if e.name in self.named:
                if e.name not in self.memo:   # (check bounds the depth of names)
                    self.memo[e.name] = self.of(self.named[e.name])
                return self.memo[e.name]
            return Bound(self.span if e.name == "length" else 1, 1, 1)
        if isinstance(e, (ast.Conj, ast.Disj)):
            parts = [self.of(p) for p in e.parts]
            if isinstance(e, ast.Disj):
                return Bound(sum(p.keys for p in parts), sum(p.items for p in parts),
                             sum(p.spaces for p in parts))
            keys = items = spaces = 1
            for p in parts:
                keys, items, spaces = keys * p.keys, items * p.items, spaces * p.spaces
            return Bound(keys, items, spaces)
        return self._call(e)

    def _column(self, e: ast.ColumnRef) -> Bound:
        # a range between the ends of a segment (word[u..v]) reads up to the span's tokens
        width = e.hi - e.lo + 1 + (self.span - 1 if e.lo_base != e.hi_base else 0)
        kind = self.kinds.get(e.column, "text")
        if kind == "text":
            return Bound(width * self.counts.values.get(e.column, 0), width, width)
        per = self.counts.dims.get(e.column, 1) if kind == "vector" else 1
        return Bound(width * per, width * per, width)

    def _call(self, e: ast.Call) -> Bound:
        if e.arg is None:
            return Bound(1, 1, 1)
        arg = self.of(e.arg)
        if e.func in _SAME or isinstance(e, ast.Aggregate):   # (an aggregate: arg's items)
            return arg
        if e.func == "pad":   # (a marker per offset besides the values)
            return Bound(arg.keys + arg.spaces, arg.items, arg.spaces)
        if e.func in _TEST:
            return Bound(arg.spaces, arg.items, arg.spaces)
        if e.func == "class":
            n = len(REGEX_CLASSES)
            return Bound(n * arg.spaces, n * arg.items, arg.spaces)
        if e.func == "tokens":
            cols = _columns(e.arg)
            words = sum(self.counts.words.get(c, 0) for c in cols)
            most = max((self.counts.most_words.get(c, 0) for c in cols), default=0)
            return Bound(arg.spaces * words, arg.items * most, arg.spaces)
        if e.func == "count":
            return Bound(1, 1, 1)
        if e.func == "zip":   # (paired position by position: no more items than a part)
            return Bound(arg.keys, arg.items, arg.spaces)
        return Bound(arg.keys, arg.items, arg.spaces)   # value: one real-valued key per item


def unit_items(spec: ast.Spec, span: int, counts: ColumnCounts | None = None) -> list[int]:
    """The most attribute items each template gives at one unit whose
    segments cover up to ``span`` tokens (``Bounds.items``; the bias: one).
    Without ``counts`` a text gives ``tokens(...)`` one word and a vector
    one dimension: a lower bound there, the same bound elsewhere."""
    if counts is None:
        ones = {c.name: 1 for c in spec.columns}
        counts = ColumnCounts({}, {}, ones, ones)
    bounds = Bounds(spec, counts, 1, span)
    return [max(1, sum(bounds.of(e).items for e in tpl.observations)) for tpl in spec.templates]


def attribute_bound(spec: ast.Spec, counts: ColumnCounts, units: int, span: int) -> int:
    """The most distinct attributes the templates have over data of
    ``units`` units counted as ``counts`` (``Bounds.keys``)."""
    bounds = Bounds(spec, counts, units, span)
    return sum(sum(bounds.of(e).keys for e in tpl.observations) or 1 for tpl in spec.templates)


def _columns(e: ast.ObsExpr) -> set[str]:
    """The columns an expression reads directly (not through names)."""
    if isinstance(e, ast.ColumnRef):
        return {e.column}
    if isinstance(e, ast.Call):
        return _columns(e.arg) if e.arg is not None else set()
    if isinstance(e, (ast.Conj, ast.Disj)):
        return set().union(*(_columns(p) for p in e.parts))
    return set()


def token_columns(spec: ast.Spec) -> set[str]:
    """Columns whose words ``tokens(...)`` reads anywhere in the spec."""
    out: set[str] = set()

    def walk(e: ast.ObsExpr) -> None:
        if isinstance(e, ast.Call):
            if e.func == "tokens" and e.arg is not None:
                out.update(_columns(e.arg) or {c.name for c in spec.columns})
            if e.arg is not None:
                walk(e.arg)
        elif isinstance(e, (ast.Conj, ast.Disj)):
            for p in e.parts:
                walk(p)

    for d in spec.observations:
        walk(d.expr)
    for tpl in spec.templates:
        for e in tpl.observations:
            walk(e)
    return out
