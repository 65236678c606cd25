"""The first rung: per-token maxent against a linear-chain CRF, same features.

Sutton & McCallum §1.2.2.1 (logistic regression) against §1.3 (linear-chain
CRFs). Both specs in ``examples/specs/`` read the same word features.
``maxent.fgl`` labels every token on its own. ``linear_chain.fgl`` adds one
line, the transition template ``y[t-1..t]``, so the labels of neighbouring
tokens are decided together. The data are the generated announcements of
``examples/structures.py`` (``fgl.datasets.records.announcements``). A talk
title or a place is several made-up words long, and only a joint decision
keeps all of a field's words under one label.

Prints, for each model, token accuracy, entity F1, and the % of fields kept
whole: gold fields predicted as one run ``B-X I-X ...`` of a single type X,
right or wrong.

    python examples/maxent_vs_chain.py            # 200 + 200 announcements, seconds
    python examples/maxent_vs_chain.py --quick    # 60 + 60
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.datasets.records import announcements
from fgl.evaluation.evaluate import chunks, evaluate

SPECS = Path(__file__).resolve().parent / "specs"


def whole_fields(gold: list[list[str]], pred: list[list[str]]) -> float:
    """% of the gold fields predicted as one run ``B-X I-X ...`` of one type X (right or not)."""
    whole = total = 0
    for g, p in zip(gold, pred):
        for _, a, b in chunks(g, "iob"):
            typ = p[a][2:]
            total += 1
            whole += p[a] == f"B-{typ}" and all(t == f"I-{typ}" for t in p[a + 1:b])
    return 100.0 * whole / max(total, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=200, help="training announcements")
    ap.add_argument("--test", type=int, default=200, help="test announcements")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="60 training and 60 test announcements")
    a = ap.parse_args()
    n_train, n_test = (60, 60) if a.quick else (a.train, a.test)
    train, test = announcements(n_train=n_train, n_test=n_test, seed=a.seed)
    gold = [s.column(-1) for s in test.sentences]
    inputs = [Sentence([r[:-1] for r in s.rows], s.lines, s.doc, s.file)
              for s in test.sentences]
    fields = sum(len(chunks(g, "iob")) for g in gold)
    print(f"data: {n_train} training and {n_test} test announcements "
          f"(fgl.datasets.records.announcements, seed {a.seed}), {fields} test fields; "
          f"specs in {SPECS}")
    head = f"{'model':<14} {'train s':>7} {'token acc':>9} {'F1':>6} {'whole fields':>12}"
    print(head)
    print("-" * len(head))
    for name in ("maxent", "linear_chain"):
        crf = CRF(SPECS / f"{name}.fgl")
        t0 = time.perf_counter()
        crf.fit_sentences(train.sentences)
        seconds = time.perf_counter() - t0
        pred = crf.predict_sentences(inputs)
        report = evaluate(gold, pred, scheme="iob")
        print(f"{name:<14} {seconds:7.1f} {report.accuracy:9.2f} {report.overall.f1:6.2f} "
              f"{whole_fields(gold, pred):12.1f}", flush=True)
    print("token acc, F1: % (F1 over entities, exact span and type); whole fields: % of gold\n"
          "fields predicted as one B-X I-X ... run of a single type X, right or wrong.")


if __name__ == "__main__":
    main()
