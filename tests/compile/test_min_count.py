"""The feature cut-off `min_count` (CRF++'s -f): counted by hand on small
files — an attribute of a template keeps its weights when it occurs at
least min_count times in the training data (once per token, gold segment or
factor where the template gives it, before it is paired with labels), and
has none below."""
from __future__ import annotations

from collections import Counter

import pytest
from support.cli import run
from support.spec_errors import check_errors

import fgl
from fgl.convert.crfpp import convert
from fgl.errors import FglError
from fgl.lang.parser import parse_spec

# word pos chunk; counts by hand: word 'the' 3, 'sat' 3, 'dog' 2, 'a' 1, 'cat' 1, 'runs' 1,
# 'big' 1; pos D 4, N 5, V 3, J 1
TRAIN = """the D B
dog N I
runs V O

a D B
big J I
dog N I

the D B
cat N I
sat V O

the D B
sat N B
sat V O
"""

SPEC = """columns word, pos, chunk
output chunk
template words: y[t] ~ word[t]
template tags:  y[t] ~ pos[t], pos[t] & word[t-1] (min_count = 3)
template trans: y[t-1..t]
train { min_count = 2  max_iter = 30 }
"""


def rows(text: str) -> list[list[list[str]]]:
    return [[line.split() for line in block.splitlines()] for block in text.strip().split("\n\n")]


def by_hand(text: str) -> tuple[Counter, Counter]:
    """Occurrences of template `words`' and `tags`' attributes, counted here
    from the file with no fgl code: one per token that gives them."""
    words, tags = Counter(), Counter()
    for sent in rows(text):
        for t, (w, p, _) in enumerate(sent):
            words[f"word[t]={w}"] += 1
            tags[f"pos[t]={p}"] += 1
            if t:       # (no word before the first token: no attribute there)
                tags[f"pos[t]&word[t-1]={p}|{sent[t - 1][0]}"] += 1
    return words, tags


def test_counts_by_hand_decide_which_attributes_have_weights(tmp_path):
    data = tmp_path / "train.txt"
    data.write_text(TRAIN)
    crf = fgl.CRF(SPEC).fit_file(data)
    words, tags = by_hand(TRAIN)
    assert words["word[t]=the"] == 3 and words["word[t]=a"] == 1    # (the file, by eye)
    vocab_words, vocab_tags = crf.model.vocabs[0], crf.model.vocabs[1]
    assert set(vocab_words) == {k for k, n in words.items() if n >= 2}   # the train setting
    assert set(vocab_tags) == {k for k, n in tags.items() if n >= 3}     # the template's own
    assert "pos[t]=J" not in vocab_tags and "pos[t]=V" in vocab_tags     # 1 < 3 <= 3
    kept = {a for a, _ in crf.state_features_}
    assert "word[t]=dog" in kept and words["word[t]=dog"] == 2          # exactly 2: kept
    assert not kept & {"word[t]=a", "word[t]=cat", "word[t]=runs", "word[t]=big"}  # 1: gone
    # every (attribute, label) pair seen in training stays for the attributes kept
    seen = {(f"word[t]={w}", c) for sent in rows(TRAIN) for w, _, c in sent}
    assert {(a, c) for a, c in crf.state_features_ if a.startswith("word")} == {
        (a, c) for a, c in seen if a in vocab_words}
    # the units keep only the kept attributes: tagging and training agree
    assert crf.predict([[["a", "D"], ["cat", "N"]]]) == [["B", "I"]]
    assert "min_count 2" in crf.explain() and "min_count 3" in crf.explain()


def test_without_a_cut_off_every_attribute_stays_and_the_override_wins():
    X = [[row[:2] for row in sent] for sent in rows(TRAIN)]
    y = [[row[2] for row in sent] for sent in rows(TRAIN)]
    words, tags = by_hand(TRAIN)
    spec = SPEC.replace(" (min_count = 3)", "")
    assert set(fgl.CRF(spec, min_count=1).fit(X, y).model.vocabs[0]) == set(words)
    high = fgl.CRF(spec, min_count=3).fit(X, y)
    assert set(high.model.vocabs[0]) == {"word[t]=the", "word[t]=sat"}
    assert set(high.model.vocabs[1]) == {k for k, n in tags.items() if n >= 3}
    # a cut-off above every count leaves a template without attributes, and still trains
    none = fgl.CRF(spec, min_count=100).fit(X, y)
    assert none.model.vocabs[0] == {} and none.predict(X[:1])[0]


def test_segment_model_counts_gold_segments():
    spec = """columns word, label
output label
segments max 3 from bio
template seg:   s[j] ~ lower(word[u]), lower(word[u..v])
template trans: s[j-1..j]
train { min_count = 2  max_iter = 20 }
"""
    sents = [["The", "big", "dog", "runs"], ["the", "dog", "sat"], ["a", "dog", "sat"]]
    tags = [["B-NP", "I-NP", "I-NP", "O"], ["B-NP", "I-NP", "O"], ["B-NP", "I-NP", "O"]]
    first, inside = Counter(), Counter()
    for words, labels in zip(sents, tags):
        u = 0
        while u < len(words):       # gold segments: a B- chunk with its I-s, or one O token
            v = u
            while labels[u] != "O" and v + 1 < len(words) and labels[v + 1].startswith("I-"):
                v += 1
            first[f"lower(word[u])={words[u].lower()}"] += 1
            for w in {x.lower() for x in words[u:v + 1]}:   # one occurrence per segment
                inside[f"lower(word[u..v])={w}"] += 1
            u = v + 1
    crf = fgl.CRF(spec).fit([[[w] for w in s] for s in sents], tags)
    assert set(crf.model.vocabs[0]) == {k for k, n in (first + inside).items() if n >= 2}
    assert "lower(word[u..v])=dog" in crf.model.vocabs[0]          # 3 segments
    assert "lower(word[u..v])=big" not in crf.model.vocabs[0]      # 1


def test_factor_graph_model_counts_factors():
    spec = """columns word, label
output label
template state: y[t] ~ word[t]
template trans: y[t-1..t]
template skip:  (y[i], y[j]) where word[i] == word[j] ~ word[i] (min_count = 2)
infer trp(max_iter = 20)
train { max_iter = 10 }
"""
    sents = [["a", "b", "a", "c"], ["b", "d", "b", "a", "a"]]
    X = [[[w] for w in s] for s in sents]
    y = [["X", "Y", "X", "Y"], ["Y", "X", "Y", "X", "X"]]
    crf = fgl.CRF(spec).fit(X, y)
    assert crf.engine.engine.name != "chain"
    # skip factors, one per pair of equal words in a sentence: a once in the first, b once
    # and a once in the second -> word[i]=a twice, word[i]=b once
    assert set(crf.model.vocabs[2]) == {"word[i]=a"}
    assert len(crf.model.vocabs[0]) == 4          # the state template keeps every word


def test_crfpp_f_matches_crfpps_own_count(tmp_path, capsys):
    """`fgl convert crfpp -f N`: the attributes kept are CRF++'s feature
    strings seen at least N times in training (its U lines expanded here by
    CRF++'s rules, before the labels)."""
    template = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\nU03:%x[1,1]\nB\n"
    spec = convert(template, ["word", "pos", "chunk"], "t", f=2)
    assert "min_count = 2" in spec
    assert "min_count" not in convert(template, ["word", "pos", "chunk"], "t", f=1)
    sents = rows(TRAIN)
    strings: Counter = Counter()
    for sent in sents:
        def x(t, col):
            if t < 0:
                return f"_B-{-t}"
            return sent[t][col] if t < len(sent) else f"_B+{t - len(sent) + 1}"
        for t in range(len(sent)):
            strings[("U00", x(t, 0))] += 1
            strings[("U01", f"{x(t - 1, 0)}/{x(t, 0)}")] += 1
            strings[("U02", x(t, 1))] += 1
            strings[("U03", x(t + 1, 1))] += 1
    crf = fgl.CRF(spec).fit([[r[:2] for r in s] for s in sents], [[r[2] for r in s] for s in sents])
    for ti, name in enumerate(["U00", "U01", "U02", "U03"]):
        kept = sorted(s for (tpl, s), n in strings.items() if tpl == name and n >= 2)
        assert len(crf.model.vocabs[ti]) == len(kept), name
    assert {k.split("=", 1)[1] for k in crf.model.vocabs[0]} == {"the", "dog", "sat"}
    assert list(crf.model.vocabs[3]) and all(strings[("U03", v)] >= 2 for v in ("N", "V"))
    (tmp_path / "template").write_text(template)
    code, out, err = run(capsys, "convert", "crfpp", tmp_path / "template", "--columns",
                         "word,pos,chunk", "-f", "3", "-c", "4")
    assert code == 0, err
    assert "  sigma = 2   # CRF++ -c 4" in out and "  min_count = 3   # CRF++ -f 3" in out
    (tmp_path / "data.txt").write_text(TRAIN)
    (tmp_path / "c.fgl").write_text(out)
    code, _, err = run(capsys, "train", tmp_path / "c.fgl", "--train", tmp_path / "data.txt",
                       "-o", tmp_path / "c.fglm", "-q", "--min-count", "1")
    assert code == 0, err
    assert len(fgl.CRF.load(tmp_path / "c.fglm").model.vocabs[0]) == 7   # --min-count wins
    with pytest.raises(FglError, match="-f must be a whole number >= 0"):
        convert(template, ["word", "pos", "chunk"], "t", f=-1)


@pytest.mark.parametrize("src, message", [
    ("train { min_count = 0 }", "train: min_count must be a whole number > 0; found 0"),
    ("train { min_count = 1.5 }", "train: min_count must be a whole number > 0; found 1.5"),
    ("template t2: y[t] ~ word[t] (min_count = -1)",
     "template 't2': min_count must be a whole number > 0; found -1"),
])
def test_bad_values_are_refused(src, message):
    errors = check_errors("columns word, label\noutput label\ntemplate t: y[t] ~ word[t]\n" + src)
    assert [e.message for e in errors] == [message]


def test_the_cut_off_survives_the_model_file(tmp_path):
    X = [[row[:2] for row in sent] for sent in rows(TRAIN)]
    y = [[row[2] for row in sent] for sent in rows(TRAIN)]
    crf = fgl.CRF(SPEC).fit(X, y)
    crf.save(tmp_path / "m.fglm")
    back = fgl.CRF.load(tmp_path / "m.fglm")
    assert back.model.vocabs == crf.model.vocabs
    assert [t.min_count for t in back.model.templates] == [2, 3, 2]
    assert back.predict(X) == crf.predict(X)


def test_parse_keeps_the_option():
    spec = parse_spec("columns word, label\noutput label\n"
                      "template t: y[t] ~ word[t] (min_count = 4)\n", "<t>")
    assert [(o.key, o.value) for o in spec.templates[0].options] == [("min_count", 4)]


def test_a_dask_cluster_refuses_the_cut_off():
    """Counts over the whole training data: the cluster's compile (shard by
    shard) refuses min_count before any work."""
    from pathlib import Path

    from fgl.distributed.compile import Reading, compile_on_cluster
    from fgl.lang.settings import resolve_train

    spec = parse_spec(SPEC, "<t>")
    with pytest.raises(FglError, match="min_count .* Dask cluster"):
        compile_on_cluster(None, spec, [], Path("."), resolve_train(spec), Reading(spec),
                           "<train>")
    plain = parse_spec(SPEC.replace("  min_count = 2", "").replace(" (min_count = 3)", ""), "<t>")
    with pytest.raises(FglError, match="min_count"):
        compile_on_cluster(None, plain, [], Path("."), resolve_train(plain, {"min_count": 4}),
                           Reading(plain), "<t>")
