"""The sentence record: the tokens of one sequence and where they came from."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Sentence:
    """One sentence of a column file.

    ``rows[j]`` holds the fields of token ``j``; ``lines[j]`` is the 1-based
    line of the file it came from; ``doc`` is the document index (as
    ``fgl.io.conll`` counts documents); ``file`` is the path it was read from.
    """
    rows: list[list[str]]
    lines: list[int]
    doc: int
    file: str

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, j: int) -> list[str]:
        """Field ``j`` of every token (negative ``j`` counts from the end)."""
        return [row[j] for row in self.rows]
