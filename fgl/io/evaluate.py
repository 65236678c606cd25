"""conlleval-style evaluation: token accuracy, chunk and per-label P/R/F1,
and a micro-average of token P/R/F1 over chosen labels.

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
scores (except that ``O`` is not a chunk).  Scheme ``"runs"`` reads plain
labels as segments: every maximal run of one label is one chunk (segment)
of that type, as segment models ``from change`` write them.  Scheme
``"auto"`` (the default) uses ``"iob"`` if any gold or predicted tag has a
``B-``/``I-``/``E-``/``S-``/``L-``/``U-`` prefix, else ``"plain"``.

``ignore`` (default ``("O",)``) names the chunk types that are not chunks:
chunks of those types are dropped under every scheme (under ``"iob"`` the tag
``O`` is always outside; under ``"plain"`` and ``"runs"`` ``O`` is a label
like any other, a chunk type unless ignored).

A predicted chunk is correct when its type, start and end all equal those of
a gold chunk.  Precision = correct/predicted, recall = correct/gold, F1 =
2PR/(P+R); all are percentages (0-100) and 0 when the denominator is 0.
``overall`` is micro-averaged over all chunk types.

``labels`` (optional) selects labels for a token-level micro-average: a
token is predicted when its predicted tag is one of them, gold when its gold
tag is, and correct when both tags are equal and one of them (the
punctuation measure of Cuong et al. 2014, §4, over ``,`` ``.`` ``?``).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

_PREFIX = {"B": "B", "I": "I", "E": "E", "S": "S", "L": "E", "U": "S"}

SCHEMES = ("auto", "iob", "plain", "runs")
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
    selected: tuple[str, ...] = ()       # the labels of ``micro`` (none: no micro-average)
    micro: Scores | None = None          # token-level micro-average over ``selected``

    def format(self) -> str:
        """A conlleval-like table: chunk scores per type, then per label;
        the micro-average over the selected labels on its own line."""
        o = self.overall
        unit, title = ("segments", "segment") if self.scheme == "runs" else ("chunks", "chunk type")
        out = [
            f"processed {self.tokens} tokens with {o.support} {unit}; "
            f"found: {o.predicted} {unit}; correct: {o.correct}.",
            f"accuracy: {self.accuracy:6.2f}%; precision: {o.precision:6.2f}%; "
            f"recall: {o.recall:6.2f}%; F1: {o.f1:6.2f}",
        ]
        if self.micro is not None:
            m = self.micro
            out.append(f"labels {' '.join(self.selected)}: precision: {m.precision:6.2f}%; "
                       f"recall: {m.recall:6.2f}%; F1: {m.f1:6.2f} (gold: {m.support}; "
                       f"found: {m.predicted}; correct: {m.correct})")
        out.append("")
        out += _table(title, self.chunks, total=("overall", o))
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


def chunks(tags: list[str], scheme: str = "iob",
           ignore: Iterable[str] = ("O",)) -> list[tuple[str, int, int]]:
    """The chunks of one tag sequence as ``(type, start, end_exclusive)``,
    without those whose type is in ``ignore``.

    See the module docstring for the rules of each scheme.
    """
    scheme = _resolve(scheme, [tags])
    skip = set(ignore)
    if scheme == "plain":
        return [(t, i, i + 1) for i, t in enumerate(tags) if t not in skip]
    if scheme == "runs":
        starts = [i for i in range(len(tags)) if i == 0 or tags[i] != tags[i - 1]]
        return [(tags[u], u, v) for u, v in zip(starts, [*starts[1:], len(tags)])
                if tags[u] not in skip]
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
    return [c for c in out if c[0] not in skip]


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


def evaluate(gold: list[list[str]], pred: list[list[str]], scheme: str = "auto",
             ignore: Iterable[str] = ("O",), labels: Iterable[str] | None = None) -> Report:
    """Compare predicted tag sequences with gold ones, sentence by sentence.

    ``gold`` and ``pred`` must have the same number of sentences and each
    pair the same length (else ``ValueError``).  Chunks never cross sentence
    boundaries.  Accuracy is over all tokens (0 when there are none).
    ``ignore``: chunk types that are not chunks; ``labels``: the labels of
    the token-level micro-average ``Report.micro`` (see the module docstring).
    """
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} sentences but pred has {len(pred)}")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if isinstance(g, str) or isinstance(p, str):
            raise ValueError(f"sentence {i}: expected a list of tags, found a string")
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: gold has {len(g)} tokens but pred has {len(p)}")
    used = _resolve(scheme, [*gold, *pred])
    ignore = tuple(ignore)
    selected = tuple(dict.fromkeys(labels)) if labels is not None else ()
    if labels is not None and not selected:
        raise ValueError("labels: expected at least one label")

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
        gc = chunks(g, used, ignore)
        pc = chunks(p, used, ignore)
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
    micro = None
    if selected:
        micro = Scores.from_counts(sum(lab_ok[t] for t in selected),
                                   sum(lab_pred[t] for t in selected),
                                   sum(lab_gold[t] for t in selected))
    return Report(_pct(right, tokens), tokens, chunk_scores, overall, label_scores, used,
                  selected, micro)
