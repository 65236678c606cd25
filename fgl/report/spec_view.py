"""The spec as the report shows it: every line numbered, comments,
strings, keywords, numbers and the names a line defines highlighted (CSS
classes the page styles; no script)."""
from __future__ import annotations

import re
from html import escape

KEYWORDS = ("model", "columns", "output", "obs", "template", "infer", "train", "where", "within",
            "document", "sentence", "and", "or", "not", "segments", "max", "from", "hidden",
            "input", "graph", "labels", "patterns", "all", "observed", "adjacent", "distinct",
            "nearest", "upto", "edge", "support")
_TOKEN = re.compile(r'(?P<comment>#.*)|(?P<string>"(?:[^"\\]|\\.)*"?)'
                    r'|(?P<define>(?<=\bobs )\s*\w+|(?<=\btemplate )\s*\w+)'
                    r'|(?P<number>\b\d+(?:\.\d+)?(?:e-?\d+)?\b)|(?P<word>\b[A-Za-z_]\w*\b)')


def highlight_line(line: str) -> str:
    """One spec line as HTML, its parts in ``<span class=...>``."""
    out, at = [], 0
    for m in _TOKEN.finditer(line):
        out.append(escape(line[at:m.start()]))
        kind, text = m.lastgroup, m.group()
        if kind == "word" and text not in KEYWORDS:
            out.append(escape(text))
        else:
            css = "kw" if kind == "word" else kind
            out.append(f'<span class="{css}">{escape(text)}</span>')
        at = m.end()
    out.append(escape(line[at:]))
    return "".join(out)


def spec_html(text: str, file: str) -> str:
    """The spec's lines, numbered (``id="spec-L7"`` for line 7), in a table
    a reader can copy the spec from without the numbers."""
    rows = [f'<tr id="spec-L{n}"><td class="ln">{n}</td><td class="code">'
            f'{highlight_line(line) or " "}</td></tr>'
            for n, line in enumerate(text.splitlines(), 1)]
    return (f'<p class="file">{escape(file)}</p><table class="spec"><tbody>'
            + "".join(rows) + "</tbody></table>")
