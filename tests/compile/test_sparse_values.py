"""Real-valued attributes kept sparsely (``fgl.data.sparse_vector``): a
vector column's zeros are no attributes, so the objective and gradient of
a graph model over vectors and numbers are those of the dense formula
worked out by hand, and the compiled attribute arrays grow with the
non-zeros, not with nodes x dimensions."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.data.sparse_vector import SparseVector
from fgl.errors import DataError
from fgl.io.graphs import graph_instance, read_graphs
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.objective import Objective
from fgl.registry import compile_model

SPEC = """input graph
columns v:vector, x:number, label
output label
template node: y[a] ~ bias, value(v[a]), value(x[a]) (support = all)
template cites: (y[a], y[b]) where edge(a, b, "cites") (support = all)
train { sigma = 2 }
"""
LABELS = ["A", "B", "C"]


def random_graph(rng: np.random.Generator, n: int, dim: int, nonzero: float) -> dict:
    """``n`` labelled nodes with sparse ``dim``-dimensional vectors and
    numbers (some 0), and random directed links."""
    nodes = []
    for k in range(n):
        v = np.where(rng.random(dim) < nonzero, rng.normal(size=dim).round(2), 0.0)
        nodes.append({"id": f"n{k}", "v": v.tolist(), "x": float(rng.choice([0.0, 1.5, -2.0])),
                      "label": LABELS[k % 3] if k < 3 else str(rng.choice(LABELS))})
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b and rng.random() < 0.3]
    return {"nodes": nodes,
            "edges": [{"source": f"n{a}", "target": f"n{b}", "type": "cites"} for a, b in pairs]}


def compiled(graphs: list[dict]):
    spec = validate(parse_spec(SPEC, "<test>"))
    return compile_model(spec, [graph_instance(g, spec) for g in graphs])


def weight(model, w: np.ndarray, ti: int, key: str, config: int) -> float:
    """The weight of (attribute ``key`` of template ``ti``, configuration
    ``config``); 0 for an attribute the model has no row for."""
    row = int(model.vocabs[ti].lookup([key])[0])
    if row < 0:
        return 0.0
    lo, hi = model.program.row_ptr[row], model.program.row_ptr[row + 1]
    k = lo + int(np.searchsorted(model.program.feat_config[lo:hi], config))
    assert model.program.feat_config[k] == config
    return float(w[k])


def dense_log_likelihood(model, w: np.ndarray, graph: dict) -> float:
    """log p(gold) by enumerating every labelling, the vectors read densely:
    every dimension, zeros too (Sutton & McCallum eq. 1.41)."""
    nodes, K = graph["nodes"], len(LABELS)
    index = {nd["id"]: k for k, nd in enumerate(nodes)}
    unary = np.zeros((len(nodes), K))
    for k, nd in enumerate(nodes):
        for y in range(K):
            unary[k, y] = (weight(model, w, 0, "bias", y)
                           + sum(x * weight(model, w, 0, f"v[a][{j}]", y)
                                 for j, x in enumerate(nd["v"]))
                           + nd["x"] * weight(model, w, 0, "x[a]", y))
    pair = np.array([[weight(model, w, 1, "bias", a * K + b) for b in range(K)]
                     for a in range(K)])
    edges = [(index[e["source"]], index[e["target"]]) for e in graph["edges"]]

    def score(ys: tuple[int, ...]) -> float:
        return (sum(unary[k, y] for k, y in enumerate(ys))
                + sum(pair[ys[a], ys[b]] for a, b in edges))
    scores = [score(ys) for ys in itertools.product(range(K), repeat=len(nodes))]
    gold = tuple(LABELS.index(nd["label"]) for nd in nodes)
    return score(gold) - float(np.logaddexp.reduce(scores))


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_objective_and_gradient_equal_the_dense_formula(seed):
    rng = np.random.default_rng(seed)
    graphs = [random_graph(rng, 5, 7, 0.4), random_graph(rng, 4, 7, 0.4)]
    model, data = compiled(graphs)
    objective = Objective(model.program, data, model.feat_sigma, 1)
    w = rng.normal(0, 0.5, model.program.n_features)

    def dense(w: np.ndarray) -> float:
        return (-sum(dense_log_likelihood(model, w, g) for g in graphs)
                + float(w @ w) / (2 * 2.0 ** 2))
    f, grad = objective(w)
    assert f == pytest.approx(dense(w), rel=1e-10)
    step = 1e-6
    for k in rng.choice(len(w), size=min(6, len(w)), replace=False):
        e = np.zeros_like(w)
        e[k] = step
        assert grad[k] == pytest.approx((dense(w + e) - dense(w - e)) / (2 * step),
                                        rel=1e-5, abs=1e-6)


def test_a_vectors_zero_dimensions_are_no_attributes():
    graph = random_graph(np.random.default_rng(0), 6, 40, 0.1)
    model, _ = compiled([graph])
    # the attributes of vector dimensions: those some node holds non-zero, and the
    # last one (which tells the model the vectors' dimension)
    held = {f"v[a][{j}]" for nd in graph["nodes"] for j, x in enumerate(nd["v"]) if x != 0.0}
    assert {k for k in model.vocabs[0] if k.startswith("v[a][")} == held | {"v[a][39]"}


def storage(dim: int, seed: int = 3) -> tuple[int, int, int]:
    """(attribute items stored, their values, features) of a 300-node graph
    whose vectors of ``dim`` dimensions hold the same 4 non-zeros each."""
    rng = np.random.default_rng(seed)
    nodes = []
    for k in range(300):
        v = [0] * dim
        for j in rng.choice(20, size=4, replace=False):
            v[int(j) * (dim // 20)] = 1
        nodes.append({"id": f"n{k}", "v": v, "x": 0.5, "label": LABELS[k % 3]})
    model, data = compiled([{"nodes": nodes, "edges": []}])
    return data.fac_row.size, data.fac_val.size, model.program.n_features


def test_stored_attributes_grow_with_the_nonzeros_not_the_dimensions():
    small, large = storage(40), storage(4000)
    assert small == large
    items = 300 * (1 + 4 + 1 + 1)   # bias, 4 non-zeros, the last dimension, x
    assert small[0] <= items and small[1] <= items


def test_graph_files_read_vectors_sparsely_and_refuse_numbers_beyond_floats(tmp_path):
    spec = validate(parse_spec(SPEC, "<test>"))
    graph = random_graph(np.random.default_rng(1), 4, 9, 0.3)
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(graph) + "\n")
    read = read_graphs(path, spec)[0]
    for row, node in zip(read.rows, graph["nodes"]):
        v = row[0]
        assert isinstance(v, SparseVector) and v.dim == 9
        assert v.index.tolist() == [j for j, x in enumerate(node["v"]) if x != 0.0]
        assert v.value.tolist() == [x for x in node["v"] if x != 0.0]
    graph["nodes"][2]["v"][1] = 10**400
    path.write_text(json.dumps(graph) + "\n")
    with pytest.raises(DataError, match=r"g\.jsonl:1: node 'n2': attribute 'v' holds a number "
                                         r"beyond 1e\+100"):
        read_graphs(path, spec)
