"""The console script's start-up without the cyclic garbage collector.

Start-up (the imports of typer, click and the command's modules, the app's build) allocates
~100,000 objects that live until the process ends; each of the collections they set off walks
them all again for nothing: 4 ms of `kseg --version`'s 99 and 24 ms of a small `kseg verify`'s
222 (CPU, interleaved medians; docs/benchmarks-history.md, issue 33's fourth session). The
console script pauses the collector before its imports and the command resumes it as it begins
(kseg.cli.command.Command.invoke), with what start-up made moved out of its sight
(``gc.freeze``: never collected, never walked again; start-up's own garbage too, 11 objects
when measured). A host program that runs commands in-process (tests) never pauses it."""

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
