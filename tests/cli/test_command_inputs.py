"""Where the command line reads from: `-` for standard input (tag, eval,
check, train), repeated `--train`/`--dev`, quoted globs, `_` columns a
spec skips, and the messages for a model file given as a spec and a spec
given as a model; and the labelled transition matrix of `fgl inspect`."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from support.cli import blocks, data_files, run
from support.paths import HMM

from fgl.api import CRF
from fgl.io.conll import read_conll


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def _split(path: Path, tmp_path: Path, after: int) -> tuple[Path, Path]:
    """``path`` cut into two files after its ``after``-th sentence."""
    text = path.read_text(encoding="utf-8")
    blocks_ = text.split("\n\n")
    a, b = tmp_path / "tr1.data", tmp_path / "tr2.data"
    a.write_text("\n\n".join(blocks_[:after]) + "\n\n", encoding="utf-8")
    b.write_text("\n\n".join(blocks_[after:]), encoding="utf-8")
    return a, b


@pytest.fixture
def trained(capsys, tmp_path):
    train, test = data_files(tmp_path)
    model = tmp_path / "m.fglm"
    assert run(capsys, "train", HMM, "--train", train, "-o", model, "-q")[0] == 0
    return model, train, test


# ---------------------------------------------------------------- standard input

def test_tag_eval_and_check_read_standard_input(capsys, monkeypatch, trained, tmp_path):
    model, train, test = trained
    code, from_file, err = run(capsys, "tag", model, test)
    assert code == 0, err
    _stdin(monkeypatch, test.read_bytes())
    code, out, err = run(capsys, "tag", model, "-")
    assert code == 0, err
    assert out == from_file and len(blocks(out)) == len(read_conll(test))
    _stdin(monkeypatch, test.read_bytes())
    code, out, err = run(capsys, "tag", model, "-", "-o", "-")
    assert code == 0 and out == from_file

    code, report, _ = run(capsys, "eval", model, test)
    _stdin(monkeypatch, test.read_bytes())
    code, out, err = run(capsys, "eval", model, "-")
    assert code == 0 and out == report
    _stdin(monkeypatch, from_file.encode("utf-8"))
    code, out, err = run(capsys, "eval", "--tagged", "-")
    assert code == 0 and out == report

    _stdin(monkeypatch, HMM.read_bytes())
    code, out, err = run(capsys, "check", "-")
    assert code == 0 and out == "<stdin>: ok\n"
    _stdin(monkeypatch, b"columns word, label\noutput label\ntemplate t: y[t] ~ wrd[t]\n")
    code, out, err = run(capsys, "check", "-")
    assert code == 1 and err.startswith("<stdin>:3:")

    # a data error in standard input names it
    _stdin(monkeypatch, b"w1 O\nw2 O extra\n")
    code, out, err = run(capsys, "tag", model, "-")
    assert code == 2 and err.startswith("fgl: <stdin>:2: expected 2 columns")


def test_train_reads_standard_input(capsys, monkeypatch, trained, tmp_path):
    model, train, _ = trained
    _stdin(monkeypatch, train.read_bytes())
    again = tmp_path / "again.fglm"
    code, _, err = run(capsys, "train", HMM, "--train", "-", "-o", again, "-q")
    assert code == 0, err
    np.testing.assert_array_equal(CRF.load(again).weights, CRF.load(model).weights)


# ---------------------------------------------------------------- several files, globs

def test_repeated_train_and_a_glob_concatenate(capsys, trained, tmp_path):
    model, train, test = trained
    a, b = _split(train, tmp_path, 13)
    assert len(read_conll(a)) == 13 and len(read_conll(a)) + len(read_conll(b)) == len(
        read_conll(train))
    whole = CRF.load(model).weights
    for argv in (["--train", a, "--train", b], ["--train", tmp_path / "tr*.data"]):
        out = tmp_path / "parts.fglm"
        code, _, err = run(capsys, "train", HMM, *argv, "-o", out, "-q")
        assert code == 0, err
        np.testing.assert_allclose(CRF.load(out).weights, whole, rtol=1e-10, atol=1e-12)
    # only the last file: a different model (so the test can tell)
    code, _, err = run(capsys, "train", HMM, "--train", b, "-o", tmp_path / "b.fglm", "-q")
    last = CRF.load(tmp_path / "b.fglm").weights
    assert code == 0 and (last.shape != whole.shape or not np.allclose(last, whole))


def test_repeated_dev_is_scored_as_one_file(capsys, trained, tmp_path):
    model, train, test = trained
    t1, t2 = _split(test, tmp_path, 7)
    code, out, err = run(capsys, "train", HMM, "--train", train, "--dev", t1, "--dev", t2,
                         "-o", tmp_path / "d.fglm", "-q")
    assert code == 0, err
    code, whole, _ = run(capsys, "eval", model, test)
    assert out == whole
    code, out, _ = run(capsys, "eval", model, tmp_path / "tr*.data")     # eval takes a glob
    assert out == whole


def test_an_unmatched_glob_is_an_error_naming_it(capsys, tmp_path):
    train, _ = data_files(tmp_path)
    code, out, err = run(capsys, "train", HMM, "--train", train, "--train",
                         tmp_path / "nothing*.txt", "-o", tmp_path / "x.fglm", "-q")
    assert code == 2 and "Traceback" not in err
    assert err.strip() == f"fgl: no data file matches '{tmp_path / 'nothing*.txt'}'"
    assert not (tmp_path / "x.fglm").exists()


def test_documents_do_not_span_two_files(tmp_path):
    (tmp_path / "a.txt").write_text("-DOCSTART-\n\nx O\n\ny O\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("z O\n\n-DOCSTART-\n\nw O\n", encoding="utf-8")
    crf = CRF(HMM)
    sents = crf.read([tmp_path / "a.txt", tmp_path / "b.txt"])
    assert [s.rows[0][0] for s in sents] == ["x", "y", "z", "w"]
    assert [s.doc for s in sents] == [0, 0, 1, 2]
    assert [s.file for s in sents] == [str(tmp_path / "a.txt")] * 2 + [
        str(tmp_path / "b.txt")] * 2


# ---------------------------------------------------------------- `_` columns

def _with_skipped(path: Path, out: Path) -> Path:
    """``path`` (word label) with two junk columns: ``junk word junk label``."""
    lines = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        f = line.split()
        lines.append(f"j{len(lines)} {f[0]} {len(lines) % 3} {f[1]}" if f else line)
    out.write_text("\n".join(lines), encoding="utf-8")
    return out


def test_underscore_columns_are_skipped(capsys, trained, tmp_path):
    model, train, test = trained
    spec = tmp_path / "skip.fgl"
    spec.write_text(HMM.read_text(encoding="utf-8").replace("columns word, label",
                                                            "columns _, word, _, label"),
                    encoding="utf-8")
    assert run(capsys, "check", spec)[0] == 0
    wide_train = _with_skipped(train, tmp_path / "wide_train.txt")
    wide_test = _with_skipped(test, tmp_path / "wide_test.txt")
    skip_model = tmp_path / "skip.fglm"
    code, _, err = run(capsys, "train", spec, "--train", wide_train, "-o", skip_model, "-q")
    assert code == 0, err
    np.testing.assert_array_equal(CRF.load(skip_model).weights, CRF.load(model).weights)
    code, out, err = run(capsys, "tag", skip_model, wide_test)
    _, plain, _ = run(capsys, "tag", model, test)
    assert [r[-1] for s in blocks(out) for r in s] == [r[-1] for s in blocks(plain) for r in s]
    assert {len(r) for s in blocks(out) for r in s} == {5}
    # a file without the label column: the junk columns are still there
    no_label = tmp_path / "no_label.txt"
    no_label.write_text("\n".join(" ".join(line.split()[:3]) for line in
                                  wide_test.read_text(encoding="utf-8").split("\n")),
                        encoding="utf-8")
    code, out2, err = run(capsys, "tag", skip_model, no_label)
    assert code == 0, err
    assert [r[-1] for s in blocks(out2) for r in s] == [r[-1] for s in blocks(out) for r in s]


@pytest.mark.parametrize("columns, rest, message", [
    ("word, _, label", "template e: y[t] ~ _[t]",
     "`_` marks a data column the spec skips; give the column a name"),
    ("word, _: number, label", "template e: y[t] ~ word[t]",
     "`_` skips a data column and is never read, so it takes no kind"),
    ("word, _, label", "template e: y[t] ~ word[t]\noutput _",
     "`_` names a data column the spec skips, so it cannot be the output"),
])
def test_underscore_column_mistakes(capsys, tmp_path, columns, rest, message):
    spec = tmp_path / "bad.fgl"
    spec.write_text(f"columns {columns}\noutput label\n{rest}\n", encoding="utf-8")
    code, out, err = run(capsys, "check", spec)
    assert code == 1 and message in err, err


def test_underscore_is_refused_for_graph_input(capsys, tmp_path):
    spec = tmp_path / "g.fgl"
    spec.write_text("input graph\ncolumns words, _, label\noutput label\n"
                    "template n: y[a] ~ words[a]\n", encoding="utf-8")
    code, out, err = run(capsys, "check", spec)
    assert code == 1 and "`_` skips a column of a column file; graph input" in err


# ---------------------------------------------------------------- file kinds

def test_a_model_where_a_spec_is_expected(capsys, trained, tmp_path):
    model, train, _ = trained
    expected = (f"fgl: {model} is an fgl model file, not a spec: a spec is the .fgl text a "
                "model is trained from; ")
    for argv in (["check", model], ["explain", model], ["explain", model, "--train", train],
                 ["train", model, "--train", train, "-o", tmp_path / "x.fglm"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and err.startswith(expected), (argv, err)
        assert "Traceback" not in err and "codec" not in err


def test_a_spec_where_a_model_is_expected(capsys, trained, tmp_path):
    _, train, test = trained
    copy = tmp_path / "ner.fglm"          # a spec under a model's name is still a spec
    copy.write_bytes(HMM.read_bytes())
    for spec in (HMM, copy):
        for argv in (["tag", spec, test], ["eval", spec, test], ["inspect", spec],
                     ["compare", spec, spec, test]):
            code, out, err = run(capsys, *argv)
            assert code == 2 and out == "", (argv, err)
            assert err == (f"fgl: {spec} is a spec (text), not a model file: train it first "
                           f"with `fgl train {spec} --train DATA -o MODEL.fglm`, then give "
                           "MODEL.fglm\n"), err
    data = tmp_path / "data.fglm"         # text that is not a spec: not called one
    data.write_bytes(test.read_bytes())
    code, out, err = run(capsys, "tag", data, test)
    assert code == 2 and "not an fgl model file" in err and "a spec" not in err


# ---------------------------------------------------------------- inspect

def test_inspect_labels_the_transition_matrix(capsys, trained):
    model, _, _ = trained
    code, out, err = run(capsys, "inspect", model)
    assert code == 0, err
    lines = out.split("\n")
    at = lines.index("  from (rows) → to (columns):")
    assert lines[at - 1].startswith("template transition:")
    crf = CRF.load(model)
    labels = lines[at + 1].split()
    row = lines[at + 2].split()             # the first label's row: transitions from it
    trans = crf.transition_features_
    assert [float(v) for v in row[1:]] == pytest.approx(
        [round(trans[(row[0], b)], 3) for b in labels], abs=1e-3)
    # the data tell direction apart: I-X follows B-X, not the other way round
    b_i = trans[("B-T0", "I-T0")]
    assert b_i > trans[("I-T0", "B-T0")]
    info = crf.inspect()
    assert next(t for t in info["templates"] if "matrix" in t)["matrix"]["reading"] == \
        "from (rows) → to (columns)"
