"""sklearn-crfsuite's feature dicts, as rows of a spec generated for them.

python-crfsuite (which sklearn-crfsuite feeds) turns one token's features
into (attribute, weight) pairs by these rules, which ``token_attributes``
follows exactly:

* a dict: ``{"k": "v"}`` gives ``k:v`` with weight 1; ``{"k": 2.5}`` gives
  ``k`` with weight 2.5; ``{"k": True}`` weight 1, ``{"k": False}`` weight 0;
  a nested dict, list or set of strings under ``k`` gives its own
  attributes with ``k:`` in front (``{"k": {"a": 1}}`` -> ``k:a``,
  ``{"k": ["a", "b"]}`` -> ``k:a``, ``k:b``);
* a list (or set) of strings: each string is an attribute of weight 1.

An attribute given twice at one token counts twice (CRFsuite scores every
pair it is given).  Anything else (``None``, tuples, a list holding numbers
or dicts, keys that are not strings, NaN) is refused.

fgl writes such attributes in a spec as follows (``FeatureDictSpec``):
the attributes that come from strings are a bag of words in one text column
read by ``tokens(attrs[t])`` (each word an indicator; repeats add up), and
each attribute that comes from a number is a pair of columns: a text column
marking where the attribute is present and a number column holding its
weight, read together as ``regex(onK[t], "1") & wK[t]`` — so the attribute
exists at exactly the tokens that give it, as in CRFsuite, where a state
feature (attribute, label) exists when the attribute occurs on a token of
that label in training.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Iterable, Sequence
from urllib.parse import unquote

from fgl.errors import FglError

SEP = ":"                 # python-crfsuite's separator of a key and its value or sub-key
BAG = "attrs"             # the text column holding the bag of string-given attributes
LABEL = "label"           # the label column
BAG_KEY = f"tokens({BAG}[t])="   # how fgl names a bag word's attribute
MAX_REPEAT = 1000         # the largest whole weight a bag attribute is repeated for
EMPTY = "%"               # the bag word of the empty attribute name (a lone '%' is never an
                          # escape: every '%' of a name is written %25)


@dataclass
class TokenAttributes:
    """One token's attributes: the names given by strings (weight 1 each,
    repeats kept) and the summed weight of each name given by a number."""

    words: list[str]
    numbers: dict[str, float]


def token_attributes(token: object, where: str) -> TokenAttributes:
    """The (attribute, weight) pairs python-crfsuite makes of ``token``
    (a dict, or a list or set of attribute names); ``where`` names the
    token in errors."""
    out = TokenAttributes([], {})
    if isinstance(token, dict):
        _from_dict(token, "", out, where)
    elif isinstance(token, (list, tuple, set, frozenset)):
        _from_names(token, "", out, where)
    else:
        raise FglError(f"{where}: a token must be a dict of features (or a list of attribute "
                       f"names), as sklearn-crfsuite takes; found {_kind(token)}")
    return out


def _from_dict(d: dict, prefix: str, out: TokenAttributes, where: str) -> None:
    for key, value in d.items():
        name = prefix + _text(key, where, "a key")
        if isinstance(value, dict):
            _from_dict(value, name + SEP, out, where)
        elif isinstance(value, (list, set, frozenset)):
            _from_names(value, name + SEP, out, where)
        elif isinstance(value, (str, bytes)):
            out.words.append(name + SEP + _text(value, where, f"the value of {name!r}"))
        elif isinstance(value, numbers.Real):
            weight = float(value)
            if not math.isfinite(weight):
                raise FglError(f"{where}: feature {name!r} has the weight {value!r}; weights "
                               "must be finite numbers")
            out.numbers[name] = out.numbers.get(name, 0.0) + weight
        else:
            raise FglError(f"{where}: feature {name!r} has the value {_kind(value)}; a value is "
                           "a string (the attribute key:value, weight 1), a number or bool (the "
                           "weight of the attribute key), or a dict, list or set of them nested "
                           "under the key")


def _from_names(names: Iterable, prefix: str, out: TokenAttributes, where: str) -> None:
    for item in names:
        if not isinstance(item, (str, bytes)):
            raise FglError(f"{where}: a list of features holds {_kind(item)}"
                           + (f" (under {prefix[:-1]!r})" if prefix else "")
                           + "; a list or set holds attribute names (strings) only, each of "
                           "weight 1 — give weights in a dict")
        out.words.append(prefix + _text(item, where, "an attribute name"))


def _text(value: object, where: str, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise FglError(f"{where}: {what} is bytes that are not UTF-8: {value!r}") from None
    raise FglError(f"{where}: {what} must be a string; found {_kind(value)}")


def _kind(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def escape(name: str) -> str:
    """An attribute name as one bag word: '%' and whitespace as %XX (UTF-8)."""
    if not name:
        return EMPTY
    return "".join("".join(f"%{b:02X}" for b in c.encode("utf-8"))
                   if c == "%" or c.isspace() else c for c in name)


def unescape(word: str) -> str:
    return "" if word == EMPTY else unquote(word)


class FeatureDictSpec:
    """The spec written for feature-dict data and the mapping of tokens to
    its rows.  Built from the training sequences: every attribute a number
    gives there gets its own columns; the rest go in the bag."""

    def __init__(self, X: Sequence[Sequence[object]], *, all_possible_states: bool = False,
                 all_possible_transitions: bool = False):
        numeric: dict[str, None] = {}
        for i, seq in enumerate(X):
            for t, token in enumerate(seq):
                for name in token_attributes(token, _where(i, t)).numbers:
                    numeric.setdefault(name, None)
        self.numeric = list(numeric)                       # in order of first appearance
        self.column = {name: k for k, name in enumerate(self.numeric)}
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions

    @property
    def text(self) -> str:
        """The spec: a state template over the bag, one over the weighted
        attributes, and first-order transitions (sklearn-crfsuite's model)."""
        support = " (support = all)" if self.all_possible_states else ""
        columns = [BAG] + [c for k in range(len(self.numeric)) for c in (f"on{k}", f"w{k}: number")]
        lines = ['model "sklearn-crfsuite feature dicts"', "",
                 f"columns {', '.join(columns + [LABEL])}", f"output {LABEL}", "",
                 f"template state: y[t] ~ tokens({BAG}[t]){support}"]
        if self.numeric:
            obs = ",\n    ".join(f'regex(on{k}[t], "1") & w{k}[t]'
                                 for k in range(len(self.numeric)))
            lines.append(f"template weighted: y[t] ~\n    {obs}{support}")
        patterns = "" if self.all_possible_transitions else " patterns observed"
        lines.append(f"template transition: y[t-1..t]{patterns}")
        return "\n".join(lines) + "\n"

    def rows(self, X: Sequence[Sequence[object]], known_words: set[str] | None = None
             ) -> list[list[list[str]]]:
        """Each sequence's rows for the spec's columns (the label aside).
        ``known_words``: the bag attributes the trained model has (None in
        training); a number given at predict time to one of them must be a
        count up to MAX_REPEAT (the bag cannot scale an attribute), else it
        is refused."""
        out = []
        for i, seq in enumerate(X):
            rows = []
            for t, token in enumerate(seq):
                attrs = token_attributes(token, _where(i, t))
                row = [""] + ["", "0"] * len(self.numeric)   # absent: unmarked, weight 0
                words = []
                for name in attrs.words:
                    k = self.column.get(name)
                    if k is None:
                        words.append(escape(name))
                    else:
                        self._add(row, k, 1.0)
                for name, weight in attrs.numbers.items():
                    k = self.column.get(name)
                    if k is not None:
                        self._add(row, k, weight)
                    elif known_words is None or escape(name) not in known_words:
                        continue          # unknown to the model: it has no weights
                    elif 0 <= weight <= MAX_REPEAT and weight == int(weight):
                        words.extend([escape(name)] * int(weight))
                    else:
                        raise FglError(f"{_where(i, t)}: feature {name!r} has the weight "
                                       f"{weight!r}, but in training it was given by strings "
                                       "only (weight 1), so the model holds it as an indicator "
                                       "and cannot scale it; give it in training as a number too")
                row[0] = " ".join(words)
                rows.append(row)
            out.append(rows)
        return out

    @staticmethod
    def _add(row: list[str], k: int, weight: float) -> None:
        on, w = 1 + 2 * k, 2 + 2 * k
        row[w] = repr(float(row[w]) + weight)
        row[on] = "1"

    def attribute_name(self, key: str) -> str:
        """The python-crfsuite attribute behind an fgl attribute key."""
        if key.startswith(BAG_KEY):
            return unescape(key[len(BAG_KEY):])
        head = key.split("&", 1)[0]          # regex(onK[t],"1")&wK[t]
        k = int(head[head.index("(on") + 3:head.index("[")])
        return self.numeric[k]


def _where(i: int, t: int) -> str:
    return f"sequence {i}, token {t}"
