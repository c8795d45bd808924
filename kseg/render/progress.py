"""A progress bar on stderr for long runs (rich), only where a person watches.

Shown when stderr is a terminal and ``--quiet`` is not given (dump: also only when stdout is not
the terminal, i.e. dumping to a file or a pipe); otherwise every call is a no-op. Callers update
it per segment, per file or per chunk of batches, never per record: the bar costs nothing
measurable on the hot path (rich redraws from its own thread, 5 times a second). Within a
segment it follows the walk (kseg.storage.walked: the position read so far, reported between
blocks of rows), at most ten times a second, so one large partition moves the bar too.
"""

from __future__ import annotations

import os
import sys
import time
from typing import BinaryIO


def _isatty(stream) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False


def wanted(quiet: bool, *, stdout_to_file: bool = False) -> bool:
    """Should a bar be drawn? ``stdout_to_file``: only when stdout is not a terminal."""
    if quiet or not _isatty(sys.stderr):
        return False
    return not (stdout_to_file and _isatty(sys.stdout))


class Bar:
    """One task's bar, in bytes (``total`` may be None: a spinner with a count)."""

    def __init__(
        self, enabled: bool, description: str, total: int | None = None, unit: str = "bytes"
    ) -> None:
        self.enabled = enabled
        self._progress = None
        self._task = None
        self._next = 0.0
        self._next_draw = 0.0
        self._total = total
        self._done = 0  # bytes of the segments (files) whose event has passed
        self._reading: dict[str, int] = {}  # log -> bytes walked so far, event still to come
        self._partial = 0  # sum of _reading
        self._watched = False
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(file=sys.stderr)
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn() if unit == "bytes" else MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            # no redraw thread: the bar is redrawn from the run's own updates (at most five
            # times a second, _draw), so no thread runs when the run forks its --jobs workers
            # (kseg.storage.jobs), and none takes the GIL from the walk
            auto_refresh=False,
        )
        self._task = self._progress.add_task(description, total=total)
        self._progress.start()
        if unit == "bytes":
            from kseg.storage import walked

            self._previous_watcher = walked.watch(self.walked)
            self._watched = True

    def advance(self, n: int = 1, log: str | None = None) -> None:
        """``n`` more done (a segment of ``n`` bytes when ``log`` names it: what its walk had
        already shown is taken back, so it counts once)."""
        if self._progress is None:
            return
        if log is not None and self._reading:
            self._partial -= self._reading.pop(log, 0)
        self._done += n
        self._show()

    def walked(self, log: str, position: int) -> None:
        """kseg.storage.walked's watcher: ``log`` has been read up to ``position``; the bar
        moves at most ten times a second."""
        seen = self._reading.get(log, 0)
        if position > seen:
            self._reading[log] = position
            self._partial += position - seen
            if self.due():
                self._show()

    def _show(self) -> None:
        if self._progress is not None:
            shown = self._done + self._partial
            if self._total is not None:
                shown = min(shown, self._total)  # a file walked twice never overshoots
            self._progress.update(self._task, completed=shown)
            self._draw()

    def _draw(self) -> None:
        now = time.monotonic()
        if now >= self._next_draw:
            self._next_draw = now + 0.2
            self._progress.refresh()

    def update(self, completed: int | None = None, description: str | None = None, **kw) -> None:
        if self._progress is not None:
            if completed is not None:
                self._done, self._partial = completed, 0
                self._reading.clear()
            if "total" in kw:
                self._total = kw["total"]
            self._progress.update(self._task, completed=completed, description=description, **kw)
            self._draw()

    def due(self, every: float = 0.1) -> bool:
        """True at most every ``every`` seconds (for callers that could update per batch)."""
        if self._progress is None:
            return False
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + every
        return True

    def print_above(self, data: bytes) -> None:
        """Data for a stdout that is the same terminal: printed above the bar, not through it."""
        if self._progress is not None:
            self._progress.console.print(
                data.decode("utf-8", "replace"),
                end="",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    def close(self) -> None:
        if self._watched:
            from kseg.storage import walked

            walked.watch(self._previous_watcher)
            self._watched = False
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AboveBar:
    """A binary stdout for renderers that prints through the bar's console (when stdout and
    stderr are one terminal), so data lines and the bar do not tear each other."""

    def __init__(self, bar: Bar) -> None:
        self.bar = bar
        self._pending = b""

    def write(self, data: bytes) -> int:
        self._pending += data
        if b"\n" in self._pending:
            head, _, self._pending = self._pending.rpartition(b"\n")
            self.bar.print_above(head + b"\n")
        return len(data)

    def flush(self) -> None:
        if self._pending:
            self.bar.print_above(self._pending)
            self._pending = b""


def stdout_through(bar: Bar, out: BinaryIO) -> BinaryIO:
    """``out``, or a writer that prints above ``bar`` when both go to the same terminal."""
    if bar.enabled and _isatty(sys.stdout):
        return AboveBar(bar)  # type: ignore[return-value]
    return out


class SparkBar:
    """Spark's tasks as a bar: a thread polls the status tracker twice a second."""

    def __init__(self, enabled: bool, spark, description: str) -> None:
        self.bar = Bar(enabled, description, unit="tasks")
        self._stop = None
        if not enabled:
            return
        import threading

        self._stop = threading.Event()
        tracker = spark.sparkContext.statusTracker()

        def poll() -> None:
            while not self._stop.wait(0.5):
                try:
                    stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
                    stages = [s for s in stages if s is not None]
                    if stages:
                        self.bar.update(
                            completed=sum(s.numCompletedTasks for s in stages),
                            total=sum(s.numTasks for s in stages),
                            description=f"{description} (stage {max(s.stageId for s in stages)}, tasks)",
                        )
                except Exception:  # noqa: BLE001 - a progress bar never fails a job
                    pass

        threading.Thread(target=poll, daemon=True).start()

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self.bar.close()

    def __enter__(self) -> SparkBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def per_segment(events, bar: Bar):
    """Pass events through, advancing ``bar`` by each segment's size as its event passes (once
    per segment: verify's ``segment``, index rebuild's ``index_rebuild``; stats' ``progress``
    events only move the bar and are not shown). Meanwhile the walks move it within segments
    (Bar.walked); each segment's event takes back what its walk had shown."""
    for ev in events:
        t = ev["type"]
        if t == "progress":
            bar.advance(ev["bytes"], ev.get("file"))
            continue
        if t == "segment" or t == "index_rebuild":
            bar.advance(ev.get("size") or 0, ev.get("file"))
        yield ev
