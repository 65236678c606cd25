"""Compiling a spec on a Dask cluster: the one-machine compile's steps
(``fgl.compile.summaries``) over many shards; the driver merges what the
workers collect and never holds the training data.

Collect rounds run on the workers — each applies the one-machine compile's
own collect step to its shards — and send the driver summaries: the labels
and gold label windows, then each template's attribute keys with the
patterns (configurations) each was seen with.  The summaries merge in a
tree of tasks where they lie (``fgl.distributed.reduce``); a merge is
associative and commutative and numbers rows by where they were first met,
so the model is the one a one-machine compile of the concatenated shards
makes whichever worker finishes first: the same labels in the same order,
the same patterns, vocabularies and feature table.  Then the model goes to
the workers (as a task's value, recomputable, not scattered data) and
every worker encodes its shards and keeps them (``EncodedShards``: Dask
futures the driver holds; if a worker is lost, Dask re-reads and re-encodes
its shards elsewhere from their lineage).

Chain and segment models (``fgl.compile.sequence_shards``) encode in the
merged first-met numbering and count how often each attribute row occurs:
the driver orders the rows by it, as the one-machine compile does, and
each worker renumbers its encoded shards in place.  Factor-graph models
(``fgl.compile.graph_shards``) encode with the merged model's own
``encode``.  The memory budget (``fgl.compile.footprint``) is checked where
the bytes are: the driver prices what it holds — a chain or segment
model's features, with the weights and the optimiser's vectors, before any
shard is encoded; a worker prices each shard it encodes (a factor-graph
model's ``encode`` its factors, a chain or segment shard its units, their
rows and its longest sequence's scratch: ``sequence_shards.encode_shard``),
each against the budget of the machine it runs on.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fgl import registry
from fgl.compile.factor_features import feature_rows, template_plans
from fgl.compile.feature_table import frequency_order, renumber_rows, row_counts
from fgl.compile.frontend import Layer, pattern_list
from fgl.compile.graph_shards import collect_labels, collect_shard, graph_layers
from fgl.compile.sequence import SequenceModel
from fgl.compile.sequence_shards import SequencePlan, collect_rows, encode_shard
from fgl.compile.summaries import FactorSummary, LabelSummary, RowSummary, merge_all
from fgl.compile.unrolling import Unroller, group_instances
from fgl.distributed.recipe import ModelRecipe
from fgl.distributed.reduce import tree_reduce
from fgl.distributed.shards import Shard, read_shard
from fgl.engines.sequence.encoded import EncodedData
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


def _merge(*summaries: Any) -> Any:
    return merge_all(summaries)


def _collected(client, task: Any, shards: list[Shard], **kwargs: Any) -> Any:
    """The merge of ``task(shard, index, **kwargs)`` over the shards, merged
    on the workers."""
    return tree_reduce(client, client.map(task, shards, range(len(shards)), pure=False,
                                          **kwargs), _merge).result()


def _gold_task(shard: Shard, index: int, reading: Reading) -> LabelSummary:
    return registry.choose(reading.spec).model.collect_gold(reading.spec,
                                                           reading.read(shard))[0]


def _row_task(shard: Shard, index: int, reading: Reading, plan: SequencePlan) -> RowSummary:
    return collect_rows(plan, reading.read(shard), index)


def _encode_task(shard: Shard, reading: Reading, plan: SequencePlan, vocabs: list
                 ) -> "EncodedShard":
    return EncodedShard(encode_shard(plan, vocabs, reading.read(shard)))


def _counts_task(shard: "EncodedShard", n_rows: int) -> np.ndarray:
    return row_counts(shard.data.tok_row, n_rows)


def _final_task(shard: "EncodedShard", new_id: np.ndarray) -> Any:
    return shard.final(new_id)


def _label_task(shard: Shard, index: int, reading: Reading) -> LabelSummary:
    instances = group_instances(reading.spec, reading.read(shard), with_gold=True)
    partial = next((inst for inst in instances if inst.partial), None)
    if partial is not None:
        sent = partial.sentences[0]
        raise DataError("a partially labelled graph (some labels null) trains by the marginal "
                        "likelihood, which distributed training does not run yet; train it on "
                        "one machine (without --dask / --dask-workers)", sent.file, sent.lines[0])
    return collect_labels(reading.spec, instances)


def _factor_task(shard: Shard, index: int, reading: Reading, base_dir: Path, lexicons: dict,
                 layers: list[Layer]) -> FactorSummary:
    return collect_shard(reading.spec, base_dir, lexicons, layers, reading.read(shard), index)


def _graph_encode_task(shard: Shard, reading: Reading, recipe: ModelRecipe) -> Any:
    return recipe.build().encode(reading.read(shard), with_gold=True)


def _add_arrays(*arrays: np.ndarray) -> np.ndarray:
    total = arrays[0].copy()
    for a in arrays[1:]:
        total += a
    return total


@dataclass
class EncodedShard:
    """A shard's encoded data, in the merged first-met numbering until
    ``final`` renumbers it (in place, once: a worker keeps one copy)."""

    data: EncodedData
    renumbered: bool = False

    def final(self, new_id: np.ndarray) -> EncodedData:
        """The data with rows renumbered by the driver's final order."""
        if not self.renumbered:
            renumber_rows(self.data.tok_row, new_id)
            self.renumbered = True
        return self.data


# ---------------------------------------------------------------- chain and segments

def _compile_sequence(client, cls: type[SequenceModel], spec: ast.Spec, shards: list[Shard],
                      base_dir: Path, lexicons: dict, settings: TrainSettings, reading: Reading,
                      source: str) -> EncodedShards:
    reading_f = constant(client, reading)
    labels = _collected(client, _gold_task, shards, reading=reading_f)
    layer = cls.gold_layer(spec, labels, source)
    index = layer.index
    plans = cls.template_plans(spec, layer, [[index[y] for y in w] for w in labels.windows],
                               settings.sigma)
    plan = SequencePlan(cls, spec, base_dir, lexicons, layer, plans,
                        pattern_list(len(layer.labels), plans), labels.longest or 1)
    plan_f = constant(client, plan)
    table = plan.table()
    table.add_summary(_collected(client, _row_task, shards, reading=reading_f, plan=plan_f))
    table.check_size()   # (the driver's share, before the workers encode: module docstring)
    merged_f = constant(client, table.vocabs)
    workers = sorted(client.scheduler_info()["workers"])
    encoded = [client.submit(_encode_task, shard, reading_f, plan_f, merged_f,
                             workers=[workers[i % len(workers)]], allow_other_workers=True,
                             pure=False)
               for i, shard in enumerate(shards)]
    counts = tree_reduce(client, [client.submit(_counts_task, e, table.n_rows, pure=False)
                                  for e in encoded], _add_arrays).result()
    new_id = frequency_order(counts)   # (as FeatureTable.finish numbers rows)
    row_ptr, feat_pattern = table.renumber(new_id)
    model = cls(spec, base_dir, layer, plans, plan.z_list, table.vocabs, row_ptr, feat_pattern,
                lexicons)
    new_id_f = constant(client, new_id)
    recipe_f = constant(client, ModelRecipe.of(model, base_dir))
    return EncodedShards(model, recipe_f,
                         [(_final_task, e, new_id_f) for e in encoded],
                         shards, labels.n_instances, labels.n_tokens,
                         [reading_f, plan_f, merged_f, new_id_f, recipe_f, *encoded])


# ---------------------------------------------------------------- factor graphs

def _compile_graph(client, cls: type[Model], spec: ast.Spec, shards: list[Shard], base_dir: Path,
                   lexicons: dict, settings: TrainSettings, reading: Reading, source: str
                   ) -> EncodedShards:
    reading_f = constant(client, reading)
    labels = _collected(client, _label_task, shards, reading=reading_f)
    if not labels.n_instances:
        raise DataError("the training data has no sequences", source, 0)
    layers = graph_layers(spec, labels)
    found = _collected(client, _factor_task, shards, reading=reading_f, base_dir=base_dir,
                       lexicons=lexicons, layers=layers)
    layer_index = Unroller.for_spec(spec, base_dir, layers, lexicons).layer_index
    templates = template_plans(spec, layers, layer_index, found.configs, settings.sigma)
    rows = feature_rows(templates, layers, found.rows)
    model = cls(spec, base_dir, layers, templates, rows.vocabs, *rows.arrays(), lexicons)
    recipe_f = constant(client, ModelRecipe.of(model, base_dir))
    return EncodedShards(model, recipe_f,
                         [(_graph_encode_task, shard, reading_f, recipe_f) for shard in shards],
                         shards, labels.n_instances, labels.n_tokens, [reading_f, recipe_f])


_COMPILERS = {"sequence": _compile_sequence, "graph": _compile_graph}
