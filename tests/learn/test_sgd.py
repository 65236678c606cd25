"""Stochastic gradient training (``fgl.learn.sgd``, the trainer sgd): every
engine's runs of instances (``Program.instance_runs``) add up to its batch
loss and gradient and read the weights at their support only; SGD lowers
the objective; a stopped run resumed from its checkpoint reaches the
uninterrupted run's bits; ``jobs`` changes nothing; the trainer's settings
are refused elsewhere and the L-BFGS ones under it."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import run
from support.paths import HMM
from support.sentences import inputs_and_labels, segment_data, small_sentences
from support.specs import CHAIN_FORMAT, LATENT, SKIP_EQUAL_WORDS

from fgl import CRF, stopping
from fgl.errors import FglError, SpecError, TrainingError
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.objective import Objective
from fgl.learn.sgd import train_sgd
from fgl.learn.sgd_state import SGDState
from fgl.registry import compile_model

SEMI = """
columns word, label
output label
segments max 3 from bio
obs inside = word[u..v]
template seg: s[j] ~ bias, inside, word[u-1]
template trans: s[j-1..j]
"""
SKIP_TRW = CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="infer trw(tol = 1e-10, "
                                                               "max_iter = 2000)")
LATENT_TRW = LATENT.replace("infer exact(max_states = 300000)",
                            "infer trw(tol = 1e-10, max_iter = 2000)").replace(
    "train { sigma = 2 }", "")
ENGINES = {"chain": CHAIN_FORMAT.format(extra="", infer=""), "semi-Markov": SEMI,
           "skip chain (TRW)": SKIP_TRW, "hidden (exact)": LATENT, "hidden (TRW)": LATENT_TRW}


def _spec(text: str, train: str = "") -> str:
    return text + ("\n" + train + "\n" if train else "")


@lru_cache(maxsize=None)
def _compiled(name: str):
    data = small_sentences(n=7, length=5, vocab=6, seed=3)
    return compile_model(validate(parse_spec(ENGINES[name], "<test>")), data)


def _batch(program, data, w: np.ndarray) -> tuple[float, np.ndarray]:
    """Σ loss and its gradient (no prior) over the whole batch."""
    model = program.expectations(w, data, 1)
    if program.has_hidden:
        gold = program.clamped_expectations(w, data, 1)
        return model.log_z - gold.log_z, model.counts - gold.counts
    counts = program.gold_counts(data)
    return model.log_z - float(w @ counts), model.counts - counts


@pytest.mark.parametrize("name", list(ENGINES))
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.floats(0.05, 1.5), batch=st.integers(1, 3))
def test_runs_add_up_to_the_batch_and_read_their_support_only(name, seed, scale, batch):
    model, data = _compiled(name)
    program = model.program
    w = np.random.default_rng(seed).normal(size=program.n_features) * scale
    runs = program.instance_runs(data)
    loss, grad = 0.0, np.zeros_like(w)
    for i0 in range(0, data.n_sequences, batch):
        i1 = min(i0 + batch, data.n_sequences)
        support = runs.support(i0, i1)
        assert len(np.unique(support)) == len(support)
        masked = np.full_like(w, np.nan)   # any read outside the support poisons the run
        masked[support] = w[support]
        got = runs.gradient(masked, i0, i1)
        np.testing.assert_array_equal(got.index, support)
        loss += got.loss
        np.add.at(grad, got.index, got.values)
    want_loss, want_grad = _batch(program, data, w)
    tight = 1e-9 if program.warm_start(data) is None else 1e-6   # (BP: to its tolerance)
    assert loss == pytest.approx(want_loss, rel=tight, abs=tight)
    np.testing.assert_allclose(grad, want_grad, rtol=tight, atol=tight)


def test_factor_graph_subset_is_its_instances_alone():
    model, data = _compiled("skip chain (TRW)")
    program = model.program
    w = np.random.default_rng(0).normal(size=program.n_features) * 0.3
    sub = data.subset(2, 5)
    assert sub.n_sequences == 3 and sub.graphs == data.graphs[2:5]
    whole = program.log_partition(w, data)
    np.testing.assert_allclose(program.log_partition(w, sub), whole[2:5], rtol=1e-8)


@pytest.mark.parametrize("name", ["chain", "skip chain (TRW)", "hidden (exact)"])
def test_sgd_lowers_the_objective(name):
    model, data = _compiled(name)
    program = model.program
    objective = Objective(program, data, model.feat_sigma, jobs=1)
    w0 = np.zeros(program.n_features)
    w, log = train_sgd(program, data, model.feat_sigma, epochs=6, period=100)
    assert objective(w)[0] < 0.8 * objective(w0)[0]
    rows = log.iterations
    assert [r["iteration"] for r in rows] == list(range(1, 7))
    assert rows[-1]["objective"] < rows[0]["objective"]
    assert rows[-1]["learning_rate"] < rows[0]["eta0"]   # the rate falls


def test_calibration_tries_rates_a_factor_two_apart_and_keeps_the_best():
    model, data = _compiled("chain")
    seen = []
    _, log = train_sgd(model.program, data, model.feat_sigma, epochs=1, progress=seen.append)
    trials = [r for r in seen if "calibration" in r]
    rates = sorted(r["calibration"] for r in trials)
    assert len(trials) >= 2 and all(b == pytest.approx(2 * a) for a, b in zip(rates, rates[1:]))
    best = min(trials, key=lambda r: r["objective"])
    assert log.iterations[0]["eta0"] == best["calibration"]


def test_a_given_learning_rate_skips_calibration():
    model, data = _compiled("chain")
    seen = []
    train_sgd(model.program, data, model.feat_sigma, epochs=2, learning_rate=0.05,
              progress=seen.append)
    assert not [r for r in seen if "calibration" in r]
    assert seen[0]["eta0"] == 0.05


def test_the_stopping_rule_ends_training():
    model, data = _compiled("chain")
    _, log = train_sgd(model.program, data, model.feat_sigma, epochs=200, period=2, delta=1e-3)
    assert log.converged and "the best objective improved by" in log.message
    assert len(log.iterations) < 200
    _, log = train_sgd(model.program, data, model.feat_sigma, epochs=5, period=1, delta=0)
    assert len(log.iterations) == 5 and not log.converged   # (delta 0: every epoch)


SGD_TRAIN = "train { trainer = sgd  sigma = 1  epochs = %d  learning_rate = 0.05 }"


@pytest.mark.parametrize("text", [HMM.read_text(encoding="utf-8"), SKIP_TRW],
                         ids=["chain", "skip chain (TRW)"])
def test_resume_reaches_the_uninterrupted_weights(tmp_path, text):
    text = text[:text.index("train {")] if "train {" in text else text
    X, y = inputs_and_labels(segment_data(n_train=12)[0])
    full = CRF(_spec(text, SGD_TRAIN % 4), jobs=1).fit(X, y)
    ck = tmp_path / "ck.fglm"
    CRF(_spec(text, SGD_TRAIN % 4), max_iter=2, jobs=1, checkpoint=ck).fit(X, y)
    resumed = CRF(_spec(text, SGD_TRAIN % 4), jobs=1).fit(X, y, resume=ck)
    assert [r["iteration"] for r in resumed.training_log.iterations] == [1, 2, 3, 4]
    if "trw" in text:   # BP's messages are not saved: the same fixed points, to BP's tol
        np.testing.assert_allclose(resumed.weights, full.weights, rtol=0, atol=1e-8)
    else:
        np.testing.assert_array_equal(resumed.weights, full.weights)


def test_a_stop_inside_an_epoch_resumes_to_the_same_bits(monkeypatch):
    model, data = _compiled("chain")
    sigma = model.feat_sigma
    full, _ = train_sgd(model.program, data, sigma, epochs=3, learning_rate=0.1)
    monkeypatch.setattr(stopping, "patient", lambda rule, grace=0: rule)   # (no grace)
    calls, saved = [0], []

    def stop_after_ten_runs() -> str | None:
        calls[0] += 1
        return "stopped here" if calls[0] > 10 else None

    def keep(state: SGDState, final: bool) -> None:   # what a checkpoint file holds
        saved.append(SGDState.restore(state.weights, state.meta(), state.arrays()))

    stopped, log = train_sgd(model.program, data, sigma, epochs=3, learning_rate=0.1,
                             should_stop=stop_after_ten_runs, checkpoint=keep)
    # inside the second epoch: its steps kept in the weights, its start in the checkpoint
    assert log.message == "stopped here" and [s.epoch for s in saved] == [1, 1]
    assert len(log.iterations) == 1 and not np.array_equal(stopped, saved[-1].weights)
    resumed, _ = train_sgd(model.program, data, sigma, epochs=3, learning_rate=0.1,
                           resume=saved[-1])
    np.testing.assert_array_equal(resumed, full)


@pytest.mark.parametrize("text", [CHAIN_FORMAT.format(extra="", infer=""), SKIP_TRW],
                         ids=["chain", "skip chain (TRW)"])
def test_jobs_do_not_change_the_weights(text):
    X, y = inputs_and_labels(segment_data(n_train=10)[0])
    weights = [CRF(_spec(text, "train { trainer = sgd  epochs = 2  batch = 2 }"),
                   jobs=jobs).fit(X, y).weights for jobs in (1, 2, 3)]
    np.testing.assert_array_equal(weights[0], weights[1])
    np.testing.assert_array_equal(weights[0], weights[2])


def test_settings_are_refused_across_trainers(capsys, tmp_path):
    X, y = inputs_and_labels(segment_data(n_train=5)[0])
    chain = CHAIN_FORMAT.format(extra="", infer="")
    for key in ("learning_rate = 0.1", "period = 3", "delta = 0.01"):
        with pytest.raises(SpecError, match=f"`{key.split()[0]}` is not read by trainer lbfgs"
                                            ".*read by trainer sgd only"):
            CRF(_spec(chain, f"train {{ {key} }}")).fit(X, y)
        with pytest.raises(SpecError, match=f"`{key.split()[0]}` is not read by trainer "
                                            "perceptron"):
            CRF(_spec(chain, f"train {{ trainer = perceptron  {key} }}")).fit(X, y)
    for key in ("max_iter = 5", "tol = 1e-3", "l1 = 1", "objective = piecewise",
                "bp_start = warm"):
        with pytest.raises(SpecError, match=f"`{key.split()[0]}` is not read by trainer sgd"):
            CRF(_spec(chain, f"train {{ trainer = sgd  {key} }}")).fit(X, y)
    with pytest.raises(FglError, match=r"takes no tol, l1 \(L-BFGS settings\)"):
        CRF(_spec(chain, "train { trainer = sgd }"), l1=1.0, tol=1e-3).fit(X, y)
    spec = tmp_path / "sgd.fgl"
    spec.write_text(_spec(chain, "train { trainer = sgd  tol = 1e-3  learning_rate = 0.1 }"),
                    encoding="utf-8")
    code, out, err = run(capsys, "check", spec)
    assert code != 0 and "`tol` is not read by trainer sgd" in out + err
    assert "learning_rate" not in out + err


def test_max_iter_bounds_the_epochs():
    X, y = inputs_and_labels(segment_data(n_train=8)[0])
    log = CRF(_spec(CHAIN_FORMAT.format(extra="", infer=""), "train { trainer = sgd }"),
              max_iter=2, jobs=1).fit(X, y).training_log
    assert len(log.iterations) == 2 and log.message == "reached the epoch limit (2)"


@pytest.mark.parametrize("text", [CHAIN_FORMAT.format(extra="", infer=""), SKIP_TRW],
                         ids=["chain", "skip chain (TRW)"])
def test_a_rate_that_overflows_ends_in_a_training_error(text):
    """Weights past the doubles end the run with the trainers' divergence
    error, on the exact engine and under BP (which refuses their potentials)."""
    X, y = inputs_and_labels(segment_data(n_train=10)[0])
    with pytest.raises(TrainingError, match="training diverged"):
        CRF(_spec(text, "train { trainer = sgd  learning_rate = 1e308  epochs = 2  "
                        "start = zero }"),
            jobs=1).fit(X, y)
