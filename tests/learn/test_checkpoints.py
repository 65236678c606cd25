"""Checkpoints and resume (``fgl.learn.checkpoint``): a run stopped and
resumed from its checkpoint reaches the weights of the uninterrupted run —
for L-BFGS alone, for the chain engine and for BP-trained general CRFs,
through the API and through a SIGTERM'd `fgl train` — and a checkpoint of
another spec, other data or other settings, or an edited one, is refused."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import rosen, rosen_der
from support.cli import data_files, run, train_until_sigterm
from support.paths import HMM, REPO
from support.sentences import inputs_and_labels, segment_data, training_sentences
from support.specs import CHAIN_FORMAT, SKIP_EQUAL_WORDS, TRAINED_CHAIN_FORMAT

from fgl import CRF
from fgl.errors import FglError, ModelFileError
from fgl.learn.checkpoint import load_checkpoint
from fgl.learn.lbfgs import History, LBFGSState, minimize_lbfgs
from fgl.learn.learner import train_lbfgs


def _rosen(x):
    return float(rosen(x)), rosen_der(x)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 30), st.integers(2, 8), st.booleans())
def test_lbfgs_resumed_from_any_iteration_takes_the_same_steps(k, n, shaped):
    x0 = np.linspace(-1.5, 1.2, n)
    scale = np.linspace(0.2, 1.0, n) if shaped else None   # (H₀ of a shape: pairs scaled)
    full = minimize_lbfgs(_rosen, x0, max_iter=40, scale=scale)
    saved = []

    def keep(state: LBFGSState) -> None:   # what a checkpoint file would hold
        if state.iteration == k:
            saved.append(LBFGSState(state.x.copy(), state.f, state.g.copy(), state.iteration,
                                    state.evaluations,
                                    History.restore(6, n, state.history.arrays()),
                                    list(state.recoveries),
                                    None if state.direction is None else state.direction.copy()))

    minimize_lbfgs(_rosen, x0, max_iter=40, checkpoint=keep, scale=scale)
    if not saved:       # converged before iteration k
        assert full.iterations < k
        return
    resumed = minimize_lbfgs(_rosen, None, max_iter=40, resume=saved[0], scale=scale)
    assert (resumed.iterations, resumed.evaluations) == (full.iterations, full.evaluations)
    np.testing.assert_array_equal(resumed.x, full.x)


@pytest.mark.parametrize("spec", [str(HMM), CHAIN_FORMAT.format(
    extra=SKIP_EQUAL_WORDS, infer="infer trp(tol = 1e-8, max_iter = 200)"),
    TRAINED_CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="infer trw(tol = 1e-6, max_iter = "
                                "500)", train="train { bp_start = cold }")],
    ids=["chain", "skip-chain", "skip-chain-trw"])
def test_api_resume_reaches_the_uninterrupted_weights(tmp_path, spec):
    X, y = inputs_and_labels(training_sentences())
    total = 120 if "trw" in spec else 25
    full = CRF(spec, max_iter=total, tol=1e-12, jobs=1).fit(X, y)
    refined = [r["iteration"] for r in full.training_log.iterations if "refined" in r]
    assert bool(refined) == ("trw" in spec), refined
    # TRW: resumed after a refinement (where they fall depends on the machine's rounding),
    # the last one that leaves iterations after it, from the BP tolerance saved
    n_iter = len(full.training_log.iterations)
    room = [r for r in refined if r + 2 < n_iter]
    assert room or not refined, (refined, full.training_log.message)
    stop = room[-1] + 2 if refined else 9
    ck = tmp_path / "ck.fglm"
    part = CRF(spec, max_iter=stop, tol=1e-12, jobs=1, checkpoint=ck, checkpoint_every=4
               ).fit(X, y)
    _, state = load_checkpoint(ck)
    assert state.lbfgs.iteration == stop and len(state.rows) == stop   # saved where it stopped
    np.testing.assert_array_equal(state.lbfgs.x, part.weights)
    resumed = CRF(spec, max_iter=total, tol=1e-12, jobs=1).fit(X, y, resume=ck)
    assert len(resumed.training_log.iterations) == len(full.training_log.iterations)
    assert resumed.training_log.evaluations == full.training_log.evaluations
    assert resumed.training_log.objective == pytest.approx(full.training_log.objective,
                                                           rel=1e-12)
    np.testing.assert_allclose(resumed.weights, full.weights, rtol=0, atol=1e-12)


def test_warm_trw_resumes_to_the_same_fixed_points(tmp_path):
    """Under ``bp_start = warm`` BP's messages are not saved: a resumed run
    restarts BP cold from the checkpoint's iterate, which the resume check
    accepts to BP's tolerance, and since TRW's fixed point is unique the run
    continues along the same path, to that tolerance."""
    X, y = inputs_and_labels(training_sentences())
    spec = TRAINED_CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="infer trw(tol = 1e-9)",
                                       train="train { bp_start = warm }")
    full = CRF(spec, max_iter=30, tol=1e-12, jobs=1).fit(X, y)
    ck = tmp_path / "ck.fglm"
    CRF(spec, max_iter=12, tol=1e-12, jobs=1, checkpoint=ck, checkpoint_every=4).fit(X, y)
    resumed = CRF(spec, max_iter=30, tol=1e-12, jobs=1).fit(X, y, resume=ck)
    assert len(resumed.training_log.iterations) == len(full.training_log.iterations)
    assert resumed.training_log.objective == pytest.approx(full.training_log.objective,
                                                           rel=1e-7)
    np.testing.assert_allclose(resumed.weights, full.weights, atol=1e-4)


def test_a_default_trw_run_resumes_from_its_checkpoint(tmp_path):
    """TRW's default start is warm (``bp_start = auto``): a checkpoint of a
    run mid-way, at its loose starting tolerance, is resumed — BP restarted
    cold at the saved weights lands within its tolerance of the saved
    objective — and training converges where the uninterrupted run does, to
    BP's precision."""
    X, y = inputs_and_labels(training_sentences())
    # (from zero: test_api_resume_reaches_the_uninterrupted_weights resumes runs that start
    # from their exact part; sigma 3: under the default 10 these 40 sentences are nearly
    # separable, and near the optimum whether a line search succeeds turns on rounding — with
    # 24 correction pairs one run ended by the rule, one with its recoveries exhausted at a
    # lower objective)
    spec = CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="infer trw") + \
        "train { start = zero  sigma = 3 }\n"
    full = CRF(spec, max_iter=300, jobs=1).fit(X, y)
    assert full.training_log.converged, full.training_log.message
    ck = tmp_path / "ck.fglm"
    CRF(spec, max_iter=8, jobs=1, checkpoint=ck, checkpoint_every=4).fit(X, y)
    resumed = CRF(spec, max_iter=300, jobs=1).fit(X, y, resume=ck)
    assert resumed.training_log.converged, resumed.training_log.message
    assert resumed.training_log.objective == pytest.approx(full.training_log.objective,
                                                           rel=1e-4)


def test_a_checkpoint_written_mid_run_holds_the_next_direction_and_resumes_exactly(
        tmp_path, monkeypatch):
    from fgl.learn.run import TrainingRun

    X, y = inputs_and_labels(training_sentences())
    ck, mid = tmp_path / "ck.fglm", tmp_path / "mid.fglm"
    original = TrainingRun.checkpointer
    kept = {}

    def spy(run, model):
        save = original(run, model)

        def wrapped(state, final):
            save(state, final)
            if state.lbfgs.iteration == 8:   # (another iteration follows: it has a direction)
                mid.write_bytes(ck.read_bytes())
                kept["direction"] = state.lbfgs.direction.copy()
                kept["gradient"] = state.lbfgs.gradient().copy()
        return wrapped
    monkeypatch.setattr(TrainingRun, "checkpointer", spy)
    CRF(str(HMM), max_iter=9, tol=1e-12, jobs=1, checkpoint=ck, checkpoint_every=4).fit(X, y)
    monkeypatch.undo()
    _, state = load_checkpoint(mid)
    assert state.lbfgs.iteration == 8 and len(state.lbfgs.history.order) == 5   # m - 1 pairs
    np.testing.assert_array_equal(state.lbfgs.direction, kept["direction"])   # the same bits
    np.testing.assert_array_equal(state.lbfgs.gradient(), kept["gradient"])
    full = CRF(str(HMM), max_iter=25, tol=1e-12, jobs=1).fit(X, y)
    resumed = CRF(str(HMM), max_iter=25, tol=1e-12, jobs=1).fit(X, y, resume=mid)
    assert resumed.training_log.evaluations == full.training_log.evaluations
    np.testing.assert_array_equal(resumed.weights, full.weights)


def test_checkpoints_are_written_every_n_iterations(tmp_path, monkeypatch):
    from fgl.learn.run import TrainingRun

    X, y = inputs_and_labels(training_sentences())
    ck = tmp_path / "ck.fglm"
    seen = []
    crf = CRF(str(HMM), max_iter=11, tol=1e-12, jobs=1, checkpoint=ck, checkpoint_every=5)
    original = TrainingRun.checkpointer

    def spy(run, model):
        save = original(run, model)

        def wrapped(state, final):
            before = ck.stat().st_mtime_ns if ck.exists() else None
            save(state, final)
            if ck.exists() and ck.stat().st_mtime_ns != before:
                seen.append(state.lbfgs.iteration)
        return wrapped
    monkeypatch.setattr(TrainingRun, "checkpointer", spy)
    crf.fit(X, y)
    assert seen == [5, 10, 11]
    crf2 = CRF.load(ck)             # a checkpoint is a model file too
    assert crf2.predict(X[:2])


def test_sigterm_then_resume_matches_the_uninterrupted_run(tmp_path):
    train, _ = data_files(tmp_path)
    ck = tmp_path / "ck.fglm"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    args = ["train", str(HMM), "--train", str(train), "--tol", "1e-12", "--jobs", "1"]
    cmd = [sys.executable, "-m", "fgl.cli", *args]
    code, err = train_until_sigterm(args + ["-o", str(tmp_path / "stopped.fglm"), "--max-iter",
                                            "100000", "--checkpoint", str(ck),
                                            "--checkpoint-every", "1000"])
    assert code == 0 and "stopped by SIGTERM" in err, err
    stopped_at = load_checkpoint(ck)[1].lbfgs.iteration
    assert stopped_at >= 3
    total = str(stopped_at + 15)
    resumed = subprocess.run(cmd + ["-o", str(tmp_path / "resumed.fglm"), "--max-iter", total,
                                    "--resume", str(ck), "-q"],
                             capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    whole = subprocess.run(cmd + ["-o", str(tmp_path / "whole.fglm"), "--max-iter", total, "-q"],
                           capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert whole.returncode == 0, whole.stderr
    a = CRF.load(tmp_path / "resumed.fglm")
    b = CRF.load(tmp_path / "whole.fglm")
    assert float(a.weights @ a.weights) == pytest.approx(float(b.weights @ b.weights), rel=1e-9)
    np.testing.assert_allclose(a.weights, b.weights, rtol=0, atol=1e-9)
    objective = {}
    for name, out in (("resumed", resumed), ("whole", whole)):
        objective[name] = float(out.stderr.split("objective ")[1].split()[0])
    assert objective["resumed"] == pytest.approx(objective["whole"], rel=1e-6)


def test_resume_refuses_other_data_spec_settings_and_plain_models(capsys, tmp_path):
    train, test = data_files(tmp_path)
    ck = tmp_path / "ck.fglm"
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", tmp_path / "m.fglm", "-q",
                       "--max-iter", "4", "--checkpoint", ck)
    assert code == 0, err
    for extra, expected in [(["--train", test], "differ from what the spec compiles"),
                            (["--train", train, "--sigma", "0.5"], "differ from what the spec"),
                            (["--train", train, "--resume", tmp_path / "m.fglm"],
                             "a model file, not a training checkpoint")]:
        argv = ["train", HMM, "-o", tmp_path / "r.fglm", "-q", *extra]
        if "--resume" not in extra:
            argv += ["--resume", ck]
        code, _, err = run(capsys, *argv)
        assert code == 2 and expected in err and "Traceback" not in err, err
    other = tmp_path / "other.fgl"
    other.write_text(HMM.read_text() + "\n# edited\n", encoding="utf-8")
    code, _, err = run(capsys, "train", other, "--train", train, "-o", tmp_path / "r.fglm",
                       "--resume", ck, "-q")
    assert code == 2 and "trained from another spec" in err


def test_resume_checks_the_objective_on_the_data(tmp_path):
    """The same compiled model on other sentences: only the objective tells."""
    X, y = inputs_and_labels(training_sentences())
    ck = tmp_path / "ck.fglm"
    crf = CRF(str(HMM), max_iter=3, jobs=1, checkpoint=ck).fit(X, y)
    model, state = load_checkpoint(ck)
    other = model.encode(segment_data(seed=7, n_train=40)[0], with_gold=True)
    with pytest.raises(FglError, match="the checkpoint's objective was"):
        train_lbfgs(model.program, other, model.feat_sigma, max_iter=6, jobs=1, resume=state)
    same = model.encode(training_sentences(), with_gold=True)
    w, log = train_lbfgs(model.program, same, model.feat_sigma, max_iter=3, jobs=1,
                         resume=state)
    np.testing.assert_array_equal(w, crf.weights)   # nothing left to do at the limit


def test_an_edited_checkpoint_is_refused(tmp_path):
    X, y = inputs_and_labels(training_sentences())
    ck = tmp_path / "ck.fglm"
    CRF(str(HMM), max_iter=4, jobs=1, checkpoint=ck).fit(X, y)
    with zipfile.ZipFile(ck) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    assert "state_gradient.npy" in members
    members["state_gradient.npy"] = members["state_gradient.npy"][:-8] + bytes(8)
    bad = tmp_path / "bad.fglm"
    with zipfile.ZipFile(bad, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(ModelFileError, match="checksum mismatch"):
        load_checkpoint(bad)


def test_checkpoint_options_are_checked(tmp_path):
    with pytest.raises(FglError, match="checkpoint_every"):
        CRF(str(HMM), checkpoint=tmp_path / "c.fglm", checkpoint_every=0)
    with pytest.raises(FglError, match="does not exist"):
        CRF(str(HMM), checkpoint=tmp_path / "no" / "c.fglm")
