"""Sizes in bytes, read from text and written in words.

A size is bytes, or a number with a unit K, M, G or T (powers of 1024;
``B`` and ``iB`` suffixes accepted): "4G", "500M", "2.5GB", "1000000".
The memory budget (``fgl.compile.budget``) and the input caps
(``fgl.data.inputs``) read their settings with it.
"""
from __future__ import annotations

import re

from fgl.errors import FglError

_UNITS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)
MAX_SIZE = 1 << 60   # bytes: a size beyond is a typo (and 1e400 would overflow)


def parse_size(text: str, what: str = "a memory size") -> int:
    """Bytes of a size such as "4G", "500M", "2.5GB" or "1000000"."""
    m = _SIZE.fullmatch(str(text))
    if m is None or float(m.group(1)) * 1024 ** _UNITS[m.group(2).upper()] < 1:
        raise FglError(f"{what}: cannot read '{text}' as a size; give bytes or a number with "
                       "K, M, G or T (powers of 1024), e.g. 500M, 4G or 2.5GB")
    size = float(m.group(1)) * 1024 ** _UNITS[m.group(2).upper()]
    if not size <= MAX_SIZE:   # (1e400 is infinite)
        raise FglError(f"{what}: '{text}' is larger than any machine's memory or disk (at "
                       f"most {MAX_SIZE >> 40}T); give a size such as 500M, 4G or 2.5GB")
    return int(size)


def format_size(nbytes: float) -> str:
    """``nbytes`` in words: "512 bytes", "3.4 MB", "1.2 GB" (powers of 1024)."""
    for unit, power in (("TB", 4), ("GB", 3), ("MB", 2), ("KB", 1)):
        if nbytes >= 1024 ** power:
            value = nbytes / 1024 ** power
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{int(nbytes)} bytes"
