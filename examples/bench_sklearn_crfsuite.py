"""sklearn-crfsuite vs fgl's feature-dict estimator, side by side.

The data and features of sklearn-crfsuite's tutorial: CoNLL-2002 Spanish
NER (esp.train to train, esp.testb to test), per token a dict of features
(the word lower-cased, its last 3 and 2 letters, upper / title / digit
tests, the POS tag and its first 2 letters, the same of the neighbours, a
bias, BOS and EOS), trained by L-BFGS with c1 = 0.1, c2 = 0.1, 100
iterations, every label pair a transition feature.  Both sides get the same
dicts: ``sklearn_crfsuite.CRF(...)`` and
``fgl.CRFEstimator(c1=0.1, c2=0.1, max_iter=100,
all_possible_transitions=True)`` (the same objective: docs/sklearn.md).

Each side runs in its own subprocess (this script re-invoked with
``--worker``), so the peak memory is its own; the two sides run in turn
``--rounds`` times (3 by default) and the table shows each figure's median,
the ratios the median of each round's (on a shared machine a round's
neighbours slow both sides of it alike).  Printed per side: feature
extraction, fit and predict times, peak RSS, iterations, the final
objective, the tutorial's score (token F1 weighted over the labels but O)
and conlleval's chunk F1; then fgl / sklearn-crfsuite ratios.  With
``--profile`` the fgl worker also profiles its predict call (cProfile, the
top functions by cumulative time).

The data is read in place from ../shared/data/conll2002 (``--data DIR``);
without it, or without sklearn-crfsuite (``pip install sklearn-crfsuite``,
in the ``bench`` extra), the script says so and exits 0.

    python examples/bench_sklearn_crfsuite.py              # the tutorial, 3 rounds, ~10 min
    python examples/bench_sklearn_crfsuite.py --quick      # 1500 sentences, 20 iterations
    python examples/bench_sklearn_crfsuite.py --quick --rounds 1 --profile
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from measure import peak_rss_mb

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "conll2002"
RESULT = "@@RESULT "
QUICK_SENTENCES, QUICK_ITER = 1500, 20


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data and features

def read_conll2002(path: Path, limit: int | None = None) -> list[list[tuple[str, str, str]]]:
    """(word, POS, tag) sentences of a CoNLL-2002 file (Latin-1), without
    its -DOCSTART- lines."""
    sents, cur = [], []
    with open(path, encoding="latin-1") as f:
        for line in f:
            fields = line.split()
            if not fields:
                if cur:
                    sents.append(cur)
                    cur = []
                    if limit is not None and len(sents) >= limit:
                        break
            elif fields[0] != "-DOCSTART-":
                cur.append((fields[0], fields[1], fields[-1]))
    if cur and (limit is None or len(sents) < limit):
        sents.append(cur)
    return sents


def token_features(sent: list[tuple[str, str, str]], i: int) -> dict:
    """The tutorial's features of token ``i``."""
    word, pos = sent[i][0], sent[i][1]
    out = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
           "word[-2:]": word[-2:], "word.isupper()": word.isupper(),
           "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
           "postag": pos, "postag[:2]": pos[:2]}
    for side, j, edge in (("-1", i - 1, "BOS"), ("+1", i + 1, "EOS")):
        if 0 <= j < len(sent):
            w, p = sent[j][0], sent[j][1]
            out.update({f"{side}:word.lower()": w.lower(), f"{side}:word.istitle()": w.istitle(),
                        f"{side}:word.isupper()": w.isupper(), f"{side}:postag": p,
                        f"{side}:postag[:2]": p[:2]})
        else:
            out[edge] = True
    return out


def features(sents) -> list[list[dict]]:
    return [[token_features(s, i) for i in range(len(s))] for s in sents]


def labels(sents) -> list[list[str]]:
    return [[tag for _, _, tag in s] for s in sents]


# ---------------------------------------------------------------- a worker

def worker(a) -> dict:
    res: dict = {"name": a.worker}
    limit = QUICK_SENTENCES if a.quick else None
    t0 = time.perf_counter()
    train = read_conll2002(a.data / "esp.train", limit)
    test = read_conll2002(a.data / "esp.testb")
    X_train, y_train = features(train), labels(train)
    X_test, y_test = features(test), labels(test)
    res["features_s"] = time.perf_counter() - t0
    res["train_sentences"], res["test_tokens"] = len(train), sum(map(len, test))
    del train, test
    max_iter = a.max_iter if a.max_iter is not None else (QUICK_ITER if a.quick else 100)
    if a.worker == "sklearn-crfsuite":
        import sklearn_crfsuite
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=max_iter,
                                   all_possible_transitions=True)
    else:
        import fgl
        settings = dict(c1=0.1, c2=0.1, all_possible_transitions=True)
        if a.warm:   # numba's kernels compiled (or loaded from its cache) before the clock:
            # the timed run's settings (c1 > 0 trains by OWL-QN) on two sentences
            fgl.CRFEstimator(max_iter=2, **settings).fit(X_train[:2], y_train[:2]).predict(
                X_train[:2])
        crf = fgl.CRFEstimator(max_iter=max_iter, **settings)
    t0 = time.perf_counter()
    crf.fit(X_train, y_train)
    res["fit_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = crf.predict(X_test)
    res["predict_s"] = time.perf_counter() - t0
    res["peak_rss_mb"] = peak_rss_mb()
    if a.worker == "fgl":
        log_ = crf.training_log_
        res["iterations"], res["objective"] = len(log_.iterations), log_.objective
        res["features"] = len(crf.coef_)
        if a.profile:
            res["profile"] = profile_predict(crf, X_test)
    else:
        last = crf.training_log_.last_iteration
        res["iterations"], res["objective"] = len(crf.training_log_.iterations), last["loss"]
        res["features"] = crf.training_log_.featgen_num_features
    from sklearn.metrics import f1_score

    from fgl.evaluation.evaluate import evaluate
    names = sorted({t for s in y_test for t in s} - {"O"})
    flat = [t for s in y_test for t in s]
    res["token_f1"] = 100 * f1_score(flat, [t for s in pred for t in s], average="weighted",
                                     labels=names, zero_division=0)
    res["chunk_f1"] = evaluate(y_test, [list(s) for s in pred]).overall.f1
    return res


def profile_predict(crf, X) -> list[str]:
    """The top of a cProfile of ``crf.predict(X)``, by cumulative time."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    crf.predict(X)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(14)
    return [ln for ln in out.getvalue().splitlines() if ln.strip()][-16:]


# ---------------------------------------------------------------- the parent

ROWS = [("train sentences", "train_sentences", "{}"),
        ("features (weights)", "features", "{:,}"),
        ("feature dicts s (both sets)", "features_s", "{:.1f}"),
        ("fit s", "fit_s", "{:.1f}"),
        ("predict s", "predict_s", "{:.2f}"),
        ("peak RSS MB", "peak_rss_mb", "{:.0f}"),
        ("iterations", "iterations", "{}"),
        ("final objective", "objective", "{:.2f}"),
        ("token F1 (tutorial: weighted, no O)", "token_f1", "{:.2f}"),
        ("chunk F1 (conlleval)", "chunk_f1", "{:.2f}")]
RATIOS = ("fit_s", "predict_s", "peak_rss_mb")


def run_worker(a, name: str) -> dict | None:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--data", str(a.data)]
    cmd += ["--quick"] * a.quick + ["--profile"] * a.profile + ["--no-warm"] * (not a.warm)
    if a.max_iter is not None:
        cmd += ["--max-iter", str(a.max_iter)]
    log(f"--- {name}")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)]
    if proc.returncode != 0 or not lines:
        log(f"    the {name} worker failed (exit {proc.returncode}):\n{proc.stdout}")
        return None
    return json.loads(lines[-1][len(RESULT):])


def parent(a) -> int:
    if not all((a.data / f).is_file() for f in ("esp.train", "esp.testb")):
        print(f"CoNLL-2002 Spanish data not found in {a.data} (esp.train, esp.testb); pass "
              "--data DIR. Nothing to do.")
        return 0
    try:
        import sklearn_crfsuite  # noqa: F401
    except ImportError:
        print("sklearn-crfsuite is not installed (pip install sklearn-crfsuite, or the bench "
              "extra); nothing to compare with. Nothing to do.")
        return 0
    mode = f"quick: {QUICK_SENTENCES} sentences" if a.quick else "the tutorial: all of esp.train"
    print(f"CoNLL-2002 Spanish NER, sklearn-crfsuite tutorial features; {mode}; c1 = c2 = 0.1, "
          f"all transitions; fgl's kernels {'warm' if a.warm else 'as found'}; "
          f"{a.rounds} round(s), the two sides in turn, medians shown")
    runs: dict[str, list[dict]] = {"sklearn-crfsuite": [], "fgl": []}
    ratios = []
    for r in range(a.rounds):
        got = {name: run_worker(a, name) for name in runs}
        if any(v is None for v in got.values()):
            return 1
        for name, res in got.items():
            runs[name].append(res)
        ratios.append([got["fgl"][k] / got["sklearn-crfsuite"][k] for k in RATIOS])
        log(f"    round {r + 1}: fgl / sklearn-crfsuite: fit, predict, RSS "
            + ", ".join(f"{x:.2f}x" for x in ratios[-1]))
    cols = [(name, {key: statistics.median(res[key] for res in results)
                    for key in results[0] if key not in ("name", "profile")})
            for name, results in runs.items()]
    head = ["figure"] + [n for n, _ in cols]
    body = [[label] + [fmt.format(r[key]) for _, r in cols] for label, key, fmt in ROWS]
    body.append(["fgl / sklearn-crfsuite: fit, predict, RSS", ""]
                + [", ".join(f"{statistics.median(col):.2f}x" for col in zip(*ratios))])
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
    for row in [head] + body:
        print("  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i])
                        for i, c in enumerate(row)))
    if a.rounds > 1:
        print("per round, fgl / sklearn-crfsuite (fit, predict, RSS): "
              + "; ".join(", ".join(f"{x:.2f}x" for x in r) for r in ratios))
    profile = runs["fgl"][-1].get("profile")
    if profile:
        print("\nfgl predict, profiled (cumulative time):")
        print("\n".join(profile))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--quick", action="store_true",
                   help=f"the first {QUICK_SENTENCES} training sentences, {QUICK_ITER} iterations")
    p.add_argument("--max-iter", type=int)
    p.add_argument("--rounds", type=int, default=3,
                   help="run the two sides in turn this many times and show the medians "
                        "(a shared machine's noise; the ratios are each round's)")
    p.add_argument("--profile", action="store_true", help="profile fgl's predict call")
    p.add_argument("--no-warm", dest="warm", action="store_false",
                   help="do not compile fgl's kernels before the clock starts")
    p.add_argument("--worker", choices=("sklearn-crfsuite", "fgl"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        print(RESULT + json.dumps(worker(a)))
        return 0
    return parent(a)


if __name__ == "__main__":
    sys.exit(main())
