"""The first-run note from Python (``fgl.CRF``, ``fgl.CRFEstimator``): on
standard error when someone watches it (a terminal, or a notebook), once
per process and task, verbose or not (``fgl.engines.first_run``)."""
from __future__ import annotations

import io
import sys

import pytest

import fgl
from fgl.engines import first_run

SPEC = """columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
train { max_iter = 5 }
"""
X, Y = [[["a"], ["b"]], [["b"], ["a"], ["a"]]], [["A", "B"], ["B", "A", "A"]]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def cold(monkeypatch):
    """Every cache cold and nothing noted yet; ``cold()`` makes standard
    error a terminal (in the test itself: pytest sets its own between a
    fixture and the test) and returns it."""
    monkeypatch.setattr(first_run, "_noted", set())
    monkeypatch.setattr(first_run, "is_cold", lambda engine, task: True)

    def terminal() -> Terminal:
        term = Terminal()
        monkeypatch.setattr(sys, "stderr", term)
        return term
    return terminal


def test_fit_and_predict_note_once_each_without_verbose(cold):
    cold = cold()
    crf = fgl.CRF(SPEC).fit(X, Y)            # (verbose is False)
    assert cold.getvalue().count("compiling fgl's kernels") == 1
    assert "the chain engine's training" in cold.getvalue()
    crf.predict(X)
    crf.predict_marginals(X)
    assert cold.getvalue().count("the chain engine's tagging") == 1
    fgl.CRF(SPEC).fit(X, Y).predict(X)       # once per process
    assert cold.getvalue().count("compiling fgl's kernels") == 2


def test_the_estimator_notes_too(cold):
    cold = cold()
    dicts = [[{"w": w[0]} for w in seq] for seq in X]
    fgl.CRFEstimator(max_iter=5).fit(dicts, Y).predict(dicts)
    text = cold.getvalue()
    assert text.count("engine's training") == 1 and text.count("engine's tagging") == 1


def test_a_notebook_is_watched_a_log_is_not(monkeypatch):
    assert not first_run.watched(io.StringIO())
    assert first_run.watched(Terminal())
    monkeypatch.setitem(sys.modules, "ipykernel", object())   # (as in Jupyter)
    assert first_run.watched(io.StringIO())
