"""Crafted model files and checkpoints (issue 25): the loader reads only the
members a model file names, never more of one than the zip directory
declares and the header's counts allow, refuses extra, repeated and
over-size members before decompressing them, and bounds the header's values
(integers, labels, template layers, label counts, pattern lengths) before
anything is built from them — each a located message, no traceback, and
little memory."""
from __future__ import annotations

import io
import struct
import threading
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from support.cli import data_files, run, run_bounded
from support.model_files import arrays_of, with_header, with_stored, write
from support.paths import HMM

from fgl.api import CRF
from fgl.cli import main
from fgl.errors import ModelFileError
from fgl.learn.checkpoint import load_checkpoint
from fgl.modelfile.model_files import load_model

ZEROS = 100 << 20     # bytes of zeros a crafted member holds (about 100 KB deflated)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A trained HMM-like model, a checkpoint of a run, and test data."""
    d = tmp_path_factory.mktemp("models")
    train, test = data_files(d)
    model, ck = d / "model.fglm", d / "ck.fglm"
    assert main([str(a) for a in ("train", HMM, "--train", train, "-o", model, "-q",
                                  "--max-iter", "5", "--checkpoint", ck)]) == 0
    return model, ck, train, test


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def write_zip(path: Path, items: dict[str, bytes], zeros: dict[str, tuple] | None = None
              ) -> Path:
    """A zip of ``items``, plus for each name in ``zeros`` a numpy member of
    that (dtype, shape) holding zeros, streamed (never held in memory)."""
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore")          # (a repeated name, on purpose)
        for name, data in items.items():
            zf.writestr(name, data)
        for name, (dtype, shape) in (zeros or {}).items():
            head = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                head, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape})
            with zf.open(name, "w", force_zip64=True) as fh:
                fh.write(head.getvalue())
                left = int(np.prod(shape)) * np.dtype(dtype).itemsize
                block = bytes(1 << 20)
                while left:
                    fh.write(block[:min(left, len(block))])
                    left -= min(left, len(block))
    return path


def npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def refused_everywhere(capsys, path: Path, test: Path, words: str) -> None:
    """`fgl inspect` and `fgl tag` refuse ``path`` with ``words``, located,
    without a traceback."""
    for argv in (["inspect", path], ["tag", path, test]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "", err
        assert err.startswith(f"fgl: {path}: ") and words in err, err
        assert "Traceback" not in err and err.count("\n") == 1, err


def peak_while(fn) -> int:
    """The most bytes Python and numpy held while ``fn`` ran."""
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


# ---------------------------------------------------------------- members

def test_an_extra_member_is_refused_without_decompressing_it(capsys, made, tmp_path):
    model, _, _, test = made
    bad = write_zip(tmp_path / "pad.fglm", members(model),
                    {"pad0.npy": ("<f8", (ZEROS // 8,))})
    assert bad.stat().st_size < ZEROS // 100          # a small file that claims 100 MB
    words = "not an fgl model file, or it is corrupt: it holds 'pad0.npy'"
    with pytest.raises(ModelFileError, match=words) as e:
        load_model(bad)
    assert str(e.value).startswith(f"{bad}: ")
    peak = peak_while(lambda: pytest.raises(ModelFileError, load_model, bad))
    assert peak < 8 << 20, peak
    refused_everywhere(capsys, bad, test, words)


def test_a_member_larger_than_the_header_allows_is_refused_before_reading(capsys, made,
                                                                          tmp_path):
    model, _, _, test = made
    items = members(model)
    del items["weights.npy"]
    bad = write_zip(tmp_path / "big.fglm", items, {"weights.npy": ("<f8", (ZEROS // 8,))})
    words = "member weights.npy declares"
    peak = peak_while(lambda: pytest.raises(ModelFileError, load_model, bad))
    assert peak < 8 << 20, peak
    refused_everywhere(capsys, bad, test, words)
    code, _, err = run(capsys, "inspect", bad)
    assert "more than the" in err and "its header's counts allow" in err, err


@pytest.mark.parametrize("member", ["weights", "digest"])
def test_a_broken_header_does_not_open_large_members(capsys, made, tmp_path, member):
    """A header too broken to size the arrays (no vocabularies) in front of
    a member that claims 100 MB: refused for the header, the member never
    decompressed (the digest is a few bytes whatever the header says)."""
    model, _, _, test = made
    edited = with_stored(model, tmp_path / "edited.fglm", lambda h: h.pop("vocabs"))
    items = members(edited)
    del items[f"{member}.npy"]
    bad = write_zip(tmp_path / "broken.fglm", items,
                    {f"{member}.npy": ("<f8" if member == "weights" else "|u1",
                                       (ZEROS // 8 if member == "weights" else ZEROS,))})
    peak = peak_while(lambda: pytest.raises(ModelFileError, load_model, bad))
    assert peak < 8 << 20, peak
    words = {"weights": "corrupt model file: the header's vocabs is not a list",
             "digest": "corrupt model file: its digest is not a SHA-256 digest"}[member]
    refused_everywhere(capsys, bad, test, words)


def test_a_repeated_member_is_refused(capsys, made, tmp_path):
    model, _, _, test = made
    items = members(model)
    with zipfile.ZipFile(tmp_path / "twice.fglm", "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, data in items.items():
            zf.writestr(name, data)
        zf.writestr("weights.npy", npy(np.zeros(3)))
    refused_everywhere(capsys, tmp_path / "twice.fglm", test, "weights.npy appears twice")


def test_a_member_of_another_kind_of_array_is_refused(capsys, made, tmp_path):
    model, _, _, test = made
    items = members(model)
    items["row_ptr.npy"] = npy(np.zeros((2, 2), dtype=np.float32))
    bad = write_zip(tmp_path / "kind.fglm", items)
    refused_everywhere(capsys, bad, test, "member row_ptr.npy holds float32 [2, 2] data")


def test_a_model_over_the_memory_budget_is_refused_before_reading(capsys, made, monkeypatch):
    model, _, _, test = made
    monkeypatch.setenv("FGL_MAX_MEMORY", "100")
    refused_everywhere(capsys, model, test, "more than the 100 bytes memory budget "
                                            "(as set by FGL_MAX_MEMORY)")


def _unblock(fifo: Path, done: threading.Event) -> None:
    """Until ``done``, open ``fifo`` for writing whenever a reader waits on
    it, and close it at once: the reader gets an empty file."""
    import os
    while not done.wait(0.02):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:      # no reader
            pass


def test_a_device_given_as_a_model_is_refused_before_reading(made):
    _, _, _, test = made
    cases = [["inspect", "/dev/zero"], ["tag", "/dev/urandom", test]]
    for argv, (code, err) in zip(cases, run_bounded(cases)):
        assert code == 2 and err == f"fgl: {argv[1]}: is a character device, not a model " \
                                    "file\n", err


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_model_that_is_not_a_regular_file_is_refused(capsys, made, tmp_path, kind):
    import os
    _, _, _, test = made
    path = tmp_path / "m.fglm"
    done = threading.Event()
    if kind == "fifo":
        os.mkfifo(path)     # never to be opened; should a reader wait on it, it gets EOF
        threading.Thread(target=_unblock, args=(path, done), daemon=True).start()
    elif kind == "folder":
        path.mkdir()
    words = {"fifo": "is a named pipe (FIFO), not a model file",
             "folder": "is a folder, not a model file"}[kind]
    try:
        refused_everywhere(capsys, path, test, words)
    finally:
        done.set()


# ---------------------------------------------------------------- the header's values

def _layers(h, value):
    h["templates"][0]["layers"] = value


def _repeat_key(h):
    keys = h["vocabs"][0]["keys"]
    keys[1] = keys[0]


# edits of the plain header (labels, patterns, keys as lists; laid out again)
HEADER_BOMBS = {
    "5,000-digit integer": (lambda h: h["meta"].update(iterations=12345),
                            lambda t: t.replace("12345", "9" * 5000),
                            "the header holds a 5000-digit integer"),
    "label repeated": (lambda h: h["layers"][0]["labels"].__setitem__(1, h["layers"][0]
                                                                      ["labels"][0]), None,
                       "layer 'label' names a label twice"),
    "label too long": (lambda h: h["layers"][0]["labels"].__setitem__(0, "é" * 10_000), None,
                       "a label of 20000 bytes (a label has at most 4096)"),
    "layers out of range": (lambda h: _layers(h, [5]), None,
                            "template 'emission' reads layer 5, and the header has 1"),
    "layers a bomb": (lambda h: _layers(h, [0] * 5000), None,
                      "template 'emission' joins 5000 labels (a template joins 1 to 1001)"),
    "layers beyond the spec": (lambda h: _layers(h, [0] * 2), None,
                               "template 'emission' joins 2 labels in the header and 1 in its "
                               "embedded spec"),
    "pattern of 3": (lambda h: h["patterns"].append([0] * 3), None,
                     "a label pattern of 3 labels, where 1 to 2 fit"),
    "pattern label out of range": (lambda h: h["templates"][1]["patterns"].append([0, 99]),
                                   None, "template 'transition': a label pattern holds 99, "
                                         "not a label number 0..4"),
    "vocabulary key repeated": (_repeat_key, None,
                                "the vocabulary of template 'emission' names a key twice"),
}

# edits of the stored header's counts (the arrays left as they are)
COUNT_BOMBS = {
    "label count a list": (lambda h: h["layers"][0].update(labels=[1, 2]),
                           "layer 'label''s label count is not a whole number from 1"),
    "no labels": (lambda h: h["layers"][0].update(labels=0),
                  "layer 'label''s label count is not a whole number from 1"),
    "a quadrillion labels": (lambda h: h["layers"][0].update(labels=10**15),
                             "member label_ptr.npy holds 6 values, where its header's counts "
                             "give 1000000000000001 (its layers' labels, plus 1)"),
    "a quintillion keys": (lambda h: h["vocabs"].__setitem__(0, 10**18),
                           "member key_ptr.npy holds 16 values, where its header's counts give "
                           "1000000000000000002 (its vocabularies' keys, plus 1)"),
    "keys negative": (lambda h: h["vocabs"].__setitem__(0, -1),
                      "a vocabulary's size is not a whole number from 0"),
    "a lexicon without its file": (lambda h: h["lexicons"].append([1, 2]),
                                   "a lexicon is not a [file, words] pair of its own file"),
    "patterns a string": (lambda h: h.update(patterns="7"),
                          "the header's pattern count is not a whole number from 0"),
}


@pytest.mark.parametrize("bomb", list(COUNT_BOMBS))
def test_header_counts_are_bounded_before_any_work(capsys, made, tmp_path, bomb):
    model, _, _, test = made
    edit, words = COUNT_BOMBS[bomb]
    bad = with_stored(model, tmp_path / "bomb.fglm", edit)
    peak = peak_while(lambda: pytest.raises(ModelFileError, load_model, bad))
    assert peak < 8 << 20, peak
    refused_everywhere(capsys, bad, test, f"corrupt model file: {words}")


@pytest.mark.parametrize("bomb", list(HEADER_BOMBS))
def test_header_values_are_bounded_before_any_work(capsys, made, tmp_path, bomb):
    model, _, _, test = made
    edit, text, words = HEADER_BOMBS[bomb]
    bad = with_header(model, tmp_path / "bomb.fglm", edit, text)
    refused_everywhere(capsys, bad, test, f"corrupt model file: {words}")


# ---------------------------------------------------------------- checkpoints

@pytest.mark.parametrize("m", [1e9, 10**9, 0, True, "6"])
def test_a_checkpoint_whose_history_is_a_bomb_is_refused(capsys, made, tmp_path, m):
    model, ck, train, _ = made
    assert load_checkpoint(ck)[1].m == 6

    def edit(h):
        h["meta"]["checkpoint"]["m"] = m

    bad = with_header(ck, tmp_path / "bomb.fglm", edit)
    with pytest.raises(ModelFileError, match=r"L-BFGS keeps 1 to 64 correction pairs"):
        load_checkpoint(bad)
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", tmp_path / "m.fglm",
                       "--resume", bad, "-q")
    assert code == 2 and err.startswith(f"fgl: {bad}: corrupt checkpoint: ValueError: m = "), err
    assert "Traceback" not in err


def test_a_checkpoint_with_more_history_than_allowed_is_refused(capsys, made, tmp_path):
    _, ck, _, test = made
    items = members(ck)
    n = np.load(io.BytesIO(items["weights.npy"])).size
    del items["state_lbfgs_s.npy"]
    bad = write_zip(tmp_path / "pairs.fglm", items,
                    {"state_lbfgs_s.npy": ("<f4", (65, n))})
    refused_everywhere(capsys, bad, test, "member state_lbfgs_s.npy declares")


def test_the_crafted_files_are_otherwise_well_formed(made, tmp_path):
    """(The helpers make loadable files when nothing is edited: the refusals
    above come from the edits.)"""
    model, ck, _, _ = made
    CRF.load(with_header(model, tmp_path / "same.fglm", lambda h: None))
    load_checkpoint(with_header(ck, tmp_path / "same_ck.fglm", lambda h: None))
    load_model(write_zip(tmp_path / "rezipped.fglm", members(model)))


# ---------------------------------------------------------------- small files that claim much
# (issue 47: each found to take gigabytes from a file of kilobytes in format 2)

def test_a_small_file_with_a_60_mb_label_is_refused_before_reading(capsys, made, tmp_path):
    model, _, _, test = made
    items = members(model)
    del items["label_text.npy"]
    bad = write_zip(tmp_path / "label.fglm", items, {"label_text.npy": ("|u1", (60 << 20,))})
    assert bad.stat().st_size < 200_000
    peak = peak_while(lambda: pytest.raises(ModelFileError, load_model, bad))
    assert peak < 8 << 20, peak
    refused_everywhere(capsys, bad, test, "corrupt model file: member label_text.npy declares "
                                          f"{(60 << 20) + 128} bytes, more than the 20480 its "
                                          "header's counts allow")


def test_a_header_of_empty_objects_is_refused_before_parsing(capsys, made, tmp_path):
    model, _, _, test = made
    items = members(model)
    del items["header.npy"]
    big = write_zip(tmp_path / "big.fglm", items, {"header.npy": ("|u1", (64 << 20,))})
    refused_everywhere(capsys, big, test, f"member header.npy declares {(64 << 20) + 128} "
                                          f"bytes, more than the {16 << 20} allowed")
    raw = b"[" + b"{}," * (2 << 20) + b"{}]"         # 6 MB: 2 million dicts, some 150 MB parsed
    dense = write(arrays_of(model), tmp_path / "dense.fglm", raw)     # (its digest matches)
    peak = peak_while(lambda: pytest.raises(ModelFileError, load_model, dense))
    assert peak < 4 * len(raw), peak
    refused_everywhere(capsys, dense, test, "corrupt model file: the header is not a model "
                                            "file's: 2,097,154 JSON objects and lists in "
                                            f"{len(raw):,} bytes")


def test_an_embedded_spec_is_bounded_by_the_spec_cap_and_the_budget(capsys, made, tmp_path,
                                                                    monkeypatch):
    """The embedded spec may be as large as any spec fgl reads (FGL_MAX_SPEC),
    and parsing it (some 300 bytes a byte) counts against the budget."""
    model, _, _, test = made
    items = members(model)
    del items["spec.npy"]
    bad = write_zip(tmp_path / "spec.fglm", items, {"spec.npy": ("|u1", (9 << 20,))})
    monkeypatch.setenv("FGL_MAX_SPEC", "1M")
    refused_everywhere(capsys, bad, test, f"corrupt model file: its embedded spec declares "
                                          f"{(9 << 20) + 128} bytes, more than the 1048576 a "
                                          "spec may have (FGL_MAX_SPEC)")
    monkeypatch.setenv("FGL_MAX_SPEC", "16M")
    monkeypatch.setenv("FGL_MAX_MEMORY", "1G")
    peak = peak_while(lambda: pytest.raises(ModelFileError, load_model, bad))
    assert peak < 8 << 20, peak
    refused_everywhere(capsys, bad, test, "the model would take about 2.65 GB to load, more "
                                          "than the 1 GB memory budget (as set by "
                                          "FGL_MAX_MEMORY)")


def _zip_of_empty_members(path: Path, n: int) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(n):
            zf.writestr(f"m{i}", b"")
    return path


@pytest.mark.parametrize("entries", [65, 70_000])
def test_a_zip_directory_of_many_entries_is_refused_from_its_end_record(capsys, made, tmp_path,
                                                                        entries):
    """(70,000 entries: the zip64 end record, which zip writes past 65,535.)"""
    _, _, _, test = made
    bad = _zip_of_empty_members(tmp_path / "many.fglm", entries)
    peak = peak_while(lambda: pytest.raises(ModelFileError, load_model, bad))
    assert peak < 1 << 20, peak
    refused_everywhere(capsys, bad, test, f"not an fgl model file ({entries} members, more "
                                          "than the 64 allowed)")


def test_an_end_record_declaring_a_million_entries_is_refused_unread(capsys, made, tmp_path):
    _, _, _, test = made
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1_000_000 & 0xFFFF, 0xFFFF,
                      46_000_000, 4, 0)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, 4, 1)
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 1_000_000, 1_000_000,
                         46_000_000, 0)
    bad = tmp_path / "claims.fglm"
    bad.write_bytes(b"PK\x03\x04" + record + locator + end)
    refused_everywhere(capsys, bad, test, "not an fgl model file (1000000 members, more than "
                                          "the 64 allowed)")
    bad.write_bytes(b"PK\x03\x04" + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 3, 3,
                                                50_000_000, 4, 0))
    refused_everywhere(capsys, bad, test, "not an fgl model file (a zip directory of 50000000 "
                                          "bytes, more than the 65536 a model file's takes)")
