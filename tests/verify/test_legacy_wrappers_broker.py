"""Legacy compressed wrappers against the real Kafka 4.1.0 (skips where ../shared/kafka is
absent): its recovery keeps every one of them (LogSegment.recover checks a legacy wrapper's size
and CRC-32 only), so kseg predicts no truncation; its reader (DumpLogSegments
--deep-iteration, AbstractLegacyRecordBatch) reads magic-0 messages in a magic-1 wrapper exactly
as `kseg dump` prints them and refuses the empty and the zstd wrapper, as kseg does."""

from __future__ import annotations

import re

import pytest

from kseg.fixtures import recovery
from tests.broker import Broker, recover_with_kafka
from tests.helpers import events, run_kseg

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("wrappers")
    return {w: recovery.legacy_wrapper(root / w, w) for w in recovery.LEGACY_WRAPPERS}


def test_kafkas_recovery_keeps_every_legacy_wrapper(kafka_home, cases, tmp_path):
    dirs = {c.partition_dir.name: c.partition_dir for c in cases.values()}
    recovered = recover_with_kafka(kafka_home, tmp_path / "broker", dirs)
    for name, src in dirs.items():
        logs = {f.name: f.stat().st_size for f in src.iterdir() if f.suffix == ".log"}
        kept = {k: v for k, v in recovered[name].files.items() if k.endswith(".log")}
        assert kept == logs, (name, recovered[name].log_lines)


def test_kafkas_reader_agrees_with_kseg_dump(kafka_home, cases, tmp_path):
    broker = Broker(kafka_home, tmp_path / "tool")
    for shape, case in cases.items():
        log = case.batches["middle"].segment
        proc = broker.tool("kafka-dump-log.sh", "--deep-iteration", "--files", str(log))
        ours = run_kseg("dump", log, "-f", "json")
        if recovery.LEGACY_WRAPPERS[shape][1]:
            theirs = [int(m) for m in re.findall(r"^\| offset: (\d+)", proc.stdout, re.M)]
            got = [e["offset"] for e in events(ours.stdout) if e["type"] == "record"]
            assert ours.returncode == 0 and got == theirs == list(range(16)), shape
        else:
            assert "InvalidRecordException" in proc.stdout + proc.stderr, shape
            assert ours.returncode == 4, shape
