"""Column files with defects: the ``short_lines`` policy of read_conll and
``--short-lines`` of the CLI (synthetic files), the real CoNLL-2002 Dutch
and CoNLL-2003 English files (skipped when ../shared/data is absent), and
IOB1 entity scoring."""
import warnings

import pytest
from support.paths import require_shared

from fgl.cli import main
from fgl.errors import DataError
from fgl.evaluation.evaluate import chunks, evaluate
from fgl.io.conll import ShortLineWarning, iter_conll, read_conll

# 'Belgi\x81EN B-LOC': word and POS ran together, as in CoNLL-2002 ned.*
DEFECT = (b"-DOCSTART- -DOCSTART- O\n"
          b"De Art O\nBelgi\x81EN B-LOC\nbank N O\n\n"
          b"-DOCSTART- -DOCSTART- O\n"
          b"Wij Pron O\nItali\x81EN B-LOC\n\n")


def write(tmp_path, data: bytes, name="d.txt"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_short_line_is_an_error_by_default_with_a_hint(tmp_path):
    p = write(tmp_path, DEFECT)
    with pytest.raises(DataError) as ei:
        read_conll(p, encoding="latin-1")
    assert ei.value.line == 3
    assert "expected 3 columns, found 2" in str(ei.value)
    assert "short_lines" in str(ei.value) and "--short-lines" in str(ei.value)


def test_pad_keeps_first_and_last_field_and_warns_once(tmp_path):
    p = write(tmp_path, DEFECT)
    with pytest.warns(ShortLineWarning) as rec:
        sents = read_conll(p, encoding="latin-1", short_lines="pad")
    assert [s.rows for s in sents] == [
        [["De", "Art", "O"], ["Belgi\x81EN", "_", "B-LOC"], ["bank", "N", "O"]],
        [["Wij", "Pron", "O"], ["Itali\x81EN", "_", "B-LOC"]]]
    assert [s.doc for s in sents] == [0, 1]
    assert sents[0].lines == [2, 3, 4]
    assert len(rec) == 1
    msg = str(rec[0].message)
    assert msg.startswith(f"{p}:3: 2 lines with fewer than 3 columns")
    assert "padded" in msg and "'_'" in msg


def test_pad_placeholder_and_column_names(tmp_path):
    p = write(tmp_path, DEFECT)
    with pytest.warns(ShortLineWarning, match=r"3 columns \(word pos ne\)"):
        sents = read_conll(p, encoding="latin-1", n_columns=3,
                           column_names=["word", "pos", "ne"], short_lines="pad", pad="NOPOS")
    assert sents[0].rows[1] == ["Belgi\x81EN", "NOPOS", "B-LOC"]


def test_skip_drops_the_short_lines(tmp_path):
    p = write(tmp_path, DEFECT)
    with pytest.warns(ShortLineWarning, match="skipped"):
        sents = read_conll(p, encoding="latin-1", short_lines="skip")
    assert [s.rows for s in sents] == [[["De", "Art", "O"], ["bank", "N", "O"]],
                                       [["Wij", "Pron", "O"]]]


def test_expected_width_is_the_usual_one_when_the_first_line_is_short(tmp_path):
    p = write(tmp_path, b"Belgi\x81EN B-LOC\nis V O\nmooi Adj O\n")
    with pytest.warns(ShortLineWarning):
        sents = read_conll(p, encoding="latin-1", short_lines="pad")
    assert sents[0].rows[0] == ["Belgi\x81EN", "_", "B-LOC"]


def test_long_lines_and_single_fields_stay_errors(tmp_path):
    p = write(tmp_path, b"a X O\nb Y Z O\n")
    with pytest.raises(DataError, match="expected 3 columns, found 4"):
        read_conll(p, short_lines="pad")
    p = write(tmp_path, b"a X O\nb Y O\nc\n")
    with pytest.raises(DataError, match="expected 3 columns, found 1") as ei:
        read_conll(p, short_lines="pad")
    assert ei.value.line == 3
    with pytest.warns(ShortLineWarning):  # skip drops any shorter line
        assert len(read_conll(p, short_lines="skip")[0]) == 2


def test_well_formed_file_gives_no_warning(tmp_path):
    p = write(tmp_path, b"a X O\nb Y O\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_conll(p, short_lines="pad")[0].rows == [["a", "X", "O"], ["b", "Y", "O"]]


def test_unknown_policy_and_bad_placeholder(tmp_path):
    p = write(tmp_path, b"a X O\n")
    with pytest.raises(ValueError, match="short_lines"):
        read_conll(p, short_lines="fix")
    with pytest.raises(ValueError, match="pad"):
        list(iter_conll(p, short_lines="pad", pad="no pad"))


SPEC = """columns word, pos, label
output label
obs w = word[t]
template state: y[t] ~ w
template transition: y[t-1..t]
train { max_iter = 5 }
"""


def test_cli_short_lines(capsys, tmp_path):
    data = write(tmp_path, DEFECT * 3)
    spec = tmp_path / "s.fgl"
    spec.write_text(SPEC, encoding="utf-8")
    model = tmp_path / "m.fglm"
    base = ["train", str(spec), "--train", str(data), "-o", str(model), "-q",
            "--encoding", "latin-1"]
    assert main(base) == 2
    assert "found 2" in capsys.readouterr().err
    assert main(base + ["--short-lines", "pad"]) == 0
    err = capsys.readouterr().err
    assert err.count("lines with fewer than") == 1  # read twice (streamed), warned once
    assert "6 lines with fewer than 3 columns (word pos label)" in err
    tagged = tmp_path / "tagged.txt"   # (written in the input's encoding, Latin-1)
    assert main(["tag", str(model), str(data), "--encoding", "latin-1",
                 "--short-lines", "pad", "-o", str(tagged)]) == 0
    out = tagged.read_text(encoding="latin-1")
    assert "Belgi\x81EN _ B-LOC " in out and out.startswith("-DOCSTART-")
    assert main(["eval", str(model), str(data), "--encoding", "latin-1",
                 "--short-lines", "skip"]) == 0
    captured = capsys.readouterr()
    assert "skipped" in captured.err and "processed 9 tokens" in captured.out


def test_api_short_lines(tmp_path):
    from fgl.api import CRF

    data = write(tmp_path, DEFECT * 3)
    spec = tmp_path / "s.fgl"
    spec.write_text(SPEC, encoding="utf-8")
    crf = CRF(spec)
    with pytest.raises(DataError, match="short_lines"):
        crf.fit_file(data, encoding="latin-1")
    with pytest.warns(ShortLineWarning, match=r"fewer than 3 columns \(word pos label\)"):
        crf.fit_file(data, encoding="latin-1", short_lines="pad")
    with pytest.warns(ShortLineWarning):
        sentences, pred = crf.predict_file(data, encoding="latin-1", short_lines="skip")
    assert sum(len(s) for s in sentences) == sum(len(p) for p in pred) == 9
    with pytest.warns(ShortLineWarning):
        assert "training data: 6 sequences, 15 tokens" in crf.explain(data, "latin-1",
                                                                      short_lines="pad")


# ---------------------------------------------------------------- real data

@pytest.mark.parametrize("split, sentences, tokens, docs, short", [
    ("testa", 2895, 37687, 74, 55), ("testb", 5195, 68875, 119, 112)])
def test_conll2002_dutch_reads_with_its_defects(split, sentences, tokens, docs, short):
    path = require_shared("data", "conll2002") / f"ned.{split}"
    with pytest.raises(DataError):
        read_conll(path, encoding="latin-1")
    with pytest.warns(ShortLineWarning, match=f": {short} lines with fewer than 3 columns"):
        sents = read_conll(path, encoding="latin-1", short_lines="pad")
    assert len(sents) == sentences
    assert sum(len(s) for s in sents) == tokens
    assert sorted({s.doc for s in sents}) == list(range(docs))
    assert all(len(r) == 3 for s in sents for r in s.rows)
    assert sum(r[1] == "_" for s in sents for r in s.rows) == short
    assert any("\x81" in r[0] for s in sents for r in s.rows)  # byte 0x81 kept


def test_conll2003_english_documents_and_iob1_entities():
    path = require_shared("data", "conll2003") / "eng.testa"
    sents = read_conll(path)
    assert len(sents) == 3250 and sum(len(s) for s in sents) == 51362
    assert len({s.doc for s in sents}) == 216
    gold = [s.column(-1) for s in sents]
    report = evaluate(gold, gold, scheme="iob")
    # IOB1: an entity may start with I-; 5942 entities in eng.testa (conlleval)
    assert report.overall.support == 5942 and report.overall.f1 == 100.0


def test_iob1_chunks():
    # I- after O or another type starts an entity; B- only splits two of one type
    tags = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG"]
    assert chunks(tags) == [("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5), ("ORG", 5, 7)]
