"""Span features from token-level tables, for segment models (Cuong et al. 2014 §2).

The general evaluators (``fgl.features.observations``) evaluate every
observation on every candidate segment (u, v) separately: built-ins run once
per span and a bag ``word[u..v]`` is rebuilt from its tokens for each span.
Here an observation is evaluated once per token and its span attributes are
assembled from the token tables:

* a text column at offsets from u or from v (``word[u]``, ``word[v+1]``,
  ``word[u-1..u+1]``) is a table over tokens, read at u or v;
* a bag between u and v (``word[u..v]``, ``word[u+1..v-1]``) grows token by
  token as v grows for a fixed u: O(L) count updates per start (and a copy
  of the counts per span, which is the output);
* ``lower``/``prefix``/``suffix``/``shape``/``longshape``, ``class``,
  ``tokens``, ``regex`` and ``lexicon`` run once per token under a reference
  (per position or span over anything else);
* ``bias``, ``bos``, ``eos`` and ``length``;
* conjunctions and unions of these; parts read at the same end of the span
  combine once per token, others per span.

Each observation's items are kept summed by attribute key, in first-seen
order: a conjunction of summed parts is the summed cross product (values
multiply), so the keys, values and order are exactly the general path's.
Anything else — number and vector columns, ``value``, ``count``,
``either``, ``pad``, ``zip``, ranges not running from u to v, names holding
``=`` — makes ``template_span_streams`` return None and the template uses
the general path.
"""
from __future__ import annotations

import itertools
import re
from typing import TYPE_CHECKING, Callable, NamedTuple

from fgl.features.builtins import TEXT_FUNCTIONS, call_tag, ref_text, regex_classes, text_function
from fgl.lang import ast

if TYPE_CHECKING:
    from fgl.features.observations import ObservationCompiler

Row = dict[str, float]                      # attribute key -> summed value, never mutated
Split = dict[str, tuple[str, "str | None"]]  # attribute key -> (name, text)
Stage = Callable[[str, str, float], list[tuple[str, "str | None", float]]]
_EMPTY: Row = {}
_U, _V, _SPAN = "u", "v", "span"           # a table per token read at u, at v, or per span
_BASE = {"u": _U, "t": _U, "i": _U, "a": _U, "v": _V, "j": _V, "b": _V}


class _Sentence:
    """One sentence's columns, length, span limit and key table."""

    def __init__(self, cols: dict[str, list], T: int, L: int):
        self.cols, self.T, self.L = cols, T, L
        self.widths = [min(L, T - u) for u in range(T)]   # spans starting at u
        self.split: Split = {}
        self.joined: dict[tuple[str, ...], str] = {}

    def key(self, name: str, text: str | None) -> str:
        k = name if text is None else f"{name}={text}"
        self.split[k] = (name, text)
        return k

    def spans(self, anchor: str, table: list[Row]) -> list[Row]:
        """A table as one row per span (u, d), u then d ascending."""
        if anchor == _SPAN:
            return table
        out: list[Row] = []
        for u, m in enumerate(self.widths):
            if anchor == _U:
                out.extend([table[u]] * m)
            else:
                out.extend(table[u:u + m])
        return out


Node = Callable[[_Sentence], tuple[str, list[Row]]]


class SpanStreams(NamedTuple):
    """A template's nodes, one per observation; ``disjoint``: no two
    observations can give the same attribute key."""

    nodes: list[Node]
    disjoint: bool


def _summed(items, sent: _Sentence) -> Row:
    row: Row = {}
    for name, text, v in items:
        k = sent.key(name, text)
        row[k] = row.get(k, 0.0) + v
    return row


def _union(rows: list[Row]) -> Row:
    nonempty = [r for r in rows if r]
    if len(nonempty) <= 1:
        return nonempty[0] if nonempty else _EMPTY
    out = dict(nonempty[0])
    for r in nonempty[1:]:
        for k, v in r.items():
            out[k] = out.get(k, 0.0) + v
    return out


def _product(rows: list[Row], sent: _Sentence) -> Row:
    """The summed cross product of the parts' rows, keyed as ``_conjoin``
    in ``fgl.features.observations`` keys it."""
    if not all(rows):
        return _EMPTY
    out: Row = {}
    split, joined = sent.split, sent.joined
    for combo in itertools.product(*(r.items() for r in rows)):
        keys = tuple([k for k, _ in combo])
        j = joined.get(keys)
        if j is None:
            parts = [split[k] for k in keys]
            texts = [tx for _, tx in parts]
            if None in texts:
                text = None if texts.count(None) == len(texts) else \
                    "|".join(tx if tx is not None else "" for tx in texts)
            else:
                text = "|".join(texts)
            j = joined[keys] = sent.key("&".join(nm for nm, _ in parts), text)
        value = 1.0
        for _, v in combo:
            value *= v
        out[j] = out.get(j, 0.0) + value
    return out


class _Ref:
    """A text column range under text stages, not yet read: points at
    offsets from u or v, or a bag from u + lo to v + hi."""

    def __init__(self, ref: ast.ColumnRef, stages: list[Stage]):
        self.ref, self.stages = ref, stages

    def token_rows(self, sent: _Sentence, label: str) -> list[Row]:
        """Per token, the summed items of the stages on its text, named ``label``."""
        out = []
        for x in sent.cols[self.ref.column]:
            items = [(label, x, 1.0)]
            for stage in self.stages:
                items = [o for nm, tx, v in items for o in stage(nm, tx or "", v)]
            out.append(_summed(items, sent) if items else _EMPTY)
        return out

    def node(self) -> Node | None:
        r = self.ref
        lo, hi = _BASE.get(r.lo_base), _BASE.get(r.hi_base)
        if lo is None or hi is None:
            return None
        if r.lo_base == r.hi_base:
            return _union_node([self._point(lo, f"{r.column}[{ref_text(r.lo_base, off)}]", off)
                                for off in range(r.lo, r.hi + 1)])
        if (lo, hi) != (_U, _V):
            return None
        label = f"{r.column}[{ref_text(r.lo_base, r.lo)}..{ref_text(r.hi_base, r.hi)}]"
        return self._bag(label, r.lo, r.hi)

    def _point(self, anchor: str, label: str, off: int) -> Node:
        def node(sent: _Sentence) -> tuple[str, list[Row]]:
            T = sent.T
            rows = self.token_rows(sent, label)
            lo = min(T, max(0, -off))
            hi = max(lo, min(T, T - off))
            return anchor, [_EMPTY] * lo + rows[lo + off:hi + off] + [_EMPTY] * (T - hi)
        return node

    def _bag(self, label: str, lo: int, hi: int) -> Node:
        def node(sent: _Sentence) -> tuple[str, list[Row]]:
            T = sent.T
            rows = self.token_rows(sent, label)
            out: list[Row] = []
            for u, m in enumerate(sent.widths):
                counts: Row = {}
                snap, i = _EMPTY, max(0, u + lo)
                for v in range(u, u + m):
                    stop = min(T, v + hi + 1)
                    if i < stop:
                        for i in range(i, stop):
                            for k, x in rows[i].items():
                                counts[k] = counts.get(k, 0.0) + x
                        i = stop
                        snap = dict(counts)
                    out.append(snap)
            return _SPAN, out
        return node


def _union_node(parts: list[Node]) -> Node:
    """``a | b`` (and a reference at several offsets): items added up."""
    if len(parts) == 1:
        return parts[0]
    return _combine(parts, False)


def _combine(parts: list[Node], product: bool) -> Node:
    """A conjunction (``product``) or union of parts: joined once per token
    when all are read at the same end of the span, else once per span."""

    def node(sent: _Sentence) -> tuple[str, list[Row]]:
        tables = [p(sent) for p in parts]
        anchors = {a for a, _ in tables}
        anchor = anchors.pop() if len(anchors) == 1 else _SPAN
        cols = [t if anchor != _SPAN else sent.spans(a, t) for a, t in tables]
        if product:
            return anchor, [_product(list(rows), sent) for rows in zip(*cols)]
        return anchor, [_union(list(rows)) for rows in zip(*cols)]
    return node


def _zero_arg(name: str) -> Node | None:
    def node(sent: _Sentence) -> tuple[str, list[Row]]:
        T = sent.T
        if name == "length":
            by_d = [{sent.key("length", str(d)): 1.0} for d in range(1, sent.L + 1)]
            return _SPAN, [by_d[d] for m in sent.widths for d in range(m)]
        row = {sent.key(name, None): 1.0}
        if name == "bias":
            return _U, [row] * T
        if name == "bos":
            return _U, [row] + [_EMPTY] * (T - 1)
        return _V, [_EMPTY] * (T - 1) + [row]
    return node if name in ("length", "bias", "bos", "eos") else None


def _mapped(inner: Node, stage: Stage) -> Node:
    """A stage over anything but a reference: applied to every summed item
    (a value carries over to each item the stage makes)."""
    def node(sent: _Sentence) -> tuple[str, list[Row]]:
        anchor, table = inner(sent)
        split, memo = sent.split, {}   # rows repeat in a table: map each once
        out = []
        for row in table:
            got = memo.get(id(row))
            if got is None:
                got = memo[id(row)] = _summed([o for k, v in row.items()
                                               for o in stage(split[k][0], split[k][1] or "", v)],
                                              sent)
            out.append(got)
        return anchor, out
    return node


class SpanStreamCompiler:
    """Span nodes of observation expressions (None: not covered)."""

    def __init__(self, oc: ObservationCompiler):
        self.oc = oc

    def node(self, expr: ast.ObsExpr) -> Node | None:
        x = self._compile(expr)
        return x.node() if isinstance(x, _Ref) else x

    def _compile(self, expr: ast.ObsExpr) -> _Ref | Node | None:
        if isinstance(expr, ast.ColumnRef):
            return _Ref(expr, []) if self.oc.kinds[expr.column] == "text" else None
        if isinstance(expr, ast.NameRef):
            if expr.name in self.oc.named:
                return self._compile(self.oc.named[expr.name].expr)
            return _zero_arg(expr.name)
        if isinstance(expr, (ast.Conj, ast.Disj)):
            parts = [self.node(p) for p in expr.parts]
            if any(p is None for p in parts):
                return None
            return _combine(parts, True) if isinstance(expr, ast.Conj) else _union_node(parts)
        if isinstance(expr, ast.Call):
            stage = self._stage(expr)
            inner = self._compile(expr.arg) if stage is not None else None
            if inner is None:
                return None
            if isinstance(inner, _Ref):
                return _Ref(inner.ref, inner.stages + [stage])
            return _mapped(inner, stage)
        return None

    def names(self, expr: ast.ObsExpr) -> set[str]:
        """The attribute names a covered expression can give."""
        if isinstance(expr, ast.ColumnRef):
            if expr.lo_base != expr.hi_base:
                return {f"{expr.column}[{ref_text(expr.lo_base, expr.lo)}.."
                        f"{ref_text(expr.hi_base, expr.hi)}]"}
            return {f"{expr.column}[{ref_text(expr.lo_base, off)}]"
                    for off in range(expr.lo, expr.hi + 1)}
        if isinstance(expr, ast.NameRef):
            named = self.oc.named.get(expr.name)
            return self.names(named.expr) if named else {expr.name}
        if isinstance(expr, ast.Conj):
            return {"&".join(c) for c in itertools.product(*(self.names(p) for p in expr.parts))}
        if isinstance(expr, ast.Disj):
            return set().union(*(self.names(p) for p in expr.parts))
        return {call_tag(expr).format(n) for n in self.names(expr.arg)}

    def _stage(self, call: ast.Call) -> Stage | None:
        """The per-item rewrite of a call, as ``ObservationCompiler._call``
        makes it."""
        tag = call_tag(call)
        if call.func == "tokens":
            return lambda nm, tx, v: [(tag.format(nm), w, v) for w in tx.split()]
        if call.func in TEXT_FUNCTIONS:
            fn = text_function(call)
            return lambda nm, tx, v: [(tag.format(nm), fn(tx), v)]
        if call.func == "class":
            return lambda nm, tx, v: [(tag.format(nm), c, v) for c in regex_classes(tx)]
        if call.func == "regex":
            rx = re.compile(call.params[0])
            return lambda nm, tx, v: [(tag.format(nm), None, v)] if rx.search(tx) else []
        if call.func == "lexicon":
            words = self.oc._lexicon(call)
            return lambda nm, tx, v: [(tag.format(nm), None, v)] if tx in words else []
        return None


def template_span_streams(oc: ObservationCompiler, observations: list[ast.ObsExpr]
                          ) -> SpanStreams | None:
    """A template's span nodes, one per observation, and whether their
    attribute names are disjoint; None when an observation needs the general
    path, or a name holds ``=`` (two names' keys could be equal: a key
    would not tell its name and text apart)."""
    sc = SpanStreamCompiler(oc)
    nodes = [sc.node(e) for e in observations]
    if any(n is None for n in nodes):
        return None
    names = [sc.names(e) for e in observations]
    if any("=" in n for ns in names for n in ns):
        return None
    return SpanStreams(nodes, sum(map(len, names)) == len(set().union(*names)))


def evaluate_span_streams(streams: SpanStreams, cols: dict[str, list], T: int, L: int
                          ) -> list[list[tuple[str, float]]]:
    """Per candidate segment (u, d), u then d ascending, the (attribute key,
    value) pairs of the nodes: summed within an observation, the first of
    equal keys across observations (as ``TemplateAttributes.evaluate``)."""
    sent = _Sentence(cols, T, L)
    tables = [sent.spans(*n(sent)) for n in streams.nodes]
    if len(tables) == 1:
        return [list(row.items()) for row in tables[0]]
    if streams.disjoint:
        return [[kv for row in rows for kv in row.items()] for rows in zip(*tables)]
    out = []
    for rows in zip(*tables):
        merged = dict(rows[0])
        for row in rows[1:]:
            for k, v in row.items():
                merged.setdefault(k, v)
        out.append(list(merged.items()))
    return out
