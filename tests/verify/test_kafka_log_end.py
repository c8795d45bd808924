"""Findings that say what Kafka does at its next start use the log end Kafka will have.

A corrupt batch in a segment below the recovery point is not recovered by Kafka (it stays, and so
does everything after it), so nothing past it is "past the log end": verify used to say Kafka
would delete every later producer snapshot and reset root checkpoints to the offset of the bad
batch (kseg's repair end), which Kafka never does. At or above the recovery point, Kafka does
truncate there, and those findings stay true.
"""

from __future__ import annotations

import json

from kseg.fixtures.tree import build_tree
from kseg.storage import files as F
from tests.helpers import run_kseg


def _damaged_orders(tmp_path, recovery_point: int | None):
    root = build_tree(tmp_path / "logs")
    pdir = root / "orders-0"
    log = pdir / F.segment_file_name(0, ".log")
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0x40  # a bit flip inside a batch of the first segment
    log.write_bytes(bytes(data))
    if recovery_point is not None:
        ckpt = root / "recovery-point-offset-checkpoint"
        lines = ckpt.read_text().splitlines()
        kept = [ln for ln in lines[2:] if not ln.startswith("orders 0 ")]
        body = [*kept, f"orders 0 {recovery_point}"]
        ckpt.write_text("\n".join(["0", str(len(body)), *body]) + "\n")
    return root, pdir


def _events(proc):
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_corruption_below_the_recovery_point_moves_no_log_end(tmp_path):
    root, pdir = _damaged_orders(tmp_path, recovery_point=199)
    proc = run_kseg("verify", root, "-f", "json")
    assert proc.returncode == 4, proc.stderr
    events = _events(proc)
    kinds = [e.get("kind") for e in events if e["type"] == "finding"]
    assert "crc_mismatch" in kinds
    past = [e for e in events if e["type"] == "finding" and "past the log end" in e["message"]]
    assert past == []
    assert not [e for e in events if e.get("kind") == "checkpoint_inconsistent"]
    (recovery,) = [e for e in events if e["type"] == "kafka_recovery"]
    assert [a["action"] for a in recovery["actions"]] == ["keep_corrupt_batch"]


def test_corruption_at_the_recovery_point_still_says_what_kafka_deletes(tmp_path):
    """The control: with the recovery point in the damaged segment Kafka truncates there, and
    every later snapshot is past its log end."""
    root, pdir = _damaged_orders(tmp_path, recovery_point=0)
    proc = run_kseg("verify", root, "-f", "json")
    assert proc.returncode == 4, proc.stderr
    events = _events(proc)
    (recovery,) = [e for e in events if e["type"] == "kafka_recovery"]
    assert recovery["actions"][0]["action"] == "truncate"
    past = [
        e["file"]
        for e in events
        if e["type"] == "finding"
        and "snapshot at offset" in e["message"]
        and "past the log end" in e["message"]
    ]
    snapshots = sorted(str(p) for p in pdir.glob("*.snapshot"))
    assert sorted(past) == snapshots and snapshots
