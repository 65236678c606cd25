"""``fgl eval --docstart-tokens``: each ``-DOCSTART-`` line counted as a
token tagged right, as conlleval.pl counts it — more tokens and the
accuracy (right + d) / (tokens + d), the chunk scores unchanged — and a
refusal for standard input, whose lines cannot be read twice."""
from __future__ import annotations

import re

import pytest
from support.cli import run

TAGGED = """-DOCSTART- -X- O O

EU B-ORG B-ORG
rejects O O
German B-MISC B-PER
call O O

-DOCSTART- -X- O O

Peter B-PER B-PER
Blackburn I-PER O

-DOCSTART- -X- O O

BRUSSELS B-LOC B-LOC
"""


def _numbers(text: str) -> tuple[int, float, str]:
    tokens = int(re.search(r"processed (\d+) tokens", text).group(1))
    accuracy = float(re.search(r"accuracy: +([\d.]+)%", text).group(1))
    chunks = re.search(r"precision:.*", text).group(0)
    return tokens, accuracy, chunks


def test_docstart_lines_count_as_conlleval_counts_them(capsys, tmp_path):
    path = tmp_path / "tagged.txt"
    path.write_text(TAGGED)
    code, plain, err = run(capsys, "eval", "--tagged", path)
    assert code == 0, err
    code, counted, err = run(capsys, "eval", "--tagged", path, "--docstart-tokens")
    assert code == 0, err
    tokens, accuracy, chunks = _numbers(plain)
    assert (tokens, accuracy) == (7, pytest.approx(100 * 5 / 7, abs=0.01))
    tokens2, accuracy2, chunks2 = _numbers(counted)
    assert tokens2 == tokens + 3                                      # three -DOCSTART- lines
    assert accuracy2 == pytest.approx(100 * (5 + 3) / (7 + 3), abs=0.01)
    assert chunks2 == chunks                                           # chunk scores as they were


def test_standard_input_is_refused(capsys, tmp_path, monkeypatch):
    import io
    import sys
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TAGGED.encode())))
    code, _, err = run(capsys, "eval", "--tagged", "-", "--docstart-tokens")
    assert code != 0 and "not standard input" in err
