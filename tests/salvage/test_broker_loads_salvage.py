"""A salvaged partition dir loads in a real Apache Kafka 4.1.0 broker (../shared/kafka) as it
is: its recovery, which checks every byte (no clean-shutdown marker), truncates nothing, the
log end is salvage's, and a consumer reads exactly the salvaged records, the lost offsets
skipped as a compaction gap. One broker start; skips where ../shared/kafka is absent."""

from __future__ import annotations

import base64
import re

import pytest

from kseg.storage.tree import segment_logs
from tests.broker import Broker
from tests.helpers import events, run_kseg
from tests.salvage.cases import TOPIC, damaged
from tests.salvage.test_salvage import records

pytestmark = pytest.mark.slow


def test_kafka_loads_the_salvaged_partition_and_serves_exactly_its_records(kafka_home, tmp_path):
    case = damaged(tmp_path / "case", "middle_segment")
    proc = run_kseg("salvage", case.pdir, "-f", "json")
    assert proc.returncode == 1, proc.stderr
    (ev,) = [e for e in events(proc.stdout) if e["type"] == "salvage"]
    expected = records(case.pdir)
    assert len(expected) == ev["salvage_keeps"]["records"] > ev["kafka_keeps"]["records"]
    broker = Broker(kafka_home, tmp_path / "broker")
    broker.serve({(TOPIC, 0): case.pdir})
    with broker:
        got = broker.consume(TOPIC, 0)
        end = broker.end_offsets(TOPIC)[0]
    name = case.pdir.name
    said = [line for line in broker.server_log().splitlines() if re.search(rf"\b{name}\b", line)]
    assert not [line for line in said if re.search(r"(?i)truncat|corrupt|invalid", line)], said
    damaged_base = int(segment_logs(case.pdir)[1].stem)  # its recovery read every salvaged byte
    assert any(f"Recovering unflushed segment {damaged_base}." in line for line in said)
    assert end == ev["salvage_keeps"]["log_end"]

    def b64(v):
        return None if v is None else base64.b64encode(v).decode()

    assert [(r.offset, b64(r.key), b64(r.value)) for r in got] == expected
    assert min(ev["lost"]["offsets"][0]) not in {r.offset for r in got}
