"""Where the repository, its specs and the shared data are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STDLIB = REPO / "stdlib"
HMM = STDLIB / "hmm_like.fgl"


def shared_dir() -> Path:
    """The ``shared`` directory that sits next to the repository root
    (``<repo>/../shared``). It may not exist (e.g. in a fresh clone)."""
    return REPO.parent / "shared"


def require_shared(*parts: str) -> Path:
    """Path ``shared_dir()/parts...``; skips the calling test when it is absent."""
    p = shared_dir().joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared resource not available: {p} "
                    f"(the ../shared directory next to the repo is absent)")
    return p
