"""Every unit's attribute rows as flat CSR arrays, and the batches of
sentences whose features are computed together: what the sequence
compile (``fgl.compile.feature_table``) and the models' ``encode``
(``fgl.compile.sequence``) build units with.
"""
from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Iterable

import numpy as np

from fgl.compile.conjunctions import ConjunctionIndex
from fgl.compile.footprint import BATCH_ITEMS
from fgl.data.sentence import Sentence
from fgl.engines.sequence.encoded import holds_exactly, unit_ones
from fgl.features.key_table import KeyTable
from fgl.features.span_arrays import Rows

if TYPE_CHECKING:
    from fgl.compile.vocabulary import Vocabulary


class UnitRows:
    """Every unit's attribute rows and values, appended unit by unit into
    flat arrays (CSR).  Values are stored only once one differs from 1, in
    the narrowest of int8, float32 and float64 that holds every value so far
    exactly (counts, small integers: the kernels' products are then the same
    bits, from an eighth of the bytes)."""

    def __init__(self) -> None:
        self.ptr, self.rows = array("q", [0]), array("i")
        self.vals: array | None = None

    @property
    def nbytes(self) -> int:
        """The bytes the units' pointers, rows and values take."""
        vals = 0 if self.vals is None else self.vals.itemsize * len(self.vals)
        return 8 * len(self.ptr) + 4 * len(self.rows) + vals

    def add(self, rows: list[int], vals: list[float]) -> None:
        if (self.vals is not None or vals.count(1.0) != len(vals)) and not self._fits(vals):
            self._values(np.frombuffer(array("d", vals), dtype=np.float64))
        self.rows.extend(rows)
        self.ptr.append(len(self.rows))

    def _fits(self, vals: list[float]) -> bool:
        """Append one unit's ``vals`` to the store as it is, if each fits it
        exactly (checked in Python, cheaper than numpy for a few values;
        zeros, whose sign int8 would lose, take ``_values``)."""
        if self.vals is None:
            self.vals = array("b", [1]) * len(self.rows)
        code = self.vals.typecode
        try:
            narrow = array(code, map(int, vals) if code == "b" else vals)
        except (OverflowError, ValueError):   # (past int8; an infinity or NaN)
            return False
        if narrow.tolist() != vals or 0.0 in vals:
            return False
        self.vals.extend(narrow)
        return True

    def extend(self, lengths: np.ndarray, rows: np.ndarray, vals: np.ndarray) -> None:
        """Units of ``lengths`` rows each, their rows and values in turn."""
        if self.vals is not None or not np.all(vals == 1.0):
            self._values(np.ascontiguousarray(vals, dtype=np.float64))
        self.rows.frombytes(rows.astype(np.int32).tobytes())
        ends = len(self.rows) - int(lengths.sum()) + np.cumsum(lengths, dtype=np.int64)
        self.ptr.frombytes(ends.tobytes())

    def _values(self, vals: np.ndarray) -> None:
        """Append the values ``vals`` (before their rows), widening the store
        to the first type that holds them exactly; the units before the first
        stored value get 1 each."""
        if self.vals is None:
            self.vals = array("b", [1]) * len(self.rows)
        level = _STORES.index(self.vals.typecode)
        while not _exact(vals, level):
            level += 1
        code = _STORES[level]
        if code != self.vals.typecode:
            wide = array(code)
            wide.frombytes(_raw(np.frombuffer(self.vals, dtype=_DTYPES[self.vals.typecode])
                                .astype(_DTYPES[code])))
            self.vals = wide
        self.vals.frombytes(_raw(vals.astype(_DTYPES[code])))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit pointers, rows, values) sharing the buffers."""
        rows = np.frombuffer(self.rows, dtype=np.int32)
        if self.vals is None:
            vals = unit_ones(len(rows))
        else:
            vals = np.frombuffer(self.vals, dtype=_DTYPES[self.vals.typecode])
        return np.frombuffer(self.ptr, dtype=np.int64), rows, vals


# the value stores, narrowest first, and their numpy types
_STORES = "bfd"
_DTYPES = {"b": np.int8, "f": np.float32, "d": np.float64}


def _exact(vals: np.ndarray, level: int) -> bool:
    """Whether store ``_STORES[level]`` holds every one of ``vals`` with the
    same bits once widened back to double (not -0.0 as int8 0, nor NaN)."""
    code = _STORES[level]
    if code == "d":
        return True
    if code == "b" and not np.all((vals >= -128) & (vals <= 127)):
        return False
    return holds_exactly(vals, _DTYPES[code])


def _raw(buffer) -> memoryview:
    """A contiguous buffer's bytes, for ``array.frombytes`` (no copy)."""
    return memoryview(buffer).cast("B")


class KeyRows:
    """Per template, the vocabulary as an array over attribute ids of a
    ``KeyTable``: the row of each id, -1 for none.  Ids are looked up in
    the vocabulary as the table grows (``table``); the compile sets the
    rows it gives new attributes itself."""

    def __init__(self, keys: KeyTable, vocabs: list[Vocabulary]):
        self.keys, self.vocabs = keys, vocabs
        self.by_id = [np.zeros(0, dtype=np.int64) for _ in vocabs]
        self.filled = [0] * len(vocabs)

    @property
    def nbytes(self) -> int:
        """The bytes of the key table and of the templates' arrays over it."""
        return self.keys.nbytes + sum(a.nbytes for a in self.by_id)

    def table(self, ti: int) -> np.ndarray:
        """Template ``ti``'s array, over every id of the key table so far."""
        n, lo = len(self.keys), self.filled[ti]
        if lo < n:
            by_id = self.by_id[ti]
            if len(by_id) < n:
                grown = np.full(max(n, 2 * len(by_id)), -1, dtype=np.int64)
                grown[:lo] = by_id[:lo]
                by_id = self.by_id[ti] = grown
            by_id[lo:n] = self.vocabs[ti].rows_of(self.keys, lo, n)
            self.filled[ti] = n
        return self.by_id[ti]

    def rows(self, ti: int, ids: np.ndarray) -> np.ndarray:
        return self.table(ti)[ids]

    def scored(self, ids: np.ndarray, const_key: str | None) -> np.ndarray | bool:
        """Which of ``ids`` are scored per unit (all but the constant key's)."""
        const = self.keys.find(const_key) if const_key is not None else None
        return True if const is None else ids != const


def conjunction_rows(conj: ConjunctionIndex, rows: Rows, keys: KeyTable
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unit, row, value) of the induced conjunctions present in each unit."""
    names, vals = keys.names(rows.key.tolist()), rows.val.tolist()
    unit, row, val = [], [], []
    for n, (a, b) in enumerate(zip(rows.ptr[:-1].tolist(), rows.ptr[1:].tolist())):
        if a < b:
            for r, v in conj.rows(dict(zip(names[a:b], vals[a:b]))):
                unit.append(n)
                row.append(r)
                val.append(v)
    return (np.array(unit, dtype=np.int64), np.array(row, dtype=np.int64),
            np.array(val, dtype=np.float64))


def append_units(units: UnitRows, n_units: int, unit: list[np.ndarray], row: list[np.ndarray],
               val: list[np.ndarray]) -> None:
    """Add ``n_units`` units from (unit, row, value) items given template by
    template: each unit's rows in template order, then item order."""
    of_unit = np.concatenate(unit) if unit else np.zeros(0, dtype=np.int64)
    order = np.argsort(of_unit, kind="stable")
    units.extend(np.bincount(of_unit, minlength=n_units),
                 np.concatenate(row)[order] if unit else of_unit,
                 np.concatenate(val)[order] if unit else np.zeros(0))


# sentences whose features are computed together: large enough that array work
# outweighs its per-call overhead, small enough to keep a batch's span items in memory
BATCH_TOKENS = 1024


def batches(sentences: Iterable[Sentence], limit: int, items_per_token: int = 1
            ) -> Iterable[list[Sentence]]:
    """The first ``limit`` sentences in batches of about ``BATCH_TOKENS``
    tokens, and of fewer when their tokens give ``items_per_token``
    attribute items each, so that a batch has about ``BATCH_ITEMS`` at most
    (a whole sentence at least)."""
    most = max(1, min(BATCH_TOKENS, BATCH_ITEMS // max(items_per_token, 1)))
    batch: list[Sentence] = []
    size = 0
    for i, sent in enumerate(sentences):
        if i >= limit:
            break
        batch.append(sent)
        size += len(sent.rows)
        if size >= most:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
