"""Stop requests reach long computations (issue 25, item 5): a SIGTERM while
the data is read and compiled ends the run at once with a message and
status 143, writing nothing; ``--time-limit`` and SIGTERM are heard inside
one BP evaluation that would never end; BP run in chunks (to hear them)
gives the results of one run, bit for bit."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from fgl import stopping
from fgl.datasets.synth import write_segment_files
from fgl.engines.graph import loopy
from fgl.engines.graph.factor_graph import FactorGraph

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and FIFOs")

FGL = [sys.executable, "-m", "fgl.cli"]

RICH = """columns word, label
output label
obs w = word[t-2..t+2] | prefix(word[t], 2) | suffix(word[t], 2) | shape(word[t])
obs c = lower(word[t-1]) & lower(word[t+1])
template e: y[t] ~ w, c
template tr: y[t-1..t]
"""

# BP that never converges: one evaluation would run 2^31 - 1 passes per instance
NEVER_ENDS = """columns word, label
output label
template state: y[t] ~ bias, word[t], word[t-1]
template trans: y[t-1..t]
template skip: (y[i], y[j]) where word[i] == word[j] ~ bias, either(word[t])
infer loopy(damping = 0, max_iter = {max_iter}, tol = 1e-300)
"""


def _big_data(n_sentences: int = 20000) -> str:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    lines = []
    for _ in range(n_sentences):
        for _ in range(15):
            w = rng.choice(words)
            lines.append(f"{w} {'AB'[int(w[1:]) % 2]}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_sigterm_while_compiling_ends_the_run_at_once(tmp_path):
    """The data comes through a FIFO: when the last byte is written fgl has
    read it and is extracting features (several seconds of work here); a
    SIGTERM then ends the run within 5 s, status 143, nothing written.
    (Before: "stopping after this iteration", then every iteration ran.)"""
    spec = tmp_path / "spec.fgl"
    spec.write_text(RICH)
    fifo = tmp_path / "train.fifo"
    os.mkfifo(fifo)
    out = tmp_path / "m.fglm"
    proc = subprocess.Popen([*FGL, "train", str(spec), "--train", str(fifo), "-o", str(out),
                             "--max-iter", "200"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the open returns when fgl opens the FIFO: inside the training call, signals caught
        with open(fifo, "w") as f:
            f.write(_big_data())
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        sent = time.perf_counter()
        _, err = proc.communicate(timeout=30)
        took = time.perf_counter() - sent
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert took < 5.0, f"{took:.1f} s after SIGTERM"
    assert "fgl: SIGTERM before training (while reading and compiling): stopped; " \
           "nothing was written" in err
    assert "Traceback" not in err and "iter " not in err
    assert not out.exists() and not _leftovers(tmp_path)


def _until_compiled(proc: subprocess.Popen, lines: list[str]) -> None:
    """Read ``proc``'s stderr into ``lines`` until training starts."""
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("compiled in"):
            return
    raise AssertionError("training never started:\n" + "".join(lines))


def _drain(proc: subprocess.Popen, lines: list[str]) -> threading.Thread:
    t = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    t.start()
    return t


@pytest.fixture(scope="module")
def never_ends(tmp_path_factory):
    """The non-converging spec, its data, and the BP kernels compiled (numba
    caches them: the timings below are of BP, not of the JIT)."""
    folder = tmp_path_factory.mktemp("loopy")
    train, _ = write_segment_files(folder, n_types=2, max_len=3, vocab=8, n_train=12,
                                   n_test=1, length=10, seed=4)
    spec = folder / "spec.fgl"
    spec.write_text(NEVER_ENDS.format(max_iter=2147483647))
    warm = folder / "warm.fgl"
    warm.write_text(NEVER_ENDS.format(max_iter=50))
    subprocess.run([*FGL, "train", str(warm), "--train", str(train), "-o",
                    str(folder / "warm.fglm"), "--max-iter", "2", "-q"],
                   capture_output=True, timeout=300, check=True)
    return spec, train


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_time_limit_stops_one_endless_bp_evaluation(never_ends, tmp_path, jobs):
    """``--time-limit 2``: training stops within 5 s of its start although
    its first line search's evaluation would run 2^31 BP passes, and writes
    the model reached (the starting weights, and says so)."""
    spec, train = never_ends
    out = tmp_path / "m.fglm"
    proc = subprocess.Popen([*FGL, "train", str(spec), "--train", str(train), "-o", str(out),
                             "--time-limit", "2", "--jobs", jobs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        _until_compiled(proc, lines)
        started = time.perf_counter()
        reader = _drain(proc, lines)
        proc.wait(timeout=60)
        took = time.perf_counter() - started
        reader.join(5)
    finally:
        proc.kill()
    err = "".join(lines)
    assert proc.returncode == 0, err
    assert took < 5.0, f"training took {took:.1f} s under --time-limit 2"
    assert "stopped at the time limit (2 s) inside the first iteration: the model holds " \
           "the starting weights" in err
    assert out.exists() and not _leftovers(tmp_path)


def test_sigterm_inside_an_endless_bp_evaluation_writes_the_model(never_ends, tmp_path):
    spec, train = never_ends
    out = tmp_path / "m.fglm"
    proc = subprocess.Popen([*FGL, "train", str(spec), "--train", str(train), "-o", str(out),
                             "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        _until_compiled(proc, lines)
        reader = _drain(proc, lines)
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        sent = time.perf_counter()
        proc.wait(timeout=60)
        took = time.perf_counter() - sent
        reader.join(5)
    finally:
        proc.kill()
    err = "".join(lines)
    assert proc.returncode == 0, err
    assert took < 5.0, f"{took:.1f} s after SIGTERM"
    assert "fgl: SIGTERM: stopping at the next safe point" in err
    assert "(stopped by SIGTERM inside the first iteration" in err
    assert out.exists() and not _leftovers(tmp_path)


# ---------------------------------------------------------------- in process


def _loopy_graph(seed: int) -> tuple[FactorGraph, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 12
    factors = [[v] for v in range(n)] + [[v, (v + 1) % n] for v in range(n)] \
        + [[v, (v + 5) % n] for v in range(0, n, 2)]
    g = FactorGraph.from_factors([3] * n, factors)
    return g, rng.normal(0.0, 1.5, g.n_table)


@pytest.mark.parametrize("schedule,damping,log_domain", [
    ("flooding", 0.0, False), ("flooding", 0.3, False), ("trp", 0.0, False),
    ("flooding", 0.2, True)])
def test_bp_in_chunks_is_bp_in_one_run(monkeypatch, schedule, damping, log_domain):
    """With a stopping rule installed BP runs in chunks of passes (here of
    1, 2, 4, ...): every message, belief and count is the one run's."""
    g, pot = _loopy_graph(3)
    kw = dict(schedule=schedule, damping=damping, tol=1e-13, max_iter=300,
              log_domain=log_domain)
    whole = loopy.belief_propagation(g, pot, **kw)
    monkeypatch.setattr(stopping, "FIRST_CHUNK", 1)
    with stopping.watching(lambda: None):
        chunked = loopy.belief_propagation(g, pot, **kw)
    assert whole.iterations == chunked.iterations > 1
    assert whole.residual == chunked.residual
    assert whole.log_z == chunked.log_z
    for a, b in zip(whole.messages, chunked.messages):
        assert np.array_equal(a, b)
    assert np.array_equal(whole.factor_beliefs, chunked.factor_beliefs)


def test_bp_hears_the_stopping_rule_between_chunks(monkeypatch):
    g, pot = _loopy_graph(5)
    monkeypatch.setattr(stopping, "FIRST_CHUNK", 4)
    asked = []

    def rule():
        asked.append(1)
        return "stop now" if len(asked) >= 3 else None

    with stopping.watching(rule, grace=0.0), pytest.raises(stopping.Stopped, match="stop now"):
        loopy.belief_propagation(g, pot, tol=1e-300, max_iter=2147483647)
    assert not stopping.active()
