"""`kseg dump` on Kafka 4.1's internal files, through the real entry point: decoders chosen by
path or by --decoder, --skip-record-metadata, snapshot names, quorum-state, root listings."""

from __future__ import annotations

import json

from tests.helpers import run_kseg

DATA = "kafka-4.1.0-dev/data"


def _events(out: bytes) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_root_dump_lists_bootstrap_and_quorum_state_by_kind(real_root):
    proc = run_kseg("dump", str(real_root / DATA), "--topic", "__cluster_metadata", "-f", "json")
    evs = _events(proc.stdout)
    kinds = {e["kind"] for e in evs if e["type"] == "file"}
    # a selection selects partitions: the root's own bootstrap.checkpoint only without one
    # (issue #27 item 6), or given by name
    assert proc.returncode == 0 and {"quorum_state", "kraft_checkpoint"} <= kinds
    assert "bootstrap_checkpoint" not in kinds
    whole = _events(run_kseg("dump", str(real_root / DATA), "--batches-only", "-f", "json").stdout)
    assert "bootstrap_checkpoint" in {e["kind"] for e in whole if e["type"] == "file"}
    by_name = run_kseg("dump", str(real_root / DATA / "bootstrap.checkpoint"), "-f", "json")
    assert by_name.returncode == 0 and b'"kind":"bootstrap_checkpoint"' in by_name.stdout
    (qs,) = [e for e in evs if e["type"] == "quorum_state"]
    assert (qs["leader_id"], qs["leader_epoch"], qs["voted_id"], qs["data_version"]) == (
        1,
        1,
        -1,
        1,
    )
    snaps = [e for e in evs if e["type"] == "file" and e["kind"] == "kraft_checkpoint"]
    assert {(e["snapshot_end_offset"], e["snapshot_epoch"]) for e in snaps} >= {(144, 1), (565, 1)}
    decoded = [e["decoded"] for e in evs if e["type"] in ("record", "control") and "decoded" in e]
    assert decoded and not [d for d in decoded if "error" in d]


def test_text_names_kraft_control_records_and_skip_record_metadata(real_root):
    log = real_root / DATA / "__cluster_metadata-0" / "00000000000000000000.log"
    text = run_kseg("dump", str(log), "--to-offset", "4").stdout.decode()
    assert (
        "| offset: 0 CreateTime: 1795416734913 (2026-11-23T06:52:14.913Z) LeaderChange: {" in text
    )
    assert "KRaftVoters: {" in text and "endTxnMarker" not in text
    assert 'feature_level_record v0: {"name":"metadata.version","feature_level":27,' in text
    skipped = run_kseg("dump", str(log), "--to-offset", "4", "--skip-record-metadata").stdout
    lines = skipped.decode().splitlines()
    assert not [ln for ln in lines if ln.startswith("baseOffset")]
    assert 'offset: 3 begin_transaction_record v0: {"name":"Bootstrap records"}' in lines


def test_explicit_decoder_on_a_copied_file(real_root, tmp_path):
    # a snapshot copied out of its directory still decodes (by its name); a share-state segment
    # renamed out of its partition needs --decoder
    src = real_root / DATA / "__share_group_state-0" / "00000000000000000000.log"
    copy = tmp_path / "00000000000000000000.log"
    copy.write_bytes(src.read_bytes())
    plain = [
        e
        for e in _events(run_kseg("dump", str(copy), "-f", "json").stdout)
        if e["type"] == "record"
    ]
    assert plain and not [e for e in plain if "decoded" in e]
    proc = run_kseg("dump", str(copy), "-f", "json", "--decoder", "share-group-state")
    recs = [e["decoded"] for e in _events(proc.stdout) if e["type"] == "record"]
    assert proc.returncode == 0 and {d["layout"] for d in recs} == {"4.1"}
    assert {d["record"] for d in recs} == {"share_snapshot", "share_update"}
    wrong = run_kseg("dump", str(copy), "-f", "json", "--decoder", "cluster-metadata")
    errs = [e["decoded"] for e in _events(wrong.stdout) if e["type"] == "record"]
    assert wrong.returncode == 0 and all("error" in d and "byte" in d["field"] for d in errs)


def test_table_has_a_column_per_field_of_each_record_kind(real_root):
    log = real_root / DATA / "__cluster_metadata-0" / "00000000000000000000.log"
    out = run_kseg("dump", str(log), "-f", "table", "--from-offset", "283", "--to-offset", "283")
    text = out.stdout.decode()
    assert out.returncode == 0 and "partition_record" in text
    header = next(ln for ln in text.splitlines() if "partition_id" in ln)
    assert all(c in header for c in ("offset", "topic_id", "replicas", "isr", "leader"))
    offsets = real_root / DATA / "__transaction_state-1"
    text = run_kseg("dump", str(offsets), "-f", "table", "--limit", "2").stdout.decode()
    # a table titled by the record kind, its rows carrying the decoded fields (wide headers fold)
    assert "\ntransaction " in text and "dev-pytx" in text and "60000" in text
