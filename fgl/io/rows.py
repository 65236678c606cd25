"""Python rows as sentences: what ``fgl.api.CRF`` turns ``X`` (and ``y``)
into, and the documents of several files kept apart."""
from __future__ import annotations

from typing import Hashable, Iterable, Iterator, Sequence

import numpy as np

from fgl.data.sentence import Sentence
from fgl.errors import FglError

Rows = Sequence[Sequence[object]]


def as_sentences(X: Sequence[Rows], y: Sequence[Sequence] | None, what: str,
                  documents: Sequence[Hashable] | None = None) -> list[Sentence]:
    """Sequences as sentences; ``documents`` gives each sequence's document
    (consecutive sequences with the same id form one document, as between
    ``-DOCSTART-`` lines of a file); by default each sequence is its own."""
    if y is not None and len(X) != len(y):
        raise ValueError(f"{what}: X has {len(X)} sequences but y has {len(y)}")
    if documents is not None and len(documents) != len(X):
        raise ValueError(f"{what}: X has {len(X)} sequences but documents has "
                         f"{len(documents)} entries")
    out, doc = [], 0
    for i, rows in enumerate(X):
        if y is not None and len(rows) != len(y[i]):
            raise ValueError(f"{what}: sequence {i} has {len(rows)} tokens but {len(y[i])} labels")
        if any(isinstance(row, dict) for row in rows):
            raise FglError(f"{what}: sequence {i} holds a dict per token (sklearn-crfsuite's "
                           "feature dicts); fgl reads rows of the spec's column values, in the "
                           "order of `columns`, and its observations make the features; for "
                           "feature dicts use fgl.CRFEstimator() (docs/sklearn.md)")
        if i and (documents is None or documents[i] != documents[i - 1]):
            doc += 1
        fields = [[cell_text(v) for v in row] + (label_fields(y[i][j]) if y is not None else [])
                  for j, row in enumerate(rows)]
        out.append(Sentence(fields, list(range(1, len(rows) + 1)), doc,
                            f"<{what} sequence {i}>"))
    return out


def cell_text(v: object) -> str:
    if isinstance(v, (list, tuple, np.ndarray)):
        return ",".join(repr(float(x)) for x in v)
    return str(v)


def label_fields(v: object) -> list[str]:
    """A token's label(s): one per output layer."""
    return [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)]


def apart(files: Iterable[Iterable[Sentence]]) -> Iterator[Sentence]:
    """The sentences of several files in order, each file's document numbers
    shifted past the previous file's, so no document spans two files."""
    base = 0
    for sentences in files:
        top = -1
        for s in sentences:
            top = max(top, s.doc)
            yield s if not base else Sentence(s.rows, s.lines, s.doc + base, s.file)
        base += top + 1
