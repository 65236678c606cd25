"""conlleval-style evaluation: token accuracy, chunk and per-label P/R/F1.

Chunk rules (scheme ``"iob"``; accepts IOB1, IOB2/BIO, IOBES and BILOU in one
set of rules, so mixed or ill-formed sequences are still read sensibly):

A tag is ``O``, or ``P-TYPE`` where the prefix ``P`` is one of ``B I E S``
(``L`` and ``U`` are read as ``E`` and ``S``) and ``TYPE`` is everything after
the first ``-``, or a *bare* label with no such prefix (e.g. ``PER`` or
``,``).  Reading left to right:

* ``O`` closes any open chunk.
* ``B-X`` closes any open chunk and opens a chunk of type X.
* ``I-X`` continues the open chunk when it has type X and the previous tag was
  ``B-X`` or ``I-X``; otherwise it closes any open chunk and opens a new X
  chunk (IOB1: an ``I-X`` after ``O``, after another type, or after ``E-``/
  ``S-`` starts a chunk).
* ``E-X`` ends the open chunk (including this token) when it continues it
  under the same rule as ``I-X``; otherwise it is a one-token chunk.
* ``S-X`` closes any open chunk and is a one-token chunk.
* A bare label ``L`` closes any open chunk and is a one-token chunk of type L.

Scheme ``"plain"`` ignores prefixes: every non-``O`` token is a one-token
chunk whose type is its whole label, so chunk scores equal per-label token
scores (except that ``O`` is not a chunk).  Scheme ``"auto"`` (the default)
uses ``"iob"`` if any gold or predicted tag has a ``B-``/``I-``/``E-``/
``S-``/``L-``/``U-`` prefix, else ``"plain"``.

A predicted chunk is correct when its type, start and end all equal those of
a gold chunk.  Precision = correct/predicted, recall = correct/gold, F1 =
2PR/(P+R); all are percentages (0-100) and 0 when the denominator is 0.
``overall`` is micro-averaged over all chunk types.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

_PREFIX = {"B": "B", "I": "I", "E": "E", "S": "S", "L": "E", "U": "S"}

SCHEMES = ("auto", "iob", "plain")
_ALIASES = {"bio": "iob", "iob1": "iob", "iob2": "iob", "iobes": "iob", "bilou": "iob"}


def _pct(num: int, den: int) -> float:
    return 100.0 * num / den if den else 0.0


@dataclass
class Scores:
    """Precision, recall, F1 (percent), and the counts behind them."""
    precision: float
    recall: float
    f1: float
    support: int      # gold count
    predicted: int
    correct: int

    @classmethod
    def from_counts(cls, correct: int, predicted: int, support: int) -> "Scores":
        p = _pct(correct, predicted)
        r = _pct(correct, support)
        f = 2 * p * r / (p + r) if p + r > 0 else 0.0
        return cls(p, r, f, support, predicted, correct)


@dataclass
class Report:
    accuracy: float                      # percent of tokens whose tag is right
    tokens: int
    chunks: dict[str, Scores]            # per chunk type
    overall: Scores                      # micro-average over chunk types
    labels: dict[str, Scores]            # per label, token level
    scheme: str = field(default="iob")   # the scheme actually used

    def format(self) -> str:
        """A conlleval-like table: chunk scores per type, then per label."""
        o = self.overall
        out = [
            f"processed {self.tokens} tokens with {o.support} chunks; "
            f"found: {o.predicted} chunks; correct: {o.correct}.",
            f"accuracy: {self.accuracy:6.2f}%; precision: {o.precision:6.2f}%; "
            f"recall: {o.recall:6.2f}%; F1: {o.f1:6.2f}",
            "",
        ]
        out += _table("chunk type", self.chunks, total=("overall", o))
        out.append("")
        out += _table("label", self.labels)
        return "\n".join(out) + "\n"


def _table(title: str, rows: dict[str, Scores],
           total: tuple[str, Scores] | None = None) -> list[str]:
    width = max([len(title), 7, *(len(k) for k in rows)])
    head = (f"{title:<{width}}  {'precision':>9}  {'recall':>7}  {'F1':>7}  "
            f"{'gold':>6}  {'found':>6}  {'correct':>7}")
    lines = [head, "-" * len(head)]

    def row(name: str, s: Scores) -> str:
        return (f"{name:<{width}}  {s.precision:9.2f}  {s.recall:7.2f}  {s.f1:7.2f}  "
                f"{s.support:6d}  {s.predicted:6d}  {s.correct:7d}")

    for name in sorted(rows):
        lines.append(row(name, rows[name]))
    if total is not None:
        lines.append("-" * len(head))
        lines.append(row(*total))
    return lines


def _split(tag: str) -> tuple[str, str]:
    """(prefix, type): prefix is one of B I E S, 'O', or '' for a bare label."""
    if tag == "O":
        return "O", ""
    if len(tag) >= 2 and tag[1] == "-" and tag[0] in _PREFIX:
        return _PREFIX[tag[0]], tag[2:]
    return "", tag


def chunks(tags: list[str], scheme: str = "iob") -> list[tuple[str, int, int]]:
    """The chunks of one tag sequence as ``(type, start, end_exclusive)``.

    See the module docstring for the rules of ``"iob"`` and ``"plain"``.
    """
    scheme = _resolve(scheme, [tags])
    if scheme == "plain":
        return [(t, i, i + 1) for i, t in enumerate(tags) if t != "O"]
    out: list[tuple[str, int, int]] = []
    open_type: str | None = None
    start = 0
    prev = "O"
    for i, tag in enumerate(tags):
        p, typ = _split(tag)
        continues = (open_type is not None and typ == open_type
                     and prev in ("B", "I") and p in ("I", "E"))
        if not continues and open_type is not None:
            out.append((open_type, start, i))
            open_type = None
        if p == "O":
            pass
        elif continues:
            if p == "E":
                out.append((open_type, start, i + 1))
                open_type = None
        elif p in ("B", "I"):
            open_type, start = typ, i
        else:  # S, E not continuing, bare label: one-token chunk
            out.append((typ, i, i + 1))
        prev = p
    if open_type is not None:
        out.append((open_type, start, len(tags)))
    return out


def _resolve(scheme: str, seqs) -> str:
    s = _ALIASES.get(scheme.lower(), scheme.lower())
    if s not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    if s != "auto":
        return s
    for seq in seqs:
        for t in seq:
            if _split(t)[0] in ("B", "I", "E", "S"):
                return "iob"
    return "plain"


def evaluate(gold: list[list[str]], pred: list[list[str]], scheme: str = "auto") -> Report:
    """Compare predicted tag sequences with gold ones, sentence by sentence.

    ``gold`` and ``pred`` must have the same number of sentences and each
    pair the same length (else ``ValueError``).  Chunks never cross sentence
    boundaries.  Accuracy is over all tokens (0 when there are none).
    """
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} sentences but pred has {len(pred)}")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if isinstance(g, str) or isinstance(p, str):
            raise ValueError(f"sentence {i}: expected a list of tags, found a string")
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: gold has {len(g)} tokens but pred has {len(p)}")
    used = _resolve(scheme, [*gold, *pred])

    tokens = right = 0
    lab_gold: Counter[str] = Counter()
    lab_pred: Counter[str] = Counter()
    lab_ok: Counter[str] = Counter()
    ch_gold: Counter[str] = Counter()
    ch_pred: Counter[str] = Counter()
    ch_ok: Counter[str] = Counter()
    for g, p in zip(gold, pred):
        tokens += len(g)
        for a, b in zip(g, p):
            lab_gold[a] += 1
            lab_pred[b] += 1
            if a == b:
                right += 1
                lab_ok[a] += 1
        gc = chunks(g, used)
        pc = chunks(p, used)
        for c in gc:
            ch_gold[c[0]] += 1
        for c in pc:
            ch_pred[c[0]] += 1
        for c in set(gc) & set(pc):
            ch_ok[c[0]] += 1

    chunk_scores = {t: Scores.from_counts(ch_ok[t], ch_pred[t], ch_gold[t])
                    for t in sorted(set(ch_gold) | set(ch_pred))}
    overall = Scores.from_counts(sum(ch_ok.values()), sum(ch_pred.values()), sum(ch_gold.values()))
    label_scores = {t: Scores.from_counts(lab_ok[t], lab_pred[t], lab_gold[t])
                    for t in sorted(set(lab_gold) | set(lab_pred))}
    return Report(_pct(right, tokens), tokens, chunk_scores, overall, label_scores, used)
