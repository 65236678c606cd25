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
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from fgl import registry
from fgl.errors import FglError, ModelFileError
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
    ``path``; ``state`` adds a checkpoint's arrays (stored as ``state_*``)."""
    header = {"format": FORMAT, "version": VERSION, "engine": model.engine,
              "spec_file": model.spec.file, "spec_text": model.spec.text,
              "lexicons": {k: sorted(v) for k, v in model.lexicons.items()},
              **model.header(), "meta": meta or {}}
    raw = json.dumps(header, ensure_ascii=False).encode("utf-8")
    arrays = {**model.arrays(), "weights": np.asarray(weights, dtype=np.float64),
              **{STATE + k: np.asarray(v) for k, v in (state or {}).items()}}
    digest = _digest(raw, arrays)
    path = Path(check_writable(path))
    # a temporary file in the same folder, flushed and renamed over the target: a failed
    # write (disk full, file size limit) leaves any previous model in place
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, header=np.frombuffer(raw, dtype=np.uint8),
                                digest=np.frombuffer(digest.encode("ascii"), dtype=np.uint8),
                                **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())   # mkstemp's file is private; a model is not
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise ModelFileError(f"cannot write the model: {e.strerror or e}", str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable(path: str | Path) -> str:
    """``path`` if a model can be written there — its folder exists and is
    writable, and it is not a folder — else a ModelFileError saying why."""
    p = Path(path)
    if p.is_dir():
        raise ModelFileError("is a folder; give a file name for the model (e.g. "
                             f"{p / 'model.fglm'})", str(p))
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ModelFileError(f"the folder {parent} does not exist", str(p))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ModelFileError(f"the folder {parent} is not writable", str(p))
    return str(p)


# what a model file may declare before anything is decompressed (its zip directory)
MAX_MEMBERS = 64
MAX_MEMBER_BYTES = 2 << 30      # one array
MAX_HEADER_BYTES = 64 << 20     # the JSON header


def _check_members(path: Path, name: str) -> None:
    """Refuse a file whose zip directory declares too many members or sizes
    too large to be a model (a few MB of deflated zeros can claim GBs),
    before reading any of them."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except Exception:  # noqa: BLE001 - untrusted bytes; np.load says what is wrong with them
        return
    if len(infos) > MAX_MEMBERS:
        raise ModelFileError(f"not an fgl model file ({len(infos)} members, more than the "
                             f"{MAX_MEMBERS} allowed)", name)
    for info in infos:
        limit = MAX_HEADER_BYTES if info.filename == "header.npy" else MAX_MEMBER_BYTES
        if info.file_size > limit:
            raise ModelFileError(f"corrupt model file: member {info.filename} declares "
                                 f"{info.file_size} bytes, more than the {limit} allowed", name)


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
    _check_members(path, name)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:  # noqa: BLE001 - any failure to read untrusted bytes means corrupt
        raise ModelFileError(f"not an fgl model file, or it is corrupt ({type(e).__name__})",
                             name) from None
    missing = [k for k in ("header", "digest", *_ARRAYS) if k not in arrays]
    if missing:
        raise ModelFileError(f"not an fgl model file (missing {', '.join(missing)})", name)
    raw = arrays["header"].tobytes()
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        header = None
    if isinstance(header, dict) and header.get("format") != FORMAT:
        raise ModelFileError("not an fgl model file (wrong format tag)", name)
    if isinstance(header, dict) and header.get("version") != VERSION:
        raise ModelFileError(f"model file version {header.get('version')} is not supported "
                             f"(this fgl reads version {VERSION}); retrain the model", name)
    if _digest(raw, arrays).encode("ascii") != arrays["digest"].tobytes():
        raise ModelFileError("corrupt model file: checksum mismatch", name)
    if not isinstance(header, dict):
        raise ModelFileError("corrupt model file: the header is not a JSON object", name)
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
        engine = registry.by_name(header["engine"])
        model = engine.model.from_header(spec, Path(header["spec_file"]).parent, header, arrays)
        if (np.asarray(arrays["feat_pattern"]) >= model.program.pattern_bounds()).any():
            raise ModelFileError("corrupt model file: a feature's label pattern lies outside "
                                 "its template's", name)
    except ModelFileError:
        raise
    except FglError as e:
        raise ModelFileError(f"the model's embedded spec does not load: {e}", name) from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as e:
        raise ModelFileError(f"corrupt model file: {type(e).__name__}: {e}", name) from None
    weights = arrays["weights"]
    if weights.shape != (model.program.n_features,):
        raise ModelFileError("corrupt model file: weights do not match the feature table", name)
    meta = header.get("meta", {})
    if not isinstance(meta, dict):
        raise ModelFileError("corrupt model file: its metadata is not a JSON object", name)
    state = {k[len(STATE):]: v for k, v in arrays.items() if k.startswith(STATE)}
    return model, weights, meta, state
