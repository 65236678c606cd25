"""Checks of the data a trained model reads (tagging, evaluation, dev data):
what it is given must be shaped as what it was trained on, or it is
refused with a message — never read silently as something else.

* A vector column must have the dimension it had in training (read off
  the model's attribute names, ``v[t][3]`` being dimension 3 of ``v``): a
  model trained on 2-dimensional vectors refuses 200,000-dimensional ones
  before reading them, rather than spending minutes and gigabytes on
  attributes it has no weights for.
* A column file without its label columns has as many columns as the spec
  has inputs.  A file that instead left an *input* column out but kept its
  labels has as many, and its label column would be read as the last
  input (``word chunk`` read by ``columns word, pos, chunk`` as word and
  pos).  That file is refused when every value of its last column is a
  label of the model's output and the model never saw one of those values
  in that column in training (so a column that really holds labels — a
  stacked tagger's input — is read as before).
"""
from __future__ import annotations

import re
import weakref
from typing import Sequence

from fgl.errors import DataError
from fgl.lang import ast

_VECTOR_DIMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # model -> dims


def vector_dims(model) -> dict[str, int]:
    """Each vector column's dimension in training (columns no attribute
    reads are absent), from the model's vocabularies; kept while the model lives."""
    try:
        return _VECTOR_DIMS[model]
    except (KeyError, TypeError):   # (TypeError: a model that cannot be weakly referenced)
        pass
    columns = [c.name for c in model.spec.columns if c.kind == "vector"]
    dims: dict[str, int] = {}
    if columns:
        found = {c: re.compile(rf"(?:^|&){re.escape(c)}\[[^\[\]=&]*\]\[(\d+)\](?=&|=|$)")
                 for c in columns}
        for vocab in model.vocabs:
            for key in vocab:
                name = key.split("=", 1)[0]
                for c, pattern in found.items():
                    if c + "[" in name:
                        for m in pattern.finditer(name):
                            dims[c] = max(dims.get(c, 0), int(m.group(1)) + 1)
    try:
        _VECTOR_DIMS[model] = dims
    except TypeError:   # (not cached)
        pass
    return dims


def _seen_texts(model, column: str) -> set[str]:
    """The texts the model's attributes hold for ``column`` read alone
    (``pos[t]=NN``, ``pos[t-1]=DT``)."""
    single = re.compile(rf"{re.escape(column)}\[[^\[\]=&]*\]=(.*)", re.DOTALL)
    out: set[str] = set()
    for vocab in model.vocabs:
        for key in vocab:
            m = single.fullmatch(key)
            if m:
                out.add(m.group(1))
    return out


def check_model_input(model, sentences: Sequence, with_gold: bool = False) -> None:
    """Refuse ``sentences`` (column-file sentences) that ``model`` would
    read as something else than it was trained on (module docstring)."""
    spec = model.spec
    if spec.input_format != "conll" or not sentences:
        return
    names = [c.name for c in spec.columns]
    n_all, n_in = len(names), len(names) - len(spec.outputs)
    dims = vector_dims(model)
    if dims:
        _check_dims(spec, sentences, dims, n_all, n_in)
    if not with_gold and n_in < n_all:
        _check_shifted_labels(model, sentences, names, n_in)


def _check_dims(spec: ast.Spec, sentences: Sequence, dims: dict[str, int], n_all: int,
                n_in: int) -> None:
    for s in sentences:
        if not s.rows:
            continue
        width = len(s.rows[0])
        kept = [c.name for c in spec.columns] if width == n_all else \
            [c.name for c in spec.columns if c.name not in spec.outputs]
        for j, name in enumerate(kept):
            want = dims.get(name)
            if want is None or j >= width:
                continue
            for row, line in zip(s.rows, s.lines):
                field = row[j]
                got = field.count(",") + 1 if isinstance(field, str) else len(field)
                if got != want:
                    raise DataError(f"column '{name}' holds a vector of {got:,} numbers; "
                                    f"the model was trained on vectors of {want:,}: give it "
                                    "vectors of that dimension", s.file, line)


def _check_shifted_labels(model, sentences: Sequence, names: list[str], n_in: int) -> None:
    inputs = [n for n in names if n not in model.spec.outputs]
    last = inputs[-1]
    if last == ast.SKIP_COLUMN or next(c for c in model.spec.columns
                                       if c.name == last).kind != "text":
        return
    labels = set().union(*(layer.labels for layer in model.layers if not layer.hidden))
    values: set[str] = set()
    first = None
    for s in sentences:
        for row, line in zip(s.rows, s.lines):
            if len(row) != n_in:
                return        # (other widths: sentence_columns says what is wrong)
            v = row[n_in - 1]
            if v not in labels:
                return
            values.add(v)
            if first is None:
                first = (s.file, line)
    if first is None or values & _seen_texts(model, last):
        return
    shown = ", ".join(sorted(values)[:5]) + (", ..." if len(values) > 5 else "")
    outputs = ", ".join(model.spec.outputs)
    plural = "s" if len(names) - n_in > 1 else ""
    raise DataError(f"this file has {n_in} columns and the model reads {len(names)} "
                    f"({' '.join(names)}): without the label column{plural} "
                    f"{outputs} its column {n_in} would be read as '{last}', but every value "
                    f"there is a label of {outputs} ({shown}) that training never saw in "
                    f"'{last}'; give the file its '{last}' column (a file to tag holds "
                    f"{' '.join(inputs)}, or all {len(names)} columns)", *first)
