"""Looking inside a trained model: its weights by template, attribute and
label pattern, and the training log — for every engine alike, through the
model interface (``vocabs``, the feature table of ``arrays()`` and
``pattern_labels``).

A template without observations (a transition, a skip edge, a cross-layer
link) has one attribute, ``bias``; its weights are shown as a label
matrix when it joins two labels: rows the first label of the template
(a transition's previous label, "from"), columns the second ("to").  A
template with observations is shown as its strongest (attribute, labels)
weights, positive and negative.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

MAX_MATRIX = 250_000   # label-matrix cells shown (500 x 500); a wider one: its strongest weights


@dataclass(frozen=True)
class Weight:
    """One feature: its template, attribute, labels (one per variable) and weight."""

    template: str
    attribute: str
    labels: tuple[str, ...]
    weight: float


Names = Callable[[str], str] | None   # how an attribute key is shown (None: as it is)


def weights(model, w: np.ndarray, name: Names = None) -> list[Weight]:
    """Every feature of ``model`` with its weight in ``w`` (attributes shown
    by ``name``: a feature-dict model's names, ``fgl.io.feature_dicts``)."""
    arrays = model.arrays()
    row_ptr, feat_pattern = arrays["row_ptr"], arrays["feat_pattern"]
    out = []
    for t, (plan, vocab) in enumerate(zip(model.templates, model.vocabs)):
        for key, row in vocab.items():
            shown = key if name is None or key == "bias" else name(key)
            for k in range(int(row_ptr[row]), int(row_ptr[row + 1])):
                out.append(Weight(plan.name, shown,
                                  model.pattern_labels(t, int(feat_pattern[k])), float(w[k])))
    return out


def state_features(model, w: np.ndarray, name: Names = None) -> dict[tuple[str, str], float]:
    """sklearn-crfsuite's ``state_features_``: {(attribute, label): weight}
    of the one-label templates with observations."""
    observed = {p.name for p in model.templates if p.has_observations}
    return {(x.attribute, x.labels[0]): x.weight for x in weights(model, w, name)
            if x.template in observed and len(x.labels) == 1}


def transition_features(model, w: np.ndarray) -> dict[tuple[str, str], float]:
    """sklearn-crfsuite's ``transition_features_``: {(from, to): weight} of
    the two-label templates without observations (summed over templates)."""
    plain = {p.name for p in model.templates if not p.has_observations}
    out: dict[tuple[str, str], float] = {}
    for x in weights(model, w):
        if x.template in plain and len(x.labels) == 2:
            out[x.labels] = out.get(x.labels, 0.0) + x.weight
    return out


def inspection(model, w: np.ndarray, meta: dict | None = None, top: int = 10,
               template: str | None = None, name: Names = None) -> dict:
    """What ``fgl inspect`` shows, as plain data: per template its sizes
    and strongest weights (a matrix for a two-label template without
    observations), and the training metadata the model file keeps;
    attributes shown by ``name`` (as in ``weights``)."""
    all_weights = weights(model, w, name)
    templates = []
    for plan in model.templates:
        if template is not None and plan.name != template:
            continue
        mine = [x for x in all_weights if x.template == plan.name]
        entry = {"name": plan.name, "features": len(mine),
                 "non_zero": sum(x.weight != 0.0 for x in mine),
                 "attributes": len({x.attribute for x in mine}), "sigma": plan.sigma}
        if not plan.has_observations and len(plan.layers) == 2 \
                and all(len(x.labels) == 2 for x in mine) \
                and math.prod(len(model.layers[k].labels) for k in plan.layers) <= MAX_MATRIX:
            rows = model.layers[plan.layers[0]].labels
            cols = model.layers[plan.layers[1]].labels
            matrix = {(x.labels[0], x.labels[1]): x.weight for x in mine}
            first, second = (model.layers[k].name for k in plan.layers)
            reading = ("from (rows) → to (columns)" if first == second
                       else f"{first} (rows), {second} (columns)")
            entry["matrix"] = {"rows": rows, "columns": cols, "reading": reading,
                               "weights": [[matrix.get((a, b)) for b in cols] for a in rows]}
        else:
            ranked = sorted(mine, key=lambda x: -x.weight)
            entry["strongest"] = [asdict(x) for x in ranked[:top]]
            entry["weakest"] = [asdict(x) for x in ranked[::-1][:top] if x.weight < 0]
        templates.append(entry)
    return {"engine": model.engine,
            "layers": {layer.name: layer.labels for layer in model.layers},
            "features": int(len(w)), "non_zero": int(np.count_nonzero(w)),
            "templates": templates, "training": meta or {}}


def format_inspection(info: dict) -> str:
    """``inspection`` as text."""
    lines = [f"engine {info['engine']}; {info['features']} features, {info['non_zero']} "
             "non-zero"]
    for name, labels in info["layers"].items():
        lines.append(f"layer {name} ({len(labels)} labels): {' '.join(labels)}")
    training = info["training"]
    if training:
        lines.append("training: " + ", ".join(
            f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}"
            for k, v in training.items() if k != "induced"))
    induced = training.get("induced", [])
    if induced:
        lines.append(f"induced features, in the order added ({len(induced)}): "
                     + "; ".join(induced[:5]) + (" ..." if len(induced) > 5 else ""))
    for t in info["templates"]:
        lines.append("")
        lines.append(f"template {t['name']}: {t['features']} features ({t['non_zero']} non-zero) "
                     f"over {t['attributes']} attributes, sigma {t['sigma']:g}")
        if "matrix" in t:
            m = t["matrix"]
            width = max(6, *(len(c) for c in m["columns"]))
            head = max(len(r) for r in m["rows"])
            lines.append(f"  {m['reading']}:")
            lines.append(" " * (head + 2) + "".join(f"{c:>{width + 1}}" for c in m["columns"]))
            for r, row in zip(m["rows"], m["weights"]):
                cells = "".join(f"{'-' if v is None else f'{v:.3f}':>{width + 1}}" for v in row)
                lines.append(f"  {r:<{head}}{cells}")
            continue
        for title, rows in (("strongest", t["strongest"]), ("most negative", t["weakest"])):
            if rows:
                lines.append(f"  {title}:")
                lines.extend(f"    {x['weight']:+9.4f}  {x['attribute']} -> "
                             f"{' '.join(x['labels'])}" for x in rows)
    return "\n".join(lines)
