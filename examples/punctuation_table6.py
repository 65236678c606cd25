"""Table 6 of Cuong et al. 2014 (§3.2.2, §4): punctuation prediction with
chain CRFs C1-C3 and semi-Markov CRFs SC1-SC3, fgl beside the paper.

The movie-transcript data (``../shared/data/punc``, ``word label`` with label
O , . ?) is rewritten into the paper's 10 labels: the first word of a text
segment ending in a mark also carries that mark on its right (``O-.``, or
``.-.`` when the mark's own word follows another mark).  Every feature is
written in the language, none precomputed:

* zeroth order, per token (of the segment): words at offsets -4..4 and pairs of
  words at offsets -4 <= j < k <= 4 (``zip`` keeps the pairs aligned);
* inside a segment: how many tokens follow the first (``count``), those
  tokens, the words before them and the word pairs (``zip``);
* first order: transitions alone and with the current word, the previous one
  and the pair of both; Ck and SCk add order-k label patterns alone and with
  the current word(s).

Offsets outside the text give a start/end marker (``pad``).  The segment
models use ``adjacent distinct`` (a run of one label is one segment, as in the
authors' code).  Scoring strips the right part of the labels and takes the
token micro-F1 over , . ? (sigma 1, 100 L-BFGS iterations, as the paper).

    python examples/punctuation_table6.py                  # all six, full data
    python examples/punctuation_table6.py --quick          # 800 texts, 30 iterations
    python examples/punctuation_table6.py --models C1,SC1
    python examples/punctuation_table6.py --quick --models C1,SC1 --test-texts 300  # < 1 minute
"""
from __future__ import annotations

import argparse
import sys
import time
from itertools import groupby
from pathlib import Path

from measure import peak_rss_mb

from fgl.api import CRF
from fgl.io.conll import Sentence
from fgl.io.evaluate import evaluate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "punc"
PAPER = {"C1": 66.21, "C2": 66.53, "C3": 66.85, "SC1": 66.73, "SC2": 70.85, "SC3": 70.47}
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
    from every token (of the segment), and their names."""
    def at(d: int) -> str:
        if segment:
            return f"pad(word[u{d:+d}..v{d:+d}])" if d else "word[u..v]"
        return f"pad(word[t{d:+d}])" if d else "word[t]"
    lines = [f"obs w{i} = {at(d)}" for i, d in enumerate(range(-4, 5))]
    pairs = [(j, k) for j in range(-4, 4) for k in range(j + 1, 5)]
    lines += [f"obs p{i} = zip({at(j)} & {at(k)})" if segment else f"obs p{i} = {at(j)} & {at(k)}"
              for i, (j, k) in enumerate(pairs)]
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
    ap.add_argument("--o-limit", type=int, default=20,
                    help="longest O segment of the segment models (default 20; the training "
                         "set's longest O run is 6)")
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
    # every limit from the training data, but O's: a fixed --o-limit, since an O
    # segment is a whole run of O under `adjacent distinct` and runs vary
    limits = dict(runs, O=max(runs["O"], a.o_limit))
    print(f"{len(train)} training texts ({sum(map(len, train))} tokens), {len(test)} test texts "
          f"({sum(map(len, test))} tokens), {len(runs)} labels; sigma 1, {iters} iterations; "
          f"segment limits " + ", ".join(f"{k} {v}" for k, v in sorted(limits.items())))

    gold = [[y.split("-")[0] for y in s.column(-1)] for s in test]
    X_test = [Sentence([r[:1] for r in s.rows], s.lines, s.doc, s.file) for s in test]
    rows = []
    for name in wanted:
        order = int(name[-1])
        text = semi_spec(order, iters, limits) if name.startswith("S") else chain_spec(order, iters)
        if a.show_specs:
            print(f"--- {name}\n{text}")
        crf = CRF(text, jobs=a.jobs)
        t0 = time.perf_counter()
        crf.fit_sentences(train)
        fit_s = time.perf_counter() - t0
        log = crf.training_log
        pred = [[y.split("-")[0] for y in p] for p in crf.predict_sentences(X_test)]
        f1 = evaluate(gold, pred, scheme="plain", labels=MARKS).micro.f1
        rows.append((name, f1, fit_s - log.seconds, log.seconds / max(log.evaluations, 1),
                     log.seconds, log.evaluations, peak_rss_mb()))
        print(f"  {name}: F1 {f1:.2f}, {log.evaluations} evaluations, {fit_s:.1f} s", flush=True)

    head = (f"{'model':<5} {'fgl F1':>6} {'paper':>6} {'compile s':>9} {'s/eval':>6} "
            f"{'train s':>7} {'evals':>5} {'peak MB':>7}")
    print(f"\n{head}\n{'-' * len(head)}")
    for name, f1, comp, per_eval, tr, n_eval, rss in rows:
        print(f"{name:<5} {f1:6.2f} {PAPER[name]:6.2f} {comp:9.1f} {per_eval:6.2f} {tr:7.1f} "
              f"{n_eval:5d} {rss:7.0f}")
    print("F1: token micro-F1 over , . ? (%); compile s: spec and features; peak MB: process "
          "peak RSS so far")


if __name__ == "__main__":
    main()
