"""The report's weights: per template its sizes, then either its label
matrix as a heat map (a transition, a skip edge, a cross-layer link:
``fgl.report.inspect``'s matrix) or its strongest weights per label pattern
(a card per label: the attributes that most favour it, and most oppose it).

One template's features are taken at a time, as arrays; a pattern's
strongest weights are found by partial selection, not by sorting them all.
"""
from __future__ import annotations

from html import escape
from typing import Callable

import numpy as np

from fgl.report.charts import heat_map
from fgl.report.inspect import inspection

TOP = 8             # strongest weights shown per label
AGAINST = 3         # most negative weights shown per label
MAX_CARDS = 40      # label patterns shown per template (the rest: their count)


def _features(model, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Template ``t``'s features: their numbers in the table, each one's
    key id, and its label pattern's number."""
    arrays = model.arrays()
    row_ptr, feat_pattern = arrays["row_ptr"], arrays["feat_pattern"]
    ids, rows = model.vocabs[t].id_rows()
    counts = row_ptr[rows + 1] - row_ptr[rows]
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    numbers = np.arange(len(owner), dtype=np.int64) - first[owner] + row_ptr[rows][owner]
    return numbers, ids[owner], feat_pattern[numbers]


def _pick(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest ``values``, largest first."""
    if len(values) <= k:
        return np.argsort(-values, kind="stable")
    at = np.argpartition(-values, k)[:k]
    return at[np.argsort(-values[at], kind="stable")]


def per_label(model, w: np.ndarray, t: int, name: Callable[[str], str] | None = None
              ) -> list[tuple[str, list[tuple[str, float]], list[tuple[str, float]]]]:
    """Per label pattern of template ``t`` (most weight mass first): its
    ``TOP`` strongest (attribute, weight) and ``AGAINST`` most negative."""
    numbers, keys, patterns = _features(model, t)
    weights = w[numbers]
    out = []
    vocab = model.vocabs[t]
    for p in np.unique(patterns):
        mine = np.flatnonzero(patterns == p)
        vals = weights[mine]
        best = mine[_pick(vals, TOP)]
        worst = mine[_pick(-vals, AGAINST)]
        shown = [(k, float(weights[i])) for k, i in zip(vocab.names(keys[best]), best)
                 if weights[i] > 0]
        against = [(k, float(weights[i])) for k, i in zip(vocab.names(keys[worst]), worst)
                   if weights[i] < 0]
        if name is not None:
            shown = [(k if k == "bias" else name(k), v) for k, v in shown]
            against = [(k if k == "bias" else name(k), v) for k, v in against]
        label = " → ".join(model.pattern_labels(t, int(p)))
        out.append((label, shown, against, float(np.abs(vals).sum())))
    out.sort(key=lambda r: -r[3])
    return [(label, shown, against) for label, shown, against, _ in out]


def _card(label: str, shown: list, against: list, scale: float) -> str:
    def row(attr: str, v: float) -> str:
        width = 0 if scale <= 0 else min(100, round(100 * abs(v) / scale))
        sign = "pos" if v > 0 else "neg"
        return (f'<tr><td class="w {sign}">{v:+.3f}</td><td><span class="bar {sign}" '
                f'style="width:{width}%"></span></td><td class="attr">{escape(attr)}</td></tr>')
    body = "".join(row(a, v) for a, v in shown) or \
        '<tr><td colspan="3">no positive weight</td></tr>'
    if against:
        body += '<tr><td colspan="3" class="sub">against:</td></tr>'
        body += "".join(row(a, v) for a, v in against)
    return f'<div class="card"><h4>{escape(label)}</h4><table class="weights">{body}</table></div>'


def weights_html(crf) -> str:
    """The weights section's body for a trained ``crf``."""
    model, w = crf.model, crf.weights
    info = inspection(model, w, None, top=0, name=crf.attribute_name)
    parts = [f'<p>{info["features"]:,} features, {info["non_zero"]:,} non-zero, in '
             f'{len(info["templates"])} templates. Weights are log-potentials: a positive weight '
             'makes its labels likelier where its attribute holds.</p>']
    for t, entry in enumerate(info["templates"]):
        head = (f'<h3 id="template-{escape(entry["name"])}">template {escape(entry["name"])}</h3>'
                f'<p class="note">{entry["features"]:,} features ({entry["non_zero"]:,} '
                f'non-zero) over {entry["attributes"]:,} attributes, sigma {entry["sigma"]:g}</p>')
        if "matrix" in entry:
            m = entry["matrix"]
            first, _, second = m["reading"].partition(", ")
            rows_title = "from" if "from" in m["reading"] else first.replace(" (rows)", "")
            cols_title = "to" if "from" in m["reading"] else second.replace(" (columns)", "")
            parts.append(head + f'<p class="note">{escape(m["reading"])}; red favours, blue '
                         'disfavours the pair</p>' + heat_map(
                             m["rows"], m["columns"], m["weights"], row_title=rows_title,
                             col_title=cols_title, css_class="heat matrix"))
            continue
        cards = per_label(model, w, t, crf.attribute_name)
        scale = max((abs(v) for _, s, a in cards for _, v in s + a), default=0.0)
        more = len(cards) - MAX_CARDS
        parts.append(head + '<div class="cards">' + "".join(
            _card(label, s, a, scale) for label, s, a in cards[:MAX_CARDS]) + "</div>"
            + (f'<p class="note">{more} more label patterns not shown</p>' if more > 0 else ""))
    return "\n".join(parts)
