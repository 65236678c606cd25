"""Model files edited as their author would edit them: a new header with a
checksum that matches."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from fgl.io.model_files import _digest


def _arrays_of(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a model file, by member name."""
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k].copy() for k in z.files}


def with_header(path: Path, out: Path, edit, text=None) -> Path:
    """``path`` with its header edited (``edit(dict)``, then ``text(json)``)
    and a checksum that matches, as an edited file's author would make it."""
    arrays = _arrays_of(path)
    header = json.loads(arrays["header"].tobytes())
    edit(header)
    raw = json.dumps(header)
    raw = (text(raw) if text else raw).encode("utf-8")
    arrays["header"] = np.frombuffer(raw, dtype=np.uint8)
    arrays["digest"] = np.frombuffer(_digest(raw, arrays).encode("ascii"), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    out.write_bytes(buf.getvalue())
    return out
