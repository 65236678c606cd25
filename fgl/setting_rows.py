"""What a setting row is: a key, its validator, default and meaning.

The bottom layer of the settings tables: ``fgl.lang.settings`` holds the
train and template rows, each inference method
(``fgl.engines.graph.inference``) and each trainer's options
(``fgl.learn.trainers.options``) hold their own; all of them are
``SettingDef`` rows checked by a ``Rule``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Rule:
    """A validator: ``rule(value)`` is None when the value is fine, else
    what was expected (``rule.expected``)."""
    expected: str
    accepts: Callable[[object], bool]

    def __call__(self, value: object) -> str | None:
        return None if self.accepts(value) else self.expected


def is_number(v: object) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def whole_number(low: int) -> Rule:
    """A whole number >= ``low``."""
    return Rule("a whole number > 0" if low == 1 else f"a whole number >= {low}",
                lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low)


def choice(*names: str) -> Rule:
    """One of ``names``."""
    return Rule("one of: " + ", ".join(names), lambda v: isinstance(v, str) and v in names)


POSITIVE = Rule("a positive number", lambda v: is_number(v) and v > 0)
NON_NEGATIVE = Rule("a number >= 0", lambda v: is_number(v) and v >= 0)
DAMPING = Rule("a number d with 0 <= d < 1", lambda v: is_number(v) and 0 <= v < 1)
UNIT_INTERVAL = Rule("a number r with 0 < r <= 1", lambda v: is_number(v) and 0 < v <= 1)


@dataclass(frozen=True)
class SettingDef:
    """One setting: ``key`` in ``block`` ("train", "infer METHOD" or
    "template")."""
    block: str
    key: str
    validator: Rule
    default: object | None          # None: no default (see ``meaning``)
    read_by: str                    # what reads it
    meaning: str                    # one line for the docs
    refusal: str | None = None      # why the checker refuses it (nothing implements it)
