"""The estimator reads feature dicts a layout at a time (``fgl.io.dict_tokens``)
and predicts a batch of sequences in one call: a batch's labels and
marginals are each sequence's own, whatever else the batch holds (other
layouts, tokens read one by one, a key given strings at some tokens and
numbers at others); and the training rows made a run of tokens at a time
(``feature_dicts.CHUNK``) give the weights one run gives, bit for bit."""
from __future__ import annotations

import random

import numpy as np
import pytest

import fgl
import fgl.io.feature_dicts as feature_dicts

WORDS = ["the", "cat", "Rex", "sat", "on", "a", "mat", "Paris", "42", "big"]
TAGS = {"the": "D", "a": "D", "cat": "N", "mat": "N", "Rex": "P", "Paris": "P", "sat": "V",
        "on": "I", "42": "C", "big": "J"}


def flat_features(words: list[str], i: int) -> dict:
    """The tutorial's kind of token: a flat dict of strings and numbers,
    whose keys depend on the token's place (three layouts)."""
    w = words[i]
    out = {"bias": 1.0, "word.lower()": w.lower(), "word[-2:]": w[-2:],
           "word.istitle()": w.istitle(), "word.isdigit()": w.isdigit()}
    if i > 0:
        out.update({"-1:word.lower()": words[i - 1].lower(),
                    "-1:word.istitle()": words[i - 1].istitle()})
    else:
        out["BOS"] = True
    if i == len(words) - 1:
        out["EOS"] = True
    return out


def sequences(n: int, seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    sents = [[rng.choice(WORDS) for _ in range(rng.randint(1, 6))] for _ in range(n)]
    X = [[flat_features(s, i) for i in range(len(s))] for s in sents]
    y = [[TAGS[w] if rng.random() > 0.1 else rng.choice("DNVP") for w in s] for s in sents]
    return X, y


def odd_tokens(X: list, seed: int) -> list:
    """``X`` with some tokens another kind: nested or listed features, a
    name given twice, a key with a string here and a number there."""
    rng = random.Random(seed)
    out = []
    for seq in X:
        seq = [dict(tok) for tok in seq]
        for tok in seq:
            pick = rng.random()
            if pick < 0.15:
                tok["shape"] = {"cap": tok["word.istitle()"], "w": tok["word.lower()"]}
            elif pick < 0.3:
                tok["word[-2:]"] = 2.0            # a number where others give a string
            elif pick < 0.4:
                tok["word.lower():" + tok["word.lower()"]] = 1   # the same name, twice
        out.append(seq)
    return out


@pytest.fixture(scope="module")
def trained():
    X, y = sequences(60, seed=1)
    return fgl.CRFEstimator(c1=0.05, c2=0.1, max_iter=40).fit(odd_tokens(X, 2), y)


def test_a_batch_predicts_each_sequence_as_alone(trained):
    X, _ = sequences(25, seed=7)
    X = odd_tokens(X, 8) + [[]]
    batch = trained.predict(X)
    assert batch == [trained.predict_single(x) for x in X]
    for got, x in zip(trained.predict_marginals(X), X):
        alone = trained.predict_marginals_single(x)
        assert [sorted(t.items()) for t in got] == [sorted(t.items()) for t in alone]
    assert trained.predict_probability(X[:5]) == [trained.predict_probability([x])[0]
                                                  for x in X[:5]]


def test_training_rows_made_a_run_at_a_time_are_one_runs(monkeypatch):
    X, y = sequences(50, seed=3)
    X = odd_tokens(X, 4)
    whole = fgl.CRFEstimator(c1=0.05, c2=0.1, max_iter=25).fit(X, y)
    monkeypatch.setattr(feature_dicts, "CHUNK", 7)      # runs of a token or two
    runs = fgl.CRFEstimator(c1=0.05, c2=0.1, max_iter=25).fit(X, y)
    assert np.array_equal(whole.coef_, runs.coef_)
    assert whole.all_attributes_ == runs.all_attributes_
    assert whole.predict(X) == runs.predict(X)
