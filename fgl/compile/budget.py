"""The memory budget a model may take while it trains.

The budget is, in order: what ``set_memory_budget`` set (the CLI's
``--max-memory``, the API), the ``FGL_MAX_MEMORY`` environment variable, or
half the machine's memory; ``fgl.sizes`` reads and writes the sizes.
"""
from __future__ import annotations

import os

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
