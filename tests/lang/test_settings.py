"""The table of settings (fgl.lang.settings): the values in effect, the
overrides a caller may give, the settings the checker refuses, and the
generated docs/settings.md."""
from __future__ import annotations

import math

import pytest
from support.paths import REPO
from support.spec_errors import CHECK_FILE, check_errors, one_error

from fgl.errors import FglError
from fgl.lang.parser import parse_spec
from fgl.lang.settings import (
    Overrides,
    TemplateOptions,
    all_settings,
    block_settings,
    infer_methods,
    resolve_infer,
    resolve_train,
    settings_markdown,
    template_options,
)
from fgl.learn.trainer_options import InductionOptions, LBFGSOptions, PerceptronOptions

# three lines every snippet builds on; snippets start at line 4
BASE = "columns word, chunk\noutput chunk\ntemplate base: y[t] ~ word[t]\n"


def spec(src: str = ""):
    return parse_spec(BASE + src, CHECK_FILE)


def message_at(src: str) -> tuple[int, int, str]:
    e = one_error(check_errors(BASE + src))
    assert e.file == CHECK_FILE
    return e.line, e.col, e.message


# ---------------------------------------------------------------- refused settings

SCHEDULE = ("infer loopy: setting 'schedule' is not available: only the flooding schedule exists "
            "for `infer loopy` (use `infer trp` for tree schedules; residual BP is not "
            "implemented); remove it")


def test_unknown_trainer_is_refused_at_its_value():
    assert message_at("train { max_iter = 5 trainer = adagrad }") == (
        4, 22, "train: trainer must be one of: lbfgs, sgd, perceptron, ecrn; found 'adagrad'")


def test_schedule_is_refused():
    assert message_at("infer loopy(damping = 0.5, schedule = flooding)") == (4, 28, SCHEDULE)


@pytest.mark.parametrize("src, message", [
    ("infer loopy(schedule = random)", SCHEDULE),
])
def test_refused_whatever_the_value(src, message):
    assert message_at(src)[2] == message


def test_refused_settings_are_not_offered():
    assert message_at("train { lone = 1 }")[2] == (
        "unknown setting 'lone' for train; expected one of: sigma, max_iter, tol, objective, "
        "bp_start, l1, start, memory, epochs, batch, learning_rate, period, delta, induce_rounds, "
        "induce_per_round, induce_min_gain, induce_iter, induce_pool, induce_transitions, "
        "induce_margin, jobs, trainer, min_count")
    assert message_at("infer loopy(trees = 2)")[2] == (
        "unknown setting 'trees' for infer loopy; expected one of: damping, max_iter, tol")


def test_junction_tree_settings_are_checked():
    assert message_at("infer junction_tree(max_table = 0)")[2] == (
        "infer junction_tree: max_table must be a whole number > 0; found 0")
    assert message_at("infer junction_tree(tol = 1e-3)")[2] == (
        "unknown setting 'tol' for infer junction_tree; expected one of: max_table")
    assert "expected one of: auto, junction_tree, exact, loopy, trp" in message_at(
        "infer junction")[2]


def test_refused_settings_have_no_default():
    refused = [s for s in all_settings() if s.refusal is not None]
    assert [(s.block, s.key) for s in refused] == [
        ("infer loopy", "schedule")]
    assert all(s.default is None for s in refused)


# ---------------------------------------------------------------- the table

def test_every_default_is_valid():
    for s in all_settings():
        if s.default is not None:
            assert s.validator(s.default) is None, (s.block, s.key, s.default)


def test_keys_are_unique_per_block_and_blocks_known():
    blocks = {"train", "template"} | {f"infer {m}" for m in infer_methods()}
    assert {s.block for s in all_settings()} == blocks
    pairs = [(s.block, s.key) for s in all_settings()]
    assert len(pairs) == len(set(pairs))
    assert all(s.read_by and s.meaning for s in all_settings())


def test_docs_settings_md_is_the_rendered_table_and_trainers():
    from fgl.learn.trainers import settings_doc

    text = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    assert text == settings_doc() and text.startswith(settings_markdown())


# ---------------------------------------------------------------- values in effect

def test_train_defaults():
    s = resolve_train(spec())
    assert (s.sigma, s.jobs, s.trainer, s.min_count) == (10.0, 0, "lbfgs", 1)
    assert s.options() == LBFGSOptions(sigma=10.0, max_iter=1000, tol=1e-5,
                                       objective="likelihood", bp_start="auto", l1=0.0)
    assert s.options(InductionOptions) == InductionOptions(
        sigma=10.0, max_iter=1000, tol=1e-5, induce_rounds=10, induce_per_round=1000,
        induce_min_gain=5.0, induce_iter=10, induce_pool=1000, induce_transitions=0,
        induce_margin=0.5)
    assert (s.value("epochs"), s.value("batch")) == (10, 1)
    assert s.overridden == frozenset()


def test_train_settings_hold_every_row_and_no_field_of_their_own():
    """The rows are the one place: every train row is a value, and no
    trainer's option is a field of ``TrainSettings``."""
    import dataclasses

    s = resolve_train(spec())
    assert {k for k, _ in s.values} == set(block_settings("train")) - {"learning_rate", "memory"}
    assert {f.name for f in dataclasses.fields(s)} == {"values", "overridden"}


def test_train_spec_values_then_overrides():
    s = spec("train { sigma = 2 max_iter = 50 jobs = 4 induce_rounds = 3 }")
    got = resolve_train(s)
    lbfgs = got.options()
    assert (got.sigma, lbfgs.max_iter, lbfgs.tol, got.jobs) == (2, 50, 1e-5, 4)
    assert type(lbfgs.sigma) is float   # (the spec's `sigma = 2`, an option declared a float)
    assert got.options(InductionOptions).induce_rounds == 3
    assert got.value("induce_rounds") == 3 and got.value("induce_iter") == 10
    got = resolve_train(s, {"sigma": 0.5, "max_iter": None, "tol": 1e-3, "jobs": 1, "l1": 2})
    lbfgs = got.options()
    assert (got.sigma, lbfgs.max_iter, lbfgs.tol, got.jobs, lbfgs.l1) == (0.5, 50, 1e-3, 1, 2)
    assert got.overridden == {"sigma", "tol", "jobs", "l1"}


def test_a_max_iter_override_bounds_the_perceptrons_epochs():
    s = spec("train { trainer = perceptron epochs = 7 }")
    assert resolve_train(s).options().epochs == 7
    assert resolve_train(s, {"max_iter": 3}).options() == PerceptronOptions(epochs=3, batch=1)


def test_train_overrides_are_checked():
    with pytest.raises(FglError, match="the sigma override must be a positive number; found 0"):
        resolve_train(spec(), {"sigma": 0})


@pytest.mark.parametrize("src, method, settings", [
    ("", "auto", {"max_table": 10_000, "damping": 0.0, "max_iter": 100, "tol": 1e-5}),
    ("infer auto(max_table = 500, damping = 0.2)", "auto",
     {"max_table": 500, "damping": 0.2, "max_iter": 100, "tol": 1e-5}),
    ("infer trw", "trw", {"damping": 0.0, "max_iter": 100, "tol": 1e-5, "forests": 10,
                          "decode": "max_product"}),
    ("infer trw(rho = 0.4, decode = marginals)", "trw",
     {"damping": 0.0, "max_iter": 100, "tol": 1e-5, "forests": 10, "decode": "marginals",
      "rho": 0.4}),
    ("infer junction_tree", "junction_tree", {"max_table": 1_000_000}),
    ("infer junction_tree(max_table = 10)", "junction_tree", {"max_table": 10}),
    ("infer loopy", "loopy", {"damping": 0.0, "max_iter": 200, "tol": 1e-8}),
    ("infer loopy(damping = 0.5)", "loopy", {"damping": 0.5, "max_iter": 200, "tol": 1e-8}),
    ("infer trp", "trp", {"max_iter": 200, "tol": 1e-8}),
    ("infer trp(trees = 3, tol = 1e-4)", "trp", {"max_iter": 200, "tol": 1e-4, "trees": 3}),
    ("infer exact", "exact", {"max_states": 1_000_000}),
    ("infer exact(max_states = 50)", "exact", {"max_states": 50}),
])
def test_infer_settings(src, method, settings):
    got = resolve_infer(spec(src))
    assert got.method == method and dict(got.items()) == settings


def test_template_options():
    s = spec("template a: y[t-1..t]\ntemplate b: y[t] ~ word[t] (sigma = 2, support = all)")
    base, a, b = s.templates
    assert template_options(base, 10.0) == TemplateOptions(10.0, 1)
    assert template_options(a, 3.0, 2) == TemplateOptions(3.0, 2)
    assert template_options(b, 10.0) == TemplateOptions(2.0, 1, "all")
    c = spec("template c: y[t] ~ word[t] (min_count = 3)").templates[-1]
    assert template_options(c, 10.0, 2) == TemplateOptions(10.0, 3)


# ---------------------------------------------------------------- overrides

@pytest.mark.parametrize("key, value", [
    ("sigma", 1e-3), ("sigma", 100), ("max_iter", 1), ("tol", 1e-9), ("jobs", 0), ("jobs", 8),
    ("min_count", 1), ("min_count", 5),
])
def test_good_overrides(key, value):
    Overrides.of({key: value})


@pytest.mark.parametrize("key, value, message", [
    ("sigma", 0, "the sigma override must be a positive number; found 0"),
    ("sigma", -1.0, "the sigma override must be a positive number; found -1.0"),
    ("sigma", math.nan, "the sigma override must be a positive number; found nan"),
    ("sigma", math.inf, "the sigma override must be a positive number; found inf"),
    ("sigma", "10", "the sigma override must be a positive number; found '10'"),
    ("max_iter", -5, "the max_iter override must be a whole number > 0; found -5"),
    ("max_iter", 2.5, "the max_iter override must be a whole number > 0; found 2.5"),
    ("tol", -1, "the tol override must be a positive number; found -1"),
    ("jobs", -2, "the jobs override must be a whole number >= 0; found -2"),
    ("l1", -0.1, "the l1 override must be a number >= 0; found -0.1"),
    ("l2", 0.1, "unknown train setting override 'l2'; expected one of: sigma, max_iter, tol, "
                "jobs, l1, min_count"),
    ("min_count", 0, "the min_count override must be a whole number > 0; found 0"),
    ("min_count", 2.5, "the min_count override must be a whole number > 0; found 2.5"),
])
def test_bad_overrides(key, value, message):
    with pytest.raises(FglError) as info:
        Overrides.of({key: value})
    assert str(info.value) == message
