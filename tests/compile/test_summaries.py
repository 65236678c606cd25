"""Merging the compile's shard summaries (fgl.compile.summaries): any order
and grouping of the shards' summaries gives the summary of the
concatenated shards read as one."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.compile.summaries import FactorSummary, LabelSummary, RowSummary, merge_all, unique_pairs

# an occurrence of an attribute at a gold unit: (template, key, patterns seen with it)
occurrence = st.tuples(st.integers(0, 2), st.sampled_from("abcdef"),
                       st.frozensets(st.integers(0, 4), max_size=3))
shards = st.lists(st.lists(occurrence, max_size=8), min_size=1, max_size=6)


def _summary(occurrences: list, shard: int) -> RowSummary:
    """A shard's summary as collect makes it: rows numbered in the order
    their keys are first met, each counted once per occurrence."""
    vocabs: list[dict[str, int]] = [{}, {}, {}]
    template, count, pair_row, pair_value = [], [], [], []
    for ti, key, patterns in occurrences:
        r = vocabs[ti].setdefault(key, len(template))
        if r == len(template):
            template.append(ti)
            count.append(0)
        count[r] += 1
        pair_row += [r] * len(patterns)
        pair_value += sorted(patterns)
    return RowSummary.of_shard(shard, vocabs, np.array(template, dtype=np.int64),
                               np.array(pair_row, dtype=np.int64),
                               np.array(pair_value, dtype=np.int64),
                               np.array(count, dtype=np.int64))


def _merged_in_some_tree(summaries: list, order: list[int], cuts: list[int]):
    """The merge of ``summaries`` taken in ``order``, grouped by splitting the
    list at ``cuts`` (one a level, as far as they go) into a tree."""
    def tree(items: list, depth: int):
        if len(items) == 1:
            return items[0]
        at = 1 + cuts[depth % len(cuts)] % (len(items) - 1)
        return tree(items[:at], depth + 1).merge(tree(items[at:], depth + 1))
    return tree([summaries[i] for i in order], 0)


def _same(a: RowSummary, b: RowSummary) -> None:
    assert [list(v.items()) for v in a.vocabs] == [list(v.items()) for v in b.vocabs]
    for name in ("template", "pair_row", "pair_value", "count"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@settings(max_examples=60, deadline=None)
@given(shards, st.randoms(use_true_random=False), st.lists(st.integers(0, 100), min_size=1))
def test_any_merge_of_shard_summaries_is_the_whole_datas(parts, rng, cuts):
    summaries = [_summary(occurrences, i) for i, occurrences in enumerate(parts)]
    whole = _summary([o for occurrences in parts for o in occurrences], 0)
    in_order = merge_all(summaries)
    _same(in_order, whole)
    order = list(range(len(summaries)))
    rng.shuffle(order)
    shuffled = _merged_in_some_tree(summaries, order, cuts)
    _same(shuffled, whole)
    assert np.array_equal(shuffled.rank, in_order.rank)


@given(st.lists(st.tuples(st.frozensets(st.sampled_from("xyz")), st.integers(0, 9),
                          st.integers(0, 50)), min_size=1, max_size=5),
       st.randoms(use_true_random=False))
def test_label_summaries_merge_in_any_order(parts, rng):
    summaries = [LabelSummary({"y": set(labels)}, {tuple(sorted(labels))}, n, 3 * n, longest)
                 for labels, n, longest in parts]
    first = merge_all(summaries)
    rng.shuffle(summaries)
    assert merge_all(summaries) == first
    assert first.labels["y"] == set().union(*(p[0] for p in parts))
    assert first.n_tokens == 3 * sum(p[1] for p in parts)
    assert first.longest == max(p[2] for p in parts)


def test_factor_summaries_merge_their_configurations_and_rows():
    a = FactorSummary([{0, 3}, set()], _summary([(0, "a", frozenset({3}))], 1))
    b = FactorSummary([{1}, {2}], _summary([(0, "b", frozenset()), (0, "a", frozenset({1}))],
                                           0))
    merged = a.merge(b)
    assert merged.configs == [{0, 1, 3}, {2}]
    assert list(merged.rows.vocabs[0].items()) == [("b", 0), ("a", 1)]   # shard 0 first
    assert merged.rows.seen(1) == [1, 3] and merged.rows.count.tolist() == [1, 2]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=60),
       st.sampled_from([1, 1 << 40]))
def test_unique_pairs_are_the_distinct_pairs_sorted(pairs, scale):
    """One int64 per pair where it fits; ``scale`` 2^40 makes row x base
    overflow it, and the structured sort takes over: both give the sorted
    distinct pairs."""
    row = np.array([r * scale for r, _ in pairs], dtype=np.int64)
    value = np.array([v * scale for _, v in pairs], dtype=np.int64)
    got_row, got_value = unique_pairs(row, value)
    want = sorted({(r * scale, v * scale) for r, v in pairs})
    assert list(zip(got_row.tolist(), got_value.tolist())) == want
    assert got_row.dtype == got_value.dtype == np.int64
