"""Semi-Markov models end to end: BIO <-> segments, gradient against finite
differences, L = 1 equals the chain model, training, tagging to BIO,
save/load, explain."""
import numpy as np
import pytest
from support.gradcheck import assert_gradient_matches_central_differences

from fgl.api import CRF
from fgl.compile.segmentation import segments_from_tags, tags_from_segments
from fgl.data.sentence import Sentence
from fgl.datasets.synth import segment_sequences
from fgl.engines.sequence.chain import FULL_ROW
from fgl.errors import DataError, SpecError
from fgl.evaluation.evaluate import evaluate
from fgl.lang.ast import Loc, Segments
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.objective import Objective
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
template state: {var} ~ bias, word[{pos}]{support}
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


def test_change_boundaries_make_runs_segments():
    tags = ["O"] * 3 + [","] + ["O"] * 2
    segs = segments_from_tags(tags, _decl(max_length=3, boundary="change"), _sent(tags))
    assert segs == [(0, 2, "O"), (3, 3, ","), (4, 5, "O")]
    assert tags_from_segments(segs, len(tags), "change") == tags


@pytest.mark.parametrize("boundary,tags,where", [
    ("bio", "O B-NP I-NP I-NP".split(), r"d\.txt:2: a 'NP' segment of 3 tokens \(lines 2-4\)"),
    ("change", "O NP NP NP".split(), r"d\.txt:2: a 'NP' segment of 3 tokens \(lines 2-4\)"),
])
def test_segment_longer_than_its_limit_is_a_data_error(boundary, tags, where):
    """`from bio` and `from change` alike refuse it, naming the lines, the
    limit and the spec that would admit it."""
    with pytest.raises(DataError, match=where + r".*allows for 'NP' \(2\).*"
                                              r"`segments max 4 \[NP = 3\]`"):
        segments_from_tags(tags, _decl(max_length=4, per_label={"NP": 2}, boundary=boundary),
                           _sent(tags))


def test_limit_message_quotes_labels_with_commas():
    tags = [",COMMA"] * 3
    with pytest.raises(DataError, match=r'\[",COMMA" = 3\]'):
        segments_from_tags(tags, _decl(max_length=2, boundary="change"), _sent(tags))


def test_per_label_limit_above_max_admits_that_label_only():
    decl = _decl(max_length=2, per_label={"NP": 5}, boundary="change")
    tags = "O NP NP NP NP NP O O".split()
    assert segments_from_tags(tags, decl, _sent(tags)) == [(0, 0, "O"), (1, 5, "NP"),
                                                           (6, 7, "O")]
    tags = "O O O NP".split()
    with pytest.raises(DataError, match="a 'O' segment of 3 tokens"):
        segments_from_tags(tags, decl, _sent(tags))


def test_distinct_bio_makes_runs_of_o_one_segment():
    decl = Segments(4, {}, "bio", Loc("<t>", 1, 1), distinct=True)
    tags = "O O B-NP I-NP O O O B-VP".split()
    segs = segments_from_tags(tags, decl, _sent(tags))
    assert segs == [(0, 1, "O"), (2, 3, "NP"), (4, 6, "O"), (7, 7, "VP")]
    assert tags_from_segments(segs, len(tags), "bio") == tags
    tags = "O B-NP B-NP".split()
    with pytest.raises(DataError, match=r"d\.txt:3: two adjacent 'NP' segments.*"
                                        r"adjacent distinct"):
        segments_from_tags(tags, decl, _sent(tags))


def _data(n=8, seed=3):
    return segment_sequences(n_types=2, max_len=3, vocab=10, n_train=n, n_test=1, length=9,
                             seed=seed)[0]


@pytest.mark.parametrize("support", ["", " (support = all)"])
def test_gradient_matches_central_differences(support, monkeypatch):
    spec = SEMI.replace("inside, word[u-1], length", "inside, word[u-1], length" + support)
    if support:   # (no dense rows: the full rows take the semi-Markov kernels' paths)
        monkeypatch.setattr("fgl.engines.sequence.chain_program.DENSE_BYTES", 0)
    model, enc = compile_model(validate(parse_spec(spec, "<t>")), _data())
    if support:
        assert (model.program.table.row_dense == FULL_ROW).any()
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    assert_gradient_matches_central_differences(objective, model.program.n_features, scale=0.7)


@pytest.mark.parametrize("support", ["", " (support = all)"])
def test_segments_of_length_one_equal_the_chain_model(support, monkeypatch):
    """A semi-Markov spec with L = 1 and `change` boundaries is the chain
    spec: same features, same log Z, same gradient, same decoding.  (Every
    tag gets its position's parity, so that no run of one tag is longer than
    1, as `from change` reads runs as segments.)  With ``support = all``
    the state rows are full rows in both (no dense rows)."""
    if support:
        monkeypatch.setattr("fgl.engines.sequence.chain_program.DENSE_BYTES", 0)
    semi = CHAIN_L1.format(segments="segments max 1 from change", var="s[j]", pos="u",
                           var2="s[j-1..j]", var3="s[j-2..j]", support=support)
    chain = CHAIN_L1.format(segments="", var="y[t]", pos="t", var2="y[t-1..t]",
                            var3="y[t-2..t]", support=support)
    data = [Sentence([[w, f"{y}{t % 2}"] for t, (w, y) in enumerate(s.rows)], s.lines, s.doc,
                     s.file) for s in _data(n=10, seed=5)]
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


# ---------------------------------------------------------------- limits, distinct, clamping

RUNS = """
columns word, label
output label
segments {segments}
obs inside = word[u..v]
template seg: s[j] ~ bias, word[u], word[v], inside, length
template trans: s[j-1..j]
template ho: s[j-2..j] patterns observed upto
"""


def _runs(specs, n=12, seed=0):
    """Sentences of alternating segments ``(label, shortest, longest)``
    from ``specs``, in turn, each label with its own words (so a model can
    learn them); `from change` reads every run as one segment."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        rows = []
        for k in range(int(rng.integers(2, 5))):
            y, lo, hi = specs[k % len(specs)]
            rows += [[f"{y.lower()}{rng.integers(0, 3)}", y]
                     for _ in range(int(rng.integers(lo, hi + 1)))]
        out.append(Sentence(rows, list(range(1, len(rows) + 1)), i, "runs.txt"))
    return out


def _compiled(segments, data):
    return compile_model(validate(parse_spec(RUNS.format(segments=segments), "<t>")), data)


@pytest.mark.parametrize("segments", ["max 2 [NP = 6] from change adjacent distinct",
                                      "max 2 [NP = 6] from change"])
def test_gradient_with_limits_above_max_and_distinct_neighbours(segments):
    model, enc = _compiled(segments, _runs([("NP", 3, 6), ("O", 1, 2), ("VP", 1, 2)], n=6))
    assert model.program.distinct == ("distinct" in segments)
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    assert_gradient_matches_central_differences(objective, model.program.n_features, scale=0.7)


def test_a_per_label_limit_above_max_admits_that_label_only():
    """`segments max 3 [NP = 8]`: an 8-token NP is data, a 4-token O is not,
    and decoding may make NP segments longer than 3 but no other."""
    data = _runs([("NP", 4, 8), ("O", 1, 3)], n=40)
    with pytest.raises(DataError, match=r"a 'NP' segment of \d tokens.*\[NP = \d\]"):
        _compiled("max 3 from change", data)
    model, enc = _compiled("max 3 [NP = 8] from change", data)
    assert model.program.max_length == 8 and enc.units_per_token == 8
    crf = CRF(RUNS.format(segments="max 3 [NP = 8] from change"), max_iter=40)
    crf.fit_sentences(data)
    dec = crf.model.program.decode(crf.weights, enc)
    lengths = {"NP": [], "O": []}
    for labels, starts in zip(dec.assignments, dec.segment_starts):
        first = list(np.flatnonzero(starts)) + [len(starts)]
        for u, v in zip(first, first[1:]):
            lengths[crf.model.labels[labels[u]]].append(v - u)
    assert max(lengths["NP"]) > 3 and max(lengths["O"]) <= 3
    text = "\n".join(crf.model.describe(enc))
    assert "maximum segment length L = 8 (per label: O 3)" in text


def test_distinct_neighbours_are_never_decoded():
    data = _runs([("NP", 1, 3), ("O", 1, 3), ("VP", 1, 2)], n=30, seed=2)
    crf = CRF(RUNS.format(segments="max 3 from change adjacent distinct"), max_iter=20)
    crf.fit_sentences(data)
    _, enc = _compiled("max 3 from change adjacent distinct", data)
    dec = crf.model.program.decode(np.random.default_rng(0).normal(0, 3, len(crf.weights)), enc)
    for labels, starts in zip(dec.assignments, dec.segment_starts):
        first = np.flatnonzero(starts)
        assert all(labels[a] != labels[b] for a, b in zip(first, first[1:]))
    assert "no two adjacent segments with the same label" in "\n".join(crf.model.describe())


def test_distinct_needs_two_labels():
    with pytest.raises(SpecError, match="`adjacent distinct` needs two segment labels"):
        _compiled("max 100 from change adjacent distinct", _runs([("NP", 1, 3)], n=3))


def test_segment_length_is_clamped_to_the_longest_sequence():
    """Issue 11: `segments max 1000` (or, past the checker, a million) on
    short sentences encodes and runs as `segments max` of the longest one."""
    data = _runs([("NP", 1, 3), ("O", 1, 3)], n=20)
    longest = max(len(s.rows) for s in data)
    model, enc = _compiled(f"max {longest} from change", data)
    big, big_enc = _compiled("max 1000 from change", data)
    assert big_enc.units_per_token == enc.units_per_token == longest
    for name in ("tok_ptr", "tok_row", "tok_val"):
        np.testing.assert_array_equal(getattr(big_enc, name), getattr(enc, name))
    w = np.random.default_rng(0).normal(0, 0.3, model.program.n_features)
    assert big.program.expectations(w, big_enc).log_z == pytest.approx(
        model.program.expectations(w, enc).log_z, rel=1e-12)
    huge, huge_enc = compile_model(parse_spec(RUNS.format(segments="max 1000000 from change"),
                                              "<t>"), data)
    assert huge_enc.units_per_token == longest and huge.program.max_length == 1000000
    assert huge.encode(data[:1]).units_per_token == len(data[0].rows)


def test_explain_costs_the_real_limits():
    model, enc = _compiled("max 2 [NP = 6] from change", _runs([("NP", 3, 6), ("O", 1, 2)]))
    P = model.structure.n_forward
    text = "\n".join(model.describe(enc))
    assert f"O(T·|P|·Σ_y L_y) = {P}·8 = {P * 8} span-transition updates" in text
