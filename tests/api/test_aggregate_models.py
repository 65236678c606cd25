"""Models with aggregates train, tag, and save and load (docs/language.md,
"Aggregates over links and mentions"): on data whose labels only the
aggregates can tell — a node's label set by the nodes it cites, a name's
by a cue next to its other mentions in the document — the models tag
held-out instances right, and a saved model tags them identically."""
from __future__ import annotations

import json
import random
from pathlib import Path

from fgl import CRF

GRAPH_SPEC = """\
input graph
columns words, label
output label
template node: y[a] ~ bias, tokens(words[a]), any(tokens(words[b]) over edge(a, b, "cites"))
train { sigma = 3 }
"""

DOC_SPEC = """\
columns word, label
output label
template state: y[t] ~ bias, word[t], lower(word[t-1]),
                any(lower(word[j-1]) over word[i] == word[j] within document)
template trans: y[t-1..t]
train { sigma = 3 }
"""


def citation_graph(rng: random.Random) -> dict:
    """Hubs about alpha or beta (label H) and leaves with the same word,
    each citing one hub: a leaf is A when its hub is about alpha, else B."""
    nodes, edges = [], []
    for h in range(4):
        nodes.append({"id": f"h{h}", "words": "alpha" if h % 2 == 0 else "beta", "label": "H"})
    for k in range(16):
        hub = rng.randrange(4)
        nodes.append({"id": f"l{k}", "words": "leaf", "label": "A" if hub % 2 == 0 else "B"})
        edges.append({"source": f"l{k}", "target": f"h{hub}", "type": "cites"})
    return {"nodes": nodes, "edges": edges}


def test_a_graph_model_reads_its_neighbours_and_round_trips(tmp_path):
    rng = random.Random(7)
    crf = CRF(GRAPH_SPEC).fit([citation_graph(rng) for _ in range(3)])
    test = [citation_graph(rng) for _ in range(2)]
    gold = [[n["label"] for n in g["nodes"]] for g in test]
    unlabelled = [{"nodes": [{k: v for k, v in n.items() if k != "label"} for n in g["nodes"]],
                   "edges": g["edges"]} for g in test]
    predicted = crf.predict(unlabelled)
    assert predicted == gold
    crf.save(tmp_path / "g.fglm")
    assert CRF.load(tmp_path / "g.fglm").predict(unlabelled) == predicted


def documents(rng: random.Random, n: int) -> tuple[list[list[str]], list[list[str]], list[int]]:
    """Documents of three sentences, each naming Zed once: after "Mr" in
    one sentence of a PER document (after "in" for LOC), after "saw" in the
    others, so only the other mentions tell the label there."""
    X, y, docs = [], [], []
    for d in range(n):
        label = rng.choice(["PER", "LOC"])
        cue = rng.randrange(3)
        for s in range(3):
            before = ("Mr" if label == "PER" else "in") if s == cue else "saw"
            X.append([[w] for w in ("we", before, "Zed", "today")])
            y.append(["O", "O", label, "O"])
            docs.append(d)
    return X, y, docs


def test_a_chain_reads_other_mentions_and_round_trips(tmp_path):
    rng = random.Random(3)
    X, y, docs = documents(rng, 12)
    crf = CRF(DOC_SPEC).fit(X, y, documents=docs)
    assert crf.engine.engine.name == "chain"   # (an observation: the chain stays exact)
    X2, y2, docs2 = documents(rng, 6)
    predicted = crf.predict(X2, documents=docs2)
    assert predicted == y2
    crf.save(tmp_path / "d.fglm")
    assert CRF.load(tmp_path / "d.fglm").predict(X2, documents=docs2) == predicted


def test_explain_counts_what_each_aggregate_reads(tmp_path, capsys):
    """p cites q and r; q cites r: p reads 2 nodes, q 1, r none."""
    from fgl.cli import main

    spec = tmp_path / "g.fgl"
    spec.write_text("input graph\ncolumns words, label\noutput label\n"
                    'template node: y[a] ~ bias, count(tokens(words[b]) over edge(a, b, "c"))\n')
    graph = {"nodes": [{"id": "p", "words": "x", "label": "A"},
                       {"id": "q", "words": "x y", "label": "B"},
                       {"id": "r", "words": "z", "label": "A"}],
             "edges": [{"source": "p", "target": "q", "type": "c"},
                       {"source": "p", "target": "r", "type": "c"},
                       {"source": "q", "target": "r", "type": "c"}]}
    data = tmp_path / "g.jsonl"
    data.write_text(json.dumps(graph) + "\n")
    assert main(["explain", str(spec), "--train", str(data)]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    # p: x, y, z from q and r (3 items); q: z (1); r: none; 3 distinct attributes
    assert line.startswith("  node: count(tokens(words[b]) over edge(a,b,'c')): 3 nodes read "
                           "1.00 linked nodes each on average (1 none), 1.33 items each; "
                           "3 attributes"), line


def test_an_edge_type_no_training_graph_has_is_refused_at_its_place():
    import pytest

    from fgl.errors import SpecError

    spec = GRAPH_SPEC.replace('edge(a, b, "cites")', 'edge(a, b, "cite")')
    with pytest.raises(SpecError) as info:
        CRF(spec).fit([citation_graph(random.Random(1))])
    e = info.value
    assert (e.line, e.col) == (4, 73) and 'no training graph has an edge of type "cite"' in \
        e.message and '"cites"' in e.message, str(e)


def test_a_sentence_pair_template_links_within_sentences_when_documents_are_read():
    """A document aggregate makes each document one instance; the skip
    template (within sentence, the default) still links no two sentences."""
    from fgl.compile.frontend import Layer
    from fgl.compile.unrolling import Unroller, group_instances
    from fgl.data.sentence import Sentence
    from fgl.lang.checks import validate
    from fgl.lang.parser import parse_spec

    spec = validate(parse_spec(
        "columns word, label\noutput label\n"
        "template state: y[t] ~ word[t], count(bias over word[i] == word[j] within document)\n"
        "template skip: (y[i], y[j]) where word[i] == word[j] ~ bias\n", "s.fgl"))
    doc = [Sentence([["Zed", "A"], ["x", "O"], ["Zed", "A"]], [1, 2, 3], 0, "f"),
           Sentence([["Zed", "A"]], [5], 0, "f")]
    inst = group_instances(spec, doc, with_gold=True)[0]
    assert inst.bounds == [0, 3, 4]
    unroller = Unroller.for_spec(spec, Path("."), [Layer("label", ["A", "O"])])
    skips = [vs for ti, vs, _ in unroller.factors(inst) if ti == 1]
    assert skips == [[0, 2]]
    counts = [items for ti, _, items in unroller.factors(inst) if ti == 0]
    assert [dict(c).get("count(bias over word[i]==word[j] within document)") for c in counts] \
        == [2.0, None, 2.0, 2.0]
