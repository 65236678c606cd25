"""python-crfsuite's rules for one token's features.

python-crfsuite (which sklearn-crfsuite feeds) turns one token's features
into (attribute, weight) pairs; ``token_attributes`` follows its rules
exactly (``fgl.io.feature_dicts`` lists them).  Anything python-crfsuite
would refuse, or silently mangle, is an ``FglError`` naming the token.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Iterable

from fgl.errors import FglError

SEP = ":"                 # python-crfsuite's separator of a key and its value or sub-key


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
    words, weights = out.words, out.numbers
    for key, value in d.items():
        name = prefix + (key if type(key) is str else _text(key, where, "a key"))
        kind = type(value)       # the common kinds first, by exact type (no ABC checks)
        if kind is str:
            words.append(name + SEP + value)
        elif kind is bool or kind is int:
            weights[name] = weights.get(name, 0.0) + float(value)
        elif kind is float and math.isfinite(value):
            weights[name] = weights.get(name, 0.0) + value
        elif isinstance(value, dict):
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
