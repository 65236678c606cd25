"""The training curve a model file keeps: the training log's per-iteration
rows as columns of numbers (the header's ``meta["curve"]``).

A row of ``fgl.learn.learner.TrainingLog.iterations`` becomes one entry of
each column: its numbers as they are (objective, gradient norm,
evaluations, seconds; SGD's learning rate, the perceptron's mistakes), and
from its inference statistics BP's sweeps and the instances BP left
unconverged (loopy models).  Recoveries from failed line searches are kept
by iteration, feature induction's rounds with their development score.
Columns, not rows of objects: the header stays a few lists however long
the run (``fgl.modelfile.model_header`` bounds its density).  A file written
before the curve was kept simply has none; the format's version is
unchanged (docs/files.md).
"""
from __future__ import annotations

import math
from typing import Any

META_KEY = "curve"
STATS = ("sweeps", "not_converged")   # taken from a row's inference statistics


def _number(value: Any) -> float | int | None:
    """``value`` as a JSON number (None: not a finite number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _columns(rows: list[dict]) -> dict[str, list]:
    names: list[str] = []
    for row in rows:
        names += [k for k, v in row.items() if k not in names and _number(v) is not None]
    out = {name: [_number(row.get(name)) for row in rows] for name in names}
    if any(row.get("inference") is not None for row in rows):
        for name in STATS:
            out[name] = [_number(getattr(row.get("inference"), name, None)) for row in rows]
    return out


def training_curve(log: Any) -> dict:
    """What a model file keeps of ``log`` (a ``TrainingLog``): its
    iteration rows and induction rounds as columns, its recoveries'
    iterations and messages."""
    curve: dict[str, Any] = {"iterations": _columns(log.iterations)}
    if log.recoveries:
        curve["recoveries"] = {"iteration": [int(r["iteration"]) for r in log.recoveries],
                               "message": [str(r.get("message", "")) for r in log.recoveries]}
    if log.rounds:
        curve["rounds"] = _columns(log.rounds)
    return curve


def stored_curve(meta: dict) -> dict | None:
    """The curve a model file's metadata holds (None: none kept, or not
    one: a file from before curves, or edited)."""
    curve = meta.get(META_KEY)
    if not isinstance(curve, dict) or not isinstance(curve.get("iterations"), dict):
        return None
    return curve
