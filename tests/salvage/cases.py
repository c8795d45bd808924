"""Damaged partitions for the salvage tests, written by kseg's LogWriter and then damaged: each
case knows the offsets of the batches its damage touches (what salvage must lose, nothing
more)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import NamedTuple

from kseg.format import checkpoint as cp
from kseg.format.entry import MAGIC_POS
from kseg.format.log import iter_entries
from kseg.format.record import Record
from kseg.storage.tree import segment_logs
from kseg.storage.writer import LogWriter

TOPIC = "salvage"
BATCHES = 90
SEGMENT_BYTES = 12_000


class Case(NamedTuple):
    log_dir: Path
    pdir: Path
    original: Path  # the undamaged partition dir
    lost: frozenset[int]  # offsets of the batches the damage touched


def write_partition(pdir: Path, magic: int = 2, compression: str = "none") -> None:
    size = SEGMENT_BYTES if compression == "none" else SEGMENT_BYTES // 4
    with LogWriter(
        pdir, magic=magic, compression=compression, segment_bytes=size,
        clock=lambda: 1_700_000_000_000,
    ) as w:  # fmt: skip
        for i in range(BATCHES):
            w.append([Record(key=b"k%d-%d" % (i, j), value=(b"v%d." % i) * 30) for j in range(3)])


def batches(log: Path) -> list[tuple[int, int, int, int]]:
    """(position, size, first offset, last offset) of every batch of a clean `.log`."""
    buf = log.read_bytes()
    return [(e.position, e.size, e.base_offset, e.last_offset) for e in iter_entries(buf)]


def _touched(log: Path, start: int, end: int) -> frozenset[int]:
    out = set()
    for pos, size, first, last in batches(log):
        if pos < end and start < pos + size:
            out |= set(range(first, last + 1))
    return frozenset(out)


def _edit(log: Path, pos: int, new: bytes) -> None:
    b = bytearray(log.read_bytes())
    b[pos : pos + len(new)] = new
    log.write_bytes(bytes(b))


DAMAGES = (
    "flip", "zero_page", "lying_length", "middle_segment", "magic", "lying_base_offset",
    "legacy_gzip_flip",  # a magic 1 gzip wrapper: its CRC-32
    "legacy_offset",  # a magic 0 message's offset (outside its CRC-32) raised: repaired in place
)  # fmt: skip
LEGACY = {"legacy_gzip_flip": (1, "gzip"), "legacy_offset": (0, "none")}


def damaged(root: Path, damage: str) -> Case:
    """A partition of 3+ segments under ``root/logs``, damaged as named; its undamaged copy
    under ``root/original``."""
    log_dir = root / "logs"
    pdir = log_dir / f"{TOPIC}-0"
    write_partition(pdir, *LEGACY.get(damage, (2, "none")))
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        entry = cp.TopicPartitionOffset(TOPIC, 0, 0)
        (log_dir / name).write_bytes(cp.encode_offset_checkpoint([entry]))
    original = root / "original" / pdir.name
    shutil.copytree(pdir, original)
    logs = segment_logs(pdir)
    assert len(logs) >= 3
    seg = logs[1] if damage == "middle_segment" else logs[0]
    bs = batches(seg)
    mid = bs[len(bs) // 2]
    lost: frozenset[int] = frozenset()
    if damage in ("flip", "middle_segment", "legacy_gzip_flip"):
        at = mid[0] + mid[1] // 2
        _edit(seg, at, bytes([seg.read_bytes()[at] ^ 0xFF]))
        lost = _touched(original / seg.name, at, at + 1)
    elif damage == "zero_page":
        _edit(seg, 4096, bytes(4096))
        lost = _touched(original / seg.name, 4096, 8192)
    elif damage == "lying_length":  # batchLength says 100 bytes more
        size = int.from_bytes(seg.read_bytes()[mid[0] + 8 : mid[0] + 12], "big")
        _edit(seg, mid[0] + 8, (size + 100).to_bytes(4, "big"))
        lost = _touched(original / seg.name, mid[0], mid[0] + 1)
    elif damage == "magic":  # outside the CRC: repaired in place
        _edit(seg, mid[0] + MAGIC_POS, bytes([1]))
    elif damage in (
        "lying_base_offset",
        "legacy_offset",
    ):  # raised by 1000: its neighbours prove the right one
        _edit(seg, mid[0], (mid[2] + 1000).to_bytes(8, "big"))
    return Case(log_dir, pdir, original, lost)


def hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (but a log dir's `.lock`, which the salvage takes as
    a broker does: an empty file)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }
