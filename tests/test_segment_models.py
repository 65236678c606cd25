"""Semi-Markov models end to end: BIO <-> segments, gradient against finite
differences, L = 1 equals the chain model, training, tagging to BIO,
save/load, explain."""
import numpy as np
import pytest
from gradcheck import assert_gradient_matches_central_differences

from fgl.api import CRF
from fgl.compile.segmentation import segments_from_tags, tags_from_segments
from fgl.errors import DataError
from fgl.io.conll import Sentence
from fgl.io.evaluate import evaluate
from fgl.io.synth import segment_sequences
from fgl.lang.ast import Loc, Segments
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.learner import Objective
from fgl.registry import compile_model

SEMI = """
columns word, label
output label
segments max 4
obs inside = word[u..v]
template seg: s[j] ~ bias, word[u], word[v], inside, word[u-1], length
template trans: s[j-1..j]
template ho: s[j-2..j] patterns observed (sigma = 2)
train { sigma = 3  max_iter = 80 }
"""

CHAIN_L1 = """
columns word, label
output label
{segments}
template state: {var} ~ bias, word[{pos}]
template trans: {var2}
template ho: {var3} patterns observed
"""


def _decl(max_length=4, per_label=None, boundary="bio"):
    return Segments(max_length, per_label or {}, boundary, Loc("<t>", 1, 1))


def _sent(tags):
    return Sentence([["w", t] for t in tags], list(range(1, len(tags) + 1)), 0, "d.txt")


@pytest.mark.parametrize("tags,segs", [
    ("B-NP I-NP O B-VP".split(), [(0, 1, "NP"), (2, 2, "O"), (3, 3, "VP")]),
    ("B-NP B-NP I-NP".split(), [(0, 0, "NP"), (1, 2, "NP")]),
    ("I-NP I-NP O I-VP".split(), [(0, 1, "NP"), (2, 2, "O"), (3, 3, "VP")]),   # IOB1
    ("O O".split(), [(0, 0, "O"), (1, 1, "O")]),
])
def test_bio_tags_to_segments_and_back(tags, segs):
    assert segments_from_tags(tags, _decl(), _sent(tags)) == segs
    back = tags_from_segments(segs, len(tags), "bio")
    assert segments_from_tags(back, _decl(), _sent(back)) == segs


def test_change_boundaries_split_long_runs():
    tags = ["O"] * 5 + [","] + ["O"] * 2
    segs = segments_from_tags(tags, _decl(max_length=3, boundary="change"), _sent(tags))
    assert segs == [(0, 2, "O"), (3, 4, "O"), (5, 5, ","), (6, 7, "O")]
    assert tags_from_segments(segs, len(tags), "change") == tags


def test_bio_chunk_longer_than_limit_is_a_data_error():
    tags = "O B-NP I-NP I-NP".split()
    with pytest.raises(DataError, match=r"d\.txt:2: a 'NP' segment of 3 tokens"):
        segments_from_tags(tags, _decl(max_length=4, per_label={"NP": 2}), _sent(tags))


def _data(n=8, seed=3):
    return segment_sequences(n_types=2, max_len=3, vocab=10, n_train=n, n_test=1, length=9,
                             seed=seed)[0]


def test_gradient_matches_central_differences():
    model, enc = compile_model(validate(parse_spec(SEMI, "<t>")), _data())
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    assert_gradient_matches_central_differences(objective, model.program.n_features, scale=0.7)


def test_segments_of_length_one_equal_the_chain_model():
    """A semi-Markov spec with L = 1 and `change` boundaries is the chain
    spec: same features, same log Z, same gradient, same decoding."""
    semi = CHAIN_L1.format(segments="segments max 1 from change", var="s[j]", pos="u",
                           var2="s[j-1..j]", var3="s[j-2..j]")
    chain = CHAIN_L1.format(segments="", var="y[t]", pos="t", var2="y[t-1..t]",
                            var3="y[t-2..t]")
    data = _data(n=10, seed=5)
    models = [compile_model(validate(parse_spec(text, "<t>")), data) for text in (semi, chain)]
    (m_semi, e_semi), (m_chain, e_chain) = models
    assert m_semi.program.n_features == m_chain.program.n_features
    # the same weight for the same (template, attribute, pattern) in both
    key_of = [_feature_keys(m) for m in (m_semi, m_chain)]
    assert sorted(key_of[0]) == sorted(key_of[1])
    w_chain = np.random.default_rng(1).normal(0, 1.0, m_chain.program.n_features)
    index = {k: i for i, k in enumerate(key_of[1])}
    perm = np.array([index[k] for k in key_of[0]])
    w_semi = w_chain[perm]
    f1, g1 = Objective(m_semi.program, e_semi, m_semi.feat_sigma, jobs=1)(w_semi)
    f2, g2 = Objective(m_chain.program, e_chain, m_chain.feat_sigma, jobs=1)(w_chain)
    assert f1 == pytest.approx(f2, rel=1e-10)
    np.testing.assert_allclose(g1, g2[perm], rtol=1e-9, atol=1e-10)
    for a, b in zip(m_semi.program.decode(w_semi, e_semi, 1).assignments,
                    m_chain.program.decode(w_chain, e_chain, 1).assignments):
        np.testing.assert_array_equal(a, b)


def _feature_keys(model):
    """(template, attribute, pattern) of every feature, in feature order."""
    keys = [None] * model.program.n_features
    patterns = model.program.structure.patterns
    for ti, vocab in enumerate(model.vocabs):
        for attr, r in vocab.items():
            for k in range(model.program.row_ptr[r], model.program.row_ptr[r + 1]):
                # word[u] of a one-token segment is word[t] of the chain
                keys[k] = (ti, attr.replace("[u]", "[t]"), patterns[model.program.feat_pattern[k]])
    return keys


def test_train_tag_and_save(tmp_path):
    train, test = segment_sequences(n_types=3, max_len=4, vocab=40, n_train=120, n_test=60,
                                    length=20, seed=0)
    crf = CRF(SEMI).fit_sentences(train)
    X = [[r[:-1] for r in s.rows] for s in test]
    pred = crf.predict(X)
    gold = [s.column(-1) for s in test]
    # the output is well-formed BIO that evaluates as chunks
    assert all(t == "O" or t[:2] in ("B-", "I-") for seq in pred for t in seq)
    report = evaluate(gold, pred)
    assert report.overall.f1 > 25.0
    marg = crf.predict_marginals(X[:2])
    assert all(abs(sum(m.values()) - 1.0) < 1e-9 for seq in marg for m in seq)
    crf.save(tmp_path / "semi.fglm")
    again = CRF.load(tmp_path / "semi.fglm")
    assert again.predict(X) == pred
    assert "semi-Markov" in again.explain()
