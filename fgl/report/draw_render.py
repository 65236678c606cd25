"""A ``Scene`` (``fgl.report.draw_layout``) painted with matplotlib: SVG, PNG or PDF.

Drawn with matplotlib's own renderers (no Graphviz or other system
binary).  Every mark carries an SVG id naming what it is — ``var-3``,
``factor-skip-2``, ``arc-skip-2``, ``edge-trans-4-1``, ``segment-0`` — so a
picture can be checked or styled.  Factors are coloured by template (a
legend names them); a trained model's picture fills each variable with the
colour of its predicted label, shaded by that label's marginal probability
(a key shows the shades), and on labelled data rings each variable green
where the gold label agrees and red where not, the gold label written above
(``gold-N``); a segment model's gold segmentation is dashed under the words
(``gold-segment-N``).  Words are written whole: when one is longer than
``FLAT`` characters, every word of the picture is turned by ``TURN``
degrees so that neighbours do not overlap.
"""
from __future__ import annotations

import io
import math

from fgl.errors import FglError
from fgl.report.draw_layout import Scene, Variable, by_kind, word_drop

RADIUS = 0.22
SQUARE = 0.17
UNIT = 0.6            # inches per token
MAX_WIDTH = 100.0     # inches; wider pictures are scaled down
MAX_PIXELS = 12000    # the widest PNG; a wider picture gets a lower resolution
DPI = 150
FORMATS = ("svg", "png", "pdf")
# twenty distinct colours (then the same twenty dashed: no two of 40 templates look alike)
TEMPLATE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
                    "#17becf", "#e377c2", "#bcbd22", "#7f7f7f", "#393b79", "#637939",
                    "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354",
                    "#756bb1", "#636363")
TAG_COLOURS = ("#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5",
               "#ffffb3", "#bc80bd", "#ccebc5", "#ffed6f", "#d9d9d9")
OUTSIDE = "#a6a6a6"   # the colour of the label O (grey dark enough to show its shading)
RIGHT, WRONG = "#2ca02c", "#d62728"   # rings: the gold label agrees / differs
FLAT = 7              # the longest word written level (about a token's width at 7 pt)
TURN = 55             # degrees longer words are turned by
CHAR = 0.085          # a 7-pt character's width in data units (tokens), for the extent
SHADES = (0.25, 0.5, 0.75, 1.0)   # the probabilities the shading key shows
LEGEND_COLUMNS = 12   # the key's widest line


def template_colour(ti: int) -> str:
    return TEMPLATE_COLOURS[ti % len(TEMPLATE_COLOURS)]


def template_dashed(ti: int) -> bool:
    """Whether template ``ti``'s edges are dashed (past the colours' first round)."""
    return (ti // len(TEMPLATE_COLOURS)) % 2 == 1


def tag_colours(tags: list[str]) -> dict[str, str]:
    """A fill colour per label (O pale grey), in the scene's label order."""
    out, k = {}, 0
    for tag in tags:
        if tag == "O":
            out[tag] = OUTSIDE
        else:
            out[tag] = TAG_COLOURS[k % len(TAG_COLOURS)]
            k += 1
    return out


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise FglError("drawing pictures needs matplotlib: pip install 'fgl[plot]' "
                       "(or write DOT with -o FILE.dot)") from None
    return matplotlib


def render(scene: Scene, fmt: str) -> bytes:
    """The picture of ``scene`` in ``fmt`` ("svg", "png" or "pdf")."""
    if fmt not in FORMATS:
        raise FglError(f"cannot draw a .{fmt} file; the formats are {', '.join(FORMATS)} "
                       "and dot")
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "fgl",
                                "font.family": "DejaVu Sans"}):
        fig = Figure()
        ax = fig.add_subplot()
        x0, x1, y0, y1 = _paint(ax, scene)
        unit = min(UNIT, MAX_WIDTH / max(x1 - x0, 1))
        width = max((x1 - x0) * unit, 4.0)
        fig.set_size_inches(width, max((y1 - y0) * unit, 2.0))
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=min(DPI, MAX_PIXELS / (width + 2)),
                    bbox_inches="tight", pad_inches=0.15,
                    metadata={"Date": None} if fmt == "svg" else None)
    return buf.getvalue()


def _paint(ax, scene: Scene) -> tuple[float, float, float, float]:
    """Draw every mark on ``ax``; returns the data extent (x0, x1, y0, y1)."""
    colours = tag_colours(scene.tags)
    xs = [v.x for v in scene.variables] + [f.x for f in scene.factors] + [0.0]
    ys = [v.y for v in scene.variables] + [f.y for f in scene.factors] + [0.0]
    _paint_factors(ax, scene)
    turn = any(len(t) > FLAT for t in [*(v.text for v in scene.variables if not scene.graph
                                         and not scene.text_above),
                                       *(w.text for w in scene.words)])
    for v in scene.variables:
        _paint_variable(ax, scene, v, colours, turn, xs, ys)
    _paint_words(ax, scene, turn, xs, ys)
    _paint_segments(ax, scene, colours, ys)
    left = min(xs) - 0.5
    for name, y, hidden in scene.rows:
        if len(scene.rows) > 1 or not scene.graph:
            ax.text(left - 0.1, y, name + (" (hidden)" if hidden else ""), ha="right",
                    va="center", fontsize=8, style="italic", color="#333333")
    x0, x1 = left - 1.6, max(xs) + 0.6
    y0, y1 = min(ys) - 0.6, max(ys) + 0.6
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("\n".join([scene.title, *scene.notes]), fontsize=9, loc="left")
    _legend(ax, scene, colours)
    return x0, x1, y0, y1


def _paint_factors(ax, scene: Scene) -> None:
    """Each factor: a square in its template's colour, joined to its
    variables by straight edges, or by one arc for an arc factor."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle
    from matplotlib.path import Path as MPath

    by_id = {v.id: v for v in scene.variables}
    count: dict[str, int] = {}
    for f in scene.factors:
        name = scene.templates[f.template]
        k = count[name] = count.get(name, -1) + 1
        colour = template_colour(f.template)
        if f.arc:
            a, b = (by_id[i] for i in f.variables)
            ctrl = (2 * f.x - (a.x + b.x) / 2, 2 * f.y - (a.y + b.y) / 2)
            lift = RADIUS if f.above else -RADIUS
            path = MPath([(a.x, a.y + lift), ctrl, (b.x, b.y + lift)],
                         [MPath.MOVETO, MPath.CURVE3, MPath.CURVE3])
            ax.add_patch(PathPatch(path, fill=False, edgecolor=colour, linewidth=1.0,
                                   alpha=0.8, gid=f"arc-{name}-{k}", zorder=1))
        else:
            for j, vid in enumerate(f.variables):
                v = by_id[vid]
                ex, ey = _rim(v, f.x, f.y)
                ax.add_line(Line2D([f.x, ex], [f.y, ey], color=colour, linewidth=1.0,
                                   linestyle="--" if template_dashed(f.template) else "-",
                                   gid=f"edge-{name}-{k}-{j}", zorder=1))
        ax.add_patch(Rectangle((f.x - SQUARE / 2, f.y - SQUARE / 2), SQUARE, SQUARE,
                               facecolor=colour, edgecolor=colour, gid=f"factor-{name}-{k}",
                               zorder=3))


def _paint_variable(ax, scene: Scene, v: Variable, colours: dict[str, str], turn: bool,
                    xs: list, ys: list) -> None:
    """One variable: its fill (predicted label, shaded by its marginal),
    its ring (against the gold label), the gold label where it differs, its
    index and its text; the extent lists grow to hold them."""
    from matplotlib.patches import Circle

    fill, alpha = "white", 1.0
    if v.tag is not None:
        fill = colours.get(v.tag, "white")
        alpha = 1.0 if v.prob is None else shade(v.prob)
    ax.add_patch(Circle((v.x, v.y), RADIUS, facecolor=fill, alpha=alpha, zorder=4,
                        edgecolor="none", gid=f"fill-{v.id}"))
    ring, width = "#333333", 1.0
    if v.gold is not None and v.tag is not None:
        ring, width = (RIGHT, 1.8) if v.gold == v.tag else (WRONG, 2.4)
    ax.add_patch(Circle((v.x, v.y), RADIUS, facecolor="none", edgecolor=ring,
                        linewidth=width, linestyle="--" if v.hidden else "-", zorder=5,
                        gid=f"var-{v.id}"))
    if v.gold is not None and v.tag is not None and v.gold != v.tag:
        above = v.y + RADIUS + (0.45 if scene.text_above else 0.06)
        ax.text(v.x, above, v.gold, ha="center", va="bottom", fontsize=6, color=WRONG,
                zorder=6, gid=f"gold-{v.id}")
        ys.append(above + 0.3)
    inside = v.tag if v.tag is not None and not scene.text_above else v.index
    if inside:   # (a model's picture: the predicted label written in, not only its colour)
        ax.text(v.x, v.y, inside, ha="center", va="center", zorder=6,
                color="#111111" if v.tag is not None else "#555555", gid=f"tag-{v.id}",
                fontsize=6 if len(inside) < 3 else 5 if len(inside) < 5 else 4)
    if v.text:
        if scene.text_above:
            ax.text(v.x, v.y + RADIUS + 0.1, v.text, ha="center", va="bottom", fontsize=7,
                    zorder=6, gid=f"label-{v.id}")
        elif scene.graph:
            ax.text(v.x + RADIUS + 0.05, v.y + 0.05, v.text, ha="left", va="bottom",
                    fontsize=7, zorder=6, gid=f"word-{v.id}")
            xs.append(v.x + 1.2)
        else:
            _word(ax, v.x, v.y - word_drop(scene), v.text, turn, f"word-{v.id}", xs, ys)


def _paint_words(ax, scene: Scene, turn: bool, xs: list, ys: list) -> None:
    """The words of a segment model's picture, each under a dot."""
    from matplotlib.patches import Circle

    for w in scene.words:
        ax.add_patch(Circle((w.x, w.y), 0.05, color="#555555", zorder=4))
        _word(ax, w.x, w.y - 0.15, w.text, turn, f"word-{w.pos}", xs, ys)
        xs.append(w.x)


def _paint_segments(ax, scene: Scene, colours: dict[str, str], ys: list) -> None:
    """The predicted segments' brackets, and the gold ones dashed below the
    words (turned words reach further down); ``ys`` grows to hold them."""
    from matplotlib.lines import Line2D

    for k, b in enumerate(scene.brackets):
        colour = colours.get(b.tag, "#333333")
        edge = "#333333" if colour in (OUTSIDE, "white") else colour
        ax.add_line(Line2D([b.x0, b.x0, b.x1, b.x1], [b.y - 0.12, b.y, b.y, b.y - 0.12],
                           color=edge, linewidth=1.6, gid=f"segment-{k}"))
    if not scene.gold_brackets:
        return
    low = min(ys) - 0.2
    for k, b in enumerate(scene.gold_brackets):
        colour = colours.get(b.tag, "#333333")
        edge = "#333333" if colour in (OUTSIDE, "white") else colour
        ax.add_line(Line2D([b.x0, b.x0, b.x1, b.x1], [low + 0.12, low, low, low + 0.12],
                           color=edge, linewidth=1.4, linestyle="--",
                           gid=f"gold-segment-{k}"))
        ax.text((b.x0 + b.x1) / 2, low - 0.08, b.tag, ha="center", va="top", fontsize=6,
                color="#333333", gid=f"gold-label-{k}")
    ys.append(low - 0.5)


def _legend(ax, scene: Scene, colours: dict[str, str]) -> None:
    """The key under the picture, a row per kind of template (its name
    first), then the labels in use, the gold rings and the shades."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def heading(text: str):
        return Line2D([], [], linestyle="", marker="", label=text)

    rows = [[heading(f"{kind}:"), *(Line2D([], [], marker="s", color=template_colour(ti),
                                           linestyle="--" if template_dashed(ti) else "-",
                                           label=scene.templates[ti]) for ti in group)]
            for kind, group in by_kind(scene)]
    used = {v.tag for v in scene.variables} | {b.tag for b in scene.brackets}
    tags = [Patch(facecolor=colours[t], edgecolor="#333333", label=t) for t in scene.tags
            if t in used]
    if tags:
        rows.append([heading("labels:"), *tags])
    marks = []
    if any(v.gold is not None and v.tag is not None for v in scene.variables):
        marks += [Line2D([], [], marker="o", linestyle="", markerfacecolor="white",
                         markeredgecolor=c, markeredgewidth=2, label=text)
                  for c, text in ((RIGHT, "= gold"), (WRONG, "≠ gold"))]
    if scene.shading:   # the key to the shades: a grey circle per probability
        marks += [Line2D([], [], marker="o", linestyle="", markersize=9,
                         markeredgecolor="#333333", markerfacecolor=(0.35, 0.35, 0.35, shade(p)),
                         label=f"p = {p:g}" if p == SHADES[0] else f"{p:g}") for p in SHADES]
    if marks:
        rows.append([heading("marks:"), *marks])
    if rows:
        ncol = min(max(len(r) for r in rows), LEGEND_COLUMNS)
        ax.legend(handles=_row_major(rows, ncol, heading(" ")), loc="upper center",
                  bbox_to_anchor=(0.5, 0.0), frameon=False, ncol=ncol, fontsize=8,
                  handletextpad=0.3, columnspacing=1.2,
                  title=f"shade: {scene.shading}" if scene.shading else None, title_fontsize=7)


def _row_major(rows: list[list], ncol: int, blank) -> list:
    """Legend entries that matplotlib (which fills a legend column by column)
    shows row by row: each of ``rows`` (a heading, then its entries)
    starting a new line of ``ncol``, its heading alone in the first column."""
    lines = []
    for heading, *items in rows:
        for k in range(0, len(items), ncol - 1):
            part = [heading if k == 0 else blank, *items[k:k + ncol - 1]]
            lines.append(part + [blank] * (ncol - len(part)))
    return [lines[r][c] for c in range(ncol) for r in range(len(lines))]


def shade(p: float) -> float:
    """The opacity of a fill for probability ``p``."""
    return 0.2 + 0.8 * p


def _word(ax, x: float, y: float, text: str, turn: bool, gid: str, xs: list, ys: list
          ) -> None:
    """A whole word hanging from (x, y): level, or turned when the picture's
    words are long; the extent lists grow to hold it."""
    if turn:
        ax.text(x + 0.1, y, text, ha="right", va="top", rotation=TURN, rotation_mode="anchor",
                fontsize=7, zorder=6, gid=gid)
        reach = CHAR * len(text)
        xs.append(x - reach * math.cos(math.radians(TURN)))
        ys.append(y - reach * math.sin(math.radians(TURN)) - 0.3)
    else:
        ax.text(x, y, text, ha="center", va="top", fontsize=7, zorder=6, gid=gid)
        ys.append(y - 0.3)


def _rim(v: Variable, x: float, y: float) -> tuple[float, float]:
    """The point of ``v``'s circle facing (x, y)."""
    dx, dy = x - v.x, y - v.y
    d = math.hypot(dx, dy) or 1.0
    return v.x + RADIUS * dx / d, v.y + RADIUS * dy / d
