"""CRFEstimator speaks sklearn-crfsuite: c1/c2 and min_freq, fit with
development data, the fitted attributes by the user's feature names — also
after save/load and in `fgl inspect` — and the same objective as
python-crfsuite (when it is installed)."""
from __future__ import annotations

import math
import pickle
import random
from collections import Counter

import numpy as np
import pytest
from support.cli import run

import fgl
from fgl.errors import FglError
from fgl.estimator import (
    NO_L2_SIGMA,
    CRFEstimator,
    crfsuite_regularisation,
    labels_statement,
    min_count_of,
)
from fgl.io.feature_dicts import token_attributes

TAGS = {"the": "D", "a": "D", "dog": "N", "cat": "N", "mat": "N", "Rex": "N", "runs": "V",
        "sat": "V", "on": "P", "big": "J", "small": "J"}


def features(words: list[str], i: int) -> dict:
    """sklearn-crfsuite tutorial-style features: strings, numbers, bools,
    a nested dict and a list."""
    w = words[i]
    f = {"bias": 1.0, "word.lower()": w.lower(), "word.istitle()": w.istitle(),
         "len": len(w) / 3, "suffix": [w[-2:], w[-1:]]}
    if i > 0:
        f["-1"] = {"word.lower()": words[i - 1].lower(), "title": words[i - 1].istitle()}
    else:
        f["BOS"] = True
    return f


def data(n: int = 60, seed: int = 0, noise: float = 0.15):
    rng = random.Random(seed)
    words = sorted(TAGS)
    sents = [[rng.choice(words) for _ in range(rng.randint(1, 7))] for _ in range(n)]
    X = [[features(s, i) for i in range(len(s))] for s in sents]
    y = [[TAGS[w] if rng.random() > noise else rng.choice("DNVPJ") for w in s] for s in sents]
    return X, y


# ---------------------------------------------------------------- c1, c2, min_freq

def test_c1_c2_are_l1_and_sigma():
    assert crfsuite_regularisation(0.25, 2.0) == (0.25, 0.5)        # sigma = 1/sqrt(2 c2)
    assert crfsuite_regularisation(None, 0.5) == (None, 1.0)
    assert crfsuite_regularisation(None, 0) == (None, NO_L2_SIGMA)  # no L2 term
    assert 1 / NO_L2_SIGMA ** 2 > 0 and 1 / NO_L2_SIGMA ** 2 < 1e-290
    X, y = data(30)
    by_c2 = CRFEstimator(c2=0.5, max_iter=50).fit(X, y)
    by_sigma = CRFEstimator(sigma=1.0, max_iter=50).fit(X, y)
    assert np.array_equal(by_c2.coef_, by_sigma.coef_)
    by_c1 = CRFEstimator(c1=0.1, c2=0.5, max_iter=50).fit(X, y)
    by_l1 = CRFEstimator(l1=0.1, sigma=1.0, max_iter=50).fit(X, y)
    assert np.array_equal(by_c1.coef_, by_l1.coef_) and (by_c1.coef_ == 0).any()
    with pytest.raises(FglError, match="give sigma or c2, not both"):
        CRFEstimator(c2=1.0, sigma=1.0).fit(X, y)
    with pytest.raises(FglError, match="give l1 or c1, not both"):
        CRFEstimator(c1=1.0, l1=1.0).fit(X, y)
    with pytest.raises(FglError, match="c2 must be a number >= 0"):
        CRFEstimator(c2=-1.0).fit(X, y)
    with pytest.raises(FglError, match="min_freq must be a number >= 0"):
        CRFEstimator(min_freq="3").fit(X, y)


def test_min_freq_is_min_count():
    assert [min_count_of(v) for v in (None, 0, 0.5, 1, 2, 2.5)] == [None, 1, 1, 1, 2, 3]
    X, y = data(40)
    est = CRFEstimator(c2=0.1, min_freq=14.5, max_iter=30).fit(X, y)   # count >= 15
    counts = Counter(name for seq in X for tok in seq
                     for name in {*token_attributes(tok, "t").words,
                                  *token_attributes(tok, "t").numbers})
    assert set(est.attributes_) == {a for a, n in counts.items() if n >= 15}
    assert {a for a, n in counts.items() if n == 14}        # (some are cut, just below)
    every = CRFEstimator(c2=0.1, max_iter=30).fit(X, y)
    assert set(every.attributes_) == set(counts)


# ---------------------------------------------------------------- python-crfsuite

@pytest.mark.parametrize("c2", [0.05, 1.0])
def test_same_objective_as_python_crfsuite(tmp_path, c2):
    """CRFsuite minimises -Σ log p(y|x) + c2·|w|²; fgl -Σ log p(y|x) +
    |w|²/(2σ²): with σ = 1/sqrt(2 c2) both reach the same optimum, over the
    same features."""
    pycrfsuite = pytest.importorskip("pycrfsuite")
    X, y = data(60)
    trainer = pycrfsuite.Trainer(verbose=False)
    for xs, ys in zip(X, y):
        trainer.append(xs, ys)
    trainer.set_params({"c1": 0.0, "c2": c2, "max_iterations": 5000, "epsilon": 1e-12,
                        "delta": 1e-14, "period": 10})
    trainer.train(str(tmp_path / "m.crfsuite"))
    theirs = trainer.logparser.last_iteration["loss"]
    est = CRFEstimator(c1=0, c2=c2, tol=1e-12, max_iter=5000).fit(X, y)
    ours = est.training_log_.objective
    assert ours == pytest.approx(theirs, rel=1e-6)
    assert math.isfinite(ours) and ours > 0
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    info = tagger.info()
    assert set(est.state_features_) == set(info.state_features)
    assert set(est.transition_features_) == set(info.transitions)
    assert set(est.attributes_) == set(info.attributes)
    for key, w in info.state_features.items():
        assert est.state_features_[key] == pytest.approx(w, abs=1e-3)
    assert est.predict(X) == [tagger.tag(xs) for xs in X]


def test_min_freq_keeps_what_crfsuite_keeps_and_may_keep_more(tmp_path):
    """The two cut-offs count differently (docs/sklearn.md): CRFsuite each
    (attribute, label) pair, fgl each attribute over every label — so with
    weights 1, every pair CRFsuite keeps fgl keeps too."""
    pycrfsuite = pytest.importorskip("pycrfsuite")
    X, y = data(60)
    X = [[{k: v for k, v in tok.items() if k != "len"} for tok in seq] for seq in X]
    trainer = pycrfsuite.Trainer(verbose=False)
    for xs, ys in zip(X, y):
        trainer.append(xs, ys)
    trainer.set_params({"c2": 1.0, "feature.minfreq": 4, "max_iterations": 50})
    trainer.train(str(tmp_path / "m.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    theirs = set(tagger.info().state_features)
    ours = set(CRFEstimator(c2=1.0, min_freq=4, max_iter=50).fit(X, y).state_features_)
    assert theirs <= ours and theirs != ours


# ---------------------------------------------------------------- fit and attributes

def test_fit_with_development_data():
    X, y = data(40)
    est = CRFEstimator(c2=0.1, max_iter=40).fit(X[:30], y[:30], X_dev=X[30:], y_dev=y[30:])
    assert 0 < est.dev_score_ <= 1 and est.dev_score_ == est.score(X[30:], y[30:])
    assert not hasattr(CRFEstimator(c2=0.1, max_iter=5).fit(X, y), "dev_score_")
    with pytest.raises(FglError, match="give X_dev and y_dev together"):
        CRFEstimator().fit(X, y, X_dev=X)


def fitted_view(est) -> tuple:
    return (est.classes_, sorted(est.attributes_), est.state_features_,
            est.transition_features_)


def test_feature_names_survive_pickle_save_and_load(tmp_path):
    X, y = data(40)
    est = CRFEstimator(c2=0.1, max_iter=40).fit(X, y)
    view = fitted_view(est)
    assert {"bias", "BOS", "len", "word.istitle()", "-1:title", "word.lower():dog",
            "-1:word.lower():the", "suffix:at"} <= set(est.attributes_)
    assert est.classes_ == list(dict.fromkeys(t for seq in y for t in seq))  # first seen
    assert ("bias", "N") in est.state_features_ and ("BOS", "D") in est.state_features_
    assert fitted_view(pickle.loads(pickle.dumps(est))) == view
    est.save(tmp_path / "m.fglm")
    back = CRFEstimator.load(tmp_path / "m.fglm")
    assert back.spec is None and fitted_view(back) == view
    assert back.predict(X) == est.predict(X) and back.score(X, y) == est.score(X, y)
    crf = fgl.CRF.load(tmp_path / "m.fglm")      # the plain API knows the names too
    assert crf.state_features_ == est.state_features_
    assert crf.predict(X[:5]) == est.predict(X[:5])
    assert crf.evaluate(X, y).accuracy == pytest.approx(100 * est.score(X, y))
    assert crf.inspect()["templates"][0]["strongest"][0]["attribute"] in est.attributes_


def test_inspect_shows_the_feature_names(tmp_path, capsys):
    X, y = data(40)
    CRFEstimator(c2=0.1, max_iter=40).fit(X, y).save(tmp_path / "m.fglm")
    code, out, err = run(capsys, "inspect", tmp_path / "m.fglm", "--top", "200")
    assert code == 0, err
    assert "  bias -> " in out and "  BOS -> D" in out and "  len -> " in out
    assert "regex(on" not in out and "tokens(attrs" not in out
    assert "feature_dicts" not in out       # (kept in the file, not shown as training data)


def test_tag_and_eval_explain_that_the_model_reads_feature_dicts(tmp_path, capsys):
    X, y = data(20)
    CRFEstimator(c2=0.1, max_iter=10).fit(X, y).save(tmp_path / "m.fglm")
    conll = tmp_path / "test.txt"
    conll.write_text("The D\ndog N\n\nRex N\nruns V\n")
    for argv in (["tag", tmp_path / "m.fglm", conll], ["eval", tmp_path / "m.fglm", conll]):
        code, _, err = run(capsys, *argv)
        assert code != 0
        assert "was trained on feature dicts from Python" in err, err
        assert "fgl.CRF.load" in err and "expected" not in err


def test_a_corrupt_feature_dict_entry_is_a_model_file_error(tmp_path):
    from fgl.errors import ModelFileError
    from fgl.modelfile.model_files import load_model, save_model

    X, y = data(10)
    CRFEstimator(c2=0.1, max_iter=5).fit(X, y).save(tmp_path / "m.fglm")
    model, weights, meta = load_model(tmp_path / "m.fglm")
    assert meta["feature_dicts"]["numeric"][:2] == ["bias", "word.istitle()"]
    for bad in ({"numeric": ["bias"]}, {"numeric": [1, 2]}, []):
        save_model(tmp_path / "bad.fglm", model, weights, {**meta, "feature_dicts": bad})
        with pytest.raises(ModelFileError, match="bad.fglm: corrupt model file: .*feature-dict"):
            fgl.CRF.load(tmp_path / "bad.fglm")


def test_feature_dicts_encode_as_their_text_rows_would():
    """Prediction encodes feature dicts straight from the vocabularies
    (FeatureDictSpec.encode); the attribute rows and values of every token
    are those of the text rows the spec's observations read."""
    from fgl.io.rows import as_sentences

    X, y = data(40)
    est = CRFEstimator(c2=0.1, max_iter=20).fit(X, y)
    crf = est.crf_
    odd = [[{**tok, "word.lower():dog": 2, "never seen": 0.5, "len": 0.0,
             "suffix": ["at", "at", "zz"], "bias": 3.0} for tok in seq] for seq in X[:10]]
    odd += [[["BOS", "BOS", "word.lower():the", "unknown"], {"bias": True}], []]
    odd += [[{"bias": 1.0, "word.lower()": "dog", "suffix:at": 2, "len": 1, "BOS": False,
              "word.istitle()": True, "never": "seen"},           # flat dicts: one pass
             {"word.lower()": "the", "word.lower():the": 1, "bias": 0.5, "x": 3.0}]]
    fast = crf._encode(crf.model, [s for s in crf._inputs(odd, None, "predict") if s.rows])
    slow = crf.model.encode([s for s in as_sentences(crf.dict_rows(odd), None, "predict")
                             if s.rows])
    assert np.array_equal(fast.seq_ptr, slow.seq_ptr)
    assert np.array_equal(fast.tok_ptr, slow.tok_ptr)
    for u in range(len(fast.tok_ptr) - 1):
        a, b = fast.tok_ptr[u], fast.tok_ptr[u + 1]
        assert sorted(zip(fast.tok_row[a:b].tolist(), fast.tok_val[a:b].tolist())) == \
            sorted(zip(slow.tok_row[a:b].tolist(), slow.tok_val[a:b].tolist()))
    text = fgl.CRF(crf.spec)          # the same model, fed text rows
    text.model, text.weights = crf.model, crf.weights
    assert est.predict(odd) == text.predict(crf.dict_rows(odd))
    for p, q in zip(est.predict_marginals(odd), text.predict_marginals(crf.dict_rows(odd))):
        for a, b in zip(p, q):
            assert a == pytest.approx(b, abs=1e-12)


def test_training_from_prepared_dicts_compiles_the_text_rows_model():
    """fit hands the compiler prepared sentences (DictSentence: the
    attribute rows made straight from the dicts); the model is the one the
    generated spec compiles from the text rows: the same vocabularies, row
    numbers, features and weights."""
    X, y = data(40)
    X[0][0] = {**X[0][0], "bias": 2.0, "rep": ["a", "a"], "sp ace": "x y%"}
    X[1][1] = ["word.lower():the", "word.lower():the", "len"]     # 'len': a column, +1
    est = CRFEstimator(c2=0.1, max_iter=30, min_freq=2).fit(X, y)
    spec = est.feature_dicts_.text + labels_statement(y)   # (the labels as first seen)
    text = fgl.CRF(spec, sigma=est.crf_.settings.sigma, max_iter=30,
                   min_count=2).fit(est.feature_dicts_.rows(X), y)
    assert est.crf_.model.vocabs == text.model.vocabs
    mine, theirs = est.crf_.model.arrays(), text.model.arrays()
    assert all(np.array_equal(mine[k], theirs[k]) for k in mine)
    assert np.allclose(est.coef_, text.weights, atol=1e-8)
