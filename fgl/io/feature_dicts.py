"""sklearn-crfsuite's feature dicts, as rows of a spec generated for them.

python-crfsuite (which sklearn-crfsuite feeds) turns one token's features
into (attribute, weight) pairs by these rules, which
``fgl.io.crfsuite_attributes.token_attributes`` follows exactly:

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

import re
from dataclasses import dataclass
from typing import Any, Sequence
from urllib.parse import unquote

import numpy as np

from fgl.data.sentence import Sentence
from fgl.errors import FglError, ModelFileError
from fgl.io.crfsuite_attributes import token_attributes
from fgl.io.dict_tokens import TokenEntries, merged, read_tokens, refuse_scaled

BAG = "attrs"             # the text column holding the bag of string-given attributes
LABEL = "label"           # the label column
BAG_KEY = f"tokens({BAG}[t])="   # how fgl names a bag word's attribute
MAX_REPEAT = 1000         # the largest whole weight a bag attribute is repeated for
EMPTY = "%"               # the bag word of the empty attribute name (a lone '%' is never an
                          # escape: every '%' of a name is written %25)
CHUNK = 1 << 18           # entries turned into training rows at a time (bounded temporaries)
MODEL_NAME = "sklearn-crfsuite feature dicts"   # the generated spec's `model` name
META_KEY = "feature_dicts"   # the model file's metadata entry keeping the mapping (to_json)


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
                 all_possible_transitions: bool = False, entries: TokenEntries | None = None):
        if entries is None:          # (``entries``: X already read, by ``for_training``)
            entries = read_tokens(enumerate(X))
        self.numeric = [entries.names[i] for i in entries.numbers]   # in order first given
        self.column = {name: k for k, name in enumerate(self.numeric)}
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions

    @classmethod
    def for_training(cls, X: Sequence[Sequence[object]], y: Sequence[Sequence[object]], *,
                     all_possible_states: bool = False, all_possible_transitions: bool = False
                     ) -> tuple["FeatureDictSpec", list["DictSentence"]]:
        """The spec for training sequences ``X`` with labels ``y``, and the
        sequences as prepared sentences (``DictSentence``: labels, and the
        rows the spec's observations would read, made straight from the
        dicts, which are read once); empty sequences add nothing and are
        left out."""
        if len(X) != len(y):
            raise ValueError(f"train: X has {len(X)} sequences but y has {len(y)}")
        for i, (seq, labels) in enumerate(zip(X, y)):
            if len(seq) != len(labels):
                raise ValueError(f"train: sequence {i} has {len(seq)} tokens but "
                                 f"{len(labels)} labels")
        entries = read_tokens(enumerate(X))
        spec = cls(X, all_possible_states=all_possible_states,
                   all_possible_transitions=all_possible_transitions, entries=entries)
        prepared = TrainingRows(spec, entries)
        return spec, [DictSentence(list(seq), list(range(1, len(seq) + 1)), i,
                                   f"<train sequence {i}>", [str(v) for v in labels], prepared)
                      for i, (seq, labels) in enumerate(zip(X, y)) if len(seq)]

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
        ``index`` numbers a sequence in errors.  The dicts are read once
        (``read_tokens``), the rest is array work over their entries."""
        from fgl.engines.sequence.encoded import EncodedData, unit_values

        entries = read_tokens(seqs)
        names, ids = entries.names, entries.name_ids
        col_of = np.fromiter((self.column.get(name, -1) for name in names), dtype=np.int64,
                             count=len(names))
        row_of = np.full(len(names), -1, dtype=np.int64)   # (a name's row in the bag)
        bag_names = np.flatnonzero(col_of < 0)
        if len(bag_names):
            row_of[bag_names] = vocabs[0].lookup([BAG_KEY + escape(names[i])
                                                  for i in bag_names.tolist()])
        token, col, row = entries.token_of_entries(), col_of[ids], row_of[ids]
        bag = row >= 0
        scaled = np.flatnonzero(bag & entries.by_number)
        refuse_scaled(entries, scaled, MAX_REPEAT)
        bag[scaled[entries.weights[scaled] == 0]] = False   # (a count of 0 adds nothing)
        n_tokens = len(entries.tok_ptr) - 1
        bag_tok, bag_row, bag_val = merged(token[bag], row[bag], entries.weights[bag],
                                           int(row_of.max(initial=-1)) + 1, False,
                                           entries.repeats)
        weighted = col >= 0
        num_tok, num_col, num_val = merged(token[weighted], col[weighted],
                                           entries.weights[weighted], len(self.numeric), True)
        numeric_row = self._numeric_rows(vocabs)
        num_row = numeric_row[num_col]
        kept = num_row >= 0
        tok = np.concatenate([bag_tok, num_tok[kept]])
        order = np.argsort(tok, kind="stable")     # per token: the bag, then the weighted
        rows = np.concatenate([bag_row, num_row[kept]])[order].astype(np.int32)
        values = np.concatenate([bag_val, num_val[kept]])[order]
        tok_ptr = np.zeros(n_tokens + 1, dtype=np.int64)
        np.cumsum(np.bincount(tok, minlength=n_tokens), out=tok_ptr[1:])
        return EncodedData(entries.seq_ptr, tok_ptr, rows, unit_values(values), None)

    def _numeric_rows(self, vocabs: list[dict[str, int]]) -> np.ndarray:
        """The row of each weighted attribute (by column) in the model's
        second vocabulary, -1 for one without."""
        numeric_row = np.full(len(self.numeric), -1, dtype=np.int64)
        if len(vocabs) > 1 and self.numeric:
            for key, r in vocabs[1].items():
                k = self._numeric_index(key)
                if k is not None:
                    numeric_row[k] = r
        return numeric_row

    @staticmethod
    def _numeric_index(key: str) -> int | None:
        """K of a weighted attribute's key ``regex(onK[t],"1")&wK[t]``."""
        head = key.split("&", 1)[0]
        try:
            return int(head[head.index("(on") + 3:head.index("[")])
        except ValueError:
            return None

    def weighted_keys(self) -> list[str]:
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


class TrainingRows:
    """The attribute rows of training sequences of feature dicts, read once
    (``read_tokens``): per token, the bag attributes counted in order of
    first appearance and the weighted ones summed in column order, as
    ``rows`` writes them and the spec's observations read them back
    (``tokens(attrs[t])=NAME`` counted, ``regex(onK[t], "1") & wK[t]`` with
    its weight, the transitions' constant ``bias``).  The bag attributes
    become keys of the compiler's key table at once, in the
    order the text rows would give them (``_intern``)."""

    def __init__(self, spec: FeatureDictSpec, entries: TokenEntries):
        self.spec, self.seq_ptr, self.names = spec, entries.seq_ptr, entries.names
        col_of = np.full(len(entries.names), -1, dtype=np.int32)
        col_of[entries.numbers] = np.arange(len(entries.numbers))   # (spec.numeric's order)
        # filled a run of tokens at a time (bounded temporaries), into arrays of the
        # entries' own number (merging repeated names in a token only shortens them)
        n_bag = int(np.count_nonzero(col_of[entries.name_ids] < 0))
        n_num = len(entries.name_ids) - n_bag
        self.bag_name = np.empty(n_bag, dtype=np.int32)
        self.bag_val = np.empty(n_bag) if entries.repeats else None
        self.num_col, self.num_val = np.empty(n_num, dtype=np.int32), np.empty(n_num)
        bag_count = np.zeros(len(entries.tok_ptr) - 1, dtype=np.int64)
        num_count = np.zeros_like(bag_count)
        b = n = 0
        for u0, u1 in _token_runs(entries.tok_ptr, CHUNK):
            (bag_tok, name, count), (num_tok, col, weight) = self._rows_of(entries, col_of, u0,
                                                                           u1)
            bag_count[u0:u1] = np.bincount(bag_tok - u0, minlength=u1 - u0)
            num_count[u0:u1] = np.bincount(num_tok - u0, minlength=u1 - u0)
            self.bag_name[b:b + len(name)] = name
            if count is not None:
                self.bag_val[b:b + len(name)] = count
            self.num_col[n:n + len(col)], self.num_val[n:n + len(col)] = col, weight
            b, n = b + len(name), n + len(col)
        self.bag_name, self.num_col, self.num_val = \
            self.bag_name[:b], self.num_col[:n], self.num_val[:n]
        if self.bag_val is not None:
            self.bag_val = self.bag_val[:b]
        self.bag_ptr, self.num_ptr = _pointers(bag_count), _pointers(num_count)
        # the bag names in order of first appearance, and where each sequence's new ones end
        first = np.unique(self.bag_name, return_index=True)[1]
        first.sort()
        self.new_names = self.bag_name[first]
        self.new_end = np.searchsorted(first, self.bag_ptr[self.seq_ptr[1:]])
        self._keys: Any = None

    @staticmethod
    def _rows_of(entries: TokenEntries, col_of: np.ndarray, u0: int, u1: int
                 ) -> tuple[tuple, tuple]:
        """(token, name, count) of the bag's entries and (token, column,
        weight) of the weighted ones, of tokens u0..u1-1, merged per token
        (``merged``; the counts None when no token repeats a name)."""
        e0, e1 = int(entries.tok_ptr[u0]), int(entries.tok_ptr[u1])
        ids, weights = entries.name_ids[e0:e1], entries.weights[e0:e1]
        token = np.repeat(np.arange(u0, u1, dtype=np.int32), np.diff(entries.tok_ptr[u0:u1 + 1]))
        col = col_of[ids]
        bag = col < 0            # (in training every number has its column)
        if entries.repeats:
            bag_rows = merged(token[bag], ids[bag], weights[bag], len(entries.names), False)
        else:    # (a count of 1 each)
            bag_rows = (token[bag], ids[bag], None)
        bag = ~bag
        return bag_rows, merged(token[bag], col[bag], weights[bag], len(col_of), True)

    def _intern(self, keys: Any) -> None:
        """Key ids in ``keys`` for the weighted attributes and every bag name,
        in the order the text rows would give them: the weighted attributes'
        keys, the first sequence's names, ``bias`` (the transitions'),
        then the other names in order of first appearance."""
        self._keys = keys
        self.key_of = np.full(len(self.names), -1, dtype=np.int64)
        self.weighted = np.array([keys.key_id(k) for k in self.spec.weighted_keys()],
                                 dtype=np.int64)
        nonempty = np.flatnonzero(np.diff(self.seq_ptr))
        split = int(self.new_end[nonempty[0]]) if len(nonempty) else 0
        for part in (self.new_names[:split], None, self.new_names[split:]):
            if part is None:
                self.bias = keys.key_id("bias")
            elif len(part):
                self.key_of[part] = keys.ids([BAG_KEY + escape(self.names[i])
                                              for i in part.tolist()])

    def unit_rows(self, i: int, keys: Any) -> list:
        """Per template of the spec (the bag, the weighted attributes if any,
        the transitions), the attribute rows (``fgl.features.span_arrays.
        Rows``, ids in ``keys``) of every token of sequence ``i``."""
        from fgl.features.span_arrays import Rows

        if self._keys is not keys:
            self._intern(keys)
        a, b = int(self.seq_ptr[i]), int(self.seq_ptr[i + 1])

        lo, hi = int(self.bag_ptr[a]), int(self.bag_ptr[b])
        out = [Rows(self.bag_ptr[a:b + 1] - lo, self.key_of[self.bag_name[lo:hi]],
                    np.ones(hi - lo) if self.bag_val is None else self.bag_val[lo:hi])]
        if self.spec.numeric:
            lo, hi = int(self.num_ptr[a]), int(self.num_ptr[b])
            out.append(Rows(self.num_ptr[a:b + 1] - lo, self.weighted[self.num_col[lo:hi]],
                            self.num_val[lo:hi]))
        T = b - a
        out.append(Rows(np.arange(T + 1, dtype=np.int64), np.full(T, self.bias, dtype=np.int64),
                        np.ones(T)))
        return out


def _pointers(counts: np.ndarray) -> np.ndarray:
    """CSR offsets of per-token ``counts``."""
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


def _token_runs(tok_ptr: np.ndarray, size: int) -> list[tuple[int, int]]:
    """Runs of tokens (u0, u1) of about ``size`` entries each (a token
    holding more is a run of its own)."""
    cuts = np.unique(np.concatenate([
        np.searchsorted(tok_ptr, np.arange(0, int(tok_ptr[-1]), size), side="right") - 1,
        [len(tok_ptr) - 1]]))
    return list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))


@dataclass
class DictSentence(Sentence):
    """A training sequence of feature dicts, prepared for the compiler
    (``fgl.compile.sequence``): ``rows`` holds the dicts, ``tags`` the
    labels, ``doc`` its index in the training sequences, and
    ``unit_rows(keys)`` the attribute rows (``TrainingRows``) — what the
    spec's observations would read from ``FeatureDictSpec.rows``' text,
    without the text."""

    tags: list[str] | None = None
    prepared: TrainingRows | None = None

    def unit_rows(self, keys: Any) -> list:
        return self.prepared.unit_rows(self.doc, keys)


def _where(i: int, t: int) -> str:
    return f"sequence {i}, token {t}"
