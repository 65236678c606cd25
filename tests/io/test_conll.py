import io

import pytest

from fgl.data.sentence import Sentence
from fgl.errors import DataError, FglError
from fgl.io.conll import read_conll, write_conll


def write(tmp_path, data: bytes, name="d.txt"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_blank_lines_separate_sentences(tmp_path):
    p = write(tmp_path, b"a X\nb Y\n\nc Z\n")
    s = read_conll(p)
    assert [x.rows for x in s] == [[["a", "X"], ["b", "Y"]], [["c", "Z"]]]
    assert [x.lines for x in s] == [[1, 2], [4]]
    assert all(x.file == str(p) and x.doc == 0 for x in s)


def test_multiple_and_whitespace_only_blank_lines(tmp_path):
    p = write(tmp_path, b"\n\na X\n\n  \n\t\n\nb Y\nc Z\n\n\n")
    s = read_conll(p)
    assert [x.rows for x in s] == [[["a", "X"]], [["b", "Y"], ["c", "Z"]]]
    assert s[1].lines == [8, 9]


def test_no_trailing_newline(tmp_path):
    s = read_conll(write(tmp_path, b"a X\nb Y"))
    assert s[0].rows == [["a", "X"], ["b", "Y"]]


def test_docstart_boundaries_and_doc_counting(tmp_path):
    data = (b"-DOCSTART- -X- O\n\na X\nb Y\n-DOCSTART- -X- O\nc Z\n\n"
            b"-DOCSTART- -X- O\n\n-DOCSTART- -X- O\n\nd W\n\ne V\n")
    s = read_conll(write(tmp_path, data))
    # The DOCSTART line ends the sentence "a b" even without a blank line.
    assert [x.rows for x in s] == [[["a", "X"], ["b", "Y"]], [["c", "Z"]], [["d", "W"]],
                                   [["e", "V"]]]
    # First DOCSTART (nothing before it) keeps doc 0; two DOCSTARTs with no
    # tokens between them advance the counter once.
    assert [x.doc for x in s] == [0, 1, 2, 2]
    assert s[1].lines == [6]


def test_docstart_not_first_line(tmp_path):
    s = read_conll(write(tmp_path, b"a X\n\n-DOCSTART- O\nb Y\n"))
    assert [x.doc for x in s] == [0, 1]


@pytest.mark.parametrize("nl", [b"\r\n", b"\r", b"\n"])
def test_line_endings(tmp_path, nl):
    data = nl.join([b"a X", b"b Y", b"", b"c Z", b""])
    s = read_conll(write(tmp_path, data))
    assert [x.rows for x in s] == [[["a", "X"], ["b", "Y"]], [["c", "Z"]]]
    assert [x.lines for x in s] == [[1, 2], [4]]


def test_mixed_line_endings(tmp_path):
    data = b"a X\r\nb Y\r\rc Z\nd W\r\n\r\ne V\r"
    s = read_conll(write(tmp_path, data))
    assert [x.rows for x in s] == [[["a", "X"], ["b", "Y"]], [["c", "Z"], ["d", "W"]], [["e", "V"]]]
    assert [x.lines for x in s] == [[1, 2], [4, 5], [7]]


def test_bom_is_stripped(tmp_path):
    s = read_conll(write(tmp_path, "\ufeffa X\n".encode("utf-8")))
    assert s[0].rows == [["a", "X"]]


def test_tabs_and_runs_of_spaces(tmp_path):
    s = read_conll(write(tmp_path, b"a\tX  B-NP\n  b \t Y\tO  \n"))
    assert s[0].rows == [["a", "X", "B-NP"], ["b", "Y", "O"]]


def test_unicode_fields(tmp_path):
    text = "Zürich NE B-LOC\n東京 NE B-LOC\nnon\u00a0breaking X O\nline\u2028sep X O\n😀 SYM O\n"
    s = read_conll(write(tmp_path, text.encode("utf-8")))
    assert s[0].column(0) == ["Zürich", "東京", "non\u00a0breaking", "line\u2028sep", "😀"]
    assert len(s[0]) == 5


def test_latin1_with_encoding_param(tmp_path):
    p = write(tmp_path, "café N\nnaïve A\n".encode("latin-1"))
    s = read_conll(p, encoding="latin-1")
    assert s[0].column(0) == ["café", "naïve"]


def test_wrong_encoding_names_the_line(tmp_path):
    p = write(tmp_path, b"a X\r\nb Y\r\n\r\ncaf\xe9 N\n")
    with pytest.raises(DataError) as ei:
        read_conll(p)
    e = ei.value
    assert e.line == 4 and e.file == str(p)
    assert str(e).startswith(f"{p}:4: ")
    assert "utf-8" in str(e) and "--encoding latin-1" in str(e)


def test_column_count_error(tmp_path):
    p = write(tmp_path, b"a X B-NP\nb Y O\n\nc Z\n")
    with pytest.raises(DataError) as ei:
        read_conll(p, column_names=["word", "pos", "chunk"])
    msg = str(ei.value)
    assert msg.startswith(f"{p}:4: ")
    assert "expected 3 columns (word pos chunk), found 2" in msg


def test_more_fields_than_columns_suggests_naming_them(tmp_path):
    p = write(tmp_path, b"-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\n")
    with pytest.raises(DataError) as ei:
        read_conll(p, n_columns=3, column_names=["word", "pos", "label"])
    msg = str(ei.value)
    assert msg.startswith(f"{p}:3: expected 3 columns (word pos label), found 4")
    assert "e.g. `columns word, pos, _, label`" in msg


def test_n_columns_checks_first_line_too(tmp_path):
    p = write(tmp_path, b"a X\n")
    with pytest.raises(DataError) as ei:
        read_conll(p, n_columns=3)
    assert ei.value.line == 1
    assert "expected 3 columns, found 2" in str(ei.value)
    assert read_conll(p, n_columns=2)[0].rows == [["a", "X"]]


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(FglError) as ei:
        read_conll(tmp_path / "nope.txt")
    assert "nope.txt" in str(ei.value) and "no such file" in str(ei.value)
    assert read_conll(write(tmp_path, b"")) == []
    assert read_conll(write(tmp_path, b"\n\n  \n")) == []


def test_write_conll_format_and_extra():
    sents = [Sentence([["a", "X"], ["b", "Y"]], [1, 2], 0, "f"),
             Sentence([["c", "Z"]], [4], 0, "f")]
    buf = io.StringIO()
    write_conll(buf, sents, extra=[[["P1"], ["P2"]], [["P3"]]])
    assert buf.getvalue() == "a X P1\nb Y P2\n\nc Z P3\n\n"


def test_write_conll_rejects_bad_shapes_and_fields():
    sents = [Sentence([["a", "X"]], [1], 0, "f")]
    with pytest.raises(ValueError):
        write_conll(io.StringIO(), sents, extra=[[["p"], ["q"]]])
    with pytest.raises(ValueError):
        write_conll(io.StringIO(), [Sentence([["a b", "X"]], [1], 0, "f")])


def test_round_trip(tmp_path):
    data = "-DOCSTART- O\n\nZürich\tNE B-LOC\nis V O\n\n\n-DOCSTART- O\nx\u00a0y N O\r\n"
    p = write(tmp_path, data.encode("utf-8"))
    first = read_conll(p)
    q = tmp_path / "out.txt"
    with open(q, "w", encoding="utf-8", newline="") as f:
        write_conll(f, first, docstart=True)
    second = read_conll(q)
    assert [s.rows for s in second] == [s.rows for s in first]
    assert [s.doc for s in second] == [s.doc for s in first] == [0, 1]


def test_large_file(tmp_path):
    block = "".join(f"w{j} NN B-NP\n" for j in range(19)) + "\n"
    p = write(tmp_path, (block * 13000).encode())
    s = read_conll(p)
    assert len(s) == 13000 and sum(map(len, s)) == 247000
    assert s[-1].lines[-1] == 13000 * 20 - 1
