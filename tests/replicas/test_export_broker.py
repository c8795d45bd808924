"""An --export-lost partition dir loads in a real Apache Kafka 4.1.0 broker (../shared/kafka) as
it is: recovery (no clean-shutdown marker: every byte checked) truncates nothing, the log starts
at the first lost batch and ends after the last, and consumers get exactly the exported records
(read_committed: those `kseg dump --isolation read_committed` shows). One broker start; skips
where ../shared/kafka is absent."""

from __future__ import annotations

import re

import orjson
import pytest

from kseg.render.lost_records import record_files
from kseg.replicas.export import export_lost
from tests.broker import Broker
from tests.helpers import events, run_kseg
from tests.replicas.test_export import PART, TOPIC, _bytes, batches_of, lost_ranges, write_source

pytestmark = pytest.mark.slow


def test_kafka_serves_exactly_the_exported_records(kafka_home, tmp_path):
    src = tmp_path / "src" / f"{TOPIC}-{PART}"
    # epochs 0, 1: not above the scratch cluster's own leader epoch (2 after serve's restart).
    # Batches of a higher epoch are served too (Kafka's console consumer reads them all), but
    # kafka-python 3.0.12's consumer skipped them when we tried (its position jumped to the end)
    write_source(src, last_epoch=1)
    batches = batches_of(src)
    runs = [(1, len(batches) - 1)]  # from a gzip batch: spans segments, both markers
    got = export_lost(src, lost_ranges(batches, runs), tmp_path / "out", topic=TOPIC,
                      partition=PART, files=record_files())  # fmt: skip
    lines = [orjson.loads(x) for x in got.jsonl.read_bytes().splitlines()]
    proc = run_kseg("dump", got.dir, "-f", "json", "--isolation", "read_committed")
    assert proc.returncode == 0, proc.stderr
    committed = [e["offset"] for e in events(proc.stdout) if e["type"] == "record"]
    assert len(committed) < len(lines)  # the aborted transaction's records
    broker = Broker(kafka_home, tmp_path / "broker")
    broker.serve({(TOPIC, PART): got.dir})
    with broker:
        records = broker.consume(TOPIC, PART)
        read_committed = broker.consume(TOPIC, PART, read_committed=True)
        end = broker.end_offsets(TOPIC)[PART]
    said = [x for x in broker.server_log().splitlines() if re.search(rf"\b{got.dir.name}\b", x)]
    assert not [x for x in said if re.search(r"(?i)truncat|corrupt|invalid", x)], said
    assert end == batches[-1].last + 1
    assert [
        (r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in records
    ] == [
        (
            e["offset"],
            e["timestamp"],
            _bytes(e["key"], e["key_encoding"]),
            _bytes(e["value"], e["value_encoding"]),
            [
                (k, _bytes(v, c))
                for (k, v), c in zip(e["headers"], e["header_encodings"], strict=True)
            ],  # fmt: skip
        )
        for e in lines
    ]
    assert [r.offset for r in read_committed] == committed
