"""``fgl tag``: label a data file with a trained model, optionally with
token marginals and segment confidences (``fgl.confidence``)."""
from __future__ import annotations

import argparse
import io
import sys

from fgl.cli.options import data_args, encoding_arg
from fgl.cli.reporting import warn_convergence
from fgl.evaluation.evaluate import SCHEMES

COLUMNS = """\
columns appended to each token line, in this order:
  the predicted label of every output layer;
  --marginals best: P(predicted label | x) of every output layer;
  --marginals all:  every label of every output layer as LABEL:P, in the
                    model's label order (split at the last ':');
  --confidence:     per output layer, the confidence of the predicted segment
                    that starts at this token (P(its predicted labels | x), by
                    constrained forward-backward), '-' elsewhere.
Every line keeps its input fields, so all lines have as many fields; a
-DOCSTART- line is written as wide as the others (its own fields, padded
with -X- and O, then O per predicted label and - per other column), so
conlleval.pl reads the output, as does `fgl eval --tagged`.  The output is
in the input's encoding (--encoding) unless --output-encoding says otherwise.
Probabilities are written with 6 decimals.

--probability writes a line '# P' before each sentence: P = p(y | x), the
probability of the sentence's predicted labelling as a whole (CRF++'s
crf_test -v1).  --nbest K writes each sentence K times, its K best
labellings best first, each copy after a line '# RANK P' (rank 0 the best;
fewer copies when the sentence has fewer labellings), as crf_test -n K
does.  Both are exact, for chain and segment models only; these comment
lines are not conlleval's input (drop them with grep -v '^# ').

Graph input (JSON lines) gets a
"marginals" object: node id -> P(predicted label) (best) or {label: P} (all),
a list over the output layers when there are several.  See docs/confidence.md.

A partially labelled graph (some labels null, or marked "withheld": true)
keeps its given labels: they are clamped as evidence (marginal 1) and the
unlabelled nodes are predicted given them.  A graph labelled on every node
is predicted from its attributes and links alone (docs/language.md)."""


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tag", help="label a data file with a trained model",
                       description="Write FILE back with one predicted label column appended "
                                   "(input columns only, or with gold labels: both work).",
                       epilog=COLUMNS, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a model file written by `fgl train`")
    p.add_argument("file", help="data to label (CoNLL columns, or JSON-lines graphs); - for "
                                "standard input")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write here instead of stdout (- is stdout)")
    p.add_argument("--output-encoding", metavar="ENCODING", type=encoding_arg,
                   help="text encoding of the output (default: the input's, --encoding)")
    p.add_argument("--marginals", nargs="?", const="best", choices=("best", "all"),
                   help="append per-token label probabilities: of the predicted label (best, "
                        "the default) or of every label (all)")
    p.add_argument("--confidence", action="store_true",
                   help="append each predicted segment's confidence at its first token "
                        "(column files only)")
    p.add_argument("--nbest", type=_positive, metavar="K",
                   help="write the K best labellings of each sentence, each after a line "
                        "'# RANK PROBABILITY' (CRF++'s crf_test -n; chain and segment models)")
    p.add_argument("--probability", action="store_true",
                   help="write '# PROBABILITY' before each sentence: p(predicted labelling | x), "
                        "exactly (CRF++'s crf_test -v1; chain and segment models)")
    p.add_argument("--scheme", choices=SCHEMES, default="auto",
                   help="how --confidence reads chunks from a chain or factor-graph model's "
                        "tags, as in `fgl eval --scheme` (default auto); a segment model "
                        "uses its own segments")
    data_args(p)


def _positive(text: str) -> int:
    """A whole number of at least 1 (``--nbest``)."""
    try:
        k = int(text)
    except ValueError:
        k = 0
    if k < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return k


def _prob(p: float) -> str:
    return f"{p:.6f}"


def _token_columns(tags: list[list[str]], probs: list, labels: list[list[str]], mode: str
                   ) -> list[list[str]]:
    """Per token, the marginal columns of one sentence (``tags[k]``: output
    layer k's predicted tags; ``probs[k]``: its [tokens, labels] array)."""
    out: list[list[str]] = [[] for _ in (tags[0] if tags else [])]
    for seq, p, names in zip(tags, probs, labels):
        index = {y: c for c, y in enumerate(names)}
        for t, (row, tag) in enumerate(zip(p, seq)):
            if mode == "best":
                out[t].append(_prob(row[_column(index, tag)]))
            else:
                out[t].extend(f"{y}:{_prob(v)}" for y, v in zip(names, row))
    return out


def _column(index: dict[str, int], tag: str) -> int:
    """The marginal column of a predicted tag: the label itself, or for a
    segment model's B-X / I-X tag its segment label X."""
    return index[tag] if tag in index else index[tag[2:]]


def _confidence_columns(found: list[list], T: int) -> list[list[str]]:
    """Per token of one sentence, per output layer: the confidence of the
    segment starting there, else '-'."""
    out = [["-"] * len(found) for _ in range(T)]
    for k, segs in enumerate(found):
        for seg in segs:
            out[seg.start][k] = _prob(seg.confidence)
    return out


def run(a: argparse.Namespace) -> None:
    import json

    from fgl.api import CRF
    from fgl.errors import FglError
    from fgl.io.safe_files import check_output
    from fgl.io.sources import expand

    if a.output is not None:   # a path fgl will not write is refused before any work
        check_output(a.output, "tagged output", [(a.model, "the model"),
                                                 (expand(a.file), "the data")],
                     allow_stdout=True)
    crf = CRF.load(a.model, jobs=a.jobs)
    from fgl.engines.first_run import note_first_compile
    note_first_compile(crf.engine.engine, "tag")   # (a first run compiles the kernels)
    graph = crf.spec.input_format == "graph"
    if a.confidence and graph:
        raise FglError("--confidence: segments are stretches of a sequence, and graph input "
                       "has none (its nodes are not in an order); use --marginals")
    if (a.nbest is not None or a.probability) and graph:
        raise FglError("--nbest and --probability rank labellings of a sequence, exactly on the "
                       "chain and segment engines; graph input runs on the factor-graph engine: "
                       "use --marginals")
    if a.nbest is not None and (a.marginals or a.confidence):
        raise FglError("--nbest writes whole labellings and takes no per-token columns; tag "
                       "without --nbest for --marginals or --confidence")
    if a.nbest is not None:
        _run_nbest(a, crf)
        return
    sentences, tagged = crf.tag_file(a.file, encoding=a.encoding, short_lines=a.short_lines)
    warn_convergence(crf.spec, tagged.stats, "decoding")
    marg = None
    if a.marginals:
        marg = crf.marginals_sentences(sentences)
        warn_convergence(crf.spec, marg.stats, "marginals")
    found = (crf.segment_confidences_sentences(sentences, tagged, scheme=a.scheme)
             if a.confidence else None)
    pred = tagged.tokens()
    out = io.StringIO()   # the text, then written in the output encoding (_write)
    if graph:  # one JSON line per graph: node id -> labels (and marginals)
        for i, (g, labels) in enumerate(zip(sentences, pred)):
            line = {"labels": dict(zip(g.node_ids, labels))}
            if marg is not None:
                line["marginals"] = _node_marginals(g.node_ids, tagged.labels[i],
                                                    marg.probs[i], marg.labels, a.marginals)
            print(json.dumps(line, ensure_ascii=False), file=out)
    else:
        extra = [[list(y) if isinstance(y, tuple) else [y] for y in labels] for labels in pred]
        for i, rows in enumerate(extra):
            if marg is not None:
                for row, cols in zip(rows, _token_columns(tagged.labels[i], marg.probs[i],
                                                          marg.labels, a.marginals)):
                    row.extend(cols)
            if found is not None:
                for row, cols in zip(rows, _confidence_columns(found[i], len(rows))):
                    row.extend(cols)
        before = ([f"# {_prob(best[0][1])}" for best in crf.nbest_sentences(sentences, 1)]
                  if a.probability else None)
        _write_columns(out, a, crf.spec, sentences, extra, before)
    _write(out.getvalue(), a.output, a.output_encoding or a.encoding,
           [(a.model, "the model"), (expand(a.file), "the data")])


def _run_nbest(a: argparse.Namespace, crf) -> None:
    """``--nbest K``: each sentence once per labelling among its K best,
    after a line ``# RANK PROBABILITY`` (``fgl.labellings``)."""
    from fgl.io.sources import expand

    sentences = crf.read(a.file, a.encoding, a.short_lines)
    found = crf.nbest_sentences(sentences, a.nbest)
    copies = [s for s, best in zip(sentences, found) for _ in best]
    extra = [[[tag] for tag in tags] for best in found for tags, _ in best]
    before = [f"# {j} {_prob(p)}" for best in found for j, (_, p) in enumerate(best)]
    out = io.StringIO()
    _write_columns(out, a, crf.spec, copies, extra, before)
    _write(out.getvalue(), a.output, a.output_encoding or a.encoding,
           [(a.model, "the model"), (expand(a.file), "the data")])


def _write_columns(out: io.StringIO, a: argparse.Namespace, spec, sentences: list,
                   extra: list, before: list[str] | None) -> None:
    """The column output: the input's fields plus ``extra``, with the
    input's ``-DOCSTART-`` lines (``_docstart_row``) and the ``before``
    line of each sentence."""
    from fgl.io.conll import docstart_fields, write_conll
    from fgl.io.sources import expand

    boundary = next((f for f in (docstart_fields(p, a.encoding)
                                 for p in expand(a.file)) if f is not None), None)
    row = None
    if boundary is not None:
        row = _docstart_row(boundary, sentences, extra, spec)
    write_conll(out, sentences, extra, docstart=boundary is not None, docstart_row=row,
                before=before)


def _docstart_row(fields: list[str], sentences: list, extra: list, spec) -> list[str] | None:
    """The output's ``-DOCSTART-`` line, as many fields as its token lines:
    the input's line cut or padded to the input's width (a label column
    padded with ``O``, any other with ``-X-``, as CoNLL-2003 writes it),
    then ``O`` for each predicted label and ``-`` for each marginal or
    confidence column (conlleval reads a file only when every line has as
    many fields, and takes a ``-DOCSTART-`` line for a boundary)."""
    i = next((i for i, s in enumerate(sentences) if s.rows), None)
    if i is None:
        return None
    width, added = len(sentences[i].rows[0]), len(extra[i][0])
    names = [c.name for c in spec.columns]
    inputs = [n for n in names if n not in spec.outputs]
    cols = names if width == len(names) else inputs if width == len(inputs) else []
    row = fields[:width]
    for j in range(len(row), width):
        row.append("O" if j < len(cols) and cols[j] in spec.outputs else "-X-")
    layers = len(spec.outputs)
    return row + ["O"] * layers + ["-"] * (added - layers)


def _write(text: str, dest: str | None, encoding: str, inputs: list) -> None:
    """Write ``text`` in ``encoding`` to the file ``dest`` (None or ``-``:
    standard output, as bytes, whatever the terminal's encoding), which may
    not be one of ``inputs`` (``fgl.io.safe_files``: atomically)."""
    from fgl.errors import FglError
    from fgl.io.safe_files import write_bytes

    try:
        data = text.encode(encoding)
    except LookupError:
        raise FglError(f"unknown encoding {encoding!r}") from None
    except UnicodeEncodeError as e:
        raise FglError(f"the output holds {text[e.start:e.end]!r}, which {encoding} cannot "
                       "write; choose another with --output-encoding (e.g. utf-8)") from None
    if (dest is None or dest == "-") and getattr(sys.stdout, "buffer", None) is None:
        sys.stdout.write(text)    # a text-only stand-in for stdout
        return
    sys.stdout.flush()
    write_bytes(dest or "-", data, "tagged output", inputs=inputs, allow_stdout=True)


def _node_marginals(nodes: list[str], tags: list[list[str]], probs: list,
                    labels: list[list[str]], mode: str) -> dict:
    """node id -> its marginals (one value per output layer, a list when
    there are several)."""
    per_layer = []
    for seq, p, names in zip(tags, probs, labels):
        index = {y: c for c, y in enumerate(names)}
        if mode == "best":
            per_layer.append([float(row[index[tag]]) for row, tag in zip(p, seq)])
        else:
            per_layer.append([dict(zip(names, map(float, row))) for row in p])
    if len(per_layer) == 1:
        return dict(zip(nodes, per_layer[0]))
    return {node: list(vals) for node, vals in zip(nodes, zip(*per_layer))}
