"""Running ``fgl`` in tests: in process (``fgl.cli.main``), in a child process
stopped by SIGTERM, and in a child process of bounded memory."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from fgl.cli import main
from fgl.data.sentence import Sentence
from fgl.io.conll import write_conll
from support.paths import HMM, REPO
from support.sentences import segment_data


def write_data(path: Path, sentences: list[Sentence], encoding: str = "utf-8") -> Path:
    with open(path, "w", encoding=encoding, newline="\n") as fh:
        write_conll(fh, sentences)
    return path


def data_files(tmp_path: Path, seed: int = 1) -> tuple[Path, Path]:
    train, test = segment_data(seed)
    return write_data(tmp_path / "train.txt", train), write_data(tmp_path / "test.txt", test)


def run(capsys, *argv) -> tuple[int, str, str]:
    """Run ``fgl argv...``; returns (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def train_model(capsys, tmp_path: Path, spec: Path = HMM, *extra) -> tuple[Path, Path, Path]:
    """Train ``spec`` quietly on generated data; returns (model, train, test)."""
    train, test = data_files(tmp_path)
    model = tmp_path / "model.fglm"
    code, _, err = run(capsys, "train", spec, "--train", train, "-o", model, "-q", *extra)
    assert code == 0, err
    assert model.is_file()
    return model, train, test


def blocks(text: str) -> list[list[list[str]]]:
    """Sentences of a column-file text: lists of token field lists."""
    out, cur = [], []
    for line in text.split("\n"):
        if line.strip():
            cur.append(line.split())
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def train_until_sigterm(argv: list[str]) -> tuple[int, str]:
    """Run `fgl argv...` (a long training run), send SIGTERM once it prints
    its third iteration; returns its exit status and stderr."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "fgl.cli", *argv], stderr=subprocess.PIPE,
                            text=True, cwd=REPO, env=env)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("iter") and sum(x.startswith("iter") for x in lines) == 3:
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.communicate(timeout=300)[1]
    return proc.returncode, "".join(lines) + rest


# run_bounded's child: each command line in turn, under an address-space cap
_BOUNDED = """\
import contextlib, io, json, resource, sys
import fgl.api
from fgl.cli import main
with open("/proc/self/status") as fh:   # what the process holds, plus 1 GB
    vm = next(int(line.split()[1]) << 10 for line in fh if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), vm + (1 << 30)))
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except BaseException as e:   # (a MemoryError at the cap, say)
            code = repr(e)
    results.append([code, err.getvalue()])
print(json.dumps(results))
"""


def run_bounded(cases: list[list]) -> list[tuple[object, str]]:
    """Run each ``fgl`` command line of ``cases`` in one process whose
    address space is capped (1 GB above what it holds once fgl is imported)
    and whose time is bounded: an input read without a bound fails the
    test instead of exhausting the machine.  Returns (exit code, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _BOUNDED,
                           json.dumps([[str(a) for a in argv] for argv in cases])],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [tuple(r) for r in json.loads(proc.stdout)]


def capped_fgl(*argv, cap: int = 3 << 30, timeout: float = 60,
               env: dict | None = None) -> tuple[int, str, float]:
    """Run ``fgl argv...`` in a child process whose address space is capped
    at ``cap`` bytes (numba and numpy fit in 3 GiB; what a budget refuses
    would not), within ``timeout`` seconds: (exit code, stderr, seconds)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "fgl.cli", *map(str, argv)], capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limit, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO), **(env or {})))
    return proc.returncode, proc.stderr, time.monotonic() - start
