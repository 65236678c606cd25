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
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence
from urllib.parse import unquote

import numpy as np

from fgl.data.sentence import Sentence
from fgl.errors import FglError, ModelFileError

SEP = ":"                 # python-crfsuite's separator of a key and its value or sub-key
BAG = "attrs"             # the text column holding the bag of string-given attributes
LABEL = "label"           # the label column
BAG_KEY = f"tokens({BAG}[t])="   # how fgl names a bag word's attribute
MAX_REPEAT = 1000         # the largest whole weight a bag attribute is repeated for
EMPTY = "%"               # the bag word of the empty attribute name (a lone '%' is never an
                          # escape: every '%' of a name is written %25)
MODEL_NAME = "sklearn-crfsuite feature dicts"   # the generated spec's `model` name
META_KEY = "feature_dicts"   # the model file's metadata entry keeping the mapping (to_json)


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


_PLAIN = re.compile(r"[^\s%]+")   # a name escape leaves as it is


def escape(name: str) -> str:
    """An attribute name as one bag word: '%' and whitespace as %XX (UTF-8)."""
    if not name:
        return EMPTY
    if _PLAIN.fullmatch(name):     # (most names: no work)
        return name
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
                if type(token) is dict:   # a flat dict of strings and numbers: read it here
                    names = []
                    for key, value in token.items():
                        kind = type(value)
                        if type(key) is not str or not (
                                kind is str or kind is bool or kind is int
                                or (kind is float and math.isfinite(value))):
                            break
                        if kind is not str:
                            names.append(key)
                    else:
                        numeric.update(dict.fromkeys(n for n in names if n not in numeric))
                        continue
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
        lines = [f'model "{MODEL_NAME}"', "",
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
        """The python-crfsuite attribute behind an fgl attribute key (the
        key itself when it is none of the generated spec's)."""
        if key.startswith(BAG_KEY):
            return unescape(key[len(BAG_KEY):])
        head = key.split("&", 1)[0]          # regex(onK[t],"1")&wK[t]
        try:
            return self.numeric[int(head[head.index("(on") + 3:head.index("[")])]
        except (ValueError, IndexError):
            return key

    def encode(self, seqs: Sequence[tuple[int, Sequence[object]]],
               vocabs: list[dict[str, int]]):
        """Sequences ``(index, tokens)`` of feature dicts encoded for the
        trained chain program (``fgl.engines.sequence.encoded.EncodedData``) straight
        from the model's vocabularies — the attributes ``rows`` would write
        and the spec's observations read back, without the text between:
        per token the bag attributes the model knows (a repeat adds 1, a
        whole number at predict time adds that many, as ``rows``) in order
        of first appearance, then the weighted attributes in column order.
        ``index`` numbers a sequence in errors."""
        from fgl.engines.sequence.encoded import EncodedData, unit_ones

        numeric_row = self._numeric_rows(vocabs)
        read = self._token_reader(vocabs[0])
        seq_ptr, tok_ptr, rows, vals = [0], [0], [], []
        for i, seq in seqs:
            for t, token in enumerate(seq):
                counts, weights = read(token, i, t)
                rows.extend(counts)
                vals.extend(counts.values())
                for k in sorted(weights):
                    r = numeric_row.get(k)
                    if r is not None:
                        rows.append(r)
                        vals.append(weights[k])
                tok_ptr.append(len(rows))
            seq_ptr.append(seq_ptr[-1] + len(seq))
        values = np.array(vals, dtype=np.float64)
        return EncodedData(np.array(seq_ptr, dtype=np.int64), np.array(tok_ptr, dtype=np.int64),
                           np.array(rows, dtype=np.int32),
                           unit_ones(len(values)) if np.all(values == 1.0) else values, None)

    def _numeric_rows(self, vocabs: list[dict[str, int]]) -> dict[int, int]:
        """The row of each weighted attribute (by column) in the model's
        second vocabulary."""
        numeric_row = {}
        if len(vocabs) > 1 and self.numeric:
            for key, r in vocabs[1].items():
                k = self._numeric_index(key)
                if k is not None:
                    numeric_row[k] = r
        return numeric_row

    def _token_reader(self, bag: dict[str, int]
                      ) -> Callable[[object, int, int], tuple[dict[int, float], dict[int, float]]]:
        """A function reading token t of sequence i into (bag row -> count,
        column -> weight), the bag rows those of ``bag`` that the model
        knows, in order of first appearance (``encode``)."""
        word_row: dict[str, int] = {}        # name -> row in the bag (-1: unknown)

        def bag_row(name: str) -> int:
            r = word_row.get(name)
            if r is None:
                r = word_row[name] = bag.get(BAG_KEY + escape(name), -1)
            return r

        column = self.column

        def number(name: str, weight: float, counts: dict, weights: dict, i: int, t: int
                   ) -> None:
            k = column.get(name)
            if k is not None:
                weights[k] = weights.get(k, 0.0) + weight
                return
            r = bag_row(name)
            if r < 0:
                return       # unknown to the model: it has no weights
            if not (0 <= weight <= MAX_REPEAT and weight == int(weight)):
                raise FglError(f"{_where(i, t)}: feature {name!r} has the weight {weight!r}, "
                               "but in training it was given by strings only (weight 1), so "
                               "the model holds it as an indicator and cannot scale it; give "
                               "it in training as a number too")
            if weight:
                counts[r] = counts.get(r, 0.0) + weight

        def word(name: str, counts: dict, weights: dict) -> None:
            k = column.get(name)
            if k is not None:
                weights[k] = weights.get(k, 0.0) + 1.0
            else:
                r = word_row.get(name)
                if r is None:
                    r = bag_row(name)
                if r >= 0:
                    counts[r] = counts.get(r, 0.0) + 1.0

        def read(token: object, i: int, t: int) -> tuple[dict[int, float], dict[int, float]]:
            counts: dict[int, float] = {}
            weights: dict[int, float] = {}
            # the common token, a flat dict of strings and numbers, read in one pass
            flat = type(token) is dict
            if flat:
                for key, value in token.items():
                    kind = type(value)
                    if type(key) is not str:
                        flat = False
                    elif kind is str:
                        word(key + SEP + value, counts, weights)
                    elif kind is bool or kind is int or (kind is float and math.isfinite(value)):
                        number(key, float(value), counts, weights, i, t)
                    else:
                        flat = False
                    if not flat:
                        break
            if not flat:     # anything else: python-crfsuite's rules in full
                counts, weights = {}, {}
                attrs = token_attributes(token, _where(i, t))
                for name in attrs.words:
                    word(name, counts, weights)
                for name, weight in attrs.numbers.items():
                    number(name, weight, counts, weights, i, t)
            return counts, weights

        return read

    @staticmethod
    def _numeric_index(key: str) -> int | None:
        """K of a weighted attribute's key ``regex(onK[t],"1")&wK[t]``."""
        head = key.split("&", 1)[0]
        try:
            return int(head[head.index("(on") + 3:head.index("[")])
        except ValueError:
            return None

    # ------------------------------------------------------------ training, the short way

    def sentences(self, X: Sequence[Sequence[object]], y: Sequence[Sequence[object]]
                  ) -> list["DictSentence"]:
        """The training sequences as prepared sentences (``DictSentence``:
        labels, and the rows the spec's observations would read, made
        straight from the dicts); empty sequences add nothing and are left
        out."""
        if len(X) != len(y):
            raise ValueError(f"train: X has {len(X)} sequences but y has {len(y)}")
        out = []
        for i, (seq, labels) in enumerate(zip(X, y)):
            if len(seq) != len(labels):
                raise ValueError(f"train: sequence {i} has {len(seq)} tokens but "
                                 f"{len(labels)} labels")
            if len(seq):
                out.append(DictSentence(list(seq), list(range(1, len(seq) + 1)), i,
                                        f"<train sequence {i}>", [str(v) for v in labels],
                                        self))
        return out

    def unit_rows(self, tokens: Sequence[object], index: int, keys: Any) -> list:
        """Per template of ``text`` (the bag, the weighted attributes if any,
        the transitions), the attribute rows (``fgl.features.span_arrays.
        Rows``, ids in ``keys``) of every token of sequence ``index``: the
        keys and values the spec's observations give on ``rows``' text —
        ``tokens(attrs[t])=NAME`` counted, ``regex(onK[t], "1") & wK[t]`` with
        its weight, the transitions' constant ``bias``."""
        from fgl.features.span_arrays import Rows

        if getattr(self, "_keys", None) is not keys:
            self._keys, self._ids = keys, {}
            self._weighted = [keys.key_id(k) for k in self._weighted_keys()]
        ids, column = self._ids, self.column
        bag_ptr, bag_name, bag_val = [0], [], []
        num_ptr, num_key, num_val = [0], [], []
        for t, token in enumerate(tokens):
            attrs = token_attributes(token, _where(index, t))
            counts: dict[str, float] = {}
            weights: dict[int, float] = {}
            for name in attrs.words:
                k = column.get(name)
                if k is None:
                    counts[name] = counts.get(name, 0.0) + 1.0
                else:
                    weights[k] = weights.get(k, 0.0) + 1.0
            for name, weight in attrs.numbers.items():
                k = column.get(name)
                if k is not None:          # (in training, every number has its column)
                    weights[k] = weights.get(k, 0.0) + weight
            bag_name.extend(counts)
            bag_val.extend(counts.values())
            for k in sorted(weights):
                num_key.append(self._weighted[k])
                num_val.append(weights[k])
            bag_ptr.append(len(bag_name))
            num_ptr.append(len(num_key))
        T = len(tokens)
        new = [name for name in dict.fromkeys(bag_name) if name not in ids]
        if new:   # (new names interned together: a key table call per batch)
            ids.update(zip(new, keys.ids([BAG_KEY + escape(name) for name in new]).tolist()))
        bag_key = [ids[name] for name in bag_name]

        def rows(ptr: list, key: list, val: list) -> Rows:
            return Rows(np.array(ptr, dtype=np.int64), np.array(key, dtype=np.int64),
                        np.array(val, dtype=np.float64))
        out = [rows(bag_ptr, bag_key, bag_val)]
        if self.numeric:
            out.append(rows(num_ptr, num_key, num_val))
        bias = keys.key_id("bias")
        out.append(Rows(np.arange(T + 1, dtype=np.int64), np.full(T, bias, dtype=np.int64),
                        np.ones(T)))
        return out

    def _weighted_keys(self) -> list[str]:
        """The attribute key of each weighted attribute, in column order, as
        the spec's observations spell it (read off one token of text)."""
        from pathlib import Path

        from fgl.features.observations import TemplateAttributes, sentence_columns
        from fgl.lang.parser import parse_spec

        if not self.numeric:
            return []
        spec = parse_spec(self.text, "<feature dicts>")
        row = [""] + ["1", "1.0"] * len(self.numeric) + ["-"]
        cols, _ = sentence_columns(spec, [row], [1], "<feature dicts>")
        found = {self._numeric_index(key): key
                 for key, _ in TemplateAttributes(spec, Path(".")).evaluate(1, cols, 1)[0]}
        return [found[k] for k in range(len(self.numeric))]

    def known_words(self, vocab: dict[str, int]) -> set[str]:
        """The bag attributes (escaped) of the state template's vocabulary."""
        return {key[len(BAG_KEY):] for key in vocab if key.startswith(BAG_KEY)}

    # ------------------------------------------------------------ model files

    def to_json(self) -> dict:
        """What a model file keeps (its metadata's ``feature_dicts``): the
        attributes given by numbers, in column order, and the two options."""
        return {"numeric": list(self.numeric),
                "all_possible_states": self.all_possible_states,
                "all_possible_transitions": self.all_possible_transitions}

    @classmethod
    def from_json(cls, d: object, where: str, columns: list[str] | None = None
                  ) -> "FeatureDictSpec":
        """``to_json``'s inverse, for a spec of ``columns`` (its column names,
        when known); anything else is a ``ModelFileError`` naming ``where``."""
        numeric = d.get("numeric") if isinstance(d, dict) else None
        flags = [d.get(k, False) for k in ("all_possible_states", "all_possible_transitions")] \
            if isinstance(d, dict) else []
        if not (isinstance(numeric, list) and all(isinstance(n, str) for n in numeric)
                and len(set(numeric)) == len(numeric)
                and all(isinstance(f, bool) for f in flags)):
            raise ModelFileError("corrupt model file: its feature-dict names are not a list "
                                 "of distinct attribute names", where)
        if columns is not None and columns != [BAG] + [
                c for k in range(len(numeric)) for c in (f"on{k}", f"w{k}")] + [LABEL]:
            raise ModelFileError(f"corrupt model file: {len(numeric)} feature-dict names do "
                                 "not fit its spec's columns", where)
        out = cls([], all_possible_states=flags[0], all_possible_transitions=flags[1])
        out.numeric = list(numeric)
        out.column = {name: k for k, name in enumerate(numeric)}
        return out


def from_dicts_message(model: str) -> str:
    """Why a model trained on feature dicts reads no data file."""
    return (f"{model} was trained on feature dicts from Python (fgl.CRFEstimator() with "
            "spec=None, as sklearn-crfsuite): its inputs are the per-token dicts of features "
            "your own Python function makes, not the columns of a data file, so fgl tag and "
            "fgl eval cannot read data for it; in Python: crf = fgl.CRF.load(MODEL); "
            "crf.predict(X) or crf.evaluate(X, y) with X the feature dicts "
            "(docs/sklearn.md); fgl inspect shows its weights by your feature names")


@dataclass
class DictSentence(Sentence):
    """A training sequence of feature dicts, prepared for the compiler
    (``fgl.compile.sequence``): ``rows`` holds the dicts, ``tags`` the
    labels, and ``unit_rows(keys)`` the attribute rows — what the spec's
    observations would read from ``FeatureDictSpec.rows``' text, without
    the text (about 3 times faster on the sklearn-crfsuite tutorial)."""

    tags: list[str] | None = None
    dicts: FeatureDictSpec | None = None

    def unit_rows(self, keys: Any) -> list:
        return self.dicts.unit_rows(self.rows, self.doc, keys)


def _where(i: int, t: int) -> str:
    return f"sequence {i}, token {t}"
