"""Small trained models of every structure and their data, for the tests
of `fgl report` (tests/report/test_report*.py): a chain, a skip chain, a
semi-Markov model and a graph model, each saved to a model file."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from fgl.api import CRF
from fgl.datasets.synth import segment_sequences
from fgl.io.conll import write_conll
from support.specs import GRAPH, SKIP_CHAIN

CHAIN = """model "small chunker"
columns word, label
output label
# the word and its neighbours
obs w = word[t-1..t+1]
template state: y[t] ~ bias, w
template trans: y[t-1..t]
train { sigma = 3  max_iter = 25 }
"""

SEMI = """columns word, label
output label
segments max 4 from bio
template segment: s[j] ~ bias, lower(word[u..v]), length
template transition: s[j-1..j]
train { max_iter = 15 }
"""

SPECS = {"chain": (CHAIN, "data.txt"), "skip": (SKIP_CHAIN, "data.txt"),
         "semi": (SEMI, "data.txt"), "graph": (GRAPH, "graphs.jsonl")}


def _graphs(n: int = 3) -> str:
    lines = []
    for g in range(n):
        nodes = [{"id": f"p{g}-{k}", "words": f"w{k % 4} w{(k + g) % 5}",
                  "label": f"L{k % 3}"} for k in range(7)]
        edges = [{"source": f"p{g}-{k}", "target": f"p{g}-{(k + 2) % 7}", "type": "cites"}
                 for k in range(0, 7, 2)]
        lines.append(json.dumps({"nodes": nodes, "edges": edges}))
    return "\n".join(lines) + "\n"


def write_models(folder: Path) -> dict[str, tuple[Path, Path]]:
    """Train each structure's model on small data in ``folder``: per name,
    (model file, data file)."""
    train, _ = segment_sequences(n_types=2, max_len=3, vocab=8, n_train=14, n_test=1,
                                 length=10, seed=2)
    with open(folder / "data.txt", "w", encoding="utf-8") as fh:
        write_conll(fh, train)
    (folder / "graphs.jsonl").write_text(_graphs(), encoding="utf-8")
    out = {}
    for name, (text, data) in SPECS.items():
        (folder / f"{name}.fgl").write_text(text, encoding="utf-8")
        crf = CRF(folder / f"{name}.fgl").fit_file(folder / data)
        crf.save(folder / f"{name}.fglm")
        out[name] = (folder / f"{name}.fglm", folder / data)
    return out


class _Addresses(HTMLParser):
    """Every src, href and other address-bearing attribute of a page."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("src", "href", "action", "poster", "srcset", "data", "xlink:href",
                       "formaction", "background") and value is not None:
                self.found.append(value)


def external_addresses(html: str) -> list[str]:
    """What in ``html`` would make a browser reach outside the file: an
    address (src, href, ...) other than a fragment or a data: URL, any
    http(s) or protocol-relative URL in the text, an @import, a url()
    other than data:."""
    parser = _Addresses()
    parser.feed(html)
    bad = [a for a in parser.found if not (a.startswith("#") or a.startswith("data:"))]
    bad += re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"'<>]*", html)
    bad += re.findall(r"@import[^;]*", html)
    bad += [u for u in re.findall(r"url\(\s*['\"]?([^)'\"]*)", html) if not u.startswith("data:")]
    return bad
