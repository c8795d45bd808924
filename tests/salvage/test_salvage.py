"""kseg salvage on partitions written by LogWriter and then damaged (a flipped byte, a zeroed
4 KiB page, a lying length, a middle segment of several, a flipped magic byte, a lying
baseOffset): the salvaged partition verifies clean and holds exactly the intact records;
`kseg restore` gives back the input byte for byte; --dry-run and --to change nothing of the
input; a killed salvage resumes; the exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kseg.format import checkpoint as cp
from tests.helpers import events, run_kseg
from tests.salvage.cases import DAMAGES, TOPIC, damaged, hashes, write_partition

SALVAGE_KEYS = {
    "type", "partition_dir", "topic", "partition", "status", "kafka_keeps", "salvage_keeps",
    "lost", "below_log_start_bytes", "skipped", "edits", "kept_from", "overlaps", "ambiguous",
    "quarantine", "to",
}  # fmt: skip


def records(pdir: Path) -> list[tuple]:
    proc = run_kseg("dump", pdir, "-f", "json", "--payload", "base64")
    assert proc.returncode == 0, proc.stderr
    return [
        (e["offset"], e["key"], e["value"]) for e in events(proc.stdout) if e["type"] == "record"
    ]


def salvage(*args, env=None):
    proc = run_kseg("salvage", *args, "-f", "json", env=env)
    return proc.returncode, events(proc.stdout), proc


def the(evs: list[dict], kind: str = "salvage") -> dict:
    (ev,) = [e for e in evs if e["type"] == kind]
    return ev


@pytest.mark.parametrize("damage", DAMAGES)
def test_salvage_keeps_exactly_the_intact_records_and_restore_undoes_it(tmp_path, damage):
    case = damaged(tmp_path, damage)
    before = hashes(case.log_dir)
    expected = [r for r in records(case.original) if r[0] not in case.lost]
    keep = ("--keep-ambiguous",) if damage == "lying_length" else ()  # see the test below
    code, evs, proc = salvage(case.pdir, *keep)
    assert code == 1, proc.stderr
    ev = the(evs)
    assert ev["status"] == "salvaged"
    assert run_kseg("verify", case.pdir).returncode == 0
    assert records(case.pdir) == expected
    assert ev["salvage_keeps"]["records"] == len(expected)
    lost = ev["lost"]
    assert lost["records_at_most"] >= len(case.lost)
    if case.lost:  # the offsets lost are exactly the damaged batches' (no compaction here)
        assert {o for a, b in lost["offsets"] for o in range(a, b + 1)} == set(case.lost)
    else:
        assert lost == {"records_at_most": 0, "bytes": 0, "offsets": [], "to_log_end": False}
        assert ev["edits"]
    # a lying length: the batches after it are found inside the extent it claims: said, and
    # kept here only because of --keep-ambiguous
    assert ev["ambiguous"] == (damage == "lying_length")
    assert (b"ambiguous resync" in proc.stderr) == (damage == "lying_length")
    assert (b": kept;" in proc.stderr) == (damage == "lying_length")
    proc = run_kseg("restore", ev["quarantine"])
    assert proc.returncode == 0, proc.stderr
    assert hashes(case.log_dir) == before


def test_an_ambiguous_resync_is_reported_not_written(tmp_path):
    """A lying length: the batches after it lie inside the extent it claims (they may be its
    payload). By default they are left out, counted lost as an ambiguous range, exit 4 + 1."""
    case = damaged(tmp_path, "lying_length")
    before = hashes(case.log_dir)
    original = records(case.original)
    code, evs, proc = salvage(case.pdir)
    assert code == 5, proc.stderr
    assert b"left out (--keep-ambiguous keeps them)" in proc.stderr
    ev = the(evs)
    assert ev["status"] == "salvaged" and ev["ambiguous"]
    resync, out = [x for x in ev["skipped"] if x["ambiguous"]][:2]
    assert resync["kind"] == "crc_mismatch" and out["kind"] == "ambiguous_resync"
    assert out["start"] == resync["end"]
    kept = records(case.pdir)
    assert run_kseg("verify", case.pdir).returncode == 0
    gone = {o for a, b in ev["lost"]["offsets"] for o in range(a, (b or 10**9) + 1)}
    assert set(case.lost) <= gone
    assert out["first_offset"] in gone and out["last_offset"] in gone
    assert kept == [r for r in original if r[0] not in gone] and len(kept) < len(original)
    assert ev["salvage_keeps"]["records"] == len(kept)
    assert run_kseg("restore", ev["quarantine"]).returncode == 0
    assert hashes(case.log_dir) == before
    # --dry-run says the same cost and changes nothing
    code, evs, _ = salvage(case.pdir, "--dry-run")
    assert code == 4 and the(evs)["lost"] == ev["lost"]
    assert hashes(case.log_dir) == before
    # what Kafka keeps does not depend on what salvage keeps: with the recovery point past the
    # damage Kafka keeps (and serves) the entries salvage leaves out as ambiguous
    point = cp.TopicPartitionOffset(TOPIC, 0, len(original))
    (case.log_dir / "recovery-point-offset-checkpoint").write_bytes(
        cp.encode_offset_checkpoint([point])
    )
    left, kept_too = (
        the(salvage(case.pdir, "--dry-run", *x)[1]) for x in ((), ("--keep-ambiguous",))
    )
    assert kept_too["kafka_keeps"] == left["kafka_keeps"]
    assert left["kafka_keeps"]["records"] > left["salvage_keeps"]["records"]
    assert kept_too["salvage_keeps"]["records"] > left["salvage_keeps"]["records"]


def test_a_flipped_byte_costs_one_batch_where_kafka_loses_the_rest(tmp_path):
    case = damaged(tmp_path, "middle_segment")
    code, evs, _ = salvage(case.pdir, "--dry-run")
    ev = the(evs)
    total = len(records(case.original))
    assert code == 4 and ev["status"] == "damaged"
    assert ev["kafka_keeps"]["records"] < total // 2 < ev["salvage_keeps"]["records"]
    assert ev["salvage_keeps"]["records"] == total - len(case.lost) and len(case.lost) == 3
    (skip,) = ev["skipped"]
    assert (skip["first_offset"], skip["last_offset"]) == (min(case.lost), max(case.lost))
    assert not ev["ambiguous"] and not skip["ambiguous"]
    assert set(ev) == SALVAGE_KEYS
    assert set(skip) == {"file", "start", "end", "first_offset", "last_offset", "kind", "reason",
                         "ambiguous"}  # fmt: skip
    assert the(evs, "summary") == {
        "type": "summary",
        "partitions": 1,
        "salvaged": 0,
        "lost_records_at_most": 3,
        "lost_bytes": skip["end"] - skip["start"],
        "exit_code": 4,
    }


def test_dry_run_writes_nothing(tmp_path):
    case = damaged(tmp_path, "zero_page")
    before = hashes(tmp_path)
    code, evs, _ = salvage(case.pdir, "--dry-run")
    assert code == 4
    assert [e["action"] for e in evs if e["type"] == "repair_action"][0] == "rewrite"
    assert all(e["dry_run"] for e in evs if e["type"] == "repair_action")
    assert hashes(tmp_path) == before
    assert not (tmp_path / "kseg-quarantine").exists()


def test_to_writes_a_new_tree_and_leaves_the_input_untouched(tmp_path):
    case = damaged(tmp_path, "flip")
    before = hashes(tmp_path)
    spare = tmp_path / "spare"
    code, evs, proc = salvage(case.log_dir, "--to", spare)
    assert code == 1, proc.stderr
    assert hashes(tmp_path) == {**before, **{f"spare/{k}": v for k, v in hashes(spare).items()}}
    assert (spare / "recovery-point-offset-checkpoint").is_file()
    assert not (tmp_path / "kseg-quarantine").exists()
    out = spare / case.pdir.name
    assert the(evs)["to"] == str(out) and the(evs)["status"] == "written"
    assert run_kseg("verify", spare).returncode == 0
    assert records(out) == [r for r in records(case.original) if r[0] not in case.lost]
    code, _, proc = salvage(case.log_dir, "--to", spare)  # never over an existing dir
    assert code == 8 and b"exists" in proc.stderr


def test_to_inside_the_input_log_dir_is_a_usage_error(tmp_path):
    case = damaged(tmp_path, "flip")
    before = hashes(tmp_path)
    code, _, proc = salvage(case.pdir, "--to", case.log_dir / "out")
    assert code == 16, proc.stderr
    assert hashes(tmp_path) == before


def test_nothing_to_salvage_exits_0_and_changes_nothing(tmp_path):
    pdir = tmp_path / "logs" / "clean-0"
    write_partition(pdir)
    before = hashes(tmp_path)
    code, evs, _ = salvage(pdir)
    ev = the(evs)
    assert code == 0 and ev["status"] == "clean" and ev["quarantine"] is None
    assert ev["kafka_keeps"]["records"] == ev["salvage_keeps"]["records"] > 0
    assert hashes(tmp_path) == before
    assert the(evs, "summary")["exit_code"] == 0


def test_text_output_says_the_cost(tmp_path):
    case = damaged(tmp_path, "flip")
    proc = run_kseg("salvage", case.pdir, "--dry-run")
    assert proc.returncode == 4
    text = proc.stdout.decode()
    assert "damaged " in text and "salvage keeps" in text and "lost at most 3 records" in text
    assert "skipped " in text and "crc_mismatch" in text


@pytest.mark.parametrize("point", ["copied", "manifest", "rewritten"])
def test_a_killed_salvage_resumes(tmp_path, point):
    ref = damaged(tmp_path / "ref", "middle_segment")
    assert salvage(ref.pdir)[0] == 1
    expected = hashes(ref.pdir)
    case = damaged(tmp_path / "work", "middle_segment")
    before = hashes(case.log_dir)
    env = {**os.environ, "KSEG_TEST_CRASH_AT": point}
    assert run_kseg("salvage", case.pdir, env=env).returncode == 99
    code, evs, proc = salvage(case.pdir)
    assert code == 1, proc.stderr
    if point != "copied":  # killed after the manifest said changes began: resumed
        assert any(e["type"] == "repair_resumed" for e in evs)
    assert hashes(case.pdir) == expected
    assert run_kseg("verify", case.pdir).returncode == 0
    manifests = sorted((tmp_path / "work" / "kseg-quarantine").glob("*/*/*/manifest.json"))
    done = [m for m in manifests if json.loads(m.read_text())["status"] == "complete"]
    assert done
    for m in reversed(done):
        assert run_kseg("restore", m.parent).returncode == 0
    assert hashes(case.log_dir) == before


def test_a_selection_salvages_only_what_it_selects(tmp_path):
    case = damaged(tmp_path, "flip")
    write_partition(case.log_dir / "other-0")
    before = hashes(tmp_path)
    code, evs, _ = salvage(case.log_dir, "--topic", "oth.*")
    assert code == 0 and [e["topic"] for e in evs if e["type"] == "salvage"] == ["other"]
    assert hashes(tmp_path) == before
    code, evs, _ = salvage(case.log_dir, "--dry-run")
    statuses = {e["topic"]: e["status"] for e in evs if e["type"] == "salvage"}
    assert code == 4 and statuses == {"other": "clean", "salvage": "damaged"}
    code, evs, _ = salvage(case.log_dir, "--dry-run", "--to", tmp_path / "spare")
    assert code == 4 and not [e for e in evs if e["type"] == "repair_action"]
    assert not (tmp_path / "spare").exists() and hashes(tmp_path) == before


def test_a_held_lock_refuses_the_salvage_and_reports_its_cost(tmp_path):
    """A broker holds the log dir's lock: nothing changes, one line says so (8), and the
    partition's cost is reported as with --dry-run (4)."""
    from tests.repair.test_repair_safety import _Holder

    case = damaged(tmp_path, "flip")
    (case.log_dir / ".lock").write_bytes(b"")
    before = hashes(tmp_path)
    with _Holder(case.log_dir / ".lock", "fcntl"):
        code, evs, proc = salvage(case.pdir)
    assert code == 8 | 4, proc.stderr
    assert f"{case.log_dir / '.lock'} is held" in proc.stderr.decode()
    assert the(evs)["status"] == "damaged" and the(evs)["lost"]["records_at_most"] == 3
    assert hashes(tmp_path) == before
