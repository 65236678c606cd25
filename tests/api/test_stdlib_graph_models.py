"""The general-CRF specs of the standard library (stdlib/skip_chain.fgl,
factorial.fgl, relational.fgl, latent.fgl; Sutton & McCallum §1.4-1.5): each checks,
compiles to the loopy program, trains on small generated data and beats the
majority-label baseline on held-out generated data.  The generators are
built so that the structure each spec adds is what the data needs: repeated
names whose context is often ambiguous (skip edges), two label layers
(factorial), topics spread by citations (relational), a persistent hidden
regime (latent)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from support.paths import STDLIB
from support.sentences import skip_documents, two_layer_sentences, without_labels

from fgl import registry
from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.engines.graph.factor_graph_program import FactorGraphData, FactorGraphProgram
from fgl.lang.checks import validate
from fgl.lang.parser import read_spec

SPECS = ["skip_chain", "factorial", "relational", "latent"]


def _majority(gold_seqs) -> float:
    """Accuracy of always predicting the most frequent gold label."""
    counts = Counter(y for seq in gold_seqs for y in seq)
    return counts.most_common(1)[0][1] / sum(counts.values())


def _accuracy(gold_seqs, pred_seqs) -> float:
    pairs = [(g, p) for gs, ps in zip(gold_seqs, pred_seqs) for g, p in zip(gs, ps)]
    return sum(g == p for g, p in pairs) / len(pairs)


@pytest.mark.parametrize("name", SPECS)
def test_spec_checks_and_needs_the_loopy_program(name):
    spec = validate(read_spec(STDLIB / f"{name}.fgl"))
    assert registry.choose(spec).engine.name == "factor graph"
    assert spec.file.endswith(f"{name}.fgl")


# ---------------------------------------------------------------- skip chain

def _skip_factors(data: FactorGraphData) -> int:
    """Factors over two variables that are not neighbouring positions."""
    n = 0
    for g in data.graphs:
        for f in range(g.n_factors):
            vs = g.factor_vars(f)
            n += len(vs) == 2 and abs(int(vs[1]) - int(vs[0])) != 1
    return n


def test_skip_chain_links_repeated_names_and_beats_the_linear_chain():
    train, test = skip_documents(24, seed=1), skip_documents(16, seed=2)
    crf = CRF(STDLIB / "skip_chain.fgl", max_iter=40).fit_sentences(train)
    assert isinstance(crf.model.program, FactorGraphProgram)

    data = crf.model.encode(test)
    assert data.n_sequences == 16            # `within document`: one instance per document
    skip_tpl = [t.name for t in crf.model.templates].index("skip")
    n_skip = int(np.sum(data.fac_tpl == skip_tpl))
    # each mention of a name to the next (`nearest`), and nothing else (cues/filler are
    # lower case)
    expected = 0
    for d in range(16):
        names = Counter(r[0] for s in test if s.doc == d for r in s.rows if r[0][0].isupper())
        expected += sum(k - 1 for k in names.values())
    assert n_skip == expected > 0
    assert _skip_factors(data) == n_skip

    gold = [s.column(-1) for s in test]
    tagged = crf.tag_sentences(without_labels(test))
    pred = tagged.tokens()
    acc = _accuracy(gold, pred)
    assert acc > _majority(gold) + 0.1
    stats = tagged.stats                       # of decoding the test documents
    assert stats.instances == 16 and stats.max_iterations >= 1

    # the same observations without the skip template: a (exact) linear chain
    text = (STDLIB / "skip_chain.fgl").read_text(encoding="utf-8")
    start = text.index("template skip:")
    infer = text.index("infer", start)
    linear = text[:start] + text[text.index("\n", infer):]
    chain = CRF(linear, max_iter=40).fit_sentences(train)
    assert not isinstance(chain.model.program, FactorGraphProgram)
    chain_pred = chain.predict_sentences(without_labels(test))

    def entity_acc(p):
        ents = [(g, q) for gs, qs in zip(gold, p) for g, q in zip(gs, qs) if g != "O"]
        return sum(g == q for g, q in ents) / len(ents)

    # later mentions are a coin flip for the chain; the skip edges resolve them
    assert entity_acc(chain_pred) < 0.8
    assert entity_acc(pred) > entity_acc(chain_pred) + 0.05


# ---------------------------------------------------------------- factorial

def test_factorial_crf_labels_both_layers():
    train, test = two_layer_sentences(60, seed=3), two_layer_sentences(30, seed=4)
    crf = CRF(STDLIB / "factorial.fgl", max_iter=40).fit_sentences(train)
    assert isinstance(crf.model.program, FactorGraphProgram)
    assert [layer.name for layer in crf.model.layers] == ["pos", "chunk"]
    data = crf.model.encode(test)
    assert sum(g.n_cycles() for g in data.graphs) > 0     # the ladder of two chains has loops
    pred = crf.predict_sentences(without_labels(test, n_out=2))
    assert all(isinstance(tok, tuple) and len(tok) == 2 for seq in pred for tok in seq)
    for k, col in ((0, 1), (1, 2)):
        gold = [s.column(col) for s in test]
        got = [[tok[k] for tok in seq] for seq in pred]
        assert _accuracy(gold, got) > max(_majority(gold) + 0.3, 0.9)


# ---------------------------------------------------------------- relational

def citation_graphs(path: Path, n_graphs: int, seed: int) -> Path:
    """Graphs of 10 papers in 3 topics.  A paper's words are mostly
    topic-neutral (a topical word with probability 0.35 each); citations stay
    within a topic 90% of the time, so neighbours tell a paper's topic."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n_graphs):
        topics = rng.integers(0, 3, 10)
        nodes = []
        for k, z in enumerate(topics):
            words = [f"t{z}w{rng.integers(0, 5)}" if rng.random() < 0.35
                     else f"c{rng.integers(0, 20)}"
                     for _ in range(3)]
            nodes.append({"id": f"p{k}", "words": " ".join(words).upper(), "label": f"T{z}"})
        edges = [{"source": f"p{a}", "target": f"p{b}", "type": "cites"}
                 for a in range(10) for b in range(a + 1, 10)
                 if rng.random() < (0.45 if topics[a] == topics[b] else 0.03)]
        # another edge type: ignored
        edges += [{"source": "p0", "target": "p1", "type": "mentions"}]
        lines.append(json.dumps({"nodes": nodes, "edges": edges}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_relational_crf_classifies_linked_papers(tmp_path):
    train = citation_graphs(tmp_path / "train.jsonl", 30, seed=5)
    test = citation_graphs(tmp_path / "test.jsonl", 30, seed=6)
    crf = CRF(STDLIB / "relational.fgl", max_iter=60).fit_file(train)
    assert isinstance(crf.model.program, FactorGraphProgram)
    graphs, pred = crf.predict_file(test)
    gold = [g.column(-1) for g in graphs]
    acc = _accuracy(gold, pred)
    assert acc > _majority(gold) + 0.25
    # only "cites" edges became factors: node factors + one per citation
    data = crf.model.encode(graphs)
    cites = sum(1 for g in graphs for _, _, kind in g.edges if kind == "cites")
    assert len(data.fac_tpl) == sum(len(g.rows) for g in graphs) + cites
    # the edge template learned that linked papers share a topic
    prog = crf.model.program
    rows = np.repeat(np.arange(len(prog.row_ptr) - 1), np.diff(prog.row_ptr))
    on_edge = prog.row_template[rows] == 1
    w, cfg = crf.weights[on_edge], prog.feat_config[on_edge]
    same = np.isin(cfg, [0, 4, 8])
    assert w[same].mean() > w[~same].mean() + 0.5


# ---------------------------------------------------------------- latent

def regime_sentences(n: int, seed: int, length: int = 14) -> list[Sentence]:
    """A hidden regime (0 or 1) per sequence, switching rarely.  Marker words
    m0/m1 (label O) reveal it now and then; the ambiguous word "x" is A in
    regime 0 and B in regime 1; other words have fixed labels.  Because O
    tokens separate the x's, the regime has to be remembered over several
    positions -- what a hidden chain z[t-1..t] can do."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(n):
        z = int(rng.integers(0, 2))
        rows = []
        for t in range(length):
            if rng.random() < 0.05:
                z = 1 - z
            r = rng.random()
            if r < 0.2:
                rows.append([f"m{z}", "O"])
            elif r < 0.5:
                rows.append(["x", "A" if z == 0 else "B"])
            elif r < 0.75:
                rows.append([f"a{rng.integers(0, 4)}", "A"])
            else:
                rows.append([f"o{rng.integers(0, 6)}", "O"])
        out.append(Sentence(rows, list(range(1, length + 1)), s, "<regime>"))
    return out


def test_latent_crf_trains_by_marginal_likelihood():
    train, test = regime_sentences(40, seed=7), regime_sentences(30, seed=8)
    crf = CRF(STDLIB / "latent.fgl", max_iter=25).fit_sentences(train)
    prog = crf.model.program
    assert isinstance(prog, FactorGraphProgram) and prog.has_hidden
    assert [layer.hidden for layer in crf.model.layers] == [False, True]
    rows = crf.training_log.iterations
    assert rows[-1]["objective"] < rows[0]["objective"]
    gold = [s.column(-1) for s in test]
    pred = crf.predict_sentences(without_labels(test))
    labels = set(crf.model.layers[0].labels)
    assert all(len(p) == len(g) and set(p) <= labels for p, g in zip(pred, gold))
    assert _accuracy(gold, pred) > _majority(gold) + 0.2


def test_without_nearest_every_pair_of_mentions_is_linked(tmp_path):
    """Without `and nearest` the stdlib skip template links every pair of a
    name's mentions — k(k-1)/2 skip factors, a clique — where `nearest`
    links each mention to the next (a path)."""
    text = (STDLIB / "skip_chain.fgl").read_text(encoding="utf-8")
    assert "and nearest" in text
    spec = tmp_path / "all_pairs.fgl"
    spec.write_text(text.replace("and nearest", ""), encoding="utf-8")
    train, test = skip_documents(24, seed=1), skip_documents(16, seed=2)
    crf = CRF(spec, max_iter=40).fit_sentences(train)
    data = crf.model.encode(test)
    skip_tpl = [t.name for t in crf.model.templates].index("skip")
    pairs = []
    for i, g in enumerate(data.graphs):
        for f in range(int(data.inst_fptr[i]), int(data.inst_fptr[i + 1])):
            if data.fac_tpl[f] == skip_tpl:
                pairs.append((i, *sorted(int(v) for v in g.factor_vars(f - data.inst_fptr[i]))))
    expected = []
    for d in range(16):
        words = [r[0] for s in test if s.doc == d for r in s.rows]
        expected += [(d, i, j) for i, w in enumerate(words) if w[0].isupper()
                     for j in range(i + 1, len(words)) if words[j] == w]
    assert sorted(pairs) == sorted(expected) and expected
    assert sum(g.n_cycles() for g in data.graphs) > 0   # the cliques close loops
    gold = [s.column(-1) for s in test]
    assert _accuracy(gold, crf.tag_sentences(without_labels(test)).tokens()) > _majority(gold) + 0.1
