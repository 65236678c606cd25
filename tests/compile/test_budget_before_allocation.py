"""Budgets before allocation (issue 25, item 3): a chain or segment model
whose state machine (labels x forward states), candidate segments or
inference scratch would exceed the memory budget is refused from the counts
of the first pass over the data — before ``ChainStructure.build``, the
feature table or the span arrays take any of it — with the budget message
located at the template or the `segments max` that makes it; a MemoryError
that still escapes is one located line, not a traceback.

Each command runs in a subprocess with a time bound and its address space
capped (``RLIMIT_AS``) well below what building the model would take: a
check that came after the allocation fails the test instead of exhausting
the machine."""
from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import capped_fgl
from support.paths import REPO

CAP = 3 << 30   # address space of each fgl run: numba and numpy fit; the models refused do not
TIMEOUT = 60

BIAS = "columns word, label\noutput label\ntemplate state: y[t] ~ bias\n"
SEGMENTS = ("columns word, label\noutput label\nsegments max 1000 from bio\n"
            "template segment: s[j] ~ bias\ntemplate transition: s[j-1..j]\n")


def fgl(*argv, env: dict | None = None) -> tuple[int, str, float]:
    """Run ``fgl argv...`` capped in memory and time: (exit code, stderr, seconds)."""
    return capped_fgl(*argv, cap=CAP, timeout=TIMEOUT, env=env)


def one_line(err: str) -> None:
    assert "Traceback" not in err and err.count("\n") == 1, err


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("before_allocation")
    out = {"bias": d / "bias.fgl", "segments": d / "segments.fgl",
           "labels20k": d / "labels20k.txt", "labels5k": d / "labels5k.txt",
           "long": d / "long.txt", "small": d / "small.txt"}
    out["bias"].write_text(BIAS, encoding="utf-8")
    out["segments"].write_text(SEGMENTS, encoding="utf-8")
    for name, n in (("labels20k", 20_000), ("labels5k", 5_000)):   # n labels, 10-token sentences
        out[name].write_text("".join(f"w{i % 50} L{i}\n" + ("\n" if i % 10 == 9 else "")
                                     for i in range(n)), encoding="utf-8")
    out["long"].write_text("".join(f"w{i % 50} {'B-NP' if i % 3 == 0 else 'I-NP'}\n"
                                   for i in range(100_000)), encoding="utf-8")
    out["short"] = d / "short.txt"   # segments of up to 3 tokens, BIO
    out["short"].write_text("".join(f"w{i % 50} {'B-NP' if i % 3 == 0 else 'I-NP'}\n"
                                    + ("\n" if i % 12 == 11 else "") for i in range(600)),
                            encoding="utf-8")
    out["small"].write_text("".join(f"w{i % 7} {'ABC'[i % 3]}\n" + ("\n" if i % 8 == 7 else "")
                                    for i in range(400)), encoding="utf-8")
    return out


@pytest.mark.parametrize("command", ["train", "explain"])
def test_twenty_thousand_labels_are_refused_before_the_state_machine_is_built(files, tmp_path,
                                                                               command):
    out = ["-o", tmp_path / "m.fglm", "-q"] if command == "train" else []
    code, err, seconds = fgl(command, files["bias"], "--train", files["labels20k"], *out)
    assert code == 2, err
    one_line(err)
    assert err.startswith(f"fgl: {files['bias']}:3:1: template 'state' has 20,000 label "
                          "patterns over 20,000 labels"), err
    assert "400,020,000 label-state transitions" in err
    assert "more than the" in err and "memory budget" in err and "--max-memory" in err
    assert seconds < 20, seconds
    assert not (tmp_path / "m.fglm").exists()


def test_a_small_budget_refuses_five_thousand_labels_at_once(files, tmp_path):
    code, err, seconds = fgl("train", files["bias"], "--train", files["labels5k"], "-o",
                             tmp_path / "m.fglm", "-q", "--max-memory", "500M")
    assert code == 2, err
    one_line(err)
    assert "5,000 labels" in err and "500 MB memory budget (as set by --max-memory)" in err
    assert seconds < 20, seconds


def test_long_segments_over_one_long_sentence_are_refused_before_the_span_arrays(files,
                                                                                 tmp_path):
    code, err, seconds = fgl("train", files["segments"], "--train", files["long"], "-o",
                             tmp_path / "s.fglm", "-q", "--max-memory", "2G")
    assert code == 2, err
    one_line(err)
    assert err.startswith(f"fgl: {files['segments']}:3:1: `segments max 1000` makes "
                          "100,000,000 candidate segments in the longest sequence"), err
    assert "2 GB memory budget (as set by --max-memory)" in err
    assert seconds < 20, seconds


def test_tagging_one_long_sentence_under_long_segments_is_refused_before_its_units(files,
                                                                                 tmp_path):
    """A segment model trained on short sentences, asked to tag one of
    100,000 tokens under `segments max 1000` (some 20 GB of units): refused
    at the sentence's file:line before its units are made; the same file cut
    to a budget's size tags."""
    spans = tmp_path / "spans.fgl"
    spans.write_text(SEGMENTS, encoding="utf-8")
    model = tmp_path / "s.fglm"
    code, err, _ = fgl("train", spans, "--train", files["short"], "-o",
                       model, "-q", "--max-iter", "2")
    assert code == 0, err
    code, err, seconds = fgl("tag", model, files["long"], "-o", tmp_path / "t.txt",
                             "--max-memory", "2G")
    assert code == 2, err
    one_line(err)
    assert err.startswith(f"fgl: {files['long']}:1: the data (1 sequence, 100,000 tokens; the "
                          "longest here: 100,000 tokens x 1000 segment lengths) would take "
                          "about "), err
    assert "more than the 2 GB memory budget" in err and "split the longest" in err
    assert seconds < 20, seconds
    assert not (tmp_path / "t.txt").exists()
    code, err, _ = fgl("tag", model, files["short"], "-o",
                       tmp_path / "t.txt", "--max-memory", "2G")
    assert code == 0, err


def test_a_memory_error_beyond_the_budget_is_one_located_line(files, tmp_path):
    # the budget allows it, the process's cap does not: the estimate cannot
    # help, the message must still be one line naming where memory ran out
    code, err, _ = fgl("train", files["bias"], "--train", files["labels5k"], "-o",
                       tmp_path / "m.fglm", "-q", "--max-memory", "1T")
    assert code == 1, err
    one_line(err)
    assert err.startswith("fgl: train: ran out of memory in "), err
    assert "structure.py:" in err and "1 TB memory budget (as set by --max-memory)" in err
    assert not (tmp_path / "m.fglm").exists()


def test_a_small_model_still_trains_and_explains_within_the_cap(files, tmp_path):
    model = tmp_path / "m.fglm"
    code, err, _ = fgl("train", REPO / "stdlib" / "hmm_like.fgl", "--train", files["small"],
                       "-o", model, "-q", "--max-iter", "5")
    assert code == 0, err
    assert model.exists()
    code, err, _ = fgl("train", files["bias"], "--train", files["small"], "-o",
                       tmp_path / "b.fglm", "-q", "--max-iter", "5", "--max-memory", "200M")
    assert code == 0, err


def test_a_model_file_with_too_many_label_states_is_refused_when_loaded(files, tmp_path,
                                                                        monkeypatch):
    """The same estimate guards a model whose labels come from its file."""
    from fgl.compile.budget import set_memory_budget
    from fgl.errors import ModelFileError
    from fgl.modelfile import model_files
    from fgl.modelfile.model_files import load_model

    # (the objects loading makes, its spec parsed above all, left out: the file's
    # members alone pass, and the state machine's estimate is what is tested)
    monkeypatch.setattr(model_files, "LOAD_COST", dict.fromkeys(model_files.LOAD_COST, 0))

    model = tmp_path / "b.fglm"
    code, err, _ = fgl("train", files["bias"], "--train", files["small"], "-o", model, "-q",
                       "--max-iter", "2")
    assert code == 0, err
    previous = set_memory_budget(3200)   # (its members: 2.75 KB; 4 x 3 transitions: 3.75 KB)
    try:
        with pytest.raises(ModelFileError, match="too large to load: .* 12 label-state "
                                                 "transitions"):
            load_model(model)
    finally:
        set_memory_budget(previous)


def test_explain_sizes_a_large_feature_table_without_building_it(files, tmp_path, capsys,
                                                                  monkeypatch):
    """Above ``SIZED_ONLY_FEATURES`` explain prints the estimate from counts
    (``fgl.compile.estimate``); below it, the exact count of the built table;
    and should the estimate ever fall below, the table is still counted and
    sized, not built."""
    from fgl.cli import main
    from fgl.compile import estimate, footprint

    spec = tmp_path / "all.fgl"
    spec.write_text("columns word, label\noutput label\n"
                    "template e: y[t] ~ word[t] (support = all)\n", encoding="utf-8")
    assert main(["explain", str(spec), "--train", str(files["small"])]) == 0
    built = capsys.readouterr().out
    assert "features: 21\n" in built   # 7 words x 3 labels, built
    monkeypatch.setattr(footprint, "SIZED_ONLY_FEATURES", 20)   # (21 features: sized only)
    assert main(["explain", str(spec), "--train", str(files["small"])]) == 0
    sized = capsys.readouterr().out
    assert "features: at most 21 (an upper bound estimated from the counts" in sized, sized
    assert "e: at most 7 attributes x 3 patterns (support all): at most 21 features" in sized
    assert "memory: at most about" in sized
    monkeypatch.setattr(estimate, "sized_lines", lambda *args: None)   # (the guard behind it)
    assert main(["explain", str(spec), "--train", str(files["small"])]) == 0
    guarded = capsys.readouterr().out
    assert "features: 21 (counted, not built" in guarded, guarded
    assert "e: 7 attributes, would make 21 features" in guarded
    memory = [line for line in built.splitlines() if line.startswith("memory:")]
    assert memory and memory == [line for line in guarded.splitlines()
                                 if line.startswith("memory:")]
