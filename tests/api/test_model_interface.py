"""The one model interface: every engine answers through ``fgl.model.Model``,
chosen by ``fgl.registry``; multi-layer models give marginals and
evaluations for every output layer."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from support.paths import HMM, STDLIB
from support.sentences import segment_data, two_layer_sentences, without_labels

from fgl import registry
from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.datasets.synth import segment_sequences
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec, read_spec

FACTORIAL_EXACT = (STDLIB / "factorial.fgl").read_text(encoding="utf-8").replace(
    "infer trp(max_iter = 50, tol = 1e-5)", "infer exact")


def _brute_force_marginals(program, data, w, i):
    """Per variable, P(x_v = label) by enumerating every joint assignment of
    instance i's factor graph (independent of the engines' inference)."""
    g = data.graphs[i]
    table = program.factor_tables(w, data, i)
    cards = [int(c) for c in g.card]
    probs = [np.zeros(c) for c in cards]
    scores, states = [], []
    for x in itertools.product(*(range(c) for c in cards)):
        s = 0.0
        for f in range(g.n_factors):
            idx = sum(x[v] * int(st) for v, st in
                      zip(g.factor_vars(f), g.e_stride[g.f_ptr[f]:g.f_ptr[f + 1]]))
            s += table[g.tab_ptr[f] + idx]
        scores.append(s)
        states.append(x)
    scores = np.array(scores)
    p = np.exp(scores - scores.max())
    p /= p.sum()
    for x, px in zip(states, p):
        for v, xv in enumerate(x):
            probs[v][xv] += px
    return probs


def test_factorial_marginals_of_every_layer_equal_enumeration():
    train = [Sentence(s.rows[:3], s.lines[:3], s.doc, s.file)
             for s in two_layer_sentences(30, seed=3)]   # 3 tokens: 30^3 joint states
    crf = CRF(FACTORIAL_EXACT, max_iter=15).fit_sentences(train)
    test = [Sentence(s.rows[:3], s.lines[:3], s.doc, s.file)
            for s in two_layer_sentences(4, seed=8)]
    X = [[r[:1] for r in s.rows] for s in test]
    m = crf.marginals(X)
    assert m.outputs == ["pos", "chunk"]
    data = crf.model.encode(without_labels(test, n_out=2))
    for i, per_layer in enumerate(m.probs):
        expected = _brute_force_marginals(crf.model.program, data, crf.weights, i)
        n = len(test[i].rows)
        for k, probs in enumerate(per_layer):
            assert probs.shape == (n, len(m.labels[k]))
            want = np.array(expected[k * n:(k + 1) * n])
            np.testing.assert_allclose(probs, want, atol=1e-9)


def test_multi_layer_predict_marginals_and_evaluate_cover_every_layer():
    train, test = two_layer_sentences(60, seed=3), two_layer_sentences(20, seed=4)
    crf = CRF(STDLIB / "factorial.fgl", max_iter=30).fit_sentences(train)
    X = [[r[:1] for r in s.rows] for s in test]
    y = [[(r[1], r[2]) for r in s.rows] for s in test]
    marg = crf.predict_marginals(X)
    pred = crf.predict(X)
    assert [len(s) for s in marg] == [len(s) for s in X]
    for seq, pseq in zip(marg, pred):
        for tok, (pos, chunk) in zip(seq, pseq):
            assert set(tok) == {"pos", "chunk"}
            for layer in tok.values():
                assert sum(layer.values()) == pytest.approx(1.0, abs=1e-6)
            assert max(tok["chunk"], key=tok["chunk"].get) in crf.model.layers[1].labels
    reports = crf.evaluate(X, y)
    assert set(reports) == {"pos", "chunk"}
    for k, name in enumerate(("pos", "chunk")):
        gold = [[t[k] for t in s] for s in y]
        got = [[t[k] for t in s] for s in pred]
        acc = sum(a == b for g, p in zip(gold, got) for a, b in zip(g, p)) / sum(map(len, gold))
        assert reports[name].accuracy == pytest.approx(100 * acc)
    assert crf.score(X, y) <= min(r.accuracy for r in reports.values()) + 1e-9


@pytest.mark.parametrize("name, engine, why", [
    ("hmm_like", "chain", "contiguous label window"),
    ("high_order", "chain", "contiguous label window"),
    ("semi_crf", "segments", "declares `segments`"),
    ("high_order_semi_crf", "segments", "declares `segments`"),
    ("skip_chain", "factor graph", "template 'skip' links (y[i], y[j])"),
    ("factorial", "factor graph", "several label layers (pos, chunk)"),
    ("relational", "factor graph", "graph-structured"),
    ("latent", "factor graph", "hidden layers"),
])
def test_the_registry_names_the_engine_and_the_reason(name, engine, why):
    spec = read_spec(STDLIB / f"{name}.fgl")
    choice = registry.choose(spec)
    assert choice.engine.name == engine
    assert why in choice.reason
    text = CRF(spec).explain()
    assert text.startswith("engine: ") and f"why: {choice.reason}" in text
    assert registry.by_name(engine) is choice.engine


def test_an_unknown_engine_name_is_refused():
    with pytest.raises(Exception, match="unknown engine 'quantum'"):
        registry.by_name("quantum")


@pytest.mark.parametrize("spec_text, engine", [
    ("columns word, label\noutput label\ntemplate s: y[t] ~ word[t]\ntemplate t: y[t-1..t]\n",
     "chain"),
    ("columns word, label\noutput label\nsegments max 3 from bio\n"
     "template s: s[j] ~ word[u..v], length\ntemplate t: s[j-1..j]\n", "segments"),
    ("columns word, label\noutput label\ntemplate s: y[t] ~ word[t]\ntemplate t: y[t-1..t]\n"
     "template k: (y[i], y[j]) where word[i] == word[j]\ninfer loopy(damping = 0.3)\n",
     "factor graph"),
])
def test_every_engine_round_trips_through_a_model_file(tmp_path, spec_text, engine):
    train, test = segment_sequences(n_types=2, max_len=3, vocab=10, n_train=30, n_test=8,
                                    length=9, seed=2)
    crf = CRF(spec_text, max_iter=10).fit_sentences(train)
    assert crf.model.engine == engine
    crf.save(tmp_path / "m.fglm")
    back = CRF.load(tmp_path / "m.fglm")
    assert back.model.engine == engine
    X = [[r[:1] for r in s.rows] for s in test]
    assert back.predict(X) == crf.predict(X)
    np.testing.assert_allclose(back.log_partition(X), crf.log_partition(X))
    np.testing.assert_allclose(back.marginals(X).probs[0][0], crf.marginals(X).probs[0][0])


def test_a_subset_of_encoded_data_encodes_the_same():
    spec = validate(parse_spec("columns word, label\noutput label\nsegments max 3 from bio\n"
                               "template s: s[j] ~ word[u..v], length\ntemplate t: s[j-1..j]\n",
                               "<t>"))
    train, _ = segment_sequences(n_types=2, max_len=3, vocab=10, n_train=12, n_test=1,
                                 length=8, seed=5)
    model, _ = registry.compile_model(spec, train)
    part = model.encode(train, with_gold=True).subset(3, 7)
    again = model.encode(train[3:7], with_gold=True)
    for name in ("seq_ptr", "tok_ptr", "tok_row", "tok_val", "gold", "starts"):
        np.testing.assert_array_equal(getattr(part, name), getattr(again, name), err_msg=name)


def test_empty_sequences_and_feature_dicts():
    """An empty sequence trains nothing and predicts nothing, whatever its
    place; sklearn-crfsuite's feature dicts are refused, not misread."""
    from fgl.errors import FglError
    train = segment_data(n_train=20)[0]
    X = [[row[:-1] for row in s.rows] for s in train]
    y = [[row[-1] for row in s.rows] for s in train]
    crf = CRF(str(HMM), max_iter=5, jobs=1).fit([[]] + X, [[]] + y)
    plain = CRF(str(HMM), max_iter=5, jobs=1).fit(X, y)
    np.testing.assert_array_equal(crf.weights, plain.weights)
    assert crf.predict([[], X[0], []]) == [[], plain.predict([X[0]])[0], []]
    marginals = crf.predict_marginals([[], X[1]])
    assert marginals[0] == [] and len(marginals[1]) == len(X[1])
    assert crf.log_partition([[], X[2]]) == [0.0, crf.log_partition([X[2]])[0]]
    with pytest.raises(FglError, match="feature dicts"):
        crf.predict([[{"word": "a"}]])


def test_repr_names_the_spec_engine_and_state():
    assert repr(CRF(str(HMM))) == f"CRF({str(HMM)!r}, engine=chain, not trained)"
    spec = 'model "tiny"\ncolumns word, label\noutput label\ntemplate s: y[t] ~ word[t]\n'
    crf = CRF(spec).fit([[["a"], ["b"]]], [["X", "Y"]])
    assert repr(crf) == f"CRF('tiny', engine=chain, trained, {len(crf.weights)} features)"
