"""``fgl train --sigma-grid`` without a cluster: one training run per sigma,
one after another in this process (no Dask imported), a table, and the
model with the best development F1 written; on graphs the development F1 is
that of the nodes `fgl eval` scores (the withheld ones)."""
from __future__ import annotations

import json
import sys

import numpy as np
from support.cli import data_files, run
from support.paths import HMM
from support.specs import GRAPH


def grid_rows(out: str) -> dict[float, float]:
    """sigma -> development F1, from the printed table."""
    rows = [line.split() for line in out.splitlines()[1:] if line.strip()]
    return {float(r[1]): float(r[5]) for r in rows}


def dev_f1(capsys, model, dev) -> float:
    code, out, err = run(capsys, "eval", model, dev)
    assert code == 0, err
    line = next(x for x in out.splitlines() if "F1:" in x)   # (plain: micro F1, the overall)
    key = "micro F1:" if "micro F1:" in line else "F1:"
    return float(line.split(key, 1)[1].split(";")[0])


def test_sigma_grid_runs_here_and_writes_the_best(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)   # (an import of Dask would fail)
    train, dev = data_files(tmp_path)
    best = tmp_path / "best.fglm"
    code, out, err = run(capsys, "train", HMM, "--train", train, "--dev", dev,
                         "--sigma-grid", "0.01,10", "--max-iter", "8", "-o", best)
    assert code == 0, err
    f1 = grid_rows(out)
    assert sorted(f1) == [0.01, 10.0] and f1[0.01] != f1[10.0]
    chosen = max(f1, key=f1.get)
    assert f"wrote {best} (sigma {chosen:g}, dev F1 {f1[chosen]:.2f})" in err
    assert dev_f1(capsys, best, dev) == f1[chosen]


def graph_pair(tmp_path, seed: int = 0):
    """A graph whose labels follow its words and links, with a third of the
    labels withheld: (given, gold) files."""
    rng = np.random.default_rng(seed)
    n = 60
    labels = rng.integers(3, size=n)
    nodes = [{"id": f"p{i}", "label": f"c{y}",
              "words": " ".join([f"w{y}"] * int(rng.integers(1, 3))
                                + [f"w{int(rng.integers(3))}", f"n{int(rng.integers(5))}"])}
             for i, y in enumerate(labels)]
    edges = [{"source": f"p{i}", "target": f"p{j}", "type": "cites"}
             for i in range(n) for j in range(i + 1, n)
             if labels[i] == labels[j] and rng.random() < 0.08]
    held = set(rng.choice(n, size=n // 3, replace=False).tolist())
    gold = {"nodes": [dict(v, withheld=True) if i in held else v for i, v in enumerate(nodes)],
            "edges": edges}
    given = {"nodes": [dict(v, label=None) if i in held else v for i, v in enumerate(nodes)],
             "edges": edges}
    paths = tmp_path / "given.jsonl", tmp_path / "gold.jsonl"
    for path, g in zip(paths, (given, gold)):
        path.write_text(json.dumps(g) + "\n")
    return paths


def test_sigma_grid_scores_a_graph_on_its_withheld_nodes(capsys, tmp_path):
    given, gold = graph_pair(tmp_path)
    spec = tmp_path / "g.fgl"
    spec.write_text(GRAPH.replace("max_iter = 10", "max_iter = 15"))
    best = tmp_path / "best.fglm"
    code, out, err = run(capsys, "train", spec, "--train", given, "--dev", gold,
                         "--sigma-grid", "0.05,3", "-o", best)
    assert code == 0, err
    f1 = grid_rows(out)
    chosen = max(f1, key=f1.get)
    # the F1 `fgl eval` gives the chosen model on the withheld nodes (all nodes would score
    # the 40 given labels too, clamped and so right)
    assert dev_f1(capsys, best, gold) == f1[chosen]
