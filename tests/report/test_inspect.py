"""`fgl inspect` and ``fgl.report.inspect``: every feature listed once with its
weight and labels, for chain and factor-graph models; sklearn-crfsuite's
``state_features_`` / ``transition_features_``; the transition matrix; the
training log kept in the model file; and the CLI's text and JSON."""
from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import run, train_model
from support.paths import HMM
from support.sentences import inputs_and_labels, segment_data
from support.specs import CHAIN_FORMAT, SKIP_EQUAL_WORDS

from fgl import CRF
from fgl.report.inspect import weights


def _fitted(spec: str) -> CRF:
    X, y = inputs_and_labels(segment_data()[0])
    return CRF(spec, max_iter=15, jobs=1).fit(X, y)


def test_every_feature_is_listed_once_with_its_weight():
    for spec in (str(HMM), CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="infer trp")):
        crf = _fitted(spec)
        listed = weights(crf.model, crf.weights)
        assert len(listed) == len(crf.weights)
        assert sorted(x.weight for x in listed) == sorted(crf.weights.tolist())
        labels = set(crf.model.layers[0].labels)
        keys = {(x.template, x.attribute, x.labels) for x in listed}
        assert len(keys) == len(listed)                 # no feature twice
        assert all(set(x.labels) <= labels for x in listed)
        widths = {p.name: p.width for p in crf.model.templates}
        assert all(len(x.labels) <= widths[x.template] for x in listed)


def test_sklearn_crfsuite_views_and_the_transition_matrix():
    crf = _fitted(str(HMM))
    trans = crf.transition_features_
    labels = crf.model.layers[0].labels
    assert set(trans) == {(a, b) for a in labels for b in labels}
    info = crf.inspect(top=3)
    matrix = next(t["matrix"] for t in info["templates"] if t["name"] == "transition")
    for a, row in zip(matrix["rows"], matrix["weights"]):
        for b, v in zip(matrix["columns"], row):
            assert v == trans[(a, b)]
    state = crf.state_features_
    assert state and all(key[0].startswith("word[t]=") and key[1] in labels for key in state)
    emission = next(t for t in info["templates"] if t["name"] == "emission")
    assert emission["strongest"][0]["weight"] == max(state.values())
    assert len(emission["strongest"]) == 3


def test_cli_inspect_text_json_and_errors(capsys, tmp_path):
    model, _, _ = train_model(capsys, tmp_path, HMM, "--max-iter", "12")
    code, out, err = run(capsys, "inspect", model, "--top", "2")
    assert code == 0, err
    assert out.startswith("engine chain;") and "template transition:" in out
    assert "training: iterations 12" in out and "trainer lbfgs" in out
    training = out.splitlines()[[i for i, x in enumerate(out.splitlines())
                                 if x.startswith("training: ")][0]]
    seconds = training.split("seconds ")[1].split(",")[0]
    assert len(seconds.replace(".", "").lstrip("0")) <= 6   # (6 significant digits)
    assert "recoveries 0," in training    # (line-search recoveries: none on this model)
    assert "strongest:" in out and "most negative:" in out
    code, out, err = run(capsys, "inspect", model, "--json", "--template", "emission")
    info = json.loads(out)
    assert [t["name"] for t in info["templates"]] == ["emission"]
    assert info["training"]["iterations"] == 12
    assert np.isfinite(info["templates"][0]["strongest"][0]["weight"])
    code, _, err = run(capsys, "inspect", model, "--template", "emision")
    assert code == 2 and "no template 'emision'" in err and "emission" in err


def test_inspection_agrees_with_the_full_listing():
    """The arrays ``inspection`` works on give the sizes and the strongest
    and most negative weights the per-feature listing gives."""
    for spec in (str(HMM), CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="infer trp")):
        crf = _fitted(spec)
        listed = weights(crf.model, crf.weights)
        for t in crf.inspect(top=4)["templates"]:
            mine = [x for x in listed if x.template == t["name"]]
            assert t["features"] == len(mine)
            assert t["non_zero"] == sum(x.weight != 0 for x in mine)
            assert t["attributes"] == len({x.attribute for x in mine})
            if "matrix" in t:
                continue
            ranked = sorted(x.weight for x in mine)
            assert [x["weight"] for x in t["strongest"]] == ranked[::-1][:4]
            assert [x["weight"] for x in t["weakest"]] == [v for v in ranked if v < 0][:4]
            every = {(x.attribute, x.labels): x.weight for x in mine}
            for x in t["strongest"] + t["weakest"]:
                assert every[(x["attribute"], tuple(x["labels"]))] == x["weight"]


def test_inspect_takes_no_python_object_per_feature():
    """Inspecting 100,000 features holds arrays (48 bytes a feature), not a
    listing of them (some 300 bytes a feature)."""
    import tracemalloc

    words = [[[f"w{i}_{j}"] for j in range(10)] for i in range(2000)]
    labels = [["A", "B", "C", "D", "E"] * 2 for _ in range(2000)]
    spec = "columns word, label\noutput label\n" \
           "template emission: y[t] ~ word[t] (support = all)\n"
    crf = CRF(spec, max_iter=1, jobs=1).fit(words, labels)
    assert len(crf.weights) == 100_000
    crf.inspect(top=5)       # (compiled once)
    tracemalloc.start()
    try:
        info = crf.inspect(top=5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info["templates"][0]["features"] == 100_000
    assert peak < 60 * 100_000, peak   # (a listing of them: 24 MB)


def test_inspect_over_the_memory_budget_is_refused_with_the_estimate(capsys, tmp_path,
                                                                       monkeypatch):
    from fgl.report import inspect

    model, _, _ = train_model(capsys, tmp_path, HMM, "--max-iter", "3")
    monkeypatch.setattr(inspect, "BYTES_PER_FEATURE", 1 << 30)    # as if each took 1 GB
    code, out, err = run(capsys, "inspect", model, "--max-memory", "500M")
    assert code == 2 and out == "", err
    assert err.startswith(f"fgl: {model}: inspecting template 'emission' (") and \
        "features) would take about" in err and "more than the 500 MB memory budget (as " \
        "set by --max-memory); inspect another template with --template NAME" in err, err
    assert "Traceback" not in err and err.count("\n") == 1
    code, out, err = run(capsys, "inspect", model, "--max-memory", "1T")
    assert code == 0 and "template emission:" in out, err


@given(st.lists(st.sampled_from([-1.5, -0.0, 0.0, 0.25, 2.0, 3.0]), max_size=60),
       st.integers(0, 12))
@settings(max_examples=200, deadline=None)
def test_the_strongest_weights_are_the_first_of_a_full_sort(values, k):
    """(Ties by position: the first of equal weights is shown first.)"""
    from fgl.report.inspect import _top

    w = np.array(values, dtype=np.float64)
    expected = sorted(range(len(w)), key=lambda i: (-w[i], i))[:k]
    assert _top(w, k).tolist() == expected
