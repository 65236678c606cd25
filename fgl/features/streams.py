"""Column-wise evaluation of the common observations at token positions.

The general evaluators (``fgl.features.observations``) build an item tuple per
position and item.  Most observations of a chain spec give at most one item
per token, with value 1: a text column at an offset (``word[t-1]``), a
conjunction of such (``pos[t-1] & pos[t]``), a text built-in applied to one
(``lower(word[t])``), a test on one (``regex(...)``, ``lexicon(...)``),
``pad(...)`` of a column or of text built-ins on one (a start or end marker
outside the sequence: the specs ``fgl convert crfpp`` writes), or
``bias``/``bos``/``eos``.  Each is a *stream*: a fixed attribute name and,
per token, the item's text (None where there is no item) — a few list
operations per sentence instead of a Python step per item; ``stream_keys``
lays their keys out as rows, to be turned into ids a batch at a time.

``template_streams`` gives a template's streams, or None when one of its
observations needs the general evaluator; the attribute keys, and their
order at every token, are those of the general path.
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from fgl.features.builtins import (
    END_MARKER,
    START_MARKER,
    TEXT_FUNCTIONS,
    pad_reach,
    shifted,
    text_function,
)
from fgl.features.spec_context import SpecContext
from fgl.lang import ast
from fgl.lang.builtins import call_tag, ref_text
from fgl.lang.regexes import compile_regex

Texts = Callable[[dict[str, list], int], list]  # (columns, T) -> text or None per token
Stream = tuple[str, Texts, bool]                  # name, texts, is a test (key = name)

_PRESENT = ""  # a test stream's "text" where the test holds


class StreamCompiler:
    """Streams of observation expressions (None: not expressible)."""

    def __init__(self, oc: SpecContext):
        self.oc = oc

    def streams(self, expr: ast.ObsExpr) -> list[Stream] | None:
        if isinstance(expr, ast.ColumnRef):
            return self._column(expr)
        if isinstance(expr, ast.NameRef):
            if expr.name in self.oc.named:
                return self.streams(self.oc.named[expr.name].expr)
            return _zero_arg(expr.name)
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, ast.Conj):
            return _conjoin([self.streams(p) for p in expr.parts])
        if isinstance(expr, ast.Disj):
            parts = [self.streams(p) for p in expr.parts]
            return None if any(p is None for p in parts) else [s for p in parts for s in p]
        return None

    def _column(self, ref: ast.ColumnRef) -> list[Stream] | None:
        if self.oc.kinds[ref.column] != "text" or ref.lo_base != "t" or ref.hi_base != "t":
            return None
        return [(f"{ref.column}[{ref_text('t', off)}]", _shifted(ref.column, off), False)
                for off in range(ref.lo, ref.hi + 1)]

    def _call(self, call: ast.Call) -> list[Stream] | None:
        if call.func == "pad":
            return self._padded(call.arg, pad_reach(call), [])
        inner = self.streams(call.arg)
        if inner is None or any(test for _, _, test in inner):
            return None
        tag = call_tag(call)
        if call.func in TEXT_FUNCTIONS:
            fn = text_function(call)
            return [(tag.format(name), _mapped(texts, fn), False) for name, texts, _ in inner]
        if call.func == "regex":
            rx = compile_regex(call.params[0])
            return [(tag.format(name), _tested(texts, rx), True)
                    for name, texts, _ in inner]
        if call.func == "lexicon":
            words = self.oc.lexicon(call)
            return [(tag.format(name), _tested(texts, words.__contains__), True)
                    for name, texts, _ in inner]
        return None

    def _padded(self, expr: ast.ObsExpr, reach: int, fns: list[Callable[[str], str]]
                ) -> list[Stream] | None:
        """``pad(e)``: e's texts, START_MARKER or END_MARKER where its
        position is outside the sequence by at most ``reach``; the text
        built-ins inside ``pad`` (``fns``, innermost first) rewrite the
        texts, not the markers."""
        if isinstance(expr, ast.NameRef) and expr.name in self.oc.named:
            return self._padded(self.oc.named[expr.name].expr, reach, fns)
        if isinstance(expr, ast.Call) and expr.func in TEXT_FUNCTIONS:
            inner = self._padded(expr.arg, reach, [text_function(expr), *fns])
            tag = call_tag(expr)
            return None if inner is None else [(tag.format(name), texts, False)
                                               for name, texts, _ in inner]
        if not isinstance(expr, ast.ColumnRef) or self._column(expr) is None:
            return None
        return [(f"{expr.column}[{ref_text('t', off)}]",
                 _padded_shift(expr.column, off, reach, fns), False)
                for off in range(expr.lo, expr.hi + 1)]


def template_streams(oc: SpecContext, observations: list[ast.ObsExpr]
                     ) -> list[Stream] | None:
    """A template's streams in attribute order, or None.  Within one
    observation equal names would add up (a bag): None.  Across observations
    the first of equal names wins, as in the general path — per key there,
    per name here, the same when equal names give equal texts, which
    ``pad`` breaks (``word[t-1]`` and ``pad(word[t-1])`` differ at t = 0):
    equal names with a ``pad`` in the template, None.  A name holding ``=``
    could make two names' keys equal: None."""
    sc = StreamCompiler(oc)
    out: list[Stream] = []
    seen: set[str] = set()
    padded = any(_mentions_pad(expr, oc.named) for expr in observations)
    for expr in observations:
        streams = sc.streams(expr)
        if streams is None:
            return None
        names = [name for name, _, _ in streams]
        if len(set(names)) != len(names) or any("=" in name for name in names):
            return None
        for stream in streams:
            if stream[0] in seen and padded:
                return None
            if stream[0] not in seen:
                seen.add(stream[0])
                out.append(stream)
    return out


def _mentions_pad(expr: ast.ObsExpr, named: dict) -> bool:
    """Whether ``expr`` (through named observations) calls ``pad``."""
    if isinstance(expr, ast.NameRef):
        return expr.name in named and _mentions_pad(named[expr.name].expr, named)
    if isinstance(expr, ast.Call):
        return expr.func == "pad" or _mentions_pad(expr.arg, named)
    if isinstance(expr, (ast.Conj, ast.Disj)):
        return any(_mentions_pad(p, named) for p in expr.parts)
    return False


def evaluate_streams(streams: list[Stream], cols: dict[str, list], T: int
                     ) -> list[list[tuple[str, float]]]:
    """Per token, the (attribute key, 1.0) pairs of the streams."""
    return [[(k, 1.0) for k in keys if k is not None] for keys in zip(*_keyed(streams, cols, T))]


def stream_keys(streams: list[Stream], cols: dict[str, list], T: int
                ) -> tuple[np.ndarray, list[str]]:
    """``evaluate_streams`` as rows of keys, one row per token: (row
    offsets, the keys end to end), with no pair per item."""
    keyed = _keyed(streams, cols, T)
    if any(None in column for column in keyed):
        per_token = [[k for k in at if k is not None] for at in zip(*keyed)]
        ptr = np.zeros(T + 1, dtype=np.int64)
        np.cumsum([len(at) for at in per_token], out=ptr[1:])
        return ptr, [k for at in per_token for k in at]
    # (every stream gives a key at every token: pad without a reach, as a rule)
    return np.arange(T + 1, dtype=np.int64) * len(keyed), [k for at in zip(*keyed) for k in at]


def _keyed(streams: list[Stream], cols: dict[str, list], T: int) -> list[list[str | None]]:
    """Per stream, the attribute key at every token (None: no item)."""
    keyed = []
    for name, texts, test in streams:
        if test:
            keyed.append([name if x is not None else None for x in texts(cols, T)])
        else:
            prefix = name + "="
            keyed.append([prefix + x if x is not None else None for x in texts(cols, T)])
    return keyed


def _shifted(column: str, off: int) -> Texts:
    def texts(cols: dict[str, list], T: int) -> list:
        before, inside, after = shifted(cols[column], off, T)
        return [None] * len(before) + inside + [None] * len(after)
    return texts


def _padded_shift(column: str, off: int, reach: int, fns: list[Callable[[str], str]]) -> Texts:
    def texts(cols: dict[str, list], T: int) -> list:
        before, inside, after = shifted(cols[column], off, T)
        for fn in fns:
            inside = [fn(x) for x in inside]
        return ([START_MARKER if far <= reach else None for far in before] + inside
                + [END_MARKER if far <= reach else None for far in after])
    return texts


def _mapped(inner: Texts, fn: Callable[[str], str]) -> Texts:
    return lambda cols, T: [fn(x) if x is not None else None for x in inner(cols, T)]


def _tested(inner: Texts, test: Callable[[str], bool]) -> Texts:
    return lambda cols, T: [_PRESENT if x is not None and test(x) else None
                            for x in inner(cols, T)]


def _zero_arg(name: str) -> list[Stream] | None:
    if name == "bias":
        return [(name, lambda cols, T: [_PRESENT] * T, True)]
    if name == "bos":
        return [(name, lambda cols, T: ([_PRESENT] + [None] * (T - 1)) if T else [], True)]
    if name == "eos":
        return [(name, lambda cols, T: ([None] * (T - 1) + [_PRESENT]) if T else [], True)]
    return None


def _conjoin(parts: list[list[Stream] | None]) -> list[Stream] | None:
    """The cross product of the parts' text streams (tests in a conjunction
    follow other text rules: None)."""
    if any(p is None or any(test for _, _, test in p) for p in parts):
        return None
    out: list[Stream] = []
    for combo in itertools.product(*parts):
        name = "&".join(s[0] for s in combo)
        fns = [s[1] for s in combo]
        out.append((name, _joined(fns), False))
    return out


def _joined(fns: list[Texts]) -> Texts:
    def texts(cols: dict[str, list], T: int) -> list:
        return ["|".join(xs) if None not in xs else None
                for xs in zip(*(fn(cols, T) for fn in fns))]
    return texts
