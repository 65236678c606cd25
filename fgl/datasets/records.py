"""Generated talk announcements in which label order, field length and repeated names matter.

An announcement is one document of a few lines, one sentence per line. Its
fields are tagged BIO (``word label`` rows). Each kind of line holds one
thing a linear-chain CRF cannot learn and one richer structure can:

* ``header``: ``Speaker : Ilvo Dasentor from Kemura .``. The cue words make
  the speaker (``PER``, first and last name) and the organisation (``ORG``,
  one word) easy for every model.
* ``order``: ``When : 14 , 3 , 9 , 45 .``, which is day, month, hour and
  minute (``DAY MONTH HOUR MIN``) in that fixed order. Month and hour are
  both numbers from 1 to 12 between commas. The comma between them is
  tagged ``O``, so only the label two tokens back (day or month) tells them
  apart. A high-order chain's label patterns reach it (Ye et al. 2009 §3).
  A first-order chain only sees the ``O`` before it.
* ``length``: ``About : <TITLE> ; <PLACE> .``, in either order, in words
  drawn from one shared pool. Only the length tells the two fields apart: a
  title has 4, 5, 8 or 9 words and a place 6 or 7. A token chain's implicit
  length model is geometric: its score for a field is affine in the field's
  length, so it can prefer long or short but not "middle". A semi-Markov
  CRF has a weight for each length (Sarawagi & Cohen; Cuong et al. 2014 §2).
* ``repeat``: ``Thanks to Dasentor .`` or ``Thanks to Kemura .``. The
  speaker's last name or the organisation comes back in a context that
  fits both. The word itself is a fresh made-up name, so only its other,
  well-cued mention in the header tells what it is. A skip edge between
  the two mentions carries that across (Sutton & McCallum §1.5.1).

Names, organisations, titles and places are all made-up capitalised words
from one pool, and no word occurs twice within a document except the
repeated names. Everything is drawn from ``numpy.random.default_rng(seed)``,
so the same arguments always give the same data.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fgl.data.sentence import Sentence
from fgl.io.conll import write_conll

GENERATED = "<generated announcements>"
PARTS = ("header", "order", "length", "repeat")
"""The kinds of line, in the order they appear in an announcement."""

TITLE_LENGTHS = (4, 5, 8, 9)
PLACE_LENGTHS = (6, 7)
ORDER_FIELDS = ("DAY", "MONTH", "HOUR", "MIN")

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
           "br", "dr", "gl", "kr", "pl", "st", "tr", "sh", "th")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "io")
_CODAS = ("", "", "", "n", "r", "s", "l", "m")
_SPEAKER_CUES = (("Speaker", ":"), ("Talk", "by"), ("Guest", "speaker", ":"))
_ORG_CUES = ("from", "of")
# Contexts that fit a person and an organisation alike.
_REPEAT_CONTEXTS = ((("Thanks", "to"), (".",)), (("Questions", "to"), (".",)),
                    (("See",), ("for", "details", ".")), (("Say", "hello", "to"), (".",)),
                    (("Lunch", "with"), (".",)))


@dataclass(frozen=True)
class Announcements:
    """Generated announcements: ``sentences`` (rows ``[word, label]``; one
    document per announcement, ``doc`` its index) and ``parts[i]``, the kind
    of line (one of :data:`PARTS`) sentence ``i`` is."""
    sentences: list[Sentence]
    parts: list[str]


def made_up_words(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct capitalised pseudo-words of two or three syllables."""
    words: dict[str, None] = {}
    while len(words) < n:
        syllables = int(rng.integers(2, 4))
        w = "".join(_ONSETS[rng.integers(len(_ONSETS))] + _VOWELS[rng.integers(len(_VOWELS))]
                    + (_CODAS[rng.integers(len(_CODAS))] if k == syllables - 1 else "")
                    for k in range(syllables))
        words[w.capitalize()] = None
    return list(words)


def _field(words: list[str], label: str) -> list[list[str]]:
    return [[w, ("B-" if i == 0 else "I-") + label] for i, w in enumerate(words)]


def _plain(words: list[str] | tuple[str, ...]) -> list[list[str]]:
    return [[w, "O"] for w in words]


def _announcement(rng: np.random.Generator, pool: list[str], repeats: tuple[int, int],
                  sections: int) -> list[tuple[str, list]]:
    """One announcement as (part, rows) lines."""
    title_n = int(rng.choice(TITLE_LENGTHS))
    place_n = int(rng.choice(PLACE_LENGTHS))
    picked = [pool[i] for i in rng.choice(len(pool), size=3 + title_n + place_n,
                                          replace=False)]
    first, last, org = picked[:3]
    title, place = picked[3:3 + title_n], picked[3 + title_n:]

    cue = _SPEAKER_CUES[rng.integers(len(_SPEAKER_CUES))]
    header = (_plain(cue) + _field([first, last], "PER")
              + _plain([_ORG_CUES[rng.integers(len(_ORG_CUES))]]) + _field([org], "ORG")
              + _plain(["."]))

    lines = [("header", header), *_body(rng, title, place)]
    for _ in range(sections - 1):   # (more sections: fresh title and place words)
        used = set(picked)
        fresh = [w for w in (pool[i] for i in rng.permutation(len(pool))[:4 * len(picked)])
                 if w not in used][:title_n + place_n]
        lines += _body(rng, fresh[:title_n], fresh[title_n:])
    count = int(rng.integers(repeats[0], repeats[1] + 1))
    for k in rng.choice(len(_REPEAT_CONTEXTS), size=count,
                        replace=count > len(_REPEAT_CONTEXTS)):
        before, after = _REPEAT_CONTEXTS[k]
        name = _field([last], "PER") if rng.random() < 0.5 else _field([org], "ORG")
        lines.append(("repeat", _plain(before) + name + _plain(after)))
    return lines


def _body(rng: np.random.Generator, title: list[str], place: list[str]
          ) -> list[tuple[str, list]]:
    """An ``order`` line and a ``length`` line (title and place in either order)."""
    values = (rng.integers(1, 29), rng.integers(1, 13), rng.integers(1, 13),
              5 * rng.integers(0, 12))
    order = _plain(["When", ":"])
    for k, (name, value) in enumerate(zip(ORDER_FIELDS, values)):
        order += _field([str(int(value))], name) + _plain(["," if k < 3 else "."])

    fields = [_field(title, "TITLE"), _field(place, "PLACE")]
    if rng.random() < 0.5:
        fields.reverse()
    length = _plain(["About", ":"]) + fields[0] + _plain([";"]) + fields[1] + _plain(["."])
    return [("order", order), ("length", length)]


def _documents(rng: np.random.Generator, pool: list[str], count: int,
               repeats: tuple[int, int], sections: int) -> Announcements:
    sentences, parts = [], []
    line = 1
    for doc in range(count):
        line += 2   # the -DOCSTART- line and its blank line
        for part, rows in _announcement(rng, pool, repeats, sections):
            sentences.append(Sentence(rows, list(range(line, line + len(rows))), doc,
                                      GENERATED))
            parts.append(part)
            line += len(rows) + 1
    return Announcements(sentences, parts)


def announcements(n_train: int = 200, n_test: int = 200, pool_size: int = 5000,
                  seed: int = 0, repeats: tuple[int, int] = (2, 3), sections: int = 1
                  ) -> tuple[Announcements, Announcements]:
    """Train and test announcements (see the module docstring).

    The word pool (``pool_size`` made-up words) is drawn first, then the
    training announcements, then the test ones, all from
    ``default_rng(seed)``. Line numbers are those of the file
    :func:`write_announcement_files` writes (``-DOCSTART-`` before each).
    Each announcement has between ``repeats[0]`` and ``repeats[1]``
    ``repeat`` lines and ``sections`` pairs of ``order`` and ``length``
    lines (e.g. ``repeats=(5, 20), sections=8``: documents of about 270
    tokens whose names come back 5 to 20 times, like the seminar
    announcements of Sutton & McCallum §1.5.3).
    """
    if n_train < 0 or n_test < 0:
        raise ValueError(f"need n_train and n_test >= 0, found {n_train} and {n_test}")
    if not 0 <= repeats[0] <= repeats[1] or sections < 1:
        raise ValueError(f"need 0 <= repeats[0] <= repeats[1] and sections >= 1, found "
                         f"{repeats} and {sections}")
    need = 3 + max(TITLE_LENGTHS) + max(PLACE_LENGTHS)
    if pool_size < need:
        raise ValueError(f"pool_size must be at least {need}, found {pool_size}")
    rng = np.random.default_rng(seed)
    pool = made_up_words(rng, pool_size)
    return (_documents(rng, pool, n_train, repeats, sections),
            _documents(rng, pool, n_test, repeats, sections))


def write_announcement_files(directory: str | Path, **kwargs) -> tuple[Path, Path]:
    """Write :func:`announcements` (same keyword arguments) to
    ``directory/train.txt`` and ``directory/test.txt``: columns ``word label``,
    a ``-DOCSTART-`` line before each announcement."""
    from fgl.io.safe_files import atomic_output

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = (d / "train.txt", d / "test.txt")
    for path, data in zip(paths, announcements(**kwargs)):
        with atomic_output(path, "data file", text=True) as f:
            write_conll(f, data.sentences, docstart=True)
    return paths
