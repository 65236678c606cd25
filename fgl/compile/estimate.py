"""The size of a chain or segment model estimated from counts, without its
feature table: what ``fgl explain`` prints for a spec whose table would be
large.

One pass over the data counts the distinct values of each column (and,
under ``tokens``, of each column's words); the first pass of compiling
gives the labels, the label patterns and the gold units (``Counted``).
Both come from one streaming count of the data's bytes (``Tally``, made
by ``fgl.compile.tally``; ``counted_tally``), which needs neither sentences nor
the engines' kernels — or, for data that count cannot read, from the
sentences (``counted_sentences``, whose errors are located).  An observation
expression's attributes are then bounded bottom-up (``fgl.compile.bounds``,
which the training and tagging budgets share): a column read at k
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
from fgl.compile.bounds import (
    BIAS,
    Bounds,
    ColumnCounts,
    attribute_bound,
    count_columns,
    token_columns,
    unit_items,
)
from fgl.compile.footprint import Footprint, chain_states
from fgl.compile.frontend import Layer, TemplatePlan, pattern_list, window_plans
from fgl.compile.segmentation import segments_from_tags, span_limit
from fgl.compile.sequence_budget import (
    check_counts,
    check_encoding,
    counted_footprint,
    encoding_bytes,
)
from fgl.data.sentence import Sentence
from fgl.errors import DataError
from fgl.lang import ast
from fgl.lang.settings import TrainSettings


@dataclass
class Tally:
    """What one pass over labelled column data counts (``fgl.compile.tally``):
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
    fp.parts["encoding"] = encoding_bytes(int(counted.lengths.max(initial=1)), span, sum(items),
                                          tokens * span * sum(items))
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
