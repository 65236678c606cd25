"""Where `fgl` writes and what it says when it cannot: the model's path is
checked before training, a model is written atomically (a failed write
leaves the previous model intact), a diverged run keeps no model, a time
limit or a signal stops training and keeps the model reached, an empty file
to evaluate is a located error, a closed pipe is not a traceback, and
`fgl --version`."""
from __future__ import annotations

import importlib.abc
import importlib.metadata
import os
import subprocess
import sys

import pytest
from support.cli import data_files, run, train_model, train_until_sigterm
from support.paths import HMM, REPO

from fgl import __version__
from fgl.modelfile.model_files import load_model


@pytest.mark.parametrize("where", ["missing folder", "a folder"])
def test_output_path_is_checked_before_training(capsys, tmp_path, where):
    train, _ = data_files(tmp_path)
    out = tmp_path / "no" / "m.fglm" if where == "missing folder" else tmp_path
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", out, "-q")
    assert code == 2 and "Traceback" not in err
    assert "trained in" not in err     # refused before training, not after
    assert ("does not exist" in err) if where == "missing folder" else ("is a folder" in err)


def test_a_failed_write_keeps_the_previous_model(capsys, tmp_path):
    model, train, _ = train_model(capsys, tmp_path)
    before = model.read_bytes()
    assert len(before) > 1024
    # a file size limit (1 KB, the model is larger) makes the next save fail mid-write
    script = ("import resource, sys; from fgl.cli import main; "
              "resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024)); "
              "sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", script, "train", str(HMM), "--train",
                           str(train), "-o", str(model), "-q", "--max-iter", "3"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "cannot write the model" in proc.stderr and "Traceback" not in proc.stderr
    assert model.read_bytes() == before
    load_model(model)
    mask = os.umask(0)
    os.umask(mask)
    assert oct(model.stat().st_mode & 0o777) == oct(0o666 & ~mask)   # not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_empty_files_to_tag_and_evaluate(capsys, tmp_path):
    model, _, _ = train_model(capsys, tmp_path)
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    code, out, err = run(capsys, "tag", model, empty)
    assert (code, out) == (0, "") and "Traceback" not in err
    code, _, err = run(capsys, "eval", model, empty)
    assert code == 2 and f"{empty}:1: no sentences to evaluate" in err


def test_a_closed_pipe_is_not_an_error(capsys, tmp_path):
    model, _, test = train_model(capsys, tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(f"{sys.executable} -m fgl.cli tag {model} {test} | head -1",
                          shell=True, capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=300)
    assert proc.stdout.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_version(capsys):
    from fgl.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"fgl {__version__}"


def test_a_diverged_run_writes_no_model(capsys, tmp_path, monkeypatch):
    """An objective that turns non-finite ends training with exit status 1
    and a message; no model is written."""
    from fgl.learn import learner

    real = learner.train_lbfgs

    def diverging(*args, **kwargs):
        w, log = real(*args, **kwargs)
        log.objective = float("nan")
        return w, log

    monkeypatch.setattr(learner, "train_lbfgs", diverging)
    train, _ = data_files(tmp_path)
    out = tmp_path / "m.fglm"
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", out, "-q", "--max-iter", "2")
    assert code == 1 and "training diverged" in err and "no model kept" in err
    assert not out.exists()


def test_time_limit_and_sigterm_stop_training_and_keep_the_model(capsys, tmp_path):
    train, _ = data_files(tmp_path)
    out = tmp_path / "t.fglm"
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", out, "-q",
                       "--time-limit", "1e-6")
    assert code == 0 and "stopped at the time limit" in err and out.is_file()
    assert "1 iterations" in err

    # a long run (tol 1e-12 and many iterations), told to stop once it is iterating
    sig = tmp_path / "s.fglm"
    code, err = train_until_sigterm(["train", str(HMM), "--train", str(train), "-o", str(sig),
                                     "--tol", "1e-12", "--max-iter", "100000"])
    assert code == 0, err
    assert "stopped by SIGTERM" in err and sig.is_file()
    load_model(sig)


def test_ctrl_c_during_start_up_is_quiet(capsys, monkeypatch):
    """The console command imports the CLI inside its own handler: an
    interrupt while numpy and numba load is "interrupted", status 130."""
    class Interrupting(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "fgl.cli":
                raise KeyboardInterrupt
            return None

    scripts = importlib.metadata.entry_points(group="console_scripts", name="fgl")
    assert [s.value for s in scripts] == ["fgl.entry:main"]
    monkeypatch.delitem(sys.modules, "fgl.cli")
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    from fgl.entry import main
    assert main() == 130
    assert capsys.readouterr().err == "fgl: interrupted\n"
