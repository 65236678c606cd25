"""The memory budget a model may take while it trains.

The budget is, in order: what ``set_memory_budget`` set (the CLI's
``--max-memory``, the API), the ``FGL_MAX_MEMORY`` environment variable, or
half the machine's memory; ``fgl.sizes`` reads and writes the sizes.
``release_freed_memory`` hands freed heap pages back between the phases
that allocate most (compiling, then training).
"""
from __future__ import annotations

import ctypes
import os
import sys

from fgl.errors import FglError
from fgl.sizes import parse_size

ENV = "FGL_MAX_MEMORY"
_given: int | None = None


def set_memory_budget(nbytes: int | None) -> int | None:
    """Set the budget in bytes (None: back to FGL_MAX_MEMORY or half the
    memory); returns the one set before, to restore it."""
    global _given
    if nbytes is not None and nbytes < 1:
        raise FglError(f"the memory budget must be a positive number of bytes; found {nbytes}")
    previous, _given = _given, nbytes
    return previous


def memory_budget() -> int:
    """Bytes a model may take while it trains."""
    if _given is not None:
        return _given
    env = os.environ.get(ENV)
    if env:
        return parse_size(env, ENV)
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def budget_source() -> str:
    """Where the budget in force comes from, and how to change it."""
    if _given is not None:
        return "as set by --max-memory"
    if os.environ.get(ENV):
        return f"as set by {ENV}"
    return f"half the memory; --max-memory or {ENV} sets it"


def release_freed_memory() -> None:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim``;
    nothing elsewhere): compiling frees many objects and arrays too small for
    their own mapping, whose pages would stay resident through training (on
    CoNLL-2000 with CRF++'s template some 110 MB)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass
