"""Partially labelled graphs — within-network collective classification (Sen et
al. 2008): some nodes' labels null.  Tagging clamps the given labels and the
marginals it reports are the conditional ones, checked against direct
enumeration of the model's own potentials; training marginalises the
unlabelled nodes, and its objective and gradient equal the latent-variable
objective log Z(x) - log Z(y_obs, x) + prior enumerated (Sutton & McCallum
§1.4.3); `fgl train/tag/eval` on a generated file, with labels withheld for
evaluation."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from support.brute_force import logsumexp

from fgl.api import CRF
from fgl.cli import main
from fgl.compile.factor_graphs import FactorGraphModel
from fgl.errors import FglError
from fgl.io.graphs import graph_instance
from fgl.learn.objective import Objective

LABELS = ["L0", "L1", "L2"]

SPEC = """input graph
columns words, label
output label
template node:  y[a] ~ bias, tokens(words[a])
template cites: (y[a], y[b]) where edge(a, b, "cites") ~ bias
infer {infer}
train {{ max_iter = {iters} }}
"""


def random_graph(rng, n: int, null: float, withheld: float = 0.0, cycles: bool = True,
                 labels=LABELS) -> dict:
    """A graph of n papers whose words lean to their label and whose links
    mostly join equal labels; a share ``null`` of the labels null and a
    share ``withheld`` marked withheld.  Without ``cycles``, a random tree."""
    y = rng.integers(0, len(labels), n)
    nodes = []
    for k in range(n):
        words = [f"w{rng.integers(0, 3) + 3 * y[k] if rng.random() < 0.5 else rng.integers(0, 9)}"
                 for _ in range(2)]
        node = {"id": f"p{k}", "words": " ".join(words), "label": labels[y[k]]}
        u = rng.random()
        if u < null:
            node["label"] = None
        elif u < null + withheld:
            node["withheld"] = True
        nodes.append(node)
    if cycles:
        pairs = [(a, b) for a in range(n) for b in range(a + 1, n)
                 if rng.random() < (0.6 if y[a] == y[b] else 0.2)]
    else:
        pairs = [(int(rng.integers(0, b)), b) for b in range(1, n)]
    edges = [{"source": f"p{b}", "target": f"p{a}", "type": "cites"} for a, b in pairs]
    return {"nodes": nodes, "edges": edges}


def with_labels(rng, graph: dict) -> dict:
    """``graph`` with every null label filled (for training data)."""
    out = json.loads(json.dumps(graph))
    for node in out["nodes"]:
        if node["label"] is None:
            node["label"] = LABELS[int(rng.integers(0, len(LABELS)))]
    return out


def score(table: np.ndarray, g, y: tuple[int, ...]) -> float:
    """Σ_f θ_f(y_f): the log-potential of a full assignment."""
    total = 0.0
    for f in range(g.n_factors):
        x = sum(y[g.f_var[e]] * g.e_stride[e] for e in range(g.f_ptr[f], g.f_ptr[f + 1]))
        total += table[g.tab_ptr[f] + x]
    return total


def conditional(table: np.ndarray, g, evidence: list[int]) -> tuple[np.ndarray, tuple]:
    """P(y_v = l | given labels) of every variable, and the most likely
    assignment agreeing with the given labels, by enumeration."""
    card = [int(c) for c in g.card]
    states = [y for y in itertools.product(*(range(c) for c in card))
              if all(e < 0 or y[v] == e for v, e in enumerate(evidence))]
    scores = [score(table, g, y) for y in states]
    log_z = logsumexp(scores)
    marg = np.zeros((len(card), max(card)))
    for y, s in zip(states, scores):
        p = math.exp(s - log_z)
        for v, label in enumerate(y):
            marg[v, label] += p
    return marg, states[int(np.argmax(scores))]


def trained(infer: str, seed: int = 0, iters: int = 8) -> CRF:
    rng = np.random.default_rng(seed)
    graphs = [with_labels(rng, random_graph(rng, 6, 0.0)) for _ in range(6)]
    crf = CRF(SPEC.format(infer=infer, iters=iters)).fit(graphs)
    crf.weights = np.random.default_rng(seed + 1).normal(0.0, 1.0, len(crf.weights))
    return crf


@pytest.mark.parametrize("infer, cycles", [
    ("exact(max_states = 100000)", True),
    ("auto", True),                              # the junction tree
    ("loopy(max_iter = 200, tol = 1e-12)", False),   # BP, exact on a tree
])
def test_clamped_inference_is_the_conditional_distribution(infer, cycles):
    crf = trained(infer)
    rng = np.random.default_rng(7)
    graphs = [random_graph(rng, 7, 0.5, cycles=cycles) for _ in range(4)]
    assert all(any(n["label"] is None for n in g["nodes"]) and
               any(n["label"] is not None for n in g["nodes"]) for g in graphs)
    marg = crf.marginals(graphs)
    pred = crf.predict(graphs)
    model = crf.model
    index = {y: k for k, y in enumerate(model.layers[0].labels)}
    for k, graph in enumerate(graphs):
        data = model.encode([graph_instance(graph, crf.spec)])
        g = data.graphs[0]
        evidence = [-1 if n["label"] is None else index[n["label"]] for n in graph["nodes"]]
        exact, best = conditional(model.program.factor_tables(crf.weights, data, 0), g,
                                  evidence)
        got = marg.probs[k][0]
        np.testing.assert_allclose(got, exact[:, :got.shape[1]], atol=1e-8)
        for v, node in enumerate(graph["nodes"]):
            if node["label"] is not None:      # a given label: kept, probability 1
                assert pred[k][v] == node["label"]
                assert got[v, index[node["label"]]] == 1.0
        assert [index[y] for y in pred[k]] == list(best)


def test_unclamped_when_fully_labelled_or_unlabelled():
    """A fully labelled graph's labels are gold answers, not evidence (as
    before): its marginals are those of the graph with no labels."""
    crf = trained("exact(max_states = 100000)")
    rng = np.random.default_rng(3)
    full = random_graph(rng, 6, 0.0)
    bare = json.loads(json.dumps(full))
    for node in bare["nodes"]:
        del node["label"]
    a, b = crf.marginals([full, bare]).probs
    np.testing.assert_allclose(a[0], b[0], atol=1e-12)


def enumerate_objective(model, data, w: np.ndarray) -> tuple[float, np.ndarray]:
    """Σ_i log Z(x_i) - log Z(y_obs_i, x_i) + Σ w²/2σ² and its gradient, by
    enumerating every assignment (features by the one-hot table of each
    assignment's factor configurations)."""
    program = model.program
    f, grad = 0.0, np.zeros_like(w)
    for i, g in enumerate(data.graphs):
        gold = data.gold[i]
        feats, scores, agree = [], [], []
        for y in itertools.product(*(range(int(c)) for c in g.card)):
            onehot = np.zeros(g.n_table)
            for fac in range(g.n_factors):
                edges = range(g.f_ptr[fac], g.f_ptr[fac + 1])
                onehot[g.tab_ptr[fac] + sum(y[g.f_var[e]] * g.e_stride[e] for e in edges)] = 1.0
            F = np.zeros_like(w)
            program.add_counts(data, i, onehot, F)
            feats.append(F)
            scores.append(float(w @ F))
            agree.append(all(gv < 0 or y[v] == gv for v, gv in enumerate(gold)))
        scores = np.array(scores)
        feats = np.array(feats)
        log_z = logsumexp(scores)
        log_z_obs = logsumexp(scores[agree])
        p = np.exp(scores - log_z)
        q = np.where(agree, np.exp(scores - log_z_obs), 0.0)
        f += log_z - log_z_obs
        grad += p @ feats - q @ feats
    inv_var = 1.0 / np.square(model.feat_sigma)
    return f + 0.5 * float(inv_var @ (w * w)), grad + inv_var * w


@pytest.mark.parametrize("infer", ["exact(max_states = 100000)", "auto"])
def test_objective_with_null_labels_is_the_latent_variable_objective(infer):
    rng = np.random.default_rng(11)
    graphs = [random_graph(rng, 5, 0.4) for _ in range(3)]
    graphs[0]["nodes"][0]["label"] = None
    crf = CRF(SPEC.format(infer=infer, iters=5))
    model, data = FactorGraphModel.compile(crf.spec, [graph_instance(g, crf.spec)
                                                      for g in graphs])
    assert model.program.has_hidden and model.unlabelled(data) >= 1
    assert all((g[0] == -1) == (graphs[i]["nodes"][0]["label"] is None)
               for i, g in enumerate(data.gold))
    objective = Objective(model.program, data, model.feat_sigma)
    for seed in range(3):
        w = np.random.default_rng(seed).normal(0.0, 0.7, model.program.n_features)
        f, grad = objective(w)
        f_ref, grad_ref = enumerate_objective(model, data, w)
        assert f == pytest.approx(f_ref, rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(grad, grad_ref, atol=1e-8)


def test_labels_and_features_come_from_the_labelled_nodes():
    rng = np.random.default_rng(5)
    graphs = [random_graph(rng, 6, 0.0) for _ in range(4)]
    for g in graphs:      # L2 only on unlabelled nodes: not a label of the model
        for node in g["nodes"]:
            if node["label"] == "L2":
                node["label"] = None
    crf = CRF(SPEC.format(infer="auto", iters=5)).fit(graphs)
    assert crf.model.layers[0].labels == ["L0", "L1"]
    with pytest.raises(FglError, match="unknown label 'L2'"):   # given as evidence
        crf.predict([{"nodes": [{"id": "a", "words": "w1", "label": "L2"},
                                {"id": "b", "words": "w2", "label": None}], "edges": []}])


def test_other_trainers_refuse_unlabelled_nodes():
    rng = np.random.default_rng(2)
    graphs = [random_graph(rng, 5, 0.3) for _ in range(3)]
    spec = SPEC.format(infer="auto", iters=5).replace("max_iter = 5", "trainer = perceptron")
    with pytest.raises(FglError, match="unlabelled nodes .* remove `trainer = perceptron`"):
        CRF(spec).fit(graphs)


def test_python_evaluate_scores_the_withheld_nodes():
    rng = np.random.default_rng(9)
    train = [random_graph(rng, 8, 0.3) for _ in range(15)]
    crf = CRF(SPEC.format(infer="auto", iters=30)).fit(train)
    gold = [random_graph(rng, 8, 0.1, withheld=0.4) for _ in range(8)]
    gold.append(random_graph(rng, 5, 0.0))       # fully labelled: every node scored
    gold.append(random_graph(rng, 5, 0.5))       # nothing withheld: nothing to score
    gold[-1]["nodes"][0]["label"] = None
    withheld = [sum(bool(n.get("withheld")) for n in g["nodes"]) for g in gold[:-2]]
    assert all(withheld)
    report = crf.evaluate(gold)
    assert sum(report.confusion.values()) == sum(withheld) + 5
    pred = crf.predict(gold)       # a withheld label is no evidence: predicted
    graphs = [graph_instance(g, crf.spec) for g in gold]
    assert crf.predict(graphs) == pred


def write(path, graphs) -> None:
    path.write_text("".join(json.dumps(g) + "\n" for g in graphs), encoding="utf-8")


def test_cli_train_tag_eval_on_a_partially_labelled_file(tmp_path, capsys):
    rng = np.random.default_rng(4)
    spec = tmp_path / "g.fgl"
    spec.write_text(SPEC.format(infer="auto", iters=40))
    given = [random_graph(rng, 10, 0.0) for _ in range(12)]
    held = [[k for k in range(10) if rng.random() < 0.4] for _ in given]
    gold = json.loads(json.dumps(given))
    for g, ks, h in zip(given, held, gold):
        for k in ks:
            g["nodes"][k]["label"] = None
            h["nodes"][k]["withheld"] = True
    write(tmp_path / "given.jsonl", given)
    write(tmp_path / "gold.jsonl", gold)
    model = tmp_path / "m.fglm"
    assert main(["train", str(spec), "--train", str(tmp_path / "given.jsonl"), "-o", str(model),
                 "-q"]) == 0
    capsys.readouterr()

    assert main(["tag", str(model), str(tmp_path / "given.jsonl"), "--marginals", "all"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == len(given)
    for line, g in zip(lines, given):
        for node in g["nodes"]:
            if node["label"] is not None:        # kept, with probability 1
                assert line["labels"][node["id"]] == node["label"]
                assert line["marginals"][node["id"]][node["label"]] == 1.0
            else:
                assert line["labels"][node["id"]] in LABELS

    assert main(["eval", str(model), str(tmp_path / "gold.jsonl")]) == 0
    out = capsys.readouterr().out
    n_held, n_given = sum(map(len, held)), 10 * len(given) - sum(map(len, held))
    assert out.startswith(f"scored: the {n_held} withheld nodes ({n_given} given labels "
                          "clamped as evidence)\n")
    assert f"processed {n_held} tokens" in out
    assert f"of {len(given)} graphs with every label right" in out  # (not "sequences")
    accuracy = float(out.split("accuracy:")[1].split("%")[0])
    assert accuracy > 60

    assert main(["compare", str(model), str(model), str(tmp_path / "gold.jsonl"),
                 "--trials", "20", "--partitions", "20"]) == 0   # (scores the same nodes)
    out = capsys.readouterr().out
    assert out.startswith(f"scored: the {n_held} withheld nodes")
    # the nodes are its units (shuffled and partitioned), not the few graphs
    assert n_held > 20 > len(given) and "F1 over 20 partitions" in out

    assert main(["eval", str(model), str(tmp_path / "given.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"given.jsonl:1: node 'p{held[0][0]}' has no label and no node is marked " \
           '"withheld": nothing to score' in err
