"""``CRFEstimator``'s fitted attributes mean what sklearn-crfsuite's mean
(CRFsuite's model file holds the non-zero weights only): ``classes_`` in
the order first seen, ``attributes_`` the attributes with a non-zero state
weight in the order first met, ``state_features_``/``transition_features_``
the non-zero weights — against python-crfsuite itself, with and without L1,
and the same after save/load.  fgl's former meanings stay as ``all_*``."""
from __future__ import annotations

import random

import pytest

from fgl.estimator import CRFEstimator

TAGS = {"the": "D", "a": "D", "dog": "N", "cat": "N", "mat": "N", "Rex": "N", "runs": "V",
        "sat": "V", "on": "P", "big": "J"}


def data(n: int = 60, seed: int = 0):
    """String attributes only (fgl keeps numeric ones in a template of their
    own, listed after the strings; docs/sklearn.md)."""
    rng = random.Random(seed)
    words = list(TAGS)
    sents = [[rng.choice(words) for _ in range(rng.randint(1, 7))] for _ in range(n)]

    def feats(s: list[str], i: int) -> dict:
        f = {"w": s[i].lower(), "suf": s[i][-2:]}
        if i > 0:
            f["p"] = s[i - 1].lower()
        return f
    X = [[feats(s, i) for i in range(len(s))] for s in sents]
    y = [[TAGS[w] if rng.random() > 0.15 else rng.choice("DNVPJ") for w in s] for s in sents]
    return X, y


@pytest.mark.parametrize("c1", [0.0, 0.3])
def test_fitted_attributes_are_crfsuites(tmp_path, c1):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    X, y = data()
    trainer = pycrfsuite.Trainer(verbose=False)
    for xs, ys in zip(X, y):
        trainer.append(xs, ys)
    trainer.set_params({"c1": c1, "c2": 0.05, "max_iterations": 5000, "epsilon": 1e-10,
                        "delta": 1e-12, "period": 10})
    trainer.train(str(tmp_path / "m.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    info = tagger.info()
    est = CRFEstimator(c1=c1, c2=0.05, tol=1e-10, max_iter=5000).fit(X, y)
    assert est.classes_ == tagger.labels()                      # first seen, in order
    assert est.attributes_ == list(info.attributes)             # in order
    assert set(est.state_features_) == set(info.state_features)
    assert set(est.transition_features_) == set(info.transitions)
    assert all(w != 0 for w in est.state_features_.values())
    zeros = {k for k, w in est.all_state_features_.items() if w == 0}
    assert bool(zeros) == (c1 > 0)              # L1 zeroes some: CRFsuite drops them
    assert set(est.all_state_features_) == set(est.state_features_) | zeros
    assert set(est.attributes_) <= set(est.all_attributes_)

    est.save(tmp_path / "m.fglm")
    back = CRFEstimator.load(tmp_path / "m.fglm")
    assert back.classes_ == est.classes_ and back.attributes_ == est.attributes_
    assert back.all_attributes_ == est.all_attributes_
    assert back.state_features_ == est.state_features_


def test_probability_and_nbest_are_crfsuites(tmp_path):
    """``predict_probability`` is python-crfsuite's ``Tagger.probability``
    of the tagged sequence; ``predict_nbest``'s best is ``predict``'s."""
    pycrfsuite = pytest.importorskip("pycrfsuite")
    X, y = data(40)
    trainer = pycrfsuite.Trainer(verbose=False)
    for xs, ys in zip(X, y):
        trainer.append(xs, ys)
    trainer.set_params({"c2": 0.05, "max_iterations": 5000, "epsilon": 1e-10, "delta": 1e-12,
                        "period": 10})
    trainer.train(str(tmp_path / "m.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    est = CRFEstimator(c2=0.05, tol=1e-10, max_iter=5000).fit(X, y)
    theirs = []
    for xs in X[:10]:
        tagger.set(xs)
        theirs.append(tagger.probability(tagger.tag()))
    assert est.predict_probability(X[:10]) == pytest.approx(theirs, abs=1e-4)
    best = est.predict_nbest(X[:10], 3)
    assert [b[0][0] for b in best] == est.predict(X[:10])
    assert all(b[0][1] >= b[-1][1] for b in best)
