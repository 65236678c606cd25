"""A model file's stored header (``fgl.modelfile.model_layout``): JSON read under
bounds, its structure and counts checked, and the sizes the counts allow
each member — all before any other member is read.

The header holds no list that grows with the data, so it is small: at most
``MAX_HEADER_BYTES``, and no denser in JSON objects and lists than one per
``HEADER_BYTES_PER_NODE`` bytes outside strings (each costs some 60 bytes as a
Python object: a header of ``{}`` would take 24 times its size).
"""
from __future__ import annotations

import json
import re

from fgl.compile.frontend import MAX_LABEL_BYTES
from fgl.data.inputs import input_limit
from fgl.modelfile.model_layout import STATE, TEXT_CODEC
from fgl.modelfile.model_members import Corrupt

MAX_MEMBER_BYTES = 2 << 30      # one array, whatever the header says
MAX_HEADER_BYTES = 16 << 20     # the JSON header (counts and settings, no data)
HEADER_BYTES_PER_NODE = 8       # the header's JSON: at most one object or list per 8 bytes
MAX_VARIABLES = 1001            # label variables of one template (offsets reach 500 each way)
MAX_STATE_PAIRS = 64            # L-BFGS correction pairs a checkpoint may hold
MAX_DIGITS = 19                 # an integer in the header: int64 at most
_JSON_KIND = {str: "a string", dict: "a JSON object", list: "a list"}
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise Corrupt(f"the header holds a {len(text.lstrip('-'))}-digit integer")
    return int(text)


def parse_header(raw: bytes) -> tuple[object, str | None]:
    """The header's JSON (None when it is not JSON) and why it is not.  JSON
    denser in objects and lists than any header fgl writes is refused before
    it is parsed (each costs some 60 bytes as a Python object)."""
    nodes = _JSON_STRING.sub(b"", raw)
    count = nodes.count(b"{") + nodes.count(b"[")
    if count > len(nodes) // HEADER_BYTES_PER_NODE + 256:
        return None, (f"the header is not a model file's: {count:,} JSON objects and lists "
                      f"in {len(raw):,} bytes")
    try:
        return json.loads(raw.decode(*TEXT_CODEC), parse_int=_bounded_int), None
    except Corrupt as e:
        return None, str(e)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        return None, None


def counts(header: dict) -> dict[str, int]:
    """Totals of the header's counts (its structure checked first)."""
    templates = header["templates"]
    widths = [len(t["layers"]) for t in templates]
    seq = header.get("patterns", 0)
    return {"labels": sum(layer["labels"] for layer in header["layers"]),
            "patterns": sum(t["patterns"] for t in templates) + seq,
            "values": sum(t["patterns"] * w for t, w in zip(templates, widths))
            + seq * max(widths, default=0),
            "keys": sum(header["vocabs"]),
            "words": sum(n for _, n in header["lexicons"]),
            "features": sum(header["vocabs"])
            * sum(max(t["patterns"], 1) for t in templates)}


def _count_problem(value: object, what: str, least: int = 0) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        return f"{what} is not a whole number from {least}"
    return None


def header_problem(header: object) -> str | None:
    """What is wrong with the header's structure and counts (checked before
    any member is sized from them): types, layers and their label counts,
    template widths and pattern counts, vocabulary and lexicon sizes."""
    if not isinstance(header, dict):
        return "the header is not a JSON object"
    for key, json_kind in (("engine", str), ("spec_file", str), ("layers", list),
                           ("templates", list), ("vocabs", list), ("lexicons", list)):
        if not isinstance(header.get(key), json_kind):
            return f"the header's {key} is not {_JSON_KIND[json_kind]}"
    if "meta" in header and not isinstance(header["meta"], dict):
        return "its metadata is not a JSON object"
    layers = header["layers"]
    if not layers:
        return "the header names no label layers"
    for layer in layers:
        if not isinstance(layer, dict) or not isinstance(layer.get("name"), str) \
                or not isinstance(layer.get("hidden", False), bool):
            return "a label layer is not {name, labels, hidden}"
        problem = _count_problem(layer.get("labels"), f"layer {layer['name']!r}'s label count",
                                 1)
        if problem:
            return problem
    for t in header["templates"]:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            return "a template is not an object with a name"
        tl = t.get("layers")
        if not isinstance(tl, list) or not 1 <= len(tl) <= MAX_VARIABLES:
            return (f"template {t['name']!r} joins {len(tl) if isinstance(tl, list) else 'no'} "
                    f"labels (a template joins 1 to {MAX_VARIABLES})")
        bad = next((k for k in tl if not isinstance(k, int) or isinstance(k, bool)
                    or not 0 <= k < len(layers)), None)
        if bad is not None or any(isinstance(k, bool) for k in tl):
            return (f"template {t['name']!r} reads layer {bad!r}, and the header has "
                    f"{len(layers)} (numbered from 0)")
        problem = _count_problem(t.get("patterns"), f"template {t['name']!r}'s pattern count")
        if problem:
            return problem
        if not isinstance(t.get("sigma"), (int, float)) or isinstance(t.get("sigma"), bool):
            return f"template {t['name']!r}: its sigma is not a number"
    if "patterns" in header:     # (sequence models: every template's patterns, one list)
        problem = _count_problem(header["patterns"], "the header's pattern count")
        if problem:
            return problem
    if len(header["vocabs"]) != len(header["templates"]):
        return (f"its templates and vocabularies do not match ({len(header['templates'])} "
                f"templates, {len(header['vocabs'])} vocabularies)")
    for n in header["vocabs"]:
        problem = _count_problem(n, "a vocabulary's size")
        if problem:
            return problem
    names = set()
    for lexicon in header["lexicons"]:
        if not (isinstance(lexicon, list) and len(lexicon) == 2
                and isinstance(lexicon[0], str)) or lexicon[0] in names:
            return "a lexicon is not a [file, words] pair of its own file"
        names.add(lexicon[0])
        problem = _count_problem(lexicon[1], f"lexicon {lexicon[0]!r}'s word count")
        if problem:
            return problem
    return None


def sizes_allowed(header: dict) -> tuple[dict[str, int], dict[str, tuple[int, str]]]:
    """From the header's counts: the most data bytes each member may hold,
    and the exact length each offsets array has (with why)."""
    n = counts(header)
    features = n["features"]
    pairs = MAX_STATE_PAIRS * features
    exact = {"label_ptr": (n["labels"] + 1, "its layers' labels, plus 1"),
             "pattern_ptr": (n["patterns"] + 1, "its templates' patterns, plus 1"),
             "key_ptr": (n["keys"] + 1, "its vocabularies' keys, plus 1"),
             "key_rows": (n["keys"], "its vocabularies' keys"),
             "lexicon_ptr": (n["words"] + 1, "its lexicons' words, plus 1"),
             "digest": (64, "a SHA-256 digest's 64 characters")}
    most = {"header": MAX_HEADER_BYTES, "spec": input_limit(spec=True),
            "label_text": MAX_LABEL_BYTES * n["labels"], "pattern_values": 8 * n["values"],
            "key_text": MAX_MEMBER_BYTES, "lexicon_text": MAX_MEMBER_BYTES,
            "row_ptr": 8 * (n["keys"] + 1), "feat_pattern": 8 * features, "weights": 8 * features,
            STATE + "gradient": 8 * features, STATE + "direction": 8 * features,
            STATE + "lbfgs_s": 4 * pairs, STATE + "lbfgs_y": 4 * pairs,
            STATE + "lbfgs_rho": 8 * MAX_STATE_PAIRS, STATE + "lbfgs_yy": 8 * MAX_STATE_PAIRS,
            **{k: 8 * length for k, (length, _) in exact.items()}}
    return most, exact
