"""kseg verify [--repair], restore, and kill-during-repair."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kseg.storage.tree import segment_logs
from tests.helpers import copy_partition, events, run_cli

FINDING_KEYS = {"type", "severity", "kind", "file", "position", "offset", "message"}


def snapshot_tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_clean_tree_and_schema(tree, monkeypatch, capsysbinary):
    code, out, err = run_cli(monkeypatch, capsysbinary, "verify", tree, "-f", "json")
    evs = events(out)
    assert code == 0, out
    assert not [e for e in evs if e["type"] == "finding" and e["severity"] != "info"]
    segs = [e for e in evs if e["type"] == "segment"]
    assert segs and all(
        set(e) == {"type", "file", "topic", "partition", "status", "size", "valid_bytes"}
        and e["status"] == "ok"
        for e in segs
    )
    assert all(set(e) >= FINDING_KEYS for e in evs if e["type"] == "finding")
    assert (
        evs[-1]["type"] == "summary"
        and evs[-1]["exit_code"] == 0
        and evs[-1]["segments"] == len(segs)
    )


def test_real_broker_data_verifies_clean(real_root, monkeypatch, capsysbinary):
    roots = [
        real_root / "seanorth__kafka-server/kafka-logs",
        real_root / "xpxwo100__bullShit/tmp/kafka-logs",
        real_root / "SharaWeil__kafka-0.11.0/data",
    ]
    code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", *roots, "--deep", "-f", "json")
    evs = events(out)
    assert code == 0, [e for e in evs if e["type"] == "finding" and e["severity"] != "info"]
    assert evs[-1]["partitions"] == 9


def test_usage_errors(monkeypatch, capsysbinary, tree):
    assert run_cli(monkeypatch, capsysbinary, "verify", tree, "--dry-run")[0] == 16
    assert run_cli(monkeypatch, capsysbinary, "verify", "/no/such/dir")[0] == 16


def _case_copy(case, tmp_path) -> Path:
    root = tmp_path / "logs"
    return copy_partition(case.partition_dir, root)


def _log_cases(corrupt_cases):
    return [c for c in corrupt_cases if c.file.suffix == ".log"]


def test_every_corrupt_fixture_found_repaired_and_quarantined(
    corrupt_cases, tmp_path, monkeypatch, capsysbinary
):
    for case in corrupt_cases:
        if case.name == "bad-payload":
            continue  # a valid CRC over a bad payload: only --deep sees it (tested below)
        work = tmp_path / case.name
        pdir = _case_copy(case, work)
        log = pdir / "00000000000000000000.log"
        original = log.read_bytes()
        code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", pdir, "-f", "json")
        evs = events(out)
        assert code == 4, case.name
        first = next(e for e in evs if e["type"] == "finding" and e["severity"] == "error")
        kind = "index_mismatch" if case.file.suffix == ".index" else case.kind
        assert first["kind"] == kind and first["position"] == case.position, (case.name, first)
        assert first["file"] == str(pdir / case.file.name)
        seg = next(e for e in evs if e["type"] == "segment")
        assert seg["valid_bytes"] == case.valid_bytes

        code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", pdir, "--repair", "-f", "json")
        evs = events(out)
        assert code == 1, (case.name, evs)
        assert log.read_bytes() == original[: case.valid_bytes]
        done = next(e for e in evs if e["type"] == "repair_done")
        qdir = Path(done["quarantine"])
        assert not str(qdir).startswith(str(work / "logs") + "/"), (
            "quarantine must not be inside the log dir"
        )
        manifest = json.loads((qdir / "manifest.json").read_text())
        assert manifest["status"] == "complete"
        removed = original[case.valid_bytes :]
        if removed:
            (trunc,) = [a for a in manifest["actions"] if a["action"] == "truncate"]
            assert (qdir / trunc["quarantine_file"]).read_bytes() == removed
            assert trunc["length"] == len(removed) and trunc["position"] == case.valid_bytes
        code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", pdir, "-f", "json")
        assert code == 0, (case.name, out)


def test_dry_run_changes_nothing(corrupt_cases, tmp_path, monkeypatch, capsysbinary):
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    pdir = _case_copy(case, tmp_path)
    before = snapshot_tree(tmp_path)
    code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", pdir, "--repair", "--dry-run")
    assert code == 4 and "[dry-run] truncate" in out
    assert snapshot_tree(tmp_path) == before


def test_deep_finds_what_recovery_does_not_and_repair_cannot(
    corrupt_cases, tmp_path, monkeypatch, capsysbinary
):
    case = next(c for c in corrupt_cases if c.name == "bad-payload")
    pdir = _case_copy(case, tmp_path)
    assert run_cli(monkeypatch, capsysbinary, "verify", pdir)[0] == 0  # the CRC is valid
    code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", pdir, "--deep", "-f", "json")
    f = next(e for e in events(out) if e["type"] == "finding")
    assert code == 4 and f["kind"] == "decompression_failed" and f["position"] == case.position
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "verify", pdir, "--deep", "--repair", "-f", "json"
    )
    assert code == 4 and not [e for e in events(out) if e["type"] == "repair_done"]


def _corrupt_middle_segment(tree, tmp_path) -> tuple[Path, Path, int]:
    pdir = copy_partition(tree / "txn-0", tmp_path / "logs")
    logs = segment_logs(pdir)
    middle = logs[1]
    data = bytearray(middle.read_bytes())
    # flip a bit in the third batch's payload
    pos = 0
    for _ in range(2):
        pos += struct.unpack_from(">i", data, pos + 8)[0] + 12
    data[pos + 70] ^= 0x01
    middle.write_bytes(bytes(data))
    return pdir, middle, pos


def test_multi_segment_repair_quarantines_later_segments(tree, tmp_path, monkeypatch, capsysbinary):
    pdir, middle, pos = _corrupt_middle_segment(tree, tmp_path)
    later = segment_logs(pdir)[2:]
    later_bytes = {p.name: p.read_bytes() for p in later}
    code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", pdir, "--repair", "-f", "json")
    evs = events(out)
    assert code == 1
    assert middle.stat().st_size == pos
    assert segment_logs(pdir) == segment_logs(pdir)[:2]
    qdir = Path(next(e for e in evs if e["type"] == "repair_done")["quarantine"])
    for name, data in later_bytes.items():
        assert (qdir / name).read_bytes() == data
    statuses = {Path(e["file"]).name: e["status"] for e in evs if e["type"] == "segment"}
    assert statuses[middle.name] == "repaired" and all(
        statuses[n] == "quarantined" for n in later_bytes
    )
    snaps_left = [int(p.name[:20]) for p in pdir.glob("*.snapshot")]
    last_offset_kept = max(int(p.name[:20]) for p in segment_logs(pdir))
    assert all(s <= middle.stat().st_size + last_offset_kept for s in snaps_left)
    assert run_cli(monkeypatch, capsysbinary, "verify", pdir)[0] == 0


def test_keep_later_segments(tree, tmp_path, monkeypatch, capsysbinary):
    pdir, middle, pos = _corrupt_middle_segment(tree, tmp_path)
    n = len(segment_logs(pdir))
    code, _, _ = run_cli(
        monkeypatch, capsysbinary, "verify", pdir, "--repair", "--keep-later-segments"
    )
    assert code == 1 and len(segment_logs(pdir)) == n and middle.stat().st_size == pos


def test_restore_puts_everything_back(tree, corrupt_cases, tmp_path, monkeypatch, capsysbinary):
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)
    before = snapshot_tree(pdir)
    code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", pdir, "--repair", "-f", "json")
    qdir = next(e for e in events(out) if e["type"] == "repair_done")["quarantine"]
    assert snapshot_tree(pdir) != before
    code, out, err = run_cli(monkeypatch, capsysbinary, "restore", qdir)
    assert code == 0, err
    assert snapshot_tree(pdir) == before
    assert json.loads((Path(qdir) / "manifest.json").read_text())["status"] == "restored"
    # restoring twice is harmless
    assert run_cli(monkeypatch, capsysbinary, "restore", qdir)[0] == 0
    assert snapshot_tree(pdir) == before


def test_restore_refuses_when_files_changed(corrupt_cases, tmp_path, monkeypatch, capsysbinary):
    case = next(c for c in corrupt_cases if c.name == "torn-tail")
    pdir = _case_copy(case, tmp_path)
    code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", pdir, "--repair", "-f", "json")
    qdir = next(e for e in events(out) if e["type"] == "repair_done")["quarantine"]
    with open(pdir / "00000000000000000000.log", "ab") as f:
        f.write(b"new data appended by a broker")
    before = snapshot_tree(pdir)
    code, _, err = run_cli(monkeypatch, capsysbinary, "restore", qdir)
    assert code == 8 and "the log changed since the repair" in err
    assert snapshot_tree(pdir) == before  # checked first: nothing touched
    assert json.loads((Path(qdir) / "manifest.json").read_text())["status"] == "complete"


def test_broker_lock_blocks_repair(corrupt_cases, tmp_path, monkeypatch, capsysbinary):
    case = next(c for c in corrupt_cases if c.name == "zero-tail")
    pdir = _case_copy(case, tmp_path)
    lock = pdir.parent / ".lock"
    lock.write_bytes(b"")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDWR); fcntl.lockf(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        before = snapshot_tree(pdir)
        code, out, err = run_cli(
            monkeypatch, capsysbinary, "verify", pdir, "--repair", "-f", "json"
        )
        # the contract: a held lock refuses the repair (8, one line on stderr naming the lock)
        # but every finding is still reported, read-only (4): 12; no plan, nothing changed
        assert code == 8 | 4
        assert err.count("\n") == 1 and f"{lock} is held" in err and "--force" in err
        kinds = [e["type"] for e in events(out)]
        assert "finding" in kinds and "segment" in kinds and kinds[-1] == "summary"
        assert not [k for k in kinds if k.startswith("repair")]
        assert snapshot_tree(pdir) == before
    finally:
        holder.kill()
        holder.wait()


def test_exit_code_is_a_bitmask(corrupt_cases, tmp_path, monkeypatch, capsysbinary):
    root = tmp_path / "logs"
    for name in ("zero-tail", "bad-payload"):
        copy_partition(next(c for c in corrupt_cases if c.name == name).partition_dir, root)
    code, _, _ = run_cli(monkeypatch, capsysbinary, "verify", root, "--deep", "--repair")
    assert code == 1 | 4


CRASH_POINTS = ["copied", "manifest", "truncated", "moved", "rebuilt"]


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_killed_repair_completes_on_rerun(tree, tmp_path, point):
    reference_root = tmp_path / "reference"
    ref_pdir, _, _ = _corrupt_middle_segment(tree, reference_root)
    subprocess.run(
        [sys.executable, "-m", "kseg", "verify", str(ref_pdir), "--repair"],
        check=False,
        capture_output=True,
    )
    expected = snapshot_tree(ref_pdir)

    work = tmp_path / "work"
    pdir, _, _ = _corrupt_middle_segment(tree, work)
    original = snapshot_tree(pdir)
    env = {**os.environ, "KSEG_TEST_CRASH_AT": point}
    proc = subprocess.run(
        [sys.executable, "-m", "kseg", "verify", str(pdir), "--repair"],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 99, proc.stderr
    if point == "copied":
        assert snapshot_tree(pdir) == original  # nothing touched before the manifest exists
    proc = subprocess.run(
        [sys.executable, "-m", "kseg", "verify", str(pdir), "--repair"],
        capture_output=True,
        timeout=120,
        text=True,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert snapshot_tree(pdir) == expected
    proc = subprocess.run(
        [sys.executable, "-m", "kseg", "verify", str(pdir)], capture_output=True, timeout=120
    )
    assert proc.returncode == 0
    # the quarantine still holds every removed byte: restoring gives back the damaged original
    qroot = work / "kseg-quarantine" / "logs"
    manifests = [json.loads(m.read_text()) for m in qroot.glob("*/*/manifest.json")]
    done = [m for m in manifests if m["status"] == "complete"]
    assert len(done) == 1
    qdir = next(
        m.parent
        for m in qroot.glob("*/*/manifest.json")
        if json.loads(m.read_text())["status"] == "complete"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "kseg", "restore", str(qdir)], capture_output=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert snapshot_tree(pdir) == original


def test_quarantine_option(corrupt_cases, tmp_path, monkeypatch, capsysbinary):
    case = next(c for c in corrupt_cases if c.name == "garbage-tail")
    pdir = _case_copy(case, tmp_path)
    q = tmp_path / "my-quarantine"
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "verify", pdir, "--repair", "--quarantine", q, "-f", "json"
    )
    assert code == 1
    assert list(q.glob("*/*/manifest.json"))


def test_repair_changes_only_what_verify_calls_a_problem(real_root, tmp_path):
    """A real broker's data dir whose active segments have no index files: verify says info
    (Kafka creates them at startup), so --repair, dry run or not, changes nothing and exits 0."""
    import shutil

    from tests.helpers import run_kseg

    root = tmp_path / "kafka-logs"
    shutil.copytree(real_root / "seanorth__kafka-server/kafka-logs", root)
    before = snapshot_tree(tmp_path)
    plain = run_kseg("verify", root)
    assert plain.returncode == 0 and b"INFO missing_index" in plain.stdout, plain.stdout
    dry = run_kseg("verify", "--repair", "--dry-run", root)
    assert dry.returncode == 0 and b"create" not in dry.stdout, dry.stdout
    done = run_kseg("verify", "--repair", root)
    assert done.returncode == 0 and b"; 0 repaired; exit 0" in done.stdout, done.stdout
    assert not any(line.startswith(b"repaired ") for line in done.stdout.splitlines())
    after = snapshot_tree(tmp_path)
    after.pop("kafka-logs/.lock", None)  # the lock a repair holds: Kafka's own lock file
    assert after == before


def test_repair_rebuilds_a_missing_index_of_an_inactive_segment(tree, tmp_path):
    from tests.helpers import run_kseg

    pdir = copy_partition(tree / "txn-0", tmp_path / "logs")
    logs = segment_logs(pdir)
    assert len(logs) > 1
    index = logs[0].with_suffix(".index")
    index.unlink()
    plain = run_kseg("verify", pdir)
    # Kafka recovers the segment to rebuild it, losing nothing: a warning, exit 0
    assert plain.returncode == 0 and b"WARNING missing_index" in plain.stdout, plain.stdout
    done = run_kseg("verify", "--repair", pdir)
    assert done.returncode == 1, done.stdout
    assert index.exists() and run_kseg("verify", pdir).returncode == 0


def test_root_checkpoint_findings_name_their_partition(tree, tmp_path, monkeypatch, capsysbinary):
    """Every finding object has the same keys: a root checkpoint entry past a partition's log
    end names that partition; a checkpoint file unreadable as a whole has null topic/partition."""
    import shutil

    root = tmp_path / "logs"
    shutil.copytree(tree, root)
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\norders 1 999999\n")
    (root / "replication-offset-checkpoint").write_text("garbage\n")
    code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", root, "-f", "json")
    found = {e["kind"]: e for e in events(out) if e["type"] == "finding"}
    past = found["checkpoint_inconsistent"]
    assert (past["topic"], past["partition"], past["offset"]) == ("orders", 1, 999999)
    whole = found["invalid_file"]
    assert whole["topic"] is None and whole["partition"] is None
    # the malformed checkpoint is an error: read through CheckpointFileWithFailureHandler, it
    # takes the log dir offline
    assert code == 4 and whole["severity"] == "error"
