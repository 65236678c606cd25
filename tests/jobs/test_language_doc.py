"""docs/language.md stays true: every ```fgl block is a spec `fgl check`
accepts; every block whose first line is `# complete example` trains and
tags (through the CLI) on data generated from its `columns`; and the page
names every keyword of the grammar, every setting (used in an example, with
each of its choices), every built-in, input format and column kind."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from support.paths import REPO

from fgl.cli import main
from fgl.lang import ast
from fgl.lang.builtins import BUILTINS
from fgl.lang.checks.messages import COLUMN_KINDS, INPUT_FORMATS, SEGMENT_BOUNDARIES, WITHIN_SCOPES
from fgl.lang.parser import parse_spec, read_spec
from fgl.lang.settings import all_settings, infer_methods

DOC = (REPO / "docs" / "language.md").read_text(encoding="utf-8")
GRAMMAR = (REPO / "grammar" / "fgl.lark").read_text(encoding="utf-8")
COMPLETE = "# complete example"
BLOCKS = re.findall(r"^```fgl\n(.*?)^```", DOC, flags=re.DOTALL | re.MULTILINE)
COMPLETE_BLOCKS = [b for b in BLOCKS if b.startswith(COMPLETE)]
CODE = "\n".join(re.sub(r"#[^\n]*", "", b) for b in BLOCKS)   # the examples, comments removed


def block_id(block: str) -> str:
    """A test id: the block's first template name and its line in the page."""
    line = DOC[:DOC.index(block)].count("\n") + 1
    name = re.search(r"template (\w+)", block)
    return f"line{line}-{name.group(1) if name else 'spec'}"


def write_spec(block: str, where: Path) -> Path:
    """The block as a spec file, with the lexicon files it names."""
    for name in re.findall(r'lexicon\([^"]*"([^"]+)"\)', block):
        (where / name).write_text("paris\nlondon\nw1\n", encoding="utf-8")
    path = where / "model.fgl"
    path.write_text(block, encoding="utf-8")
    return path


# ---------------------------------------------------------------- every block checks

def test_the_page_has_examples():
    assert len(BLOCKS) >= 25 and len(COMPLETE_BLOCKS) >= 15


@pytest.mark.parametrize("block", BLOCKS, ids=[block_id(b) for b in BLOCKS])
def test_every_example_passes_fgl_check(block, tmp_path, capsys):
    path = write_spec(block, tmp_path)
    assert main(["check", str(path)]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip() == f"{path}: ok"
    read_spec(path)                                     # parses and validates


# ---------------------------------------------------------------- generated data

def labels_of(spec: ast.Spec, k: int) -> list[str]:
    """The labels generated for output k: its declared set, BIO tags for a
    `from bio` segment model, else A B O."""
    name = spec.outputs[k]
    if name in spec.label_sets:
        return [str(y) for y in spec.label_sets[name][0]]
    if spec.segments is not None and spec.segments.boundary == "bio" and k == 0:
        return ["B-X", "I-X", "B-Y", "I-Y", "O"]
    return ["A", "B", "O"]


def label_sequence(spec: ast.Spec, rng: np.random.Generator, length: int) -> list[str]:
    """The first output's labels: runs of 1-3 tokens, different labels in
    adjacent runs (so `adjacent distinct` holds), B-/I- tags for `from bio`."""
    labels = labels_of(spec, 0)
    bio = labels[0].startswith("B-")
    types = sorted({y[2:] for y in labels if y != "O"} | {"O"}) if bio else labels
    out: list[str] = []
    prev = None
    while len(out) < length:
        kind = rng.choice([t for t in types if t != prev])
        run = 1 if kind == "O" and bio else int(rng.integers(1, 4))
        for i in range(min(run, length - len(out))):
            out.append(kind if kind == "O" or not bio else ("B-" if i == 0 else "I-") + kind)
        prev = kind
    return out


def field(column: ast.Column, label_index: int, rng: np.random.Generator) -> str:
    """An input field that says something about the token's label."""
    if column.kind == "number":
        return f"{label_index + rng.normal(0, 0.3):.3f}"
    if column.kind == "vector":
        return f"{label_index:.1f},{rng.random():.3f}"
    k = int(rng.integers(0, 3))
    return f"W{label_index}{k}" if rng.random() < 0.5 else f"w{label_index}{k}"


def sentences(spec: ast.Spec, n: int, seed: int, length: int = 6) -> list[list[list[str]]]:
    """n token sequences as rows of the spec's columns."""
    rng = np.random.default_rng(seed)
    first = labels_of(spec, 0)
    out = []
    for _ in range(n):
        ys = label_sequence(spec, rng, length)
        rows = []
        for y in ys:
            li = first.index(y)
            row = []
            for c in spec.columns:
                if c.name in spec.outputs:
                    own = labels_of(spec, spec.outputs.index(c.name))
                    row.append(y if c.name == spec.outputs[0] else own[li % len(own)])
                else:
                    row.append(field(c, li, rng))
            rows.append(row)
        out.append(rows)
    return out


def write_conll(path: Path, seqs: list[list[list[str]]], width: int) -> None:
    lines = []
    for i, rows in enumerate(seqs):
        if i % 4 == 0:     # documents of four sentences, for `within document`
            lines += [" ".join(["-DOCSTART-"] + ["O"] * (width - 1)), ""]
        lines += [" ".join(r) for r in rows] + [""]
    path.write_text("\n".join(lines), encoding="utf-8")


def write_graphs(path: Path, spec: ast.Spec, seqs: list[list[list[str]]]) -> None:
    """Each sequence as a graph: a node per token, every edge type of the
    spec linking neighbours (text attributes become several words)."""
    types = re.findall(r'edge\(a, b, "([^"]*)"\)', spec.text) or ["cites"]
    names = [c.name for c in spec.columns]
    lines = []
    for rows in seqs:
        nodes = [{"id": f"n{k}", **{c: (f"{v} common {v.lower()}x" if c not in spec.outputs
                                        else v) for c, v in zip(names, r)}}
                 for k, r in enumerate(rows)]
        edges = [{"source": f"n{k}", "target": f"n{(k + s) % len(rows)}", "type": t}
                 for s, t in enumerate(types, 1) for k in range(len(rows))]
        lines.append(json.dumps({"nodes": nodes, "edges": edges}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("block", COMPLETE_BLOCKS, ids=[block_id(b) for b in COMPLETE_BLOCKS])
def test_complete_examples_train_and_tag(block, tmp_path, capsys):
    spec_path = write_spec(block, tmp_path)
    spec = read_spec(spec_path)
    train, test = sentences(spec, 24, seed=1), sentences(spec, 6, seed=2)
    graph = spec.input_format == "graph"
    files = {}
    for name, seqs in (("train", train), ("test", test)):
        files[name] = tmp_path / f"{name}.{'jsonl' if graph else 'txt'}"
        if graph:
            write_graphs(files[name], spec, seqs)
        else:
            write_conll(files[name], seqs, len(spec.columns))
    model = tmp_path / "model.fglm"
    assert main(["train", str(spec_path), "--train", str(files["train"]), "-o", str(model),
                 "-q"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["tag", str(model), str(files["test"])]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    n_out = len(spec.outputs)
    known = [{r[[c.name for c in spec.columns].index(o)] for s in train for r in s}
             | set(labels_of(spec, k)) for k, o in enumerate(spec.outputs)]
    if graph:
        tagged = [json.loads(line)["labels"] for line in out.splitlines()]
        assert [len(t) for t in tagged] == [len(s) for s in test]
        assert {y for t in tagged for y in t.values()} <= known[0]
        pred = [[t[f"n{k}"] for k in range(len(t))] for t in tagged]
        assert accuracy([[r[-1] for r in s] for s in test], pred) >= 0.8
        return
    rows = [line.split() for line in out.splitlines() if line.strip()
            and not line.startswith("-DOCSTART-")]
    assert len(rows) == sum(len(s) for s in test)
    for row, gold in zip(rows, (r for s in test for r in s)):
        assert row[:len(gold)] == gold and len(row) == len(gold) + n_out
        assert all(y in known[k] for k, y in enumerate(row[len(gold):]))
    # the generated words give the labels away: every example learns them
    first = [c.name for c in spec.columns].index(spec.outputs[0])
    gold, pred, k = [[r[first] for r in s] for s in test], [], 0
    for s in test:
        pred.append([r[len(spec.columns)] for r in rows[k:k + len(s)]])
        k += len(s)
    assert accuracy(gold, pred) >= 0.8


def accuracy(gold: list[list[str]], pred: list[list[str]]) -> float:
    return sum(a == b for g, p in zip(gold, pred) for a, b in zip(g, p)) / sum(map(len, gold))


# ---------------------------------------------------------------- the page covers the language

def test_every_grammar_keyword_is_in_an_example():
    keywords = {w for w in re.findall(r'"([a-z_]+)"', GRAMMAR) if len(w) > 1}
    assert {"model", "segments", "nearest", "upto", "within", "edge"} <= keywords
    missing = sorted(k for k in keywords if not re.search(rf"\b{k}\b", CODE))
    assert not missing, f"grammar keywords with no example in docs/language.md: {missing}"


def test_every_column_base_is_described():
    bases = re.search(r'!col_base: (.*)', GRAMMAR).group(1)
    for base in re.findall(r'"(\w)"', bases):
        assert f"`{base}`" in DOC, base


def _used_settings() -> set[tuple[str, str, object]]:
    """(block, key, value) of every setting the examples give."""
    used = set()
    for block in BLOCKS:
        spec = parse_spec(block)
        used |= {("train", s.key, s.value) for s in spec.train}
        if spec.infer_method:
            used |= {(f"infer {spec.infer_method[0]}", s.key, s.value) for s in spec.infer}
            used.add(("infer", "method", spec.infer_method[0]))
        used |= {("template", s.key, s.value) for t in spec.templates for s in t.options}
    return used


def test_every_setting_is_documented_and_used():
    used = _used_settings()
    for s in all_settings():
        if s.block.startswith("infer "):
            row = f"| `{s.block.split()[1]}` | `{s.key}` |"
        else:
            row = f"| `{s.key}` |"
        assert row in DOC, f"no row for {s.block} {s.key} in docs/language.md"
        if s.refusal is None:
            assert any(b == s.block and k == s.key for b, k, _ in used), \
                f"no example gives {s.block} {s.key}"
        if s.validator.expected.startswith("one of: ") and s.refusal is None:
            for choice in s.validator.expected[len("one of: "):].split(", "):
                assert (s.block, s.key, choice) in {(b, k, str(v)) for b, k, v in used}, \
                    f"no example gives {s.key} = {choice}"


def test_every_inference_method_is_in_an_example():
    methods = {v for b, k, v in _used_settings() if (b, k) == ("infer", "method")}
    assert set(infer_methods()) <= methods


def test_every_builtin_and_vocabulary_word_is_in_an_example():
    for name in BUILTINS:
        assert re.search(rf"\b{name}\b", CODE), f"built-in {name} has no example"
    for word in (*INPUT_FORMATS, *SEGMENT_BOUNDARIES, *WITHIN_SCOPES):
        assert re.search(rf"\b{word}\b", CODE), word
    for kind in COLUMN_KINDS:
        assert f":{kind}" in CODE, kind


def test_the_statement_table_lists_every_statement():
    statements = re.search(r"_statement: (.*)", GRAMMAR).group(1).split(" | ")
    for name in statements:
        assert re.search(rf"^\| `{name}\b", DOC, flags=re.MULTILINE), name


def test_the_default_sigma_is_explained():
    default = next(s.default for s in all_settings() if (s.block, s.key) == ("train", "sigma"))
    assert f"| `sigma` | {default:g} |" in DOC
    section = DOC[DOC.index("#### The default sigma"):]
    assert f"**{default:g}, the default**" in section and "0.7071" in section


def test_links_point_at_files():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", DOC):
        assert (REPO / "docs" / target).resolve().exists(), target
