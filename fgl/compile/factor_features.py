"""The templates and features of a factor-graph model, read off the gold
factors of the training data (Sutton & McCallum eq. 1.41, 1.54).

A template's *configurations* are the label tuples of its factor (row-major,
first variable slowest); its features pair an attribute row with a
configuration, restricted to configurations seen in gold factors
(``support observed``) or all of them.  The one-machine compile
(``fgl.compile.factor_graphs``) reads them from the unrolled instances; the
distributed one (``fgl.distributed.compile``) merges its shards' summaries
into the same ``FeatureRows``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fgl.compile.frontend import Layer, TemplatePlan, keep_counted, resolve_patterns, template_plan
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


def template_plans(spec: ast.Spec, layers: list[Layer], layer_index: dict[str, int], unrolled: list,
           golds: list[np.ndarray], sigma: float, min_count: int = 1) -> list[TemplatePlan]:
    """Each template's plan: the configurations that carry weights are its
    explicit patterns, those of the gold assignments (``patterns
    observed``: of factors whose variables are all labelled), or all of
    them."""
    plans = []
    for ti, tpl in enumerate(spec.templates):
        var_layers = [layer_index[var] for var, _, _ in variables(tpl)]
        observed = not any(layers[li].hidden for li in var_layers)

        def seen(lengths: list[int], ti: int = ti) -> set[tuple[int, ...]]:
            return {tuple(int(g[v]) for v in vs) for inst_f, g in zip(unrolled, golds)
                    for t, vs, _ in inst_f if t == ti and min(g[v] for v in vs) >= 0}

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


def feature_rows(templates: list[TemplatePlan], layers: list[Layer],
                 unrolled: list[UnrolledFactors], golds: list[np.ndarray],
                 keys: AttributeKeys) -> FeatureRows:
    """Features are (attribute row, configuration) pairs: per row, the
    configurations it was seen with in gold factors (``support observed``)
    or all its template's configurations (a factor with an unlabelled
    variable adds its attribute rows, but no configuration).  The rows are
    the attribute keys, numbered as ``keys`` numbered them while unrolling
    (in the order first met)."""
    config_sets = pattern_configs(templates, layers)
    rows = FeatureRows.empty(templates, config_sets)
    n_rows = len(keys.template)
    rows.vocabs, rows.template = keys.vocabs, keys.template
    rows.configs = [set() for _ in range(n_rows)]
    count = np.zeros(n_rows, dtype=np.int64)
    width = max((len(t.layers) for t in templates), default=0)
    strides = np.zeros((len(templates), width), dtype=np.int64)
    for ti, tpl in enumerate(templates):
        strides[ti, :len(tpl.layers)] = config_strides(layers, tpl.layers)
    observed = np.array([t.support == "observed" for t in templates], dtype=np.bool_)
    seen = []
    for u, g in zip(unrolled, golds):
        count += np.bincount(u.key, minlength=n_rows)
        config, labelled = gold_configs(u, g, strides)
        keep = labelled & observed[u.template]
        for ti, c in set(zip(u.template[keep].tolist(), config[keep].tolist())):
            if c not in config_sets[ti]:   # (a configuration no pattern names)
                keep &= (u.template != ti) | (config != c)
        item_fac = np.repeat(np.arange(len(u)), np.diff(u.item_ptr))
        on = keep[item_fac]
        seen.append(np.unique(np.stack([u.key[on], config[item_fac[on]]]), axis=1))
    if seen:
        for r, c in np.unique(np.concatenate(seen, axis=1), axis=1).T.tolist():
            rows.configs[r].add(c)
    rows.count = count.tolist()
    return rows


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
