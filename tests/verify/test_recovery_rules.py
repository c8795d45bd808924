"""The five rules where Kafka 4.1's recovery must be followed exactly (FORMATS.md section 6),
each on a fixture written by LogWriter plus positioned byte patches (kseg/fixtures/recovery.py),
and the `kafka_recovery` summary of what Kafka would do on its next start."""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson
import pytest

from kseg.fixtures import recovery as R
from kseg.format import txn_index as tx
from kseg.format.log import MAGIC_POS
from kseg.index.rebuild import rebuild_target
from kseg.storage.tree import Target, segment_logs
from tests.helpers import run_kseg


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes, but the log dir's .lock (a repair takes it, as a broker does)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def jsonl(out: bytes) -> list[dict]:
    return [orjson.loads(line) for line in out.splitlines() if line.strip()]


def verify(*args) -> tuple[int, list[dict]]:
    r = run_kseg("verify", *args, "-f", "json")
    assert not r.stderr.strip() or b"Traceback" not in r.stderr, r.stderr
    return r.returncode, jsonl(r.stdout)


def findings(evs, kind=None, severity=None):
    return [
        e
        for e in evs
        if e["type"] == "finding"
        and (kind is None or e["kind"] == kind)
        and (severity is None or e["severity"] == severity)
    ]


def outcome(evs) -> dict | None:
    found = [e for e in evs if e["type"] == "kafka_recovery"]
    assert len(found) <= 1
    return found[0] if found else None


def repair_cycle(root: Path, tmp_path: Path, *extra) -> tuple[list[dict], Path]:
    """dry run (changes nothing), repair (exit 1), verify clean, restore: byte for byte back."""
    damaged = snapshot(root)
    code, dry = verify(root, "--repair", "--dry-run", *extra)
    assert code == 4 and snapshot(root) == damaged
    q = tmp_path / "quarantine"
    code, evs = verify(root, "--repair", "--quarantine", q, *extra)
    assert code == 1, [e for e in evs if e["type"] in ("finding", "repair_failed")]
    code, after = verify(root)
    assert code == 0, findings(after)
    assert outcome(after) is None  # nothing left for Kafka's recovery to do
    (qdir,) = [e["quarantine"] for e in evs if e["type"] == "repair_done"]
    r = run_kseg("restore", qdir)
    assert r.returncode == 0, r.stderr
    assert snapshot(root) == damaged
    return [e for e in dry if e["type"] == "repair_action"], Path(qdir)


# --- 1. record sequence with producerId -1 --------------------------------------------------


def test_sequence_when_producer_id_is_minus_one(tmp_path):
    """Kafka: DefaultRecord.readFrom -- sequence = baseSequence >= 0 ?
    DefaultRecordBatch.incrementSequence(baseSequence, offsetDelta) : NO_SEQUENCE, whatever the
    producer id; incrementSequence wraps at Integer.MAX_VALUE."""
    case = R.coordinator_sequences(tmp_path / "logs")
    r = run_kseg("dump", case.partition_dir, "-f", "json")
    assert r.returncode == 0, r.stderr
    evs = jsonl(r.stdout)
    batches = [e for e in evs if e["type"] == "batch"]
    assert all(b["producer_id"] == -1 for b in batches)
    seqs = [e["sequence"] for e in evs if e["type"] == "record"]
    assert seqs == [-1, -1, 0, 1, 2, R.INT32_MAX - 1, R.INT32_MAX, 0]
    assert [(b["base_sequence"], b["last_sequence"]) for b in batches] == [
        (-1, -1),
        (0, 2),
        (R.INT32_MAX - 1, 0),
    ]
    text = run_kseg("dump", case.partition_dir).stdout.decode()
    assert re.findall(r"sequence: (-?\d+)", text)[:3] == ["-1", "-1", "0"]
    assert run_kseg("verify", case.root).returncode == 0


def test_sequence_matches_kafka_dump_log_on_real_coordinator_batches(real_root):
    """A Kafka 4.1.0 broker's __consumer_offsets (producerId -1, baseSequence 0): every record's
    `sequence` equals kafka-dump-log's."""
    pdir = real_root / "kafka-4.1.0-dev/data/__consumer_offsets-0"
    if not pdir.is_dir():
        pytest.skip("no Kafka 4.1.0 corpus")
    log = pdir / "00000000000000000000.log"
    expected = [
        int(m)
        for m in re.findall(
            r"^\| offset: \d+ .*? sequence: (-?\d+)",
            (pdir / (log.name + ".kafka-dump-log.txt")).read_text(),
            re.M,
        )
    ]
    r = run_kseg("dump", log, "-f", "json", "--payload", "none")
    got = [e["sequence"] for e in jsonl(r.stdout) if e["type"] == "record"]
    assert expected and got == expected and max(got) >= 0


# --- 2. .txnindex: only markers that close an open transaction -------------------------------


def test_txnindex_entries_only_for_aborts_that_close_a_transaction(tmp_path):
    """Kafka: ProducerAppendInfo.appendEndTxnMarker emits a CompletedTxn only when
    currentTxnFirstOffset is present; LogSegment.updateTxnIndex appends it when aborted;
    ProducerStateManager.lastStableOffset = first offset of the earliest other open txn."""
    case = R.aborts(tmp_path / "logs")
    b = case.batches
    expected = [
        tx.AbortedTxn(
            7, b["p7_data"].base_offset, b["p7_abort"].base_offset, b["p8_data"].base_offset
        ),
        tx.AbortedTxn(
            7, b["p7_data2"].base_offset, b["p7_abort2"].base_offset, b["p7_abort2"].base_offset + 1
        ),
    ]
    txn_path = b["p7_data"].segment.with_suffix(".txnindex")
    written = txn_path.read_bytes()  # by the LogWriter, through the same TxnTracker
    assert list(tx.read_entries(written)) == expected
    txn_path.unlink()
    (res,) = rebuild_target(Target(case.partition_dir, segment_logs(case.partition_dir)))
    assert txn_path.read_bytes() == written
    assert res.scan.aborted == expected
    assert run_kseg("verify", case.root).returncode == 0


# --- 3. control records ---------------------------------------------------------------------


def test_newer_end_txn_markers_are_kept(tmp_path):
    """Kafka: EndTransactionMarker.deserializeValue reads a version > 0 as version 0 and
    ignores the bytes after the first 6 (a 4.1.0 broker kept both, and all after them)."""
    case = R.newer_markers(tmp_path / "logs")
    before = snapshot(case.root)
    code, evs = verify(case.root)
    assert code == 0
    infos = findings(evs, "control_version")
    assert [(f["severity"], f["position"]) for f in infos] == [
        ("info", case.batches["marker0"].position),
        ("info", case.batches["marker1"].position),
    ]
    assert not findings(evs, severity="error") and outcome(evs) is None
    code, evs = verify(case.root, "--repair")
    assert code == 0 and snapshot(case.root) == before  # nothing to repair
    dump = jsonl(run_kseg("dump", case.partition_dir, "-f", "json").stdout)
    controls = [e for e in dump if e["type"] == "control"]
    assert [c["control_type"] for c in controls] == ["COMMIT", "COMMIT"]
    assert not [e for e in dump if e["type"] == "error"]


@pytest.mark.parametrize("which", sorted(R.UNREADABLE_MARKERS))
def test_unreadable_marker_is_a_truncation_point_kafka_cannot_start_from(tmp_path, which):
    """Kafka: ControlRecordType.parse / EndTransactionMarker.deserialize throw on these; the
    producer-state replay fails outside LogSegment.recover's catch and 4.1.0 stops with "Error
    starting LogManager" on every start. It starts from the log cut at the START of the batch."""
    case = R.unreadable_marker(tmp_path / "logs", which)
    marker = case.batches["marker"]
    code, evs = verify(case.root)
    assert code == 4
    (f,) = findings(evs, "invalid_control")
    assert f["position"] == marker.position and f["repairable"]
    assert "fails to start the broker" in f["message"]
    out = outcome(evs)
    assert [a["action"] for a in out["actions"]] == ["fail_to_start"]
    assert out["actions"][0]["position"] == marker.position
    actions, _ = repair_cycle(case.root, tmp_path)
    (trunc,) = [a for a in actions if a["action"] == "truncate"]
    assert trunc["position"] == marker.position
    assert {Path(a["file"]).name for a in actions if a["action"] == "move"} >= {
        case.batches["next_segment"].segment.name
    }


def test_kraft_control_batches_are_never_findings(real_root, tmp_path):
    """KRaft's control batches (types 2-6) carry producer id -1: Kafka's recovery never reads
    them (LogSegment.updateProducerState: batch.hasProducerId())."""
    data = real_root / "kafka-4.1.0-dev/data"
    if not data.is_dir():
        pytest.skip("no Kafka 4.1.0 corpus")
    code, evs = verify(data / "__cluster_metadata-0")
    assert code == 0 and not [f for f in findings(evs) if f["severity"] != "info"]
    assert outcome(evs) is None
    from kseg.verify.segment import scan_segment

    snapshots = sorted((data / "__cluster_metadata-0").glob("*.checkpoint"))
    assert snapshots
    for path in snapshots + [data / "bootstrap.checkpoint"]:
        # a snapshot is named by its END offset; its batches start at 0: scan it as a segment 0
        copy = tmp_path / "00000000000000000000.log"
        copy.write_bytes(path.read_bytes())
        scan = scan_segment(copy, check_indexes=False)
        assert scan.findings == [] and scan.valid_bytes == scan.size, path


# --- 4. magic byte and leader epoch outside the CRC ------------------------------------------


def test_flipped_magic_7_is_kept_reported_and_patched_in_place(tmp_path):
    """Kafka: FileLogInputStream reads a magic >= 2 as a v2 batch; the magic lies outside the
    CRC, so DefaultRecordBatch.ensureValid passes and LogSegment.recover keeps it (and indexes
    it) silently. kseg: an error, not a truncation point; repair writes 2 back in place."""
    clean_root = tmp_path / "clean"
    R.flipped_magic(clean_root, 2)  # the same partition, undamaged
    case = R.flipped_magic(tmp_path / "d", 7)
    bad = case.batches["b3"]
    code, evs = verify(case.root)
    assert code == 4
    (f,) = findings(evs, severity="error")
    assert f["kind"] == "bad_magic" and f["position"] == bad.position and f["repairable"]
    assert f"magic 7 at byte {bad.position + MAGIC_POS}" in f["message"]
    assert "Kafka keeps the batch and consumers will fail on it" in f["message"]
    segs = [e for e in evs if e["type"] == "segment"]
    assert all(s["valid_bytes"] == s["size"] for s in segs)  # no truncation
    assert [a["action"] for a in outcome(evs)["actions"]] == ["keep_bad_magic_batch"]

    # dump: decoded as v2, with an error object, records shown
    dump = jsonl(run_kseg("dump", bad.segment, "-f", "json").stdout)
    (batch,) = [e for e in dump if e["type"] == "batch" and e["position"] == bad.position]
    assert batch["magic"] == 7 and batch["crc_valid"]
    (err,) = [e for e in dump if e["type"] == "error"]
    assert err["kind"] == "bad_magic" and err["position"] == bad.position
    assert len([e for e in dump if e["type"] == "record"]) == 24

    # index rebuild indexes it as Kafka does: the writer's indexes are reproduced exactly
    idx = {s: bad.segment.with_suffix(s).read_bytes() for s in (".index", ".timeindex")}
    (res, _) = rebuild_target(
        Target(case.partition_dir, segment_logs(case.partition_dir)), index_interval_bytes=256
    )
    assert (
        len(idx[".index"]) >= 8
        and res.error is None
        and all(a.action == "unchanged" for a in res.files)
    )
    assert {s: bad.segment.with_suffix(s).read_bytes() for s in idx} == idx

    actions, qdir = repair_cycle(case.root, tmp_path)
    (patch,) = actions
    assert (patch["action"], patch["position"], patch["old_hex"], patch["new_hex"]) == (
        "patch",
        bad.position + MAGIC_POS,
        "07",
        "02",
    )
    manifest = json.loads((qdir / "manifest.json").read_text())
    assert manifest["status"] == "restored" and manifest["actions"][0]["old_hex"] == "07"
    # repaired = the undamaged bytes
    code, _ = verify(case.root, "--repair", "--quarantine", tmp_path / "q2")
    assert code == 1
    assert bad.segment.read_bytes() == (clean_root / "magic2-0" / bad.segment.name).read_bytes()


def test_flipped_magic_0_kafka_truncates_kseg_patches(tmp_path):
    """A magic 0/1 where a v2 batch is (its CRC-32C over [21, end) matches): Kafka reads a
    legacy message (magic < 2), whose CRC-32 (over the epoch field as "crc") fails, so
    LogSegment.recover truncates there and LogLoader deletes every later segment. The CRC-32C
    proves every other byte, so kseg keeps it and patches the magic; `index rebuild` (Kafka's
    view) stops there."""
    case = R.flipped_magic(tmp_path / "logs", 0)
    bad = case.batches["b3"]
    code, evs = verify(case.root)
    assert code == 4
    (f,) = findings(evs, severity="error")
    assert f["kind"] == "bad_magic" and "reads it as a legacy message" in f["message"]
    dump = jsonl(run_kseg("dump", bad.segment, "-f", "json").stdout)
    (batch,) = [e for e in dump if e["type"] == "batch" and e["position"] == bad.position]
    assert (batch["magic"], batch["crc_valid"], batch["base_offset"]) == (0, True, bad.base_offset)
    assert [e["kind"] for e in dump if e["type"] == "error"] == ["bad_magic"]
    assert len([e for e in dump if e["type"] == "record"]) == 24
    out = outcome(evs)
    assert [(a["action"], a.get("position"), a.get("count")) for a in out["actions"]] == [
        ("truncate", bad.position, None),
        ("delete_later_segments", None, 1),
    ]
    res = rebuild_target(
        Target(case.partition_dir, [bad.segment]), dry_run=True, index_interval_bytes=256
    )[0]
    assert res.error is not None and res.error.kind == "bad_magic"
    assert res.scan.valid_bytes == bad.position
    actions, _ = repair_cycle(case.root, tmp_path)
    assert [a["action"] for a in actions] == ["patch"]


@pytest.mark.parametrize(("magic", "kind"), [(7, "crc_mismatch"), (-128, "invalid_magic")])
def test_unknown_legacy_magic_stays_corruption(tmp_path, magic, kind):
    """A legacy message's CRC-32 covers its magic: flipped to 7 it is read as v2 (Kafka) and
    its CRC-32C fails; flipped negative it is a legacy message of unknown magic. Both are
    truncation points."""
    case = R.flipped_legacy_magic(tmp_path / "logs", magic)
    bad = case.batches["m2"]
    code, evs = verify(case.root)
    assert code == 4
    first = findings(evs, severity="error")[0]
    assert (first["kind"], first["position"]) == (kind, bad.position)
    assert [a["action"] for a in outcome(evs)["actions"]] == ["truncate"]


# --- 5. corruption below the log start offset -------------------------------------------------


def test_log_ending_below_log_start_is_reset_as_kafka_does(tmp_path):
    """Kafka: LogLoader.recoverLog -> deleteSegmentsIfLogStartGreaterThanLogEnd: every segment
    deleted, leader-epoch cache cleared, producer state truncated (snapshots deleted), one empty
    segment created at the log start offset."""
    case = R.below_log_start(tmp_path / "logs", 150)
    code, evs = verify(case.root)
    assert code == 4
    (f,) = findings(evs, "below_log_start")
    assert f["severity"] == "error" and f["repairable"] and "150" in f["message"]
    assert [a["action"] for a in outcome(evs)["actions"]] == [
        "truncate",
        "delete_later_segments",
        "reset_log",
    ]
    old_names = {p.name for p in case.partition_dir.iterdir()}
    q = tmp_path / "q"
    code, evs = verify(case.root, "--repair", "--quarantine", q)
    assert code == 1, findings(evs)
    now = {p.name: p.read_bytes() for p in case.partition_dir.iterdir()}
    name = "00000000000000000150"
    assert {n: d for n, d in now.items() if n.startswith(name)} == {
        f"{name}.log": b"",
        f"{name}.index": b"",
        f"{name}.timeindex": b"",
    }
    assert now["leader-epoch-checkpoint"] == b"0\n0\n"
    assert not [n for n in now if n.endswith((".snapshot", ".txnindex"))]
    (qdir,) = [e["quarantine"] for e in evs if e["type"] == "repair_done"]
    moved = {p.name for p in Path(qdir).iterdir()}
    assert moved >= {
        n for n in old_names if n.endswith((".log", ".index", ".timeindex", ".snapshot"))
    }
    code, after = verify(case.root)
    assert code == 0, findings(after)


def test_log_start_reset_restores_byte_for_byte(tmp_path):
    case = R.below_log_start(tmp_path / "logs", 150)
    actions, _ = repair_cycle(case.root, tmp_path)
    assert [a["file"].rsplit("/", 1)[1] for a in actions if a["action"] == "create"] == [
        "00000000000000000150.log",
        "00000000000000000150.index",
        "00000000000000000150.timeindex",
    ]


def test_keep_later_segments_keeps_the_log_above_its_start(tmp_path):
    """--keep-later-segments: later segments stay, so the log (ending at 300) does not end
    below its start (150); only the corrupt segment is truncated, nothing is reset."""
    case = R.below_log_start(tmp_path / "logs", 150)
    actions, _ = repair_cycle(case.root, tmp_path, "--keep-later-segments")
    assert "create" not in {a["action"] for a in actions}
    assert {a["action"] for a in actions} >= {"truncate"}


def test_keep_later_segments_still_resets_when_even_they_end_below_start(tmp_path):
    case = R.below_log_start(tmp_path / "logs", 1000)
    actions, _ = repair_cycle(case.root, tmp_path, "--keep-later-segments")
    assert [a["action"] for a in actions if a["action"] == "create"] == ["create"] * 3


def test_kafka_recovery_summary_in_text_and_real_roots_are_clean(tmp_path, real_root):
    case = R.below_log_start(tmp_path / "logs", 150)
    text = run_kseg("verify", case.root).stdout.decode()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("KAFKA RECOVERY")]
    assert "truncate" in line and "delete 2 later segments" in line
    assert "reset the log to an empty segment at 150" in line
    for root in sorted(p for p in real_root.rglob("*") if (p / "meta.properties").is_file()):
        code, evs = verify(root)
        assert code == 0 and not [e for e in evs if e["type"] == "kafka_recovery"], root


# --- 4''. partitionLeaderEpoch against leader-epoch-checkpoint --------------------------------


def test_leader_epoch_proven_by_the_checkpoint_is_patched(tmp_path):
    """Kafka: LogSegment.recover keeps a batch whatever its partitionLeaderEpoch (outside the
    CRC) and assigns an epoch above its latest into the leader-epoch cache. Inside a closed
    checkpoint range [s_k, s_k+1) the checkpoint proves the value: kseg patches it."""
    case = R.leader_epochs(tmp_path / "logs", {"e3b1": 9})
    bad = case.batches["e3b1"]
    assert (case.partition_dir / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n3 8\n5 16\n"
    code, evs = verify(case.root)
    assert code == 4
    (f,) = findings(evs, severity="error")
    assert (f["kind"], f["position"], f["repairable"]) == (
        "leader_epoch_mismatch",
        bad.position,
        True,
    )
    assert "proves epoch 3" in f["message"] and "leader-epoch cache" in f["message"]
    assert [a["action"] for a in outcome(evs)["actions"]] == ["keep_bad_leader_epoch"]
    actions, _ = repair_cycle(case.root, tmp_path)
    (patch,) = actions
    assert (patch["action"], patch["position"], patch["old_hex"], patch["new_hex"]) == (
        "patch",
        bad.position + 12,
        "00000009",
        "00000003",
    )


def test_leader_epoch_in_the_open_last_range(tmp_path):
    """After the checkpoint's last entry a newer epoch may be missing (the checkpoint lags
    after an unclean shutdown; recovery adds it): a higher value is no finding; a lower one is
    provably wrong (epochs never decrease) but its right value is not proven: not repaired."""
    case = R.leader_epochs(tmp_path / "logs", {"e5b0": 7})
    code, evs = verify(case.root)
    assert code == 0 and not findings(evs, "leader_epoch_mismatch")
    case = R.leader_epochs(tmp_path / "logs2", {"e5b1": 2})
    code, evs = verify(case.root)
    (f,) = findings(evs, "leader_epoch_mismatch")
    assert code == 4 and f["position"] == case.batches["e5b1"].position and not f["repairable"]
    code, evs = verify(case.root, "--repair", "--quarantine", tmp_path / "q")
    assert code == 4 and not [e for e in evs if e["type"] == "repair_action"]


def test_txnindex_rebuild_of_a_log_starting_mid_transaction(tmp_path):
    """Kafka loads the producer snapshot before replaying (ProducerStateManager.truncateAndReload),
    so a transaction whose start was deleted by retention keeps its first offset: the rebuild
    seeds the open transactions from the snapshot at the first segment's base offset."""
    from kseg.storage.writer import LogWriter

    pdir = tmp_path / "logs" / "txn-0"
    with LogWriter(pdir, clock=R.FixedClock()) as w:
        first = w.append(
            R._records(0, 3, R.BASE_TS),
            producer_id=3,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
        )
        w.roll()
        w.append(
            R._records(3, 2, R.BASE_TS),
            producer_id=3,
            producer_epoch=0,
            base_sequence=3,
            transactional=True,
        )
        abort = w.append_control(commit=False, producer_id=3, producer_epoch=0)
    second = abort.segment.with_suffix(".txnindex")
    written = second.read_bytes()
    assert list(tx.read_entries(written)) == [
        tx.AbortedTxn(3, first.base_offset, abort.base_offset, abort.base_offset + 1)
    ]
    for p in list(pdir.glob(first.segment.stem + ".*")):
        p.unlink()  # retention deleted the first segment
    second.unlink()
    rebuild_target(Target(pdir, segment_logs(pdir)))
    assert second.read_bytes() == written


@pytest.mark.parametrize(
    ("build", "point"),
    [("magic", "patched"), ("reset", "moved"), ("reset", "manifest")],
)
def test_killed_patch_or_reset_repair_completes_on_rerun(tmp_path, build, point):
    """The new action kinds are idempotent: killed halfway, the next --repair finishes them
    (the in_progress manifest), and restore still gives back the damaged bytes."""
    import os

    def make(root):
        if build == "magic":
            return R.flipped_magic(root, 7)
        return R.below_log_start(root, 150)

    ref = make(tmp_path / "ref" / "logs")
    verify(ref.root, "--repair")
    expected = snapshot(ref.partition_dir)
    case = make(tmp_path / "work" / "logs")
    damaged = snapshot(case.root)
    env = {**os.environ, "KSEG_TEST_CRASH_AT": point}
    assert run_kseg("verify", case.root, "--repair", env=env).returncode == 99
    code, evs = verify(case.root, "--repair")
    assert code == 1, evs
    assert snapshot(case.partition_dir) == expected
    assert verify(case.root)[0] == 0
    qroot = case.root.parent / "kseg-quarantine" / case.root.name
    (qdir,) = [
        m.parent
        for m in qroot.rglob("manifest.json")
        if json.loads(m.read_text())["status"] == "complete"
    ]
    assert run_kseg("restore", qdir).returncode == 0
    assert snapshot(case.root) == damaged


def test_clean_log_ending_below_its_start_is_reset_on_every_start(tmp_path):
    """No corruption at all (segments deleted by hand): Kafka's check runs on every start."""
    from kseg.format.checkpoint import TopicPartitionOffset, encode_offset_checkpoint
    from kseg.storage.writer import LogWriter

    root = tmp_path / "logs"
    with LogWriter(root / "gone-0", clock=R.FixedClock()) as w:
        w.append(R._records(0, 5, R.BASE_TS))
    (root / "log-start-offset-checkpoint").write_bytes(
        encode_offset_checkpoint([TopicPartitionOffset("gone", 0, 40)])
    )
    code, evs = verify(root)
    (f,) = findings(evs, "below_log_start")
    assert code == 4 and f["offset"] == 5 and "on start" in f["message"]
    assert [(a["action"], a["when"]) for a in outcome(evs)["actions"]] == [
        ("reset_log", "every_start")
    ]
    assert not findings(evs, "checkpoint_inconsistent")  # reported once, per partition
    actions, _ = repair_cycle(root, tmp_path)
    assert "00000000000000000040.log" in {Path(a["file"]).name for a in actions}


@pytest.mark.parametrize(
    "edit",
    [
        {"old_hex": "07" * 9, "new_hex": "02" * 9},  # more than 8 bytes
        {"old_hex": "zz"},  # not hex
        {"file_suffix": ".index"},  # not a .log
    ],
)
def test_hostile_patch_in_a_manifest_is_refused(tmp_path, edit):
    case = R.flipped_magic(tmp_path / "logs", 7)
    code, evs = verify(case.root, "--repair", "--quarantine", tmp_path / "q")
    assert code == 1
    (qdir,) = [Path(e["quarantine"]) for e in evs if e["type"] == "repair_done"]
    doc = json.loads((qdir / "manifest.json").read_text())
    (patch,) = [a for a in doc["actions"] if a["action"] == "patch"]
    if "file_suffix" in edit:
        patch["file"] = str(Path(patch["file"]).with_suffix(edit["file_suffix"]))
    else:
        patch.update(edit)
    (qdir / "manifest.json").write_text(json.dumps(doc))
    before = snapshot(case.root)
    r = run_kseg("restore", qdir)
    assert r.returncode == 8 and (
        b"a patch is 1 to 8 bytes" in r.stderr or b"not hex" in r.stderr
    ), r.stderr
    assert snapshot(case.root) == before
