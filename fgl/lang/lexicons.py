"""Where the lexicon files a spec names (``lexicon(word[t], "cities.txt")``)
may be read from.

A spec may come from anyone (a shared folder, a model's author, a bug
report), and the lines of a lexicon are copied into the model file, so a
lexicon is read only from under the spec's own folder — the name resolved
against that folder, links and ``..`` followed — or from under a folder the
user allows by hand (``--lexicon-path FOLDER``, ``lexicon_folders``).  An
absolute name, or one whose ``..`` leaves those folders, is refused at its
place in the spec.  The file must be a regular file: a device, a FIFO or a
folder is refused by what it is.  A model file carries its lexicons; tagging
never reads one from a path.
"""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Iterable, Iterator

from fgl.data.inputs import kind
from fgl.errors import shorten

_allowed: tuple[Path, ...] = ()   # the --lexicon-path folders in force


class LexiconRefused(Exception):
    """A lexicon file fgl will not read, with why (the caller locates it)."""


@contextlib.contextmanager
def lexicon_folders(folders: Iterable[str | Path]) -> Iterator[None]:
    """Also allow lexicons from under ``folders`` while the block runs."""
    global _allowed
    before = _allowed
    _allowed = before + tuple(Path(f) for f in folders)
    try:
        yield
    finally:
        _allowed = before


def _inside(path: str, folder: Path) -> bool:
    root = os.path.realpath(folder)
    return os.path.commonpath([path, root]) == root


def lexicon_file(name: str, base_dir: Path) -> Path:
    """The file ``lexicon(e, name)`` reads in a spec whose folder is
    ``base_dir`` (links and ``..`` resolved); ``LexiconRefused`` when it is not a regular file, is
    outside the folders allowed (module docstring), or is missing."""
    shown = shorten(repr(name), 200)
    if "\0" in name:
        raise LexiconRefused(f"lexicon file {shown} holds a NUL character, which no file name "
                             "can")
    path = Path(name) if Path(name).is_absolute() else base_dir / name
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise LexiconRefused(f"cannot read lexicon file {shown}: {e.strerror or e}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        where = "" if str(path) == name else f" ({path})"
        raise LexiconRefused(f"lexicon file {shown}{where} is {kind(st.st_mode)}, not a "
                             "regular file; a lexicon is a text file of one entry a line")
    folders = (base_dir, *_allowed)
    if not any(_inside(real, f) for f in folders):
        allowed = " or ".join(os.path.realpath(f) for f in folders)
        raise LexiconRefused(
            f"lexicon file {shown} is outside the spec's folder {allowed}; fgl reads a spec's "
            "lexicons only from under its folder (a spec from elsewhere could otherwise copy "
            "any file into a model): move the file there, or allow its folder with "
            "--lexicon-path FOLDER")
    if st is None:
        raise LexiconRefused(f"lexicon file {shown} not found (looked for "
                             f"{shorten(str(path), 200)})")
    return Path(real)     # (the file checked, read whatever a link is changed to meanwhile)
