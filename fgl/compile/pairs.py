"""The position pairs a pair template links on one instance, listed or counted.

``(y[i], y[j]) where ...`` links the pairs its *generator* proposes — the
graph's edges of a type (``edge(a, b, "cites")``), else the pairs sharing an
item of an equality (``word[i] == word[j]``), else every pair — within the
``distance``, kept when every other condition holds (``nearest``: only each
i's first j).  A condition that reads one end only (``regex(word[i],
"^[A-Z]")``) is tested once per position, before any pair is made; the
others are tested on the candidates of each first end i, a chunk at a time,
so a document-wide template never holds its candidates at once.
``estimate_pairs`` counts the pairs without listing them (sampling the
conditions on both ends), so the compiler can size a model before unrolling
it (``fgl.compile.footprint``).
"""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from typing import Sequence

from fgl.features.observations import ObservationCompiler
from fgl.lang import ast

Pair = tuple[int, int]
CHUNK = 1 << 16          # candidates tested at once
SAMPLE_FIRSTS = 64       # first ends whose candidates estimate_pairs samples
SAMPLE_PER_FIRST = 32    # candidates sampled per first end
_END = {"t": "i", "u": "i", "a": "i", "i": "i", "v": "j", "b": "j", "j": "j"}


def _ends(expr: ast.ObsExpr | None, named: dict[str, ast.ObsDef]) -> set[str]:
    """The ends of a pair ("i", "j") an observation expression reads."""
    if expr is None:
        return set()
    if isinstance(expr, ast.ColumnRef):
        return {_END[expr.lo_base], _END[expr.hi_base]}
    if isinstance(expr, ast.NameRef):
        if expr.name in named:
            return _ends(named[expr.name].expr, named)
        return {"bos": {"i"}, "eos": {"j"}, "bias": set()}.get(expr.name, {"i", "j"})
    if isinstance(expr, ast.Call):
        return {"i", "j"} if expr.func == "either" else _ends(expr.arg, named)
    return set().union(*(_ends(p, named) for p in expr.parts))


def holds(pred: ast.Predicate, cols: dict[str, list], n: int, spans: list[Pair],
          obs: ObservationCompiler) -> list[bool]:
    """Whether ``pred`` holds on each (first, second) span: a test gives an
    item, an equality shares one, an inequality shares none."""
    left = obs.compile(pred.left)(cols, n, spans)
    if pred.kind == "test":
        return [bool(items) for items in left]
    right = obs.compile(pred.right)(cols, n, spans)
    same = [bool({tx for _, tx, _ in a} & {tx for _, tx, _ in b}) for a, b in zip(left, right)]
    return same if pred.kind == "eq" else [not s for s in same]


class Candidates:
    """A template's candidate pairs on an instance of ``n`` positions (in a
    graph, nodes): those of its generator whose ends pass the conditions
    on one end.  ``firsts`` lists the first ends that may have any,
    ``at(i)`` gives i's second ends ascending and ``count_at(i)`` their
    number (at least it: an equality on several items counts a pair once
    per item shared); ``pair_tests`` are the conditions left to test on
    pairs."""

    def __init__(self, tpl: ast.Template, cols: dict[str, list], n: int, edges: list | None,
                 obs: ObservationCompiler):
        self.n = n
        self.limit = next((int(p.value) for p in tpl.where if p.kind == "distance"), n)
        edge = next((p for p in tpl.where if p.kind == "edge"), None)
        eq = None if edge else next((p for p in tpl.where if p.kind == "eq"), None)
        nodes = [(p, p) for p in range(n)]
        first_ok, second_ok = [True] * n, [True] * n
        self.pair_tests: list[ast.Predicate] = []
        for pred in tpl.where:
            if pred.kind in ("edge", "distance", "nearest"):
                continue
            left, right = _ends(pred.left, obs.named), _ends(pred.right, obs.named)
            if pred is eq and left <= {"i"} and right <= {"j"}:
                continue          # what the generator makes holds
            ok = first_ok if left | right <= {"i"} else second_ok if left | right <= {"j"} \
                else None
            if ok is None:
                self.pair_tests.append(pred)
                continue
            for p, passed in enumerate(holds(pred, cols, n, nodes, obs)):
                ok[p] = ok[p] and passed
        self.by_first: dict[int, list[int]] | None = None
        self.keys: list[set[str]] | None = None
        self.seconds: list[int] | None = None   # (every pair) the second ends allowed
        if edge is not None:
            by_first = defaultdict(set)
            for s, t, kind in edges:
                if kind == edge.value and first_ok[s] and second_ok[t]:
                    by_first[s].add(t)
            self.by_first = {s: sorted(ts) for s, ts in sorted(by_first.items())}
            self.firsts: Sequence[int] = list(self.by_first)
        elif eq is not None:
            self.keys = [{tx for _, tx, _ in items} if ok else set()
                         for items, ok in zip(obs.compile(eq.left)(cols, n, nodes), first_ok)]
            self.by_key: dict[str, list[int]] = defaultdict(list)
            for j, items in enumerate(obs.compile(eq.right)(cols, n, nodes)):
                if second_ok[j]:
                    for key in {tx for _, tx, _ in items}:
                        self.by_key[key].append(j)
            self.firsts = [i for i in range(n) if self._runs(i)]
        else:
            if not all(second_ok):
                self.seconds = [j for j in range(n) if second_ok[j]]
            self.firsts = [i for i in range(n) if first_ok[i] and self.count_at(i)]

    def _runs(self, i: int) -> list[tuple[list[int], int, int]]:
        """i's second ends: (ascending positions, start, stop) per run."""
        if self.keys is None:
            runs = [self.seconds]
        else:
            runs = [self.by_key[key] for key in self.keys[i] if key in self.by_key]
        out = []
        for js in runs:
            lo, hi = bisect_right(js, i), bisect_right(js, i + self.limit)
            if lo < hi:
                out.append((js, lo, hi))
        return out

    def at(self, i: int, most: int | None = None) -> list[int]:
        """i's second ends, ascending (the first ``most`` of them)."""
        if self.by_first is not None:
            return self.by_first.get(i, [])[:most]
        if self.keys is None and self.seconds is None:
            stop = min(self.n, i + self.limit + 1)
            return list(range(i + 1, stop if most is None else min(stop, i + 1 + most)))
        cut = [js[lo:hi if most is None else min(hi, lo + most)] for js, lo, hi in self._runs(i)]
        if len(cut) == 1:
            return cut[0]
        return sorted(set().union(*cut))[:most]

    def count_at(self, i: int) -> int:
        if self.by_first is not None:
            return len(self.by_first.get(i, ()))
        if self.keys is None and self.seconds is None:
            return max(0, min(self.n - 1, i + self.limit) - i)
        return sum(hi - lo for _, lo, hi in self._runs(i))


def _kept(tests: list[ast.Predicate], cols: dict[str, list], n: int, spans: list[Pair],
          obs: ObservationCompiler) -> list[Pair]:
    """The spans every one of ``tests`` holds on."""
    for pred in tests:
        if not spans:
            break
        spans = [s for s, ok in zip(spans, holds(pred, cols, n, spans, obs)) if ok]
    return spans


def linked_pairs(tpl: ast.Template, cols: dict[str, list], n: int, edges: list | None,
                 obs: ObservationCompiler) -> list[Pair]:
    """The pairs (i, j) the template links, sorted; (a, a) for every node of
    a one-label template in a graph."""
    if len(tpl.labels) == 1:
        return [(a, a) for a in range(n)]
    cands = Candidates(tpl, cols, n, edges, obs)
    nearest = any(p.kind == "nearest" for p in tpl.where)
    most = 1 if nearest and not cands.pair_tests else None
    out: list[Pair] = []
    chunk: list[Pair] = []

    def flush() -> None:
        for i, j in _kept(cands.pair_tests, cols, n, chunk, obs):
            if not (nearest and out and out[-1][0] == i):   # i's nearest j came first
                out.append((i, j))
        chunk.clear()

    for i in cands.firsts:
        js = cands.at(i, most)
        for k in range(0, len(js), CHUNK):
            if nearest and out and out[-1][0] == i:
                break
            chunk.extend((i, j) for j in js[k:k + CHUNK])
            if len(chunk) >= CHUNK:
                flush()
    flush()
    return out


def estimate_pairs(tpl: ast.Template, cols: dict[str, list], n: int, edges: list | None,
                   obs: ObservationCompiler) -> tuple[int, list[Pair]]:
    """About how many pairs ``linked_pairs`` gives, and a sample of them,
    without listing them: the candidates are counted, and the share the
    conditions on both ends keep is measured on the candidates of up to
    ``SAMPLE_FIRSTS`` first ends spread over the instance."""
    if len(tpl.labels) == 1:
        return n, [(a, a) for a in range(min(n, SAMPLE_FIRSTS))]
    cands = Candidates(tpl, cols, n, edges, obs)
    firsts = cands.firsts
    if not firsts:
        return 0, []
    tried = firsts[::max(1, len(firsts) // SAMPLE_FIRSTS)][:SAMPLE_FIRSTS]
    sample = [(i, j) for i in tried for j in cands.at(i, SAMPLE_PER_FIRST)]
    kept = _kept(cands.pair_tests, cols, n, sample, obs)
    if any(p.kind == "nearest" for p in tpl.where):
        return round(len(firsts) * len({i for i, _ in kept}) / len(tried)), kept
    total = sum(cands.count_at(i) for i in firsts)
    return round(total * len(kept) / len(sample)), kept
