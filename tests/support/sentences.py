"""Generated sentences the tests train on, and their inputs and labels."""

from __future__ import annotations

import numpy as np

from fgl.data.sentence import Sentence
from fgl.datasets.synth import segment_sequences


def segment_data(seed: int = 1, n_train: int = 40, n_test: int = 20, length: int = 12):
    """Small BIO-tagged ``word label`` train/test sets."""
    return segment_sequences(n_types=2, max_len=3, vocab=20, n_train=n_train, n_test=n_test,
                             length=length, seed=seed)


def training_sentences(n_train: int = 40) -> list[Sentence]:
    """The training half of :func:`segment_data`."""
    return segment_data(n_train=n_train)[0]


def small_sentences(n: int = 12, seed: int = 4, length: int = 10, vocab: int = 8
                    ) -> list[Sentence]:
    """``n`` BIO-tagged sentences over a small vocabulary (many repeated words,
    so skip templates link many pairs)."""
    return segment_sequences(n_types=2, max_len=3, vocab=vocab, n_train=n, n_test=1,
                             length=length, seed=seed)[0]


def inputs_and_labels(sentences: list[Sentence]) -> tuple[list, list]:
    """``(X, y)`` for the estimator interface: every column but the last, and the last."""
    return [[row[:-1] for row in s.rows] for s in sentences], \
        [[row[-1] for row in s.rows] for s in sentences]


def without_labels(sents: list[Sentence], n_out: int = 1) -> list[Sentence]:
    """The sentences without their label column(s), documents kept."""
    return [Sentence([r[:-n_out] for r in s.rows], s.lines, s.doc, s.file) for s in sents]


def skip_documents(n_docs: int, seed: int) -> list[Sentence]:
    """Documents of short sentences.  Each document introduces 2-3 fresh
    capitalised names (never seen in any other document), each a PER or a
    LOC.  A name is mentioned 3-4 times; only its first mention has an
    informative cue ("mr" before a person, "in" before a place) -- the other
    mentions follow "saw"/"near"/"about", used equally for both types.  So a
    linear chain must guess the later mentions, while a skip edge between the
    identical names carries the cue across.  Lower-case filler is O."""
    rng = np.random.default_rng(seed)
    filler = [f"w{k}" for k in range(25)]
    out: list[Sentence] = []
    line = 1
    for d in range(n_docs):
        names = [("Q" + "".join(rng.choice(list("bcdfgklmnprstvz"), 5)),
                  "PER" if rng.random() < 0.5 else "LOC") for _ in range(rng.integers(2, 4))]
        mentions = []
        for name, typ in names:
            k = int(rng.integers(3, 5))
            mentions += [(name, typ, m == 0) for m in range(k)]
        first = [m for m in mentions if m[2]]
        rest = [m for m in mentions if not m[2]]
        rng.shuffle(rest)
        order = first + rest   # every name's cue comes before its ambiguous mentions
        for name, typ, informative in order:
            rows = [[w, "NC", "O"] for w in rng.choice(filler, rng.integers(1, 4))]
            if informative:
                cue = "mr" if typ == "PER" else "in"
            else:
                cue = rng.choice(["saw", "near", "about"])
            rows.append([cue, "SP", "O"])
            rows.append([name, "NP", f"B-{typ}"])
            rows += [[w, "NC", "O"] for w in rng.choice(filler, rng.integers(1, 4))]
            out.append(Sentence(rows, list(range(line, line + len(rows))), d, "<skip>"))
            line += len(rows) + 1
    return out


def two_layer_sentences(n: int, seed: int) -> list[Sentence]:
    """Sentences of phrases: NP = DT? JJ* NN, VP = VB, PP = IN, punctuation.
    Each POS has its own words, except a few words that are NN or VB by
    context (ambiguous); chunk tags (B-NP I-NP B-VP B-PP O) follow the
    phrase structure, so each layer helps the other."""
    rng = np.random.default_rng(seed)
    vocab = {"DT": ["the", "a", "this"], "JJ": [f"j{k}" for k in range(6)],
             "NN": [f"n{k}" for k in range(10)] + ["run", "walk"],
             "VB": [f"v{k}" for k in range(6)] + ["run", "walk"],
             "IN": ["of", "in", "on"], "PU": [",", "."]}
    out = []
    for s in range(n):
        rows: list[list[str]] = []
        for _ in range(rng.integers(2, 5)):
            kind = rng.choice(["NP", "NP", "VP", "PP", "PU"])
            if kind == "NP":
                tags = ((["DT"] if rng.random() < 0.6 else [])
                        + ["JJ"] * int(rng.integers(0, 3)) + ["NN"])
                for k, p in enumerate(tags):
                    rows.append([str(rng.choice(vocab[p])), p, "B-NP" if k == 0 else "I-NP"])
            elif kind == "VP":
                rows.append([str(rng.choice(vocab["VB"])), "VB", "B-VP"])
            elif kind == "PP":
                rows.append([str(rng.choice(vocab["IN"])), "IN", "B-PP"])
            else:
                rows.append([str(rng.choice(vocab["PU"])), "PU", "O"])
        out.append(Sentence(rows, list(range(1, len(rows) + 1)), s, "<two layers>"))
    return out
