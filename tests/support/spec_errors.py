"""Helpers for the tests of spec errors: produce the error, then check its
location and the words of its message."""
from __future__ import annotations

import pytest

from fgl.errors import SpecError
from fgl.lang.checks import check_spec
from fgl.lang.parser import parse_spec

CHECK_FILE = "m.fgl"  # the file name the semantic-check snippets are parsed under


def syntax_error(text: str, file: str) -> SpecError:
    """The error parsing ``text`` raises."""
    with pytest.raises(SpecError) as info:
        parse_spec(text, file)
    return info.value


def check_errors(text: str, base_dir=None) -> list[SpecError]:
    """Every semantic error of the spec ``text`` (parsed as CHECK_FILE)."""
    return check_spec(parse_spec(text, CHECK_FILE), base_dir)


def one_error(errs: list[SpecError]) -> SpecError:
    assert len(errs) == 1, [str(e) for e in errs]
    return errs[0]


def assert_at(e: SpecError, file: str, line: int, col: int, words: tuple[str, ...]) -> None:
    """``e`` points at file:line:col and its message holds every word."""
    assert (e.file, e.line, e.col) == (file, line, col), str(e)
    for w in words:
        assert w in e.message, e.message
