"""Marginals and confidences of trained models: `fgl tag --marginals/--confidence`
output parsed and compared with the Python API, segment confidences of real
chain, high-order, semi-Markov and factor-graph models against enumeration
over the models' own potentials, graph input as JSON, and per-instance BP
statistics."""
from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from support.brute_force import (
    chain_enumerate,
    logsumexp,
    semimarkov_matches,
    semimarkov_segmentations,
)
from support.paths import STDLIB
from support.specs import FACTORIAL

from fgl.api import CRF
from fgl.cli import main
from fgl.datasets.synth import segment_sequences
from fgl.engines.graph.loopy import assignment_score
from fgl.io.conll import write_conll
from fgl.io.rows import as_sentences

TOL = 1e-10

SKIP = """columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
template skip: (y[i], y[j]) where word[i] == word[j]{within} ~ bias
infer {infer}
train {{ max_iter = 15 }}
"""

GRAPH = """input graph
columns words, label
output label
template node: y[a] ~ bias, tokens(words[a])
template cites: (y[a], y[b]) where edge(a, b, "cites")
infer loopy(max_iter = 50)
train { max_iter = 10 }
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("marginals")
    train, test = segment_sequences(n_types=2, max_len=3, vocab=12, n_train=30, n_test=6,
                                    length=8, seed=4)
    for name, sents in (("train.txt", train), ("test.txt", test)):
        with open(d / name, "w", encoding="utf-8") as fh:
            write_conll(fh, sents)
    return d


def trained(data: Path, spec: str, name: str) -> tuple[CRF, Path]:
    path = data / f"{name}.fglm"
    if not path.exists():
        crf = CRF(STDLIB / spec if spec.endswith(".fgl") else spec, max_iter=25)
        crf.fit_file(data / "train.txt")
        crf.save(path)
    return CRF.load(path), path


def tag(capsys, *argv) -> list[list[list[str]]]:
    """`fgl tag argv` as sentences of token field lists."""
    assert main([str(a) for a in argv]) == 0
    out = capsys.readouterr().out
    return [[line.split() for line in block.splitlines()]
            for block in out.strip("\n").split("\n\n")]


def words(data: Path) -> list[list[list[str]]]:
    crf = CRF(STDLIB / "hmm_like.fgl")
    return [[[w] for w in s.column(0)] for s in crf.read(data / "test.txt")]


@pytest.mark.parametrize("spec", ["hmm_like.fgl", "high_order.fgl", "semi_crf.fgl"])
def test_tag_marginals_all_equal_the_api_and_sum_to_one(data, capsys, spec):
    crf, model = trained(data, spec, spec[:-4])
    sents = tag(capsys, "tag", model, data / "test.txt", "--marginals", "all")
    api = crf.marginals(words(data))
    (labels,) = api.labels
    for rows, (probs,) in zip(sents, api.probs):
        for row, p in zip(rows, probs):
            assert len(row) == 3 + len(labels)          # word gold predicted, label:p...
            pairs = [field.rsplit(":", 1) for field in row[3:]]
            assert [y for y, _ in pairs] == labels
            got = np.array([float(v) for _, v in pairs])
            np.testing.assert_allclose(got, p, atol=5e-7)
            assert abs(got.sum() - 1.0) < 1e-5 and abs(p.sum() - 1.0) < 1e-9


def test_tag_marginals_best_is_the_predicted_labels_probability(data, capsys):
    crf, model = trained(data, "hmm_like.fgl", "hmm_like")
    sents = tag(capsys, "tag", model, data / "test.txt", "--marginals")
    api = crf.predict_marginals(words(data))
    for rows, dicts in zip(sents, api):
        for row, d in zip(rows, dicts):
            assert len(row) == 4
            assert abs(float(row[3]) - d[row[2]]) < 5e-7


def chain_oracle(crf: CRF, rows: list[list[str]], found) -> list[float]:
    """Chunk confidences by enumerating every labelling of the model's own
    potentials."""
    model = crf.model
    data = model.encode([_sentence(rows)])
    pot = model.program.potentials(crf.weights, data, 0)
    items = list(chain_enumerate(len(model.labels), model.structure.patterns, pot))
    log_z = logsumexp([s for _, s, _ in items])
    pred = [model.labels.index(y) for y in crf.predict([rows])[0]]
    return [math.exp(logsumexp([s for y, s, _ in items if y[a:b] == tuple(pred[a:b])]) - log_z)
            for a, b, _, _ in found]


def _sentence(rows: list[list[str]]):
    """One sequence of token rows as the model reads it."""
    return as_sentences([rows], None, "test")[0]


@pytest.mark.parametrize("spec", ["hmm_like.fgl", "high_order.fgl"])
def test_chain_confidences_equal_enumeration(data, spec):
    crf, _ = trained(data, spec, spec[:-4])
    rows = words(data)[0][:5]
    (found,) = crf.segment_confidences([rows])
    assert found, "the model should predict at least one chunk"
    np.testing.assert_allclose([c for *_, c in found], chain_oracle(crf, rows, found),
                               rtol=TOL, atol=TOL)


def test_semi_markov_confidences_equal_enumeration(data):
    crf, _ = trained(data, "semi_crf.fgl", "semi_crf")
    model, program = crf.model, crf.model.program
    rows = words(data)[1][:5]
    (found,) = crf.segment_confidences([rows], ignore=())
    assert sum(b - a for a, b, _, _ in found) == 5     # the segments cover the sentence
    pot = program.potentials(crf.weights, model.encode([_sentence(rows)]), 0)
    T, L = pot.shape[:2]
    items = []
    for seg in semimarkov_segmentations(len(model.labels), T, L, program.label_max,
                                        program.distinct):
        score = math.fsum(pot[u, v - u, k]
                          for k, u, v in semimarkov_matches(model.structure.patterns, seg))
        items.append((set(seg), score))
    log_z = logsumexp([s for _, s in items])
    want = [math.exp(logsumexp([s for seg, s in items
                                if (a, b - 1, model.labels.index(y)) in seg]) - log_z)
            for a, b, y, _ in found]
    np.testing.assert_allclose([c for *_, c in found], want, rtol=TOL, atol=TOL)


def test_tag_confidence_column_matches_the_api(data, capsys):
    crf, model = trained(data, "high_order.fgl", "high_order")
    sents = tag(capsys, "tag", model, data / "test.txt", "--confidence")
    api = crf.segment_confidences(words(data))
    for rows, found in zip(sents, api):
        starts = {a: c for a, _, _, c in found}
        for t, row in enumerate(rows):
            assert len(row) == 4
            if t in starts:
                assert abs(float(row[3]) - starts[t]) < 5e-7
            else:
                assert row[3] == "-"
        for a, b, y, _ in found:   # each chunk's tags are B-y I-y ... in the output
            assert [r[2] for r in rows[a:b]] == [f"B-{y}"] + [f"I-{y}"] * (b - a - 1)


def test_one_token_chunk_confidence_is_its_marginal(data):
    crf, _ = trained(data, "hmm_like.fgl", "hmm_like")
    X = words(data)
    marg = crf.predict_marginals(X)
    pred = crf.predict(X)
    for found, dicts, tags in zip(crf.segment_confidences(X, scheme="plain", ignore=()),
                                  marg, pred):
        assert [(a, b) for a, b, _, _ in found] == [(t, t + 1) for t in range(len(tags))]
        for a, _, _, c in found:
            assert abs(c - dicts[a][tags[a]]) < 1e-9


def test_factor_graph_confidence_is_exact_under_the_junction_tree(data, tmp_path):
    spec = tmp_path / "skip.fgl"
    spec.write_text(SKIP.format(infer="junction_tree", within=""), encoding="utf-8")
    crf, _ = trained(data, str(spec), "skip_jt")
    rows = words(data)[2][:5]
    (found,) = crf.segment_confidences([rows])
    assert found
    model = crf.model
    enc = model.encode([_sentence(rows)])
    g = enc.graphs[0]
    table = model.program.factor_tables(crf.weights, enc, 0)
    pred = [model.layers[0].labels.index(y) for y in crf.predict([rows])[0]]
    scores = {y: assignment_score(g, table, np.array(y))
              for y in itertools.product(*[range(c) for c in g.card])}
    log_z = logsumexp(list(scores.values()))
    want = [math.exp(logsumexp([s for y, s in scores.items() if y[a:b] == tuple(pred[a:b])])
                     - log_z) for a, b, _, _ in found]
    np.testing.assert_allclose([c for *_, c in found], want, rtol=1e-9, atol=1e-9)


def test_bp_statistics_per_instance(data, tmp_path):
    spec = tmp_path / "skip.fgl"
    spec.write_text(SKIP.format(infer="trp(max_iter = 40, tol = 1e-8)",
                                 within=" and nearest within document"), encoding="utf-8")
    crf, _ = trained(data, str(spec), "skip_trp")
    X = words(data)
    stats = crf.marginals(X).stats
    assert stats.instances == len(X)  # each sequence its own document by default
    assert len(stats.iterations) == len(stats.residuals) == len(stats.converged) == len(X)
    assert all(1 <= it <= 40 for it in stats.iterations)
    assert max(stats.iterations) == stats.max_iterations
    assert max(stats.residuals) == stats.max_residual
    assert sum(not c for c in stats.converged) == stats.not_converged
    for it, res, ok in zip(stats.iterations, stats.residuals, stats.converged):
        assert ok == (res < 1e-8)
    # one document: one instance, as the skip edges link its sentences
    doc = crf.marginals(X, documents=[0] * len(X)).stats
    assert doc.instances == 1 and len(doc.iterations) == 1
    found = crf.segment_confidences(X)
    assert all(0.0 <= c <= 1.0 for seq in found for *_, c in seq)


def test_graph_input_gets_marginals_per_node(tmp_path, capsys):
    graph = tmp_path / "g.jsonl"
    graph.write_text("\n".join(json.dumps({
        "nodes": [{"id": f"n{k}", "words": f"w{k % 3} w{(k * 7) % 5}", "label": f"L{k % 2}"}
                  for k in range(6)],
        "edges": [{"source": "n0", "target": "n2", "type": "cites"},
                  {"source": "n2", "target": "n4", "type": "cites"},
                  {"source": "n4", "target": "n0", "type": "cites"}]}) for _ in range(3)) + "\n")
    spec = tmp_path / "graph.fgl"
    spec.write_text(GRAPH, encoding="utf-8")
    model = tmp_path / "g.fglm"
    assert main(["train", str(spec), "--train", str(graph), "-o", str(model), "-q"]) == 0
    capsys.readouterr()
    crf = CRF.load(model)
    api = crf.marginals_sentences(crf.read(graph))
    for mode in ("best", "all"):
        assert main(["tag", str(model), str(graph), "--marginals", mode]) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert len(lines) == 3
        for line, (probs,) in zip(lines, api.probs):
            assert list(line["marginals"]) == [f"n{k}" for k in range(6)]
            for k, node in enumerate(line["marginals"]):
                want = dict(zip(api.labels[0], probs[k]))
                got = line["marginals"][node]
                if mode == "best":
                    assert got == pytest.approx(want[line["labels"][node]], abs=1e-12)
                else:
                    assert got == pytest.approx(want, abs=1e-12)
                    assert sum(got.values()) == pytest.approx(1.0, abs=1e-9)
    assert main(["tag", str(model), str(graph), "--confidence"]) == 2
    assert "graph input" in capsys.readouterr().err


def test_help_documents_the_columns(capsys):
    with pytest.raises(SystemExit):
        main(["tag", "--help"])
    out = capsys.readouterr().out
    assert "--marginals" in out and "LABEL:P" in out and "--confidence" in out



def test_every_output_layer_gets_its_columns(data, tmp_path, capsys):
    """A factorial model: two predicted labels, then each layer's LABEL:P
    columns, then each layer's confidence column."""
    three = tmp_path / "three.txt"
    with open(three, "w", encoding="utf-8") as fh:
        sents = CRF(STDLIB / "hmm_like.fgl").read(data / "train.txt")[:20]
        for s in sents:
            for word, chunk in s.rows:
                fh.write(f"{word} P{int(word[1:]) % 3} {chunk}\n")
            fh.write("\n")
    spec = tmp_path / "fact.fgl"
    spec.write_text(FACTORIAL, encoding="utf-8")
    model = tmp_path / "fact.fglm"
    assert main(["train", str(spec), "--train", str(three), "-o", str(model), "-q"]) == 0
    capsys.readouterr()
    crf = CRF.load(model)
    read = crf.read(three)
    api = crf.marginals_sentences(read)
    found = crf.segment_confidences_sentences(read)
    n_pos, n_chunk = (len(labels) for labels in api.labels)
    for rows, probs, per_layer in zip(tag(capsys, "tag", model, three, "--marginals", "all",
                                          "--confidence"), api.probs, found):
        for t, row in enumerate(rows):
            assert len(row) == 3 + 2 + n_pos + n_chunk + 2
            got = [float(f.rsplit(":", 1)[1]) for f in row[5:5 + n_pos + n_chunk]]
            np.testing.assert_allclose(got, np.concatenate([probs[0][t], probs[1][t]]),
                                       atol=5e-7)
            for k, segs in enumerate(per_layer):
                starts = {seg.start: seg.confidence for seg in segs}
                cell = row[5 + n_pos + n_chunk + k]
                assert cell == "-" if t not in starts else abs(float(cell) - starts[t]) < 5e-7
