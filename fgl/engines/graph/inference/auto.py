"""``infer auto``, the default: per instance the exact junction tree when
its clique tables fit ``max_table``, tree-reweighted BP otherwise."""
from __future__ import annotations

from typing import Any

from fgl.engines.graph.inference import trw
from fgl.engines.graph.inference.method import (
    CITE,
    ENGINE_READS,
    InferenceMethod,
    message_advice,
)
from fgl.setting_rows import DAMPING, POSITIVE, SettingDef, whole_number

# the largest clique table `infer auto` builds rather than run BP: the junction tree's work is
# its clique tables, BP's a few passes over the factor tables, so past about this size
# (a factorial CRF over POS x chunk labels: cliques of 40·40·17 = 27200 entries against
# factors of 1600) BP is cheaper by an order of magnitude
AUTO_MAX_TABLE = 10_000
_READS = "auto"

SETTINGS = (
    SettingDef("infer auto", "max_table", whole_number(1), AUTO_MAX_TABLE,
               ENGINE_READS.format(_READS, "junction-tree size limit"),
               "per instance: the exact junction tree when its largest clique table has at most "
               "this many entries, tree-reweighted BP (`infer trw`, the settings below) "
               "otherwise"),
    # the trw rows, for the instances auto leaves to tree-reweighted BP
    SettingDef("infer auto", "damping", DAMPING, 0.0,
               ENGINE_READS.format(_READS, "message damping of TRW"),
               "TRW instances: keep this share of each old message (0: none; raised by itself "
               "when the residual stalls)"),
    SettingDef("infer auto", "max_iter", whole_number(1), 100,
               ENGINE_READS.format(_READS, "iteration limit of TRW"),
               "TRW instances: the most sweeps over the variables"),
    SettingDef("infer auto", "tol", POSITIVE, 1e-5,
               ENGINE_READS.format(_READS, "convergence tolerance of TRW"),
               "TRW instances: stop when no variable's belief moves by more than this in one "
               "sweep"),
)


def _title(settings: Any, acyclic: bool) -> str:
    if acyclic:
        return (f"a factor graph per instance: exact junction tree where the largest clique "
                f"table ≤ {settings.max_table}, tree-reweighted BP elsewhere; every instance "
                f"here is a tree or forest, so inference is exact throughout "
                f"(Koller & Friedman 2009 ch. 10; {CITE})")
    return (f"a factor graph per instance: exact junction tree where the largest clique table "
            f"≤ {settings.max_table}, tree-reweighted BP elsewhere (a convex objective with one "
            f"optimum, which training needs; Wainwright, Jaakkola & Willsky 2005) "
            f"(Koller & Friedman 2009 ch. 10; {CITE})")


METHOD = InferenceMethod("auto", _title, SETTINGS, trw.run, advice=message_advice,
                         junction_tree=True, blocks=True, keeps_messages=True, convex=True,
                         messages=True, fallback="tree-reweighted BP")
