"""Model files: a save/load round trip is exact, the file holds no pickle,
lexicons travel inside it, and anything that is not an intact fgl model of
this version is refused with a ModelFileError (and `fgl tag` exits 2 with
that message, no traceback)."""
from __future__ import annotations

import io
import json
import random
import re
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from support.cli import run, write_data
from support.model_files import plain, with_header, with_stored, write
from support.paths import HMM, REPO, STDLIB
from support.sentences import segment_data

from fgl.api import CRF
from fgl.errors import ModelFileError
from fgl.lang.parser import read_spec
from fgl.modelfile.model_files import load_model
from fgl.modelfile.model_layout import pack

SPEC = REPO / "stdlib" / "linear_chain_obs_transitions.fgl"


def xy(sentences):
    return [[[r[0]] for r in s.rows] for s in sentences], [s.column(-1) for s in sentences]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A trained model, its file, and test inputs."""
    d = tmp_path_factory.mktemp("model")
    train, test = segment_data(seed=4)
    crf = CRF(SPEC, max_iter=25).fit(*xy(train))
    path = d / "m.fglm"
    crf.save(path)
    return crf, path, xy(test)[0], write_data(d / "test.txt", test)


# ---------------------------------------------------------------- round trip

def test_round_trip_is_exact(trained):
    crf, path, X, _ = trained
    back = CRF.load(path)
    assert back.model.labels == crf.model.labels
    assert np.array_equal(back.weights, crf.weights)
    assert back.weights.dtype == np.float64
    assert np.array_equal(back.model.program.row_ptr, crf.model.program.row_ptr)
    assert np.array_equal(back.model.program.feat_pattern, crf.model.program.feat_pattern)
    assert back.model.program.structure.patterns == crf.model.program.structure.patterns
    assert back.predict(X) == crf.predict(X)
    m1, m2 = crf.predict_marginals(X), back.predict_marginals(X)
    for a, b in zip(m1, m2):
        for pa, pb in zip(a, b):
            assert pa.keys() == pb.keys()
            assert np.allclose(list(pa.values()), list(pb.values()), rtol=0, atol=1e-12)
    assert np.allclose(back.log_partition(X[:3]), crf.log_partition(X[:3]), rtol=1e-12)


def test_model_keeps_training_metadata(trained):
    crf, path, _, _ = trained
    _, _, meta = load_model(path)
    assert meta["iterations"] == len(crf.training_log.iterations)
    assert 1 <= meta["iterations"] <= 25
    assert meta["objective"] == pytest.approx(crf.training_log.objective)


def test_model_file_holds_no_pickle(trained):
    _, path, _, _ = trained
    with np.load(path, allow_pickle=False) as z:
        names = set(z.files)
        assert {"header", "digest", "row_ptr", "feat_pattern", "weights"} <= names
        for name in z.files:
            assert z[name].dtype != object
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            assert info.filename.endswith(".npy")


def test_saving_an_untrained_model_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="not trained"):
        CRF(HMM).save(tmp_path / "x.fglm")


def test_lexicon_is_embedded(tmp_path, capsys):
    """A model whose spec reads a lexicon still tags the same once the lexicon
    file is gone."""
    train, test = segment_data(seed=5)
    # the words of entity type T0 form the lexicon
    lex_words = sorted({r[0] for s in train for r in s.rows if r[1].endswith("T0")})
    (tmp_path / "lex.txt").write_text("\n".join(lex_words) + "\n", encoding="utf-8")
    spec = tmp_path / "lex.fgl"
    spec.write_text('columns word, label\noutput label\n'
                    'obs inlex = lexicon(word[t], "lex.txt")\n'
                    'template state: y[t] ~ bias, inlex\n'
                    'template trans: y[t-1..t]\n', encoding="utf-8")
    crf = CRF(spec, max_iter=30).fit(*xy(train))
    assert any(k.startswith("lexicon(") for k in crf.model.vocabs[0])   # the test fired
    model = tmp_path / "lex.fglm"
    crf.save(model)
    X = xy(test)[0]
    before = crf.predict(X)
    test_file = write_data(tmp_path / "test.txt", test)
    _, tagged_before, _ = run(capsys, "tag", model, test_file)

    (tmp_path / "lex.txt").unlink()
    back = CRF.load(model)
    assert back.model.attributes.lexicons["lex.txt"] == frozenset(lex_words)
    assert back.predict(X) == before
    code, tagged_after, err = run(capsys, "tag", model, test_file)
    assert code == 0, err
    assert tagged_after == tagged_before
    # without the lexicon feature the model could not tell T0 words apart:
    # it predicts some T0 labels
    assert any(y.endswith("T0") for s in before for y in s)


def test_a_lexicon_is_never_read_from_a_path_the_file_names(tmp_path):
    """A re-digested model whose header drops its lexicons, while its spec
    still reads one, is refused — the loader does not fall back to reading
    the file the spec names (a path the model's author chose)."""
    (tmp_path / "lex.txt").write_text("a\nb\n", encoding="utf-8")
    spec = tmp_path / "lex.fgl"
    spec.write_text('columns word, label\noutput label\n'
                    'template state: y[t] ~ lexicon(word[t], "lex.txt")\n', encoding="utf-8")
    model = tmp_path / "lex.fglm"
    CRF(spec, max_iter=3).fit([[["a"], ["c"]]], [["A", "B"]]).save(model)

    def edit(header: dict) -> None:
        header["lexicons"] = {}
        header["spec_file"] = str(tmp_path / "lex.fgl")     # where lex.txt does exist

    with pytest.raises(ModelFileError, match="reads lexicon 'lex.txt', which the file does not"):
        load_model(with_header(model, model, edit))


def test_declared_sizes_and_counts_are_checked_before_reading(trained, tmp_path, monkeypatch):
    from fgl.modelfile import model_files

    model = trained[1]
    many = tmp_path / "many.fglm"
    many.write_bytes(_npz({f"a{i}": np.zeros(1) for i in range(100)}))
    with pytest.raises(ModelFileError, match="100 members, more than the 64 allowed"):
        load_model(many)
    monkeypatch.setattr(model_files, "MAX_MEMBER_BYTES", 16)   # as if a member claimed GBs
    with pytest.raises(ModelFileError, match="declares .* bytes, more than the 16 allowed"):
        load_model(model)


@pytest.mark.parametrize("edit, message", [
    ("row_ptr_end", "row_ptr must rise from 0 to the number of features"),
    ("negative_row", "a vocabulary row lies outside"),
    ("nan_weight", "weights must be finite"),
])
def test_edited_arrays_are_refused(trained, tmp_path, edit, message):
    arrays = _arrays(trained[1])
    if edit == "row_ptr_end":
        arrays["row_ptr"][-1] = 10**9
    elif edit == "negative_row":
        arrays["key_rows"][0] = -5
    else:
        arrays["weights"][0] = np.nan
    with pytest.raises(ModelFileError, match=message):
        load_model(write(arrays, tmp_path / f"{edit}.fglm"))


def test_a_deeply_nested_header_is_refused(trained, tmp_path):
    arrays = _arrays(trained[1])
    raw = ("[" * 200_000 + "]" * 200_000).encode("ascii")
    with pytest.raises(ModelFileError, match="the header is not a model file's: 200,000 JSON "
                                             "objects and lists in 400,000 bytes"):
        load_model(write(arrays, tmp_path / "deep.fglm", raw))
    raw = ("[" * 20_000 + "]" * 20_000 + " " * 400_000).encode("ascii")   # sparse, but deep
    with pytest.raises(ModelFileError, match="the header is not a JSON object"):
        load_model(write(arrays, tmp_path / "deep.fglm", raw))


# ---------------------------------------------------------------- corrupt and foreign files

def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k].copy() for k in z.files}


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def _with_header(path: Path, edit) -> bytes:
    """The model rebuilt with numpy after ``edit(header_dict)``; digest kept."""
    arrays = _arrays(path)
    header = json.loads(arrays["header"].tobytes().decode("utf-8"))
    edit(header)
    arrays["header"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    return _npz(arrays)


def _flip_header_middle(path: Path) -> bytes:
    arrays = _arrays(path)
    raw = bytearray(arrays["header"].tobytes())
    mid = len(raw) // 2
    while not chr(raw[mid]).isalnum():         # keep the JSON valid: flip a letter's case
        mid += 1
    raw[mid] ^= 0x20
    arrays["header"] = np.frombuffer(bytes(raw), dtype=np.uint8)
    return _npz(arrays)


def _flip_weights_middle(path: Path) -> bytes:
    arrays = _arrays(path)
    raw = bytearray(arrays["weights"].tobytes())
    raw[len(raw) // 2] ^= 0x01
    arrays["weights"] = np.frombuffer(bytes(raw), dtype=np.float64)
    return _npz(arrays)


def _drop_weights(path: Path) -> bytes:
    arrays = _arrays(path)
    del arrays["weights"]
    return _npz(arrays)


def _foreign_npz(path: Path) -> bytes:
    return _npz({"x": np.arange(10), "y": np.ones((2, 2))})


CORRUPTIONS = {
    "truncated": (lambda p: p.read_bytes()[: len(p.read_bytes()) // 2], "corrupt"),
    "truncated_tail": (lambda p: p.read_bytes()[:-20], "corrupt"),
    "random_bytes": (lambda p: bytes(random.Random(7).randrange(256) for _ in range(3000)),
                     "not an fgl model file"),
    "empty": (lambda p: b"", "not an fgl model file"),
    # a spec given for a model is named as such (docs/data.md, file kinds)
    "text": (lambda p: b"columns word, label\noutput label\n",
             "is a spec (text), not a model file: train it first with `fgl train "),
    "foreign_npz": (_foreign_npz, "not an fgl model file (missing header, digest"),
    "missing_array": (_drop_weights, "missing weights"),
    "version_999": (lambda p: _with_header(p, lambda h: h.update(version=999)),
                    "version 999 is not supported"),
    "wrong_format_tag": (lambda p: _with_header(p, lambda h: h.update(format="other")),
                         "wrong format tag"),
    "header_byte_flipped": (_flip_header_middle, "checksum mismatch"),
    "weights_byte_flipped": (_flip_weights_middle, "checksum mismatch"),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_bad_model_file_is_refused(trained, tmp_path, capsys, kind):
    _, good, _, test_file = trained
    make, words = CORRUPTIONS[kind]
    bad = tmp_path / f"{kind}.fglm"
    bad.write_bytes(make(good))
    with pytest.raises(ModelFileError) as info:
        CRF.load(bad)
    msg = str(info.value)
    assert msg.startswith(f"{bad} is " if kind == "text" else f"{bad}: "), msg
    assert words in msg, msg

    code, out, err = run(capsys, "tag", bad, test_file)
    assert code == 2
    assert out == ""
    assert err == f"fgl: {msg}\n"


def test_model_file_that_is_a_directory(tmp_path, capsys):
    d = tmp_path / "dir.fglm"
    d.mkdir()
    with pytest.raises(ModelFileError):
        CRF.load(d)


def _zip_member(path_bytes: bytes, name: str) -> tuple[int, int]:
    """(offset, size) of the compressed data of member ``name``."""
    zf = zipfile.ZipFile(io.BytesIO(path_bytes))
    info = zf.getinfo(name)
    off = info.header_offset
    n_name, n_extra = struct.unpack("<HH", path_bytes[off + 26:off + 30])
    return off + 30 + n_name + n_extra, info.compress_size


def test_damaged_deflate_stream_is_refused(trained, tmp_path):
    _, good, _, _ = trained
    data = bytearray(good.read_bytes())
    start, size = _zip_member(bytes(data), "header.npy")
    assert size > 10
    data[start] = 0xFF                     # deflate block type 11: reserved, invalid
    bad = tmp_path / "deflate.fglm"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelFileError):
        CRF.load(bad)


def test_unknown_compression_method_is_refused(trained, tmp_path):
    _, good, _, _ = trained
    data = bytearray(good.read_bytes())
    cd = data.find(b"PK\x01\x02")          # first central-directory entry
    assert cd > 0
    data[cd + 10:cd + 12] = struct.pack("<H", 99)
    bad = tmp_path / "method.fglm"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelFileError):
        CRF.load(bad)


def test_any_flipped_byte_is_refused_or_harmless(trained, tmp_path):
    """Flipping any one byte either is refused with ModelFileError or touches
    only zip bookkeeping (e.g. a timestamp) and loads the very same model."""
    crf, good, _, _ = trained
    data = good.read_bytes()
    bad = tmp_path / "flip.fglm"
    leaked = []
    for pos in range(0, len(data), 3):
        b = bytearray(data)
        b[pos] ^= 0xFF
        bad.write_bytes(bytes(b))
        try:
            model, weights, _ = load_model(bad)
        except ModelFileError:
            continue
        except Exception as e:             # noqa: BLE001 - that is the point
            leaked.append((pos, type(e).__name__))
            continue
        assert np.array_equal(weights, crf.weights), pos
        assert model.labels == crf.model.labels, pos
    assert not leaked, leaked[:10]


@pytest.mark.parametrize("spec, message", [
    (np.arange(5, dtype=np.int64), "member spec.npy holds int64 [5] data"),
    (np.arange(5, dtype=np.uint16), "its spec is not bytes (uint8)"),
    (np.frombuffer(b"columns \xff", dtype=np.uint8), "its spec is not UTF-8 text"),
], ids=["numbers", "wide", "not utf-8"])
def test_an_embedded_spec_that_is_not_text_is_refused(trained, tmp_path, spec, message):
    """(Found by the fuzzer in format 2: a number or list as the embedded
    spec text reached the parser.)"""
    bad = with_stored(trained[1], tmp_path / "spec.fglm",
                      arrays_edit=lambda a: a.update(spec=spec))
    with pytest.raises(ModelFileError, match=re.escape(message)):
        load_model(bad)


def _relational_model(tmp_path: Path) -> tuple[Path, Path]:
    """A small trained factor-graph model (stdlib/relational.fgl) and its data."""
    from support.fuzz_support import data_text
    spec = read_spec(STDLIB / "relational.fgl")
    data = tmp_path / "graphs.jsonl"
    data.write_text(data_text(spec), encoding="utf-8")
    model = tmp_path / "rel.fglm"
    CRF(spec, max_iter=3, jobs=1).fit_file(data).save(model)
    return model, data


def _swap_templates(h: dict) -> None:
    lines = h["spec_text"].splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.startswith("template")]
    lines[at[0]], lines[at[1]] = lines[at[1]], lines[at[0]]
    h["spec_text"] = "".join(lines)


@pytest.mark.parametrize("edit, message", [
    (lambda h, a: a["feat_pattern"].__setitem__(0, 1_000_000),
     "a feature's label pattern lies outside its template's"),
    (lambda h, a: h["templates"][0]["patterns"][0].__setitem__(0, 99),
     "template 'node': a label pattern holds 99, not a label number 0..2"),
    (lambda h, a: h["vocabs"].pop(1), "templates and vocabularies do not match"),
    (lambda h, a: _swap_templates(h), "do not match the templates of its embedded spec"),
], ids=["pattern out of range", "pattern label out of range", "vocabulary dropped",
        "spec templates swapped"])
def test_a_model_whose_parts_disagree_is_refused_before_tagging(tmp_path, edit, message):
    """Edits that keep the digest right but make the header, the embedded
    spec and the arrays disagree (found by tests/jobs/test_fuzz.py: some read
    out of bounds while tagging)."""
    model, data = _relational_model(tmp_path)
    header, arrays = plain(model)
    edit(header, arrays)
    raw, laid_out = pack(header)
    with pytest.raises(ModelFileError, match=message):
        CRF.load(write({**arrays, **laid_out}, tmp_path / "edited.fglm", raw)).tag_file(data)


# ---------------------------------------------------------------- what train writes, fgl loads

def test_a_vocabulary_beyond_the_old_header_cap_trains_saves_and_loads(tmp_path):
    """12,000 attributes of 1,000 control characters: 12 MB of keys, which
    the format-2 header spelt as 69 MB of JSON (six bytes a character), past
    its 64 MiB cap; format 3 keeps them as bytes and loads them back."""
    X = [[[f"{i:05d}" + "\x07" * 1000] for i in range(s, s + 20)] for s in range(0, 12_000, 20)]
    y = [["A", "B"] * 10 for _ in X]
    spec = "columns word, label\noutput label\ntemplate emission: y[t] ~ word[t]\n"
    crf = CRF(spec, max_iter=2, jobs=1).fit(X, y)
    path = tmp_path / "big.fglm"
    crf.save(path)
    header, arrays = plain(path)
    assert len(json.dumps(header, ensure_ascii=False)) > 64 << 20      # format 2's header
    assert arrays["header"].size < 4096                               # format 3's
    back = CRF.load(path)
    assert len(back.model.vocabs[0]) == 12_000
    assert dict(back.model.vocabs[0].items()) == dict(crf.model.vocabs[0].items())
    assert np.array_equal(back.weights, crf.weights)
    assert back.predict(X[:20]) == crf.predict(X[:20])


LONGEST = "É" * 2047    # 4,094 bytes: "B-" + it is a label of 4,096 bytes, the most a label has


def _at_the_limits(spec_path: Path, tmp_path: Path, longest: str = LONGEST) -> Path:
    """Training data for ``spec_path`` whose labels are as long as a label
    may be (two characters and ``longest``) and whose words are long and not
    ASCII."""
    from support.fuzz_support import data_text
    spec = read_spec(spec_path)
    text = data_text(spec)
    data = tmp_path / "data"
    if spec.input_format == "graph":
        graphs = [json.loads(line) for line in text.splitlines()]
        for g in graphs:
            for node in g["nodes"]:
                node["label"] = {"NP": longest + "NP"}.get(node["label"], node["label"])
                node["words"] += " 語" + "ß" * 50_000
        data.write_text("".join(json.dumps(g, ensure_ascii=False) + "\n" for g in graphs),
                        encoding="utf-8")
        return data
    lines = []
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) > 1 and not line.startswith("-DOCSTART-"):
            label = fields[-1]
            fields[-1] = label[:2] + longest if label.endswith("NP") else label
            fields[0] = fields[0] + "語" + "ß" * 50_000
        lines.append(" ".join(fields))
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return data


@pytest.mark.parametrize("name, engine", [("hmm_like.fgl", "chain"), ("semi_crf.fgl", "segments"),
                                          ("relational.fgl", "factor graph")],
                         ids=["chain", "semi-Markov", "factor graph"])
def test_what_train_writes_fgl_loads_for_every_engine(capsys, tmp_path, name, engine):
    spec = STDLIB / name
    data = _at_the_limits(spec, tmp_path)
    model = tmp_path / "m.fglm"
    code, _, err = run(capsys, "train", spec, "--train", data, "-o", model, "-q",
                       "--max-iter", "3")
    assert code == 0, err
    crf = CRF.load(model)
    labels = crf.model.layers[0].labels
    assert max(len(y.encode("utf-8")) for y in labels) >= 4094
    assert crf.model.engine == engine
    code, out, err = run(capsys, "tag", model, data)
    assert code == 0, err
    code, out, err = run(capsys, "inspect", model, "--top", "1")
    assert code == 0 and "template" in out, err


@pytest.mark.parametrize("name", ["hmm_like.fgl", "semi_crf.fgl", "relational.fgl"])
def test_a_label_longer_than_a_model_file_keeps_is_refused_before_training(capsys, tmp_path,
                                                                           name):
    spec = STDLIB / name
    data = _at_the_limits(spec, tmp_path, LONGEST + "xxx")   # 4,099 bytes (a segment's 4,097)
    code, _, err = run(capsys, "train", spec, "--train", data, "-o", tmp_path / "m.fglm", "-q")
    assert code == 2 and re.search(r"has a label of 4,09[79] bytes", err), err
    assert "a label has at most 4,096 bytes (UTF-8)" in err and "Traceback" not in err, err
    assert not (tmp_path / "m.fglm").exists()


def test_a_file_of_format_2_is_named_as_such(trained, tmp_path, capsys):
    """Format 2 (a JSON header holding the vocabularies) is told apart from
    damage by its members and the first bytes of its header alone."""
    _, good, _, test_file = trained
    arrays = _arrays(good)
    head = json.dumps({"format": "fgl-model", "version": 2, "engine": "chain",
                       "vocabs": [{"keys": ["x"] * 1000, "rows": [0] * 1000}]})
    old = {"header": np.frombuffer(head.encode("ascii"), dtype=np.uint8),
           "digest": arrays["digest"], **{k: arrays[k] for k in ("row_ptr", "feat_pattern",
                                                                  "weights")}}
    bad = tmp_path / "v2.fglm"
    bad.write_bytes(_npz(old))
    code, out, err = run(capsys, "tag", bad, test_file)
    assert code == 2 and out == ""
    assert err == f"fgl: {bad}: model file version 2 is not supported (this fgl reads version " \
                  "3, which keeps vocabularies, labels and lexicons as arrays); retrain the " \
                  "model with this fgl\n"
