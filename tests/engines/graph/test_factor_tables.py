"""The factor tables θ_f and expected counts of
``fgl.engines.graph.table_kernels``, rows added as blocks where their
configurations run 0, 1, ... in order, against the same sums taken feature
by feature in numpy."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.engines.graph.table_kernels import (
    dense_rows,
    factor_tables,
    feature_expectations,
    tied_tables,
)


@st.composite
def programs(draw):
    """(row_ptr, feat_config, sizes, fac_ptr, fac_row, fac_val): attribute
    rows over tables of 4 or 9 entries, some weighting the whole table in
    order (dense), some a prefix, some scattered; factors holding rows."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    n_fac = draw(st.integers(1, 6))
    sizes = rng.choice([4, 9], n_fac)
    configs, fac_rows = [], []
    for f in range(n_fac):
        rows = []
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["all", "prefix", "scattered"]))
            n = int(sizes[f])
            if kind == "all":
                cfg = np.arange(n)
            elif kind == "prefix":
                cfg = np.arange(int(rng.integers(1, n + 1)))
            else:
                cfg = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
            rows.append(len(configs))
            configs.append(cfg)
        fac_rows.append(rows)
    vals = [list(rng.normal(0.0, 1.0, len(rows))) for rows in fac_rows]
    for f in range(1, n_fac):   # (some factors repeat an earlier one's rows: a tied table)
        if draw(st.booleans()):
            g = int(rng.integers(0, f))
            sizes[f], fac_rows[f], vals[f] = sizes[g], fac_rows[g], vals[g]
    row_ptr = np.concatenate([[0], np.cumsum([len(c) for c in configs])]).astype(np.int64)
    feat_config = (np.concatenate(configs) if configs else np.zeros(0)).astype(np.int64)
    fac_ptr = np.concatenate([[0], np.cumsum([len(r) for r in fac_rows])]).astype(np.int64)
    fac_row = np.array([r for rows in fac_rows for r in rows], dtype=np.int64)
    fac_val = np.array([v for vs in vals for v in vs], dtype=np.float64)
    return row_ptr, feat_config, sizes, fac_ptr, fac_row, fac_val, rng


@settings(max_examples=60, deadline=None)
@given(programs())
def test_tables_and_counts_equal_the_feature_by_feature_sums(case):
    row_ptr, feat_config, sizes, fac_ptr, fac_row, fac_val, rng = case
    dense = dense_rows(row_ptr, feat_config)
    for r in range(len(row_ptr) - 1):
        cfg = feat_config[row_ptr[r]:row_ptr[r + 1]]
        assert dense[r] == np.array_equal(cfg, np.arange(len(cfg)))
    tab_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    w = rng.normal(0.0, 1.0, len(feat_config))
    beliefs = rng.uniform(0.0, 1.0, int(tab_ptr[-1]))
    want_table = np.zeros(int(tab_ptr[-1]))
    want_counts = np.zeros(len(feat_config))
    for f in range(len(sizes)):
        for j in range(fac_ptr[f], fac_ptr[f + 1]):
            for k in range(row_ptr[fac_row[j]], row_ptr[fac_row[j] + 1]):
                want_table[tab_ptr[f] + feat_config[k]] += fac_val[j] * w[k]
                want_counts[k] += fac_val[j] * beliefs[tab_ptr[f] + feat_config[k]]
    table = np.empty(int(tab_ptr[-1]))
    own = np.arange(len(sizes), dtype=np.int64)
    factor_tables(0, len(sizes), tab_ptr, fac_ptr, fac_row, fac_val, row_ptr, feat_config,
                   dense, w, own, table)
    counts = np.zeros(len(feat_config))
    feature_expectations(0, len(sizes), tab_ptr, fac_ptr, fac_row, fac_val, row_ptr,
                          feat_config, dense, beliefs, own, counts)
    np.testing.assert_array_equal(table, want_table)
    np.testing.assert_array_equal(counts, want_counts)

    # tied: each factor repeating an earlier one's rows reads that one's table, made once,
    # and its beliefs summed into it give the same counts
    rep = tied_tables(tab_ptr, np.arange(0, 2 * len(sizes) + 1, 2), fac_ptr, fac_row, fac_val)
    for f, r in enumerate(rep):
        assert r <= f
        np.testing.assert_array_equal(want_table[tab_ptr[f]:tab_ptr[f + 1]],
                                      want_table[tab_ptr[r]:tab_ptr[r + 1]])
    tied = np.full(int(tab_ptr[-1]), np.nan)
    factor_tables(0, len(sizes), tab_ptr, fac_ptr, fac_row, fac_val, row_ptr, feat_config,
                   dense, w, rep, tied)
    summed = np.zeros_like(beliefs)
    for f, r in enumerate(rep):
        summed[tab_ptr[r]:tab_ptr[r + 1]] += beliefs[tab_ptr[f]:tab_ptr[f + 1]]
        if r == f:
            np.testing.assert_array_equal(tied[tab_ptr[f]:tab_ptr[f + 1]],
                                          want_table[tab_ptr[f]:tab_ptr[f + 1]])
        else:   # (not written)
            assert np.isnan(tied[tab_ptr[f]:tab_ptr[f + 1]]).all()
    counts = np.zeros(len(feat_config))
    feature_expectations(0, len(sizes), tab_ptr, fac_ptr, fac_row, fac_val, row_ptr,
                          feat_config, dense, summed, rep, counts)
    np.testing.assert_allclose(counts, want_counts, rtol=1e-12, atol=1e-12)
