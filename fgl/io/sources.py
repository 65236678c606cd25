"""Where input comes from: ``-`` (standard input), several files, shell-style
globs, and what kind of file a path holds (a model file or a spec).

* ``-`` is standard input.  It is read once, when first needed, and kept:
  a command that reads its data twice (a chain model's training streams
  the file twice, ``fgl tag`` looks for ``-DOCSTART-`` lines) gets the same
  bytes both times.  Messages name it ``<stdin>``.
* ``expand`` turns a path, a glob (``'data/tr*.txt'``, quoted so that fgl
  and not the shell expands it) or a list of them into the files, in the
  order given and sorted within each glob.  A path naming an existing
  file is taken as it is even when it holds glob characters; a glob that
  matches no file is an error naming it.
* A model file is a zip archive (it starts with ``PK\\x03\\x04``); a spec is
  text.  ``not_a_spec`` and ``not_a_model`` are the messages for one given
  where the other is expected.
"""
from __future__ import annotations

import glob
import os
import re
import sys
from pathlib import Path
from typing import Sequence

from fgl.errors import DataError, FglError, ModelFileError

STDIN = "-"
STDIN_NAME = "<stdin>"
MODEL_MAGIC = b"PK\x03\x04"

_stdin_read: tuple[object, bytes] | None = None   # (the stream read, its bytes)


def is_stdin(path) -> bool:
    return isinstance(path, (str, Path)) and str(path) == STDIN


def display_name(path) -> str:
    """The name of ``path`` in messages (``<stdin>`` for ``-``)."""
    return STDIN_NAME if is_stdin(path) else str(path)


def stdin_bytes() -> bytes:
    """Everything on standard input, read once (later calls return the same
    bytes, until ``sys.stdin`` is another stream)."""
    global _stdin_read
    if _stdin_read is None or _stdin_read[0] is not sys.stdin:
        from fgl.io.safe_files import read_stream

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
    ``file:0`` for a file that cannot be read (``fgl.io.safe_files``
    refuses devices and files over the size cap)."""
    from fgl.io.safe_files import read_bytes as read_capped

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


def expand(paths, what: str = "data") -> list[str]:
    """The files named by a path, ``-``, a glob or a list of them (module
    docstring).  An FglError for an empty list or a glob matching nothing;
    a path that is neither an existing file nor a glob is kept (reading it
    says what is wrong)."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        raise FglError(f"no {what} files given")
    out: list[str] = []
    for item in items:
        text = str(item)
        if text == STDIN or os.path.isfile(text) or not glob.has_magic(text):
            out.append(text)
            continue
        found = sorted(p for p in glob.glob(text) if os.path.isfile(p))
        if not found:
            raise FglError(f"no {what} file matches {text!r}")
        out.extend(found)
    return out


def files_label(files: Sequence[str]) -> str:
    """The files as one name (for messages)."""
    names = [display_name(f) for f in files]
    return names[0] if len(names) == 1 else ", ".join(names)


# ---------------------------------------------------------------- file kinds

def head(path, n: int = 4) -> bytes:
    """The first ``n`` bytes of ``path`` (empty when it cannot be read)."""
    if is_stdin(path):
        return stdin_bytes()[:n]
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return b""


def is_model_bytes(data: bytes) -> bool:
    """Whether ``data`` starts like a model file (a zip archive)."""
    return data[:4] == MODEL_MAGIC


def not_a_spec(path) -> FglError:
    """The error for a model file given where a spec is expected."""
    name = display_name(path)
    return FglError(f"{name} is an fgl model file, not a spec: a spec is the .fgl text a model "
                    f"is trained from; a model is read by fgl tag, eval, inspect and draw "
                    f"(`fgl inspect {name}` shows it)")


_SPEC_LINES = re.compile(r"(?m)^[ \t]*(columns[ \t]+\w+[ \t]*[,:]|template[ \t]+\w+[ \t]*:"
                         r"|obs[ \t]+\w+[ \t]*=)")


def looks_like_spec(data: bytes, path) -> bool:
    """Whether ``data`` (the start of a file) reads as an fgl spec: text
    named ``.fgl``, text that parses as a spec, or text with a line that
    only a spec has (``columns a, ...``, ``template t:``, ``obs o =``)."""
    if b"\x00" in data:
        return False
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        if e.start < len(data) - 4:   # not just a character cut at the end of ``data``
            return False
        text = data[:e.start].decode("utf-8-sig")
    if str(path).endswith(".fgl") or _SPEC_LINES.search(text) is not None:
        return True
    from fgl.lang.parser import parse_spec

    try:
        spec = parse_spec(text, str(path))
    except Exception:  # noqa: BLE001 - any text that does not parse is not a spec
        return False
    return bool(spec.columns)


class NotAModelFile(ModelFileError):
    """A spec (text) given where a model file is expected."""

    def __init__(self, path):
        self.file = display_name(path)
        self.message = (f"a spec (text), not a model file: train it first with `fgl train "
                        f"{self.file} --train DATA -o MODEL.fglm`, then give MODEL.fglm")
        Exception.__init__(self, f"{self.file} is {self.message}")


def check_model_file(path) -> None:
    """Raise ``NotAModelFile`` when ``path`` holds a spec instead of a model."""
    if is_stdin(path):
        return
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 16)
    except OSError:
        return
    if data and not is_model_bytes(data) and looks_like_spec(data, path):
        raise NotAModelFile(path)
