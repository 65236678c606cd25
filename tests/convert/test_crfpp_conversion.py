"""`fgl convert crfpp`: a CRF++ template becomes a spec with CRF++'s
features.  CRF++'s chunking template (its documentation's example: words
at -2..2 and two word pairs, POS at -2..2, POS pairs and triples, B) is
converted and its compiled feature set compared with (a) a hand-written
equivalent spec and (b) the features CRF++ itself would build, expanded
here from CRF++'s rules — on generated chunking-like data and on
CoNLL-2000 when ../shared/data is present."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from support.cli import run
from support.paths import require_shared

from fgl import CRF
from fgl.convert.crfpp import Cell, convert, convert_file, merged_markers, parse_templates
from fgl.datasets.synth import segment_sequences
from fgl.errors import FglError, SpecError
from fgl.lang.parser import parse_spec
from fgl.report.inspect import weights

# CRF++'s chunking template, as its documentation describes it.
CHUNKING = """\
# unigram templates over the words (column 0)
U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U06:%x[0,0]/%x[1,0]

# over the part-of-speech tags (column 1)
U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-2,1]/%x[-1,1]
U16:%x[-1,1]/%x[0,1]
U17:%x[0,1]/%x[1,1]
U18:%x[1,1]/%x[2,1]

U20:%x[-2,1]/%x[-1,1]/%x[0,1]
U21:%x[-1,1]/%x[0,1]/%x[1,1]
U22:%x[0,1]/%x[1,1]/%x[2,1]

# bigram
B
"""

# The same model written by hand in fgl.
HAND = """\
columns word, pos, chunk
output chunk

template U00: y[t] ~ pad(word[t-2]) (support = all)
template U01: y[t] ~ pad(word[t-1]) (support = all)
template U02: y[t] ~ pad(word[t]) (support = all)
template U03: y[t] ~ pad(word[t+1]) (support = all)
template U04: y[t] ~ pad(word[t+2]) (support = all)
template U05: y[t] ~ pad(word[t-1]) & pad(word[t]) (support = all)
template U06: y[t] ~ pad(word[t]) & pad(word[t+1]) (support = all)
template U10: y[t] ~ pad(pos[t-2]) (support = all)
template U11: y[t] ~ pad(pos[t-1]) (support = all)
template U12: y[t] ~ pad(pos[t]) (support = all)
template U13: y[t] ~ pad(pos[t+1]) (support = all)
template U14: y[t] ~ pad(pos[t+2]) (support = all)
template U15: y[t] ~ pad(pos[t-2]) & pad(pos[t-1]) (support = all)
template U16: y[t] ~ pad(pos[t-1]) & pad(pos[t]) (support = all)
template U17: y[t] ~ pad(pos[t]) & pad(pos[t+1]) (support = all)
template U18: y[t] ~ pad(pos[t+1]) & pad(pos[t+2]) (support = all)
template U20: y[t] ~ pad(pos[t-2]) & pad(pos[t-1]) & pad(pos[t]) (support = all)
template U21: y[t] ~ pad(pos[t-1]) & pad(pos[t]) & pad(pos[t+1]) (support = all)
template U22: y[t] ~ pad(pos[t]) & pad(pos[t+1]) & pad(pos[t+2]) (support = all)
template B: y[t-1..t]
"""

COLUMNS = ["word", "pos", "chunk"]
START, END = "<sequence start>", "<sequence end>"


def chunking_like() -> list[list[list[str]]]:
    """Generated BIO-chunked sentences of lengths 1..12 with a POS-like
    column (a coarse class of the word), so both edges are exercised."""
    train, _ = segment_sequences(n_types=3, vocab=40, n_train=90, n_test=1, length=12, seed=3)
    sentences = []
    for k, sent in enumerate(train):
        rows = sent.rows[:1 + k % 12]
        sentences.append([[w, f"P{int(w[1:]) % 6}", tag] for w, tag in rows])
    return sentences


def conll2000(n: int = 600) -> list[list[list[str]]]:
    """The first ``n`` sentences of CoNLL-2000's training file."""
    path = require_shared("data", "conll2000", "train.txt")
    sentences, rows = [], []
    for line in path.read_text().splitlines():
        if line.strip():
            rows.append(line.split())
        elif rows:
            sentences.append(rows)
            rows = []
            if len(sentences) == n:
                break
    return sentences


def compiled_features(spec_text: str, sentences) -> dict[str, Counter]:
    """Per template: how many features each attribute has after compiling."""
    crf = CRF(parse_spec(spec_text, "<spec>"))
    crf.compile([[r[:-1] for r in s] for s in sentences], [[r[-1] for r in s] for s in sentences])
    out: dict[str, Counter] = {t.name: Counter() for t in crf.model.templates}
    for w in weights(crf.model, crf.weights):
        out[w.template][w.attribute] += 1
    return out


def crfpp_attributes(template: str, sentences) -> dict[str, set[tuple[str, ...]]]:
    """Per template id, the attributes CRF++ builds from the training data:
    the values of its macros at every position (unigram templates) or from
    the second position on (bigram ones), a row outside the sentence giving
    _B-k before it and _B+k after it."""
    out: dict[str, set[tuple[str, ...]]] = {}
    for line in template.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        ident = line.split(":")[0]
        cells = [(int(r), int(c)) for r, c in re.findall(r"%x\[(-?\d+),(\d+)\]", line)]
        found = out.setdefault(ident, set())
        for rows in sentences:
            for t in range(1 if line[0] == "B" else 0, len(rows)):
                values = []
                for r, c in cells:
                    i = t + r
                    values.append(f"_B{i}" if i < 0 else f"_B+{i - len(rows) + 1}"
                                  if i >= len(rows) else rows[i][c])
                found.add(tuple(values))
    return out


def as_fgl(ident: str, values: tuple[str, ...], template: str) -> str:
    """A CRF++ attribute under fgl's naming: the padded cells' names joined
    by & and their values by |, every _B-k one start marker, _B+k one end
    marker; a template without macros has the one attribute `bias`."""
    line = next(x for x in template.splitlines() if x.startswith(ident + ":") or x == ident)
    cells = re.findall(r"%x\[(-?\d+),(\d+)\]", line)
    if not cells:
        return "bias"
    names = [f"{COLUMNS[int(c)]}[{'t' if r == '0' else f't{int(r):+d}'}]" for r, c in cells]
    marks = [START if v.startswith("_B-") else END if v.startswith("_B+") else v
             for v in values]
    return "&".join(names) + "=" + "|".join(marks)


def check_against_crfpp(sentences) -> None:
    converted = convert(CHUNKING, COLUMNS, "chunking.template")
    got = compiled_features(converted, sentences)
    hand = compiled_features(HAND, sentences)
    assert got == hand                       # the same features, attribute by attribute
    n_labels = len({r[-1] for s in sentences for r in s})
    expected = crfpp_attributes(CHUNKING, sentences)
    assert set(got) == set(expected)
    for ident, attrs in expected.items():
        mapped: dict[str, set] = {}
        for values in attrs:
            mapped.setdefault(as_fgl(ident, values, CHUNKING), set()).add(values)
        assert set(got[ident]) == set(mapped), ident
        # every (attribute, label), or every label pair for B, is a feature, as in CRF++
        per = n_labels ** 2 if ident == "B" else n_labels
        assert set(got[ident].values()) == {per}, ident
        # CRF++ attributes fgl merges: exactly the boundary symbols the converter names
        merged = sorted(sorted(v[0] for v in group) for group in mapped.values()
                        if len(group) > 1)
        line = next(x for x in CHUNKING.splitlines() if x.startswith(ident))
        cells = tuple(Cell(int(r), int(c)) for r, c in re.findall(r"%x\[(-?\d+),(\d+)\]", line))
        named = [sorted(m.split(" = ")) for m in merged_markers(cells)]
        assert merged == named, ident
        assert len(attrs) - len(got[ident]) == len(named), ident
    merging = {i for i, a in expected.items() if len(a) > len(got[i])}
    assert merging == {"U00", "U04", "U10", "U14"}


def test_chunking_template_matches_crfpp_on_generated_data():
    check_against_crfpp(chunking_like())


def test_chunking_template_matches_crfpp_on_conll2000():
    check_against_crfpp(conll2000())


def test_bigram_template_with_macros_reads_from_the_second_token():
    template = "B01:%x[0,0]\nU02:%x[0,0]\n"
    sentences = chunking_like() + [[["Only", "P0", "O"], ["w1", "P1", "O"]]]
    got = compiled_features(convert(template, COLUMNS), sentences)
    n = len({r[-1] for s in sentences for r in s})
    firsts = {s[0][0] for s in sentences}
    later = {r[0] for s in sentences for r in s[1:]}
    only_first = firsts - later
    assert only_first == {"Only"}
    # CRF++ reads bigram templates at cur = 1 .. T-1: no attribute for "Only"
    assert set(got["B01"]) == {f"word[t]&regex(word[t-1],'')={w}|" for w in later}
    assert set(got["B01"].values()) == {n * n}          # every label pair
    assert {a.split("=", 1)[1] for a in got["U02"]} == later | firsts


def test_literal_text_ids_and_wapiti_star():
    spec = convert("# comment\n\nU:pre-%x[0,0]-post\n*7:%x[1,1]\nB\nU\n", COLUMNS)
    names = re.findall(r"^template (\w+):", spec, re.M)
    assert names == ["U", "U7", "B7", "B", "U_2"]
    assert "obs U = pad(word[t])\n" in spec              # literal text adds nothing
    assert "template U_2: y[t] ~ U_2 (support = all)" in spec and "obs U_2 = bias" in spec
    assert 'obs B7 = pad(pos[t+1]) & regex(word[t-1], "")' in spec
    assert "template B: y[t-1..t]\n" in spec


def test_default_columns_and_c():
    spec = convert("U00:%x[0,2]\nB\n", c=4.0)
    assert "columns col0, col1, col2, col3\noutput col3\n" in spec
    assert re.search(r"sigma = 2\b", spec)
    assert [t.id for t in parse_templates("U00:%x[0,2]\nB\n")] == ["U00", "B"]
    with pytest.raises(FglError, match="-c must be a positive number; found 0"):
        convert("B\n", c=0)


def test_merged_markers_name_what_fgl_cannot_tell_apart():
    assert merged_markers((Cell(-2, 0),)) == ["_B-2 = _B-1"]
    assert merged_markers((Cell(3, 0),)) == ["_B+3 = _B+2 = _B+1"]
    assert merged_markers((Cell(-2, 0), Cell(-1, 0), Cell(2, 1))) == ["_B+2 = _B+1"]
    assert merged_markers((Cell(-2, 0),), bigram=True) == []   # read from the second token
    assert merged_markers((Cell(-1, 0), Cell(1, 0))) == []
    assert "_B-2 = _B-1" in convert("U00:%x[-2,0]\n", COLUMNS)
    assert "has its own fgl attribute" in convert("U05:%x[-1,0]/%x[0,0]\n", COLUMNS)


@pytest.mark.parametrize("text, columns, where, says", [
    ("U00:%x[0,0]\nU01:%x[0,2]\n", COLUMNS, ":2:5:", "column 2 is not an input column"),
    ("\n  U00:%x[0,0]/%y[1,1]\n", None, ":2:15:", "expected a macro %x[row,col]"),
    ("U00:%x[0,0]/%t[0,0,\"^A\"]\n", None, ":1:13:", "only %x[row,col] macros"),
    ("X00:%x[0,0]\n", None, ":1:1:", "starts with U (unigram), B (bigram)"),
    ("U00:%x[-9,0]\n", None, ":1:5:", "CRF++ reads rows -8..8"),
    ("U00:%x[0,\n", None, ":1:5:", "expected a macro"),
])
def test_bad_templates_are_located(text, columns, where, says):
    with pytest.raises(SpecError) as e:
        convert(text, columns, "t.template")
    assert str(e.value).startswith("t.template" + where) and says in str(e.value)


@pytest.mark.parametrize("columns, says", [
    (["word"], "at least two names"),
    (["word", "1pos", "chunk"], "'1pos' is not a name"),
    (["word", "word", "chunk"], "word given twice"),
])
def test_bad_columns(columns, says):
    with pytest.raises(FglError, match=says):
        convert("U00:%x[0,0]\n", columns)


def test_cli_writes_a_spec_that_checks_and_trains(capsys, tmp_path):
    template = tmp_path / "chunking.template"
    template.write_text(CHUNKING)
    spec = tmp_path / "chunk.fgl"
    code, out, err = run(capsys, "convert", "crfpp", template, "--columns", "word,pos,chunk",
                         "-o", spec)
    assert code == 0, err
    assert out == f"{spec}: 20 templates from {template}; check it with `fgl check {spec}`\n"
    assert spec.read_text() == convert_file(template, COLUMNS)
    assert run(capsys, "check", spec)[1] == f"{spec}: ok\n"
    data = tmp_path / "train.txt"
    data.write_text("\n\n".join("\n".join(" ".join(r) for r in s) for s in chunking_like())
                    + "\n")
    model = tmp_path / "m.fglm"
    code, _, err = run(capsys, "train", spec, "--train", data, "-o", model, "--max-iter", "30",
                       "-q")
    assert code == 0, err
    code, out, err = run(capsys, "eval", model, data)
    assert code == 0, err
    accuracy = float(re.search(r"accuracy:?\s+([\d.]+)", out).group(1))
    assert accuracy > 80                    # learns its own training data
    code, out, _ = run(capsys, "convert", "wapiti", template)    # standard output
    assert code == 0 and out == convert_file(template)
    assert "\ncolumns col0, col1, col2\noutput col2\n" in out


def test_cli_errors(capsys, tmp_path):
    bad = tmp_path / "bad.template"
    bad.write_text("U00:%x[0,0]\nB01:%x[1,5]\n")
    code, out, err = run(capsys, "convert", "crfpp", bad, "--columns", "word,pos,chunk")
    assert code == 2 and out == ""
    assert err.startswith(f"fgl: {bad}:2:5: column 5 is not an input column")
    code, _, err = run(capsys, "convert", "crfpp", tmp_path / "missing")
    assert code == 2 and "cannot read template" in err
    empty = tmp_path / "empty.template"
    empty.write_text("# nothing\n\n")
    code, _, err = run(capsys, "convert", "crfpp", empty)
    assert code == 2 and "no template lines" in err


def test_spec_file_is_what_convert_returns(tmp_path):
    path = Path(tmp_path / "t.template")
    path.write_text("U00:%x[0,0]\nB\n")
    assert convert_file(path) == convert("U00:%x[0,0]\nB\n", file=str(path))
