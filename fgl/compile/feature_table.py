"""The second pass of compiling a chain or segment model: the feature table.

One weight per (attribute, label pattern) pair of a template (Ye et al.
2009 §3: features of pattern-sparse chains; Cuong et al. 2014 §2 over
segments), restricted by default to pairs seen at gold units ("supported"
features) or every pair with ``support = all``.  Attribute rows are
numbered in the order first met, cut at ``min_count`` and finally renumbered
by how often they occur (``frequency_order``); ``renumber`` makes the CSR
table.  Reading does the compile's collect step (the rows and their
patterns) and its encode step (every unit's rows): on one machine in one
pass where it can, over a Dask cluster apart — each worker's table
collects a ``RowSummary`` of its shard (``summary``), the driver's is
filled from their merge (``add_summary``), and each worker's encodes its
shard with the merged vocabularies (``fgl.compile.sequence_shards``).
"""
from __future__ import annotations

from array import array
from typing import Callable, Iterable, Protocol

import numpy as np

from fgl.compile import footprint as sizes
from fgl.compile.aggregates import Aggregator
from fgl.compile.bounds import unit_items
from fgl.compile.budget import release_freed_memory
from fgl.compile.footprint import SizedOnly, only_sizing
from fgl.compile.frontend import TemplatePlan, keep_counted
from fgl.compile.sequence_budget import check_reading, model_footprint
from fgl.compile.summaries import RowSummary
from fgl.compile.unit_rows import KeyRows, UnitRows, append_units, batches
from fgl.compile.vocabulary import Vocabulary
from fgl.data.sentence import Sentence
from fgl.engines.sequence.structure import ChainStructure
from fgl.errors import DataError
from fgl.features.observations import TemplateAttributes, sentence_columns
from fgl.features.span_arrays import Rows, stack
from fgl.lang import ast


class UnitModel(Protocol):
    """What the table reads of a model class
    (``fgl.compile.sequence.SequenceModel``): its units."""

    const_key: str | None   # an attribute scored once, not per unit

    def span_limit(self, spec: ast.Spec, longest: int) -> int: ...

    def unit_rows(self, attributes: TemplateAttributes, cols: list[dict[str, list]],
                  lengths: list[int], L: int) -> list[list[Rows]]: ...


def frequency_order(counts: np.ndarray) -> np.ndarray:
    """``new_id[r]``: row r's number when rows are ordered by how often they
    occur (``counts``), most often first, ties in their order."""
    order = np.argsort(-counts, kind="stable")
    new_id = np.empty(len(order), dtype=np.int32)
    new_id[order] = np.arange(len(order))
    return new_id


def row_counts(rows: np.ndarray, n_rows: int, block: int = 1 << 20) -> np.ndarray:
    """How often each of ``n_rows`` attribute rows occurs among units' ``rows``
    (counted a block at a time: no int64 copy of them all)."""
    counts = np.zeros(n_rows, dtype=np.int64)
    for lo in range(0, len(rows), block):
        counts += np.bincount(rows[lo:lo + block], minlength=n_rows)
    return counts


def renumber_rows(rows: np.ndarray, new_id: np.ndarray, block: int = 1 << 20) -> None:
    """Units' attribute rows renumbered by ``new_id``, in place, a block at a
    time (no int64 copy of them all)."""
    for lo in range(0, len(rows), block):
        part = rows[lo:lo + block]
        part[:] = new_id[part]


class FeatureTable:
    """Second pass of compiling: attribute rows, their supported patterns and
    every unit's rows (flat CSR arrays filled sentence by sentence).
    ``check_budget``: refuse a table over the memory budget before making it
    (a one-machine compile; a distributed one holds no whole table)."""

    def __init__(self, model_cls: UnitModel, spec: ast.Spec, plans: list[TemplatePlan],
                 z_list: list[tuple[int, ...]], attributes: TemplateAttributes, n_labels: int,
                 jobs: int, longest: int, check_budget: bool = True):
        self.cls, self.spec, self.plans, self.attributes = model_cls, spec, plans, attributes
        self.aggregator = Aggregator(spec, attributes.observations)
        self.check_budget = check_budget
        self.L = model_cls.span_limit(spec, longest)
        self.items = unit_items(spec, self.L)   # (the most attribute items per unit)
        self.structure, self.jobs = ChainStructure.build(n_labels, z_list), jobs
        self.n_sequences = self.n_tokens = self.longest = 0
        self.n_z = len(z_list)
        z_index = {z: i for i, z in enumerate(z_list)}
        self.pattern_sets = [{z: z_index[z] for z in p.patterns} for p in plans]
        self.lengths = [sorted({len(z) for z in p.patterns}) for p in plans]
        self.vocabs = [Vocabulary() for _ in plans]
        # supported patterns per row: the first in row_first (-1: none yet),
        # any others as codes row·|Z| + pattern in row_more — most rows have
        # one, and a set per row is costly
        self.row_first = array("q")
        self.row_more: set[int] = set()
        self.row_template = array("i")
        self.units = UnitRows()
        self.key_rows: KeyRows | None = None
        # occurrences of each row's attribute at gold units, for the cut-off (min_count)
        self.row_count = np.zeros(0, dtype=np.int64) if any(
            p.min_count > 1 for p in plans) else None

    def read(self, read: Callable[[], Iterable[Sentence]], gold: list[list[int]],
             spans: list[list[tuple[int, int]]], source: str, make_rows: bool = True,
             add_units: bool = True) -> None:
        """Read the training sentences ``read()`` (with their gold label ids
        and spans): make rows for their gold units' attributes
        (``make_rows``, the collect step) and add every unit's rows
        (``add_units``, the encode step)."""
        # with spans (L > 1) most units are not gold ones: they may carry any
        # attribute of a gold unit, so every row is made before any unit is added
        if make_rows and add_units:
            passes = [(True, False), (False, True)] if self.L > 1 else [(True, True)]
        else:
            passes = [(make_rows, add_units)]
        total = sum(segs[-1][1] + 1 for segs in spans if segs)
        for make_rows, add_units in passes:
            n_read = tokens = 0
            for batch in self.aggregator.batches(batches(read(), len(gold),
                                                         sum(self.items) * self.L)):
                per_sentence = self._unit_rows(batch)
                per_template = [stack(list(rows)) for rows in zip(*per_sentence)]
                del per_sentence
                self.add([len(s.rows) for s in batch], gold[n_read:n_read + len(batch)],
                         spans[n_read:n_read + len(batch)], per_template, make_rows, add_units)
                n_read += len(batch)
                tokens += sum(len(s.rows) for s in batch)
                if self.check_budget:
                    check_reading(self.spec, self.items, self.L, self._made(), tokens, total)
            if n_read != len(gold):
                raise DataError(f"the training data changed while it was read: {len(gold)} "
                                f"sequences on the first pass, {n_read} on a later one",
                                source, 0)

    def _made(self) -> dict[str, int]:
        """The bytes reading has made so far: the attribute keys (with their
        rows and supported patterns) and the units' rows."""
        keys = self.key_rows.nbytes if self.key_rows is not None else self.attributes.keys.nbytes
        rows = 12 * len(self.row_first) + 72 * len(self.row_more)
        if self.row_count is not None:
            rows += self.row_count.nbytes
        return {"attribute keys": keys + rows, "training data": self.units.nbytes}

    def _unit_rows(self, batch: list[Sentence]) -> list[list[Rows]]:
        """Every unit's rows of the sentences of a batch, per template.  A
        *prepared* sentence (one with ``tags`` and ``unit_rows(keys)``, as
        ``fgl.io.feature_dicts`` makes of feature dicts) gives its rows
        itself, with the keys the spec's observations would give."""
        if self.L == 1 and all(hasattr(s, "unit_rows") for s in batch):
            return [s.unit_rows(self.attributes.keys) for s in batch]
        cols = [sentence_columns(self.spec, s.rows, s.lines, s.file)[0] for s in batch]
        self.aggregator.complete_sentences(cols, batch)
        return self.cls.unit_rows(self.attributes, cols, [len(s.rows) for s in batch], self.L)

    def add(self, lengths: list[int], seqs: list[list[int]], spans: list[list[tuple[int, int]]],
            per_template: list[Rows], make_rows: bool = True, add_units: bool = True) -> None:
        """Training sentences of ``lengths`` tokens, given their units'
        attribute rows per template (sentence after sentence): rows for the
        attributes of their gold units (numbered in order of first
        appearance: template, sentence, unit, item), their supported
        patterns (``make_rows``), and every unit's rows (``add_units``) —
        array work over attribute ids, no Python step per (unit, attribute).
        In one call doing both, a unit keeps only attributes that have a row
        when it is reached, which is all of them when every unit is a gold
        one (a chain)."""
        L = self.L
        if add_units:
            self.n_sequences, self.n_tokens = self.n_sequences + len(lengths), \
                self.n_tokens + sum(lengths)
            self.longest = max(self.longest, *lengths)
        if self.key_rows is None:
            self.key_rows = KeyRows(self.attributes.keys, self.vocabs)
        # gold segment j covers unit u·L + v - u of its sentence (with L = 1,
        # unit t is token t); units and segments numbered across the sentences
        first_unit = np.cumsum([0] + [T * L for T in lengths])
        n_units = int(first_unit[-1])
        gold_unit = np.array([first + u * L + v - u for first, segs in zip(first_unit, spans)
                              for u, v in segs], dtype=np.int64)
        j_of_unit = np.full(n_units, -1, dtype=np.int64)
        j_of_unit[gold_unit] = np.arange(len(gold_unit), dtype=np.int64)
        of_items = [np.repeat(np.arange(n_units, dtype=np.int64), rows.lengths())
                    for rows in per_template]
        if make_rows:
            self._new_rows(per_template, of_items, j_of_unit,
                           np.repeat(np.arange(len(lengths)), [T * L for T in lengths]))
        unit_items, row_items, val_items = [], [], []
        for ti, (plan, rows, of_item) in enumerate(zip(self.plans, per_template, of_items)):
            j_item = j_of_unit[of_item]
            r = self.key_rows.table(ti)[rows.key]
            if make_rows and self.row_count is not None:
                self._count(r[(j_item >= 0) & (r >= 0)])
            if make_rows and plan.support == "observed":
                self._support(ti, seqs, r, j_item)
            if not add_units:
                continue
            keep = (r >= 0) & self.key_rows.scored(rows.key, self.cls.const_key)
            unit_items.append(of_item[keep])
            row_items.append(r[keep])
            val_items.append(rows.val[keep])
        if add_units:
            append_units(self.units, n_units, unit_items, row_items, val_items)

    def _count(self, rows: np.ndarray) -> None:
        """Count one occurrence of each of ``rows`` (attribute rows at gold
        units; a unit holds an attribute once)."""
        n = len(self.row_template)
        if len(self.row_count) < n:
            grown = np.zeros(max(n, 2 * len(self.row_count)), dtype=np.int64)
            grown[:len(self.row_count)] = self.row_count
            self.row_count = grown
        np.add.at(self.row_count, rows, 1)

    def _cut(self) -> None:
        """Drop the attribute rows below their template's ``min_count``
        (``fgl.lang.settings``): from the vocabularies, the supported
        patterns and every unit; the rows left are renumbered in order."""
        n = len(self.row_template)
        template = np.frombuffer(self.row_template, dtype=np.int32)
        keep = keep_counted(self.row_count[:n], template, self.plans)
        if keep is None or keep.all():
            return
        new = np.full(n, -1, dtype=np.int64)
        new[keep] = np.arange(int(keep.sum()))
        for vocab in self.vocabs:
            vocab.renumber(new)
        self.row_first = array("q", np.frombuffer(self.row_first, dtype=np.int64)[keep]
                               .tobytes())
        self.row_template = array("i", template[keep].tobytes())
        n_z = self.n_z
        self.row_more = {int(new[c // n_z]) * n_z + c % n_z for c in self.row_more
                         if keep[c // n_z]}
        unit_ptr, unit_rows, values = self.units.arrays()
        kept = keep[unit_rows]
        within = np.zeros(len(kept) + 1, dtype=np.int64)
        np.cumsum(kept, out=within[1:])
        units = UnitRows()
        units.ptr = array("q", within[unit_ptr].tobytes())
        units.rows = array("i", new[unit_rows[kept]].astype(np.int32).tobytes())
        if self.units.vals is not None:
            units.vals = array(self.units.vals.typecode, values[kept].tobytes())
        self.units = units
        self.key_rows = None

    def _new_rows(self, per_template: list[Rows], of_items: list[np.ndarray],
                  j_of_unit: np.ndarray, sentence_of_unit: np.ndarray) -> None:
        """Rows for the attributes of gold units that have none yet, numbered
        in order of first appearance (sentence, template, unit, item)."""
        order_keys = []
        for ti, (rows, of_item) in enumerate(zip(per_template, of_items)):
            new = (j_of_unit[of_item] >= 0) & (self.key_rows.table(ti)[rows.key] < 0)
            where = np.flatnonzero(new)
            uniq, first = np.unique(rows.key[where], return_index=True)
            order_keys.append((sentence_of_unit[of_item[where[first]]],
                               np.full(len(uniq), ti), where[first], uniq))
        sent, tpl, item, ids = (np.concatenate(k) for k in zip(*order_keys))
        order = np.lexsort((item, tpl, sent))
        tpl, ids = tpl[order], ids[order]
        rows = len(self.row_first) + np.arange(len(order), dtype=np.int64)
        for ti in range(len(self.vocabs)):   # (the vocabularies are filled by finish)
            mine = tpl == ti
            self.key_rows.table(ti)[ids[mine]] = rows[mine]
        self.row_first.extend([-1] * len(order))
        self.row_template.extend(tpl.tolist())

    def _support(self, ti: int, seqs: list[list[int]], r: np.ndarray, j_item: np.ndarray
                 ) -> None:
        """Record the patterns matched at gold segment j (numbered across the
        sentences' label sequences ``seqs``) as supported by the rows of j's
        attributes (each row's first in ``row_first``, others in
        ``row_more``)."""
        pset, n_z = self.pattern_sets[ti], self.n_z
        matched = [[z for m in self.lengths[ti] if m <= j + 1
                    for z in [pset.get(tuple(seq[j - m + 1:j + 1]))] if z is not None]
                   for seq in seqs for j in range(len(seq))]
        n_matched = np.array([len(z) for z in matched], dtype=np.int64)
        z_flat = np.array([z for zs in matched for z in zs], dtype=np.int64)
        z_ptr = np.concatenate([[0], np.cumsum(n_matched)])
        gold = j_item >= 0
        rows, js = r[gold], j_item[gold]
        per = n_matched[js]
        if not per.sum():
            return
        pair_row = np.repeat(rows, per)
        within = np.arange(int(per.sum()), dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
        pair_z = z_flat[np.repeat(z_ptr[js], per) + within]
        first = np.frombuffer(self.row_first, dtype=np.int64)
        uniq, at = np.unique(pair_row, return_index=True)
        unset = first[uniq] < 0
        first[uniq[unset]] = pair_z[at[unset]]
        other = pair_z != first[pair_row]
        self.row_more.update((pair_row[other] * n_z + pair_z[other]).tolist())

    def finish(self) -> tuple[np.ndarray, np.ndarray, list[dict[str, int]], tuple]:
        """(row_ptr, feat_pattern, vocabularies, unit arrays), with rows
        numbered by how often they occur, so the weights scored for most
        tokens share cache lines (about 10% faster per evaluation on
        CoNLL-2000).  Rows below their template's ``min_count`` are dropped
        first."""
        if self.key_rows is not None:
            release_freed_memory()   # (what reading freed: before the vocabularies' keys)
            self._fill_vocabularies()
        if self.row_count is not None:
            self._cut()
        unit_ptr, unit_rows, values = self.units.arrays()
        new_id = frequency_order(row_counts(unit_rows, len(self.row_template)))
        renumber_rows(unit_rows, new_id)
        row_ptr, feat_pattern = self.renumber(new_id)
        return row_ptr, feat_pattern, self.vocabs, (unit_ptr, unit_rows, values)

    def _fill_vocabularies(self) -> None:
        """Each template's vocabulary from the rows ``_new_rows`` gave the
        key table's ids (while reading, only these are kept: a vocabulary's
        copy of the keys would double the keys' memory at the peak)."""
        keys = self.attributes.keys
        for ti, vocab in enumerate(self.vocabs):
            by_id = self.key_rows.table(ti)[:len(keys)]
            ids = np.flatnonzero(by_id >= 0)
            ids = ids[np.argsort(by_id[ids], kind="stable")]   # (keys in row order)
            vocab.assign_from(keys, ids, by_id[ids])
        self.key_rows = None

    @property
    def n_rows(self) -> int:
        return len(self.row_template)

    def summary(self, shard: int) -> RowSummary:
        """The rows read so far (``make_rows``), as shard ``shard``'s
        ``RowSummary``: each row's key, template, supported patterns and
        occurrences at gold units (0 unless a template has ``min_count``)."""
        if self.key_rows is not None:
            self._fill_vocabularies()
        vocabs = []
        for vocab in self.vocabs:
            keys, rows = vocab.keys_by_row()
            vocabs.append(dict(zip(keys, rows.tolist())))
        first = np.frombuffer(self.row_first, dtype=np.int64)
        more = np.fromiter(self.row_more, dtype=np.int64, count=len(self.row_more))
        has = np.flatnonzero(first >= 0)
        count = (self.row_count[:self.n_rows] if self.row_count is not None
                 else np.zeros(self.n_rows, dtype=np.int64))
        return RowSummary.of_shard(shard, vocabs,
                                   np.frombuffer(self.row_template, dtype=np.int32),
                                   np.concatenate([has, more // self.n_z]),
                                   np.concatenate([first[has], more % self.n_z]), count)

    def add_summary(self, summary: RowSummary) -> None:
        """Rows from the merge of the shards' summaries (the table holds none
        yet): the merged vocabularies, each row's template and supported
        patterns — the table a one-machine read of the shards in order makes."""
        for vocab, merged in zip(self.vocabs, summary.vocabs):
            if merged:
                vocab.assign(list(merged), np.fromiter(merged.values(), dtype=np.int64,
                                                       count=len(merged)))
        self.row_template = array("i", summary.template.astype(np.int32).tobytes())
        first = np.full(summary.n_rows, -1, dtype=np.int64)
        lead = np.ones(len(summary.pair_row), dtype=np.bool_)   # a row's first pair
        lead[1:] = summary.pair_row[1:] != summary.pair_row[:-1]
        first[summary.pair_row[lead]] = summary.pair_value[lead]
        self.row_first = array("q", first.tobytes())
        self.row_more = set((summary.pair_row[~lead] * self.n_z
                             + summary.pair_value[~lead]).tolist())

    def renumber(self, new_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Renumber the vocabularies' rows by ``new_id`` and make the
        features: (row_ptr, feat_pattern) over the new numbering."""
        for vocab in self.vocabs:
            vocab.renumber(new_id)
        return self._table(new_id)

    def check_size(self) -> None:
        """``_check_size`` of the rows added so far: how the distributed
        compile prices the driver's share (the features, the weights and
        the optimiser's vectors; no training data) before the workers
        encode their shards."""
        self._check_size(np.frombuffer(self.row_template, dtype=np.int32),
                         np.frombuffer(self.row_first, dtype=np.int64))

    def _check_size(self, template: np.ndarray, first: np.ndarray) -> None:
        """Count the features before making them and refuse, at the template
        that makes most, a model whose training would exceed the memory
        budget (``fgl.compile.footprint``)."""
        rows = np.bincount(template, minlength=len(self.plans))
        counts = []
        for ti, plan in enumerate(self.plans):
            if plan.support == "all":
                counts.append(int(rows[ti]) * len(self.pattern_sets[ti]))
            else:
                counts.append(int(np.count_nonzero(first[template == ti] >= 0)))
        counts[0] += len(self.row_more)   # (observed extra patterns; their template aside)
        notes = [f"would make {n:,} features (" + (
            f"{rows[ti]} attributes x {len(self.pattern_sets[ti])} patterns, support = all"
            if plan.support == "all" else f"{n:,} (attribute, pattern) pairs") + ")"
            for ti, (n, plan) in enumerate(zip(counts, self.plans))]
        fp = model_footprint(self.L, self.structure, counts, notes, len(template), self.n_tokens,
                        len(self.units.ptr) - 1, len(self.units.rows), self.longest,
                        self.n_sequences, self.jobs)
        fp.check(self.spec.templates)
        if only_sizing(sum(counts)):   # (fgl explain: the estimate, not the table)
            st = self.structure
            raise SizedOnly([
                f"labels (n = {st.n_labels}), patterns |Z| = {len(st.patterns)}, maximum order "
                f"{max(len(z) for z in st.patterns) - 1}",
                f"forward states |P| = {st.n_forward}, backward states |S| = |P|·n = "
                f"{st.n_backward}",
                f"features: {sum(counts):,} (counted, not built: more than "
                f"{sizes.SIZED_ONLY_FEATURES:,}; `fgl train` builds them)", "templates:",
                *[f"  {tpl.name}: {int(rows[ti]):,} attributes, {note}"
                  for ti, (tpl, note) in enumerate(zip(self.spec.templates, notes))],
                f"training data: {self.n_sequences} sequences, {self.n_tokens} tokens",
                fp.line()], fp)

    def _table(self, new_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The features as CSR over the renumbered rows: a row's supported
        patterns, or every pattern of its template when the template has
        ``support = all``; patterns ascending within a row."""
        n_z = self.n_z
        first = np.frombuffer(self.row_first, dtype=np.int64)
        template = np.frombuffer(self.row_template, dtype=np.int32)
        if self.check_budget:
            self._check_size(template, first)
        rows = np.arange(len(first))
        every = np.array([plan.support == "all" for plan in self.plans])
        observed = ~every[template] & (first >= 0)
        more = np.fromiter(self.row_more, dtype=np.int64, count=len(self.row_more))
        pair_row, pair_z = [rows[observed], more // n_z], [first[observed], more % n_z]
        for ti in np.flatnonzero(every):
            tpl_rows = rows[template == ti]
            zs = np.array(sorted(self.pattern_sets[ti].values()), dtype=np.int64)
            pair_row.append(np.repeat(tpl_rows, len(zs)))
            pair_z.append(np.tile(zs, len(tpl_rows)))
        row_id = new_id[np.concatenate(pair_row)].astype(np.int64)
        z = np.concatenate(pair_z)
        order = np.argsort(row_id * n_z + z, kind="stable")
        row_ptr = np.zeros(len(first) + 1, dtype=np.int64)
        row_ptr[1:] = np.cumsum(np.bincount(row_id, minlength=len(first)))
        return row_ptr, z[order]
