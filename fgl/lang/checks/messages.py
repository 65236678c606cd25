"""Vocabularies of the language and the messages other modules and tests
reuse (formatted with ``labels``, a template's labels as written)."""
from __future__ import annotations

from fgl.lang.builtins import BUILTINS

COLUMN_KINDS = ("text", "number", "vector")
INPUT_FORMATS = ("conll", "graph")
SEGMENT_BOUNDARIES = ("bio", "change")
WITHIN_SCOPES = ("sentence", "document")
ZERO_ARG = sorted(n for n, b in BUILTINS.items() if b.takes is None)
FUNCTIONS = sorted(n for n, b in BUILTINS.items() if b.takes is not None)

REPEATED_LABEL = ("template labels {labels} name {ref} twice; a clique holds each label "
                  "variable once")
NONCONTIGUOUS_SEGMENT_WINDOW = ("template labels {labels} are not a contiguous window "
                                "s[j-k..j]; only windows of consecutive segments are supported "
                                "by the exact semi-Markov engine")
NEED_SEGMENTS = "declare `segments max L` for a semi-Markov (segment) model"
NEED_GRAPH = "declare `input graph` for graph-structured instances (JSON lines)"
NEEDS_WHERE = ("a pair template {labels} needs a `where` clause saying which pairs are linked, "
               "as in `where word[i] == word[j]` (or `within document` to link every pair of a "
               "document)")
NEEDS_EDGE = ('a pair template {labels} needs a `where` clause saying which pairs are linked: '
              'in a graph model, `where edge(a, b, "type")`')
SEGMENTS_AND_PAIRS = "segments and pair templates cannot be combined"
GRAPH_TEMPLATES = ('in a graph model (`input graph`) templates range over nodes: y[a] for one '
                   'node, or (y[a], y[b]) where edge(a, b, "type") for two linked nodes')
