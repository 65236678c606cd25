"""Model files edited as their author would edit them: new contents with a
checksum that matches.

``plain`` reads a model file back into the plain header ``pack`` takes
(labels, patterns, keys and lexicon words as lists, the spec as text);
``with_header`` edits that and lays it out again; ``with_stored`` edits the
stored JSON header (the counts) or the arrays as they lie in the file.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from fgl.modelfile.model_layout import digest, pack, strings


def arrays_of(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a model file, by member name."""
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k].copy() for k in z.files}


def write(arrays: dict[str, np.ndarray], out: Path, raw: bytes | None = None) -> Path:
    """``arrays`` (with header ``raw``, else their own) written to ``out``
    with a digest that matches."""
    raw = arrays["header"].tobytes() if raw is None else raw
    arrays = {**arrays, "header": np.frombuffer(raw, dtype=np.uint8)}
    arrays["digest"] = np.frombuffer(digest(raw, arrays).encode("ascii"), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    out.write_bytes(buf.getvalue())
    return out


def plain(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The plain header of a model file (``pack``'s input) and its other
    arrays."""
    arrays = arrays_of(path)
    stored = json.loads(arrays["header"].tobytes())
    label_at, pattern_at, key_at, word_at = 0, 0, 0, 0
    layers = []
    for layer in stored["layers"]:
        n = layer["labels"]
        layers.append({**layer, "labels": strings(arrays["label_text"], arrays["label_ptr"],
                                                  label_at, label_at + n)})
        label_at += n
    values, ptr = arrays["pattern_values"].tolist(), arrays["pattern_ptr"].tolist()

    def patterns(n: int) -> list[list[int]]:
        nonlocal pattern_at
        out = [values[ptr[i]:ptr[i + 1]] for i in range(pattern_at, pattern_at + n)]
        pattern_at += n
        return out

    templates = [{**t, "patterns": patterns(t["patterns"])} for t in stored["templates"]]
    vocabs = []
    for n in stored["vocabs"]:
        vocabs.append({"keys": strings(arrays["key_text"], arrays["key_ptr"], key_at, key_at + n),
                       "rows": arrays["key_rows"][key_at:key_at + n].tolist()})
        key_at += n
    lexicons = {}
    for file, n in stored["lexicons"]:
        lexicons[file] = strings(arrays["lexicon_text"], arrays["lexicon_ptr"], word_at,
                                 word_at + n)
        word_at += n
    header = {**stored, "layers": layers, "templates": templates, "vocabs": vocabs,
              "lexicons": lexicons, "spec_text": arrays["spec"].tobytes().decode("utf-8")}
    if "patterns" in stored:
        header["patterns"] = patterns(stored["patterns"])
    return header, arrays


def with_header(path: Path, out: Path, edit, text=None) -> Path:
    """``path`` with its plain header edited (``edit(dict)``, then
    ``text(json)`` on the stored header) and laid out again, with a checksum
    that matches, as an edited file's author would make it."""
    header, arrays = plain(path)
    edit(header)
    raw, laid_out = pack(header)
    raw = text(raw.decode("utf-8")).encode("utf-8") if text else raw
    return write({**arrays, **laid_out}, out, raw)


def with_stored(path: Path, out: Path, edit=None, arrays_edit=None) -> Path:
    """``path`` with its stored JSON header edited (``edit(dict)``) and its
    arrays edited (``arrays_edit(dict)``) as they lie, re-digested."""
    arrays = arrays_of(path)
    stored = json.loads(arrays["header"].tobytes())
    if edit:
        edit(stored)
    if arrays_edit:
        arrays_edit(arrays)
    return write(arrays, out, json.dumps(stored).encode("utf-8"))
