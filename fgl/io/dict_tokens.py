"""Feature dicts read once into flat arrays of attribute ids.

sklearn-crfsuite's data is a dict of features per token; what fgl needs of
it is per token the attributes (names) and their weights, as python-crfsuite
makes them (``fgl.io.crfsuite_attributes.token_attributes``).
``read_tokens`` reads every token once and gives each distinct name an id,
so the rest is array work, with no Python step per (token, attribute row).

Most tokens are flat dicts of strings and numbers, and most share their
keys in one order with many others (a *layout*: the features a function
makes for a token in the middle of a sentence, at its start, at its end).
The tokens of one layout are read a key at a time, the values of that key
over all of them at once: a key whose values are all strings gives the
attributes ``key:value``, looked up value by value in the key's own dict
(no string made per feature: a name is built once per distinct pair); a
key whose values are all numbers gives the attribute ``key`` with those
weights, converted as one array.  Any other token (nested values, lists,
mixed kinds under one key of a layout) is read by python-crfsuite's rules
in full, token by token.  Two spellings of one name (``{"a:b": 1}`` and
``{"a": "b"}``) get one id afterwards.
"""
from __future__ import annotations

import gc
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import Iterable, Iterator, Sequence

import numpy as np

from fgl.errors import FglError
from fgl.io.crfsuite_attributes import SEP, token_attributes

NUMBER_KINDS = frozenset((bool, int, float))


@dataclass
class TokenEntries:
    """Every token's (attribute, weight) entries, token after token, each
    token's in the order python-crfsuite gives them: entry j has name
    ``names[name_ids[j]]`` and weight ``weights[j]`` (1 for a name given by
    a string); ``by_number[j]``: the weight came from a number.  Token u
    holds entries ``tok_ptr[u]:tok_ptr[u + 1]``, sequence i tokens
    ``seq_ptr[i]:seq_ptr[i + 1]`` and is sequence ``index[i]`` of the
    caller's (for errors).  ``numbers``: the ids of the names given by a
    number somewhere, in the order first so given.  ``repeats``: whether a
    token may hold one name twice (else every token's names are distinct)."""

    seq_ptr: np.ndarray
    tok_ptr: np.ndarray
    name_ids: np.ndarray
    weights: np.ndarray
    by_number: np.ndarray
    names: list[str]
    numbers: list[int]
    index: list[int]
    repeats: bool

    def where(self, u: int) -> str:
        """Token ``u`` as errors name it: ``sequence i, token t``."""
        return _where(self.seq_ptr, self.index, u)

    def token_of_entries(self) -> np.ndarray:
        """The token of every entry."""
        return np.repeat(np.arange(len(self.tok_ptr) - 1, dtype=np.int32), np.diff(self.tok_ptr))


def _where(seq_ptr: np.ndarray, index: list[int], u: int) -> str:
    i = int(np.searchsorted(seq_ptr, u, side="right")) - 1
    return f"sequence {index[i]}, token {u - int(seq_ptr[i])}"


class _Layout:
    """The tokens of one layout (their keys, in order): their numbers and
    their values end to end."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.values: list[object] = []


class _Names:
    """The ids of attribute names, in one pass: per key a dict of its
    string values, and a dict of whole names (numbers, and the names of
    tokens read in full)."""

    def __init__(self) -> None:
        self.pairs: dict[str, dict[str, int]] = {}
        self.whole: dict[str, int] = {}
        self.spelled: list[object] = []               # per id: its name, or (key, value)

    def whole_id(self, name: str) -> int:
        i = self.whole.get(name)
        if i is None:
            i = self.whole[name] = len(self.spelled)
            self.spelled.append(name)
        return i

    def pair_ids(self, key: str, values: list[str]) -> np.ndarray:
        """The ids of the names ``key:value`` of ``values``: one dict
        operation per value (``setdefault``, a new value given a negative
        stand-in at once, made a real id afterwards, value by new value)."""
        ids = self.pairs.get(key)
        if ids is None:
            ids = self.pairs[key] = {}
        before, n = len(ids), len(values)
        got = np.fromiter(map(ids.setdefault, values, range(-1, -n - 1, -1)), dtype=np.int64,
                          count=n)
        if len(ids) > before:
            new = list(islice(reversed(ids.items()), len(ids) - before))[::-1]
            real = np.zeros(n + 1, dtype=np.int64)
            for value, stand_in in new:
                real[-stand_in] = ids[value] = len(self.spelled)
                self.spelled.append((key, value))
            fresh = got < 0
            got[fresh] = real[-got[fresh]]
        return got

    def layout(self, keys: tuple, values: list[object], n: int
               ) -> tuple[np.ndarray, dict[int, np.ndarray]] | None:
        """(ids [n, len(keys)], {column: weights}) of ``n`` flat dicts of
        layout ``keys`` whose values are ``values`` end to end (the weights
        of the keys given numbers; the others weigh 1); None when some key's
        values are not all strings or all finite numbers."""
        m = len(keys)
        if not all(type(key) is str for key in keys):
            return None
        ids = np.empty((n, m), dtype=np.int32)
        weights = {}
        for j, key in enumerate(keys):
            column = values[j::m]
            kinds = set(map(type, column))
            if kinds == {str}:
                ids[:, j] = self.pair_ids(key, column)
            elif kinds <= NUMBER_KINDS:
                try:
                    weights[j] = np.array(column, dtype=np.float64)
                except OverflowError:      # (a whole number beyond any float)
                    return None
                if not np.isfinite(weights[j]).all():
                    return None
                ids[:, j] = self.whole_id(key)
            else:
                return None
        return ids, weights


class _OneByOne:
    """Tokens read one at a time, by python-crfsuite's rules in full."""

    def __init__(self, names: _Names) -> None:
        self.names = names
        self.tokens = array("q")
        self.counts = array("q")
        self.ids = array("q")
        self.weights = array("d")
        self.by_number = array("b")
        self.repeats = False

    def read(self, u: int, token: object, where: str) -> None:
        attrs = token_attributes(token, where)
        if len(set(attrs.words)) < len(attrs.words) or set(attrs.words) & attrs.numbers.keys():
            self.repeats = True
        self.tokens.append(u)
        self.counts.append(len(attrs.words) + len(attrs.numbers))
        for name in attrs.words:
            self.ids.append(self.names.whole_id(name))
            self.weights.append(1.0)
            self.by_number.append(0)
        for name, weight in attrs.numbers.items():
            self.ids.append(self.names.whole_id(name))
            self.weights.append(weight)
            self.by_number.append(1)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused (and resumed if it ran):
    reading feature dicts makes objects that hold no cycles, while each
    full collection walks every object alive, and a corpus of feature dicts
    is millions of them (0.2-0.8 s a collection on sklearn-crfsuite's
    tutorial, none of it CRFsuite's, which makes no Python objects)."""
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()


def read_tokens(seqs: Iterable[tuple[int, Sequence[object]]]) -> TokenEntries:
    """Sequences ``(index, tokens)`` of feature dicts (or lists of names)
    as ``TokenEntries``; a token python-crfsuite would refuse is an
    ``FglError`` naming ``sequence index, token t`` (the first such token)."""
    with collector_paused():
        return _read_tokens(seqs)


def _read_tokens(seqs: Iterable[tuple[int, Sequence[object]]]) -> TokenEntries:
    layouts: dict[tuple, _Layout] = {}
    others: list[int] = []           # tokens that are no dict
    tokens: list[object] = []
    seq_ptr, index = [0], []
    get, add = layouts.get, tokens.append
    for i, seq in seqs:
        for token in seq:
            if type(token) is dict:
                keys = tuple(token)
                layout = get(keys)
                if layout is None:
                    layout = layouts[keys] = _Layout()
                layout.tokens.append(len(tokens))
                layout.values.extend(token.values())
            else:
                others.append(len(tokens))
            add(token)
        seq_ptr.append(len(tokens))
        index.append(i)
    seq_at = np.array(seq_ptr, dtype=np.int64)
    names = _Names()
    read = []                        # (tokens, ids, weights) of each layout read
    for keys in list(layouts):
        layout = layouts.pop(keys)   # (its values freed as soon as they are read)
        got = names.layout(keys, layout.values, len(layout.tokens))
        if got is None:
            others.extend(layout.tokens)
        else:
            read.append((np.array(layout.tokens, dtype=np.int64), *got))
    one = _OneByOne(names)
    for u in sorted(others):
        one.read(u, tokens[u], _where(seq_at, index, u))
    del tokens
    return _assembled(seq_at, index, names, read, one)


def _assembled(seq_ptr: np.ndarray, index: list[int], names: _Names, read: list,
               one: _OneByOne) -> TokenEntries:
    """The entries of the layouts ``read`` and the tokens read ``one`` by
    one, put in token order (``read`` is emptied on the way)."""
    n_tokens = int(seq_ptr[-1])
    counts = np.zeros(n_tokens, dtype=np.int64)
    for at, ids, _ in read:
        counts[at] = ids.shape[1]
    one_at = np.frombuffer(one.tokens, dtype=np.int64) if len(one.tokens) else \
        np.zeros(0, dtype=np.int64)
    one_counts = np.frombuffer(one.counts, dtype=np.int64) if len(one.counts) else one_at
    counts[one_at] = one_counts
    tok_ptr = np.zeros(n_tokens + 1, dtype=np.int64)
    np.cumsum(counts, out=tok_ptr[1:])
    del counts
    total = int(tok_ptr[-1])
    name_ids = np.empty(total, dtype=np.int32)
    weights = np.ones(total)
    by_number = np.zeros(total, dtype=np.bool_)
    while read:
        at, ids, numbers = read.pop()
        first = tok_ptr[at]
        for j in range(ids.shape[1]):
            name_ids[first + j] = ids[:, j]
            if j in numbers:
                weights[first + j] = numbers[j]
                by_number[first + j] = True
    if len(one_at):
        where = np.repeat(tok_ptr[one_at] - np.cumsum(one_counts) + one_counts, one_counts) \
            + np.arange(int(one_counts.sum()))
        name_ids[where] = np.frombuffer(one.ids, dtype=np.int64)
        weights[where] = np.frombuffer(one.weights, dtype=np.float64)
        by_number[where] = np.frombuffer(one.by_number, dtype=np.int8).astype(np.bool_)
    text, same = _names(names.spelled)
    if same is not None:     # two spellings of one name: one id
        name_ids = same[name_ids].astype(np.int32)
    uniq, first = np.unique(name_ids[by_number], return_index=True)
    numbers = uniq[np.argsort(first, kind="stable")].tolist()   # in the order first given
    return TokenEntries(seq_ptr, tok_ptr, name_ids, weights, by_number, text, numbers, index,
                        one.repeats or same is not None)


def _names(spelled: list[object]) -> tuple[list[str], np.ndarray | None]:
    """The name of every id, and the first id of each name for every id
    when a name has several (None when every name has one id)."""
    names = [s if type(s) is str else s[0] + SEP + s[1] for s in spelled]
    first: dict[str, int] = {}
    for i, name in enumerate(names):
        first.setdefault(name, i)
    if len(first) == len(names):
        return names, None
    same = np.fromiter((first[name] for name in names), dtype=np.int64, count=len(names))
    return names, same


def merged(token: np.ndarray, key: np.ndarray, weight: np.ndarray, n_keys: int, ordered: bool,
           may_repeat: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries (token, key, weight), token after token, with the entries of
    one key in one token made one: their weights summed in entry order
    (as ``d[k] = d.get(k, 0.0) + w`` sums them).  ``ordered``: each token's
    keys in ascending order, else in the order first met.  ``may_repeat``:
    False when no token holds a key twice.  Returns (token, key, weight) of
    the merged entries."""
    if len(token) < 2 or not (ordered or may_repeat):
        return token, key, weight + 0.0      # (-0.0 summed is 0.0)
    code = token.astype(np.int64) * max(n_keys, 1) + key
    if ordered:
        if np.all(code[1:] > code[:-1]):
            return token, key, weight + 0.0   # (already so: the common case)
        order = np.argsort(code, kind="stable")      # (a token's entries of a key kept in order)
        code = code[order] if may_repeat else None
        token, key, weight = token[order], key[order], weight[order]
        del order
        if not may_repeat:
            weight += 0.0
            return token, key, weight
        starts = np.concatenate([[True], code[1:] != code[:-1]])
        first, group = np.flatnonzero(starts), np.cumsum(starts) - 1
    else:    # (np.unique sorts by code: the groups back in the order first met)
        _, first, group = np.unique(code, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        first, group = first[order], rank[group]
    sums = np.bincount(group, weights=weight, minlength=len(first))
    return token[first], key[first], sums


def refuse_scaled(entries: TokenEntries, at: np.ndarray, max_repeat: int) -> None:
    """An ``FglError`` for the first of entries ``at`` (numbers given to
    attributes the model holds as indicators) whose weight is not a whole
    count from 0 to ``max_repeat`` (the bag cannot scale an attribute)."""
    w = entries.weights[at]
    bad = at[~((w >= 0) & (w <= max_repeat) & (w == np.floor(w)))]
    if len(bad):
        j = int(bad[0])
        u = int(np.searchsorted(entries.tok_ptr, j, side="right")) - 1
        name, weight = entries.names[int(entries.name_ids[j])], float(entries.weights[j])
        raise FglError(f"{entries.where(u)}: feature {name!r} has the weight {weight!r}, but "
                       "in training it was given by strings only (weight 1), so the model "
                       "holds it as an indicator and cannot scale it; give it in training as "
                       "a number too")
