"""Table 6 of Cuong et al. 2014 §3.2.2: punctuation prediction with chain
CRFs C1-C3 and semi-Markov CRFs SC1-SC3, fgl beside the paper.

The movie-transcript data (``../shared/data/punc``, ``word label`` with label
O , . ?) is rewritten into the paper's 10 labels: the first word of a text
segment ending in a mark also carries that mark on its right (``O-.``, or
``.-.`` when the mark's own word follows another mark).  Every feature is
written in the language, none precomputed (the paper names them in a few
words; their details follow the authors' code):

* zeroth order, per token (of the segment): words at offsets -4..4 and pairs of
  words at offsets -4 <= j < k <= 4 (``zip`` keeps the pairs aligned);
* inside a segment: how many tokens follow the first (``count``), those
  tokens, the words before them and the word pairs (``zip``);
* first order: transitions alone and with the current word, the previous one
  and the pair of both (SCk: also with the words of the segment); Ck and SCk
  add order-k label patterns alone and with the current word(s).

An offset just outside the text gives a start/end marker (``pad(..., 1)``),
further out nothing, as in the authors' code.  The segment models use ``adjacent
distinct`` (a run of one label is one segment) and, per label, the longest run
of it in the training data as its longest segment, both as the authors' code
does.  Scoring strips the right part of the labels and takes the token
micro-F1 over , . ? (sigma 1, 100 L-BFGS iterations, as the paper); F1 per
mark and approximate randomisation tests of every pair of models follow,
beside Tables 6 and 7.  Each model trains in a process of its own (its peak
memory is its own); all six take about 6 minutes on 2 cores.

    python examples/punctuation_table6.py                  # all six, full data
    python examples/punctuation_table6.py --quick          # 800 texts, 30 iterations
    python examples/punctuation_table6.py --models C1,SC1
    python examples/punctuation_table6.py --quick --models C1,SC1 --test-texts 300  # < 1 minute
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from itertools import groupby
from multiprocessing import get_context
from pathlib import Path

from measure import current_rss_mb, peak_rss_mb

from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.evaluation.evaluate import evaluate
from fgl.evaluation.significance import compare

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "punc"
PAPER = {"C1": 66.21, "C2": 66.53, "C3": 66.85, "SC1": 66.73, "SC2": 70.85, "SC3": 70.47}
# Table 6 per mark (, . ?) and Table 7: the paper's bound on p for each pair of models
PAPER_MARKS = {"C1": (59.29, 75.37, 58.18), "C2": (59.70, 75.37, 59.54),
               "C3": (59.90, 75.46, 60.57), "SC1": (61.13, 75.03, 57.61),
               "SC2": (60.89, 78.97, 74.05), "SC3": (60.35, 78.82, 73.56)}
PAPER_P = {("C1", "C2"): 0.155, ("C1", "C3"): 0.048, ("C1", "SC1"): 0.043,
           ("C2", "C3"): 0.153, ("C2", "SC1"): 0.289, ("C3", "SC1"): 0.378,
           ("SC2", "SC3"): 0.044}   # every other pair: 0.001
MARKS = (",", ".", "?")


def read_texts(path: Path) -> list[list[tuple[int, str, str]]]:
    """(line, word, label) texts; CRLF, CR and LF all end a line."""
    texts, cur = [], []
    for n, line in enumerate(path.read_bytes().decode("utf-8").splitlines(), 1):
        fields = line.split()
        if fields:
            cur.append((n, fields[0], fields[1]))
        elif cur:
            texts.append(cur)
            cur = []
    return texts + [cur] if cur else texts


def ten_labels(labels: list[str]) -> list[str]:
    """Cuong et al. 2014 §3.2.2: mark the first word of each text segment
    with the mark ending it (``O-,``, ``,-,`` ...)."""
    out = list(labels)
    for i, lab in enumerate(labels):
        if lab in MARKS:
            j = i
            while j > 0 and out[j - 1] == "O":
                j -= 1
            out[j] += "-" + lab
    return out


def sentences(texts: list[list[tuple[int, str, str]]], file: str) -> list[Sentence]:
    """Sentences of columns word, label with the 10 labels."""
    out = []
    for i, text in enumerate(texts):
        lines, words, labels = zip(*text)
        out.append(Sentence([[w, y] for w, y in zip(words, ten_labels(list(labels)))],
                            list(lines), i, file))
    return out


def longest_runs(data: list[Sentence]) -> dict[str, int]:
    """Longest run of one label, per label."""
    best: dict[str, int] = {}
    for s in data:
        for lab, run in groupby(s.column(-1)):
            best[lab] = max(best.get(lab, 0), len(list(run)))
    return best


# ------------------------------------------------------------------ specs

def word_obs(segment: bool) -> tuple[str, str]:
    """Observations for words at offsets -4..4 and pairs at -4 <= j < k <= 4
    from every token (of the segment), and their names.

    As the authors' code does, an offset gives a start or end marker only at
    the first position outside the text (``pad(..., 1)``), further out
    nothing.  A pair never holds the start marker and holds the end marker
    only in its right slot, just past the end."""
    def at(d: int) -> str:
        if segment:
            return f"word[u{d:+d}..v{d:+d}]" if d else "word[u..v]"
        return f"word[t{d:+d}]" if d else "word[t]"

    def padded(d: int) -> str:
        return f"pad({at(d)}, 1)" if d else at(d)

    def pair(j: int, k: int) -> str:
        return f"zip({at(j)} & {padded(k) if k > 0 else at(k)})"
    lines = [f"obs w{i} = {padded(d)}" for i, d in enumerate(range(-4, 5))]
    pairs = [(j, k) for j in range(-4, 4) for k in range(j + 1, 5)]
    lines += [f"obs p{i} = {pair(j, k)}" for i, (j, k) in enumerate(pairs)]
    names = [f"w{i}" for i in range(9)] + [f"p{i}" for i in range(len(pairs))]
    return "\n".join(lines), ", ".join(names)


def chain_spec(order: int, iters: int) -> str:
    obs, names = word_obs(segment=False)
    high = "".join(f"\ntemplate order{k}: y[t-{k}..t] ~ bias, word[t]" for k in range(2, order + 1))
    return f"""model "C{order}"
columns word, label
output label
{obs}
template state: y[t] ~ {names}
template order1: y[t-1..t] ~ bias, word[t], pad(word[t-1]), pad(word[t-1]) & word[t]{high}
train {{ sigma = 1  max_iter = {iters} }}
"""


def semi_spec(order: int, iters: int, limits: dict[str, int]) -> str:
    obs, names = word_obs(segment=True)
    lim = ", ".join(f'"{k}" = {v}' for k, v in sorted(limits.items()) if v > 1)
    high = "".join(f"\ntemplate order{k}: s[j-{k}..j] ~ bias, word[u..v]"
                   for k in range(2, order + 1))
    return f"""model "SC{order}"
columns word, label
output label
segments max 1 [{lim}] from change adjacent distinct
{obs}
obs inner = count(regex(word[u+1..v], "."))
obs after_first = word[u+1..v]
obs before_next = word[u..v-1]
obs inner_pairs = zip(word[u..v-1] & word[u+1..v])
template segment: s[j] ~ {names}, inner, after_first, before_next, inner_pairs
template order1: s[j-1..j] ~ bias, word[u], word[u..v], pad(word[u-1]),
    pad(word[u-1]) & word[u]{high}
train {{ sigma = 1  max_iter = {iters} }}
"""


# ------------------------------------------------------------------ main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="folder holding punc.tr and punc.ts")
    ap.add_argument("--quick", action="store_true", help="800 training texts, 30 iterations")
    ap.add_argument("--test-texts", type=int, default=0, help="first N test texts (0: all)")
    ap.add_argument("--models", default=",".join(PAPER), help="e.g. C1,SC1")
    ap.add_argument("--max-iter", type=int, default=None, help="L-BFGS iterations (default 100)")
    ap.add_argument("--jobs", type=int, default=0, help="threads (0: every core)")
    ap.add_argument("--show-specs", action="store_true")
    ap.add_argument("--trials", type=int, default=10000,
                    help="shuffles of the randomisation tests (0: no tests)")
    ap.add_argument("--o-limit", type=int, default=0,
                    help="longest O segment of the segment models (default 0: the training "
                         "set's longest O run, 6, as every other label and the authors' code)")
    a = ap.parse_args()
    if not (a.data / "punc.tr").exists() or not (a.data / "punc.ts").exists():
        print(f"skipped: no punc.tr / punc.ts in {a.data}")
        return
    wanted = [m for m in a.models.split(",") if m]
    unknown = [m for m in wanted if m not in PAPER]
    if unknown:
        sys.exit(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(PAPER)}")
    iters = a.max_iter or (30 if a.quick else 100)
    train = sentences(read_texts(a.data / "punc.tr"), "punc.tr")
    test = sentences(read_texts(a.data / "punc.ts"), "punc.ts")
    if a.quick:
        train = train[:800]
    if a.test_texts:
        test = test[:a.test_texts]
    runs = longest_runs(train)
    # every limit is the longest run of its label in the training data, as in the
    # authors' code; under `adjacent distinct` a longer test run of O cannot be
    # one segment, and --o-limit raises O's limit to allow it
    limits = dict(runs, O=max(runs["O"], a.o_limit))
    print(f"{len(train)} training texts ({sum(map(len, train))} tokens), {len(test)} test texts "
          f"({sum(map(len, test))} tokens), {len(runs)} labels; sigma 1, {iters} iterations; "
          f"segment limits " + ", ".join(f"{k} {v}" for k, v in sorted(limits.items())))

    gold = [[y.split("-")[0] for y in s.column(-1)] for s in test]
    X_test = [Sentence([r[:2] for r in s.rows], s.lines, s.doc, s.file) for s in test]
    rows, preds = [], {}
    for name in wanted:
        order = int(name[-1])
        text = semi_spec(order, iters, limits) if name.startswith("S") else chain_spec(order, iters)
        if a.show_specs:
            print(f"--- {name}\n{text}")
        # a fresh process per model: its peak memory is its own, not the
        # largest of the models trained before it in one process
        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
            run = pool.submit(train_and_tag, text, a.jobs, train, X_test).result()
        pred = run.pop("pred")
        run["f1"] = evaluate(gold, pred, scheme="plain", labels=MARKS).micro.f1
        preds[name] = pred
        rows.append((name, run))
        print(f"  {name}: F1 {run['f1']:.2f}, {run['evals']} evaluations, "
              f"{run['fit_s']:.1f} s", flush=True)
    print_results(rows)
    print_marks_and_tests(gold, preds, a.trials)


def train_and_tag(text: str, jobs: int, train: list[Sentence], X_test: list[Sentence]
                  ) -> dict:
    """Train one model and tag the test texts (in a process of its own):
    the predictions, the table's figures, and the process's memory before
    training (Python, fgl, the texts) and at its peak."""
    before = current_rss_mb()
    crf = CRF(text, jobs=jobs)
    t0 = time.perf_counter()
    crf.fit_sentences(train)
    fit_s = time.perf_counter() - t0
    log = crf.training_log
    pred = [[y.split("-")[0] for y in p] for p in crf.predict_sentences(X_test)]
    return {"pred": pred, "fit_s": fit_s, "compile_s": fit_s - log.seconds,
            "per_eval": log.seconds / max(log.evaluations, 1), "train_s": log.seconds,
            "evals": log.evaluations, "features": crf.model.program.n_features,
            "before_mb": before, "peak_mb": peak_rss_mb()}


def print_results(rows: list[tuple[str, dict]]) -> None:
    """The Table 6 rows, and each segment model's peak memory over its
    chain counterpart's (SCk over Ck) where both ran."""
    head = (f"{'model':<5} {'fgl F1':>6} {'paper':>6} {'compile s':>9} {'s/eval':>6} "
            f"{'train s':>7} {'evals':>5} {'features':>9} {'before MB':>9} {'peak MB':>7}")
    print(f"\n{head}\n{'-' * len(head)}")
    for name, r in rows:
        print(f"{name:<5} {r['f1']:6.2f} {PAPER[name]:6.2f} {r['compile_s']:9.1f} "
              f"{r['per_eval']:6.2f} {r['train_s']:7.1f} {r['evals']:5d} {r['features']:9,d} "
              f"{r['before_mb']:9.0f} {r['peak_mb']:7.0f}")
    print("F1: token micro-F1 over , . ? (%); compile s: spec and features; each model runs "
          "in a process of its own: before MB is its memory before training (Python, fgl, the "
          "texts), peak MB its peak")
    runs = dict(rows)
    for k in "123":
        if f"C{k}" in runs and f"SC{k}" in runs:
            c, sc = runs[f"C{k}"], runs[f"SC{k}"]
            grown = (sc["peak_mb"] - sc["before_mb"], c["peak_mb"] - c["before_mb"])
            print(f"SC{k} over C{k}: peak {sc['peak_mb'] / c['peak_mb']:.2f}x "
                  f"({sc['peak_mb']:.0f} / {c['peak_mb']:.0f} MB); above the memory before "
                  f"training {grown[0] / grown[1]:.2f}x ({grown[0]:.0f} / {grown[1]:.0f} MB)")


def print_marks_and_tests(gold: list[list[str]], preds: dict[str, list[list[str]]],
                          trials: int) -> None:
    """F1 per mark beside Table 6, and the approximate randomisation test of
    every pair of models run beside Table 7 (Cuong et al. 2014 §3.2)."""
    print(f"\n{'model':<5} " + " ".join(f"{m + ' fgl':>7} {'paper':>6}" for m in MARKS))
    for name, pred in preds.items():
        per = [evaluate(gold, pred, scheme="plain", labels=(m,)).micro.f1 for m in MARKS]
        print(f"{name:<5} " + " ".join(f"{f:7.2f} {p:6.2f}"
                                       for f, p in zip(per, PAPER_MARKS[name])))
    names = list(preds)
    if trials < 1 or len(names) < 2:
        return
    print(f"\napproximate randomisation, {trials} shuffles: p of each difference (paper: "
          "its bound)")
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            c = compare(gold, preds[x], preds[y], trials=trials, partitions=1, scheme="plain")
            print(f"  {x:<3} {c.f1_a:6.2f} vs {y:<3} {c.f1_b:6.2f}: p = {c.p_value:.3f} "
                  f"(paper {PAPER_P.get((x, y), 0.001):.3f})")


if __name__ == "__main__":
    main()
