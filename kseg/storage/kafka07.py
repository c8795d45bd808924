"""Kafka 0.7 partitions on disk: `.kafka` segments named by the byte offset of their first entry.

A 0.7 partition dir holds only `<20 digits>.kafka` files (no indexes, no checkpoints); the log
dir holds an empty `.kafka_cleanshutdown` after a clean stop. Offsets are byte positions in the
partition's stream, so ``name(next) == name(segment) + size(segment)`` must hold: a 0.7 broker
refuses to start otherwise (FORMATS.md s10).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from kseg.storage import files as F
from kseg.storage.mapped import mapped
from kseg.storage.tree import kafka07_segments


class Segment07:
    """One `.kafka` file: its name's byte offset, size and mtime (stat'ed once)."""

    __slots__ = ("path", "base_offset", "size", "mtime_ms")

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        kind = F.file_kind(self.path)
        if kind.kind != F.KAFKA07:
            raise ValueError(f"{path}: not a Kafka 0.7 segment name (<20-digit offset>.kafka)")
        self.base_offset: int = kind.base_offset
        st = os.stat(self.path)
        self.size: int = st.st_size
        self.mtime_ms: int = st.st_mtime_ns // 1_000_000

    @property
    def end_offset(self) -> int:
        """The byte offset right after this segment: the next segment's expected name."""
        return self.base_offset + self.size

    def mapped(self):
        """The file's bytes for a front-to-back walk (b"" when empty); see storage.mapped."""
        return mapped(self.path, sequential=True)

    def __repr__(self) -> str:
        return f"Segment07({self.path.name}, size={self.size})"


class Gap(NamedTuple):
    """Two neighbouring segments whose names and sizes disagree."""

    segment: Path  # the earlier one
    next_segment: Path
    expected: int  # segment name + size
    actual: int  # the next segment's name

    @property
    def message(self) -> str:
        d = self.actual - self.expected
        what = f"a gap of {d} bytes" if d > 0 else f"an overlap of {-d} bytes"
        return (
            f"{self.segment.name} ends at byte offset {self.expected} but the next segment is "
            f"{self.next_segment.name} ({what}); a 0.7 broker refuses to start on this"
        )


class Partition07:
    """A 0.7 partition dir (or the given `.kafka` files of one), segments in offset order."""

    def __init__(self, pdir: str | Path, logs: list[Path] | None = None) -> None:
        self.dir = Path(pdir)
        paths = kafka07_segments(self.dir) if logs is None else logs
        self.segments = [Segment07(p) for p in paths]

    @property
    def log_start_offset(self) -> int | None:
        return self.segments[0].base_offset if self.segments else None

    @property
    def log_end_offset(self) -> int | None:
        return self.segments[-1].end_offset if self.segments else None

    def gaps(self) -> list[Gap]:
        return [
            Gap(a.path, b.path, a.end_offset, b.base_offset)
            for a, b in zip(self.segments, self.segments[1:], strict=False)
            if a.end_offset != b.base_offset
        ]

    def segment_for(self, offset: int) -> Segment07 | None:
        """The segment holding byte offset ``offset`` (the last one whose name is <= it)."""
        found = None
        for s in self.segments:
            if s.base_offset <= offset:
                found = s
            else:
                break
        return found
