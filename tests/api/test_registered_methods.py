"""A new inference method and a new trainer, each declared in this module
alone and registered through fgl's public functions, run end to end: the
checker, ``fgl explain``, the settings page, training, tagging and ``fgl
train`` all see them, and forget them once they are taken out again
(``fgl.engines.graph.inference``, ``fgl.learn.trainers``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import fgl
from fgl.cli import main
from fgl.engines.graph.inference import (
    InferenceMethod,
    register_inference_method,
    unregister_inference_method,
)
from fgl.engines.graph.inference.method import message_advice
from fgl.engines.graph.loopy import BPResult
from fgl.errors import FglError, SpecError
from fgl.learn.trainer_options import option
from fgl.learn.trainers import register_trainer, settings_doc, unregister_trainer
from fgl.learn.trainers.base import Trainer
from fgl.setting_rows import SettingDef, whole_number

# ---------------------------------------------------------------- the inference method

CALLS: list[int] = []   # the variables of each instance the method ran on


def _expected_score(theta: np.ndarray, vs: list[int], at: int, q: list[np.ndarray]
                    ) -> np.ndarray:
    """Σ over the factor's other variables, weighted by their q, of θ: a
    vector over the values of variable ``vs[at]``."""
    t = theta
    for pos in reversed(range(len(vs))):   # (from the last axis: earlier ones keep their place)
        if pos != at:
            t = np.tensordot(t, q[vs[pos]], axes=([pos], [0]))
    return t


def mean_field(program, graph, table, *, use_max, init, tol, max_iter, damping) -> BPResult:
    """Naive mean field (Koller & Friedman 2009 §11.5): ``sweeps`` passes
    of q_v(x) ∝ exp Σ_f E_q[θ_f | x_v = x]; log Z by the free energy of q
    (a lower bound), factor beliefs the product of the q's."""
    CALLS.append(int(graph.n_vars))
    card = [int(c) for c in graph.card]
    factors = []
    for f in range(graph.n_factors):
        vs = [int(v) for v in graph.factor_vars(f)]
        factors.append((vs, table[graph.tab_ptr[f]:graph.tab_ptr[f + 1]].reshape(
            [card[v] for v in vs])))
    q = [np.full(c, 1.0 / c) for c in card]
    change = 0.0
    for _ in range(int(program.settings.sweeps)):
        change = 0.0
        for v in range(len(card)):
            score = np.zeros(card[v])
            for vs, theta in factors:
                for at in (at for at, u in enumerate(vs) if u == v):
                    score += _expected_score(theta, vs, at, q)
            new = np.exp(score - score.max())
            new /= new.sum()
            change = max(change, float(np.abs(new - q[v]).max()))
            q[v] = new
    beliefs, energy = [], 0.0
    for vs, theta in factors:
        b = q[vs[0]]
        for u in vs[1:]:
            b = np.multiply.outer(b, q[u])
        beliefs.append(b.reshape(-1))
        energy += float((b * theta).sum())
    entropy = -sum(float((p * np.log(np.maximum(p, 1e-300))).sum()) for p in q)
    return BPResult(log_z=energy + entropy, var_flat=np.concatenate(q),
                    var_ptr=np.concatenate([[0], np.cumsum(card)]).astype(np.int64),
                    factor_beliefs=np.concatenate(beliefs) if beliefs else np.zeros(0),
                    iterations=int(program.settings.sweeps), residual=change,
                    converged=True,   # (a fixed number of sweeps: done when they are)
                    map_state=np.array([int(np.argmax(p)) for p in q], dtype=np.int64))


MEAN_FIELD = InferenceMethod(
    "mean_field",
    title=lambda settings, acyclic: f"naive mean field, {settings.sweeps} sweeps (a test's)",
    settings=(SettingDef("infer mean_field", "sweeps", whole_number(1), 5,
                         "the test's mean field", "passes over the variables"),),
    run=mean_field, advice=lambda settings: ["more sweeps"])


# ---------------------------------------------------------------- the trainer

FITS: list[tuple[int, int]] = []   # the (passes, runs) each fit was asked for


@dataclass(frozen=True)
class CountingOptions:
    """counting_perceptron: the averaged perceptron, `passes` times, an
    update per `runs` instances."""

    passes: int = option(3, whole_number(1), "passes over the data (a test's trainer)")
    runs: int = option(1, whole_number(1), "instances per update (a test's trainer)")
    BOUNDS = {"max_iter": "passes"}   # (--max-iter bounds the passes)


def _fit(run, model, data):
    from fgl.learn.perceptron import train_perceptron

    options = run.settings.options()
    FITS.append((options.passes, options.runs))
    return (model, *train_perceptron(model.program, data, epochs=options.passes,
                                     batch=options.runs, w0=model.initial_weights()))


COUNTING = Trainer(
    name="counting_perceptron", title="the averaged perceptron (a test's trainer)",
    chosen_when="`trainer = counting_perceptron`", options=CountingOptions, fit=_fit,
    summary=lambda log: f"{len(log.iterations)} passes",
    progress_line=lambda row: f"pass {row['iteration']}", kernels="tag")


@pytest.fixture
def registered():
    register_inference_method(MEAN_FIELD)
    register_trainer(COUNTING)
    CALLS.clear()
    FITS.clear()
    try:
        yield
    finally:
        unregister_inference_method("mean_field")
        unregister_trainer("counting_perceptron")


# ---------------------------------------------------------------- a tiny loopy model

LOOPY = """columns word, label
output label
template s: y[t] ~ word[t]
template t: y[t-1..t]
template g: (y[t-2], y[t])
"""


def data(n: int = 12, seed: int = 0):
    """Sentences of the words a and b, labelled A and B after them."""
    rng = np.random.default_rng(seed)
    words = [["ab"[k] for k in rng.integers(0, 2, size=int(rng.integers(3, 7)))]
             for _ in range(n)]
    return [[[w] for w in s] for s in words], [[w.upper() for w in s] for s in words]


def test_a_registered_inference_method_trains_and_tags_a_loopy_model(registered):
    X, y = data()
    crf = fgl.CRF(LOOPY + "infer mean_field(sweeps = 4)\ntrain { max_iter = 15 }\n").fit(X, y)
    assert CALLS, "the method's kernel never ran"
    assert "naive mean field, 4 sweeps" in crf.explain()
    CALLS.clear()
    assert crf.predict(X) == y
    assert CALLS and len(CALLS) >= len(X)   # (tagging ran it on every sentence)
    for token in crf.predict_marginals(X[:2])[0]:
        assert abs(sum(token.values()) - 1.0) < 1e-9


def test_the_checker_and_the_docs_know_a_registered_method_and_forget_it(registered):
    with pytest.raises(SpecError, match="unknown setting 'rounds' for infer mean_field; "
                                        "expected one of: sweeps"):
        fgl.CRF(LOOPY + "infer mean_field(rounds = 4)\n")
    assert "| infer mean_field | `sweeps` |" in settings_doc()
    assert "| `mean_field` | naive mean field, 5 sweeps" in settings_doc()
    unregister_inference_method("mean_field")
    with pytest.raises(SpecError, match="unknown inference method 'mean_field'"):
        fgl.CRF(LOOPY + "infer mean_field\n")
    register_inference_method(MEAN_FIELD)   # (the fixture takes it out again)


def test_a_built_in_method_cannot_be_replaced_or_removed():
    with pytest.raises(ValueError, match="registered already"):
        register_inference_method(InferenceMethod("trw", MEAN_FIELD.title, (), mean_field,
                                                  message_advice))
    with pytest.raises(ValueError, match="built in"):
        unregister_inference_method("loopy")
    with pytest.raises(ValueError, match="not in block 'infer odd'"):
        InferenceMethod("odd", MEAN_FIELD.title, MEAN_FIELD.settings, mean_field,
                        message_advice)


def test_a_registered_trainer_trains_reads_its_options_and_refuses_the_rest(registered):
    X, y = data()
    crf = fgl.CRF(LOOPY + "infer mean_field\ntrain { trainer = counting_perceptron "
                          "passes = 4 }\n").fit(X, y)
    assert FITS == [(4, 1)]
    assert crf.predict(X) == y
    with pytest.raises(SpecError, match="`sigma` is not read by trainer counting_perceptron"):
        fgl.CRF(LOOPY + "train { trainer = counting_perceptron sigma = 2 }\n")
    with pytest.raises(SpecError, match="`passes` is not read by trainer lbfgs.*read by "
                                        "trainer counting_perceptron only"):
        fgl.CRF(LOOPY + "train { passes = 2 }\n")


def test_a_registered_trainers_own_option_reaches_it_from_the_spec_and_the_overrides(
        registered, tmp_path):
    """A new option is one field of the trainer's options class: a spec's
    `train { ... }` sets it, ``CRF(max_iter=...)`` reaches the option its
    ``BOUNDS`` names, the checker validates it at its line and the
    settings page lists it — with no field of ``TrainSettings`` for it."""
    X, y = data()
    spec = LOOPY + "train { trainer = counting_perceptron  passes = 5  runs = 2 }\n"
    crf = fgl.CRF(spec).fit(X, y)
    assert FITS == [(5, 2)]
    assert not hasattr(crf.settings, "runs") and crf.settings.value("runs") == 2
    fgl.CRF(spec, max_iter=3).fit(X, y)
    assert FITS[-1] == (3, 2)
    bad = tmp_path / "bad.fgl"
    bad.write_text(LOOPY + "train { trainer = counting_perceptron  runs = 0 }\n")
    with pytest.raises(SpecError, match="runs") as caught:
        fgl.CRF(bad)
    assert f"{bad}:6:" in str(caught.value)
    assert "| train | `runs` | a whole number > 0 | 1 | trainers: counting_perceptron |" \
        in settings_doc()


def test_fgl_train_runs_a_registered_trainer_and_lists_it(registered, tmp_path, capsys):
    X, y = data(6)
    (tmp_path / "train.txt").write_text("\n\n".join(
        "\n".join(f"{w[0]} {t}" for w, t in zip(xs, ys)) for xs, ys in zip(X, y)) + "\n")
    (tmp_path / "m.fgl").write_text(LOOPY + "train { trainer = counting_perceptron }\n")
    assert main(["train", str(tmp_path / "m.fgl"), "--train", str(tmp_path / "train.txt"),
                 "-o", str(tmp_path / "m.fglm"), "--max-iter", "2", "-q"]) == 0
    assert FITS == [(2, 1)]   # --max-iter bounds its passes (CountingOptions.BOUNDS)
    assert "trained in" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "counting_perceptron" in capsys.readouterr().out


def test_an_unknown_trainer_names_the_registered_ones(registered):
    with pytest.raises(SpecError, match="one of: lbfgs, sgd, perceptron, ecrn, "
                                        "counting_perceptron"):
        fgl.CRF(LOOPY + "train { trainer = counting }\n")


# ---------------------------------------------------------------- overrides

def test_overrides_are_the_rows_of_one_table(capsys):
    from fgl.lang.overrides import OVERRIDE_DEFS

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    for row in OVERRIDE_DEFS:
        assert (row.flag or "--jobs") in text
    with pytest.raises(FglError, match="unknown train setting override 'sigmaa'; expected "
                                       "one of: sigma, max_iter"):
        fgl.CRF(LOOPY, sigmaa=2.0)
    with pytest.raises(FglError, match="the tol override must be a positive number"):
        fgl.CRF(LOOPY, tol=-1.0)
    assert fgl.CRF(LOOPY, sigma=2.0, max_iter=None).settings.overridden == {"sigma"}


def test_the_estimator_takes_every_override_by_its_name():
    """A new override row reaches ``fgl.CRFEstimator`` as a parameter of
    its name (sklearn-crfsuite's min_freq stands for min_count)."""
    import inspect

    from fgl.lang.overrides import OVERRIDE_DEFS

    params = set(inspect.signature(fgl.CRFEstimator.__init__).parameters)
    assert {row.key for row in OVERRIDE_DEFS} - params == {"min_count"}
    assert "min_freq" in params
