"""Stochastic gradient descent against L-BFGS on CoNLL-2000 chunking, fgl and
CRFsuite side by side in one run.

One feature set (CRFsuite's chunking features: ``stdlib/crfsuite_chunking.fgl``
for fgl, the same attributes for python-crfsuite, as
``examples/bench_conll2000.py`` builds them), one prior (L2, CRFsuite c2 = 1,
fgl sigma = 1/sqrt(2)), four trainers: fgl's ``trainer = sgd`` (each
``--batch`` given) and its L-BFGS, CRFsuite's ``l2sgd`` and its ``lbfgs``.
Prints per trainer the training seconds (the optimiser's, without reading
and feature extraction), its epochs or iterations and evaluations, the
final objective (SGD: its estimate, the epoch's losses plus the prior) and
chunk F1 on the test file, then each SGD's time and F1 against its L-BFGS.
Asserts nothing.  Reads ``../shared/data/conll2000`` in place and skips when
it is absent; the CRFsuite rows need python-crfsuite (the ``bench`` extra).

With ``--skip-chain`` it trains instead the clique skip chain of
docs/language.md (a factor per pair of equal capitalised words of an
article, its observations' disjunctions, sigma 0.5, ``infer trw``) on the
first ``--train-docs`` CoNLL-2003 articles, by L-BFGS and by SGD, and
prints their training time and entity F1 on testa.

    python examples/bench_sgd.py                    # full data (~10 minutes on 2 cores)
    python examples/bench_sgd.py --quick            # 1000 training sentences
    python examples/bench_sgd.py --batch 1,8 --epochs 30   # both SGDs 30 epochs
    python examples/bench_sgd.py --skip-chain --train-docs 150
    python examples/bench_sgd.py --skip-chain --train-docs 100 --batch 1 --epochs 150 \
        --learning-rate 0.0125
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from bench_conll2000 import crfsuite_attributes, read_columns

from fgl import CRF
from fgl.evaluation.evaluate import evaluate

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "conll2000"
SPEC = REPO / "stdlib" / "crfsuite_chunking.fgl"
SIGMA = 1 / math.sqrt(2.0)   # CRFsuite's c2 = 1: c2·||w||² = ||w||² / (2 σ²)
CONLL2003 = REPO.parent / "shared" / "data" / "conll2003"
# docs/language.md's clique skip chain (its advice: the observations' disjunctions, sigma 0.5)
SKIP_CHAIN = """columns word, pos, _, label
output label

obs w   = word[t-1..t+1]
obs lw  = lower(word[t])
obs shp = shape(word[t])
obs p   = pos[t-1..t+1]

template state: y[t] ~ bias, w, lw, shp, p
template trans: y[t-1..t]
template skip:  (y[i], y[j]) where word[i] == word[j] and regex(word[i], "^[A-Z]")
                within document
                ~ bias, either(w), either(lw), either(shp), either(p) (sigma = 0.5)
infer trw
"""


def fgl_row(name: str, block: str, train, test, jobs: int) -> dict:
    """Train the chunking spec with ``block`` as its train block."""
    text = SPEC.read_text(encoding="utf-8")
    crf = CRF(text[:text.index("train {")] + block + "\n", jobs=jobs)
    crf.fit_sentences(train)
    log = crf.training_log
    gold = [s.column(2) for s in test]
    f1 = evaluate(gold, crf.predict_sentences(test)).overall.f1
    epochs = [r for r in log.iterations if "learning_rate" in r]
    steps = (f"{len(epochs)} epochs (rate {epochs[-1]['eta0']:.3g})" if epochs
             else f"{len(log.iterations)} iterations, {log.evaluations} evaluations")
    return {"name": name, "seconds": log.seconds, "steps": steps, "objective": log.objective,
            "f1": f1, "stop": log.message}


def crfsuite_row(name: str, algorithm: str, params: dict, train_cols, test_cols) -> dict:
    """Train python-crfsuite's ``algorithm`` on the same attributes."""
    import tempfile

    import pycrfsuite
    trainer = pycrfsuite.Trainer(algorithm, verbose=False)
    for s in train_cols:
        trainer.append(pycrfsuite.ItemSequence(crfsuite_attributes([r[0] for r in s],
                                                                   [r[1] for r in s])),
                       [r[2] for r in s])
    trainer.set_params({"c2": 1.0, "feature.possible_transitions": 1,
                        "feature.possible_states": 0, **params})
    with tempfile.TemporaryDirectory(prefix="bench_sgd_") as tmp:
        path = str(Path(tmp) / "model.crfsuite")
        trainer.train(path)
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        pred = [tagger.tag(pycrfsuite.ItemSequence(crfsuite_attributes([r[0] for r in s],
                                                                       [r[1] for r in s])))
                for s in test_cols]
        tagger.close()
    lp = trainer.logparser
    its = lp.iterations
    if algorithm == "lbfgs":
        steps = (f"{len(its)} iterations, "
                 f"{1 + sum(it.get('linesearch_trials', 0) for it in its)} evaluations")
    else:
        steps = f"{len(its)} epochs"
    f1 = evaluate([[r[2] for r in s] for s in test_cols], pred).overall.f1
    return {"name": name, "seconds": lp.training_seconds, "steps": steps,
            "objective": its[-1]["loss"] if its else float("nan"), "f1": f1, "stop": ""}


def rate(a) -> str:
    """The sgd train block's learning_rate setting, when given."""
    return "" if a.learning_rate is None else f"  learning_rate = {a.learning_rate!r}"


def skip_chain(a) -> int:
    """L-BFGS against SGD on the clique skip chain (module docstring)."""
    from skip_chain_conll2002 import first_docs, strip_labels

    from fgl.io.conll import read_conll

    if not (CONLL2003 / "eng.train").exists():
        print(f"skipped: CoNLL-2003 not found in {CONLL2003}")
        return 0
    train = first_docs(read_conll(CONLL2003 / "eng.train"), a.train_docs)
    test = first_docs(read_conll(CONLL2003 / "eng.testa"), a.test_docs)
    print(f"CoNLL-2003: the first {a.train_docs} training articles ({len(train)} sentences), "
          f"testa {'all' if not a.test_docs else a.test_docs} articles; {a.jobs} thread(s)")
    gold = [s.column(-1) for s in test]
    rows = []
    for name, block in [("lbfgs", f"train {{ max_iter = {a.max_iter} }}"),
                        *[(f"sgd, batch {b}", f"train {{ trainer = sgd  epochs = {a.epochs}  "
                                              f"batch = {b}{rate(a)} }}")
                          for b in (int(b) for b in a.batch.split(","))]]:
        crf = CRF(SKIP_CHAIN + block + "\n", jobs=a.jobs)
        crf.fit_sentences(train)
        log = crf.training_log
        pred = crf.tag_sentences(strip_labels(test)).tokens()
        f1 = evaluate(gold, pred, scheme="iob")
        rows.append((name, log.seconds, len(log.iterations), log.evaluations, f1.overall.f1,
                     f1.chunks["PER"].f1, log.message))
        print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    print(f"\n{'trainer':<14} {'train s':>8} {'iters/epochs':>12} {'evals':>6} {'F1':>6} "
          f"{'PER F1':>7}")
    for name, secs, its, evals, f1, per, _ in rows:
        print(f"{name:<14} {secs:8.1f} {its:12d} {evals:6d} {f1:6.2f} {per:7.2f}")
    for name, secs, _, _, f1, _, message in rows:
        print(f"{name}: {secs / rows[0][1]:.2f}x L-BFGS's time, F1 {f1 - rows[0][4]:+.2f} "
              f"({message})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--quick", action="store_true", help="1000 training sentences")
    ap.add_argument("--batch", default="1,8", help="fgl sgd batch sizes, comma-separated")
    ap.add_argument("--epochs", type=int, default=10,
                    help="the SGD epochs, fgl's and CRFsuite's (fgl's default: 10)")
    ap.add_argument("--learning-rate", type=float, default=None,
                    help="fgl sgd's learning_rate (default: calibrated)")
    ap.add_argument("--max-iter", type=int, default=500, help="fgl L-BFGS's most iterations")
    ap.add_argument("--jobs", type=int, default=1, help="fgl threads (CRFsuite runs on one)")
    ap.add_argument("--no-crfsuite", action="store_true")
    ap.add_argument("--skip-chain", action="store_true",
                    help="the clique skip chain on CoNLL-2003 instead (module docstring)")
    ap.add_argument("--train-docs", type=int, default=150, help="--skip-chain: articles")
    ap.add_argument("--test-docs", type=int, default=0,
                    help="--skip-chain: first N testa articles (0: all)")
    a = ap.parse_args()
    if a.skip_chain:
        return skip_chain(a)
    train_path, test_path = a.data / "train.txt", a.data / "test.txt"
    if not (train_path.exists() and test_path.exists()):
        print(f"skipped: CoNLL-2000 not found in {a.data}")
        return 0
    probe = CRF(SPEC)
    train, test = probe.read(train_path), probe.read(test_path)
    train_cols, test_cols = read_columns(train_path), read_columns(test_path)
    if a.quick:
        train, train_cols = train[:1000], train_cols[:1000]
    print(f"CoNLL-2000: {len(train)} training sentences, {len(test)} test sentences; "
          f"fgl on {a.jobs} thread(s)", flush=True)
    rows = [fgl_row("fgl lbfgs", f"train {{ sigma = {SIGMA!r}  max_iter = {a.max_iter} }}",
                    train, test, a.jobs)]
    print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    for batch in (int(b) for b in a.batch.split(",")):
        rows.append(fgl_row(f"fgl sgd, batch {batch}",
                            f"train {{ trainer = sgd  sigma = {SIGMA!r}  epochs = {a.epochs}  "
                            f"batch = {batch}{rate(a)} }}", train, test, a.jobs))
        print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    if not a.no_crfsuite:
        try:
            import pycrfsuite  # noqa: F401
        except ImportError:
            print("CRFsuite rows skipped: python-crfsuite is not installed (the bench extra)")
        else:
            rows.append(crfsuite_row("CRFsuite lbfgs", "lbfgs", {}, train_cols, test_cols))
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)
            rows.append(crfsuite_row("CRFsuite l2sgd", "l2sgd", {"max_iterations": a.epochs},
                                     train_cols, test_cols))
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    print(f"\n{'trainer':<18} {'train s':>8}  {'steps':<36} {'objective':>10} {'F1':>6}")
    for r in rows:
        print(f"{r['name']:<18} {r['seconds']:8.1f}  {r['steps']:<36} {r['objective']:10.1f} "
              f"{r['f1']:6.2f}")
    print()
    for family in ("fgl", "CRFsuite"):
        base = next((r for r in rows if r["name"] == f"{family} lbfgs"), None)
        for r in rows:
            if base is not None and r["name"].startswith(family) and "sgd" in r["name"]:
                print(f"{r['name']} / {base['name']}: time {r['seconds'] / base['seconds']:.2f}x, "
                      f"F1 {r['f1'] - base['f1']:+.2f}")
    for r in rows:
        if r["stop"]:
            print(f"{r['name']}: {r['stop']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
