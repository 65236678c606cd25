"""The report's instance browser: a sample of the data's sentences (or
graphs) — the first few and those with the most errors — each shown as its
tokens coloured by predicted label, shaded by the label's marginal
probability, the gold label marked where it differs, and its factor graph
(``fgl.report.draw``'s scene, drawn by ``fgl.report.scene_svg``).  Plain HTML:
every instance is listed; a little script, where it runs, shows one at a
time with a chooser."""
from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Sequence

import numpy as np

from fgl.compile.unrolling import group_instances
from fgl.data.sentence import Sentence
from fgl.errors import FglError
from fgl.report.draw import DEFAULT_WINDOW, draw_instance
from fgl.report.draw_layout import by_kind
from fgl.report.draw_render import RIGHT, WRONG, shade, tag_colours, template_colour
from fgl.report.evaluation import Scored
from fgl.report.scene_svg import scene_svg

FIRST = 5     # the first instances shown
WORST = 10    # the instances with the most errors shown


def sample(scored: Scored, first: int = FIRST, worst: int = WORST) -> list[tuple[int, str]]:
    """(sentence index, why shown) of the instances to show: the first
    ``first``, then the ``worst`` others with the most wrong labels (of
    every output layer; ties: the longer first)."""
    n = len(scored.predicted[scored.outputs[0]])
    errors = np.zeros(n, dtype=np.int64)
    lengths = np.zeros(n, dtype=np.int64)
    for out in scored.outputs:
        for i, (p, g) in enumerate(zip(scored.predicted[out], scored.gold[out])):
            errors[i] += sum(a != b for a, b in zip(p, g) if b is not None)
            lengths[i] = len(p)
    chosen = [(i, "first") for i in range(min(first, n))]
    rest = [i for i in np.lexsort((-lengths, -errors)).tolist() if i >= first and errors[i]]
    chosen += [(i, f"{int(errors[i])} errors") for i in rest[:worst]]
    return chosen


def _confidences(crf, sentences: Sequence[Sentence], scored: Scored, keep: list[int]
                 ) -> dict[int, dict[str, list[float]]]:
    """Per shown sentence and output layer, the marginal probability of each
    token's predicted label (a segment model's: of its segment label)."""
    marg = crf.marginals_sentences(sentences)
    out: dict[int, dict[str, list[float]]] = {}
    for i in keep:
        out[i] = {}
        for k, layer in enumerate(marg.outputs):
            index = {y: j for j, y in enumerate(marg.labels[k])}
            probs = marg.probs[i][k]
            labels = scored.predicted[layer][i]
            out[i][layer] = [float(probs[t, index[y] if y in index else index.get(y[2:], 0)])
                             for t, y in enumerate(labels)]
    return out


def _rgba(colour: str, alpha: float) -> str:
    r, g, b = (int(colour[k:k + 2], 16) for k in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:.2f})"


def tokens_html(words: Sequence[str], predicted: Sequence[str], gold: Sequence[str | None],
                probs: Sequence[float], colours: dict[str, str]) -> str:
    """One layer's tokens: coloured by predicted label, shaded by its
    probability, the predicted label under each word; a wrong one ringed
    red with the gold label over it."""
    spans = []
    for w, y, g, p in zip(words, predicted, gold, probs):
        wrong = g is not None and g != y
        tip = f"{w}: predicted {y} (p = {p:.2f})" + (f", gold {g}" if g is not None else "")
        gold_mark = f'<span class="goldtag">{escape(g)}</span>' if wrong else ""
        spans.append(f'<span class="tok{" wrong" if wrong else ""}" '
                     f'style="background:{_rgba(colours.get(y, "#ffffff"), shade(p))}" '
                     f'title="{escape(tip)}">{gold_mark}<span class="word">{escape(w)}</span>'
                     f'<span class="ptag">{escape(y)}</span></span>')
    return '<div class="tokens">' + "".join(spans) + "</div>"


def _graph(crf, sentences: Sequence[Sentence], where: tuple[int, int, int], base: Path) -> str:
    """The factor graph of a sentence (at most ``DEFAULT_WINDOW`` tokens of
    it, in its instance: a document for `within document` templates), its
    notes and a key of its templates by kind."""
    inst, lo, hi = where
    try:
        drawing = draw_instance(crf.spec, sentences, inst, (lo, min(hi, lo + DEFAULT_WINDOW)),
                                base, crf)
    except FglError as e:
        return f'<p class="note">factor graph not drawn: {escape(str(e))}</p>'
    scene = drawing.scene
    key = " ".join(f'<span class="kind">{escape(kind)}:</span> ' + " ".join(
        f'<span class="swatch" style="background:{template_colour(ti)}"></span>'
        f'{escape(scene.templates[ti])}' for ti in group) for kind, group in by_kind(scene))
    notes = "; ".join(scene.notes[1:] if scene.notes else [])
    return (f'<details open><summary>factor graph ({escape(scene.title)})</summary>'
            f'<div class="scroll">{scene_svg(scene)}</div><p class="key">{key}</p>'
            + (f'<p class="note">{escape(notes)}</p>' if notes else "") + "</details>")


def _places(crf, sentences: Sequence[Sentence]) -> list[tuple[int, int, int]]:
    """Per sentence: its instance's index and its token span in it."""
    by_sentence = {}
    for k, inst in enumerate(group_instances(crf.spec, sentences, with_gold=False)):
        for s, lo, hi in zip(inst.sentences, inst.bounds, inst.bounds[1:]):
            by_sentence[id(s)] = (k, lo, hi)
    return [by_sentence[id(s)] for s in sentences]


def instances_html(crf, sentences: Sequence[Sentence], scored: Scored,
                   chosen: list[tuple[int, str]], base: Path) -> str:
    """The instance browser's body."""
    keep = [i for i, _ in chosen]
    probs = _confidences(crf, sentences, scored, keep)
    places = _places(crf, sentences)
    layers = {layer.name: layer.labels for layer in crf.model.layers}
    graph = crf.spec.input_format == "graph"
    options, cards = [], []
    for n, (i, why) in enumerate(chosen):
        s = sentences[i]
        words = [str(x) for x in s.node_ids] if graph else [str(r[0]) for r in s.rows]
        what = "graph" if graph else "sentence"
        title = f"{what} {i} ({why}; {len(s.rows)} {'nodes' if graph else 'tokens'}, " \
                f"{s.file}:{s.lines[0] if s.lines else '?'})"
        options.append(f'<option value="inst-{n}">{escape(title)}</option>')
        body = []
        for out in scored.outputs:
            colours = tag_colours(layers.get(out, []))
            head = f'<p class="layer">{escape(out)}</p>' if len(scored.outputs) > 1 else ""
            body.append(head + tokens_html(words, scored.predicted[out][i], scored.gold[out][i],
                                           probs[i][out], colours))
        body.append(_graph(crf, sentences, places[i], base))
        cards.append(f'<section class="instance" id="inst-{n}"><h3>{escape(title)}</h3>'
                     + "".join(body) + "</section>")
    intro = (f'<p class="note">{len(chosen)} of {len(sentences):,} instances: the first and '
             'those with the most errors. Each token is coloured by its predicted label '
             '(written under it), the colour the stronger the likelier the label (its marginal '
             f'probability; hover a token for it); a <span style="color:{WRONG}">red '
             'frame</span> marks a wrong label, the gold label above it. In the factor graphs '
             f'the rings say the same: <span style="color:{RIGHT}">green</span> right, '
             f'<span style="color:{WRONG}">red</span> wrong.</p>')
    chooser = ('<div class="chooser js-only"><button type="button" data-step="-1">◀</button>'
               f'<select id="chooser">{"".join(options)}</select>'
               '<button type="button" data-step="1">▶</button>'
               '<label><input type="checkbox" id="show-all"> show all</label></div>')
    return intro + chooser + '<div id="instances">' + "".join(cards) + "</div>"
