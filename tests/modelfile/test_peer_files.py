"""The other toolkits' files given where fgl expects its own: each named,
with what to do (``fgl.modelfile.peer_files``, ``fgl.lang.peer_templates``).
The fixtures are written here in each toolkit's own header format (checked
against files CRF++ 0.59, Wapiti 1.5 and CRFsuite 0.12 wrote)."""
from __future__ import annotations

import struct

import pytest
from support.cli import run

from fgl import CRF
from fgl.errors import ModelFileError, SpecError
from fgl.lang.parser import parse_spec

TEMPLATE = "# Unigram\nU00:%x[-1,0]\nU01:%x[0,0]/%x[0,1]\n\n# Bigram\nB\n"

PEER_FILES = {
    # CRF++ binary: version 100 (uint32), cost factor (double), maxid, xsize, ... the
    # labels and templates as NUL-terminated strings
    "crfpp.model": (struct.pack("<Id", 100, 1.0) + struct.pack("<III", 18, 1, 4)
                    + b"A\x00B\x00U00:%x[-1,0]\x00B\x00" + bytes(64),
                    "a CRF++ model file (binary)"),
    "crfpp.model.txt": (b"version: 100\ncost-factor: 1\nmaxid: 18\nxsize: 1\n\nA\nB\n\n"
                        b"U00:%x[-1,0]\nB\n\n12 B\n0 U00:_B-1\n",
                        "a CRF++ model file (text, crf_learn -t)"),
    "wapiti.mod": (b"#mdl#2#7\n#rdr#3/0/0\n12:u00:%x[-1,0],\n1:b,\n#qrk#2\n1:A,\n1:B,\n",
                   "a Wapiti model file"),
    "model.crfsuite": (b"lCRFp\x11\x00\x00FOMCd\x00\x00\x00" + bytes(48), "a CRFsuite model file"),
    "template": (TEMPLATE.encode(), "a CRF++ (or Wapiti) feature template"),
}


@pytest.mark.parametrize("name", sorted(PEER_FILES))
def test_peer_files_named_where_a_model_is_expected(capsys, tmp_path, name):
    data, named = PEER_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ModelFileError) as got:
        CRF.load(path)
    assert named in str(got.value) and str(path) in str(got.value)
    assert "fgl convert crfpp" in str(got.value) or "CRFEstimator" in str(got.value)
    (tmp_path / "data.txt").write_text("a A\n")
    code, _, err = run(capsys, "tag", path, tmp_path / "data.txt")
    assert code != 0 and named in err and "BadZipFile" not in err


def test_crfpp_template_given_as_a_spec():
    with pytest.raises(SpecError) as got:
        parse_spec(TEMPLATE, "chunk.template")
    e = got.value
    assert (e.file, e.line, e.col) == ("chunk.template", 2, 1)   # its first template line
    assert "CRF++" in e.message and "fgl convert crfpp chunk.template" in e.message


def test_other_syntax_errors_unchanged():
    """A spec with a mistake, or text that is only partly template lines, is not
    taken for a template."""
    for text in ("columns word, label\noutput label\nU00:%x[0,0]\n", "B\nU00\n"):
        with pytest.raises(SpecError) as got:
            parse_spec(text, "s.fgl")
        assert "CRF++" not in got.value.message
