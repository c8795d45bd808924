"""A CRC-valid batch whose records_count contradicts its offsets (a writer's bug, not a disk
error) is invalid data (consumers fail on it), but Kafka's recovery keeps it with everything
after it: LogSegment.recover calls RecordBatch.ensureValid, which checks only sizes and the CRC
(seen on a real 4.1.0 broker: test_kafka_recovery_oracle.py, case count-none-0)."""

from __future__ import annotations

import shutil

from kseg.fixtures.corrupt import raise_records_count
from tests.helpers import events, run_kseg


def test_kafka_keeps_a_crc_valid_batch_with_a_wrong_count(tree, tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(tree / "orders-0", root / "orders-0")
    logs = sorted((root / "orders-0").glob("*.log"))
    out = run_kseg("dump", logs[1], "--batches-only", "-f", "json").stdout
    b = [e for e in events(out) if e["type"] == "batch"][2]
    raise_records_count(logs[1], b["position"])
    proc = run_kseg("verify", root, "-f", "json")
    evs = events(proc.stdout)
    assert proc.returncode == 4
    (f,) = [e for e in evs if e["type"] == "finding" and e["kind"] == "invalid_batch"]
    assert f["position"] == b["position"]
    (rec,) = [e for e in evs if e["type"] == "kafka_recovery"]
    assert [(a["action"], a.get("position")) for a in rec["actions"]] == [
        ("keep_invalid_batch", b["position"])
    ]
    # nothing Kafka keeps is said to be deleted at start (snapshots past a cut log end)
    assert not [e for e in evs if e["type"] == "finding" and "deletes it" in e["message"]]
