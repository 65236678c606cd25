"""Graph-structured instances (Sutton & McCallum §1.4: relational data), as JSON lines.

One graph per line::

    {"nodes": [{"id": "p1", "title": "belief propagation", "year": 2001, "label": "ML"}, ...],
     "edges": [{"source": "p1", "target": "p2", "type": "cites"}, ...]}

Node attributes are the spec's columns (numbers may be JSON numbers,
vectors JSON lists).  The output columns may be missing (or ``null``) on
every node — data to tag — or on some nodes only: a *partially labelled*
graph, the within-network setting of collective classification (Sen et
al. 2008, the problem definition).  There an unlabelled node is a latent
variable — marginalised in training, predicted by tagging — and the given
labels are evidence that tagging clamps.  ``"withheld": true`` on a node
says its labels are gold answers for ``fgl eval`` only: everywhere else the
node reads as unlabelled (``GraphInstance.withheld`` keeps the answers).

A graph becomes a ``GraphInstance``: a ``Sentence`` whose rows are its
nodes, plus its typed edges, so the observation machinery reads node
attributes exactly as token columns.  In a partially labelled graph an
unlabelled node's output fields are ``None``; a graph with no label at all
has rows of the input columns only.
"""
from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from fgl.data.sentence import Sentence
from fgl.data.sparse_vector import SparseVector
from fgl.errors import DataError, shorten
from fgl.lang import ast

WITHHELD = "withheld"   # the node attribute marking a label as a gold answer only
MAX_DIGITS = 4300       # the longest whole number a graph line may hold (Python's own limit)


@dataclass
class GraphInstance(Sentence):
    """A graph: ``rows`` are nodes (spec column order), ``edges`` are
    (source node index, target node index, type).  In a partially labelled
    graph an unlabelled node's output fields are None; ``withheld`` maps the
    nodes marked ``"withheld": true`` to their gold labels (one per output
    column, in the spec's ``output`` order), which only evaluation reads."""

    node_ids: list[str] = field(default_factory=list)
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    withheld: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        """Whether some output fields are given and some are not."""
        return any(v is None for row in self.rows for v in row)


def _field(value, kind: str, node: str, column: str, name: str, lineno: int
           ) -> str | SparseVector:
    """A node attribute as a token field: a vector column's JSON list of
    numbers (kept sparsely), else a JSON string, number or boolean."""
    if kind == "vector" and isinstance(value, SparseVector):   # (read so by read_graphs)
        return value
    if kind == "vector" and isinstance(value, list):
        if not value or not all(type(x) in (int, float) for x in value):
            raise DataError(f"node '{node}': attribute '{column}' must be a non-empty list "
                            "of numbers", name, lineno)
        try:
            return SparseVector.of(value)
        except OverflowError:   # (a whole number beyond any float)
            from fgl.features.observations import MAX_MAGNITUDE
            raise DataError(f"node '{node}': attribute '{column}' holds a number beyond "
                            f"{MAX_MAGNITUDE:g}; numbers must be finite and at most "
                            f"{MAX_MAGNITUDE:g} in size (rescale the column)",
                            name, lineno) from None
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


class _LongNumber(Exception):
    """A whole number too long to read, in a JSON line."""

    def __init__(self, text: str):
        super().__init__(text[:12])
        self.digits = len(text.lstrip("-"))
        self.shown = f"{text[:12]}..."


def _whole_number(text: str) -> int:
    """A JSON integer, refused past ``MAX_DIGITS`` digits (where ``int``
    itself fails)."""
    if len(text) > MAX_DIGITS:
        raise _LongNumber(text)
    return int(text)


def _sparse_vectors(columns: list[str]) -> Callable[[dict], dict]:
    """A JSON object hook keeping a node's vector attributes sparsely as soon
    as the node is read, so a line's dense lists of numbers never all live
    at once (a list ``_field`` would refuse is left for it to refuse)."""
    def hook(obj: dict) -> dict:
        for c in columns:
            value = obj.get(c)
            if isinstance(value, list) and value and all(type(x) in (int, float)
                                                         for x in value):
                with contextlib.suppress(OverflowError):
                    obj[c] = SparseVector.of(value)
        return obj
    return hook


def read_graphs(path: str | Path, spec: ast.Spec, encoding: str = "utf-8") -> list[GraphInstance]:
    """Read a JSON-lines graph file; errors name ``file:line``."""
    from fgl.data.inputs import display_name, read_bytes

    name = display_name(path)
    raw = read_bytes(path, "graph file")
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError) as e:
        raise DataError(f"cannot read graph file: {e}", name, 0) from None
    del raw
    vectors = _sparse_vectors([c.name for c in spec.columns if c.kind == "vector"])
    graphs = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_int=_whole_number, object_hook=vectors)
        except _LongNumber as e:
            raise DataError(f"a whole number of {e.digits:,} digits ({e.shown}); a graph file "
                            f"holds numbers of at most {MAX_DIGITS:,} digits", name,
                            lineno) from None
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
        graphs.append(graph_instance(obj, spec, name, lineno))
    return graphs


def graph_instance(obj: object, spec: ast.Spec, name: str = "<graph>", lineno: int = 1
                   ) -> GraphInstance:
    """One graph, a JSON object as a line of a graph file holds (a Python
    dict of that shape); errors name ``name:lineno``."""
    columns = [c.name for c in spec.columns]
    kinds = {c.name: c.kind for c in spec.columns}
    inputs = [c for c in columns if c not in spec.outputs]
    marks = WITHHELD not in columns   # (a spec column of that name is data, not a mark)
    if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list) \
            or not isinstance(obj.get("edges", []), list):
        raise DataError('expected an object with a "nodes" list (and an "edges" list)',
                        name, lineno)
    if not obj["nodes"]:
        raise DataError("a graph needs at least one node", name, lineno)
    ids, rows = [], []
    withheld: dict[int, tuple[str, ...]] = {}
    for node in obj["nodes"]:
        if not isinstance(node, dict) or "id" not in node:
            raise DataError('every node needs an "id"', name, lineno)
        nid = str(node["id"])
        missing = [c for c in inputs if c not in node]
        if missing:
            raise DataError(f"node '{nid}' has no attribute '{missing[0]}'; the spec's "
                            f"columns are: {', '.join(columns)}", name, lineno)
        labels = {o: node.get(o) for o in spec.outputs}   # None: missing or null
        held = node.get(WITHHELD, False) if marks else False
        if not isinstance(held, bool):
            raise DataError(f"node '{nid}': attribute '{WITHHELD}' is {json.dumps(held)}; "
                            "expected true or false", name, lineno)
        fields = {o: None if v is None else _field(v, kinds[o], nid, o, name, lineno)
                  for o, v in labels.items()}
        if held:
            absent = [o for o, v in fields.items() if v is None]
            if absent:
                raise DataError(f"node '{nid}' is withheld but has no label '{absent[0]}' "
                                "to withhold; give the gold label (or drop the mark)",
                                name, lineno)
            withheld[len(rows)] = tuple(fields[o] for o in spec.outputs)
            fields = dict.fromkeys(fields)
        rows.append([fields[c] if c in fields else
                     _field(node[c], kinds[c], nid, c, name, lineno) for c in columns])
        ids.append(nid)
    if all(row[j] is None for row in rows for j, c in enumerate(columns) if c in spec.outputs):
        keep = [j for j, c in enumerate(columns) if c not in spec.outputs]
        rows = [[row[j] for j in keep] for row in rows]   # no label at all: data to tag
    index = {n: k for k, n in enumerate(ids)}
    if len(index) != len(ids):
        raise DataError("duplicate node id", name, lineno)
    edges: list[tuple[int, int, str]] = []
    seen: set[tuple[int, int, str]] = set()
    for edge in obj.get("edges", []):
        try:
            src, dst, kind = str(edge["source"]), str(edge["target"]), str(edge.get("type", ""))
        except (KeyError, TypeError, AttributeError):
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
    return GraphInstance(rows, [lineno] * len(rows), 0, name, ids, edges, withheld)


@dataclass
class Scoring:
    """The nodes evaluation scores, per scored graph: every node of a fully
    labelled graph (the model is given none of its labels), the withheld
    nodes of a graph that has some (the others' labels are evidence).
    ``graphs`` indexes the graphs given; ``nodes[k]`` are graph
    ``graphs[k]``'s scored nodes and ``gold[output][k]`` their gold labels."""

    graphs: list[int]
    nodes: list[list[int]]
    gold: dict[str, list[list[str]]]
    withheld: int = 0    # withheld nodes scored
    given: int = 0       # labelled nodes of those graphs: evidence, not scored
    unscored: int = 0    # unlabelled nodes of those graphs, nor withheld: not scored
    complete: int = 0    # fully labelled graphs, scored on every node
    skipped: int = 0     # graphs with nothing to score

    def select(self, pred: list[list]) -> list[list]:
        """Per scored graph, the predictions (one per node, of every graph
        given) of its scored nodes."""
        return [[pred[i][j] for j in nodes] for i, nodes in zip(self.graphs, self.nodes)]

    def note(self) -> str | None:
        """What was scored, when some labels were withheld (else None)."""
        if not self.withheld:
            return None
        parts = [f"{self.given} given labels clamped as evidence"]
        if self.unscored:
            parts.append(f"{self.unscored} unlabelled nodes predicted, not scored")
        if self.complete:
            parts.append(f"{self.complete} fully labelled graphs scored on every node")
        if self.skipped:
            parts.append(f"{self.skipped} graphs with nothing to score left out")
        return f"scored: the {self.withheld} withheld nodes ({'; '.join(parts)})"


def scoring(graphs: list[GraphInstance], spec: ast.Spec) -> Scoring:
    """Which nodes of ``graphs`` evaluation scores, and their gold labels
    (``Scoring``); a DataError when there is nothing to score."""
    columns = [c.name for c in spec.columns]
    outs = [columns.index(o) for o in spec.outputs]
    out = Scoring([], [], {o: [] for o in spec.outputs})
    first_partial = None
    for i, g in enumerate(graphs):
        labelled = bool(g.rows) and len(g.rows[0]) == len(columns)
        if g.withheld:
            nodes = sorted(g.withheld)
            for k, o in enumerate(spec.outputs):
                out.gold[o].append([g.withheld[j][k] for j in nodes])
            given = [labelled and any(row[c] is not None for c in outs) for row in g.rows]
            out.withheld += len(nodes)
            out.given += sum(given)
            out.unscored += sum(not x for x in given) - len(nodes)
        elif labelled and not g.partial:
            nodes = list(range(len(g.rows)))
            for o in spec.outputs:
                out.gold[o].append([row[columns.index(o)] for row in g.rows])
            out.complete += 1
        else:
            out.skipped += 1
            if labelled and first_partial is None:
                first_partial = g
            continue
        out.graphs.append(i)
        out.nodes.append(nodes)
    if not out.graphs and graphs:
        if first_partial is None:
            g = graphs[0]
            raise DataError(f"evaluation needs the label column(s) {', '.join(spec.outputs)}",
                            g.file, g.lines[0])
        g = first_partial
        j = next(j for j, row in enumerate(g.rows) if any(v is None for v in row))
        raise DataError(f"node '{g.node_ids[j]}' has no label and no node is marked "
                        f'"{WITHHELD}": nothing to score (the given labels are evidence); '
                        "to score the prediction of labels the model is not given, give "
                        f'them and mark those nodes "{WITHHELD}": true (docs/evaluation.md)',
                        g.file, g.lines[0])
    return out
