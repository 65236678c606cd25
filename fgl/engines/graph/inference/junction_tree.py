"""``infer junction_tree``: the exact junction tree for every instance
(Koller & Friedman 2009 ch. 10); an instance whose clique tables exceed
``max_table`` is an error."""
from __future__ import annotations

from typing import Any

from fgl.engines.graph.inference.method import CITE, ENGINE_READS, InferenceMethod
from fgl.setting_rows import SettingDef, whole_number

DEFAULT_MAX_TABLE = 1_000_000   # the largest clique table `infer junction_tree` may build

SETTINGS = (
    SettingDef("infer junction_tree", "max_table", whole_number(1), DEFAULT_MAX_TABLE,
               ENGINE_READS.format("junction-tree", "size limit"),
               "the largest clique table (entries) an instance may need; a larger one is an "
               "error (exact inference, Koller & Friedman 2009 ch. 10)"),
)


def _title(settings: Any, acyclic: bool) -> str:
    return (f"a factor graph per instance: exact junction tree (an error where a clique table "
            f"would exceed {settings.max_table} entries) (Koller & Friedman 2009 ch. 10; "
            f"{CITE})")


METHOD = InferenceMethod("junction_tree", _title, SETTINGS, None, advice=lambda settings: [],
                         junction_tree=True, exact=True)
