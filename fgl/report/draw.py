"""The factor graph of one instance, as a picture or Graphviz DOT (for teaching).

Every clique template is unrolled exactly as the general-CRF compiler
(``fgl.compile.factor_graphs``) does it (Sutton & McCallum §1.4.1: a template
ties the weights of all its factors), so a chain spec shows its chain, a
skip-chain spec its long edges as arcs, a factorial spec one row per layer,
a graph spec its nodes by id.  A semi-Markov spec (Sutton & McCallum §1.3;
Cuong et al. 2014 §2) shows the segments of the gold (or, with a trained
model, the predicted) segmentation as brackets over their tokens, each
segment a variable.  A trained model's picture fills each variable with its
predicted label, shaded by the label's marginal probability (a key gives
the shades); on labelled data it marks each prediction against the gold
label — a green ring where they agree, a red ring and the gold label where
not — and a segment model's picture draws the gold segmentation under the
words.  Words are drawn whole (turned when long), never cut.

Long instances are cut to a window of tokens (graph nodes): by default the
first ``DEFAULT_WINDOW`` with a warning, at most ``MAX_WINDOW``, and a window
with more than ``MAX_FACTORS`` factors is refused — a picture nobody can
read is not worth a 700,000-line file.  ``structure_drawing`` draws a
spec's templates without data (the notebook view of a ``CRF``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fgl import registry
from fgl.compile.frontend import Layer
from fgl.compile.segmentation import segments_from_tags
from fgl.compile.unrolling import Instance, Unroller, group_instances, variables
from fgl.data.sentence import Sentence
from fgl.errors import FglError
from fgl.lang import ast
from fgl.report.draw_layout import (
    SEGMENT_RISE,
    Bracket,
    Scene,
    Variable,
    Word,
    chain_variables,
    graph_variables,
    place_factors,
)
from fgl.report.draw_render import RIGHT, WRONG, render, tag_colours, template_colour

DEFAULT_WINDOW = 30     # tokens (nodes) drawn when the instance is longer and no window is given
MAX_WINDOW = 150        # the widest window drawn
MAX_FACTORS = 3000      # the most factors drawn
STRUCTURE_WIDTH = 5     # positions of the template-structure picture
SUFFIXES = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}


@dataclass
class Drawing:
    """A picture of a factor graph: ``save`` it (the format from the file's
    suffix), take its ``svg``/``png``/``dot`` text, or let a notebook show
    it.  ``warnings`` say what was left out (a long instance's window)."""

    scene: Scene
    warnings: list[str] = field(default_factory=list)

    def svg(self) -> str:
        return render(self.scene, "svg").decode("utf-8")

    def png(self) -> bytes:
        return render(self.scene, "png")

    def dot(self) -> str:
        return scene_dot(self.scene)

    def save(self, path: str | Path) -> None:
        """Write the picture to ``path``: .svg, .png, .pdf or .dot (.gv),
        atomically (``fgl.io.safe_files``)."""
        from fgl.io.safe_files import write_bytes, write_text

        fmt = picture_format(path)
        if fmt == "dot":
            write_text(path, self.dot(), "drawing")
        else:
            write_bytes(path, render(self.scene, fmt), "drawing")

    def _repr_svg_(self) -> str:
        return self.svg()


def picture_format(path: str | Path) -> str:
    """The format a file name asks for, by its suffix."""
    fmt = SUFFIXES.get(Path(path).suffix.lower())
    if fmt is None:
        raise FglError(f"cannot tell a picture format from the name '{path}'; end it in "
                       ".svg, .png, .pdf or .dot")
    return fmt


def parse_tokens(text: str) -> tuple[int | None, int | None]:
    """``--tokens A:B`` as (A, B); either may be left out (``:20``, ``40:``)."""
    m = re.fullmatch(r"\s*(\d*)\s*:\s*(\d*)\s*", text)
    if not m or not (m[1] or m[2]):
        raise FglError(f"--tokens {text!r}: expected A:B, the positions from A (counting from "
                       "0) up to B (not included), as in --tokens 0:20")
    return (int(m[1]) if m[1] else None, int(m[2]) if m[2] else None)


def choose_window(n: int, tokens: tuple[int | None, int | None] | None, instance: int,
                  what: str = "tokens") -> tuple[int, int, list[str]]:
    """The window [a, b) of an instance of ``n`` positions to draw, and
    the warnings to show; a window that cannot be drawn is an FglError."""
    if tokens is None:
        if n <= DEFAULT_WINDOW:
            return 0, n, []
        return 0, DEFAULT_WINDOW, [
            f"instance {instance} has {n} {what}; drawing {what} 0:{DEFAULT_WINDOW} only "
            f"(choose others with --tokens A:B, at most {MAX_WINDOW} at a time)"]
    a = 0 if tokens[0] is None else tokens[0]
    b = n if tokens[1] is None else min(tokens[1], n)
    shown = f"{'' if tokens[0] is None else tokens[0]}:{'' if tokens[1] is None else tokens[1]}"
    if a >= n:
        raise FglError(f"--tokens {shown}: instance {instance} has {n} {what} (positions "
                       f"0 to {n - 1}); start the window below {n}")
    if a >= b:
        raise FglError(f"--tokens {shown} is empty; give A:B with A < B, as in --tokens "
                       f"{a}:{min(a + DEFAULT_WINDOW, n)}")
    if b - a > MAX_WINDOW:
        raise FglError(f"--tokens {shown} asks for {b - a} {what}; a picture of more than "
                       f"{MAX_WINDOW} is unreadable: draw a window of them, as in --tokens "
                       f"{a}:{a + DEFAULT_WINDOW}")
    return a, b, []


# ------------------------------------------------------------------ one instance

def draw_instance(spec: ast.Spec, sentences: Sequence[Sentence], instance: int = 0,
                  tokens: tuple[int | None, int | None] | None = None,
                  base_dir: Path | None = None, crf: Any = None) -> Drawing:
    """The picture of instance ``instance`` of ``sentences`` (a sentence, a
    document for ``within document`` specs, or a graph), cut to ``tokens``
    (see ``choose_window``); ``crf``, a trained ``fgl.api.CRF``, colours
    the variables by its predictions."""
    instances = group_instances(spec, sentences, with_gold=False)
    if not 0 <= instance < len(instances):
        raise FglError(f"instance {instance} does not exist; the data has {len(instances)} "
                       f"(numbered from 0)")
    inst = instances[instance]
    graph = spec.input_format == "graph"
    what = "nodes" if graph else "tokens"
    a, b, warnings = choose_window(inst.size, tokens, instance, what)
    part = group_instances(spec, _cut(inst, a, b), with_gold=False)[0]
    predicted = _predictions(crf, inst, a, b) if crf is not None else None
    name = spec.name or Path(spec.file).name
    window = f", {what} {a}:{b} of {inst.size}" if (a, b) != (0, inst.size) else ""
    title = f"{name}: instance {instance}{window}"
    if registry.choose(spec).engine.segmented:
        scene = _segment_scene(spec, part, predicted, title)
        if predicted and part.gold is not None:
            _mark_segments(scene, spec, part)
    else:
        scene = _factor_scene(spec, part, a, predicted, title, base_dir, crf)
    if window:
        scene.notes.append("factors reaching outside the window are not drawn")
    return Drawing(scene, warnings)


def _cut(inst: Instance, a: int, b: int) -> list[Sentence]:
    """The sentences (or graph) of ``inst`` cut to positions [a, b); a
    graph keeps the edges between the nodes kept."""
    out = []
    for sent, lo, hi in zip(inst.sentences, inst.bounds, inst.bounds[1:]):
        u, v = max(a, lo), min(b, hi)
        if u >= v:
            continue
        part = replace(sent, rows=sent.rows[u - lo:v - lo], lines=sent.lines[u - lo:v - lo])
        if inst.edges is not None:   # (a graph: one sentence)
            part = replace(part, node_ids=sent.node_ids[u - lo:v - lo],
                           edges=[(s - u, t - u, kind) for s, t, kind in sent.edges
                                  if u <= s < v and u <= t < v])
        out.append(part)
    return out


def _predictions(crf: Any, inst: Instance, a: int, b: int
                 ) -> dict[str, tuple[list[str], np.ndarray, list[str]]]:
    """Per output layer, the predicted labels of positions [a, b) of
    ``inst``, each one's marginal probability, and the layer's labels."""
    model = crf.model
    pred = crf.tag_sentences(inst.sentences)
    marg = model.marginals(crf.weights, model.encode(inst.sentences), crf.jobs)
    out = {}
    for k, name in enumerate(pred.outputs):
        labels = [y for per_layer in pred.labels for y in per_layer[k]]
        probs = np.concatenate([per_layer[k] for per_layer in marg.probs])
        index = {y: i for i, y in enumerate(marg.labels[k])}
        # (a segment model's marginals are of segment labels: B-NP's is NP's)
        p = np.array([probs[t, index[y] if y in index else index[y[2:]]]
                      for t, y in enumerate(labels)])
        out[name] = (labels[a:b], p[a:b], list(marg.labels[k]))
    return out


def _layers(spec: ast.Spec) -> list[Layer]:
    return [Layer(o, [], False) for o in spec.outputs] + \
        [Layer(h.name, list(h.labels), True) for h in spec.hidden]


def _factor_scene(spec: ast.Spec, inst: Instance, first: int, predicted: dict | None,
                  title: str, base_dir: Path | None, crf: Any) -> Scene:
    """A chain, layered or graph instance: its variables and every factor."""
    layers = _layers(spec)
    lexicons = crf.model.lexicons if crf is not None else None
    unroller = Unroller.for_spec(spec, base_dir or Path("."), layers, lexicons)
    factors = [(ti, vs) for ti, vs, _ in unroller.factors(inst)]
    _check_size(spec, factors, inst.size)
    rows = [(layer.name, layer.hidden) for layer in layers]
    graph = inst.edges is not None
    if graph:
        ids = inst.sentences[0].node_ids
        vars_, row_marks = graph_variables(ids, [(s, t) for s, t, _ in inst.edges], rows)
    else:
        words = inst.cols.get(spec.columns[0].name, [""] * inst.size)
        vars_, row_marks = chain_variables(rows, [str(w) for w in words], first)
    scene = Scene(title, [t.name for t in spec.templates], row_marks, vars_,
                  place_factors(vars_, factors, graph, _long_range(spec)), graph=graph)
    if predicted:
        _colour(scene, layers, predicted, inst.size, inst.gold)
    return scene


def _long_range(spec: ast.Spec) -> frozenset[int]:
    """The pair templates (``where ...``): drawn as arcs."""
    return frozenset(ti for ti, tpl in enumerate(spec.templates)
                     if any(i != "t" for _, _, i in variables(tpl)))


def _colour(scene: Scene, layers: list[Layer], predicted: dict, n: int,
            gold: dict[str, list] | None = None) -> None:
    """Give each output variable its predicted label and probability, and
    the gold label when the data has one."""
    marked = False
    for k, layer in enumerate(layers):
        if layer.name not in predicted:
            continue
        labels, probs, every = predicted[layer.name]
        truth = gold.get(layer.name) if gold is not None else None
        for p in range(n):
            v = scene.variables[k * n + p]
            v.tag, v.prob = labels[p], float(probs[p])
            if truth is not None and truth[p] is not None:
                v.gold, marked = str(truth[p]), True
        scene.tags += [y for y in every if y not in scene.tags]
    scene.notes.append("variables coloured by predicted label, shaded by its marginal "
                       "probability" + (GOLD_NOTE if marked else ""))
    scene.shading = "marginal probability of the predicted label"


GOLD_NOTE = ("; rings: green where the gold label agrees, red where not (the gold label "
             "written above)")


def _mark_segments(scene: Scene, spec: ast.Spec, inst: Instance) -> None:
    """A trained segment model's picture of labelled data: the gold
    segmentation under the words, and each predicted segment marked
    against it (its gold label when the gold segmentation has the same
    span, else "no gold segment")."""
    out = spec.outputs[0]
    gold = {}
    for sent, lo, hi in zip(inst.sentences, inst.bounds, inst.bounds[1:]):
        segs = segments_from_tags(list(inst.gold[out][lo:hi]), spec.segments, sent)
        for u, v, y in segs:
            gold[u + lo, v + lo] = y
            scene.gold_brackets.append(Bracket(u + lo, v + lo, u + lo - 0.3, v + lo + 0.3,
                                               -0.75, y))
    for var, b in zip(scene.variables, scene.brackets):
        var.gold = gold.get((b.first, b.last), "no gold segment")
    scene.notes.append("gold segmentation dashed under the words" + GOLD_NOTE)


def _check_size(spec: ast.Spec, factors: list[tuple[int, list[int]]], n: int) -> None:
    if len(factors) <= MAX_FACTORS:
        return
    counts = np.bincount([ti for ti, _ in factors], minlength=len(spec.templates))
    top = int(np.argmax(counts))
    raise FglError(f"these {n} positions have {len(factors)} factors ({counts[top]} of template "
                   f"'{spec.templates[top].name}'); a picture of more than {MAX_FACTORS} is "
                   "unreadable: draw a smaller window with --tokens A:B")


def _segment_scene(spec: ast.Spec, inst: Instance, predicted: dict | None, title: str
                   ) -> Scene:
    """A semi-Markov instance: its tokens on a line, the brackets of a
    segmentation over them, a variable per segment and the segment
    templates' factors (unrolled over segment indices, within a sentence)."""
    out = spec.outputs[0]
    words = inst.cols.get(spec.columns[0].name, [""] * inst.size)
    if predicted:
        tags, probs, _ = predicted[out]
        source = "the predicted segmentation, shaded by mean token marginal"
    elif inst.gold is not None:
        tags, probs, source = inst.gold[out], None, "the gold segmentation"
    else:
        tags, probs = None, None
        source = "no labels in the data: one segment per token shown"
    per_sentence = []
    for sent, lo, hi in zip(inst.sentences, inst.bounds, inst.bounds[1:]):
        if tags is None:
            per_sentence.append([(t, t, "") for t in range(lo, hi)])
        else:
            segs = segments_from_tags(list(tags[lo:hi]), spec.segments, sent)
            per_sentence.append([(u + lo, v + lo, y) for u, v, y in segs])
    segs = [s for group in per_sentence for s in group]
    vars_ = []
    for j, (u, v, y) in enumerate(segs):
        prob = None if probs is None else float(np.mean(probs[u:v + 1]))
        vars_.append(Variable(j, 0, j, (u + v) / 2, SEGMENT_RISE, y, "", False,
                              y if tags is not None else None, prob))
    factors, j0 = [], 0
    for group in per_sentence:
        for ti, tpl in enumerate(spec.templates):
            offsets = [off for _, off, _ in variables(tpl)]
            for j in range(len(group)):
                if j + min(offsets) >= 0 and j + max(offsets) < len(group):
                    factors.append((ti, [j0 + j + off for off in offsets]))
        j0 += len(group)
    _check_size(spec, factors, inst.size)
    scene = Scene(title, [t.name for t in spec.templates],
                  [("segments", SEGMENT_RISE, False), ("tokens", 0.0, False)], vars_,
                  place_factors(vars_, factors),
                  [Bracket(u, v, u - 0.3, v + 0.3, 0.35, y) for u, v, y in segs],
                  [Word(p, float(p), 0.0, str(w)) for p, w in enumerate(words)],
                  [f"segments of up to {spec.segments.max_length} tokens; {source}"],
                  text_above=True)
    if tags is not None:
        scene.tags = sorted({y for _, _, y in segs})
    if predicted:
        scene.shading = "mean marginal probability of the segment's tokens"
    return scene


# ------------------------------------------------------------------ a spec without data

def structure_drawing(spec: ast.Spec) -> Drawing:
    """The shapes of a spec's clique templates over ``STRUCTURE_WIDTH``
    positions (an example graph for graph input, an example segmentation
    for a semi-Markov spec), drawn without data; a pair template
    (``where ...``) links the pairs the data chooses, so one example pair
    stands for it."""
    name = spec.name or Path(spec.file).name
    n = STRUCTURE_WIDTH
    if registry.choose(spec).engine.segmented:
        segs = [(0, 1), (2, 2), (3, 4)]
        vars_ = [Variable(j, 0, j, (u + v) / 2, SEGMENT_RISE, "", "") for j, (u, v) in
                 enumerate(segs)]
        factors = []
        for ti, tpl in enumerate(spec.templates):
            offsets = [off for _, off, _ in variables(tpl)]
            factors += [(ti, [j + off for off in offsets]) for j in range(len(segs))
                        if j + min(offsets) >= 0]
        return Drawing(Scene(
            f"{name}: template structure", [t.name for t in spec.templates],
            [("segments", SEGMENT_RISE, False), ("tokens", 0.0, False)], vars_,
            place_factors(vars_, factors),
            [Bracket(u, v, u - 0.3, v + 0.3, 0.35, "") for u, v in segs],
            [Word(p, float(p), 0.0, f"x{p}") for p in range(n)],
            [f"an example segmentation; segments of up to {spec.segments.max_length} tokens"]))
    layers = _layers(spec)
    index = {layer.name: k for k, layer in enumerate(layers)}
    if len(spec.outputs) == 1:
        index["y"] = 0
    rows = [(layer.name, layer.hidden) for layer in layers]
    graph = spec.input_format == "graph"
    ring = [(p, (p + 1) % n) for p in range(n)]
    if graph:
        vars_, row_marks = graph_variables([f"n{p}" for p in range(n)], ring, rows)
    else:
        vars_, row_marks = chain_variables(rows, [""] * n)
    pairs = [ti for ti, tpl in enumerate(spec.templates)
             if len(variables(tpl)) > 1 and any(i != "t" for _, _, i in variables(tpl))]
    factors = []
    for ti, tpl in enumerate(spec.templates):
        refs = variables(tpl)
        layer_of = [index[v] for v, _, _ in refs]
        if ti not in pairs:
            for t in range(n):
                pos = [t + (off if i == "t" else 0) for _, off, i in refs]
                if min(pos) >= 0 and max(pos) < n:
                    factors.append((ti, [k * n + p for k, p in zip(layer_of, pos)]))
            continue
        k = pairs.index(ti)
        examples = ring[k::len(pairs)] if graph else [(min(k, n - 2), n - 1)]
        factors += [(ti, [li * n + ends[0 if i in ("i", "a") else 1]
                          for li, (_, _, i) in zip(layer_of, refs)]) for ends in examples]
    notes = []
    if pairs:
        notes.append("an example graph: the data's edges say which pairs are linked" if graph
                     else "pair templates link the pairs the data chooses: one example each")
    return Drawing(Scene(f"{name}: template structure", [t.name for t in spec.templates],
                         row_marks, vars_, place_factors(vars_, factors, graph, _long_range(spec)),
                         notes=notes,
                         graph=graph))


# ------------------------------------------------------------------ DOT

def _quote(text: str) -> str:
    """A DOT string literal; a newline in ``text`` becomes a line break."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n") + '"'


def scene_dot(scene: Scene, inches: float = 0.9) -> str:
    """DOT text of a scene, every node pinned where the picture puts it
    (Graphviz: ``dot -Tpng g.dot -o g.png``; the file asks for neato,
    which keeps pinned nodes in place)."""
    colours = tag_colours(scene.tags)
    lines = [f"graph {_quote(scene.title)} {{", "  layout=neato; overlap=true; splines=true;",
             "  node [fontname=Helvetica, fontsize=10];"]

    def pos(x: float, y: float) -> str:
        return f'pos="{x * inches:.2f},{y * inches:.2f}!"'

    for v in scene.variables:
        style = "dashed" if v.hidden else "solid"
        fill = f", style=\"{style},filled\", fillcolor={_quote(colours[v.tag])}" \
            if v.tag in colours else f", style={style}"
        marked = v.gold is not None and v.tag is not None
        xlabel = v.text + (f"\ngold {v.gold}" if marked and v.gold != v.tag else "")
        text = f", xlabel={_quote(xlabel)}" if xlabel else ""
        ring = (f", color={_quote(RIGHT if v.gold == v.tag else WRONG)}, penwidth=2"
                if marked else "")
        lines.append(f"  v{v.id} [label={_quote(v.index)}{text}, shape=circle, width=0.4, "
                     f"fixedsize=true{fill}{ring}, {pos(v.x, v.y)}];")
    for w in scene.words:
        lines.append(f"  w{w.pos} [label={_quote(w.text)}, shape=plaintext, {pos(w.x, w.y)}];")
    for k, f in enumerate(scene.factors):
        colour = _quote(template_colour(f.template))
        lines.append(f"  f{k} [label=\"\", xlabel={_quote(scene.templates[f.template])}, "
                     f"shape=square, width=0.12, fixedsize=true, style=filled, "
                     f"fillcolor={colour}, color={colour}, {pos(f.x, f.y)}];")
        lines.extend(f"  f{k} -- v{v} [color={colour}];" for v in f.variables)
    for k, b in enumerate(scene.brackets):   # segment k is variable k
        lines.extend(f"  v{k} -- w{p} [style=dotted, color=gray];"
                     for p in range(b.first, b.last + 1))
    lines.append("}")
    return "\n".join(lines) + "\n"

