"""CoNLL-style column files: one token per line, sentences separated by blanks.

Format read by :func:`read_conll`:

* One token per line; its fields are separated by runs of spaces and/or tabs
  (only ``' '`` and ``'\\t'`` separate fields, so a non-breaking space or other
  Unicode whitespace inside a token stays part of that token).
* A blank or whitespace-only line ends the current sentence; several blank
  lines in a row are the same as one.
* A line whose first field is ``-DOCSTART-`` is a document boundary, not a
  token.  It also ends the current sentence.
* Line endings may be LF, CRLF or bare CR, mixed freely in one file.  A UTF-8
  byte-order mark at the start is ignored.

Document counting (``Sentence.doc``): the counter starts at 0 and a
``-DOCSTART-`` line advances it by one *only if the current document already
holds at least one token*.  So a file that begins with ``-DOCSTART-`` puts its
first sentences in document 0, and several ``-DOCSTART-`` lines with nothing
between them never create empty documents.  Document numbers are therefore
always 0, 1, 2, ... with no gaps.

Lines with the wrong number of fields (``short_lines``): every token line
must have the expected number of fields -- ``n_columns`` when given, else the
number on the first token line.  By default (``short_lines="error"``) any
other count raises :class:`DataError` at ``file:line``.  Real corpora have
defects: in CoNLL-2002 Dutch (ned.*) some lines lost the space between word
and POS tag (``Belgi\x81EN B-LOC``), leaving 2 fields where 3 are expected.
Two other policies read such files as they are, without editing them:

* ``short_lines="pad"``: a line with *fewer* fields (at least 2) keeps its
  first field as the token's first column and its last field as the last
  column (the label, in a labelled file); the missing middle columns get the
  placeholder ``pad`` (default ``"_"``, the CoNLL-U "unspecified" mark).
  ``Belgi\x81EN B-LOC`` becomes ``Belgi\x81EN _ B-LOC``: the run-together
  word is kept as one unknown word, the token and its gold label stay in
  the sentence, so token counts and evaluation are unchanged.
* ``short_lines="skip"``: a line with fewer fields is dropped (the sentence
  loses that token).

Either way one :class:`ShortLineWarning` per file reports how many lines
were padded or skipped and the ``file:line`` of the first.  In both modes,
when ``n_columns`` is not given the expected count is the one most token
lines of the file have (so a defective first line does not set it).  A line
with *more* fields than expected, or a single-field line under ``pad``, is
still an error: which fields belong where cannot be known.
"""
from __future__ import annotations

import gc
import io
import re
import warnings
from collections import Counter
from typing import Iterator, TextIO

from fgl.data.inputs import display_name, read_bytes
from fgl.data.sentence import Sentence
from fgl.errors import DataError, shorten

DOCSTART = "-DOCSTART-"

SHORT_LINES = ("error", "pad", "skip")
"""The policies for token lines with fewer fields than expected."""


class ShortLineWarning(UserWarning):
    """Lines with too few fields were padded or skipped (``short_lines``)."""

LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Whitespace that str.split() would split on but that is part of a field here.
_OTHER_SPACE = re.compile("[\x0b\x0c\x1c-\x1f\x85\xa0\u1680"
                          "\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def _columns_phrase(n: int, names: list[str] | None) -> str:
    word = "column" if n == 1 else "columns"
    if names and len(names) == n:
        return f"{n} {word} ({' '.join(names)})"
    return f"{n} {word}"


def decode_text(raw: bytes, encoding: str, path: str) -> str:
    """``raw`` decoded, without a byte-order mark; a DataError at the line of
    the first byte not valid in ``encoding``."""
    try:
        text = raw.decode(encoding)
    except LookupError:
        raise DataError(f"unknown encoding {encoding!r}", path, 0) from None
    except UnicodeDecodeError as e:
        # Line of the first bad byte: count line breaks in what precedes it.
        before = raw[:e.start].decode(encoding, errors="replace")
        line = len(LINE_BREAK.findall(before)) + 1
        bad = raw[e.start:e.end][:8]
        what = ("byte " if len(bad) == 1 else "bytes ") + " ".join(f"0x{b:02x}" for b in bad)
        what += " is" if len(bad) == 1 else " are"
        latin = encoding.lower().replace("_", "-") in ("latin-1", "latin1", "iso-8859-1")
        hint = "" if latin else "; if the file is Latin-1, try --encoding latin-1"
        raise DataError(
            f"{what} not valid {encoding}, expected {encoding} text{hint}",
            path, line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def read_conll(path, encoding: str = "utf-8", n_columns: int | None = None,
               column_names: list[str] | None = None, *, short_lines: str = "error",
               pad: str = "_") -> list[Sentence]:
    """Read a column file into sentences (see the module docstring);
    ``path`` ``-`` is standard input (``fgl.data.inputs``, named ``<stdin>``).

    Every token line must have the same number of fields: ``n_columns`` when
    given, else the number on the first token line.  ``column_names`` only
    serves to name the columns in error messages.  ``short_lines`` says what
    to do with a line with fewer fields: ``"error"`` (default), ``"pad"``
    (fill the missing middle columns with ``pad``, keeping the first and the
    last field) or ``"skip"`` (drop it); see the module docstring.  Raises
    :class:`DataError` (``file:line: message``) for a missing/unreadable
    file, bytes invalid in ``encoding``, or a line with the wrong number of
    fields.  An empty file gives an empty list.
    """
    # Building many small lists triggers the cyclic GC over and over although
    # nothing here forms cycles; pausing it makes reading ~3x faster.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return list(iter_conll(path, encoding, n_columns, column_names,
                               short_lines=short_lines, pad=pad))
    finally:
        if gc_was_enabled:
            gc.enable()


def iter_conll(path, encoding: str = "utf-8", n_columns: int | None = None,
               column_names: list[str] | None = None, *, short_lines: str = "error",
               pad: str = "_") -> Iterator[Sentence]:
    """The sentences of a column file one at a time, as :func:`read_conll`
    reads them (the same checks, policies and errors), holding only the
    file's text and the current sentence."""
    name = display_name(path)
    check_short_lines(short_lines, pad)
    raw = read_bytes(path)
    text = decode_text(raw, encoding, name)
    del raw
    return parse_text(text, name, n_columns, column_names, short_lines, pad)


def check_short_lines(short_lines: str, pad: str = "_") -> None:
    """Refuse an unknown ``short_lines`` policy or an unusable placeholder."""
    if short_lines not in SHORT_LINES:
        raise ValueError(f"short_lines must be one of {', '.join(SHORT_LINES)}, "
                         f"not {short_lines!r}")
    if not pad or " " in pad or "\t" in pad or "\n" in pad or "\r" in pad:
        raise ValueError(f"pad must be a non-empty field without whitespace, not {pad!r}")


def _usual_width(text: str) -> int | None:
    """The number of fields most token lines have (None: no token lines)."""
    counts = Counter(len(line.split(None, 50)) for line in text.split("\n")
                     if line and not line.isspace() and not line.lstrip().startswith(DOCSTART))
    return counts.most_common(1)[0][0] if counts else None


def parse_text(text: str, name: str, n_columns: int | None,
               column_names: list[str] | None, short_lines: str = "error",
               pad: str = "_") -> Iterator[Sentence]:
    """The sentences of a column file's decoded ``text`` (module docstring),
    named ``name`` in messages."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\t" in text:
        text = text.replace("\t", " ")
    # str.split() (fast, in C) splits on all Unicode whitespace; only spaces
    # and tabs separate fields, so use it only when no other whitespace occurs.
    simple = _OTHER_SPACE.search(text) is None

    expected = n_columns
    if expected is None and short_lines != "error":
        expected = _usual_width(text)
    mended, first_mended = 0, 0
    rows: list[list[str]] = []
    nums: list[int] = []
    doc = 0
    doc_has_tokens = False
    for lineno, line in enumerate(io.StringIO(text, newline="\n"), 1):
        if simple:
            fields = line.split()
        elif not line or line.isspace():
            fields = []
        else:
            fields = line.rstrip("\n").split(" ")
            if "" in fields:
                fields = [f for f in fields if f]
        if not fields:
            if rows:
                yield Sentence(rows, nums, doc, name)
                rows, nums = [], []
            continue
        if fields[0] == DOCSTART:
            if rows:
                yield Sentence(rows, nums, doc, name)
                rows, nums = [], []
            if doc_has_tokens:
                doc += 1
                doc_has_tokens = False
            continue
        if expected is None:
            expected = len(fields)
        elif len(fields) != expected:
            found = len(fields)
            if found < expected and (short_lines == "skip"
                                     or (short_lines == "pad" and found >= 2)):
                mended += 1
                first_mended = first_mended or lineno
                if short_lines == "skip":
                    continue
                fields = fields[:-1] + [pad] * (expected - found) + fields[-1:]
            else:
                hint = ""
                if found < expected and short_lines == "error":
                    hint = " (short_lines='pad' or 'skip', --short-lines, reads such lines)"
                elif 0 < found - expected <= 3 and column_names \
                        and len(column_names) == expected:
                    named = column_names[:-1] + ["_"] * (found - expected) + column_names[-1:]
                    hint = (" (a spec's `columns` names every field of a line, `_` one it does "
                            f"not read: e.g. `columns {', '.join(named)}`)")
                raise DataError(
                    f"expected {_columns_phrase(expected, column_names)}, "
                    f"found {found}: {shorten(line.strip())!r}{hint}",
                    name, lineno)
        rows.append(fields)
        nums.append(lineno)
        doc_has_tokens = True
    if rows:
        yield Sentence(rows, nums, doc, name)
    if mended:
        what = (f"padded the missing middle column(s) with {pad!r}" if short_lines == "pad"
                else "skipped them")
        lines = "line" if mended == 1 else "lines"
        warnings.warn(ShortLineWarning(
            f"{name}:{first_mended}: {mended} {lines} with fewer than "
            f"{_columns_phrase(expected, column_names)} (the first here); {what}"),
            stacklevel=2)


def _check_field(field: str, i: int, j: int) -> None:
    if not field or " " in field or "\t" in field or "\n" in field or "\r" in field:
        raise ValueError(
            f"sentence {i}, token {j}: field {field!r} is empty or contains whitespace "
            "and would not survive a round-trip through a column file")


def docstart_fields(path, encoding: str = "utf-8") -> list[str] | None:
    """The fields of the file's first ``-DOCSTART-`` line (``-DOCSTART- -X-
    -X- O`` in CoNLL-2003), or None when it has none (``-``: standard input)."""
    text = read_bytes(path).decode(encoding, errors="replace")
    at = text.find(DOCSTART)
    while at >= 0:
        start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
        line = LINE_BREAK.split(text[start:], maxsplit=1)[0]
        fields = line.replace("\t", " ").split(" ")
        fields = [f for f in fields if f]
        if fields and fields[0] == DOCSTART:
            return fields
        at = text.find(DOCSTART, at + 1)
    return None


def write_conll(stream: TextIO, sentences: list[Sentence],
                extra: list[list[list[str]]] | None = None, *,
                docstart: bool = False, docstart_row: list[str] | None = None,
                before: list[str] | None = None) -> None:
    """Write sentences as a column file, one blank line after each sentence.

    ``extra[i][j]`` (if given) is a list of fields appended to token ``j`` of
    sentence ``i`` (e.g. predicted labels).  Fields are joined by one space.
    With ``docstart=True`` a ``-DOCSTART-`` line (followed by a blank line)
    is written before the first sentence and whenever ``doc`` changes, so that
    :func:`read_conll` gives back the same document numbers; ``docstart_row``
    (fields starting with ``-DOCSTART-``) is that line's fields, so that it
    can have as many as the token lines (conlleval reads only such files).
    ``before[i]`` (if given) is a line written before sentence ``i``'s
    tokens (``fgl tag --nbest``'s ``# rank probability``).  Raises
    ``ValueError`` if ``extra`` does not match the sentences' shape or a field
    is empty or contains whitespace.
    """
    if extra is not None and len(extra) != len(sentences):
        raise ValueError(f"extra has {len(extra)} sentences, expected {len(sentences)}")
    out: list[str] = []
    prev_doc = None
    boundary = " ".join(docstart_row) if docstart_row else DOCSTART
    for i, sent in enumerate(sentences):
        if docstart and sent.doc != prev_doc:
            out.append(boundary + "\n\n")
            prev_doc = sent.doc
        ext = extra[i] if extra is not None else None
        if before is not None:
            out.append(before[i] + "\n")
        if ext is not None and len(ext) != len(sent.rows):
            raise ValueError(f"extra for sentence {i} has {len(ext)} tokens, "
                             f"expected {len(sent.rows)}")
        for j, row in enumerate(sent.rows):
            fields = row if ext is None else [*row, *ext[j]]
            for f in fields:
                _check_field(f, i, j)
            out.append(" ".join(fields))
            out.append("\n")
        out.append("\n")
        if len(out) > 65536:
            stream.write("".join(out))
            out.clear()
    stream.write("".join(out))
