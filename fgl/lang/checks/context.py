"""Where column references may be read, by what is being checked."""
from __future__ import annotations

from contextlib import contextmanager
from enum import Enum
from typing import Iterator


class Context(Enum):
    """What an observation expression is being read for; it decides which
    indexes a column reference may use."""
    TOKEN = "token"              # a chain template or named observation: t
    SEGMENT = "segment"          # a segment model: u (first token), v (last)
    PAIR = "pair"                # a pair template's observations: i, j
    WHERE = "where"              # a pair template's `where` clause: i, j
    EITHER = "either"            # inside either(...): t, read at both ends
    GRAPH_NODE = "graph_node"    # a graph model's one-node template: a
    GRAPH_PAIR = "graph_pair"    # a graph model's edge template: a, b
    GRAPH_WHERE = "graph_where"  # its `where` clause: a, b
    AGGREGATE = "aggregate"      # inside AGG(... over ...): the linked node b, the mention j


class Reading:
    """The current context ``ctx``, changed for the length of a ``with``
    block by ``reading``."""
    ctx: Context

    @contextmanager
    def reading(self, ctx: Context) -> Iterator[None]:
        saved, self.ctx = self.ctx, ctx
        try:
            yield
        finally:
            self.ctx = saved
