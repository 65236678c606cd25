"""One streaming pass over labelled column files that counts what ``fgl
explain``'s estimate needs (``fgl.compile.estimate``): each sequence's
length, the gold label of every token, and the distinct values of each
column the spec reads — without making a ``Sentence`` of any line.

The file's bytes are taken in chunks of whole lines: numpy counts each
line's fields (runs of anything but spaces, tabs and line breaks), a blank
line or a ``-DOCSTART-`` line ends a sequence, and ``bytes.split`` gives
the fields, whose columns are taken by stride into sets.  Only data that
``fgl.io.conll`` reads the same way is counted here: every token line with
the spec's columns (label included), no whitespace inside fields other
than spaces and tabs, numbers that parse, vectors of one dimension, bags of
words within ``MAX_ITEMS``.  Anything else gives None, and the caller reads
the data with ``fgl.io.conll``, whose located messages say what is wrong
(or which reads it by its ``short_lines`` policy).
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from fgl.compile.estimate import ColumnCounts, Tally, token_columns
from fgl.data.inputs import display_name, read_bytes
from fgl.io.conll import DOCSTART, check_short_lines, decode_text
from fgl.lang import ast
from fgl.lang.items import MAX_ITEMS, bag_conjunctions, longest_segment, most_items

CHUNK = 1 << 21   # bytes read at a time (whole lines)
_DOC = DOCSTART.encode()
_SEPARATORS = (ord(" "), ord("\t"), ord("\n"))
# whitespace that str.split() splits on but a column file keeps inside a field
_OTHER_SPACE = re.compile(r"[^\S \t\n\r]")
_ASCII_OTHER_SPACE = b"\x0b\x0c\x1c\x1d\x1e\x1f"


def tally_columns(spec: ast.Spec, files: Sequence[str], encoding: str = "utf-8",
                  short_lines: str = "error") -> Tally | None:
    """The counts of ``files`` read in order as one labelled column file
    (module docstring); None when the data is not plain enough to count
    this way.  Unreadable files and bytes not valid in ``encoding`` are the
    DataErrors ``fgl.io.conll`` raises."""
    check_short_lines(short_lines)
    if spec.input_format != "conll":
        return None
    counter = _Counter(spec)
    for path in files:
        data = _plain_bytes(path, encoding)
        if data is None or not counter.read(data):
            return None
    return counter.tally()


def _plain_bytes(path, encoding: str) -> bytes | None:
    """The file's text as UTF-8 with ``\\n`` line ends and a final one;
    None when whitespace other than spaces, tabs and line breaks occurs."""
    text = decode_text(read_bytes(path), encoding, display_name(path))
    if not text.isascii() and _OTHER_SPACE.search(text):
        return None
    data = text.encode("utf-8", "surrogatepass")
    del text
    if len(data.translate(None, _ASCII_OTHER_SPACE)) != len(data):
        return None
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data if data.endswith(b"\n") else data + b"\n"


def _fields_per_line(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The number of fields on each line of ``buf`` (whole lines, each
    ending with ``\\n``), and where each line ends."""
    inside = buf != _SEPARATORS[0]
    for sep in _SEPARATORS[1:]:
        inside &= buf != sep
    starts = inside.copy()
    starts[1:] &= ~inside[:-1]
    ends = np.flatnonzero(buf == _SEPARATORS[2])
    line_starts = np.zeros(len(ends), dtype=np.int64)
    line_starts[1:] = ends[:-1] + 1
    return np.add.reduceat(starts.view(np.uint8), line_starts, dtype=np.int64), ends


def _doc_lines(chunk: bytes, ends: np.ndarray, first: np.ndarray, flat: list[bytes]
               ) -> list[int]:
    """The lines of ``chunk`` whose first field is ``-DOCSTART-``."""
    found, at = set(), chunk.find(_DOC)
    while at >= 0:
        line = int(np.searchsorted(ends, at))
        if flat[first[line]] == _DOC:
            found.add(line)
        at = chunk.find(_DOC, at + 1)
    return sorted(found)


def _without_lines(flat: list[bytes], lines: list[int], first: np.ndarray,
                   counts: np.ndarray) -> list[bytes]:
    """``flat`` without the fields of ``lines``."""
    out, at = [], 0
    for line in lines:
        out += flat[at:first[line]]
        at = int(first[line] + counts[line])
    return out + flat[at:]


class _Counter:
    """The running counts of one pass (``tally_columns``)."""

    def __init__(self, spec: ast.Spec):
        self.spec = spec
        names = [c.name for c in spec.columns]
        self.width, self.label = len(names), names.index(spec.outputs[0])
        self.read_columns = [(j, n) for j, n in enumerate(names)
                             if n != ast.SKIP_COLUMN and j != self.label]
        self.seen: dict[str, set[bytes]] = {n: set() for _, n in self.read_columns}
        self.labels: dict[bytes, int] = {}   # (the label column's distinct values)
        self.ids: list[np.ndarray] = []
        self.lengths: list[np.ndarray] = []
        self.open_run = 0   # tokens of a sequence the last chunk ended inside

    def read(self, data: bytes) -> bool:
        """Count one file's bytes (``_plain_bytes``); False when a token
        line has other than the spec's columns."""
        pos = 0
        while pos < len(data):
            end = data.find(b"\n", pos + CHUNK) + 1 or len(data)
            if not self._chunk(data[pos:end]):
                return False
            pos = end
        self._close_run()   # (no sequence spans two files)
        return True

    def _chunk(self, chunk: bytes) -> bool:
        counts, ends = _fields_per_line(np.frombuffer(chunk, dtype=np.uint8))
        flat = chunk.split()
        token = counts > 0
        if _DOC in chunk:
            first = np.cumsum(counts) - counts   # each line's first field in ``flat``
            doc = _doc_lines(chunk, ends, first, flat)
            token[doc] = False
            flat = _without_lines(flat, doc, first, counts)
        if (counts[token] != self.width).any():
            return False
        self._runs(token)
        for j, name in self.read_columns:
            self.seen[name].update(flat[j::self.width])
        gold = flat[self.label::self.width]
        for y in set(gold).difference(self.labels):
            self.labels[y] = len(self.labels)
        self.ids.append(np.fromiter(map(self.labels.__getitem__, gold), dtype=np.int32,
                                    count=len(gold)))
        return True

    def _runs(self, token: np.ndarray) -> None:
        """Add the lengths of the runs of token lines; a run reaching the
        chunk's end stays open into the next."""
        edges = np.diff(np.concatenate(([0], token.view(np.int8), [0])))
        lengths = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
        if not len(lengths):
            self._close_run()
            return
        if token[0]:
            lengths[0] += self.open_run
        elif self.open_run:
            self._close_run()
        self.open_run = 0
        if token[-1]:
            self.open_run, lengths = int(lengths[-1]), lengths[:-1]
        self.lengths.append(lengths)

    def _close_run(self) -> None:
        if self.open_run:
            self.lengths.append(np.array([self.open_run], dtype=np.int64))
            self.open_run = 0

    def tally(self) -> Tally | None:
        """The counts, or None when the data has no sequences or a column's
        values would be refused when read (numbers, vectors, bags)."""
        self._close_run()
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int64)
        if not len(lengths):
            return None
        self.seen[self.spec.outputs[0]] = set(self.labels)
        kinds = {c.name: c.kind for c in self.spec.columns}
        dims: dict[str, int] = {}
        for name, values in self.seen.items():
            if kinds[name] != "text" and not _numbers_read(kinds[name], values, name, dims):
                return None
        words, most = {}, {}
        for name in token_columns(self.spec) | _bag_columns(self.spec):
            texts = [v.decode("utf-8", "surrogatepass").split()
                     for v in self.seen.get(name, ())]
            words[name] = len(set().union(*texts))
            most[name] = max(map(len, texts), default=0)
        if not _bags_within_limit(self.spec, most):
            return None
        tokens = token_columns(self.spec)
        return Tally([y.decode("utf-8", "surrogatepass") for y in self.labels],
                     np.concatenate(self.ids), lengths,
                     ColumnCounts({n: len(s) for n, s in self.seen.items()},
                                  {n: words[n] for n in tokens},
                                  {n: most[n] for n in tokens}, dims))


def _numbers_read(kind: str, values: set[bytes], name: str, dims: dict[str, int]) -> bool:
    """Whether every value of a number or vector column reads as
    ``fgl.features.observations`` reads it: finite numbers within
    ``MAX_MAGNITUDE``, a vector's of one dimension everywhere (put in
    ``dims``)."""
    from fgl.features.observations import MAX_MAGNITUDE

    sizes = set()
    for value in values:
        text = value.decode("utf-8", "surrogatepass")
        try:
            numbers = [float(x) for x in text.split(",")] if kind == "vector" else [float(text)]
        except ValueError:
            return False
        if not all(abs(v) <= MAX_MAGNITUDE for v in numbers):   # (also NaN)
            return False
        sizes.add(len(numbers))
    if kind == "vector":
        if len(sizes) != 1:
            return False
        dims[name] = sizes.pop()
    return True


def _bag_columns(spec: ast.Spec) -> set[str]:
    """The columns whose bags of words a conjunction reads."""
    return set().union(*(columns for _, columns in bag_conjunctions(spec)))


def _bags_within_limit(spec: ast.Spec, most: dict[str, int]) -> bool:
    """Whether no conjunction of bags gives more than ``MAX_ITEMS`` items
    at a position with the most words any text holds (so no sentence is
    refused for it)."""
    named = {d.name: d for d in spec.observations}
    bags = {c: most[c] for c in _bag_columns(spec) if c in most}
    return all(most_items(conj, named, longest_segment(spec), bags) <= MAX_ITEMS
               for conj, _ in bag_conjunctions(spec))
