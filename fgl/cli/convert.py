"""``fgl convert``: a CRF++ or Wapiti template file as an fgl spec
(``crfpp``, ``wapiti``), and LINQS citation data as JSON-lines graphs
(``linqs``)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fgl.cli.options import encoding_arg, seed_arg, whole_arg
from fgl.errors import FglError
from fgl.io.safe_files import check_output, write_text

EPILOG = """\
examples:
  fgl convert crfpp template --columns word,pos,chunk -o chunk.fgl
  fgl convert linqs citeseer.content citeseer.cites -o citeseer.jsonl
  fgl convert linqs cs.content cs.cites --split 0.7 -o train.jsonl --test-out test.jsonl
  fgl convert linqs cs.content cs.cites --withhold 0.5 -o given.jsonl --gold-out gold.jsonl

`fgl convert FORMAT --help` describes each; docs/crfpp.md and docs/data.md."""

LINQS = """\
Write the citation graph of a LINQS pair of files (the CiteSeer and Cora data
of Sen et al. 2008) as JSON lines for `input graph` specs: one node per paper,
{"id", "words", "label"} with its present words as space-separated tokens
(`tokens(words[a])` reads them), and one edge per pair of linked papers,
{"source": citing, "target": cited, "type": "cites"}.

CONTENT lines: paper id, word columns of 0/1 (word j, from 0, is named wj),
label, separated by tabs -- or paper id, one field of word names separated by
spaces, label.  CITES lines: cited paper id, citing paper id.  Links naming a
paper CONTENT does not list, self-links and repeated links are dropped with a
warning giving their count; the reverse of a link already kept is dropped too
(one edge per pair).  A malformed line is an error at file:line."""


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "convert", help="convert a CRF++ / Wapiti template to a spec, or LINQS citation data "
                        "to JSON-lines graphs",
        description="Convert other tools' files: a CRF++ or Wapiti feature template into the "
                    "equivalent fgl spec (crfpp, wapiti), or a LINQS .content/.cites pair "
                    "(CiteSeer, Cora) into a JSON-lines graph (linqs), optionally split into "
                    "training and test graphs or with labels withheld for within-network "
                    "classification.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = p.add_subparsers(dest="format", required=True, metavar="FORMAT")
    for name in ("crfpp", "wapiti"):
        _template_parser(kinds, name)
    _linqs_parser(kinds)


def _template_parser(kinds: argparse._SubParsersAction, name: str) -> None:
    p = kinds.add_parser(
        name, help=f"a {'CRF++' if name == 'crfpp' else 'Wapiti'} template file as a spec",
        description="Write the fgl spec equivalent to a CRF++ (or Wapiti) feature template "
                    "file: each U line a state template, each B line a transition template, "
                    "each * line both, over the same cells (%x[row,col]).  See "
                    "docs/crfpp.md for what maps to what and the one difference at "
                    "sentence edges.  (crfpp and wapiti read the same way.)",
        epilog=f"example: fgl convert {name} template --columns word,pos,chunk -o chunk.fgl")
    p.add_argument("template", help="the template file")
    p.add_argument("-o", "--output", metavar="SPEC",
                   help="where to write the spec (default: standard output)")
    p.add_argument("--columns", metavar="NAMES",
                   help="the data's column names in file order, the last being the output, "
                        "as in word,pos,chunk (CRF++ numbers the input columns 0, 1, ...; "
                        "default col0,col1,...: the columns the template reads, then one "
                        "output column)")
    p.add_argument("-c", type=float, default=1.0, dest="c",
                   help="CRF++'s -c (default 1): the spec's sigma is its square root")
    p.add_argument("-f", type=whole_arg, default=1, dest="f", metavar="N",
                   help="CRF++'s -f (default 1): the feature cut-off, written as the spec's "
                        "`min_count = N` (attributes seen fewer than N times in the training "
                        "data get no weights)")
    p.add_argument("--encoding", default="utf-8", type=encoding_arg,
                   help="the template file's encoding")


def _linqs_parser(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser(
        "linqs", help="a LINQS .content/.cites pair (CiteSeer, Cora) as JSON-lines graphs",
        description=LINQS, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  fgl convert linqs citeseer.content citeseer.cites -o citeseer.jsonl\n"
               "  fgl convert linqs citeseer.content citeseer.cites --split 0.7 "
               "-o train.jsonl --test-out test.jsonl\n"
               "  fgl convert linqs citeseer.content citeseer.cites --withhold 0.5 "
               "-o given.jsonl --gold-out gold.jsonl\n"
               "  fgl train spec.fgl --train given.jsonl -o m.fglm && "
               "fgl eval m.fglm gold.jsonl\n\n"
               "Counts go to standard output (standard error when the graph does); "
               "docs/data.md.")
    p.add_argument("content", help="the .content file: one paper a line")
    p.add_argument("cites", help="the .cites file: one link a line (cited, citing)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="where to write the graph (default: standard output); with --split "
                        "the training graph, with --withhold the graph with labels null")
    p.add_argument("--split", type=float, metavar="SHARE",
                   help="split the papers at random (seeded by --seed): SHARE of them "
                        "(0 < SHARE < 1, rounded) form the training graph written to -o, the "
                        "rest the test graph written to --test-out; links across the split "
                        "are dropped and counted")
    p.add_argument("--test-out", metavar="FILE", help="with --split: where to write the test "
                                                      "graph")
    p.add_argument("--withhold", type=float, metavar="FRACTION",
                   help="withhold the labels of FRACTION of the papers, chosen at random "
                        "(seeded by --seed; 0 < FRACTION < 1, rounded): -o gets the graph "
                        "with those labels null (to train and tag on: within-network "
                        "classification), --gold-out the same graph with every label and "
                        "the withheld papers marked \"withheld\": true (for fgl eval, which "
                        "scores them)")
    p.add_argument("--gold-out", metavar="FILE", help="with --withhold: where to write the "
                                                      "graph with every label")
    p.add_argument("--seed", type=seed_arg, default=0,
                   help="the random seed of --split and --withhold (default 0)")
    p.add_argument("--encoding", default="utf-8", type=encoding_arg,
                   help="the files' encoding (default utf-8)")


def run(a: argparse.Namespace) -> int:
    if a.format == "linqs":
        return _run_linqs(a)
    from fgl.convert.crfpp import convert_file

    columns = a.columns.split(",") if a.columns is not None else None
    inputs = [(a.template, "the template")]
    if a.output not in (None, "-"):
        check_output(a.output, "spec", inputs)    # before any work
    spec = convert_file(a.template, columns, a.c, a.encoding, a.f)
    if a.output in (None, "-"):
        sys.stdout.write(spec)
        return 0
    path = Path(a.output)
    write_text(path, spec, "spec", inputs=inputs)
    templates = sum(line.startswith("template ") for line in spec.splitlines())
    print(f"{path}: {templates} templates from {a.template}; check it with `fgl check {path}`")
    return 0


def _check_linqs_options(a: argparse.Namespace) -> None:
    if a.split is not None and a.withhold is not None:
        raise FglError("--split and --withhold: choose one (a split makes a training and a "
                       "test graph; withholding keeps one graph with some labels null)")
    for option, value, partner, needed in (
            ("--split", a.split, "--test-out", a.test_out),
            ("--withhold", a.withhold, "--gold-out", a.gold_out)):
        if value is None:
            if needed is not None:
                raise FglError(f"{partner} goes with {option}")
            continue
        if not 0 < value < 1:
            raise FglError(f"{option} {value:g}: expected a fraction between 0 and 1")
        if a.output is None or needed is None:
            raise FglError(f"{option} writes two graphs: name them with -o FILE and "
                           f"{partner} FILE")
        if Path(a.output).resolve() == Path(needed).resolve():
            raise FglError(f"-o and {partner} name the same file, {a.output}")


def _write(path: str, graph: dict, inputs: list) -> None:
    write_text(path, json.dumps(graph, ensure_ascii=False) + "\n", "graph", inputs=inputs)


def _run_linqs(a: argparse.Namespace) -> int:
    from fgl.convert.linqs import graph_json, read_linqs, split, withhold

    _check_linqs_options(a)
    inputs = [(a.content, "the .content file"), (a.cites, "the .cites file")]
    for path in (a.output, a.test_out, a.gold_out):
        if path is not None:
            check_output(path, "graph", inputs)    # before any work
    data = read_linqs(a.content, a.cites, a.encoding)
    for line in linqs_warnings(data):
        print(f"fgl: warning: {line}", file=sys.stderr)
    info = sys.stdout if a.output else sys.stderr
    for line in linqs_summary(data):
        print(line, file=info)
    if a.split is not None:
        train, test, train_links, test_links, across = split(data, a.split, a.seed)
        _write(a.output, graph_json(train, train_links), inputs)
        _write(a.test_out, graph_json(test, test_links), inputs)
        print(f"wrote {a.output}: the training graph, {len(train)} papers, {len(train_links)} "
              f"links; {a.test_out}: the test graph, {len(test)} papers, {len(test_links)} "
              f"links; {across} links across the split dropped (seed {a.seed})", file=info)
    elif a.withhold is not None:
        held = withhold(data, a.withhold, a.seed)
        _write(a.output, graph_json(data.papers, data.links, null=held), inputs)
        _write(a.gold_out, graph_json(data.papers, data.links, withheld=held), inputs)
        print(f"wrote {a.output}: {len(data.papers)} papers, {len(data.links)} links, "
              f"{len(held)} labels null (withheld, seed {a.seed}): train and tag on it; "
              f"{a.gold_out}: every label, the {len(held)} withheld papers marked "
              f"\"withheld\": true: `fgl eval MODEL {a.gold_out}` scores them", file=info)
    elif a.output is not None:
        _write(a.output, graph_json(data.papers, data.links), inputs)
        print(f"wrote {a.output}: one graph, {len(data.papers)} papers, {len(data.links)} "
              "links", file=info)
    else:
        sys.stdout.write(json.dumps(graph_json(data.papers, data.links), ensure_ascii=False)
                         + "\n")
    return 0


def linqs_warnings(data) -> list[str]:
    """The defects of a .cites file that were dropped, one line each."""
    c, out = data.counts, []
    if c.missing:
        ids = sorted(c.missing_ids)
        shown = ", ".join(repr(x) for x in ids[:3]) + (", ..." if len(ids) > 3 else "")
        out.append(f"{data.cites}:{c.first_missing}: {c.missing} links (the first here) name "
                   f"papers that {data.content} does not list ({len(ids)} ids: {shown}); "
                   "skipped them")
    if c.self_links:
        out.append(f"{data.cites}:{c.first_self}: {c.self_links} self-links (the first here); "
                   "skipped them")
    if c.repeats:
        out.append(f"{data.cites}:{c.first_repeat}: {c.repeats} repeated links (the first "
                   "here); kept each link once")
    return out


def linqs_summary(data) -> list[str]:
    """The papers, labels, words and links read."""
    c = data.counts
    labels = ", ".join(f"{y} {n}" for y, n in sorted(data.labels.items()))
    words = ("word columns" if data.layout == "columns" else "distinct words")
    dropped = [f"{n} {what}" for n, what in (
        (c.missing, "naming papers not listed"), (c.self_links, "self-links"),
        (c.repeats, "repeats"), (c.reverse, "reverses of a link kept")) if n]
    return [f"{data.content}: {len(data.papers)} papers, {len(data.labels)} labels ({labels}), "
            f"{data.vocabulary} {words}",
            f"{data.cites}: {c.lines} lines, {c.kept} links (one per pair of papers)"
            + (f"; dropped {', '.join(dropped)}" if dropped else "")
            + f"; {data.isolated()} papers in no link"]
