"""The specs shipped with fgl, addressed by name: ``stdlib:hmm_like``.

The stdlib is installed with the package (``fgl/stdlib``, a link to the
repository's ``stdlib/`` that a wheel holds as a directory), so a name
resolves the same in a checkout and in an installed fgl; lexicons and other
files a stdlib spec names resolve relative to that directory, as for any
spec file.
"""
from __future__ import annotations

import difflib
from importlib.resources import files
from pathlib import Path

from fgl.errors import FglError

PREFIX = "stdlib:"


def stdlib_dir() -> Path:
    """The directory of the installed stdlib specs."""
    return Path(str(files("fgl") / "stdlib"))


def stdlib_names() -> list[str]:
    """The names of the stdlib specs (file names without ``.fgl``), sorted."""
    return sorted(p.stem for p in stdlib_dir().glob("*.fgl"))


def is_stdlib_name(spec: object) -> bool:
    """Whether ``spec`` (a string or path as a user gives it) is ``stdlib:NAME``."""
    return isinstance(spec, (str, Path)) and str(spec).startswith(PREFIX)


def resolve_spec_path(spec: str | Path) -> Path:
    """``stdlib:NAME`` or ``stdlib:NAME.fgl`` -> the installed file; any
    other path unchanged.  An unknown name is an ``FglError`` listing the
    names there are."""
    if not is_stdlib_name(spec):
        return Path(spec)
    name = str(spec)[len(PREFIX):].strip()
    name = name[:-len(".fgl")] if name.endswith(".fgl") else name
    path = stdlib_dir() / f"{name}.fgl"
    if name and "/" not in name and "\\" not in name and path.is_file():
        return path
    names = stdlib_names()
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    hint = f" (did you mean 'stdlib:{close[0]}'?)" if close else ""
    raise FglError(f"unknown stdlib spec '{spec}'{hint}; the stdlib holds: "
                   + ", ".join(f"stdlib:{n}" for n in names))
