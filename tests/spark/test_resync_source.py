"""The Spark source's ``resync`` option (records mode): the reader goes on past damage; each
skipped range is a warning in the executor's log (kseg.spark.arrow.skipped), never a row."""

from __future__ import annotations

import logging
import random

import pytest

import kseg
from kseg import kernel
from kseg.spark.source import KsegReader
from tests.dump.test_resync import batches_of, damage, write_partition

pytestmark = pytest.mark.spark


@pytest.fixture
def damaged(tmp_path):
    pdir = write_partition(tmp_path / "t-0", magic=2, compression="gzip", batches=40)
    log = next(pdir.glob("*.log"))
    data = log.read_bytes()
    clean = batches_of(data)
    victim = clean[15]
    log.write_bytes(damage(data, "flip", victim[0] + 40, random.Random(1))[0])
    return pdir, log, clean, victim


def _read(pdir, **options) -> list[dict]:
    reader = KsegReader({"path": str(pdir), **options})
    return [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]


@pytest.mark.parametrize("which", ["rust", "python"])
def test_resync_option_reads_past_damage(damaged, which, monkeypatch, caplog):
    monkeypatch.setenv("KSEG_KERNEL", which)
    kernel.reset()
    pdir, log, clean, victim = damaged
    try:
        with caplog.at_level(logging.WARNING, logger="kseg.spark"):
            rows = _read(pdir, resync="true")
        plain = _read(pdir)
    finally:
        kernel.reset()
    want = [(o, k, v) for pos, _, rs in clean if pos != victim[0] for o, k, v in rs]
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == want
    warned = [r.getMessage() for r in caplog.records if "skipped bytes" in r.getMessage()]
    assert warned == [
        f"kseg: {log}: skipped bytes {victim[0]}..{victim[1]} ({victim[1] - victim[0]} bytes,"
        f" offsets {victim[2][0][0]}..{victim[2][-1][0]}): crc_mismatch: batch CRC-32C mismatch"
        " (resync: reading goes on after it)"
    ]
    # without the option (the default) the reader stops at the damage, as before
    assert [r["offset"] for r in plain] == [o for _, _, rs in clean[:15] for o, _, _ in rs]


def test_resync_option_in_spark(spark, damaged):
    pdir, _, clean, victim = damaged
    df = kseg.spark.read(spark, [str(pdir)], resync=True)
    assert df.count() == sum(len(rs) for _, _, rs in clean) - len(victim[2])
