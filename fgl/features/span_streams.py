"""Span features from token-level tables, for segment models (Cuong et al. 2014 §2).

The general evaluators (``fgl.features.observations``) evaluate every
observation on every candidate segment (u, v) separately: built-ins run once
per span and a bag ``word[u..v]`` is rebuilt from its tokens for each span.
Here an observation is evaluated once per token, its attribute keys are
interned to integer ids (``fgl.features.span_arrays.KeyTable``) and its span
attributes are assembled from the token tables as arrays:

* a text column at offsets from u or from v (``word[u]``, ``word[v+1]``,
  ``word[u-1..u+1]``, ``pad(word[u-2])``) is a table over tokens, read at u
  or v;
* a bag between u and v (``word[u..v]``, ``pad(word[u-4..v-4])``) grows token
  by token as v grows for a fixed u (a compiled loop, no Python per span);
* ``zip(a & b ...)`` of such bags is a bag over a table of aligned tuples;
* ``count`` of a column reference or a ``zip``: cumulative item counts;
* ``lower``/``prefix``/``suffix``/``shape``/``longshape``, ``class``,
  ``tokens``, ``regex`` and ``lexicon`` run once per distinct text under a
  reference (once per distinct attribute over anything else);
* ``bias``, ``bos``, ``eos`` and ``length``;
* conjunctions and unions of these; parts read at the same end of the span
  combine once per token, others per span.

Each observation's items are kept summed by attribute key, in first-seen
order: a conjunction of summed parts is the summed cross product (values
multiply), so the keys, values and order are exactly the general path's.
Anything else — number and vector columns, ``value``, ``either``, ``count``
of other expressions, ranges not running from u to v, ``zip`` of ranges at
fixed offsets (``word[u-1..u]``), names holding ``=`` —
makes ``template_span_streams`` return None and the template uses the
general path.
"""
from __future__ import annotations

import itertools
from typing import Callable, NamedTuple

import numpy as np

from fgl.features.builtins import (
    END_MARKER,
    START_MARKER,
    TEXT_FUNCTIONS,
    pad_reach,
    regex_classes,
    text_function,
)
from fgl.features.key_table import KeyTable
from fgl.features.span_arrays import (
    Rows,
    bag,
    concat,
    cross,
    gather,
    item_positions,
    merged,
    split,
    tuple_codes,
)
from fgl.features.spec_context import SpecContext
from fgl.lang import ast
from fgl.lang.builtins import call_tag, expr_text, ref_text
from fgl.lang.regexes import compile_regex

Stage = Callable[[str, str, float], list[tuple[str, "str | None", float]]]
_U, _V, _SPAN = "u", "v", "span"           # a table per token read at u, at v, or per span
_BASE = {"u": _U, "t": _U, "i": _U, "a": _U, "v": _V, "j": _V, "b": _V}
_MARKERS = (START_MARKER, END_MARKER)


class _Sentence:
    """A batch of sentences read as one: their columns end to end (``T``
    tokens in all), each token's sentence start, index in its sentence and
    sentence length, the span limit, the candidate spans (sentence by
    sentence, u then d ascending: starts ``su``, lengths ``sd``, ends ``sv``,
    as token indices) and the key table."""

    def __init__(self, cols: dict[str, list], lengths: list[int], L: int, keys: KeyTable):
        self.cols, self.L, self.keys = cols, L, keys
        self.lengths = np.array(lengths, dtype=np.int64)
        self.T = int(self.lengths.sum())
        starts = np.cumsum(self.lengths) - self.lengths
        self.sent = np.repeat(np.arange(len(lengths), dtype=np.int64), self.lengths)
        self.first = starts                                   # per sentence
        self.local = np.arange(self.T, dtype=np.int64) - starts[self.sent]
        self.size = self.lengths[self.sent]                   # per token
        widths = np.minimum(L, self.size - self.local)
        self.su = np.repeat(np.arange(self.T, dtype=np.int64), widths)
        before = np.repeat(np.cumsum(widths) - widths, widths)
        self.sd = np.arange(len(self.su), dtype=np.int64) - before + 1
        self.sv = self.su + self.sd - 1
        self.span_sent = self.sent[self.su]
        self.span_counts = np.bincount(self.span_sent, minlength=len(lengths))
        self.tables: dict[tuple, tuple[Rows, np.ndarray]] = {}   # shared position tables
        self.texts: dict[str, tuple[np.ndarray, list[str]]] = {}

    def text_ids(self, column: str) -> tuple[np.ndarray, list[str]]:
        """Each token's index among the column's distinct texts, and those texts."""
        got = self.texts.get(column)
        if got is None:
            index: dict[str, int] = {}
            ids = np.fromiter((index.setdefault(x, len(index)) for x in self.cols[column]),
                              dtype=np.int64, count=self.T)
            got = self.texts[column] = (ids, list(index))
        return got

    def windows(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Positions lo .. T_s - 1 + hi of every sentence s end to end: their
        sentence and index in it; and each span's window u + lo .. v + hi in
        them (first, stop)."""
        n = np.maximum(self.lengths + hi - lo, 0)
        base = np.cumsum(n) - n
        sent = np.repeat(np.arange(len(n), dtype=np.int64), n)
        local = lo + np.arange(int(n.sum()), dtype=np.int64) - base[sent]
        size, at = n[self.span_sent], base[self.span_sent]
        u, v = self.local[self.su], self.local[self.sv]
        first = np.minimum(u, size)
        stop = np.clip(v + hi + 1 - lo, first, size)
        return sent, local, at + first, at + stop

    def spans(self, anchor: str, rows: Rows) -> Rows:
        """A table as one row per span."""
        if anchor == _SPAN:
            return rows
        return gather(rows, self.su if anchor == _U else self.sv)


Node = Callable[[_Sentence], tuple[str, Rows]]


class SpanStreams(NamedTuple):
    """A template's nodes, one per observation; ``disjoint``: no two
    observations can give the same attribute key."""

    nodes: list[Node]
    disjoint: bool


def _summed_ids(items, keys: KeyTable) -> tuple[list[int], list[float]]:
    """Items summed by key in first-seen order, as (ids, values)."""
    row: dict[int, float] = {}
    ids = keys.ids([name if text is None else f"{name}={text}" for name, text, _ in items])
    for k, (_, _, v) in zip(ids.tolist(), items):
        row[k] = row.get(k, 0.0) + v
    return list(row), list(row.values())


def _joined(parts: list[tuple[str, str | None]]) -> tuple[str, str | None]:
    """The (name, text) of a conjunction of items, as ``_conjoin`` in
    ``fgl.features.observations`` makes it."""
    texts = [tx for _, tx in parts]
    if None in texts:
        text = None if texts.count(None) == len(texts) else \
            "|".join(tx if tx is not None else "" for tx in texts)
    else:
        text = "|".join(texts)
    return "&".join(nm for nm, _ in parts), text


class _PairMemo:
    """Conjunction ids memoised by their parts' ids: pairs as one int64 code
    in sorted arrays (no Python object per entry: the memos of a long
    compile would otherwise hold tens of MB), longer tuples in a dict."""

    def __init__(self) -> None:
        self.codes = np.zeros(0, dtype=np.int64)
        self.ids = np.zeros(0, dtype=np.int64)
        self.tuples: dict[tuple[int, ...], int] = {}

    def pairs(self, codes: np.ndarray, make: Callable[[int], int]) -> np.ndarray:
        """The ids of distinct pair ``codes``, ``make(code)`` for those not
        met before (in their order)."""
        ids = np.full(len(codes), -1, dtype=np.int64)
        if len(self.codes):
            at = np.minimum(np.searchsorted(self.codes, codes), len(self.codes) - 1)
            found = self.codes[at] == codes
            ids[found] = self.ids[at[found]]
        new = np.flatnonzero(ids < 0)
        if len(new):
            ids[new] = [make(c) for c in codes[new].tolist()]
            codes = np.concatenate([self.codes, codes[new]])
            order = np.argsort(codes, kind="stable")
            self.codes, self.ids = codes[order], np.concatenate([self.ids, ids[new]])[order]
        return ids


def _combined_keys(columns: list[np.ndarray], memo: _PairMemo, keys: KeyTable) -> np.ndarray:
    """The id of the conjunction of each row of key ids read side by side."""
    if len(columns[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    first, code = tuple_codes(columns)

    def joined(combo: tuple[int, ...]) -> int:
        return keys.id(*_joined([keys.parts(k) for k in combo]))
    if len(columns) == 2:   # a pair as one int
        ids = memo.pairs(columns[0][first] * (1 << 32) + columns[1][first],
                         lambda c: joined(divmod(c, 1 << 32)))
        return ids[code]
    ids = np.empty(len(first), dtype=np.int64)
    for c, combo in enumerate(zip(*(col[first].tolist() for col in columns))):
        j = memo.tuples.get(combo)
        ids[c] = memo.tuples[combo] = joined(combo) if j is None else j
    return ids[code]


class _Ref:
    """A text column range under text stages, not yet read: points at
    offsets from u or v, or a bag from u + lo to v + hi.  ``slot_stages``
    (text functions under ``pad``) leave the start and end markers' text
    alone; ``pad`` gives a marker where a position is outside the sequence by
    at most ``pad`` (0: never)."""

    def __init__(self, ref: ast.ColumnRef, stages: list[tuple[str, Stage]],
                 slot_stages: list[tuple[str, Stage]] = (), pad: int = 0):
        self.ref, self.stages, self.slot_stages, self.pad = ref, stages, list(slot_stages), pad
        # per label, each text's key id (one item of value 1) or (ids, values, items)
        self.memo: dict[str, dict[str | None, int | tuple[list[int], list[float], int]]] = {}
        r = ref
        self.lo_anchor, self.hi_anchor = _BASE.get(r.lo_base), _BASE.get(r.hi_base)
        self.point = r.lo_base == r.hi_base
        self.label = (None if self.point else
                      f"{r.column}[{ref_text(r.lo_base, r.lo)}..{ref_text(r.hi_base, r.hi)}]")

    def staged(self, tag: str, stage: Stage) -> "_Ref":
        return _Ref(self.ref, self.stages + [(tag, stage)], self.slot_stages, self.pad)

    @property
    def covered(self) -> bool:
        if self.lo_anchor is None or self.hi_anchor is None:
            return False
        return self.point or (self.lo_anchor, self.hi_anchor) == (_U, _V)

    def _items(self, label: str, text: str) -> tuple[list, int]:
        items = [(label, text, 1.0)]
        for _, stage in self.slot_stages + self.stages:
            items = [o for nm, tx, v in items for o in stage(nm, tx or "", v)]
        return items, len(items)

    def _lexicon(self, sent: _Sentence, label: str) -> tuple[Rows, np.ndarray]:
        """Rows (and items before summing) of the column's distinct texts,
        then of the start and the end marker."""
        memo = self.memo.setdefault(label, {})
        _, texts = sent.text_ids(self.ref.column)
        ids: list[int] = []
        vals: list[float] = []
        lens, raw = [], []
        for text in texts + [START_MARKER, END_MARKER]:
            row = memo.get(text)
            if row is None:
                items, n = self._items(label, text)
                k, v = _summed_ids(items, sent.keys)
                row = memo[text] = k[0] if n == 1 and v[0] == 1.0 else (k, v, n)
            if type(row) is int:   # (one item of value 1: most texts)
                ids.append(row)
                vals.append(1.0)
                lens.append(1)
                raw.append(1)
                continue
            ids.extend(row[0])
            vals.extend(row[1])
            lens.append(len(row[0]))
            raw.append(row[2])
        ptr = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        return (Rows(ptr, np.array(ids, dtype=np.int64), np.array(vals, dtype=np.float64)),
                np.array(raw, dtype=np.int64))

    def positions(self, sent: _Sentence, label: str, where: tuple, in_sent: np.ndarray,
                  local: np.ndarray) -> tuple[Rows, np.ndarray]:
        """Rows of the positions ``local`` of sentences ``in_sent`` (a marker
        or nothing outside the sentence) and the items each gave before
        summing; ``where`` names the positions (a cache key)."""
        sig = (self.ref.column, label, tuple(t for t, _ in self.slot_stages),
               tuple(t for t, _ in self.stages), self.pad, where)
        got = sent.tables.get(sig)
        if got is not None:
            return got
        lex, lex_raw = self._lexicon(sent, label)
        tok, texts = sent.text_ids(self.ref.column)
        size = sent.lengths[in_sent]
        inside = (local >= 0) & (local < size)
        at = np.where(inside, tok[np.where(inside, sent.first[in_sent] + local, 0)], -1)
        if self.pad:
            far = np.where(local < 0, -local, local - size + 1)
            marker = np.where(local < 0, len(texts), len(texts) + 1)
            at = np.where(inside, at, np.where(far <= self.pad, marker, -1))
        raw = np.where(at >= 0, lex_raw[np.maximum(at, 0)], 0)
        got = sent.tables[sig] = (gather(lex, at), raw)
        return got

    def _point(self, sent: _Sentence, off: int) -> tuple[Rows, np.ndarray]:
        r = self.ref
        return self.positions(sent, f"{r.column}[{ref_text(r.lo_base, off)}]", ("at", off),
                              sent.sent, sent.local + off)

    def _bag(self, sent: _Sentence) -> tuple[Rows, np.ndarray, np.ndarray, np.ndarray]:
        lo, hi = self.ref.lo, self.ref.hi
        in_sent, local, first, stop = sent.windows(lo, hi)
        rows, raw = self.positions(sent, self.label, ("bag", lo, hi), in_sent, local)
        return rows, raw, first, stop

    def __call__(self, sent: _Sentence) -> tuple[str, Rows]:
        r = self.ref
        if not self.point:
            tokens, _, first, stop = self._bag(sent)
            return _SPAN, bag(tokens, first, stop)
        tables = [self._point(sent, off)[0] for off in range(r.lo, r.hi + 1)]
        rows = tables[0] if len(tables) == 1 else merged(concat(tables), True)
        return self.lo_anchor, rows

    def counts(self, sent: _Sentence) -> tuple[str, np.ndarray]:
        """Per token or span, the items before summing (``count``)."""
        r = self.ref
        if not self.point:
            _, raw, first, stop = self._bag(sent)
            cum = np.concatenate([[0], np.cumsum(raw)])
            return _SPAN, cum[stop] - cum[first]
        total = np.zeros(sent.T, dtype=np.int64)
        for off in range(r.lo, r.hi + 1):
            total += self._point(sent, off)[1]
        return self.lo_anchor, total


class _Zip:
    """``zip(a & b ...)`` of bags from u to v: a bag over positions of
    aligned tuples, a tuple only where every part is inside the sequence or
    padded."""

    def __init__(self, parts: list[_Ref]):
        self.parts = parts
        self.memo = _PairMemo()

    def _pairs(self, sent: _Sentence) -> tuple[Rows, np.ndarray, np.ndarray]:
        lo0 = self.parts[0].ref.lo
        m = min(p.ref.hi - p.ref.lo for p in self.parts)
        in_sent, local, first, stop = sent.windows(lo0, lo0 + m)
        ids, ok = [], np.ones(len(local), dtype=bool)
        for p in self.parts:
            shift = p.ref.lo - lo0
            rows, _ = p.positions(sent, p.label, ("zip", lo0, m, shift), in_sent,
                                  local + shift)
            lens = rows.lengths()
            ok &= lens > 0
            col = np.full(len(local), -1, dtype=np.int64)
            col[lens > 0] = rows.key[rows.ptr[:-1][lens > 0]]
            ids.append(col)
        key = _combined_keys([c[ok] for c in ids], self.memo, sent.keys)
        ptr = np.zeros(len(local) + 1, dtype=np.int64)
        np.cumsum(ok, out=ptr[1:])
        return Rows(ptr, key, np.ones(len(key))), first, stop

    def __call__(self, sent: _Sentence) -> tuple[str, Rows]:
        rows, first, last = self._pairs(sent)
        return _SPAN, bag(rows, first, last)

    def counts(self, sent: _Sentence) -> tuple[str, np.ndarray]:
        rows, first, last = self._pairs(sent)
        return _SPAN, rows.ptr[last] - rows.ptr[first]


def _count(inner: _Ref | _Zip, name: str) -> Node:
    """``count(e)``: how many items ``e`` gives, one real value (none when 0)."""
    def node(sent: _Sentence) -> tuple[str, Rows]:
        anchor, n = inner.counts(sent)
        ptr = np.zeros(len(n) + 1, dtype=np.int64)
        np.cumsum(n > 0, out=ptr[1:])
        val = n[n > 0].astype(np.float64)
        return anchor, Rows(ptr, np.full(len(val), sent.keys.id(name, None), dtype=np.int64),
                            val)
    return node


def _union_node(parts: list[Node]) -> Node:
    """``a | b`` (and a reference at several offsets): items added up."""
    if len(parts) == 1:
        return parts[0]
    return _combine(parts, False)


def _combine(parts: list[Node], product: bool) -> Node:
    """A conjunction (``product``) or union of parts: joined once per token
    when all are read at the same end of the span, else once per span."""
    memo = _PairMemo()

    def node(sent: _Sentence) -> tuple[str, Rows]:
        tables = [p(sent) for p in parts]
        anchors = {a for a, _ in tables}
        anchor = anchors.pop() if len(anchors) == 1 else _SPAN
        rows = [t if anchor != _SPAN else sent.spans(a, t) for a, t in tables]
        if not product:
            return anchor, merged(concat(rows), True)
        ptr, idx = cross(rows)
        key = _combined_keys([r.key[i] for r, i in zip(rows, idx)], memo, sent.keys)
        val = np.ones(len(key))
        for r, i in zip(rows, idx):
            val = val * r.val[i]
        return anchor, merged(Rows(ptr, key, val), True)
    return node


def _zero_arg(name: str) -> Node | None:
    def node(sent: _Sentence) -> tuple[str, Rows]:
        keys = sent.keys
        if name == "length":
            by_d = np.array([keys.id("length", str(d)) for d in range(1, sent.L + 1)],
                            dtype=np.int64)
            n = len(sent.sd)
            return _SPAN, Rows(np.arange(n + 1, dtype=np.int64), by_d[sent.sd - 1],
                               np.ones(n))
        k = keys.id(name, None)
        has = (np.ones(sent.T, dtype=bool) if name == "bias" else sent.local == 0
               if name == "bos" else sent.local == sent.size - 1)
        ptr = np.zeros(sent.T + 1, dtype=np.int64)
        np.cumsum(has, out=ptr[1:])
        anchor = _V if name == "eos" else _U
        return anchor, Rows(ptr, np.full(int(ptr[-1]), k, dtype=np.int64), np.ones(int(ptr[-1])))
    return node if name in ("length", "bias", "bos", "eos") else None


def _mapped(inner: Node, stage: Stage) -> Node:
    """A stage over anything but a reference: applied once per distinct
    attribute (a value carries over to each item the stage makes)."""
    memo: dict[int, list[int]] = {}

    def node(sent: _Sentence) -> tuple[str, Rows]:
        anchor, rows = inner(sent)
        keys = sent.keys
        uniq, inv = np.unique(rows.key, return_inverse=True)
        outs = []
        for k in uniq.tolist():
            got = memo.get(k)
            if got is None:
                name, text = keys.parts(k)
                got = memo[k] = [keys.id(nm, tx) for nm, tx, _ in stage(name, text or "", 1.0)]
            outs.append(got)
        n_out = np.array([len(o) for o in outs], dtype=np.int64)
        flat = np.array([k for o in outs for k in o], dtype=np.int64)
        starts = np.cumsum(n_out) - n_out
        inv = inv.reshape(-1)
        per_item = n_out[inv]
        item_ptr, pos = item_positions(starts[inv], per_item)
        return anchor, merged(Rows(item_ptr[rows.ptr], flat[pos], np.repeat(rows.val, per_item)),
                              True)
    return node


class SpanStreamCompiler:
    """Span nodes of observation expressions (None: not covered)."""

    def __init__(self, oc: SpecContext):
        self.oc = oc

    def node(self, expr: ast.ObsExpr) -> Node | None:
        x = self._compile(expr)
        if isinstance(x, _Ref):
            return x if x.covered else None
        return x

    def _compile(self, expr: ast.ObsExpr) -> _Ref | _Zip | Node | None:
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
            return self._call(expr)
        return None

    def _call(self, call: ast.Call) -> _Ref | _Zip | Node | None:
        if call.func == "pad":
            return self._slots(call)
        if call.func == "zip":
            parts = [self._slots(p) for p in call.arg.parts]
            if any(p is None or p.point or not p.covered for p in parts):
                return None
            return _Zip(parts)
        if call.func == "count":
            inner = self._compile(call.arg)
            if isinstance(inner, _Ref) and not inner.covered:
                return None
            if not isinstance(inner, (_Ref, _Zip)):
                return None
            return _count(inner, f"count({expr_text(call.arg)})")
        stage = self._stage(call)
        inner = self._compile(call.arg) if stage is not None else None
        if inner is None or isinstance(inner, _Zip):
            return None
        if isinstance(inner, _Ref):
            return inner.staged(call_tag(call), stage)
        return _mapped(inner, stage)

    def _slots(self, expr: ast.ObsExpr) -> _Ref | None:
        """A range read position by position (``pad``, the parts of ``zip``),
        as ``ObservationCompiler._slots`` reads it."""
        if isinstance(expr, ast.NameRef):
            named = self.oc.named.get(expr.name)
            return self._slots(named.expr) if named else None
        if isinstance(expr, ast.ColumnRef):
            return _Ref(expr, []) if self.oc.kinds[expr.column] == "text" else None
        if not isinstance(expr, ast.Call):
            return None
        inner = self._slots(expr.arg)
        if inner is None:
            return None
        if expr.func == "pad":
            return _Ref(inner.ref, inner.stages, inner.slot_stages, pad_reach(expr))
        if expr.func not in TEXT_FUNCTIONS:
            return None
        fn, tag = text_function(expr), call_tag(expr)

        def stage(nm: str, tx: str, v: float) -> list[tuple[str, str | None, float]]:
            return [(tag.format(nm), tx if tx in _MARKERS else fn(tx), v)]
        return _Ref(inner.ref, inner.stages, inner.slot_stages + [(call_tag(expr), stage)],
                    inner.pad)

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
        if expr.func == "pad":
            return self.names(expr.arg)
        if expr.func == "zip":
            return self.names(expr.arg)
        if expr.func == "count":
            return {f"count({expr_text(expr.arg)})"}
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
            rx = compile_regex(call.params[0])
            return lambda nm, tx, v: [(tag.format(nm), None, v)] if rx(tx) else []
        if call.func == "lexicon":
            words = self.oc.lexicon(call)
            return lambda nm, tx, v: [(tag.format(nm), None, v)] if tx in words else []
        return None


def template_span_streams(oc: SpecContext, observations: list[ast.ObsExpr]
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


def evaluate_span_streams(streams: SpanStreams, cols: dict[str, list], lengths: list[int],
                          L: int, keys: KeyTable) -> list[Rows]:
    """For sentences of ``lengths`` tokens whose columns ``cols`` run end to
    end, per sentence the (attribute id, value) items of the nodes on every
    candidate segment (u, d), u then d ascending: summed within an
    observation, the first of equal keys across observations (as
    ``TemplateAttributes.evaluate``)."""
    sent = _Sentence(cols, lengths, L, keys)
    rows = concat([sent.spans(*n(sent)) for n in streams.nodes])
    if not streams.disjoint:
        rows = merged(rows, False)
    return split(rows, sent.span_counts)
