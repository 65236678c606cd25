"""Tag schemes: how a sequence of tags makes chunks.

A tag is ``O`` (outside), ``P-TYPE`` where the prefix ``P`` is one letter of
``B I E S L U`` and ``TYPE`` is everything after the first ``-``, or a *bare*
label without such a prefix (``PER``, ``NN``, ``,``).  Under every chunk
scheme a prefix letter alone (``B``, ``I``, ``E``, ``S``, ``L``, ``U``) is an
*untyped* tag: that prefix with the empty type, as conlleval reads a tag
without ``-`` (CRF++'s basenp data: ``B I O``); its chunks have type ``""``,
printed ``(untyped)``.

Every chunk scheme reads tags left to right by conlleval's rules, so
well-formed tags give the chunks the scheme defines and ill-formed ones are
read as conlleval reads them:

* ``O`` closes any open chunk.
* ``B-X`` closes any open chunk and opens one of type X.
* ``I-X`` continues the open chunk when it has type X and the previous tag
  was ``B-X`` or ``I-X``; otherwise it closes any open chunk and opens a new
  X chunk (an ``I-X`` after ``O``, after another type, at the start, or
  after ``E-X``/``S-X`` starts a chunk).
* ``E-X`` (``L-X``) ends the open chunk, itself included, when it continues
  it by the rule for ``I-X``; otherwise it is a one-token chunk.
* ``S-X`` (``U-X``) closes any open chunk and is a one-token chunk.

The schemes differ in the tags they accept, so that a wrong choice is
caught instead of silently scored:

========  ======================  ============================================
scheme    tags                    chunks
========  ======================  ============================================
bio       O, B-X, I-X (B, I)      IOB2: every chunk starts with B-X
iob1      O, B-X, I-X (B, I)      CoNLL-2003: I-X starts a chunk unless the
                                  previous tag has type X; B-X only starts a
                                  chunk right after one of the same type
iobes     O, B-, I-, E-, S-       B-X I-X* E-X, or S-X alone (BILOU's L- and
          (B, I, E, S, L, U)      U- are read as E- and S-)
io        O, I-X (I)              every maximal run of I-X
iob       all of the above and    any mix (the reading before the schemes
          bare labels             had names); a bare label is a one-token chunk
plain     anything                no chunks: every token is scored by its
                                  label (``chunks`` gives one-token chunks)
runs      anything                every maximal run of one label is a chunk
========  ======================  ============================================

``bio`` and ``iob1`` read any sequence the same way (conlleval reads both
so); they differ in what ``auto`` reports.  ``auto`` chooses from the tags:

1. no tag has a prefix: ``plain`` -- unless every tag is ``O`` or an
   untyped tag and some tag is ``B``: then untyped chunk tags, and the
   steps below choose among ``bio``, ``iob1`` and ``iobes``;
2. prefixed tags mixed with bare labels other than ``O``: ``iob``;
3. some tag has an ``E-``/``S-``/``L-``/``U-`` prefix: ``iobes``;
4. some gold chunk starts with ``I-`` (at the start of a sequence, after
   ``O`` or after another type): ``iob1``;
5. otherwise ``bio``.

Steps 1-3 look at gold and predicted tags, step 4 at the gold tags (the
predicted ones when gold has no prefixed tag).  ``auto`` never picks ``io``
(``iob1`` reads IO tags identically) nor ``runs`` (``fgl.api.eval_scheme``
picks ``runs`` for a segment model ``from change``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from fgl.errors import FglError

SCHEMES = ("auto", "bio", "iob1", "iobes", "io", "iob", "plain", "runs")
ALIASES = {"iob2": "bio", "bilou": "iobes"}
CHUNK_SCHEMES = ("bio", "iob1", "iobes", "io", "iob")

_PREFIX = {"B": "B", "I": "I", "E": "E", "S": "S", "L": "E", "U": "S"}
_ACCEPTS = {  # prefixes a scheme reads ("" is a bare label)
    "bio": {"O", "B", "I"},
    "iob1": {"O", "B", "I"},
    "iobes": {"O", "B", "I", "E", "S"},
    "io": {"O", "I"},
    "iob": {"O", "B", "I", "E", "S", ""},
}
_TAGS = {"bio": "O, B-TYPE and I-TYPE (or untyped B, I)",
         "iob1": "O, B-TYPE and I-TYPE (or untyped B, I)",
         "iobes": "O, B-, I-, E- and S-TYPE (or BILOU's L- and U-; or untyped B, I, E, S)",
         "io": "O and I-TYPE (or untyped I)"}

Chunk = tuple[str, int, int]


class TagError(FglError, ValueError):
    """A tag the chosen scheme does not read; ``where`` is its place, e.g.
    ``gold[3][5]`` (sequence 3, token 5, counted from 0)."""

    def __init__(self, tag: str, scheme: str, where: str = ""):
        self.tag, self.scheme, self.where = tag, scheme, where
        super().__init__(self.describe(f"{where} is " if where else ""))

    def describe(self, found: str) -> str:
        """The message, with ``found`` (e.g. ``"gold[3][5] is "``) before the tag."""
        return (f"scheme {self.scheme} reads {_TAGS[self.scheme]} tags; {found}{self.tag!r}, "
                f"which {suggest(self.tag)} reads (scheme auto chooses from the tags; iob "
                "reads any mix)")


def split(tag: str) -> tuple[str, str]:
    """(prefix, type): the prefix is one of ``B I E S`` (``L``, ``U`` read as
    ``E``, ``S``), ``"O"`` for ``O``, or ``""`` for a bare label."""
    if tag == "O":
        return "O", ""
    if len(tag) >= 2 and tag[1] == "-" and tag[0] in _PREFIX:
        return _PREFIX[tag[0]], tag[2:]
    return "", tag


def split_untyped(tag: str) -> tuple[str, str]:
    """``split``, but a bare prefix letter (``B``, ``I``, ``E``, ``S``, ``L``,
    ``U``) is an untyped tag: that prefix, of the empty type (as conlleval
    reads a tag without ``-``)."""
    if tag in _PREFIX:
        return _PREFIX[tag], ""
    return split(tag)


def suggest(tag: str) -> str:
    """The scheme that reads ``tag`` (for messages)."""
    p = split_untyped(tag)[0]
    return {"B": "bio", "I": "bio or iob1", "E": "iobes", "S": "iobes"}.get(p, "plain or runs")


def normalise(scheme: str) -> str:
    """The canonical name of ``scheme`` (case and aliases); ``ValueError``
    for an unknown one."""
    s = ALIASES.get(scheme.lower(), scheme.lower())
    if s not in SCHEMES:
        names = ", ".join([*SCHEMES, *ALIASES])
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {names}")
    return s


def check(seqs: Sequence[Sequence[str]], scheme: str, side: str = "tags") -> None:
    """Raise ``TagError`` at the first tag of ``seqs`` that ``scheme`` does
    not read (nothing to check for plain and runs)."""
    accepts = _ACCEPTS.get(scheme)
    if accepts is None:
        return
    bad = {t for seq in seqs for t in set(seq) if split_untyped(t)[0] not in accepts}
    if not bad:
        return
    for i, seq in enumerate(seqs):
        for j, tag in enumerate(seq):
            if tag in bad:
                raise TagError(tag, scheme, f"{side}[{i}][{j}]")


def resolve(scheme: str, gold: Sequence[Sequence[str]],
            *preds: Sequence[Sequence[str]]) -> str:
    """The scheme to use: ``scheme`` itself, or for ``"auto"`` the one the
    tags call for (module docstring)."""
    s = normalise(scheme)
    if s != "auto":
        return s
    tags: set[str] = set()
    for seqs in (gold, *preds):
        for seq in seqs:
            tags.update(seq)
    prefixes = {split(t)[0] for t in tags}
    cut = split
    if not prefixes & {"B", "I", "E", "S"}:
        if "B" not in tags or not tags <= {"O", *_PREFIX}:
            return "plain"
        cut = split_untyped   # untyped chunk tags: B and O, I, E, S (as conlleval reads them)
        prefixes = {cut(t)[0] for t in tags}
    if "" in prefixes:
        return "iob"
    if prefixes & {"E", "S"}:
        return "iobes"
    has_prefix = any(cut(t)[0] in ("B", "I") for seq in gold for t in seq)
    for seqs in (gold,) if has_prefix else preds:
        for seq in seqs:
            if _starts_with_i(seq, cut):
                return "iob1"
    return "bio"


def _starts_with_i(tags: Sequence[str], cut=split) -> bool:
    """Whether some chunk of ``tags`` starts with ``I`` (first, after ``O``
    or after another type)."""
    prev, prev_type = "O", ""
    for tag in tags:
        p, typ = cut(tag)
        if p == "I" and (prev not in ("B", "I") or prev_type != typ):
            return True
        prev, prev_type = p, typ
    return False


def chunks(tags: Sequence[str], scheme: str = "iob",
           ignore: Iterable[str] = ("O",)) -> list[Chunk]:
    """The chunks of one tag sequence as ``(type, start, end_exclusive)``,
    without those whose type is in ``ignore`` (module docstring).

    ``plain`` gives every token whose label is not ignored as a one-token
    chunk (its type the whole label); ``runs`` every maximal run of one
    label.  ``TagError`` for a tag the scheme does not read.
    """
    scheme = resolve(scheme, [tags])
    skip = set(ignore) - {""}   # "" ignores nothing (and is the type of untyped chunks)
    if scheme == "plain":
        return [(t, i, i + 1) for i, t in enumerate(tags) if t not in skip]
    if scheme == "runs":
        starts = [i for i in range(len(tags)) if i == 0 or tags[i] != tags[i - 1]]
        return [(tags[u], u, v) for u, v in zip(starts, [*starts[1:], len(tags)])
                if tags[u] not in skip]
    check([tags], scheme)
    return [c for c in _read(tags) if c[0] not in skip]


def _read(tags: Sequence[str]) -> list[Chunk]:
    """conlleval's reading of prefixed tags (module docstring), untyped ones
    included; a bare label is a one-token chunk."""
    out: list[Chunk] = []
    open_type: str | None = None
    start = 0
    prev = "O"
    for i, tag in enumerate(tags):
        p, typ = split_untyped(tag)
        continues = (open_type is not None and typ == open_type
                     and prev in ("B", "I") and p in ("I", "E"))
        if not continues and open_type is not None:
            out.append((open_type, start, i))
            open_type = None
        if p == "O":
            pass
        elif continues:
            if p == "E":
                out.append((open_type, start, i + 1))
                open_type = None
        elif p in ("B", "I"):
            open_type, start = typ, i
        else:  # S, E not continuing, bare label: a one-token chunk
            out.append((typ, i, i + 1))
        prev = p
    if open_type is not None:
        out.append((open_type, start, len(tags)))
    return out
