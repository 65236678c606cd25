"""Training on a Dask cluster (fgl.distributed) against training on one machine."""
from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from support.paths import STDLIB

from fgl.api import CRF
from fgl.cli import main
from fgl.datasets.synth import segment_sequences
from fgl.errors import FglError
from fgl.io.conll import read_conll, write_conll

distributed = pytest.importorskip("distributed")

from fgl.distributed.search import search, table  # noqa: E402
from fgl.distributed.shards import find_shards, read_shard  # noqa: E402
from fgl.distributed.training import fit_on_cluster  # noqa: E402

CHAIN = STDLIB / "linear_chain_obs_transitions.fgl"
SEGMENTS = STDLIB / "semi_crf.fgl"
SKIP_CHAIN = """model "small skip chain"
columns word, label
output label
obs w = lower(word[t])
template state: y[t] ~ bias, w
template transition: y[t-1..t]
template skip: (y[i], y[j]) where word[i] == word[j] and nearest within sentence ~ bias
infer trp(max_iter = 100, tol = 1e-8)
train {
  sigma = 5
}
"""


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=logging.CRITICAL)
    with cluster, distributed.Client(cluster) as c:
        yield c


def _write_parts(directory: Path, sentences: list, parts: int) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(parts):
        with open(directory / f"part-{i}.txt", "w", encoding="utf-8") as f:
            write_conll(f, sentences[i * len(sentences) // parts:
                                     (i + 1) * len(sentences) // parts])
    return str(directory / "part-*.txt")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """90 BIO sequences of 12 tokens in three files, and all of them in one."""
    train, dev = segment_sequences(n_train=90, n_test=30, length=12, seed=1)
    root = tmp_path_factory.mktemp("dist")
    pattern = _write_parts(root / "parts", train, 3)
    with open(root / "all.txt", "w", encoding="utf-8") as f:
        write_conll(f, train)
    with open(root / "dev.txt", "w", encoding="utf-8") as f:
        write_conll(f, dev)
    return {"pattern": pattern, "all": root / "all.txt", "dev": root / "dev.txt", "root": root}


def _spec(name: str, tmp_path: Path) -> Path:
    if name in ("skip", "skip_trw"):   # (TRW: BP refined as the steps shrink, on every shard;
        path = tmp_path / f"{name}.fgl"   # started cold on one machine as on the cluster)
        # (and from zero on one machine as on the cluster, not from the exact part)
        spec = SKIP_CHAIN.replace("sigma = 5", "sigma = 5\n  start = zero")
        path.write_text(spec if name == "skip" else spec.replace(
            "infer trp(max_iter = 100, tol = 1e-8)", "infer trw(tol = 1e-4)").replace(
            " and nearest within sentence", " within sentence").replace(
            "sigma = 5", "sigma = 5\n  bp_start = cold"))
        return path
    return {"chain": CHAIN, "segments": SEGMENTS}[name]


def _same_model(a: CRF, b: CRF) -> None:
    assert a.model.header() == b.model.header()
    mine, theirs = a.model.arrays(), b.model.arrays()
    assert mine.keys() == theirs.keys()
    for key in mine:
        np.testing.assert_array_equal(mine[key], theirs[key])


@pytest.mark.parametrize("name", ["chain", "segments", "skip", "skip_trw"])
def test_cluster_training_equals_one_machine(client, data, tmp_path, name):
    spec = _spec(name, tmp_path)
    iterations = 50 if name == "skip_trw" else 12   # (TRW's first refinement: iteration 46)
    one = CRF(spec, max_iter=iterations).fit_file(data["all"])
    refined = [r["refined"] for r in one.training_log.iterations if "refined" in r]
    assert bool(refined) == (name == "skip_trw")
    rows = []
    dist = CRF(spec, max_iter=iterations, dask=client)
    fit_on_cluster(dist, data["pattern"], dask=client, progress=rows.append)
    _same_model(one, dist)    # same labels, patterns, vocabularies and feature table
    assert [r["refined"] for r in dist.training_log.iterations if "refined" in r] == refined
    # (50 iterations of shard sums in another order: TRW's stopping test amplifies the last bits)
    close = 1e-5 if name == "skip_trw" else 1e-8
    assert dist.training_log.objective == pytest.approx(one.training_log.objective, rel=close)
    assert len(dist.training_log.iterations) == len(one.training_log.iterations) == iterations
    np.testing.assert_allclose(dist.weights, one.weights, atol=1e-5 if close < 1e-6 else 1e-3)
    # weights out and a gradient back per worker that took part: both, or one when Dask moved
    # a shard to the other worker (it may, allow_other_workers, on a loaded machine)
    assert all(r["bytes_moved"] in (2 * 8 * len(dist.weights) * k for k in (1, 2)) for r in rows)
    assert any(r["bytes_moved"] == 2 * 8 * len(dist.weights) * 2 for r in rows)
    assert all(r["slowest_worker"] > 0 for r in rows)


def test_byte_range_shards_read_like_the_file(client, data, tmp_path):
    shards = find_shards(data["all"], shard_bytes=2000)
    assert len(shards) > 3 and shards[0].start == 0 and shards[-1].end is None
    whole = read_conll(data["all"])
    spec = CRF(CHAIN).spec
    pieces = [s for shard in shards for s in read_shard(shard, spec)]
    assert [s.rows for s in pieces] == [s.rows for s in whole]
    assert [s.lines for s in pieces] == [s.lines for s in whole]   # file line numbers kept
    one = CRF(CHAIN, max_iter=5).fit_file(data["all"])
    dist = fit_on_cluster(CRF(CHAIN, max_iter=5), data["all"], dask=client, shard_bytes=2000)
    _same_model(one, dist)
    assert dist.training_log.objective == pytest.approx(one.training_log.objective, rel=1e-8)


def test_a_lost_worker_changes_nothing(client, data):
    one = CRF(SEGMENTS, max_iter=10).fit_file(data["all"])
    killed = []

    def kill_after_second(row: dict) -> None:
        if row["iteration"] == 2 and not killed:
            held = client.has_what()
            victim = max(held, key=lambda w: sum(str(k).startswith("shard_objective")
                                                 for k in held[w]))
            pid = client.run(os.getpid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            killed.append(victim)

    dist = fit_on_cluster(CRF(SEGMENTS, max_iter=10), data["pattern"], dask=client,
                          progress=kill_after_second)
    assert killed
    assert dist.training_log.objective == pytest.approx(one.training_log.objective, rel=1e-8)
    assert len(dist.training_log.iterations) == len(one.training_log.iterations)
    client.wait_for_workers(2, timeout=60)   # (the nanny restarts it for the next tests)


def test_checkpoint_and_resume_on_the_cluster(client, data, tmp_path):
    whole = fit_on_cluster(CRF(CHAIN, max_iter=8), data["pattern"], dask=client)
    ckpt = tmp_path / "run.fglm"
    first = fit_on_cluster(CRF(CHAIN, max_iter=4, checkpoint=ckpt, checkpoint_every=2),
                           data["pattern"], dask=client)
    assert len(first.training_log.iterations) == 4 and ckpt.exists()
    copy = tmp_path / "copy.fglm"
    copy.write_bytes(ckpt.read_bytes())
    resumed = fit_on_cluster(CRF(CHAIN, max_iter=8, checkpoint=ckpt), data["pattern"],
                             dask=client, resume=ckpt)
    here = CRF(CHAIN, max_iter=8).fit_file(data["all"], resume=copy)   # or on one machine
    for run in (resumed, here):
        assert len(run.training_log.iterations) == 8
        assert run.training_log.objective == pytest.approx(whole.training_log.objective,
                                                           rel=1e-8)
        np.testing.assert_allclose(run.weights, whole.weights, atol=1e-6)


def _rss(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {key} in /proc/self/status")


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc")
def test_driver_memory_does_not_grow_with_the_data(client, tmp_path):
    """10x the tokens (200 vs 2,000 sequences of 10 over a fixed vocabulary,
    in 8 files): the driver's peak memory grows no more.  (Compiled on one
    machine, encoding the 20,000 tokens alone takes about 5 MB of it.)"""
    growth = {}
    for n in (200, 200, 2000):    # (the first run warms up)
        train, _ = segment_sequences(n_train=n, n_test=1, length=10, seed=2)
        pattern = _write_parts(tmp_path / f"d{n}", train, 8)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")          # reset the peak (VmHWM) to the current RSS
        base = _rss("VmRSS")
        fit_on_cluster(CRF(CHAIN, max_iter=2), pattern, dask=client)
        growth[n] = _rss("VmHWM") - base
    assert growth[2000] < growth[200] + 4e6


def test_cli_train_on_local_workers_then_tag(data, tmp_path, capsys):
    model = tmp_path / "m.fglm"
    main(["train", str(CHAIN), "--train", data["pattern"], "--dask-workers", "2",
          "--max-iter", "4", "-o", str(model)])
    err = capsys.readouterr().err
    assert "compiled on 2 workers" in err and "shards" in err
    iters = [line for line in err.splitlines() if line.startswith("iter")]
    assert len(iters) == 4 and all("slowest worker" in x and "kB/eval" in x for x in iters)
    main(["tag", str(model), str(data["dev"])])
    out = capsys.readouterr().out.split("\n\n")[0].splitlines()
    gold = read_conll(data["dev"])[0]
    assert [line.split()[0] for line in out] == gold.column(0)
    assert all(line.split()[-1] in {"O", "B-T0", "I-T0", "B-T1", "I-T1", "B-T2", "I-T2"}
               for line in out)


def test_cli_explain_on_a_scheduler(client, data, capsys):
    main(["explain", str(CHAIN), "--train", data["pattern"], "--dask",
          client.scheduler.address])
    out = capsys.readouterr().out
    n = int(out.split("features: ")[1].split()[0])
    assert f"2 x |w| x 8 bytes x 2 workers = {2 * n * 8 * 2 / 1000:.1f} kB" in out
    assert "shards, 90 instances, 1080 tokens (held by the workers)" in out
    assert "slowest worker" in out and "communication share" in out


def test_search_trains_independent_models(client, data, capsys):
    trials = search([CHAIN], [1.0, 10.0], data["pattern"], data["dev"], dask=client,
                    max_iter=5)
    assert [t.sigma for t in trials] == [1.0, 10.0]
    assert all(t.iterations == 5 and 0 <= t.dev_f1 <= 100 for t in trials)
    assert trials[0].objective > trials[1].objective   # a tighter prior costs likelihood
    text = table(trials)
    assert text.count("linear_chain_obs_transitions.fgl") == 2 and "<- best" in text
    main(["train", str(CHAIN), "--train", data["pattern"], "--dev", str(data["dev"]),
          "--dask", client.scheduler.address, "--sigma-grid", "1,10", "--max-iter", "5",
          "-o", str(data["root"] / "best.fglm")])
    assert "<- best" in capsys.readouterr().out
    assert CRF.load(data["root"] / "best.fglm").weights is not None


def test_what_distributed_training_refuses(data, monkeypatch):
    with pytest.raises(FglError, match="fit_file"):
        CRF(CHAIN, dask_workers=2).fit([[["a"]]], [["O"]])
    with pytest.raises(FglError, match="not both"):
        CRF(CHAIN, dask="tcp://x:1", dask_workers=2)
    with pytest.raises(FglError, match="perceptron runs on one machine"):
        CRF(CHAIN.read_text().replace("sigma = 10", "trainer = perceptron")
            .replace("max_iter = 200", ""),
            dask_workers=2).fit_file(data["all"])
    with pytest.raises(FglError, match="no training file matches"):
        CRF(CHAIN, dask_workers=2).fit_file(str(data["root"] / "nothing-*.txt"))
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)
    with pytest.raises(FglError, match=r"pip install 'fgl\[dask\]'"):
        CRF(CHAIN, dask_workers=2).fit_file(data["all"])


def test_the_budget_is_checked_on_the_driver_and_on_each_worker(client, data):
    """The driver prices the features it holds before any shard is
    encoded; each worker prices the shards it encodes against its own
    budget, refused at the shard's longest sequence (file:line)."""
    from fgl.compile.budget import set_memory_budget
    from fgl.compile.footprint import OverBudgetError
    from fgl.errors import DataError

    previous = set_memory_budget(4_000)
    try:
        with pytest.raises(OverBudgetError, match="features"):
            CRF(CHAIN, dask=client).fit_file(data["pattern"])
    finally:
        set_memory_budget(previous)
    client.run(set_memory_budget, 4_000)
    try:
        with pytest.raises(DataError, match="on this worker") as refused:
            CRF(CHAIN, dask=client).fit_file(data["pattern"])
        assert "part-" in str(refused.value)
    finally:
        client.run(set_memory_budget, None)
    assert CRF(CHAIN, dask=client, max_iter=2).fit_file(data["pattern"]).weights.size
