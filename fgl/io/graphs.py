"""Graph-structured instances (Sutton & McCallum §1.4: relational data), as JSON lines.

One graph per line::

    {"nodes": [{"id": "p1", "title": "belief propagation", "year": 2001, "label": "ML"}, ...],
     "edges": [{"source": "p1", "target": "p2", "type": "cites"}, ...]}

Node attributes are the spec's columns (numbers may be JSON numbers,
vectors JSON lists); the output column may be missing on every node (data
to tag) but not on some only.  A graph becomes a ``GraphInstance``: a
``Sentence`` whose rows are its nodes, plus its typed edges, so the
observation machinery reads node attributes exactly as token columns.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from fgl.errors import DataError, shorten
from fgl.io.conll import Sentence
from fgl.lang import ast


@dataclass
class GraphInstance(Sentence):
    """A graph: ``rows`` are nodes (spec column order), ``edges`` are
    (source node index, target node index, type)."""

    node_ids: list[str] = field(default_factory=list)
    edges: list[tuple[int, int, str]] = field(default_factory=list)


def _field(value, kind: str, node: str, column: str, name: str, lineno: int) -> str:
    """A node attribute as a token field: a vector column's JSON list of
    numbers, else a JSON string, number or boolean."""
    if kind == "vector" and isinstance(value, list):
        if not value or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                for x in value):
            raise DataError(f"node '{node}': attribute '{column}' must be a non-empty list "
                            "of numbers", name, lineno)
        return ",".join(str(float(x)) for x in value)
    if value is None or isinstance(value, (list, dict)):
        what = "null" if value is None else f"a JSON {type(value).__name__}"
        expected = "a list of numbers" if kind == "vector" else "a string or a number"
        raise DataError(f"node '{node}': attribute '{column}' is {what}; expected {expected}",
                        name, lineno)
    return str(value)


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")   # the JSON escape of half a surrogate pair


def _lone_surrogate(obj: object) -> str | None:
    """A string (key or value) of a JSON value holding half of a
    UTF-16 surrogate pair: not a character, so no UTF-8 text can hold it."""
    todo = [obj]
    while todo:
        x = todo.pop()
        if isinstance(x, str):
            if not x.isascii():
                try:
                    x.encode("utf-8")
                except UnicodeEncodeError:
                    return x
        elif isinstance(x, dict):
            todo.extend(x)
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)
    return None


def read_graphs(path: str | Path, spec: ast.Spec, encoding: str = "utf-8") -> list[GraphInstance]:
    """Read a JSON-lines graph file; errors name ``file:line``."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding=encoding)
    except FileNotFoundError:
        raise DataError("no such file", name, 0) from None
    except (OSError, UnicodeDecodeError, LookupError) as e:
        raise DataError(f"cannot read graph file: {e}", name, 0) from None
    columns = [c.name for c in spec.columns]
    kinds = {c.name: c.kind for c in spec.columns}
    inputs = [c for c in columns if c not in spec.outputs]
    graphs = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"not valid JSON ({e.msg} at column {e.colno})", name, lineno) from None
        except RecursionError:
            raise DataError("JSON nested too deeply to be a graph", name, lineno) from None
        bad = _lone_surrogate(obj) if _SURROGATE.search(line) else None
        if bad is not None:
            half = next(c for c in bad if 0xD800 <= ord(c) <= 0xDFFF)
            raise DataError(f"the string {shorten(ascii(bad))} holds \\u{ord(half):04x}, half of "
                            "a UTF-16 surrogate pair, which is not a character; write the "
                            "character itself (or both halves of its pair)", name, lineno)
        if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list) \
                or not isinstance(obj.get("edges", []), list):
            raise DataError('expected an object with a "nodes" list (and an "edges" list)',
                            name, lineno)
        if not obj["nodes"]:
            raise DataError("a graph needs at least one node", name, lineno)
        ids, rows = [], []
        for node in obj["nodes"]:
            if not isinstance(node, dict) or "id" not in node:
                raise DataError('every node needs an "id"', name, lineno)
            missing = [c for c in inputs if c not in node]
            if missing:
                raise DataError(f"node '{node['id']}' has no attribute '{missing[0]}'; the spec's "
                                f"columns are: {', '.join(columns)}", name, lineno)
            has = [o in node for o in spec.outputs]
            if any(has) and not all(has):
                raise DataError(f"node '{node['id']}' has some output labels but not all",
                                name, lineno)
            wanted = columns if all(has) else inputs
            rows.append([_field(node[c], kinds[c], str(node["id"]), c, name, lineno)
                         for c in wanted])
            ids.append(str(node["id"]))
        widths = {len(r) for r in rows}
        if len(widths) > 1:
            raise DataError("some nodes have labels and some do not; label every node (or, "
                            "for a latent variable, declare it `hidden`)", name, lineno)
        index = {n: k for k, n in enumerate(ids)}
        if len(index) != len(ids):
            raise DataError("duplicate node id", name, lineno)
        edges: list[tuple[int, int, str]] = []
        seen: set[tuple[int, int, str]] = set()
        for edge in obj.get("edges", []):
            try:
                src, dst, kind = str(edge["source"]), str(edge["target"]), str(edge.get("type", ""))
            except (KeyError, TypeError):
                raise DataError('every edge needs "source" and "target"', name, lineno) from None
            for end in (src, dst):
                if end not in index:
                    raise DataError(f"edge to a missing node '{end}'", name, lineno)
            if src == dst:
                raise DataError(f"edge from node '{src}' to itself; a pair template links two "
                                "different nodes", name, lineno)
            if (index[src], index[dst], kind) in seen:
                raise DataError(f"duplicate edge {src} -> {dst}"
                                f"{f' of type {kind!r}' if kind else ''}", name, lineno)
            seen.add((index[src], index[dst], kind))
            edges.append((index[src], index[dst], kind))
        graphs.append(GraphInstance(rows, [lineno] * len(rows), 0, name, ids, edges))
    return graphs
