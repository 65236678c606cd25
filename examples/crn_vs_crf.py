"""ECRN against CRF on CoNLL-2002 Dutch NER (Zhu et al., eq. 5, Tables 1 and 3).

One first-order chain spec, trained two ways as a user would choose in its
``train`` block: maximum likelihood by L-BFGS (``sigma = 10``; at most
``--max-iter`` iterations, 1000 by default, which the default stopping rule
ends first, at about 700) and the empirical co-occurrence
rate network (``trainer = ecrn``: weights set from relative frequencies in
one pass, ``fgl/learn/crn.py``).  Both decode with the same chain Viterbi.
Train on ned.train, test on ned.testb, the paper's split.  The state
features are word identity and word shape; among the few simple sets tried
with the ECRN on ned.testa (word; + shape; + suffix; + neighbouring words;
+ POS), this one scored best there.

Printed: training time (the whole fit, feature extraction included, and the
learner alone), features, overall precision / recall / F1 on ned.testb, F1
with 95 % t-intervals over 21 contiguous partitions of the test sentences
(Zhu et al. Table 3 cut 4,211 sentences into parts of 200; this testb has
5,195, so the parts hold about 247) and the approximate randomisation
p-value of the F1 difference (``fgl.evaluation.significance.compare``, what ``fgl
compare`` prints).  The paper: CRF 64.66 ± 3.61 F1 in 794 s, ECRN 64.97 ±
2.60 in 1.3 s.

The files are read in place (Latin-1).  Some of their lines lost the space
between word and POS (``Belgi\\x81EN B-LOC``: 2 fields of 3); they are read
with ``short_lines="pad"`` — the run-together word stays the word, the POS
becomes ``_`` and the gold label is kept, so no entity token is dropped
from training or scoring — and a note counts them.  Without
``../shared/data/conll2002`` the script says so and exits.

    python examples/crn_vs_crf.py                  # ~ 2-3 minutes on 2 cores
    python examples/crn_vs_crf.py --max-iter 200   # the CRF stopped early: ~ 40 s
    python examples/crn_vs_crf.py --quick          # 2000 / 1000 sentences, seconds
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

from fgl import CRF
from fgl.data.sentence import Sentence
from fgl.evaluation.evaluate import evaluate
from fgl.evaluation.significance import compare
from fgl.io.conll import ShortLineWarning, read_conll

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "conll2002"
SPEC = """columns word, pos, label
output label

template state:      y[t] ~ word[t], shape(word[t])
template transition: y[t-1..t]

"""
PAPER = {"CRF": (64.66, 3.61, 794.0), "ECRN": (64.97, 2.60, 1.3)}   # Zhu et al. Tables 1, 3


def load(path: Path) -> list[Sentence]:
    """A split read in place, padding the short lines (module docstring)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ShortLineWarning)
        sentences = read_conll(path, encoding="latin-1", short_lines="pad")
    for w in caught:
        print(f"  note: {w.message}")
    return sentences


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--max-iter", type=int, default=1000,
                    help="the most L-BFGS iterations of the CRF")
    ap.add_argument("--trials", type=int, default=10000, help="randomisation test shuffles")
    ap.add_argument("--jobs", type=int, default=0, help="threads (0: every core)")
    ap.add_argument("--quick", action="store_true",
                    help="the first 2000 training and 1000 test sentences, 30 CRF iterations, "
                         "1000 shuffles")
    a = ap.parse_args()
    if a.quick:
        a.max_iter, a.trials = 30, 1000
    train_path, test_path = a.data / "ned.train", a.data / "ned.testb"
    if not (train_path.exists() and test_path.exists()):
        print(f"skipped: CoNLL-2002 Dutch (ned.train, ned.testb) not found in {a.data}")
        return 0
    train, test = load(train_path), load(test_path)
    if a.quick:
        train, test = train[:2000], test[:1000]
    print(f"train {len(train)} sentences, {sum(len(s) for s in train)} tokens; "
          f"testb {len(test)} sentences, {sum(len(s) for s in test)} tokens")
    gold = [s.column(-1) for s in test]
    trainers = {"CRF": f"train {{ sigma = 10  max_iter = {a.max_iter} }}\n",
                "ECRN": "train { trainer = ecrn }\n"}
    rows, preds = {}, {}
    for name, block in trainers.items():
        t0 = time.perf_counter()
        crf = CRF(SPEC + block, jobs=a.jobs).fit_sentences(train)
        fit = time.perf_counter() - t0
        preds[name] = [list(p) for p in crf.predict_sentences(test)]
        overall = evaluate(gold, preds[name]).overall
        log = crf.training_log
        rows[name] = (fit, log.seconds, len(log.iterations), crf.model.program.n_features,
                      overall.precision, overall.recall)
        print(f"{name}: {log.message}")
    result = compare(gold, preds["CRF"], preds["ECRN"], trials=a.trials, partitions=21)
    k = result.partitions
    print(f"\n| model | fit s | learner s | iterations | features | P | R | F1 | F1 over {k} "
          "partitions | paper F1 | paper train s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, f1, mean, half in (("CRF", result.f1_a, result.mean_a, result.half_a),
                                 ("ECRN", result.f1_b, result.mean_b, result.half_b)):
        fit, learner, iters, feats, p, r = rows[name]
        pf1, phalf, ptime = PAPER[name]
        print(f"| {name} | {fit:.1f} | {learner:.2f} | {iters} | {feats} | {p:.2f} | {r:.2f} "
              f"| {f1:.2f} | {mean:.2f} ± {half:.2f} | {pf1:.2f} ± {phalf:.2f} | {ptime:g} |")
    print(f"\nCRF - ECRN: {result.f1_a - result.f1_b:+.2f} F1; approximate randomisation "
          f"p = {result.p_value:.4g} ({result.at_least_as_far} of {result.trials} shuffles at "
          "least as far apart)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
