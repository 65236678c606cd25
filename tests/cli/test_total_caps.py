"""Caps on what a spec or a file may cost in all (issue 47, item 8): the
rewritten size of a spec's regular expressions (FGL_MAX_REGEX), a spec's
lines and characters (FGL_MAX_SPEC_LINES, FGL_MAX_SPEC) and the length of
one line of any text file fgl reads (FGL_MAX_LINE, checked as the file is
read).  Each refusal is one located line, never a traceback; the caps are
set small here so that the files stay small."""
from __future__ import annotations

import io
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import run

from fgl.data.inputs import InputError, LineCheck, read_capped
from fgl.errors import SpecError
from fgl.lang.parser import parse_spec
from fgl.lang.regexes import translate

BASE = "columns word, label\noutput label\n"
DATA = "a A\nb B\n\nc A\n"


def one_line(err: str) -> str:
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


def test_regular_expressions_past_the_total_are_refused_at_the_pattern_that_passes_it(
        capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FGL_MAX_REGEX", "30000")   # (two \w, 11,553 characters each, fit)
    spec = tmp_path / "rx.fgl"
    spec.write_text(BASE + 'obs caps = regex(word[t], "^\\w+ing$")\n'
                    'obs lows = regex(word[t], "\\w+ed$") | regex(word[t], "^\\w+ing$")\n'
                    'template state: y[t] ~ caps, lows, regex(word[t], "^\\W")\n',
                    encoding="utf-8")
    code, out, err = run(capsys, "check", spec)
    assert code == 1 and out == "", err
    assert one_line(err).startswith(f"{spec}:5:51: the spec's regular expressions, rewritten "
                                    "for RE2, pass the 30,000 characters"), err
    assert "FGL_MAX_REGEX" in err
    monkeypatch.setenv("FGL_MAX_REGEX", "40000")
    assert run(capsys, "check", spec)[0] == 0


def test_a_pattern_past_the_room_left_is_refused_without_writing_it_out():
    assert len(translate("(?i)x\\d|\\w")) > 10_000
    with pytest.raises(ValueError, match="rewritten for RE2"):
        translate("|".join(f"{i}\\w" for i in range(800)), room=100_000)


@pytest.mark.parametrize("command", ["check", "explain"])
def test_a_spec_of_more_lines_than_the_cap_is_refused_before_it_is_parsed(
        capsys, tmp_path, monkeypatch, command):
    monkeypatch.setenv("FGL_MAX_SPEC_LINES", "50")
    spec, data = tmp_path / "long.fgl", tmp_path / "train.txt"
    spec.write_text(BASE + "".join(f"obs o{i} = word[t]\n" for i in range(60))
                    + "template state: y[t] ~ o0\n", encoding="utf-8")
    data.write_text(DATA, encoding="utf-8")
    extra = ["--train", data] if command == "explain" else []
    code, _, err = run(capsys, command, spec, *extra)
    assert code in (1, 2), err
    assert f"{spec}:51:1: the spec has 63 lines, more than the 50" in one_line(err), err
    assert "FGL_MAX_SPEC_LINES" in err
    monkeypatch.setenv("FGL_MAX_SPEC_LINES", "63")
    assert run(capsys, "check", spec)[0] == 0


def test_spec_text_given_whole_is_capped_as_a_spec_file_is(monkeypatch):
    monkeypatch.setenv("FGL_MAX_SPEC", "1K")
    with pytest.raises(SpecError, match="2,0.. characters, more than the 1 KB") as e:
        parse_spec(BASE + "#" * 2000 + "\ntemplate s: y[t] ~ word[t]\n", "model.fglm")
    assert (e.value.file, e.value.line) == ("model.fglm", 1)
    monkeypatch.setenv("FGL_MAX_SPEC_LINES", "many")
    with pytest.raises(Exception, match="FGL_MAX_SPEC_LINES='many': expected a positive"):
        parse_spec(BASE, "s.fgl")


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_line_past_the_cap_is_refused_at_its_line_as_the_data_is_read(
        capsys, tmp_path, monkeypatch, newline):
    monkeypatch.setenv("FGL_MAX_LINE", "1K")
    spec, data = tmp_path / "s.fgl", tmp_path / "train.txt"
    spec.write_text(BASE + "template s: y[t] ~ word[t]\n", encoding="utf-8")
    lines = ["a A", "b B", "", "c A", "x" * 1500 + " B", "d A"]
    data.write_bytes(newline.join(lines).encode())
    code, _, err = run(capsys, "train", spec, "--train", data, "-o", tmp_path / "m.fglm")
    assert code == 2, err
    assert one_line(err).startswith(f"fgl: {data}:5: a line longer than the 1 KB"), err
    assert "FGL_MAX_LINE" in err and not (tmp_path / "m.fglm").exists()


def test_standard_input_and_lexicons_are_capped_too(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FGL_MAX_LINE", "1K")
    spec = tmp_path / "s.fgl"
    spec.write_text(BASE + "template s: y[t] ~ word[t]\n", encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a A\n" + b"y" * 2000)))
    code, _, err = run(capsys, "explain", spec, "--train", "-")
    assert code == 2 and "<stdin>:2: a line longer than the 1 KB" in one_line(err), err
    words = tmp_path / "words.txt"
    words.write_text("ok\n" * 400 + "z" * 2000 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="a line longer") as e:
        read_capped(words)
    assert str(e.value).startswith(f"{words}:401: ")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\r", b"\r\n", b"x" * 7]), max_size=40),
       st.integers(1, 9), st.integers(1, 12))
def test_the_line_check_finds_the_first_long_line_whatever_the_chunks(parts, limit, cut):
    data = b"".join(parts)
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    first = next((i + 1 for i, x in enumerate(lines) if len(x) > limit), None)
    check = LineCheck("f", limit)
    try:
        for at in range(0, len(data), cut):
            check.feed(data[at:at + cut])
    except InputError as e:
        assert e.file == f"f:{first}", (data, limit)
    else:
        assert first is None, (data, limit)
