"""The main job (examples/structures.py) and the announcements it trains on.

The generator must hold what the main job's table claims: month and hour
told apart only by the label two back, title and place only by their length,
and each repeated name cued at one mention only. The quick run must print
the four models, each richer structure ahead of the linear chain overall
and on its own kind of line.
"""
from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from support.paths import REPO

from fgl.api import CRF
from fgl.datasets.records import (
    ORDER_FIELDS,
    PARTS,
    PLACE_LENGTHS,
    TITLE_LENGTHS,
    announcements,
    write_announcement_files,
)
from fgl.evaluation.evaluate import chunks
from fgl.io.conll import read_conll

MODELS = ("linear_chain", "high_order", "semi_markov", "skip_chain")


def by_doc(data):
    docs = defaultdict(list)
    for sent, part in zip(data.sentences, data.parts):
        docs[sent.doc].append((part, sent))
    return docs


def test_same_seed_same_data_and_other_seed_other_data() -> None:
    a, b, c = (announcements(n_train=5, n_test=3, seed=s) for s in (1, 1, 2))
    assert [s.rows for s in a[0].sentences + a[1].sentences] == \
        [s.rows for s in b[0].sentences + b[1].sentences]
    assert [s.rows for s in a[0].sentences] != [s.rows for s in c[0].sentences]


def test_each_announcement_has_its_lines_in_order() -> None:
    train, test = announcements(n_train=30, n_test=10, seed=0)
    assert len(by_doc(train)) == 30 and len(by_doc(test)) == 10
    for doc in by_doc(train).values():
        parts = [part for part, _ in doc]
        assert parts[:3] == list(PARTS[:3]) and 2 <= parts.count("repeat") <= 3
        assert set(parts[3:]) == {"repeat"}


def test_month_and_hour_look_alike_and_come_in_a_fixed_order() -> None:
    train, _ = announcements(n_train=200, n_test=0, seed=0)
    values = defaultdict(set)
    for sent, part in zip(train.sentences, train.parts):
        if part == "order":
            fields = [(typ, sent.rows[a][0]) for typ, a, _ in chunks(sent.column(-1), "iob")]
            assert [typ for typ, _ in fields] == list(ORDER_FIELDS)
            assert [sent.rows[i][0] for i in (3, 5)] == [",", ","]   # commas between, tagged O
            for typ, word in fields:
                values[typ].add(int(word))
    assert values["MONTH"] == values["HOUR"] == set(range(1, 13))


def test_title_and_place_differ_only_in_length() -> None:
    train, _ = announcements(n_train=300, n_test=0, seed=0)
    lengths, first = defaultdict(Counter), Counter()
    for sent, part in zip(train.sentences, train.parts):
        if part == "length":
            found = chunks(sent.column(-1), "iob")
            assert sorted(typ for typ, _, _ in found) == ["PLACE", "TITLE"]
            first[found[0][0]] += 1
            for typ, a, b in found:
                lengths[typ][b - a] += 1
                assert all(re.fullmatch(r"[A-Z][a-z]+", w) for w in sent.column(0)[a:b])
    assert set(lengths["TITLE"]) == set(TITLE_LENGTHS)
    assert set(lengths["PLACE"]) == set(PLACE_LENGTHS)
    assert min(first.values()) > 100   # either field comes first


def test_repeated_names_are_cued_once_and_ambiguous_elsewhere() -> None:
    train, _ = announcements(n_train=200, n_test=0, seed=0)
    contexts = defaultdict(set)
    kinds = Counter()
    for doc in by_doc(train).values():
        header = doc[0][1]
        cued = {w: y for w, y in header.rows if y != "O"}
        seen = Counter(w for _, s in doc for w in s.column(0) if w[0].isupper())
        for part, sent in doc:
            if part != "repeat":
                continue
            (typ, a, b), = chunks(sent.column(-1), "iob")
            word = sent.rows[a][0]
            assert word in cued and cued[word][2:] == typ   # the header names it, typed
            kinds[typ] += 1
            contexts[typ].add(tuple(w for w, _ in sent.rows[:a]))
        # no capitalised word repeats but the names and the lines' opening words
        repeated = {w for w, n in seen.items() if n > 1}
        assert repeated <= set(cued) | {"Thanks", "Questions", "See", "Say", "Lunch"}
    assert set(kinds) == {"PER", "ORG"} and min(kinds.values()) > 150
    assert contexts["PER"] == contexts["ORG"]


def test_files_read_back_with_one_document_per_announcement(tmp_path: Path) -> None:
    train_path, test_path = write_announcement_files(tmp_path, n_train=4, n_test=2, seed=5)
    train, _ = announcements(n_train=4, n_test=2, seed=5)
    back = read_conll(train_path)
    assert [s.rows for s in back] == [s.rows for s in train.sentences]
    assert [s.doc for s in back] == [s.doc for s in train.sentences]
    assert [s.lines for s in back] == [s.lines for s in train.sentences]
    assert len({s.doc for s in read_conll(test_path)}) == 2


def test_announcements_reject_bad_sizes() -> None:
    with pytest.raises(ValueError, match="pool_size"):
        announcements(pool_size=5)
    with pytest.raises(ValueError, match="n_train"):
        announcements(n_train=-1)


@pytest.mark.parametrize("name", MODELS)
def test_the_specs_users_read_check_and_pick_their_engine(name: str) -> None:
    crf = CRF(REPO / "examples" / "specs" / f"{name}.fgl")
    engine = {"linear_chain": "chain", "high_order": "chain", "semi_markov": "segments",
              "skip_chain": "factor graph"}[name]
    assert crf.engine.engine.name == engine


def test_quick_main_job_shows_each_structure_beating_the_linear_chain() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "structures.py"), "--quick",
                           "--seed", "0"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert str(REPO / "examples" / "specs") in out
    rows = {}
    for name in MODELS:
        m = re.search(rf"(?m)^{name}\s+(\d+)\s+.*?\s([\d.]+)\s+([\d.]+)\s+([+-][\d.]+)"
                      rf"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", out)
        assert m, f"no row for {name} in:\n{out}"
        lines, seconds, f1, gain, order, length, repeat = m.groups()
        rows[name] = dict(f1=float(f1), gain=float(gain), order=float(order),
                          length=float(length), repeat=float(repeat))
    base = rows["linear_chain"]
    for name, kind in (("high_order", "order"), ("semi_markov", "length"),
                       ("skip_chain", "repeat")):
        assert rows[name]["f1"] > base["f1"] + 3, (name, rows)
        assert rows[name]["gain"] == pytest.approx(rows[name]["f1"] - base["f1"], abs=0.011)
        assert rows[name][kind] > base[kind] + 15, (name, kind, rows)
