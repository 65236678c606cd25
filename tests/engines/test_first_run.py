"""The first run on a machine: numba compiles the kernels once, and fgl
says so on a terminal (fgl.engines.first_run)."""
from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

import pytest

import fgl
from fgl import registry
from fgl.engines import first_run

SPEC = """columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
train { max_iter = 5 }
"""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_note_needs_a_cold_cache_and_a_terminal_and_comes_once(monkeypatch):
    monkeypatch.setattr(first_run, "_noted", set())
    monkeypatch.setattr(first_run, "is_cold", lambda engine, task: True)
    chain = registry.by_name("chain")
    assert not first_run.note_first_compile(chain, "tag", io.StringIO())   # a log: no note
    term = Terminal()
    assert first_run.note_first_compile(chain, "tag", term)
    seconds = first_run.kernels_of(chain, "tag").seconds
    assert term.getvalue() == (f"fgl: compiling fgl's kernels for this machine, once: ~{seconds} s "
                               "(the chain engine's tagging; later runs load them from numba's "
                               "cache)\n")
    assert not first_run.note_first_compile(chain, "tag", term)          # once per process
    monkeypatch.setattr(first_run, "is_cold", lambda engine, task: False)
    assert not first_run.note_first_compile(chain, "train", Terminal())  # warm: no note


def test_every_engine_and_task_names_cached_kernels():
    for engine in registry.ENGINES:
        for task in ("train", "tag"):
            kernels = first_run.kernels_of(engine, task)
            import importlib
            for name in kernels.names:
                index = first_run.cache_index(getattr(importlib.import_module(kernels.module),
                                                      name))
                assert index is not None and index.suffix == ".nbi", (engine.name, task, name)
            assert 0 < kernels.seconds <= 90   # (the longest: a skip chain: TRW, junction trees)


def run_on_a_terminal(argv: list[str], env: dict) -> str:
    """Run ``fgl argv`` with standard error on a pseudo-terminal; its text."""
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from fgl.cli import main; "
                             "sys.exit(main(sys.argv[1:]))", *argv],
                            stdout=subprocess.DEVNULL, stderr=child, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 4096)
        except OSError:        # the terminal closed: the process ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert proc.wait(timeout=600) == 0
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_a_cold_cache_is_noted_on_the_first_tagging_only(tmp_path):
    X, y = [[["a"], ["b"]], [["b"], ["a"], ["a"]]], [["A", "B"], ["B", "A", "A"]]
    fgl.CRF(SPEC).fit(X, y).save(tmp_path / "m.fglm")
    (tmp_path / "test.txt").write_text("a\nb\n\nb\na\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}   # nothing compiled yet
    check = [sys.executable, "-c", "from fgl.engines.first_run import is_cold; "
             "from fgl.registry import by_name; chain = by_name('chain'); "
             "print(is_cold(chain, 'tag'), is_cold(chain, 'train'))"]
    assert subprocess.run(check, env=env, capture_output=True, text=True).stdout == \
        "True True\n"
    argv = ["tag", str(tmp_path / "m.fglm"), str(tmp_path / "test.txt")]
    first = run_on_a_terminal(argv, env)
    seconds = first_run.kernels_of(registry.by_name("chain"), "tag").seconds
    assert first.count(f"compiling fgl's kernels for this machine, once: ~{seconds} s") == 1, first
    assert subprocess.run(check, env=env, capture_output=True, text=True).stdout == \
        "False True\n"                                   # tagging's kernels are cached now
    assert "compiling" not in run_on_a_terminal(argv, env)
