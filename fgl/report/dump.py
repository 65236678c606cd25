"""A trained model as text, one weight per line (``fgl dump``): the
counterpart of CRF++'s ``crf_learn -t`` and ``wapiti dump``, meant for
grep and diff, read back by nothing.

Each line is ``template<TAB>attribute<TAB>labels<TAB>weight``: the
template's name, the attribute (``bias`` for a template without
observations), the labels of the feature's label pattern (oldest first,
joined by one space) and the weight as Python's shortest round-trip
decimal (``repr``), so equal weights print equal.  Templates come in the
spec's order, attributes sorted by name within a template, and each
attribute's features in the order of the feature table: the same model
prints the same text, and two models trained on the same spec line up.
A tab or newline inside an attribute is written as ``\\t`` or ``\\n``.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

HEADER = "template\tattribute\tlabels\tweight"


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def dump_lines(model, w: np.ndarray, templates: set[str] | None = None,
               non_zero: bool = False, name: Callable[[str], str] | None = None
               ) -> Iterator[str]:
    """Every weight of ``model`` once, as a line (without its newline);
    only the templates named in ``templates`` (None: all), only non-zero
    weights with ``non_zero``; attributes shown by ``name`` (a feature-dict
    model's names, as ``fgl.report.inspect.weights``)."""
    arrays = model.arrays()
    row_ptr, feat_pattern = arrays["row_ptr"], arrays["feat_pattern"]
    for t, (plan, vocab) in enumerate(zip(model.templates, model.vocabs)):
        if templates is not None and plan.name not in templates:
            continue
        ids, rows = vocab.id_rows()
        keys = vocab.names(ids)
        shown = [k if name is None or k == "bias" else name(k) for k in keys]
        labels: dict[int, str] = {}   # pattern -> its labels, as written
        for i in sorted(range(len(keys)), key=shown.__getitem__):
            attribute = _escaped(shown[i])
            r = int(rows[i])
            for k in range(int(row_ptr[r]), int(row_ptr[r + 1])):
                value = float(w[k])
                if non_zero and value == 0.0:
                    continue
                z = int(feat_pattern[k])
                if z not in labels:
                    labels[z] = " ".join(model.pattern_labels(t, z))
                yield f"{plan.name}\t{attribute}\t{labels[z]}\t{value!r}"
