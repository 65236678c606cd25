"""Training general CRFs under approximate inference (Sutton & McCallum §1.4.4):
warm-started belief propagation gives the cold results (to BP's tolerance on
loopy graphs, exactly on trees) in fewer passes, gradients still match
finite differences, and a training run whose line search fails recovers —
tighter BP, re-evaluation, steepest descent — and says so."""
import dataclasses

import numpy as np
import pytest
from support.gradcheck import assert_gradient_matches_central_differences
from support.specs import LATENT, NEVER_SKIP, SKIP_EQUAL_WORDS, TRAINED_CHAIN_FORMAT

from fgl.datasets.synth import segment_sequences
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.learner import train_lbfgs
from fgl.learn.objective import Objective
from fgl.registry import compile_model


def _compiled(extra, infer, train="", n=12, length=10, vocab=12, seed=4):
    data = segment_sequences(n_types=2, max_len=3, vocab=vocab, n_train=n, n_test=1,
                             length=length, seed=seed)[0]
    text = TRAINED_CHAIN_FORMAT.format(extra=extra, infer=infer, train=train)
    spec = validate(parse_spec(text, "<test>"))
    return compile_model(spec, data)


def _weights(model, scale, seed=0):
    return np.random.default_rng(seed).normal(0, scale, model.program.n_features)


@pytest.mark.parametrize("infer", ["infer loopy(tol = 1e-10, max_iter = 1000)",
                                   "infer trp(tol = 1e-10, max_iter = 1000)"])
@pytest.mark.parametrize("jobs", [1, 2])
def test_warm_started_expectations_equal_cold_ones_on_a_loopy_model(infer, jobs):
    model, enc = _compiled(SKIP_EQUAL_WORDS, infer)
    assert sum(g.n_cycles() for g in enc.graphs) > 0
    program = model.program
    w = _weights(model, 0.3)
    warm = program.warm_start(enc)
    program.expectations(w + _weights(model, 0.1, seed=1), enc, jobs, warm=warm)
    warm.accept()   # start from the fixed point of other weights
    got = program.expectations(w, enc, jobs, warm=warm)
    cold = program.expectations(w, enc, jobs)
    assert got.log_z == pytest.approx(cold.log_z, rel=1e-9)
    np.testing.assert_allclose(got.counts, cold.counts, rtol=1e-7, atol=1e-8)
    assert got.stats.not_converged == 0 and got.stats.max_residual < 1e-10


@pytest.mark.parametrize("infer", ["infer loopy", "infer trp"])
def test_warm_starts_keep_the_exact_fixed_point_on_trees(infer):
    """On a tree BP is exact from any starting messages: warm-started from
    the messages of unrelated weights, the results are the cold ones."""
    model, enc = _compiled(NEVER_SKIP, infer)
    assert all(g.is_tree() for g in enc.graphs)
    program = model.program
    w = _weights(model, 1.0)
    warm = program.warm_start(enc)
    program.expectations(_weights(model, 1.0, seed=7), enc, 1, warm=warm)
    warm.accept()
    got = program.expectations(w, enc, 1, warm=warm)
    cold = program.expectations(w, enc, 1)
    assert got.log_z == pytest.approx(cold.log_z, rel=1e-12)
    np.testing.assert_allclose(got.counts, cold.counts, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("infer", ["infer loopy(tol = 1e-8, max_iter = 1000)",
                                   "infer trp(tol = 1e-8, max_iter = 1000)"])
def test_warm_starts_take_fewer_passes_at_nearby_weights(infer):
    """BP converges linearly, so the passes saved grow with how near the
    new weights are: the second evaluation of a line search, or the first
    of the next iteration near a fit."""
    model, enc = _compiled(SKIP_EQUAL_WORDS, infer)
    program = model.program
    w = _weights(model, 0.3)
    passes = {}
    for step in (1e-2, 1e-5):
        warm = program.warm_start(enc)
        first = program.expectations(w, enc, 1, warm=warm)
        warm.accept()
        nearby = w + step * _weights(model, 1.0, seed=2)
        again = program.expectations(nearby, enc, 1, warm=warm)
        cold = program.expectations(nearby, enc, 1)
        assert first.stats.max_iterations > 5 and cold.stats.not_converged == 0
        assert again.log_z == pytest.approx(cold.log_z, rel=1e-8)
        passes[step] = again.stats.max_iterations, cold.stats.max_iterations
    assert passes[1e-2][0] < passes[1e-2][1]
    assert passes[1e-5][0] < passes[1e-2][0]
    assert passes[1e-5][0] <= 0.6 * passes[1e-5][1]


def test_warm_start_runs_start_from_the_accepted_messages():
    """Until ``accept()``, every run starts from the same messages: the
    result at given weights does not depend on what was evaluated between."""
    model, enc = _compiled(SKIP_EQUAL_WORDS, "infer trp(tol = 1e-4, max_iter = 50)")
    program = model.program
    w = _weights(model, 0.5)
    warm = program.warm_start(enc)
    program.expectations(w, enc, 1, warm=warm)
    warm.accept()
    one = program.expectations(w + 0.01, enc, 1, warm=warm)
    program.expectations(w + 3.0, enc, 1, warm=warm)   # a far trial point
    two = program.expectations(w + 0.01, enc, 1, warm=warm)
    assert one.log_z == two.log_z
    np.testing.assert_array_equal(one.counts, two.counts)


def test_decoding_and_marginals_start_cold():
    """No warm start leaks into prediction: the same weights give the same
    decoding and marginals before and after warm-started evaluations."""
    model, enc = _compiled(SKIP_EQUAL_WORDS, "infer trp(tol = 1e-4, max_iter = 50)")
    program = model.program
    w = _weights(model, 0.5)
    before = program.marginals(w, enc, 1)
    decoded = program.decode(w, enc, 1).assignments
    objective = Objective(program, enc, model.feat_sigma, jobs=1)
    objective(w + 0.2)
    objective.accept()
    objective(w)
    after = program.marginals(w, enc, 1)
    for a, b in zip(before.per_instance, after.per_instance):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
    for a, b in zip(decoded, program.decode(w, enc, 1).assignments):
        np.testing.assert_array_equal(a, b)


class _Chained:
    """An objective that accepts every evaluation, so each one starts from
    the messages of the previous: the most history a warm start can carry."""

    def __init__(self, objective):
        self.objective = objective

    def __call__(self, w):
        out = self.objective(w)
        self.objective.accept()
        return out


def test_warm_started_gradient_matches_finite_differences():
    model, enc = _compiled(SKIP_EQUAL_WORDS,
                           "infer loopy(tol = 1e-13, max_iter = 2000, damping = 0.3)",
                           n=4, length=8, vocab=4)
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1, bp_start="warm")
    assert objective.warm is not None and objective.warm.carry
    assert_gradient_matches_central_differences(_Chained(objective), model.program.n_features,
                                                scale=0.3, n_checks=25, rtol=1e-5)
    assert objective.stats.not_converged == 0


# the latent spec of support.specs, run by TRP instead of enumeration
LATENT_BY_TRP = LATENT.replace("infer exact(max_states = 300000)",
                                     "infer trp(tol = 1e-13, max_iter = 2000)")


def test_warm_started_gradient_with_hidden_variables():
    """The clamped program keeps a warm start of its own (Sutton & McCallum
    eq. 1.46-1.52)."""
    data = segment_sequences(n_types=2, max_len=3, vocab=5, n_train=4, n_test=1, length=6,
                             seed=4)[0]
    model, enc = compile_model(validate(parse_spec(LATENT_BY_TRP, "<test>")), data)
    assert model.program.has_hidden and sum(g.n_cycles() for g in enc.graphs) > 0
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1, bp_start="warm")
    assert objective.warm is not None and objective.warm_clamped is not None
    assert_gradient_matches_central_differences(_Chained(objective), model.program.n_features,
                                                scale=0.5, n_checks=25, rtol=1e-5)
    assert objective.stats.not_converged == 0


def test_exact_inference_has_nothing_to_warm_or_tighten():
    model, enc = _compiled(SKIP_EQUAL_WORDS, "infer exact", length=5)
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    assert objective.warm is None and objective.tighten() is None


def test_tighten_lowers_the_tolerance_within_limits():
    model, enc = _compiled(SKIP_EQUAL_WORDS, "infer trp(tol = 1e-4, max_iter = 50)")
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    note = objective.tighten()
    assert "1e-05" in note and "100" in note
    assert (objective.warm.tol, objective.warm.max_iter) == (1e-5, 100)
    notes = [objective.tighten() for _ in range(12)]
    assert notes[-1] is None and objective.warm.tol == 1e-12
    assert objective.warm.max_iter == 8 * 50     # the passes grow to a bound
    # the program's own settings (decoding, marginals) are untouched
    assert model.program.settings.tol == 1e-4 and model.program.settings.max_iter == 50


def _precise(model):
    """The program with BP run as precisely as it can be: tolerance 1e-10,
    damped, many passes (and, in an Objective without warm starts, cold)."""
    return dataclasses.replace(model.program, settings=model.program.settings.replace(
        tol=1e-10, max_iter=5000, damping=0.5))


def test_a_failing_line_search_is_recovered_and_reported():
    """A skip-chain CRF on a small vocabulary (many skip edges, long loops)
    with a weak prior and the user's `infer trp(max_iter = 50, tol = 1e-4)`:
    as the weights grow the loops become frustrated, BP converges slowly or
    not at all, and the line search fails far from a fit — as on the
    user's run.  Recovering gets much further, and every row says so."""
    data = segment_sequences(n_types=3, max_len=4, vocab=6, n_train=15, n_test=1, length=10,
                             seed=0)[0]
    spec = validate(parse_spec(TRAINED_CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS,
                                            infer="infer trp(max_iter = 50, tol = 1e-4)",
                                            train="train { sigma = 10 }"), "<test>"))
    model, enc = compile_model(spec, data)
    program, sigma = model.program, model.feat_sigma

    w_stalled, stalled = train_lbfgs(program, enc, sigma, max_iter=60, jobs=1, max_recoveries=0)
    assert "line search" in stalled.message and stalled.recoveries == []
    assert len(stalled.iterations) < 60

    rows = []
    w, log = train_lbfgs(program, enc, sigma, max_iter=60, jobs=1, progress=rows.append)
    assert len(log.iterations) > len(stalled.iterations)
    assert log.recoveries
    recovery_rows = [r for r in rows if "recovery" in r]
    assert [r["recovery"] for r in recovery_rows] == [r["message"] for r in log.recoveries]
    assert not any("recovery" in r for r in log.iterations)
    first = log.recoveries[0]
    assert first["iteration"] == len(stalled.iterations) + 1   # where the first run stopped
    assert "line search" in first["message"] and "BP tolerance 0.0001 -> 1e-05" in \
        first["message"] and "steepest descent" in first["message"]
    assert recovery_rows[0]["inference"] is not None
    n = len(log.recoveries)
    assert f"{n} line-search recover{'y' if n == 1 else 'ies'}" in log.message

    # every evaluation counted once by kind, the seconds adding up to theirs, BP's sweeps
    # summed over every instance of every evaluation (at least one each)
    counts = {kind: k for kind, (k, _) in log.spent.items()}
    assert sum(counts.values()) == log.evaluations
    assert counts["iterate"] == len(log.iterations) + 1   # (and the starting point)
    assert counts["recovery"] >= 2 * n   # (a failed search, a re-evaluation)
    assert sum(t for _, t in log.spent.values()) == pytest.approx(log.eval_seconds, rel=1e-9)
    assert log.sweeps >= log.evaluations * enc.n_sequences
    account = log.time_account()
    assert f"{counts['iterate']} at iterates" in account and f"BP {log.sweeps:,} sweeps" in \
        account and "optimiser" in account
    assert all(r["seconds"] > 0 for r in log.recoveries)

    # judged by one precise objective, the recovered run got further
    judge = Objective(_precise(model), enc, sigma, jobs=1, bp_start="cold")
    f_recovered, _ = judge(w)
    f_stalled, _ = judge(w_stalled)
    assert judge.stats.not_converged == 0
    assert f_recovered < f_stalled - 1.0


def test_progress_rows_show_the_last_evaluations_bp_effort():
    """With warm starts, a row's inference statistics are those of the
    evaluation that produced its point: near a fit, few passes — fewer than
    a cold start at the same weights takes."""
    model, enc = _compiled(SKIP_EQUAL_WORDS, "infer trp(tol = 1e-8, max_iter = 500)",
                           train="train { sigma = 1 }", n=20)
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1, bp_start="warm")
    w, log = train_lbfgs(model.program, enc, model.feat_sigma, max_iter=100, jobs=1,
                         objective=objective)
    assert "objective improved by less than" in log.message   # near a fit
    last = log.iterations[-1]["inference"]
    assert last is objective.stats and log.inference is last
    assert last.instances == enc.n_sequences and last.not_converged == 0
    cold = Objective(model.program, enc, model.feat_sigma, jobs=1, bp_start="cold")
    cold(w)
    assert last.max_iterations < cold.stats.max_iterations


def test_cold_objective_is_a_function_of_the_weights():
    """By default (train { bp_start = cold }) every evaluation starts BP from
    uniform messages: the objective at w is the same whatever was evaluated
    or accepted before — on a frustrated model where a warm start is not."""
    model, enc = _compiled(SKIP_EQUAL_WORDS, "infer trp(max_iter = 50, tol = 1e-4)", vocab=8, n=15)
    w = _weights(model, 1.5, seed=3)
    cold = Objective(model.program, enc, model.feat_sigma, jobs=1)
    assert cold.warm is not None and not cold.warm.carry
    first = cold(w)
    for seed in range(4):
        cold(_weights(model, 1.5, seed=10 + seed))
        cold.accept()
    again = cold(w)
    assert again[0] == first[0]
    np.testing.assert_array_equal(again[1], first[1])
    warm = Objective(model.program, enc, model.feat_sigma, jobs=1, bp_start="warm")
    values = set()
    for seed in range(4):
        warm(_weights(model, 1.5, seed=10 + seed))
        warm.accept()
        values.add(warm(w)[0])
    assert len(values) > 1   # the warm objective at w depends on the path


def test_bp_start_setting_reaches_the_learner(tmp_path, monkeypatch):
    from fgl.api import CRF
    from fgl.learn import learner

    made = []

    class Spy(learner.Objective):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self.warm.carry)

    monkeypatch.setattr(learner, "Objective", Spy)
    data = segment_sequences(n_types=2, max_len=3, vocab=12, n_train=6, n_test=1, length=8,
                             seed=4)[0]
    for start in ("cold", "warm"):
        text = TRAINED_CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS,
                                           infer="infer trp(max_iter = 50, tol = 1e-6)",
                                           train=f"train {{ bp_start = {start}\n max_iter = 5 "
                                                 "start = zero }")
        spec = tmp_path / f"{start}.fgl"
        spec.write_text(text)
        CRF(spec).fit_sentences(data)
    assert made == [False, True]


def test_progress_lines_say_what_inference_ran():
    """Verbose training prints BP's effort per iteration, and says "exact"
    when the junction tree ran every instance."""
    from fgl.engines.program import InferenceStats
    from fgl.learn.trainers.lbfgs import iteration_line

    bp = iteration_line({"iteration": 3, "objective": 1.5, "gradient_norm": 2.0,
                         "evaluations": 4, "seconds": 0.1,
                         "inference": InferenceStats(5, 1, 12, 3e-3, sweeps=40)})
    exact = iteration_line({"iteration": 4, "objective": 1.2, "gradient_norm": 1.0,
                            "evaluations": 5, "seconds": 0.2,
                            "inference": InferenceStats(5, 0, 0, 0.0)})
    assert "BP: <= 12 iterations (8 mean), residual 0.003, 1/5 not converged" in bp
    recovery = iteration_line({"iteration": 6, "objective": 1.0, "gradient_norm": 1.0,
                               "evaluations": 9, "seconds": 2.5, "spent": 1.25,
                               "inference": None, "recovery": "BP tolerance 1e-3 -> 1e-4"})
    assert recovery == ("  recovery at 2.5s (evals 9, 1.2s since the last iterate): BP "
                        "tolerance 1e-3 -> 1e-4")
    assert "exact (junction tree), 5 instances" in exact and "BP" not in exact


def test_parallel_expectations_are_reproducible():
    """Threads take fixed runs of instances, so an evaluation on two threads
    gives the same bits every time (and the one-thread sums to rounding)."""
    model, enc = _compiled(SKIP_EQUAL_WORDS, "infer trp(tol = 1e-8, max_iter = 200)", n=12)
    w = _weights(model, 0.5, seed=5)
    runs = [model.program.expectations(w, enc, 2) for _ in range(3)]
    for r in runs[1:]:
        assert r.log_z == runs[0].log_z
        np.testing.assert_array_equal(r.counts, runs[0].counts)
    one = model.program.expectations(w, enc, 1)
    assert one.log_z == pytest.approx(runs[0].log_z, rel=1e-12)
    np.testing.assert_allclose(one.counts, runs[0].counts, rtol=1e-12, atol=1e-12)


def test_trw_training_starts_loose_and_refines_to_the_specs_tolerance():
    """Under TRW the objective starts BP at 100x the spec's tol (at most
    1e-3) and ``refine`` cuts it tenfold whenever a step lowered the
    objective by less than the tolerance times the larger of the objective
    and 0.1 x the data's variables, down to the spec's tol and no further;
    the Bethe methods start at the spec's."""
    model, enc = _compiled(SKIP_EQUAL_WORDS, "infer trw(tol = 1e-6)")
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    size = sum(g.n_vars for g in enc.graphs)
    assert (objective.warm.tol, objective.warm.floor, objective.warm.size) == (1e-4, 1e-6, size)
    assert objective.refine(0.1, 100.0) is None and objective.warm.tol == 1e-4   # a big step
    note = objective.refine(0.005, 100.0)
    assert note == "BP tolerance 0.0001 -> 1e-05 (the objective fell by 0.005)"
    assert objective.refine(0.0, 100.0) and objective.warm.tol == 1e-6
    assert objective.refine(0.0, 100.0) is None and objective.warm.tol == 1e-6   # the floor
    small = Objective(model.program, enc, model.feat_sigma, jobs=1)   # |f| below 0.1 x size:
    assert small.refine(0.05 * size * 1e-4, 1.0) is not None   # judged by the variables
    assert small.refine(0.2 * size * 1e-5, 1.0) is None
    loose, _ = _compiled(SKIP_EQUAL_WORDS, "infer trw(tol = 1e-2)")
    assert Objective(loose.program, enc, loose.feat_sigma, jobs=1).warm.tol == 1e-2
    trp, _ = _compiled(SKIP_EQUAL_WORDS, "infer trp(tol = 1e-6)")
    bethe = Objective(trp.program, enc, trp.feat_sigma, jobs=1)
    assert bethe.warm.tol == 1e-6 and bethe.refine(0.0, 1.0) is None


def test_trw_training_converges_at_the_specs_tolerance():
    """A TRW run refines BP as its steps shrink and stops by the stopping
    rule only once BP runs at the spec's tolerance: its last objective is
    the precise one at its weights, and each refinement is in the rows."""
    model, enc = _compiled(SKIP_EQUAL_WORDS, "infer trw(tol = 1e-7, max_iter = 1000)",
                           train="train { sigma = 1 }", n=20)
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    w, log = train_lbfgs(model.program, enc, model.feat_sigma, max_iter=200, jobs=1,
                         objective=objective)
    assert "objective improved by less than" in log.message and not log.recoveries
    notes = [r["refined"] for r in log.iterations if "refined" in r]
    assert len(notes) == 2 and "1e-05 -> 1e-06" in notes[0] and "-> 1e-07" in notes[1]
    assert objective.warm.tol == 1e-7
    f_precise, _ = Objective(_precise(model), enc, model.feat_sigma, jobs=1)(w)
    assert abs(log.objective - f_precise) <= 1e-6 * abs(f_precise)


def test_the_stopping_rule_waits_for_inference_to_be_refined():
    """A flat run of objectives stops training only when ``refine`` has
    nothing left to make more precise; a refinement restarts the count."""
    from fgl.learn.learner import _Run

    class Coarse:
        stats = None
        left = 2

        def refine(self, decrease, objective):
            if decrease > 0 or not self.left:
                return None
            self.left -= 1
            return "finer"

        def accept(self):
            pass

    run = _Run(Coarse(), max_iter=100, tol=1e-5, period=3, progress=None, should_stop=None,
               checkpoint=None, resume=None, memory=6)
    g = np.zeros(2)
    stops = [run.iteration(it, 1.0, g, g, it) for it in range(1, 12)]
    assert stops.index(True) == 5 and run.objective.left == 0   # 3 iterations after the last
    assert [r["iteration"] for r in run.log.iterations if "refined" in r] == [2, 3]

