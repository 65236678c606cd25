"""Sizing before allocation (issue 11): the memory budget and its sizes,
general CRFs refused before they are unrolled, estimates close to what
compiling and training take, the pair templates' streamed unrolling, and
`fgl explain`'s memory line for every engine."""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from support.cli import data_files, run, write_data
from support.paths import HMM, STDLIB

from fgl.api import CRF
from fgl.compile import budget, pairs
from fgl.compile.budget import memory_budget, set_memory_budget
from fgl.compile.footprint import OverBudgetError
from fgl.compile.frontend import Layer
from fgl.compile.unrolling import Unroller, group_instances
from fgl.data.sentence import Sentence
from fgl.engines.parallel import cores
from fgl.errors import FglError, SpecError
from fgl.learn.learner import train_lbfgs
from fgl.sizes import format_size, parse_size

GIB = 1 << 30
SKIP = """columns word, label
output label
template state: y[t] ~ bias, word[t], word[t-1]
template trans: y[t-1..t]
template skip: (y[i], y[j]) where word[i] == word[j] {extra} within document ~ bias, either(word[t])
infer trp(max_iter = 20)
"""


@pytest.fixture(autouse=True)
def no_budget_set():
    """Every test starts, and leaves, with no budget set by the API."""
    previous = set_memory_budget(None)
    yield
    set_memory_budget(previous)


def documents(n_docs: int, length: int, vocab: int, seed: int = 0) -> list[Sentence]:
    """Documents of 20-token sentences over ``vocab`` words, drawn uniformly."""
    rng = np.random.default_rng(seed)
    out, line = [], 1
    for doc in range(n_docs):
        for _ in range(length // 20):
            words = rng.integers(0, vocab, 20)
            rows = [[f"w{x}", "ABC"[x % 3]] for x in words]
            out.append(Sentence(rows, list(range(line, line + 20)), doc, "<gen>"))
            line += 21
    return out


# ---------------------------------------------------------------- sizes and the budget

@pytest.mark.parametrize("text, size", [
    ("4G", 4 * GIB), ("500M", 500 << 20), ("2.5GB", int(2.5 * GIB)), ("1000000", 1_000_000),
    (" 12 kib ", 12 << 10), ("1t", 1 << 40), ("1e9", 10 ** 9), (".5G", GIB // 2)])
def test_sizes_are_read_with_binary_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "G", "abc", "4X", "-1G", "0", "1.2.3", "4 GG", "0.1"])
def test_unreadable_sizes_are_refused_with_the_text_and_the_units(text):
    with pytest.raises(FglError) as e:
        parse_size(text, "--max-memory")
    assert f"--max-memory: cannot read '{text}'" in str(e.value)
    assert "K, M, G or T" in str(e.value)


def test_sizes_print_in_words():
    assert format_size(512) == "512 bytes"
    assert format_size(3.5 * (1 << 20)) == "3.5 MB"
    assert format_size(12 * GIB) == "12 GB"


def test_the_budget_is_the_setting_else_the_environment_else_half_the_memory(monkeypatch):
    monkeypatch.delenv(budget.ENV, raising=False)
    half = memory_budget()
    assert half > 0 and "half the memory" in budget.budget_source()
    monkeypatch.setenv(budget.ENV, "2G")
    assert memory_budget() == 2 * GIB and budget.ENV in budget.budget_source()
    assert set_memory_budget(300 << 20) is None
    assert memory_budget() == 300 << 20 and "--max-memory" in budget.budget_source()
    assert set_memory_budget(None) == 300 << 20
    assert memory_budget() == 2 * GIB
    monkeypatch.setenv(budget.ENV, "lots")
    with pytest.raises(FglError, match=f"{budget.ENV}: cannot read 'lots'"):
        memory_budget()
    with pytest.raises(FglError, match="positive"):
        set_memory_budget(0)


# ---------------------------------------------------------------- general CRFs

def test_a_document_wide_skip_clique_is_refused_before_it_is_unrolled(monkeypatch):
    """All pairs of repeated words in a 6000-token document (the k(k-1)/2
    skip factors of frequent words): millions of factors, counted without
    being made — the refusal takes little memory — and refused at the skip
    template with the estimate, the budget and what to do."""
    data = documents(1, 6000, 10)
    crf = CRF(SKIP.format(extra=""))
    monkeypatch.setenv(budget.ENV, "200M")
    tracemalloc.start()
    try:
        with pytest.raises(SpecError) as e:
            crf.compile([[r[:1] for r in s.rows] for s in data],
                        [[r[1] for r in s.rows] for s in data], [s.doc for s in data])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(e.value)
    assert msg.startswith("<spec>:5:1: template 'skip' makes about "), msg
    factors = int(msg.split("makes about ")[1].split(" factors")[0].replace(",", ""))
    assert factors > 1_000_000
    assert isinstance(e.value, OverBudgetError) and e.value.footprint.total > 1 << 30
    assert e.value.footprint.line().startswith("memory: about ")
    assert "GB for training" in msg and "more than the 200 MB memory budget" in msg
    assert f"as set by {budget.ENV}" in msg and "`and nearest`" in msg
    assert peak < 100 << 20, peak
    set_memory_budget(300 << 20)         # the API's setting overrides the environment
    with pytest.raises(SpecError, match=r"more than the 300 MB memory budget \(as set by --max"):
        crf.compile([[r[:1] for r in s.rows] for s in data],
                    [[r[1] for r in s.rows] for s in data], [s.doc for s in data])


def test_the_estimate_is_close_to_what_compiling_and_training_take():
    """A moderate skip-chain model: the factors counted before unrolling
    are the factors made, the graphs' estimated bytes are their arrays'
    within 2x, and the whole estimate within 2.5x of the peak Python and
    NumPy memory (tracemalloc) of compiling and training."""
    data = documents(4, 400, 20)
    crf = CRF(SKIP.format(extra=""), jobs=1)
    warm, warm_data = crf._compile(documents(1, 40, 10, seed=1))   # numba loads outside the count
    train_lbfgs(warm.program, warm_data, warm.feat_sigma, max_iter=1, jobs=1,
                w0=warm.initial_weights())
    tracemalloc.start()
    try:
        model, encoded = crf._compile(data)
        compiled = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        train_lbfgs(model.program, encoded, model.feat_sigma, max_iter=2, jobs=1,
                    w0=model.initial_weights())
        trained = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    unroller = Unroller.for_spec(crf.spec, Path("."), model.layers)
    census = unroller.census(group_instances(crf.spec, data, True))
    made = np.bincount(encoded.fac_tpl, minlength=3)
    assert census.factors.sum(axis=0).tolist() == made.tolist()
    assert made[2] > 10_000
    fp = model.footprint(encoded, jobs=1)
    arrays = sum(a.nbytes for g in encoded.graphs for a in (
        g.card, g.f_ptr, g.f_var, g.tab_ptr, g.e_fac, g.e_stride, g.msg_ptr, g.v_ptr, g.v_edge,
        g.var_ptr)) + sum(a.nbytes for a in (encoded.fac_ptr, encoded.fac_row, encoded.fac_val,
                                               encoded.fac_tpl))
    assert 0.5 < fp.parts["factor graphs"] / arrays < 2.0
    assert 0.4 < fp.total / max(compiled, trained) < 2.5, (fp.parts, compiled, trained)


def test_sampled_conditions_estimate_the_pairs_they_keep():
    """A `where` test is measured on a sample of the candidates: the
    estimate is near the count unrolling gives."""
    data = documents(4, 400, 20)
    crf = CRF(SKIP.format(extra='and regex(word[i], "^w1")'))
    unroller = Unroller.for_spec(crf.spec, Path("."), [Layer("label", ["A", "B", "C"])])
    instances = group_instances(crf.spec, data, True)
    estimated = unroller.census(instances).factors[:, 2].sum()
    made = sum(f[0] == 2 for inst in instances for f in unroller.factors(inst))
    assert made > 1000 and 0.5 < estimated / made < 2


def _pairs_by_enumeration(tpl, inst, obs) -> list[tuple[int, int]]:
    """Every pair (i < j) within the distance where every condition holds,
    with `nearest` keeping each i's first: the definition, by brute force."""
    n, limit = inst.size, next((int(p.value) for p in tpl.where if p.kind == "distance"),
                               inst.size)
    spans = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + limit + 1))]
    for pred in tpl.where:
        if pred.kind in ("test", "eq", "ne"):
            spans = pairs._kept([pred], inst.cols, n, spans, obs)
    if any(p.kind == "nearest" for p in tpl.where):
        first: dict[int, int] = {}
        for i, j in spans:
            first.setdefault(i, j)
        spans = sorted(first.items())
    return spans


@pytest.mark.parametrize("where", [
    "word[i] == word[j]", "word[i] == word[j] and nearest",
    'word[i] == word[j] and regex(word[i], "^w[12]") and nearest',
    'regex(word[i], "^w1") and word[j] != word[i] and j - i <= 7 and nearest',
    "word[i] == word[j] and j - i <= 30",
    'regex(word[j], "^w[34]") and j - i <= 9 and nearest',
    "word[i+1] == word[j-1] and word[i-1] != word[j+1]",
    'word[i] == word[j] and regex(word[i-1] & word[j+1], "w1") and nearest'])
def test_streamed_pairs_are_the_pairs_the_conditions_define(monkeypatch, where):
    """Conditions on one end tested per position, the others on a chunk of
    candidates at a time (here 50, so an i's candidates span chunks): the
    pairs are those of the definition."""
    monkeypatch.setattr(pairs, "CHUNK", 50)
    spec = SKIP.replace("where word[i] == word[j] {extra}", f"where {where}")
    crf = CRF(spec)
    unroller = Unroller.for_spec(crf.spec, Path("."), [Layer("label", ["A", "B", "C"])])
    inst = group_instances(crf.spec, documents(1, 200, 6), True)[0]
    tpl = crf.spec.templates[2]
    got = pairs.linked_pairs(tpl, inst.cols, inst.size, None, unroller.obs)
    assert got and got == _pairs_by_enumeration(tpl, inst, unroller.obs)


# ---------------------------------------------------------------- explain

def test_explain_prints_the_memory_estimate_for_every_engine(capsys, tmp_path):
    train, _ = data_files(tmp_path)
    skip = tmp_path / "skip.fgl"
    skip.write_text(SKIP.format(extra="and nearest"), encoding="utf-8")
    for spec in (HMM, STDLIB / "semi_crf.fgl", skip):
        code, out, err = run(capsys, "explain", spec, "--train", train)
        assert code == 0, err
        line = next(x for x in out.splitlines() if x.startswith("memory: about "))
        assert "for training (budget " in line and "features" in line, line


def test_explain_over_the_budget_says_so_without_unrolling(capsys, tmp_path, monkeypatch):
    train = write_data(tmp_path / "doc.txt", documents(1, 6000, 10))
    skip = tmp_path / "skip.fgl"
    skip.write_text(SKIP.format(extra=""), encoding="utf-8")
    monkeypatch.setenv(budget.ENV, "100M")
    code, out, err = run(capsys, "explain", skip, "--train", train)
    assert code == 2 and "Traceback" not in err
    assert f"{skip}:5:1: template 'skip' makes about" in err
    assert "more than the 100 MB memory budget" in err


def test_max_memory_on_the_command_line_refuses_and_is_then_lifted(capsys, tmp_path):
    """`--max-memory` is the budget while its command runs, named in the
    refusal, and gone afterwards."""
    train = write_data(tmp_path / "doc.txt", documents(1, 6000, 10))
    skip = tmp_path / "skip.fgl"
    skip.write_text(SKIP.format(extra=""), encoding="utf-8")
    out = tmp_path / "m.fglm"
    code, _, err = run(capsys, "train", skip, "--train", train, "-o", out, "--max-memory", "50M")
    assert code == 2 and "Traceback" not in err and not out.exists()
    assert f"{skip}:5:1: template 'skip' makes about" in err
    assert "50 MB memory budget" in err and "--max-memory" in err
    assert memory_budget() > 50 << 20          # restored after the command
    code, _, err = run(capsys, "train", HMM, "--train", data_files(tmp_path)[0], "-o", out,
                       "-q", "--max-iter", "2", "--max-memory", "2G")
    assert code == 0, err
    code, _, err = run(capsys, "explain", HMM, "--max-memory", "lots")
    assert code == 2 and "--max-memory: cannot read 'lots' as a size" in err


@pytest.mark.skipif(cores() < 2, reason="needs two cores: jobs are capped at the core count")
def test_tagging_checks_the_memory_of_the_threads_the_crf_was_given():
    """The check before a factor-graph model encodes data counts the scratch
    of the threads that will run on it: ``CRF(jobs=)``'s, not the spec's."""
    train = documents(2, 200, 30)
    X, y = [[r[:1] for r in s.rows] for s in train], [[r[1] for r in s.rows] for s in train]
    docs = [s.doc for s in train]
    crf = CRF(SKIP.format(extra="and nearest"), jobs=1, max_iter=3).fit(X, y, docs)
    test = documents(2, 2000, 30, seed=1)
    Xt, dt = [[r[:1] for r in s.rows] for s in test], [s.doc for s in test]
    totals = {}
    set_memory_budget(1)
    for jobs in (1, 2):
        crf.jobs = jobs
        with pytest.raises(OverBudgetError) as e:
            crf.predict(Xt, dt)
        totals[jobs] = e.value.footprint.total
    assert totals[2] > totals[1]     # two instances' scratch at once, not one
    set_memory_budget(int((totals[1] + totals[2]) / 2))
    crf.jobs = 1
    assert len(crf.predict(Xt, dt)) == len(Xt)
    crf.jobs = 2
    with pytest.raises(OverBudgetError):
        crf.predict(Xt, dt)
