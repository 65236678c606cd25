"""Hand-written SVG charts for the report: a line chart over iterations and
a heat map with labelled axes (no matplotlib, no script: plain SVG text,
inlined into the page)."""
from __future__ import annotations

import math
from html import escape
from typing import Sequence

FONT = "font-family:DejaVu Sans,Helvetica,Arial,sans-serif"
SERIES_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


def _fmt(v: float) -> str:
    """A tick or cell value, short."""
    if v == 0:
        return "0"
    if abs(v) >= 1e7 or abs(v) < 1e-3:
        return f"{v:.1e}"
    return f"{v:.4g}" if abs(v) < 100 else f"{v:,.0f}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values spanning [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks between 10**lo and 10**hi: the powers of ten, and 2 and 5
    times them when fewer than three powers fall inside."""
    decades = range(math.floor(lo), math.ceil(hi) + 1)
    ticks = [10.0 ** e for e in decades if lo <= e <= hi]
    if len(ticks) < 3:
        ticks = [m * 10.0 ** e for e in decades for m in (1, 2, 5)
                 if lo <= e + math.log10(m) <= hi]
    return ticks


def line_chart(xs: Sequence[float], series: Sequence[tuple[str, Sequence[float | None]]], *,
               title: str, x_label: str, y_label: str, log: bool = False,
               marks: Sequence[tuple[float, str]] = (), width: int = 520,
               height: int = 240) -> str:
    """An SVG line chart of ``series`` (name, values; None: no value) over
    ``xs``, on a log scale when ``log``; ``marks`` draws a dashed vertical
    line with a note at each x (a recovery)."""
    left, right, top, bottom = 70, 16, 28, 44
    points = [(x, v) for _, vs in series for x, v in zip(xs, vs)
              if v is not None and (v > 0 or not log)]
    if not points:
        return ""
    tr = (lambda v: math.log10(v)) if log else (lambda v: v)
    x0, x1 = min(xs), max(xs)
    x1 = x1 if x1 > x0 else x0 + 1
    ys = [tr(v) for _, v in points]
    y0, y1 = min(ys), max(ys)
    if y1 - y0 < 1e-12:
        y0, y1 = y0 - 1, y1 + 1
    pad = 0.05 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad
    w, h = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * w

    def py(v: float) -> float:
        return top + (y1 - tr(v)) / (y1 - y0) * h

    out = [f'<svg class="chart" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{escape(title)}" style="{FONT};font-size:11px">',
           f'<text x="{left}" y="16" font-weight="bold">{escape(title)}</text>',
           f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="#fbfbfb" '
           'stroke="#999"/>']
    y_ticks = _log_ticks(y0, y1) if log else nice_ticks(y0, y1)
    for v in y_ticks:
        y = py(v)
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="#e3e3e3"/><text x="{left - 4}" y="{y + 4:.1f}" '
                   f'text-anchor="end">{_fmt(v)}</text>')
    for x in nice_ticks(x0, x1):
        if float(x).is_integer() or x1 - x0 < 5:
            out.append(f'<text x="{px(x):.1f}" y="{top + h + 14}" text-anchor="middle">'
                       f'{_fmt(x)}</text>')
    for x, note in marks:
        out.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{top}" y2="{top + h}" '
                   f'stroke="#d62728" stroke-dasharray="4 3"><title>{escape(note)}</title>'
                   '</line>')
    for k, (name, values) in enumerate(series):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        path = [(px(x), py(v)) for x, v in zip(xs, values)
                if v is not None and (v > 0 or not log)]
        if len(path) > 1:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in path)
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.6" '
                       f'points="{d}"/>')
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{colour}"/>'
                for x, y in (path if len(path) <= 60 else path[-1:])]
        if len(series) > 1:
            out.append(f'<text x="{left + w - 4}" y="{top + 14 + 13 * k}" text-anchor="end" '
                       f'fill="{colour}">{escape(name)}</text>')
    out += [f'<text x="{left + w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
            f'{escape(x_label)}</text>',
            f'<text transform="translate(14,{top + h / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle">{escape(y_label)}{" (log scale)" if log else ""}</text>',
            "</svg>"]
    return "\n".join(out)


def _diverging(v: float, scale: float) -> str:
    """Blue (negative) through white to red (positive)."""
    t = max(-1.0, min(1.0, v / scale)) if scale > 0 else 0.0
    if t >= 0:
        return f"rgb(255,{round(255 - 170 * t)},{round(255 - 190 * t)})"
    return f"rgb({round(255 + 190 * t)},{round(255 + 130 * t)},255)"


def _sequential(t: float) -> str:
    """White to dark blue for a share in [0, 1]."""
    t = max(0.0, min(1.0, t))
    return f"rgb({round(247 - 239 * t)},{round(251 - 203 * t)},{round(255 - 148 * t)})"


def heat_map(rows: Sequence[str], cols: Sequence[str], values: Sequence[Sequence[float | None]],
             *, row_title: str, col_title: str, shares: Sequence[Sequence[float]] | None = None,
             counts: bool = False, cell: int = 30, css_class: str = "heat") -> str:
    """An SVG heat map: a row per ``rows`` label, a column per ``cols``
    label, each cell coloured by its value — diverging (blue negative, red
    positive) for weights, or by ``shares`` (0-1, white to blue) — and
    written in it when the cells are wide enough; a missing value (None)
    is grey.  ``counts``: values are whole numbers, zeros left blank."""
    longest_row = max((len(r) for r in rows), default=1)
    longest_col = max((len(c) for c in cols), default=1)
    left = 26 + min(longest_row, 24) * 7
    top = 30 + min(longest_col, 24) * 5.5
    width = int(left + cell * len(cols) + 12)
    height = int(top + cell * len(rows) + 12)
    scale = max((abs(v) for row in values for v in row if v is not None), default=0.0)
    out = [f'<svg class="{css_class}" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'style="{FONT};font-size:11px">',
           f'<text x="{left + cell * len(cols) / 2:.1f}" y="12" text-anchor="middle" '
           f'font-style="italic">{escape(col_title)} →</text>',
           f'<text transform="translate(12,{top + cell * len(rows) / 2:.1f}) rotate(-90)" '
           f'text-anchor="middle" font-style="italic">{escape(row_title)} →</text>']
    for j, c in enumerate(cols):
        x = left + cell * (j + 0.5)
        out.append(f'<text class="col-label" transform="translate({x:.1f},{top - 6:.1f}) '
                   f'rotate(-55)">{escape(c[:24])}</text>')
    for i, r in enumerate(rows):
        y = top + cell * (i + 0.5)
        out.append(f'<text class="row-label" x="{left - 6}" y="{y + 4:.1f}" '
                   f'text-anchor="end">{escape(r[:24])}</text>')
        for j, v in enumerate(values[i]):
            x = left + cell * j
            if v is None:
                fill = "#dddddd"
            elif shares is not None:
                fill = _sequential(shares[i][j])
            else:
                fill = _diverging(v, scale)
            tip = f"{r} → {cols[j]}: {'none' if v is None else _fmt(v)}"
            out.append(f'<rect x="{x}" y="{top + cell * i}" width="{cell}" height="{cell}" '
                       f'fill="{fill}" stroke="#ffffff"><title>{escape(tip)}</title></rect>')
            if v is None or (counts and v == 0) or cell < 24:
                continue
            dark = (shares[i][j] > 0.55) if shares is not None else abs(v) > 0.6 * scale
            text = str(int(v)) if counts else "0" if abs(v) < 0.05 else f"{v:.1f}"
            size = 10 if len(text) <= 4 else 8
            out.append(f'<text x="{x + cell / 2:.1f}" y="{top + cell * i + cell / 2 + 4:.1f}" '
                       f'text-anchor="middle" font-size="{size}" '
                       f'fill="{"#ffffff" if dark else "#222222"}">{text}</text>')
    out.append("</svg>")
    return "\n".join(out)
