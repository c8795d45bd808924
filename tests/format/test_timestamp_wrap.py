"""A record's timestamp is Kafka's Java long sum baseTimestamp + timestampDelta: it wraps."""

from __future__ import annotations

import json
import os
import struct

import crc32c
import pytest

from kseg import LogWriter, read_batches
from kseg.format import batch as B
from kseg.format.record import Record
from tests.helpers import run_kseg

MAX = (1 << 63) - 1


def _segment(tmp_path, base_timestamp: int, timestamps: list[int]):
    """A v2 batch written by kseg, its base_timestamp then patched (and its CRC recomputed):
    the deltas the writer chose stay, so the sums leave the int64 range."""
    pdir = tmp_path / "t-0"
    with LogWriter(pdir) as w:
        w.append([Record(key=b"k", value=b"v", timestamp=t) for t in timestamps])
    log = next(pdir.glob("*.log"))
    data = bytearray(log.read_bytes())
    struct.pack_into(">q", data, B.FIELD_POS["base_timestamp"], base_timestamp)
    crc = crc32c.crc32c(bytes(data[B.FIELD_POS["attributes"] :]))
    struct.pack_into(">I", data, B.FIELD_POS["crc"], crc)
    log.write_bytes(bytes(data))
    return log


@pytest.mark.parametrize(
    ("base", "timestamps", "expected"),
    [
        (MAX, [0, MAX], [MAX, -2]),  # multi-byte delta past the top
        (MAX, [0, 1, 63], [MAX, -(1 << 63), -(1 << 63) + 62]),  # one-byte deltas at the edge
        (-(1 << 63), [0, -1, -2], [-(1 << 63), MAX, MAX - 1]),  # past the bottom
        (1_700_000_000_000, [0, 1, 300], [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_300]),
    ],
)
def test_record_timestamps_wrap_like_a_java_long(tmp_path, base, timestamps, expected):
    log = _segment(tmp_path, base, timestamps)
    (batch,) = list(read_batches(log))
    assert [r.timestamp for r in batch.records()] == expected
    for kernel in ("python", "rust"):
        env = {**os.environ, "KSEG_KERNEL": kernel}
        out = run_kseg("dump", log, "-f", "json", env=env)
        if kernel == "rust" and out.returncode != 0 and b"not built" in out.stderr:
            continue  # no compiled kernel on this machine: the python run covers it
        assert out.returncode == 0, out.stderr
        records = [json.loads(line) for line in out.stdout.splitlines()]
        assert [r["timestamp"] for r in records if r["type"] == "record"] == expected, kernel
