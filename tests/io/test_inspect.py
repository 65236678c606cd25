"""`fgl inspect` and ``fgl.io.inspect``: every feature listed once with its
weight and labels, for chain and factor-graph models; sklearn-crfsuite's
``state_features_`` / ``transition_features_``; the transition matrix; the
training log kept in the model file; and the CLI's text and JSON."""
from __future__ import annotations

import json

import numpy as np
from support.cli import run, train_model
from support.paths import HMM
from support.sentences import inputs_and_labels, segment_data
from support.specs import CHAIN_FORMAT, SKIP_EQUAL_WORDS

from fgl import CRF
from fgl.io.inspect import weights


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
