"""Starting a loopy model from its exact part (``fgl.learn.exact_start``):
which part a spec has, that the part's weights are carried over by name,
and that under tree-reweighted BP (a convex objective) training ends at the
same optimum from the part's weights as from zero."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.specs import GRAPH, LATENT, SKIP_EQUAL_WORDS, TRAINED_CHAIN_FORMAT

from fgl.api import CRF
from fgl.datasets.synth import segment_sequences
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.exact_start import exact_part, feature_numbers, transfer
from fgl.registry import choose, compile_model

TRW = "infer trw(tol = 1e-8, max_iter = 2000)"


def _spec(text):
    return validate(parse_spec(text, "<test>"))


def _skip_text(start="", infer=TRW, tol=1e-9):
    return TRAINED_CHAIN_FORMAT.format(
        extra=SKIP_EQUAL_WORDS, infer=infer,
        train=f"train {{ sigma = 2  tol = {tol}  max_iter = 1000 {start} }}")


def _data(seed=4, n=10):
    return segment_sequences(n_types=2, max_len=3, vocab=10, n_train=n, n_test=1,
                             length=8, seed=seed)[0]


def test_a_skip_chain_s_exact_part_is_its_chain():
    part = exact_part(_spec(_skip_text()))
    assert [t.name for t in part.templates] == ["state", "trans"]
    assert choose(part).engine.name == "chain"
    assert part.infer_method is None and part.infer == []


def test_a_graph_spec_s_exact_part_is_its_node_template():
    part = exact_part(_spec(GRAPH))
    assert [t.name for t in part.templates] == ["node"]


@pytest.mark.parametrize("text", [
    TRAINED_CHAIN_FORMAT.format(extra="", infer="", train=""),              # already exact
    LATENT,                                                                  # hidden layer
    TRAINED_CHAIN_FORMAT.format(extra="template gap: (y[t-2], y[t]) ~ bias", infer=TRW,
                                train=""),                                  # gapped: loopy
])
def test_specs_without_an_exact_part_have_none(text):
    assert exact_part(_spec(text)) is None


def test_the_part_s_weights_start_the_same_features_and_the_links_start_at_zero():
    spec = _spec(_skip_text())
    data = _data()
    part_model, _ = compile_model(exact_part(spec), data)
    model, _ = compile_model(spec, data)
    w_part = np.random.default_rng(0).normal(size=part_model.program.n_features)
    w0, carried = transfer(part_model, w_part, model)
    theirs = feature_numbers(part_model, {"state", "trans"})
    ours = feature_numbers(model, {"state", "trans", "skip"})
    assert carried == len(theirs) > 0
    for key, k in ours.items():
        expected = w_part[theirs[key]] if key[0] != "skip" else 0.0
        assert w0[k] == expected, key


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_training_from_the_exact_part_ends_at_the_optimum_of_training_from_zero(seed):
    data = _data(seed)
    started = CRF(_skip_text()).fit_sentences(data)
    zero = CRF(_skip_text("start = zero")).fit_sentences(data)
    assert started.training_log.start["templates"] == ["state", "trans"]
    assert started.training_log.start["carried"] > 0
    assert zero.training_log.start is None
    assert started.training_log.converged and zero.training_log.converged
    assert started.training_log.objective == pytest.approx(zero.training_log.objective,
                                                           rel=1e-6, abs=1e-6)
    np.testing.assert_allclose(started.weights, zero.weights, atol=5e-3)


def test_the_plan_and_the_time_account_name_the_exact_part(capsys):
    crf = CRF(_skip_text(tol=1e-5), verbose=True).fit_sentences(_data())
    err = capsys.readouterr().err
    assert "start: the exact part first (state, trans), on the exact pattern-sparse chain" in err
    assert "start: the exact part trained in" in err
    assert "exact part first" in crf.training_log.time_account()


def test_a_trainer_without_the_setting_refuses_it():
    text = TRAINED_CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer=TRW,
                                       train="train { trainer = perceptron  start = zero }")
    with pytest.raises(Exception, match="start"):
        CRF(text).fit_sentences(_data())
