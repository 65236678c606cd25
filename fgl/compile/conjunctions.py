"""Conjunctions of attributes made by feature induction (McCallum 2003 §3).

An induced conjunction is an attribute of its template like any other: its
key joins the keys of its parts, sorted, with ``SEP`` (``word[t-2]=the &
word[t]=of``) — column values never hold spaces, so no atomic key of a
column file contains it — and it is active at a unit where every part is,
with the product of their values.  A model file's vocabularies hold these
keys; ``ConjunctionIndex`` finds them at encoding time.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from fgl.compile.vocabulary import Vocabulary

SEP = " & "


def conjunction_key(parts: Iterable[str]) -> str:
    """The key of the conjunction of attribute keys ``parts``."""
    return SEP.join(sorted(parts))


class ConjunctionIndex:
    """The conjunction keys of one template's vocabulary, by first part."""

    def __init__(self, vocab: Vocabulary):
        self.by_first: dict[str, list[tuple[list[str], int]]] = {}
        for key, row in vocab.items_with(SEP):
            first, *rest = key.split(SEP)
            self.by_first.setdefault(first, []).append((rest, row))

    def __bool__(self) -> bool:
        return bool(self.by_first)

    def rows(self, present: dict[str, float]) -> Iterable[tuple[int, float]]:
        """(row, value) of every conjunction whose parts are all in
        ``present`` (attribute key -> value, one unit's)."""
        for key, value in present.items():
            for rest, row in self.by_first.get(key, ()):
                product = value
                for part in rest:
                    other = present.get(part)
                    if other is None:
                        break
                    product *= other
                else:
                    yield row, product
