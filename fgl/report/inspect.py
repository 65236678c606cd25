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


# bytes per feature of the template inspected at once: its feature numbers, their keys'
# positions, weights and the selection's scratch
BYTES_PER_FEATURE = 48


def _template_features(model, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Template ``t``'s features as arrays: their numbers in the feature
    table, the position of each one's key in ``ids`` (the vocabulary's keys
    that have a row), and ``ids`` — no Python object per feature."""
    row_ptr = model.arrays()["row_ptr"]
    ids, rows = model.vocabs[t].id_rows()
    counts = row_ptr[rows + 1] - row_ptr[rows]
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    numbers = np.arange(len(owner), dtype=np.int64) - first[owner] + row_ptr[rows][owner]
    return numbers, owner, ids


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest ``values``, largest first (ties by
    position), found without sorting them all."""
    from fgl.report.largest import largest  # (compiled code: loaded when a model is inspected)

    if k <= 0 or not len(values):
        return np.zeros(0, dtype=np.int64)
    at = largest(np.ascontiguousarray(values, dtype=np.float64), min(k, len(values)))
    return at[np.lexsort((at, -values[at]))]


def inspect_memory(model, template: str | None = None) -> tuple[int, str, int]:
    """(bytes, template, features): what inspecting ``model`` (only
    ``template``, if given) takes at most beyond the model — the template
    with the most features, inspected at once."""
    row_ptr = model.arrays()["row_ptr"]
    most, name = 0, ""
    for plan, vocab in zip(model.templates, model.vocabs):
        if template is None or plan.name == template:
            rows = vocab.id_rows()[1]
            n = int((row_ptr[rows + 1] - row_ptr[rows]).sum())
            if n >= most:
                most, name = n, plan.name
    return BYTES_PER_FEATURE * most, name, most


def _check_memory(model, template: str | None) -> None:
    """An FglError when inspecting takes more than the memory budget."""
    from fgl.compile.budget import budget_source, memory_budget
    from fgl.errors import FglError
    from fgl.sizes import format_size

    need, name, n = inspect_memory(model, template)
    if need > memory_budget():
        raise FglError(f"inspecting template '{name}' ({n:,} features) would take about "
                       f"{format_size(need)}, more than the {format_size(memory_budget())} "
                       f"memory budget ({budget_source()}); inspect another template with "
                       "--template NAME")


def _matrix(model, plan, t: int, numbers: np.ndarray, w: np.ndarray) -> dict | None:
    """A two-label template without observations as its label matrix (None
    when it is not one, or wider than MAX_MATRIX cells)."""
    if plan.has_observations or len(plan.layers) != 2 or len(numbers) > MAX_MATRIX \
            or math.prod(len(model.layers[k].labels) for k in plan.layers) > MAX_MATRIX:
        return None
    feat_pattern = model.arrays()["feat_pattern"]
    labels = [model.pattern_labels(t, int(feat_pattern[k])) for k in numbers.tolist()]
    if not all(len(y) == 2 for y in labels):
        return None
    rows = model.layers[plan.layers[0]].labels
    cols = model.layers[plan.layers[1]].labels
    matrix = dict(zip(labels, w[numbers].tolist()))
    first, second = (model.layers[k].name for k in plan.layers)
    reading = ("from (rows) → to (columns)" if first == second
               else f"{first} (rows), {second} (columns)")
    return {"rows": rows, "columns": cols, "reading": reading,
            "weights": [[matrix.get((a, b)) for b in cols] for a in rows]}


def inspection(model, w: np.ndarray, meta: dict | None = None, top: int = 10,
               template: str | None = None, name: Names = None) -> dict:
    """What ``fgl inspect`` shows, as plain data: per template its sizes
    and strongest weights (a matrix for a two-label template without
    observations), and the training metadata the model file keeps;
    attributes shown by ``name`` (as in ``weights``).  One template's
    features are handled at a time, as arrays (``BYTES_PER_FEATURE`` each):
    an FglError when the largest would take more than the memory budget."""
    _check_memory(model, template)
    feat_pattern = model.arrays()["feat_pattern"]
    templates = []
    for t, plan in enumerate(model.templates):
        if template is not None and plan.name != template:
            continue
        numbers, owner, ids = _template_features(model, t)
        weights_t = w[numbers]
        entry = {"name": plan.name, "features": len(numbers),
                 "non_zero": int(np.count_nonzero(weights_t)),
                 "attributes": int(np.count_nonzero(np.diff(owner))) + (len(owner) > 0),
                 "sigma": plan.sigma}
        matrix = _matrix(model, plan, t, numbers, w)
        if matrix is not None:
            entry["matrix"] = matrix
        else:
            negative = np.flatnonzero(weights_t < 0)
            chosen = {"strongest": _top(weights_t, top),
                      "weakest": negative[_top(-weights_t[negative], top)]}
            for key, at in chosen.items():
                keys = model.vocabs[t].names(ids[owner[at]])
                entry[key] = [asdict(Weight(
                    plan.name, k if name is None or k == "bias" else name(k),
                    model.pattern_labels(t, int(feat_pattern[numbers[i]])), float(weights_t[i])))
                    for k, i in zip(keys, at.tolist())]
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
