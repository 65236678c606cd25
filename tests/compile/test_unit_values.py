"""Units' attribute values (``fgl.compile.unit_rows.UnitRows``): stored in
the narrowest of int8, float32 and float64 holding every value so far with
the same bits, unit by unit (``add``) or many at once (``extend``) alike;
kept with their rows through the ``min_count`` cut-off; and giving a
segment model the same bits as double."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fgl.compile.unit_rows import UnitRows
from fgl.data.sentence import Sentence
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.registry import compile_model


def stored(units_vals: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    """The values of units holding ``units_vals``, added one by one and all at once."""
    one, many = UnitRows(), UnitRows()
    for i, vals in enumerate(units_vals):
        one.add(list(range(i, i + len(vals))), vals)
    flat = [v for vals in units_vals for v in vals]
    many.extend(np.array([len(v) for v in units_vals]), np.arange(len(flat)),
                np.array(flat, dtype=np.float64))
    return one.arrays()[2], many.arrays()[2]


@pytest.mark.parametrize("later, dtype", [
    ([2.0, -128.0, 127.0], np.int8),
    ([128.0], np.float32),      # past int8
    ([-0.0], np.float32),       # int8 would lose the sign of zero
    ([0.5, 2.0 ** 100], np.float32),
    ([0.1], np.float64),        # not a float32
    ([np.inf], np.float32),
])
def test_the_narrowest_store_that_keeps_every_bit(later, dtype):
    units = [[1.0, 1.0], [], [1.0], later, [1.0]]
    for vals in stored(units):
        assert vals.dtype == dtype
        want = np.array([v for u in units for v in u], dtype=np.float64)
        assert vals.astype(np.float64).tobytes() == want.tobytes()


def test_binary_units_store_no_values_and_a_wider_value_widens_the_earlier_ones():
    for vals in stored([[1.0], [1.0, 1.0]]):
        assert vals.strides == (0,) and (vals == 1.0).all()
    for vals in stored([[3.0], [1.0, 2.5], [7.0, 0.1]]):
        assert vals.dtype == np.float64
        np.testing.assert_array_equal(vals, [3.0, 1.0, 2.5, 7.0, 0.1])


def test_values_survive_the_cut_off_with_their_rows():
    """Counts (int8 values) of a segment model with ``min_count``: the
    compiled training data equals ``encode``'s of the same sentences, and
    its log Z and expected counts are those of the values in double."""
    spec = validate(parse_spec("""
columns word, label
output label
segments max 3 from bio
template seg: s[j] ~ word[u..v], count(word[u..v]) (min_count = 2)
template trans: s[j-1..j]
""", "<test>"))
    words = [["a", "a", "b", "c"], ["a", "b", "b"], ["c", "a", "a", "d"]]
    tags = [["B-X", "I-X", "O", "B-Y"], ["B-X", "I-X", "I-X"], ["O", "B-X", "I-X", "O"]]
    sents = [Sentence([[w, y] for w, y in zip(ws, ts)], list(range(1, len(ws) + 1)), i, "<t>")
             for i, (ws, ts) in enumerate(zip(words, tags))]
    model, enc = compile_model(spec, sents)
    assert len(model.vocabs[0]) < 6        # (a cut made: b, c, d and counts 3 once or never)
    assert enc.tok_val.dtype == np.int8 and (enc.tok_val == 2).any()
    again = model.encode(sents, with_gold=True)
    np.testing.assert_array_equal(again.tok_ptr, enc.tok_ptr)
    np.testing.assert_array_equal(again.tok_row, enc.tok_row)
    np.testing.assert_array_equal(again.tok_val, enc.tok_val)
    wide = dataclasses.replace(enc, tok_val=enc.tok_val.astype(np.float64))
    w = np.random.default_rng(1).normal(size=model.program.n_features)
    a, b = model.program.expectations(w, enc), model.program.expectations(w, wide)
    assert a.log_z == b.log_z and a.counts.tobytes() == b.counts.tobytes()
