"""``fgl eval``: score a trained model on labelled data."""
from __future__ import annotations

import argparse

from fgl.cli.options import data_args, label_list
from fgl.cli.reporting import add_scheme_arg, report, report_tagged

GRAPHS = ("graphs (JSON lines): each node whose label the model is not given is scored -- "
          "every node of a graph labelled on every node; in a partially labelled graph "
          "(within-network classification: some labels null), the nodes marked "
          "\"withheld\": true, whose labels are the answers, while the other given labels are "
          "clamped as evidence. Such a file is the graph with every label and the held-out "
          "nodes marked; `fgl convert linqs --withhold F --gold-out FILE` writes one "
          "(docs/evaluation.md, Graphs and withheld labels).")


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate a model on labelled data, or a tagged file",
                       description="Token (word) and sequence accuracy, conlleval-style "
                                   "per-chunk-type P/R/F1 under a tag scheme (BIO, IOB1, "
                                   "IOBES, IO), segment P/R/F1 (--scheme runs), or for plain "
                                   "labels per-label P/R/F1 with micro and macro averages; "
                                   "every output layer of the model; --confusion adds the "
                                   "confusion matrix. Every score is a percentage. "
                                   "`fgl eval --tagged FILE` scores a file already tagged "
                                   "(gold and predicted labels its last two columns), as "
                                   "conlleval does.",
                       epilog=GRAPHS)
    p.add_argument("model", nargs="?", help="a model file written by `fgl train` (none with "
                                            "--tagged)")
    p.add_argument("file", nargs="?",
                   help="labelled data (CoNLL columns, gold label last; or JSON-lines "
                        "graphs, where nodes marked \"withheld\": true are scored and the "
                        "other labels given as evidence); - for standard input")
    p.add_argument("--tagged", metavar="FILE",
                   help="score FILE without a model: its last two columns are the gold and "
                        "the predicted labels, as conlleval reads them (e.g. `fgl tag` output "
                        "of labelled data); - for standard input")
    add_scheme_arg(p, "how tags make chunks: bio (IOB2: B-X starts a chunk), iob1 (CoNLL-2003: "
                      "I-X starts one unless after X; B-X between two chunks of type X), iobes "
                      "(B-, I-, E-, S-; BILOU's L-, U- too), io (each run of I-X), iob (any mix "
                      "of prefixes and bare labels), plain (no chunks: per-label scores with "
                      "micro and macro averages), runs (each maximal run of one label is a "
                      "segment); auto (default): runs for a segment model `from change`, else "
                      "from the tags (docs/evaluation.md). Untyped tags (B, I, O; E, S) are "
                      "chunks of one type, as conlleval reads them. LAYER=SCHEME sets one "
                      "output layer's (e.g. --scheme chunk=bio); repeatable")
    p.add_argument("--ignore", action="append", metavar="LABEL",
                   help="a label (chunk type) that is not a chunk or segment, and under plain "
                        "is left out of the averages; repeatable; replaces the default O "
                        "(--ignore '' ignores nothing)")
    p.add_argument("--labels", action="extend", type=label_list, metavar="L1,L2,...",
                   help="also print the micro-averaged token-level P/R/F1 over these labels "
                        "(e.g. the punctuation measure); repeatable")
    p.add_argument("--label", action="append", dest="labels", metavar="LABEL",
                   help="one label for --labels, taken as is (for labels with a comma: "
                        "--label , --label . --label '?'); repeatable")
    p.add_argument("--docstart-tokens", action="store_true",
                   help="count each -DOCSTART- line of the data as a token tagged right, as "
                        "conlleval.pl does (its token count and accuracy; chunk scores do not "
                        "change); by default such a line is a document boundary, not a token")
    p.add_argument("--confusion", action="store_true",
                   help="also print the confusion matrix of the labels (rows gold, columns "
                        "predicted; a wide label set keeps its most frequent labels and "
                        "merges the rest into (other))")
    p.add_argument("-o", "--output", dest="picture", metavar="PICTURE",
                   help="with --confusion: draw the matrix into PICTURE (.png, .svg or .pdf; "
                        "one file per output layer, NAME.LAYER.png, for several) instead of "
                        "printing it; needs matplotlib (pip install 'fgl[plot]')")
    data_args(p)


def run(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.errors import FglError
    from fgl.evaluation.confusion import check_picture_path
    from fgl.io.safe_files import check_output
    from fgl.io.sources import expand

    if a.picture is not None:
        if not a.confusion:
            raise FglError("-o draws the confusion matrix: add --confusion")
        check_picture_path(a.picture)
        check_output(a.picture, "confusion matrix picture", [
            (a.model, "the model"), (a.file and expand(a.file), "the data"),
            (a.tagged, "the tagged file")])
    if a.tagged is not None:
        if a.model is not None:
            raise FglError(f"--tagged {a.tagged} scores that file's own last two columns (gold, "
                           f"predicted): give no model (found {a.model!r}), as in "
                           "`fgl eval --tagged FILE`")
        report_tagged(a.tagged, a)
        return
    if a.model is None or a.file is None:
        raise FglError("fgl eval MODEL FILE scores a model on labelled data; fgl eval --tagged "
                       "FILE scores a file already tagged (gold and predicted labels its last "
                       "two columns)")
    report(CRF.load(a.model, jobs=a.jobs), a.file, a)
