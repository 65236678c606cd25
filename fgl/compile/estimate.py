"""The size of a chain or segment model estimated from counts, without its
feature table: what ``fgl explain`` prints for a spec whose table would be
large.

One pass over the data counts the distinct values of each column (and,
under ``tokens``, of each column's words); the first pass of compiling
gives the labels, the label patterns and the gold units (``Counted``).
Both come from one streaming count of the data's bytes (``Tally``, made
by ``fgl.io.tally``; ``counted_tally``), which needs neither sentences nor
the engines' kernels — or, for data that count cannot read, from the
sentences (``counted_sentences``, whose errors are located).  An observation
expression's attributes are then bounded bottom-up: a column read at k
offsets makes at most k x (its distinct values) attributes, a conjunction
at most the product of its parts', a union the sum — and no expression
more than (units) x (items it gives at one unit), its occurrences in the
data.  A template's features are at most its attributes x its patterns,
and under ``support = observed`` at most its items at the gold units x the
pattern lengths it ranges over (Ye et al. 2009 §3: features are
(attribute, pattern) pairs).  Every figure is an upper bound: values that
never meet, function images smaller than their arguments and ``min_count``
only make the real table smaller.  The memory is then priced by the same
byte model as the exact count (``fgl.compile.sequence_budget``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from fgl.compile import footprint
from fgl.compile.footprint import Footprint, chain_states
from fgl.compile.frontend import Layer, TemplatePlan, pattern_list, window_plans
from fgl.compile.segmentation import segments_from_tags, span_limit
from fgl.compile.sequence_budget import check_counts, check_encoding, counted_footprint
from fgl.data.sentence import Sentence
from fgl.errors import DataError
from fgl.lang import ast
from fgl.lang.builtins import REGEX_CLASSES
from fgl.lang.settings import TrainSettings

# what a built-in makes of its argument's (keys, items, namespaces): "same" keeps
# them (a function of one value), "test" one yes/no key per namespace
_SAME = {"lower", "prefix", "suffix", "shape", "longshape", "either"}
_TEST = {"regex", "lexicon"}


@dataclass
class Bound:
    """Upper bounds on an expression over the data: distinct attribute
    ``keys``, ``items`` it gives at one unit, and key ``spaces`` (the
    offsets or parts its keys are prefixed by)."""

    keys: int
    items: int
    spaces: int


BIAS = Bound(1, 1, 1)   # the one key of a template without observations


@dataclass
class ColumnCounts:
    """Distinct values per text column, distinct words per column (for
    ``tokens``; counted only when asked), and the most words in one field."""

    values: dict[str, int]
    words: dict[str, int]
    most_words: dict[str, int]
    dims: dict[str, int]


def count_columns(spec: ast.Spec, sentences: Iterable[Sentence],
                  word_columns: set[str]) -> ColumnCounts:
    """One pass over labelled sentences: distinct values of each column the
    spec reads (the words of ``word_columns``), and each vector column's
    dimension."""
    names = [c.name for c in spec.columns]
    kinds = {c.name: c.kind for c in spec.columns}
    read = [(j, n) for j, n in enumerate(names) if n != ast.SKIP_COLUMN]
    seen: dict[str, set] = {n: set() for _, n in read}
    words: dict[str, set] = {n: set() for n in word_columns}
    most = dict.fromkeys(word_columns, 0)
    dims: dict[str, int] = {}
    for sent in sentences:
        if not sent.rows or len(sent.rows[0]) != len(names):
            continue   # (a file without the label column: compiling refuses it, located)
        for j, name in read:
            field = [row[j] for row in sent.rows]
            seen[name].update(field)
            if kinds[name] == "vector" and name not in dims:
                dims[name] = field[0].count(",") + 1
            if name in words:
                for text in field:
                    split = text.split()
                    words[name].update(split)
                    most[name] = max(most[name], len(split))
    return ColumnCounts({n: len(s) for n, s in seen.items()},
                        {n: len(s) for n, s in words.items()}, most, dims)


class Bounds:
    """``Bound``s of observation expressions over counted data, whose units
    number ``units`` and cover up to ``span`` tokens."""

    def __init__(self, spec: ast.Spec, counts: ColumnCounts, units: int, span: int):
        self.counts, self.units, self.span = counts, units, span
        self.kinds = {c.name: c.kind for c in spec.columns}
        self.named = {d.name: d.expr for d in spec.observations}
        self.memo: dict[str, Bound] = {}

    def of(self, e: ast.ObsExpr) -> Bound:
        """The bound of ``e``, capped by its occurrences in the data."""
        b = self._raw(e)
        return Bound(min(b.keys, self.units * b.items), b.items, b.spaces)

    def _raw(self, e: ast.ObsExpr) -> Bound:
        if isinstance(e, ast.ColumnRef):
            return self._column(e)
        if isinstance(e, ast.NameRef):
            if e.name in self.named:
                if e.name not in self.memo:   # (check bounds the depth of names)
                    self.memo[e.name] = self.of(self.named[e.name])
                return self.memo[e.name]
            return Bound(self.span if e.name == "length" else 1, 1, 1)
        if isinstance(e, (ast.Conj, ast.Disj)):
            parts = [self.of(p) for p in e.parts]
            if isinstance(e, ast.Disj):
                return Bound(sum(p.keys for p in parts), sum(p.items for p in parts),
                             sum(p.spaces for p in parts))
            keys = items = spaces = 1
            for p in parts:
                keys, items, spaces = keys * p.keys, items * p.items, spaces * p.spaces
            return Bound(keys, items, spaces)
        return self._call(e)

    def _column(self, e: ast.ColumnRef) -> Bound:
        # a range between the ends of a segment (word[u..v]) reads up to the span's tokens
        width = e.hi - e.lo + 1 + (self.span - 1 if e.lo_base != e.hi_base else 0)
        kind = self.kinds.get(e.column, "text")
        if kind == "text":
            return Bound(width * self.counts.values.get(e.column, 0), width, width)
        per = self.counts.dims.get(e.column, 1) if kind == "vector" else 1
        return Bound(width * per, width * per, width)

    def _call(self, e: ast.Call) -> Bound:
        if e.arg is None:
            return Bound(1, 1, 1)
        arg = self.of(e.arg)
        if e.func in _SAME:
            return arg
        if e.func == "pad":   # (a marker per offset besides the values)
            return Bound(arg.keys + arg.spaces, arg.items, arg.spaces)
        if e.func in _TEST:
            return Bound(arg.spaces, arg.items, arg.spaces)
        if e.func == "class":
            n = len(REGEX_CLASSES)
            return Bound(n * arg.spaces, n * arg.items, arg.spaces)
        if e.func == "tokens":
            cols = _columns(e.arg)
            words = sum(self.counts.words.get(c, 0) for c in cols)
            most = max((self.counts.most_words.get(c, 0) for c in cols), default=0)
            return Bound(arg.spaces * words, arg.items * most, arg.spaces)
        if e.func == "count":
            return Bound(1, 1, 1)
        if e.func == "zip":   # (paired position by position: no more items than a part)
            return Bound(arg.keys, arg.items, arg.spaces)
        return Bound(arg.keys, arg.items, arg.spaces)   # value: one real-valued key per item


def unit_items(spec: ast.Spec, span: int, counts: ColumnCounts | None = None) -> list[int]:
    """The most attribute items each template gives at one unit whose
    segments cover up to ``span`` tokens (``Bounds.items``; the bias: one).
    Without ``counts`` a text gives ``tokens(...)`` one word and a vector
    one dimension: a lower bound there, the same bound elsewhere."""
    if counts is None:
        ones = {c.name: 1 for c in spec.columns}
        counts = ColumnCounts({}, {}, ones, ones)
    bounds = Bounds(spec, counts, 1, span)
    return [max(1, sum(bounds.of(e).items for e in tpl.observations)) for tpl in spec.templates]


def attribute_bound(spec: ast.Spec, counts: ColumnCounts, units: int, span: int) -> int:
    """The most distinct attributes the templates have over data of
    ``units`` units counted as ``counts`` (``Bounds.keys``)."""
    bounds = Bounds(spec, counts, units, span)
    return sum(sum(bounds.of(e).keys for e in tpl.observations) or 1 for tpl in spec.templates)


def _columns(e: ast.ObsExpr) -> set[str]:
    """The columns an expression reads directly (not through names)."""
    if isinstance(e, ast.ColumnRef):
        return {e.column}
    if isinstance(e, ast.Call):
        return _columns(e.arg) if e.arg is not None else set()
    if isinstance(e, (ast.Conj, ast.Disj)):
        return set().union(*(_columns(p) for p in e.parts))
    return set()


def token_columns(spec: ast.Spec) -> set[str]:
    """Columns whose words ``tokens(...)`` reads anywhere in the spec."""
    out: set[str] = set()

    def walk(e: ast.ObsExpr) -> None:
        if isinstance(e, ast.Call):
            if e.func == "tokens" and e.arg is not None:
                out.update(_columns(e.arg) or {c.name for c in spec.columns})
            if e.arg is not None:
                walk(e.arg)
        elif isinstance(e, (ast.Conj, ast.Disj)):
            for p in e.parts:
                walk(p)

    for d in spec.observations:
        walk(d.expr)
    for tpl in spec.templates:
        for e in tpl.observations:
            walk(e)
    return out


@dataclass
class Tally:
    """What one pass over labelled column data counts (``fgl.io.tally``):
    the distinct gold ``labels`` (in any order), each token's label as an
    index into them (``ids``, sequence after sequence), the tokens of each
    sequence (``lengths``) and the ``columns``' counts."""

    labels: list[str]
    ids: np.ndarray
    lengths: np.ndarray
    columns: ColumnCounts


@dataclass
class Counted:
    """The first pass of compiling, as counts: the label ``layer``, the
    label id of every gold unit (``gold``, sequence after sequence), the
    gold ``units`` and the ``lengths`` (tokens) of each sequence, the units
    per token (``span``: the most tokens a unit covers) and the
    ``columns``' counts."""

    layer: Layer
    gold: np.ndarray
    units: np.ndarray
    lengths: np.ndarray
    span: int
    columns: ColumnCounts


def counted_sentences(spec: ast.Spec, model_cls: type, sentences: Sequence[Sentence],
                      source: str) -> Counted | None:
    """The first pass over ``sentences`` as compiling makes it
    (``read_gold``, with its located errors), and their columns counted;
    None when ``model_cls`` is not a sequence model."""
    from fgl.compile.sequence import SequenceModel  # (with its engines: not for a tally)

    if not issubclass(model_cls, SequenceModel):
        return None
    layer, gold, spans = model_cls.read_gold(spec, lambda: sentences, source)
    lengths = np.array([segs[-1][1] + 1 if segs else 0 for segs in spans], dtype=np.int64)
    return Counted(layer, np.array([y for seq in gold for y in seq], dtype=np.int64),
                   np.array([len(seq) for seq in gold], dtype=np.int64), lengths,
                   model_cls.span_limit(spec, int(lengths.max(initial=1))),
                   count_columns(spec, sentences, token_columns(spec)))


def counted_tally(spec: ast.Spec, engine: str, tally: Callable[[], Tally | None]
                  ) -> Counted | None:
    """The first pass of compiling for the ``chain`` or ``segments``
    ``engine`` made from ``tally()`` (asked for only by those engines), as
    ``counted_sentences`` makes it from sentences; None for another engine,
    when ``tally()`` is None, or for data compiling refuses (a label
    outside the declared ones, a segment the spec cannot hold) — read the
    sentences then, whose errors say where."""
    if engine not in ("chain", "segments"):
        return None
    counts = tally()
    if counts is None:
        return None
    return _chain_counted(spec, counts) if engine == "chain" else _segment_counted(spec, counts)


def _chain_counted(spec: ast.Spec, tally: Tally) -> Counted | None:
    """A chain's first pass: one unit per token, labelled by the declared
    labels, else by those of the data, sorted."""
    declared = spec.label_sets.get(spec.outputs[0])
    layer = Layer(spec.outputs[0], list(declared[0]) if declared else sorted(tally.labels))
    if not layer.index.keys() >= set(tally.labels):
        return None
    ids = np.array([layer.index[y] for y in tally.labels], dtype=np.int64)
    return Counted(layer, ids[tally.ids], tally.lengths, tally.lengths, 1, tally.columns)


def _segment_counted(spec: ast.Spec, tally: Tally) -> Counted | None:
    """A segment model's first pass: the gold segments of each sequence's
    tags (``segments_from_tags``), labelled in order; None when a
    sequence's tags make a segment the spec cannot hold."""
    labels: list[str] = []
    units = np.zeros(len(tally.lengths), dtype=np.int64)
    tags = [tally.labels[k] for k in tally.ids.tolist()]
    # (the sentence only locates a message, which reading the sentences then gives)
    stand_in = Sentence([], list(range(int(tally.lengths.max()))), 0, "")
    end = 0
    for i, n in enumerate(tally.lengths.tolist()):
        try:
            segs = segments_from_tags(tags[end:end + n], spec.segments, stand_in)
        except DataError:
            return None
        end += n
        labels += [y for _, _, y in segs]
        units[i] = len(segs)
    layer = Layer(spec.outputs[0], sorted(set(labels)))
    return Counted(layer, np.array([layer.index[y] for y in labels], dtype=np.int64), units,
                   tally.lengths, span_limit(spec.segments, int(tally.lengths.max())),
                   tally.columns)


def template_plans(spec: ast.Spec, counted: Counted, settings: TrainSettings
                   ) -> list[TemplatePlan]:
    """Each template's plan as ``SequenceModel.template_plans`` makes it:
    its label window over the gold units, with the patterns declared or
    seen there (found with numpy, ``_windows``)."""
    def observed(lengths: list[int]) -> Iterable[tuple[int, ...]]:
        for m in lengths:
            yield from _windows(counted.gold, counted.units, m)

    return window_plans(spec, counted.layer, observed, settings.sigma, settings.min_count)


def _windows(gold: np.ndarray, units: np.ndarray, m: int) -> list[tuple[int, ...]]:
    """The distinct runs of ``m`` gold labels inside one sequence (whose
    units number ``units``)."""
    if len(gold) < m:
        return []
    sequence = np.repeat(np.arange(len(units)), units)
    inside = sequence[m - 1:] == sequence[:len(sequence) - m + 1]
    runs = np.lib.stride_tricks.sliding_window_view(gold, m)[inside]
    return [tuple(run) for run in np.unique(runs, axis=0).tolist()]


@dataclass
class Estimate:
    """Upper bounds on a model's attributes and features per template, and
    its memory (``footprint``), from counts; the counts it was made from."""

    attributes: list[int]
    features: list[int]
    footprint: Footprint
    plans: list[TemplatePlan]
    n_labels: int
    z_list: list[tuple[int, ...]]
    n_sequences: int
    tokens: int

    def lines(self) -> list[str]:
        """What ``fgl explain`` prints in place of the compiled table's sizes."""
        n_forward, n_states = chain_states(self.n_labels, self.z_list)
        return [f"labels (n = {self.n_labels}), patterns |Z| = {len(self.z_list)}, maximum "
                f"order {max(len(z) for z in self.z_list) - 1}",
                f"forward states |P| = {n_forward}, backward states |S| = |P|·n = {n_states}",
                f"features: at most {sum(self.features):,} (an upper bound estimated from the "
                "counts of distinct column values, labels and patterns; not built: `fgl train` "
                "counts them exactly)", "templates:",
                *[f"  {p.name}: at most {a:,} attributes x {len(p.patterns):,} patterns "
                  f"(support {p.support}): at most {f:,} features"
                  for p, a, f in zip(self.plans, self.attributes, self.features)],
                f"training data: {self.n_sequences} sequences, {self.tokens} tokens",
                self.footprint.line().replace("memory: about", "memory: at most about", 1)]


def estimate_counted(spec: ast.Spec, counted: Counted, settings: TrainSettings) -> Estimate:
    """Bound a chain or segment model's attributes, features and memory
    from ``counted`` (module docstring), refusing, as ``fgl train`` does, a
    model whose label states alone exceed the budget (``check_counts``)."""
    plans = template_plans(spec, counted, settings)
    n_labels = len(counted.layer.labels)
    z_list = pattern_list(n_labels, plans)
    span, tokens = counted.span, int(counted.lengths.sum())
    # each sequence's last token: all that the budget reads of its gold units
    ends = [[(0, n - 1)] for n in counted.lengths.tolist()]
    check_counts(span, spec, plans, z_list, n_labels, ends, settings.jobs)
    check_encoding(span, spec, plans, z_list, n_labels, ends, settings.jobs,
                   unit_items(spec, span, counted.columns),
                   lambda: attribute_bound(spec, counted.columns, tokens * span, span))
    gold_units = int(counted.units.sum())
    bounds = Bounds(spec, counted.columns, tokens * span, span)
    attributes, features, items = [], [], []
    for tpl, plan in zip(spec.templates, plans):
        parts = [bounds.of(e) for e in tpl.observations] or [BIAS]
        a, k = sum(p.keys for p in parts), sum(p.items for p in parts)
        f = a * len(plan.patterns)
        if plan.support != "all":
            lengths = len({len(z) for z in plan.patterns}) or 1
            f = min(f, gold_units * k * lengths)
        attributes.append(a)
        features.append(f)
        items.append(k)
    fp = counted_footprint(span, plans, z_list, n_labels, ends, settings.jobs,
                           features=features, attributes=sum(attributes),
                           unit_rows=tokens * span * sum(items))
    fp.notes = [f"makes at most {f:,} features" for f in features]
    return Estimate(attributes, features, fp, plans, n_labels, z_list, len(ends), tokens)


def estimate(spec: ast.Spec, model_cls: type, sentences: Sequence[Sentence],
             settings: TrainSettings, source: str) -> Estimate | None:
    """``estimate_counted`` of the first pass over ``sentences``
    (``counted_sentences``); None when ``model_cls`` is not a sequence
    model."""
    counted = counted_sentences(spec, model_cls, sentences, source)
    return None if counted is None else estimate_counted(spec, counted, settings)


def sized_lines(spec: ast.Spec, counted: Counted | None, settings: TrainSettings
                ) -> list[str] | None:
    """``fgl explain``'s sizes of a chain or segment model whose features
    may number more than ``footprint.SIZED_ONLY_FEATURES``, estimated from
    ``counted`` without its feature table; None when the bound is below
    that (the model is compiled and counted exactly) or nothing was
    counted (not a sequence model)."""
    if counted is None:
        return None
    est = estimate_counted(spec, counted, settings)
    return est.lines() if sum(est.features) > footprint.SIZED_ONLY_FEATURES else None
