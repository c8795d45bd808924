"""The `kseg` console script. Signal handlers go in before anything heavy is imported (typer,
rich and the commands take tens of milliseconds to import): an interrupt at any moment after
this line exits 32 with one line on stderr."""

from __future__ import annotations

from . import interrupt

interrupt.install()


def main() -> None:
    try:
        from .cli import main as cli_main
    except interrupt.Interrupted as exc:
        interrupt.exit_now(exc.code)
    cli_main()
