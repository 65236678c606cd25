"""General CRFs end to end (Sutton & McCallum §1.4-1.5): the loopy program on a tree
equals the exact chain program; the Bethe objective's gradient matches
finite differences; skip-chain, factorial, relational-graph and latent
models train on generated data; loopy models save and load."""
import json

import numpy as np
import pytest
from support.gradcheck import assert_gradient_matches_central_differences
from support.sentences import small_sentences
from support.specs import CHAIN_FORMAT, LATENT, NEVER_SKIP, SKIP_EQUAL_WORDS, checked_spec

from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.datasets.synth import segment_sequences
from fgl.engines.graph.factor_graph_program import FactorGraphProgram
from fgl.evaluation.evaluate import evaluate
from fgl.learn.objective import Objective
from fgl.registry import compile_model
from fgl.registry import compile_model as compile_loopy_model


@pytest.mark.parametrize("infer", ["infer loopy(tol = 1e-12, max_iter = 100)",
                                   "infer trp(tol = 1e-12, max_iter = 100)", "infer exact"])
def test_on_a_chain_the_loopy_program_is_the_chain_program(infer):
    data = small_sentences(length=7)   # 5 labels ^ 7 tokens: small enough to enumerate
    chain, cdata = compile_model(checked_spec(CHAIN_FORMAT.format(extra="", infer="")), data)
    loopy, ldata = compile_loopy_model(
        checked_spec(CHAIN_FORMAT.format(extra=NEVER_SKIP, infer=infer)), data)
    assert isinstance(loopy.program, FactorGraphProgram)
    assert all(g.is_tree() for g in ldata.graphs)
    rng = np.random.default_rng(0)
    w_chain = rng.normal(0, 1.0, chain.program.n_features)
    # map the chain's weights onto the loopy model's features by (template, attribute, pattern)
    w_loopy = np.zeros(loopy.program.n_features)
    for ti in range(2):
        cvocab, lvocab = chain.vocabs[ti], loopy.vocabs[ti]
        for key, r in cvocab.items():
            lr = lvocab[key]
            c_feats = range(chain.program.row_ptr[r], chain.program.row_ptr[r + 1])
            l_feats = range(loopy.program.row_ptr[lr], loopy.program.row_ptr[lr + 1])
            cpat = {chain.program.structure.patterns[chain.program.feat_pattern[k]]: k
                    for k in c_feats}
            n = len(loopy.layers[0].labels)
            for k in l_feats:
                cfg = int(loopy.program.feat_config[k])
                z = (cfg,) if ti == 0 else (cfg // n, cfg % n)
                if z in cpat:
                    w_loopy[k] = w_chain[cpat[z]]
    sigma_c, sigma_l = chain.feat_sigma, loopy.feat_sigma
    fc, _ = Objective(chain.program, cdata, sigma_c, jobs=1)(w_chain)
    fl, _ = Objective(loopy.program, ldata, sigma_l, jobs=1)(w_loopy)
    # the loopy model has extra zero-weight features (unobserved transitions), same prior term
    assert fl == pytest.approx(fc, rel=1e-8)
    got = loopy.decode(w_loopy, ldata, 1).tokens()
    assert got == chain.decode(w_chain, cdata, 1).tokens()


def test_bethe_gradient_matches_finite_differences():
    data = small_sentences(n=4, length=8, vocab=4)   # small vocabulary: many skip edges, real loops
    infer = "infer loopy(tol = 1e-13, max_iter = 2000, damping = 0.3)"
    spec = checked_spec(CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer=infer))
    model, enc = compile_loopy_model(spec, data)
    assert sum(g.n_cycles() for g in enc.graphs) > 0
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    assert_gradient_matches_central_differences(objective, model.program.n_features, scale=0.3,
                                                n_checks=25, rtol=1e-5)


def test_skip_chain_trains_and_saves(tmp_path):
    train, test = segment_sequences(n_types=3, max_len=4, vocab=30, n_train=80, n_test=40,
                                    length=20, seed=0)
    crf = CRF(CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS,
                                  infer="infer loopy(damping = 0.3, max_iter = 60)"),
              max_iter=30).fit_sentences(train)
    X = [[r[:-1] for r in s.rows] for s in test]
    gold = [s.column(-1) for s in test]
    pred = crf.predict(X)
    report = evaluate(gold, pred)
    majority = max(sum(y == lab for g in gold for y in g) for lab in {"O"}) / sum(map(len, gold))
    assert report.accuracy / 100 > majority + 0.05
    assert "loopy belief propagation" in crf.explain()
    crf.save(tmp_path / "skip.fglm")
    assert CRF.load(tmp_path / "skip.fglm").predict(X) == pred


FACTORIAL = """
columns word, pos, chunk
output pos, chunk
template pos_state:   pos[t] ~ bias, word[t]
template chunk_state: chunk[t] ~ bias, word[t]
template pos_trans:   pos[t-1..t]
template chunk_trans: chunk[t-1..t]
template cross:       (pos[t], chunk[t])
infer trp(max_iter = 50)
train { sigma = 3 }
"""


def test_factorial_crf_predicts_both_layers():
    train, test = segment_sequences(n_types=2, max_len=3, vocab=20, n_train=60, n_test=20,
                                    length=12, seed=3)

    def two_layers(sents):  # pos: a deterministic function of the word, plus the chunk tag
        return [Sentence([[w, f"P{int(w[1:]) % 3}", y] for w, y in s.rows], s.lines, s.doc, s.file)
                for s in sents]

    crf = CRF(FACTORIAL, max_iter=40).fit_sentences(two_layers(train))
    X = [[[w] for w, _, _ in s.rows] for s in two_layers(test)]
    pred = crf.predict(X)
    assert all(isinstance(tok, tuple) and len(tok) == 2 for seq in pred for tok in seq)
    pos_acc = np.mean([p[0] == g[1] for seq, s in zip(pred, two_layers(test))
                       for p, g in zip(seq, s.rows)])
    assert pos_acc > 0.95   # pos is learnable from the word alone


RELATIONAL = """
input graph
columns words, label
output label
template node: y[a] ~ bias, tokens(words[a])
template cites: (y[a], y[b]) where edge(a, b, "cites")
infer loopy(damping = 0.2)
train { sigma = 3  max_iter = 60 }
"""


def _graphs(path, n_graphs, seed, labelled=True):
    """Papers in two topics; citations mostly within a topic; a paper's words
    are weakly topical, so the links matter."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n_graphs):
        topics = rng.integers(0, 2, 8)
        nodes = []
        for k, z in enumerate(topics):
            words = [f"w{rng.integers(0, 6) + 6 * z if rng.random() < 0.4 else rng.integers(0, 12)}"
                     for _ in range(3)]
            node = {"id": f"p{k}", "words": " ".join(words)}
            if labelled:
                node["label"] = f"T{z}"
            nodes.append(node)
        edges = [{"source": f"p{a}", "target": f"p{b}", "type": "cites"}
                 for a in range(8) for b in range(a + 1, 8)
                 if (topics[a] == topics[b]) == (rng.random() < 0.9) and rng.random() < 0.35]
        lines.append(json.dumps({"nodes": nodes, "edges": edges}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_relational_graph_model_uses_links(tmp_path):
    train = _graphs(tmp_path / "train.jsonl", 40, seed=1)
    test = _graphs(tmp_path / "test.jsonl", 30, seed=2)
    crf = CRF(RELATIONAL).fit_file(train)
    graphs, pred = crf.predict_file(test)
    acc = np.mean([p == g[-1] for gr, seq in zip(graphs, pred) for p, g in zip(seq, gr.rows)])
    assert acc > 0.6
    row_ptr = crf.model.program.row_ptr
    w = crf.weights[crf.model.program.row_template[
        np.repeat(np.arange(len(row_ptr) - 1), np.diff(row_ptr))] == 1]
    # the citation template learned to prefer equal topics: diagonal > off-diagonal
    assert w[0] + w[3] > w[1] + w[2]


def test_latent_model_gradient_and_training():
    data = small_sentences(n=5, length=5, vocab=5)
    model, enc = compile_loopy_model(checked_spec(LATENT), data)
    assert model.program.has_hidden
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    assert_gradient_matches_central_differences(objective, model.program.n_features, scale=0.5,
                                                n_checks=25, rtol=1e-6)
    crf = CRF(LATENT, max_iter=20).fit_sentences(data)
    rows = crf.training_log.iterations
    assert rows[-1]["objective"] < rows[0]["objective"]
    # training broke the symmetry of the hidden values: z0 and z1 rows differ
    zy = crf.weights[np.repeat(crf.model.program.row_template,
                               np.diff(crf.model.program.row_ptr)) == 2]
    n_y = len(crf.model.layers[0].labels)
    assert np.abs(zy[:n_y] - zy[n_y:]).max() > 1e-3
    assert all(len(p) == len(s.rows) for p, s in zip(crf.predict_sentences(data), data))
