"""The render layer: events from the library, one module per output format for every command.

- ``text``  (the default) greppable lines; dump's follow kafka-dump-log
- ``json``  JSON Lines, one object per event
- ``table`` aligned columns for a terminal
- ``csv``   seek's reset-csv rows for kafka-consumer-groups; stats' rows with a header
- ``plot``  stats' picture (matplotlib, imported only for --plot)
- ``streams`` stdout (one large buffer) and stderr (one line per message)

Events of type ``failure`` and ``notice`` are messages, never data: they go to stderr as one
line each, in every format. A format's module is imported only when it is used (start-up time).
The ``finish`` functions return what the run found (a kseg.outcome.Outcome): the CLI alone
turns it into the exit status.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

from kseg.outcome import Outcome
from kseg.render.streams import say, stdout

FORMATS = ("text", "json", "table", "reset-csv", "csv")
MESSAGES = ("failure", "notice")


def data_only(events: Iterable[dict]) -> Iterator[dict]:
    """Failures and notices go to stderr as one line each; everything else is data for stdout."""
    for ev in events:
        if ev["type"] in MESSAGES:
            say(ev["message"])
        else:
            yield ev


def problems_only(events: Iterable[dict]) -> Iterator[dict]:
    """verify --problems-only: leave out the segments that are ok (findings stay)."""
    for ev in events:
        if ev["type"] == "segment" and ev.get("status") == "ok":
            continue
        yield ev


def emit(
    command: str, events: Iterable[dict], fmt: str, out: BinaryIO | None = None
) -> Iterator[dict]:
    """Render ``command``'s events in ``fmt``; yields each data event once it is written."""
    out = out or stdout()
    events = data_only(events)
    if fmt == "json":
        from kseg.render.json import write_json

        return write_json(events, out)
    if fmt == "table":
        from kseg.render.table import REPLICAS_COLUMNS, write_tables

        if command == "schemas":  # a schema's text is many lines: JSON carries it
            events = ({k: v for k, v in ev.items() if k != "schema"} for ev in events)

        return write_tables(
            events, out, columns=REPLICAS_COLUMNS if command == "replicas" else None
        )
    if fmt == "reset-csv":
        from kseg.render.csv import write_reset_csv

        return write_reset_csv(events, out)
    if fmt == "csv":
        from kseg.render.csv import STATS_COLUMNS, TXN_COLUMNS, write_stats_csv

        return write_stats_csv(events, out, TXN_COLUMNS if command == "txn" else STATS_COLUMNS)
    from kseg.render.text import write_command_text

    return write_command_text(command, events, out)


def show(command: str, events: Iterable[dict], fmt: str, out: BinaryIO | None = None) -> None:
    """``emit`` to the end. verify's unreadable findings are failures too: stderr says them."""
    for ev in emit(command, events, fmt, out):
        if command == "verify" and ev["type"] == "finding" and ev["kind"] == "unreadable":
            say(f"{ev['file']}: {ev['kind']}: {ev['message']}")


def show_dump(chunks: Iterable[list], fmt: str, out: BinaryIO | None = None) -> None:
    """dump's events, in chunks (records number millions). Errors are data (a line or object in
    place) and, except in JSON, also one line on stderr."""
    out = out or stdout()
    if fmt == "table":
        from kseg.render.table import write_dump_table

        written = write_dump_table(chunks, out)
    elif fmt == "json":
        from kseg.render.json import write_json_chunks

        written = write_json_chunks(chunks, out)
    else:
        from kseg.render.text import write_text_chunks

        written = write_text_chunks(chunks, out)
    for chunk in written:
        if fmt == "json":
            continue
        for ev in chunk:
            if type(ev) is not bytes and ev["type"] in _PROBLEMS:
                say(problem_line(ev))


_PROBLEMS = ("error", "skipped")  # dump's events that are also a line on stderr


def problem_line(ev: dict) -> str:
    """The stderr line of a dump problem: ``<file> at byte <n>: <kind>: <message>``, and for a
    range --resync skipped ``<file> at byte <n>: skipped bytes a..b (...): <kind>: <reason>``."""
    if ev["type"] == "skipped":
        from kseg.dump.error_events import skipped_message

        return f"{ev['file']} at byte {ev['start']}: skipped {skipped_message(ev)}"
    where = f" at byte {ev['position']}" if ev.get("position") is not None else ""
    return f"{ev['file']}{where}: {ev['kind']}: {ev['message']}"


def finish_format_string(run) -> Outcome:
    """dump --format-string: the records' bytes as formatted, nothing else on stdout; problems
    as one line each on stderr. Returns what the run found."""
    from kseg.format.header_columns import StreamedLine

    out = stdout()
    write = out.write
    for chunk in run.chunks():
        for ev in chunk:
            if type(ev) is bytes:
                write(ev)
            elif type(ev) is StreamedLine:  # a record of many headers, in pieces
                for piece in ev:
                    write(piece)
            elif ev["type"] in _PROBLEMS:
                say(problem_line(ev))
            elif ev["type"] == "schema_finding":  # --payload schema
                from kseg.render.text import schema_finding_line

                say(schema_finding_line(ev, with_file=True))
            elif ev["type"] == "schema_summary":
                from kseg.render.text import text_line

                say(text_line(ev))
    out.flush()
    return run.outcome


def finish_count(run, fmt: str) -> Outcome:
    """dump --count: the ``match_count`` events and their ``match_total`` (a summary line in a
    table), and any error (as in dump: data, and one line on stderr except in JSON); returns
    what the run found."""

    def events():
        for chunk in run.chunks():
            for ev in chunk:
                if fmt == "table" and ev["type"] == "match_total":
                    ev = {"type": "summary", **{k: v for k, v in ev.items() if k != "type"}}
                yield ev

    for ev in emit("dump --count", events(), fmt):
        if fmt != "json" and ev["type"] in _PROBLEMS:
            say(problem_line(ev))
    stdout().flush()
    return run.outcome


def finish(
    command: str,
    run,
    events: Iterable[dict],
    fmt: str,
    *,
    bar_total=None,
    quiet: bool = True,
) -> Outcome:
    """Show ``run``'s events in ``fmt`` on stdout (a progress bar sized by ``bar_total()`` when
    one is wanted) and return what the run found (``run`` may be that Outcome itself, when the
    events were gathered before: spark)."""
    from kseg.render import progress

    bar_on = progress.wanted(quiet) if bar_total is not None else False
    with progress.Bar(bar_on, command, bar_total() if bar_on else None) as bar:
        out = progress.stdout_through(bar, stdout())
        show(command, progress.per_segment(events, bar), fmt, out)
        out.flush()
    return run if isinstance(run, Outcome) else run.outcome


def check_plot(path) -> None:
    """stats --plot FILE, before any work: a name kseg draws and matplotlib to draw it."""
    if path is not None:
        from kseg.render.plot import check_plot as check

        check(path)


def finish_stats(run, fmt: str, quiet: bool, plot=None) -> Outcome:
    """stats: the rows in ``fmt`` (a bar by bytes walked), then with ``plot`` the picture of
    ``run``'s timelines and totals; a picture that cannot be written is unwritable (exit 8)."""
    found = finish("stats", run, run.events(), fmt, bar_total=run.total_bytes, quiet=quiet)
    if plot is None:
        return found
    from kseg.render.plot import write_plot

    try:
        write_plot(run, plot)
    except OSError as exc:
        say(f"{exc.filename or plot}: cannot write the plot: {exc.strerror or exc}")
        return found | Outcome.UNREADABLE
    say(f"wrote {plot}")
    return found


def finish_salvage_plot(found: Outcome, costs: list[dict], plot) -> Outcome:
    """salvage --plot: after the rows, the picture of each partition's cost (its ``salvage``
    events); a picture that cannot be written is unwritable (exit 8)."""
    from kseg.render.plot import write_salvage_plot

    try:
        write_salvage_plot(costs, plot)
    except OSError as exc:
        say(f"{exc.filename or plot}: cannot write the plot: {exc.strerror or exc}")
        return found | Outcome.UNREADABLE
    say(f"wrote {plot}")
    return found


def finish_dump(run, fmt: str, quiet: bool = True) -> Outcome:
    """dump's chunks (kseg.dump.run.DumpRun) shown in ``fmt``, a bar by bytes read when
    stdout is not the terminal; returns what the run found."""
    from kseg.dump.progress import dump_progress, total_bytes
    from kseg.render import progress

    out = stdout()
    bar_on = progress.wanted(quiet, stdout_to_file=True)
    with progress.Bar(bar_on, "dump", total_bytes(run.paths) if bar_on else None) as bar:
        show_dump(dump_progress(run.chunks(), bar), fmt, out)
    out.flush()
    return run.outcome
