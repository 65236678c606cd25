"""Collective classification on CiteSeer: content-only maxent, iterative
classification (ICA) and the relational CRF under Bethe and tree-reweighted BP.

Data: the CiteSeer citation graph (Sen et al. 2008), read in place from
``../shared/data/citeseer`` (``citeseer.content``: paper, its words as one
field of names, class c0..c5; ``citeseer.cites``: cited, citing; 3,312
papers, 4,536 links, 48 papers in no link).  The files are never changed:
``fgl convert linqs`` turns them into JSON-lines graphs in a temporary
directory, dropping and counting what it cannot use (links naming papers
.content does not list, self-links, repeats, reverses of a kept link —
``--quick`` shows it: it keeps the first 400 papers and the whole .cites,
whose links to the other papers are dropped with a warning).

Models, each trained once per split with sigma 1 and L-BFGS:

* ``maxent``: ``y[a] ~ bias, tokens(words[a])``, the words alone;
* ``ICA`` (Lu & Getoor 2003, "Link-based classification", ICML): a maxent
  local classifier over the words plus a ``nbr:vector`` column, the count
  of neighbours (citing or cited, undirected) per label — Lu & Getoor's
  count-link aggregation — read as six weighted attributes
  (``value(nbr[a])``).  Trained on the known labels with the counts of
  their neighbours' labels (an unknown neighbour counts under its
  content-only prediction).  At test time the labels start from maxent's
  predictions, then every unknown node is re-predicted from its
  neighbours' current labels, all at once per round, for at most 10 rounds
  or until no label changes; known labels stay given;
* ``CRF/TRP``, ``CRF/TRW``: the maxent template plus ``(y[a], y[b]) where
  edge(a, b, "cites")``, the relational CRF, trained and decoded under
  loopy BP on the TRP schedule (the Bethe approximation, ``infer trp``) or
  tree-reweighted BP (``infer trw``, the convex objective, which ``infer
  auto`` picks on a graph this loopy).

Two settings, each over ``--seeds`` seeded splits:

(a) ``fgl convert linqs --split 0.5 -o TRAIN --test-out TEST --seed N``:
    half the papers form the training graph, the rest the test graph.  The
    converter keeps each link only when both its papers fall on one side
    (``fgl.io.linqs.split``): the links across the split — about half of
    them — are dropped and counted, so each graph keeps about a quarter.
    No test label is given, and every test node is scored.
(b) ``fgl convert linqs --withhold 0.5 -o GIVEN --gold-out GOLD --seed N``:
    one graph with half its labels null.  The relational CRFs train on
    GIVEN with those labels marginalised, and predict them with the given
    labels clamped as evidence; only the withheld nodes are scored (the
    nodes ``fgl eval MODEL GOLD`` scores, ``fgl.io.graphs.scoring``).

Per setting: mean accuracy ± the 95% t-interval over the seeds, training
seconds (ICA: the content-only model's and its local classifier's), peak
RSS while training, how the training runs ended (``rule``: the stopping
rule; ``LS``: a failed line search; ``limit``: ``--max-iter``) and the
runs ending on a failed line search; then, per pair, the approximate
randomisation test of ``fgl compare`` (``fgl.io.significance``; Noreen
1989) on the per-node predictions of all seeds pooled — each shuffle swaps
the two models' predictions of a node (not of a graph: a setting has one
test graph per seed) with probability 1/2, 10,000 shuffles, two-sided.
Nodes of one graph are not independent, so the p-values are optimistic.
Last, the issue's targets next to the figures.

    python examples/collective_classification.py                 # both settings, 5 seeds
    python examples/collective_classification.py --setting b --seeds 1
    python examples/collective_classification.py --quick --seeds 2   # seconds

Measured (``nice -n 5 python examples/collective_classification.py``: 5
seeds per setting, 2 cores shared with other jobs, 1,428 s wall; TRW as of
its norm-product sweep; peak MB is the process's resident set while
training):

    (a) half the papers train, the other half test: 5 seeds
    model         accuracy %  train s  peak MB  ended (runs)  failed LS
    maxent     69.93 ±  1.56      1.8      255  rule 5                0
    ICA        71.51 ±  1.30      3.6      255  rule 5                0
    CRF/TRP    71.67 ±  1.25      3.0      255  rule 5                0
    CRF/TRW    71.73 ±  1.29      4.3      255  rule 5                0
    TRW vs maxent +1.80 (p = 0.0001), vs ICA +0.22 (p = 0.28), vs TRP +0.06 (p = 0.49)
    target relational >= maxent + 2: TRP +1.74, TRW +1.80, not met

    (b) one graph, half its labels withheld: 5 seeds
    model         accuracy %  train s  peak MB  ended (runs)  failed LS
    maxent     69.95 ±  0.39      1.8      297  rule 5                0
    ICA        73.85 ±  0.73      3.9      298  rule 5                0
    CRF/TRP    74.00 ±  0.62     46.3      296  LS 5                  5
    CRF/TRW    73.53 ±  0.82    200.9      296  rule 5                0
    TRW vs maxent +3.57 (p = 0.0001), vs ICA -0.33 (p = 0.27), vs TRP -0.47 (p = 0.0095)
    target relational >= maxent + 4, no failed line search: TRP +4.05 but
    5 of 5 runs end on a failed line search; TRW +3.57 with none: not met

In (a) the test graph keeps a quarter of the links and no label, so the
links add under 2 points; in (b) the known neighbours add 3.6-4.
Synchronous ICA does not settle: every seed ran its 10 rounds with 30-60
labels still changing in the last: updating every node at once can
cycle (Lu & Getoor update one node at a time, in a chosen order).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from measure import RssPeak  # noqa: E402

from fgl.api import CRF  # noqa: E402
from fgl.cli import main as fgl_main  # noqa: E402
from fgl.io.graphs import Scoring, graph_instance, scoring  # noqa: E402
from fgl.io.significance import randomisation_test  # noqa: E402
from fgl.learn.learner import TrainingLog  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "citeseer"
MODELS = ["maxent", "ICA", "CRF/TRP", "CRF/TRW"]
PAIRS = [("CRF/TRW", "maxent"), ("CRF/TRW", "ICA"), ("CRF/TRW", "CRF/TRP")]
SETTINGS = {"a": "(a) half the papers train, the other half test (links across dropped)",
            "b": "(b) one graph, half its labels withheld (given labels clamped)"}
TARGETS = {"a": 2.0, "b": 4.0}   # issue 23: relational >= maxent + this many points
ICA_ROUNDS = 10
QUICK_PAPERS = 400
TRIALS = 10000


def spec_text(model: str, max_iter: int) -> str:
    """The fgl spec of ``model`` (one of MODELS)."""
    ica = model == "ICA"
    text = ("input graph\ncolumns words, " + ("nbr:vector, " if ica else "") + "label\n"
            "output label\n\ntemplate node:  y[a] ~ bias, tokens(words[a])"
            + (", value(nbr[a])" if ica else "") + "\n")
    if model.startswith("CRF/"):
        text += ('template cites: (y[a], y[b]) where edge(a, b, "cites")\n'
                 f"infer {model[4:].lower()}\n")
    return text + f"train {{\n  sigma = 1\n  max_iter = {max_iter}\n}}\n"


# ---------------------------------------------------------------- data

def convert(content: Path, cites: Path, tmp: Path, setting: str, seed: int
            ) -> tuple[dict, dict, str]:
    """``fgl convert linqs`` with --split 0.5 (a) or --withhold 0.5 (b):
    the (training, test) graphs and the converter's summary."""
    first, second = tmp / f"{setting}{seed}-train.jsonl", tmp / f"{setting}{seed}-test.jsonl"
    how = (["--split", "0.5", "-o", first, "--test-out", second] if setting == "a" else
           ["--withhold", "0.5", "-o", first, "--gold-out", second])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = fgl_main([str(x) for x in ["convert", "linqs", content, cites, *how,
                                          "--seed", seed]])
    if code:
        raise SystemExit(f"fgl convert linqs failed ({code})")
    return (*(json.loads(p.read_text()) for p in (first, second)),
            out.getvalue().replace(f"{tmp}/", ""))


def neighbours(graph: dict) -> list[list[int]]:
    """Per node, the indices of the nodes it links to either way."""
    index = {node["id"]: k for k, node in enumerate(graph["nodes"])}
    near: list[list[int]] = [[] for _ in graph["nodes"]]
    for edge in graph["edges"]:
        a, b = index[edge["source"]], index[edge["target"]]
        near[a].append(b)
        near[b].append(a)
    return near


def with_counts(graph: dict, near: list[list[int]], labels: list[str], classes: list[str]
                ) -> dict:
    """The graph's nodes (no edges: the ICA spec has no pair template),
    each with ``nbr``, its neighbours' counts per class under ``labels``."""
    slot = {c: k for k, c in enumerate(classes)}
    nodes = []
    for node, others in zip(graph["nodes"], near):
        counts = [0.0] * len(classes)
        for j in others:
            counts[slot[labels[j]]] += 1.0
        nodes.append({**node, "nbr": counts})
    return {"nodes": nodes}


# ---------------------------------------------------------------- models

@dataclass
class Result:
    """One model's runs over the seeds of one setting."""

    accuracy: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)
    logs: list[TrainingLog] = field(default_factory=list)
    correct: list[np.ndarray] = field(default_factory=list)   # per scored node, per seed
    rounds: list[tuple[int, int]] = field(default_factory=list)   # ICA: rounds, last changes


def ending(log: TrainingLog) -> str:
    """How a training run ended: "rule", "LS" (a failed line search) or "limit"."""
    if "line search found no" in log.message:
        return "LS"
    if "iteration limit" in log.message:
        return "limit"
    return "rule" if log.converged else "other"


def fit(model: str, graph: dict, max_iter: int, jobs: int) -> tuple[CRF, float, float]:
    """A trained model, its training seconds and peak RSS (MB)."""
    t0 = time.perf_counter()
    with RssPeak() as rss:
        crf = CRF(spec_text(model, max_iter), jobs=jobs).fit([graph])
    return crf, time.perf_counter() - t0, rss.peak_mb


def ica(content_only: CRF, train: dict, test: dict, max_iter: int, jobs: int
        ) -> tuple[CRF, list[str], tuple[int, int], float, float]:
    """Lu & Getoor's iterative classification: the local classifier, the
    test graph's final labels, the rounds run and the labels its last round
    changed, training seconds and peak RSS."""
    classes = sorted({n["label"] for n in train["nodes"] if n["label"] is not None})
    near = neighbours(train)
    if any(n["label"] is None for n in train["nodes"]):
        guess = content_only.predict([train])[0]     # (given labels come back as they are)
    else:
        guess = [n["label"] for n in train["nodes"]]
    local, secs, peak = fit("ICA", with_counts(train, near, guess, classes), max_iter, jobs)
    near = neighbours(test)
    current = content_only.predict([test])[0]
    rounds = changed = 0
    while rounds < ICA_ROUNDS and (changed or not rounds):
        rounds += 1
        pred = local.predict([with_counts(test, near, current, classes)])[0]
        changed = sum(a != b for a, b in zip(pred, current))
        current = pred
    return local, current, (rounds, changed), secs, peak


def run_split(train: dict, test: dict, results: dict[str, Result], max_iter: int,
              jobs: int) -> str:
    """Train and score every model on one split; a one-line summary."""
    for model in ["maxent", "CRF/TRP", "CRF/TRW"]:
        crf, secs, peak = fit(model, train, max_iter, jobs)
        if model == "maxent":
            content_only, scored = crf, scoring([graph_instance(test, crf.spec)], crf.spec)
        results[model].seconds.append(secs)
        results[model].peak_mb.append(peak)
        results[model].logs.append(crf.training_log)
        keep(results[model], scored, crf.predict([test])[0])
    local, labels, rounds, secs, peak = ica(content_only, train, test, max_iter, jobs)
    r = results["ICA"]
    r.seconds.append(secs + results["maxent"].seconds[-1])
    r.peak_mb.append(max(peak, results["maxent"].peak_mb[-1]))
    r.logs.append(local.training_log)
    r.rounds.append(rounds)
    keep(r, scored, labels)
    return "  ".join(f"{m} {results[m].accuracy[-1]:.2f} "
                     f"({ending(results[m].logs[-1])}, {len(results[m].logs[-1].iterations)} it)"
                     for m in MODELS) + f"; ICA {rounds[0]} rounds, {rounds[1]} changed in the last"


def keep(result: Result, scored: Scoring, pred: list[str]) -> None:
    """Score one seed's predictions on the nodes evaluation scores."""
    nodes, gold = scored.nodes[0], scored.gold["label"][0]
    correct = np.array([pred[j] == g for j, g in zip(nodes, gold)])
    result.correct.append(correct)
    result.accuracy.append(100.0 * correct.mean())


# ---------------------------------------------------------------- report

def interval(values: list[float]) -> str:
    """Mean ± the 95% t half-width."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return f"{mean:6.2f}        "
    half = stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / np.sqrt(len(values))
    return f"{mean:6.2f} ± {half:5.2f}"


def report(setting: str, results: dict[str, Result]) -> None:
    """The table of one setting, its pairwise tests and the issue's targets."""
    n = len(results["maxent"].accuracy)
    print(f"\n{SETTINGS[setting]}: {n} seed{'s' if n != 1 else ''}")
    print(f"{'model':<8} {'accuracy %':>15} {'train s':>8} {'peak MB':>8}  "
          f"{'ended (runs)':<22} {'failed LS':>9}")
    for m in MODELS:
        r = results[m]
        ends = Counter(ending(log) for log in r.logs)
        print(f"{m:<8} {interval(r.accuracy):>15} {np.mean(r.seconds):8.1f} "
              f"{max(r.peak_mb):8.0f}  {', '.join(f'{k} {v}' for k, v in ends.items()):<22} "
              f"{ends['LS']:9d}")
    print(f"ICA rounds per seed (at most {ICA_ROUNDS}; fewer: no label changed), and the "
          "labels the last changed: "
          + ", ".join(f"{n} ({c})" for n, c in results["ICA"].rounds))
    for m in MODELS:
        for seed, log in enumerate(results[m].logs):
            if ending(log) != "rule":
                print(f"  {m} seed {seed}: {log.message}")
    nodes = sum(len(c) for c in results["maxent"].correct)
    print(f"approximate randomisation (as fgl compare; per node, {nodes} nodes of all seeds "
          f"pooled, {TRIALS} shuffles):")
    for a, b in PAIRS:
        ca, cb = (np.concatenate(results[m].correct).astype(float) for m in (a, b))
        ones = np.ones_like(ca)
        p, _ = randomisation_test(np.column_stack([ca, ones, ones]),
                                  np.column_stack([cb, ones, ones]), TRIALS)
        print(f"  {a} vs {b}: {100.0 * (ca.mean() - cb.mean()):+.2f} points, p = {p:.2g}")
    need = TARGETS[setting]
    base = float(np.mean(results["maxent"].accuracy))
    print(f"target ({setting}): relational >= maxent + {need:g}"
          + (", and no run ending on a failed line search" if setting == "b" else ""))
    for m in ("CRF/TRP", "CRF/TRW"):
        gain = float(np.mean(results[m].accuracy)) - base
        failed = sum(ending(log) == "LS" for log in results[m].logs)
        met = gain >= need and (setting != "b" or failed == 0)
        print(f"  {m}: {gain:+.2f} points, {failed} failed line search"
              f"{'es' if failed != 1 else ''}: {'met' if met else 'not met'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeded splits per setting")
    ap.add_argument("--setting", choices=["a", "b", "both"], default="both")
    ap.add_argument("--max-iter", type=int, default=200, help="L-BFGS iterations per model")
    ap.add_argument("--jobs", type=int, default=0, help="threads (0: every core)")
    ap.add_argument("--quick", action="store_true",
                    help=f"the first {QUICK_PAPERS} papers, 15 iterations")
    args = ap.parse_args()
    content, cites = DATA / "citeseer.content", DATA / "citeseer.cites"
    if not (content.exists() and cites.exists()):
        print(f"CiteSeer not found in {DATA}; skipped.")
        return 0
    settings = ["a", "b"] if args.setting == "both" else [args.setting]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if args.quick:
            args.max_iter = min(args.max_iter, 15)
            lines = content.read_text().splitlines(keepends=True)[:QUICK_PAPERS]
            content = tmp / "quick.content"
            content.write_text("".join(lines))
        t0 = time.perf_counter()
        for setting in settings:
            results = {m: Result() for m in MODELS}
            print(f"== {SETTINGS[setting]}")
            for seed in range(args.seeds):
                train, test, summary = convert(content, cites, tmp, setting, seed)
                print(summary.rstrip() if seed == 0 else summary.rstrip().splitlines()[-1])
                line = run_split(train, test, results, args.max_iter, args.jobs)
                print(f"seed {seed}: {line}", flush=True)
            report(setting, results)
            print()
        print(f"wall time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
