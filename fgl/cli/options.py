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


def lexicon_path_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--lexicon-path", action="append", metavar="FOLDER",
                    help="also read the spec's lexicon files from under FOLDER (by default "
                         "only from under the spec's own folder; docs/files.md); repeatable")


# codecs Python knows as text encodings that cannot read a data file (they code domain
# names, or nothing): refused by name
_NOT_FOR_FILES = {"idna", "punycode", "undefined"}


def encoding_arg(text: str) -> str:
    """``--encoding``: a text encoding Python knows and a file can be in."""
    import codecs

    try:
        info = codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(
            f"unknown encoding {text!r}; give a text encoding such as utf-8, latin-1, cp1252 "
            "or utf-16") from None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_FOR_FILES:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an encoding a text file can be in; give one such as utf-8, "
            "latin-1, cp1252 or utf-16")
    return text


MAX_WHOLE = 2**31 - 1   # the largest whole number an option takes (as a spec's settings)


def whole_arg(text: str) -> int:
    """A whole-number option (``--max-iter``, ``--trials``, ...): at most
    ``MAX_WHOLE`` either way, so that no count reaches a kernel's machine
    integers (the option's own check says what else it must be)."""
    from fgl.errors import shorten

    long = len(text) > 100 and text.strip().lstrip("+-").isdigit()   # (int() fails past 4,300)
    try:
        value = None if long else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, found {shorten(repr(text), 60)}"
                                         ) from None
    if value is None or abs(value) > MAX_WHOLE:
        raise argparse.ArgumentTypeError(f"{shorten(text, 60)} is beyond the largest whole number "
                                         f"fgl takes ({MAX_WHOLE})")
    return value


def seed_arg(text: str) -> int:
    """``--seed``: a whole number from 0 (what numpy's generators take)."""
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0, found {text!r}") \
            from None
    if seed < 0:
        raise argparse.ArgumentTypeError(f"a seed is a whole number from 0, found {seed}")
    return seed


def data_args(sp: argparse.ArgumentParser) -> None:
    memory_arg(sp)
    sp.add_argument("--encoding", default="utf-8", type=encoding_arg,
                    help="text encoding of data files (default utf-8; e.g. latin-1)")
    short_lines_arg(sp)
    sp.add_argument("--jobs", type=whole_arg, default=None,
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


def spec_file(spec: str) -> str:
    """The file a spec argument names, for the checks that an output is not
    one of the inputs: ``stdlib:NAME`` is the installed spec file (an unknown
    name is left as given, for the command to report)."""
    from fgl.errors import FglError
    from fgl.lang.stdlib import is_stdlib_name, resolve_spec_path

    if not is_stdlib_name(spec):
        return spec
    try:
        return str(resolve_spec_path(spec))
    except FglError:
        return spec
