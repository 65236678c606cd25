"""A chain or segment model's compile steps over one shard of training data
(``fgl.compile.summaries``): what a Dask worker runs on its own shards, with
the one-machine compile's own code (``SequenceModel.collect_gold``,
``FeatureTable``).

1. collect the labels: ``SequenceModel.collect_gold`` (a ``LabelSummary``);
   their merge fixes the label layer, the templates' patterns and the
   longest sequence: a ``SequencePlan``;
2. collect the rows: ``collect_rows``, the feature table's reading of the
   shard's gold units (a ``RowSummary``); their merge numbers the rows as a
   one-machine compile of the shards in order does;
3. encode: ``encode_shard``, every unit's rows in that numbering, with the
   gold labels; the units' row counts (``row_counts``) summed over the
   shards order the rows by frequency, and each shard is renumbered
   (``fgl.compile.feature_table.renumber_rows``), as ``FeatureTable.finish``
   renumbers the one machine's.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fgl.compile.feature_table import FeatureTable, UnitModel
from fgl.compile.frontend import Layer, TemplatePlan
from fgl.compile.sequence_budget import check_input
from fgl.compile.summaries import RowSummary
from fgl.compile.vocabulary import Vocabulary
from fgl.data.sentence import Sentence
from fgl.engines.sequence.encoded import EncodedData
from fgl.engines.sequence.structure import ChainStructure
from fgl.features.observations import TemplateAttributes
from fgl.lang import ast


def widest(spec: ast.Spec) -> int:
    """The most labels one template window spans (``y[t-k..t]``: k + 1)."""
    return max((1 - min(ref.lo for ref in tpl.labels) for tpl in spec.templates), default=1)


@dataclass
class SequencePlan:
    """What the merge of the shards' labels fixed, for the later steps: the
    model class, its label layer, template plans and pattern list, and the
    longest sequence (which sets a segment model's units per token)."""

    cls: type
    spec: ast.Spec
    base_dir: Path
    lexicons: dict[str, frozenset[str]]
    layer: Layer
    plans: list[TemplatePlan]
    z_list: list[tuple[int, ...]]
    longest: int

    def table(self, check_budget: bool = False) -> FeatureTable:
        """An empty feature table of the plan."""
        model: UnitModel = self.cls
        return FeatureTable(model, self.spec, self.plans, self.z_list,
                            TemplateAttributes(self.spec, self.base_dir, self.lexicons),
                            len(self.layer.labels), 1, self.longest, check_budget)

    def gold(self, sentences: list[Sentence]
             ) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
        """Per sentence, its gold label ids and (first, last) token spans."""
        _, tags, spans = self.cls.collect_gold(self.spec, sentences, windows=False)
        index = self.layer.index
        return [[index[y] for y in ys] for ys in tags], spans


def collect_rows(plan: SequencePlan, sentences: list[Sentence], shard: int) -> RowSummary:
    """The rows of the shard's gold units' attributes, with their supported
    patterns (``FeatureTable.read`` making rows, adding no units)."""
    table = plan.table()
    gold, spans = plan.gold(sentences)
    table.read(lambda: sentences, gold, spans, "<shard>", add_units=False)
    return table.summary(shard)


def encode_shard(plan: SequencePlan, vocabs: list[Vocabulary], sentences: list[Sentence]
                 ) -> EncodedData:
    """The shard's units as rows of the merged vocabularies ``vocabs``
    (``FeatureTable.read`` adding units, making no rows), with gold labels;
    a shard whose units, their rows and its longest sequence's scratch would
    not fit this worker's memory budget is refused at its longest sequence
    first (``check_input``)."""
    table = plan.table()
    check_input(table.L, ChainStructure.build(len(plan.layer.labels), plan.z_list),
                len(plan.spec.templates), sentences, 1, purpose="training on this worker")
    table.vocabs = vocabs
    gold, spans = plan.gold(sentences)
    table.read(lambda: sentences, gold, spans, "<shard>", make_rows=False)
    return encoded_data(table.units.arrays(), gold, spans, table.L)


def encoded_data(units: tuple[np.ndarray, np.ndarray, np.ndarray], gold: list[list[int]],
                 spans: list[list[tuple[int, int]]], units_per_token: int) -> EncodedData:
    """The engine's data: the units' arrays (ptr, rows, values) with each
    token's gold label and segment starts."""
    seq_ptr = np.zeros(len(gold) + 1, dtype=np.int64)
    seq_ptr[1:] = np.cumsum([segs[-1][1] + 1 if segs else 0 for segs in spans])
    gold_tokens, starts = [], []
    for segs, seq in zip(spans, gold):
        for (u, v), y in zip(segs, seq):
            gold_tokens.extend([y] * (v - u + 1))
            starts.extend([1] + [0] * (v - u))
    return EncodedData(seq_ptr, *units, np.array(gold_tokens, dtype=np.int64),
                       np.array(starts, dtype=np.int64), units_per_token)
