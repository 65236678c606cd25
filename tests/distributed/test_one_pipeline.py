"""One compile pipeline: a model compiled over many shards on a Dask cluster
is the one-machine model, bit for bit, for every engine — the same header
(labels, templates, patterns, vocabularies in their order), the same
feature arrays, each shard's encoded tables equal to the one-machine
tables of its sequences, and the same objective and gradient there."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from support.paths import STDLIB

from fgl import registry
from fgl.api import CRF
from fgl.datasets.synth import citation_graphs, segment_sequences
from fgl.io.conll import write_conll
from fgl.lang.settings import resolve_train
from fgl.learn.objective import Objective

distributed = pytest.importorskip("distributed")

from fgl.distributed.compile import Reading, compile_on_cluster  # noqa: E402
from fgl.distributed.shards import find_shards, read_shard  # noqa: E402

HIGH_ORDER = """model "second-order chain, observed patterns"
columns word, label
output label
obs w = lower(word[t])
template state: y[t] ~ bias, w
template second: y[t-2..t] ~ bias, w
"""
SKIP_CHAIN = """model "skip chain"
columns word, label
output label
obs w = lower(word[t])
template state: y[t] ~ bias, w
template transition: y[t-1..t]
template skip: (y[i], y[j]) where word[i] == word[j] and nearest within sentence ~ bias
infer trp(max_iter = 20)
"""
SPECS = {"chain": STDLIB / "linear_chain_obs_transitions.fgl", "high order": HIGH_ORDER,
         "segments": STDLIB / "semi_crf.fgl", "skip chain": SKIP_CHAIN,
         "relational graph": STDLIB / "relational.fgl"}


@pytest.fixture(scope="module")
def client():
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                            dashboard_address=":0", silence_logs=logging.CRITICAL) as c:
        yield c


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """40 BIO sequences in two column files; 12 citation graphs in three
    JSON-lines files."""
    root = tmp_path_factory.mktemp("pipeline")
    train, _ = segment_sequences(n_train=40, n_test=1, length=10, seed=3)
    for i in range(2):
        with open(root / f"part-{i}.txt", "w", encoding="utf-8") as f:
            write_conll(f, train[i * 20:(i + 1) * 20])
    graphs = citation_graphs(n_graphs=12, n_papers=8, seed=4)
    for i in range(3):
        with open(root / f"graphs-{i}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(g) + "\n" for g in graphs[i * 4:(i + 1) * 4])
    return {"columns": str(root / "part-*.txt"), "graph": str(root / "graphs-*.jsonl")}


def _shard_data(client, encoded) -> list:
    """Each shard's encoded data as its worker keeps it."""
    return [client.submit(fn, *args, pure=False).result() for fn, *args in encoded.encoders]


def _tables(data) -> dict[str, np.ndarray]:
    """The integer (and value) tables of an engine's encoded data."""
    if hasattr(data, "tok_ptr"):
        return {k: np.asarray(getattr(data, k)) for k in
                ("seq_ptr", "tok_ptr", "tok_row", "tok_val", "gold", "starts")}
    return {"inst_fptr": data.inst_fptr, "fac_ptr": data.fac_ptr, "fac_row": data.fac_row,
            "fac_val": np.asarray(data.fac_val), "fac_tpl": data.fac_tpl,
            "gold": np.concatenate(data.gold), "sizes": np.array(data.sizes),
            "f_var": np.concatenate([g.f_var for g in data.graphs])}


@pytest.mark.parametrize("engine", list(SPECS))
def test_the_cluster_compiles_the_one_machine_model_bit_for_bit(client, files, tmp_path, engine):
    spec_text = SPECS[engine]
    crf = CRF(spec_text if isinstance(spec_text, str) else spec_text)
    spec, settings = crf.spec, resolve_train(crf.spec)
    graph = spec.input_format == "graph"
    shards = find_shards(files["graph" if graph else "columns"], shard_bytes=1500,
                         column_files=not graph)
    assert len(shards) >= 3
    cls = registry.choose(spec).model
    assert cls.engine == {"chain": "chain", "high order": "chain", "segments": "segments"}.get(
        engine, "factor graph")
    sentences = [s for shard in shards for s in read_shard(shard, spec)]
    one, data = cls.compile(spec, sentences, Path("."), settings, "<all>")
    cluster = compile_on_cluster(client, spec, shards, Path("."), settings, Reading(spec),
                                 "<shards>")
    assert cluster.model.header() == one.header()
    assert cluster.model.arrays().keys() == one.arrays().keys()
    for key, array in one.arrays().items():
        assert np.array_equal(cluster.model.arrays()[key], array), key
    w = np.random.default_rng(5).normal(0.0, 0.3, one.program.n_features)
    at = 0
    for part in _shard_data(client, cluster):
        mine = data.subset(at, at + part.n_sequences)
        at += part.n_sequences
        theirs, expected = _tables(part), _tables(mine)
        assert theirs.keys() == expected.keys()
        for key in expected:
            assert np.array_equal(theirs[key], expected[key]), key
        f_one, g_one = Objective(one.program, mine, np.array([np.inf]), 1, "cold")(w)
        f_cluster, g_cluster = Objective(cluster.model.program, part, np.array([np.inf]), 1,
                                         "cold")(w)
        assert f_cluster == f_one and np.array_equal(g_cluster, g_one)
    assert at == data.n_sequences and cluster.n_instances == data.n_sequences
