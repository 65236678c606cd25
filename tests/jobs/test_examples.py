"""Every example script runs, at a reduced size, and prints what it promises.

Each script under examples/ is run as a user runs it (``python examples/X.py``
with its reduced-size flags) in a subprocess, and its output is checked for
its table. Scripts that read corpora from ../shared/data skip when the
corpus is absent (CI has none). Only bench_conll2000.py and
bench_sklearn_crfsuite.py need an optional peer (python-crfsuite,
sklearn-crfsuite: the ``bench`` extra); they skip without it.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO, STDLIB, shared_dir

EXAMPLES = REPO / "examples"
SHARED = shared_dir() / "data"


# script: (arguments, corpus directory it needs or None, patterns the output must match)
RUNS: dict[str, tuple[list[str], str | None, list[str]]] = {
    "structures.py": (["--quick"], None, [
        r"model\s+spec lines\s+engine", r"linear_chain\s+\d+", r"high_order\s+\d+",
        r"semi_markov\s+\d+", r"skip_chain\s+\d+"]),
    "maxent_vs_chain.py": (["--quick"], None, [
        r"(?m)^maxent\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$",
        r"(?m)^linear_chain\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$"]),
    "relational_graphs.py": (["--quick"], None, [
        r"per-paper maxent\s+factor graph", r"relational CRF\s+factor graph\s+[\d.]+\s+[\d.]+%"]),
    "markov_orders.py": (["--quick"], None, [
        r"max order", r"(?m)^\s+1\s+\d+.*%$", r"(?m)^\s+3\s+\d+.*%$"]),
    "segment_models.py": (["--quick", "--max-iter", "5"], None, [
        r"(?m)^C1\s", r"(?m)^C3\s", r"(?m)^SC1\s", r"(?m)^SC2\s"]),
    "bench_high_order.py": (["--quick"], None, [r"Table 1", r"Table 2", r"max\|dlogZ\|"]),
    "bench_nbest.py": (["--quick"], None, [
        r"(?m)^first order \(\d+ forward states", r"(?m)^second order \(\d+ forward states",
        r"(?m)^Viterbi \(predict\)\s+[\d.]+\s+1\.00x$",
        r"(?m)^predict_probability\s+[\d.]+\s+[\d.]+x$",
        r"(?m)^predict_nbest k=50\s+[\d.]+\s+[\d.]+x$"]),
    "bench_semimarkov.py": (["--quick"], None, [
        r"\(a\) maximum segment length", r"\(b\) segment-pattern order", r"\(c\) s/eval"]),
    "bench_dask.py": (["--quick"], None, [
        r"workers\s+compile s\s+eval s", r"(?m)^\s+1\s+[\d.]+\s+[\d.]+",
        r"(?m)^\s+2\s+[\d.]+\s+[\d.]+", r"projected for 1e\+08 tokens on 100 machines"]),
    "bench_loopy.py": (["--quick"], None, [
        r"linear / chain engine", r"skip / TRP", r"skip / linear per evaluation",
        r"fgl flooding"]),
    "bench_conll2000.py": (["--quick", "--max-iter", "3", "--alternate", "1", "--alternate-iter",
                            "2"], "conll2000", [
        r"features\s+[\d,]+\s+[\d,]+", r"iterations\s+3\s+3",
        r"(?m)^median\s+[\d.]+\s+[\d.]+\s+[\d.]+.*x$"]),
    "bench_sklearn_crfsuite.py": (["--quick", "--max-iter", "3", "--rounds", "1"], "conll2002", [
        r"features \(weights\)\s+([\d,]+)\s+\1", r"iterations\s+3\s+3",
        r"fgl / sklearn-crfsuite: fit, predict, RSS\s+[\d.]+x, [\d.]+x, [\d.]+x"]),
    # peers run where found (CRF++, Wapiti binaries; python-crfsuite), else a note says so
    "bench_peers.py": (["--quick"], "conll2000", [
        r"tool\s+train s\s+tag s\s+peak MB\s+F1",
        r"(?m)^fgl\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+\.\d\d\s+1\.00x\s+1\.00x$",
        r"(?m)^(?:CRFsuite\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+\.\d\d\s+[\d.]+x\s+[\d.]+x$"
        r"|note: CRFsuite skipped)",
        r"(?m)^(?:CRF\+\+\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+\.\d\d\s|note: CRF\+\+ skipped)",
        r"(?m)^(?:Wapiti\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+\.\d\d\s|note: Wapiti skipped)"]),
    "profile_chain.py": (["--sentences", "300", "--train-iter", "1", "--repeats", "1",
                          "--bandwidth-mb", "32"], "conll2000", [
        r"scoring +[0-9.]+", r"counting +[0-9.]+", r"GB/s on one thread"]),
    "profile_cold_start.py": (["--usual-cache", "--sentences", "20", "--max-iter", "3",
                               "--top", "5"], None, [
        r"cold: fit \+ predict +fit +[0-9.]+", r"numba compilations by exclusive",
        r"python -X importtime"]),
    "profile_trw.py": (["--train-docs", "10", "--train-iter", "2", "--repeats", "1",
                        "--reference-sweeps", "200"], "conll2003", [
        r"factor tables +[0-9.]+ +[0-9.]+", r"(?m)^sweeps +[0-9.]+ +[0-9.]+",
        r"linear chain, whole +[0-9.]+", r"whole / linear chain: cold [0-9.]+x, warm [0-9.]+x",
        r"(?m)^ +\d+ +\d+ +\d+ +[0-9.]+ +[0-9.]+ +1e-03 +\d+ +[0-9.e+-]+ +[0-9.e+-]+$"]),
    "learners_conll2000.py": (["--quick", "--max-iter", "3", "--epochs", "1"], "conll2000", [
        r"L2 \(L-BFGS\)\s+\d+\.\d+", r"averaged perceptron\s+\d+\.\d+"]),
    "punctuation_table6.py": (["--quick", "--models", "C1,SC1", "--test-texts", "100",
                               "--max-iter", "3"], "punc", [
        r"(?m)^C1\s+\d+\.\d+\s+66\.21", r"(?m)^SC1\s+\d+\.\d+\s+66\.73",
        r"SC1 over C1: peak \d+\.\d\dx \(\d+ / \d+ MB\)"]),
    "feature_induction_ner.py": (["--quick", "--train-sentences", "200", "--dev-sentences",
                                  "200", "--rounds", "1", "--per-round", "50",
                                  "--max-iter", "5"], "conll2003", [
        r"word identity\s+\d+\.\d+", r"fixed conjunctions\s+\d+\.\d+",
        r"induced\s+\d+\.\d+"]),
    "bench_sgd.py": (["--quick", "--max-iter", "3", "--epochs", "1", "--batch", "4",
                      "--no-crfsuite"], "conll2000", [
        r"(?m)^fgl lbfgs\s+[\d.]+\s+3 iterations", r"(?m)^fgl sgd, batch 4\s+[\d.]+\s+1 epochs",
        r"fgl sgd, batch 4 / fgl lbfgs: time [\d.]+x, F1 [+-]\d+\.\d\d"]),
    "crn_vs_crf.py": (["--quick"], "conll2002", [r"\| CRF \|", r"\| ECRN \|", r"p = "]),
    "skip_chain_ner.py": (["--quick", "--corpus", "ned", "--pairs", "all"], "conll2002", [
        r"(?m)^linear\s+\d", r"(?m)^all/trp\s+\d", r"(?m)^all/trw\s+\d",
        r"all/trw - linear: overall F1"]),
    "bench_mention_aggregates.py": (["--corpus", "ned", "--train-docs", "5", "--test-docs", "5",
                                     "--max-iter", "5", "--sigma", "3"], "conll2002", [
        r"(?m)^linear chain\s+[\d.]+\s+\d+", r"(?m)^chain \+ mentions\s+[\d.]+\s+\d+",
        r"(?m)^\.\.\. own sigma 3\s+[\d.]+\s+\d+"]),
    "bench_skip_training.py": (["--quick", "--corpus", "announcements"], None, [
        r"(?m)^linear/lbfgs\s+[\d.]+\s+1\.00\s+10\s+\d+",
        r"(?m)^skip/lbfgs\s+[\d.]+\s+[\d.]+\s+10\s",
        r"(?m)^skip/sgd\s+[\d.]+\s+[\d.]+\s+10\s+0\s",
        r"(?m)^skip/lbfgs .*\n  time: compile [\d.]+s; exact part first [\d.]+s \(\d+ "
        r"iterations\); evaluations [\d.]+s \(\d+ at iterates"]),
    "skip_chain_conll2002.py": (["--quick"], "conll2002", [
        r"(?m)^linear-chain\s+\d", r"(?m)^skip-chain\s+\d", r"inconsistently mislabelled"]),
    # every model's row in both settings' tables, its accuracy a percentage (0.00-100.00)
    "collective_classification.py": (["--quick", "--seeds", "2"], "citeseer", [
        *(rf"(?ms)^\({s}\) .*?^{m} +(?:100\.00|\d{{1,2}}\.\d\d) {end}"
          for s, end in (("a", r".*?^== \(b\)"), ("b", ""))
          for m in ("maxent", "ICA", "CRF/TRP", "CRF/TRW")),
        r"CRF/TRW vs maxent: [+-]\d+\.\d\d points, p = [\d.]+"]),
    # a generated graph: every model's row, sigma chosen, accuracies 0-100
    "planetoid.py": (["--quick"], None, [
        *(rf"(?m)^{m} +1 +\d+\.\d +\d+\.\d +[\d.]+ +\d+  "
          for m in ("maxent", "CRF", r"CRF\+aggregates", "ICA")),
        r"published on this split \(test %\): GCN 70\.3, ICA 69\.1, GMNN 73\.0",
        r"vector column: 300 nodes x 500 dimensions .* peak RSS \d+ MB"]),
}
NOT_SCRIPTS = {"measure.py": "timing and memory helpers the bench_*.py scripts import"}


def test_every_example_is_run_here() -> None:
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    assert scripts == set(RUNS) | set(NOT_SCRIPTS), (
        "an example without a run in tests/jobs/test_examples.py, or a run of a removed one")


@pytest.mark.parametrize("script", sorted(RUNS))
def test_example_runs_at_reduced_size(script: str) -> None:
    args, corpus, patterns = RUNS[script]
    if corpus is not None and not (SHARED / corpus).is_dir():
        pytest.skip(f"{script} reads {SHARED / corpus}, which is absent")
    if script == "bench_conll2000.py":
        pytest.importorskip("pycrfsuite", reason="the CRFsuite side needs the bench extra")
    if script == "bench_sklearn_crfsuite.py":
        pytest.importorskip("sklearn_crfsuite", reason="its peer needs the bench extra")
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for pattern in patterns:
        assert re.search(pattern, proc.stdout), f"{pattern!r} not in the output:\n{proc.stdout}"


def test_citation_graphs_read_back_and_link_papers_of_one_topic(tmp_path: Path) -> None:
    from fgl.api import CRF
    from fgl.datasets.synth import citation_graphs, write_citation_graphs

    assert citation_graphs(n_graphs=3, seed=4) == citation_graphs(n_graphs=3, seed=4)
    assert citation_graphs(n_graphs=3, seed=4) != citation_graphs(n_graphs=3, seed=5)
    path = write_citation_graphs(tmp_path / "g.jsonl", n_graphs=60, n_papers=10, seed=1)
    graphs = CRF(STDLIB / "relational.fgl").read(path)
    assert len(graphs) == 60 and all(len(g.rows) == 10 for g in graphs)
    same = other = 0
    for g in graphs:
        labels = g.column(-1)
        for a, b, kind in g.edges:
            assert kind == "cites"
            same += labels[a] == labels[b]
            other += labels[a] != labels[b]
    assert same > 4 * other > 0
    with pytest.raises(ValueError, match="topical"):
        citation_graphs(topical=1.5)
