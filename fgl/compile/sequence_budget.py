"""The memory a chain or segment model takes (``fgl.compile.footprint``):
the estimate of a compiled model, and the refusal, from the first pass's
counts alone, of one whose label states, units or inference scratch would
exceed the budget before any of them is made.
"""
from __future__ import annotations

from typing import Callable

from fgl.compile.budget import memory_budget
from fgl.compile.footprint import (
    BATCH_ITEMS,
    BYTES_PER_UNIT_MADE,
    BYTES_PER_UNIT_MADE_TEMPLATE,
    PY_PER_ITEM_MADE,
    PY_PER_TRANSITION,
    STATES_ADVICE,
    Footprint,
    chain_states,
    sequence_footprint,
)
from fgl.compile.frontend import TemplatePlan
from fgl.data.sentence import Sentence
from fgl.engines.sequence.structure import ChainStructure
from fgl.errors import DataError
from fgl.lang import ast
from fgl.sizes import format_size

ADVICE = ("use support = observed, fewer patterns or fewer observations (in a segment model, "
          "a shorter `segments max`), or give a larger budget")
ITEMS_ADVICE = ("conjoin fewer or narrower observations (a conjunction multiplies the items of "
                "its parts), train on less data, or give a larger budget")


def model_footprint(span: int, structure: ChainStructure, features: list[int], notes: list[str],
               attributes: int, tokens: int, units: int, unit_rows: int, longest: int,
               n_sequences: int, jobs: int) -> Footprint:
    """``sequence_footprint`` of a model whose units cover up to ``span`` tokens."""
    return sequence_footprint(features, notes, ADVICE, attributes=attributes, tokens=tokens,
                              units=units, unit_rows=unit_rows, longest=longest, span=span,
                              n_labels=structure.n_labels, n_forward=structure.n_forward,
                              n_patterns=len(structure.patterns), n_sequences=n_sequences,
                              jobs=jobs)


def units_made(longest: int, span: int, n_templates: int) -> float:
    """The transient bytes of making the units of the longest sequence
    (``longest`` tokens, ``span`` lengths each) for ``n_templates`` templates."""
    per_unit = BYTES_PER_UNIT_MADE + BYTES_PER_UNIT_MADE_TEMPLATE * n_templates
    return float(longest * span * per_unit)


def counted_footprint(span: int, plans: list[TemplatePlan], z_list: list[tuple[int, ...]],
                      n_labels: int, spans: list[list[tuple[int, int]]], jobs: int, *,
                      features: list[int], attributes: int, unit_rows: int) -> Footprint:
    """The memory of a model known by counts alone — its labels, label
    patterns, the gold units ``spans`` of the first pass over the data, and
    ``features`` per template, ``attributes`` and ``unit_rows`` as far as
    they are counted — before anything is made: the estimate that both
    ``check_counts`` (when training) and ``fgl.compile.estimate`` (``fgl
    explain``) price."""
    n_forward, n_states = chain_states(n_labels, z_list)
    lengths = [segs[-1][1] + 1 if segs else 0 for segs in spans]
    longest, tokens = max(lengths, default=1), sum(lengths)
    fp = sequence_footprint(features, [""] * len(plans), ADVICE, attributes=attributes,
                            tokens=tokens, units=tokens * span, unit_rows=unit_rows,
                            longest=longest, span=span, n_labels=n_labels, n_forward=n_forward,
                            n_patterns=len(z_list), n_sequences=len(spans), jobs=jobs)
    fp.parts["label states"] = float(n_states * PY_PER_TRANSITION)
    fp.parts["training data"] += units_made(longest, span, len(plans))
    return fp


def check_counts(span: int, spec: ast.Spec, plans: list[TemplatePlan],
                  z_list: list[tuple[int, ...]], n_labels: int,
                  spans: list[list[tuple[int, int]]], jobs: int) -> None:
    """Refuse, from the counts the first pass over the data gives (labels,
    label patterns, tokens, the longest sequence), a model whose state
    machine, units and inference scratch alone would exceed the memory
    budget — before any of them is made — at the `segments max` when the
    candidate segments take most, else at the template of the most label
    patterns when the label states and inference take more than the data.
    Features count as a lower bound here (one attribute per pattern of a
    ``support = all`` template; the vocabularies are not read yet):
    ``FeatureTable`` counts them exactly before they are made,
    and refuses what is left (a chain's training data, say)."""
    fp = counted_footprint(span, plans, z_list, n_labels, spans, jobs,
                           features=[len(p.patterns) if p.support == "all" else 0
                                     for p in plans], attributes=0, unit_rows=0)
    if fp.total <= memory_budget():
        return
    n_forward, n_states = chain_states(n_labels, z_list)
    lengths = [segs[-1][1] + 1 if segs else 0 for segs in spans]
    longest, tokens = max(lengths, default=1), sum(lengths)
    per_span = fp.parts["inference"] + fp.parts["training data"]
    if span > 1 and per_span >= fp.parts["label states"]:   # (span > 1: a segment model)
        fp.advice = ("use a shorter `segments max` (or shorter per-label limits), split the "
                     "longest sequences, or give a larger budget")
        fp.refuse(f"`segments max {span}` makes {longest * span:,} candidate segments in the "
                  f"longest sequence ({longest:,} tokens x {span} lengths; {tokens * span:,} in "
                  f"all)", spec.segments.loc)
    if fp.parts["label states"] + fp.parts["inference"] < fp.parts["training data"]:
        return   # (a chain's data, read already: the exact count after the rows refuses it)
    ti = max(range(len(plans)), key=lambda t: (len(plans[t].patterns), -t))
    tpl = spec.templates[ti]
    fp.advice = STATES_ADVICE
    fp.refuse(f"template '{tpl.name}' has {len(plans[ti].patterns):,} label patterns over "
              f"{n_labels:,} labels: with the others, {n_forward:,} forward states x {n_labels:,} "
              f"labels = {n_states:,} label-state transitions, each scored at every "
              f"{'unit' if span > 1 else 'token'} of sequences of up to {longest:,} tokens",
              tpl.loc)


def encoding_bytes(longest: int, span: int, per_unit: int, unit_rows: int) -> float:
    """The transient bytes of encoding the largest batch of sentences
    (``fgl.compile.unit_rows.batches``), whose units give ``per_unit``
    attribute items each: the longest sequence's (``longest`` tokens,
    ``span`` units each), or ``BATCH_ITEMS`` when the data has as many."""
    return float(max(longest * span * per_unit, min(unit_rows, BATCH_ITEMS)) * PY_PER_ITEM_MADE)


def check_encoding(span: int, spec: ast.Spec, plans: list[TemplatePlan],
                   z_list: list[tuple[int, ...]], n_labels: int,
                   spans: list[list[tuple[int, int]]], jobs: int, items: list[int],
                   attributes: Callable[[], int]) -> None:
    """Refuse, before any unit is made, training data whose attribute items
    would take more than the memory budget: template t gives up to
    ``items[t]`` items at each unit (``fgl.compile.bounds.unit_items``;
    ``obs b = a & a & ...`` ten times over three offsets gives 59,049 per
    token), each a unit row once encoded and a Python string while its batch
    is (``encoding_bytes``), and the distinct ones are the attributes — at
    most one per item, and at most ``attributes()`` (the bound ``fgl
    explain`` prints, from a count of the data's distinct values: asked for
    only when one per item would pass the budget).  ``counted_footprint``
    prices the rest as ``check_counts`` does; located at the template of the
    most items.  Refused only when the items make the difference: data over
    the budget at one item per unit and template (and no attribute) is left
    to the exact count of the features, whose message says more."""
    lengths = [segs[-1][1] + 1 if segs else 0 for segs in spans]
    longest, tokens = max(lengths, default=1), sum(lengths)

    def footprint(per_unit: int, n_attributes: int) -> Footprint:
        unit_rows = tokens * span * per_unit
        fp = counted_footprint(span, plans, z_list, n_labels, spans, jobs,
                               features=[len(p.patterns) if p.support == "all" else 0
                                         for p in plans],
                               attributes=min(unit_rows, n_attributes), unit_rows=unit_rows)
        fp.parts["encoding"] = encoding_bytes(longest, span, per_unit, unit_rows)
        return fp

    unit_rows = tokens * span * sum(items)
    budget = memory_budget()
    if footprint(sum(items), unit_rows).total <= budget \
            or footprint(len(items), 0).total > budget:
        return
    n_attributes = min(unit_rows, attributes())
    fp = footprint(sum(items), n_attributes)
    if fp.total <= budget:
        return
    ti = max(range(len(items)), key=lambda t: (items[t], -t))
    unit = "unit (token x segment length)" if span > 1 else "token"
    fp.advice = ITEMS_ADVICE
    fp.refuse(f"template '{spec.templates[ti].name}' gives up to {items[ti]:,} attribute items "
              f"at each {unit}: with the others, {unit_rows:,} items over the {tokens:,} tokens "
              f"of the training data, up to {n_attributes:,} of them distinct attributes",
              spec.templates[ti].loc)


def check_reading(spec: ast.Spec, items: list[int], span: int, made: dict[str, int],
                  read: int, total: int) -> None:
    """Refuse, once what reading the training data has ``made`` so far
    (bytes per part: the attribute keys, the units' rows) passes the memory
    budget, the model it is making — after ``read`` of its ``total`` tokens,
    with the whole estimated in proportion — before the next batch adds
    more: what ``check_encoding`` cannot bound in advance, the distinct keys
    (at most one per item, often far fewer), counted as they are met.  Once
    all is read the exact count of the features follows, and refuses
    instead."""
    used = sum(made.values())
    if used <= memory_budget() or not read or read >= total:
        return   # (all read: the exact count of the features follows, and says more)
    share = total / read
    fp = Footprint({k: v * share for k, v in made.items()}, [0.0] * len(spec.templates),
                   [""] * len(spec.templates), ITEMS_ADVICE)
    ti = max(range(len(items)), key=lambda t: (items[t], -t))
    unit = "unit (token x segment length)" if span > 1 else "token"
    fp.refuse(f"the attribute keys and unit rows made from the first {read:,} of the "
              f"{total:,} tokens of the training data already take {format_size(used)} "
              f"(template '{spec.templates[ti].name}' gives the most attribute items, up to "
              f"{items[ti]:,} at each {unit})", spec.templates[ti].loc)


def check_input(span: int, structure: ChainStructure, n_templates: int,
                sentences: list[Sentence], jobs: int, purpose: str = "tagging",
                items: list[int] | None = None) -> None:
    """Refuse data a trained model cannot encode and run within the budget
    (its units, their attribute rows at one per template and unit, the
    largest batch's ``items`` per unit and template while it is encoded —
    ``encoding_bytes`` — and the longest sequence's inference scratch),
    located at the longest sequence, before any of it is made: tagging one
    sentence of 100,000 tokens under `segments max 1000` would take over
    20 GB."""
    lengths = [len(s.rows) for s in sentences]
    if not lengths:
        return
    tokens, units = sum(lengths), sum(n * span for n in lengths)
    fp = model_footprint(span, structure, [0] * n_templates, [""] * n_templates, 0, tokens,
                         units, units * max(n_templates, 1), max(lengths), len(lengths), jobs)
    fp.parts["training data"] += units_made(max(lengths), span, n_templates)
    if items:
        fp.parts["encoding"] = encoding_bytes(max(lengths), span, sum(items),
                                              units * sum(items))
    budget = memory_budget()
    if fp.total <= budget:
        return
    longest = max(sentences, key=len)
    what = (f"{len(longest):,} tokens x {span} segment lengths" if span > 1
            else f"{len(longest):,} tokens")
    plural = "s" if len(sentences) > 1 else ""
    raise DataError(f"the data ({len(sentences):,} sequence{plural}, {tokens:,} tokens; the "
                    f"longest here: {what}) would take about {format_size(fp.total)} for "
                    f"{purpose}, more than the {format_size(budget)} memory budget: split the "
                    "longest sequences or the file (or give a larger budget, `--max-memory`)",
                    longest.file, longest.lines[0] if longest.lines else 0)


def check_made(made: int, sent: Sentence, purpose: str = "tagging") -> None:
    """Refuse data whose encoding has made ``made`` bytes so far (the
    attribute keys met, the units' rows) past the memory budget, at the
    first line of ``sent``, the sentence after which they were counted:
    keys never seen in training are still interned, so their number grows
    with the data."""
    budget = memory_budget()
    if made <= budget:
        return
    raise DataError(f"the attribute keys and rows {purpose} has made up to here take "
                    f"{format_size(made)}, more than the {format_size(budget)} memory budget: "
                    "split the file (each run starts afresh) or give a larger budget "
                    "(`--max-memory`)", sent.file, sent.lines[0] if sent.lines else 0)
