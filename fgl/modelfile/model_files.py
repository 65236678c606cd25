"""Model files: safe, versioned, portable — never pickle.

A model file is a zip archive (numpy ``.npz``, loaded with
``allow_pickle=False``) holding a small JSON header — format name,
version, engine, layers, templates, training metadata and the counts of
everything that grows with the data — and arrays: the embedded spec, the
labels, label patterns, attribute vocabularies and lexicons (laid out in
``fgl.modelfile.model_layout``), the feature table and the weights.  A SHA-256
digest over every member is checked on load, so a truncated or edited file
is refused with a clear message rather than giving silent nonsense.

A file is read no further than it declares, and it declares no more than
its header's counts allow: the zip directory's entries and size, each
member's declared size and array shape against the counts, and what the
model will take in memory against the budget are all checked before any
member is decompressed (docs/files.md, "Model files").

A training checkpoint (``fgl.learn.checkpoint``) is a model file with
extra arrays named ``state_*`` (the optimiser's), covered by the same
digest; ``read_model_file`` returns them, ``load_model`` ignores them.
"""
from __future__ import annotations

import codecs
import dataclasses
import hashlib
import os
import zipfile
from pathlib import Path

import numpy as np

from fgl import registry
from fgl.compile.footprint import OverBudgetError
from fgl.compile.frontend import MAX_LABEL_BYTES
from fgl.data.inputs import input_limit, kind
from fgl.errors import FglError, ModelFileError
from fgl.io.safe_files import atomic_output, check_output
from fgl.lang.ast import Call
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.modelfile.file_kinds import check_model_file
from fgl.modelfile.model_header import (
    MAX_HEADER_BYTES,
    MAX_MEMBER_BYTES,
    MAX_STATE_PAIRS,
    counts,
    header_problem,
    parse_header,
    sizes_allowed,
)
from fgl.modelfile.model_layout import (
    ARRAYS,
    FORMAT,
    STATE,
    STATE_ARRAYS,
    TEXT_CODEC,
    VERSION,
    digest,
    pack,
    strings,
)
from fgl.modelfile.model_members import (
    MAX_NPY_HEADER,
    Corrupt,
    array_header,
    declared_version,
    directory_size,
    read_member,
)


def save_model(path: str | Path, model, weights: np.ndarray, meta: dict | None = None,
               state: dict[str, np.ndarray] | None = None) -> None:
    """Write ``model`` (any ``fgl.model.Model``) and its ``weights`` to
    ``path``; ``state`` adds a checkpoint's arrays (stored as ``state_*``).
    The file is replaced atomically (``fgl.io.safe_files``): a failed write
    leaves any previous model in place."""
    unknown = sorted(set(state or {}) - set(STATE_ARRAYS))
    if unknown:
        raise ValueError(f"a model file holds no state array {unknown[0]!r}; "
                         f"it holds {', '.join(STATE_ARRAYS)}")
    raw, laid_out = pack({"engine": model.engine, "spec_file": model.spec.file,
                          "spec_text": model.spec.text,
                          "lexicons": {k: sorted(v) for k, v in model.lexicons.items()},
                          **model.header(), "meta": meta or {}})
    arrays = {**model.arrays(), "weights": np.asarray(weights, dtype=np.float64), **laid_out,
              **{STATE + k: np.asarray(v) for k, v in (state or {}).items()}}
    stored_digest = digest(raw, arrays)
    what = "checkpoint" if state else "model"
    with atomic_output(path, what) as fh:
        np.savez_compressed(fh, header=np.frombuffer(raw, dtype=np.uint8),
                            digest=np.frombuffer(stored_digest.encode("ascii"), dtype=np.uint8),
                            **arrays)


def check_writable(path: str | Path, what: str = "model", inputs=()) -> str:
    """``path`` if a model can be written there (``safe_files.check_output``:
    a regular file or a new name in a writable folder, not a link, not one
    of ``inputs``), else an OutputError saying why."""
    return check_output(path, what, inputs)


# ---------------------------------------------------------------- reading, bounded
# A model file is read member by member, each only as far as the zip directory declares
# and the header's counts allow; nothing is decompressed before its declared size is known
# to fit, and members the format does not name are refused.

MAX_MEMBERS = 64
MAX_DIRECTORY_BYTES = 64 << 10  # the zip central directory (64 short names)
UNSIZED_CHECKSUM_BYTES = 64 << 20   # read to check the digest when the header cannot size them
# bytes of memory per item, beyond the arrays, while a model is loaded (measured on CPython
# 3.11, rounded up): a label or lexicon word as a str in a list or set, a label pattern as
# a tuple, a vocabulary key in its hash table, a header byte as parsed JSON, a spec byte
# parsed and checked
LOAD_COST = {"label": 100, "word": 130, "pattern": 120, "value": 8, "key": 40, "header": 16,
             "spec": 300}
_TEXT, _INT = "u", "iu"
_KINDS = {"header": _TEXT, "digest": _TEXT, "row_ptr": _INT, "feat_pattern": _INT,
          "weights": "f", "spec": _TEXT, "label_text": _TEXT, "label_ptr": _INT,
          "pattern_values": _INT, "pattern_ptr": _INT, "key_text": _TEXT, "key_ptr": _INT,
          "key_rows": _INT, "lexicon_text": _TEXT, "lexicon_ptr": _INT,
          **{STATE + k: "f" for k in STATE_ARRAYS}}
_NDIM = {STATE + "lbfgs_s": 2, STATE + "lbfgs_y": 2}
_V2_MEMBERS = ("header", "digest", "row_ptr", "feat_pattern", "weights")


def _directory_problem(path: Path) -> str | None:
    """Why the zip directory is not a model file's, from its end records
    (before ``zipfile`` reads it: an object per entry)."""
    with open(path, "rb") as fp:
        declared = directory_size(fp)
    if declared is None:
        return None                # (not a zip archive: zipfile says so)
    entries, size = declared
    if entries > MAX_MEMBERS:
        return f"not an fgl model file ({entries} members, more than the {MAX_MEMBERS} allowed)"
    if size > MAX_DIRECTORY_BYTES:
        return (f"not an fgl model file (a zip directory of {size} bytes, more than the "
                f"{MAX_DIRECTORY_BYTES} a model file's takes)")
    return None


def _old_version(zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo]) -> str | None:
    """A message for a file of an earlier format (its members are version
    2's), read from the first bytes of its header only."""
    if not all(k in members for k in _V2_MEMBERS):
        return None
    version = declared_version(zf, members["header"])
    if version is None or version == VERSION:
        return None
    return (f"model file version {version} is not supported (this fgl reads version "
            f"{VERSION}, which keeps vocabularies, labels and lexicons as arrays); retrain "
            "the model with this fgl")


def _member_names(zf: zipfile.ZipFile, name: str) -> dict[str, zipfile.ZipInfo]:
    """The members of the archive by array name, once the zip directory
    shows an fgl model's members, each stored or deflated and declaring a
    size a model's member can have."""
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ModelFileError(f"not an fgl model file ({len(infos)} members, more than the "
                             f"{MAX_MEMBERS} allowed)", name)
    members: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        if key in members:
            raise ModelFileError(f"corrupt model file: member {info.filename} appears twice",
                                 name)
        members[key] = info
    missing = [k for k in ("header", "digest", *ARRAYS) if k not in members]
    if missing:
        old = _old_version(zf, members)
        if old:
            raise ModelFileError(old, name)
        raise ModelFileError(f"not an fgl model file (missing {', '.join(missing)})", name)
    extra = [i.filename for k, i in members.items() if k not in _KINDS]
    if extra:
        raise ModelFileError(f"not an fgl model file, or it is corrupt: it holds {extra[0]!r}, "
                             "which is no member of a model file", name)
    spec_limit = input_limit(spec=True)
    for key, info in members.items():
        limit = {"header": MAX_HEADER_BYTES, "spec": spec_limit}.get(key, MAX_MEMBER_BYTES)
        if info.file_size > limit + (MAX_NPY_HEADER if key == "spec" else 0):
            what = (f"its embedded spec declares {info.file_size} bytes, more than the "
                    f"{limit} a spec may have (FGL_MAX_SPEC)" if key == "spec" else
                    f"member {info.filename} declares {info.file_size} bytes, more than the "
                    f"{limit} allowed")
            raise ModelFileError(f"corrupt model file: {what}", name)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) \
                or info.flag_bits & 0x1:
            raise ModelFileError(f"corrupt model file: member {info.filename} is encrypted or "
                                 "compressed in a way fgl does not write", name)
    return members


# ---------------------------------------------------------------- the header's counts

def _load_estimate(header: dict, members: dict[str, zipfile.ZipInfo]) -> int:
    """Bytes loading the model takes: its members as declared, and the
    Python objects made of its labels, patterns, keys, lexicon words, header
    and spec (``LOAD_COST``)."""
    n = counts(header)
    return (sum(info.file_size for info in members.values())
            + LOAD_COST["label"] * n["labels"] + LOAD_COST["pattern"] * n["patterns"]
            + LOAD_COST["value"] * n["values"] + LOAD_COST["key"] * n["keys"]
            + LOAD_COST["word"] * n["words"]
            + LOAD_COST["header"] * members["header"].file_size
            + LOAD_COST["spec"] * members["spec"].file_size)


def _check_sizes(zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], header: dict,
                 name: str) -> None:
    """Refuse members that declare more than the header's counts allow —
    first by their declared bytes, then by the shapes their own numpy headers
    declare (the offsets arrays exactly as long as the counts say, a
    checkpoint's history at most MAX_STATE_PAIRS pairs of the weights'
    length) — and a model that would take more than the memory budget to
    load, before any member is decompressed."""
    from fgl.compile.budget import budget_source, memory_budget
    from fgl.sizes import format_size

    most, exact = sizes_allowed(header)
    for key, info in members.items():
        if info.file_size > most[key] + MAX_NPY_HEADER:
            raise ModelFileError(
                f"corrupt model file: member {info.filename} declares {info.file_size} bytes, "
                f"more than the {most[key]} its header's counts allow", name)
    shapes = {}
    for key, info in members.items():
        if key != "header":
            with zf.open(info) as fp:
                shapes[key] = array_header(fp, info, _KINDS[key], _NDIM.get(key, 1))[0]
    n = shapes["weights"][0]
    pairs = shapes.get(STATE + "lbfgs_rho", (0,))[0]
    limits = {STATE + "gradient": ((n,), f"{n} (one per weight)"),
              STATE + "direction": ((n,), f"{n} (one per weight)"),
              STATE + "lbfgs_rho": ((MAX_STATE_PAIRS,), f"{MAX_STATE_PAIRS} correction pairs"),
              STATE + "lbfgs_yy": ((pairs,), f"{pairs} (as many as rho)"),
              STATE + "lbfgs_s": ((pairs, n), f"{pairs} pairs of {n} (one per weight)"),
              STATE + "lbfgs_y": ((pairs, n), f"{pairs} pairs of {n} (one per weight)")}
    for key, shape in shapes.items():
        if key in exact and shape != (exact[key][0],):
            raise ModelFileError(f"corrupt model file: member {members[key].filename} holds "
                                 f"{shape[0]} values, where its header's counts give "
                                 f"{exact[key][0]} ({exact[key][1]})", name)
        if key in limits and any(a > b for a, b in zip(shape, limits[key][0])):
            raise ModelFileError(f"corrupt model file: member {members[key].filename} declares "
                                 f"an array of {' x '.join(map(str, shape))}, more than its "
                                 f"header's counts allow: {limits[key][1]}", name)
    need = _load_estimate(header, members)
    if need > memory_budget():
        raise ModelFileError(f"the model would take about {format_size(need)} to load, more "
                             f"than the {format_size(memory_budget())} memory budget "
                             f"({budget_source()})", name)


# ---------------------------------------------------------------- the arrays' values

def _offsets_problem(ptr: np.ndarray, text: np.ndarray, what: str) -> str | None:
    if ptr[0] != 0 or ptr[-1] != text.size or (np.diff(ptr) < 0).any():
        return f"the {what} offsets must rise from 0 to the length of their text"
    return None


def _array_problem(header: dict, arrays: dict[str, np.ndarray]) -> str | None:
    """What is wrong with the arrays' values (an edited file is refused
    before anything is built from them): the feature table, the offsets of
    labels, patterns, keys and words, label lengths, key rows and bytes."""
    row_ptr, feat, weights = arrays["row_ptr"], arrays["feat_pattern"], arrays["weights"]
    text = next((k for k, v in _KINDS.items() if v == _TEXT and k in arrays
                 and arrays[k].dtype != np.uint8), None)
    if text:
        return f"its {text} is not bytes (uint8)"
    if weights.dtype != np.float64 or not np.isfinite(weights).all():
        return "weights must be finite float64 numbers"
    if row_ptr.size == 0 or row_ptr[0] != 0 or row_ptr[-1] != feat.size \
            or (np.diff(row_ptr) < 0).any():
        return "row_ptr must rise from 0 to the number of features"
    if feat.size and feat.min() < 0:
        return "feat_pattern holds a negative pattern"
    for ptr, text, what in (("label_ptr", "label_text", "label"),
                            ("pattern_ptr", "pattern_values", "pattern"),
                            ("key_ptr", "key_text", "key"),
                            ("lexicon_ptr", "lexicon_text", "lexicon")):
        problem = _offsets_problem(arrays[ptr], arrays[text], what)
        if problem:
            return problem
    longest = int(np.diff(arrays["label_ptr"]).max(initial=0))
    if longest > MAX_LABEL_BYTES:
        return f"a label of {longest} bytes (a label has at most {MAX_LABEL_BYTES})"
    rows = arrays["key_rows"]
    if rows.size and (rows.min() < 0 or rows.max() >= row_ptr.size - 1):
        return f"a vocabulary row lies outside 0..{row_ptr.size - 2}"
    key_ptr, key_text = arrays["key_ptr"], arrays["key_text"]
    starts = key_ptr[:-1][np.diff(key_ptr) > 0]
    if ((key_text[starts] & 0xC0) == 0x80).any():
        return "an attribute key starts inside a character"
    _check_utf8(key_text)
    return None


def _check_utf8(text: np.ndarray, chunk: int = 1 << 20) -> None:
    """A UnicodeDecodeError unless ``text`` is UTF-8, decoded a chunk at a
    time (the text is not held twice)."""
    decoder = codecs.getincrementaldecoder("utf-8")(TEXT_CODEC[1])
    for at in range(0, len(text), chunk):
        decoder.decode(text[at:at + chunk].tobytes())
    decoder.decode(b"", final=True)


def _pattern_problem(z: list, sizes: list[int]) -> str | None:
    """What is wrong with a label pattern over variables with ``sizes``
    labels (a pattern may cover the last few variables only)."""
    if not 1 <= len(z) <= len(sizes):
        return f"a label pattern of {len(z)} labels, where 1 to {len(sizes)} fit"
    for v, n in zip(z, sizes[len(sizes) - len(z):]):
        if not 0 <= v < n:
            return f"a label pattern holds {v!r}, not a label number 0..{n - 1}"
    return None


def _patterns(values: np.ndarray, ptr: np.ndarray, lo: int, hi: int, sizes: list[int],
              where: str) -> list[list[int]]:
    """Patterns ``lo..hi-1``, each checked against variables of ``sizes``
    labels (a ``Corrupt`` naming ``where`` otherwise)."""
    start = int(ptr[lo])
    flat, bounds = values[start:int(ptr[hi])].tolist(), (ptr[lo:hi + 1] - start).tolist()
    out = []
    for a, b in zip(bounds, bounds[1:]):
        z = flat[a:b]
        problem = _pattern_problem(z, sizes)
        if problem:
            raise Corrupt(f"{where}{problem}")
        out.append(z)
    return out


def _built_parts(header: dict, arrays: dict[str, np.ndarray]) -> dict:
    """The plain header ``Model.from_header`` reads (labels, patterns,
    vocabularies as ``Vocabulary`` objects, lexicons as sets), built from
    the checked arrays; a ``Corrupt`` for what only building shows."""
    from fgl.compile.vocabulary import Vocabulary

    layers, at = [], 0
    for layer in header["layers"]:
        labels = strings(arrays["label_text"], arrays["label_ptr"], at, at + layer["labels"])
        at += layer["labels"]
        if len(set(labels)) != len(labels):
            raise Corrupt(f"layer {layer['name']!r} names a label twice")
        layers.append({**layer, "labels": labels})
    sizes = [len(layer["labels"]) for layer in layers]
    values, ptr = arrays["pattern_values"], arrays["pattern_ptr"]
    templates, at = [], 0
    for t in header["templates"]:
        patterns = _patterns(values, ptr, at, at + t["patterns"], [sizes[k] for k in t["layers"]],
                             f"template {t['name']!r}: ")
        at += t["patterns"]
        templates.append({**t, "patterns": patterns})
    built = {"layers": layers, "templates": templates}
    if "patterns" in header:
        widest = max((len(t["layers"]) for t in templates), default=1)
        built["patterns"] = _patterns(values, ptr, at, at + header["patterns"],
                                      [sizes[0]] * widest, "")
    vocabs, at = [], 0
    key_ptr, key_rows = arrays["key_ptr"], arrays["key_rows"]
    for t, n in zip(header["templates"], header["vocabs"]):
        vocab = Vocabulary()
        vocab.assign_encoded(arrays["key_text"], key_ptr[at:at + n + 1],
                             np.asarray(key_rows[at:at + n], dtype=np.int64))
        at += n
        if len(vocab) != n:
            raise Corrupt(f"the vocabulary of template {t['name']!r} names a key twice")
        vocabs.append(vocab)
    built["vocabs"] = vocabs
    lexicons, at = {}, 0
    for file, n in header["lexicons"]:
        lexicons[file] = frozenset(strings(arrays["lexicon_text"], arrays["lexicon_ptr"],
                                           at, at + n))
        at += n
    built["lexicons"] = lexicons
    built["spec_text"] = arrays["spec"].tobytes().decode(*TEXT_CODEC)
    return built


def _width_mismatch(spec, templates: list[dict]) -> str | None:
    """A header template whose number of label variables is not its spec
    template's (its patterns' lengths were checked against the header's)."""
    from fgl.compile.unrolling import variables

    for t, tpl in zip(templates, spec.templates):
        n = len(variables(tpl))
        if len(t["layers"]) != n:
            return (f"template {tpl.name!r} joins {len(t['layers'])} labels in the header and "
                    f"{n} in its embedded spec")
    return None


def _lexicon_names(spec) -> set[str]:
    """The file names of every ``lexicon(e, "file")`` call in ``spec``."""
    names, todo = set(), [spec]
    while todo:
        node = todo.pop()
        if isinstance(node, (list, tuple)):
            todo.extend(node)
        elif isinstance(node, dict):
            todo.extend(node.values())
        elif dataclasses.is_dataclass(node):
            if isinstance(node, Call) and node.func == "lexicon" and node.params:
                names.add(str(node.params[0]))
            todo.extend(getattr(node, f.name) for f in dataclasses.fields(node))
            todo.append(getattr(node, "where", None))   # (a template's, not a field)
    return names


def _read_members(zf: zipfile.ZipFile, name: str) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays of an open model file, checked in this order:
    the zip directory (members, declared sizes), the header (JSON, format,
    version, structure and counts), each member's declared size and shape
    against the counts and the model's memory against the budget, then the
    checksum (over the members as they are read)."""
    members = _member_names(zf, name)
    raw = read_member(zf, members["header"], _TEXT).tobytes()
    header, why = parse_header(raw)
    if isinstance(header, dict) and header.get("format") != FORMAT:
        raise ModelFileError("not an fgl model file (wrong format tag)", name)
    if isinstance(header, dict) and header.get("version") != VERSION:
        raise ModelFileError(f"model file version {header.get('version')} is not supported "
                             f"(this fgl reads version {VERSION}); retrain the model", name)
    if members["digest"].file_size > 64 + MAX_NPY_HEADER:
        raise ModelFileError("corrupt model file: its digest is not a SHA-256 digest", name)
    problem = why or header_problem(header)
    if problem is None:
        _check_sizes(zf, members, header, name)
    elif sum(i.file_size for i in members.values()) > UNSIZED_CHECKSUM_BYTES:
        # a header too broken to size the arrays: their checksum is worth computing (to
        # tell damage from an edit) only while it is cheap
        raise ModelFileError(f"corrupt model file: {problem}", name)
    hashed = hashlib.sha256(raw)
    arrays = {}
    states = sorted(k for k in members if k.startswith(STATE))
    for key in (*ARRAYS, *states):   # in the digest's order; kept only when sized by the header
        hashed.update(key.encode("ascii") + b"\0")
        arrays[key] = read_member(zf, members[key], _KINDS[key], _NDIM.get(key, 1), hashed,
                                  keep=problem is None)
    stored = read_member(zf, members["digest"], _TEXT).tobytes()
    if hashed.hexdigest().encode("ascii") != stored:
        raise ModelFileError("corrupt model file: checksum mismatch", name)
    if problem:
        raise ModelFileError(f"corrupt model file: {problem}", name)
    return header, arrays


def load_model(path: str | Path) -> tuple[object, np.ndarray, dict]:
    """Read a model file; returns the compiled model, its weights and the
    training metadata.  Raises ModelFileError for anything but a valid,
    intact fgl model of a supported version."""
    model, weights, meta, _ = read_model_file(path)
    return model, weights, meta


def read_model_file(path: str | Path
                    ) -> tuple[object, np.ndarray, dict, dict[str, np.ndarray]]:
    """``load_model``'s model, weights and metadata, and the checkpoint
    state arrays (without their ``state_`` prefix; empty for a model)."""
    path = Path(path)
    name = str(path)
    if not path.exists():
        raise ModelFileError("no such model file", name)
    if not path.is_file():   # (a device or a pipe is not opened)
        raise ModelFileError(f"is {kind(os.stat(path).st_mode)}, not a model file", name)
    check_model_file(path)   # a spec given for a model is named as such
    try:
        problem = _directory_problem(path)
        if problem:
            raise ModelFileError(problem, name)
        with zipfile.ZipFile(path) as zf:
            header, arrays = _read_members(zf, name)
        problem = _array_problem(header, arrays)
        if problem:
            raise ModelFileError(f"corrupt model file: {problem}", name)
        header = {**header, **_built_parts(header, arrays)}
    except ModelFileError:
        raise
    except Corrupt as e:
        raise ModelFileError(f"corrupt model file: {e}", name) from None
    except UnicodeDecodeError:
        raise ModelFileError("corrupt model file: a label, key, word or its spec is not "
                             "UTF-8 text", name) from None
    except MemoryError:
        raise ModelFileError("the model does not fit in this machine's memory", name) from None
    except Exception as e:  # noqa: BLE001 - any failure to read untrusted bytes means corrupt
        raise ModelFileError(f"not an fgl model file, or it is corrupt ({type(e).__name__})",
                             name) from None
    model = _built_model(header, arrays, name)
    weights = arrays["weights"]
    if weights.shape != (model.program.n_features,):
        raise ModelFileError("corrupt model file: weights do not match the feature table", name)
    meta = header.get("meta", {})
    state = {k[len(STATE):]: v for k, v in arrays.items() if k.startswith(STATE)}
    return model, weights, meta, state


def _built_model(header: dict, arrays: dict[str, np.ndarray], name: str):
    """The engine's model of a checked header and arrays: its embedded spec
    parsed and checked, and matched against the header."""
    try:
        spec = validate(parse_spec(header["spec_text"], header["spec_file"]))
        missing = sorted(_lexicon_names(spec) - set(header["lexicons"]))
        if missing:  # a lexicon comes from the file, never from a path the file names
            raise ModelFileError(f"corrupt model file: its spec reads lexicon "
                                 f"'{missing[0]}', which the file does not hold", name)
        if [t["name"] for t in header["templates"]] != [t.name for t in spec.templates]:
            raise ModelFileError("corrupt model file: its templates and vocabularies do not "
                                 "match the templates of its embedded spec", name)
        wide = _width_mismatch(spec, header["templates"])
        if wide:
            raise ModelFileError(f"corrupt model file: {wide}", name)
        engine = registry.by_name(header["engine"])
        model = engine.model.from_header(spec, Path(header["spec_file"]).parent, header, arrays)
        if (np.asarray(arrays["feat_pattern"]) >= model.program.pattern_bounds()).any():
            raise ModelFileError("corrupt model file: a feature's label pattern lies outside "
                                 "its template's", name)
    except ModelFileError:
        raise
    except OverBudgetError as e:   # (its labels and patterns, counted before they are built)
        raise ModelFileError(f"the model is too large to load: {e}", name) from None
    except FglError as e:
        raise ModelFileError(f"the model's embedded spec does not load: {e}", name) from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as e:
        raise ModelFileError(f"corrupt model file: {type(e).__name__}: {e}", name) from None
    except MemoryError:
        raise ModelFileError("the model does not fit in this machine's memory", name) from None
    return model
