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

Models, trained by L-BFGS, each with the prior sigma (one for all its
weights) that validation on the training data chooses from 0.1, 0.3 and 1,
per model and split, by the same procedure for every model (``held_out``,
``choose``): the training graph is split as the setting splits the data —
(a) half its papers, with the links between them, train and the other half
is scored with no label given; (b) half its given labels are withheld and
scored with the rest clamped — each sigma's model is trained on the first
part and scored on the second, the most accurate sigma wins (ties: the
smaller), and the model is retrained with it on the whole training graph.
No test label is read in choosing: the grid and the procedure were fixed
on seeds 100-104 (``--first-seed 100``), never on the seeds reported.
Sigma matters to the baselines as much as to the CRF: on seeds 100-101
maxent gained 0.7-1.7 points from sigma 1 to 0.3 and lost 0.5-2.5 from 1
to 3 or 10.

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
  auto`` picks on a graph this loopy).  The edge template is directed: a
  is the citing paper (the edge's source), b the cited one, and its 36
  weights are a full table over (citing label, cited label), so cited and
  citing neighbours are told apart.

Two settings, each over ``--seeds`` seeded splits:

(a) ``fgl convert linqs --split 0.5 -o TRAIN --test-out TEST --seed N``:
    half the papers form the training graph, the rest the test graph.  The
    converter keeps each link only when both its papers fall on one side
    (``fgl.convert.linqs.split``): the links across the split — about half of
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
randomisation test of ``fgl compare`` (``fgl.evaluation.significance``; Noreen
1989) on the per-node predictions of all seeds pooled — each shuffle swaps
the two models' predictions of a node (not of a graph: a setting has one
test graph per seed) with probability 1/2, 10,000 shuffles, two-sided.
Nodes of one graph are not independent, so the p-values are optimistic.
Last, the issue's targets next to the figures.

    python examples/collective_classification.py                 # both settings, 5 seeds
    python examples/collective_classification.py --setting b --seeds 1
    python examples/collective_classification.py --quick --seeds 2   # seconds
    python examples/collective_classification.py --first-seed 100   # the trial seeds

Validation trains each model four times, so a run is long: setting (a)
takes 2.5 min alone on 2 cores; in (b) TRP's line-search recoveries take
minutes a run, and a seed took about 10 min on a shared machine.

Measured (``python examples/collective_classification.py``, 2 cores shared
with 3 other jobs, load 4-6; setting (a) took 7 min, and alone on a quiet
machine gave the same figures, to the last digit, in 2.5 min.  Setting (b)
took about 10 min a seed, so to finish in the time given, seeds 3 and 4 of (b)
ran in a second process, ``--setting b --first-seed 3 --seeds 2``, and the
(b) rows below are the per-seed lines of both combined — mean ± the 95%
t-interval of the 5 seeds; (b)'s pooled randomisation tests were not run;
peak MB is the process's resident set while training, train s the final
fit's, after choosing sigma):

    (a) half the papers train, the other half test: 5 seeds
    model         accuracy %  train s  peak MB  ended (runs)  failed LS
    maxent     71.00 ±  1.50      1.3      258  rule 5                0
    ICA        72.49 ±  2.44      2.7      260  rule 5                0
    CRF/TRP    72.61 ±  2.09     14.4      259  rule 4, LS 1          1
    CRF/TRW    73.13 ±  1.90      2.5      259  rule 5                0
    sigma chosen: maxent 0.3 ×5; ICA, CRF/TRP 0.3 but 1 on seed 1;
    CRF/TRW 0.1, 1, 0.3, 0.3, 0.3
    TRW vs maxent +2.13 (p = 0.0001), vs ICA +0.64 (p = 0.0046),
    vs TRP +0.52 (p = 0.0013); target >= maxent + 2: TRW met, TRP +1.61

    (b) one graph, half its labels withheld: 5 seeds
    model         accuracy %   ended (runs)            failed LS
    maxent     71.38 ±  0.54   rule 5                          0
    ICA        75.72 ±  0.96   rule 5                          0
    CRF/TRP    75.82 ±  0.40   LS 5                            5
    CRF/TRW    76.05 ±  0.55   rule 5                          0
    sigma chosen: maxent 0.3 ×5; ICA 0.3 but 0.1 on seed 3; CRF/TRP 0.3,
    0.3, 0.1, 0.1, 0.1; CRF/TRW 0.3, 0.3, 0.1, 0.1, 0.3
    TRW - maxent per seed: +4.35, +4.71, +5.26, +4.77, +4.29; TRW vs ICA
    +0.33; target >= maxent + 4 with no failed line search: TRW +4.68,
    met; TRP +4.44 but 5 of 5 runs end on a failed line search.  Seeds 3-4
    alone (the second process's table): TRW vs maxent +4.53 (p = 0.0001),
    vs ICA +0.72 (p = 0.077), vs TRP +0.24 (p = 0.62); train s maxent
    1.7, ICA 2.7, TRW 12.5, TRP 305 (its line-search recoveries).

On the trial seeds 100-104 the same procedure gave (a) maxent 71.03 ±
0.93, ICA 72.37, CRF/TRP 72.09, CRF/TRW 72.14 ± 1.83: TRW +1.11, short of
the target.  So (a)'s +2.13 above is within the spread of splits, not a
margin to rely on.  With sigma 1 fixed for every model (the previous
version of this example) the reported seeds gave (a) maxent 69.93, TRW
+1.80, and (b) maxent 69.95, TRW +3.64, TRP +4.05 with 5 of 5 runs ending
on a failed line search: sigma 1 is too weak a prior for 3,703 words x 6
labels on 1,656 labelled papers, for every model, and validation finds it.
In (a) the test graph keeps a quarter of the links and no label, so the
links add about 2 points; in (b) the known neighbours add about 4.
Synchronous ICA does not settle: every seed ran its 10 rounds with 38-111
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
from fgl.evaluation.significance import randomisation_test  # noqa: E402
from fgl.io.graphs import graph_instance, scoring  # noqa: E402
from fgl.learn.learner import TrainingLog  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "citeseer"
MODELS = ["maxent", "ICA", "CRF/TRP", "CRF/TRW"]
PAIRS = [("CRF/TRW", "maxent"), ("CRF/TRW", "ICA"), ("CRF/TRW", "CRF/TRP")]
SETTINGS = {"a": "(a) half the papers train, the other half test (links across dropped)",
            "b": "(b) one graph, half its labels withheld (given labels clamped)"}
TARGETS = {"a": 2.0, "b": 4.0}   # issue 23: relational >= maxent + this many points
ICA_ROUNDS = 10
SIGMAS = (0.1, 0.3, 1.0)   # the priors validation chooses from, per model and split
QUICK_PAPERS = 400
TRIALS = 10000


def spec_text(model: str, max_iter: int, sigma: float) -> str:
    """The fgl spec of ``model`` (one of MODELS) with prior ``sigma``."""
    ica = model == "ICA"
    text = ("input graph\ncolumns words, " + ("nbr:vector, " if ica else "") + "label\n"
            "output label\n\ntemplate node:  y[a] ~ bias, tokens(words[a])"
            + (", value(nbr[a])" if ica else "") + "\n")
    if model.startswith("CRF/"):
        text += ('template cites: (y[a], y[b]) where edge(a, b, "cites")\n'
                 f"infer {model[4:].lower()}\n")
    return text + f"train {{\n  sigma = {sigma:g}\n  max_iter = {max_iter}\n}}\n"


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


def held_out(graph: dict, setting: str, seed: int) -> tuple[dict, dict]:
    """A validation split of the training graph's labels, made as the
    setting splits the data: (a) half its papers, with the links between
    them, against the other half; (b) half its given labels withheld (the
    second graph marks them ``withheld``, as ``--gold-out`` does)."""
    nodes = graph["nodes"]
    rng = np.random.default_rng(seed)
    if setting == "a":
        first = {nodes[k]["id"] for k in rng.permutation(len(nodes))[:len(nodes) // 2]}
        return tuple({"nodes": [n for n in nodes if (n["id"] in first) == side],
                      "edges": [e for e in graph["edges"]
                                if (e["source"] in first) == side == (e["target"] in first)]}
                     for side in (True, False))
    given = [k for k, n in enumerate(nodes) if n["label"] is not None]
    hide = set(rng.permutation(given)[:len(given) // 2].tolist())
    return ({**graph, "nodes": [{**n, "label": None} if k in hide else n
                                for k, n in enumerate(nodes)]},
            {**graph, "nodes": [{**n, "withheld": True} if k in hide else n
                                for k, n in enumerate(nodes)]})


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
    sigmas: list[float] = field(default_factory=list)   # the sigma validation chose, per seed


def ending(log: TrainingLog) -> str:
    """How a training run ended: "rule", "LS" (a failed line search) or "limit"."""
    if "line search found no" in log.message:
        return "LS"
    if "iteration limit" in log.message:
        return "limit"
    return "rule" if log.converged else "other"


def fit(model: str, graph: dict, max_iter: int, jobs: int, sigma: float
        ) -> tuple[CRF, float, float]:
    """A trained model, its training seconds and peak RSS (MB)."""
    t0 = time.perf_counter()
    with RssPeak() as rss:
        crf = CRF(spec_text(model, max_iter, sigma), jobs=jobs).fit([graph])
    return crf, time.perf_counter() - t0, rss.peak_mb


def ica(content_only: CRF, train: dict, test: dict, max_iter: int, jobs: int, sigma: float
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
    local, secs, peak = fit("ICA", with_counts(train, near, guess, classes), max_iter, jobs,
                            sigma)
    near = neighbours(test)
    current = content_only.predict([test])[0]
    rounds = changed = 0
    while rounds < ICA_ROUNDS and (changed or not rounds):
        rounds += 1
        pred = local.predict([with_counts(test, near, current, classes)])[0]
        changed = sum(a != b for a, b in zip(pred, current))
        current = pred
    return local, current, (rounds, changed), secs, peak


def correct(graph: dict, crf: CRF, pred: list[str]) -> np.ndarray:
    """Per node evaluation scores in ``graph``, whether ``pred`` is right."""
    scored = scoring([graph_instance(graph, crf.spec)], crf.spec)
    return np.array([pred[j] == g for j, g in zip(scored.nodes[0], scored.gold["label"][0])])


def choose(model: str, inner: tuple[dict, dict], max_iter: int, jobs: int,
           content_only: CRF | None = None) -> tuple[float, CRF]:
    """The sigma of SIGMAS whose model, trained on the first graph of
    ``inner``, is most accurate on the second (ties: the smaller sigma),
    and that model (ICA: its predictions start from ``content_only``)."""
    best: tuple[float, float, CRF] | None = None
    for sigma in SIGMAS:
        if model == "ICA":
            crf, pred, *_ = ica(content_only, *inner, max_iter, jobs, sigma)
        else:
            crf = fit(model, inner[0], max_iter, jobs, sigma)[0]
            pred = crf.predict([inner[1]])[0]
        score = float(correct(inner[1], content_only or crf, pred).mean())
        if best is None or score > best[0]:
            best = (score, sigma, crf)
    return best[1], best[2]


def run_split(train: dict, test: dict, results: dict[str, Result], max_iter: int,
              jobs: int, inner: tuple[dict, dict]) -> str:
    """Choose each model's sigma on ``inner`` (a validation split of
    ``train``), train it on ``train`` and score it; a one-line summary."""
    for model in ["maxent", "CRF/TRP", "CRF/TRW"]:
        sigma, inner_crf = choose(model, inner, max_iter, jobs)
        crf, secs, peak = fit(model, train, max_iter, jobs, sigma)
        if model == "maxent":
            content_only, inner_content_only = crf, inner_crf
        results[model].sigmas.append(sigma)
        results[model].seconds.append(secs)
        results[model].peak_mb.append(peak)
        results[model].logs.append(crf.training_log)
        keep(results[model], correct(test, crf, crf.predict([test])[0]))
    sigma = choose("ICA", inner, max_iter, jobs, inner_content_only)[0]
    local, labels, rounds, secs, peak = ica(content_only, train, test, max_iter, jobs, sigma)
    r = results["ICA"]
    r.sigmas.append(sigma)
    r.seconds.append(secs + results["maxent"].seconds[-1])
    r.peak_mb.append(max(peak, results["maxent"].peak_mb[-1]))
    r.logs.append(local.training_log)
    r.rounds.append(rounds)
    keep(r, correct(test, content_only, labels))
    return "  ".join(f"{m} {results[m].accuracy[-1]:.2f} (sigma {results[m].sigmas[-1]:g}, "
                     f"{ending(results[m].logs[-1])}, {len(results[m].logs[-1].iterations)} it)"
                     for m in MODELS) + f"; ICA {rounds[0]} rounds, {rounds[1]} changed in the last"


def keep(result: Result, right: np.ndarray) -> None:
    """Keep one seed's per-node outcomes and accuracy."""
    result.correct.append(right)
    result.accuracy.append(100.0 * right.mean())


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
    print("sigma chosen per seed: " + "; ".join(
        f"{m} {' '.join(f'{x:g}' for x in results[m].sigmas)}" for m in MODELS))
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
    ap.add_argument("--first-seed", type=int, default=0,
                    help="the first seed (the figures below: 0; variants were tried on 100-104)")
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
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                train, test, summary = convert(content, cites, tmp, setting, seed)
                lines = summary.rstrip().splitlines()
                print("\n".join(lines if seed == args.first_seed else lines[-1:]))
                inner = held_out(train, setting, seed)
                line = run_split(train, test, results, args.max_iter, args.jobs, inner)
                print(f"seed {seed}: {line}", flush=True)
            report(setting, results)
            print()
        print(f"wall time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
