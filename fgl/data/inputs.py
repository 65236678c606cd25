"""Reading what fgl is given: standard input, and files with a size cap.

* ``-`` is standard input.  It is read once, when first needed, and kept:
  a command that reads its data twice (a chain model's training streams
  the file twice, ``fgl tag`` looks for ``-DOCSTART-`` lines) gets the same
  bytes both times.  Messages name it ``<stdin>``.
* A file is read whole (``read_capped``) from a regular file or a pipe,
  never more than a cap -- ``FGL_MAX_INPUT`` (default 2 GiB) for data,
  templates, lexicons and standard input; ``FGL_MAX_SPEC`` (default 1 MiB)
  for specs -- and never from a device (``/dev/zero``, ``/dev/urandom``, a
  terminal) or a socket, which are refused by what they are before
  anything is read.
* No line of a text file is longer than ``FGL_MAX_LINE`` (default 64
  MiB): a file larger than that is scanned as it is read, and refused at
  the ``file:line`` of the first longer line before the rest is read or any
  of it decoded (a 2 GiB file without a line break took 6.2 GB to refuse).
* A model file is a zip archive: it starts with ``PK\\x03\\x04``
  (``is_model_bytes``).
"""
from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from typing import IO

import numpy as np

from fgl.errors import DataError, FglError
from fgl.sizes import format_size, parse_size

STDIN = "-"
STDIN_NAME = "<stdin>"
MODEL_MAGIC = b"PK\x03\x04"
INPUT_ENV, SPEC_ENV, LINE_ENV = "FGL_MAX_INPUT", "FGL_MAX_SPEC", "FGL_MAX_LINE"
DEFAULT_INPUT, DEFAULT_SPEC, DEFAULT_LINE = 2 << 30, 1 << 20, 64 << 20
_CHUNK = 1 << 20
_SCAN = 16 << 20   # the bytes of a large file scanned for its lines at a time

_stdin_read: tuple[object, bytes] | None = None   # (the stream read, its bytes)


class InputError(FglError):
    """A file fgl will not read (a device, a socket, over the size cap)."""

    def __init__(self, message: str, file: str):
        self.message, self.file = message, file
        super().__init__(f"{file}: {message}")


# ---------------------------------------------------------------- what a path holds

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))


def kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def is_stdin(path) -> bool:
    """Whether ``path`` names standard input (``-``)."""
    return isinstance(path, (str, Path)) and str(path) == STDIN


def display_name(path) -> str:
    """The name of ``path`` in messages (``<stdin>`` for ``-``)."""
    return STDIN_NAME if is_stdin(path) else str(path)


def is_model_bytes(data: bytes) -> bool:
    """Whether ``data`` starts like a model file (a zip archive)."""
    return data[:4] == MODEL_MAGIC


# ---------------------------------------------------------------- reading

def input_limit(spec: bool = False) -> int:
    """The most bytes fgl reads from one data file (``spec``: one spec
    file): ``FGL_MAX_INPUT`` / ``FGL_MAX_SPEC`` when set, else 2 GiB / 1 MiB."""
    env = SPEC_ENV if spec else INPUT_ENV
    given = os.environ.get(env)
    if given:
        return parse_size(given, env)
    return DEFAULT_SPEC if spec else DEFAULT_INPUT


def line_limit() -> int:
    """The longest line fgl reads: ``FGL_MAX_LINE`` when set, else 64 MiB."""
    given = os.environ.get(LINE_ENV)
    return parse_size(given, LINE_ENV) if given else DEFAULT_LINE


class LineCheck:
    """The lines of a file fed to it in chunks (``feed``), refused at the
    first one longer than ``limit`` bytes: an InputError at ``name:line``.
    A line ends at LF, CR or CRLF, as ``fgl.io.conll`` reads them."""

    def __init__(self, name: str, limit: int | None = None):
        self.name, self.limit = name, line_limit() if limit is None else limit
        self.line, self.run, self.after_cr = 1, 0, False

    def feed(self, chunk: bytes) -> None:
        a = np.frombuffer(chunk, dtype=np.uint8)
        breaks = np.flatnonzero((a == 10) | (a == 13))
        if not len(breaks):
            self.run += len(chunk)
            if self.run > self.limit:
                self._refuse(self.line)
        else:
            lengths = np.diff(breaks, prepend=-1) - 1
            lengths[0] += self.run
            over = np.flatnonzero(lengths > self.limit)
            if len(over):
                self._refuse(self.line + _line_breaks(chunk[:breaks[over[0]]], self.after_cr))
            self.line += _line_breaks(chunk, self.after_cr)
            self.run = len(chunk) - int(breaks[-1]) - 1
            if self.run > self.limit:
                self._refuse(self.line)
        if chunk:
            self.after_cr = chunk[-1:] == b"\r"

    def _refuse(self, line: int) -> None:
        raise InputError(f"a line longer than the {format_size(self.limit)} fgl reads as one "
                         f"line (a file without line breaks?); set {LINE_ENV} (e.g. "
                         f"{LINE_ENV}=256M) to read longer ones", f"{self.name}:{line}")


def _line_breaks(chunk: bytes, after_cr: bool) -> int:
    """The line breaks in ``chunk`` (CRLF one; ``after_cr``: the chunk
    before ended with a CR, which a leading LF completes)."""
    n = chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
    return n - 1 if after_cr and chunk[:1] == b"\n" else n


def _scan_lines(fh: IO[bytes], name: str) -> None:
    """Read ``fh`` through in chunks, refusing a line over the cap
    (``LineCheck``), and go back to its start."""
    check = LineCheck(name)
    while chunk := fh.read(_SCAN):
        check.feed(chunk)
    fh.seek(0)


def _too_large(limit: int, spec: bool) -> str:
    env = SPEC_ENV if spec else INPUT_ENV
    return (f"larger than the {format_size(limit)} fgl reads from one "
            f"{'spec' if spec else 'input'} file; set {env} (e.g. {env}=8G) to read more")


def read_stream(stream: IO[bytes], name: str, limit: int | None = None,
                spec: bool = False) -> bytes:
    """Everything left in ``stream`` (standard input, a pipe), at most
    ``limit`` bytes (``input_limit``); an InputError beyond."""
    limit = input_limit(spec) if limit is None else limit
    parts, total = [], 0
    lines = LineCheck(name)
    while True:
        chunk = stream.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        if total > limit:
            raise InputError(_too_large(limit, spec), name)
        lines.feed(chunk)
    return b"".join(parts)


def read_capped(path: str | Path, limit: int | None = None, spec: bool = False) -> bytes:
    """The bytes of the file at ``path``, at most ``limit`` (default
    ``input_limit(spec)``).  OSError as ``open`` raises it for a missing
    or unreadable file (IsADirectoryError for a folder); an InputError for
    a device, a socket or a file over the cap — before reading it."""
    name = str(path)
    limit = input_limit(spec) if limit is None else limit
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        raise InputError(f"is {kind(st.st_mode)}, not a file fgl reads (give a regular file, "
                         "a pipe or - for standard input)", name)
    if st.st_size > limit:
        raise InputError(_too_large(limit, spec), name)
    with open(path, "rb") as fh:
        if st.st_size > line_limit() and stat.S_ISREG(st.st_mode):
            _scan_lines(fh, name)   # (a file no longer than the cap holds no longer line)
        first = fh.read(st.st_size + 1) if st.st_size else b""
        if 0 < len(first) <= st.st_size:    # the whole file, as stat said
            return first
        if len(first) > limit:
            raise InputError(_too_large(limit, spec), name)
        try:        # a file that grew, or one whose size stat does not know (/proc)
            rest = read_stream(fh, name, limit - len(first), spec)
        except InputError:
            raise InputError(_too_large(limit, spec), name) from None
        return first + rest


def stdin_bytes() -> bytes:
    """Everything on standard input, read once (later calls return the same
    bytes, until ``sys.stdin`` is another stream)."""
    global _stdin_read
    if _stdin_read is None or _stdin_read[0] is not sys.stdin:
        stream = getattr(sys.stdin, "buffer", None)
        if sys.stdin is None:
            data = b""
        elif stream is None:   # a text-only stand-in (embedding)
            text = sys.stdin.read()
            data = text.encode("utf-8") if isinstance(text, str) else text
        else:
            data = read_stream(stream, STDIN_NAME)   # at most FGL_MAX_INPUT bytes
        _stdin_read = (sys.stdin, data)
    return _stdin_read[1]


def read_bytes(path, what: str = "data file") -> bytes:
    """The bytes of ``path`` (``-``: standard input); a DataError at
    ``file:0`` for a file that cannot be read (``read_capped`` refuses
    devices and files over the size cap)."""
    if is_stdin(path):
        return stdin_bytes()
    name = str(path)
    try:
        return read_capped(path)
    except FileNotFoundError:
        raise DataError("no such file", name, 0) from None
    except IsADirectoryError:
        raise DataError(f"is a directory, expected a {what}", name, 0) from None
    except OSError as e:
        raise DataError(f"cannot read file: {e.strerror or e}", name, 0) from None
