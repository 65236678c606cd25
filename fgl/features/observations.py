"""Observation functions: spec expressions evaluated on one sequence.

An expression evaluates, at every position t (or, in a segment model, on
every candidate segment (u, v)), to a list of *items*
``(name, text, value)``: ``word[t-1]`` at t gives ``("word[t-1]", "the",
1.0)``; ``lower(...)`` rewrites the text; a test (``regex``, ``lexicon``,
``bos``) gives an item only where it holds; ``value(x[t])`` gives a real
value.  A template's *attributes* at t are the items of its observations,
keyed ``name=text`` (or ``name`` for tests and real values); a feature is an
attribute conjoined with a label pattern (Sutton & McCallum eq. 1.54).
"""
from __future__ import annotations

import itertools
import math
import weakref
from pathlib import Path
from typing import Callable

import numpy as np

from fgl.data.sparse_vector import SparseVector
from fgl.errors import DataError, SpecError, shorten
from fgl.features.aggregate_columns import aggregate_evaluator
from fgl.features.builtins import (
    END_MARKER,
    START_MARKER,
    TEXT_FUNCTIONS,
    pad_reach,
    regex_classes,
    shifted,
    text_function,
)
from fgl.features.key_table import KeyTable
from fgl.features.span_arrays import Rows
from fgl.features.span_streams import evaluate_span_streams, template_span_streams
from fgl.features.spec_context import SpecContext
from fgl.features.streams import evaluate_streams, stream_keys, template_streams
from fgl.lang import ast
from fgl.lang.builtins import call_tag, expr_text, ref_text
from fgl.lang.items import MAX_ITEMS, bag_conjunctions, longest_segment, most_items
from fgl.lang.regexes import compile_regex

Item = tuple[str, str | None, float]
Spans = list[tuple[int, int]] | None  # None: one position per token
# the index bases read at a span's first position (the rest, v, j and b, at its last)
FIRST_END = frozenset("utia")
Evaluator = Callable[[dict[str, list], int, Spans], list[list[Item]]]
# per position or span, a range's (name, text, how far outside the sequence) at each of
# its positions in order: 0 inside; a position outside has START_MARKER or END_MARKER as
# its text
Slots = Callable[[dict[str, list], int, Spans], list[list[tuple[str, str, int]]]]


class ObservationCompiler(SpecContext):
    """Turns a checked spec's observation expressions into evaluators."""

    def __init__(self, spec: ast.Spec, base_dir: Path | None = None,
                 lexicons: dict[str, frozenset[str]] | None = None):
        super().__init__(spec, base_dir, lexicons)
        self._cache: dict[str, Evaluator] = {}

    def compile(self, expr: ast.ObsExpr) -> Evaluator:
        """An evaluator ``f(columns, T, spans) -> items per position`` (per
        token when ``spans`` is None, else per (u, v) segment)."""
        if isinstance(expr, ast.ColumnRef):
            return self._column(expr)
        if isinstance(expr, ast.NameRef):
            if expr.name in self.named:
                if expr.name not in self._cache:
                    self._cache[expr.name] = self.compile(self.named[expr.name].expr)
                return self._cache[expr.name]
            return self._zero_arg(expr.name)
        if isinstance(expr, ast.Aggregate):   # (computed per instance: fgl.compile.aggregates)
            return aggregate_evaluator(expr)
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, ast.Conj):
            parts = [self._inner(p) for p in expr.parts]
            return lambda cols, T, spans: _conjoin([p(cols, T, spans) for p in parts])
        if isinstance(expr, ast.Disj):
            parts = [self.compile(p) for p in expr.parts]
            return lambda cols, T, spans: [sum(rows, []) for rows in
                                           zip(*(p(cols, T, spans) for p in parts))]
        raise TypeError(f"not an observation expression: {expr!r}")

    def _inner(self, expr: ast.ObsExpr) -> Evaluator:
        """An expression read inside another (a conjunction's part, a
        call's argument): an aggregate's items keep their name and text
        apart, which the outer one joins or rewrites."""
        seen: set[str] = set()
        while isinstance(expr, ast.NameRef) and expr.name in self.named and expr.name not in seen:
            seen.add(expr.name)
            expr = self.named[expr.name].expr
        if isinstance(expr, ast.Aggregate):
            return aggregate_evaluator(expr, keyed=False)
        return self.compile(expr)

    def _column(self, ref: ast.ColumnRef) -> Evaluator:
        name, kind = ref.column, self.kinds[ref.column]

        dims: dict[str, list[str]] = {}   # a vector's attribute names, made once per label

        def items(label: str, value) -> list[Item]:
            if kind == "text":
                return [(label, value, 1.0)]
            if kind == "number":
                return [(label, None, value)]
            return _vector_items(dims, label, value)

        if ref.lo_base != ref.hi_base:  # u..v: a bag of every token in the range
            label = f"{name}[{ref_text(ref.lo_base, ref.lo)}..{ref_text(ref.hi_base, ref.hi)}]"
        offsets = [(off, f"{name}[{ref_text(ref.lo_base, off)}]")
                   for off in range(ref.lo, ref.hi + 1)]
        lo_end, hi_end = ref.lo_base in FIRST_END, ref.hi_base in FIRST_END   # (spans' ends)

        def evaluate(cols: dict[str, list], T: int, spans: Spans) -> list[list[Item]]:
            values = cols[name]
            if spans is None:
                out: list[list[Item]] = [[] for _ in range(T)]
                for off, lab in offsets:
                    lo, hi = max(0, -off), min(T, T - off)
                    if kind == "text":  # the common case, without a call per token
                        for t in range(lo, hi):
                            out[t].append((lab, values[t + off], 1.0))
                    else:
                        for t in range(lo, hi):
                            out[t].extend(items(lab, values[t + off]))
                return out
            out = []
            for u, v in spans:
                row: list[Item] = []
                if ref.lo_base == ref.hi_base:
                    at = u if lo_end else v
                    for off, lab in offsets:
                        i = at + off
                        if 0 <= i < T:
                            if kind == "text":
                                row.append((lab, values[i], 1.0))
                            else:
                                row.extend(items(lab, values[i]))
                else:
                    first = max(0, (u if lo_end else v) + ref.lo)
                    stop = min(T, (u if hi_end else v) + ref.hi + 1)
                    for i in range(first, stop):
                        row.extend(items(label, values[i]))
                out.append(row)
            return out
        return evaluate

    @staticmethod
    def _zero_arg(name: str) -> Evaluator:
        def evaluate(cols: dict[str, list], T: int, spans: Spans) -> list[list[Item]]:
            out: list[list[Item]] = []
            for u, v in spans if spans is not None else ((t, t) for t in range(T)):
                if name == "length":
                    out.append([("length", str(v - u + 1), 1.0)])
                elif name == "bias" or (name == "bos" and u == 0) or (name == "eos" and v == T - 1):
                    out.append([(name, None, 1.0)])
                else:
                    out.append([])
            return out
        return evaluate

    def _call(self, call: ast.Call) -> Evaluator:
        func = call.func
        if func == "pad":     # pad and zip read ranges position by position
            return _kept(*self._slots(call))
        if func == "zip":
            return _zipped([self._slots(p) for p in call.arg.parts])
        inner = self._inner(call.arg)
        tag = call_tag(call)
        if func == "value":
            return inner
        if func == "count":
            return _count(inner, f"count({expr_text(call.arg)})")
        if func == "either":
            return _either(inner)
        if func == "tokens":
            return _map_items(inner, lambda nm, tx, v: [(tag.format(nm), w, v) for w in tx.split()])
        if func in TEXT_FUNCTIONS:
            fn = text_function(call)
            return _map_items(inner, lambda nm, tx, v: [(tag.format(nm), fn(tx), v)])
        if func == "class":
            return _map_items(inner, lambda nm, tx, v: [(tag.format(nm), c, v)
                                                        for c in regex_classes(tx)])
        if func == "regex":
            rx = compile_regex(call.params[0])
            return _map_items(inner, lambda nm, tx, v: ([(tag.format(nm), None, v)]
                                                        if rx(tx) else []))
        if func == "lexicon":
            words = self.lexicon(call)
            return _map_items(inner, lambda nm, tx, v: ([(tag.format(nm), None, v)]
                                                        if tx in words else []))
        raise SpecError(f"unknown function '{func}'", call.loc.file, call.loc.line, call.loc.col)

    def _slots(self, expr: ast.ObsExpr) -> tuple[Slots, int]:
        """A range read position by position (a column reference under text
        built-ins, ``pad`` and names) and how far outside the sequence its
        markers are kept (0: none; under ``pad``, its reach)."""
        if isinstance(expr, ast.NameRef):
            return self._slots(self.named[expr.name].expr)
        if isinstance(expr, ast.ColumnRef):
            return _column_slots(expr), 0
        inner, kept = self._slots(expr.arg)
        if expr.func == "pad":
            return inner, pad_reach(expr)
        fn, tag = text_function(expr), call_tag(expr)
        return (lambda cols, T, spans: [[(tag.format(nm), tx if far else fn(tx), far)
                                         for nm, tx, far in row] for row in inner(cols, T, spans)],
                kept)


# the largest number a :number or :vector column may hold: weights times values must stay
# far from overflow (and their squares finite)
MAX_MAGNITUDE = 1e100

def _map_items(inner: Evaluator, fn: Callable[[str, str, float], list[Item]]) -> Evaluator:
    def evaluate(cols: dict[str, list], T: int, spans: Spans) -> list[list[Item]]:
        return [[out for nm, tx, v in row for out in fn(nm, tx or "", v)]
                for row in inner(cols, T, spans)]
    return evaluate


def _column_slots(ref: ast.ColumnRef) -> Slots:
    """A text column's range, position by position: per offset its own name
    (``word[t-2]``), or one name for a range between u and v."""
    if ref.lo_base == ref.hi_base:
        offsets = [(f"{ref.column}[{ref_text(ref.lo_base, off)}]", off)
                   for off in range(ref.lo, ref.hi + 1)]
    label = (f"{ref.column}[{ref_text(ref.lo_base, ref.lo)}..{ref_text(ref.hi_base, ref.hi)}]")

    def token_slots(values: list, T: int) -> list[list[tuple[str, str, int]]]:
        """At token positions every base is t: each offset's column is a
        slice of ``values`` between the markers (no lookup per position)."""
        columns = []
        for nm, off in offsets:
            before, inside, after = shifted(values, off, T)
            columns.append([(nm, START_MARKER, far) for far in before]
                           + [(nm, x, 0) for x in inside]
                           + [(nm, END_MARKER, far) for far in after])
        return [list(row) for row in zip(*columns)]

    def slots(cols: dict[str, list], T: int, spans: Spans) -> list[list[tuple[str, str, int]]]:
        values = cols[ref.column]
        if spans is None and ref.lo_base == ref.hi_base:
            return token_slots(values, T)

        def at(i: int) -> tuple[str, int]:
            if 0 <= i < T:
                return values[i], 0
            return (START_MARKER, -i) if i < 0 else (END_MARKER, i - T + 1)
        out = []
        for u, v in spans if spans is not None else ((t, t) for t in range(T)):
            base = {"u": u, "v": v, "t": u, "i": u, "j": v, "a": u, "b": v}
            if ref.lo_base == ref.hi_base:
                out.append([(nm, *at(base[ref.lo_base] + off)) for nm, off in offsets])
            else:
                out.append([(label, *at(i)) for i in range(base[ref.lo_base] + ref.lo,
                                                           base[ref.hi_base] + ref.hi + 1)])
        return out
    return slots


def _kept(slots: Slots, reach: int) -> Evaluator:
    """``pad(e)``: the range's items, a marker where a position is outside
    the sequence by at most ``reach``."""
    return lambda cols, T, spans: [[(nm, tx, 1.0) for nm, tx, far in row if far <= reach]
                                   for row in slots(cols, T, spans)]


def _zipped(parts: list[tuple[Slots, int]]) -> Evaluator:
    """``zip(a & b)``: one conjoined item per aligned position of the ranges,
    none where a range is outside the sequence beyond its pad's reach (Cuong
    et al. 2014 §3.2.2: word pairs at fixed offsets summed over a segment)."""
    def evaluate(cols: dict[str, list], T: int, spans: Spans) -> list[list[Item]]:
        rows = [slots(cols, T, spans) for slots, _ in parts]
        reach = [k for _, k in parts]
        out = []
        for at in zip(*rows):
            row: list[Item] = []
            for combo in zip(*at):
                if all(far <= k for k, (_, _, far) in zip(reach, combo)):
                    row.append(("&".join(nm for nm, _, _ in combo),
                                "|".join(tx for _, tx, _ in combo), 1.0))
            out.append(row)
        return out
    return evaluate


def _count(inner: Evaluator, name: str) -> Evaluator:
    """``count(e)``: how many items ``e`` gives, as one real value (none when 0)."""
    return lambda cols, T, spans: [[(name, None, float(len(items)))] if items else []
                                   for items in inner(cols, T, spans)]


def _either(inner: Evaluator) -> Evaluator:
    """Sutton & McCallum eq. 1.61: on a pair (i, j), the items of ``inner`` at i OR at
    j — one indicator per distinct item.  ``inner`` is read once per
    position the pairs touch (a clique of m mentions has m(m-1)/2 pairs
    over m positions), its items named once per position."""
    def evaluate(cols: dict[str, list], T: int, spans: Spans) -> list[list[Item]]:
        ends = list({p for span in spans for p in span})
        named = [[(f"either({nm})", tx) for nm, tx, _ in items]
                 for items in inner(cols, T, [(p, p) for p in ends])]
        at = dict(zip(ends, named))
        return [[(nm, tx, 1.0) for nm, tx in dict.fromkeys(at[i] + at[j])] for i, j in spans]
    return evaluate


def _conjoin(parts: list[list[list[Item]]]) -> list[list[Item]]:
    """Cross product of the parts' items at every position: names joined by
    ``&``, texts by ``|`` (a real value's text is empty), values multiplied."""
    names: dict[tuple[str, ...], str] = {}  # the joined names repeat across positions
    out: list[list[Item]] = []
    for rows in zip(*parts):
        row: list[Item] = []
        if all(len(items) == 1 for items in rows) and \
                all(items[0][1] is not None for items in rows):   # (texts, one each: the norm)
            key = tuple([items[0][0] for items in rows])
            name = names.get(key)
            if name is None:
                name = names[key] = "&".join(key)
            value = 1.0
            for items in rows:
                value *= items[0][2]
            out.append([(name, "|".join([items[0][1] for items in rows]), value)])
            continue
        for combo in itertools.product(*rows):
            key = tuple([nm for nm, _, _ in combo])
            name = names.get(key)
            if name is None:
                name = names[key] = "&".join(key)
            texts = [tx for _, tx, _ in combo]
            value = 1.0
            for _, _, v in combo:
                value *= v
            if None in texts:
                text = None if texts.count(None) == len(texts) else \
                    "|".join(tx if tx is not None else "" for tx in texts)
            else:
                text = "|".join(texts)
            row.append((name, text, value))
        out.append(row)
    return out


def attribute_key(item: Item) -> str:
    name, text, _ = item
    return name if text is None else f"{name}={text}"


def _summed(items: list[Item]) -> list[tuple[str, float]]:
    """One observation's (attribute, value) list at a position: repeated
    items add up (``word[u..v]`` is a bag of words)."""
    if len(items) == 1:
        name, text, value = items[0]
        return [(name if text is None else f"{name}={text}", value)]
    own: dict[str, float] = {}
    for it in items:
        key = attribute_key(it)
        own[key] = own.get(key, 0.0) + it[2]
    return list(own.items())


class TemplateAttributes:
    """Per template, the attribute keys and values active at each position."""

    def __init__(self, spec: ast.Spec, base_dir: Path | None = None,
                 lexicons: dict[str, frozenset[str]] | None = None):
        oc = ObservationCompiler(spec, base_dir, lexicons)
        self.observations = oc   # (what fgl.compile.aggregates evaluates aggregates' inside with)
        self.lexicons = oc.lexicons
        self._evaluators = [[oc.compile(e) for e in tpl.observations] for tpl in spec.templates]
        # the column-wise fast path at token positions, where a template allows it
        self._streams = [template_streams(oc, tpl.observations) if tpl.observations else None
                         for tpl in spec.templates]
        # the token-table fast path on every candidate segment (segment models)
        self._span_streams = [template_span_streams(oc, tpl.observations)
                              if tpl.observations else None for tpl in spec.templates]
        self.keys = KeyTable()   # attribute keys as ids, for the array paths

    def evaluate(self, ti: int, cols: dict[str, list], T: int, spans: Spans = None,
                 ) -> list[list[tuple[str, float]]]:
        """Template ``ti``'s (attribute, value) lists at every position or span."""
        n = T if spans is None else len(spans)
        evaluators = self._evaluators[ti]
        if not evaluators:
            return [[("bias", 1.0)] for _ in range(n)]
        if spans is None and self._streams[ti] is not None:
            return evaluate_streams(self._streams[ti], cols, T)
        if len(evaluators) == 1:
            return [_summed(items) for items in evaluators[0](cols, T, spans)]
        # within one observation repeated items add up (word[u..v] is a bag of
        # words); an attribute that two observations both give counts once
        rows: list[dict[str, float]] = [{} for _ in range(n)]
        for ev in evaluators:
            for row, items in zip(rows, ev(cols, T, spans)):
                for key, v in _summed(items):
                    row.setdefault(key, v)
        return [list(row.items()) for row in rows]

    def __call__(self, cols: dict[str, list], T: int, spans: Spans = None,
                 ) -> list[list[list[tuple[str, float]]]]:
        """``out[template][i]`` = list of ``(attribute key, value)`` at token
        i, or on segment ``spans[i]`` in a segment model."""
        return [self.evaluate(ti, cols, T, spans) for ti in range(len(self._evaluators))]

    def segments(self, cols: dict[str, list], T: int, L: int
                 ) -> list[list[list[tuple[str, float]]]]:
        """``out[template][i]`` on every candidate segment (u, u + d - 1),
        d ≤ L, u then d ascending (Cuong et al. 2014 §2), as (attribute key,
        value) lists (``segment_rows`` with the keys spelled out)."""
        out = []
        for rows in self.segment_rows([cols], [T], L)[0]:
            key, val = self.keys.names(rows.key.tolist()), rows.val.tolist()
            out.append([list(zip(key[a:b], val[a:b]))
                        for a, b in zip(rows.ptr[:-1].tolist(), rows.ptr[1:].tolist())])
        return out

    def segment_rows(self, cols: list[dict[str, list]], lengths: list[int], L: int
                     ) -> list[list[Rows]]:
        """``out[sentence][template]``: the (attribute id in ``self.keys``,
        value) rows of every candidate segment of each sentence, u then d
        ascending: from token tables where a template allows it, the
        sentences read together (``fgl.features.span_streams``), else from
        the general evaluators."""
        out: list[list[Rows]] = [[] for _ in cols]
        joined = None
        for ti, nodes in enumerate(self._span_streams):
            if nodes is not None:
                if joined is None:
                    joined = {c: [x for one in cols for x in one[c]] for c in cols[0]} \
                        if len(cols) > 1 else cols[0]
                for rows, one in zip(evaluate_span_streams(nodes, joined, lengths, L,
                                                           self.keys), out):
                    one.append(rows)
                continue
            for one, c, T in zip(out, cols, lengths):
                n = int(np.minimum(L, T - np.arange(T)).sum())
                if not self._evaluators[ti]:   # no observations: the constant bias
                    one.append(Rows(np.arange(n + 1, dtype=np.int64),
                                    np.full(n, self.keys.key_id("bias"), dtype=np.int64),
                                    np.ones(n)))
                    continue
                spans = [(u, u + d - 1) for u in range(T) for d in range(1, min(L, T - u) + 1)]
                one.append(self.interned(self.evaluate(ti, c, T, spans)))
        return out

    def interned(self, rows: list[list[tuple[str, float]]]) -> Rows:
        """(attribute key, value) lists as rows of ids in ``self.keys``."""
        ptr, keys, vals = _laid_out(rows)
        return Rows(ptr, self.keys.ids(keys), vals)

    def token_rows(self, cols: list[dict[str, list]], lengths: list[int]) -> list[list[Rows]]:
        """``out[sentence][template]``: the rows of key ids (``interned``) of
        every token of each sentence, from the streams where a template has
        them.  The keys of all the sentences are interned in one call, in
        the order a call per sentence and template meets them (sentence,
        template, token, item): the same ids, with one hash-table call and
        one encoding per batch (per sentence and template, their overhead
        was a third of compiling CoNLL-2000 with CRF++'s template)."""
        keys: list[str] = []
        layout: list[tuple[np.ndarray, np.ndarray | None]] = []   # (row offsets, values)
        for c, T in zip(cols, lengths):
            for ti, streams in enumerate(self._streams):
                if streams is not None:
                    ptr, flat = stream_keys(streams, c, T)
                    keys.extend(flat)
                    layout.append((ptr, None))
                    continue
                ptr, flat, vals = _laid_out(self.evaluate(ti, c, T))
                keys.extend(flat)
                layout.append((ptr, vals))
        ids = self.keys.ids(keys)
        out: list[list[Rows]] = []
        at = 0
        per_sentence = len(self._streams)
        for s in range(len(cols)):
            one = []
            for ptr, vals in layout[s * per_sentence:(s + 1) * per_sentence]:
                n = int(ptr[-1])
                one.append(Rows(ptr, ids[at:at + n], np.ones(n) if vals is None else vals))
                at += n
            out.append(one)
        return out


def _laid_out(rows: list[list[tuple[str, float]]]) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(attribute key, value) lists as (row offsets, keys end to end, values)."""
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(row) for row in rows], out=ptr[1:])
    return (ptr, [k for row in rows for k, _ in row],
            np.array([v for row in rows for _, v in row], dtype=np.float64))


def sentence_columns(spec: ast.Spec, rows: list[list[str]], lines: list[int], file: str,
                     ) -> tuple[dict[str, list], list[str] | None]:
    """Split a sentence's rows into typed input columns and the gold labels
    (None when the file has no label column).  Bad numbers are data errors."""
    names = [c.name for c in spec.columns]
    n_all, n_in = len(names), len(names) - len(spec.outputs)
    width = len(rows[0])
    has_gold = width == n_all
    if width not in (n_all, n_in) or (not has_gold and any(
            names.index(o) < n_in for o in spec.outputs)):
        raise DataError(f"expected {n_all} columns ({' '.join(names)}), found {width}",
                        file, lines[0])
    cols: dict[str, list] = {}
    kept = names if has_gold else [n for n in names if n not in spec.outputs]
    for j, col in enumerate(spec.columns):
        if col.name not in kept or col.name == ast.SKIP_COLUMN:   # `_`: not read
            continue
        j = kept.index(col.name)
        if col.kind == "text":
            cols[col.name] = [r[j] for r in rows]
            continue
        values = []
        for r, line in zip(rows, lines):
            try:
                value = (float(r[j]) if col.kind == "number" else _vector(r[j]))
            except ValueError:
                raise DataError(f"column '{col.name}' expects a {col.kind}, "
                                f"found '{shorten(r[j])}'",
                                file, line) from None
            if not abs(value if col.kind == "number" else value.largest()) <= MAX_MAGNITUDE:
                shown = r[j] if isinstance(r[j], str) else r[j].text()   # (also NaN)
                raise DataError(f"column '{col.name}' holds '{shorten(shown)}'; numbers must be "
                                f"finite and at most {MAX_MAGNITUDE:g} in size (rescale the "
                                "column)",
                                file, line)
            if col.kind == "vector" and values and len(value) != len(values[0]):
                raise DataError(f"column '{col.name}' holds {len(value)} numbers here and "
                                f"{len(values[0])} on line {lines[0]}; a vector column keeps "
                                "one dimension", file, line)
            values.append(value)
        cols[col.name] = values
    _check_bags(spec, cols, lines, file)
    gold = cols.get(spec.outputs[0]) if has_gold else None
    return cols, gold


def _vector_items(dims: dict[str, list[str]], label: str, value: SparseVector) -> list[Item]:
    """A vector's attributes ``label[j]``: one per non-zero dimension, and
    the last dimension's even when 0 (the model's attribute names then tell
    the vectors' dimension, ``fgl.features.model_input``)."""
    names = dims.get(label)
    if names is None or len(names) < value.dim:
        names = dims[label] = [f"{label}[{j}]" for j in range(value.dim)]
    out = [(names[j], None, x) for j, x in zip(value.index.tolist(), value.value.tolist())]
    last = value.dim - 1
    if not out or out[-1][0] is not names[last]:
        out.append((names[last], None, 0.0))
    return out


def _vector(field: str | SparseVector) -> SparseVector:
    """A vector column's field (a column file's text, or a graph's vector as
    ``fgl.io.graphs`` read it) kept sparsely."""
    if isinstance(field, SparseVector):
        return field
    return SparseVector.of([float(x) for x in field.split(",")])


_BAGS: dict[int, tuple[weakref.ref, list]] = {}


def _bag_conjunctions(spec: ast.Spec) -> list:
    """``bag_conjunctions(spec)``, worked out once per spec, not per sentence."""
    got = _BAGS.get(id(spec))
    if got is None or got[0]() is not spec:
        got = _BAGS[id(spec)] = (weakref.ref(spec), bag_conjunctions(spec))
    return got[1]


def _check_bags(spec: ast.Spec, cols: dict[str, list], lines: list[int], file: str) -> None:
    """Refuse texts with so many words that a conjunction of their bags
    (tokens(...) & ...) would give more than MAX_ITEMS items at a position."""
    conjunctions = _bag_conjunctions(spec)
    if not conjunctions:
        return
    columns = set().union(*(c for _, c in conjunctions)) & cols.keys()
    words = {c: [len(x.split()) for x in cols[c]] for c in columns}
    most = {c: max(n) for c, n in words.items()}
    named = {d.name: d for d in spec.observations}
    for conj, _ in conjunctions:
        n = most_items(conj, named, longest_segment(spec), most)
        if n > MAX_ITEMS:
            c = max(most, key=most.get)
            where = words[c].index(most[c])
            shown = f"{n:,}" if n < 10**15 else f"about 10^{int(math.log10(n))}"
            raise DataError(f"column '{c}' holds {most[c]} words here, and the conjunction at "
                            f"{conj.loc.file}:{conj.loc.line}:{conj.loc.col} of bags of words "
                            f"(tokens) would give {shown} items at one position, more than the "
                            f"{MAX_ITEMS:,} allowed; shorten the text or conjoin fewer bags",
                            file, lines[where])
