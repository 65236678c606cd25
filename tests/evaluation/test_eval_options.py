"""Evaluation options: segments as runs of one label, ignored labels, and
the token-level micro-average over chosen labels (the punctuation measure),
in Python and through `fgl eval`."""
from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import data_files, run, write_data
from support.paths import HMM

from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.evaluation.evaluate import chunks, evaluate
from fgl.io.conll import read_conll

SEGMENT_SPEC = """
columns word, label
output label
segments max 3 from change
template seg: s[j] ~ bias, word[u], word[v]
template trans: s[j-1..j]
train { sigma = 10  max_iter = 50 }
"""


def test_runs_are_maximal_runs_of_one_label():
    tags = ["O", "O", "A", "A", "B", "A", "O"]
    assert chunks(tags, "runs") == [("A", 2, 4), ("B", 4, 5), ("A", 5, 6)]
    assert chunks(tags, "runs", ignore=()) == [("O", 0, 2), ("A", 2, 4), ("B", 4, 5),
                                               ("A", 5, 6), ("O", 6, 7)]
    assert chunks([], "runs") == []


def test_runs_segment_scores_by_hand():
    gold = [["A", "A", "O", "B", "B", "B"], ["A", "O"]]
    pred = [["A", "A", "O", "B", "B", "O"], ["A", "A"]]
    # gold segments: A0-2, B3-6 | A0-1; pred: A0-2, B3-5 | A0-2 -> one correct (A0-2)
    r = evaluate(gold, pred, scheme="runs")
    assert r.scheme == "runs"
    assert (r.overall.correct, r.overall.predicted, r.overall.support) == (1, 3, 3)
    assert r.chunks["A"].correct == 1 and r.chunks["A"].predicted == 2
    assert r.chunks["B"].correct == 0
    assert r.overall.f1 == pytest.approx(100 / 3)
    # not ignoring O: runs of O are segments too
    r = evaluate(gold, pred, scheme="runs", ignore=())
    # gold: A, O, B | A, O = 5; pred: A, O, B, O | A = 5; correct A, O(2-3) = 2
    assert (r.overall.correct, r.overall.predicted, r.overall.support) == (2, 5, 5)
    # plain scores the same data token by token
    assert evaluate(gold, pred, scheme="plain").overall.support == 6


def test_auto_never_picks_runs_and_default_is_unchanged():
    gold, pred = [["A", "A"]], [["A", "A"]]
    assert evaluate(gold, pred).scheme == "plain"
    assert evaluate(gold, pred).overall.support == 2
    assert evaluate(gold, pred, scheme="runs").overall.support == 1


def test_ignore_drops_chunk_types_in_every_scheme():
    gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"]]
    r = evaluate(gold, pred, ignore=("O", "LOC", "ORG"))
    assert set(r.chunks) == {"PER"}
    assert (r.overall.correct, r.overall.predicted, r.overall.support) == (1, 1, 1)
    assert r.overall.f1 == 100.0
    # token labels are still all reported
    assert set(r.labels) == {"B-PER", "I-PER", "O", "B-LOC", "B-ORG"}
    # under plain, ignored labels are left out of the micro and macro averages
    r = evaluate([["x", "O", "y"]], [["x", "x", "y"]], "plain", ignore=("y",))
    assert (r.overall.correct, r.overall.predicted, r.overall.support) == (1, 2, 2)
    assert r.macro.f1 == pytest.approx((200 / 3 + 0) / 2)   # x: P 50 R 100; O: 0


def test_label_micro_average_by_hand_with_a_comma_label():
    gold = [["O", ",", "O", "."], ["O", "?", "O", ","]]
    pred = [["O", ",", ",", "O"], ["O", ".", "O", ","]]
    r = evaluate(gold, pred, labels=[",", ".", "?"])
    # gold , . ? tokens: 4; predicted: 4 (, , . ,); correct: 2 (the two commas in place)
    assert r.selected == (",", ".", "?")
    assert (r.micro.correct, r.micro.predicted, r.micro.support) == (2, 4, 4)
    assert r.micro.precision == r.micro.recall == r.micro.f1 == 50.0
    line = "labels , . ?: precision:  50.00%; recall:  50.00%; F1:  50.00 " \
           "(gold: 4; found: 4; correct: 2)"
    assert line in r.format().splitlines()
    only_comma = evaluate(gold, pred, labels=[","]).micro
    assert (only_comma.correct, only_comma.predicted, only_comma.support) == (2, 3, 2)
    assert only_comma.f1 == pytest.approx(2 * (200 / 3) * 100 / (200 / 3 + 100))


def test_no_labels_no_micro_line_and_empty_labels_refused():
    r = evaluate([["A"]], [["A"]])
    assert r.micro is None and not any(s.startswith("labels ") for s in r.format().splitlines())
    with pytest.raises(ValueError, match="at least one label"):
        evaluate([["A"]], [["A"]], labels=[])


def _plain_files(tmp_path: Path) -> tuple[Path, Path]:
    """The generated BIO data with prefixes dropped: plain labels whose runs
    are the segments."""
    def plain(path: Path) -> Path:
        sents = [Sentence([[w, t.split("-", 1)[-1]] for w, t in s.rows], s.lines, s.doc, s.file)
                 for s in read_conll(path)]
        return write_data(path.with_name("plain_" + path.name), sents)

    return tuple(plain(p) for p in data_files(tmp_path))


def _gold_and_pred(capsys, model: Path, test: Path) -> tuple[list[list[str]], list[list[str]]]:
    code, out, err = run(capsys, "tag", model, test)
    assert code == 0, err
    sents = [b.split("\n") for b in out.strip("\n").split("\n\n")]
    return ([[line.split()[1] for line in s] for s in sents],
            [[line.split()[2] for line in s] for s in sents])


def test_cli_eval_runs_ignore_and_labels(capsys, tmp_path):
    train, test = _plain_files(tmp_path)
    model = tmp_path / "m.fglm"
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", model, "-q")
    assert code == 0, err
    gold, pred = _gold_and_pred(capsys, model, test)

    code, out, err = run(capsys, "eval", model, test, "--scheme", "runs",
                         "--labels", "T0", "--label", "O")
    assert code == 0, err
    expected = evaluate(gold, pred, "runs", labels=["T0", "O"])
    assert out == expected.format() + "\n"
    assert out.startswith(f"processed {expected.tokens} tokens with "
                          f"{expected.overall.support} segments;")
    assert out.splitlines()[3].startswith("labels T0 O: precision:")
    assert expected.overall.support == sum(len(chunks(g, "runs")) for g in gold)

    code, out, err = run(capsys, "eval", model, test, "--scheme", "runs", "--ignore", "T1")
    assert code == 0, err
    assert out == evaluate(gold, pred, "runs", ignore=["T1"]).format() + "\n"
    segment_table = out.split("\n\n")[1].splitlines()
    assert segment_table[0].startswith("segment ")
    rows = {line.split()[0] for line in segment_table[2:-3]}
    assert rows == {"O", "T0"}

    code, out, _ = run(capsys, "eval", model, test)  # auto on plain labels: label scores
    assert out == evaluate(gold, pred, "plain").format() + "\n"
    assert out.startswith(f"processed {expected.tokens} tokens with 3 labels (averages "
                          "without O).")
    assert "chunk type" not in out and "segment" not in out


def test_cli_labels_with_commas_and_errors(capsys, tmp_path):
    train, test = data_files(tmp_path)
    model = tmp_path / "m.fglm"
    assert run(capsys, "train", HMM, "--train", train, "-o", model, "-q")[0] == 0
    code, out, err = run(capsys, "eval", model, test, "--label", ",", "--labels", "O,B-T0")
    assert code == 0, err
    assert out.splitlines()[3].startswith("labels , O B-T0: precision:")
    with pytest.raises(SystemExit):
        run(capsys, "eval", model, test, "--labels", ",")
    assert "--label ," in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(capsys, "eval", model, test, "--scheme", "xyz")
    capsys.readouterr()
    assert "--ignore LABEL" in run_help(capsys)


def run_help(capsys) -> str:
    with pytest.raises(SystemExit):
        run(capsys, "eval", "--help")
    return capsys.readouterr().out


def test_auto_scores_a_from_change_segment_model_by_runs(tmp_path):
    gold = [[["A", "A", "B", "O", "O"], ["B", "B", "O"]][i % 2] for i in range(20)]
    words = [[f"{t.lower()}{k % 2}" for k, t in enumerate(s)] for s in gold]
    X = [[[w] for w in s] for s in words]
    crf = CRF(SEGMENT_SPEC).fit(X, gold)
    r = crf.evaluate(X, gold)
    assert r.scheme == "runs" and r.overall.support == 30
    assert crf.evaluate(X, gold, scheme="plain").scheme == "plain"
    punct = crf.evaluate(X, gold, ignore=(), labels=["A"])
    assert punct.overall.support == 50 and punct.micro.support == 20
