"""`fgl compare` and ``fgl.evaluation.significance``: F1 from per-sequence counts
equals `fgl eval`'s, identical outputs give p = 1, a clearly better system a
small p, systems of equal quality a large one, and the t-intervals are the
textbook ones."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from support.cli import data_files, run
from support.paths import HMM

from fgl.evaluation.evaluate import evaluate
from fgl.evaluation.significance import compare, f1, partition_interval, sequence_counts

TAGS = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]


def _noisy(gold, rate, rng):
    """``gold`` with each tag replaced by a random one with probability ``rate``."""
    return [[t if rng.random() >= rate else TAGS[rng.integers(len(TAGS))] for t in seq]
            for seq in gold]


def _gold(rng, n=300, length=12):
    return [[TAGS[k] for k in rng.integers(len(TAGS), size=length)] for _ in range(n)]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from(["auto", "iob", "plain"]))
def test_f1_from_sequence_counts_is_evaluate_f1(seed, scheme):
    rng = np.random.default_rng(seed)
    gold = _gold(rng, n=int(rng.integers(1, 20)), length=int(rng.integers(1, 8)))
    pred = _noisy(gold, 0.4, rng)
    report = evaluate(gold, pred, scheme)
    counts = sequence_counts(gold, pred, report.scheme)
    assert float(f1(counts.sum(0))) == pytest.approx(report.overall.f1, abs=1e-9)


def test_identical_outputs_give_p_one():
    rng = np.random.default_rng(0)
    gold = _gold(rng)
    pred = _noisy(gold, 0.3, rng)
    result = compare(gold, pred, pred, trials=500)
    assert result.p_value == 1.0 and result.f1_a == result.f1_b


def test_a_clearly_better_system_gets_a_small_p():
    rng = np.random.default_rng(1)
    gold = _gold(rng)
    good, bad = _noisy(gold, 0.1, rng), _noisy(gold, 0.3, rng)
    result = compare(gold, good, bad, trials=2000)
    assert result.f1_a > result.f1_b + 10
    assert result.p_value < 0.001 and result.p_value == (result.at_least_as_far + 1) / 2001


def test_systems_of_equal_quality_are_not_told_apart():
    rng = np.random.default_rng(2)
    gold = _gold(rng)
    ps = [compare(gold, _noisy(gold, 0.3, rng), _noisy(gold, 0.3, rng), trials=1000,
                  seed=s).p_value for s in range(5)]
    assert np.median(ps) > 0.05


def test_partition_intervals_are_t_intervals():
    rng = np.random.default_rng(3)
    gold = _gold(rng, n=40)
    counts = sequence_counts(gold, _noisy(gold, 0.3, rng), "iob")
    mean, half = partition_interval(counts, 4)
    parts = [float(f1(counts[i:i + 10].sum(0))) for i in range(0, 40, 10)]
    assert mean == pytest.approx(np.mean(parts))
    assert half == pytest.approx(stats.t.ppf(0.975, 3) * np.std(parts, ddof=1) / 2)


def test_cli_compare(capsys, tmp_path):
    train, test = data_files(tmp_path)
    models = []
    for name, iters in (("long", "50"), ("short", "2")):
        out = tmp_path / f"{name}.fglm"
        code, _, err = run(capsys, "train", HMM, "--train", train, "-o", out, "-q",
                           "--max-iter", iters)
        assert code == 0, err
        models.append(out)
    code, out, err = run(capsys, "compare", *models, test, "--trials", "300",
                         "--partitions", "4")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("system") and "4 partitions" in lines[0]
    assert lines[1].startswith(str(models[0])) and lines[2].startswith(str(models[1]))
    assert "approximate randomisation: p = " in lines[3] and "of 300 shuffles" in lines[3]
    f1_a, f1_b = (float(line.split()[1]) for line in lines[1:3])
    head = f"difference {models[0]} - {models[1]}: "
    assert lines[3].startswith(head)
    assert abs(float(lines[3][len(head):].split()[0]) - (f1_a - f1_b)) <= 0.011
    code, _, err = run(capsys, "compare", *models, test, "--trials", "0")
    assert code == 2 and "--trials and --partitions must be at least 1" in err
