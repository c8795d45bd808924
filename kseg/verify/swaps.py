"""What Kafka's LogLoader does with leftover `.swap` files, before it loads anything."""

from __future__ import annotations

from pathlib import Path

from kseg.format.errors import CorruptionError
from kseg.storage import files as F
from kseg.storage.segment import read_batches

EVERY_START = "every_start"  # kafka_outcome's `when`: Kafka does it on every start


def kafka_swaps(entries: list[Path]) -> list[dict]:
    """What Kafka's LogLoader.load does with leftover `.swap` files (an interrupted compaction
    or segment split), before it loads or recovers anything:

    - removeTempFilesAndCollectSwapFiles deletes every `.swap` whose base offset is at or above
      the lowest `.cleaned` file's (part of an unfinished split: KAFKA-6264), and the
      `.cleaned`/`.deleted` files;
    - of the other `.swap` segments (a `.log.swap`), it takes the lowest base offset and the
      highest next offset (LogSegment.readNextOffset: the last batch's last offset + 1), deletes
      every file of the partition whose name starts with an offset in that range (the segments
      the swap replaces, with their indexes and producer snapshots), and renames each `.swap`
      back to its name: the swapped segment is loaded (and, lacking its `.index`, recovered)
      like any other.
    """
    named = [(p, F.file_kind(p)) for p in entries if not p.is_dir()]
    cleaned = [
        k.base_offset for _, k in named if k.temp_suffix == ".cleaned" and k.base_offset is not None
    ]
    min_cleaned = min(cleaned, default=None)
    out: list[dict] = []
    swap_logs: list[tuple[Path, int]] = []
    for p, k in named:
        if k.temp_suffix != ".swap" or k.base_offset is None:
            continue
        if min_cleaned is not None and k.base_offset >= min_cleaned:
            out.append({"action": "delete_swap", "file": str(p), "when": EVERY_START})
        elif k.kind == F.LOG:
            swap_logs.append((p, k.base_offset))
    if not swap_logs:
        return out
    low, high = min(b for _, b in swap_logs), None
    for p, base in swap_logs:
        try:
            last = None
            for entry in read_batches(p, validate=False):
                last = entry.last_offset
        except (OSError, CorruptionError):
            pass  # Kafka reads what it can; the walk stops where kseg cannot read on
        nxt = base if last is None else last + 1
        high = nxt if high is None else max(high, nxt)
    replaced = sorted(
        str(p)
        for p, k in named
        if not k.temp_suffix and k.base_offset is not None and low <= k.base_offset < high
    )
    for p, base in sorted(swap_logs, key=lambda x: x[1]):
        out.append(
            {
                "action": "complete_swap",
                "file": str(p),
                "offset": base,
                "replaces": replaced,
                "when": EVERY_START,
            }
        )
        replaced = []  # said once, with the first swap segment
    return out
