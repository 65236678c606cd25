"""The ``fgl`` command: one module per sub-command, each with ``add(sub)``
(its arguments) and ``run(args)`` (what it does), listed in ``COMMANDS``.

Every user mistake ends in a one-line ``file:line[:col]: message`` on stderr
and a non-zero exit status, never a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import warnings

from fgl import __version__
from fgl.errors import FglError, TrainingError, shorten
from fgl.io.conll import ShortLineWarning

COMMANDS = ("train", "tag", "eval", "compare", "inspect", "check", "draw", "explain",
            "convert")

EPILOG = """\
examples:
  fgl check stdlib/hmm_like.fgl
  fgl explain stdlib/high_order.fgl --train train.txt
  fgl train stdlib/hmm_like.fgl --train train.txt --dev dev.txt -o chunker.fglm
  fgl tag chunker.fglm test.txt > tagged.txt
  fgl eval chunker.fglm test.txt
  fgl compare chunker.fglm other.fglm test.txt
  fgl inspect chunker.fglm --top 5
  fgl convert crfpp template --columns word,pos,chunk -o chunk.fgl

A spec names the data columns (`columns word, pos, chunk`), the label column
(`output chunk`), observation functions (`obs w = word[t-2..t+2]`) and clique
templates (`template trans: y[t-1..t]`); see stdlib/ and README.md.
"""


def _command(name: str):
    return importlib.import_module(f"fgl.cli.{name}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command in ``COMMANDS``."""
    p = argparse.ArgumentParser(
        prog="fgl", description="fgl: conditional random fields written as text files.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"fgl {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        _command(name).add(sub)
    return p


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Data warnings (--short-lines) as one plain line on stderr."""
    if issubclass(category, ShortLineWarning):
        if str(message) not in _shown:  # a file streamed twice warns once
            _shown.add(str(message))
            print(f"fgl: warning: {message}", file=sys.stderr)
    else:
        _default_show(message, category, filename, lineno, file, line)


_default_show = warnings.showwarning
_shown: set[str] = set()


@contextlib.contextmanager
def _memory_budget(size: str | None):
    """``--max-memory`` in force while a command runs (then the one before)."""
    if size is None:
        yield
        return
    from fgl.compile.budget import parse_size, set_memory_budget

    previous = set_memory_budget(parse_size(size, "--max-memory"))
    try:
        yield
    finally:
        set_memory_budget(previous)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = _command(args.command).run
    try:
        with warnings.catch_warnings(), _memory_budget(getattr(args, "max_memory", None)):
            warnings.simplefilter("always", ShortLineWarning)
            warnings.showwarning = _show_warning
            return command(args) or 0
    except FglError as e:   # 2: a user error; 1: the input was fine, the run was not
        print(f"fgl: {shorten(str(e), 2000)}", file=sys.stderr)
        return 1 if isinstance(e, TrainingError) else 2
    except KeyboardInterrupt:
        print("fgl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `fgl eval ... | head`: the reader left; say nothing
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0

