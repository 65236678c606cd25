"""The confusion matrix of an evaluation: gold labels as rows, predicted
labels as columns, each cell the number of tokens; as text or a picture.

Labels are ordered by chunk type, then by prefix (a bare label, ``B``,
``I``, ``E``/``L``, ``S``/``U``), with ``O`` last, so the tags of one type
sit together.  A label set wider than the matrix allows keeps the most
frequent labels (gold plus predicted tokens) and merges the rest into one
row and column ``(other)``, so every row and column still sums to its
label's count.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from fgl.data.schemes import split
from fgl.errors import FglError

OTHER = "(other)"
CORNER = "gold \\ predicted"
PICTURES = (".png", ".svg", ".pdf")
_RANK = {"": 0, "B": 1, "I": 2, "E": 3, "S": 4}


def order(labels) -> list[str]:
    """``labels`` by type, then prefix, with ``O`` last."""
    def key(label: str) -> tuple:
        prefix, typ = split(label)
        return (label == "O", typ, _RANK.get(prefix, 0), label)
    return sorted(set(labels), key=key)


def matrix(confusion: dict[tuple[str, str], int],
           max_labels: int | None = None) -> tuple[list[str], np.ndarray]:
    """(labels, counts[gold, predicted]) of ``confusion`` ((gold, predicted)
    -> tokens); with more than ``max_labels`` labels, the ``max_labels - 1``
    most frequent and ``(other)``."""
    freq: Counter[str] = Counter()
    for (g, p), n in confusion.items():
        freq[g] += n
        freq[p] += n
    labels = order(freq)
    if max_labels is not None and len(labels) > max_labels:
        keep = {t for t, _ in sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))
                [:max(max_labels - 1, 1)]}
        labels = [t for t in labels if t in keep] + [OTHER]
    index = {t: i for i, t in enumerate(labels)}
    counts = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for (g, p), n in confusion.items():
        counts[index.get(g, len(labels) - 1), index.get(p, len(labels) - 1)] += n
    return labels, counts


def format_confusion(confusion: dict[tuple[str, str], int], width: int = 120,
                     max_labels: int = 20, cell: int = 7) -> str:
    """The matrix as text at most about ``width`` characters wide: rows are
    gold labels, columns predicted ones (headers longer than ``cell``
    characters are cut, ending in ``~``); at most ``max_labels`` labels
    (module docstring)."""
    full = order({t for pair in confusion for t in pair})
    name = max([len(CORNER), len(OTHER), *(len(t) for t in full)])
    col = min(cell, max((len(t) for t in full), default=1))
    if len(full) > min(max_labels, (width - name) // (col + 1)):  # (other) is needed
        col = max(col, len(OTHER))
    labels, counts = matrix(confusion, min(max_labels, max(2, (width - name) // (col + 1))))
    col = max(col, len(str(counts.max(initial=0))))

    def head(t: str) -> str:
        return t if len(t) <= col else t[:col - 1] + "~"

    merged = len(full) - (len(labels) - 1) if labels and labels[-1] == OTHER else 0
    title = (f"confusion matrix: rows gold, columns predicted; {len(full)} labels"
             + (f", the {merged} least frequent merged into {OTHER}" if merged else ""))
    lines = [title, f"{CORNER:<{name}} " + " ".join(f"{head(t):>{col}}" for t in labels)]
    for t, row in zip(labels, counts):
        lines.append(f"{t:<{name}} " + " ".join(f"{n:>{col}d}" for n in row))
    return "\n".join(lines) + "\n"


def check_picture_path(path: str | Path) -> None:
    """Refuse a picture file name whose format is unknown, and a missing
    matplotlib, before any work is done."""
    from fgl.io.safe_files import check_output

    suffix = Path(path).suffix.lower()
    if suffix not in PICTURES:
        raise FglError(f"the confusion matrix picture {str(path)!r} needs a file name ending "
                       f"in {', '.join(PICTURES)}")
    check_output(path, "confusion matrix picture")
    _figure_class()


def _figure_class():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise FglError("drawing the confusion matrix needs matplotlib: "
                       "pip install 'fgl[plot]'") from None
    return Figure


def draw_confusion(confusion: dict[tuple[str, str], int], path: str | Path, title: str = "",
                   max_labels: int = 40) -> None:
    """Draw the matrix into ``path`` (.png, .svg or .pdf) with matplotlib's
    Agg canvas: cells shaded by their share of the gold row (so a rare
    label's errors show as clearly as a frequent one's), each labelled with
    its count when there are at most 25 labels."""
    check_picture_path(path)
    from fgl.io.safe_files import atomic_output

    Figure = _figure_class()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    labels, counts = matrix(confusion, max_labels)
    n = max(len(labels), 1)
    rows = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, rows, out=np.zeros(counts.shape), where=rows > 0)
    side = min(4 + 0.45 * n, 24)
    fig = Figure(figsize=(side + 1.5, side))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    image = ax.imshow(share, cmap="Blues", vmin=0.0, vmax=1.0)
    fig.colorbar(image, ax=ax, label="share of the gold row")
    ax.set_xticks(range(len(labels)), labels, rotation=90)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    ax.set_title(title or "confusion matrix")
    if len(labels) <= 25:
        for (i, j), value in np.ndenumerate(counts):
            if value:
                ax.text(j, i, str(value), ha="center", va="center", fontsize=8,
                        color="white" if share[i, j] > 0.5 else "black")
    fig.tight_layout()
    with atomic_output(path, "confusion matrix picture") as fh:
        fig.savefig(fh, format=Path(path).suffix.lower()[1:])
