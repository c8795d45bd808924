"""`kseg dump`: every file of a data directory as a stream of typed events (plain dicts).

The events are the interface: JSON Lines emits them as they are, text and table render them.
Problems in the input become ``{"type": "error"}`` events and decoding continues where it
safely can. Nothing here opens a file for writing.

This module is the plan: the options checked against each other, the inputs resolved, and
each partition dir, root or file given dumped in order within one --limit (or counted, with
--count); kseg.dump.files dumps each of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import closing
from itertools import chain, islice
from pathlib import Path

from kseg import kernel
from kseg.dump.error_events import error_event
from kseg.dump.files import RECORD_KINDS, dump_file, dump_partition
from kseg.dump.options import DumpOptions
from kseg.dump.selection import Budget
from kseg.format.header_columns import StreamedEvent, StreamedLine
from kseg.outcome import BadOption
from kseg.storage import files as F
from kseg.storage import jobs, tree


def dump_paths(paths: list[Path], opts: DumpOptions) -> Iterator[dict]:
    """Every event, one at a time."""
    for chunk in dump_chunks(paths, opts):
        yield from chunk


def dump_chunks(paths: list[Path], opts: DumpOptions) -> Iterator[list[dict | bytes]]:
    """The events in lists (a batch's events travel together): the generator layers then cost
    once per batch, not once per record. With ``opts.json_lines`` record events are bytes (their
    finished JSON line); every other event stays a dict.

    The inputs are resolved first (kseg.storage.tree.resolve: a wrong path raises InputError
    before anything is printed). Every event from a partition's file carries ``topic`` and
    ``partition``; with several log.dirs roots every event also carries ``log_dir`` (JSON Lines;
    text and table name the file). With --payload schema, the problems met reading the schemas
    come first and a ``schema_summary`` last (kseg.dump.schema_events.summarized)."""
    if opts.batches_only and (
        opts.count or opts.record_filter is not None or opts.format_string is not None
    ):
        raise BadOption(
            "--batches-only shows no records: it cannot be combined with a record filter, "
            "--count or --format-string",
            "--batches-only",
        )
    if opts.count and opts.format_string is not None:
        raise BadOption("--count prints numbers only: leave out --format-string", "--count")
    sel = tree.resolve(paths, opts.topic, opts.partition)
    if opts.payload != "schema" and (opts.schema_source is not None or opts.strict):
        option = "--schemas" if opts.schema_source is not None else "--strict"
        raise BadOption(f"{option} is for --payload schema", option)
    if opts.payload == "schema" and not opts.batches_only:
        from kseg.dump.schema_events import prepare, summarized

        opts, problems = prepare(paths, opts)
        yield from summarized(_selected_chunks(sel, opts), opts, problems)
        return
    yield from _selected_chunks(sel, opts)


def _selected_chunks(sel, opts: DumpOptions) -> Iterator[list]:
    """dump_chunks' events of the resolved inputs, the options checked."""
    if opts.count:
        yield from _count_chunks(sel, opts)
        return
    json_lines = opts.json_lines is not None
    if json_lines or opts.record_filter is not None:
        kernel.compiled()  # a KSEG_KERNEL that cannot be had fails here, before any output
    several = sel.several_log_dirs
    budget = Budget(opts.limit)

    def work(item):
        return _item_chunks(item, opts, budget, several, json_lines)

    yield from _in_order(work, sel.items, _jobs(opts), budget)


def _item_chunks(item, opts: DumpOptions, budget: Budget, several: bool, json_lines: bool):
    """One item's chunks (a file, a partition dir, a root's own files)."""
    # JSON only: text and table lines name the file already
    tagged = json_lines or opts.format_string is not None  # %t and %p need them
    tags = partition_tags(item.name, item.log_dir if several else None) if tagged else {}
    if tagged and item.kind == tree.FILE and item.name is None and not item.log_dir:
        # a data file outside any <topic>-<partition> dir (not a root's own file): null
        tags = {"topic": None, "partition": None, **tags}
    mine = opts
    if opts.isolation == "read_committed":  # kseg.storage.isolation
        mine, problem = isolated(item, opts)
        if problem is not None:
            yield [{**problem, **tags}]
            if mine is None:
                return
    if item.kind == tree.FILE:
        yield from dump_file(item.path, mine, budget, tags)
    elif item.kind == tree.PARTITION:
        yield from dump_partition(item.path, mine, budget, tags)
    else:
        for f in tree.root_files(item.path):
            yield from dump_file(f, mine, budget, tags)


def _jobs(opts: DumpOptions) -> int | None:
    """The workers a dump's items are spread over: a search (a record filter) and --count in
    ``opts.jobs``; --limit (a stop shared by every item) and a plain dump (its events cost more
    to move between processes than to decode: docs/benchmarks-history.md) in this process."""
    if opts.limit is not None:
        return 1
    if opts.count or opts.record_filter is not None:
        return opts.jobs
    return 1


def _in_order(work, items: list, n: int | None, budget: Budget) -> Iterator:
    """Each item's chunks in order (kseg.storage.jobs), up to where --limit is spent.

    A record with many headers is made while it is written (kseg.format.header_columns: its
    headers read from the segment's buffer): such an event cannot leave the worker that made it.
    That worker stops its item there (_Streamed) and the item is walked again here, in this
    process, from its start, the chunks already shown left out (the walk is the same)."""
    with closing(jobs.in_order(_portable(work), items, n, jobs.NO_COUNTERS)) as walks:
        for item, walk in zip(items, walks, strict=True):
            try:
                yield from walk
            except _Streamed as stop:
                yield from islice(work(item), stop.args[0], None)
            if budget.spent:
                return


class _Streamed(Exception):
    """A worker met an event that cannot leave it (its chunks shown so far: args[0])."""


_LOCAL = (StreamedEvent, StreamedLine)


def _portable(work):
    """``work`` whose chunks a worker can send (see _in_order); in this process as it is."""
    main = os.getpid()

    def portable(item):
        if os.getpid() == main:
            return (yield from work(item))
        with closing(work(item)) as gen:
            for sent, chunk in enumerate(gen):
                for ev in chunk:
                    if type(ev) in _LOCAL:
                        raise _Streamed(sent)
                yield chunk

    return portable


def isolated(item, opts: DumpOptions) -> tuple[DumpOptions | None, dict | None]:
    """``opts`` with the item's read_committed view (kseg.storage.isolation), and an error event
    or None: one replay of its partition's transactions (a file inside a partition dir: that
    partition's; a segment outside any: the file alone; a root's own files, KRaft snapshots: no
    transaction, control batches left out). A replay stopped by damage: its error (the LSO is at
    most there: nothing past it is shown). A partition that cannot be replayed: its error, and
    None for the options (nothing shown of it)."""
    from kseg.storage.isolation import Committed, committed_for, replay_stopped

    try:
        if item.kind == tree.PARTITION:
            committed = committed_for(item.path)
        elif item.kind == tree.FILE and F.file_kind(item.path).kind == F.LOG:
            if item.name is not None:
                committed = committed_for(item.path.parent)
            else:
                committed = committed_for(item.path, loose=True)
        else:
            committed = Committed(1 << 63)
    except OSError as exc:
        return None, error_event(exc, str(item.path))
    problem = None
    if committed.error is not None:
        problem = error_event(committed.error, str(item.path))
        problem["message"] += replay_stopped("shown")
    return opts._replace(committed=committed), problem


def _count_chunks(sel, opts: DumpOptions) -> Iterator[list[dict]]:
    """--count: per partition dir (or file given alone) one ``match_count`` event, the number
    of records the dump would have shown (those the filter keeps, within the selectors and
    --limit), and a ``match_total`` at the end; problems are ``error`` events as in a dump."""
    several = sel.several_log_dirs
    budget = Budget(opts.limit)
    total = places = 0

    def work(item):
        return _count_item(item, opts, budget, several)

    for walk in jobs.in_order(work, sel.items, _jobs(opts), jobs.NO_COUNTERS):
        n, p = yield from walk
        total += n
        places += p
        if budget.spent:
            break
    yield [{"type": "match_total", "matches": total, "partitions": places}]


def _count_item(item, opts: DumpOptions, budget: Budget, several: bool):
    """One item's ``match_count`` events (and errors); returns (matches, places counted)."""
    total = places = 0
    for file, chunks in _count_places(item, opts, budget):
        n = 0
        for chunk in chunks:
            errors = []
            for ev in chunk:
                if ev is True:
                    n += 1
                elif ev["type"] in ("error", "skipped"):
                    errors.append(ev)
            if errors:
                yield errors
        ev = {"type": "match_count", **partition_tags(item.name, item.log_dir if several else None)}
        if file is not None:
            ev["file"] = str(file)
        ev["matches"] = n
        yield [ev]
        total += n
        places += 1
        if budget.spent:
            break
    return total, places


def _count_places(item, opts: DumpOptions, budget: Budget) -> Iterator[tuple]:
    """(file or None, chunks) for each place --count counts in ``item``: a partition dir, a file
    given alone, and a root's own files that hold records (``bootstrap.checkpoint``: the root is
    an item only without --topic/--partition), each such file on its own, as dump prints them."""
    mine, first = opts, []
    if opts.isolation == "read_committed":  # kseg.storage.isolation
        mine, problem = isolated(item, opts)
        if mine is None:
            yield item.path, iter([[problem]])
            return
        first = [[problem]] if problem is not None else []
    if item.kind == tree.FILE:
        yield item.path, chain(first, dump_file(item.path, mine, budget))
    elif item.kind == tree.PARTITION:
        yield None, chain(first, dump_partition(item.path, mine, budget))
    else:
        for f in tree.root_files(item.path):
            if F.file_kind(f).kind in RECORD_KINDS:
                yield f, dump_file(f, mine, budget)


def partition_tags(name: F.PartitionName | None, log_dir: Path | None = None) -> dict:
    """The fields that say where an event comes from: topic and partition (when the file lies in
    a partition dir) and the log dir (only when several roots are given)."""
    tags: dict = {}
    if name is not None:
        tags["topic"] = name.topic
        tags["partition"] = name.partition
    if log_dir is not None:
        tags["log_dir"] = str(log_dir)
    return tags
