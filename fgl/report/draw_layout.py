"""Where each mark of a factor-graph picture goes (no drawing here).

A ``Scene`` is a picture as plain data: label variables (circles) at fixed
places — a row per label layer with the tokens in order, segment variables
above the brackets of their spans, or graph nodes where a spring layout puts
them — and factor squares placed by ``place_factors``: a unary factor just
below its variable, a pairwise factor halfway between neighbours of a row,
a long-range pair (a skip edge) at the top of an arc over the row, a
higher-order factor above the mean of its variables.  ``fgl.report.draw_render``
paints a scene with matplotlib and ``fgl.report.draw`` writes one as DOT.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

ROW_GAP = 2.0        # between label layers
UNARY_DROP = 0.5     # a unary factor sits this far below its variable
HIGH_RISE = 0.6      # a factor of three or more variables of a row sits this far above it
SPREAD = 0.2         # factors that would overlap are spread this far apart
SEGMENT_RISE = 1.2   # segment variables sit this far above their tokens
UNARY_COLUMNS = 4    # a variable's unary factors: a grid this many wide, rows going down
UNARY_GAP = 0.24     # between the squares of that grid
WORD_DROP = 0.8      # a word hangs this far below its variable (further under many unaries)
NODE_GAP = 1.1       # graph nodes at least this far apart (the spring layout packs a chain)
MAX_SPREAD = 60      # ... in graphs of at most this many nodes (larger ones: the layout's scale)
KINDS = ("unary", "pairwise", "long-range pair", "graph edge", "higher-order",
         "not in this picture")   # the kinds of template a legend groups, in order


@dataclass
class Variable:
    """One label variable: ``row`` is its layer's row, ``order`` its place
    along the row (token position, segment or node index); ``text`` is the
    label written under it (a whole word, or a node id), ``tag`` the
    predicted (or gold) label it is coloured by, ``prob`` that label's
    marginal probability and ``gold``, in a trained model's picture of
    labelled data, the gold label the prediction is marked against."""

    id: int
    row: int
    order: int
    x: float
    y: float
    text: str = ""
    index: str = ""
    hidden: bool = False
    tag: str | None = None
    prob: float | None = None
    gold: str | None = None


@dataclass
class FactorMark:
    """A factor square of template ``template`` joined to ``variables``;
    ``arc`` when the joins are drawn as one arc over the row (a skip edge),
    ``above`` when an arc bends upwards (else downwards)."""

    template: int
    variables: list[int]
    x: float
    y: float
    arc: bool = False
    above: bool = True


@dataclass
class Bracket:
    """A segment's span of tokens ``first..last`` (window positions)."""

    first: int
    last: int
    x0: float
    x1: float
    y: float
    tag: str


@dataclass
class Word:
    """A token written on the line (segment pictures: tokens are not variables)."""

    pos: int
    x: float
    y: float
    text: str


@dataclass
class Scene:
    """Everything a picture shows, in data coordinates (one unit is a token)."""

    title: str
    templates: list[str]
    rows: list[tuple[str, float, bool]]          # (layer name, y, hidden)
    variables: list[Variable]
    factors: list[FactorMark] = field(default_factory=list)
    brackets: list[Bracket] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # labels in colour order (a model's picture)
    graph: bool = False
    text_above: bool = False    # segment variables: their label above the circle
    gold_brackets: list[Bracket] = field(default_factory=list)  # the gold segmentation
    shading: str = ""           # what the fills' shade is (a key is drawn when given)


def short(text: str, width: int = 7) -> str:
    """``text`` cut to ``width`` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def arc_height(distance: int) -> float:
    """How far above its row an arc spanning ``distance`` places rises."""
    return 0.45 + 0.3 * math.sqrt(max(distance, 1))


def place_factors(variables: list[Variable], factors: list[tuple[int, list[int]]],
                  graph: bool = False, long_range: frozenset[int] = frozenset()
                  ) -> list[FactorMark]:
    """Factor squares for ``factors`` (template, variable ids): see the
    module docstring; pairs of a row from ``long_range`` templates (pair
    templates, ``where ...``) are arcs even between neighbours.  Squares
    that would overlap are spread sideways."""
    by_id = {v.id: v for v in variables}
    last_row = max((v.row for v in variables), default=0)
    marks: list[FactorMark] = []
    unary: dict[int, list[FactorMark]] = defaultdict(list)
    for ti, ids in factors:
        vs = [by_id[i] for i in ids]
        x = sum(v.x for v in vs) / len(vs)
        y = sum(v.y for v in vs) / len(vs)
        one_row = len({v.row for v in vs}) == 1
        if len(vs) == 1:
            unary[ids[0]].append(FactorMark(ti, ids, x, y - UNARY_DROP))
        elif graph or not one_row:
            marks.append(FactorMark(ti, ids, x, y))
        elif len(vs) == 2 and abs(vs[0].order - vs[1].order) <= 1 and ti not in long_range:
            marks.append(FactorMark(ti, ids, x, y))
        elif len(vs) == 2:
            above = vs[0].row == 0 or vs[0].row < last_row
            rise = arc_height(abs(vs[0].order - vs[1].order))
            marks.append(FactorMark(ti, ids, x, y + (rise if above else -rise), True, above))
        else:
            marks.append(FactorMark(ti, ids, x, y + HIGH_RISE + 0.15 * (len(vs) - 3)))
    _spread(marks)
    for group in unary.values():   # (a grid under the variable: 15 templates stay apart)
        cols = min(len(group), UNARY_COLUMNS)
        for k, m in enumerate(group):
            m.x += (k % cols - (cols - 1) / 2) * UNARY_GAP
            m.y -= (k // cols) * UNARY_GAP
    return [m for group in unary.values() for m in group] + marks


def word_drop(scene: Scene) -> float:
    """How far below its variable a word hangs: ``WORD_DROP``, or further
    when a variable's unary factors reach lower."""
    by_id = {v.id: v for v in scene.variables}
    depth = max((by_id[f.variables[0]].y - f.y for f in scene.factors
                 if len(f.variables) == 1), default=0.0)
    return max(WORD_DROP, depth + 0.3)


def template_kinds(scene: Scene) -> dict[int, str]:
    """Each template's kind (one of ``KINDS``) as its factors in the
    picture show it: the legend groups templates by it."""
    kinds: dict[int, str] = {}
    for f in scene.factors:
        n = len(f.variables)
        kind = ("unary" if n == 1 else "long-range pair" if f.arc else
                "graph edge" if n == 2 and scene.graph else "pairwise" if n == 2
                else "higher-order")
        kinds.setdefault(f.template, kind)
    return {ti: kinds.get(ti, KINDS[-1]) for ti in range(len(scene.templates))}


def by_kind(scene: Scene) -> list[tuple[str, list[int]]]:
    """The scene's templates grouped by kind, in ``KINDS`` order."""
    kinds = template_kinds(scene)
    return [(kind, [ti for ti, k in kinds.items() if k == kind]) for kind in KINDS
            if kind in kinds.values()]


def _spread(marks: list[FactorMark]) -> None:
    """Move squares sharing a place apart, side by side."""
    at: dict[tuple[float, float], list[FactorMark]] = defaultdict(list)
    for m in marks:
        at[round(m.x, 2), round(m.y, 2)].append(m)
    for group in at.values():
        if len(group) > 1:
            for k, m in enumerate(group):
                m.x += (k - (len(group) - 1) / 2) * SPREAD


def chain_variables(layers: list[tuple[str, bool]], words: list[str], first: int = 0
                    ) -> tuple[list[Variable], list[tuple[str, float, bool]]]:
    """Variables of ``layers`` (name, hidden) over ``words``, layer-major
    ids, one row per layer; the words go under the last row; ``first`` is
    the window's first position (the index shown in each circle)."""
    n = len(words)
    variables, rows = [], []
    for k, (name, hidden) in enumerate(layers):
        y = -k * ROW_GAP
        rows.append((name, y, hidden))
        for p in range(n):
            text = words[p] if k == len(layers) - 1 else ""   # whole: the renderer turns it
            variables.append(Variable(k * n + p, k, p, float(p), y, text, str(first + p), hidden))
    return variables, rows


def graph_variables(node_ids: list[str], edges: list[tuple[int, int]], layers: list[tuple[str,
                    bool]]) -> tuple[list[Variable], list[tuple[str, float, bool]]]:
    """Variables of a graph's nodes placed by a spring layout (networkx,
    seeded: the same graph gives the same picture); several layers stack
    copies of the layout."""
    import networkx as nx

    n = len(node_ids)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    pos = nx.spring_layout(g, seed=7, k=1.5 / math.sqrt(max(n, 1))) if n > 1 else {0: (0, 0)}
    scale = 0.9 * math.sqrt(max(n, 1)) + 0.6
    closest = min((math.dist(pos[a], pos[b]) for a in range(n) for b in range(a + 1, n)),
                  default=1.0)
    scale = max(scale, NODE_GAP / max(closest, 1e-9)) if n <= MAX_SPREAD else scale
    xs = {p: float(pos[p][0]) * scale for p in range(n)}
    ys = {p: float(pos[p][1]) * scale for p in range(n)}
    height = 2 * scale + 2 * UNARY_DROP + 1
    variables, rows = [], []
    for k, (name, hidden) in enumerate(layers):
        base = -k * height
        rows.append((name, base + scale, hidden))
        variables.extend(Variable(k * n + p, k, p, xs[p], base + ys[p], short(node_ids[p], 10),
                                  "", hidden) for p in range(n))
    return variables, rows
