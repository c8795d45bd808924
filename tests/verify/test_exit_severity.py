"""Which findings make `kseg verify` exit 4 (README, "What makes exit 4"): an error means Kafka's
next start would lose or change data or fail, or consumers would fail; a warning or an info
means Kafka starts and loses nothing, so `kseg verify DIR && start the broker` holds."""

from __future__ import annotations

import pytest

from kseg.cli.exit import exit_status
from kseg.format.checkpoint import EpochEntry, encode_leader_epoch_checkpoint
from kseg.format.txn_index import encode_entries, read_entries
from kseg.storage.tree import segment_logs
from kseg.verify.findings import ERROR, INFO, WARNING, finding_outcome
from tests.helpers import copy_partition, events, run_cli


def verify(monkeypatch, capsysbinary, path) -> tuple[int, list[dict]]:
    """The exit code and the findings (but the fixture's preallocated active indexes: info)."""
    code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", path, "-f", "json")
    return code, [e for e in events(out) if e["type"] == "finding" and e["kind"] != "index_padding"]


def test_only_errors_set_bit_4():
    assert exit_status(finding_outcome("crc_mismatch", ERROR)) == 4
    assert exit_status(finding_outcome("missing_index", WARNING)) == 0
    assert exit_status(finding_outcome("orphan_file", INFO)) == 0
    assert exit_status(finding_outcome("unreadable", ERROR)) == 8


@pytest.mark.parametrize("content", [b"", b"0\n"])
def test_an_empty_leader_epoch_checkpoint_is_an_empty_list(tree, tmp_path, monkeypatch,
                                                           capsysbinary, content):  # fmt: skip
    """CheckpointFile.CheckpointReadBuffer.read: no first line (or no count line) -> empty."""
    pdir = copy_partition(tree / "orders-0", tmp_path)
    (pdir / "leader-epoch-checkpoint").write_bytes(content)
    code, found = verify(monkeypatch, capsysbinary, pdir)
    assert code == 0 and found == []


def test_a_malformed_leader_epoch_checkpoint_is_an_error(tree, tmp_path, monkeypatch,
                                                         capsysbinary):  # fmt: skip
    """Kafka reads it through CheckpointFileWithFailureHandler: the log dir goes offline."""
    pdir = copy_partition(tree / "orders-0", tmp_path)
    (pdir / "leader-epoch-checkpoint").write_bytes(b"0\n2\n0 0\n")
    code, found = verify(monkeypatch, capsysbinary, pdir)
    assert code == 4 and [f["severity"] for f in found] == ["error"]


def test_an_orphan_index_is_info_naming_kafkas_deletion(tree, tmp_path, monkeypatch, capsysbinary):
    pdir = copy_partition(tree / "orders-0", tmp_path)
    src = segment_logs(pdir)[0].with_suffix(".index")
    (pdir / "00000000000099999999.index").write_bytes(src.read_bytes())
    code, found = verify(monkeypatch, capsysbinary, pdir)
    (orphan,) = [f for f in found if f["kind"] == "orphan_file"]
    assert orphan["severity"] == "info" and "Kafka deletes it at startup" in orphan["message"]
    assert code == 0


def test_a_txnindex_entry_outside_its_segment_is_an_error(tree, tmp_path, monkeypatch,
                                                          capsysbinary):  # fmt: skip
    """read_committed fetches would collect it for the wrong offsets."""
    pdir = copy_partition(tree / "txn-0", tmp_path)
    path = next(p for p in sorted(pdir.glob("*.txnindex")) if p.stat().st_size)
    entries = list(read_entries(path.read_bytes()))
    entries[0] = entries[0]._replace(last_offset=int(path.name[:20]) - 1)
    path.write_bytes(encode_entries(entries))
    code, found = verify(monkeypatch, capsysbinary, pdir)
    (bad,) = [f for f in found if f["kind"] == "index_mismatch"]
    assert bad["severity"] == "error" and code == 4


def test_a_corrupt_producer_snapshot_is_a_warning(tree, tmp_path, monkeypatch, capsysbinary):
    """ProducerStateManager deletes a snapshot it cannot read and replays the log."""
    pdir = copy_partition(tree / "txn-0", tmp_path)
    snap = sorted(pdir.glob("*.snapshot"))[0]
    data = bytearray(snap.read_bytes())
    data[-1] ^= 0xFF
    snap.write_bytes(bytes(data))
    code, found = verify(monkeypatch, capsysbinary, pdir)
    assert [f["severity"] for f in found] == ["warning"], found
    assert code == 0


def test_non_increasing_leader_epochs_are_a_warning(tree, tmp_path, monkeypatch, capsysbinary):
    """LeaderEpochFileCache drops non-monotonic entries when it loads the file."""
    pdir = copy_partition(tree / "orders-0", tmp_path)
    entries = [EpochEntry(3, 0), EpochEntry(2, 1)]
    (pdir / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint(entries))
    code, found = verify(monkeypatch, capsysbinary, pdir)
    kinds = {(f["kind"], f["severity"]) for f in found}
    assert ("checkpoint_inconsistent", "warning") in kinds
    assert all(f["severity"] != "error" for f in found if f["kind"] == "checkpoint_inconsistent")
