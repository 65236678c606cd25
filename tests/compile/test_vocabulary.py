"""The compact key table and vocabulary against the dicts they replace.

Hypothesis draws keys from all of Unicode (lone surrogates, NUL, the empty
key, near-duplicates) and operation sequences, and checks every answer
against a plain ``dict`` doing the same."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.compile.vocabulary import Vocabulary
from fgl.features.key_table import KeyTable

KEYS = st.text(alphabet=st.characters(codec=None), max_size=12)
FEW_KEYS = st.sampled_from(["", "a", "b", "a=", "=a", "word[t]=The", "word[t]=the", "é", "\x00",
                            "\ud800", "w|x", "w & x", "x & w"])


@given(st.lists(st.lists(st.one_of(KEYS, FEW_KEYS), max_size=30), max_size=8))
@settings(max_examples=200, deadline=None)
def test_key_table_numbers_keys_as_a_dict_would(batches):
    table, ref = KeyTable(), {}
    for batch in batches:
        got = table.ids(batch)
        want = [ref.setdefault(k, len(ref)) for k in batch]
        assert got.tolist() == want
        assert len(table) == len(ref)
    assert list(table) == list(ref)
    for k, i in ref.items():
        assert table.find(k) == i and table.key(i) == k and table.key_id(k) == i
    probe = ["never seen", *ref]
    assert table.lookup(probe).tolist() == [-1, *ref.values()]
    assert len(table) == len(ref)     # (lookups add nothing)


@given(st.lists(st.tuples(st.sampled_from(["set", "del", "batch"]),
                          st.lists(st.one_of(KEYS, FEW_KEYS), min_size=1, max_size=6),
                          st.integers(0, 50)), max_size=25))
@settings(max_examples=200, deadline=None)
def test_vocabulary_behaves_as_a_dict(ops):
    vocab, ref = Vocabulary(), {}
    for op, keys, row in ops:
        if op == "set":
            vocab[keys[0]] = ref[keys[0]] = row
        elif op == "del":
            if keys[0] in ref:
                del vocab[keys[0]], ref[keys[0]]
        else:
            rows = np.arange(row, row + len(keys))
            vocab.assign(keys, rows)
            ref.update(zip(keys, rows.tolist()))
        assert len(vocab) == len(ref)
    assert dict(vocab.items()) == ref and vocab == ref
    assert sorted(vocab) == sorted(ref) and sorted(vocab.values()) == sorted(ref.values())
    for k in list(ref)[:5] + ["never seen"]:
        assert (k in vocab) == (k in ref) and vocab.get(k, -7) == ref.get(k, -7)
    probe = list(ref) + ["never seen"]
    assert vocab.lookup(probe).tolist() == [ref[k] for k in ref] + [-1]
    keys, rows = vocab.keys_by_row()
    assert rows.tolist() == sorted(ref.values())
    assert [ref[k] for k in keys] == rows.tolist()
    assert dict(vocab.items_with(" & ")) == {k: r for k, r in ref.items() if " & " in k}


def test_vocabulary_copies_keys_from_a_table_and_renumbers():
    table = KeyTable()
    table.ids(["x", "y", "z", "w"])
    vocab = Vocabulary({"q": 9})
    vocab.assign_from(table, np.array([2, 0]), np.array([5, 7]))
    assert vocab == {"q": 9, "z": 5, "x": 7}
    assert vocab.rows_of(table, 0, 4).tolist() == [7, -1, 5, -1]
    new_row = np.full(10, -1)
    new_row[[5, 9]] = [0, 1]
    vocab.renumber(new_row)   # row 7 (x) dropped
    assert vocab == {"q": 1, "z": 0} and len(vocab) == 2
    assert "x" not in vocab and vocab.get("x") is None
