"""A factor-graph model's compile steps over one shard of training data
(``fgl.compile.summaries``), shared by the one-machine compile
(``FactorGraphModel.compile``: the whole data is one shard) and a Dask
worker's (``fgl.distributed.compile``):

1. collect the labels: ``collect_labels`` (a ``LabelSummary``); their merge
   fixes the layers (``graph_layers``);
2. collect the factors: ``collect_shard`` unrolls the shard's instances and
   reads their gold factors (``fgl.compile.factor_features.collect_factors``,
   a ``FactorSummary``); their merge gives the templates' patterns and the
   features (``template_plans``, ``feature_rows``);
3. encode: the model's ``encode_instances`` of the unrolled instances (a
   worker's ``encode`` unrolls its shard again with the merged model).
"""
from __future__ import annotations

from pathlib import Path

from fgl.compile.factor_features import collect_factors
from fgl.compile.frontend import Layer, layer_labels
from fgl.compile.summaries import FactorSummary, LabelSummary
from fgl.compile.unrolling import (
    AttributeKeys,
    Instance,
    Unroller,
    gold_assignment,
    group_instances,
    variables,
)
from fgl.data.sentence import Sentence
from fgl.lang import ast


def collect_labels(spec: ast.Spec, instances: list[Instance]) -> LabelSummary:
    """The labels of each output layer given in the instances (an unlabelled
    node's None aside), and how many instances and positions there are."""
    labels = {name: {y for inst in instances for y in inst.gold[name] if y is not None}
              for name in spec.outputs}
    return LabelSummary(labels, set(), len(instances), sum(inst.size for inst in instances))


def graph_layers(spec: ast.Spec, summary: LabelSummary) -> list[Layer]:
    """The layers the merged labels give: each output's declared labels, else
    those seen, sorted; then the hidden layers."""
    return ([Layer(name, layer_labels(spec, name, summary.labels[name]))
             for name in spec.outputs]
            + [Layer(h.name, list(h.labels), True) for h in spec.hidden])


def template_layers(spec: ast.Spec, unroller: Unroller) -> list[list[int]]:
    """Per template, the layer of each of its variables."""
    return [[unroller.layer_index[var] for var, _, _ in variables(tpl)]
            for tpl in spec.templates]


def collect_shard(spec: ast.Spec, base_dir: Path, lexicons: dict[str, frozenset[str]],
                  layers: list[Layer], sentences: list[Sentence], shard: int) -> FactorSummary:
    """The factors' collect step over a shard's sentences: unroll every
    instance and read its gold factors (``collect_factors``)."""
    unroller = Unroller.for_spec(spec, base_dir, layers, lexicons)
    instances = group_instances(spec, sentences, with_gold=True)
    keys = AttributeKeys.empty(len(spec.templates))
    unrolled = [unroller.unroll(inst, keys) for inst in instances]
    golds = [gold_assignment(inst, layers, True) for inst in instances]
    return collect_factors(layers, template_layers(spec, unroller), unrolled, golds, keys, shard)
