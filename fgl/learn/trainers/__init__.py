"""The trainers, and the one check of a spec's train settings against the
trainer that runs it.

To add a trainer: declare its options class (``fgl.learn.trainer_options``:
one field per train setting it reads, with default, rule and meaning) and a
``Trainer`` (``fgl.learn.trainers.base``) naming it — its ``fit`` importing
the algorithm when it runs, so that reading the declarations (``fgl check``)
stays light — and ``register_trainer`` it (the built-in ones are listed in
``TRAINERS`` and their options in ``fgl.learn.trainer_options``): `trainer =
NAME`, the settings table, the checks and the docs then know it.  ``choose``
picks the trainer for a spec; ``setting_errors`` lists the train settings
that trainer does not read, which ``fgl check`` reports and training
refuses; ``trainers_markdown`` documents them (``docs/settings.md``).
"""
from __future__ import annotations

from fgl.engines.graph.inference import methods_markdown
from fgl.errors import SpecError
from fgl.lang import ast
from fgl.lang.settings import TrainSettings, resolve_train, settings_markdown
from fgl.learn.trainer_options import (
    register_trainer_options,
    trainer_names,
    unregister_trainer_options,
)
from fgl.learn.trainers.base import READ_BY_ALL, Trainer
from fgl.learn.trainers.ecrn import ECRN
from fgl.learn.trainers.induction import INDUCTION, candidates
from fgl.learn.trainers.lbfgs import LBFGS, OWLQN
from fgl.learn.trainers.perceptron import PERCEPTRON
from fgl.learn.trainers.sgd import SGD

_BUILT_IN: tuple[Trainer, ...] = (LBFGS, OWLQN, SGD, PERCEPTRON, ECRN, INDUCTION)
TRAINERS: list[Trainer] = list(_BUILT_IN)   # (and those register_trainer adds)


def named() -> dict[str, Trainer]:
    """The trainers `trainer = NAME` names, by name (owlqn and feature
    induction are chosen by the spec's shape instead)."""
    return {t.name: t for t in TRAINERS if t.name in trainer_names()}


def register_trainer(trainer: Trainer) -> None:
    """Add ``trainer``: `trainer = NAME` (its ``name``) then runs it,
    reading the settings of its ``options`` class."""
    if any(t.name == trainer.name for t in TRAINERS):
        raise ValueError(f"trainer {trainer.name!r} is registered already")
    register_trainer_options(trainer.name, trainer.options)
    TRAINERS.append(trainer)


def unregister_trainer(name: str) -> None:
    """Take a trainer ``register_trainer`` added back out."""
    if any(t.name == name for t in _BUILT_IN):
        raise ValueError(f"{name!r} is built in")
    TRAINERS[:] = [t for t in TRAINERS if t.name != name]
    unregister_trainer_options(name)


def choose(spec: ast.Spec, settings: TrainSettings) -> Trainer:
    """The trainer of ``spec``: feature induction when a template holds
    candidate tests (``induce``), else the one ``trainer`` names — OWL-QN
    for L-BFGS with an L1 penalty."""
    if candidates(spec) is not None:
        return INDUCTION
    trainer = named()[settings.trainer]
    return OWLQN if trainer is LBFGS and settings.options(LBFGS.options).l1 > 0 else trainer


def unread_message(trainer: Trainer, key: str) -> str:
    """Why the train setting ``key`` is refused under ``trainer``."""
    readers = [t for t in TRAINERS if key in t.reads]
    only = (f"; it is read by {readers[0].display} only ({readers[0].chosen_when})"
            if len(readers) == 1 else "")
    return (f"train: `{key}` is not read by {trainer.display}{trainer.hint}{only}; remove it "
            "or change the trainer")


def setting_errors(spec: ast.Spec) -> list[SpecError]:
    """The settings of the spec's train block its trainer does not read,
    each an error at the setting (``fgl check`` reports them all; training
    refuses the first)."""
    if any(s.key == "trainer" and s.value not in trainer_names() for s in spec.train):
        return []   # (an unknown trainer: the checker says so)
    trainer = choose(spec, resolve_train(spec))
    return [SpecError(unread_message(trainer, s.key), s.loc.file, s.loc.line, s.loc.col)
            for s in spec.train if not trainer.reads_setting(s.key, s.value)]


def trainers_markdown() -> str:
    """The trainers as a Markdown section of ``docs/settings.md``."""
    rows = ["## Trainers", "",
            "Generated from `fgl/learn/trainers/`. A trainer reads the train settings listed "
            f"and {', '.join(f'`{k}`' for k in READ_BY_ALL)}; any other in the train block is "
            "refused at the setting (by `fgl check` too).", "",
            "| trainer | chosen when | what it is | reads | engines | checkpoints | "
            "partial labels | Dask |",
            "|---|---|---|---|---|---|---|---|"]
    for t in TRAINERS:
        reads = ", ".join(f"`{k}`" for k in t.reads) or "—"
        engines = ", ".join(t.engines) if t.engines else "all"
        title = t.title.replace("|", "\\|")   # (a bar would end the table cell)
        rows.append(f"| {t.name} | {t.chosen_when} | {title} | {reads} | {engines} | "
                    f"{_yes(t.checkpoints)} | {_yes(t.partial_labels)} | "
                    f"{_yes(t.distributed)} |")
    return "\n".join(rows) + "\n"


def settings_doc() -> str:
    """The text of ``docs/settings.md``: every setting, the trainers, then
    the inference methods (``python -m fgl.learn.trainers > docs/settings.md``
    writes it)."""
    return settings_markdown() + "\n" + trainers_markdown() + "\n" + methods_markdown()


def trainers_help() -> str:
    """The trainers for ``fgl train --help``: name, when it runs, what it reads."""
    lines = ["trainers (docs/settings.md):"]
    for t in TRAINERS:
        reads = ", ".join(t.reads) or "no setting but jobs"
        lines.append(f"  {t.name:<11} {t.chosen_when}; reads {reads}")
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
