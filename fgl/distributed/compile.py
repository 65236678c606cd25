"""Compiling a spec on a Dask cluster: the driver merges what workers find in
their shards and never holds the training data.

Collect rounds run on the workers and send the driver summaries — labels,
label windows, attribute keys in the order first met, the patterns each was
seen with — which it merges in shard order, so the model is the one a
one-machine compile of the concatenated shards makes: the same labels in
the same order, the same patterns, vocabularies and feature table.  Then
the model goes to the workers (as a task's value, recomputable, not
scattered data) and every worker encodes its shards and keeps them
(``EncodedShards``: Dask futures the driver holds; if a worker is lost,
Dask re-reads and re-encodes its shards elsewhere from their lineage).

Chain and segment models take two collect rounds (``fgl.distributed.
sequence_pass``: gold labels, then attributes) and an encoding one, which
also counts how often each attribute row occurs: the driver orders the rows
by it, as the one-machine compile does, and each worker renumbers its
encoded shards in place.  Factor-graph models take two collect rounds
(``fgl.distributed.graph_pass``) before the encoding.  The memory budget
(``fgl.compile.footprint``) is checked where the bytes are: the driver
prices what it holds — a chain or segment model's features, with the
weights and the optimiser's vectors, before any shard is encoded; a worker
prices each shard it encodes (a factor-graph model's ``encode`` its
factors, a chain or segment shard its units, their rows and its longest
sequence's scratch: ``sequence_pass.encode_shard``), each against the
budget of the machine it runs on.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fgl import registry
from fgl.compile.factor_features import FeatureRows, pattern_configs, template_plans
from fgl.compile.feature_table import FeatureTable, frequency_order
from fgl.compile.frontend import Layer, layer_labels, pattern_list
from fgl.compile.sequence import SequenceModel
from fgl.compile.unrolling import Unroller
from fgl.distributed import graph_pass, sequence_pass
from fgl.distributed.recipe import ModelRecipe
from fgl.distributed.reduce import tree_reduce
from fgl.distributed.shards import Shard, read_shard
from fgl.errors import DataError, FglError
from fgl.features.observations import TemplateAttributes
from fgl.lang import ast
from fgl.lang.settings import TrainSettings
from fgl.model import Model


@dataclass
class Reading:
    """How workers read shards."""

    spec: ast.Spec
    encoding: str = "utf-8"
    short_lines: str = "error"

    def read(self, shard: Shard) -> list:
        return read_shard(shard, self.spec, self.encoding, self.short_lines)


@dataclass
class EncodedShards:
    """A compiled model and how each worker encodes its shards: per shard,
    a function and its arguments (futures of what the driver merged and
    sent, or of the shard's encoding), which give the engine's encoded
    data.  Workers run them where the data is kept
    (``fgl.distributed.objective``); every future they depend on stays held
    (``held``) so that Dask can recompute them on another worker if one is
    lost."""

    model: Model
    recipe: Any             # a future of the ``ModelRecipe``
    encoders: list[tuple]   # per shard, (function, *arguments)
    shards: list[Shard]
    n_instances: int
    n_tokens: int
    held: list              # every future the encoders depend on


def compile_on_cluster(client, spec: ast.Spec, shards: list[Shard], base_dir: Path,
                       settings: TrainSettings, reading: Reading, source: str) -> EncodedShards:
    """Compile ``spec`` against the shards on ``client``'s cluster."""
    if settings.min_count > 1 or any(
            o.key == "min_count" and o.value > 1 for t in spec.templates for o in t.options):
        raise FglError("min_count (the feature cut-off) counts attributes over the whole "
                       "training data, which training on a Dask cluster does not gather; "
                       "train on one machine, or remove min_count")
    lexicons = TemplateAttributes(spec, base_dir).lexicons
    engine = registry.choose(spec).engine
    compile_passes = _COMPILERS[engine.distributed_compile]
    return compile_passes(client, engine.model, spec, shards, base_dir, lexicons, settings,
                          reading, source)


# ---------------------------------------------------------------- worker tasks

def _value(x: Any) -> Any:
    return x


def constant(client, value: Any) -> Any:
    """A future of ``value`` that Dask can recompute if every worker holding
    it is lost: a task returning it (the value travels in the task, once),
    not scattered data — which the scheduler keeps one replica of and
    cannot recompute."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="(Large object|Sending large graph)",
                                category=UserWarning)
        return client.submit(_value, value, pure=False)


def _gold_task(shard: Shard, reading: Reading) -> sequence_pass.GoldSummary:
    return sequence_pass.gold_summary(reading.spec, reading.read(shard))


def _attribute_task(shard: Shard, reading: Reading, plan: sequence_pass.SequencePlan
                    ) -> sequence_pass.AttributeSummary:
    return sequence_pass.attribute_summary(plan, reading.read(shard))


def _encode_task(shard: Shard, reading: Reading, plan: sequence_pass.SequencePlan,
                 vocabs: list[dict[str, int]]) -> sequence_pass.EncodedShard:
    return sequence_pass.EncodedShard(
        sequence_pass.encode_shard(plan, vocabs, reading.read(shard)))


def _final_task(shard: sequence_pass.EncodedShard, new_id: np.ndarray) -> Any:
    return shard.final(new_id)


def _label_task(shard: Shard, reading: Reading) -> graph_pass.LabelSummary:
    return graph_pass.label_summary(reading.spec, reading.read(shard))


def _factor_task(shard: Shard, reading: Reading, base_dir: Path, lexicons: dict,
                 layers: list[Layer]) -> graph_pass.FactorSummary:
    return graph_pass.factor_summary(reading.spec, base_dir, lexicons, layers,
                                     reading.read(shard))


def _graph_encode_task(shard: Shard, reading: Reading, recipe: ModelRecipe) -> Any:
    return recipe.build().encode(reading.read(shard), with_gold=True)


def _add_arrays(*arrays: np.ndarray) -> np.ndarray:
    total = arrays[0].copy()
    for a in arrays[1:]:
        total += a
    return total


# ---------------------------------------------------------------- chain and segments

def _compile_sequence(client, cls: type[SequenceModel], spec: ast.Spec, shards: list[Shard],
                      base_dir: Path, lexicons: dict, settings: TrainSettings, reading: Reading,
                      source: str) -> EncodedShards:
    reading_f = constant(client, reading)
    golds = client.gather(client.map(_gold_task, shards, reading=reading_f, pure=False))
    n_sequences = sum(g.n_sequences for g in golds)
    if not n_sequences:
        raise DataError("the training data has no sequences", source, 0)
    layer = cls.declared_layer(spec) or Layer(spec.outputs[0],
                                              sorted(set().union(*(g.labels for g in golds))))
    index = layer.index
    windows = sorted(set().union(*(g.windows for g in golds)))
    plans = cls.template_plans(spec, layer, [[index[y] for y in w] for w in windows],
                               settings.sigma)
    z_list = pattern_list(len(layer.labels), plans)
    longest = max((g.longest for g in golds), default=1) or 1
    plan = sequence_pass.SequencePlan(spec, base_dir, lexicons, layer, plans, z_list,
                                      cls.span_limit(spec, longest))
    plan_f = constant(client, plan)
    summaries = client.gather(client.map(_attribute_task, shards, reading=reading_f,
                                         plan=plan_f, pure=False))
    table = FeatureTable(cls, spec, plans, z_list, TemplateAttributes(spec, base_dir, lexicons),
                         len(layer.labels), 1, longest, check_budget=False)
    for summary in summaries:   # rows in the order first met over the shards in order
        for (ti, key), zs in zip(summary.keys, summary.patterns):
            table.merge_row(ti, key, zs)
    del summaries
    table.check_size()   # (the driver's share, before the workers encode: module docstring)
    merged_f = constant(client, table.vocabs)
    n_rows = len(table.row_template)
    workers = sorted(client.scheduler_info()["workers"])
    encoded = [client.submit(_encode_task, shard, reading_f, plan_f, merged_f,
                             workers=[workers[i % len(workers)]], allow_other_workers=True,
                             pure=False)
               for i, shard in enumerate(shards)]
    counts = tree_reduce(client, [client.submit(sequence_pass.row_counts, e, n_rows, pure=False)
                                  for e in encoded], _add_arrays).result()
    new_id = frequency_order(counts)   # (as FeatureTable.finish numbers rows)
    row_ptr, feat_pattern = table.renumber(new_id)
    model = cls(spec, base_dir, layer, plans, z_list, table.vocabs, row_ptr, feat_pattern,
                lexicons)
    new_id_f = constant(client, new_id)
    recipe_f = constant(client, ModelRecipe.of(model, base_dir))
    return EncodedShards(model, recipe_f,
                         [(_final_task, e, new_id_f) for e in encoded],
                         shards, n_sequences, sum(g.n_tokens for g in golds),
                         [reading_f, plan_f, merged_f, new_id_f, recipe_f, *encoded])


# ---------------------------------------------------------------- factor graphs

def _compile_graph(client, cls: type[Model], spec: ast.Spec, shards: list[Shard], base_dir: Path,
                   lexicons: dict, settings: TrainSettings, reading: Reading, source: str
                   ) -> EncodedShards:
    reading_f = constant(client, reading)
    found = client.gather(client.map(_label_task, shards, reading=reading_f, pure=False))
    n_instances = sum(f.n_instances for f in found)
    if not n_instances:
        raise DataError("the training data has no sequences", source, 0)
    layers = [Layer(name, layer_labels(spec, name, set().union(*(f.labels[name] for f in found))))
              for name in spec.outputs]
    layers += [Layer(h.name, list(h.labels), True) for h in spec.hidden]
    summaries = client.gather(client.map(_factor_task, shards, reading=reading_f,
                                         base_dir=base_dir, lexicons=lexicons, layers=layers,
                                         pure=False))
    unroller = Unroller.for_spec(spec, base_dir, layers, lexicons)
    # every gold configuration seen, as factors of one stand-in instance for ``template_plans``
    factors, gold = [], []
    for ti in range(len(spec.templates)):
        for config in sorted(set().union(*(s.configs[ti] for s in summaries))):
            factors.append((ti, list(range(len(gold), len(gold) + len(config))), None))
            gold.extend(config)
    templates = template_plans(spec, layers, unroller.layer_index, [factors],
                               [np.array(gold, dtype=np.int64)], settings.sigma)
    rows = _merge_factor_rows(templates, layers, summaries)
    model = cls(spec, base_dir, layers, templates, rows.vocabs, *rows.arrays(), lexicons)
    recipe_f = constant(client, ModelRecipe.of(model, base_dir))
    return EncodedShards(model, recipe_f,
                         [(_graph_encode_task, shard, reading_f, recipe_f) for shard in shards],
                         shards, n_instances, sum(f.n_tokens for f in found),
                         [reading_f, recipe_f])


def _merge_factor_rows(templates: list, layers: list[Layer],
                       summaries: list[graph_pass.FactorSummary]) -> FeatureRows:
    """The one-machine compile's ``FeatureRows`` of the whole data, from the
    shards' summaries in shard order."""
    config_sets = pattern_configs(templates, layers)
    rows = FeatureRows.empty(templates, config_sets)
    for summary in summaries:
        for (ti, key), seen in zip(summary.keys, summary.seen_with):
            r = rows.row(ti, key)
            if templates[ti].support == "observed":
                rows.configs[r].update(seen & config_sets[ti])
    return rows


_COMPILERS = {"sequence": _compile_sequence, "graph": _compile_graph}
