"""A factor-graph ``Scene`` (``fgl.report.draw_layout``) as hand-written SVG
text, for the report: no matplotlib needed.

The same marks as ``fgl.report.draw_render`` paints — factor squares in their
template's colour joined to their variables (skip edges as arcs), variables
filled with the predicted label's colour shaded by its marginal, the label
written in, a green or red ring against the gold label (written above
where it differs), words under the variables, segments as brackets — with
the key left to the page (``fgl.report.instances`` writes it as HTML).
"""
from __future__ import annotations

from html import escape

from fgl.report.draw_layout import Scene, Variable, word_drop
from fgl.report.draw_render import (
    RADIUS,
    RIGHT,
    SQUARE,
    WRONG,
    shade,
    tag_colours,
    template_colour,
    template_dashed,
)

PX = 56          # pixels per data unit (a token)
CHAR_PX = 6.2    # a 10-px character's width
MARGIN = 0.6     # data units around the marks
TURN = 50        # degrees long words are turned by
FLAT = 7         # the longest word written level


class _Frame:
    """Data coordinates to SVG pixels (y up in the data, down in SVG)."""

    def __init__(self, x0: float, y1: float):
        self.x0, self.y1 = x0, y1

    def x(self, x: float) -> float:
        return round((x - self.x0) * PX, 1)

    def y(self, y: float) -> float:
        return round((self.y1 - y) * PX, 1)


def _extent(scene: Scene, drop: float, turn: bool) -> tuple[float, float, float, float]:
    xs = [v.x for v in scene.variables] + [f.x for f in scene.factors] + [0.0]
    ys = [v.y for v in scene.variables] + [f.y for f in scene.factors] + [0.0]
    longest = max([len(v.text) for v in scene.variables] + [len(w.text) for w in scene.words]
                  + [1])
    below = (CHAR_PX * longest * 0.77 / PX + 0.25 if turn else 0.3) + drop   # (sin 50°)
    ys.append(min([v.y for v in scene.variables] + [w.y + drop for w in scene.words]) - below)
    if any(v.gold is not None and v.tag != v.gold for v in scene.variables):
        ys.append(max(v.y for v in scene.variables) + RADIUS + 0.5)
    if scene.gold_brackets:
        ys.append(min(ys) - 0.6)
    left = 1.4 if not scene.graph or len(scene.rows) > 1 else 0.0
    return min(xs) - MARGIN - left, max(xs) + MARGIN + (1.2 if scene.graph else 0), \
        min(ys) - MARGIN, max(ys) + MARGIN


def _factors(scene: Scene, f: _Frame) -> list[str]:
    """Each template's factors in one group of its colour (hover: its name)."""
    by_id = {v.id: v for v in scene.variables}
    groups: dict[int, list[str]] = {}
    s = SQUARE * PX
    for m in scene.factors:
        marks = groups.setdefault(m.template, [])
        if m.arc:
            a, b = (by_id[i] for i in m.variables)
            cx, cy = 2 * m.x - (a.x + b.x) / 2, 2 * m.y - (a.y + b.y) / 2
            lift = RADIUS if m.above else -RADIUS
            marks.append(f'<path class="arc" d="M{f.x(a.x)},{f.y(a.y + lift)} Q{f.x(cx)},'
                         f'{f.y(cy)} {f.x(b.x)},{f.y(b.y + lift)}" fill="none"/>')
        else:
            marks += [f'<line x1="{f.x(m.x)}" y1="{f.y(m.y)}" x2="{f.x(by_id[v].x)}" '
                      f'y2="{f.y(by_id[v].y)}"/>' for v in m.variables]
        marks.append(f'<rect class="factor" x="{f.x(m.x) - s / 2:.1f}" '
                     f'y="{f.y(m.y) - s / 2:.1f}" width="{s:.1f}" height="{s:.1f}"/>')
    out = []
    for ti, marks in groups.items():
        colour = template_colour(ti)
        dash = ' stroke-dasharray="4 3"' if template_dashed(ti) else ""
        out.append(f'<g stroke="{colour}" fill="{colour}" stroke-width="1.1"{dash}>'
                   f'<title>template {escape(scene.templates[ti])}</title>' + "".join(marks)
                   + "</g>")
    return out


def _variable(scene: Scene, v: Variable, f: _Frame, colours: dict[str, str], drop: float,
              turn: bool) -> list[str]:
    r = RADIUS * PX
    cx, cy = f.x(v.x), f.y(v.y)
    fill, opacity = "#ffffff", 1.0
    if v.tag is not None:
        fill = colours.get(v.tag, "#ffffff")
        opacity = 1.0 if v.prob is None else shade(v.prob)
    ring, width = "#333333", 1.0
    if v.gold is not None and v.tag is not None:
        ring, width = (RIGHT, 2.0) if v.gold == v.tag else (WRONG, 2.6)
    dash = ' stroke-dasharray="3 2"' if v.hidden else ""
    tip = escape(" ".join(filter(None, [v.text, v.tag and f"predicted {v.tag}",
                                        v.prob is not None and f"p = {v.prob:.2f}",
                                        v.gold and f"gold {v.gold}"])))
    out = [f'<g class="variable"><title>{tip}</title>'
           f'<circle cx="{cx}" cy="{cy}" r="{r:.1f}" fill="{fill}" fill-opacity="{opacity:.2f}"/>'
           f'<circle cx="{cx}" cy="{cy}" r="{r:.1f}" fill="none" stroke="{ring}" '
           f'stroke-width="{width}"{dash}/>']
    inside = v.tag if v.tag is not None and not scene.text_above else v.index
    if inside:
        size = 8 if len(inside) < 3 else 7 if len(inside) < 5 else 5.5
        out.append(f'<text class="tag" x="{cx}" y="{cy + size / 3:.1f}" text-anchor="middle" '
                   f'font-size="{size}">{escape(inside)}</text>')
    if v.gold is not None and v.tag is not None and v.gold != v.tag:
        up = RADIUS + (0.45 if scene.text_above else 0.08)
        out.append(f'<text class="gold" x="{cx}" y="{f.y(v.y + up)}" text-anchor="middle" '
                   f'font-size="8" fill="{WRONG}">{escape(v.gold)}</text>')
    if v.text and scene.text_above:
        out.append(f'<text x="{cx}" y="{f.y(v.y + RADIUS + 0.1)}" text-anchor="middle" '
                   f'font-size="9">{escape(v.text)}</text>')
    elif v.text and scene.graph:
        out.append(f'<text x="{f.x(v.x + RADIUS + 0.05)}" y="{f.y(v.y + 0.05)}" '
                   f'font-size="9">{escape(v.text)}</text>')
    elif v.text:
        out.append(_word(f, v.x, v.y - drop, v.text, turn))
    out.append("</g>")
    return out


def _word(f: _Frame, x: float, y: float, text: str, turn: bool) -> str:
    if turn:
        return (f'<text class="word" transform="translate({f.x(x) + 4},{f.y(y) + 6}) '
                f'rotate(-{TURN})" text-anchor="end" font-size="10">{escape(text)}</text>')
    return (f'<text class="word" x="{f.x(x)}" y="{f.y(y) + 8}" text-anchor="middle" '
            f'font-size="10">{escape(text)}</text>')


def _brackets(scene: Scene, f: _Frame, colours: dict[str, str], low: float) -> list[str]:
    out = []
    for b, y, dash in [*((b, b.y, "") for b in scene.brackets),
                       *((b, low, ' stroke-dasharray="4 3"') for b in scene.gold_brackets)]:
        colour = colours.get(b.tag, "#333333")
        edge = "#333333" if colour in ("#ffffff",) else colour
        hook = -0.12 if y == b.y else 0.12
        out.append(f'<polyline points="{f.x(b.x0)},{f.y(y + hook)} {f.x(b.x0)},{f.y(y)} '
                   f'{f.x(b.x1)},{f.y(y)} {f.x(b.x1)},{f.y(y + hook)}" fill="none" '
                   f'stroke="{edge}" stroke-width="1.6"{dash}/>')
        if dash:
            out.append(f'<text x="{f.x((b.x0 + b.x1) / 2)}" y="{f.y(low) + 11}" '
                       f'text-anchor="middle" font-size="8">{escape(b.tag)}</text>')
    return out


def scene_svg(scene: Scene) -> str:
    """The picture of ``scene`` as an inline SVG element (no title or key)."""
    colours = tag_colours(scene.tags)
    drop = word_drop(scene)
    words = [v.text for v in scene.variables if not scene.graph and not scene.text_above]
    turn = any(len(t) > FLAT for t in words + [w.text for w in scene.words])
    x0, x1, y0, y1 = _extent(scene, drop, turn)
    f = _Frame(x0, y1)
    width, height = round((x1 - x0) * PX), round((y1 - y0) * PX)
    out = [f'<svg class="graph" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(scene.title)}" '
           'style="font-family:DejaVu Sans,Helvetica,Arial,sans-serif">']
    out += _factors(scene, f)
    for v in scene.variables:
        out += _variable(scene, v, f, colours, drop, turn)
    for w in scene.words:
        out.append(f'<circle cx="{f.x(w.x)}" cy="{f.y(w.y)}" r="2.3" fill="#555555"/>')
        out.append(_word(f, w.x, w.y - 0.15, w.text, turn))
    out += _brackets(scene, f, colours, y0 + MARGIN + 0.3)
    if len(scene.rows) > 1 or not scene.graph:
        left = min((v.x for v in scene.variables), default=0.0) - 0.5
        out += [f'<text x="{f.x(left)}" y="{f.y(y) + 4}" text-anchor="end" font-size="10" '
                f'font-style="italic" fill="#333333">{escape(name)}'
                f'{" (hidden)" if hidden else ""}</text>' for name, y, hidden in scene.rows]
    out.append("</svg>")
    return "\n".join(out)
