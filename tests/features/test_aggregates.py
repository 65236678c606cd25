"""Aggregates over links and mentions (docs/language.md, "Aggregates over
links and mentions"): the features the compile gives each node (token)
equal a brute-force reading of the definition on small random graphs and
documents — every aggregate, direction, hop count, isolated nodes — and
``norm`` equals a dense numpy D^-1/2 (A+I) D^-1/2 X and its powers (Kipf &
Welling 2017 §2)."""
from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.compile.aggregates import Aggregator, whole_documents
from fgl.compile.unrolling import group_instances
from fgl.data.sentence import Sentence
from fgl.features.observations import TemplateAttributes
from fgl.io.graphs import graph_instance
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec

WORDS = ["ab", "cd", "ef", "gh"]
LINKS = {"out": 'edge(a, b, "c")', "in": 'edge(b, a, "c")',
         "both": 'edge(a, b, "c") or edge(b, a, "c")'}


@st.composite
def graphs(draw):
    """A graph of 1-7 nodes with 1-3 words and a number each, and edges of
    types c and d (some nodes isolated, no self-loops)."""
    n = draw(st.integers(1, 7))
    nodes = [{"id": f"n{i}", "words": " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1,
                                                             max_size=3))),
              "x": draw(st.sampled_from([-1.5, 0.0, 2.0, 3.25]))} for i in range(n)]
    pairs = [(s, t) for s in range(n) for t in range(n) if s != t]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=10)) if pairs else []
    edges = [{"source": f"n{s}", "target": f"n{t}", "type": draw(st.sampled_from("cd"))}
             for s, t in chosen]
    return {"nodes": nodes, "edges": edges}


def node_features(obs: str, graph: dict) -> list[dict[str, float]]:
    """The attributes and values the one-node template ``y[a] ~ obs`` gives
    each node, as the unroller reads them: an item's text (after ``)=``),
    or "x" for a real-valued item."""
    spec = validate(parse_spec(f"input graph\ncolumns words, x:number, y\noutput y\n"
                               f"template node: y[a] ~ {obs}\n", "g.fgl"))
    inst = group_instances(spec, [graph_instance(graph, spec)], with_gold=False)[0]
    attributes = TemplateAttributes(spec)
    Aggregator(spec, attributes.observations).complete(inst.cols, inst.bounds, inst.edges)
    rows = attributes.evaluate(0, inst.cols, inst.size, [(a, a) for a in range(inst.size)])
    return [{key.rsplit(")=", 1)[1] if ")=" in key else "x": v for key, v in row}
            for row in rows]


def linked(graph: dict, direction: str, hops: int) -> list[set[int]]:
    """Per node, the nodes within ``hops`` links of type c, itself left out."""
    index = {node["id"]: k for k, node in enumerate(graph["nodes"])}
    step: list[set[int]] = [set() for _ in index]
    for e in graph["edges"]:
        if e["type"] == "c":
            s, t = index[e["source"]], index[e["target"]]
            if direction in ("out", "both"):
                step[s].add(t)
            if direction in ("in", "both"):
                step[t].add(s)
    out = []
    for a in range(len(index)):
        seen, frontier = set(), {a}
        for _ in range(hops):
            frontier = set().union(*(step[p] for p in frontier)) if frontier else set()
            seen |= frontier
        out.append(seen - {a})
    return out


def reference(func: str, bags: list[Counter], reach: set[int]) -> dict[str, float]:
    """The aggregate ``func`` of the word bags of the nodes ``reach``, by its definition."""
    count = Counter(w for b in reach for w in bags[b])
    total = Counter()
    for b in reach:
        total.update(bags[b])
    if func == "any":
        return {w: 1.0 for w in count}
    if func == "count":
        return {w: float(c) for w, c in count.items()}
    if func == "most":
        top = max(count.values(), default=0)
        return {w: 1.0 for w, c in count.items() if c == top}
    if func == "sum":
        return {w: float(c) for w, c in total.items()}
    return {w: c / len(reach) for w, c in total.items()}   # mean


@settings(max_examples=40, deadline=None)
@given(graph=graphs(), func=st.sampled_from(["any", "count", "most", "sum", "mean"]),
       direction=st.sampled_from(list(LINKS)), hops=st.integers(1, 3))
def test_aggregates_over_edges_equal_their_definition(graph, func, direction, hops):
    got = node_features(f"{func}(tokens(words[b]) over {LINKS[direction]}, hops = {hops})", graph)
    bags = [Counter(node["words"].split()) for node in graph["nodes"]]
    for a, reach in enumerate(linked(graph, direction, hops)):
        want = reference(func, bags, reach)
        assert got[a].keys() == want.keys(), (a, reach)
        for w in want:
            assert np.isclose(got[a][w], want[w]), (a, w)


@settings(max_examples=30, deadline=None)
@given(graph=graphs(), direction=st.sampled_from(list(LINKS)), hops=st.integers(1, 3))
def test_norm_is_gcn_propagation(graph, direction, hops):
    """norm(X) = S^hops X with S = D^-1/2 (A+I) D^-1/2, D the row sums of A + I."""
    got = node_features(f"norm(tokens(words[b]) | value(x[b]) over {LINKS[direction]}, "
                        f"hops = {hops})", graph)
    nodes = graph["nodes"]
    n = len(nodes)
    a = np.zeros((n, n))
    for p, reach in enumerate(linked(graph, direction, 1)):
        a[p, list(reach)] = 1.0
    a_hat = a + np.eye(n)
    scale = np.diag(1.0 / np.sqrt(a_hat.sum(axis=1)))
    s = scale @ a_hat @ scale
    columns = WORDS + ["x"]
    x = np.array([[Counter(node["words"].split())[w] for w in WORDS] + [node["x"]]
                  for node in nodes], dtype=float)
    y = np.linalg.matrix_power(s, hops) @ x
    for p in range(n):
        row = got[p]
        dense = {c: y[p, k] for k, c in enumerate(columns) if abs(y[p, k]) > 1e-12}
        assert row.keys() == dense.keys(), (p, row, dense)
        for c in dense:
            assert np.isclose(row[c], dense[c]), (p, c)


def test_isolated_nodes_have_no_aggregate_but_norm_keeps_their_own():
    graph = {"nodes": [{"id": "p", "words": "ab ab", "x": 1.0},
                       {"id": "q", "words": "cd", "x": 2.0}], "edges": []}
    assert node_features('mean(tokens(words[b]) over edge(a, b, "c"))', graph) == [{}, {}]
    assert node_features('norm(tokens(words[b]) over edge(a, b, "c"))', graph) == \
        [{"ab": 2.0}, {"cd": 1.0}]


def test_edge_types_and_other_predicates_narrow_the_links():
    graph = {"nodes": [{"id": "p", "words": "ab", "x": 1.0}, {"id": "q", "words": "ab", "x": 2.0},
                       {"id": "r", "words": "cd", "x": 3.0}],
             "edges": [{"source": "p", "target": "q", "type": "c"},
                       {"source": "p", "target": "r", "type": "c"},
                       {"source": "q", "target": "r", "type": "d"}]}
    got = node_features('sum(value(x[b]) over edge(a, b, "c") and words[a] != words[b])', graph)
    assert [list(row.values()) for row in got] == [[3.0], [], []]
    got = node_features('count(bias over edge(b, a, "c") or edge(b, a, "d"))', graph)
    assert [list(row.values()) for row in got] == [[], [1.0], [2.0]]


# ---------------------------------------------------------------- other mentions

@st.composite
def documents(draw):
    """1-2 documents of 1-3 sentences of 1-5 tokens over a few words."""
    out = []
    for doc in range(draw(st.integers(1, 2))):
        for _ in range(draw(st.integers(1, 3))):
            words = draw(st.lists(st.sampled_from(["Ann", "ann", "Bo", "x"]), min_size=1,
                                  max_size=5))
            out.append(Sentence([[w, "O"] for w in words], list(range(len(words))), doc, "d"))
    return out


MENTIONS = {
    "document": 'any(lower(word[j-1]) over word[i] == word[j] and regex(word[i], "^[A-Z]") '
                'within document)',
    "sentence": "count(word[j+1] over lower(word[i]) == lower(word[j]))",
}


def mention_features(obs: str, sentences: list[Sentence], cut: list[int]
                     ) -> list[list[dict[str, float]]]:
    """Per sentence and token, the attributes of ``y[t] ~ obs`` as the chain
    compile reads them: sentences in batches cut after the positions
    ``cut``, kept whole per document (``whole_documents``)."""
    spec = validate(parse_spec(f"columns word, y\noutput y\ntemplate s: y[t] ~ {obs}\n", "d.fgl"))
    attributes = TemplateAttributes(spec)
    aggregator = Aggregator(spec, attributes.observations)
    bounds = [0, *sorted(set(cut)), len(sentences)]
    batches = [sentences[a:b] for a, b in zip(bounds, bounds[1:]) if a < b]
    out = []
    for batch in aggregator.batches(batches):
        cols = [{"word": [r[0] for r in s.rows]} for s in batch]
        aggregator.complete_sentences(cols, batch)
        for c, s in zip(cols, batch):
            out.append([{key.rsplit("=", 1)[-1]: v for key, v in row}
                        for row in attributes.evaluate(0, c, len(s.rows))])
    return out


def mention_reference(scope: str, sentences: list[Sentence]) -> list[list[dict[str, float]]]:
    tokens = [(k, t, s.doc) for k, s in enumerate(sentences) for t in range(len(s.rows))]

    def word(k: int, t: int) -> str | None:
        return sentences[k].rows[t][0] if 0 <= t < len(sentences[k].rows) else None

    out = [[{} for _ in s.rows] for s in sentences]
    for k, t, doc in tokens:
        for k2, t2, doc2 in tokens:
            if (k2, t2) == (k, t):
                continue
            if scope == "document" and doc2 == doc and word(k2, t2) == word(k, t) \
                    and word(k, t)[0].isupper() and word(k2, t2 - 1) is not None:
                out[k][t][word(k2, t2 - 1).lower()] = 1.0
            if scope == "sentence" and k2 == k and word(k2, t2).lower() == word(k, t).lower() \
                    and word(k2, t2 + 1) is not None:
                got = out[k][t]
                got[word(k2, t2 + 1)] = got.get(word(k2, t2 + 1), 0.0) + 1.0
    return out


@settings(max_examples=40, deadline=None)
@given(sentences=documents(), scope=st.sampled_from(list(MENTIONS)),
       cut=st.lists(st.integers(1, 5), max_size=3))
def test_mention_aggregates_equal_their_definition(sentences, scope, cut):
    got = mention_features(MENTIONS[scope], sentences, cut)
    assert got == mention_reference(scope, sentences)


def test_whole_documents_moves_a_documents_tail_to_the_next_batch():
    s = [Sentence([["w", "O"]], [1], doc, "f") for doc in (0, 0, 1, 1, 1, 2)]
    got = list(whole_documents([s[:3], s[3:4], s[4:]]))
    assert got == [s[:2], s[2:5], s[5:]]


def test_an_aggregate_column_holds_its_non_zeros_only():
    """400 papers in a citation ring, 5 words of their own each (2,000 in
    all): a paper's mean over both neighbours holds 10 words, never 2,000."""
    n = 400
    graph = {"nodes": [{"id": f"n{i}", "words": " ".join(f"w{5 * i + k}" for k in range(5)),
                        "x": 0.0} for i in range(n)],
             "edges": [{"source": f"n{i}", "target": f"n{(i + 1) % n}", "type": "c"}
                       for i in range(n)]}
    spec = validate(parse_spec("input graph\ncolumns words, x:number, y\noutput y\n"
                               f"template node: y[a] ~ mean(tokens(words[b]) over {LINKS['both']})"
                               "\n", "g.fgl"))
    inst = group_instances(spec, [graph_instance(graph, spec)], with_gold=False)[0]
    aggregator = Aggregator(spec, TemplateAttributes(spec).observations)
    column = aggregator.column(aggregator.aggregates[0], inst.cols, inst.bounds, inst.edges)
    assert column.idx.size == column.val.size == 10 * n
    assert column.nbytes <= 24 * (10 * n + n + 1)     # far below 400 x 2,000 x 8 bytes


def test_a_pair_template_reads_an_aggregate_at_its_first_end():
    """On an edge (a, b), count(bias over edge(b, a, "c")) is a's number of citing nodes."""
    from pathlib import Path

    from fgl.compile.frontend import Layer
    from fgl.compile.unrolling import Unroller

    graph = {"nodes": [{"id": k, "words": "ab", "x": 0.0} for k in "pqr"],
             "edges": [{"source": "p", "target": "q", "type": "c"},
                       {"source": "q", "target": "r", "type": "c"},
                       {"source": "r", "target": "q", "type": "c"}]}
    spec = validate(parse_spec("input graph\ncolumns words, x:number, y\noutput y\n"
                               'template e: (y[a], y[b]) where edge(a, b, "c") '
                               '~ count(bias over edge(b, a, "c"))\n', "g.fgl"))
    inst = group_instances(spec, [graph_instance(graph, spec)], with_gold=False)[0]
    unroller = Unroller.for_spec(spec, Path("."), [Layer("y", ["A", "B"])])
    got = {tuple(vs): [v for _, v in items] for _, vs, items in unroller.factors(inst)}
    assert got == {(0, 1): [], (1, 2): [2.0], (2, 1): [1.0]}


def test_hops_that_link_too_many_pairs_are_refused_at_the_aggregate(monkeypatch):
    import pytest

    from fgl.compile import aggregates
    from fgl.errors import SpecError

    monkeypatch.setattr(aggregates, "MAX_LINKS", 10)
    ring = {"nodes": [{"id": f"n{i}", "words": "ab", "x": 0.0} for i in range(6)],
            "edges": [{"source": f"n{i}", "target": f"n{(i + 1) % 6}", "type": "c"}
                      for i in range(6)]}
    assert node_features(f"any(tokens(words[b]) over {LINKS['both']})", ring)   # 12 links: fine
    with pytest.raises(SpecError) as info:
        node_features(f"any(tokens(words[b]) over {LINKS['both']}, hops = 2)", ring)
    e = info.value
    assert (e.line, e.col) == (4, 23) and "with hops = 2 links more than 10 pairs" in e.message


def test_a_conjunction_with_an_aggregate_joins_names_and_texts_and_multiplies_values():
    graph = {"nodes": [{"id": "p", "words": "ab", "x": 1.0}, {"id": "q", "words": "cd", "x": 2.0},
                       {"id": "r", "words": "cd", "x": 3.0}],
             "edges": [{"source": "p", "target": "q", "type": "c"},
                       {"source": "p", "target": "r", "type": "c"}]}
    spec = validate(parse_spec("input graph\ncolumns words, x:number, y\noutput y\n"
                               "obs cited = count(tokens(words[b]) over edge(a, b, \"c\"))\n"
                               "template node: y[a] ~ cited & tokens(words[a]), "
                               "tokens(words[a]) & sum(value(x[b]) over edge(a, b, \"c\"))\n",
                               "g.fgl"))
    inst = group_instances(spec, [graph_instance(graph, spec)], with_gold=False)[0]
    attributes = TemplateAttributes(spec)
    Aggregator(spec, attributes.observations).complete(inst.cols, inst.bounds, inst.edges)
    rows = attributes.evaluate(0, inst.cols, inst.size, [(a, a) for a in range(inst.size)])
    assert dict(rows[0]) == {
        "count(tokens(words[b]) over edge(a,b,'c'))&tokens(words[a])=cd|ab": 2.0,
        "tokens(words[a])&sum(x[b] over edge(a,b,'c'))=ab|": 5.0}
    assert rows[1] == rows[2] == []


def test_a_text_builtin_rewrites_an_aggregates_texts():
    graph = {"nodes": [{"id": "p", "words": "x", "x": 0.0},
                       {"id": "q", "words": "Ab CD", "x": 0.0}],
             "edges": [{"source": "p", "target": "q", "type": "c"}]}
    got = node_features('lower(any(tokens(words[b]) over edge(a, b, "c")))', graph)
    assert got == [{"ab": 1.0, "cd": 1.0}, {}]
