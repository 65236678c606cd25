"""Learners side by side on CoNLL-2000 chunking: L2, L1, elastic net, perceptron.

One spec (``stdlib/crfsuite_chunking.fgl``: CRFsuite's chunking features),
four trainers, chosen by the spec's ``train`` settings as a user would:

* L2 — L-BFGS with the Gaussian prior (the spec's sigma);
* L1 — OWL-QN with ``l1 = c`` and a prior too weak to matter (sigma 1e3);
* elastic net — OWL-QN with both ``l1`` and the spec's sigma;
* perceptron — the averaged structured perceptron (``trainer = perceptron``).

Prints chunk F1 on the test file, the features left non-zero, training time
and peak memory; asserts nothing.  Reads ``../shared/data/conll2000`` in
place and skips when it is absent.

    python examples/learners_conll2000.py               # full data (~10 minutes on 2 cores)
    python examples/learners_conll2000.py --quick       # 2000 training sentences, fewer iterations
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from measure import peak_rss_mb

from fgl import CRF
from fgl.evaluation.evaluate import evaluate

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "conll2000"
SPEC = REPO / "stdlib" / "crfsuite_chunking.fgl"


def learners(max_iter: int, epochs: int, l1: float) -> dict[str, str]:
    """The spec's `train` block of each learner."""
    return {
        "L2 (L-BFGS)": f"train {{ sigma = 0.7071067811865476  max_iter = {max_iter} }}",
        f"L1 = {l1:g} (OWL-QN)": f"train {{ sigma = 1000  l1 = {l1:g}  max_iter = {max_iter} }}",
        f"elastic net (L1 {l1:g}, sigma 0.71)":
            f"train {{ sigma = 0.7071067811865476  l1 = {l1:g}  max_iter = {max_iter} }}",
        "averaged perceptron": f"train {{ trainer = perceptron  epochs = {epochs} }}",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--quick", action="store_true",
                    help="2000 training sentences, 60 iterations, 5 epochs")
    ap.add_argument("--max-iter", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--l1", type=float, default=1.0)
    a = ap.parse_args()
    train_path, test_path = a.data / "train.txt", a.data / "test.txt"
    if not (train_path.exists() and test_path.exists()):
        print(f"skipped: CoNLL-2000 not found in {a.data}")
        return 0
    max_iter = a.max_iter or (60 if a.quick else 300)
    epochs = a.epochs or (5 if a.quick else 10)
    text = SPEC.read_text(encoding="utf-8")
    base = text[:text.index("train {")]
    probe = CRF(SPEC)
    train = probe.read(train_path)
    if a.quick:
        train = train[:2000]
    test = probe.read(test_path)
    gold = [s.column(2) for s in test]
    print(f"CoNLL-2000: {len(train)} training sentences, {len(test)} test sentences; "
          f"max_iter {max_iter}, epochs {epochs}")
    rows = []
    for name, block in learners(max_iter, epochs, a.l1).items():
        crf = CRF(base + block + "\n")
        t0 = time.perf_counter()
        crf.fit_sentences(train)
        seconds = time.perf_counter() - t0
        report = evaluate(gold, crf.predict_sentences(test))
        nonzero = int(np.count_nonzero(crf.weights))
        rows.append((name, report.overall.f1, nonzero, len(crf.weights), seconds,
                     len(crf.training_log.iterations)))
        print(f"  {name}: F1 {report.overall.f1:.2f} in {seconds:.1f}s", file=sys.stderr)
    width = max(len(r[0]) for r in rows)
    print(f"{'learner':<{width}}  {'F1':>6}  {'non-zero':>9}  {'features':>9}  "
          f"{'seconds':>8}  iterations/epochs")
    for name, f1, nonzero, total, seconds, its in rows:
        print(f"{name:<{width}}  {f1:6.2f}  {nonzero:9d}  {total:9d}  {seconds:8.1f}  {its}")
    print(f"peak memory {peak_rss_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
