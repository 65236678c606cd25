"""``infer exact``: enumeration of every joint assignment (small instances only)."""
from __future__ import annotations

from typing import Any

from fgl.engines.graph.inference.method import CITE, ENGINE_READS, InferenceMethod
from fgl.setting_rows import SettingDef, whole_number

SETTINGS = (
    SettingDef("infer exact", "max_states", whole_number(1), 1_000_000,
               ENGINE_READS.format("exact", "enumeration size limit"),
               "the most joint label assignments one instance may have"),
)


def _title(settings: Any, acyclic: bool) -> str:
    return f"exact enumeration over a factor graph per instance ({CITE})"


def _run(program: Any, graph: Any, table: Any, *, use_max: bool, init: Any,
         tol: float | None, max_iter: int | None, damping: float | None) -> Any:
    from fgl.engines.graph import enumeration
    from fgl.errors import FglError

    try:
        return enumeration.exact(graph, table, int(program.settings.max_states))
    except ValueError as e:
        raise FglError(f"infer exact: {e}; use `infer loopy` or `infer trp`") from None


METHOD = InferenceMethod("exact", _title, SETTINGS, _run, advice=lambda settings: [],
                         exact=True)
