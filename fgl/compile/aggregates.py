"""Aggregates over links and mentions, computed once per instance.

``AGG(EXPR over LINKS [within SCOPE] [, hops = k])`` gives each node a (each
token i) the items of EXPR at the nodes b (other mentions j) its links
select (``fgl.compile.aggregate_links``), combined per item.  With X the
instance's items (one row per position, one column per distinct item of
EXPR, its value; a bag adds up), B their presence (1 where X has the item)
and R the positions a reads (A's links, within ``hops`` links, never a
itself):

- ``any``: 1 where (R B) > 0 — some linked node has the item;
- ``count``: R B — how many linked nodes have it;
- ``most``: 1 for the items of the largest count at a (ties: all) — the
  majority of Krishnan & Manning 2006 §3;
- ``sum``: R X;  ``mean``: D⁻¹ R X, D the number of linked nodes (those
  without the item count as 0);
- ``norm``: S^k X, S = D̃^-1/2 (A + I) D̃^-1/2 and D̃ the row sums of A + I
  — GCN's renormalised propagation (Kipf & Welling 2017 §2, eq. 2), and
  SGC's S^k X with ``hops = k``.

Everything is a scipy sparse product: a node's aggregate holds only the
items its neighbourhood has (``fgl.features.aggregate_columns``), so the
cost is that of the links times the items per node, never nodes × items.
"""
from __future__ import annotations

from typing import Iterable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from fgl.compile.aggregate_links import links_matrix
from fgl.data.sentence import Sentence
from fgl.errors import SpecError
from fgl.features.aggregate_columns import AggregateColumn, aggregate_key
from fgl.features.observations import ObservationCompiler, attribute_key
from fgl.lang import ast
from fgl.lang.aggregates import needs_documents, spec_aggregates
from fgl.lang.builtins import aggregate_tag

MAX_LINKS = 50_000_000   # the most (position, linked position) pairs an aggregate may read


def check_edge_types(spec: ast.Spec, edge_types: set[str]) -> None:
    """Refuse, at its place, an aggregate following an edge type that no
    training graph has (it would read nothing, silently)."""
    found = ", ".join(f'"{t}"' for t in sorted(edge_types)) or "none"
    for agg in spec_aggregates(spec):
        for p in (p for link in agg.links for p in link if p.kind == "edge"):
            if p.value not in edge_types:
                raise SpecError(f'no training graph has an edge of type "{p.value}", so '
                                f'{agg.func}(...) would read nothing; the edge types found: '
                                f'{found}', p.loc.file, p.loc.line, p.loc.col)


def hops(agg: ast.Aggregate) -> int:
    return next((int(o.value) for o in agg.options if o.key == "hops"), 1)


class Aggregator:
    """Completes an instance's columns with its aggregates' columns."""

    def __init__(self, spec: ast.Spec, obs: ObservationCompiler):
        self.obs = obs
        self.aggregates = spec_aggregates(spec)
        self.documents = needs_documents(spec)
        self._inner = {aggregate_key(a): obs.compile(a.arg) for a in self.aggregates}

    def __bool__(self) -> bool:
        return bool(self.aggregates)

    def complete(self, cols: dict[str, list], bounds: list[int], edges: list | None) -> None:
        """Add each aggregate's ``AggregateColumn`` to ``cols``, the columns
        of an instance of sentences ``bounds`` (a graph: one, with its
        ``edges``); those already there are kept."""
        for agg in self.aggregates:
            key = aggregate_key(agg)
            if key not in cols:
                cols[key] = self.column(agg, cols, bounds, edges)

    def batches(self, batches: Iterable[list[Sentence]]) -> Iterable[list[Sentence]]:
        """``batches`` of sentences, cut at documents' ends when an
        aggregate reads a document (``whole_documents``)."""
        return whole_documents(batches) if self.documents else batches

    def complete_sentences(self, cols: list[dict[str, list]], sentences: Sequence[Sentence]
                           ) -> None:
        """``complete`` on sentences read one by one: a document's sentences
        (consecutive, as ``whole_documents`` keeps them) are joined to
        compute its mentions' aggregates, which each sentence keeps its part of."""
        if not self.aggregates:
            return
        start = 0
        for stop in _group_ends(sentences, self.documents):
            if stop - start == 1:
                self.complete(cols[start], [0, len(sentences[start].rows)], None)
            else:
                group = cols[start:stop]
                bounds = np.cumsum([0] + [len(s.rows) for s in sentences[start:stop]]).tolist()
                joined = {k: [x for c in group for x in c[k]] for k in group[0]}
                self.complete(joined, bounds, None)
                for c, a, b in zip(group, bounds, bounds[1:]):
                    for agg in self.aggregates:
                        key = aggregate_key(agg)
                        c[key] = joined[key][a:b]
            start = stop

    def column(self, agg: ast.Aggregate, cols: dict[str, list], bounds: list[int],
               edges: list | None) -> AggregateColumn:
        """One aggregate on one instance."""
        x, names = self._items(agg, cols, bounds)
        links = links_matrix(agg, cols, bounds, edges, self.obs)
        reach = _reach(links, hops(agg), agg)
        y = combine(agg.func, links, reach, x, hops(agg))
        tag = aggregate_tag(agg)
        return AggregateColumn(y.indptr.astype(np.int64), y.indices, y.data,
                               [(tag.format(nm), tx) for nm, tx in names],
                               np.diff(reach.indptr).astype(np.int64))

    def _items(self, agg: ast.Aggregate, cols: dict[str, list], bounds: list[int]
               ) -> tuple[sp.csr_matrix, list[tuple[str, str | None]]]:
        """X: the items of the aggregate's expression at every position
        (read within each sentence), one column per distinct item."""
        inner = self._inner[aggregate_key(agg)]
        ids: dict[str, int] = {}
        names: list[tuple[str, str | None]] = []
        rows, idx, val = [], [], []
        for a, b in zip(bounds, bounds[1:]):
            part = cols if (a, b) == (0, bounds[-1]) else {k: v[a:b] for k, v in cols.items()}
            for p, items in enumerate(inner(part, b - a, None), start=a):
                for item in items:
                    key = attribute_key(item)
                    k = ids.get(key)
                    if k is None:
                        k = ids[key] = len(names)
                        names.append((item[0], item[1]))
                    rows.append(p)
                    idx.append(k)
                    val.append(item[2])
        x = sp.csr_matrix((np.array(val, dtype=np.float64), (np.array(rows, dtype=np.int64),
                                                              np.array(idx, dtype=np.int64))),
                          shape=(bounds[-1], len(names)))
        return x, names


def combine(func: str, a: sp.csr_matrix, reach: sp.csr_matrix, x: sp.csr_matrix, k: int
            ) -> sp.csr_matrix:
    """The aggregate ``func`` of the items ``x`` over the links ``a``
    (0/1, no self-links), ``k`` hops (the module's docstring says which;
    ``reach`` is ``_reach(a, k, ...)``)."""
    if func == "norm":
        a_hat = a + sp.identity(a.shape[0], format="csr")
        scale = sp.diags(1.0 / np.sqrt(np.asarray(a_hat.sum(axis=1)).ravel()))
        s = (scale @ a_hat @ scale).tocsr()
        y = x
        for _ in range(k):
            y = s @ y
        return _tidy(y)
    present = x.copy()
    present.data[:] = 1.0
    if func in ("any", "count", "most"):
        y = _tidy(reach @ present)
        if func == "any":
            y.data[:] = 1.0
        return _majority(y) if func == "most" else y
    y = reach @ x
    if func == "mean":
        n = np.asarray(reach.sum(axis=1)).ravel()
        y = sp.diags(np.divide(1.0, n, out=np.zeros_like(n), where=n > 0)) @ y
    return _tidy(y)


def _reach(a: sp.csr_matrix, k: int, agg: ast.Aggregate) -> sp.csr_matrix:
    """0/1: the positions within ``k`` links of each, itself left out;
    refused (at the aggregate) past ``MAX_LINKS`` pairs."""
    reach, step = a, a
    for hop in range(2, k + 1):
        step = (step @ a).tocsr()
        step.data[:] = 1.0
        reach = reach + step
        if reach.nnz > MAX_LINKS:
            raise SpecError(f"{agg.func}(...) with hops = {k} links more than {MAX_LINKS:,} "
                            f"pairs of positions of one instance by hop {hop} (its "
                            f"{a.shape[0]:,} positions reach {reach.nnz / a.shape[0]:,.0f} "
                            f"each); lower hops or follow fewer links",
                            agg.loc.file, agg.loc.line, agg.loc.col)
    reach = reach.tolil()
    reach.setdiag(0)
    reach = reach.tocsr()
    reach.eliminate_zeros()
    reach.data[:] = 1.0
    return reach


def _majority(counts: sp.csr_matrix) -> sp.csr_matrix:
    """1 at each row's largest counts (ties: all of them)."""
    lengths = np.diff(counts.indptr)
    top = np.zeros(len(lengths))
    full = lengths > 0
    if full.any():
        top[full] = np.maximum.reduceat(counts.data, counts.indptr[:-1][full])
    keep = counts.data == np.repeat(top, lengths)
    row = np.repeat(np.arange(len(lengths)), lengths)[keep]
    return sp.csr_matrix((np.ones(int(keep.sum())), (row, counts.indices[keep])),
                         shape=counts.shape)


def _tidy(y: sp.spmatrix) -> sp.csr_matrix:
    """CSR with sorted item ids and no explicit zeros."""
    y = sp.csr_matrix(y)
    y.eliminate_zeros()
    y.sort_indices()
    return y


def _group_ends(sentences: Sequence[Sentence], documents: bool) -> Iterator[int]:
    """The end of each run of sentences computed together: a document's
    (consecutive sentences of one document index) when ``documents``,
    else each sentence alone."""
    for i in range(1, len(sentences) + 1):
        if i == len(sentences) or not documents or _doc(sentences[i]) != _doc(sentences[i - 1]):
            yield i


def _doc(sent: Sentence) -> int:
    """The document of a sentence: consecutive sentences of one document
    index form a document, as ``fgl.compile.unrolling.group_instances`` groups them."""
    return sent.doc


def whole_documents(batches: Iterable[list[Sentence]]) -> Iterator[list[Sentence]]:
    """The batches, each ending at the end of a document: the trailing
    sentences of a document that goes on into the next batch move there."""
    carry: list[Sentence] = []
    for batch in batches:
        batch = carry + batch
        cut = len(batch)
        while cut > 0 and _doc(batch[cut - 1]) == _doc(batch[-1]):
            cut -= 1
        if cut == 0:        # one document so far: wait for its end
            carry = batch
            continue
        yield batch[:cut]
        carry = batch[cut:]
    if carry:
        yield carry
