"""The templates and features of a factor-graph model, read off the gold
factors of the training data (Sutton & McCallum eq. 1.41, 1.54).

A template's *configurations* are the label tuples of its factor (row-major,
first variable slowest); its features pair an attribute row with a
configuration, restricted to configurations seen in gold factors
(``support observed``) or all of them.  ``collect_factors`` reads a shard's
unrolled instances into a ``FactorSummary`` (the compile's collect step);
``template_plans`` and ``feature_rows`` make the templates and features of
the merged summary — of one shard on one machine
(``fgl.compile.factor_graphs``), of every worker's on a Dask cluster
(``fgl.distributed.compile``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fgl.compile.frontend import Layer, TemplatePlan, keep_counted, resolve_patterns, template_plan
from fgl.compile.summaries import FactorSummary, RowSummary, unique_pairs
from fgl.compile.unrolling import AttributeKeys, UnrolledFactors, variables
from fgl.lang import ast


def config_strides(layers: list[Layer], var_layers: list[int]) -> list[int]:
    """Row-major strides of a factor table over variables in ``var_layers``."""
    cards = [len(layers[li].labels) for li in var_layers]
    return [int(np.prod(cards[k + 1:])) for k in range(len(cards))]


def pattern_configs(templates: list[TemplatePlan], layers: list[Layer]) -> list[set[int]]:
    """Per template, its patterns as flat configurations."""
    out = []
    for tpl in templates:
        strides = config_strides(layers, tpl.layers)
        out.append({sum(c * s for c, s in zip(conf, strides)) for conf in tpl.patterns})
    return out


def template_plans(spec: ast.Spec, layers: list[Layer], layer_index: dict[str, int],
                   configs: list[set[int]], sigma: float, min_count: int = 1
                   ) -> list[TemplatePlan]:
    """Each template's plan: the configurations that carry weights are its
    explicit patterns, those of the gold factors ``configs`` (``patterns
    observed``: flat configurations of factors whose variables are all
    labelled, ``FactorSummary.configs``), or all of them."""
    plans = []
    for ti, tpl in enumerate(spec.templates):
        var_layers = [layer_index[var] for var, _, _ in variables(tpl)]
        observed = not any(layers[li].hidden for li in var_layers)
        cards = [len(layers[li].labels) for li in var_layers]

        def seen(lengths: list[int], ti: int = ti, cards: list[int] = cards
                 ) -> list[tuple[int, ...]]:
            return [tuple(int(v) for v in np.unravel_index(c, cards)) for c in configs[ti]]

        patterns = resolve_patterns(tpl, layers, var_layers, seen, can_observe=observed,
                                    exact_length=True)
        plans.append(template_plan(tpl, var_layers, patterns, sigma,
                                   "observed" if tpl.observations and observed else "all",
                                   min_count))
    return plans


@dataclass
class FeatureRows:
    """The attribute rows of the templates' features (Sutton & McCallum eq.
    1.54): ``vocabs[t]`` maps template t's attribute keys to rows;
    ``configs[r]`` the configurations row r was seen with in gold factors
    (``support observed``; empty for ``support all``, whose rows take
    every configuration of ``every[t]``).  Configurations are flat indices
    into the factor table (row-major, first variable slowest)."""

    vocabs: list[dict[str, int]]
    configs: list[set[int]]
    template: list[int]
    every: list[list[int] | None]
    count: list[int] = field(default_factory=list)   # each row's factors in training

    @classmethod
    def empty(cls, templates: list[TemplatePlan], configs: list[set[int]]) -> "FeatureRows":
        """No rows yet, for ``templates`` whose patterns are ``configs``
        (``pattern_configs``)."""
        return cls([{} for _ in templates], [], [], [
            None if tpl.support == "observed" else sorted(cs)
            for tpl, cs in zip(templates, configs)])

    def row(self, ti: int, key: str) -> int:
        """Template ``ti``'s row of attribute ``key``, a new one (numbered in
        order first met) if it has none."""
        r = self.vocabs[ti].get(key)
        if r is None:
            r = self.vocabs[ti][key] = len(self.configs)
            self.configs.append(set())
            self.template.append(ti)
            self.count.append(0)
        return r

    def cut(self, templates: list[TemplatePlan]) -> "FeatureRows":
        """The rows whose attribute occurs in at least its template's
        ``min_count`` factors of the training data, renumbered in order."""
        keep = keep_counted(np.array(self.count, dtype=np.int64),
                            np.array(self.template, dtype=np.int64), templates)
        if keep is None or keep.all():
            return self
        new = np.cumsum(keep) - 1
        vocabs = [{k: int(new[r]) for k, r in vocab.items() if keep[r]} for vocab in self.vocabs]
        return FeatureRows(vocabs, [c for c, k in zip(self.configs, keep) if k],
                           [t for t, k in zip(self.template, keep) if k], self.every,
                           [n for n, k in zip(self.count, keep) if k])

    def counts(self) -> list[int]:
        """Features per template, before they are made."""
        out = [0] * len(self.vocabs)
        for r, ti in enumerate(self.template):
            out[ti] += len(self.configs[r]) if self.every[ti] is None else len(self.every[ti])
        return out

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(row_ptr, feat_config): each row's configurations, ascending."""
        per_row = [sorted(c) if self.every[ti] is None else self.every[ti]
                   for c, ti in zip(self.configs, self.template)]
        row_ptr = np.zeros(len(per_row) + 1, dtype=np.int64)
        row_ptr[1:] = np.cumsum([len(c) for c in per_row])
        feat_config = np.fromiter((c for cs in per_row for c in cs), dtype=np.int64,
                                  count=int(row_ptr[-1]))
        return row_ptr, feat_config


def feature_rows(templates: list[TemplatePlan], layers: list[Layer], summary: RowSummary
                 ) -> FeatureRows:
    """Features are (attribute row, configuration) pairs: per row of the
    merged ``summary``, the configurations it was seen with in fully
    labelled gold factors that its template's patterns name (``support
    observed``), or all its template's configurations."""
    config_sets = pattern_configs(templates, layers)
    rows = FeatureRows.empty(templates, config_sets)
    rows.vocabs, rows.template = summary.vocabs, summary.template.tolist()
    rows.configs = [set() for _ in range(summary.n_rows)]
    of_pair = summary.template[summary.pair_row]
    keep = np.zeros(len(of_pair), dtype=np.bool_)
    for ti, (tpl, named) in enumerate(zip(templates, config_sets)):
        if tpl.support == "observed":
            keep |= (of_pair == ti) & np.isin(summary.pair_value,
                                              np.fromiter(named, np.int64, len(named)))
    for r, c in zip(summary.pair_row[keep].tolist(), summary.pair_value[keep].tolist()):
        rows.configs[r].add(c)
    rows.count = summary.count.tolist()
    return rows


def collect_factors(layers: list[Layer], var_layers: list[list[int]],
                    unrolled: list[UnrolledFactors], golds: list[np.ndarray],
                    keys: AttributeKeys, shard: int) -> FactorSummary:
    """The collect step over a shard's unrolled instances (their attribute
    keys numbered by ``keys`` in the order first met): each template's gold
    configurations, and per attribute row the configurations of the fully
    labelled gold factors it occurs in and its occurrences (a factor with
    an unlabelled variable adds occurrences, but no configuration)."""
    n_rows = len(keys.template)
    width = max((len(vl) for vl in var_layers), default=0)
    strides = np.zeros((len(var_layers), width), dtype=np.int64)
    for ti, vl in enumerate(var_layers):
        strides[ti, :len(vl)] = config_strides(layers, vl)
    configs: list[set[int]] = [set() for _ in var_layers]
    count = np.zeros(n_rows, dtype=np.int64)
    seen = []
    for u, g in zip(unrolled, golds):
        count += np.bincount(u.key, minlength=n_rows)
        config, labelled = gold_configs(u, g, strides)
        for ti, c in zip(*unique_pairs(u.template[labelled], config[labelled])):
            configs[ti].add(int(c))
        item_fac = np.repeat(np.arange(len(u)), np.diff(u.item_ptr))
        on = labelled[item_fac]
        seen.append(np.stack(unique_pairs(u.key[on], config[item_fac[on]])))
    pairs = np.concatenate(seen, axis=1) if seen else np.zeros((2, 0), dtype=np.int64)
    return FactorSummary(configs, RowSummary.of_shard(
        shard, keys.vocabs, np.array(keys.template, dtype=np.int64), pairs[0], pairs[1], count))


def gold_configs(u: UnrolledFactors, gold: np.ndarray, strides: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Each factor's gold configuration (flat, by its template's row of
    ``strides``) and whether all its variables are labelled."""
    F = len(u)
    fac = np.repeat(np.arange(F), np.diff(u.var_ptr))
    pos = np.arange(u.var.size) - u.var_ptr[fac]
    g = gold[u.var]
    config = np.zeros(F, dtype=np.int64)
    np.add.at(config, fac, g * strides[u.template[fac], pos])
    labelled = np.ones(F, dtype=np.bool_)
    labelled[fac[g < 0]] = False
    return config, labelled
