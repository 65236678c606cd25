"""Hostile and unlucky paths (issue 25): every file fgl writes goes through
``fgl.io.safe_files`` — a target that is not a regular file (a folder, a
FIFO, a device, a symbolic link) or that is one of the command's inputs is
refused; a missing folder, a read-only file system or a full disk is a
located one-line message and the previous file stays whole; SIGINT and
SIGTERM during a model write end the run only after the rename; devices
and over-size inputs are refused before they are read; and the last
tracebacks of bad options (sizes, seeds, jobs, encodings) are messages."""
from __future__ import annotations

import errno
import io
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from support.cli import data_files, run, run_bounded
from support.paths import HMM, REPO

from fgl.cli import main
from fgl.io import safe_files
from fgl.modelfile.model_files import load_model

TEMPLATE = "U00:%x[0,0]\nB\n"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A trained model, its training and test data and a CRF++ template."""
    d = tmp_path_factory.mktemp("hostile")
    train, test = data_files(d)
    model = d / "model.fglm"
    assert main([str(a) for a in ("train", HMM, "--train", train, "-o", model, "-q",
                                  "--max-iter", "5")]) == 0
    template = d / "template"
    template.write_text(TEMPLATE, encoding="utf-8")
    return model, train, test, template


def commands(made, out: Path, folder: Path) -> dict[str, list]:
    """Each command that writes a file, writing it to ``out`` (a checkpoint's
    run writes its model into ``folder``)."""
    model, train, test, template = made
    return {
        "train": ["train", HMM, "--train", train, "-o", out, "-q", "--max-iter", "2"],
        "checkpoint": ["train", HMM, "--train", train, "-o", folder / "ok.fglm", "-q",
                       "--max-iter", "2", "--checkpoint", out],
        "tag": ["tag", model, test, "-o", out],
        "convert": ["convert", "crfpp", template, "--columns", "word,label", "-o", out],
        "draw": ["draw", model, test, "-o", out],
        "confusion": ["eval", model, test, "--confusion", "-o", out],
    }


SUFFIX = {"train": ".fglm", "checkpoint": ".fglm", "tag": ".txt", "convert": ".fgl",
          "draw": ".svg", "confusion": ".png"}


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def refused(code: int, err: str, target: Path, words: str) -> None:
    assert code == 2, err
    assert err.startswith(f"fgl: {target}: "), err
    assert words in err, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert "trained in" not in err      # refused before any work


# ---------------------------------------------------------------- what is at the path

def _make(kind: str, path: Path, folder: Path) -> object:
    """Put a ``kind`` at ``path``; returns what must still be there after."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "symlink":
        target = folder / f"target-{path.name}"
        target.write_bytes(b"the link's target\n")
        path.symlink_to(target)
    elif kind == "link to stdout":
        path.symlink_to("/proc/self/fd/1")
    elif kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))   # as /dev/null
        except PermissionError:
            pytest.skip("making a device node needs root")
    return _state(path, folder)


def _state(path: Path, folder: Path) -> tuple:
    """What is at ``path``: its type, device, link, folder entries, target's bytes."""
    st = os.lstat(path)
    target = folder / f"target-{path.name}"
    return (stat.S_IFMT(st.st_mode), st.st_rdev,
            os.readlink(path) if stat.S_ISLNK(st.st_mode) else None,
            sorted(os.listdir(path)) if stat.S_ISDIR(st.st_mode) else None,
            target.read_bytes() if target.exists() else None)


WORDS = {"fifo": "is a named pipe (FIFO), not a regular file",
         "folder": "is a folder; give a file name",
         "symlink": "is a symbolic link (to ", "link to stdout": "is a symbolic link (to ",
         "device": "is a character device, not a regular file"}


@pytest.mark.parametrize("kind", list(WORDS))
@pytest.mark.parametrize("command", list(SUFFIX))
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_alone(
        capsys, made, tmp_path, command, kind):
    out = tmp_path / f"out{SUFFIX[command]}"
    before = _make(kind, out, tmp_path)
    code, _, err = run(capsys, *commands(made, out, tmp_path)[command])
    refused(code, err, out, WORDS[kind])
    assert _state(out, tmp_path) == before
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("command", list(SUFFIX))
def test_an_output_in_a_missing_folder_is_refused_before_any_work(capsys, made, tmp_path,
                                                                  command):
    out = tmp_path / "no" / f"out{SUFFIX[command]}"
    code, _, err = run(capsys, *commands(made, out, tmp_path)[command])
    refused(code, err, out, f"the folder {out.parent} does not exist")


def test_an_output_that_is_an_input_is_refused(capsys, made, tmp_path):
    model, train, test, template = made
    saved = {p: p.read_bytes() for p in (model, train, test, template)}
    cases = [(["tag", model, test, "-o", model], model, "is also the model"),
             (["tag", model, test, "-o", test], test, "is also the data"),
             (["train", HMM, "--train", train, "-o", train, "-q"], train,
              "is also the training data"),
             (["train", HMM, "--train", train, "-o", tmp_path / "m.fglm", "--checkpoint",
               train, "-q"], train, "is also the training data"),
             (["convert", "crfpp", template, "-o", template], template,
              "is also the template")]
    for argv, target, words in cases:
        code, _, err = run(capsys, *argv)
        refused(code, err, target, words)
    assert {p: p.read_bytes() for p in saved} == saved


def test_dash_is_standard_output(capsys, made):
    model, _, test, template = made
    code, out, err = run(capsys, "tag", model, test, "-o", "-")
    assert code == 0 and out.count("\n\n") == test.read_text().count("\n\n"), err
    code, out, err = run(capsys, "convert", "crfpp", template, "-o", "-")
    assert code == 0 and "template " in out and not Path("-").exists(), err


# ---------------------------------------------------------------- failed writes

class _DiskFull(io.BufferedWriter):
    """A file on a full disk: every write fails with ENOSPC."""

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _full_disk(fd: int, mode: str = "r", *args, **kwargs):
    return _DiskFull(io.FileIO(fd, "w"))


def _read_only(*args, **kwargs):
    raise OSError(errno.EROFS, os.strerror(errno.EROFS))


WHAT = {"train": "model", "checkpoint": "checkpoint", "tag": "tagged output",
        "convert": "spec", "draw": "drawing", "confusion": "confusion matrix picture"}


@pytest.mark.parametrize("failure", ["disk full", "read-only"])
@pytest.mark.parametrize("command", list(SUFFIX))
def test_a_failed_write_is_a_message_and_keeps_the_previous_file(
        capsys, made, tmp_path, monkeypatch, command, failure):
    out = tmp_path / f"out{SUFFIX[command]}"
    out.write_bytes(b"the previous file\n")
    if failure == "disk full":
        monkeypatch.setattr(os, "fdopen", _full_disk)
        words = f"cannot write the {WHAT[command]}: the disk is full"
    else:   # creating the temporary file fails, as on a read-only file system
        monkeypatch.setattr(safe_files.tempfile, "mkstemp", _read_only)
        words = f"cannot write the {WHAT[command]}: the file system is read-only"
    code, _, err = run(capsys, *commands(made, out, tmp_path)[command])
    last = err.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in err, err
    assert last == f"fgl: {out}: {words}; the previous file is unchanged", err
    assert out.read_bytes() == b"the previous file\n"
    assert temp_files(tmp_path) == []


def test_a_read_only_folder_is_refused_before_any_work(capsys, made, tmp_path, monkeypatch):
    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(safe_files.os, "statvfs", lambda path: ReadOnly)
    out = tmp_path / "m.fglm"
    code, _, err = run(capsys, *commands(made, out, tmp_path)["train"])
    refused(code, err, out, f"the folder {tmp_path} is on a read-only file system")


@pytest.mark.parametrize("argv", [["inspect", "{model}"], ["tag", "{model}", "{test}"],
                                  ["eval", "{model}", "{test}", "--confusion"]],
                         ids=["inspect", "tag", "eval --confusion"])
def test_a_full_disk_behind_standard_output_is_a_message(made, argv):
    model, _, test, _ = made
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "fgl.cli",
                               *(a.format(model=model, test=test) for a in argv)],
                              stdout=full, stderr=subprocess.PIPE, text=True, env=env,
                              cwd=REPO, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "fgl: <stdout>: cannot write the output: No space left on device\n"


# ---------------------------------------------------------------- signals during a write

def test_sigint_during_a_model_write_ends_the_run_after_the_rename(capsys, made, tmp_path,
                                                                    monkeypatch):
    model, train, _, _ = made
    out = tmp_path / "m.fglm"
    out.write_bytes(model.read_bytes())
    real = np.savez_compressed

    def interrupted(fh, **arrays):
        signal.raise_signal(signal.SIGINT)      # Ctrl-C, half-way through the write
        real(fh, **arrays)

    monkeypatch.setattr(np, "savez_compressed", interrupted)
    # (Ctrl-C's own handler, as in a fresh `fgl` process: an earlier test of this process,
    # e.g. one starting a Dask cluster, may have left another installed)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code, _, err = run(capsys, "train", HMM, "--train", train, "-o", out, "-q",
                           "--max-iter", "3")
    finally:
        signal.signal(signal.SIGINT, before)
    assert code == 130 and err.endswith("fgl: interrupted\n"), err
    assert load_model(out)[2]["iterations"] == 3     # the new model, whole
    assert temp_files(tmp_path) == []


SIGTERM_SCRIPT = """\
import os, signal, sys
import numpy as np
from fgl.cli import main
real = np.savez_compressed
def interrupted(fh, **arrays):
    os.kill(os.getpid(), signal.SIGTERM)     # arrives half-way through the write
    real(fh, **arrays)
np.savez_compressed = interrupted
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_during_a_model_write_keeps_a_whole_model_and_no_temporary_file(made,
                                                                               tmp_path):
    model, train, _, _ = made
    out = tmp_path / "m.fglm"
    out.write_bytes(model.read_bytes())
    script = tmp_path / "sigterm.py"
    script.write_text(SIGTERM_SCRIPT, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(script), "train", str(HMM), "--train",
                           str(train), "-o", str(out), "-q", "--max-iter", "3"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == -signal.SIGTERM, proc.stderr    # ended by it, after the write
    assert load_model(out)[2]["iterations"] == 3
    assert temp_files(tmp_path) == []


def test_what_a_killed_write_left_is_removed_by_the_next_write_of_the_file(made, tmp_path):
    """SIGKILL cannot be caught: the temporary file of a write killed
    half-way stays, and the next write of the same file removes it (its
    process is gone); a live writer's temporary file is left alone."""
    model, train, _, _ = made
    out = tmp_path / "m.fglm"
    script = tmp_path / "sigkill.py"
    script.write_text(SIGTERM_SCRIPT.replace("SIGTERM", "SIGKILL"), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    args = ["train", str(HMM), "--train", str(train), "-o", str(out), "-q", "--max-iter", "2"]
    killed = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env, cwd=REPO)
    assert killed.wait(timeout=120) == -signal.SIGKILL
    left = temp_files(tmp_path)
    assert len(left) == 1 and left[0].startswith(f".m.fglm.{killed.pid}.")
    live = tmp_path / f".m.fglm.{os.getpid()}.abcdefgh.tmp"   # (this process: alive)
    live.write_bytes(b"being written")
    proc = subprocess.run([sys.executable, "-m", "fgl.cli", *args], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert temp_files(tmp_path) == [live.name] and load_model(out)[2]["iterations"] == 2


# ---------------------------------------------------------------- inputs

@pytest.fixture
def small_cap(monkeypatch):
    """Inputs capped at 1 MB while a test runs (a device read by mistake
    stops there)."""
    monkeypatch.setenv("FGL_MAX_INPUT", "1M")
    monkeypatch.setenv("FGL_MAX_SPEC", "64K")


def test_a_device_given_as_input_is_refused_before_reading(made, tmp_path):
    model, train, test, _ = made
    cases = []
    for device in ("/dev/zero", "/dev/urandom"):
        cases += [["tag", model, device], ["train", HMM, "--train", device, "-o",
                                           tmp_path / "m.fglm"],
                  ["explain", HMM, "--train", device], ["check", device],
                  ["train", device, "--train", train, "-o", tmp_path / "m.fglm"],
                  ["convert", "crfpp", device], ["convert", "linqs", device, device],
                  ["inspect", device], ["tag", device, test]]
    for argv, (code, err) in zip(cases, run_bounded(cases)):
        device = next(a for a in argv if str(a).startswith("/dev/"))
        assert code == 2 and f"fgl: {device}: is a character device, not a" in err, (argv, err)
        assert "Traceback" not in err and err.count("\n") == 1, err


def test_inputs_over_the_cap_are_refused(capsys, made, tmp_path, small_cap):
    model, _, test, _ = made
    big = tmp_path / "big.txt"
    big.write_bytes(test.read_bytes() * (2 + (1 << 20) // test.stat().st_size))
    code, _, err = run(capsys, "tag", model, big)
    assert code == 2 and err == (f"fgl: {big}: larger than the 1 MB fgl reads from one input "
                                 "file; set FGL_MAX_INPUT (e.g. FGL_MAX_INPUT=8G) to read "
                                 "more\n"), err
    spec = tmp_path / "big.fgl"
    spec.write_text(HMM.read_text() + "#" * (65 << 10), encoding="utf-8")
    code, _, err = run(capsys, "check", spec)
    assert code == 2 and "FGL_MAX_SPEC" in err and err.startswith(f"fgl: {spec}: larger"), err


def test_a_pipe_that_never_ends_is_cut_at_the_cap(capsys, made, tmp_path, small_cap):
    model, _, _, _ = made
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)

    def feed() -> None:
        try:
            with open(fifo, "wb") as fh:
                for _ in range(64):
                    fh.write(b"word\n" * 20000)     # 6 MB in all, more than the cap
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    code, _, err = run(capsys, "tag", model, fifo)
    writer.join(10)
    assert code == 2 and err.startswith(f"fgl: {fifo}: larger than the 1 MB"), err


# ---------------------------------------------------------------- options that were tracebacks

def test_sizes_beyond_any_machine_are_refused(capsys, made, tmp_path, monkeypatch):
    _, train, _, _ = made
    out = tmp_path / "m.fglm"
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", out, "--max-memory",
                       "1e400")
    assert code == 2 and err.startswith("fgl: --max-memory: '1e400' is larger than any"), err
    monkeypatch.setenv("FGL_MAX_MEMORY", "1e400")
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", out, "-q")
    assert code == 2 and err.startswith("fgl: FGL_MAX_MEMORY: '1e400' is larger"), err
    monkeypatch.delenv("FGL_MAX_MEMORY")
    monkeypatch.setenv("FGL_MAX_INPUT", "1e400")
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", out, "-q")
    assert code == 2 and err.startswith("fgl: FGL_MAX_INPUT: '1e400' is larger"), err
    assert not out.exists()


@pytest.mark.parametrize("argv, words", [
    (["compare", "{model}", "{model}", "{test}", "--seed", "-1"],
     "argument --seed: a seed is a whole number from 0, found -1"),
    (["tag", "{model}", "{test}", "--encoding", "idna"],
     "argument --encoding: 'idna' is not an encoding a text file can be in"),
    (["tag", "{model}", "{test}", "--encoding", "rot13"],
     "argument --encoding: 'rot13' is not an encoding a text file can be in"),
    (["eval", "{model}", "{test}", "--encoding", "nonesuch"],
     "argument --encoding: unknown encoding 'nonesuch'"),
    (["convert", "crfpp", "{test}", "--encoding", "punycode"],
     "argument --encoding: 'punycode' is not an encoding"),
    (["compare", "{model}", "{model}", "{test}", "--trials", "99999999999999999999"],
     "argument --trials: 99999999999999999999 is beyond the largest whole number fgl takes "
     "(2147483647)"),
    (["tag", "{model}", "{test}", "--jobs", "1" * 5000],
     "argument --jobs: 111111111111111111111111111111 ...[4940 characters]... "
     "111111111111111111111111111111 is beyond the largest whole number fgl takes"),
], ids=["seed -1", "idna", "rot13", "unknown", "punycode", "trials 1e20", "jobs of 5,000 digits"])
def test_bad_options_are_usage_errors(capsys, made, argv, words):
    model, _, test, _ = made
    with pytest.raises(SystemExit) as e:
        main([a.format(model=model, test=test) for a in argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and words in err and "Traceback" not in err, err


def test_jobs_beyond_the_cores_are_capped_with_a_note(capsys, made):
    from fgl.engines.parallel import cores, resolve_jobs

    model, _, test, _ = made
    code, out, err = run(capsys, "tag", model, test, "--jobs", "100000")
    assert code == 0 and out, err
    assert err == (f"fgl: note: --jobs 100000 is more than the {cores()} cores this machine "
                   f"gives fgl; using {cores()}\n")
    assert resolve_jobs(100000) == cores()     # the API and the spec's `jobs` alike


@pytest.mark.parametrize("argv, words", [
    (["explain", "{spec}", "--train", "{train}", "--dask-workers", "1", "--bandwidth", "0"],
     "fgl: --bandwidth takes bytes per second, a positive number; found 0"),
    (["train", "{spec}", "--train", "{train}", "-o", "{out}", "--dask", "not a url"],
     "fgl: cannot reach the Dask scheduler at not a url: "),
], ids=["bandwidth 0", "dask not a url"])
def test_bad_cluster_options_are_messages(capsys, made, tmp_path, argv, words):
    pytest.importorskip("distributed")
    _, train, _, _ = made
    out = tmp_path / "m.fglm"
    code, _, err = run(capsys, *(a.format(spec=HMM, train=train, out=out) for a in argv))
    assert code == 2 and err.startswith(words) and "Traceback" not in err, err
    assert not out.exists()


# ---------------------------------------------------------------- issue 47: names, signals, streams

def test_an_output_naming_an_input_however_named_is_refused(capsys, made, tmp_path):
    """The spec named stdlib:NAME (the installed file), a checkpoint not yet
    written, the checkpoint --resume reads and a file a data glob matches
    are inputs too: refused before any work, nothing changed or made."""
    from fgl.lang.stdlib import resolve_spec_path

    model, train, test, _ = made
    installed = resolve_spec_path("stdlib:hmm_like")
    picture = tmp_path / "tagged.png"      # data whose name ends as a picture's
    picture.write_bytes(test.read_bytes())
    saved = {p: p.read_bytes() for p in (installed, model, train, test, picture)}
    unborn = tmp_path / "x.fglm"
    cases = [(["train", "stdlib:hmm_like", "--train", train, "-o", installed, "-q"],
              installed, "is also the spec"),
             (["train", HMM, "--train", train, "-o", unborn, "--checkpoint", unborn, "-q"],
              unborn, "is also the --checkpoint file"),
             (["train", HMM, "--train", train, "-o", model, "--resume", model, "-q"],
              model, "is also the checkpoint --resume reads"),
             (["tag", model, str(test.parent / "t*.txt"), "-o", test], test,
              "is also the data"),
             (["eval", "--tagged", picture, "--confusion", "-o", picture], picture,
              "is also the tagged file")]
    for argv, target, words in cases:
        code, _, err = run(capsys, *argv)
        refused(code, err, target, words)
    assert {p: p.read_bytes() for p in saved} == saved and not unborn.exists()


def test_a_name_ending_in_a_slash_is_refused_and_the_file_kept(capsys, made, tmp_path):
    """`tag -o keep.txt/` wrote keep.txt (the slash dropped); `-o new/` made
    a file named new."""
    model, _, test, _ = made
    keep = tmp_path / "keep.txt"
    keep.write_bytes(b"keep me\n")
    for name in (f"{keep}/", f"{keep}/.", f"{tmp_path}/new/", f"{tmp_path}/new/.."):
        code, _, err = run(capsys, "tag", model, test, "-o", name)
        refused(code, err, name, "names a folder (it ends in ")
    assert keep.read_bytes() == b"keep me\n" and sorted(os.listdir(tmp_path)) == ["keep.txt"]


@pytest.mark.parametrize("command", ["tag", "convert"])
def test_a_name_as_long_as_the_folder_allows_is_written(capsys, made, tmp_path, command):
    """A file name of the longest length the file system allows (255 bytes,
    in two-byte characters too) is written: the temporary name beside it
    is cut to fit."""
    longest = os.pathconf(tmp_path, "PC_NAME_MAX")
    for name in ("a" * (longest - 4) + ".txt", "é" * ((longest - 4) // 2) + ".txt"):
        out = tmp_path / name
        code, _, err = run(capsys, *commands(made, out, tmp_path)[command])
        assert code == 0 and out.is_file() and out.stat().st_size > 0, err
        assert temp_files(tmp_path) == []
        out.unlink()


def test_a_signal_after_training_waits_until_the_model_is_written(capsys, made, tmp_path,
                                                                   monkeypatch):
    """Ctrl-C after "trained in", while the model's header is built and before
    its temporary file exists, ends the run only once the model is there."""
    from fgl.api import CRF

    _, train, _, _ = made
    out = tmp_path / "m.fglm"
    real = CRF.save

    def interrupted(self, path):
        signal.raise_signal(signal.SIGINT)     # training is over, nothing is written yet
        return real(self, path)

    monkeypatch.setattr(CRF, "save", interrupted)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code, _, err = run(capsys, "train", HMM, "--train", train, "-o", out, "-q",
                           "--max-iter", "3")
    finally:
        signal.signal(signal.SIGINT, before)
    assert code == 130 and f"wrote {out}\nfgl: interrupted\n" in err, err
    assert load_model(out)[2]["iterations"] == 3 and temp_files(tmp_path) == []


SIGTERM_AFTER_TRAINING = """\
import os, signal, sys
from fgl.api import CRF
from fgl.cli import main
real = CRF.save
def save(self, path):
    os.kill(os.getpid(), signal.SIGTERM)     # after training, before the model file exists
    return real(self, path)
CRF.save = save
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_after_training_keeps_the_model(made, tmp_path):
    _, train, _, _ = made
    out = tmp_path / "m.fglm"
    script = tmp_path / "late.py"
    script.write_text(SIGTERM_AFTER_TRAINING, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(script), "train", str(HMM), "--train",
                           str(train), "-o", str(out), "-q", "--max-iter", "3"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == -signal.SIGTERM, proc.stderr    # ended by it, after the write
    assert load_model(out)[2]["iterations"] == 3 and temp_files(tmp_path) == []


def test_an_ignored_sigint_stays_ignored_while_training(capsys, made, tmp_path, monkeypatch):
    """A process started with SIGINT ignored (`nohup`, a background job)
    keeps it ignored: training does not put its own handler in its place."""
    from fgl.api import CRF

    _, train, _, _ = made
    seen = []
    real = CRF.fit_file

    def fit_file(self, *args, **kwargs):
        seen.append(signal.getsignal(signal.SIGINT))
        signal.raise_signal(signal.SIGINT)      # ignored: training goes on
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CRF, "fit_file", fit_file)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code, _, err = run(capsys, "train", HMM, "--train", train, "-o", tmp_path / "m.fglm",
                           "-q", "--max-iter", "3")
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    assert code == 0 and seen == [signal.SIG_IGN], err
    assert load_model(tmp_path / "m.fglm")[2]["iterations"] == 3


@pytest.mark.parametrize("argv", [["tag", "{model}", "{test}"], ["inspect", "{model}"],
                                  ["check", str(HMM)], ["eval", "{model}", "{test}"],
                                  ["explain", str(HMM), "--train", "{test}"]],
                         ids=["tag", "inspect", "check", "eval", "explain"])
def test_a_closed_standard_output_is_a_message(capsys, made, monkeypatch, argv):
    """`fgl tag ... >&-`: Python starts with sys.stdout None; writing to it
    was an AttributeError."""
    model, _, test, _ = made
    monkeypatch.setattr(sys, "stdout", None)
    code, _, err = run(capsys, *(a.format(model=model, test=test) for a in argv))
    assert code == 1 and err.endswith("fgl: <stdout>: it is closed (the command was started "
                                      "with >&-); give -o FILE where the command has it, or "
                                      "redirect standard output (> FILE, > /dev/null)\n"), err
    assert "Traceback" not in err


def test_a_closed_standard_output_is_not_needed_with_an_output_file(capsys, made, tmp_path,
                                                                     monkeypatch):
    model, _, test, _ = made
    monkeypatch.setattr(sys, "stdout", None)
    out = tmp_path / "t.txt"
    code, _, err = run(capsys, "tag", model, test, "-o", out)
    assert code == 0 and out.stat().st_size > 0, err


def test_closed_standard_streams_in_a_real_process(made, tmp_path):
    model, _, test, _ = made
    env = dict(os.environ, PYTHONPATH=str(REPO))
    argv = [sys.executable, "-m", "fgl.cli", "tag", str(model), str(test)]
    closed = subprocess.run(argv, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                            timeout=120, preexec_fn=lambda: os.close(1))
    assert closed.returncode == 1 and closed.stderr.startswith("fgl: <stdout>: it is closed"), \
        closed.stderr
    stdin = subprocess.run([*argv[:-1], "-", "-o", str(tmp_path / "t.txt")],
                           stderr=subprocess.PIPE, text=True,
                           env=env, cwd=REPO, timeout=120, preexec_fn=lambda: os.close(0))
    assert stdin.returncode == 1 and stdin.stderr == (
        "fgl: <stdin>: it is closed (the command was started with <&-); give a file name "
        "instead of -\n"), stdin.stderr


@pytest.mark.parametrize("variable, value, words", [
    ("NUMBA_NUM_THREADS", "0", "NUMBA_NUM_THREADS: '0' is not a number of threads"),
    ("NUMBA_NUM_THREADS", "-1", "NUMBA_NUM_THREADS: '-1' is not a number of threads"),
    ("NUMBA_NUM_THREADS", "many", "NUMBA_NUM_THREADS: 'many' is not a number of threads"),
    ("NUMBA_DISABLE_JIT", "1", "NUMBA_DISABLE_JIT: '1': fgl's kernels need numba's compiler"),
], ids=["threads 0", "threads -1", "threads many", "jit disabled"])
def test_numba_settings_fgl_cannot_run_with_are_refused(capsys, made, tmp_path, monkeypatch,
                                                        variable, value, words):
    """numba raised at its import (train: a traceback; tag and inspect: "corrupt
    model file"), or fgl's kernels failed under the interpreter."""
    model, train, test, _ = made
    monkeypatch.setenv(variable, value)
    for argv in (["train", HMM, "--train", train, "-o", tmp_path / "m.fglm", "-q"],
                 ["tag", model, test], ["inspect", model]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.startswith(f"fgl: {words}") and err.count("\n") == 1, err
    assert not (tmp_path / "m.fglm").exists()
