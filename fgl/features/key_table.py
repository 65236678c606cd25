"""Attribute keys interned to integer ids, held as bytes rather than Python strings.

A chain model over CoNLL-2000 with CRFsuite's features meets some 335,000
distinct attribute keys.  As a ``dict`` of ``str`` to ``int`` they took 42 MB
(75 bytes per string object, 32 per int object, the dict's own table); here
they are one UTF-8 buffer, its offsets and an open-addressing hash table of
ids, some 14 MB, with no Python object per key.  Keys are looked up and
added a batch at a time (one numba call per batch of strings); a single key
costs a call too, so hot paths pass lists.
"""
from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np

from fgl.jit import njit

_EMPTY = -1
_FIRST = np.zeros(1, dtype=np.int64)
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


def encoded(keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes, offsets) of ``keys`` end to end: key i is
    ``data[ptr[i]:ptr[i + 1]]`` (lone surrogates kept, as they round-trip)."""
    joined = "".join(keys)
    data = joined.encode("utf-8", "surrogatepass")
    if len(data) == len(joined):       # every key ASCII: a byte per character
        lens = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    else:
        parts = [k.encode("utf-8", "surrogatepass") for k in keys]
        lens = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    ptr = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    return np.frombuffer(data, dtype=np.uint8), ptr


@njit(cache=True, nogil=True, inline="always")
def _hash(data, a, b):
    """FNV-1a over ``data[a:b]``, its high half folded into the low bits
    (the slot index takes the low bits)."""
    h = _FNV_OFFSET
    for i in range(a, b):
        h = (h ^ np.uint64(data[i])) * _FNV_PRIME
    return h ^ (h >> np.uint64(29))


@njit(cache=True, nogil=True, inline="always")
def _same(blob, a, b, data, c, d):
    if b - a != d - c:
        return False
    for i in range(b - a):
        if blob[a + i] != data[c + i]:
            return False
    return True


@njit(cache=True, nogil=True)
def _find_or_add(blob, ptr, n, slots, data, dptr, which, add, out):
    """For each query k (bytes ``data[dptr[which[k]]:dptr[which[k] + 1]]``)
    its id in the table (``blob``/``ptr`` over ``n`` keys, ``slots`` the
    hash table, a power of two long), written to ``out[k]``: when absent,
    a new id if ``add`` (the arrays are large enough: the caller grew them),
    else -1.  Returns the number of keys after."""
    mask = slots.shape[0] - 1
    for k in range(which.shape[0]):
        q = which[k]
        c, d = dptr[q], dptr[q + 1]
        s = np.int64(_hash(data, c, d) & np.uint64(mask))
        found = -1
        while slots[s] != _EMPTY:
            j = slots[s]
            if _same(blob, ptr[j], ptr[j + 1], data, c, d):
                found = j
                break
            s = (s + 1) & mask
        if found < 0 and add:
            end = ptr[n]
            for i in range(d - c):   # (a slice copy compiles numba's shape-error message)
                blob[end + i] = data[c + i]
            ptr[n + 1] = end + d - c
            slots[s] = n
            found = n
            n += 1
        out[k] = found
    return n


@njit(cache=True, nogil=True)
def _rehash(blob, ptr, n, slots):
    slots[:] = _EMPTY
    mask = slots.shape[0] - 1
    for j in range(n):
        s = np.int64(_hash(blob, ptr[j], ptr[j + 1]) & np.uint64(mask))
        while slots[s] != _EMPTY:
            s = (s + 1) & mask
        slots[s] = j


class KeyTable:
    """Attribute keys ``name=text`` (``name`` when the text is None) and
    integer ids, in the order first met (ids 0, 1, ...)."""

    def __init__(self) -> None:
        self._blob = np.empty(1 << 12, dtype=np.uint8)
        self._ptr = np.zeros(1 << 8, dtype=np.int64)
        self._slots = np.full(1 << 9, _EMPTY, dtype=np.int32)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """The bytes the table holds (its keys, offsets and hash slots)."""
        return self._blob.nbytes + self._ptr.nbytes + self._slots.nbytes

    # -- ids of keys

    def id(self, name: str, text: str | None) -> int:
        return self.key_id(name if text is None else f"{name}={text}")

    def key_id(self, key: str) -> int:
        return self._one(key, True)

    def ids(self, keys: list[str]) -> np.ndarray:
        """The id of every key (int64; new keys numbered as met)."""
        data, dptr = encoded(keys)
        return self.ids_of(data, dptr, np.arange(len(keys), dtype=np.int64), add=True)

    def find(self, key: str) -> int | None:
        """The id of ``key``, None when it has none."""
        i = self._one(key, False)
        return None if i < 0 else i

    def _one(self, key: str, add: bool) -> int:
        data = np.frombuffer(key.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        if add:
            self._reserve(1, len(data))
        out = np.empty(1, dtype=np.int64)
        self._n = int(_find_or_add(self._blob, self._ptr, self._n, self._slots, _read_only(data),
                                   np.array([0, len(data)], dtype=np.int64), _FIRST, add, out))
        return int(out[0])

    def lookup(self, keys: list[str]) -> np.ndarray:
        """The id of every key, -1 for one not in the table."""
        data, dptr = encoded(keys)
        return self.ids_of(data, dptr, np.arange(len(keys), dtype=np.int64), add=False)

    def ids_of(self, data: np.ndarray, dptr: np.ndarray, which: np.ndarray,
               add: bool) -> np.ndarray:
        """The ids of keys given as bytes (``encoded``'s pair; keys
        ``which`` of them), new ones added when ``add``, else -1."""
        out = np.empty(len(which), dtype=np.int64)
        if add:
            self._reserve(len(which), int((dptr[which + 1] - dptr[which]).sum()))
        self._n = int(_find_or_add(self._blob, self._ptr, self._n, self._slots,
                                   _read_only(data), dptr, which, add, out))
        return out

    def _reserve(self, keys: int, size: int) -> None:
        """Room for ``keys`` more keys of ``size`` bytes in all."""
        n = self._n
        need = int(self._ptr[n]) + size
        if need > len(self._blob):
            self._blob = _grown(self._blob, need)
        if n + keys + 1 > len(self._ptr):
            self._ptr = _grown(self._ptr, n + keys + 1)
        if 2 * (n + keys) > len(self._slots):
            size = len(self._slots)
            while 2 * (n + keys) > size:
                size *= 2
            self._slots = np.empty(size, dtype=np.int32)
            _rehash(self._blob, self._ptr, n, self._slots)

    # -- keys of ids

    def key(self, i: int) -> str:
        return bytes(self._blob[self._ptr[i]:self._ptr[i + 1]]).decode("utf-8", "surrogatepass")

    def names(self, ids: Iterable[int]) -> list[str]:
        """The key of every id."""
        at = np.fromiter(ids, dtype=np.int64)
        blob = self._blob
        return [bytes(blob[a:b]).decode("utf-8", "surrogatepass")
                for a, b in zip(self._ptr[at].tolist(), self._ptr[at + 1].tolist())]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names(range(self._n)))

    def parts(self, i: int) -> tuple[str, str | None]:
        """(name, text) of key ``i``, whose name holds no ``=`` (the span
        fast path's names never do)."""
        name, eq, text = self.key(i).partition("=")
        return name, text if eq else None

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """(bytes, offsets) of the keys, as ``encoded`` gives them (views)."""
        return self._blob, self._ptr[:self._n + 1]


def _read_only(data: np.ndarray) -> np.ndarray:
    """``data`` as a read-only view: keys' bytes reach ``_find_or_add`` both
    from ``bytes`` (read-only) and from arrays; one type compiles it once."""
    if not data.flags.writeable:
        return data
    view = data.view()
    view.flags.writeable = False
    return view


def _grown(a: np.ndarray, need: int) -> np.ndarray:
    out = np.empty(max(need, 2 * len(a)), dtype=a.dtype)
    out[:len(a)] = a
    return out
