"""Where input comes from: several files and shell-style globs.

* ``expand`` turns a path, ``-`` (standard input, ``fgl.data.inputs``), a
  glob (``'data/tr*.txt'``, quoted so that fgl and not the shell expands
  it) or a list of them into the files, in the order given and sorted
  within each glob.  A path naming an existing file is taken as it is even
  when it holds glob characters; a glob that matches no file is an error
  naming it.

What kind of file a path holds (a model file, a spec, another toolkit's
file) is ``fgl.modelfile.file_kinds``.
"""
from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Sequence

from fgl.data.inputs import STDIN, display_name
from fgl.errors import FglError


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

