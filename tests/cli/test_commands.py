"""The `fgl` command line: check, train, tag, eval and explain, driven
in-process through ``fgl.cli.main`` on generated CoNLL data."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from support.cli import blocks, data_files, run, train_model, write_data
from support.paths import HMM, REPO, STDLIB

from fgl.cli import main
from fgl.data.sentence import Sentence
from fgl.io.conll import read_conll
from fgl.modelfile.model_files import load_model

# ---------------------------------------------------------------- check

@pytest.mark.parametrize("spec", sorted(STDLIB.glob("*.fgl")), ids=lambda p: p.name)
def test_check_accepts_every_stdlib_spec(capsys, spec):
    code, out, err = run(capsys, "check", spec)
    assert code == 0, err
    assert out.strip() == f"{spec}: ok"
    assert err == ""


def test_check_reports_every_error_with_its_location(capsys, tmp_path):
    spec = tmp_path / "two.fgl"
    spec.write_text("columns word, label\noutput label\nobs a = wrd[t]\n"
                    "template s: y[t] ~ a, nope\n", encoding="utf-8")
    code, out, err = run(capsys, "check", spec)
    assert code == 1
    assert out == ""
    lines = err.strip().split("\n")
    assert len(lines) == 2, err
    assert lines[0].startswith(f"{spec}:3:9: unknown column 'wrd'")
    assert lines[1].startswith(f"{spec}:4:23: undefined observation 'nope'")
    assert "Traceback" not in err


# ---------------------------------------------------------------- train / tag / eval

def test_train_tag_eval_round_trip(capsys, tmp_path):
    model, train, test = train_model(capsys, tmp_path)

    code, out, err = run(capsys, "tag", model, test)
    assert code == 0, err
    tagged = blocks(out)
    gold = read_conll(test)
    assert len(tagged) == len(gold)
    labels = {y for s in read_conll(train) for y in s.column(-1)}
    for sent, rows in zip(gold, tagged):
        assert len(rows) == len(sent.rows)
        for orig, row in zip(sent.rows, rows):
            assert row[:-1] == orig                 # input and gold kept
            assert row[-1] in labels                # one predicted label appended
    # sentences are separated by exactly one blank line
    assert "\n\n\n" not in out
    assert out.count("\n\n") == len(gold)

    code, out, err = run(capsys, "eval", model, test)
    assert code == 0, err
    assert "accuracy:" in out and "F1:" in out
    acc = float(out.split("accuracy:")[1].split("%")[0])
    assert 50.0 < acc <= 100.0                     # trained, not random
    assert "B-T0" in out and "overall" in out


def test_tag_output_file_matches_stdout(capsys, tmp_path):
    model, _, test = train_model(capsys, tmp_path)
    _, stdout_text, _ = run(capsys, "tag", model, test)
    dest = tmp_path / "tagged.txt"
    code, out, err = run(capsys, "tag", model, test, "-o", dest)
    assert code == 0, err
    assert out == ""
    assert dest.read_text(encoding="utf-8") == stdout_text


def test_train_with_dev_prints_an_evaluation(capsys, tmp_path):
    train, test = data_files(tmp_path)
    code, out, err = run(capsys, "train", HMM, "--train", train, "--dev", test,
                         "-o", tmp_path / "m.fglm", "-q")
    assert code == 0, err
    assert "accuracy:" in out and "precision:" in out and "F1:" in out
    assert f"processed {sum(len(s) for s in read_conll(test))} tokens" in out


def test_max_iter_override(capsys, tmp_path):
    model, _, _ = train_model(capsys, tmp_path, HMM, "--max-iter", "2")
    _, _, meta = load_model(model)
    assert 1 <= meta["iterations"] <= 2


def test_sigma_override_reaches_every_template(capsys, tmp_path):
    model, _, _ = train_model(capsys, tmp_path, HMM, "--sigma", "0.25")
    m, weights, _ = load_model(model)
    assert [t.sigma for t in m.templates] == [0.25, 0.25]
    assert set(m.feat_sigma.tolist()) == {0.25}
    # a tight prior keeps the weights small (the spec's sigma is 10)
    (tmp_path / "loose").mkdir()
    loose, _, _ = train_model(capsys, tmp_path / "loose", HMM)
    assert abs(weights).max() < abs(load_model(loose)[1]).max()


def test_tol_override_stops_earlier(capsys, tmp_path):
    train, _ = data_files(tmp_path)
    iters = {}
    for tol in ("1e-12", "0.1"):
        model = tmp_path / f"m{tol}.fglm"
        code, _, err = run(capsys, "train", HMM, "--train", train, "-o", model, "-q",
                           "--tol", tol, "--max-iter", "80")
        assert code == 0, err
        iters[tol] = load_model(model)[2]["iterations"]
        if tol == "0.1":
            assert "less than 0.1" in err
    assert iters["0.1"] < iters["1e-12"]


def test_progress_lines_unless_quiet(capsys, tmp_path):
    train, _ = data_files(tmp_path)
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", tmp_path / "a.fglm",
                       "--max-iter", "3")
    assert code == 0
    progress = [line for line in err.split("\n") if line.startswith("iter ")]
    assert len(progress) == 3
    assert "objective" in progress[0] and "|grad|" in progress[0]
    assert "compiled in" in err
    # what trains and why, before the first iteration; where the time went, after the last
    lines = err.split("\n")
    first = lines.index(progress[0])
    assert lines[first - 4].startswith("trainer: lbfgs, maximum likelihood")
    assert lines[first - 3] == "  chosen: the default (`trainer = lbfgs`), l1 = 0"
    assert lines[first - 2].startswith("engine: exact pattern-sparse chain")
    account = next(line for line in lines if line.startswith("time: "))
    assert lines.index(account) > lines.index(progress[-1])
    assert "compile " in account and "4 at iterates" in account and "optimiser" in account

    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", tmp_path / "b.fglm",
                       "--max-iter", "3", "-q")
    assert code == 0
    assert not [line for line in err.split("\n") if line.startswith("iter ")]
    assert "compiled in" not in err
    assert "wrote" in err                    # the one-line summary stays


def test_tag_input_column_only(capsys, tmp_path):
    model, _, test = train_model(capsys, tmp_path)
    words_only = [Sentence([[r[0]] for r in s.rows], s.lines, s.doc, s.file)
                  for s in read_conll(test)]
    plain = write_data(tmp_path / "plain.txt", words_only)
    code, out, err = run(capsys, "tag", model, plain)
    assert code == 0, err
    tagged = blocks(out)
    assert [len(s) for s in tagged] == [len(s) for s in words_only]
    for sent, rows in zip(words_only, tagged):
        assert all(len(row) == 2 for row in rows)
        assert [row[0] for row in rows] == [r[0] for r in sent.rows]
    # same predictions as when the gold column is present
    _, with_gold, _ = run(capsys, "tag", model, test)
    assert [[r[-1] for r in s] for s in tagged] == [[r[-1] for r in s] for s in blocks(with_gold)]


# ---------------------------------------------------------------- explain

def test_explain_with_training_data(capsys, tmp_path):
    train, _ = data_files(tmp_path)
    code, out, err = run(capsys, "explain", STDLIB / "high_order.fgl", "--train", train)
    assert code == 0, err
    assert "engine: exact pattern-sparse chain" in out
    assert "labels (n = 5): B-T0 B-T1 I-T0 I-T1 O" in out
    assert "forward states |P| = " in out and "backward states |S| = " in out
    assert "features: " in out
    assert "cost of one pass" in out
    assert "training data: 40 sequences, 480 tokens" in out
    assert "high_order: window 4" in out


def test_explain_without_data_lists_templates_and_hints(capsys):
    code, out, err = run(capsys, "explain", STDLIB / "high_order.fgl")
    assert code == 0, err
    assert "3 observation functions, 2 templates" in out
    assert "  state:" in out and "  high_order: y[t-3..t]" in out
    assert "add --train FILE" in out
    assert "engine: exact pattern-sparse chain" in out and "why:" in out


def test_explain_without_data_shows_single_label_window_plainly(capsys):
    _, out, _ = run(capsys, "explain", HMM)
    assert "emission: y[" in out
    assert "t+0" not in out


# ---------------------------------------------------------------- encodings

def test_latin1_round_trip(capsys, tmp_path):
    words = ["café", "señor", "über", "naïve", "plain", "garçon"]
    rows = [[[w, "O" if w == "plain" else "B-X"] for w in words[i:] + words[:i]]
            for i in range(len(words))]
    sents = [Sentence(r, list(range(1, len(r) + 1)), 0, "x") for r in rows]
    data = write_data(tmp_path / "latin.txt", sents, encoding="latin-1")
    assert "café".encode("latin-1") in data.read_bytes()
    model = tmp_path / "m.fglm"
    code, _, err = run(capsys, "train", HMM, "--train", data, "-o", model, "-q",
                       "--encoding", "latin-1")
    assert code == 0, err
    code, out, err = run(capsys, "tag", model, data, "--encoding", "latin-1",
                         "--output-encoding", "utf-8")
    assert code == 0, err
    tagged = blocks(out)
    assert [r[0] for r in tagged[0]] == words
    assert all(r[-1] == ("O" if r[0] == "plain" else "B-X") for s in tagged for r in s)
    # without --output-encoding the output is in the input's encoding
    dest = tmp_path / "tagged.txt"
    code, _, err = run(capsys, "tag", model, data, "--encoding", "latin-1", "-o", dest)
    assert code == 0, err
    assert dest.read_bytes().decode("latin-1") == out


# ---------------------------------------------------------------- help and the console script

def test_top_level_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("train", "tag", "eval", "check", "explain"):
        assert cmd in out


def test_train_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--train", "--dev", "--output", "--sigma", "--max-iter", "--tol", "--quiet",
                "--encoding"):
        assert opt in out


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_installed_console_script():
    exe = shutil.which("fgl")
    if exe is None:
        pytest.skip("the fgl console script is not installed")
    proc = subprocess.run([exe, "check", str(HMM)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ok" in proc.stdout


def test_module_entry_point_exit_code(tmp_path):
    """`python -m fgl.cli` turns main()'s return value into the exit status."""
    bad = tmp_path / "bad.fgl"
    bad.write_text("columns word, label\noutput label\ntemplate s: y[t] ~ nope\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "fgl.cli", "check", str(bad)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 1
    assert f"{bad}:3:20: undefined observation 'nope'" in proc.stderr
