"""A template's attribute vocabulary: attribute key -> feature-table row.

A mapping like the ``dict`` it replaces, held compactly: the keys in a
``KeyTable`` (bytes, no Python object per key) and the rows in an array
over its ids (-1: a key deleted, or met but given no row).  The batch
methods are what the compile and the encoders use; the mapping methods
serve everything else (model files, ``fgl inspect``, feature induction).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping

import numpy as np

from fgl.features.key_table import KeyTable
from fgl.jit import njit


@njit(cache=True, nogil=True)
def _containing(data, ptr, ids, needle):
    """Which of keys ``ids`` hold the bytes ``needle``."""
    out = np.zeros(ids.shape[0], dtype=np.bool_)
    m = needle.shape[0]
    for k in range(ids.shape[0]):
        a, b = ptr[ids[k]], ptr[ids[k] + 1]
        for s in range(a, b - m + 1):
            j = 0
            while j < m and data[s + j] == needle[j]:
                j += 1
            if j == m:
                out[k] = True
                break
    return out


class Vocabulary(MutableMapping):
    """Attribute key -> row, iterated in the order keys were first added."""

    def __init__(self, items: Mapping[str, int] | None = None) -> None:
        self._keys = KeyTable()
        self._rows = np.zeros(0, dtype=np.int64)
        self._len = 0
        if items:
            keys = list(items)
            self.assign(keys, np.fromiter(items.values(), dtype=np.int64, count=len(keys)))

    # -- batches

    def assign(self, keys: list[str], rows: np.ndarray) -> None:
        """``self[keys[i]] = rows[i]`` for every i."""
        self._set(self._keys.ids(keys), rows)

    def assign_encoded(self, data: np.ndarray, ptr: np.ndarray, rows: np.ndarray) -> None:
        """``self[key i] = rows[i]`` for keys given as UTF-8 bytes and offsets
        (``fgl.features.key_table.encoded``'s pair): no Python object per key."""
        self._set(self._keys.ids_of(data, ptr, np.arange(len(rows), dtype=np.int64), True),
                  rows)

    def assign_from(self, table: KeyTable, ids: np.ndarray, rows: np.ndarray) -> None:
        """``self[table.key(ids[i])] = rows[i]`` for every i, the keys
        copied as bytes."""
        data, ptr = table.data()
        self._set(self._keys.ids_of(data, ptr, np.asarray(ids, dtype=np.int64), True), rows)

    def _grow(self) -> None:
        """Rows over every id of the key table (-1 for the new ones)."""
        n = len(self._keys)
        if n > len(self._rows):
            grown = np.full(max(n, 2 * len(self._rows)), -1, dtype=np.int64)
            grown[:len(self._rows)] = self._rows
            self._rows = grown

    def _set(self, at: np.ndarray, rows: np.ndarray) -> None:
        self._grow()
        self._rows[at] = rows
        self._len = int(np.count_nonzero(self._rows[:len(self._keys)] >= 0))

    def lookup(self, keys: list[str]) -> np.ndarray:
        """The row of each of ``keys``, -1 for none."""
        return self._rows_at(self._keys.lookup(keys))

    def _rows_at(self, at: np.ndarray) -> np.ndarray:
        if not len(self._rows):
            return np.full(len(at), -1, dtype=np.int64)
        return np.where(at >= 0, self._rows[np.maximum(at, 0)], -1)

    def rows_of(self, table: KeyTable, lo: int, hi: int) -> np.ndarray:
        """The row of each of ``table``'s keys ``lo..hi-1``, -1 for none."""
        data, ptr = table.data()
        return self._rows_at(self._keys.ids_of(data, ptr, np.arange(lo, hi, dtype=np.int64),
                                               False))

    def renumber(self, new_row: np.ndarray) -> None:
        """Row r becomes ``new_row[r]``; rows mapped to -1 are dropped."""
        rows = self._rows[:len(self._keys)]
        have = rows >= 0
        rows[have] = new_row[rows[have]]
        self._len = int(np.count_nonzero(rows >= 0))

    def keys_by_row(self) -> tuple[list[str], np.ndarray]:
        """(keys, rows) in ascending row order."""
        rows = self._rows[:len(self._keys)]
        ids = np.flatnonzero(rows >= 0)
        ids = ids[np.argsort(rows[ids], kind="stable")]
        return self._keys.names(ids.tolist()), rows[ids]

    def id_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, rows) of the keys that have a row, as arrays (no Python
        object per key); ``names`` gives the keys of chosen ids."""
        ids = self._ids()
        return ids, self._rows[ids]

    def names(self, ids: np.ndarray) -> list[str]:
        """The keys of ``ids`` (``id_rows``'s)."""
        return self._keys.names(np.asarray(ids, dtype=np.int64).tolist())

    def items_with(self, part: str) -> list[tuple[str, int]]:
        """(key, row) of the keys that contain ``part``."""
        data, ptr = self._keys.data()
        needle = np.frombuffer(part.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        ids = self._ids()
        ids = ids[_containing(data, ptr, ids, needle)]
        return list(zip(self._keys.names(ids.tolist()), self._rows[ids].tolist()))

    # -- the mapping

    def _at(self, key: str) -> int:
        i = self._keys.find(key) if isinstance(key, str) else None
        return -1 if i is None or i >= len(self._rows) else int(self._rows[i])

    def __getitem__(self, key: str) -> int:
        r = self._at(key)
        if r < 0:
            raise KeyError(key)
        return r

    def get(self, key: str, default=None):
        r = self._at(key)
        return default if r < 0 else r

    def __contains__(self, key: object) -> bool:
        return self._at(key) >= 0

    def __setitem__(self, key: str, row: int) -> None:
        if not isinstance(key, str) or row < 0:
            raise ValueError(f"a vocabulary maps strings to rows >= 0, not {key!r} -> {row!r}")
        i = self._keys.key_id(key)
        if i >= len(self._rows):
            self._grow()
        if self._rows[i] < 0:
            self._len += 1
        self._rows[i] = row

    def __delitem__(self, key: str) -> None:
        i = self._keys.find(key)
        if i is None or i >= len(self._rows) or self._rows[i] < 0:
            raise KeyError(key)
        self._rows[i] = -1
        self._len -= 1

    def __len__(self) -> int:
        return self._len

    def _ids(self) -> np.ndarray:
        return np.flatnonzero(self._rows[:len(self._keys)] >= 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys.names(self._ids().tolist()))

    def items(self):
        ids = self._ids()
        return list(zip(self._keys.names(ids.tolist()), self._rows[ids].tolist()))

    def values(self):
        return self._rows[self._ids()].tolist()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return len(self) == len(other) and dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # (mutable)

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} keys)"
