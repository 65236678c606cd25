"""The trainer registry: each trainer declares what it reads, and one
generic check refuses the rest (``fgl.learn.trainers``, ``fgl.learn.run``)."""
from __future__ import annotations

import pytest

from fgl import registry
from fgl.errors import FglError, SpecError
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.lang.settings import block_settings, resolve_train
from fgl.learn.run import TrainingRun
from fgl.learn.trainers import TRAINERS, choose, named, setting_errors, trainers_markdown
from fgl.learn.trainers.base import READ_BY_ALL

CHAIN = "columns word, label\noutput label\ntemplate s: y[t] ~ word[t]\ntemplate t: y[t-1..t]\n"
INDUCE = "columns word, label\noutput label\ntemplate c: y[t] ~ word[t] (induce = 2)\n"


def spec(text: str):
    return validate(parse_spec(text, "t.fgl"))


def test_the_spec_names_exactly_the_registered_trainers():
    assert set(block_settings("train")["trainer"].validator.expected[len("one of: "):]
               .split(", ")) == set(named())
    assert set(named().values()) <= set(TRAINERS)
    assert len({t.name for t in TRAINERS}) == len(TRAINERS)


@pytest.mark.parametrize("text, name", [
    (CHAIN, "lbfgs"),
    (CHAIN + "train { l1 = 0.5 }\n", "owlqn"),
    (CHAIN + "train { trainer = sgd }\n", "sgd"),
    (CHAIN + "train { trainer = perceptron }\n", "perceptron"),
    (CHAIN + "train { trainer = ecrn }\n", "ecrn"),
    (INDUCE, "induction"),
])
def test_the_spec_chooses_its_trainer(text, name):
    s = spec(text)
    assert choose(s, resolve_train(s)).name == name


def _value(key: str):
    """A valid value of the train setting ``key`` (its default, or one)."""
    default = block_settings("train")[key].default
    return {"trainer": "lbfgs", "objective": "piecewise", "bp_start": "warm",
            "l1": 0.5, "learning_rate": 0.1, "memory": 12}.get(key, default)


@pytest.mark.parametrize("trainer", TRAINERS, ids=lambda t: t.name)
def test_every_setting_is_refused_exactly_when_the_trainer_does_not_read_it(trainer):
    """For each trainer and each train setting: `fgl check` (and so
    training) refuses it at the setting iff the trainer neither reads nor
    accepts it at that value."""
    base = {"lbfgs": CHAIN, "owlqn": CHAIN + "train { l1 = 0.5 }\n",
            "perceptron": CHAIN + "train { trainer = perceptron }\n",
            "sgd": CHAIN + "train { trainer = sgd }\n",
            "ecrn": CHAIN + "train { trainer = ecrn }\n", "induction": INDUCE}[trainer.name]
    for key in block_settings("train"):
        if key == "trainer" or (key == "l1" and trainer.name == "owlqn"):
            continue
        value = _value(key)
        block = f"train {{ {key} = {value} }}\n"
        if "train {" in base:
            text = base.replace("train { ", f"train {{ {key} = {value}  ", 1)
        else:
            text = base + block
        s = spec(text)
        if choose(s, resolve_train(s)) is not trainer:   # (l1 > 0 makes lbfgs OWL-QN)
            continue
        errors = setting_errors(s)
        readable = trainer.reads_setting(key, value)
        assert (errors == []) == readable, (trainer.name, key, errors)
        if errors:
            assert f"`{key}` is not read by {trainer.display}" in str(errors[0])
            assert errors[0].line == text.splitlines().index(
                next(line for line in text.splitlines() if line.startswith("train"))) + 1


def test_what_every_trainer_reads_is_never_refused():
    for trainer in TRAINERS:
        assert all(trainer.reads_setting(k, None) for k in READ_BY_ALL)


def _run(text: str, **options) -> TrainingRun:
    s = spec(text)
    overrides = options.pop("overrides", {})
    return TrainingRun(s, registry.choose(s), resolve_train(s, overrides), **options)


def test_overrides_a_trainer_does_not_read_are_refused_together(tmp_path):
    run = _run(CHAIN + "train { trainer = perceptron }\n", overrides={"sigma": 2.0, "tol": 1e-3},
               checkpoint=tmp_path / "c.fglm")
    with pytest.raises(FglError, match=r"trainer perceptron takes no sigma, tol, checkpoint "
                                       r"\(L-BFGS settings\)"):
        run.check()
    _run(CHAIN + "train { trainer = perceptron }\n", overrides={"max_iter": 3, "l1": 0.0}).check()


def test_an_engine_the_trainer_does_not_train_is_refused_at_the_template():
    text = INDUCE + "template g: (y[t-2], y[t])\n"
    with pytest.raises(SpecError, match="works on chain models") as info:
        _run(text).check()
    assert info.value.line == 3


def test_distributed_runs_take_only_trainers_that_train_any_objective():
    for text in (CHAIN + "train { trainer = perceptron }\n", INDUCE):
        run = _run(text)
        run.check()
        with pytest.raises(FglError, match="runs on one machine"):
            run.check(distributed=True)
    _run(CHAIN + "train { l1 = 0.5 }\n").check(distributed=True)


def test_the_trainers_table_lists_every_trainer_and_what_it_reads():
    table = trainers_markdown()
    for trainer in TRAINERS:
        row = next(line for line in table.splitlines() if line.startswith(f"| {trainer.name} |"))
        assert all(f"`{k}`" in row for k in trainer.reads)
        assert row.count(" | ") == 7     # (no bar inside a cell)


@pytest.mark.parametrize("block, refused", [
    ("epochs = 3  batch = 2", ["epochs", "batch"]),
    ("trainer = perceptron  sigma = 2  max_iter = 5  tol = 1e-3  bp_start = cold  l1 = 1",
     ["sigma", "max_iter", "tol", "bp_start", "l1"]),
    ("trainer = perceptron  objective = likelihood  l1 = 0  epochs = 2  batch = 3", []),
    ("trainer = ecrn  sigma = 2  epochs = 3  min_count = 2  jobs = 1", ["sigma", "epochs"]),
    ("sigma = 2  l1 = 0.5  bp_start = warm  objective = piecewise  epochs = 4", ["epochs"]),
])
def test_what_each_trainer_refuses(block, refused):
    errors = setting_errors(spec(CHAIN + f"train {{ {block} }}\n"))
    assert [str(e).split("`")[1] for e in errors] == refused


def test_feature_induction_refuses_what_l_bfgs_alone_does_not_take():
    errors = setting_errors(spec(INDUCE + "train { l1 = 1  induce_rounds = 2  epochs = 2 }\n"))
    assert [str(e).split("`")[1] for e in errors] == ["l1", "epochs"]
    assert "feature induction trains by L-BFGS alone" in str(errors[0])
    errors = setting_errors(spec(CHAIN + "train { induce_rounds = 2 }\n"))
    assert "read by feature induction only" in str(errors[0])
