"""A trained model's report: one self-contained HTML page a teacher opens
in a browser (``fgl report MODEL [DATA] -o report.html``,
``CRF.report(data)``; docs/report.md).

Its parts: the spec, every line numbered and highlighted; the engine and
inference chosen and why (``fgl explain``'s words); the training run and
its curve; per template the strongest weights per label, or its label
matrix as a heat map; with labelled data, the evaluation (``fgl eval``'s
scores), the confusion matrix and an instance browser — a sample of
instances with their tokens coloured by prediction and confidence and
their factor graphs.  Everything is inline (styles, SVG pictures, a few
lines of script): the file names no address outside itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Sequence

from fgl.data.sentence import Sentence
from fgl.errors import DataError, FglError
from fgl.report.evaluation import Scored, evaluation_html, score
from fgl.report.instances import FIRST, WORST, instances_html, sample
from fgl.report.page import document
from fgl.report.spec_view import spec_html
from fgl.report.training import training_html
from fgl.report.weights import weights_html


@dataclass
class ModelReport:
    """A model's report: its ``html`` text; ``save(path)`` writes it (a
    notebook shows it inline, in a frame)."""

    html: str
    scored: Scored | None = None   # the evaluation on the data, when given

    def save(self, path: str | Path) -> None:
        """Write the page to ``path`` atomically (``fgl.io.safe_files``)."""
        from fgl.io.safe_files import write_text

        write_text(path, self.html, "report")

    def _repr_html_(self) -> str:
        """The page in a frame of its own: a notebook's styles and the
        page's do not mix."""
        return (f'<iframe srcdoc="{escape(self.html, quote=True)}" title="fgl report" '
                'style="width:100%;height:900px;border:1px solid #ddd"></iframe>')


def _schemes(crf, scheme: str | dict[str, str]) -> dict[str, str]:
    from fgl import registry

    per_layer = scheme if isinstance(scheme, dict) else dict.fromkeys(crf.spec.outputs, scheme)
    out = {}
    for name in crf.spec.outputs:
        chosen = per_layer.get(name, "auto")
        if chosen.lower() == "auto":   # (as fgl.api.eval_scheme: a segment model's own)
            chosen = registry.choose(crf.spec).engine.auto_scheme(crf.spec) or chosen
        out[name] = chosen
    return out


def build_report(crf: Any, sentences: Sequence[Sentence] | None = None, *,
                 first: int = FIRST, worst: int = WORST,
                 scheme: str | dict[str, str] = "auto", source: str | None = None
                 ) -> ModelReport:
    """The report of ``crf`` (a trained ``fgl.api.CRF``), with its
    evaluation on labelled ``sentences`` when given: the ``first`` and the
    ``worst`` (most errors) instances shown; ``scheme`` as for ``fgl eval``
    (one for every output layer, or {layer: scheme}); ``source`` names the
    data."""
    if crf.model is None or crf.weights is None:
        raise FglError("a report is of a trained model: fit the CRF or load a model file first")
    model, spec = crf.model, crf.spec
    name = spec.name or Path(crf.path or spec.file).name
    parts = [("spec", "spec", spec_html(spec.text, crf.path or spec.file)),
             ("engine", "engine and inference",
              f'<pre class="explain">{escape(crf.explain())}</pre>'
              '<p class="note">as <code>fgl explain</code> says it</p>'),
             ("training", "training", training_html(crf)),
             ("weights", "weights", weights_html(crf))]
    scored = None
    if sentences is not None:
        if not sentences:
            raise DataError("no sentences to report on (the file is empty)", source or "<data>", 1)
        scored = score(crf, sentences, _schemes(crf, scheme))
        where = source or sentences[0].file
        parts.append(("evaluation", "evaluation", evaluation_html(scored, where)))
        base = Path(crf.path).parent if crf.path else Path(spec.file).parent
        parts.append(("instances", "instances", instances_html(
            crf, sentences, scored, sample(scored, first, worst), base)))
    labels = "; ".join(f"{layer.name}: {len(layer.labels)} labels" for layer in model.layers)
    subtitle = (f"{crf.path or spec.file} · engine {model.engine} · {len(crf.weights):,} "
                f"features · {labels}")
    return ModelReport(document(f"fgl report: {name}", subtitle, parts,
                                "written by fgl report (docs/report.md)"), scored)
