"""Parse a model spec into the AST of ``fgl.lang.ast``.

The syntax lives in ``grammar/fgl.lark``; this module only turns lark's parse
tree into AST nodes (one Transformer method per grammar rule) and lark's
exceptions into ``SpecError`` messages a spec author can act on.  It is one
module because both halves follow the grammar rule by rule: the
Transformer's methods and the wording of what each rule expected.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.lexer import PatternStr

from fgl.errors import FglError, SpecError, shorten
from fgl.lang.ast import (
    Aggregate,
    Call,
    Column,
    ColumnRef,
    Conj,
    Disj,
    Hidden,
    LabelRef,
    Loc,
    NameRef,
    ObsDef,
    PatternSpec,
    Predicate,
    Segments,
    Setting,
    Spec,
    Template,
)
from fgl.lang.peer_templates import crfpp_template_line, crfpp_template_message

GRAMMAR_PATH = Path(__file__).parent.parent / "grammar" / "fgl.lark"

_LARK = Lark(GRAMMAR_PATH.read_text(encoding="utf-8"), parser="lalr", lexer="contextual",
             propagate_positions=True, maybe_placeholders=False)


class _Located:
    """What the ``Located*`` values below share over their built-in bases
    (str, int, float, tuple): ``.loc``, where the value was written, set on
    construction; a pickle or copy holds the plain value."""
    loc: Loc

    def __new__(cls, value, loc: Loc):
        self = super().__new__(cls, value)
        self.loc = loc
        return self

    def __reduce__(self):
        plain = type(self).__mro__[-2]  # the built-in base: the last class before object
        return (plain, (plain(self),))


class Located(_Located, str):
    """A string that remembers where it was written (``.loc``).

    Used for names and labels, whose AST slots are plain ``str`` with no Loc
    of their own, so the checker can point at the offending token.  It equals,
    hashes and pickles exactly like the plain string.
    """


class LocatedInt(_Located, int):
    """A whole number that remembers where it was written (``.loc``); used
    for the numbers of a `segments` statement.  Equal to the plain int."""


class LocatedFloat(_Located, float):
    """A float that remembers where it was written (``.loc``)."""


class LocatedTuple(_Located, tuple):
    """A pattern tuple that remembers where it was written (``.loc``)."""


def _unquote(s: str) -> str:
    """Decode a double-quoted string: \\" \\\\ \\n \\t are escapes; any other
    backslash is kept, so regexes such as "\\d+" read naturally."""
    out, body, i = [], s[1:-1], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({'"': '"', "\\": "\\", "n": "\n", "t": "\t"}.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


@v_args(meta=True)
class _ToAst(Transformer):
    """Parse tree -> AST.  Statements come back as ``(kind, loc, payload)``;
    ``start`` assembles the Spec."""

    def __init__(self, file: str, text: str):
        super().__init__()
        self.file, self.text = file, text

    def _loc(self, x) -> Loc:
        return Loc(self.file, x.line, x.column)

    def _name(self, tok: Token) -> Located:
        return Located(str(tok), self._loc(tok))

    def _int(self, tok: Token) -> int:
        """A whole number written in the spec; one of more than
        ``MAX_DIGITS`` digits is refused at its place (Python's ``int``
        itself fails past 4,300)."""
        text = str(tok)
        digits = text.lstrip("+-").lstrip("0")
        if len(digits) > MAX_DIGITS:
            loc = self._loc(tok)
            raise SpecError(f"a whole number of {len(digits):,} digits ({shorten(text, 40)}); "
                            f"a spec's numbers have at most {MAX_DIGITS:,}", loc.file, loc.line,
                            loc.col)
        return -int(digits or "0") if text.startswith("-") else int(digits or "0")

    # ------------------------------------------------------------ statements
    def model(self, meta, ch):
        tok = ch[0]
        return ("model", self._loc(meta), _unquote(tok) if tok.type == "STRING" else str(tok))

    def input(self, meta, ch):
        return ("input", self._loc(meta), self._name(ch[0]))

    def columns(self, meta, ch):
        return ("columns", self._loc(meta), ch)

    def column(self, meta, ch):
        kind = self._name(ch[1]) if len(ch) > 1 else "text"
        return Column(str(ch[0]), kind, self._loc(meta))

    def output(self, meta, ch):
        return ("output", self._loc(meta), [self._name(t) for t in ch])

    def labels(self, meta, ch):
        return ("labels", self._loc(meta), (self._name(ch[0]), ch[1]))

    def hidden(self, meta, ch):
        loc = self._loc(meta)
        return ("hidden", loc, Hidden(self._name(ch[0]), list(ch[1]), loc))

    def label_list(self, meta, ch):
        return LocatedTuple(ch, self._loc(meta))

    def label(self, meta, ch):
        tok = ch[0]
        return Located(_unquote(tok) if tok.type == "STRING" else str(tok), self._loc(tok))

    def segments(self, meta, ch):
        loc = self._loc(meta)
        limits = next((x[1] for x in ch[1:] if isinstance(x, tuple) and x[0] == "limits"), [])
        boundary = next((x[1] for x in ch[1:] if isinstance(x, tuple) and x[0] == "from"), "bio")
        per_label: dict[str, int] = {}
        for label, value in limits:
            if label in per_label:
                first = next(k for k in per_label if k == label).loc
                raise SpecError(f"label '{label}' is given twice in `segments max ...` "
                                f"(first at {first.line}:{first.col})",
                                self.file, label.loc.line, label.loc.col)
            per_label[label] = value
        distinct = any(isinstance(x, tuple) and x[0] == "adjacent" for x in ch[1:])
        return ("segments", loc, Segments(self._number(ch[0]), per_label, boundary, loc, distinct))

    def seg_limits(self, meta, ch):
        return ("limits", ch)

    def seg_limit(self, meta, ch):
        tok = ch[0]
        label = Located(_unquote(tok) if tok.type == "STRING" else str(tok), self._loc(tok))
        return (label, self._number(ch[1]))

    def seg_from(self, meta, ch):
        return ("from", self._name(ch[0]))

    def seg_adjacent(self, meta, ch):
        return ("adjacent", "distinct")

    def _number(self, tok: Token):
        if tok.type == "SIGNED_INT":
            return LocatedInt(self._int(tok), self._loc(tok))
        return LocatedFloat(float(tok), self._loc(tok))

    def obs(self, meta, ch):
        return ("obs", self._loc(meta), ObsDef(self._name(ch[0]), ch[1], self._loc(meta)))

    def template(self, meta, ch):
        name, rest = self._name(ch[0]), ch[1:]
        labels = [x for x in rest if isinstance(x, LabelRef)]
        patterns = next((x for x in rest if isinstance(x, PatternSpec)), None)
        observations = next((x[1] for x in rest if isinstance(x, tuple) and x[0] == "~"), [])
        options = next((x[1] for x in rest if isinstance(x, tuple) and x[0] == "options"), [])
        where = next((x[1] for x in rest if isinstance(x, tuple) and x[0] == "where"), [])
        within = next((x[1] for x in rest if isinstance(x, tuple) and x[0] == "within"), None)
        tpl = Template(name, labels, patterns, observations, options, self._loc(meta),
                       where, within)
        return ("template", self._loc(meta), tpl)

    def where(self, meta, ch):
        return ("where", list(ch))

    def within(self, meta, ch):
        return ("within", self._name(ch[0]))

    def pred_eq(self, meta, ch):
        return Predicate("eq", ch[0], ch[1], None, self._loc(meta))

    def pred_ne(self, meta, ch):
        return Predicate("ne", ch[0], ch[1], None, self._loc(meta))

    def pred_test(self, meta, ch):
        return Predicate("test", ch[0], None, None, self._loc(meta))

    def pred_distance(self, meta, ch):
        return Predicate("distance", None, None, LocatedInt(self._int(ch[0]), self._loc(ch[0])),
                         self._loc(meta))

    def pred_nearest(self, meta, ch):
        return Predicate("nearest", None, None, None, self._loc(meta))

    def pred_edge(self, meta, ch):
        return Predicate("edge", None, None, Located(_unquote(ch[2]), self._loc(ch[2])),
                         self._loc(meta), (ch[0], ch[1]))

    def edge_end(self, meta, ch):
        return str(ch[0])

    def train(self, meta, ch):
        return ("train", self._loc(meta), ch)

    def infer(self, meta, ch):
        return ("infer", self._loc(meta), (self._name(ch[0]), ch[1:]))

    # ------------------------------------------------------------ observations
    def disj(self, meta, ch):
        return Disj(ch, self._loc(meta))

    def conj(self, meta, ch):
        return Conj(ch, self._loc(meta))

    def column_ref(self, meta, ch):
        (lo_base, lo), (hi_base, hi) = ch[1]
        return ColumnRef(str(ch[0]), lo, hi, self._loc(meta), lo_base, hi_base)

    def call(self, meta, ch):
        return Call(str(ch[0]), ch[1], ch[2:], self._loc(meta))

    def name_ref(self, meta, ch):
        return NameRef(str(ch[0]), self._loc(meta))

    def aggregate(self, meta, ch):
        links = [x for x in ch[2:] if isinstance(x, list)]
        within = next((x[1] for x in ch[2:] if isinstance(x, tuple) and x[0] == "within"), None)
        options = [x for x in ch[2:] if isinstance(x, Setting)]
        return Aggregate(self._name(ch[0]), ch[1], [], self._loc(meta), links, within, options)

    def agg_link(self, meta, ch):
        return list(ch)

    def param(self, meta, ch):
        return self._literal(ch[0])

    def col_range(self, meta, ch):
        return (ch[0], ch[-1])

    def col_base(self, meta, ch):
        return str(ch[0])

    def col_at(self, meta, ch):
        return (ch[0], 0)

    def col_plus(self, meta, ch):
        return (ch[0], self._int(ch[1]))

    def col_minus(self, meta, ch):
        return (ch[0], -self._int(ch[1]))

    # ------------------------------------------------------------ templates
    def label_ref(self, meta, ch):
        index, lo, hi = ch[1]
        return LabelRef(str(ch[0]), lo, hi, self._loc(meta), index)

    def t_range(self, meta, ch):
        return ("t", ch[0], ch[-1])

    def j_range(self, meta, ch):
        return ("j", ch[0], ch[-1])

    def i_range(self, meta, ch):
        return ("i", ch[0], ch[-1])

    def a_range(self, meta, ch):
        return ("a", ch[0], ch[-1])

    def b_range(self, meta, ch):
        return ("b", ch[0], ch[-1])

    def at(self, meta, ch):
        return 0

    def plus(self, meta, ch):
        return self._int(ch[0])

    def minus(self, meta, ch):
        return -self._int(ch[0])

    def pat_all(self, meta, ch):
        return PatternSpec("all", [], self._loc(meta))

    def pat_observed(self, meta, ch):
        return PatternSpec("observed", [], self._loc(meta))

    def pat_upto(self, meta, ch):
        return PatternSpec("observed_upto", [], self._loc(meta))

    def pat_list(self, meta, ch):
        return PatternSpec("list", ch, self._loc(meta))

    def observations(self, meta, ch):
        return ("~", ch)

    def options(self, meta, ch):
        return ("options", ch[1:])          # ch[0] is the OPTS_OPEN token

    # ------------------------------------------------------------ settings
    def setting(self, meta, ch):
        return Setting(str(ch[0]), ch[1], self._loc(meta))

    def value(self, meta, ch):
        return self._literal(ch[0])

    def _literal(self, tok: Token):
        if tok.type == "SIGNED_INT":
            return self._int(tok)
        if tok.type == "SIGNED_FLOAT":
            return float(tok)
        if tok.type == "STRING":
            return Located(_unquote(tok), self._loc(tok))
        return Located(str(tok), self._loc(tok))

    # ------------------------------------------------------------ the whole spec
    def start(self, meta, statements):
        spec = Spec(self.file, self.text, None, [], [], [])
        seen: dict[str, Loc] = {}
        for kind, loc, payload in statements:
            if kind in ("model", "input", "columns", "segments", "train", "infer"):
                if kind in seen:
                    first = seen[kind]
                    raise SpecError(f"a second `{kind}` statement; only one is allowed "
                                    f"(the first is at {first.line}:{first.col})",
                                    self.file, loc.line, loc.col)
                seen[kind] = loc
            if kind == "model":
                spec.name = payload
            elif kind == "input":
                spec.input_format = payload
            elif kind == "hidden":
                spec.hidden.append(payload)
            elif kind == "columns":
                spec.columns = payload
            elif kind == "output":
                spec.outputs += payload
                spec.output_locs += [n.loc for n in payload]
            elif kind == "labels":
                name, labels = payload
                if name in spec.label_sets:
                    first = spec.label_sets[name][1]
                    raise SpecError(f"a second `labels {name}` statement; labels for '{name}' "
                                    f"are already declared at {first.line}:{first.col}",
                                    self.file, loc.line, loc.col)
                spec.label_sets[name] = (list(labels), loc)
            elif kind == "segments":
                spec.segments = payload
            elif kind == "obs":
                spec.observations.append(payload)
            elif kind == "template":
                spec.templates.append(payload)
            elif kind == "train":
                spec.train = payload
            elif kind == "infer":
                spec.infer_method = (payload[0], loc)
                spec.infer = payload[1]
        return spec


# ---------------------------------------------------------------- error messages

_WORDS = {
    "NAME": "a name",
    "STRING": 'a "string"',
    "INT": "a whole number",
    "SIGNED_INT": "a number",
    "SIGNED_FLOAT": "a number",
    "LABEL": "a label",
    "SEG_LABEL": "a label",
    "OPTS_OPEN": "'(' opening options",
    "$END": "end of file",
}


def _describe(terminal: str) -> str:
    """A lark terminal name in words: NAME -> 'a name', LSQB -> "'['"."""
    if terminal in _WORDS:
        return _WORDS[terminal]
    try:
        pattern = _LARK.get_terminal(terminal).pattern
    except KeyError:
        return terminal
    return f"'{pattern.value}'" if isinstance(pattern, PatternStr) else terminal.lower()


_STATEMENT_KEYWORDS = {"MODEL", "INPUT", "COLUMNS", "OUTPUT", "LABELS", "HIDDEN", "SEGMENTS",
                       "OBS", "TEMPLATE", "TRAIN", "INFER"}


def _expected(names) -> str:
    names = set(names or ())
    words = []
    if _STATEMENT_KEYWORDS <= names:     # many keywords: say what they mean instead
        names -= _STATEMENT_KEYWORDS | {"$END"}
        words.append(("a new statement (model, input, columns, output, labels, hidden, "
                      "segments, obs, template, train, infer)"))
    words = sorted({_describe(n) for n in names}, key=lambda w: (not w.startswith("'"), w)) + words
    if not words:
        return ""
    if len(words) == 1:
        return f"; expected {words[0]}"
    return f"; expected {', '.join(words[:-1])} or {words[-1]}"


def _accepted(e: UnexpectedToken):
    """The terminals the parser could really take here (lark's ``expected``
    is the LALR state's merged look-ahead set, which can be too wide)."""
    try:
        return e.accepts or e.expected
    except Exception:  # pragma: no cover - accepts needs the interactive parser
        return e.expected


_OPEN_STRING = "'\"' starting a string that is not closed on its line"
# what a ',' where a label may stand means: a comma ends a bare label
_COMMA_LABEL = {
    "LABEL": '; labels are separated by spaces, and one that contains a comma must be quoted, '
             'as in [O "," "."]',
    "SEG_LABEL": '; a label that contains a comma must be quoted, as in [",COMMA" = 3]',
}


def _comma_hint(text: str, tok, accepted: set) -> str:
    """Why a comma was unexpected: a label holding a comma must be quoted."""
    hint = next((h for t, h in _COMMA_LABEL.items() if t in accepted), "")
    if hint:
        return hint
    before = text.splitlines()[tok.line - 1][:tok.column - 1]
    word = re.split(r"[\s\[\](){}=\"]", before)[-1]
    if word:
        return (f'; if the comma belongs to the label, quote the label: "{word},"')
    return ""


def _syntax_error(e: UnexpectedInput, text: str, file: str) -> SpecError:
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            line = getattr(tok, "end_line", None) or e.line or 1
            col = getattr(tok, "end_column", None) or e.column or 1
            if not text.strip():
                line, col = 1, 1
            return SpecError(f"unexpected end of file{_expected(_accepted(e))}", file, line, col)
        found = _OPEN_STRING if tok.value == '"' else f"'{tok.value}'"
        accepted = set(_accepted(e) or ())
        hint = _comma_hint(text, tok, accepted) if tok.value == "," else ""
        return SpecError(f"unexpected {found}{_expected(accepted)}{hint}", file, tok.line,
                         tok.column)
    if isinstance(e, UnexpectedCharacters):
        char = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        found = _OPEN_STRING if char == '"' else f"'{char}'"
        return SpecError(f"unexpected {found}{_expected(e.allowed)}", file, e.line, e.column)
    return SpecError(f"syntax error: {e}", file,
                     getattr(e, "line", 0) or 0, getattr(e, "column", 0) or 0)


# ---------------------------------------------------------------- API

def parse_spec(text: str, file: str = "<spec>") -> Spec:
    """Parse spec ``text`` (named ``file`` in messages) into a ``Spec``.

    Raises ``SpecError`` (``file:line:col: message``) on a syntax error or a
    repeated single statement (`model`, `input`, `columns`, `segments`,
    `train`, `infer`) or a label given twice in `segments max L [...]`.

    Every ``Template`` gets two extra attributes: ``where`` (the list of
    ``Predicate`` of its `where` clause, empty when there is none) and
    ``within`` (``"sentence"``/``"document"`` as written, or None).
    Raises ``TypeError`` when ``text`` is not a string (e.g. an edited
    model file's header)."""
    if not isinstance(text, str):
        raise TypeError(f"a spec's text must be a string, not {type(text).__name__}")
    _check_size(text, file)
    try:
        tree = _LARK.parse(text)
    except UnexpectedInput as e:
        template = crfpp_template_line(text)
        if template is not None:   # a peer's template file, named as such
            raise SpecError(crfpp_template_message(file), file, template, 1) from None
        raise _syntax_error(e, text, file) from None
    except LarkError as e:  # pragma: no cover - defensive: never leak lark errors
        raise SpecError(f"syntax error: {e}", file, 1, 1) from None
    _check_nesting(tree, file)
    try:
        return _ToAst(file, text).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, SpecError):
            raise e.orig_exc from None
        raise


SPEC_LINES_ENV, DEFAULT_SPEC_LINES = "FGL_MAX_SPEC_LINES", 10_000


def spec_line_limit() -> int:
    """The most lines fgl reads in one spec: ``FGL_MAX_SPEC_LINES`` when
    set (a whole number), else 10,000."""
    given = os.environ.get(SPEC_LINES_ENV)
    if not given:
        return DEFAULT_SPEC_LINES
    try:
        limit = int(given.replace("_", "").replace(",", ""))
    except ValueError:
        limit = 0
    if limit < 1:
        raise FglError(f"{SPEC_LINES_ENV}={given!r}: expected a positive whole number of lines, "
                       "as in FGL_MAX_SPEC_LINES=50000")
    return limit


def _check_size(text: str, file: str) -> None:
    """Refuse, before parsing it, a spec of more lines than
    ``spec_line_limit()`` or more characters than ``FGL_MAX_SPEC`` bytes
    (parsing and checking take about 17 µs a character: a 300,000-line spec
    took 83 s and 2.26 GB) — a spec read from a model file or given to the
    API as well as one read from a file (``fgl.data.inputs`` caps those)."""
    from fgl.data.inputs import SPEC_ENV, input_limit
    from fgl.sizes import format_size

    limit = spec_line_limit()
    n = text.count("\n") + (not text.endswith("\n"))
    if n > limit:
        raise SpecError(f"the spec has {n:,} lines, more than the {limit:,} fgl reads in one "
                        f"spec; set {SPEC_LINES_ENV} (e.g. {SPEC_LINES_ENV}={10 * limit}) to "
                        "read more", file, limit + 1, 1)
    size = input_limit(spec=True)
    if len(text) > size:
        raise SpecError(f"the spec has {len(text):,} characters, more than the "
                        f"{format_size(size)} fgl reads in one spec; set {SPEC_ENV} (e.g. "
                        f"{SPEC_ENV}=8M) to read more", file, 1, 1)


MAX_DIGITS = 1000  # digits of a whole number in a spec (int() of more than 4,300 fails)
MAX_NESTING = 100  # parse-tree depth a spec may reach (expressions nest, statements do not)


def _check_nesting(tree: Tree, file: str) -> None:
    """Refuse a parse tree deeper than ``MAX_NESTING`` (e.g. hundreds of
    nested calls) with its place, before recursive passes over it."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            meta = node.meta
            raise SpecError(f"expression nested more than {MAX_NESTING} levels deep; write it "
                            "in steps with named `obs` definitions", file,
                            getattr(meta, "line", 1), getattr(meta, "column", 1))
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))


def read_spec(path) -> Spec:
    """Read, parse and validate the spec file at ``path`` (UTF-8), or the
    stdlib spec ``stdlib:NAME`` (``fgl.lang.stdlib``).  Relative file names
    in the spec (lexicons) are resolved against its directory."""
    from fgl.lang.checks import validate

    text, name, base = read_spec_text(path)
    return validate(parse_spec(text, name), base_dir=base)


def read_spec_text(path) -> tuple[str, str, Path]:
    """The text of the spec at ``path`` (``stdlib:NAME``; ``-``: standard
    input), its name for messages and the folder its relative file names
    are read from.  An FglError says what is wrong: a missing file, a
    folder, a model file given for a spec, text that is not UTF-8."""
    from fgl.data.inputs import STDIN_NAME, is_model_bytes, is_stdin, read_capped, stdin_bytes
    from fgl.lang.stdlib import resolve_spec_path

    if is_stdin(path):
        raw, name, base = stdin_bytes(), STDIN_NAME, Path(".")
    else:
        path = resolve_spec_path(path)
        name, base = str(path), path.parent
        try:
            raw = read_capped(path, spec=True)   # a regular file, at most FGL_MAX_SPEC bytes
        except FileNotFoundError:
            raise FglError(f"{path}: spec file not found") from None
        except IsADirectoryError:
            raise FglError(f"{path}: is a directory, not a spec file") from None
        except OSError as e:
            raise FglError(f"{path}: cannot read spec file ({e.strerror or e})") from None
    if is_model_bytes(raw):
        raise _model_file_given(name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise FglError(f"{name}: not valid UTF-8 text ({e.reason} at byte {e.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n"), name, base


def _model_file_given(name: str) -> FglError:
    """The error for a model file given where a spec is expected."""
    return FglError(f"{name} is an fgl model file, not a spec: a spec is the .fgl text a model "
                    f"is trained from; a model is read by fgl tag, eval, inspect and draw "
                    f"(`fgl inspect {name}` shows it)")
