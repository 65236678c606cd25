"""Column-wise evaluation of the common observations at token positions.

The general evaluators (``fgl.features.observations``) build an item tuple per
position and item.  Most observations of a chain spec give at most one item
per token, with value 1: a text column at an offset (``word[t-1]``), a
conjunction of such (``pos[t-1] & pos[t]``), a text built-in applied to one
(``lower(word[t])``), a test on one (``regex(...)``, ``lexicon(...)``), or
``bias``/``bos``/``eos``.  Each is a *stream*: a fixed attribute name and,
per token, the item's text (None where there is no item) — a few list
operations per sentence instead of a Python step per item.

``template_streams`` gives a template's streams, or None when one of its
observations needs the general evaluator; the attribute keys, and their
order at every token, are those of the general path.
"""
from __future__ import annotations

import itertools
from typing import Callable

from fgl.features.builtins import TEXT_FUNCTIONS, text_function
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


def template_streams(oc: SpecContext, observations: list[ast.ObsExpr]
                     ) -> list[Stream] | None:
    """A template's streams in attribute order, or None.  Within one
    observation equal names would add up (a bag): None.  Across observations
    the first of equal names wins, as in the general path.  A name holding
    ``=`` could make two names' keys equal: None."""
    sc = StreamCompiler(oc)
    out: list[Stream] = []
    seen: set[str] = set()
    for expr in observations:
        streams = sc.streams(expr)
        if streams is None:
            return None
        names = [name for name, _, _ in streams]
        if len(set(names)) != len(names) or any("=" in name for name in names):
            return None
        for stream in streams:
            if stream[0] not in seen:
                seen.add(stream[0])
                out.append(stream)
    return out


def evaluate_streams(streams: list[Stream], cols: dict[str, list], T: int
                     ) -> list[list[tuple[str, float]]]:
    """Per token, the (attribute key, 1.0) pairs of the streams."""
    keyed = []
    for name, texts, test in streams:
        if test:
            keyed.append([name if x is not None else None for x in texts(cols, T)])
        else:
            prefix = name + "="
            keyed.append([prefix + x if x is not None else None for x in texts(cols, T)])
    return [[(k, 1.0) for k in keys if k is not None] for keys in zip(*keyed)]


def _shifted(column: str, off: int) -> Texts:
    def texts(cols: dict[str, list], T: int) -> list:
        values = cols[column]
        if off >= 0:
            return values[off:] + [None] * min(off, T)
        return [None] * min(-off, T) + values[:max(0, T + off)]
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
