"""A graph model's junction-tree clique tables priced before `fgl tag` and
`fgl eval` fill them (issue 47, item 4): training planned them against the
budget, tagging did not — a sentence of eight equal words linked pairwise
under `infer junction_tree(max_table = 1e9)` and ten labels (a clique of
10^8 entries) took 2.5 GB under `--max-memory 500M`.

The commands run in a subprocess whose address space is capped below what
the tables would take: a check after the allocation fails the test."""
from __future__ import annotations

import pytest
from support.cli import capped_fgl

CAP = 3 << 30
SPEC = ("columns word, label\noutput label\ntemplate state: y[t] ~ word[t]\n"
        "template transition: y[t-1..t]\n"
        "template same: (y[i], y[j]) where word[i] == word[j] within sentence ~ bias\n"
        "infer junction_tree(max_table = 1000000000)\ntrain { max_iter = 2 }\n")


def fgl(*argv) -> tuple[int, str]:
    """Run ``fgl argv...`` capped in memory and time: (exit code, stderr)."""
    return capped_fgl(*argv, cap=CAP, timeout=120)[:2]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("jt_budget")
    spec, data = d / "jt.fgl", d / "train.txt"
    spec.write_text(SPEC, encoding="utf-8")
    labels = "ABCDEFGHIJ"
    data.write_text("".join("".join(f"w{s * 4 + t} {labels[(s + t) % 10]}\n" for t in range(4))
                            + "\n" for s in range(10)) + "x A\nx B\n", encoding="utf-8")
    code, err = fgl("train", spec, "--train", data, "-o", d / "jt.fglm", "-q")
    assert code == 0, err
    return spec, d / "jt.fglm"


@pytest.mark.parametrize("command", ["tag", "eval"])
def test_clique_tables_past_the_budget_are_refused_before_inference(model, tmp_path, command):
    spec, fglm = model
    data = tmp_path / "same.txt"
    data.write_text("".join(f"same {'A' if command == 'eval' else ''}\n" for _ in range(8)),
                    encoding="utf-8")
    code, err = fgl(command, fglm, data, "--max-memory", "500M")
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"fgl: {spec}:5:1: template 'same' makes about 28 factors"), err
    assert "for inference" in err and "more than the 500 MB memory budget" in err, err


def test_the_same_model_tags_within_the_budget(model, tmp_path):
    _, fglm = model
    data = tmp_path / "small.txt"
    data.write_text("same\nsame\nother\n", encoding="utf-8")
    code, err = fgl("tag", fglm, data, "--max-memory", "500M")
    assert code == 0, err
