"""Feature induction against fixed conjunctions on CoNLL-2003 English NER.

McCallum (2003) §4.1, Figure 2: with induced conjunctions of atomic tests
89 % F1 on eng.testa; the same tests in fixed conjunction patterns 73 %
(about a million features); word identity alone 80 %.  This script trains
that comparison as fgl specs on eng.train, adds the atomic tests without
conjunctions, and reports F1 on eng.testa, features and training time:

* word identity — `y[t] ~ word[t]` and transitions;
* atomic tests — the atomic tests at offsets -2..2, no conjunctions;
* fixed conjunctions — the atomic tests at offsets -2..2, plus every test at
  t conjoined with every test at t-1 and at t+1;
* induced — the tests at t as fixed features, and the tests at every offset
  marked `(induce = 2)`: training adds (test, label) features and
  conjunctions of two tests by mean-field gain, 15 rounds of up to 5000,
  gains over every token (`induce_margin = 1`), 30 L-BFGS iterations a
  round.

The atomic tests here: the word, its lower case, its regex class (the
paper's capitalisation/digit classes, fgl's `class`), its shape, the POS
tag and the chunk tag.  The paper's 43 lexicons and first-mention and
header tests are not available, so its 89 % is out of reach; the
comparison that matters is induced against fixed.

Measured on the 2-core machine (full data): word identity 74.58 F1 (24,836
features), atomic tests 87.66 (255,634), fixed conjunctions 87.84
(2,432,916), induced 88.11 (92,503; 36 minutes).  The Gaussian prior (sigma 3)
keeps the fixed conjunctions from the paper's overfitting, so they are
strong here; induction beats them with 26× fewer features.

    python examples/feature_induction_ner.py            # full data (about 40 minutes)
    python examples/feature_induction_ner.py --quick    # 3000 training sentences
    python examples/feature_induction_ner.py --quick --train-sentences 500 --dev-sentences 500
    python examples/feature_induction_ner.py --only induced --induce-iter 10 --verbose

Reads ``../shared/data/conll2003`` in place and skips when it is absent;
prints tables, asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from measure import peak_rss_mb

from fgl import CRF
from fgl.evaluation.evaluate import evaluate

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "conll2003"

HEAD = """columns word, pos, chunk, tag
output tag
"""
TESTS = ("word[t-2..t+2]", "lower(word[t-2..t+2])", "class(word[t-2..t+2])",
         "shape(word[t-2..t+2])", "pos[t-2..t+2]", "chunk[t-2..t+2]")
HERE = ("word[t]", "lower(word[t])", "class(word[t])", "shape(word[t])", "pos[t]", "chunk[t]")


def specs(rounds: int, per_round: int, max_iter: int, min_gain: float, margin: float,
          induce_iter: int) -> dict[str, str]:
    train = f"train {{ sigma = 3  max_iter = {max_iter} }}\n"
    fixed_pairs = ", ".join(f"{a} & {b.replace('[t]', f'[t{d}]')}"
                            for a in HERE for b in HERE for d in ("-1", "+1"))
    atoms = HEAD + f"template atoms: y[t] ~ {', '.join(TESTS)}\n"
    return {
        "word identity": HEAD + "template w: y[t] ~ word[t]\ntemplate trans: y[t-1..t]\n"
        + train,
        "atomic tests": atoms + "template trans: y[t-1..t]\n" + train,
        "fixed conjunctions": atoms + f"template pairs: y[t] ~ {fixed_pairs}\n"
        "template trans: y[t-1..t]\n" + train,
        "induced": HEAD + f"template cands: y[t] ~ {', '.join(TESTS)} (induce = 2)\n"
        f"template here: y[t] ~ {', '.join(HERE)}\n"
        "template trans: y[t-1..t]\n"
        f"train {{ sigma = 3  max_iter = {max_iter}  induce_rounds = {rounds}  "
        f"induce_per_round = {per_round}  induce_min_gain = {min_gain:g}  "
        f"induce_margin = {margin:g}  induce_iter = {induce_iter} }}\n",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--quick", action="store_true",
                    help="3000 training sentences, 8 rounds of 3000")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--per-round", type=int, default=None,
                    help="induce_per_round (default 5000, 3000 with --quick)")
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--min-gain", type=float, default=1.0,
                    help="induce_min_gain (the paper's threshold is 5)")
    ap.add_argument("--margin", type=float, default=1.0,
                    help="induce_margin: tokens labelled right by less than this feed the "
                         "gains; 1 takes every token (+0.9 F1 over 0.5 on 3000 sentences)")
    ap.add_argument("--induce-iter", type=int, default=30,
                    help="induce_iter: L-BFGS iterations per round (the paper's 10 gave "
                         "86.88 F1 against 88.11 for 30 on the full data)")
    ap.add_argument("--train-sentences", type=int, default=None,
                    help="first N training sentences (default: all, 3000 with --quick)")
    ap.add_argument("--dev-sentences", type=int, default=None,
                    help="first N sentences of eng.testa (default: all)")
    ap.add_argument("--verbose", action="store_true", help="print each round and iteration")
    ap.add_argument("--only", choices=["word identity", "atomic tests", "fixed conjunctions",
                                       "induced"],
                    action="append", help="train only these models")
    a = ap.parse_args()
    train_path, dev_path = a.data / "eng.train", a.data / "eng.testa"
    if not (train_path.exists() and dev_path.exists()):
        print(f"skipped: CoNLL-2003 not found in {a.data}")
        return 0
    rounds = a.rounds or (8 if a.quick else 15)
    per_round = a.per_round or (3000 if a.quick else 5000)
    models = specs(rounds, per_round, a.max_iter, a.min_gain, a.margin, a.induce_iter)
    probe = CRF(models["word identity"])
    train, dev = probe.read(train_path), probe.read(dev_path)
    if a.quick or a.train_sentences:
        train = train[:a.train_sentences or 3000]
    if a.dev_sentences:
        dev = dev[:a.dev_sentences]
    gold = [s.column(3) for s in dev]
    print(f"CoNLL-2003 English: {len(train)} training sentences, {len(dev)} in eng.testa; "
          f"{rounds} induction rounds of up to {per_round} features")
    rows = []
    for name, text in models.items():
        if a.only and name not in a.only:
            continue
        crf = CRF(text, verbose=a.verbose)
        t0 = time.perf_counter()
        crf.fit_sentences(train, dev=dev if name == "induced" else None)
        seconds = time.perf_counter() - t0
        report = evaluate(gold, crf.predict_sentences(dev))
        rows.append((name, report.overall, crf.model.program.n_features, seconds))
        print(f"  {name}: F1 {report.overall.f1:.2f}, {crf.model.program.n_features} features, "
              f"{seconds:.0f}s", file=sys.stderr)
        if name == "induced":
            print("round  scored candidates  added  features  objective  dev F1  seconds")
            for r in crf.training_log.rounds:
                print(f"{r['round']:5d}  {r['scored']:17d}  {r['added']:5d}  {r['features']:8d}  "
                      f"{r['objective']:9.1f}  {r.get('dev', float('nan')):6.2f}  "
                      f"{r['seconds']:7.0f}")
            induced = crf.training_log.induced
            print("first induced features (the paper's Figure 3):")
            for k in (0, 5, 20, 75, 100, 200, 300, 500):
                if k < len(induced):
                    print(f"  {k:4d}  {induced[k]}")
    print(f"{'model':<20} {'P':>6} {'R':>6} {'F1':>6} {'features':>9} {'seconds':>8}")
    for name, o, n, seconds in rows:
        print(f"{name:<20} {o.precision:6.2f} {o.recall:6.2f} {o.f1:6.2f} {n:9d} {seconds:8.0f}")
    print("paper (McCallum 2003 Fig. 2 and §4.1): induced 89.0, fixed conjunctions 73, "
          "word identity 80")
    print(f"peak memory {peak_rss_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
