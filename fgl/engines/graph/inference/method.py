"""What an inference method declares: one entry of the table in
``fgl.engines.graph.inference`` (in the manner of PGMax's ``Inferer``: one
object per method, read by everything that depends on the method).

The entry is data and small functions; its ``run`` imports the kernel it
calls when it runs, so reading the table (``fgl check``, the docs) loads no
numba code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from fgl.setting_rows import SettingDef


class Run(Protocol):
    """One instance's inference: ``run(program, graph, table, use_max=,
    init=, tol=, max_iter=, damping=)`` returns a ``loopy.BPResult``
    (``tol``, ``max_iter`` and ``damping`` None: the spec's settings, on
    ``program.settings``; ``init``: messages of an earlier run or None)."""

    def __call__(self, program: Any, graph: Any, table: Any, *, use_max: bool, init: Any,
                 tol: float | None, max_iter: int | None, damping: float | None) -> Any: ...


def _no_lines(program: Any, graphs: list) -> list[str]:
    return []


@dataclass(frozen=True)
class InferenceMethod:
    """One inference method, as ``infer NAME(...)`` names it.

    - ``settings``: its rows (block ``infer NAME``), checked and documented
      with the others (``fgl.lang.settings``);
    - ``title(settings, acyclic)``: what runs, with the paper it follows
      (``acyclic``: every instance is a tree or forest);
    - ``run``: the kernel entry for one instance, None when the method has
      none besides the junction tree (an instance too big is an error);
    - ``junction_tree``: each instance runs by the exact junction tree when
      its clique tables fit the setting ``max_table`` (then by ``run``);
    - ``blocks``: training runs its ``run`` instances in blocks through
      ``trw_training.expect_block`` (``run`` is tree-reweighted BP);
    - ``keeps_messages``: ``run`` returns messages a later run may start
      from (warm starts while training);
    - ``convex``: its free energy has one fixed point, so a warm start
      changes only the path (training warm-starts it by default, from a
      loose tolerance refined down to the spec's);
    - ``exact``: its marginals and log Z are exact;
    - ``messages``: the memory estimate (``fgl.compile.footprint``) counts
      BP's cached schedules and message scratch for its ``run`` instances;
    - ``advice(settings)``: what to try when ``run`` does not converge;
    - ``describe(program, graphs)``: extra lines for ``fgl explain``;
    - ``fallback``: what runs the instances the junction tree does not
      (for ``fgl explain``)."""

    name: str
    title: Callable[[Any, bool], str]
    settings: tuple[SettingDef, ...]
    run: Run | None
    advice: Callable[[Any], list[str]]
    junction_tree: bool = False
    blocks: bool = False
    keeps_messages: bool = False
    convex: bool = False
    exact: bool = False
    messages: bool = False
    describe: Callable[[Any, list], list[str]] = _no_lines
    fallback: str = ""

    def __post_init__(self) -> None:
        wrong = [s.key for s in self.settings if s.block != f"infer {self.name}"]
        if wrong:
            raise ValueError(f"inference method {self.name}: settings {wrong} are not in "
                             f"block 'infer {self.name}'")


def message_advice(settings: Any, damping: bool = True, also: tuple[str, ...] = ()
                   ) -> list[str]:
    """The advice for message passing that stopped at ``max_iter``: damping
    (when ``damping`` and none is set), more iterations, ``also``, a looser
    ``tol``."""
    advice = [f"more iterations (`max_iter` is {settings.max_iter})"]
    if damping and not settings.damping:
        advice.insert(0, f"damping (`infer {settings.method}(damping = 0.5)`)")
    return advice + list(also) + [f"a looser `tol` (now {settings.tol:g})"]


ENGINE_READS = "{} engine: {} (fgl.engines.graph.factor_graph_program)"
CITE = "Sutton & McCallum §1.4.4, §1.5"
