"""The report's evaluation: every output layer scored as ``fgl eval``
scores it (``fgl.evaluation.evaluate``; graphs: the nodes ``fgl.io.graphs.scoring``
chooses), shown as tables and the confusion matrix as a heat map (rows
gold, columns predicted, cells shaded by their share of the gold row)."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Sequence

import numpy as np

from fgl.data.sentence import Sentence
from fgl.errors import DataError
from fgl.evaluation.confusion import matrix
from fgl.evaluation.evaluate import UNTYPED, Report, Scores, TagError, evaluate
from fgl.report.charts import heat_map

MAX_CONFUSION = 40   # labels of the confusion matrix (the rest merged into "(other)")


@dataclass
class Scored:
    """Predictions on the data and their evaluation: per output layer its
    ``Report``, and per sentence its predicted and gold labels (None where
    a node is not scored)."""

    outputs: list[str]
    reports: dict[str, Report]
    predicted: dict[str, list[list[str]]]
    gold: dict[str, list[list[str | None]]]


def score(crf, sentences: Sequence[Sentence], schemes: dict[str, str]) -> Scored:
    """Decode ``sentences`` with ``crf`` and evaluate each output layer."""
    pred = crf.tag_sentences(sentences)
    columns = [c.name for c in crf.spec.columns]
    graphs = crf.spec.input_format == "graph"
    scored = None
    if graphs:
        from fgl.io.graphs import scoring
        scored = scoring(sentences, crf.spec)
    elif len(sentences[0].rows[0]) != len(columns):
        raise DataError(f"the report's evaluation needs the label column(s) "
                        f"{', '.join(pred.outputs)}", sentences[0].file, sentences[0].lines[0])
    reports, gold_of = {}, {}
    for out in pred.outputs:
        if scored is None:
            gold = [s.column(columns.index(out)) for s in sentences]
            guess, per_sentence = pred.layer(out), gold
        else:
            gold, guess = scored.gold[out], scored.select(pred.layer(out))
            per_sentence = [[None] * len(s.rows) for s in sentences]
            for i, nodes, labels in zip(scored.graphs, scored.nodes, gold):
                for j, y in zip(nodes, labels):
                    per_sentence[i][j] = y
        try:
            reports[out] = evaluate(gold, guess, schemes[out])
        except TagError as e:
            raise DataError(f"cannot score layer {out}: {e.describe('the tag is ')}",
                            sentences[0].file, sentences[0].lines[0]) from None
        gold_of[out] = per_sentence
    return Scored(list(pred.outputs), reports,
                  {out: pred.layer(out) for out in pred.outputs}, gold_of)


def _table(title: str, rows: dict[str, Scores], totals: list[tuple[str, Scores | None]]) -> str:
    head = (f"<tr><th>{escape(title)}</th><th>precision</th><th>recall</th><th>F1</th>"
            "<th>gold</th><th>found</th><th>correct</th></tr>")

    def row(name: str, s: Scores, css: str = "") -> str:
        return (f'<tr class="{css}"><td>{escape(name or UNTYPED)}</td><td>{s.precision:.2f}</td>'
                f"<td>{s.recall:.2f}</td><td><b>{s.f1:.2f}</b></td><td>{s.support}</td>"
                f"<td>{s.predicted}</td><td>{s.correct}</td></tr>")
    body = "".join(row(k, s) for k, s in sorted(rows.items()))
    body += "".join(row(k, s, "total") for k, s in totals if s is not None)
    return f'<table class="scores">{head}{body}</table>'


def confusion_html(report: Report) -> str:
    """The confusion matrix of ``report`` as a heat map."""
    labels, counts = matrix(report.confusion, MAX_CONFUSION)
    rows = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, rows, out=np.zeros(counts.shape), where=rows > 0)
    cell = 30 if len(labels) <= 25 else 20
    return heat_map(labels, labels, counts.tolist(), row_title="gold", col_title="predicted",
                    shares=share.tolist(), counts=True, cell=cell, css_class="heat confusion")


def evaluation_html(scored: Scored, source: str) -> str:
    """The evaluation section's body: per output layer its summary, its
    chunk (or segment) table, its label table and its confusion matrix."""
    parts = [f'<p class="file">{escape(source)}</p>']
    for out in scored.outputs:
        r = scored.reports[out]
        o = r.overall
        if len(scored.outputs) > 1:
            parts.append(f"<h3>layer {escape(out)}</h3>")
        unit = "labels" if r.scheme == "plain" else "segments" if r.scheme == "runs" else "chunks"
        facts = [("tokens", f"{r.tokens:,}"), ("token accuracy", f"{r.accuracy:.2f} %"),
                 ("sequence accuracy", f"{r.sequence_accuracy:.2f} % of {r.sequences:,}"),
                 (f"{unit} F1 (micro)", f"{o.f1:.2f}"), ("precision", f"{o.precision:.2f} %"),
                 ("recall", f"{o.recall:.2f} %"), ("scheme", r.scheme)]
        parts.append('<table class="facts headline">' + "".join(
            f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts) + "</table>")
        if r.scheme != "plain":
            parts.append(f"<h4>{'segments' if r.scheme == 'runs' else 'chunk types'}</h4>"
                         + _table("type", r.chunks, [("overall", o), ("macro", r.macro)]))
            parts.append("<h4>labels (token level)</h4>" + _table("label", r.labels, []))
        else:
            parts.append("<h4>labels</h4>" + _table("label", r.labels,
                                                     [("micro", o), ("macro", r.macro)]))
        parts.append('<h4 id="confusion">confusion matrix</h4><p class="note">rows: gold '
                     'label, columns: predicted label; each cell the tokens, shaded by its '
                     'share of the gold row (hover a cell for its count)</p>'
                     + confusion_html(r))
    return "\n".join(parts)
