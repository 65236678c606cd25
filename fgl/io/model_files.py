"""Model files: safe, versioned, portable — never pickle.

A model file is a zip archive (numpy ``.npz``, loaded with
``allow_pickle=False``) holding a JSON header — format name, version, the
spec text, labels, templates, patterns, attribute vocabularies and lexicons —
and the numeric arrays: feature table and weights.  A SHA-256 digest over
header and arrays is checked on load, so a truncated or edited file is
refused with a clear message rather than giving silent nonsense.

A training checkpoint (``fgl.learn.checkpoint``) is a model file with
extra arrays named ``state_*`` (the optimiser's), covered by the same
digest; ``read_model_file`` returns them, ``load_model`` ignores them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from fgl import registry
from fgl.compile.footprint import OverBudgetError
from fgl.data.inputs import kind
from fgl.errors import FglError, ModelFileError
from fgl.io.safe_files import atomic_output, check_output
from fgl.io.sources import check_model_file
from fgl.lang.ast import Call
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec

FORMAT = "fgl-model"
VERSION = 2
_ARRAYS = ("row_ptr", "feat_pattern", "weights")
STATE = "state_"  # the prefix of a checkpoint's extra arrays


def _digest(header: bytes, arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256(header)
    for name in (*_ARRAYS, *sorted(k for k in arrays if k.startswith(STATE))):
        h.update(name.encode("ascii") if name.startswith(STATE) else b"")
        h.update(np.ascontiguousarray(arrays[name]).tobytes())
    return h.hexdigest()


def save_model(path: str | Path, model, weights: np.ndarray, meta: dict | None = None,
               state: dict[str, np.ndarray] | None = None) -> None:
    """Write ``model`` (any ``fgl.model.Model``) and its ``weights`` to
    ``path``; ``state`` adds a checkpoint's arrays (stored as ``state_*``).
    The file is replaced atomically (``fgl.io.safe_files``): a failed write
    leaves any previous model in place."""
    header = {"format": FORMAT, "version": VERSION, "engine": model.engine,
              "spec_file": model.spec.file, "spec_text": model.spec.text,
              "lexicons": {k: sorted(v) for k, v in model.lexicons.items()},
              **model.header(), "meta": meta or {}}
    raw = json.dumps(header, ensure_ascii=False).encode("utf-8")
    unknown = sorted(set(state or {}) - set(STATE_ARRAYS))
    if unknown:
        raise ValueError(f"a model file holds no state array {unknown[0]!r}; "
                         f"it holds {', '.join(STATE_ARRAYS)}")
    arrays = {**model.arrays(), "weights": np.asarray(weights, dtype=np.float64),
              **{STATE + k: np.asarray(v) for k, v in (state or {}).items()}}
    digest = _digest(raw, arrays)
    what = "checkpoint" if state else "model"
    with atomic_output(path, what) as fh:
        np.savez_compressed(fh, header=np.frombuffer(raw, dtype=np.uint8),
                            digest=np.frombuffer(digest.encode("ascii"), dtype=np.uint8),
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
MAX_MEMBER_BYTES = 2 << 30      # one array, whatever the header says
MAX_HEADER_BYTES = 64 << 20     # the JSON header
MAX_NPY_HEADER = 10_000         # an array member's own (numpy) header
MAX_LABELS = 10_000             # labels of one layer
MAX_VARIABLES = 1001            # label variables of one template (offsets reach 500 each way)
MAX_STATE_PAIRS = 64            # L-BFGS correction pairs a checkpoint may hold
MAX_DIGITS = 19                 # an integer in the header: int64 at most
UNSIZED_CHECKSUM_BYTES = 64 << 20   # read to check the digest when the header cannot size them
STATE_ARRAYS = ("gradient", "direction", "lbfgs_s", "lbfgs_y", "lbfgs_rho", "lbfgs_yy")
_KINDS = {"header": "u", "digest": "u", "row_ptr": "iu", "feat_pattern": "iu", "weights": "f",
          **{STATE + k: "f" for k in STATE_ARRAYS}}
_NDIM = {STATE + "lbfgs_s": 2, STATE + "lbfgs_y": 2}


_JSON_KIND = {str: "a string", dict: "a JSON object", list: "a list"}


class _Corrupt(Exception):
    """What is wrong with a model file (the loader's message, after
    "corrupt model file: ")."""


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Corrupt(f"the header holds a {len(text.lstrip('-'))}-digit integer")
    return int(text)


def _parse_header(raw: bytes) -> tuple[object, str | None]:
    """The header's JSON (None when it is not JSON) and why it is not."""
    try:
        return json.loads(raw.decode("utf-8"), parse_int=_bounded_int), None
    except _Corrupt as e:
        return None, str(e)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        return None, None


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
    missing = [k for k in ("header", "digest", *_ARRAYS) if k not in members]
    if missing:
        raise ModelFileError(f"not an fgl model file (missing {', '.join(missing)})", name)
    extra = [i.filename for k, i in members.items() if k not in _KINDS]
    if extra:
        raise ModelFileError(f"not an fgl model file, or it is corrupt: it holds {extra[0]!r}, "
                             "which is no member of a model file", name)
    for key, info in members.items():
        limit = MAX_HEADER_BYTES if key == "header" else MAX_MEMBER_BYTES
        if info.file_size > limit:
            raise ModelFileError(f"corrupt model file: member {info.filename} declares "
                                 f"{info.file_size} bytes, more than the {limit} allowed", name)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) \
                or info.flag_bits & 0x1:
            raise ModelFileError(f"corrupt model file: member {info.filename} is encrypted or "
                                 "compressed in a way fgl does not write", name)
    return members


def _sizes_allowed(header: object) -> dict[str, int] | None:
    """The most data bytes each member may hold, from the header's counts:
    its vocabularies' rows and its templates' patterns (None when the
    header is too broken to say; the checksum and the header's checks then
    refuse the file)."""
    try:
        vocabs, templates = header["vocabs"], header["templates"]
        if len(vocabs) != len(templates):
            return None
        rows = [len(v["rows"]) for v in vocabs]
        patterns = [len(t["patterns"]) for t in templates]
    except (TypeError, KeyError, IndexError):
        return None
    features = sum(r * max(p, 1) for r, p in zip(rows, patterns))
    pairs = MAX_STATE_PAIRS * features
    return {"header": MAX_HEADER_BYTES, "digest": 64, "row_ptr": 8 * (sum(rows) + 1),
            "feat_pattern": 8 * features, "weights": 8 * features,
            STATE + "gradient": 8 * features, STATE + "direction": 8 * features,
            STATE + "lbfgs_s": 4 * pairs,
            STATE + "lbfgs_y": 4 * pairs, STATE + "lbfgs_rho": 8 * MAX_STATE_PAIRS,
            STATE + "lbfgs_yy": 8 * MAX_STATE_PAIRS}


def _check_sizes(members: dict[str, zipfile.ZipInfo], allowed: dict[str, int],
                 name: str) -> None:
    """Refuse members that declare more than the header's counts allow, and
    a model whose arrays together exceed the memory budget — before any is
    decompressed."""
    from fgl.compile.budget import budget_source, memory_budget
    from fgl.sizes import format_size

    for key, info in members.items():
        if info.file_size > allowed[key] + MAX_NPY_HEADER:
            raise ModelFileError(
                f"corrupt model file: member {info.filename} declares {info.file_size} bytes, "
                f"more than the {allowed[key]} its header's counts allow", name)
    total = sum(info.file_size for info in members.values())
    if total > memory_budget():
        raise ModelFileError(f"the model's arrays take {format_size(total)}, more than the "
                             f"{format_size(memory_budget())} memory budget "
                             f"({budget_source()})", name)


def _array_header(fp, info: zipfile.ZipInfo, key: str) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a member's numpy header declares (only that
    header is read), once they are what a model file holds there and fill
    the member's declared size exactly."""
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp, MAX_NPY_HEADER)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp, MAX_NPY_HEADER)
    else:
        raise _Corrupt(f"member {info.filename} is not a numpy array")
    if dtype.hasobject or dtype.kind not in _KINDS[key] or dtype.itemsize > 8 \
            or fortran or len(shape) != _NDIM.get(key, 1):
        raise _Corrupt(f"member {info.filename} holds {dtype} {list(shape)} data, not "
                       "what a model file holds there")
    count = 1
    for n in shape:
        count *= int(n)
    if count * dtype.itemsize != info.file_size - fp.tell():
        raise _Corrupt(f"member {info.filename}: its array of {count} values does not "
                       f"fill its {info.file_size} bytes")
    return tuple(int(n) for n in shape), dtype


def _check_shapes(zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo],
                  header: dict, name: str) -> None:
    """Refuse arrays whose declared shapes the header's counts do not allow
    (at most as many features as its vocabularies' rows times the
    templates' patterns; a checkpoint's history at most MAX_STATE_PAIRS
    pairs of the weights' length) — reading only the arrays' own headers."""
    shapes = {}
    for key, info in members.items():
        if key != "header":
            with zf.open(info) as fp:
                shapes[key] = _array_header(fp, info, key)[0]
    rows = sum(len(v["rows"]) for v in header["vocabs"])
    # (a row may pair with any template's patterns: induced conjunctions do)
    features = rows * sum(max(len(t["patterns"]), 1) for t in header["templates"])
    n = shapes["weights"][0]
    pairs = shapes.get(STATE + "lbfgs_rho", (0,))[0]
    limits = {"digest": ((64,), "a SHA-256 digest's 64 characters"),
              "row_ptr": ((rows + 1,), f"{rows + 1} (its vocabularies' rows, plus 1)"),
              "weights": ((features,), f"{features} (rows times patterns)"),
              "feat_pattern": ((features,), f"{features} (rows times patterns)"),
              STATE + "gradient": ((n,), f"{n} (one per weight)"),
              STATE + "direction": ((n,), f"{n} (one per weight)"),
              STATE + "lbfgs_rho": ((MAX_STATE_PAIRS,), f"{MAX_STATE_PAIRS} correction pairs"),
              STATE + "lbfgs_yy": ((pairs,), f"{pairs} (as many as rho)"),
              STATE + "lbfgs_s": ((pairs, n), f"{pairs} pairs of {n} (one per weight)"),
              STATE + "lbfgs_y": ((pairs, n), f"{pairs} pairs of {n} (one per weight)")}
    for key, shape in shapes.items():
        most, what = limits[key]
        if any(a > b for a, b in zip(shape, most)):
            raise ModelFileError(f"corrupt model file: member {members[key].filename} declares "
                                 f"an array of {' x '.join(map(str, shape))}, more than its "
                                 f"header's counts allow: {what}", name)


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, digest=None,
                 keep: bool = True) -> np.ndarray | None:
    """The array stored in ``info`` (None when not ``keep``: only hashed),
    read only as far as its numpy header says and its declared size allows;
    its data bytes go into ``digest`` as they are read."""
    with zf.open(info) as fp:
        shape, dtype = _array_header(fp, info, key)
        nbytes = info.file_size - fp.tell()
        data = bytearray(nbytes) if keep else None
        done = 0
        while done < nbytes:
            chunk = fp.read(min(1 << 22, nbytes - done))
            if not chunk:
                raise _Corrupt(f"member {info.filename} ends early")
            if digest is not None:
                digest.update(chunk)
            if keep:
                data[done:done + len(chunk)] = chunk
            done += len(chunk)
        fp.read(1)   # the end: zipfile checks the member's CRC there
    if not keep:
        return None
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _header_problem(header: object) -> str | None:
    """What is wrong with the header's structure and counts (checked before
    anything is built from them): types, label counts, template widths,
    pattern lengths and labels, vocabulary shapes."""
    if not isinstance(header, dict):
        return "the header is not a JSON object"
    for key, json_kind in (("engine", str), ("spec_file", str), ("lexicons", dict),
                           ("layers", list), ("templates", list), ("vocabs", list)):
        if not isinstance(header.get(key), json_kind):
            return f"the header's {key} is not {_JSON_KIND[json_kind]}"
    if "meta" in header and not isinstance(header["meta"], dict):
        return "its metadata is not a JSON object"
    for k, v in header["lexicons"].items():
        if not (isinstance(v, list) and all(isinstance(w, str) for w in v)):
            return f"lexicon {k!r} is not a list of words"
    layers = header["layers"]
    if not layers:
        return "the header names no label layers"
    sizes = []
    for layer in layers:
        if not isinstance(layer, dict) or not isinstance(layer.get("name"), str) \
                or not isinstance(layer.get("labels"), list) \
                or not isinstance(layer.get("hidden", False), bool):
            return "a label layer is not {name, labels, hidden}"
        labels = layer["labels"]
        if not all(isinstance(y, str) for y in labels):
            return f"layer {layer['name']!r} has a label that is not a string"
        if not labels or len(labels) > MAX_LABELS:
            return (f"layer {layer['name']!r} has {len(labels)} labels (a model has 1 to "
                    f"{MAX_LABELS:,} per layer)")
        if len(set(labels)) != len(labels):
            return f"layer {layer['name']!r} names a label twice"
        sizes.append(len(labels))
    widest = 0
    for t in header["templates"]:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            return "a template is not an object with a name"
        tl, patterns = t.get("layers"), t.get("patterns")
        if not isinstance(tl, list) or not 1 <= len(tl) <= MAX_VARIABLES:
            return (f"template {t['name']!r} joins {len(tl) if isinstance(tl, list) else 'no'} "
                    f"labels (a template joins 1 to {MAX_VARIABLES})")
        bad = next((k for k in tl if not isinstance(k, int) or not 0 <= k < len(sizes)), None)
        if bad is not None or any(isinstance(k, bool) for k in tl):
            return (f"template {t['name']!r} reads layer {bad!r}, and the header has "
                    f"{len(sizes)} (numbered from 0)")
        widest = max(widest, len(tl))
        if not isinstance(patterns, list):
            return f"template {t['name']!r} has no list of patterns"
        for z in patterns:
            problem = _pattern_problem(z, [sizes[k] for k in tl])
            if problem:
                return f"template {t['name']!r}: {problem}"
        if not isinstance(t.get("sigma"), (int, float)) or isinstance(t.get("sigma"), bool):
            return f"template {t['name']!r}: its sigma is not a number"
    if "patterns" in header:    # (sequence models: every template's patterns, one list)
        if not isinstance(header["patterns"], list):
            return "the header's patterns are not a list"
        for z in header["patterns"]:
            problem = _pattern_problem(z, [sizes[0]] * widest)
            if problem:
                return problem
    if len(header["vocabs"]) != len(header["templates"]):
        return (f"its templates and vocabularies do not match ({len(header['templates'])} "
                f"templates, {len(header['vocabs'])} vocabularies)")
    for v in header["vocabs"]:
        if not isinstance(v, dict) or not isinstance(v.get("keys"), list) \
                or not isinstance(v.get("rows"), list) or len(v["keys"]) != len(v["rows"]) \
                or not all(isinstance(k, str) for k in v["keys"]) \
                or not all(isinstance(r, int) for r in v["rows"]):
            return "a vocabulary is not as many attribute names (strings) as rows (integers)"
    return None


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


def _pattern_problem(z: object, sizes: list[int]) -> str | None:
    """What is wrong with a label pattern over variables with ``sizes``
    labels (a pattern may cover the last few variables only)."""
    if not isinstance(z, list) or not 1 <= len(z) <= len(sizes):
        n = len(z) if isinstance(z, list) else "no"
        return f"a label pattern of {n} labels, where 1 to {len(sizes)} fit"
    for v, n in zip(z, sizes[len(sizes) - len(z):]):
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < n:
            return f"a label pattern holds {v!r}, not a label number 0..{n - 1}"
    return None


def _array_problem(header: dict, arrays: dict[str, np.ndarray]) -> str | None:
    """What is wrong with the feature table's arrays and the vocabularies'
    rows (an edited file is refused before anything is sized from them)."""
    row_ptr, feat, weights = arrays["row_ptr"], arrays["feat_pattern"], arrays["weights"]
    if not all(a.ndim == 1 for a in (row_ptr, feat, weights)):
        return "row_ptr, feat_pattern and weights must be 1-D"
    if row_ptr.dtype.kind not in "iu" or feat.dtype.kind not in "iu":
        return "row_ptr and feat_pattern must be integer arrays"
    if weights.dtype != np.float64 or not np.isfinite(weights).all():
        return "weights must be finite float64 numbers"
    if row_ptr.size == 0 or row_ptr[0] != 0 or row_ptr[-1] != feat.size \
            or (np.diff(row_ptr) < 0).any():
        return "row_ptr must rise from 0 to the number of features"
    if feat.size and feat.min() < 0:
        return "feat_pattern holds a negative pattern"
    n_rows = row_ptr.size - 1
    vocabs = header.get("vocabs")
    if not isinstance(vocabs, list):
        return "the header has no vocabularies"
    for v in vocabs:
        rows = v.get("rows") if isinstance(v, dict) else None
        if not isinstance(rows, list) or not all(
                isinstance(r, int) and 0 <= r < n_rows for r in rows):
            return f"a vocabulary row lies outside 0..{n_rows - 1}"
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
    version), each member's declared size against the header's counts,
    the checksum (over the members as they are read), then the header's
    structure."""
    members = _member_names(zf, name)
    raw = _read_member(zf, members["header"], "header").tobytes()
    header, why = _parse_header(raw)
    if isinstance(header, dict) and header.get("format") != FORMAT:
        raise ModelFileError("not an fgl model file (wrong format tag)", name)
    if isinstance(header, dict) and header.get("version") != VERSION:
        raise ModelFileError(f"model file version {header.get('version')} is not supported "
                             f"(this fgl reads version {VERSION}); retrain the model", name)
    if members["digest"].file_size > 64 + MAX_NPY_HEADER:
        raise ModelFileError("corrupt model file: its digest is not a SHA-256 digest", name)
    allowed = _sizes_allowed(header)
    if allowed is not None:
        _check_sizes(members, allowed, name)
        _check_shapes(zf, members, header, name)
    elif sum(i.file_size for i in members.values()) > UNSIZED_CHECKSUM_BYTES:
        # a header too broken to size the arrays: their checksum is worth computing (to
        # tell damage from an edit) only while it is cheap
        problem = why or _header_problem(header) or "the header does not give its arrays' sizes"
        raise ModelFileError(f"corrupt model file: {problem}", name)
    digest = hashlib.sha256(raw)
    arrays = {"header": np.frombuffer(raw, dtype=np.uint8)}
    states = sorted(k for k in members if k.startswith(STATE))
    for key in (*_ARRAYS, *states):   # in the digest's order; kept only when sized by the header
        if key.startswith(STATE):
            digest.update(key.encode("ascii"))
        arrays[key] = _read_member(zf, members[key], key, digest, keep=allowed is not None)
    stored = _read_member(zf, members["digest"], "digest").tobytes()
    if digest.hexdigest().encode("ascii") != stored:
        raise ModelFileError("corrupt model file: checksum mismatch", name)
    problem = why or _header_problem(header)
    if problem is None and allowed is None:   # (the header's checks cover what sizes need)
        problem = "the header does not give its arrays' sizes"
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
        with zipfile.ZipFile(path) as zf:
            header, arrays = _read_members(zf, name)
    except ModelFileError:
        raise
    except _Corrupt as e:
        raise ModelFileError(f"corrupt model file: {e}", name) from None
    except Exception as e:  # noqa: BLE001 - any failure to read untrusted bytes means corrupt
        raise ModelFileError(f"not an fgl model file, or it is corrupt ({type(e).__name__})",
                             name) from None
    problem = _array_problem(header, arrays)
    if problem:
        raise ModelFileError(f"corrupt model file: {problem}", name)
    try:
        spec = validate(parse_spec(header["spec_text"], header["spec_file"]))
        header["lexicons"] = {k: frozenset(v) for k, v in header["lexicons"].items()}
        missing = sorted(_lexicon_names(spec) - set(header["lexicons"]))
        if missing:  # a lexicon comes from the file, never from a path the file names
            raise ModelFileError(f"corrupt model file: its spec reads lexicon "
                                 f"'{missing[0]}', which the file does not hold", name)
        if [t.get("name") if isinstance(t, dict) else None for t in header["templates"]] \
                != [t.name for t in spec.templates] or len(header["vocabs"]) != len(spec.templates):
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
    weights = arrays["weights"]
    if weights.shape != (model.program.n_features,):
        raise ModelFileError("corrupt model file: weights do not match the feature table", name)
    meta = header.get("meta", {})
    if not isinstance(meta, dict):
        raise ModelFileError("corrupt model file: its metadata is not a JSON object", name)
    state = {k[len(STATE):]: v for k, v in arrays.items() if k.startswith(STATE)}
    return model, weights, meta, state
