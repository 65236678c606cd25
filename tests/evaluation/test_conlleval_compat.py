"""`fgl eval --tagged` scores as conlleval does, and `fgl tag` writes what
conlleval reads.

``conlleval_counts`` below is written from conlleval's documentation (the
CoNLL-2000 shared task's description of the script), not from its code: a
tag ``P-TYPE`` splits at its first ``-``, a tag without ``-`` is a prefix of
the empty type; between two neighbouring tags a chunk *ends* when the
previous tag is ``B`` or ``I`` and the next is ``B`` or ``O``, or when the
previous tag is not ``O`` and the types differ; a chunk *starts* at ``B``,
at an ``I`` after ``O``, and at any tag but ``O`` whose type differs from
the previous tag's.  Sentence boundaries (blank lines, ``-DOCSTART-``
lines) act as an ``O`` tag.  A predicted chunk is correct when it starts
with a gold chunk of its type and both end at the same place.  It walks the
tokens once, as conlleval does, while fgl collects chunks per sentence and
intersects them: two different procedures, which must agree on every
sequence, well-formed or not.
"""
from __future__ import annotations

import contextlib
import io
import re
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import blocks, data_files, run, write_data
from support.paths import HMM

from fgl.cli import main
from fgl.data.schemes import chunks, resolve
from fgl.data.sentence import Sentence
from fgl.evaluation.evaluate import evaluate
from fgl.io.conll import read_conll

# ---------------------------------------------------------------- the reference


def _split(tag: str) -> tuple[str, str]:
    prefix, dash, typ = tag.partition("-")
    return (prefix, typ) if dash else (tag, "")


def _ends(prev: tuple[str, str], cur: tuple[str, str]) -> bool:
    (p, pt), (c, ct) = prev, cur
    return (p in ("B", "I") and c in ("B", "O")) or (p != "O" and pt != ct)


def _starts(prev: tuple[str, str], cur: tuple[str, str]) -> bool:
    (p, pt), (c, ct) = prev, cur
    return c == "B" or (p == "O" and c == "I") or (c != "O" and pt != ct)


def conlleval_counts(lines: list[str]) -> dict:
    """conlleval's counts over the lines of a tagged file (gold and guessed
    tags the last two fields): tokens, tokens tagged right, and per chunk
    type the gold, found and correct chunks.  Refuses a line whose number of
    fields differs from the first's, as conlleval does."""
    gold, found, right = Counter(), Counter(), Counter()
    tokens = right_tags = 0
    width = None
    prev_g = prev_p = ("O", "")
    open_correct: str | None = None   # the type of a chunk that may still be correct
    for line in [*lines, ""]:
        fields = line.split()
        if fields and width is None:
            width = len(fields)
        if fields and len(fields) != width:
            raise ValueError(f"unexpected number of fields in line {line!r}")
        boundary = not fields or fields[0] == "-DOCSTART-"
        g, p = (("O", ""), ("O", "")) if boundary else (_split(fields[-2]), _split(fields[-1]))
        g_end, p_end = _ends(prev_g, g), _ends(prev_p, p)
        g_start, p_start = _starts(prev_g, g), _starts(prev_p, p)
        if open_correct is not None:
            if g_end and p_end:
                right[open_correct] += 1
                open_correct = None
            elif g_end or p_end or g[1] != p[1]:
                open_correct = None
        if g_start and p_start and g[1] == p[1]:
            open_correct = g[1]
        if g_start:
            gold[g[1]] += 1
        if p_start:
            found[p[1]] += 1
        if not boundary:
            tokens += 1
            right_tags += g == p
        prev_g, prev_p = g, p
    return {"tokens": tokens, "right_tags": right_tags, "gold": gold, "found": found,
            "correct": right}


def test_the_reference_on_hand_worked_sequences():
    lines = ["a B-NP B-NP", "b I-NP I-NP", "c O B-VP", "", "d I-NP I-NP", "e B-NP I-NP"]
    c = conlleval_counts(lines)
    # gold NP 0-2 | NP 3, NP 4; guessed NP 0-2, VP 2 | NP 3-5
    assert c["gold"] == {"NP": 3} and c["found"] == {"NP": 2, "VP": 1}
    assert c["correct"] == {"NP": 1} and (c["tokens"], c["right_tags"]) == (5, 3)
    untyped = conlleval_counts(["a B B", "b I O", "c I I", "d B B"])
    # gold "" 0-3, 3; guessed "" 0, 2, 3
    assert untyped["gold"] == {"": 2} and untyped["found"] == {"": 3}
    assert untyped["correct"] == {"": 1}
    with pytest.raises(ValueError, match="unexpected number of fields"):
        conlleval_counts(["a B B", "-DOCSTART-"])


# ---------------------------------------------------------------- fgl eval --tagged

def _fgl_eval_tagged(lines: list[str], *options: str) -> str:
    """`fgl eval --tagged FILE options` on ``lines``: its standard output."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tagged.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["eval", "--tagged", str(path), *options])
    assert code == 0
    return out.getvalue()


ROW = re.compile(r"^(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)$")


def _parse(report: str) -> dict:
    """The figures of a chunk report: the first lines' counts and accuracy,
    and per chunk type (gold, found, correct)."""
    head = re.match(r"processed (\d+) tokens with (\d+) chunks; found: (\d+) chunks; "
                    r"correct: (\d+)\.\naccuracy: +([\d.]+)%; precision: +([\d.]+)%; "
                    r"recall: +([\d.]+)%; F1: +([\d.]+)", report)
    assert head, report
    table = report.split("chunk type", 1)[1].split("\n\n", 1)[0]
    types = {}
    for line in table.splitlines():
        m = ROW.match(line)
        if m and m.group(1) not in ("overall", "macro"):
            name = "" if m.group(1) == "(untyped)" else m.group(1)
            types[name] = tuple(int(m.group(k)) for k in (5, 6, 7))
    return {"counts": tuple(int(x) for x in head.groups()[:4]),
            "scores": tuple(float(x) for x in head.groups()[4:]), "types": types}


def _pct(num: int, den: int) -> float:
    return 100.0 * num / den if den else 0.0


def _agree(lines: list[str], *options: str) -> None:
    ref = conlleval_counts(lines)
    got = _parse(_fgl_eval_tagged(lines, *options))
    g, f, c = (sum(ref[k].values()) for k in ("gold", "found", "correct"))
    assert got["counts"] == (ref["tokens"], g, f, c)
    p, r = _pct(c, f), _pct(c, g)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    expected = (_pct(ref["right_tags"], ref["tokens"]), p, r, f1)
    assert got["scores"] == pytest.approx([round(x, 2) for x in expected], abs=0.006)
    types = set(ref["gold"]) | set(ref["found"])
    assert got["types"] == {t: (ref["gold"][t], ref["found"][t], ref["correct"][t])
                            for t in types}


TYPED = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
UNTYPED = ["O", "B", "I"]


def _tagged_lines(draw, alphabet: list[str]) -> list[str]:
    """A tagged file over ``alphabet``: sentences of word/gold/guess lines,
    some ``-DOCSTART-`` lines (as wide as the others) between them."""
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()) and draw(st.booleans()):
            lines += ["-DOCSTART- -X- O O", ""]
        n = draw(st.integers(1, 12))
        gold = draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n))
        guess = draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n))
        lines += [f"w{k} X {a} {b}" for k, (a, b) in enumerate(zip(gold, guess))] + [""]
    return lines


@st.composite
def tagged_files(draw):
    alphabet = draw(st.sampled_from([TYPED, UNTYPED, TYPED + UNTYPED[1:]]))
    return alphabet, _tagged_lines(draw, alphabet)


@settings(max_examples=150, deadline=None)
@given(tagged_files(), st.sampled_from(["bio", "iob1"]))
def test_fgl_eval_tagged_counts_as_conlleval_on_random_tags(case, scheme):
    _, lines = case
    _agree(lines, "--scheme", scheme)


@settings(max_examples=60, deadline=None)
@given(tagged_files())
def test_auto_reads_typed_and_untyped_tags_as_conlleval(case):
    _, lines = case
    sentences = [[line.split() for line in block.split("\n") if line]
                 for block in "\n".join(lines).split("\n\n")]
    sentences = [s for s in sentences if s and s[0][0] != "-DOCSTART-"]
    tags = {t for s in sentences for r in s for t in r[-2:]}
    scheme = resolve("auto", [[r[-2] for r in s] for s in sentences],
                     [[r[-1] for r in s] for s in sentences])
    typed, untyped = tags & {"B-NP", "I-NP", "B-VP", "I-VP"}, tags & {"B", "I"}
    if typed and untyped:
        assert scheme == "iob"                  # a mix, read as conlleval reads it
    elif typed or "B" in untyped:
        assert scheme in ("bio", "iob1")
    else:                                       # O and I alone: labels
        assert scheme == "plain"
        return
    assert f"; scheme {scheme}\n" in _fgl_eval_tagged(lines)
    _agree(lines)


def _iobes(spans: list[tuple[str, int, int]], n: int, typed: bool) -> list[str]:
    tags = ["O"] * n
    for typ, a, b in spans:
        suffix = f"-{typ}" if typed else ""
        if b - a == 1:
            tags[a] = "S" + suffix
        else:
            tags[a], tags[b - 1] = "B" + suffix, "E" + suffix
            for t in range(a + 1, b - 1):
                tags[t] = "I" + suffix
    return tags


@st.composite
def segmentations(draw, n: int):
    spans, t = [], 0
    while t < n:
        if draw(st.booleans()):
            t += 1
            continue
        length = draw(st.integers(1, min(4, n - t)))
        spans.append((draw(st.sampled_from(["NP", "VP"])), t, t + length))
        t += length
    return spans


@settings(max_examples=80, deadline=None)
@given(st.data(), st.booleans())
def test_iobes_typed_and_untyped_give_the_chunks_written(data, typed):
    """Well-formed IOBES (and its untyped form): the chunks are those the
    tags were written from; scored as the same chunks written in BIO, which
    conlleval reads."""
    n = data.draw(st.integers(1, 15))
    gold = data.draw(segmentations(n))
    guess = data.draw(segmentations(n))
    if not typed:
        gold = [("", a, b) for _, a, b in gold]
        guess = [("", a, b) for _, a, b in guess]
    g_tags, p_tags = _iobes(gold, n, typed), _iobes(guess, n, typed)
    assert chunks(g_tags, "iobes") == gold and chunks(p_tags, "iobes") == guess
    bio = {"S": "B", "E": "I"}
    as_bio = [f"w {bio.get(a[0], a[0]) + a[1:]} {bio.get(b[0], b[0]) + b[1:]}"
              for a, b in zip(g_tags, p_tags)]
    ref = conlleval_counts(as_bio)
    r = evaluate([g_tags], [p_tags], "iobes")
    assert (r.overall.support, r.overall.predicted, r.overall.correct) == (
        sum(ref["gold"].values()), sum(ref["found"].values()), sum(ref["correct"].values()))


# ---------------------------------------------------------------- untyped tags by hand

def test_untyped_tags_are_chunks_of_one_empty_type():
    assert chunks(["B", "I", "O", "I", "B", "B"], "bio") == [
        ("", 0, 2), ("", 3, 4), ("", 4, 5), ("", 5, 6)]
    assert chunks(["I", "I", "B", "O"], "iob1") == [("", 0, 2), ("", 2, 3)]
    assert chunks(["B", "E", "S", "B", "I", "E"], "iobes") == [("", 0, 2), ("", 2, 3),
                                                               ("", 3, 6)]
    assert chunks(["I", "I", "O", "I"], "io") == [("", 0, 2), ("", 3, 4)]
    # the forgiving iob reads them as conlleval too
    assert chunks(["B", "I", "NN"], "iob") == [("", 0, 2), ("NN", 2, 3)]
    # auto: B, I, O alone are chunk tags (iob1 when a chunk starts with I)
    assert resolve("auto", [["B", "I", "O"]]) == "bio"
    assert resolve("auto", [["O", "I", "B"]]) == "iob1"
    assert resolve("auto", [["B", "E", "S", "O"]]) == "iobes"
    assert resolve("auto", [["I", "O"]]) == "plain"          # no B: labels, not chunks
    assert resolve("auto", [["A", "B", "O"]]) == "plain"


def test_untyped_report_and_ignore_nothing():
    gold, pred = [["B", "I", "O", "B"]], [["B", "I", "O", "I"]]
    r = evaluate(gold, pred, "bio")
    assert set(r.chunks) == {""} and (r.overall.correct, r.overall.support) == (2, 2)
    assert "\n(untyped)  " in r.format()
    # --ignore '' ignores nothing, untyped chunks included
    assert evaluate(gold, pred, "bio", ignore=("",)).overall.support == 2
    assert evaluate(gold, pred, "bio", ignore=("O", "")).overall.support == 2


@pytest.mark.parametrize("scheme, bad, reader", [
    ("bio", "E", "iobes"), ("iob1", "S", "iobes"), ("io", "B", "bio"), ("bio", "NP", "plain")])
def test_an_untyped_tag_a_scheme_does_not_read_is_refused(scheme, bad, reader):
    with pytest.raises(ValueError, match=f"gold\\[0\\]\\[1\\] is '{bad}', which {reader}"):
        evaluate([["O", bad]], [["O", "O"]], scheme)


# ---------------------------------------------------------------- fgl eval --tagged, the CLI

def _basenp_like(tmp_path: Path) -> Path:
    lines = ["-DOCSTART- -X- O O", "",
             "He PRP B B", "reckons VBZ O O", "the DT B B", "current JJ I I",
             "account NN I B", "deficit NN B I", "", "will MD O O", "narrow VB O B", ""]
    path = tmp_path / "tagged.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_eval_tagged_untyped_every_option(capsys, tmp_path):
    path = _basenp_like(tmp_path)
    code, out, err = run(capsys, "eval", "--tagged", path, "--scheme", "bio")
    assert code == 0, err
    # gold: He, the current account, deficit; found: He, the current, account deficit, narrow
    assert out.startswith("processed 8 tokens with 3 chunks; found: 4 chunks; correct: 1.\n"
                          "accuracy:  62.50%; precision:  25.00%; recall:  33.33%; F1:  28.57\n"
                          "sequence accuracy:   0.00% (0 of 2 sequences with every tag "
                          "right); scheme bio\n")
    assert "\n(untyped)       25.00    33.33    28.57       3       4        1\n" in out
    code, auto, _ = run(capsys, "eval", "--tagged", path)
    assert auto == out                                  # auto: untyped BIO
    code, out, err = run(capsys, "eval", "--tagged", path, "--scheme", "plain", "--confusion")
    assert code == 0 and "; scheme plain" in out and "confusion matrix: rows gold" in out
    code, out, err = run(capsys, "eval", "--tagged", path, "--labels", "B", "--scheme", "iob1")
    # B predicted 4 times (He, the, account, narrow), gold 3 times, both 2 times
    assert code == 0 and "labels B: precision:  50.00%; recall:  66.67%" in out
    assert "; scheme iob1" in out


def test_cli_eval_tagged_refusals_name_the_line(capsys, tmp_path):
    path = _basenp_like(tmp_path)
    code, out, err = run(capsys, "eval", "--tagged", path, "--scheme", "io")
    assert code == 2 and out == ""
    assert err.startswith(f"fgl: {path}:3: scheme io reads O and I-TYPE (or untyped I) tags; "
                          "the gold tag is 'B', which bio reads")
    lines = path.read_text(encoding="utf-8").replace("narrow VB O B", "narrow VB O E")
    path.write_text(lines, encoding="utf-8")
    code, out, err = run(capsys, "eval", "--tagged", path, "--scheme", "bio")
    assert code == 2 and err.startswith(f"fgl: {path}:11: scheme bio reads ")
    assert "the predicted tag is 'E', which iobes reads" in err
    one = tmp_path / "one.txt"
    one.write_text("B\nI\n", encoding="utf-8")
    code, out, err = run(capsys, "eval", "--tagged", one)
    assert code == 2 and err.startswith(f"fgl: {one}:1: a tagged file's lines end with the "
                                        "gold and the predicted label")
    code, out, err = run(capsys, "eval", "--tagged", path, "--scheme", "np=bio")
    assert code == 2 and "a tagged file has one label column" in err
    code, out, err = run(capsys, "eval", "model.fglm", "--tagged", path)
    assert code == 2 and "give no model" in err
    code, out, err = run(capsys, "eval")
    assert code == 2 and "fgl eval --tagged FILE" in err
    assert "Traceback" not in err


def test_the_gold_tag_message_names_a_column_called_tag(capsys, tmp_path):
    """Not "the gold tag tag is": the column is named apart from the word tag."""
    spec = tmp_path / "tag.fgl"
    spec.write_text(HMM.read_text(encoding="utf-8").replace("columns word, label", "columns "
                    "word, tag").replace("output label", "output tag"), encoding="utf-8")
    train, test = data_files(tmp_path)
    model = tmp_path / "m.fglm"
    assert run(capsys, "train", spec, "--train", train, "-o", model, "-q")[0] == 0
    code, _, err = run(capsys, "eval", model, test, "--scheme", "io")
    assert code == 2 and "the gold tag in column tag is 'B-" in err
    assert "tag tag" not in err


# ---------------------------------------------------------------- fgl tag output conlleval reads

def _conll2003_like(tmp_path: Path, docstart: str) -> tuple[Path, Path]:
    """word pos label files with -DOCSTART- lines written as ``docstart``."""
    train, test = data_files(tmp_path)

    def rewrite(path: Path) -> Path:
        sents = read_conll(path)
        lines = []
        for k, s in enumerate(sents):
            if k % 7 == 0:
                lines += [docstart, ""]
            lines += [f"{w} P{len(w)} {y}" for w, y in s.rows] + [""]
        out = path.with_name("3col_" + path.name)
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return out

    return rewrite(train), rewrite(test)


def _trained_skipping_a_column(capsys, tmp_path: Path, train: Path) -> Path:
    """The HMM spec with a `_` column between word and label, trained on
    ``train``: a model for three-column CoNLL files."""
    spec = tmp_path / "skip.fgl"
    spec.write_text(HMM.read_text(encoding="utf-8").replace("columns word, label",
                                                            "columns word, _, label"),
                    encoding="utf-8")
    model = tmp_path / "m.fglm"
    assert run(capsys, "train", spec, "--train", train, "-o", model, "-q")[0] == 0
    return model


@pytest.mark.parametrize("docstart", ["-DOCSTART- -X- O", "-DOCSTART-",
                                      "-DOCSTART- -X- -X- O"])
def test_tag_output_has_one_column_count_with_docstart_lines(capsys, tmp_path, docstart):
    train, test = _conll2003_like(tmp_path, docstart)
    model = _trained_skipping_a_column(capsys, tmp_path, train)
    code, out, err = run(capsys, "tag", model, test)
    assert code == 0, err
    lines = out.split("\n")
    widths = {len(line.split()) for line in lines if line.strip()}
    assert widths == {4}                                # input's 3 fields + the prediction
    starts = [line for line in lines if line.startswith("-DOCSTART-")]
    assert len(starts) == test.read_text(encoding="utf-8").count("-DOCSTART-") > 1
    expected = {"-DOCSTART- -X- O": "-DOCSTART- -X- O O", "-DOCSTART-": "-DOCSTART- -X- O O",
                "-DOCSTART- -X- -X- O": "-DOCSTART- -X- -X- O"}[docstart]
    assert set(starts) == {expected}
    # conlleval's reading of the output agrees with fgl eval on the model
    ref = conlleval_counts(lines)
    code, report, _ = run(capsys, "eval", model, test, "--scheme", "bio")
    got = _parse(report)
    assert got["counts"] == (ref["tokens"], sum(ref["gold"].values()),
                             sum(ref["found"].values()), sum(ref["correct"].values()))
    # and so does fgl eval --tagged on it, option for option
    tagged = tmp_path / "tagged.txt"
    assert run(capsys, "tag", model, test, "-o", tagged)[0] == 0
    assert tagged.read_text(encoding="utf-8") == out
    code, again, _ = run(capsys, "eval", "--tagged", tagged, "--scheme", "bio")
    assert again == report


def test_tag_marginal_columns_keep_the_count_on_docstart_lines(capsys, tmp_path):
    train, test = _conll2003_like(tmp_path, "-DOCSTART-")
    model = _trained_skipping_a_column(capsys, tmp_path, train)
    code, out, err = run(capsys, "tag", model, test, "--marginals", "--confidence")
    assert code == 0, err
    rows = [line.split() for line in out.split("\n") if line.strip()]
    assert {len(r) for r in rows} == {6}
    assert {tuple(r[3:]) for r in rows if r[0] == "-DOCSTART-"} == {("O", "-", "-")}


def test_tag_writes_the_input_encoding(capsys, tmp_path):
    train, test = data_files(tmp_path)
    sents = [Sentence([["日本" if w == "w3" else w, y] for w, y in s.rows], s.lines, s.doc,
                      s.file) for s in read_conll(train)]
    euc = write_data(tmp_path / "euc.txt", sents, encoding="euc-jp")
    model = tmp_path / "m.fglm"
    assert run(capsys, "train", HMM, "--train", euc, "--encoding", "euc-jp", "-o", model,
               "-q")[0] == 0
    out = tmp_path / "out.txt"
    assert run(capsys, "tag", model, euc, "--encoding", "euc-jp", "-o", out)[0] == 0
    raw = out.read_bytes()
    assert "日本".encode("euc-jp") in raw and "日本".encode("utf-8") not in raw
    rows = blocks(raw.decode("euc-jp"))
    assert [r[:2] for s in rows for r in s] == [r for s in sents for r in s.rows]
    code, text, err = run(capsys, "tag", model, euc, "--encoding", "euc-jp",
                          "--output-encoding", "utf-8")
    assert code == 0 and text == raw.decode("euc-jp")
    code, _, err = run(capsys, "tag", model, euc, "--encoding", "euc-jp",
                       "--output-encoding", "ascii")
    assert code == 2 and "which ascii cannot write; choose another with --output-encoding" in err
