"""Empirical co-occurrence rate networks (``fgl.learn.crn``, Zhu et al.,
eq. 5): the weights are the hand-counted relative frequencies and
co-occurrence rates, decoding is the chain Viterbi and finds the argmax of
eq. 5, ``fgl train/tag/eval`` take an ECRN, and specs and settings it does
not read are refused."""
from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from support.cli import blocks, data_files, run

from fgl import CRF
from fgl.engines.sequence import chain_program
from fgl.engines.sequence.chain_program import ChainProgram
from fgl.errors import FglError, SpecError
from fgl.io.conll import read_conll
from fgl.learn.crn import EPSILON

ECRN = "train { trainer = ecrn }\n"
SPEC = """columns word, label
output label
template unary: y[t] ~ word[t]
template rate:  y[t-1..t]
template wrate: y[t-1..t] ~ word[t]
""" + ECRN
# the tiny corpus: a/D b/N c/V | a/D c/N | b/N c/V a/D
X = [[["a"], ["b"], ["c"]], [["a"], ["c"]], [["b"], ["c"], ["a"]]]
Y = [["D", "N", "V"], ["D", "N"], ["N", "V", "D"]]


def weights(crf: CRF, template: int, attribute: str) -> dict[tuple[str, ...], float]:
    """The weights of one attribute of a template, by label pattern."""
    model = crf.model
    program, labels = model.program, model.labels
    r = model.vocabs[template][attribute]
    ks = range(program.row_ptr[r], program.row_ptr[r + 1])
    return {tuple(labels[y] for y in model.structure.patterns[program.feat_pattern[k]]):
            float(crf.weights[k]) for k in ks}


def logw(p: float) -> float:
    """The weight of an estimate p: log max(p, ε) − log ε."""
    return math.log(max(p, EPSILON)) - math.log(EPSILON)


def test_weights_are_hand_counted_relative_frequencies():
    crf = CRF(SPEC, jobs=1).fit(X, Y)
    # unary: a is D 3 times; b is N twice; c is V twice and N once
    assert weights(crf, 0, "word[t]=a") == pytest.approx({("D",): logw(1)})
    assert weights(crf, 0, "word[t]=c") == pytest.approx({("N",): logw(1 / 3),
                                                          ("V",): logw(2 / 3)})
    # bigrams DN, NV | DN | NV, VD: p(D, N) = 2/5, p(D left) = 2/5, p(N right) = 2/5
    rate = weights(crf, 1, "bias")
    assert len(rate) == 9                                   # patterns all, support all
    assert rate[("D", "N")] == pytest.approx(logw((2 / 5) / (2 / 5 * 2 / 5)))
    assert rate[("N", "V")] == pytest.approx(logw((2 / 5) / (2 / 5 * 2 / 5)))
    assert rate[("V", "D")] == pytest.approx(logw((1 / 5) / (1 / 5 * 1 / 5)))
    assert rate[("D", "D")] == rate[("N", "N")] == 0.0     # never seen: CR floored at ε
    # bigrams whose token t is c: NV, DN, NV -> CR(N; V | c) = (2/3) / (2/3 · 2/3)
    assert weights(crf, 2, "word[t]=c") == pytest.approx({("D", "N"): logw(3),
                                                          ("N", "V"): logw(3 / 2)})
    assert weights(crf, 2, "word[t]=b") == pytest.approx({("D", "N"): logw(1)})
    log = crf.training_log
    assert len(log.iterations) == 1 and log.converged
    assert log.iterations[0]["tokens"] == 8 and log.iterations[0]["bigrams"] == 5


def test_numeric_values_weight_the_counts_and_upto_patterns_are_unary():
    spec = """columns x:number, label
output label
template unary: y[t] ~ value(x[t])
template rate:  y[t-1..t] patterns observed upto
""" + ECRN
    crf = CRF(spec, jobs=1).fit([[[2.0], [1.0], [1.0]]], [["A", "B", "B"]])
    # value-weighted: p(A | x) = 2 / (2 + 1 + 1)
    (key,) = crf.model.vocabs[0]
    assert weights(crf, 0, key) == pytest.approx({("A",): logw(0.5), ("B",): logw(0.5)})
    # one-label patterns of a pair template: p(y) over tokens; pairs: CR over bigrams AB, BB
    assert weights(crf, 1, "bias") == pytest.approx({
        ("A",): logw(1 / 3), ("B",): logw(2 / 3),
        ("A", "B"): logw((1 / 2) / (1 / 2 * 1)), ("B", "B"): logw((1 / 2) / (1 / 2 * 1))})


# ---------------------------------------------------------------- decoding

def _eq5(train_x, train_y):
    """Eq. 5's log-score with floored factors, counted independently of fgl
    (the templates of SPEC: p(y | word), CR(y'; y) and CR(y'; y | word[t]))."""
    unary, pairs, word_pairs = Counter(), Counter(), Counter()
    for xs, ys in zip(train_x, train_y):
        words = [row[0] for row in xs]
        unary.update(zip(words, ys))
        for t in range(1, len(ys)):
            pairs[ys[t - 1], ys[t]] += 1
            word_pairs[words[t], ys[t - 1], ys[t]] += 1

    def cr(joint: Counter, key: tuple) -> float:
        *a, y0, y1 = key
        a = tuple(a)
        total = sum(c for k, c in joint.items() if tuple(k[:-2]) == a)
        left = sum(c for k, c in joint.items() if tuple(k[:-2]) == a and k[-2] == y0)
        right = sum(c for k, c in joint.items() if tuple(k[:-2]) == a and k[-1] == y1)
        return joint[key] * total / (left * right) if joint[key] else 0.0

    seen = {w for w, _ in unary}

    def score(words: list[str], ys: tuple[str, ...]) -> float:
        s = 0.0
        for t, (w, y) in enumerate(zip(words, ys)):
            if w in seen:
                s += math.log(max(unary[w, y] / sum(unary[w, z] for z in "ABC"), EPSILON))
            if t:
                s += math.log(max(cr(pairs, (ys[t - 1], y)), EPSILON))
                if w in seen:
                    s += math.log(max(cr(word_pairs, (w, ys[t - 1], y)), EPSILON))
        return s
    return score


def test_decoding_is_the_argmax_of_eq5_by_the_chain_viterbi(monkeypatch):
    rng = np.random.default_rng(3)
    vocab = ["u", "v", "w", "x", "z"]
    emit = {"A": [.5, .3, .1, .05, .05], "B": [.1, .2, .5, .1, .1], "C": [.05, .1, .1, .4, .35]}
    step = {"A": [.2, .6, .2], "B": [.3, .2, .5], "C": [.5, .3, .2]}
    train_x, train_y = [], []
    for _ in range(40):
        ys = [str(rng.choice(list("ABC")))]
        for _ in range(int(rng.integers(2, 7)) - 1):
            ys.append(str(rng.choice(list("ABC"), p=step[ys[-1]])))
        train_y.append(ys)
        train_x.append([[str(rng.choice(vocab, p=emit[y]))] for y in ys])
    crf = CRF(SPEC, jobs=1).fit(train_x, train_y)
    assert isinstance(crf.model.program, ChainProgram)
    score = _eq5(train_x, train_y)
    gold = sum(score([r[0] for r in xs], tuple(ys)) for xs, ys in zip(train_x, train_y))
    assert crf.training_log.objective == pytest.approx(-gold)

    calls = []
    viterbi = chain_program.chain.batch_viterbi
    monkeypatch.setattr(chain_program.chain, "batch_viterbi",
                        lambda *a: calls.append(1) or viterbi(*a))
    tests = [[str(w) for w in rng.choice(vocab + ["new"], size=int(rng.integers(1, 6)))]
             for _ in range(30)]
    predicted = crf.predict([[[w] for w in words] for words in tests])
    assert calls
    for words, pred in zip(tests, predicted):
        best = max(score(words, ys) for ys in itertools.product("ABC", repeat=len(words)))
        assert score(words, tuple(pred)) == pytest.approx(best, abs=1e-9)


# ---------------------------------------------------------------- command line

def test_fgl_train_tag_eval_round_trip(capsys, tmp_path):
    train, test = data_files(tmp_path)
    spec = tmp_path / "ecrn.fgl"
    spec.write_text("columns word, label\noutput label\ntemplate e: y[t] ~ word[t], "
                    "word[t-1]\ntemplate r: y[t-1..t]\n" + ECRN, encoding="utf-8")
    model = tmp_path / "ecrn.fglm"
    code, _, err = run(capsys, "train", spec, "--train", train, "-o", model)
    assert code == 0, err
    assert "ECRN (Zhu et al., eq. 5) of" in err and "bigrams" in err and f"wrote {model}" in err
    code, out, err = run(capsys, "tag", model, test)
    assert code == 0, err
    tagged = [[row[-1] for row in s] for s in blocks(out)]
    crf = CRF.load(model)
    sentences = read_conll(test)
    assert tagged == crf.predict([[row[:-1] for row in s.rows] for s in sentences])
    code, out, err = run(capsys, "eval", model, test)
    assert code == 0, err
    assert float(out.split("accuracy:")[1].split("%")[0]) > 70.0


# ---------------------------------------------------------------- refusals

BASE = "columns word, label\noutput label\ntemplate e: y[t] ~ word[t]\n"


@pytest.mark.parametrize("extra, line, message", [
    ("template r: y[t-2..t]\n" + ECRN, 4, "template 'r' spans 3 labels"),
    ("template r: y[t-1..t] (sigma = 2)\n" + ECRN, 4, "`sigma` is not read by trainer ecrn"),
    ("template g: (y[t-2], y[t])\n" + ECRN, 4, "an ECRN is a chain model"),
    ("train { trainer = ecrn  sigma = 1 }\n", 4, "`sigma` is not read by trainer ecrn"),
    ("train { max_iter = 5  trainer = ecrn }\n", 4, "`max_iter` is not read by trainer ecrn"),
    ("train { trainer = ecrn objective = likelihood }\n", 4,
     "`objective` is not read by trainer ecrn"),
])
def test_specs_and_settings_an_ecrn_does_not_take_are_refused(extra, line, message):
    with pytest.raises(SpecError, match=message) as info:
        CRF(BASE + extra).fit(X, Y)
    assert info.value.line == line


def test_segment_models_are_refused():
    spec = ("columns word, label\noutput label\nsegments max 3 from bio\n"
            "template s: s[j] ~ word[u]\n" + ECRN)
    with pytest.raises(SpecError, match="not segments") as info:
        CRF(spec).fit(X, Y)
    assert info.value.line == 3


def test_overrides_and_checkpoints_are_refused(tmp_path):
    with pytest.raises(FglError, match="trainer ecrn takes no sigma, l1"):
        CRF(SPEC, sigma=1.0, l1=2.0).fit(X, Y)
    with pytest.raises(FglError, match="trainer ecrn takes no checkpoint"):
        CRF(SPEC, checkpoint=tmp_path / "run.ckpt").fit(X, Y)
