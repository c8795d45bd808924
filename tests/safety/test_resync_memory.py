"""Memory of a resync over a large damaged region: `dump --resync` and `salvage --dry-run` of a
256 MiB segment whose second half is random bytes stay within a window (kseg.format.resync
scans a buffer read on demand window by window), under either kernel."""

from __future__ import annotations

import os
import random

import pytest

from kseg.format.record import Record
from kseg.storage.writer import LogWriter
from tests.helpers import events

from .limits import run_with_rss

MIB = 1 << 20
HALF = 128 * MIB
BOUND = 120 * MIB  # peak RSS (README's safety section)


@pytest.fixture(scope="module")
def half_garbage(tmp_path_factory):
    """A partition whose one segment is 128 MiB of 1 MiB batches, then 128 MiB of random
    bytes (no batch in them)."""
    pdir = tmp_path_factory.mktemp("resyncmem") / "big-0"
    value = random.Random(1).randbytes(256 * 1024)
    with LogWriter(pdir, segment_bytes=1 << 40, write_snapshots=False) as w:
        for i in range(HALF // (4 * len(value))):
            w.append([Record(b"k%d-%d" % (i, j), value) for j in range(4)])
    (log,) = pdir.glob("*.log")
    size = log.stat().st_size
    rnd = random.Random(2)
    with open(log, "ab") as f:
        left = 2 * HALF - size
        while left > 0:
            n = min(left, 8 * MIB)
            f.write(rnd.randbytes(n))
            left -= n
    return pdir, size


@pytest.mark.parametrize("kernel", ["rust", "python"])
def test_dump_resync_over_half_garbage_stays_in_a_window(half_garbage, kernel):
    pdir, good = half_garbage
    env = {**os.environ, "KSEG_KERNEL": kernel}
    code, out, err, rss = run_with_rss(
        "dump", pdir, "--resync", "--count", "-f", "json", env=env, timeout=300
    )
    assert code == 4, err
    (skip,) = [e for e in events(out) if e["type"] == "skipped"]
    assert (skip["start"], skip["end"]) == (good, 2 * HALF)
    assert rss < BOUND, rss // MIB


@pytest.mark.parametrize("kernel", ["rust", "python"])
def test_salvage_dry_run_over_half_garbage_stays_in_a_window(half_garbage, kernel):
    pdir, good = half_garbage
    env = {**os.environ, "KSEG_KERNEL": kernel}
    code, out, err, rss = run_with_rss(
        "salvage", pdir, "--dry-run", "-f", "json", env=env, timeout=300
    )
    assert code == 4, err
    (ev,) = [e for e in events(out) if e["type"] == "salvage"]
    assert [(s["start"], s["end"]) for s in ev["skipped"]] == [(good, 2 * HALF)]
    assert rss < BOUND, rss // MIB
