"""Hypothesis strategies that mutate specs, data files and model files
(used by tests/jobs/test_fuzz.py).

Each strategy draws from a valid input and returns the mutant; the
mutations are the ones real files suffer and the ones parsers get wrong:
tokens or lines deleted, repeated or swapped, stray characters and
keywords, extreme numbers, far offsets, deep nesting; fields lost or added,
odd separators and bytes, non-finite numbers; flipped, lost or edited bytes
of a model file and edits of its members behind a recomputed checksum.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import re

import numpy as np
from hypothesis import note
from hypothesis import strategies as st

from fgl.lang.settings import SettingDef, all_settings
from fgl.modelfile.model_layout import ARRAYS, digest
from support.paths import STDLIB

# ---------------------------------------------------------------- specs

_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\w+|\.\.|==|!=|<=|\S')
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_BRACKET = re.compile(r"\[[^\[\]\n]*\]")
# a column read where observations are written: in an `obs` line or after a template's `~`
_COLUMN_REF = re.compile(r"(?:^\s*obs\b[^\n]*?|~[^\n]*?)\b(\w+\[[^\[\]\n]*\])", re.M)


def _without_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


SPECS = {p.name: _without_comments(p.read_text(encoding="utf-8"))
         for p in sorted(STDLIB.glob("*.fgl"))}
LINES = sorted({line for text in SPECS.values() for line in text.splitlines() if line.strip()})

KEYWORDS = ["model", "input", "graph", "columns", "output", "labels", "hidden", "segments", "max",
            "from", "bio", "change", "obs", "template", "where", "within", "document",
            "sentence", "and", "nearest", "edge", "patterns", "all", "observed", "upto", "train",
            "infer", "auto", "exact", "loopy", "trp", "junction_tree", "sigma", "support",
            "max_iter", "tol", "jobs", "damping", "objective", "y", "s", "z", "t", "u", "v",
            "i", "j", "a", "b", "bias", "bos", "eos", "length", "either", "lower", "value",
            "tokens", ":number", ":vector", ":text", "y[t]", "s[j]", "(y[i], y[j])",
            "(y[a], y[b])", 'edge(a, b, "cites")', "j - i <= 3"]
CHARACTERS = list("[](){}~&|,.=+-:\"'#<>!*/\\;$@%^`?_0") + [
    "\n", "\t", "\r", "\x00", "\x0c", "\u00a0", "\ufeff", "é", "ß", "\u0130", "\U0001f600",
    "\ud800"]
NUMBERS = ["0", "-0", "1", "-1", "2", "3", "499", "500", "501", "-500", "-501", "1000", "1001",
           "99999999999999999999", "-99999999999999999999", "2147483648", "9223372036854775808",
           "0.5", "-0.5", "1e308", "1e400", "-1e400", "1e-320", "nan", "inf", "-inf", "NaN",
           "1_0", "0x10", "00", "1e", "٣"]
RANGES = ["t", "t-500..t", "t-501..t", "t-500..t+500", "t+501", "t-501", "t..t", "t-3..t",
          "t..t-2", "t+1..t-1", "t-99999999999999999999", "u", "v", "u..v", "v..u", "u-1",
          "v+1", "u-600..v", "j", "j-2..j", "j-1000..j", "j+1", "i", "j-1", "a", "b", "a..b",
          "t+0", "t-0..t+0"]
CALLS = ["lower({})", "shape({})", "longshape({})", "class({})", "prefix({}, 3)",
         "suffix({}, 0)", "suffix({}, -2)", "prefix({}, 99999999999999999999)",
         'regex({}, "^[A-Z]")', 'regex({}, "(")', 'regex({}, "a{{99999}}")', "value({})",
         'lexicon({}, "missing.txt")', 'lexicon({}, "/dev/null")', 'lexicon({}, "")',
         "either({})", "tokens({})", "bias({})", "({} & {})", "({} | bias)", "nope({})"]
STATEMENTS = ["infer exact", "infer junction_tree", "infer loopy", "infer trp", "infer auto",
              "labels label = [B-NP I-NP O]", "labels chunk = [O]", "labels label = []",
              "hidden h = [h0 h1]", "hidden h = [h0]", "segments max 2 from change",
              "segments max 1 [NP = 3] from bio", "input graph", "input conll",
              "template extra: y[t-2..t] patterns all", "template gap: (y[t-2], y[t]) ~ bias",
              "template sk: (y[i], y[j]) where j - i <= 2 ~ bias",
              "template sk: (y[i], y[j]) where word[i] == word[j] within sentence ~ bias",
              "template wide: y[t-4..t] patterns observed upto (support = all)",
              "template hs: (h[t], y[t]) ~ bias", "template seg2: s[j-1..j] ~ length",
              "template list: y[t-1..t] patterns [B-NP I-NP], [O O] ~ bias",
              "template e: (y[a], y[b]) where edge(a, b, \"cites\") ~ bias",
              "obs extra = lower(word[t]) & shape(word[t+1])", "obs nb = value(word[t])",
              "obs lx = lexicon(word[t], \"/dev/null\")"]
# the mutations that often keep a spec valid (and so reach compilation, training and
# tagging) first and twice, the syntax-level ones once
OPS = (2 * ["setting", "nest", "offsets", "number", "statement"]
       + ["swap lines", "delete line", "duplicate line", "insert line", "delete", "duplicate",
          "swap", "replace", "insert", "text"])


def _values(d: SettingDef) -> list[object]:
    """Values to try for a setting: its default, its choices, and extremes."""
    expected = d.validator.expected
    choices = expected.removeprefix("one of: ").split(", ") if expected.startswith("one of") else []
    default = [] if d.default is None else [d.default]
    return default + choices + [0, 1, 2, 0.5, -1, 1e-300, 1e300, 99999999999999999999]


# every setting of the table (fgl.lang.settings), so new ones are fuzzed as they come
SETTING_CHOICES = [(d.block, d.key, v) for d in all_settings() for v in _values(d)]
_TRAIN = re.compile(r"train\s*\{")
_INFER = re.compile(r"^\s*infer\b.*$", re.M)
_TEMPLATE = re.compile(r"^\s*template\b[^\n]*$", re.M)


def _set(text: str, block: str, key: str, value: object, k: int) -> str:
    """``text`` giving ``key = value`` in ``block``: inside the train block
    (or a new one), as the infer statement, or as the options of the k-th
    template."""
    setting = f"{key} = {value}"
    if block == "train":
        if _TRAIN.search(text):
            return _TRAIN.sub(f"train {{ {setting}", text, count=1)
        return f"{text}\ntrain {{ {setting} }}\n"
    if block.startswith("infer"):
        return f"{_INFER.sub('', text)}\ninfer {block.split()[1]}({setting})\n"
    lines = [m.span() for m in _TEMPLATE.finditer(text)]
    if not lines:
        return text
    end = lines[k % len(lines)][1]
    return f"{text[:end]} ({setting}){text[end:]}"


def _apply(text: str, op: str, data: st.DataObject) -> str:
    """``text`` with one mutation ``op`` applied (its details drawn from ``data``)."""
    index = st.integers(0, 10**6)
    spans = [m.span() for m in _TOKEN.finditer(text)]
    lines = text.split("\n")

    def at(pattern: re.Pattern) -> tuple[int, int] | None:
        found = [m.span() for m in pattern.finditer(text)]
        return found[data.draw(index) % len(found)] if found else None

    def splice(span: tuple[int, int], new: str) -> str:
        return text[:span[0]] + new + text[span[1]:]

    if op in ("delete", "duplicate", "replace", "insert", "swap") and spans:
        a = spans[data.draw(index) % len(spans)]
        if op == "delete":
            return splice(a, "")
        if op == "duplicate":
            return splice(a, text[a[0]:a[1]] * 2 + " ")
        if op == "replace":
            return splice(a, data.draw(st.sampled_from(KEYWORDS + CHARACTERS)))
        if op == "insert":
            new = data.draw(st.sampled_from(KEYWORDS + CHARACTERS + NUMBERS))
            return splice((a[0], a[0]), f" {new} " if data.draw(st.booleans()) else new)
        b = spans[data.draw(index) % len(spans)]
        (a, b) = sorted((a, b))
        if a == b or a[1] > b[0]:
            return text
        return text[:a[0]] + text[b[0]:b[1]] + text[a[1]:b[0]] + text[a[0]:a[1]] + text[b[1]:]
    if op == "number" and (span := at(_NUMBER)):
        return splice(span, data.draw(st.sampled_from(NUMBERS)))
    if op == "offsets" and (span := at(_BRACKET)):
        return splice(span, f"[{data.draw(st.sampled_from(RANGES))}]")
    refs = [m.span(1) for m in _COLUMN_REF.finditer(text)]
    if op == "nest" and refs:
        span = refs[data.draw(index) % len(refs)]
        inner = text[span[0]:span[1]]
        call = data.draw(st.sampled_from(CALLS))
        for _ in range(data.draw(st.sampled_from([1, 1, 2, 3, 5, 40, 120]))):
            inner = call.format(inner, inner) if len(inner) < 5000 else f"lower({inner})"
        return splice(span, inner)
    if op == "setting":
        block, key, value = data.draw(st.sampled_from(SETTING_CHOICES))
        return _set(text, block, key, value, data.draw(index))
    if op == "text":
        k = data.draw(index) % (len(text) + 1)
        return text[:k] + data.draw(st.text(max_size=6)) + text[k:]
    k, m = data.draw(index) % len(lines), data.draw(index) % len(lines)
    if op == "delete line":
        del lines[k]
    elif op == "duplicate line":
        lines.insert(k, lines[k])
    elif op == "swap lines":
        lines[k], lines[m] = lines[m], lines[k]
    elif op in ("insert line", "statement"):
        lines.insert(k, data.draw(st.sampled_from(LINES if op == "insert line" else STATEMENTS)))
    return "\n".join(lines)


def mutate_spec(text: str, data: st.DataObject, most: int = 4) -> str:
    """``text`` after one to ``most`` mutations."""
    count = data.draw(st.sampled_from([1, 1, 2, most]))
    for op in data.draw(st.lists(st.sampled_from(OPS), min_size=count, max_size=count)):
        text = _apply(text, op, data)
    return text


# ---------------------------------------------------------------- column data

FIELDS = ["nan", "NaN", "inf", "-inf", "1e100", "1e101", "1e308", "1e400", "-0", "1_0", "٣",
          "0x1p3", "1,2", "1,2,3", "1,,2", ",", "nan,1", "1e400,0", "", "-DOCSTART-", "B-",
          "I-NP", "I-XX", "B-VP", "O-", "-", "_", "\u00a0", "é", "\x00", "a" * 5000]
LINE_OPS = ["drop field", "add field", "replace field", "blank line", "delete line",
            "duplicate line", "swap lines", "docstart", "tabs", "spaces", "long line",
            "bytes", "bom", "line ends"]
BYTES = [b"\xff", b"\xc3", b"\x81", b"\xe9", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00",
         b"\r", b"\x1c", b"\xc2\x85", b"\xe2\x80\xa8"]


def mutate_columns(text: str, data: st.DataObject, most: int = 4) -> bytes:
    """A column file's bytes after one to ``most`` line or byte mutations."""
    lines = text.split("\n")
    raw_edits: list[tuple[str, int, bytes]] = []
    index = st.integers(0, 10**6)
    for op in data.draw(st.lists(st.sampled_from(LINE_OPS), min_size=1, max_size=most)):
        k = data.draw(index) % len(lines)
        fields = lines[k].split()
        f = data.draw(index) % max(len(fields), 1)
        if op == "drop field" and fields:
            del fields[f]
            lines[k] = " ".join(fields)
        elif op == "add field":
            fields.insert(f, data.draw(st.sampled_from(FIELDS)) or "x")
            lines[k] = " ".join(fields)
        elif op == "replace field" and fields:
            fields[f] = data.draw(st.sampled_from(FIELDS))
            lines[k] = " ".join(fields)
        elif op == "blank line":
            lines.insert(k, data.draw(st.sampled_from(["", " ", "\t", " \t ", "\u3000"])))
        elif op == "delete line":
            del lines[k]
        elif op == "duplicate line":
            lines.insert(k, lines[k])
        elif op == "swap lines":
            m = data.draw(index) % len(lines)
            lines[k], lines[m] = lines[m], lines[k]
        elif op == "docstart":
            lines.insert(k, data.draw(st.sampled_from(["-DOCSTART-", "-DOCSTART- -X- O",
                                                       " -DOCSTART-", "-DOCSTART-x"])))
        elif op == "tabs":
            lines[k] = lines[k].replace(" ", "\t")
        elif op == "spaces":
            lines[k] = lines[k].replace(" ", data.draw(st.sampled_from(["  ", " \t", "\u00a0",
                                                                         "\u2003", "\x0b"])))
        elif op == "long line" and len(lines[k]) < 1000:
            lines[k] = " ".join(fields * data.draw(st.sampled_from([1000, 40000])))
        elif op in ("bytes", "bom", "line ends"):
            raw_edits.append((op, data.draw(index), data.draw(st.sampled_from(BYTES))))
        if not lines:
            lines = [""]
    raw = "\n".join(lines).encode("utf-8", errors="surrogatepass")
    for op, k, byte in raw_edits:
        if op == "bom":
            raw = b"\xef\xbb\xbf" + raw if k % 2 else raw.replace(b"\n", b"\n\xef\xbb\xbf", 1)
        elif op == "line ends":
            raw = raw.replace(b"\n", b"\r\n" if k % 2 else b"\r")
        else:
            k %= len(raw) + 1
            raw = raw[:k] + byte + raw[k:]
    return raw


# ---------------------------------------------------------------- JSON graphs

JSON_VALUES = [None, True, 0, -1, 1.5, 10**400, 1e308, math.nan, math.inf, "", "a b", "é",
               [], [1], [1.0, 2.0, 3.0], ["a"], {}, {"id": "x"}, "p1", "cites", [[[[]]]],
               " ".join(f"w{k}" for k in range(2000))]


_DEEP = "\x00deep\x00"   # stands for a value nested too deeply for json.dumps


def _dumps(obj: object) -> str:
    """``obj`` as JSON, each ``_DEEP`` string written as 3000 nested lists."""
    return json.dumps(obj, ensure_ascii=False).replace(json.dumps(_DEEP), "[" * 3000 + "]" * 3000)


def _paths(obj: object, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) into a JSON value."""
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            out += _paths(v, (*prefix, k))
    return out


def _edit_json(obj: object, data: st.DataObject) -> object:
    """``obj`` with one value replaced, deleted or repeated at a drawn path."""
    paths = _paths(obj)
    path = paths[data.draw(st.integers(0, 10**6)) % len(paths)]
    if not path:
        return data.draw(st.sampled_from(JSON_VALUES))
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    action = data.draw(st.sampled_from(["set", "delete", "repeat", "nest"]))
    note(f"JSON edit: {action} at {list(path)}")
    if action == "set":
        parent[key] = data.draw(st.sampled_from(JSON_VALUES))
    elif action == "nest":
        parent[key] = data.draw(st.sampled_from([[[[[[1]]]]], _DEEP]))
    elif action == "delete":
        del parent[key]
    elif isinstance(parent, list):
        parent.insert(key, json.loads(json.dumps(parent[key])))
    else:
        parent[key] = [parent[key], parent[key]]
    return obj


def mutate_graphs(text: str, data: st.DataObject, most: int = 3) -> bytes:
    """A JSON-lines graph file's bytes after structural or byte mutations."""
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, most))):
        k = data.draw(st.integers(0, 10**6)) % len(lines)
        if data.draw(st.booleans()):
            with contextlib.suppress(ValueError, RecursionError):  # a line made unreadable stays
                lines[k] = _dumps(_edit_json(json.loads(lines[k]), data))
        else:
            cut = data.draw(st.integers(0, 10**6)) % (len(lines[k]) + 1)
            new = data.draw(st.sampled_from(["", "{", "}", "]", ",", "\n", '"', "\\u0000",
                                             "\\ud800", "NaN", "\x00", "\u2028"]))
            lines[k] = lines[k][:cut] + new + lines[k][cut + data.draw(st.integers(0, 3)):]
    return "\n".join(lines).encode("utf-8", errors="surrogatepass")


# ---------------------------------------------------------------- model files

def _members(raw: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _save(arrays: dict[str, object]) -> bytes:
    out = io.BytesIO()
    np.savez_compressed(out, **arrays)
    return out.getvalue()


ARRAY_VALUES = [-1, 0, 1, 2, 10**6, 2**31 - 1, 2**62, np.nan, np.inf, -np.inf, 1e308]
DTYPES = ["int8", "int32", "int64", "uint64", "float32", "float64", "bool", "complex128", "U3"]


def _edit_array(a: np.ndarray, data: st.DataObject) -> np.ndarray:
    action = data.draw(st.sampled_from(["value", "dtype", "shape", "cut", "grow", "empty"]))
    k = data.draw(st.integers(0, 10**6))
    note(f"array edit: {action} ({k})")
    if action == "value" and a.size:
        a = a.astype(np.float64) if a.dtype.kind == "f" else a.copy()
        value = data.draw(st.sampled_from(ARRAY_VALUES))
        if a.dtype.kind in "iu":   # the integer nearest what was drawn
            info = np.iinfo(a.dtype)
            value = min(max(value if isinstance(value, int) else -1, info.min), info.max)
        a.flat[k % a.size] = value
        return a
    if action == "dtype":
        return a.astype(data.draw(st.sampled_from(DTYPES)))
    if action == "shape":
        return a.reshape(1, -1) if k % 2 else np.stack([a, a])
    if action == "cut":
        return a[: k % (a.size + 1)]
    if action == "grow":
        return np.concatenate([a, a[-1:].repeat(k % 5 + 1)]) if a.size else np.zeros(3, a.dtype)
    return a[:0]


def mutate_model(raw: bytes, data: st.DataObject) -> bytes:
    """A model file's bytes: raw byte damage, or members edited (header JSON,
    spec text, arrays) and written back with a fresh checksum so that the
    loader's own checks, not the digest, must catch them."""
    index = st.integers(0, 10**6)
    kind = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate", "append",
                                      "header", "spec", "array", "member", "stale"]))
    k = data.draw(index) % len(raw)
    if kind == "flip":
        return raw[:k] + bytes([raw[k] ^ (1 << data.draw(st.integers(0, 7)))]) + raw[k + 1:]
    if kind == "insert":
        return raw[:k] + data.draw(st.binary(min_size=1, max_size=8)) + raw[k:]
    if kind == "delete":
        return raw[:k] + raw[k + data.draw(st.integers(1, 64)):]
    if kind == "truncate":
        return raw[:k]
    if kind == "append":
        return raw + data.draw(st.sampled_from([b"\x00" * 100, b"PK\x03\x04", raw[:200]]))
    arrays = _members(raw)
    header = json.loads(arrays["header"].tobytes().decode("utf-8"))
    if kind == "header":
        header = _edit_json(header, data)
    elif kind == "spec":
        text = mutate_spec(arrays["spec"].tobytes().decode("utf-8"), data, most=2)
        note(f"embedded spec:\n{text}")
        arrays["spec"] = np.frombuffer(text.encode("utf-8", errors="surrogatepass"),
                                       dtype=np.uint8)
    elif kind == "array":
        name = data.draw(st.sampled_from(list(ARRAYS)))
        note(f"edited array: {name}")
        arrays[name] = _edit_array(arrays[name], data)
    elif kind == "member":
        name = data.draw(st.sampled_from(list(arrays)))
        if data.draw(st.booleans()):
            del arrays[name]
        else:
            arrays[f"extra{k}"] = arrays[name]
    head = _dumps(header).encode("utf-8", errors="surrogatepass")
    arrays["header"] = np.frombuffer(head, dtype=np.uint8)
    if kind != "stale" and all(n in arrays for n in ARRAYS):
        try:
            stored = digest(head, arrays)
        except (TypeError, ValueError):
            stored = "0" * 64
        arrays["digest"] = np.frombuffer(stored.encode("ascii"), dtype=np.uint8)
    elif kind == "stale":
        arrays["weights"] = arrays["weights"] + 1.0
    return _save(arrays)

