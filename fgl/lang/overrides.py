"""The train settings a caller may override, declared once.

Each ``OverrideDef`` names a train setting, its flag of ``fgl train`` and
its help; ``fgl train``'s flags (``fgl.cli.options.add_override_flags``) and
``fgl.CRF``'s keywords (``CRF(spec, sigma=..., ...)``) are these rows.  The
values a caller gives become one ``fgl.lang.settings.Overrides``
(``Overrides.of``), checked there and nowhere else, which
``resolve_train`` applies last.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OverrideDef:
    """One overridable train setting: ``key`` (its name in a spec and as a
    keyword of ``fgl.CRF``), ``flag`` of ``fgl train`` (None: a flag other
    commands share, as ``--jobs``), whether it is a whole number, the
    flag's ``metavar`` and ``help``."""

    key: str
    flag: str | None
    whole: bool
    help: str
    metavar: str | None = None


OVERRIDE_DEFS: tuple[OverrideDef, ...] = (
    OverrideDef("sigma", "--sigma", False, "override the spec's Gaussian prior sigma"),
    OverrideDef("max_iter", "--max-iter", True,
                "override the spec's L-BFGS iteration limit (the epochs of trainers sgd and "
                "perceptron)"),
    OverrideDef("tol", "--tol", False, "override the spec's stopping tolerance"),
    OverrideDef("jobs", None, True, "worker threads; 0 means one per core"),
    OverrideDef("l1", "--l1", False,
                "override the spec's L1 penalty (above 0: OWL-QN, exact zeros; with sigma, the "
                "elastic net)"),
    OverrideDef("min_count", "--min-count", True,
                "override the spec's feature cut-off: attributes seen fewer than N times in the "
                "training data get no weights (CRF++'s -f; docs/settings.md)", "N"),
)
OVERRIDES = tuple(d.key for d in OVERRIDE_DEFS)

