"""Shared pytest helpers for the fgl test-suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_TESTS_DIR = Path(__file__).resolve().parent
# Make ``import brute_force`` work regardless of pytest's import mode / rootdir.
if str(_TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(_TESTS_DIR))


def shared_dir() -> Path:
    """The ``shared`` directory that sits next to the repository root
    (``<repo>/../shared``). It may not exist (e.g. in a fresh clone)."""
    return Path(__file__).resolve().parents[1].parent / "shared"


def require_shared(*parts: str) -> Path:
    """Path ``shared_dir()/parts...``; skips the calling test when it is absent."""
    p = shared_dir().joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared resource not available: {p} "
                    f"(the ../shared directory next to the repo is absent)")
    return p


@pytest.fixture
def shared() -> Path:
    """Fixture form of :func:`shared_dir`; skips the test if it does not exist."""
    return require_shared()
