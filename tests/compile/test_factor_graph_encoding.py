"""The factor-graph compile's arrays against a plain-Python reading of the
unrolled factors (``Unroller.factors``): attribute rows numbered in the
order first met, each row's gold configurations, and each factor's rows and
values — whether the values are all 1 (stored as a view of one 1.0) or
real (a ``value(x[t])`` attribute)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fgl.api import CRF
from fgl.compile.factor_features import config_strides
from fgl.compile.unrolling import AttributeKeys, Unroller, gold_assignment, group_instances
from fgl.data.sentence import Sentence

BINARY = """columns word, label
output label
obs w = word[t-1..t]
template state: y[t] ~ bias, w
template trans: y[t-1..t]
template skip:  (y[i], y[j]) where word[i] == word[j] and regex(word[i], "^[A-Z]")
                within document ~ bias, either(w)
infer trw
"""
VALUED = """columns word, x:number, label
output label
template state: y[t] ~ word[t], value(x[t])
template trans: y[t-1..t]
template skip:  (y[i], y[j]) where word[i] == word[j] within document ~ word[i]
infer trw
"""
WORDS = ["Ann", "Bob", "met", "in", "Rome", "and", "Ann", "left", "Bob"]


def documents(valued: bool, n_docs: int = 4, seed: int = 0) -> list[Sentence]:
    rng = np.random.default_rng(seed)
    out = []
    for d in range(n_docs):
        for _ in range(3):
            n = int(rng.integers(3, 8))
            rows = []
            for _ in range(n):
                w = WORDS[int(rng.integers(len(WORDS)))]
                label = "P" if w[0].isupper() else "O"
                rows.append([w, f"{rng.normal():.3f}", label] if valued else [w, label])
            out.append(Sentence(rows, list(range(1, n + 1)), d, "<test>"))
    return out


def reference(model, sentences):
    """Rows, row configurations and per-factor (rows, values), read off
    ``Unroller.factors`` with lists and dicts."""
    spec = model.spec
    unroller = Unroller.for_spec(spec, Path("."), model.layers)
    instances = group_instances(spec, sentences, with_gold=True)
    vocabs = [{} for _ in spec.templates]
    configs: list[set] = []
    factors = []
    for inst in instances:
        gold = gold_assignment(inst, model.layers, True)
        for ti, vs, items in unroller.factors(inst):
            strides = config_strides(model.layers, model.templates[ti].layers)
            config = sum(int(gold[v]) * s for v, s in zip(vs, strides))
            observed = model.templates[ti].support == "observed"
            rows, vals = [], []
            for key, value in items:
                if key not in vocabs[ti]:
                    vocabs[ti][key] = len(configs)
                    configs.append(set())
                r = vocabs[ti][key]
                if observed:
                    configs[r].add(config)
                rows.append(r)
                vals.append(value)
            factors.append((ti, list(vs), rows, vals))
    return vocabs, configs, factors


@pytest.mark.parametrize("text, valued", [(BINARY, False), (VALUED, True)])
def test_encoded_arrays_equal_the_plain_reading(text, valued):
    sentences = documents(valued)
    model, data = CRF(text)._compile(sentences)
    vocabs, configs, factors = reference(model, sentences)
    assert [list(v.items()) for v in model.vocabs] == [list(v.items()) for v in vocabs]
    program = model.program
    got = [set(program.feat_config[program.row_ptr[r]:program.row_ptr[r + 1]].tolist())
           for r in range(len(configs))]
    every = [set(range(int(n))) for n in program.template_size]
    want = [c if model.templates[t].support == "observed" else every[t]
            for c, t in zip(configs, program.row_template)]
    assert got == want
    assert data.fac_tpl.tolist() == [f[0] for f in factors]
    assert data.fac_row.dtype == np.int32
    for f, (_, _, rows, vals) in enumerate(factors):
        a, b = data.fac_ptr[f], data.fac_ptr[f + 1]
        assert data.fac_row[a:b].tolist() == rows
        assert data.fac_val[a:b].tolist() == vals
    assert (data.fac_val.strides == (0,)) == (not valued)   # binary: no values stored
    variables = [list(g.factor_vars(f)) for g in data.graphs for f in range(g.n_factors)]
    assert variables == [f[1] for f in factors]


def test_tagging_drops_keys_the_model_has_no_row_for():
    train = documents(False, seed=1)
    model, _ = CRF(BINARY)._compile(train)
    test = documents(False, n_docs=2, seed=7)
    test[0].rows[0][0] = "Zed"   # an unseen word: its keys have no row
    data = model.encode(test, with_gold=True)
    unroller = Unroller.for_spec(model.spec, Path("."), model.layers)
    rows, unknown = [], 0
    for inst in group_instances(model.spec, test, with_gold=True):
        for ti, _, items in unroller.factors(inst):
            rows.append([model.vocabs[ti][k] for k, _ in items if k in model.vocabs[ti]])
            unknown += len(items) - len(rows[-1])
    assert unknown > 0
    assert len(data.fac_ptr) == len(rows) + 1
    assert [data.fac_row[data.fac_ptr[f]:data.fac_ptr[f + 1]].tolist()
            for f in range(len(rows))] == rows


def test_attribute_keys_number_in_the_order_first_met_across_templates():
    keys = AttributeKeys.empty(2)
    assert [keys.number(t, k) for t, k in [(0, "a"), (1, "a"), (0, "b"), (0, "a"), (1, "a")]] \
        == [0, 1, 2, 0, 1]
    assert keys.template == [0, 1, 0] and keys.vocabs == [{"a": 0, "b": 2}, {"a": 1}]
