"""The ``fgl`` command: one module per sub-command, each with ``add(sub)``
(its arguments) and ``run(args)`` (what it does), listed in ``COMMANDS``.

Every user mistake ends in a one-line ``file:line[:col]: message`` on stderr
and a non-zero exit status, never a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import io
import os
import sys
import warnings

from fgl import __version__
from fgl.errors import FglError, IterationLimitWarning, TrainingError, shorten
from fgl.io.conll import ShortLineWarning
from fgl.lang.lexicons import lexicon_folders
from fgl.stopping import Interrupted

COMMANDS = ("train", "tag", "eval", "compare", "inspect", "dump", "check", "draw", "explain",
            "convert", "report")

EPILOG = """\
examples:
  fgl check stdlib/hmm_like.fgl
  fgl explain stdlib/high_order.fgl --train train.txt
  fgl train stdlib/hmm_like.fgl --train train.txt --dev dev.txt -o chunker.fglm
  fgl tag chunker.fglm test.txt > tagged.txt
  fgl eval chunker.fglm test.txt
  fgl compare chunker.fglm other.fglm test.txt
  fgl inspect chunker.fglm --top 5
  fgl report chunker.fglm test.txt -o report.html
  fgl dump chunker.fglm --non-zero > weights.tsv
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
    """Data warnings (--short-lines) and a training run's stop at its
    iteration limit as one plain line on stderr."""
    if issubclass(category, IterationLimitWarning):
        print(f"fgl: warning: {message}", file=sys.stderr)
    elif issubclass(category, ShortLineWarning):
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
    from fgl.compile.budget import set_memory_budget
    from fgl.sizes import parse_size

    previous = set_memory_budget(parse_size(size, "--max-memory"))
    try:
        yield
    finally:
        set_memory_budget(previous)


def _cap_jobs(args: argparse.Namespace) -> None:
    """``--jobs`` beyond the cores: every core, with a note."""
    from fgl.engines.parallel import cores

    jobs = getattr(args, "jobs", None)
    if isinstance(jobs, int) and jobs > cores():
        print(f"fgl: note: --jobs {jobs} is more than the {cores()} cores this machine gives "
              f"fgl; using {cores()}", file=sys.stderr)
        args.jobs = cores()


def _say(text: str) -> None:
    """A line on stderr, if stderr can still take one."""
    try:
        print(text, file=sys.stderr)
    except (OSError, ValueError):
        pass


def _quiet_stdout() -> None:
    """Send what standard output still holds nowhere (its reader left, or
    its disk is full): the interpreter's last flush must not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


def _out_of_memory(e: MemoryError) -> str:
    """A MemoryError (what the estimates before allocation did not foresee)
    in words, located at the fgl function that asked for the memory (the
    innermost frame inside fgl), with the budget in force."""
    from fgl.compile.budget import budget_source, memory_budget
    from fgl.sizes import format_size

    where, tb = "", e.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if f"{os.sep}fgl{os.sep}" in code.co_filename:
            where = (f" in {code.co_name} ({os.path.basename(code.co_filename)}:"
                     f"{tb.tb_lineno})")
        tb = tb.tb_next
    try:
        budget = f"{format_size(memory_budget())} memory budget ({budget_source()})"
    except FglError:
        budget = "memory budget"
    return (f"ran out of memory{where}, which fgl's estimates before allocation did not "
            f"foresee (the {budget}); use a smaller model or data (fewer labels, patterns or "
            f"observations, shorter sequences or `segments max`), and a --max-memory the "
            f"machine can hold, so that a model too large is refused before it is made")


class _ClosedStream(io.TextIOBase):
    """Standard output or input where the process was started without one
    (``fgl tag ... >&-``): using it is an OSError naming it (as a full disk
    behind stdout is: ``main`` says it in one line), writing nothing
    anywhere else."""

    def __init__(self, name: str, use: str):
        self.name, self.use = name, use

    def _closed(self, *args, **kwargs):
        raise OSError(errno.EBADF, f"it is closed (the command was started with "
                                   f"{'>&-' if self.name == '<stdout>' else '<&-'}); {self.use}",
                      self.name)

    write = read = readline = writelines = _closed

    @property
    def buffer(self):
        return self

    def flush(self) -> None:
        pass


@contextlib.contextmanager
def _standard_streams():
    """Stand-ins for standard streams the process was started without:
    a closed stdout or stdin is a message where the command uses it; a
    closed stderr loses fgl's messages but never sends them to stdout."""
    saved = sys.stdin, sys.stdout, sys.stderr
    if sys.stdout is None:
        sys.stdout = _ClosedStream("<stdout>", "give -o FILE where the command has it, or "
                                               "redirect standard output (> FILE, > /dev/null)")
    if sys.stdin is None:
        sys.stdin = _ClosedStream("<stdin>", "give a file name instead of -")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
    try:
        yield
    finally:
        if saved[2] is None:
            sys.stderr.close()
        sys.stdin, sys.stdout, sys.stderr = saved


def _numba_environment() -> None:
    """Refuse numba settings from the environment that numba fails on (a
    traceback at its import) or that fgl cannot run under; before numba is
    imported."""
    threads = os.environ.get("NUMBA_NUM_THREADS")
    if threads is not None and not (threads.strip().isdigit() and int(threads) >= 1):
        raise FglError(f"NUMBA_NUM_THREADS: {shorten(repr(threads), 60)} is not a number of "
                       "threads; set a whole number from 1, or unset it (numba then uses "
                       "every core)")
    jit = os.environ.get("NUMBA_DISABLE_JIT", "").strip()
    if jit and not (jit.isdigit() and int(jit) == 0):
        raise FglError(f"NUMBA_DISABLE_JIT: {shorten(repr(jit), 60)}: fgl's kernels need "
                       "numba's compiler (without it they would run as Python, thousands of "
                       "times slower); unset it or set 0")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)   # (--help with stdout closed: on stderr)
    with _standard_streams():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    command = _command(args.command).run
    try:
        _numba_environment()
        with warnings.catch_warnings(), _memory_budget(getattr(args, "max_memory", None)), \
                lexicon_folders(getattr(args, "lexicon_path", None) or ()):
            warnings.simplefilter("always", ShortLineWarning)
            warnings.simplefilter("always", IterationLimitWarning)
            warnings.showwarning = _show_warning
            _cap_jobs(args)
            try:
                code = command(args) or 0
            except MemoryError as e:   # (said while the command's budget is in force)
                _say(f"fgl: {args.command}: {_out_of_memory(e)}")
                return 1
            sys.stdout.flush()   # (a full disk behind stdout is found here, not at exit)
            return code
    except FglError as e:   # 2: a user error; 1: the input was fine, the run was not
        _say(f"fgl: {shorten(str(e), 2000)}")
        return 1 if isinstance(e, TrainingError) else 2
    except Interrupted as e:   # a signal before training began (fgl.cli.train)
        _say(f"fgl: {e}")
        return e.status
    except KeyboardInterrupt:
        _say("fgl: interrupted")
        return 130
    except BrokenPipeError:  # e.g. `fgl eval ... | head`: the reader left; say nothing
        _quiet_stdout()
        return 0
    except OSError as e:    # writing standard output (a full disk, a lost terminal), or else
        if e.filename is not None:
            _say(f"fgl: {e.filename}: {e.strerror or e}")
        elif e.errno in _WRITE_ERRORS:   # (files fgl writes say so by name: fgl.io.safe_files)
            _say(f"fgl: <stdout>: cannot write the output: {e.strerror or e}")
            _quiet_stdout()
        else:
            _say(f"fgl: {e.strerror or e}")
        return 1


_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}

