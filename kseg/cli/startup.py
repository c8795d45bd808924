"""The console script's start-up without the cyclic garbage collector.

Start-up (the imports of typer, rich, click and the command's modules, the app's build)
allocates ~100,000 objects that live until the process ends; each of the collections they set
off walks them all again for nothing: 7 ms of `kseg --version`'s 100 and 12 ms of a `kseg
verify` start (docs/benchmarks-history.md). The console script pauses the collector before its imports and
the command resumes it as it begins (kseg.cli.command.Command.invoke), with what start-up made
moved out of its sight (``gc.freeze``: never collected, never walked again). A host program
that runs commands in-process (tests) never pauses it."""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Called first by the console script."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Called as a command begins (and harmless anywhere else): the collector as it was."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
