"""What the compile's *collect* step learns of a shard of training data, and
how summaries *merge*.

Every engine compiles in three steps: collect (per shard: the labels seen,
then each template's attribute keys with the label patterns or
configurations they were seen with), merge (the summaries of all shards
into one), encode (each shard's instances as the engine's integer tables,
given the merged vocabularies).  On one machine the training data is one
shard; on a Dask cluster (``fgl.distributed.compile``) each worker
collects and encodes its own shards and the driver merges.

A merge is associative and commutative — any grouping and order of the
shards' summaries gives the same result — so the model does not depend on
which worker finished first: attribute rows are numbered by their *rank*,
the (shard, position) where each key was first met, which is the order a
one-machine compile of the concatenated shards meets them in.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Iterable, TypeVar

import numpy as np

SHARD_SHIFT = 40   # rank = shard << SHARD_SHIFT | position within the shard


@dataclass
class LabelSummary:
    """The gold labels of some shards: per output, the labels seen; the gold
    label windows of the lengths a chain or segment model's ``observed``
    patterns need (label tuples, oldest first); how many instances and
    tokens; the tokens of the longest sequence holding a gold unit."""

    labels: dict[str, set[str]]
    windows: set[tuple[str, ...]] = field(default_factory=set)
    n_instances: int = 0
    n_tokens: int = 0
    longest: int = 0

    def merge(self, other: "LabelSummary") -> "LabelSummary":
        names = self.labels.keys() | other.labels.keys()
        return LabelSummary({n: self.labels.get(n, set()) | other.labels.get(n, set())
                             for n in sorted(names)},
                            self.windows | other.windows, self.n_instances + other.n_instances,
                            self.n_tokens + other.n_tokens, max(self.longest, other.longest))


@dataclass
class RowSummary:
    """Attribute rows met at gold units (or factors) of some shards, numbered
    in rank order: template ``t``'s key ``k`` is row ``vocabs[t][k]``
    (each dict in row order), of template ``template[r]``, first met at
    ``rank[r]``, counted ``count[r]`` times; the unique pairs
    (``pair_row[i]``, ``pair_value[i]``) say which label patterns (chain,
    segments: ids into the pattern list) or configurations (factor graphs:
    flat indices into the factor table) each row was seen with."""

    vocabs: list[dict[str, int]]
    template: np.ndarray
    rank: np.ndarray
    pair_row: np.ndarray
    pair_value: np.ndarray
    count: np.ndarray

    @classmethod
    def of_shard(cls, shard: int, vocabs: list[dict[str, int]], template: np.ndarray,
                 pair_row: np.ndarray, pair_value: np.ndarray, count: np.ndarray
                 ) -> "RowSummary":
        """One shard's rows, numbered in the order first met in it (``vocabs``
        in that order); the pairs need not be unique."""
        n = len(template)
        rank = (np.int64(shard) << SHARD_SHIFT) + np.arange(n, dtype=np.int64)
        row, value = unique_pairs(np.asarray(pair_row, dtype=np.int64),
                                   np.asarray(pair_value, dtype=np.int64))
        return cls(vocabs, np.asarray(template, dtype=np.int64), rank, row, value,
                   np.asarray(count, dtype=np.int64))

    @property
    def n_rows(self) -> int:
        return len(self.template)

    def merge(self, other: "RowSummary") -> "RowSummary":
        """The rows of both, each key at its lower rank, renumbered in rank order."""
        vocabs = [dict(v) for v in self.vocabs]
        template, rank = list(self.template.tolist()), list(self.rank.tolist())
        into = np.empty(other.n_rows, dtype=np.int64)   # other's row -> merged row
        for ti, (mine, theirs) in enumerate(zip(vocabs, other.vocabs)):
            for key, r in theirs.items():
                at = mine.get(key)
                if at is None:
                    at = mine[key] = len(template)
                    template.append(ti)
                    rank.append(int(other.rank[r]))
                into[r] = at
        rank_a = np.array(rank, dtype=np.int64)
        np.minimum.at(rank_a, into, other.rank)
        order = np.argsort(rank_a, kind="stable")
        new = np.empty(len(order), dtype=np.int64)
        new[order] = np.arange(len(order), dtype=np.int64)
        count = np.zeros(len(order), dtype=np.int64)
        np.add.at(count, new[:self.n_rows], self.count)
        np.add.at(count, new[into], other.count)
        row, value = unique_pairs(np.concatenate([new[self.pair_row], new[into[other.pair_row]]]),
                                   np.concatenate([self.pair_value, other.pair_value]))
        return RowSummary([_in_row_order(v, new) for v in vocabs],
                          np.array(template, dtype=np.int64)[order], rank_a[order], row, value,
                          count)

    def seen(self, row: int) -> list[int]:
        """The patterns (configurations) row ``row`` was seen with, ascending."""
        lo, hi = np.searchsorted(self.pair_row, [row, row + 1])
        return self.pair_value[lo:hi].tolist()


def _in_row_order(vocab: dict[str, int], new: np.ndarray) -> dict[str, int]:
    """``vocab`` with rows renumbered by ``new``, its keys in row order."""
    items = sorted(((int(new[r]), key) for key, r in vocab.items()))
    return {key: r for r, key in items}


def unique_pairs(row: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (row, value) pairs of two non-negative integer arrays,
    sorted by row, then value: one int64 per pair where it fits, sorted
    (``np.unique(..., axis=1)`` sorts a structured view, several times
    slower: a second of the compile on all of CoNLL-2003's skip chain)."""
    row, value = row.astype(np.int64, copy=False), value.astype(np.int64, copy=False)
    if not len(row):
        return row, value
    base = int(value.max()) + 1
    if int(row.max()) >= (1 << 62) // base:
        pairs = np.unique(np.stack([row, value]), axis=1)
        return pairs[0].copy(), pairs[1].copy()
    return np.divmod(np.unique(row * base + value), base)


@dataclass
class FactorSummary:
    """What collecting a factor-graph model's factors learns of some shards:
    per template, the gold configurations of its fully labelled factors
    (flat indices into its table), and the attribute rows."""

    configs: list[set[int]]
    rows: RowSummary

    def merge(self, other: "FactorSummary") -> "FactorSummary":
        return FactorSummary([a | b for a, b in zip(self.configs, other.configs)],
                             self.rows.merge(other.rows))


Summary = TypeVar("Summary", LabelSummary, RowSummary, FactorSummary)


def merge_all(summaries: Iterable[Summary]) -> Summary:
    """The merge of every summary (one summary is its own merge)."""
    return functools.reduce(lambda a, b: a.merge(b), summaries)
