"""Shards of training data: which files (or byte ranges of files) each
worker reads, found on the driver without reading the data, and read on
the worker that owns them.

A shard is a whole file, or a byte range of a large column file cut at a
blank line (at a ``-DOCSTART-`` line for specs that link whole documents,
so no document is cut).  Shards are numbered in file order, then byte
order: their concatenation is the concatenation of the files.  Instances
never cross shards (a document split over two files is two documents).
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from fgl.data.sentence import Sentence
from fgl.errors import DataError, FglError
from fgl.io.conll import DOCSTART, check_short_lines, decode_text, parse_text
from fgl.io.graphs import read_graphs
from fgl.lang import ast

DEFAULT_SHARD_BYTES = 64 << 20   # byte ranges of at most about this size
_BLOCK = 1 << 20                 # bytes read at a time when counting lines


@dataclass(frozen=True)
class Shard:
    """Bytes ``start..end`` of ``path`` (``end`` None: to the end of the file)."""

    path: str
    start: int = 0
    end: int | None = None

    def label(self) -> str:
        """The shard as a user reads it: the file, with its byte range if partial."""
        if self.start == 0 and self.end is None:
            return self.path
        return f"{self.path}[{self.start}:{'' if self.end is None else self.end}]"


def expand(paths: str | Path | Sequence[str | Path]) -> list[str]:
    """The files named by a path, a glob (``data/part-*.txt``) or a list of
    them, in sorted order within each glob; an FglError names a pattern
    matching nothing."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        raise FglError("no training files given")
    out: list[str] = []
    for item in items:
        text = str(item)
        if glob.has_magic(text):
            found = sorted(p for p in glob.glob(text) if os.path.isfile(p))
            if not found:
                raise FglError(f"no training file matches {text!r}")
            out.extend(found)
        elif not os.path.isfile(text):
            raise DataError("no such file", text, 0)
        else:
            out.append(text)
    return out


def find_shards(paths: str | Path | Sequence[str | Path], *, by_document: bool = False,
                shard_bytes: int = DEFAULT_SHARD_BYTES, column_files: bool = True,
                min_shards: int = 1) -> list[Shard]:
    """The shards of the training files: every file, cut into byte ranges of
    about ``shard_bytes`` at blank lines (``by_document``: at ``-DOCSTART-``
    lines) when it is a column file larger than that — smaller ranges when
    that makes fewer than ``min_shards`` (e.g. two per worker).  Reads only
    a little past each cut point."""
    if shard_bytes < 1:
        raise FglError(f"shard_bytes must be a positive number of bytes; found {shard_bytes}")
    files = expand(paths)
    if len(files) < min_shards:
        total = sum(os.path.getsize(p) for p in files)
        shard_bytes = max(1, min(shard_bytes, -(-total // min_shards)))
    shards: list[Shard] = []
    for path in files:
        size = os.path.getsize(path)
        if not column_files or size <= shard_bytes:
            shards.append(Shard(path))
            continue
        cuts = [0]
        with open(path, "rb") as fh:
            while cuts[-1] + shard_bytes < size:
                cut = _next_cut(fh, cuts[-1] + shard_bytes, by_document)
                if cut is None or cut >= size:
                    break
                cuts.append(cut)
        bounds = cuts + [None]
        shards.extend(Shard(path, a, b) for a, b in zip(bounds, bounds[1:]))
    return shards


def _next_cut(fh, offset: int, by_document: bool) -> int | None:
    """The offset of the first line after ``offset`` that starts a sentence
    (the line after a blank one) or, ``by_document``, a ``-DOCSTART-`` line;
    None at the end of the file."""
    fh.seek(offset)
    fh.readline()                      # the rest of the line the offset falls in
    blank_before = False
    while True:
        pos = fh.tell()
        line = fh.readline()
        if not line:
            return None
        stripped = line.strip()
        if by_document:
            if stripped.split(maxsplit=1)[:1] == [DOCSTART.encode()]:
                return pos
        elif blank_before and stripped:
            return pos
        blank_before = not stripped


def read_shard(shard: Shard, spec: ast.Spec, encoding: str = "utf-8",
               short_lines: str = "error") -> list:
    """The sentences (or graphs, for ``input graph`` specs) of a shard, with
    the line numbers they have in the whole file."""
    if spec.input_format == "graph":
        return read_graphs(shard.path, spec, encoding)
    check_short_lines(short_lines)
    try:
        with open(shard.path, "rb") as fh:
            lines_before = _count_lines(fh, shard.start)
            fh.seek(shard.start)
            raw = fh.read() if shard.end is None else fh.read(shard.end - shard.start)
    except FileNotFoundError:
        raise DataError("no such file (on this worker: training files must be readable by "
                        "every worker, e.g. on a shared file system)", shard.path, 0) from None
    except OSError as e:
        raise DataError(f"cannot read file: {e.strerror or e}", shard.path, 0) from None
    text = decode_text(raw, encoding, shard.path)
    del raw
    sentences = list(parse_text(text, shard.path, None, [c.name for c in spec.columns],
                                short_lines))
    if lines_before:
        sentences = [Sentence(s.rows, [n + lines_before for n in s.lines], s.doc, s.file)
                     for s in sentences]
    return sentences


def _count_lines(fh, end: int) -> int:
    """Line breaks in the first ``end`` bytes of an open file."""
    count, left = 0, end
    fh.seek(0)
    while left > 0:
        block = fh.read(min(_BLOCK, left))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count


def by_document(spec: ast.Spec) -> bool:
    """Whether a template links positions across a whole document."""
    return any(t.within == "document" for t in spec.templates)
