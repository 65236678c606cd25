"""The regular expressions of ``regex(e, "...")``, run in linear time.

A spec — or the spec a model file carries — may come from anyone, and
Python's ``re`` backtracks: ``^(a+)+$`` takes exponential time on
``aaaa...ab``.  fgl therefore never runs a spec's pattern with ``re``.  It
reads the pattern with Python's own parser (so the syntax, the escapes and
the flags are Python's), rewrites it into RE2's syntax, and runs it with
RE2 (the ``google-re2`` package, a core dependency for this reason), whose
matching time is linear in the text whatever the pattern.

The rewrite keeps Python's meaning: ``\\d``, ``\\w``, ``\\s`` and their
negations become the exact sets of code points Python's ``re`` gives them
(RE2's own are ASCII only), ``(?i)``, ``(?m)``, ``(?s)``, ``(?a)`` and
``(?x)`` act as in Python.  What RE2 cannot run in linear time — or at all —
is refused with a message saying so (``check_regex``), at ``fgl check``
time and when a model file is read:

* backreferences (``\\1``, ``(?P=name)``) and conditionals (``(?(1)a|b)``);
* lookahead and lookbehind (``(?=...)``, ``(?!...)``, ``(?<=...)``,
  ``(?<!...)``);
* atomic groups (``(?>...)``) and possessive quantifiers (``a*+``);
* ``\\b`` and ``\\B`` without the ASCII flag (RE2's word boundary is ASCII
  only; ``(?a)\\bword\\b`` is accepted);
* repetition counts above 1000 (``a{1001}``), or nested counts whose
  product RE2 will not compile, and patterns too large for RE2's memory
  limit;
* a spec whose patterns, rewritten, come to more than ``FGL_MAX_REGEX``
  characters in all (``RegexTotal``, checked by ``fgl.lang.checks`` before
  any is compiled).

One difference remains and is documented: without ``(?m)``, ``$`` matches
only at the very end of the text (Python's also before a final newline;
tokens hold no newline).
"""
from __future__ import annotations

import os
from functools import lru_cache
from typing import Callable

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]
import re

MAX_COUNT = 1000          # RE2's largest repetition count
MAX_PATTERN = 10_000      # characters of one pattern
TOTAL_ENV, DEFAULT_TOTAL = "FGL_MAX_REGEX", 8 << 20   # characters of one spec's, rewritten

_I, _M, _S, _A = (re.IGNORECASE.value, re.MULTILINE.value, re.DOTALL.value, re.ASCII.value)


class RegexRefused(ValueError):
    """A pattern fgl will not run; ``str(e)`` says why."""


# ---------------------------------------------------------------- Python's classes as code points

@lru_cache(maxsize=None)
def _unicode_class(name: str) -> tuple[tuple[int, int], ...]:
    """The code-point ranges Python's ``re`` matches with ``\\d``, ``\\w`` or
    ``\\s`` on str (found by running ``re`` itself over every code point)."""
    return tuple((m.start(), m.end() - 1) for m in re.finditer(f"\\{name}+", _every()))


@lru_cache(maxsize=1)
def _every() -> str:
    return "".join(map(chr, range(0x110000)))


_ASCII_CLASS = {"d": ((0x30, 0x39),),
                "w": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
                "s": ((0x09, 0x0D), (0x20, 0x20))}
_CATEGORIES = {"CATEGORY_DIGIT": ("d", False), "CATEGORY_NOT_DIGIT": ("d", True),
               "CATEGORY_WORD": ("w", False), "CATEGORY_NOT_WORD": ("w", True),
               "CATEGORY_SPACE": ("s", False), "CATEGORY_NOT_SPACE": ("s", True)}


def _complement(ranges) -> tuple[tuple[int, int], ...]:
    out, at = [], 0
    for lo, hi in ranges:
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= 0x10FFFF:
        out.append((at, 0x10FFFF))
    return tuple(out)


def _category(code: str, ascii_only: bool) -> tuple[tuple[int, int], ...]:
    name, negated = _CATEGORIES[code]
    ranges = _ASCII_CLASS[name] if ascii_only else _unicode_class(name)
    return _complement(ranges) if negated else ranges


@lru_cache(maxsize=None)
def _category_text(code: str, ascii_only: bool) -> str:
    """``_category``'s ranges in RE2 class syntax (written once)."""
    return "".join(_range(lo, hi) for lo, hi in _category(code, ascii_only))


def _char(c: int) -> str:
    ch = chr(c)
    return ch if ch.isascii() and ch.isalnum() else f"\\x{{{c:X}}}"


def _range(lo: int, hi: int) -> str:
    return _char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}"


# ---------------------------------------------------------------- the rewrite

_REFUSED = {
    "GROUPREF": "a backreference (\\1, (?P=name))",
    "GROUPREF_EXISTS": "a conditional group ((?(1)...|...))",
    "ATOMIC_GROUP": "an atomic group ((?>...))",
    "POSSESSIVE_REPEAT": "a possessive quantifier (*+, ++, ?+, {m,n}+)",
}


def _refuse(what: str) -> RegexRefused:
    return RegexRefused(f"{what} cannot be matched in linear time; fgl runs regular "
                        "expressions with RE2, which has none (docs/language.md, "
                        "'Regular expressions')")


class _Room:
    """The characters a rewrite may still write (``translate``'s ``room``):
    taking more raises RegexRefused as soon as they run out, so a pattern
    whose rewrite is too long costs no more than the room to find out."""

    def __init__(self, chars: int | None):
        self.left = chars

    def take(self, text: str) -> str:
        if self.left is not None:
            self.left -= len(text)
            if self.left < 0:
                raise RegexRefused("rewritten for RE2 it passes the characters left to the "
                                   "spec's regular expressions")
        return text


def _rewrite(items, flags: int, room: _Room) -> str:
    """RE2 syntax for the parsed ``items`` under Python ``flags``."""
    out = []
    for op, av in items:
        name = op.name
        if name == "LITERAL":
            out.append(room.take(_char(av)))
        elif name == "NOT_LITERAL":
            out.append(room.take(f"[^{_char(av)}]"))
        elif name == "ANY":
            out.append(room.take("."))
        elif name == "IN":
            out.append(_class(av, flags, room))
        elif name == "BRANCH":
            out.append("(?:" + "|".join(_rewrite(b, flags, room) for b in av[1]) + ")")
        elif name == "SUBPATTERN":
            _group, add, delete, sub = av
            inner = _rewrite(sub, (flags | add) & ~delete, room)
            on = "".join(f for f, bit in (("i", _I), ("m", _M), ("s", _S)) if add & bit)
            off = "".join(f for f, bit in (("i", _I), ("m", _M), ("s", _S)) if delete & bit)
            out.append(f"(?{on}-{off}:{inner})" if off else f"(?{on}:{inner})")
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            lo, hi, sub = av
            if lo > MAX_COUNT or (hi is not _c.MAXREPEAT and hi > MAX_COUNT):
                raise RegexRefused(f"a repetition count above {MAX_COUNT} "
                                   f"({{{lo}{'' if hi == lo else ','}"
                                   f"{'' if hi == lo or hi is _c.MAXREPEAT else hi}}}); "
                                   "fgl's regular expressions (RE2) allow at most "
                                   f"{MAX_COUNT}")
            body = f"(?:{_rewrite(sub, flags, room)})"
            if hi is _c.MAXREPEAT:
                q = "*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}"
            else:
                q = "?" if (lo, hi) == (0, 1) else f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"
            out.append(body + q)
        elif name == "AT":
            at = av.name
            if at in ("AT_BOUNDARY", "AT_NON_BOUNDARY"):
                if not flags & _A:
                    which = "\\b" if at == "AT_BOUNDARY" else "\\B"
                    raise RegexRefused(
                        f"{which} (a word boundary) is "
                        "only allowed with the ASCII flag, as in (?a)\\bword\\b: fgl's "
                        "linear-time engine (RE2) knows ASCII word boundaries only; a token "
                        "is one word anyway, so ^ and $ usually say it")
                out.append("\\b" if at == "AT_BOUNDARY" else "\\B")
            else:
                out.append({"AT_BEGINNING": "^", "AT_BEGINNING_STRING": "\\A",
                            "AT_END": "$", "AT_END_STRING": "\\z"}[at])
        elif name in ("ASSERT", "ASSERT_NOT"):
            direction = av[0]
            raise _refuse(("a lookahead ((?=...), (?!...))" if direction == 1 else
                           "a lookbehind ((?<=...), (?<!...))"))
        elif name in _REFUSED:
            raise _refuse(_REFUSED[name])
        else:  # pragma: no cover - an opcode of a later Python
            raise RegexRefused(f"the construct {name} is not supported")
    return "".join(out)


def _class(items, flags: int, room: _Room) -> str:
    negate, parts = False, []
    for op, av in items:
        name = op.name
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            parts.append(room.take(_char(av)))
        elif name == "RANGE":
            parts.append(room.take(_range(*av)))
        elif name == "CATEGORY":
            parts.append(room.take(_category_text(av.name, bool(flags & _A))))
        else:  # pragma: no cover
            raise RegexRefused(f"the class item {name} is not supported")
    if not parts:
        return "[^\\x{0}-\\x{10FFFF}]" if not negate else "[\\x{0}-\\x{10FFFF}]"
    return ("[^" if negate else "[") + "".join(parts) + "]"


def translate(pattern: str, room: int | None = None) -> str:
    """``pattern`` (Python syntax) in RE2 syntax, with Python's meaning; a
    RegexRefused saying why when it cannot be (module docstring), or when
    its rewrite would pass ``room`` characters (None: any)."""
    if len(pattern) > MAX_PATTERN:
        raise RegexRefused(f"a pattern of {len(pattern):,} characters; fgl's regular "
                           f"expressions are at most {MAX_PATTERN:,}")
    try:
        parsed = _p.parse(pattern)
    except re.error as e:
        raise RegexRefused(f"not a valid regular expression: {e}") from None
    except RecursionError:
        raise RegexRefused("nested too deeply") from None
    flags = parsed.state.flags
    try:
        body = _rewrite(parsed, flags, _Room(room))
    except RecursionError:
        raise RegexRefused("nested too deeply") from None
    on = "".join(f for f, bit in (("i", _I), ("m", _M), ("s", _S)) if flags & bit)
    return f"(?{on}){body}" if on else body


# ---------------------------------------------------------------- running it

def _engine():
    try:
        import re2
        from re2 import _re2
    except ImportError as e:  # pragma: no cover - a core dependency
        raise RegexRefused("the package google-re2, with which fgl runs regular "
                           f"expressions, is not installed ({e}); pip install google-re2"
                           ) from None
    return re2, _re2


@lru_cache(maxsize=256)
def compile_regex(pattern: str) -> Callable[[str], bool]:
    """A test ``text -> bool``: does ``pattern`` match somewhere in the text
    (Python's ``re.search``), in time linear in the text.  RegexRefused when
    the pattern is one fgl does not run (module docstring)."""
    rewritten = translate(pattern)
    re2, _re2 = _engine()
    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    rx = _re2.RE2(rewritten.encode("utf-8"), options)
    if not rx.ok():
        why = rx.error()
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise RegexRefused(f"too large or complex for fgl's linear-time engine (RE2: {why})")
    match, unanchored = rx.Match, _re2.RE2.Anchor.UNANCHORED
    seen: dict[str, bool] = {}

    def test(text: str) -> bool:
        hit = seen.get(text)
        if hit is None:
            try:
                b = text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate
                b = text.encode("utf-8", "surrogatepass")
            hit = match(unanchored, b, 0, len(b))[0][0] >= 0
            if len(text) <= 64:     # remember short texts (words repeat), never many
                if len(seen) >= 1 << 16:
                    seen.clear()
                seen[text] = hit
        return hit

    return test


def check_regex(pattern: str) -> str | None:
    """Why fgl will not run ``pattern`` (None: it will)."""
    try:
        compile_regex(pattern)
    except RegexRefused as e:
        return str(e)
    return None


def total_limit() -> int:
    """The most characters one spec's regular expressions may come to once
    rewritten for RE2: ``FGL_MAX_REGEX`` when set, else 8 MiB."""
    from fgl.sizes import parse_size

    given = os.environ.get(TOTAL_ENV)
    return parse_size(given, TOTAL_ENV) if given else DEFAULT_TOTAL


class RegexTotal:
    """The rewritten length of a spec's patterns, pattern by pattern, within
    ``total_limit()``: compiling a pattern takes time and memory in
    proportion to it (each ``\\w`` is 11,553 characters of Python's code
    points), so a hundred patterns of 9,900 characters took 45 s to check
    and a thousand 1.76 GB."""

    def __init__(self) -> None:
        self.limit = total_limit()
        self.used = 0
        self.seen: set[str] = set()

    def charge(self, pattern: str) -> str | None:
        """Count ``pattern`` (once, however often the spec uses it); why it
        passes the total (None: it fits).  A pattern fgl refuses on its own
        is left to ``check_regex``."""
        if pattern in self.seen:
            return None
        self.seen.add(pattern)
        try:
            self.used += len(translate(pattern, self.limit - self.used))
        except RegexRefused as e:
            if str(e).startswith("rewritten for RE2"):
                return (f"the spec's regular expressions, rewritten for RE2, pass the "
                        f"{self.limit:,} characters fgl compiles for one spec here (each \\w, "
                        "\\d or \\s is spelled out as Python's code points: \\w alone is "
                        f"11,553; (?a) keeps them ASCII); set {TOTAL_ENV} (e.g. "
                        f"{TOTAL_ENV}=64M) to allow more")
        return None
