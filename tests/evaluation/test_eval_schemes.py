"""Evaluation schemes (bio, iob1, iobes, io, plain, runs, auto), word and
sequence accuracy, micro/macro averages, the confusion matrix as text and
picture, and every layer of a multi-layer model — in Python and through
`fgl eval`, each against hand-worked or directly computed figures."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.cli import blocks, data_files, run, write_data
from support.paths import HMM, REPO
from support.sentences import two_layer_sentences

from fgl.api import CRF
from fgl.data.schemes import chunks, resolve
from fgl.data.sentence import Sentence
from fgl.errors import FglError
from fgl.evaluation.confusion import OTHER, format_confusion, matrix, order
from fgl.evaluation.evaluate import TagError, evaluate
from fgl.io.conll import read_conll


def approx(x):
    return pytest.approx(x, abs=1e-9)


# ---------------------------------------------------------------- chunks, scheme by scheme

def test_bio_chunks_and_a_stray_i_read_as_conlleval_does():
    tags = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "I-LOC", "I-LOC"]
    assert chunks(tags, "bio") == [("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 7)]
    # I- after O, after another type, or first: a chunk starts there (conlleval)
    assert chunks(["O", "I-PER", "I-PER", "I-LOC", "B-LOC"], "bio") == [
        ("PER", 1, 3), ("LOC", 3, 4), ("LOC", 4, 5)]
    assert chunks(["I-X"], "iob2") == [("X", 0, 1)]


def test_iob1_chunks_i_starts_and_b_between_same_type_chunks():
    tags = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-PER", "B-PER", "I-PER"]
    assert chunks(tags, "iob1") == [("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5),
                                    ("PER", 5, 6), ("PER", 6, 8)]
    # I- after O starts a chunk; an I- right after the same type continues it
    assert chunks(["O", "I-ORG", "I-ORG", "O", "I-ORG"], "iob1") == [
        ("ORG", 1, 3), ("ORG", 4, 5)]


def test_iobes_chunks_single_end_and_stray_end():
    tags = ["S-PER", "B-LOC", "I-LOC", "E-LOC", "O", "E-ORG", "B-PER", "E-PER", "S-PER"]
    assert chunks(tags, "iobes") == [("PER", 0, 1), ("LOC", 1, 4), ("ORG", 5, 6),
                                     ("PER", 6, 8), ("PER", 8, 9)]
    # an E- of another type after B-: the chunk closes and E- stands alone
    assert chunks(["B-X", "I-X", "E-Y"], "iobes") == [("X", 0, 2), ("Y", 2, 3)]
    # E- after E- of the same type is a chunk of its own; a B- run without E- closes at O
    assert chunks(["B-X", "E-X", "E-X", "B-X", "I-X", "O"], "iobes") == [
        ("X", 0, 2), ("X", 2, 3), ("X", 3, 5)]
    # BILOU: L- ends, U- is a unit
    assert chunks(["U-X", "B-Y", "I-Y", "L-Y"], "bilou") == [("X", 0, 1), ("Y", 1, 4)]


def test_io_chunks_are_maximal_runs_of_one_type():
    tags = ["I-PER", "I-PER", "I-LOC", "O", "I-PER", "O", "O", "I-LOC", "I-LOC"]
    assert chunks(tags, "io") == [("PER", 0, 2), ("LOC", 2, 3), ("PER", 4, 5), ("LOC", 7, 9)]


def test_plain_and_runs_chunks():
    tags = ["N", "N", "O", "V"]
    assert chunks(tags, "plain") == [("N", 0, 1), ("N", 1, 2), ("V", 3, 4)]
    assert chunks(tags, "runs") == [("N", 0, 2), ("V", 3, 4)]


@pytest.mark.parametrize("scheme, tags, bad, reader", [
    ("bio", ["B-X", "E-X"], "E-X", "iobes"),
    ("iob1", ["I-X", "S-X"], "S-X", "iobes"),
    ("io", ["I-X", "B-X"], "B-X", "bio"),
    ("iobes", ["B-X", "PER"], "PER", "plain or runs"),
    ("bio", ["O", "NN"], "NN", "plain or runs"),
])
def test_a_tag_the_scheme_does_not_read_is_refused_where_it_is(scheme, tags, bad, reader):
    with pytest.raises(TagError) as e:
        evaluate([["O", "O"], tags], [["O", "O"], ["O", "O"]], scheme)
    where = f"gold[1][{tags.index(bad)}]"
    assert str(e.value).startswith(f"scheme {scheme} reads ")
    assert f"{where} is {bad!r}, which {reader} reads" in str(e.value)
    assert isinstance(e.value, ValueError)
    with pytest.raises(TagError, match=r"pred\[0\]\[1\]"):
        evaluate([["O", "O"]], [["O", bad]], scheme)
    # the forgiving readers take it
    evaluate([tags], [tags], "iob")
    evaluate([tags], [tags], "plain")


def test_auto_chooses_from_the_tags():
    assert resolve("auto", [["B-A", "I-A", "O", "B-B"]]) == "bio"
    assert resolve("auto", [["O", "I-A", "I-A", "B-A"]]) == "iob1"       # I- after O
    assert resolve("auto", [["B-A", "I-A", "I-B"]]) == "iob1"             # I- after another type
    assert resolve("auto", [["I-A", "O"]]) == "iob1"                      # I- first
    assert resolve("auto", [["B-A", "E-A", "S-B"]]) == "iobes"
    assert resolve("auto", [["U-A", "O"]]) == "iobes"
    assert resolve("auto", [["NN", "VB", "O"]]) == "plain"
    assert resolve("auto", [["PER", "B-LOC"]]) == "iob"                   # a mix
    # well-formed BIO gold decides even when the predictions start a chunk with I-
    assert resolve("auto", [["B-A", "O"]], [["O", "I-A"]]) == "bio"
    assert resolve("auto", [["O", "O"]], [["O", "I-A"]]) == "iob1"        # gold says nothing
    assert resolve("AUTO", [["A"]], [["B-A"]]) == "iob"
    assert resolve("IOB2", []) == "bio" and resolve("iob", []) == "iob"
    with pytest.raises(ValueError, match="unknown scheme 'xyz'; expected one of auto, bio"):
        resolve("xyz", [])


# ---------------------------------------------------------------- scores by hand

def test_iob1_scores_by_hand_as_conlleval_prints_them():
    gold = [["I-PER", "I-PER", "B-PER", "O", "I-LOC"],
            ["O", "I-ORG", "I-ORG", "O", "I-MISC"],
            ["O", "O"]]
    pred = [["I-PER", "I-PER", "I-PER", "O", "I-LOC"],
            ["O", "I-ORG", "I-ORG", "O", "O"],
            ["O", "O"]]
    r = evaluate(gold, pred)
    assert r.scheme == "iob1"
    # gold: PER0-2 PER2-3 LOC4-5 | ORG1-3 MISC4-5 (5); pred: PER0-3 LOC4-5 | ORG1-3 (3)
    assert (r.overall.support, r.overall.predicted, r.overall.correct) == (5, 3, 2)
    assert r.overall.precision == approx(200 / 3) and r.overall.recall == approx(40.0)
    assert r.overall.f1 == approx(50.0)
    assert (r.chunks["PER"].support, r.chunks["PER"].predicted, r.chunks["PER"].correct) \
        == (2, 1, 0)
    assert r.chunks["MISC"].predicted == 0 and r.chunks["LOC"].f1 == approx(100.0)
    # macro: mean over PER (0), LOC (100), ORG (100), MISC (0)
    assert r.macro.f1 == approx(50.0) and r.macro.precision == approx(50.0)
    # 10 of 12 tokens right; 1 of 3 sequences entirely right
    assert r.accuracy == approx(250 / 3) and r.tokens == 12
    assert r.sequence_accuracy == approx(100 / 3) and r.sequences == 3
    lines = r.format().splitlines()
    assert lines[0] == "processed 12 tokens with 5 chunks; found: 3 chunks; correct: 2."
    assert lines[1] == "accuracy:  83.33%; precision:  66.67%; recall:  40.00%; F1:  50.00"
    assert lines[2] == ("sequence accuracy:  33.33% (1 of 3 sequences with every tag right); "
                        "scheme iob1")
    assert "macro           50.00    50.00    50.00       5       3        2" in lines


def test_iobes_scores_by_hand():
    gold = [["B-X", "E-X", "S-Y", "O", "S-X"]]
    pred = [["B-X", "E-X", "B-Y", "E-Y", "S-X"]]
    r = evaluate(gold, pred)
    assert r.scheme == "iobes"
    # gold X0-2 Y2-3 X4-5; pred X0-2 Y2-4 X4-5: two right
    assert (r.overall.support, r.overall.predicted, r.overall.correct) == (3, 3, 2)
    assert r.overall.f1 == approx(200 / 3)
    assert r.chunks["Y"].f1 == 0.0 and r.chunks["X"].f1 == approx(100.0)
    assert r.accuracy == approx(60.0) and r.sequence_accuracy == 0.0


def test_io_merges_adjacent_same_type_chunks_where_bio_does_not():
    gold = [["I-A", "I-A", "O"]]
    pred = [["I-A", "O", "O"]]
    assert evaluate(gold, pred, "io").overall.correct == 0
    assert evaluate([["B-A", "B-A"]], [["B-A", "I-A"]], "bio").overall.correct == 0


def _direct_label_scores(gold, pred, label):
    """P, R, F1 (percent) of one label, counted token by token."""
    pairs = [(a, b) for g, p in zip(gold, pred) for a, b in zip(g, p)]
    tp = sum(a == label and b == label for a, b in pairs)
    n_pred = sum(b == label for _, b in pairs)
    n_gold = sum(a == label for a, _ in pairs)
    p = 100 * tp / n_pred if n_pred else 0.0
    r = 100 * tp / n_gold if n_gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0), tp, n_pred, n_gold


def test_plain_micro_and_macro_against_a_direct_computation():
    rng = np.random.default_rng(7)
    names = ["NN", "VB", "DT", "O", "JJ"]
    gold = [[names[k] for k in rng.integers(5, size=int(rng.integers(1, 9)))] for _ in range(40)]
    pred = [[t if rng.random() < 0.6 else names[rng.integers(4)] for t in s] for s in gold]
    r = evaluate(gold, pred)
    assert r.scheme == "plain" and r.chunks == {}
    kept = ["DT", "JJ", "NN", "VB"]                     # O is ignored by default
    direct = {t: _direct_label_scores(gold, pred, t) for t in kept}
    for t, (p, rec, f, tp, n_pred, n_gold) in direct.items():
        s = r.labels[t]
        assert (s.precision, s.recall, s.f1) == (approx(p), approx(rec), approx(f))
        assert (s.correct, s.predicted, s.support) == (tp, n_pred, n_gold)
    tp, n_pred, n_gold = (sum(d[k] for d in direct.values()) for k in (3, 4, 5))
    assert r.overall.precision == approx(100 * tp / n_pred)
    assert r.overall.recall == approx(100 * tp / n_gold)
    assert r.macro.f1 == approx(sum(d[2] for d in direct.values()) / 4)
    assert r.macro.precision == approx(sum(d[0] for d in direct.values()) / 4)
    # nothing ignored: micro P = R = F1 = token accuracy
    everything = evaluate(gold, pred, ignore=())
    assert everything.overall.f1 == approx(everything.accuracy)
    assert everything.overall.precision == approx(everything.accuracy)
    metrics = pytest.importorskip("sklearn.metrics")
    flat_g = [t for s in gold for t in s]
    flat_p = [t for s in pred for t in s]
    for avg, scores in (("micro", r.overall), ("macro", r.macro)):
        p, rec, f, _ = metrics.precision_recall_fscore_support(
            flat_g, flat_p, labels=kept, average=avg, zero_division=0)
        assert (100 * p, 100 * rec, 100 * f) == (approx(scores.precision),
                                                 approx(scores.recall), approx(scores.f1))


def test_plain_report_has_labels_and_averages_but_no_chunk_table():
    r = evaluate([["N", "V", "O", "N"], ["V"]], [["N", "N", "O", "N"], ["V"]])
    text = r.format()
    lines = text.splitlines()
    assert lines[0] == "processed 5 tokens with 3 labels (averages without O)."
    # N: P 2/3 R 1 F1 .8; V: P 1 R 1/2 F1 2/3; micro over N, V: 3 right of 4 and 4
    assert lines[1] == "accuracy:  80.00%; micro F1:  75.00; macro F1:  73.33"
    assert lines[2].startswith("sequence accuracy:  50.00% (1 of 2 sequences")
    assert "chunk" not in text
    assert "micro        75.00    75.00    75.00       4       4        3" in lines
    assert "macro        83.33    75.00    73.33       4       4        3" in lines


def test_sequence_accuracy_counts_whole_sequences():
    gold = [["A", "B"], ["A"], ["B", "B", "A"], []]
    pred = [["A", "B"], ["B"], ["B", "B", "A"], []]
    r = evaluate(gold, pred)
    assert r.sequences == 4 and r.sequence_accuracy == approx(75.0)
    assert r.accuracy == approx(500 / 6)
    assert evaluate([], []).sequence_accuracy == 0.0


# ---------------------------------------------------------------- confusion matrix

def test_confusion_counts_and_order():
    gold = [["B-NP", "I-NP", "O", "B-VP"], ["B-NP", "O"]]
    pred = [["B-NP", "B-NP", "O", "O"], ["B-VP", "O"]]
    r = evaluate(gold, pred)
    assert r.confusion == {("B-NP", "B-NP"): 1, ("I-NP", "B-NP"): 1, ("O", "O"): 2,
                           ("B-VP", "O"): 1, ("B-NP", "B-VP"): 1}
    labels, counts = matrix(r.confusion)
    assert labels == ["B-NP", "I-NP", "B-VP", "O"]          # by type, then prefix; O last
    assert counts.tolist() == [[1, 0, 1, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 2]]
    assert counts.sum(axis=1).tolist() == [r.labels[t].support for t in labels]
    assert counts.sum(axis=0).tolist() == [r.labels[t].predicted for t in labels]
    assert format_confusion(r.confusion).splitlines() == [
        "confusion matrix: rows gold, columns predicted; 4 labels",
        "gold \\ predicted B-NP I-NP B-VP    O",
        "B-NP                1    0    1    0",
        "I-NP                1    0    0    0",
        "B-VP                0    0    0    1",
        "O                   0    0    0    2",
    ]
    assert order(["O", "S-A", "E-A", "B-A", "I-A", "A", "B-B"]) == [
        "A", "B-A", "I-A", "E-A", "S-A", "B-B", "O"]


def test_wide_confusion_keeps_the_frequent_labels_and_merges_the_rest():
    names = [f"L{k:02d}" for k in range(30)]
    confusion = {(a, b): (i + 1) * (2 if a == b else 1) for i, a in enumerate(names)
                 for b in names}
    labels, counts = matrix(confusion, max_labels=10)
    assert labels == names[21:] + [OTHER]                    # the 9 most frequent, then the rest
    assert counts.sum() == sum(confusion.values())
    assert counts[:9, :9].trace() == sum(2 * (i + 1) for i in range(21, 30))
    assert counts[9, 9] == sum(confusion[a, b] for a in names[:21] for b in names[:21])
    lines = format_confusion(confusion, max_labels=10).splitlines()
    assert lines[0].endswith("30 labels, the 21 least frequent merged into (other)")
    assert lines[1].split()[3:] == names[21:] + [OTHER]
    assert lines[-1].split()[0] == OTHER and len(lines) == 2 + 10
    assert int(lines[-1].split()[-1]) == counts[9, 9]
    # by default, as many labels as fit in 120 characters (at most 20)
    lines = format_confusion(confusion).splitlines()
    shown = len(lines) - 2
    assert max(len(line) for line in lines) <= 120 and 10 < shown <= 20
    assert lines[0].endswith(f"30 labels, the {31 - shown} least frequent merged into (other)")


def test_confusion_picture_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib")
    image = pytest.importorskip("PIL.Image")
    from fgl.evaluation.confusion import draw_confusion

    r = evaluate([["B-NP", "I-NP", "O", "B-VP"]], [["B-NP", "B-NP", "O", "O"]])
    png = tmp_path / "cm.png"
    draw_confusion(r.confusion, png, title="chunks")
    with image.open(png) as im:
        assert im.format == "PNG"
        width, height = im.size
        assert width > 200 and height > 200
        pixels = np.asarray(im.convert("L"))
        assert pixels.min() < 100 and pixels.max() > 200   # dark cells on a white page
    svg = tmp_path / "cm.svg"
    draw_confusion(r.confusion, svg)
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    with pytest.raises(FglError, match="ending in .png, .svg, .pdf"):
        draw_confusion(r.confusion, tmp_path / "cm.txt")


# ---------------------------------------------------------------- fgl eval, scheme by scheme

def _to(scheme: str, tags: list[str]) -> list[str]:
    """BIO tags rewritten in another scheme (from the tags alone)."""
    out = []
    for i, tag in enumerate(tags):
        prefix, typ = tag[0], tag[2:]
        nxt = tags[i + 1] if i + 1 < len(tags) else "O"
        prev = tags[i - 1][2:] if i else ""
        ends = nxt != f"I-{typ}"
        if tag == "O":
            out.append(tag)
        elif scheme == "iobes":
            out.append(("S-" if ends else "B-") + typ if prefix == "B"
                       else ("E-" if ends else "I-") + typ)
        elif scheme == "iob1":
            out.append(("B-" if prefix == "B" and prev == typ else "I-") + typ)
        elif scheme == "io":
            out.append("I-" + typ)
        else:  # plain
            out.append(typ)
    return out


def _files(tmp_path: Path, scheme: str) -> tuple[Path, Path]:
    bio = data_files(tmp_path)
    if scheme == "bio":
        return bio

    def rewrite(path: Path) -> Path:
        sents = [Sentence([[w, t] for w, t in zip(s.column(0), _to(scheme, s.column(1)))],
                          s.lines, s.doc, s.file) for s in read_conll(path)]
        return write_data(path.with_name(f"{scheme}_{path.name}"), sents)

    return rewrite(bio[0]), rewrite(bio[1])


def _gold_pred(capsys, model: Path, test: Path) -> tuple[list[list[str]], list[list[str]]]:
    code, out, err = run(capsys, "tag", model, test)
    assert code == 0, err
    sents = blocks(out)
    return [[r[1] for r in s] for s in sents], [[r[2] for r in s] for s in sents]


@pytest.mark.parametrize("scheme", ["bio", "iob1", "iobes", "io", "plain"])
def test_cli_eval_each_scheme(capsys, tmp_path, scheme):
    train, test = _files(tmp_path, scheme)
    model = tmp_path / "m.fglm"
    assert run(capsys, "train", HMM, "--train", train, "-o", model, "-q")[0] == 0
    gold, pred = _gold_pred(capsys, model, test)
    bio_gold = [s.column(1) for s in read_conll(data_files(tmp_path)[1])]

    code, out, err = run(capsys, "eval", model, test, "--scheme", scheme)
    assert code == 0, err
    expected = evaluate(gold, pred, scheme)
    assert out == expected.format() + "\n"
    lines = out.splitlines()
    assert lines[2].endswith(f"; scheme {scheme}")
    tokens = sum(map(len, gold))
    right = sum(a == b for g, p in zip(gold, pred) for a, b in zip(g, p))
    assert f"accuracy: {100 * right / tokens:6.2f}%" in lines[1]
    whole = sum(g == p for g, p in zip(gold, pred))
    assert lines[2].startswith(f"sequence accuracy: {100 * whole / len(gold):6.2f}% "
                               f"({whole} of {len(gold)} sequences")
    if scheme == "plain":
        assert lines[0] == f"processed {tokens} tokens with 3 labels (averages without O)."
        assert "chunk type" not in out and "\nmicro " in out and "\nmacro " in out
    else:
        # the chunks of the original BIO data: one per B- tag (io merges neighbours)
        n = sum(t.startswith("B-") for s in bio_gold for t in s)
        if scheme == "io":
            n = sum(t.startswith("B-") and (i == 0 or s[i - 1][2:] != t[2:])
                    for s in bio_gold for i, t in enumerate(s))
        assert lines[0].startswith(f"processed {tokens} tokens with {n} chunks;")
        assert "\nchunk type  " in out and "\noverall " in out and "\nmacro " in out

    code, auto, _ = run(capsys, "eval", model, test)       # auto names the scheme it chose
    assert auto.splitlines()[2].endswith(f"; scheme {'iob1' if scheme == 'io' else scheme}")


def test_cli_wrong_scheme_is_a_located_data_error(capsys, tmp_path):
    train, test = _files(tmp_path, "iobes")
    model = tmp_path / "m.fglm"
    assert run(capsys, "train", HMM, "--train", train, "-o", model, "-q")[0] == 0
    code, out, err = run(capsys, "eval", model, test, "--scheme", "bio")
    assert code == 2 and out == ""
    first = next((s, j) for s in read_conll(test) for j, t in enumerate(s.column(1))
                 if t[0] in "ES")
    sent, j = first
    tag = sent.column(1)[j]
    assert err.strip() == (f"fgl: {test}:{sent.lines[j]}: scheme bio reads O, B-TYPE and "
                           f"I-TYPE (or untyped B, I) tags; the gold tag in column label is "
                           f"{tag!r}, which iobes reads (scheme auto chooses from the tags; iob "
                           "reads any mix)")
    # BIO gold, but the model's labels are IOBES
    bio_test = data_files(tmp_path)[1]
    code, out, err = run(capsys, "eval", model, bio_test, "--scheme", "bio")
    assert code == 2 and out == ""
    assert err.startswith("fgl: scheme bio reads O, B-TYPE and I-TYPE (or untyped B, I) tags; "
                          "the model predicts, in column label, the tag '")
    assert err.strip().endswith("; choose the scheme of the model's labels")
    code, out, err = run(capsys, "compare", model, model, test, "--scheme", "bio")
    assert code == 2 and err.startswith(f"fgl: {test}:{sent.lines[j]}: scheme bio reads ")


def test_cli_compare_scores_by_the_scheme(capsys, tmp_path):
    train, test = _files(tmp_path, "iob1")
    model = tmp_path / "m.fglm"
    assert run(capsys, "train", HMM, "--train", train, "-o", model, "-q")[0] == 0
    gold, pred = _gold_pred(capsys, model, test)
    for scheme in ("iob1", "plain", "runs"):
        code, out, err = run(capsys, "compare", model, model, test, "--scheme", scheme,
                             "--trials", 20)
        assert code == 0, err
        f1 = evaluate(gold, pred, scheme).overall.f1
        assert out.splitlines()[1].split()[1] == f"{f1:.2f}"
    assert evaluate(gold, pred, "plain").overall.f1 != evaluate(gold, pred, "iob1").overall.f1


def test_cli_confusion_text_and_picture(capsys, tmp_path):
    train, test = data_files(tmp_path)
    model = tmp_path / "m.fglm"
    assert run(capsys, "train", HMM, "--train", train, "-o", model, "-q")[0] == 0
    gold, pred = _gold_pred(capsys, model, test)
    code, out, err = run(capsys, "eval", model, test, "--confusion")
    assert code == 0, err
    report = evaluate(gold, pred)
    assert out == report.format() + "\n" + format_confusion(report.confusion) + "\n"
    table = out.split("confusion matrix: rows gold, columns predicted; 5 labels\n")[1]
    rows = [line.split() for line in table.splitlines() if line.strip()]
    assert rows[0] == ["gold", "\\", "predicted", "B-T0", "I-T0", "B-T1", "I-T1", "O"]
    for row in rows[1:]:
        label, counts = row[0], [int(n) for n in row[1:]]
        for other, n in zip(rows[0][3:], counts):
            assert n == sum(a == label and b == other
                            for g, p in zip(gold, pred) for a, b in zip(g, p))

    pytest.importorskip("matplotlib")
    image = pytest.importorskip("PIL.Image")
    png = tmp_path / "cm.png"
    code, out, err = run(capsys, "eval", model, test, "--confusion", "-o", png)
    assert code == 0, err
    assert out == report.format() + "\n"
    assert err.strip() == f"wrote the confusion matrix to {png}"
    with image.open(png) as im:
        assert im.format == "PNG" and min(im.size) > 200

    code, _, err = run(capsys, "eval", model, test, "-o", png)
    assert code == 2 and "add --confusion" in err
    code, _, err = run(capsys, "eval", model, test, "--confusion", "-o", tmp_path / "cm.txt")
    assert code == 2 and "ending in .png, .svg, .pdf" in err


# ---------------------------------------------------------------- every layer of a model

TWO_LAYERS = """
columns word, pos, chunk
output pos, chunk
template pos_state:   pos[t] ~ word[t]
template chunk_state: chunk[t] ~ word[t]
template pos_trans:   pos[t-1..t]
template chunk_trans: chunk[t-1..t]
template cross:       (pos[t], chunk[t])
train { max_iter = 30 }
"""


def test_multi_layer_evaluate_from_python_and_the_cli(capsys, tmp_path):
    train, test = two_layer_sentences(40, seed=3), two_layer_sentences(15, seed=4)
    crf = CRF(TWO_LAYERS).fit_sentences(train)
    X = [[r[:1] for r in s.rows] for s in test]
    y = [[(r[1], r[2]) for r in s.rows] for s in test]
    pred = crf.predict(X)
    reports = crf.evaluate(X, y)
    assert list(reports) == ["pos", "chunk"]
    for k, name in enumerate(reports):
        gold_k = [[t[k] for t in s] for s in y]
        pred_k = [[t[k] for t in s] for s in pred]
        assert reports[name] == evaluate(gold_k, pred_k)
    assert reports["pos"].scheme == "plain" and reports["chunk"].scheme == "bio"
    assert set(reports["pos"].labels) == {"DT", "JJ", "NN", "VB", "IN", "PU"}
    assert {r.scheme for r in crf.evaluate(X, y, scheme="plain").values()} == {"plain"}
    mixed = crf.evaluate(X, y, scheme={"chunk": "iobes"})          # pos: auto
    assert (mixed["pos"].scheme, mixed["chunk"].scheme) == ("plain", "iobes")
    assert mixed["chunk"].overall == reports["chunk"].overall     # BIO read as IOBES: same
    with pytest.raises(TagError, match="gold"):
        crf.evaluate(X, y, scheme="bio")                           # POS tags are not BIO
    with pytest.raises(FglError, match="scheme names chnk, but the output layers are pos, chunk"):
        crf.evaluate(X, y, scheme={"chnk": "bio"})
    # score: percent of tokens with every layer right
    both = sum(p == g for ps, gs in zip(pred, y) for p, g in zip(ps, gs))
    assert crf.score(X, y) == approx(100 * both / sum(map(len, y)))
    assert crf.score(X, y) <= min(r.accuracy for r in reports.values())

    # one layer: a Report, not a dict
    one = CRF(HMM, max_iter=20).fit([[[w] for w in s.column(0)] for s in train],
                                    [s.column(2) for s in train])
    single = one.evaluate(X, [[t[1] for t in s] for s in y])
    assert single.scheme == "bio" and single.sequences == len(X)

    spec, data = tmp_path / "two.fgl", tmp_path / "test.txt"
    spec.write_text(TWO_LAYERS, encoding="utf-8")
    write_data(data, test)
    model = tmp_path / "two.fglm"
    assert run(capsys, "train", spec, "--train", write_data(tmp_path / "train.txt", train),
               "-o", model, "-q")[0] == 0
    code, out, err = run(capsys, "eval", model, data, "--confusion")
    assert code == 0, err
    pos, chunk = out.split("== chunk\n")
    assert pos.startswith("== pos\nprocessed ") and "micro F1" in pos
    assert "; scheme plain" in pos and "; scheme bio" in chunk
    assert "confusion matrix: rows gold, columns predicted; 6 labels" in pos
    assert "confusion matrix: rows gold, columns predicted; 5 labels" in chunk
    code, out, err = run(capsys, "eval", model, data, "--scheme", "plain",
                         "--scheme", "chunk=iob1")
    assert code == 0, err
    pos, chunk = out.split("== chunk\n")
    assert "; scheme plain" in pos and "; scheme iob1" in chunk
    code, out, err = run(capsys, "eval", model, data, "--scheme", "bio")
    assert code == 2 and err.startswith(f"fgl: {data}:1: scheme bio reads O, B-TYPE and "
                                        "I-TYPE (or untyped B, I) tags; the gold tag in "
                                        "column pos is ")
    code, out, err = run(capsys, "eval", model, data, "--scheme", "chnk=bio")
    assert code == 2 and err.strip() == ("fgl: --scheme chnk=bio: the model has no output "
                                         "layer 'chnk'; its output layers are pos, chunk")
    pytest.importorskip("matplotlib")
    code, _, err = run(capsys, "eval", model, data, "--confusion", "-o", tmp_path / "cm.svg")
    assert code == 0, err
    for layer in ("pos", "chunk"):
        assert (tmp_path / f"cm.{layer}.svg").read_text(encoding="utf-8").count("<svg") == 1


def test_the_scheme_examples_of_docs_evaluation_md():
    """Every row of the scheme table in docs/evaluation.md is what `chunks`
    gives."""
    doc = (REPO / "docs" / "evaluation.md").read_text("utf-8")
    rows = [line.split("|")[1:4] for line in doc.splitlines() if line.startswith("| `")]
    assert {r[0].strip(" `") for r in rows} == {"bio", "iob1", "iobes", "io", "iob", "runs",
                                                  "plain"}
    for scheme, tags, expected in rows:
        scheme, tags = scheme.strip(" `"), tags.strip(" `").split()
        assert len(tags) == 3
        if scheme == "plain":
            assert expected.strip().startswith("none")
            assert evaluate([tags], [tags], "plain").chunks == {}
            continue
        got = ", ".join(f"{t} {a}-{b}" for t, a, b in chunks(tags, scheme))
        assert got == expected.strip(" `"), (scheme, tags)
