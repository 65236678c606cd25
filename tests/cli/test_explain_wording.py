"""`fgl explain` says what the model costs and how exact it is: a maxent
spec (no template links two labels) has per-token label scores and no
dynamic program across tokens, not "transition updates"; belief
propagation on factor graphs without cycles is exact, not "loopy"."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.cli import run
from support.paths import REPO

from fgl.datasets.synth import segment_sequences

STDLIB = REPO / "stdlib"
RELATIONAL = STDLIB / "relational.fgl"      # infer trw


def engine_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("engine: "))


def write_tokens(path: Path) -> Path:
    train, _ = segment_sequences(n_train=30, n_test=1, length=8, seed=2)
    path.write_text("\n\n".join("\n".join(" ".join(r) for r in s.rows) for s in train) + "\n")
    return path


def write_graphs(path: Path, cycle: bool) -> Path:
    """Citation graphs of 6 papers whose edges form a tree (each paper
    cites one earlier paper), plus one edge closing a cycle if ``cycle``."""
    lines = []
    for g in range(5):
        nodes = [{"id": f"p{i}", "words": f"w{(g + i) % 4} w{i % 3}", "label": "AB"[(g + i) % 2]}
                 for i in range(6)]
        edges = [{"source": f"p{i}", "target": f"p{(i - 1) // 2}", "type": "cites"}
                 for i in range(1, 6)]
        if cycle:
            edges.append({"source": "p5", "target": "p0", "type": "cites"})
        lines.append(json.dumps({"nodes": nodes, "edges": edges}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_maxent_explain_speaks_of_label_scores_not_transitions(capsys, tmp_path):
    data = write_tokens(tmp_path / "train.txt")
    code, out, err = run(capsys, "explain", STDLIB / "maxent.fgl", "--train", data)
    assert code == 0, err
    assert "transition" not in out.replace("(no transitions)", "")
    labels = int(re.search(r"labels \(n = (\d+)\)", out).group(1))
    assert (f"cost of one pass: n = {labels} label scores per token, each token normalised on "
            "its own; no template links two labels, so there is no dynamic program across "
            "tokens") in out
    assert "predicted on its own (a maximum-entropy classifier per token): exact in O(T·n)" \
        in out
    # a chain with a transition template still counts its transition updates
    code, out, _ = run(capsys, "explain", STDLIB / "hmm_like.fgl", "--train", data)
    assert code == 0 and re.search(r"= \d+ transition updates per token", out)
    assert "contiguous label window" in out and "label scores per token" not in out


def relational(tmp_path: Path, infer: str) -> Path:
    """stdlib/relational.fgl with ``infer`` for its infer line (empty: none)."""
    spec = tmp_path / f"relational_{infer.split('(')[0] or 'auto'}.fgl"
    spec.write_text(re.sub(r"(?m)^infer .*$", infer, RELATIONAL.read_text()))
    return spec


LOOPY = "infer loopy(damping = 0.3, max_iter = 100, tol = 1e-6)"


@pytest.mark.parametrize("infer", ["loopy", "auto"])
def test_bp_on_trees_is_called_exact(capsys, tmp_path, infer):
    spec = relational(tmp_path, LOOPY if infer == "loopy" else "")
    trees = write_graphs(tmp_path / "trees.jsonl", cycle=False)
    code, out, err = run(capsys, "explain", spec, "--train", trees)
    assert code == 0, err
    assert "independent cycles 0" in out
    assert ("no instance has a cycle: every factor graph is a tree or forest, on which belief "
            "propagation is exact, not loopy") in out
    if infer == "loopy":
        assert engine_line(out).startswith("engine: belief propagation over a factor graph per "
                                           "instance, exact here: every instance is a tree")
        assert "loopy" not in engine_line(out).replace("make it loopy", "")
        assert "runs: every instance by `infer loopy`, exact here (no instance has a cycle)" \
            in out
    else:
        assert "so inference is exact throughout" in engine_line(out)
        assert "runs: 5 of 5 instances exact by junction tree" in out


def test_bp_on_graphs_with_cycles_stays_loopy(capsys, tmp_path):
    cyclic = write_graphs(tmp_path / "cyclic.jsonl", cycle=True)
    code, out, err = run(capsys, "explain", relational(tmp_path, LOOPY), "--train", cyclic)
    assert code == 0, err
    assert engine_line(out).startswith("engine: loopy belief propagation over a factor graph")
    assert "independent cycles 5" in out
    assert "exact here" not in out and "no instance has a cycle" not in out
    assert "without the `infer` line 5 of 5 would run exactly by junction tree" in out
