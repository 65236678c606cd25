"""One task, four CRF structures: why fgl exists.

fgl writes a CRF's structure as a few lines of text. This script trains the
same extraction task four times, each time with one spec of
``examples/specs/``:

* ``linear_chain.fgl``: word features and label transitions (Sutton &
  McCallum §1.3);
* ``high_order.fgl``: label patterns up to order 2 instead of the
  transitions (Ye et al. 2009 §3);
* ``semi_markov.fgl``: the same features over segments, plus the segment's
  length (Sarawagi & Cohen; Cuong et al. 2014 §2);
* ``skip_chain.fgl``: the linear chain plus skip edges between repeated
  capitalised words of a document (Sutton & McCallum §1.5.1).

The data are talk announcements made by ``fgl.datasets.records.announcements``.
Three kinds of line in them each hold something only one of the richer
structures can learn:

* "order": ``When : 14 , 3 , 9 , 45 .`` is day, month, hour, minute. Month and
  hour are numbers between commas, told apart only by the label two back.
* "length": ``About : <title> ; <place> .`` in either order, in words from one
  pool. A title has 4, 5, 8 or 9 words, a place 6 or 7.
* "repeat": ``Thanks to Dasentor .`` could name a person or an organisation.
  The header ``Speaker : Ilvo Dasentor from Kemura .`` says which.

The script prints one row per model: the spec's lines, the engine fgl chose,
training seconds, entity F1 over all fields and its gain over the linear
chain. Then come the % of fields right on each kind of line. Each richer
model gains over the linear chain on its own kind of line, and so overall.
Last, a two-iteration ``fgl.CRFEstimator`` fit on feature dicts of a few
lines compiles the estimator's kernels too (its data reach them as other
types than a spec's), so a first ``fit`` of one's own finds them cached.

    python examples/structures.py            # 200 + 200 announcements, under a minute
    python examples/structures.py --quick    # 60 + 60, for the test suite
    python examples/structures.py --seed 3 --train 400
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.datasets.records import Announcements, announcements
from fgl.errors import IterationLimitWarning
from fgl.estimator import CRFEstimator
from fgl.evaluation.evaluate import chunks, evaluate

SPECS = Path(__file__).resolve().parent / "specs"
MODELS = ("linear_chain", "high_order", "semi_markov", "skip_chain")
KINDS = ("order", "length", "repeat")


def spec_lines(path: Path) -> int:
    """Lines of a spec that are neither blank nor comments."""
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.strip().startswith("#"))


def fields_right(data: Announcements, pred: list[list[str]], kind: str) -> float:
    """% of the gold fields on lines of ``kind`` predicted with the exact span and type."""
    right = total = 0
    for sent, part, p in zip(data.sentences, data.parts, pred):
        if part != kind:
            continue
        got = set(chunks(p, "iob"))
        for c in chunks(sent.column(-1), "iob"):
            total += 1
            right += c in got
    return 100.0 * right / max(total, 1)


def token_dicts(words: list[str]) -> list[dict]:
    """sklearn-crfsuite's kind of input: per token a dict of features."""
    return [{"bias": 1.0, "word.lower()": w.lower(), "word.istitle()": w.istitle(),
             "word.isdigit()": w.isdigit(), "-1:word.lower()": words[i - 1].lower() if i else ""}
            for i, w in enumerate(words)]


def warm_estimator(train: Announcements, jobs: int) -> float:
    """Fit and apply ``fgl.CRFEstimator`` on feature dicts of a few training
    lines, so its first-order chain kernels (the types its encoding stores)
    are compiled here too, not in a first ``fit`` of the user's own; seconds."""
    t0 = time.perf_counter()
    lines = train.sentences[:8]
    X = [token_dicts([r[0] for r in s.rows]) for s in lines]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IterationLimitWarning)   # 2 iterations, on purpose
        CRFEstimator(max_iter=2, jobs=jobs).fit(X, [s.column(-1) for s in lines]).predict(X)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=200, help="training announcements")
    ap.add_argument("--test", type=int, default=200, help="test announcements")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    ap.add_argument("--quick", action="store_true",
                    help="60 training and 60 test announcements (for the test suite)")
    ap.add_argument("--jobs", type=int, default=0, help="threads (0: every core)")
    a = ap.parse_args()
    n_train, n_test = (60, 60) if a.quick else (a.train, a.test)

    train, test = announcements(n_train=n_train, n_test=n_test, seed=a.seed)
    gold = [s.column(-1) for s in test.sentences]
    inputs = [Sentence([r[:-1] for r in s.rows], s.lines, s.doc, s.file)
              for s in test.sentences]
    print(f"data: {n_train} training and {n_test} test announcements generated by "
          f"fgl.datasets.records.announcements (seed {a.seed}); specs in {SPECS}")

    head = (f"{'model':<14} {'spec lines':>10}  {'engine':<47} {'train s':>7} {'F1':>6} "
            f"{'gain':>6}   "
            + " ".join(f"{k:>7}" for k in KINDS))
    print(head)
    print("-" * len(head))
    base = None
    at_limit = []
    for name in MODELS:
        path = SPECS / f"{name}.fgl"
        warm_up = train.sentences[:8]   # compiles the engine's numba code outside the timing
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", IterationLimitWarning)
            CRF(path, jobs=a.jobs, max_iter=2).fit_sentences(warm_up)
            caught.clear()              # the warm-up stops at 2 iterations on purpose
            crf = CRF(path, jobs=a.jobs)
            t0 = time.perf_counter()
            crf.fit_sentences(train.sentences)
            seconds = time.perf_counter() - t0
        for w in caught:
            if issubclass(w.category, IterationLimitWarning):
                at_limit.append(name)
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        pred = crf.predict_sentences(inputs)
        f1 = evaluate(gold, pred, scheme="iob").overall.f1
        base = f1 if base is None else base
        right = " ".join(f"{fields_right(test, pred, k):7.1f}" for k in KINDS)
        engine = crf.engine.title(crf.spec).split(" (")[0].split(" over ")[0]
        print(f"{name:<14} {spec_lines(path):>10}  {engine:<47} "
              f"{seconds:7.1f} {f1:6.2f} {f1 - base:+6.2f}   {right}", flush=True)
    print("F1: entity F1 (%, exact span and type) over every field of the test announcements;\n"
          "gain: F1 minus the linear chain's.\n"
          "order, length, repeat: % of the fields right on lines of that kind: month and hour\n"
          "(told apart by the label two back), title and place (by their length only), repeated\n"
          "names (by the cue at their other mention).\n"
          "train s: compiling the spec and training, after a warm-up fit on 8 lines that\n"
          "compiles the engine's numba code (a first run's one-off cost).")
    if at_limit:
        print("stopped at their spec's max_iter before L-BFGS's convergence rule held: "
              + ", ".join(dict.fromkeys(at_limit)))
    print(f"warm-up of fgl.CRFEstimator (feature dicts, as sklearn-crfsuite takes them; on a "
          f"first run it compiles the chain's kernels for their types): "
          f"{warm_estimator(train, a.jobs):.1f} s")

if __name__ == "__main__":
    main()
