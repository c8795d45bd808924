"""`kseg demo`: an example data directory (kseg.fixtures.demo), dumped in part."""

from pathlib import Path

from kseg.cli import options as o
from kseg.cli.exit import exit_status, track


def demo(
    directory: o.DemoDirArg = Path("kseg-demo"), fmt: o.FormatOpt = o.OutputFormat.text
) -> int:
    """Write a small example data directory (every format and codec) and dump part of it.

    DIRECTORY must be new, empty, or an earlier demo (dumped as it is); any other directory is
    refused (exit 16).

    Example:

    \b
      kseg demo /tmp/kseg-demo && kseg verify /tmp/kseg-demo
    """
    from kseg.cli.commands.dump import json_lines
    from kseg.dump.options import DumpOptions
    from kseg.dump.run import DumpRun
    from kseg.fixtures.demo import write_demo
    from kseg.render import finish_dump, streams

    for message in write_demo(directory):
        streams.say(message)
    streams.say(f"$ kseg dump {directory}/upgrade-0 --limit 12")
    opts = DumpOptions(limit=12, json_lines=json_lines(fmt))
    run = DumpRun([directory / "upgrade-0"], opts)
    track(run)
    return exit_status(finish_dump(run, fmt.value))
