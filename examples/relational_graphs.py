"""Collective classification of linked papers: a relational CRF against per-paper maxent.

Sutton & McCallum §1.4.1: clique templates over an arbitrary graph. The
data are citation graphs made by ``fgl.datasets.synth.citation_graphs``. Each paper
has a topic and four words, and most words are common to every topic, so many
papers have no topical word at all. Papers of one topic cite each other far
more often than papers of different topics. Two specs are trained on the same
graphs:

* per-paper maxent: ``stdlib/relational.fgl`` without its ``cites`` template,
  so each paper is labelled from its own words (no edges: BP is exact);
* relational CRF: ``stdlib/relational.fgl`` as it is, with a factor per
  citation tying the two papers' topics (tree-reweighted BP, `infer trw`).

Prints each model's accuracy on all test papers and on the papers without a
topical word. There the relational model's gain comes from the neighbours.

    python examples/relational_graphs.py            # 150 + 150 graphs of 12 papers, seconds
    python examples/relational_graphs.py --quick    # 40 + 40 graphs
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from fgl.api import CRF
from fgl.datasets.synth import write_citation_graphs

STDLIB = Path(__file__).resolve().parents[1] / "stdlib"


def accuracy(gold: list[list[str]], pred: list[list[str]], keep=None) -> float:
    """% of the papers labelled right (only those ``keep(graph, node)`` accepts)."""
    pairs = [(g, p) for i, (gs, ps) in enumerate(zip(gold, pred)) for k, (g, p) in
             enumerate(zip(gs, ps)) if keep is None or keep(i, k)]
    return 100.0 * sum(g == p for g, p in pairs) / max(len(pairs), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", type=int, default=150, help="training and test graphs, each")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="40 training and 40 test graphs")
    a = ap.parse_args()
    n = 40 if a.quick else a.graphs

    relational = (STDLIB / "relational.fgl").read_text(encoding="utf-8")
    lines = relational.splitlines()
    cites = [line for line in lines if line.startswith("template cites")]
    assert len(cites) == 1, "stdlib/relational.fgl changed: no single `template cites` line"
    maxent = "\n".join(['model "per-paper maxent"'] + [
        line for line in lines if line not in cites and not line.startswith(("infer", "model"))])

    with tempfile.TemporaryDirectory() as tmp:
        train_path = write_citation_graphs(Path(tmp) / "train.jsonl", n_graphs=n, seed=a.seed)
        test_path = write_citation_graphs(Path(tmp) / "test.jsonl", n_graphs=n,
                                          seed=a.seed + 1000)
        print(f"data: {n} training and {n} test citation graphs of 12 papers "
              f"(fgl.datasets.synth.citation_graphs, seed {a.seed}); relational spec: "
              f"{STDLIB / 'relational.fgl'}")
        head = (f"{'model':<18} {'engine':<14} {'train s':>7} {'accuracy':>9} "
                f"{'no topical word':>16}")
        print(head)
        print("-" * len(head))
        for name, text in (("per-paper maxent", maxent), ("relational CRF", relational)):
            crf = CRF(text)
            t0 = time.perf_counter()
            crf.fit_file(train_path)
            seconds = time.perf_counter() - t0
            graphs, pred = crf.predict_file(test_path)
            gold = [g.column(-1) for g in graphs]
            words = [g.column(0) for g in graphs]

            def no_topical(i: int, k: int) -> bool:
                return not any(w.startswith("t") for w in words[i][k].split())

            print(f"{name:<18} {crf.engine.engine.name:<14} {seconds:7.1f} "
                  f"{accuracy(gold, pred):8.1f}% {accuracy(gold, pred, no_topical):15.1f}%",
                  flush=True)
    print("accuracy: % of test papers given their topic; no topical word: among the papers "
          "whose\nfour words are all common to every topic (only citations can tell their "
          "topic).")


if __name__ == "__main__":
    main()
