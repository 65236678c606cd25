"""Token tags <-> segmentations, for semi-Markov models.

Data stays one token per line with BIO/IOB or plain labels; the spec's
``segments ... from bio|change [adjacent distinct]`` says how tags make
segments:

* ``bio``: a ``B-X`` tag, or an ``I-X`` after a different type (IOB1), starts
  a segment of type X; ``I-X`` continues it; every ``O`` token (and every
  tag without a prefix) is a segment of its own — with ``adjacent
  distinct``, every run of one such tag is one segment.  Segments back to
  tags: B-X I-X ... for type X, O for O.
* ``change``: a maximal run of one label is a segment.  Segments back to
  tags: every token gets its segment's label.

A segment longer than its label's limit cannot be represented, nor (with
``adjacent distinct``) two adjacent segments with the same label, such as
``B-NP B-NP``: either is a data error naming its lines and what to change
in the spec.
"""
from __future__ import annotations

import re

from fgl.data.sentence import Sentence
from fgl.errors import DataError
from fgl.lang import ast

Segment = tuple[int, int, str]  # first token, last token, label

# a label as `segments max L [...]` takes it without quotes (SEG_LABEL in the grammar)
_BARE_LABEL = re.compile(r'[^\s\[\],"#()=]+')


def _split(tag: str) -> tuple[str, str]:
    if tag != "O" and len(tag) > 2 and tag[1] == "-" and tag[0] in "BIES":
        return tag[0], tag[2:]
    return "", tag


def _runs(tags: list[str]) -> list[Segment]:
    """Every maximal run of one tag."""
    segs: list[Segment] = []
    for t, tag in enumerate(tags):
        if segs and segs[-1][2] == tag:
            segs[-1] = (segs[-1][0], t, tag)
        else:
            segs.append((t, t, tag))
    return segs


def _bio(tags: list[str], distinct: bool) -> list[Segment]:
    """BIO/IOB1 chunks; tags without a prefix one token each, or one run
    each when ``distinct``."""
    segs: list[Segment] = []
    for t, tag in enumerate(tags):
        prefix, kind = _split(tag)
        before = _split(tags[t - 1]) if t else ("", None)
        continues = segs and segs[-1][2] == kind and (
            (prefix in ("I", "E") and before[0] in ("B", "I"))
            or (distinct and prefix == "" and before == ("", kind)))
        if continues:
            segs[-1] = (segs[-1][0], t, kind)
        else:
            segs.append((t, t, kind))
    return segs


def _spec_label(y: str) -> str:
    """``y`` as written in `segments max L [...]`: quoted unless bare."""
    if _BARE_LABEL.fullmatch(y):
        return y
    return '"' + y.replace("\\", "\\\\").replace('"', '\\"') + '"'


def span_limit(decl: ast.Segments, longest: int) -> int:
    """The longest span a unit covers: the longest label limit, clamped to
    the longest sequence (``longest`` tokens)."""
    return min(max([decl.max_length, *decl.per_label.values()]), max(longest, 1))


def segments_from_tags(tags: list[str], decl: ast.Segments, sent: Sentence) -> list[Segment]:
    """The gold segmentation of one sentence's tags (a DataError at its line
    for a segment the spec cannot represent)."""
    segs = _runs(tags) if decl.boundary == "change" else _bio(tags, decl.distinct)
    for u, v, y in segs:
        cap = int(decl.per_label.get(y, decl.max_length))
        if v - u + 1 > cap:
            raise DataError(
                f"a '{y}' segment of {v - u + 1} tokens (lines {sent.lines[u]}-{sent.lines[v]}) "
                f"is longer than the spec allows for '{y}' ({cap}); give '{y}' its own limit, "
                f"as in `segments max {decl.max_length} [{_spec_label(y)} = {v - u + 1}]`, or "
                f"raise `segments max`", sent.file, sent.lines[u])
    if decl.distinct:
        for (_, _, a), (u, _, b) in zip(segs, segs[1:]):
            if a == b:
                raise DataError(
                    f"two adjacent '{a}' segments (the second starts at line {sent.lines[u]}), "
                    "but the spec says `adjacent distinct`, which forbids adjacent segments with "
                    "the same label; join them in the data or drop `adjacent distinct`",
                    sent.file, sent.lines[u])
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
