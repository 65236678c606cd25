"""Array work behind the span fast path (``fgl.features.span_streams``).

Attributes are interned once to integer ids (``fgl.features.key_table``) and a table of
rows — per token or per candidate span — is kept as CSR arrays
(``Rows``: row pointers, key ids, values).  Bags over spans, summing equal
keys within a row and reading rows at other positions are array or numba
work, never a Python step per (span, attribute).  Every row keeps its items
summed by key in first-seen order, as the general evaluators give them.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.jit import njit


class Rows(NamedTuple):
    """Rows of (key id, value) items: row r holds items ``ptr[r]:ptr[r + 1]``."""

    ptr: np.ndarray   # int64, rows + 1
    key: np.ndarray   # int64
    val: np.ndarray   # float64

    @staticmethod
    def empty(n: int) -> "Rows":
        return Rows(np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64),
                    np.zeros(0, dtype=np.float64))

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.ptr)


def item_positions(starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(new row pointers, item indices) of rows of ``lens`` items starting at ``starts``."""
    out_ptr = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=out_ptr[1:])
    total = int(out_ptr[-1])
    idx = np.arange(total, dtype=np.int64) + np.repeat(starts - out_ptr[:-1], lens)
    return out_ptr, idx


def gather(rows: Rows, at: np.ndarray) -> Rows:
    """Row ``at[i]`` of ``rows`` as row i (empty where ``at[i] < 0``)."""
    ok = at >= 0
    safe = np.where(ok, at, 0)
    lens = np.where(ok, rows.ptr[safe + 1] - rows.ptr[safe], 0)
    ptr, idx = item_positions(rows.ptr[safe], lens)
    return Rows(ptr, rows.key[idx], rows.val[idx])


def concat(parts: list[Rows]) -> Rows:
    """Row by row, the items of every part in turn."""
    if len(parts) == 1:
        return parts[0]
    lens = np.stack([p.lengths() for p in parts])          # parts x rows
    ptr = np.zeros(lens.shape[1] + 1, dtype=np.int64)
    np.cumsum(lens.sum(axis=0), out=ptr[1:])
    key = np.empty(int(ptr[-1]), dtype=np.int64)
    val = np.empty(int(ptr[-1]), dtype=np.float64)
    before = ptr[:-1].copy()
    for p, n in zip(parts, lens):
        _, dest = item_positions(before, n)
        key[dest], val[dest] = p.key, p.val
        before += n
    return Rows(ptr, key, val)


def stack(parts: list[Rows]) -> Rows:
    """The rows of every part in turn."""
    if len(parts) == 1:
        return parts[0]
    base = np.cumsum([0] + [len(p.key) for p in parts[:-1]])
    ptr = np.concatenate([parts[0].ptr[:1]] + [p.ptr[1:] + b for p, b in zip(parts, base)])
    return Rows(ptr, np.concatenate([p.key for p in parts]),
                np.concatenate([p.val for p in parts]))


def split(rows: Rows, counts: np.ndarray) -> list[Rows]:
    """Rows in consecutive groups of ``counts`` rows."""
    out, r = [], 0
    for n in counts.tolist():
        ptr = rows.ptr[r:r + n + 1]
        a, b = int(ptr[0]), int(ptr[-1])
        out.append(Rows(ptr - a, rows.key[a:b], rows.val[a:b]))
        r += n
    return out


def _local(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct ids, each key's index among them): small scratch for kernels."""
    uniq, inv = np.unique(key, return_inverse=True)
    return uniq, inv.astype(np.int64).reshape(-1)


def merged(rows: Rows, add: bool) -> Rows:
    """Each row's equal keys merged in first-seen order: values added
    (``add``) or the first kept."""
    if len(rows.key) == 0:
        return rows
    uniq, local = _local(rows.key)
    ptr, key, val = _merge_kernel(rows.ptr, local, rows.val, len(uniq), add)
    return Rows(ptr, uniq[key], val)


def bag(tokens: Rows, lo: np.ndarray, hi: np.ndarray) -> Rows:
    """Per span, the summed items of token rows ``lo[s]:hi[s]`` in first-seen
    order; spans sharing ``lo`` and growing ``hi`` reuse the previous sums."""
    if len(tokens.key) == 0:
        return Rows.empty(len(lo))
    uniq, local = _local(tokens.key)
    ptr, key, val = _bag_kernel(tokens.ptr, local, tokens.val, lo.astype(np.int64),
                                hi.astype(np.int64), len(uniq))
    return Rows(ptr, uniq[key], val)


def cross(parts: list[Rows]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Row by row, every combination of one item per part (the first part's
    item outermost, as ``itertools.product``): (row pointers, per part the
    item index of each combination)."""
    ptr, idx = parts[0].ptr, [np.arange(len(parts[0].key), dtype=np.int64)]
    for p in parts[1:]:
        a, b = np.diff(ptr), p.lengths()
        n = a * b
        out_ptr = np.zeros(len(n) + 1, dtype=np.int64)
        np.cumsum(n, out=out_ptr[1:])
        row = np.repeat(np.arange(len(n), dtype=np.int64), n)
        q = np.arange(int(out_ptr[-1]), dtype=np.int64) - out_ptr[:-1][row]
        bq = b[row]
        left = ptr[:-1][row] + q // np.maximum(bq, 1)
        idx = [i[left] for i in idx] + [p.ptr[:-1][row] + q % np.maximum(bq, 1)]
        ptr = out_ptr
    return ptr, idx


def tuple_codes(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(index of each distinct tuple's first occurrence, each row's tuple
    number) of the rows of ``columns`` read side by side."""
    code = np.zeros(len(columns[0]), dtype=np.int64)
    for col in columns:
        _, code = np.unique(code * (int(col.max(initial=0)) + 1) + col, return_inverse=True)
        code = code.astype(np.int64).reshape(-1)
    first = np.full(int(code.max(initial=-1)) + 1, len(code), dtype=np.int64)
    np.minimum.at(first, code, np.arange(len(code), dtype=np.int64))
    return first, code


# ------------------------------------------------------------------ kernels

@njit(cache=True)
def _merge_kernel(ptr, key, val, n_keys, add):  # pragma: no cover - compiled
    n = len(ptr) - 1
    slot = np.full(n_keys, -1, np.int64)
    out_ptr = np.zeros(n + 1, np.int64)
    out_key = np.empty(len(key), np.int64)
    out_val = np.empty(len(key), np.float64)
    m = 0
    for r in range(n):
        start = m
        for i in range(ptr[r], ptr[r + 1]):
            k = key[i]
            q = slot[k]
            if q < 0:
                slot[k] = m
                out_key[m] = k
                out_val[m] = val[i]
                m += 1
            elif add:
                out_val[q] += val[i]
        for q in range(start, m):
            slot[out_key[q]] = -1
        out_ptr[r + 1] = m
    return out_ptr, out_key[:m], out_val[:m]


@njit(cache=True)
def _bag_kernel(tok_ptr, key, val, lo, hi, n_keys):  # pragma: no cover - compiled
    n = len(lo)
    slot = np.full(n_keys, -1, np.int64)
    order = np.empty(n_keys, np.int64)
    sums = np.empty(n_keys, np.float64)
    out_ptr = np.zeros(n + 1, np.int64)
    out_key = np.empty(0, np.int64)
    out_val = np.empty(0, np.float64)
    for fill in range(2):
        if fill == 1:
            out_key = np.empty(out_ptr[n], np.int64)
            out_val = np.empty(out_ptr[n], np.float64)
        m = 0
        cur_lo = -1
        cur_hi = -1
        for s in range(n):
            if lo[s] != cur_lo or hi[s] < cur_hi:
                for q in range(m):
                    slot[order[q]] = -1
                m = 0
                cur_lo = lo[s]
                cur_hi = lo[s]
            if hi[s] > cur_hi:
                for i in range(tok_ptr[cur_hi], tok_ptr[hi[s]]):
                    k = key[i]
                    q = slot[k]
                    if q < 0:
                        slot[k] = m
                        order[m] = k
                        sums[m] = val[i]
                        m += 1
                    else:
                        sums[q] += val[i]
                cur_hi = hi[s]
            if fill == 0:
                out_ptr[s + 1] = out_ptr[s] + m
            else:
                b = out_ptr[s]
                for q in range(m):
                    out_key[b + q] = order[q]
                    out_val[b + q] = sums[q]
        for q in range(m):
            slot[order[q]] = -1
    return out_ptr, out_key, out_val
