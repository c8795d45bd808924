"""The `kseg` command line: parse options, call the library, render, map outcomes to exit codes.

This is the only module that prints or exits. Data goes to stdout, messages to stderr.
"""

from __future__ import annotations

import errno
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from . import interrupt
from .exitcodes import Exit, exit_for, help_text

app = typer.Typer(
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, powershell)
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Inspect, verify and repair Apache Kafka log segments on disk.\n\n"
    "PATH arguments: a file, a partition dir (<topic>-<n>), a log.dirs root, or a directory of "
    "roots (one per broker); a PATH with no Kafka partition, segment or data file is a usage "
    "error. Data goes to stdout, messages to stderr.\n\n"
    "Example:\n\n\b\n  kseg verify /var/lib/kafka/data && systemctl start kafka\n\n"
    + help_text("\b\n"),
)


def _version(value: bool) -> None:
    if value:
        from .version import version_line

        print(version_line())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            is_eager=True,
            callback=_version,
            help="Print the version (and which kernel decodes) and exit.",
        ),
    ] = False,
) -> None:
    pass


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    table = "table"


class Payload(str, Enum):
    auto = "auto"
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"
    json = "json"
    none = "none"
    redact = "redact"


class Decoder(str, Enum):
    auto = "auto"
    consumer_offsets = "consumer-offsets"
    transaction_state = "transaction-state"
    share_group_state = "share-group-state"
    cluster_metadata = "cluster-metadata"
    remote_log_metadata = "remote-log-metadata"
    none = "none"


# Options shared by several commands, declared once.
SegmentPathsArg = Annotated[
    list[Path],
    typer.Argument(
        help="Segment .log files, partition dirs, log.dirs roots or directories of roots.",
        show_default=False,
        readable=False,  # kseg reports an unreadable path itself: exit 8, not a usage error
    ),
]
TopicOpt = Annotated[
    str | None, typer.Option(help="With a log.dirs root: topics matching this regex.")
]
PartitionOpt = Annotated[
    int | None, typer.Option(min=0, help="With a log.dirs root: only this partition number.")
]
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress bar (it is drawn only when stderr is a terminal)."
    ),
]
FormatOpt = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="text, json (JSON Lines) or table.")
]


def _stderr(message: str) -> None:
    try:
        _stdout().flush()  # keep data and messages in order on a terminal
    except OSError:
        pass  # stdout is gone or full: main() reports that; the message still goes out
    from .decode.render import one_line

    sys.stderr.write(f"kseg: {one_line(message)}\n")


# What the running command has found so far, for an exit status when output stops early (a
# closed pipe: `kseg dump corrupt | head` still exits 4 if the corruption came before the close).
_found_so_far = None

# errno values that only a write can give: stdout is full or over a limit
_OUTPUT_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that buffered output can be dropped without more errors."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


_OUT = None


def _stdout():
    """stdout as one 1 MiB buffer: small writes become memcpys, flushed in large chunks (a fresh
    buffer per flush, or a syscall per line, costs more than encoding the JSON)."""
    global _OUT
    if _OUT is None:
        import io

        try:
            fd = sys.stdout.fileno()
            sys.stdout.flush()
            _OUT = io.BufferedWriter(io.FileIO(fd, "wb", closefd=False), buffer_size=1 << 20)
        except (AttributeError, OSError, ValueError):  # no real descriptor (embedded, captured)
            _OUT = sys.stdout.buffer
    return _OUT


def _time_option(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    from .lookup.timeexpr import parse_time

    try:
        return parse_time(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=name) from None


@app.command()
def dump(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files, partition dirs, log.dirs roots or directories of roots.",
            show_default=False,
            readable=False,  # kseg reports an unreadable path itself: exit 8
        ),
    ],
    fmt: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="text, json (JSON Lines) or table.")
    ] = OutputFormat.text,
    payload: Annotated[
        Payload, typer.Option(help="How keys, values and header values are shown.")
    ] = Payload.auto,
    batches_only: Annotated[
        bool, typer.Option("--batches-only", help="Batch headers only; no record decoding.")
    ] = False,
    decoder: Annotated[
        Decoder,
        typer.Option(
            help="Decode internal-topic records (auto: by topic name; KRaft snapshots and "
            "bootstrap.checkpoint as cluster-metadata)."
        ),
    ] = Decoder.auto,
    skip_record_metadata: Annotated[
        bool,
        typer.Option(
            "--skip-record-metadata",
            help="Records as offset and decoded payload only (no batch lines), like kafka-dump-log.",
        ),
    ] = False,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    from_offset: Annotated[
        int | None,
        typer.Option(min=0, help="First offset to show (the offset index is used to jump)."),
    ] = None,
    to_offset: Annotated[int | None, typer.Option(min=0, help="Last offset to show.")] = None,
    from_time: Annotated[
        str | None, typer.Option(help="Records with timestamp >= this (ms, ISO-8601, or -30m).")
    ] = None,
    to_time: Annotated[str | None, typer.Option(help="Records with timestamp <= this.")] = None,
    limit: Annotated[
        int | None,
        typer.Option(min=0, help="Stop after this many records (batches with --batches-only)."),
    ] = None,
    max_bytes: Annotated[
        int | None,
        typer.Option(min=0, help="Read only whole batches within the first N bytes of each log."),
    ] = None,
    quiet: QuietOpt = False,
) -> None:
    """Decode every file of a Kafka data directory (read-only).

    Exit codes: 0 decoded cleanly; 4 something in the input was invalid (reported as an error
    line/object, decoding continued where it safely could); 8 a file could not be read; 16 usage.

    Example:

    \b
      kseg dump /var/lib/kafka/data/orders-0 --from-time -30m --limit 20
      kseg dump /var/lib/kafka/data --topic '^orders$' -f json | jq -c 'select(.type=="record")'
    """
    from . import progress
    from .decode.dump import DumpOptions, dump_chunks, dump_progress, total_bytes

    opts = DumpOptions(
        batches_only=batches_only,
        payload=payload.value,
        from_offset=from_offset,
        to_offset=to_offset,
        from_time=_time_option(from_time, "--from-time"),
        to_time=_time_option(to_time, "--to-time"),
        limit=limit,
        max_bytes=max_bytes,
        topic=topic,
        partition=partition,
        decoder={"auto": None, "none": "none"}.get(decoder.value, decoder.value),
        skip_record_metadata=skip_record_metadata,
        json_lines=fmt is OutputFormat.json,
    )
    out = _stdout()
    show = progress.wanted(quiet, stdout_to_file=True)
    with progress.Bar(show, "dump", total_bytes(paths) if show else None) as bar:
        code = _dump_events(dump_progress(dump_chunks(paths, opts), bar), fmt, out)
    out.flush()
    raise typer.Exit(int(code))


def _dump_events(chunks, fmt: OutputFormat, out) -> Exit:
    from .decode.dump import UNREADABLE, USAGE
    from .decode.render import write_json_chunks, write_text_chunks
    from .decode.table import write_dump_table

    code = Exit.OK
    global _found_so_far
    _found_so_far = lambda: code  # noqa: E731 - read when a closed pipe stops output
    if fmt is OutputFormat.table:
        written = write_dump_table(chunks, out)
    else:
        written = (write_json_chunks if fmt is OutputFormat.json else write_text_chunks)(
            chunks, out
        )
    for chunk in written:
        for ev in chunk:
            if type(ev) is bytes or ev["type"] != "error":
                continue
            kind = ev["kind"]
            code |= (
                Exit.OPERATIONAL
                if kind == UNREADABLE
                else Exit.USAGE
                if kind == USAGE
                else Exit.PROBLEMS
            )
            if fmt is not OutputFormat.json:
                where = f" at byte {ev['position']}" if ev.get("position") is not None else ""
                _stderr(f"{ev['file']}{where}: {ev['kind']}: {ev['message']}")
    return code


index_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Rebuild or check `.index`/`.timeindex`/`.txnindex` files offline, exactly as Kafka's recovery writes them.",
)
app.add_typer(index_app, name="index")

IntervalOpt = Annotated[
    int,
    typer.Option(
        "--index-interval-bytes",
        min=0,
        help="The topic's index.interval.bytes (kseg cannot know it; Kafka's default is 4096).",
    ),
]


def _emit(events, fmt: OutputFormat, line, out=None) -> object:
    """Render events (JSON Lines, text via ``line``, or tables) to stdout; yields them back."""
    from .decode.render import write_json, write_text
    from .decode.table import write_tables

    out = out or _stdout()
    if fmt is OutputFormat.json:
        return write_json(events, out)
    if fmt is OutputFormat.table:
        return write_tables(events, out)
    return write_text(events, out, line)


def _selection(paths: list[Path], topic: str | None, partition: int | None):
    """Resolve the inputs up front (kseg.storage.tree): a wrong path fails before any work, with
    the exit code of its kind (tree.InputError, mapped in main)."""
    from .storage.tree import resolve

    return resolve(paths, topic, partition, logs_only=True)


def _targets(paths: list[Path], topic: str | None, partition: int | None):
    return _selection(paths, topic, partition).targets()


def _tags(t, several: bool) -> dict:
    """topic, partition (and log_dir with several roots) for a target's JSON objects."""
    from .decode.dump import partition_tags

    return partition_tags(t.name, t.log_dir if several else None) or {
        "topic": None,
        "partition": None,
    }


@index_app.command("rebuild")
def index_rebuild(
    paths: SegmentPathsArg,
    index_interval_bytes: IntervalOpt = 4096,
    preallocate: Annotated[
        bool, typer.Option(help="Zero-pad the active segment's indexes like a running broker.")
    ] = False,
    segment_index_bytes: Annotated[
        int, typer.Option(min=0, help="segment.index.bytes, the preallocated size.")
    ] = 10 * 1024 * 1024,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would change; write nothing.")
    ] = False,
    backup: Annotated[
        Path | None, typer.Option(help="Copy replaced index files into this directory first.")
    ] = None,
    force: Annotated[
        bool, typer.Option(help="Run even though a broker holds <log.dir>/.lock.")
    ] = False,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    fmt: FormatOpt = OutputFormat.text,
    quiet: QuietOpt = False,
) -> None:
    """Write each segment's indexes exactly as Kafka's LogSegment.recover would (temp file, fsync, rename).

    Stops at the first invalid batch like recovery and reports it (the log is not truncated: that
    is `verify --repair`). Exit codes: 0 done, 4 corruption found (indexes cover the valid prefix),
    8 operational error (broker lock held, write failed), 16 usage.

    Example:

    \b
      kseg index rebuild /var/lib/kafka/data/orders-0 --dry-run
      kseg index rebuild /var/lib/kafka/data --topic '^orders$' --backup /tmp/old-indexes
    """
    from .storage.atomic import fix_hint, remove_stale_temps
    from .storage.files import looks_like_log_dir
    from .storage.lock import LogDirLocks
    from .verify.rebuild import UNCHANGED, rebuild_target

    code = Exit.OK
    global _found_so_far
    _found_so_far = lambda: code  # noqa: E731 - read when a closed pipe stops output
    sel = _selection(paths, topic, partition)
    tlist, several = sel.targets(), sel.several_log_dirs
    if backup is not None:
        for log_dir in {t.log_dir.resolve() for t in tlist}:
            if backup.resolve().is_relative_to(log_dir) and looks_like_log_dir(log_dir):
                raise typer.BadParameter(
                    f"{backup} is inside the log dir {log_dir}: Kafka refuses to start with a "
                    "directory there that is not a partition; choose a place outside it",
                    param_hint="--backup",
                )
    locks = LogDirLocks(force=force)
    refused: set[Path] = set()
    if not dry_run:  # every log dir's lock before anything is written
        refused, failures, notices = locks.acquire_all((t.log_dir for t in tlist), "rebuilding")
        for message in failures + notices:
            _stderr(message)
        if refused:
            code |= Exit.OPERATIONAL

    def events():
        nonlocal code
        segments = changed = 0
        for t in tlist:
            if t.log_dir.resolve() in refused:
                continue
            try:
                if not dry_run and locks.holds(t.log_dir):
                    remove_stale_temps(t.partition_dir)  # of a rebuild killed before
                results = rebuild_target(
                    t,
                    index_interval_bytes=index_interval_bytes,
                    preallocate=preallocate,
                    offset_index_bytes=segment_index_bytes,
                    dry_run=dry_run,
                    backup_dir=backup,
                )
            except OSError as exc:
                _stderr(
                    f"{exc.filename or t.partition_dir}: {exc.strerror or exc}: not rebuilt"
                    f"{fix_hint(exc)}"
                )
                code |= Exit.OPERATIONAL
                continue
            for r in results:
                segments += 1
                changed += sum(f.action != UNCHANGED for f in r.files)
                if r.error is not None:
                    code |= Exit.PROBLEMS
                yield {
                    "type": "index_rebuild",
                    "file": str(r.scan.log),
                    **_tags(t, several),
                    "base_offset": r.scan.base_offset,
                    "size": r.scan.size,
                    "valid_bytes": r.scan.valid_bytes,
                    "dry_run": dry_run,
                    "files": [f.to_dict() for f in r.files],
                    "error": r.error.to_event() if r.error else None,
                }
        yield {
            "type": "summary",
            "segments": segments,
            "files_changed": changed,
            "dry_run": dry_run,
            "exit_code": int(code),
        }

    def line(ev):
        if ev["type"] == "summary":
            verb = "would change" if ev["dry_run"] else "changed"
            return f"{ev['segments']} segments, {ev['files_changed']} index files {verb}"
        parts = [
            f"{Path(f['file']).suffix} {f['action']} ({f['entries']} entries)" for f in ev["files"]
        ]
        text = f"{ev['file']}: valid {ev['valid_bytes']}/{ev['size']} bytes; " + "; ".join(parts)
        if ev["error"]:
            e = ev["error"]
            text += f"\n  ERROR {e['kind']} at byte {e['position']}: {e['message']} (indexes cover the bytes before it)"
        return text

    from . import progress

    show = progress.wanted(quiet)
    with locks, progress.Bar(show, "index rebuild", _log_bytes(tlist) if show else None) as bar:
        out = progress.stdout_through(bar, _stdout())
        for _ in _emit(_segment_progress(events(), bar), fmt, line, out):
            pass
        out.flush()
    raise typer.Exit(int(code))


@index_app.command("check")
def index_check(
    paths: SegmentPathsArg,
    index_interval_bytes: IntervalOpt = 4096,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Compare existing indexes with a rebuild: identical, equivalent (different bytes, every lookup
    still correct under Kafka's rules, e.g. live multi-batch appends or follower-written entries),
    wrong (a lookup would go wrong, or sanity fails) or missing.

    Exit codes: 0 no wrong index, 4 a wrong index or a corrupt log, 8 unreadable, 16 usage.

    Example:

    \b
      kseg index check /var/lib/kafka/data --index-interval-bytes 4096
    """
    from .verify.index_check import WRONG
    from .verify.segment import scan_segment

    order = {"identical": 0, "equivalent": 1, "missing": 2, "wrong": 3}
    code = Exit.OK
    global _found_so_far
    _found_so_far = lambda: code  # noqa: E731 - read when a closed pipe stops output
    sel = _selection(paths, topic, partition)
    tlist, several = sel.targets(), sel.several_log_dirs

    def events():
        nonlocal code
        counts = dict.fromkeys(order, 0)
        for t in tlist:
            if not t.logs:  # none, or the directory could not be listed: say which
                try:
                    next(t.partition_dir.iterdir(), None)
                except OSError as exc:
                    _stderr(f"{t.partition_dir}: {exc.strerror or exc}")
                    code |= Exit.OPERATIONAL
            for log in t.logs:
                try:
                    scan = scan_segment(log, index_interval_bytes=index_interval_bytes)
                except OSError as exc:  # name the file that failed: the log or an index
                    _stderr(f"{exc.filename or log}: {exc.strerror or exc}")
                    code |= Exit.OPERATIONAL
                    continue
                status = max(
                    (scan.offset_index.status, scan.time_index.status), key=order.__getitem__
                )
                counts[status] += 1
                if status == WRONG or scan.first_error is not None:
                    code |= Exit.PROBLEMS
                yield {
                    "type": "index_check",
                    "file": str(log),
                    **_tags(t, several),
                    "status": status,
                    "offset_index": scan.offset_index.to_dict(),
                    "time_index": scan.time_index.to_dict(),
                    "log_error": scan.first_error.to_event() if scan.first_error else None,
                }
        yield {"type": "summary", **counts, "exit_code": int(code)}

    def line(ev):
        if ev["type"] == "summary":
            return ", ".join(f"{ev[k]} {k}" for k in order)
        parts = []
        for suffix, key in ((".index", "offset_index"), (".timeindex", "time_index")):
            s = ev[key]
            text = (
                f"{suffix} {s['status']} ({s['entries']} entries, rebuilt {s['rebuilt_entries']})"
            )
            if s["first_difference"] and s["status"] != "identical":
                d = s["first_difference"]
                text += f" first difference at entry {d['entry']} (byte {d['position']}): {d['message']}"
            parts.append(text)
        out = f"{ev['file']}: {ev['status']}: " + "; ".join(parts)
        if ev["log_error"]:
            e = ev["log_error"]
            out += f"\n  ERROR {e['kind']} at byte {e['position']}: {e['message']}"
        return out

    for _ in _emit(events(), fmt, line):
        pass
    raise typer.Exit(int(code))


VERIFY_HELP = """Check CRCs, structure, offsets, indexes and checkpoint files; with --repair, fix them
the way Kafka's recovery would, keeping every removed byte.

Exit codes (a bitmask, OR-ed over everything checked):
0 clean; 1 problems found and all repaired; 4 problems left unrepaired;
8 operational error (unreadable file, broker holds the lock, repair failed);
16 usage error; 32 interrupted.

Example:

\b
  kseg verify /var/lib/kafka/data --deep
  kseg verify /var/lib/kafka/data --repair --dry-run
"""


@app.command(help=VERIFY_HELP)
def verify(
    paths: SegmentPathsArg,
    repair: Annotated[
        bool,
        typer.Option(
            help="Truncate at the first invalid batch, quarantine what follows, rebuild indexes."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="With --repair: print the plan, change nothing.")
    ] = False,
    deep: Annotated[
        bool,
        typer.Option(help="Also decode every record (decompressing): lengths, varints, offsets."),
    ] = False,
    keep_later_segments: Annotated[
        bool, typer.Option(help="Leave segments after a truncation in place (Kafka deletes them).")
    ] = False,
    quarantine: Annotated[
        Path | None,
        typer.Option(
            help="Where removed bytes go (default: <log.dir>/../kseg-quarantine/<log.dir name>/)."
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option(help="Repair even though a broker holds <log.dir>/.lock.")
    ] = False,
    index_interval_bytes: IntervalOpt = 4096,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    fmt: FormatOpt = OutputFormat.text,
    problems_only: Annotated[
        bool,
        typer.Option("--problems-only", help="Leave out the segments that are ok (findings stay)."),
    ] = False,
    quiet: QuietOpt = False,
) -> None:
    from . import progress
    from .verify.run import VerifyOptions, VerifyRun

    if dry_run and not repair:
        raise typer.BadParameter("--dry-run goes with --repair", param_hint="--dry-run")
    opts = VerifyOptions(
        deep,
        repair,
        dry_run,
        keep_later_segments,
        quarantine,
        force,
        index_interval_bytes,
        topic,
        partition,
    )
    sel = _selection(paths, topic, partition)  # a wrong path fails up front
    run = VerifyRun(opts)
    global _found_so_far
    _found_so_far = lambda: run.code  # noqa: E731
    show = progress.wanted(quiet)
    try:
        with progress.Bar(show, "verify", _log_bytes(sel.targets()) if show else None) as bar:
            shown = _segment_progress(_data_only(run.events(sel)), bar, problems_only)
            out = progress.stdout_through(bar, _stdout())
            for ev in _emit(shown, fmt, _verify_line, out):
                if ev["type"] == "finding" and ev["kind"] == "unreadable":
                    # kseg could not do its job there: a failure, so stderr says it too
                    _stderr(f"{ev['file']}: {ev['kind']}: {ev['message']}")
            out.flush()
    except interrupt.Interrupted as exc:
        exc.code |= int(run.code)  # the bitmask keeps what was already found
        raise
    raise typer.Exit(int(run.code))


def _log_bytes(tlist) -> int:
    total = 0
    for t in tlist:
        for log in t.logs:
            try:
                total += log.stat().st_size
            except OSError:
                pass
    return total


def _segment_progress(events, bar, problems_only: bool = False):
    """Advance ``bar`` by each segment's size as its event passes (once per segment);
    ``problems_only`` drops the segments that are ok."""
    for ev in events:
        t = ev["type"]
        if t == "segment" or t == "index_rebuild":
            bar.advance(ev.get("size") or 0)
            if problems_only and ev.get("status") == "ok":
                continue
        yield ev


def _data_only(events):
    """Failures and notices go to stderr as one line each; everything else is data for stdout."""
    for ev in events:
        if ev["type"] in ("failure", "notice"):
            _stderr(ev["message"])
        else:
            yield ev


def _verify_line(ev: dict) -> str | None:
    t = ev["type"]
    if t == "finding":
        where = f" byte {ev['position']}" if ev["position"] is not None else ""
        off = f" offset {ev['offset']}" if ev["offset"] is not None else ""
        tag = " (remaining after repair)" if ev.get("remaining") else ""
        return (
            f"{ev['severity'].upper()} {ev['kind']} {ev['file']}{where}{off}: {ev['message']}{tag}"
        )
    if t == "segment":
        if ev["status"] in ("ok", "repaired"):
            return f"{ev['file']}: {ev['status']} ({ev['size']} bytes)"
        if ev["status"] == "corrupt" and ev["valid_bytes"] == ev["size"]:
            return (
                f"{ev['file']}: corrupt (nothing to truncate: bytes outside the CRC need a patch)"
            )
        return f"{ev['file']}: {ev['status']} (valid {ev['valid_bytes']} of {ev['size']} bytes)"
    if t == "repair_action":
        pre = "[dry-run] " if ev["dry_run"] else ""
        if ev["action"] == "truncate":
            return f"{pre}truncate {ev['file']} to {ev['position']} bytes ({ev['length']} bytes to quarantine): {ev['reason']}"
        if ev["action"] == "move":
            return f"{pre}move {ev['file']} to quarantine: {ev['reason']}"
        if ev["action"] == "patch":
            return f"{pre}patch {ev['file']} byte {ev['position']}: {ev['old_hex']} -> {ev['new_hex']} ({ev['reason']})"
        return f"{pre}{ev['action']} {ev['file']}: {ev['reason']}"
    if t == "repair_done":
        return f"repaired {ev['partition_dir']}: {ev['actions']} actions; removed bytes and manifest in {ev['quarantine']}"
    if t == "kafka_recovery":
        return f"KAFKA RECOVERY {ev['partition_dir']}: {ev['summary']}"
    if t == "repair_resumed":
        return f"resumed an interrupted repair of {ev['partition_dir']} ({ev['quarantine']})"
    if t == "summary":
        return (
            f"{ev['partitions']} partitions, {ev['segments']} segments: {ev['errors']} errors, "
            f"{ev['warnings']} warnings, {ev['infos']} info; {ev['repaired']} repaired; exit {ev['exit_code']}"
        )
    return None


def _spark_verify_line(ev: dict) -> str | None:
    """Spark's summary counts partitions and findings (segments are counted on the executors)."""
    if ev["type"] == "summary":
        return (
            f"{ev['partitions']} partitions: {ev['errors']} errors, {ev['warnings']} warnings, "
            f"{ev['infos']} info; exit {ev['exit_code']}"
        )
    return _verify_line(ev)


@app.command()
def restore(
    quarantine_dir: Annotated[
        Path,
        typer.Argument(
            help="A partition's quarantine dir (holds manifest.json) or a run's dir (one per "
            "partition), as written by verify --repair.",
        ),
    ],
    force: Annotated[
        bool, typer.Option(help="Restore even though a broker holds <log.dir>/.lock.")
    ] = False,
    base_dir: Annotated[
        Path | None,
        typer.Option(
            help="For a manifest written by an older kseg with relative paths: the directory "
            "the repair was run from."
        ),
    ] = None,
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Undo a repair: truncated bytes appended back, quarantined segments and old index files put back.

    Everything is checked before anything changes: each file is as the repair left it (or already
    restored), each quarantined file matches the sha256 in the manifest, free space suffices.
    Exit codes: 0 restored, 8 refused or failed (the partition changed since the repair, a
    manifest or quarantined file does not check out, lock held, no space), 16 usage.

    Example:

    \b
      kseg restore /var/lib/kafka/kseg-quarantine/data/20261122T093000Z-orders-3
    """
    from .format.errors import KsegError
    from .storage.lock import LogDirLocks
    from .verify.restore import NotAQuarantine, apply_restore, plan_restore

    with LogDirLocks(force=force) as locks:
        try:
            plans = plan_restore(quarantine_dir, locks, base_dir=base_dir)
        except NotAQuarantine as exc:
            raise typer.BadParameter(str(exc), param_hint="QUARANTINE_DIR") from None
        except (KsegError, OSError) as exc:
            text = _describe(exc)
            _stderr(text if "nothing was changed" in text else f"{text}; nothing was changed")
            raise typer.Exit(int(Exit.OPERATIONAL)) from None

        def events():
            total = 0
            for pr in plans:
                if pr.note:
                    _stderr(f"{pr.qdir}: {pr.note}")
                for a in apply_restore(pr):
                    total += 1
                    yield {
                        "type": "restored",
                        "action": a.action,
                        "file": a.file,
                        "quarantine": str(pr.qdir),
                    }
            yield {
                "type": "summary",
                "partitions": len(plans),
                "restored": total,
                "exit_code": 0,
            }

        def line(ev):
            if ev["type"] == "summary":
                return (
                    f"restored {ev['restored']} actions in {ev['partitions']} partitions "
                    f"from {quarantine_dir}"
                )
            return f"undid {ev['action']} of {ev['file']}"

        try:
            for _ in _emit(events(), fmt, line):
                pass
        except (KsegError, OSError) as exc:
            _stderr(
                f"restore stopped: {_describe(exc)}; fix the cause and run the same `kseg restore` "
                "again to finish"
            )
            raise typer.Exit(int(Exit.OPERATIONAL)) from None
    raise typer.Exit(0)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)


class SeekFormat(str, Enum):
    text = "text"
    json = "json"
    table = "table"
    reset_csv = "reset-csv"


def _parse_target(value: str, now: str | None) -> int:
    from .lookup.seek import SPECIAL_NAMES
    from .lookup.timeexpr import parse_time

    if now is not None:
        _time_option(now, "--now")  # a bad --now is a usage error even when --time ignores it
    v = value.strip().lower()
    if v in SPECIAL_NAMES:
        return SPECIAL_NAMES[v]
    if v.lstrip("-").isdigit():
        n = int(v)  # epoch ms, or a special target number (-1, -2, -3)
        if not -(1 << 63) <= n < 1 << 63:
            raise typer.BadParameter(
                f"{value} is outside the 64-bit range of Kafka timestamps", param_hint="--time"
            )
        return n
    try:
        now_ms = parse_time(now) if now is not None else None
        # an ISO or relative time before 1970 means "from the start", not a special target
        return max(0, parse_time(value, now_ms))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--time") from None


@app.command()
def seek(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Partition dirs, log.dirs roots or directories of roots.",
            show_default=False,
            readable=False,  # kseg reports an unreadable path itself: exit 8
        ),
    ],
    time_: Annotated[
        str | None,
        typer.Option(
            "--time",
            help="Epoch ms, now, ISO-8601 (2026-11-21T09:30:00.000, zone Z/+09:00; none: UTC), "
            "a duration before now (PT30M, P1DT2H), relative (-30m, -2h, -1d), "
            "or latest/-1, earliest/-2, max-timestamp/-3.",
        ),
    ] = None,
    offset: Annotated[
        int | None,
        typer.Option("--offset", min=0, help="Where does this offset live? (segment and byte)"),
    ] = None,
    now: Annotated[
        str | None, typer.Option(help="What relative times count from (default: the clock).")
    ] = None,
    data_only: Annotated[
        bool,
        typer.Option("--data-only", help="Answer data records only, never a transaction marker."),
    ] = False,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    fmt: Annotated[
        SeekFormat,
        typer.Option(
            "--format", "-f", help="text, json, table, or reset-csv (topic,partition,offset)."
        ),
    ] = SeekFormat.text,
) -> None:
    """Offset for a timestamp, exactly as the broker's ListOffsets answers it; or segment and
    byte position for an offset. Reads index tails, one time index, one offset index and a few batches.

    reset-csv prints `topic,partition,offset` for `kafka-consumer-groups.sh --reset-offsets --from-file`;
    a partition with no record at or after the time gets its log end offset, as
    kafka-consumer-groups' --to-datetime does.

    Exit codes: 0 answered (even "no offset"), 4 a partition could not be answered because of
    corruption, 8 unreadable input, 16 usage.

    Example:

    \b
      kseg seek /var/lib/kafka/data --topic '^orders$' --time 2026-11-21T09:30:00Z -f reset-csv > reset.csv
      kseg seek /var/lib/kafka/data/orders-0 --offset 123456
    """
    from .lookup.seek import seek_offset, seek_time

    if (time_ is None) == (offset is None):
        raise typer.BadParameter(
            "give exactly one of --time and --offset", param_hint="--time/--offset"
        )
    target = _parse_target(time_, now) if time_ is not None else None
    sel = _selection(paths, topic, partition)
    tlist = sel.targets()
    several = sel.several_log_dirs
    code = Exit.OK
    global _found_so_far
    _found_so_far = lambda: code  # noqa: E731 - read when a closed pipe stops output
    answered: list[Path] = []  # the partition dir of each event, in order

    def events():
        nonlocal code
        for t in tlist:
            try:
                res = (
                    seek_time(t.partition_dir, target, data_only=data_only)
                    if target is not None
                    else seek_offset(t.partition_dir, offset)
                )
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint="--time") from None
            except OSError as exc:
                _stderr(f"{exc.filename or t.partition_dir}: {exc.strerror or exc}")
                code |= Exit.OPERATIONAL
                continue
            for w in res.warnings:
                _stderr(w)
            if res.error is not None:
                _stderr(f"{t.partition_dir}: {res.error}")
                code |= Exit.PROBLEMS
            ev = res.to_event()
            if (
                fmt is SeekFormat.reset_csv
                and target is not None
                and ev["offset"] is None
                and res.error is None
            ):
                from .lookup.seek import LATEST

                ev["offset"] = seek_time(t.partition_dir, LATEST).offset
            if several:
                ev["log_dir"] = str(t.log_dir)
            answered.append(t.partition_dir)
            yield ev

    from .format.timestamps import with_iso

    def line(ev):
        # a directory not named <topic>-<partition> has no topic: name the directory instead
        name = f"{ev['topic']}-{ev['partition']}" if ev["topic"] is not None else str(answered[-1])
        if "log_dir" in ev:
            name += f" [{ev['log_dir']}]"
        if ev["type"] == "seek_offset":
            if ev["status"] in ("found", "in_gap"):
                gap = (
                    ""
                    if ev["status"] == "found"
                    else f"not present (compacted); next offset {ev['offset']} "
                )
                return f"{name}: offset {ev['target_offset']} {gap}in {ev['segment']} at byte {ev['position']} (batch {ev['batch_base_offset']}..{ev['batch_last_offset']})"
            if ev["status"] == "corrupt":
                return f"{name}: could not answer: {ev['error']}"
            return f"{name}: offset {ev['target_offset']} is {ev['status'].replace('_', ' ')} (log start {ev['log_start_offset']}, log end {ev['log_end_offset']})"
        if ev["error"]:
            return f"{name}: could not answer: {ev['error']}"
        if ev["offset"] is None:
            target = with_iso(ev["target"]) if ev["target"] >= 0 else ev["target"]
            return f"{name}: no offset: no record at or after {target}"
        where = f" in {ev['segment']} at byte {ev['position']}" if ev["segment"] else ""
        ts = f" timestamp {with_iso(ev['timestamp'])}" if ev["timestamp"] is not None else ""
        ep = f" leader epoch {ev['leader_epoch']}" if ev["leader_epoch"] is not None else ""
        return f"{name}: offset {ev['offset']}{ts}{ep}{where}"

    out = _stdout()
    if fmt is SeekFormat.reset_csv:
        if target is None:
            raise typer.BadParameter("reset-csv goes with --time", param_hint="--format")
        from .lookup.seek import reset_rows

        answers = ((ev, answered[-1]) for ev in events())
        for row in reset_rows(answers, _stderr):
            out.write(f"{row[0]},{row[1]},{row[2]}\n".encode())
    else:
        for _ in _emit(events(), OutputFormat(fmt.value), line):
            pass
    out.flush()
    raise typer.Exit(int(code))


spark_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Read, verify and export whole data directories on Apache Spark (pip install 'kseg[spark]').",
)
app.add_typer(spark_app, name="spark")

MasterOpt = Annotated[
    str, typer.Option(help="Spark master (default local[*]; under spark-submit, its own).")
]
ConfOpt = Annotated[list[str] | None, typer.Option("--conf", help="Spark config k=v (repeatable).")]


def _spark_inputs(inputs: list[str], topic: str | None, *, records: bool = False) -> None:
    """Classify the inputs before Spark starts (seconds): a wrong path or regex fails at once,
    with the same rules and exit codes as the local commands. ``records``: the records table
    has Spark's Kafka schema (no log dir), so replicas read from several roots are said."""
    from .spark.planning import Prune, find_partitions
    from .storage.tree import NO_MATCH, InputError

    found = find_partitions(inputs, Prune(topic=topic))
    replicas: dict[tuple[str, int], list[str]] = {}
    for _, t, p, log_dir in found:
        replicas.setdefault((t, p), []).append(log_dir)
    several = {tp: dirs for tp, dirs in replicas.items() if len(dirs) > 1}
    if records and several:
        (t, p), dirs = next(iter(several.items()))
        _stderr(
            f"{len(several)} partitions have replicas in several log dirs (e.g. {t}-{p} in "
            f"{', '.join(dirs)}): the records table holds every replica's records; pass one "
            "root per partition to read each record once"
        )
    if not found:
        why = (
            f"no partition matches --topic {topic!r}"
            if topic is not None
            else "no live partition directory to read (only root files, or only -delete/-future/-stray dirs)"
        )
        raise InputError(NO_MATCH, " ".join(inputs), why)


def _spark(master: str, conf: list[str] | None):
    try:
        from .spark import session
    except ImportError as exc:
        _stderr(f"Spark support needs the spark extra: pip install 'kseg[spark]' ({exc})")
        raise typer.Exit(int(Exit.OPERATIONAL)) from None
    pairs = {}
    for item in conf or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"expected k=v, got {item!r}", param_hint="--conf")
        pairs[key] = value
    spark = session(None if master == "from-spark-submit" else master, pairs)
    interrupt.install()  # pyspark's SparkContext installed its own SIGINT handler
    return spark


def _spark_input(inputs: list[str], topic: str | None, *, segments: bool = True) -> None:
    """Nothing to read is a usage error, said in one line before Spark starts (seconds saved)."""
    from .spark.jobs import NoInput, require_input

    try:
        require_input(inputs, topic, segments=segments)
    except NoInput as exc:
        _stderr(str(exc))
        raise typer.Exit(int(Exit.USAGE)) from None


def _spark_bar(spark, quiet: bool, description: str):
    from . import progress

    return progress.SparkBar(progress.wanted(quiet), spark, description)


def _spark_filters(topic, from_time, to_time) -> dict:
    return {
        "topic": topic,
        "fromTime": _time_option(from_time, "--from-time"),
        "toTime": _time_option(to_time, "--to-time"),
    }


@spark_app.command("export")
def spark_export(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="log.dirs roots, trees of them, or partition dirs (paths or URIs).",
            show_default=False,
        ),
    ],
    out: Annotated[str, typer.Option("--out", help="Output directory (path or URI).")],
    fmt: Annotated[str, typer.Option("--format", help="parquet or json.")] = "parquet",
    partition_by: Annotated[
        str, typer.Option(help="Comma list of columns to partition the output by ('' for none).")
    ] = "topic,partition",
    headers: Annotated[bool, typer.Option(help="Include the headers column.")] = True,
    topic: TopicOpt = None,
    from_time: Annotated[str | None, typer.Option(help="Records with timestamp >= this.")] = None,
    to_time: Annotated[str | None, typer.Option(help="Records with timestamp <= this.")] = None,
    master: MasterOpt = "local[*]",
    conf: ConfOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Write the records table (Spark's Kafka source schema) as Parquet or JSON.

    Example:

    \b
      kseg spark export /data/kafka-logs --out /tmp/records --topic '^orders$'
    """
    from .spark import export

    if fmt not in ("parquet", "json"):
        raise typer.BadParameter("parquet or json", param_hint="--format")
    _spark_inputs(inputs, topic, records=True)
    filters = _spark_filters(topic, from_time, to_time)
    _spark_input(inputs, topic)
    spark = _spark(master, conf)
    cols = tuple(c for c in partition_by.split(",") if c)
    with _spark_bar(spark, quiet, "spark export"):
        n = export(
            spark,
            inputs,
            out,
            fmt=fmt,
            partition_by=cols,
            include_headers=headers,
            **filters,
        )
    _stderr(f"wrote {n} records to {out}")
    raise typer.Exit(0)


@spark_app.command("verify")
def spark_verify(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="log.dirs roots, trees of them, or partition dirs (local or mounted paths).",
            show_default=False,
        ),
    ],
    out: Annotated[
        str | None, typer.Option("--out", help="Also write the findings table (Parquet) here.")
    ] = None,
    deep: Annotated[bool, typer.Option(help="Also decode every record.")] = False,
    index_interval_bytes: IntervalOpt = 4096,
    topic: TopicOpt = None,
    master: MasterOpt = "local[*]",
    conf: ConfOpt = None,
    fmt: FormatOpt = OutputFormat.text,
    quiet: QuietOpt = False,
) -> None:
    """The checks of `kseg verify` on every partition, in parallel; same findings, same exit codes
    (0 clean, 4 problems, 8 operational error, 16 usage). Read-only: repairs stay a local job.

    Example:

    \b
      kseg spark verify /data/brokers --deep --out /tmp/findings
    """
    from .spark import verify as run

    _spark_inputs(inputs, topic)
    _spark_input(inputs, topic, segments=False)
    spark = _spark(master, conf)
    with _spark_bar(spark, quiet, "spark verify"):
        found, summary = run(
            spark, inputs, out, topic=topic, deep=deep, indexIntervalBytes=index_interval_bytes
        )
    events = [{"type": "finding", **f} for f in found] + [summary]
    for _ in _emit(iter(events), fmt, _spark_verify_line):
        pass
    raise typer.Exit(summary["exit_code"])


@spark_app.command("stats")
def spark_stats(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="log.dirs roots, trees of them, or partition dirs (paths or URIs).",
            show_default=False,
        ),
    ],
    per_hour: Annotated[
        bool, typer.Option("--per-hour", help="One row per topic-partition and hour.")
    ] = False,
    topic: TopicOpt = None,
    master: MasterOpt = "local[*]",
    conf: ConfOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    quiet: QuietOpt = False,
) -> None:
    """Per topic-partition (and hour): records, bytes, codecs and compression ratio, offset and
    timestamp ranges, producers, transactional share.

    Example:

    \b
      kseg spark stats /data/brokers --per-hour -f json
    """
    from .spark import stats

    _spark_inputs(inputs, topic)
    _spark_input(inputs, topic)
    spark = _spark(master, conf)
    with _spark_bar(spark, quiet, "spark stats"):
        rows = [r.asDict() for r in stats(spark, inputs, per_hour=per_hour, topic=topic).collect()]
    events = [
        {"type": "stats", **{k: (str(v) if k == "hour" else v) for k, v in r.items()}} for r in rows
    ]
    if not events:  # segments exist but hold no batch (e.g. empty active segments)
        _stderr(f"{', '.join(inputs)}: the segments hold no batch: nothing to count")
    from .decode.render import field_text

    for _ in _emit(
        iter(events),
        fmt,
        lambda ev: " ".join(f"{k}={field_text(k, v)}" for k, v in ev.items() if k != "type"),
    ):
        pass
    raise typer.Exit(0)


@app.command()
def demo(
    directory: Annotated[
        Path, typer.Argument(help="Where to write the example log.dirs tree.")
    ] = Path("kseg-demo"),
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Write a small example data directory (every format and codec) and dump part of it.

    Example:

    \b
      kseg demo /tmp/kseg-demo && kseg verify /tmp/kseg-demo
    """
    from .fixtures.tree import build_tree_atomically

    if directory.exists() and any(directory.iterdir()):
        _stderr(f"{directory} exists and is not empty; using it as it is")
    else:
        if not directory.name:  # "." (empty): the tree is built aside and renamed into place
            raise typer.BadParameter(
                f"{directory}: give the directory by name (e.g. kseg-demo): the tree is built "
                "beside it and renamed into place, which the current directory cannot be",
                param_hint="DIRECTORY",
            )
        try:
            build_tree_atomically(directory)
        except OSError as exc:  # name the directory asked for, not the hidden temp sibling
            _stderr(f"{directory}: cannot write the example tree: {exc.strerror or exc}")
            raise typer.Exit(int(Exit.OPERATIONAL)) from None
        _stderr(f"wrote an example log.dirs tree to {directory}/")
    _stderr(f"$ kseg dump {directory}/upgrade-0 --limit 12")
    dump(
        [directory / "upgrade-0"],
        fmt,
        Payload.auto,
        False,
        Decoder.auto,
        False,
        None,
        None,
        None,
        None,
        None,
        None,
        12,
        None,
        True,
    )


def _flush_stdout() -> None:
    if _OUT is not None:
        _OUT.flush()


def main() -> None:
    """Entry point: one table maps every outcome to an exit code (kseg.exitcodes): usage 16,
    unreadable input 8, an interrupt 32 with one line on stderr, a closed pipe quiet (the exit
    status is what had been found so far)."""
    previous = interrupt.install()  # again: the console script did it before this import
    global _OUT, _found_so_far
    _OUT = None
    _found_so_far = None
    try:
        code = _run()
    except interrupt.Interrupted as exc:  # while flushing or reporting
        code = exc.code
        interrupt.defer()
        _say_interrupted()
    finally:
        interrupt.restore(previous)  # the console script's own (a host program's, in tests)
    sys.exit(int(code))


def _stop_spark() -> None:
    """A Spark command interrupted: the JVM it started must not run on after kseg exits."""
    if "kseg.spark.jobs" in sys.modules:
        sys.modules["kseg.spark.jobs"].stop_gateway()


def _say_interrupted() -> None:
    try:
        _flush_stdout()  # keep what was produced so far (exit 32 says it is incomplete)
    except (OSError, ValueError, interrupt.Interrupted):
        pass
    sys.stderr.write("kseg: interrupted\n")
    sys.stderr.flush()


def _call_app() -> int:
    try:
        try:
            # the command is invoked directly, not through Click's main(): that one turns a
            # closed pipe (EPIPE) into exit 1, losing what the command had found, and a
            # KeyboardInterrupt into a silent exit 130
            command = typer.main.get_command(app)
            # _KSEG_COMPLETE=... (shell completion, as --install-completion sets up): answer, exit
            command._main_shell_completion({}, "kseg", None)
            with command.make_context("kseg", sys.argv[1:]) as ctx:
                rv = command.invoke(ctx)
        except typer.Exit as exc:
            rv = exc.exit_code
        _flush_stdout()
    except Exception as exc:
        if interrupt.received():
            # cleanup code (a writer's close, a flush) failed while the interrupt unwound and
            # replaced it: still an interrupt, and that error is only its consequence
            raise interrupt.Interrupted() from exc
        raise
    return rv if isinstance(rv, int) else 0


def _run() -> int:
    # Typer may vendor Click or depend on it; its public BadParameter derives from UsageError.
    usage_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    from .storage.tree import InputError

    try:
        return _call_app()
    except interrupt.Interrupted as exc:
        interrupt.defer()  # cleanup below must not be cut short by a second signal
        _stop_spark()
        _say_interrupted()
        return exc.code
    except usage_error as exc:
        exc.show()
        return Exit.USAGE
    except InputError as exc:
        _stderr(str(exc))
        return exit_for(exc.kind)
    except typer.Abort:  # EOF on a prompt (kseg has none); Ctrl-C is Interrupted
        return Exit.INTERRUPTED
    except KeyboardInterrupt:  # raised by a library's own handler (kseg's were replaced)
        interrupt.defer()
        _stop_spark()
        _say_interrupted()
        return Exit.INTERRUPTED
    except BrokenPipeError:
        # `kseg dump ... | head`: the reader is gone; say nothing. The walk stops here and the
        # exit status is what had been found so far.
        _silence_stdout()
        return _found_so_far() if _found_so_far is not None else Exit.OK
    except OSError as exc:
        if exc.filename is None and exc.errno in _OUTPUT_FULL:
            _silence_stdout()
            _stderr(f"cannot write output: {exc.strerror}")
        else:
            _stderr(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
        return Exit.OPERATIONAL
    except MemoryError:
        _stderr("out of memory (see the memory bound in the README's safety section)")
        return Exit.OPERATIONAL
    except Exception as exc:  # noqa: BLE001 - a bug must not print a traceback at an operator
        if os.environ.get("KSEG_DEBUG"):
            raise
        _stderr(f"internal error: {type(exc).__name__}: {exc} (set KSEG_DEBUG=1 for a traceback)")
        return exit_for("internal")


if __name__ == "__main__":
    main()
