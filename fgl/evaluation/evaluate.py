"""Scoring predicted tag sequences against gold ones, as conlleval does and
more: token (word) and sequence accuracy, chunk P/R/F1 under a tag scheme
(``fgl.data.schemes``: bio, iob1, iobes, io, iob, runs), per-label P/R/F1
with micro and macro averages (scheme ``plain``: labels, no chunks), the
confusion counts (``fgl.evaluation.confusion`` prints and draws them), and a
token-level micro-average over chosen labels.

Units: every score here is a percentage (0-100), as conlleval prints it:
``Report.accuracy``, ``Report.sequence_accuracy`` and every precision,
recall and F1; a score whose denominator is 0 is 0.

* Token (word) accuracy: tokens whose tag equals the gold tag / tokens.
  Sequence accuracy: sequences with every tag right / sequences.
* Chunks: a predicted chunk is correct when its type, start and end all
  equal those of a gold chunk; precision = correct / predicted, recall =
  correct / gold, F1 = 2PR / (P + R).  ``overall`` is the micro-average (the
  counts summed over chunk types, conlleval's "overall"); ``macro`` the mean
  of the per-type precisions, recalls and F1s.
* Plain labels: a token is a prediction of its predicted label and a gold
  instance of its gold label, so per-label precision = tokens rightly
  predicted as L / tokens predicted as L.  ``overall`` (micro) sums the
  counts over the labels that are not ignored, ``macro`` averages their
  scores; with nothing ignored, micro P = R = F1 = token accuracy.
* ``ignore`` (default ``("O",)``) names chunk types that are not chunks
  (under every scheme; under the prefixed schemes ``O`` is always outside)
  and, under ``plain``, the labels left out of the averages; ``""`` ignores
  nothing.
* Untyped tags (``B``, ``I``, ``O``; ``E``, ``S`` too under iobes) make
  chunks of the type ``""`` (``Report.chunks[""]``, printed ``(untyped)``),
  as conlleval reads tags without a ``-``.
* ``labels`` (optional) selects labels for ``Report.micro``: a token is
  predicted when its predicted tag is one of them, gold when its gold tag
  is, and correct when both tags are equal and one of them (the punctuation
  measure of Cuong et al. 2014 §3.2.2, over ``,`` ``.`` ``?``).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from fgl.data.schemes import SCHEMES, TagError, check, chunks, resolve

__all__ = ["SCHEMES", "Report", "Scores", "TagError", "chunks", "evaluate", "resolve"]


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

    @classmethod
    def micro(cls, rows: Iterable["Scores"]) -> "Scores":
        """The scores of the summed counts."""
        rows = list(rows)
        return cls.from_counts(sum(s.correct for s in rows), sum(s.predicted for s in rows),
                               sum(s.support for s in rows))

    @classmethod
    def macro(cls, rows: Iterable["Scores"]) -> "Scores":
        """The mean precision, recall and F1 of ``rows`` (each row weighs
        the same), with their summed counts."""
        rows = list(rows)
        n = len(rows) or 1
        return cls(sum(s.precision for s in rows) / n, sum(s.recall for s in rows) / n,
                   sum(s.f1 for s in rows) / n, sum(s.support for s in rows),
                   sum(s.predicted for s in rows), sum(s.correct for s in rows))


@dataclass
class Report:
    """An evaluation; every score in percent (module docstring)."""
    accuracy: float                      # token (word) accuracy: % of tokens tagged right
    tokens: int
    chunks: dict[str, Scores]            # per chunk type (empty under plain)
    overall: Scores                      # micro-average over chunk types (plain: labels)
    labels: dict[str, Scores]            # per label, token level
    scheme: str = field(default="iob")   # the scheme actually used
    selected: tuple[str, ...] = ()       # the labels of ``micro`` (none: no micro-average)
    micro: Scores | None = None          # token-level micro-average over ``selected``
    sequence_accuracy: float = 0.0       # % of sequences with every tag right
    sequences: int = 0
    macro: Scores | None = None          # mean over chunk types (plain: labels not ignored)
    ignored: tuple[str, ...] = ("O",)
    confusion: dict[tuple[str, str], int] = field(default_factory=dict)  # (gold, pred) -> n

    def format(self, instances: str = "sequences") -> str:
        """A conlleval-like text: the summary lines, then the chunk (or
        segment) table and the label table; under plain, the label table
        with its micro and macro averages only.  ``instances`` names what a
        sequence is (``graphs`` for graph data, whose nodes are its tags)."""
        plain = self.scheme == "plain"
        o = self.overall
        if plain:
            left_out = [t for t in self.ignored if t in self.labels]
            without = f" (averages without {', '.join(left_out)})" if left_out else ""
            out = [f"processed {self.tokens} tokens with {len(self.labels)} labels{without}.",
                   f"accuracy: {self.accuracy:6.2f}%; micro F1: {o.f1:6.2f}; "
                   f"macro F1: {self.macro.f1:6.2f}"]
        else:
            unit = "segments" if self.scheme == "runs" else "chunks"
            out = [f"processed {self.tokens} tokens with {o.support} {unit}; "
                   f"found: {o.predicted} {unit}; correct: {o.correct}.",
                   f"accuracy: {self.accuracy:6.2f}%; precision: {o.precision:6.2f}%; "
                   f"recall: {o.recall:6.2f}%; F1: {o.f1:6.2f}"]
        right = round(self.sequence_accuracy * self.sequences / 100)
        tag = "tag" if instances == "sequences" else "label"
        out.append(f"{instances[:-1]} accuracy: {self.sequence_accuracy:6.2f}% ({right} of "
                   f"{self.sequences} {instances} with every {tag} right); "
                   f"scheme {self.scheme}")
        if self.micro is not None:
            m = self.micro
            out.append(f"labels {' '.join(self.selected)}: precision: {m.precision:6.2f}%; "
                       f"recall: {m.recall:6.2f}%; F1: {m.f1:6.2f} (gold: {m.support}; "
                       f"found: {m.predicted}; correct: {m.correct})")
        out.append("")
        if plain:
            out += _table("label", self.labels, [("micro", o), ("macro", self.macro)])
        else:
            title = "segment" if self.scheme == "runs" else "chunk type"
            out += _table(title, self.chunks, [("overall", o), ("macro", self.macro)])
            out.append("")
            out += _table("label", self.labels)
        return "\n".join(out) + "\n"


UNTYPED = "(untyped)"
"""How the chunk table names the chunks of untyped tags (``B``, ``I``), whose
type is ``""`` in ``Report.chunks``."""


def _table(title: str, rows: dict[str, Scores],
           totals: Sequence[tuple[str, Scores]] = ()) -> list[str]:
    width = max([len(title), 7, *(len(k or UNTYPED) for k in rows)])
    head = (f"{title:<{width}}  {'precision':>9}  {'recall':>7}  {'F1':>7}  "
            f"{'gold':>6}  {'found':>6}  {'correct':>7}")
    lines = [head, "-" * len(head)]

    def row(name: str, s: Scores) -> str:
        return (f"{name:<{width}}  {s.precision:9.2f}  {s.recall:7.2f}  {s.f1:7.2f}  "
                f"{s.support:6d}  {s.predicted:6d}  {s.correct:7d}")

    for name in sorted(rows):
        lines.append(row(name or UNTYPED, rows[name]))
    if totals:
        lines.append("-" * len(head))
        lines += [row(name, s) for name, s in totals]
    return lines


def evaluate(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
             scheme: str = "auto", ignore: Iterable[str] = ("O",),
             labels: Iterable[str] | None = None) -> Report:
    """Compare predicted tag sequences with gold ones, sequence by sequence.

    ``gold`` and ``pred`` must have the same number of sequences and each
    pair the same length (else ``ValueError``); chunks never cross sequence
    boundaries.  ``scheme``: one of ``fgl.data.schemes.SCHEMES`` (or an alias:
    iob2 = bio, bilou = iobes); a tag the scheme does not read raises
    ``TagError`` naming it and its place (``gold[i][j]`` or ``pred[i][j]``).
    ``ignore``, ``labels``: see the module docstring.  Every score of the
    report is in percent.
    """
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} sentences but pred has {len(pred)}")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if isinstance(g, str) or isinstance(p, str):
            raise ValueError(f"sentence {i}: expected a list of tags, found a string")
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: gold has {len(g)} tokens but pred has {len(p)}")
    used = resolve(scheme, gold, pred)
    check(gold, used, "gold")
    check(pred, used, "pred")
    ignore = tuple(ignore)
    selected = tuple(dict.fromkeys(labels)) if labels is not None else ()
    if labels is not None and not selected:
        raise ValueError("labels: expected at least one label")

    confusion: Counter[tuple[str, str]] = Counter()
    tokens = right_seqs = 0
    ch_gold: Counter[str] = Counter()
    ch_pred: Counter[str] = Counter()
    ch_ok: Counter[str] = Counter()
    for g, p in zip(gold, pred):
        tokens += len(g)
        confusion.update(zip(g, p))
        right_seqs += list(g) == list(p)
        if used == "plain":
            continue
        gc, pc = chunks(g, used, ignore), chunks(p, used, ignore)
        ch_gold.update(c[0] for c in gc)
        ch_pred.update(c[0] for c in pc)
        ch_ok.update(c[0] for c in set(gc) & set(pc))

    lab_gold: Counter[str] = Counter()
    lab_pred: Counter[str] = Counter()
    lab_ok: Counter[str] = Counter()
    for (a, b), n in confusion.items():
        lab_gold[a] += n
        lab_pred[b] += n
        if a == b:
            lab_ok[a] += n
    label_scores = {t: Scores.from_counts(lab_ok[t], lab_pred[t], lab_gold[t])
                    for t in sorted(set(lab_gold) | set(lab_pred))}
    if used == "plain":
        chunk_scores: dict[str, Scores] = {}
        averaged = [s for t, s in label_scores.items() if t not in ignore]
    else:
        chunk_scores = {t: Scores.from_counts(ch_ok[t], ch_pred[t], ch_gold[t])
                        for t in sorted(set(ch_gold) | set(ch_pred))}
        averaged = list(chunk_scores.values())
    micro = None
    if selected:
        micro = Scores.from_counts(sum(lab_ok[t] for t in selected),
                                   sum(lab_pred[t] for t in selected),
                                   sum(lab_gold[t] for t in selected))
    right = sum(n for (a, b), n in confusion.items() if a == b)
    return Report(_pct(right, tokens), tokens, chunk_scores, Scores.micro(averaged),
                  label_scores, used, selected, micro, _pct(right_seqs, len(gold)), len(gold),
                  Scores.macro(averaged), ignore, dict(confusion))


def evaluate_layers(gold: Sequence[Sequence], pred: dict[str, Sequence[Sequence[str]]],
                    schemes: dict[str, str], ignore: Iterable[str] = ("O",),
                    labels: Iterable[str] | None = None) -> Report | dict[str, Report]:
    """``evaluate`` per output layer: ``pred`` maps each layer to its tag
    sequences and ``schemes`` to its scheme; ``gold`` holds one label per
    token, or with several layers a tuple of labels per token (in the order
    of ``pred``).  One layer: its ``Report``; several: ``{layer: Report}``."""
    ignore, labels = tuple(ignore), None if labels is None else list(labels)
    if len(pred) == 1:
        name = next(iter(pred))
        return evaluate([list(s) for s in gold], pred[name], schemes[name], ignore, labels)
    return {name: evaluate([[tok[k] for tok in s] for s in gold], tags, schemes[name], ignore,
                           labels)
            for k, (name, tags) in enumerate(pred.items())}
