"""conlleval's way of counting ``-DOCSTART-`` lines (``fgl eval
--docstart-tokens``).

conlleval.pl reads a ``-DOCSTART- -X- -X- O O`` line as a token whose gold
and predicted tags are both ``O`` — right by construction — so its token
count and accuracy include one correct token per such line; fgl reads the
line as a document boundary and counts tokens only (so on CoNLL-2003's
testb a tagged file scores 92.91 % accuracy under conlleval and 92.84 %
under fgl).  Chunk counts and scores do not change: an ``O`` token is in
no chunk, and both end a chunk at the line.  With the option, fgl adds the
file's ``-DOCSTART-`` lines to the tokens and to the right ones, as
conlleval does.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from fgl.data.inputs import is_stdin, read_bytes
from fgl.errors import FglError
from fgl.evaluation.evaluate import Report
from fgl.io.conll import DOCSTART, LINE_BREAK


def docstart_lines(paths: Sequence[str], encoding: str = "utf-8") -> int:
    """How many lines of the files ``paths`` start with ``-DOCSTART-``."""
    if any(is_stdin(p) for p in paths):
        raise FglError("--docstart-tokens counts the -DOCSTART- lines of the data file: give "
                       "a file, not standard input")
    n = 0
    for path in paths:
        text = read_bytes(path).decode(encoding, errors="replace")
        n += sum(1 for line in LINE_BREAK.split(text) if line.split()[:1] == [DOCSTART])
    return n


def counting_docstarts(report: Report, lines: int) -> Report:
    """``report`` with ``lines`` more tokens, all tagged right (conlleval's
    token count and accuracy); everything else as it is."""
    if lines == 0 or report.tokens == 0:
        return report
    right = report.accuracy * report.tokens / 100.0
    tokens = report.tokens + lines
    return dataclasses.replace(report, tokens=tokens, accuracy=100.0 * (right + lines) / tokens)
