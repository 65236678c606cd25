"""What a trained model is given must be shaped as what it was trained on
(issue 25, item 9): vectors of the training's dimension, and a file to tag
whose label column would be read as an input is refused with the column
names; `fgl check` refuses the train settings a trainer does not read with
the message training gives."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from fgl.api import CRF
from fgl.errors import DataError, SpecError
from fgl.lang.parser import parse_spec
from fgl.learn.trainers import setting_errors

FGL = [sys.executable, "-m", "fgl.cli"]

VECTORS = """columns word, v:vector, label
output label
template e: y[t] ~ word[t], value(v[t]), value(v[t-1]) & word[t]
template tr: y[t-1..t]
"""
CHUNKS = """columns word, pos, chunk
output chunk
template e: y[t] ~ word[t], pos[t]
template tr: y[t-1..t]
"""
TRAIN_CHUNKS = "He PRP B-NP\nran VBD B-VP\n\nShe PRP B-NP\nsat VBD B-VP\nthe DT B-NP\n\n"


def run(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.perf_counter()
    r = subprocess.run([*FGL, *args], capture_output=True, text=True, timeout=120)
    return r, time.perf_counter() - t0


@pytest.fixture(scope="module")
def vector_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("vectors")
    spec = d / "spec.fgl"
    spec.write_text(VECTORS)
    (d / "train.txt").write_text("a 0.1,0.2 A\nb 0.3,-1 B\n\nc 1,2 A\nd 0,0 B\n\n")
    r, _ = run("train", str(spec), "--train", str(d / "train.txt"), "-o", str(d / "m.fglm"),
               "-q")
    assert r.returncode == 0, r.stderr
    return d


def test_vectors_of_another_dimension_are_refused_before_reading(vector_model):
    d = vector_model
    huge = ",".join(["0.5"] * 200_000)
    (d / "huge.txt").write_text("".join(f"a {huge}\n" for _ in range(5)) + "\n")
    r, took = run("tag", str(d / "m.fglm"), str(d / "huge.txt"))
    assert r.returncode == 2 and took < 15, (took, r.stderr)
    assert r.stderr.strip() == (f"fgl: {d / 'huge.txt'}:1: column 'v' holds a vector of "
                                "200,000 numbers; the model was trained on vectors of 2: give "
                                "it vectors of that dimension")
    crf = CRF.load(d / "m.fglm")
    with pytest.raises(DataError, match="holds a vector of 3 numbers; the model was trained "
                                        "on vectors of 2"):
        crf.predict([[["a", "1,2"], ["b", "1,2,3"]]])
    assert crf.predict([[["a", "1,2"], ["b", "0,0"]]]) == [["A", "B"]]


@pytest.fixture(scope="module")
def chunk_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("chunks")
    spec = d / "spec.fgl"
    spec.write_text(CHUNKS)
    (d / "train.txt").write_text(TRAIN_CHUNKS)
    r, _ = run("train", str(spec), "--train", str(d / "train.txt"), "-o", str(d / "m.fglm"),
               "-q")
    assert r.returncode == 0, r.stderr
    return d


def test_a_label_column_read_as_an_input_is_refused(chunk_model):
    d = chunk_model
    (d / "word_chunk.txt").write_text("He B-NP\nran B-VP\n\n")
    r, _ = run("tag", str(d / "m.fglm"), str(d / "word_chunk.txt"))
    assert r.returncode == 2, r.stdout
    assert r.stderr.strip() == (
        f"fgl: {d / 'word_chunk.txt'}:1: this file has 2 columns and the model reads 3 (word "
        "pos chunk): without the label column chunk its column 2 would be read as 'pos', but "
        "every value there is a label of chunk (B-NP, B-VP) that training never saw in 'pos'; "
        "give the file its 'pos' column (a file to tag holds word pos, or all 3 columns)")
    assert "Traceback" not in r.stderr
    # a file without labels, and one with all three columns, are read as before
    (d / "word_pos.txt").write_text("He PRP\nran VBD\n\n")
    r, _ = run("tag", str(d / "m.fglm"), str(d / "word_pos.txt"))
    assert r.returncode == 0 and r.stdout.split() == ["He", "PRP", "B-NP", "ran", "VBD", "B-VP"]
    (d / "all.txt").write_text("He PRP B-NP\nran VBD B-VP\n\n")
    r, _ = run("tag", str(d / "m.fglm"), str(d / "all.txt"))
    assert r.returncode == 0, r.stderr


def test_an_input_column_that_holds_labels_in_training_is_read_as_before(tmp_path):
    """A stacked tagger's input column holds another tagger's labels; the
    model saw them there in training, so a file of word and that column is
    not taken for a shifted one."""
    stacked = CHUNKS.replace("pos", "guess")
    crf = CRF(stacked, max_iter=30).fit(
        [[["He", "B-NP"], ["ran", "B-VP"]], [["She", "B-NP"], ["sat", "B-VP"]]],
        [["B-NP", "B-VP"], ["B-NP", "B-VP"]])
    assert crf.predict([[["He", "B-NP"], ["sat", "B-VP"]]]) == [["B-NP", "B-VP"]]


@pytest.mark.parametrize("block, key, trainer", [
    ("trainer = perceptron  sigma = 3", "sigma", "perceptron"),
    ("trainer = perceptron  max_iter = 5", "max_iter", "perceptron"),
    ("trainer = perceptron  tol = 1e-3", "tol", "perceptron"),
    ("trainer = perceptron  l1 = 1", "l1", "perceptron"),
    ("epochs = 5", "epochs", "lbfgs (the default)"),
    ("batch = 2  sigma = 3", "batch", "lbfgs (the default)"),
])
def test_check_refuses_what_the_trainer_does_not_read_as_training_does(block, key, trainer):
    text = CHUNKS + f"train {{ {block} }}\n"
    found = setting_errors(parse_spec(text, "<spec>"))   # (what `fgl check` adds)
    assert len(found) == 1
    assert f"train: `{key}` is not read by trainer {trainer}" in str(found[0])
    assert (found[0].line, found[0].col) == (5, 9 + text.splitlines()[4][8:].index(key))
    with pytest.raises(SpecError) as trained:
        CRF(text).fit([[["a", "X"]]], [["B-NP"]])
    assert str(trained.value) == str(found[0])
