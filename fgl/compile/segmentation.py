"""Token tags <-> segmentations, for semi-Markov models.

Data stays one token per line with BIO/IOB or plain labels; the spec's
``segments ... from bio|change`` says how tags make segments:

* ``bio``: a ``B-X`` tag, or an ``I-X`` after a different type (IOB1), starts
  a segment of type X; ``I-X`` continues it; every ``O`` token (and every
  tag without a prefix) is a segment of its own.  Segments back to tags:
  B-X I-X ... for type X, O for O.
* ``change``: a maximal run of one label is a segment; a run longer than the
  label's length limit is cut into pieces of at most that length (adjacent
  segments may share a label, Cuong et al. 2014 §2).  Segments back to tags: every
  token gets its segment's label.

A ``bio`` chunk longer than its length limit cannot be represented and is a
data error naming the line.
"""
from __future__ import annotations

from fgl.errors import DataError
from fgl.io.conll import Sentence
from fgl.lang import ast

Segment = tuple[int, int, str]  # first token, last token, label


def _split(tag: str) -> tuple[str, str]:
    if tag != "O" and len(tag) > 2 and tag[1] == "-" and tag[0] in "BIES":
        return tag[0], tag[2:]
    return "", tag


def segments_from_tags(tags: list[str], decl: ast.Segments, sent: Sentence) -> list[Segment]:
    """The gold segmentation of one sentence's tags."""
    limit = {name: min(int(m), decl.max_length) for name, m in decl.per_label.items()}
    segs: list[Segment] = []
    if decl.boundary == "change":
        u = 0
        for t in range(1, len(tags) + 1):
            if t == len(tags) or tags[t] != tags[u]:
                cap = limit.get(tags[u], decl.max_length)
                for a in range(u, t, cap):
                    segs.append((a, min(a + cap, t) - 1, tags[u]))
                u = t
        return segs
    for t, tag in enumerate(tags):
        prefix, kind = _split(tag)
        continues = (prefix in ("I", "E") and segs and segs[-1][2] == kind
                     and segs[-1][1] == t - 1 and _split(tags[t - 1])[0] in ("B", "I"))
        if continues:
            u, _, _ = segs[-1]
            segs[-1] = (u, t, kind)
        else:
            segs.append((t, t, kind))
    for u, v, y in segs:
        cap = limit.get(y, decl.max_length)
        if v - u + 1 > cap:
            raise DataError(f"a '{y}' segment of {v - u + 1} tokens (lines {sent.lines[u]}-"
                            f"{sent.lines[v]}) is longer than the spec allows ({cap}); raise "
                            f"`segments max` or the limit for '{y}'", sent.file, sent.lines[u])
    return segs


def tags_from_segments(segs: list[Segment], T: int, boundary: str) -> list[str]:
    """Token tags of a segmentation (the inverse of ``segments_from_tags``)."""
    tags = [""] * T
    for u, v, y in segs:
        if boundary == "change" or y == "O":
            tags[u:v + 1] = [y] * (v - u + 1)
        else:
            tags[u:v + 1] = [f"B-{y}"] + [f"I-{y}"] * (v - u)
    return tags
