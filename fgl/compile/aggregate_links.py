"""Which positions an aggregate reads for each position: its links, as a 0/1 matrix.

``AGG(EXPR over LINKS)`` reads, at a node a, the nodes b its links select:
in a graph the edges of a type from a (``edge(a, b, "cites")``: the papers
a cites) or to a (``edge(b, a, "cites")``: the papers citing a), further
narrowed by the other predicates of the alternative (``and title[a] !=
title[b]``); in a sequence a token i's other mentions j, as a skip template
selects its pairs (``word[i] == word[j]``; Krishnan & Manning 2006 §3:
the other occurrences of a token in its document), in either order — the
pairs i < j and, with the predicates' i and j swapped, those j < i — within
the sentence or the document.  Alternatives joined by ``or`` add their
links.  A position is never linked to itself.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from fgl.compile.pairs import holds, linked_pairs
from fgl.features.observations import ObservationCompiler
from fgl.lang import ast

_SWAP = {"i": "j", "j": "i"}


def links_matrix(agg: ast.Aggregate, cols: dict[str, list], bounds: list[int],
                 edges: list | None, obs: ObservationCompiler) -> sp.csr_matrix:
    """A[p, q] = 1 when position (node) p reads q: the union of the
    aggregate's alternatives, on an instance of sentences ``bounds`` (one
    for a graph, whose ``edges`` are (source, target, type))."""
    n = bounds[-1]
    rows: list[np.ndarray] = []
    cols_: list[np.ndarray] = []
    for link in agg.links:
        if edges is not None:
            p, q = _edge_links(link, cols, n, edges, obs)
        else:
            p, q = _mention_links(link, agg.within or "sentence", cols, bounds, obs)
        rows.append(p)
        cols_.append(q)
    p, q = np.concatenate(rows), np.concatenate(cols_)
    keep = p != q
    a = sp.csr_matrix((np.ones(int(keep.sum())), (p[keep], q[keep])), shape=(n, n))
    a.data[:] = 1.0     # (duplicates summed: back to 0/1)
    return a


def _edge_links(link: list[ast.Predicate], cols: dict[str, list], n: int, edges: list,
                obs: ObservationCompiler) -> tuple[np.ndarray, np.ndarray]:
    """(node, linked node) pairs of one alternative over a graph's edges:
    every edge predicate holds (a's edges of that type, out or in), and every
    other predicate, read with a the node and b the linked one."""
    pairs: set[tuple[int, int]] | None = None
    for pred in link:
        if pred.kind != "edge":
            continue
        out = pred.ends == ("a", "b")
        found = {(s, t) if out else (t, s) for s, t, kind in edges if kind == pred.value}
        pairs = found if pairs is None else pairs & found
    kept = sorted(pairs or ())
    for pred in link:
        if pred.kind != "edge" and kept:
            kept = [pq for pq, ok in zip(kept, holds(pred, cols, n, kept, obs)) if ok]
    return (np.array([p for p, _ in kept], dtype=np.int64),
            np.array([q for _, q in kept], dtype=np.int64))


def _mention_links(link: list[ast.Predicate], within: str, cols: dict[str, list],
                   bounds: list[int], obs: ObservationCompiler) -> tuple[np.ndarray, np.ndarray]:
    """(token, other mention) pairs of one alternative: the pairs a skip
    template with these predicates links, in both orders, within each
    sentence or the whole instance (a document)."""
    scopes = list(zip(bounds, bounds[1:])) if within == "sentence" else [(0, bounds[-1])]
    forward = _pair_template(link)
    backward = _pair_template([_swapped_predicate(p) for p in link])
    p_all, q_all = [], []
    for a, b in scopes:
        part = cols if (a, b) == (0, bounds[-1]) else {k: v[a:b] for k, v in cols.items()}
        for tpl, first_is_token in ((forward, True), (backward, False)):
            pairs = linked_pairs(tpl, part, b - a, None, obs)
            if not pairs:
                continue
            ij = np.array(pairs, dtype=np.int64) + a
            p_all.append(ij[:, 0] if first_is_token else ij[:, 1])
            q_all.append(ij[:, 1] if first_is_token else ij[:, 0])
    if not p_all:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(p_all), np.concatenate(q_all)


def _pair_template(where: list[ast.Predicate]) -> ast.Template:
    """The pair template (y[i], y[j]) where ``where``, whose pairs are the links."""
    loc = where[0].loc
    ends = [ast.LabelRef("y", 0, 0, loc, "i"), ast.LabelRef("y", 0, 0, loc, "j")]
    return ast.Template("", ends, None, [], [], loc, where, "document")


def _swapped_predicate(p: ast.Predicate) -> ast.Predicate:
    """``p`` with its ends i and j swapped: ``regex(word[i], ...)`` tests j."""
    return dataclasses.replace(p, left=_swapped(p.left), right=_swapped(p.right))


def _swapped(e: ast.ObsExpr | None) -> ast.ObsExpr | None:
    """An expression with its bases i and j swapped (names are read as written)."""
    if isinstance(e, ast.ColumnRef):
        return dataclasses.replace(e, lo_base=_SWAP.get(e.lo_base, e.lo_base),
                                   hi_base=_SWAP.get(e.hi_base, e.hi_base))
    if isinstance(e, ast.Call):
        return dataclasses.replace(e, arg=_swapped(e.arg))
    if isinstance(e, (ast.Conj, ast.Disj)):
        return dataclasses.replace(e, parts=[_swapped(x) for x in e.parts])
    return e
