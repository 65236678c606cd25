"""Aggregates as columns: what an instance's links give each position, held sparsely.

An aggregate (``mean(tokens(words[b]) over edge(a, b, "cites"))``) needs the
whole graph, or a token's whole document, which one sentence's columns do
not hold.  The compile (``fgl.compile.aggregates``) therefore works each
aggregate out once per instance and stores it among the instance's columns
under ``aggregate_key``, as an ``AggregateColumn``: per position only the
items its linked nodes have (compressed rows of item ids and values, never
a dense row over the vocabulary).  A column slices as a list does, so a
sentence's part of a document's column is its own column; the evaluator
(``aggregate_evaluator``) reads a position's items off it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from fgl.errors import SpecError
from fgl.lang import ast
from fgl.lang.builtins import expr_text

Item = tuple[str, str | None, float]


def aggregate_key(agg: ast.Aggregate) -> str:
    """The column name an aggregate's values are stored under (no column
    of a spec can be named so: it starts with a NUL)."""
    return "\0" + expr_text(agg)


@dataclass
class AggregateColumn:
    """Per position p, the items ``names[idx[k]]`` with values ``val[k]``
    for k in ``ptr[p]:ptr[p + 1]`` (item ids ascending), and ``linked[p]``,
    how many positions p read (for ``fgl explain``)."""

    ptr: np.ndarray                    # int64, positions + 1
    idx: np.ndarray                    # int32 or int64: item ids
    val: np.ndarray                    # float64
    names: list[tuple[str, str | None]]
    linked: np.ndarray                 # int64, per position

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def __getitem__(self, part: slice) -> "AggregateColumn":
        """The positions ``part`` (a slice with step 1), as a column of their own."""
        a, b, step = part.indices(len(self))
        if step != 1:
            raise ValueError("an aggregate column slices with step 1 only")
        b = max(a, b)
        lo, hi = int(self.ptr[a]), int(self.ptr[b])
        part = AggregateColumn.__new__(AggregateColumn)   # (the keys shared, not remade)
        part.ptr, part.idx, part.val = self.ptr[a:b + 1] - lo, self.idx[lo:hi], self.val[lo:hi]
        part.names, part.linked, part.keys = self.names, self.linked[a:b], self.keys
        return part

    def __post_init__(self) -> None:
        # each item's attribute key, made once: items carry it as their name (text None), so
        # a position's attributes share these strings instead of joining new ones per node
        self.keys = [name if text is None else f"{name}={text}" for name, text in self.names]

    def items(self, p: int, keyed: bool = True) -> list[Item]:
        """Position p's items as (attribute key, None, value), or (``keyed``
        False: for a conjunction, which joins names and texts apart) as
        (name, text, value)."""
        lo, hi = int(self.ptr[p]), int(self.ptr[p + 1])
        ids, vals = self.idx[lo:hi].tolist(), self.val[lo:hi].tolist()
        if not keyed:
            return [(*self.names[k], v) for k, v in zip(ids, vals)]
        keys = self.keys
        return [(keys[k], None, v) for k, v in zip(ids, vals)]

    @property
    def nbytes(self) -> int:
        return self.ptr.nbytes + self.idx.nbytes + self.val.nbytes + self.linked.nbytes


def aggregate_evaluator(agg: ast.Aggregate, keyed: bool = True) -> Callable:
    """The evaluator of an aggregate: its items at every position, or on a
    pair (i, j) / (a, b) at its first end, read off the instance's column
    (``AggregateColumn.items``: ``keyed`` or not)."""
    key = aggregate_key(agg)

    def evaluate(cols: dict[str, list], T: int, spans) -> list[list[Item]]:
        column = cols.get(key)
        if column is None:
            raise SpecError("an aggregate is read here without its graph or document, which "
                            "this path does not compute (distributed training of sequence "
                            "models); train it on one machine",
                            agg.loc.file, agg.loc.line, agg.loc.col)
        if spans is None:
            return [column.items(p, keyed) for p in range(T)]
        return [column.items(u, keyed) for u, _ in spans]
    return evaluate
