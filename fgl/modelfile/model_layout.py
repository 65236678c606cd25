"""How a model's parts lie in a model file (format version 3).

The JSON header holds only what does not grow with the data: the format,
the engine, the layers' names, each template's settings and label
variables, the training metadata, and the *counts* of everything that
does grow — labels per layer, patterns per template, attribute keys per
vocabulary, words per lexicon.  What the counts count lies in arrays:

=================  ======  ==================================================
``spec``           uint8   the embedded spec's text (UTF-8)
``label_text``     uint8   every layer's labels end to end, layer by layer
``label_ptr``      int64   label i is ``label_text[label_ptr[i]:label_ptr[i+1]]``
``pattern_values`` int32   every template's label patterns end to end, then
                           a sequence model's pattern list
``pattern_ptr``    int64   pattern i is ``pattern_values[pattern_ptr[i]:...]``
``key_text``       uint8   every vocabulary's attribute keys, in the order first met
                           in training
``key_ptr``        int64   offsets of the keys, as ``label_ptr``
``key_rows``       int64   the feature-table row of each key
``lexicon_text``   uint8   every lexicon's words, lexicon by lexicon
``lexicon_ptr``    int64   offsets of the words
=================  ======  ==================================================

beside the feature table (``row_ptr``, ``feat_pattern``), the ``weights``
and a checkpoint's ``state_*`` arrays.  A file's size then follows its
content, and every member's size follows from the header's counts, which
the loader (``fgl.modelfile.model_files``) checks before it reads any member.

``pack`` lays a model out (from its plain header: lists of labels,
patterns and keys, as ``Model.header`` gives them); ``strings`` reads a
text/offsets pair back.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

FORMAT = "fgl-model"
VERSION = 3
STATE = "state_"  # the prefix of a checkpoint's extra arrays
STATE_ARRAYS = ("gradient", "direction", "lbfgs_s", "lbfgs_y", "lbfgs_rho", "lbfgs_yy")
# the members every model file holds besides header and digest (the digest's order)
ARRAYS = ("row_ptr", "feat_pattern", "weights", "spec", "label_text", "label_ptr",
          "pattern_values", "pattern_ptr", "key_text", "key_ptr", "key_rows",
          "lexicon_text", "lexicon_ptr")
TEXT_CODEC = ("utf-8", "surrogatepass")   # (keys may hold lone surrogates: they round-trip)


def digest(header: bytes, arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over the header and every other member, in ``ARRAYS`` order
    then the state arrays' (each named)."""
    h = hashlib.sha256(header)
    for name in (*ARRAYS, *sorted(k for k in arrays if k.startswith(STATE))):
        h.update(name.encode("ascii") + b"\0")
        h.update(np.ascontiguousarray(arrays[name]).tobytes())
    return h.hexdigest()


def joined(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes, int64 offsets) of ``texts`` end to end."""
    from fgl.features.key_table import encoded  # (its module loads the compiled kernels)

    data, ptr = encoded(texts)
    return np.ascontiguousarray(data, dtype=np.uint8), ptr


def strings(data: np.ndarray, ptr: np.ndarray, lo: int = 0, hi: int | None = None) -> list[str]:
    """Strings ``lo..hi-1`` of a ``joined`` pair (``UnicodeDecodeError`` when
    one is not UTF-8); only their own bytes are copied."""
    bounds = ptr[lo:(len(ptr) - 1 if hi is None else hi) + 1]
    if len(bounds) < 2:
        return []
    start = int(bounds[0])
    raw = data[start:int(bounds[-1])].tobytes()
    at = (bounds - start).tolist()
    return [raw[a:b].decode(*TEXT_CODEC) for a, b in zip(at, at[1:])]


def pack(header: dict) -> tuple[bytes, dict[str, np.ndarray]]:
    """The stored header (JSON bytes) and the arrays of a plain ``header``:
    ``Model.header()``'s layers, templates, patterns and vocabularies (lists),
    plus ``format``, ``engine``, ``spec_file``, ``spec_text``, ``lexicons``
    ({file: words}) and ``meta``."""
    layers, templates = header["layers"], header["templates"]
    labels = [y for layer in layers for y in layer["labels"]]
    patterns = [z for t in templates for z in t["patterns"]] + list(header.get("patterns", []))
    lexicons = sorted(header["lexicons"].items())
    vocabs = header["vocabs"]
    label_text, label_ptr = joined(labels)
    key_text, key_ptr = joined([k for v in vocabs for k in v["keys"]])
    lexicon_text, lexicon_ptr = joined([w for _, words in lexicons for w in sorted(words)])
    lengths = np.fromiter(map(len, patterns), dtype=np.int64, count=len(patterns))
    pattern_ptr = np.zeros(len(patterns) + 1, dtype=np.int64)
    np.cumsum(lengths, out=pattern_ptr[1:])
    stored = {
        "format": FORMAT, "version": VERSION, "engine": header["engine"],
        "spec_file": header["spec_file"],
        "layers": [{"name": layer["name"], "labels": len(layer["labels"]),
                    "hidden": bool(layer.get("hidden", False))} for layer in layers],
        "templates": [{**t, "patterns": len(t["patterns"])} for t in templates],
        **({"patterns": len(header["patterns"])} if "patterns" in header else {}),
        "vocabs": [len(v["keys"]) for v in vocabs],
        "lexicons": [[name, len(words)] for name, words in lexicons],
        "meta": header.get("meta") or {}}
    arrays = {
        "spec": np.frombuffer(header["spec_text"].encode(*TEXT_CODEC), dtype=np.uint8),
        "label_text": label_text, "label_ptr": label_ptr,
        "pattern_values": np.fromiter((v for z in patterns for v in z), dtype=np.int32,
                                      count=int(pattern_ptr[-1])),
        "pattern_ptr": pattern_ptr,
        "key_text": key_text, "key_ptr": key_ptr,
        "key_rows": np.concatenate([np.asarray(v["rows"], dtype=np.int64) for v in vocabs]
                                   or [np.zeros(0, dtype=np.int64)]),
        "lexicon_text": lexicon_text, "lexicon_ptr": lexicon_ptr}
    return json.dumps(stored, ensure_ascii=False).encode(*TEXT_CODEC), arrays
