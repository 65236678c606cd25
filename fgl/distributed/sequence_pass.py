"""Worker side of compiling a chain or segment model (``fgl.compile.sequence``)
shard by shard.

The one-machine compile reads the data twice: gold labels and patterns,
then the feature table and every unit's attribute rows, numbering rows in
the order first met and finally by how often they occur.  Here each pass
runs on the workers over their own shards and returns only summaries:

1. ``gold_summary``: the labels seen, the gold label windows (every
   length up to the widest template), sequence and token counts;
2. ``attribute_summary``: each template's attribute keys in the order
   first met on gold units, and the label patterns each was seen with;
3. ``encode_shard``: the shard's units as attribute rows in the driver's
   merged numbering, and ``row_counts`` of it; the driver then orders the
   rows by frequency and ``EncodedShard.final`` renumbers the shard.

A segment model's non-gold units (candidate segments no gold segment
covers) carry every attribute met on a gold unit anywhere in the data, as
the one-machine compile gives them.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fgl import registry
from fgl.compile.frontend import Layer, TemplatePlan
from fgl.compile.sequence_budget import check_input
from fgl.compile.unit_rows import UnitRows
from fgl.engines.sequence.encoded import EncodedData
from fgl.engines.sequence.structure import ChainStructure
from fgl.features.observations import TemplateAttributes, sentence_columns
from fgl.lang import ast


@dataclass
class GoldSummary:
    """What pass 1 learns of one shard."""

    labels: set[str]
    windows: set[tuple[str, ...]]
    n_sequences: int
    n_tokens: int
    longest: int           # tokens of the longest sequence holding a gold segment


@dataclass
class SequencePlan:
    """What the driver decided after pass 1, sent to every worker."""

    spec: ast.Spec
    base_dir: Path
    lexicons: dict[str, frozenset[str]]
    layer: Layer
    plans: list[TemplatePlan]
    z_list: list[tuple[int, ...]]
    L: int


@dataclass
class AttributeSummary:
    """What pass 2 learns of one shard: attribute rows in the order first met
    on gold units, with the pattern ids each row was seen with."""

    keys: list[tuple[int, str]] = field(default_factory=list)
    patterns: list[set[int]] = field(default_factory=list)


def widest(spec: ast.Spec) -> int:
    """The most labels one template window spans (``y[t-k..t]``: k + 1)."""
    return max((1 - min(ref.lo for ref in tpl.labels) for tpl in spec.templates), default=1)


def gold_summary(spec: ast.Spec, sentences: list) -> GoldSummary:
    """Pass 1 over a shard's sentences (``SequenceModel.read_gold``'s
    checks: a label column, declared labels, well-formed segments)."""
    cls = registry.choose(spec).model
    declared = cls.declared_layer(spec)
    width = widest(spec)
    labels: set[str] = set()
    windows: set[tuple[str, ...]] = set()
    tokens = longest = 0
    for sent in sentences:
        segs = cls.sentence_gold(spec, sent, declared)
        seq = [sys.intern(y) for _, _, y in segs]
        labels.update(seq)
        for m in range(1, width + 1):
            windows.update(tuple(seq[t - m + 1:t + 1]) for t in range(m - 1, len(seq)))
        tokens += len(sent.rows)
        if segs:
            longest = max(longest, segs[-1][1] + 1)
    return GoldSummary(labels, windows, len(sentences), tokens, longest)


class _Shard:
    """A shard's sentences with what every pass needs per sentence."""

    def __init__(self, plan: SequencePlan, sentences: list):
        self.plan, self.sentences = plan, sentences
        self.cls = registry.choose(plan.spec).model
        self.attributes = TemplateAttributes(plan.spec, plan.base_dir, plan.lexicons)
        z_index = {z: i for i, z in enumerate(plan.z_list)}
        self.pattern_sets = [{z: z_index[z] for z in p.patterns} for p in plan.plans]
        self.lengths = [sorted({len(z) for z in p.patterns}) for p in plan.plans]

    def __iter__(self):
        """Per sentence: gold ids, gold spans, gold unit -> segment, and
        per template the units' attribute items."""
        plan, index, L = self.plan, self.plan.layer.index, self.plan.L
        for sent in self.sentences:
            segs = self.cls.sentence_gold(plan.spec, sent, None)
            seq = [index[y] for _, _, y in segs]
            spans = [(u, v) for u, v, _ in segs]
            cols, _ = sentence_columns(plan.spec, sent.rows, sent.lines, sent.file)
            T = len(sent.rows)
            gold_unit = None if L == 1 else {u * L + v - u: j for j, (u, v) in enumerate(spans)}
            yield seq, spans, gold_unit, self.cls.unit_attributes(self.attributes, cols, T, L)

    def matched(self, ti: int, seq: list[int], j: int) -> list[int]:
        """The template's patterns ending at gold segment ``j`` (support observed)."""
        if self.plan.plans[ti].support != "observed":
            return []
        pset, out = self.pattern_sets[ti], []
        for m in self.lengths[ti]:
            if m <= j + 1:
                z = pset.get(tuple(seq[j - m + 1:j + 1]))
                if z is not None:
                    out.append(z)
        return out


def attribute_summary(plan: SequencePlan, sentences: list) -> AttributeSummary:
    """Pass 2 over a shard (``FeatureTable.add``'s reading of gold units)."""
    shard = _Shard(plan, sentences)
    out = AttributeSummary()
    rows: list[dict[str, int]] = [{} for _ in plan.plans]
    for seq, _, gold_unit, per_template in shard:
        for ti, units in enumerate(per_template):
            vocab = rows[ti]
            for unit, items in enumerate(units):
                j = unit if gold_unit is None else gold_unit.get(unit)
                if j is None:
                    continue
                matched = shard.matched(ti, seq, j)
                for key, _ in items:
                    r = vocab.get(key)
                    if r is None:
                        r = vocab[key] = len(out.keys)
                        out.keys.append((ti, key))
                        out.patterns.append(set())
                    out.patterns[r].update(matched)
    return out


def encode_shard(plan: SequencePlan, vocabs: list[dict[str, int]], sentences: list
                 ) -> EncodedData:
    """Pass 3: the shard's units as rows of the merged (first-met) numbering,
    with gold labels; a shard whose units, their rows and its longest
    sequence's scratch would not fit this worker's memory budget is refused
    at its longest sequence first (``check_input``)."""
    check_input(plan.L, ChainStructure.build(len(plan.layer.labels), plan.z_list),
                len(plan.spec.templates), sentences, 1, purpose="training on this worker")
    shard = _Shard(plan, sentences)
    const_key, L = shard.cls.const_key, plan.L
    vocabs = [dict(v.items()) for v in vocabs]   # (a key at a time below: a dict's lookups)
    units = UnitRows()
    seq_ptr, gold, starts = [0], [], []
    for seq, spans, gold_unit, per_template in shard:
        n_units = len(per_template[0]) if per_template else 0
        unit_rows: list[list[int]] = [[] for _ in range(n_units)]
        unit_vals: list[list[float]] = [[] for _ in range(n_units)]
        for ti, unit_items in enumerate(per_template):
            vocab = vocabs[ti]
            for unit, items in enumerate(unit_items):
                for key, v in items:
                    r = vocab.get(key)
                    if r is None or key == const_key:
                        continue
                    unit_rows[unit].append(r)
                    unit_vals[unit].append(v)
        for rows, vals in zip(unit_rows, unit_vals):
            units.add(rows, vals)
        for (u, v), y in zip(spans, seq):
            gold.extend([y] * (v - u + 1))
            starts.extend([1] + [0] * (v - u))
        seq_ptr.append(seq_ptr[-1] + (spans[-1][1] + 1 if spans else 0))
    tok_ptr, tok_row, tok_val = units.arrays()
    return EncodedData(np.array(seq_ptr, dtype=np.int64), tok_ptr, tok_row, tok_val,
                       np.array(gold, dtype=np.int64),
                       np.array(starts, dtype=np.int64), L)


def row_counts(shard: "EncodedShard", n_rows: int) -> np.ndarray:
    """How often each attribute row occurs in the shard's units."""
    return np.bincount(shard.data.tok_row, minlength=n_rows).astype(np.int64)


@dataclass
class EncodedShard:
    """A shard's encoded data, in the merged first-met numbering until
    ``final`` renumbers it (in place, once: a worker keeps one copy)."""

    data: EncodedData
    renumbered: bool = False

    def final(self, new_id: np.ndarray, block: int = 1 << 20) -> EncodedData:
        """The data with rows renumbered by the driver's final order."""
        if not self.renumbered:
            rows = self.data.tok_row
            for lo in range(0, len(rows), block):
                rows[lo:lo + block] = new_id[rows[lo:lo + block]]
            self.renumbered = True
        return self.data
