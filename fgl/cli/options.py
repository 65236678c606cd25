"""Options shared by several ``fgl`` commands."""
from __future__ import annotations

import argparse

from fgl.io.conll import SHORT_LINES


def short_lines_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--short-lines", choices=SHORT_LINES, default="error",
                    help="a token line with fewer fields than the others: refuse it "
                         "(error, the default), pad its missing middle columns with '_' "
                         "keeping the first field and the label (pad), or drop it (skip); "
                         "pad and skip print how many lines they mended")


def memory_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--max-memory", metavar="SIZE",
                    help="memory a model may take (e.g. 4G, 500M; default: FGL_MAX_MEMORY, "
                         "else half the machine's); a larger one is refused at the template "
                         "responsible, before anything is allocated")


def data_args(sp: argparse.ArgumentParser) -> None:
    memory_arg(sp)
    sp.add_argument("--encoding", default="utf-8",
                    help="text encoding of data files (default utf-8; e.g. latin-1)")
    short_lines_arg(sp)
    sp.add_argument("--jobs", type=int, default=None,
                    help="threads for per-sequence work (0 = every core; default: the "
                         "spec's `train { jobs = N }`, else every core)")


def label_list(text: str) -> list[str]:
    """The labels of ``--labels L1,L2,...``."""
    labels = text.split(",")
    if "" in labels:
        raise argparse.ArgumentTypeError(
            f"empty label in {text!r}; give a label with a comma in it with --label, "
            "as in --label ,")
    return labels

