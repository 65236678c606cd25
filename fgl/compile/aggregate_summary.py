"""What ``fgl explain --train`` says of a spec's aggregates: per template
reading one, how many positions (nodes, tokens) it reads from on average,
how many items it gives each, and how many distinct attributes it makes
over the data (each a feature per label configuration of the template)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from fgl.compile.aggregates import Aggregator
from fgl.compile.unrolling import group_instances
from fgl.data.sentence import Sentence
from fgl.features.aggregate_columns import aggregate_key
from fgl.features.observations import ObservationCompiler
from fgl.lang import ast
from fgl.lang.aggregates import aggregates_in
from fgl.lang.builtins import expr_text


def aggregate_summary(spec: ast.Spec, sentences: Sequence[Sentence], base_dir: Path | None = None
                      ) -> list[str]:
    """The lines on the aggregates of ``spec`` over ``sentences`` (none
    when it has none)."""
    aggregator = Aggregator(spec, ObservationCompiler(spec, base_dir))
    if not aggregator:
        return []
    totals = {aggregate_key(a): [0, 0, 0, 0, set()] for a in aggregator.aggregates}
    for inst in group_instances(spec, sentences, with_gold=False):
        for agg in aggregator.aggregates:
            column = aggregator.column(agg, inst.cols, inst.bounds, inst.edges)
            one = totals[aggregate_key(agg)]
            one[0] += len(column)
            one[1] += int(column.linked.sum())
            one[2] += int((column.linked == 0).sum())
            one[3] += int(column.ptr[-1])
            one[4].update(column.names[k] for k in np.unique(column.idx).tolist())
    where = "nodes" if spec.input_format == "graph" else "tokens"
    reads = "linked nodes" if spec.input_format == "graph" else "other mentions"
    lines = ["aggregates (on the training data):"]
    for tpl in spec.templates:
        for agg in aggregates_in(tpl.observations, spec):
            n, linked, alone, items, keys = totals[aggregate_key(agg)]
            lines.append(f"  {tpl.name}: {expr_text(agg)}: {n:,} {where} read "
                         f"{linked / max(n, 1):.2f} {reads} each on average ({alone:,} none), "
                         f"{items / max(n, 1):.2f} items each; {len(keys):,} attributes")
    return lines
