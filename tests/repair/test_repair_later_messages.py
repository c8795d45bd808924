"""Every message of a segment the repair moves because it follows kseg's truncation point says
what Kafka does to it (as kafka_recovery predicts, LogLoader.recoverLog): "Kafka's recovery
deletes it" only where Kafka does (it truncates an earlier segment at or above the recovery
point). Where Kafka keeps it -- the corrupt batch lies below the recovery point
(keep_corrupt_batch), Kafka accepts a lying baseOffset (keep_bad_offsets) or a CRC-valid invalid
batch (keep_invalid_batch) -- the message says so, and that --keep-later-segments keeps it."""

from __future__ import annotations

import shutil

from kseg.fixtures import recovery as R
from kseg.fixtures.corrupt import raise_records_count
from tests.helpers import events, run_kseg
from tests.verify.test_kafka_log_end import _damaged_orders

TAIL = "kseg quarantines it so the log ends at its last valid batch; --keep-later-segments keeps it"


def _moves(root) -> tuple[list[str], list[str]]:
    """The kafka_recovery actions and the reasons of the segment moves of a dry-run repair."""
    proc = run_kseg("verify", root, "--repair", "--dry-run", "-f", "json")
    assert proc.returncode == 4, proc.stdout
    evs = events(proc.stdout)
    (rec,) = [e for e in evs if e["type"] == "kafka_recovery"]
    moves = [e["reason"] for e in evs if e["type"] == "repair_action" and e["action"] == "move"]
    return [a["action"] for a in rec["actions"]], moves


def _segment_moves(reasons: list[str]) -> list[str]:
    return [r for r in reasons if r.startswith("segment after the truncation point")]


def test_kafka_deletes_the_later_segments_when_it_truncates(tmp_path):
    root, _ = _damaged_orders(tmp_path, recovery_point=0)
    kinds, reasons = _moves(root)
    assert "delete_later_segments" in kinds
    moves = _segment_moves(reasons)
    assert moves and all(r.endswith("; Kafka's recovery deletes it") for r in moves)


def test_below_the_recovery_point_kafka_keeps_them(tmp_path):
    root, _ = _damaged_orders(tmp_path, recovery_point=199)
    kinds, reasons = _moves(root)
    assert kinds == ["keep_corrupt_batch"]
    moves = _segment_moves(reasons)
    assert moves
    for r in moves:
        assert "deletes" not in r
        assert r.endswith(
            "; Kafka would keep it (its recovery does not reach the corrupt batch, below the"
            f" recovery point 199), {TAIL}"
        )


def test_a_lying_base_offset_kafka_keeps(tmp_path):
    case = R.lying_base_offset(tmp_path / "c", "raised-kept")
    kinds, reasons = _moves(case.root)
    assert kinds == ["keep_bad_offsets"]
    moves = _segment_moves(reasons)
    assert moves
    for r in moves:
        assert r.endswith(
            "; Kafka would keep it (its recovery keeps the batch whose offsets go backwards), "
            + TAIL
        )


def test_a_crc_valid_invalid_batch_kafka_keeps(tree, tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(tree / "orders-0", root / "orders-0")
    logs = sorted((root / "orders-0").glob("*.log"))
    out = run_kseg("dump", logs[0], "--batches-only", "-f", "json").stdout
    b = [e for e in events(out) if e["type"] == "batch"][2]
    raise_records_count(logs[0], b["position"])
    kinds, reasons = _moves(root)
    assert kinds == ["keep_invalid_batch"]
    moves = _segment_moves(reasons)
    assert moves
    for r in moves:
        assert r.endswith(
            "; Kafka would keep it (its recovery keeps the CRC-valid batch whose records_count or"
            f" last_offset_delta contradicts its offsets), {TAIL}"
        )
