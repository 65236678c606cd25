"""The attribute items of training data priced before they are made (issue
47, item 4): ``obs b = a & a & ...`` ten times over three offsets gives
59,049 items per token; ``fgl train --max-memory 1G`` ran to 6.6 GB and
ended in a MemoryError while ``fgl explain`` estimated the same model at
11.5 GB.  Both now refuse it with the same located message, from the
estimate, before any unit is encoded.

Each command runs in a subprocess with its address space capped below what
encoding would take, so a check that came after the allocation fails the
test instead of exhausting the machine."""
from __future__ import annotations

import pytest
from support.cli import capped_fgl

from fgl.compile.budget import set_memory_budget
from fgl.compile.footprint import OverBudgetError
from fgl.compile.sequence_budget import check_made, check_reading
from fgl.compile.unit_rows import BATCH_TOKENS, batches
from fgl.data.sentence import Sentence
from fgl.errors import DataError
from fgl.lang.parser import parse_spec

CAP = 3 << 30
CONJOINED = ("columns word, label\noutput label\nobs a = word[t-1..t+1]\n"
             "obs b = a & a & a & a & a & a & a & a & a & a\n"
             "template state: y[t] ~ b\ntemplate transition: y[t-1..t]\n")


def fgl(*argv) -> tuple[int, str]:
    """Run ``fgl argv...`` capped in memory and time: (exit code, stderr)."""
    return capped_fgl(*argv, cap=CAP, timeout=60)[:2]


@pytest.mark.parametrize("command", ["train", "explain"])
def test_conjoined_items_are_refused_from_the_estimate_before_encoding(tmp_path, command):
    spec, data = tmp_path / "conj.fgl", tmp_path / "train.txt"
    spec.write_text(CONJOINED, encoding="utf-8")
    data.write_text("".join(f"w{i * 7 % 30} {'ABC'[i % 3]}\n" + ("\n" if i % 8 == 7 else "")
                            for i in range(400)), encoding="utf-8")
    out = ["-o", tmp_path / "m.fglm"] if command == "train" else []
    code, err = fgl(command, spec, "--train", data, "--max-memory", "1G", *out)
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"fgl: {spec}:5:1: template 'state' gives up to 59,049 attribute "
                          "items at each token"), err
    assert "more than the 1 GB memory budget (as set by --max-memory)" in err, err
    assert not (tmp_path / "m.fglm").exists()


def test_what_reading_made_past_the_budget_is_refused_at_the_widest_template():
    spec = parse_spec(CONJOINED, "conj.fgl")
    previous = set_memory_budget(1 << 20)
    try:
        check_reading(spec, [59_049, 1], 1, {"attribute keys": 1 << 19, "training data": 0},
                      100, 400)   # (within the budget: nothing to say)
        with pytest.raises(OverBudgetError) as caught:
            check_reading(spec, [59_049, 1], 1, {"attribute keys": 3 << 19,
                                                  "training data": 1 << 19}, 100, 400)
    finally:
        set_memory_budget(previous)
    e = caught.value
    assert (e.file, e.line) == ("conj.fgl", 5)
    assert "from the first 100 of the 400 tokens of the training data already take 2 MB " \
        "(template 'state' gives the most attribute items, up to 59,049 at each token)" in str(e)
    check_reading(spec, [59_049, 1], 1, {"attribute keys": 3 << 20}, 400, 400)   # (all read)
    assert e.footprint.total == 4 * (2 << 20)   # (in proportion to the tokens read)


def test_batches_hold_fewer_tokens_when_each_gives_many_items():
    sentences = [Sentence([["w", "A"]] * 10, list(range(10)), 0, "f") for _ in range(300)]
    sizes = [sum(len(s.rows) for s in b) for b in batches(iter(sentences), 300)]
    assert set(sizes[:-1]) == {BATCH_TOKENS + 6} and sum(sizes) == 3000
    wide = list(batches(iter(sentences), 300, items_per_token=59_049))
    assert len(wide) == 300 and sum(map(len, wide)) == 300   # (a sentence at least)


def test_tagging_a_sentence_of_many_items_is_refused_at_its_line(tmp_path):
    spec, data, long = tmp_path / "conj5.fgl", tmp_path / "train.txt", tmp_path / "long.txt"
    spec.write_text(CONJOINED.replace(" & a & a & a & a & a\n", "\n"), encoding="utf-8")
    data.write_text("".join(f"w{i % 5} {'AB'[i % 2]}\n" + ("\n" if i % 4 == 3 else "")
                            for i in range(40)), encoding="utf-8")
    long.write_text("".join(f"w{i % 5}\n" for i in range(10_000)), encoding="utf-8")
    code, err = fgl("train", spec, "--train", data, "-o", tmp_path / "m.fglm", "-q")
    assert code == 0, err
    code, err = fgl("tag", tmp_path / "m.fglm", long, "--max-memory", "500M")
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"fgl: {long}:1: the data (1 sequence, 10,000 tokens"), err
    assert "more than the 500 MB memory budget" in err, err


def test_keys_made_while_tagging_past_the_budget_are_refused_at_the_sentence():
    sent = Sentence([["w"]], [1207], 0, "test.txt")
    previous = set_memory_budget(1 << 20)
    try:
        check_made(1 << 19, sent)
        with pytest.raises(DataError, match="keys and rows tagging has made up to here take "
                                            "2 MB, more than the 1 MB") as caught:
            check_made(2 << 20, sent)
    finally:
        set_memory_budget(previous)
    assert (caught.value.file, caught.value.line) == ("test.txt", 1207)
