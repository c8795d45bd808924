"""The `kseg` command line: parse options, call the library, render, map outcomes to exit codes.

This is the only module that prints or exits. Data goes to stdout, messages to stderr.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from .exitcodes import Exit

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Inspect, verify and repair Apache Kafka log segments on disk.\n\n"
    "Exit codes: 0 ok, 4 invalid input found, 8 operational error (unreadable file), 16 usage error, 32 interrupted.",
)


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
    none = "none"


def _stderr(message: str) -> None:
    sys.stderr.write(f"kseg: {message}\n")


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
        typer.Argument(help="Files, partition dirs or log.dirs roots.", show_default=False),
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
        Decoder, typer.Option(help="Decode internal-topic records (auto: by topic name).")
    ] = Decoder.auto,
    topic: Annotated[
        str | None, typer.Option(help="With a log.dirs root: topics matching this regex.")
    ] = None,
    partition: Annotated[
        int | None, typer.Option(help="With a log.dirs root: only this partition number.")
    ] = None,
    from_offset: Annotated[
        int | None, typer.Option(help="First offset to show (the offset index is used to jump).")
    ] = None,
    to_offset: Annotated[int | None, typer.Option(help="Last offset to show.")] = None,
    from_time: Annotated[
        str | None, typer.Option(help="Records with timestamp >= this (ms, ISO-8601, or -30m).")
    ] = None,
    to_time: Annotated[str | None, typer.Option(help="Records with timestamp <= this.")] = None,
    limit: Annotated[
        int | None, typer.Option(help="Stop after this many records (batches with --batches-only).")
    ] = None,
    max_bytes: Annotated[
        int | None,
        typer.Option(help="Read only whole batches within the first N bytes of each log."),
    ] = None,
) -> None:
    """Decode every file of a Kafka data directory (read-only).

    Exit codes: 0 decoded cleanly; 4 something in the input was invalid (reported as an error
    line/object, decoding continued where it safely could); 8 a file could not be read; 16 usage.
    """
    from .decode.dump import UNREADABLE, USAGE, DumpOptions, dump_paths
    from .decode.render import write_json, write_table, write_text

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
    )
    writer = {"json": write_json, "text": write_text, "table": write_table}[fmt.value]
    code = Exit.OK
    out = sys.stdout.buffer
    for ev in writer(dump_paths(paths, opts), out):
        if ev["type"] == "error":
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
    out.flush()
    raise typer.Exit(int(code))


@app.command()
def demo(
    directory: Annotated[
        Path, typer.Argument(help="Where to write the example log.dirs tree.")
    ] = Path("kseg-demo"),
    fmt: Annotated[OutputFormat, typer.Option("--format", "-f")] = OutputFormat.text,
) -> None:
    """Write a small example data directory (every format and codec) and dump part of it."""
    from .fixtures import build_tree

    if directory.exists() and any(directory.iterdir()):
        _stderr(f"{directory} exists and is not empty; using it as it is")
    else:
        build_tree(directory)
        _stderr(f"wrote an example log.dirs tree to {directory}/")
    _stderr(f"$ kseg dump {directory}/upgrade-0 --limit 12")
    sys.stdout.flush()
    dump(
        [directory / "upgrade-0"],
        fmt,
        Payload.auto,
        False,
        Decoder.auto,
        None,
        None,
        None,
        None,
        None,
        None,
        12,
        None,
    )


def main() -> None:
    """Entry point: map Click's usage errors to 16, Ctrl-C to 32, a closed pipe to quiet."""
    # Typer may vendor Click or depend on it; its public BadParameter derives from UsageError.
    usage_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    try:
        rv = app(standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except typer.Exit as exc:
        code = exc.exit_code
    except usage_error as exc:
        exc.show()
        code = Exit.USAGE
    except typer.Abort:
        code = Exit.INTERRUPTED
    except KeyboardInterrupt:
        code = Exit.INTERRUPTED
    except BrokenPipeError:
        # `kseg dump ... | head`: the reader is gone; say nothing
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = Exit.OK
    sys.exit(int(code))


if __name__ == "__main__":
    main()
