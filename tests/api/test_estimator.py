"""fgl.CRFEstimator: scikit-learn's estimator contract, and sklearn-crfsuite's
feature dicts mapped to attributes as python-crfsuite maps them."""
from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

import fgl
from fgl.errors import FglError
from fgl.estimator import CRFEstimator, NotFittedError, sequence_scorer
from fgl.io.feature_dicts import FeatureDictSpec, token_attributes

WORDS = {"the": "D", "a": "D", "cat": "N", "dog": "N", "Rex": "N", "runs": "V", "sat": "V",
         "big": "J", "Old": "J"}

# the hand-written spec the feature dicts of ``features`` amount to
HAND_SPEC = """
columns word, up: number, tag
output tag
template state: y[t] ~ word[t], word[t-1], bias, up[t], bos
template transition: y[t-1..t] patterns observed
"""
# the hand spec's attribute names, as python-crfsuite names the dicts' attributes
HAND_NAMES = {"bias": "bias", "up[t]": "up", "bos": "BOS"}

ROWS_SPEC = """
columns word, tag
output tag
template state: y[t] ~ lower(word[t]), suffix(word[t], 2)
template transition: y[t-1..t]
"""
BIAS_SPEC = """
columns word, tag
output tag
template state: y[t] ~ bias
template transition: y[t-1..t]
"""


def sentences(n: int, seed: int = 0) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(sorted(WORDS)) for _ in range(rng.randint(1, 6))] for _ in range(n)]


def features(words: list[str], t: int) -> dict:
    w = words[t]
    out = {"w": w, "bias": 1.0, "up": w[0].isupper()}
    if t > 0:
        out["-1"] = {"w": words[t - 1]}
    else:
        out["BOS"] = True
    return out


def dict_data(n: int = 40, seed: int = 0):
    ss = sentences(n, seed)
    return ([[features(s, t) for t in range(len(s))] for s in ss],
            [[WORDS[w] for w in s] for s in ss])


def row_data(n: int = 40, seed: int = 0):
    ss = sentences(n, seed)
    return [[[w] for w in s] for s in ss], [[WORDS[w] for w in s] for s in ss]


# ---------------------------------------------------------------- parameters

def test_constructor_stores_parameters_and_fit_checks_them():
    est = CRFEstimator(sigma=-1.0, spec=42, max_iter="many")   # stored, not judged
    assert (est.sigma, est.spec, est.max_iter) == (-1.0, 42, "many")
    X, y = dict_data(5)
    with pytest.raises(FglError, match="spec must be"):
        est.fit(X, y)
    with pytest.raises(FglError, match="sigma"):
        CRFEstimator(sigma=-1.0).fit(X, y)
    with pytest.raises(FglError, match="all_possible_states must be True or False"):
        CRFEstimator(all_possible_states="yes").fit(X, y)


def test_get_params_set_params_round_trip():
    est = CRFEstimator(ROWS_SPEC, sigma=2.0, max_iter=30)
    params = est.get_params()
    assert params["spec"] is ROWS_SPEC and params["sigma"] == 2.0 and params["max_iter"] == 30
    assert set(params) == {"spec", "sigma", "max_iter", "tol", "l1", "c1", "c2", "min_freq",
                           "jobs", "verbose", "time_limit", "all_possible_states",
                           "all_possible_transitions"}
    other = CRFEstimator().set_params(**params)
    assert other.get_params() == params
    assert est.set_params(sigma=5.0) is est and est.sigma == 5.0
    with pytest.raises(ValueError, match="invalid parameter 'c3'.*valid parameters: spec"):
        est.set_params(c3=1.0)
    assert repr(CRFEstimator(sigma=5.0, max_iter=30)) == "CRFEstimator(sigma=5.0, max_iter=30)"


def test_clone_gives_an_unfitted_copy_with_the_same_parameters():
    base = pytest.importorskip("sklearn.base")
    X, y = dict_data(20)
    est = CRFEstimator(sigma=1.0).fit(X, y)
    copy = base.clone(est)
    assert copy.get_params() == est.get_params()
    assert not hasattr(copy, "crf_") and not hasattr(copy, "classes_")
    with pytest.raises(NotFittedError, match="not fitted yet"):
        copy.predict(X)


# ---------------------------------------------------------------- scikit-learn's own checks

# the checks of sklearn.utils.estimator_checks that apply to a sequence model
RUN_CHECKS = ["check_parameters_default_constructible", "check_no_attributes_set_in_init",
              "check_get_params_invariance", "check_set_params", "check_estimator_cloneable",
              "check_estimator_repr", "check_do_not_raise_errors_in_init_or_set_params",
              "check_mixin_order", "check_valid_tag_types", "check_estimator_tags_renamed",
              "check_estimators_unfitted"]
# the generic checks not run, and why: they fit on a 2-D numeric array with a 1-D y (one
# label per row), which is not a list of sequences with one label per token; the tests
# named after "->" check the same property on sequence data
SKIPPED_CHECKS = {
    "check_dont_overwrite_parameters": "2-D numeric X -> test_fit_keeps_parameters",
    "check_estimators_overwrite_params": "2-D numeric X -> test_fit_keeps_parameters",
    "check_estimators_fit_returns_self": "2-D numeric X -> test_fit_keeps_parameters",
    "check_fit_check_is_fitted": "2-D numeric X -> test_clone_gives_an_unfitted_copy...",
    "check_estimators_pickle": "2-D numeric X -> test_pickle_round_trip",
    "check_fit_idempotent": "2-D numeric X -> test_fit_keeps_parameters (refit equal)",
    "check_fit_score_takes_y": "2-D numeric X -> test_score_is_token_accuracy_in_0_1",
    "check_n_features_in": "X has no fixed number of features: n_features_in_ is not set",
    "check_n_features_in_after_fitting": "as check_n_features_in",
    "check_estimators_dtypes": "numeric dtypes of a 2-D array; tokens are dicts or rows",
    "check_estimators_empty_data_messages": "2-D empty arrays -> test_empty_sequences",
    "check_estimators_nan_inf": "2-D arrays -> test_bad_feature_values_are_refused (NaN)",
    "check_dict_unchanged": "2-D numeric X", "check_dtype_object": "2-D object array",
    "check_fit2d_1sample": "2-D X", "check_fit2d_1feature": "2-D X", "check_fit1d": "1-D X",
    "check_fit2d_predict1d": "2-D X", "check_complex_data": "2-D complex X",
    "check_estimator_sparse_array": "sparse matrices", "check_estimator_sparse_matrix":
    "sparse matrices", "check_estimators_data_not_an_array": "2-D array-likes",
    "check_pipeline_consistency": "2-D numeric X",
    "check_methods_sample_order_invariance": "2-D numeric X",
    "check_methods_subset_invariance": "2-D numeric X",
    "check_readonly_memmap_input": "memmapped 2-D arrays",
    "check_f_contiguous_array_estimator": "2-D arrays",
    "check_sample_weights_*": "fit takes no sample_weight",
    "check_classifiers_*": "not a classifier: y holds label sequences, not one class per row",
    "check_regressors_*": "not a regressor", "check_transformer_*": "not a transformer",
    "check_clustering / check_outliers_*": "not a clusterer or outlier detector",
    "check_array_api_*": "no array API input",
    "check_param_validation": "scikit-learn's internal parameter-constraint machinery; fit "
                              "checks through fgl.CRF (test_constructor_stores_parameters...)",
}


@pytest.mark.parametrize("name", RUN_CHECKS)
def test_sklearn_estimator_checks_that_apply(name):
    checks = pytest.importorskip("sklearn.utils.estimator_checks")
    if not hasattr(checks, name):
        pytest.skip(f"{name} is not in this scikit-learn")
    getattr(checks, name)("CRFEstimator", CRFEstimator())


def test_fit_keeps_parameters():
    X, y = dict_data(20)
    est = CRFEstimator(sigma=1.0, max_iter=50)
    before = pickle.dumps(est.get_params())
    assert est.fit(X, y) is est
    assert pickle.dumps(est.get_params()) == before
    first = est.coef_.copy()
    assert np.allclose(est.fit(X, y).coef_, first)       # refitting gives the same model


def test_pickle_round_trip():
    X, y = dict_data(20)
    est = CRFEstimator(sigma=1.0).fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    assert back.predict(X) == est.predict(X)
    assert np.array_equal(back.coef_, est.coef_)
    assert back.state_features_ == est.state_features_
    assert back.training_log_.objective == est.training_log_.objective


# ---------------------------------------------------------------- model selection

def test_cross_val_score_and_scorers():
    selection = pytest.importorskip("sklearn.model_selection")
    X, y = dict_data(30)
    scores = selection.cross_val_score(CRFEstimator(sigma=1.0), X, y, cv=3)
    assert len(scores) == 3 and 0.9 < min(scores) and max(scores) <= 1   # 0-1, learnable
    seq = selection.cross_val_score(CRFEstimator(sigma=1.0), X, y, cv=3,
                                    scoring=sequence_scorer("sequence_accuracy"))
    assert len(seq) == 3 and all(0 <= s <= 1 for s in seq)
    est = CRFEstimator(sigma=1.0).fit(X[:20], y[:20])
    pred = est.predict(X[20:])
    whole = np.mean([p == g for p, g in zip(pred, y[20:])])
    assert sequence_scorer("sequence_accuracy")(est, X[20:], y[20:]) == pytest.approx(whole)
    from fgl.evaluation.evaluate import evaluate
    assert sequence_scorer("f1")(est, X[20:], y[20:]) == pytest.approx(
        evaluate(y[20:], pred).overall.f1 / 100)
    with pytest.raises(FglError, match="unknown metric 'recall'"):
        sequence_scorer("recall")


def test_grid_search_over_sigma_and_max_iter_picks_the_one_that_learns():
    selection = pytest.importorskip("sklearn.model_selection")
    X, y = dict_data(30)
    grid = selection.GridSearchCV(CRFEstimator(), {"sigma": [1e-3, 1.0], "max_iter": [1, 50]},
                                  cv=3).fit(X, y)
    assert grid.best_params_ == {"sigma": 1.0, "max_iter": 50}
    assert grid.best_estimator_.score(X, y) > 0.95


def test_grid_search_over_specs_picks_the_spec_with_word_features():
    selection = pytest.importorskip("sklearn.model_selection")
    X, y = row_data(30)
    grid = selection.GridSearchCV(CRFEstimator(sigma=1.0), {"spec": [BIAS_SPEC, ROWS_SPEC]},
                                  cv=3).fit(X, y)
    assert grid.best_params_["spec"] == ROWS_SPEC
    scores = grid.cv_results_["mean_test_score"]
    assert scores[1] > scores[0] + 0.2


def test_pipeline_with_a_step_that_makes_the_feature_dicts():
    pipeline = pytest.importorskip("sklearn.pipeline")
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    ss = sentences(30)
    to_dicts = preprocessing.FunctionTransformer(
        lambda X: [[features(s, t) for t in range(len(s))] for s in X])
    pipe = pipeline.make_pipeline(to_dicts, CRFEstimator(sigma=1.0))
    y = [[WORDS[w] for w in s] for s in ss]
    assert pipe.fit(ss, y).score(ss, y) > 0.95
    assert pipe.predict(ss[:3]) == pipe[-1].predict(to_dicts.transform(ss[:3]))


# ---------------------------------------------------------------- fitted attributes

def test_fitted_attributes():
    X, y = dict_data(20)
    est = CRFEstimator(sigma=1.0).fit(X, y)
    assert est.classes_ == list(dict.fromkeys(t for seq in y for t in seq))  # first seen
    assert est.coef_ is est.crf_.weights and est.coef_.ndim == 1
    assert est.training_log_ is est.crf_.training_log and est.training_log_.iterations
    assert not hasattr(est, "n_features_in_")
    assert set(est.transition_features_) <= {(a, b) for a in est.classes_ for b in est.classes_}
    assert ("w:cat", "N") in est.state_features_
    assert est.predict_single(X[0]) == est.predict(X[:1])[0]
    margins = est.predict_marginals_single(X[0])
    assert len(margins) == len(X[0]) and set(margins[0]) == set(est.classes_)
    assert sum(margins[0].values()) == pytest.approx(1.0)
    assert est.predict_marginals(X[:1])[0] == margins


def test_score_is_token_accuracy_in_0_1():
    """scikit-learn's scorers (and sklearn-crfsuite's score) give fractions;
    fgl.CRF.score and the command line keep percent."""
    X, y = dict_data(30)
    est = CRFEstimator(sigma=1e-2, max_iter=3).fit(X[:10], y[:10])   # a model with mistakes
    pred = est.predict(X)
    right = sum(a == b for p, g in zip(pred, y) for a, b in zip(p, g))
    expected = right / sum(len(s) for s in y)
    assert 0 < expected < 1
    assert est.score(X, y) == pytest.approx(expected)
    assert est.crf_.score(X, y) == pytest.approx(100 * expected)   # fgl.CRF: percent
    assert sequence_scorer()(est, X, y) == pytest.approx(expected)


def test_empty_sequences():
    X, y = dict_data(20)
    est = CRFEstimator(sigma=1.0).fit(X + [[]], y + [[]])
    assert est.predict([[], X[0]]) == [[], est.predict_single(X[0])]
    assert est.predict_marginals([[]]) == [[]]
    assert est.score([[]], [[]]) == 0.0


def test_plain_rows_with_a_spec():
    X, y = row_data(30)
    est = CRFEstimator(ROWS_SPEC, sigma=1.0).fit(X, y)
    assert est.score(X, y) > 0.95
    assert est.predict(X[:2]) == est.crf_.predict(X[:2])
    assert ("lower(word[t])=cat", "N") in est.state_features_
    with pytest.raises(FglError, match="leave spec=None to train on feature dicts"):
        est.predict(dict_data(2)[0])
    with pytest.raises(FglError, match="all_possible_transitions shapes the model built"):
        CRFEstimator(ROWS_SPEC, all_possible_transitions=True).fit(X, y)


def test_lazy_export():
    assert fgl.CRFEstimator is CRFEstimator and "CRFEstimator" in fgl.__all__


# ---------------------------------------------------------------- feature dicts

def test_attributes_are_python_crfsuites():
    pycrfsuite = pytest.importorskip("pycrfsuite")
    tokens = [{"w": "Rex", "bias": 1.0, "up": True, "low": False, "n": 3, "f": np.float32(0.5),
               "neg": -2.5, "b": b"bytes"},
              {"pre": {"w": "the", "len": 3, "deep": {"x": "y"}}, "tags": ["a", "b"],
               "set": {"s"}, "uni": "привет", "sp": "New York", "": "empty"},
              ["plain", "names"], {}]
    for token in tokens:
        mine = token_attributes(token, "t")
        as_dict = {**{w: 1.0 for w in mine.words}, **mine.numbers}
        assert len(as_dict) == len(mine.words) + len(mine.numbers)   # (no repeats here)
        assert as_dict == pycrfsuite.ItemSequence([token]).items()[0]


def test_repeated_attributes_count_twice():
    assert token_attributes(["a", "a"], "t").words == ["a", "a"]
    assert token_attributes({"k": 1.0, "j": {"k": 2}}, "t").numbers == {"k": 1.0, "j:k": 2.0}
    X = [[{"a:b": 2.0, "a": "b"}]]     # two spellings of attribute a:b: 2 + 1
    spec = FeatureDictSpec(X)
    assert spec.rows(X) == [[["", "1", "3.0"]]]


def test_model_from_dicts_equals_the_hand_written_spec():
    X, y = dict_data(40)
    words = [[tok["w"] for tok in seq] for seq in X]
    rows = [[[w, str(float(w[0].isupper()))] for w in s] for s in words]
    common = dict(sigma=1.0, max_iter=500, tol=1e-10)
    from_dicts = CRFEstimator(**common).fit(X, y)
    hand = CRFEstimator(HAND_SPEC, **common).fit(rows, y)
    assert from_dicts.predict(X) == hand.predict(rows)
    assert from_dicts.training_log_.objective == pytest.approx(hand.training_log_.objective,
                                                               rel=1e-8)
    assert np.allclose(np.sort(from_dicts.coef_), np.sort(hand.coef_), atol=1e-5)

    def crfsuite_name(attribute: str) -> str:
        if attribute.startswith("word[t]="):
            return "w:" + attribute[len("word[t]="):]
        if attribute.startswith("word[t-1]="):
            return "-1:w:" + attribute[len("word[t-1]="):]
        return HAND_NAMES[attribute]
    expected = {(crfsuite_name(a), label): w for (a, label), w in hand.state_features_.items()}
    got = from_dicts.state_features_
    assert got.keys() == expected.keys()
    assert all(got[k] == pytest.approx(expected[k], abs=1e-5) for k in got)
    assert from_dicts.transition_features_.keys() == hand.transition_features_.keys()
    for a, b in zip(from_dicts.predict_marginals(X[:3]), hand.predict_marginals(rows[:3])):
        for p, q in zip(a, b):
            assert p == pytest.approx(q, abs=1e-6)


def test_state_features_are_the_pairs_seen_in_training():
    """CRFsuite's rule: (attribute, label) gets a weight when the attribute
    occurs on a token of that label — a number given only at some tokens
    (even 0) exists there only."""
    X, y = dict_data(30)
    for seq in X:
        for tok in seq:
            if tok["w"] in ("Rex", "cat"):
                tok["rare"] = 0.0 if tok["w"] == "cat" else 2.5
    seen = {(name, label) for seq, labels in zip(X, y) for tok, label in zip(seq, labels)
            for name in [*token_attributes(tok, "t").words, *token_attributes(tok, "t").numbers]}
    est = CRFEstimator(sigma=1.0).fit(X, y)
    assert set(est.state_features_) == seen
    assert est.state_features_[("rare", "N")] != 0.0
    every = CRFEstimator(sigma=1.0, all_possible_states=True,
                         all_possible_transitions=True).fit(X, y)
    names = {a for a, _ in seen}
    assert set(every.state_features_) == {(a, c) for a in names for c in every.classes_}
    assert len(every.transition_features_) == len(every.classes_) ** 2
    assert len(est.transition_features_) < len(every.transition_features_)


def test_names_with_spaces_percent_and_empty_survive():
    X = [[{"w": "New York", "p": "50%"}, ["", "%41"]], [{"w": "x"}, ["z"]]]
    y = [["A", "B"], ["B", "A"]]
    est = CRFEstimator(sigma=1.0).fit(X, y)
    assert {a for a, _ in est.state_features_} == {"w:New York", "p:50%", "", "%41", "w:x", "z"}
    assert est.predict(X) == y


def test_weights_at_predict_time():
    X, y = dict_data(20)
    est = CRFEstimator(sigma=1.0).fit(X, y)
    doubled = [[{**tok, "bias": 2.0} for tok in seq] for seq in X]    # a number attribute
    assert est._rows(doubled)[0][0][1:3] == ["1", "2.0"]
    counted = [[{**tok, "w:" + tok["w"]: 2} for tok in seq] for seq in X[:1]]
    word = X[0][0]["w"]
    assert est._rows(counted)[0][0][0].split().count("w:" + word) == 3     # 1 + 2
    unknown = [[{**tok, "never seen": 0.25} for tok in seq] for seq in X[:1]]
    assert est.predict(unknown) == est.predict(X[:1])       # no weights: no effect
    scaled = [[{**tok, "w:" + tok["w"]: 0.5} for tok in seq] for seq in X[:1]]
    with pytest.raises(FglError, match="has the weight 0.5, but in training it was given by "
                                       "strings only"):
        est.predict(scaled)


@pytest.mark.parametrize("token, message", [
    ({"w": None}, "feature 'w' has the value NoneType None"),
    ({"w": [{"a": 1}]}, "a list of features holds dict .* \\(under 'w'\\)"),
    ({"w": [["a"]]}, "a list of features holds list"),
    ({"w": ["a", 1.5]}, "a list of features holds float 1.5"),
    ({"w": (1, 2)}, "feature 'w' has the value tuple"),
    ({"w": float("nan")}, "feature 'w' has the weight nan; weights must be finite"),
    ({1: "x"}, "a key must be a string; found int 1"),
    ("word", "a token must be a dict of features"),
    ({"w": b"\xff"}, "the value of 'w' is bytes that are not UTF-8"),
])
def test_bad_feature_values_are_refused(token, message):
    X = [[{"w": "a"}, token]]
    with pytest.raises(FglError, match=f"sequence 0, token 1: {message}"):
        CRFEstimator().fit(X, [["A", "B"]])


def test_several_output_layers():
    X = [[["the"], ["cat"]], [["a"], ["dog"], ["runs"]]] * 4
    y = [[("D", "B-NP"), ("N", "I-NP")], [("D", "B-NP"), ("N", "I-NP"), ("V", "O")]] * 4
    est = CRFEstimator("stdlib:factorial", max_iter=10).fit(X, y)
    assert est.classes_ == {"pos": ["D", "N", "V"], "chunk": ["B-NP", "I-NP", "O"]}
    assert est.predict(X[:2]) == y[:2]
    assert est.score(X, [[list(tok) for tok in seq] for seq in y]) == 1.0
    assert set(est.predict_marginals_single(X[0])[0]) == {"pos", "chunk"}
    with pytest.raises(FglError, match="the f1 scorer scores one output layer"):
        sequence_scorer("f1")(est, X, y)
