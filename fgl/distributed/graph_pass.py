"""Worker side of compiling a factor-graph model (``fgl.compile.factor_graphs``)
shard by shard.

1. ``label_summary``: each output layer's labels seen, and the number of
   instances;
2. ``factor_summary``: each template's gold configurations, and its
   attribute keys in the order first met with the gold configurations each
   was seen with (flat indices into the factor table);
3. the merged model's own ``encode`` of the shard, with gold labels.

Rows are numbered in the order first met over the concatenated shards,
as the one-machine compile numbers them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fgl.compile.factor_features import config_strides
from fgl.compile.frontend import Layer
from fgl.compile.unrolling import Unroller, gold_assignment, group_instances, variables
from fgl.errors import DataError
from fgl.lang import ast


@dataclass
class LabelSummary:
    labels: dict[str, set[str]]
    n_instances: int
    n_tokens: int


@dataclass
class FactorSummary:
    """Pass 2 of one shard."""

    configs: list[set[tuple[int, ...]]]            # per template, gold configurations
    keys: list[tuple[int, str]] = field(default_factory=list)
    seen_with: list[set[int]] = field(default_factory=list)


def label_summary(spec: ast.Spec, sentences: list) -> LabelSummary:
    """Pass 1 over a shard's sentences (every instance needs its label columns)."""
    instances = group_instances(spec, sentences, with_gold=True)
    partial = next((inst for inst in instances if inst.partial), None)
    if partial is not None:
        sent = partial.sentences[0]
        raise DataError("a partially labelled graph (some labels null) trains by the marginal "
                        "likelihood, which distributed training does not run yet; train it on "
                        "one machine (without --dask / --dask-workers)", sent.file, sent.lines[0])
    labels = {name: {y for inst in instances for y in inst.gold[name]} for name in spec.outputs}
    return LabelSummary(labels, len(instances), sum(inst.size for inst in instances))


def factor_summary(spec: ast.Spec, base_dir: Path, lexicons: dict[str, frozenset[str]],
                   layers: list[Layer], sentences: list) -> FactorSummary:
    """Pass 2 over a shard: unroll every instance and read its gold factors
    (``template_plans`` and ``feature_rows``' reading, before the driver knows
    which configurations carry weights)."""
    unroller = Unroller.for_spec(spec, base_dir, layers, lexicons)
    index = unroller.layer_index
    var_layers = [[index[var] for var, _, _ in variables(tpl)] for tpl in spec.templates]
    hidden = [any(layers[li].hidden for li in vl) for vl in var_layers]
    tpl_strides = [config_strides(layers, vl) for vl in var_layers]
    out = FactorSummary([set() for _ in spec.templates])
    vocabs: list[dict[str, int]] = [{} for _ in spec.templates]
    for inst in group_instances(spec, sentences, with_gold=True):
        g = gold_assignment(inst, layers, True)
        for ti, vs, items in unroller.factors(inst):
            config = tuple(int(g[v]) for v in vs)
            out.configs[ti].add(config)
            flat = None if hidden[ti] else sum(c * s for c, s in zip(config, tpl_strides[ti]))
            vocab = vocabs[ti]
            for key, _ in items:
                r = vocab.get(key)
                if r is None:
                    r = vocab[key] = len(out.keys)
                    out.keys.append((ti, key))
                    out.seen_with.append(set())
                if flat is not None:
                    out.seen_with[r].add(flat)
    return out
