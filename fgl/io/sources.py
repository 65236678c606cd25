"""Where input comes from: several files, shell-style globs, and what kind
of file a path holds (a model file or a spec).

* ``expand`` turns a path, ``-`` (standard input, ``fgl.data.inputs``), a
  glob (``'data/tr*.txt'``, quoted so that fgl and not the shell expands
  it) or a list of them into the files, in the order given and sorted
  within each glob.  A path naming an existing file is taken as it is even
  when it holds glob characters; a glob that matches no file is an error
  naming it.
* A model file is a zip archive; a spec is text.  ``check_model_file``
  refuses a spec given where a model file is expected.
"""
from __future__ import annotations

import glob
import os
import re
from pathlib import Path
from typing import Sequence

from fgl.data.inputs import STDIN, display_name, is_model_bytes, is_stdin
from fgl.errors import FglError, ModelFileError


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
    """Raise ``NotAModelFile`` when ``path`` holds a spec instead of a
    model, and a ``ModelFileError`` naming the toolkit when another
    toolkit's model or template (``fgl.io.peer_files``)."""
    from fgl.io.peer_files import peer_file

    if is_stdin(path):
        return
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 16)
    except OSError:
        return
    if not data or is_model_bytes(data):
        return
    peer = peer_file(data)
    if peer is not None:
        raise ModelFileError(peer, display_name(path))
    if looks_like_spec(data, path):
        raise NotAModelFile(path)
