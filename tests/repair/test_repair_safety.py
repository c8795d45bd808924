"""Repair and restore under careless operators, hostile manifests, held locks, concurrent runs,
full disks and unwritable files. Every CLI behaviour runs the real entry point as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kseg.cli.exit import exit_status
from kseg.format.record import Record
from kseg.storage.tree import segment_logs
from kseg.storage.writer import LogWriter
from tests.helpers import copy_partition, events, kseg_command, run_kseg
from tests.verify.test_verify import _corrupt_middle_segment, snapshot_tree


def _stderr_lines(proc) -> list[str]:
    return proc.stderr.decode().splitlines()


def _manifests(qroot: Path) -> list[Path]:
    return sorted(qroot.glob("*/*/manifest.json"))


def _repair(pdir, *extra, cwd=None, env=None):
    return run_kseg("verify", pdir, "--repair", "-f", "json", *extra, cwd=cwd, env=env)


def _stalled_at(proc, stall_file: Path, timeout: float = 120) -> str:
    """The fault point a KSEG_TEST_STALL_AT run stopped at: kseg.repair.faults writes its name
    to the file KSEG_TEST_STALL_FILE names ('' if the run ended first or never got there)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ended = proc.poll() is not None
        if stall_file.exists():
            return stall_file.read_text()
        if ended:
            return ""
        time.sleep(0.02)
    return ""


def _quarantine_of(proc) -> Path:
    return Path(
        next(e for e in events(proc.stdout.decode()) if e["type"] == "repair_done")["quarantine"]
    )


@pytest.fixture(scope="module")
def reference(tree, tmp_path_factory) -> dict[str, bytes]:
    """What a clean repair of the corrupt-middle-segment partition leaves."""
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path_factory.mktemp("reference"))
    assert _repair(pdir).returncode == 1
    return snapshot_tree(pdir)


# --- A: manifests hold absolute paths; restore from anywhere; restore a whole run -------------


def test_restore_works_from_another_directory_after_a_relative_repair(tree, tmp_path):
    work = tmp_path / "work"
    pdir, _, _ = _corrupt_middle_segment(tree, work)
    original = snapshot_tree(pdir)
    proc = _repair(Path("logs") / pdir.name, cwd=work)
    assert proc.returncode == 1, proc.stderr
    qdir = _quarantine_of(proc)
    manifest = json.loads((work / qdir / "manifest.json").read_text())
    assert manifest["partition_dir"] == str(pdir.resolve())
    assert manifest["log_dir"] == str(pdir.parent.resolve())
    assert all(Path(a["file"]).is_absolute() for a in manifest["actions"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_kseg("restore", (work / qdir).resolve(), cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert snapshot_tree(pdir) == original


def test_restore_of_a_run_dir_restores_every_partition_of_that_run(corrupt_cases, tmp_path):
    root = tmp_path / "logs"
    for name in ("zero-tail", "crc-flip", "torn-tail"):
        copy_partition(next(c for c in corrupt_cases if c.name == name).partition_dir, root)
    original = snapshot_tree(root)
    proc = _repair(root)
    assert proc.returncode == 1, proc.stderr
    qroot = tmp_path / "kseg-quarantine" / "logs"
    (run,) = qroot.iterdir()
    assert len(_manifests(qroot)) == 3
    proc = run_kseg("restore", run)
    assert proc.returncode == 0, proc.stderr
    assert [e["type"] for e in events(run_kseg("restore", run, "-f", "json").stdout.decode())] == [
        "summary"
    ]  # a second restore has nothing left to do
    assert {k: v for k, v in snapshot_tree(root).items() if k != ".lock"} == original
    # a quarantine root holding several runs is refused: which run first matters
    assert _repair(root).returncode == 1
    proc = run_kseg("restore", qroot)
    assert proc.returncode == 16
    assert "2 repair runs" in proc.stderr.decode() and "one run at a time" in proc.stderr.decode()


def test_old_manifest_with_relative_paths_gives_a_clear_message(corrupt_cases, tmp_path):
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "zero-tail").partition_dir, tmp_path / "logs"
    )
    original = snapshot_tree(pdir)
    proc = _repair(pdir)
    qdir = _quarantine_of(proc)
    doc = json.loads((qdir / "manifest.json").read_text())
    rel = lambda p: os.path.relpath(p, tmp_path)  # noqa: E731 - as a version-1 kseg wrote them
    doc.update(version=1, log_dir=rel(doc["log_dir"]), partition_dir=rel(doc["partition_dir"]))
    for a in doc["actions"]:
        a["file"] = rel(a["file"])
    doc["rebuild_logs"] = [rel(p) for p in doc["rebuild_logs"]]
    (qdir / "manifest.json").write_text(json.dumps(doc))
    proc = run_kseg("restore", qdir, cwd=tmp_path)
    assert proc.returncode == 8
    (line,) = _stderr_lines(proc)
    assert "relative path" in line and "--base-dir" in line
    proc = run_kseg("restore", qdir, "--base-dir", tmp_path, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert snapshot_tree(pdir) == original


# --- B/H: failures are one line on stderr; locks of every kind; unreadable files -------------

HOLDERS = {
    "fcntl": "fcntl.lockf(fd, fcntl.LOCK_EX)",  # what Kafka's JVM takes (FileChannel.tryLock)
    "flock": "fcntl.flock(fd, fcntl.LOCK_EX)",
    "ofd": "fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack('hhqqi4x', fcntl.F_WRLCK, 0, 0, 0, 0))",
}


class _Holder:
    def __init__(self, lock: Path, how: str) -> None:
        code = (
            "import fcntl,os,struct,sys,time; fd=os.open(sys.argv[1], os.O_RDWR|os.O_CREAT); "
            f"{HOLDERS[how]}; print('held', flush=True); time.sleep(120)"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE
        )
        assert self.proc.stdout.readline().strip() == b"held"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def _found(proc) -> list[dict]:
    """The findings and segments of a run's JSON (what plain `verify` reports)."""
    return [e for e in events(proc.stdout.decode()) if e["type"] in ("finding", "segment")]


@pytest.mark.parametrize("how", sorted(HOLDERS))
def test_held_lock_of_any_kind_is_one_line_and_exit_12(corrupt_cases, tmp_path, how):
    """A held lock refuses the repair (8, one line per log dir) but not the verification: every
    finding is reported read-only, exactly as plain `verify` reports it (4): 12."""
    if how == "ofd" and not hasattr(__import__("fcntl"), "F_OFD_SETLK"):
        pytest.skip("no OFD locks on this platform")
    root = tmp_path / "logs"
    for name in ("zero-tail", "crc-flip", "torn-tail", "garbage-tail"):
        copy_partition(next(c for c in corrupt_cases if c.name == name).partition_dir, root)
    lock = root / ".lock"
    lock.write_bytes(b"")  # as a broker leaves it
    before = snapshot_tree(root)
    plain = run_kseg("verify", root, "-f", "json")
    assert plain.returncode == 4
    dry = run_kseg("verify", root, "--repair", "--dry-run", "-f", "json")
    with _Holder(lock, how):
        proc = _repair(root)
        assert proc.returncode == 8 | 4, proc.stderr
        (line,) = _stderr_lines(proc)
        assert f"{lock} is held" in line and "--force" in line and "read-only" in line
        assert _found(proc) == _found(plain) and _found(proc)  # every finding, nothing planned
        assert not [e for e in events(proc.stdout.decode()) if e["type"].startswith("repair")]
        # index rebuild refuses the same way
        proc = run_kseg("index", "rebuild", root)
        assert proc.returncode == 8 and len(_stderr_lines(proc)) == 1
        # the dry run writes nothing and takes no lock: exactly as without the holder
        held_dry = run_kseg("verify", root, "--repair", "--dry-run", "-f", "json")
        assert (held_dry.returncode, held_dry.stdout, held_dry.stderr) == (
            4, dry.stdout, dry.stderr)  # fmt: skip
    assert snapshot_tree(root) == before
    assert not (tmp_path / "kseg-quarantine").exists()


def test_of_several_roots_the_locked_one_is_verified_the_other_repaired(corrupt_cases, tmp_path):
    """Two log dirs, a broker holding one: that one is verified read-only (its findings, one
    refusal line, 8 | 4), the other repaired (1): 13. Nothing in the locked one changes."""
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    held, free = tmp_path / "kafka-logs-1", tmp_path / "kafka-logs-2"
    for root in (held, free):
        copy_partition(case.partition_dir, root)
    (held / ".lock").write_bytes(b"")
    before = snapshot_tree(held)
    with _Holder(held / ".lock", "fcntl"):
        proc = run_kseg("verify", held, free, "--repair", "-f", "json")
    assert proc.returncode == 1 | 4 | 8, proc.stderr
    (line,) = _stderr_lines(proc)
    assert f"{held / '.lock'} is held" in line
    evs = events(proc.stdout.decode())
    by_root = {}
    for e in evs:
        if "log_dir" in e:
            by_root.setdefault(e["log_dir"], []).append(e)
    assert [e for e in by_root[str(held)] if e["type"] == "finding" and e["severity"] == "error"]
    assert not [e for e in by_root[str(held)] if e["type"].startswith("repair")]
    assert [e["type"] for e in by_root[str(free)] if e["type"] == "repair_done"] == ["repair_done"]
    assert snapshot_tree(held) == before
    assert run_kseg("verify", free).returncode == 0
    # without the holder the same run repairs the first too
    assert run_kseg("verify", held, free, "--repair").returncode == 1


def test_a_running_broker_s_log_dir_is_verified_not_repaired(kafka_broker, corrupt_cases):
    """The real Kafka 4.1.0 broker holds its log dir's `.lock`: `verify --repair` there reports
    a damaged partition's findings (a copy put beside the broker's own after it started, which
    a running broker never loads) and refuses the repair: 12, nothing changed."""
    import shutil

    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    data = kafka_broker.data
    pdir = data / "kseg-locked-probe-0"
    shutil.copytree(case.partition_dir, pdir)
    try:
        before = snapshot_tree(pdir)
        proc = run_kseg("verify", data, "--repair", "-f", "json", "--partition", "0")
        assert proc.returncode == 8 | 4, proc.stderr
        (line,) = _stderr_lines(proc)
        assert f"{data / '.lock'} is held" in line
        errors = [e for e in events(proc.stdout.decode())
                  if e["type"] == "finding" and e["severity"] == "error"]  # fmt: skip
        assert errors and {e["topic"] for e in errors} == {"kseg-locked-probe"}
        assert snapshot_tree(pdir) == before
    finally:
        shutil.rmtree(pdir)


def test_restore_refuses_while_the_lock_is_held(corrupt_cases, tmp_path):
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "zero-tail").partition_dir, tmp_path / "logs"
    )
    qdir = _quarantine_of(_repair(pdir))
    after = snapshot_tree(pdir)
    with _Holder(pdir.parent / ".lock", "fcntl"):
        proc = run_kseg("restore", qdir)
    assert proc.returncode == 8 and len(_stderr_lines(proc)) == 1
    assert "is held" in proc.stderr.decode() and proc.stdout == b""
    assert snapshot_tree(pdir) == after


def _chattr(path: Path, flag: str) -> bool:
    if not shutil.which("chattr"):
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


def test_immutable_segment_fails_on_stderr_and_resumes_once_writable(tree, tmp_path):
    pdir, middle, pos = _corrupt_middle_segment(tree, tmp_path)
    later = segment_logs(pdir)[2]
    if not _chattr(later, "+i"):
        pytest.skip("chattr +i is not available here (needs root and a filesystem with the flag)")
    try:
        proc = _repair(pdir)
        assert proc.returncode & 8, proc.stderr
        (line,) = _stderr_lines(proc)
        assert str(later) in line and "Operation not permitted" in line and "lsattr" in line
        assert "kseg verify --repair" in line and "kseg restore" in line
        assert b"FAILED" not in proc.stdout
        assert all(e["type"] != "failure" for e in events(proc.stdout.decode()))
        # the quarantine holds a manifest that says what happened
        (m,) = _manifests(tmp_path / "kseg-quarantine" / "logs")
        doc = json.loads(m.read_text())
        assert doc["status"] == "failed" and "Operation not permitted" in doc["error"]
    finally:
        _chattr(later, "-i")
    proc = _repair(pdir)
    assert proc.returncode == 1, proc.stderr
    assert run_kseg("verify", pdir).returncode == 0
    assert middle.stat().st_size == pos


def _as_nobody() -> list[str] | None:
    """A prefix that runs a command as an unprivileged user (root ignores file permissions)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return None
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


def _world_readable_dir(tmp_path: Path) -> Path:
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="kseg-perm-", dir="/tmp"))
    d.chmod(0o755)
    return d


def _run_unprivileged(prefix, *args):
    proc = subprocess.run(
        [*prefix, *kseg_command(), *map(str, args)], capture_output=True, timeout=120
    )
    if b"Permission denied" in proc.stderr and b"kseg" not in proc.stderr[:5]:
        pytest.skip(f"kseg cannot run as an unprivileged user here: {proc.stderr[:200]!r}")
    return proc


def test_unreadable_index_and_partition_dir_are_operational_errors(tree, tmp_path):
    prefix = _as_nobody()
    if prefix is None:
        pytest.skip("running as root without setpriv: permissions cannot be tested")
    d = _world_readable_dir(tmp_path)
    try:
        root = d / "logs"
        for name in ("orders-0", "compacted-0", "txn-0"):
            copy_partition(tree / name, root)
        for p in [root, *root.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        index = segment_logs(root / "orders-0")[0].with_suffix(".index")
        index.chmod(0)
        (root / "compacted-0").chmod(0)
        proc = _run_unprivileged(prefix, "verify", root, "-f", "json")
        if proc.returncode == 0:
            pytest.skip("the unprivileged user can still read the files (no permission checks)")
        assert proc.returncode == 8, proc.stderr  # unreadable is operational, not invalid data
        evs = events(proc.stdout.decode())
        unreadable = [e for e in evs if e["type"] == "finding" and e["kind"] == "unreadable"]
        assert {e["file"] for e in unreadable} == {str(index), str(root / "compacted-0")}
        # the rest of the root was still checked
        assert any(e["type"] == "segment" and "/txn-0/" in e["file"] for e in evs)
        proc = _run_unprivileged(prefix, "index", "check", root / "orders-0")
        assert proc.returncode == 8
        assert f"{index}: Permission denied" in proc.stderr.decode()
    finally:
        shutil.rmtree(d, ignore_errors=True)


# --- C: resume keys on the partition's real identity --------------------------------------------


@pytest.mark.parametrize("spelling", ["absolute", "symlink", "root"])
@pytest.mark.parametrize("point", ["moved:0", "truncated", "manifest"])
def test_killed_repair_resumes_whatever_the_path_spelling(
    tree, tmp_path, spelling, point, reference
):
    expected = reference
    work = tmp_path / "work"
    pdir, _, _ = _corrupt_middle_segment(tree, work)
    original = snapshot_tree(pdir)
    env = {**os.environ, "KSEG_TEST_CRASH_AT": point}
    proc = run_kseg("verify", Path("logs") / pdir.name, "--repair", cwd=work, env=env)
    assert proc.returncode == 99, proc.stderr
    if spelling == "absolute":
        again = pdir.resolve()
    elif spelling == "symlink":
        (tmp_path / "link").symlink_to(work / "logs")
        again = tmp_path / "link" / pdir.name
    else:
        again = work / "logs"
    proc = run_kseg("verify", again, "--repair", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert b"resumed an interrupted repair" in proc.stdout
    assert snapshot_tree(pdir) == expected
    assert run_kseg("verify", pdir).returncode == 0
    qroot = work / "kseg-quarantine" / "logs"
    (m,) = _manifests(qroot)  # one repair, resumed: not a second one on top
    assert json.loads(m.read_text())["status"] == "complete"
    assert run_kseg("restore", m.parent, cwd="/").returncode == 0
    assert snapshot_tree(pdir) == original


def test_killed_repair_is_found_from_the_partition_without_its_quarantine_option(
    tree, tmp_path, reference
):
    expected = reference
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path / "work")
    q = tmp_path / "elsewhere"
    env = {**os.environ, "KSEG_TEST_CRASH_AT": "moved:0"}
    assert run_kseg("verify", pdir, "--repair", "--quarantine", q, env=env).returncode == 99
    marker = pdir.parent / f".kseg-repair-{pdir.name}"
    assert marker.is_file()
    proc = run_kseg("verify", pdir, "--repair")  # the operator forgot --quarantine
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert snapshot_tree(pdir) == expected
    assert not marker.exists()  # gone once the repair completed
    assert not (tmp_path / "work" / "kseg-quarantine").exists()  # no second repair elsewhere
    (m,) = _manifests(q)
    assert json.loads(m.read_text())["status"] == "complete"


# --- D/E: restore checks first, then acts; a hostile manifest touches nothing ----------------


def test_restore_refuses_when_the_broker_rolled_a_new_segment(corrupt_cases, tmp_path):
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "torn-tail").partition_dir, tmp_path / "logs"
    )
    qdir = _quarantine_of(_repair(pdir))
    last = segment_logs(pdir)[-1]
    shutil.copy(last, pdir / "00000000000000099999.log")  # as if a broker rolled a segment
    before = snapshot_tree(pdir)
    proc = run_kseg("restore", qdir)
    assert proc.returncode == 8
    (line,) = _stderr_lines(proc)
    assert (
        "00000000000000099999.log" in line and "moved on" in line and "nothing was changed" in line
    )
    assert snapshot_tree(pdir) == before
    assert json.loads((qdir / "manifest.json").read_text())["status"] == "complete"


def test_restore_refuses_when_a_segment_was_deleted_since(tree, tmp_path):
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)
    qdir = _quarantine_of(_repair(pdir))
    first = segment_logs(pdir)[0]
    first.unlink()  # as retention would
    before = snapshot_tree(pdir)
    proc = run_kseg("restore", qdir)
    assert proc.returncode == 8 and f"{first}: gone since the repair" in proc.stderr.decode()
    assert snapshot_tree(pdir) == before


def test_interrupted_restore_resumes(tree, tmp_path):
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)
    original = snapshot_tree(pdir)
    qdir = _quarantine_of(_repair(pdir))
    env = {**os.environ, "KSEG_TEST_CRASH_AT": "restoring"}
    assert run_kseg("restore", qdir, env=env).returncode == 99
    doc = json.loads((qdir / "manifest.json").read_text())
    assert doc["status"] == "restoring"  # never `complete` once half-restored
    assert [a["restored"] for a in doc["actions"]].count(True) == 1  # progress: one action undone
    # a repair now would quarantine the half-restored state on top: refused until restore finishes
    half = snapshot_tree(pdir)
    proc = run_kseg("verify", pdir, "--repair")
    assert proc.returncode == 8 and f"kseg restore {qdir}" in proc.stderr.decode()
    assert snapshot_tree(pdir) == half
    proc = run_kseg("restore", qdir)
    assert proc.returncode == 0, proc.stderr
    assert snapshot_tree(pdir) == original
    assert json.loads((qdir / "manifest.json").read_text())["status"] == "restored"


def _victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim-0"
    v.mkdir()
    (v / "00000000000000000000.log").write_bytes(b"precious data " * 100)
    (v / "notes.txt").write_bytes(b"precious notes")
    return v


def _tamper(qdir: Path, change) -> None:
    doc = json.loads((qdir / "manifest.json").read_text())
    change(doc)
    (qdir / "manifest.json").write_text(json.dumps(doc))


HOSTILE = {
    "dotdot": lambda doc, pdir, v: doc["actions"][0].update(
        file=f"{pdir}/../../{v.name}/00000000000000000000.log"
    ),
    "elsewhere": lambda doc, pdir, v: doc["actions"][0].update(
        file=str(v / "00000000000000000000.log")
    ),
    "not-kafka-name": lambda doc, pdir, v: doc["actions"][0].update(file=str(pdir / "notes.txt")),
    "other-partition": lambda doc, pdir, v: doc.update(
        partition_dir=str(v),
        log_dir=str(v.parent),
        actions=[{**a, "file": str(v / Path(a["file"]).name)} for a in doc["actions"]],
        rebuild_logs=[],
    ),
    "quarantine-dotdot": lambda doc, pdir, v: doc["actions"][0].update(
        quarantine_file="../../../victim-0/notes.txt"
    ),
    "unknown-action": lambda doc, pdir, v: doc["actions"][0].update(action="delete"),
    "wrong-types": lambda doc, pdir, v: doc.update(after_logs=["x"], actions=[{"action": 1}]),
    "not-json": lambda doc, pdir, v: doc.clear(),
}


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_hostile_manifest_touches_nothing(corrupt_cases, tmp_path, attack):
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "torn-tail").partition_dir, tmp_path / "logs"
    )
    qdir = _quarantine_of(_repair(pdir))
    victim = _victim(tmp_path)
    _tamper(qdir, lambda doc: HOSTILE[attack](doc, pdir.resolve(), victim))
    (tmp_path / ".lock").write_bytes(b"")  # restore locks the log dir it names, as a broker would
    before = snapshot_tree(tmp_path)
    proc = run_kseg("restore", qdir)
    assert proc.returncode == 8, (attack, proc.stderr)
    assert len(_stderr_lines(proc)) == 1 and b"Traceback" not in proc.stderr
    assert snapshot_tree(tmp_path) == before


def test_restore_refuses_quarantined_bytes_that_do_not_match(corrupt_cases, tmp_path):
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "torn-tail").partition_dir, tmp_path / "logs"
    )
    qdir = _quarantine_of(_repair(pdir))
    doc = json.loads((qdir / "manifest.json").read_text())
    tail = qdir / next(a for a in doc["actions"] if a["action"] == "truncate")["quarantine_file"]
    tail.write_bytes(b"X" * tail.stat().st_size)  # same size, other bytes
    before = snapshot_tree(pdir)
    proc = run_kseg("restore", qdir)
    assert proc.returncode == 8 and "sha256" in proc.stderr.decode()
    assert snapshot_tree(pdir) == before


def test_restore_follows_no_symlink(corrupt_cases, tmp_path):
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "torn-tail").partition_dir, tmp_path / "logs"
    )
    qdir = _quarantine_of(_repair(pdir))
    victim = _victim(tmp_path)
    doc = json.loads((qdir / "manifest.json").read_text())
    trunc = next(a for a in doc["actions"] if a["action"] == "truncate")
    # the quarantined tail replaced by a symlink to someone else's file
    (qdir / trunc["quarantine_file"]).unlink()
    (qdir / trunc["quarantine_file"]).symlink_to(victim / "notes.txt")
    before = snapshot_tree(tmp_path)
    proc = run_kseg("restore", qdir)
    assert proc.returncode == 8 and "symlink" in proc.stderr.decode()
    assert snapshot_tree(tmp_path) == before
    # a partition file replaced by a symlink out of the partition
    (qdir / trunc["quarantine_file"]).unlink()
    log = Path(trunc["file"])
    saved = log.read_bytes()
    log.unlink()
    log.symlink_to(victim / "00000000000000000000.log")
    proc = run_kseg("restore", qdir)
    assert proc.returncode == 8 and "symlink" in proc.stderr.decode()
    assert (victim / "00000000000000000000.log").read_bytes() == b"precious data " * 100
    log.unlink()
    log.write_bytes(saved)


# --- F: concurrent repairs -------------------------------------------------------------------


def test_a_second_repair_refuses_while_the_first_runs(tree, tmp_path, reference):
    expected = reference
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path / "work")
    stall = tmp_path / "stalled"
    env = {**os.environ, "KSEG_TEST_STALL_AT": "copied", "KSEG_TEST_STALL_FILE": str(stall)}
    first = subprocess.Popen(
        [*kseg_command(), "verify", str(pdir), "--repair"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert _stalled_at(first, stall) == "copied\n"
        # a broker starting now fails to take its lock (the JVM's POSIX lock), as would flock
        for how in ("lockf", "flock"):
            probe = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    f"import fcntl,os,sys; fd=os.open(sys.argv[1], os.O_RDWR); "
                    f"fcntl.{how}(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)",
                    str(pdir.parent / ".lock"),
                ],
                capture_output=True,
            )
            assert probe.returncode != 0 and b"BlockingIOError" in probe.stderr, how
        second = run_kseg("verify", pdir, "--repair")
        assert second.returncode == 8 | 4, second.stderr  # refused; the damage still reported
        (line,) = _stderr_lines(second)
        assert ".lock is held" in line
        first.stdin.close()
        assert first.wait(timeout=120) == 1
    finally:
        first.kill()
        first.wait()
    assert snapshot_tree(pdir) == expected
    assert run_kseg("verify", pdir).returncode == 0


def test_tightly_timed_concurrent_repairs_leave_a_clean_partition(tree, tmp_path, reference):
    expected = reference
    for n in range(4):
        pdir, _, _ = _corrupt_middle_segment(tree, tmp_path / f"pair-{n}")
        procs = [
            subprocess.Popen(
                [*kseg_command(), "verify", str(pdir), "--repair"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        codes = sorted(p.wait(timeout=120) for p in procs)
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        # one repairs; the other finds it clean, or refuses (8) and reports what it read (| 4)
        assert codes in ([0, 1], [1, 8], [1, 12]), codes
        assert snapshot_tree(pdir) == expected
        assert run_kseg("verify", pdir).returncode == 0


def test_temp_names_are_unique_per_call(tmp_path):
    from kseg.storage.atomic import temp_name

    names = {temp_name(tmp_path / "00000000000000000000.index") for _ in range(100)}
    assert len(names) == 100 and all(str(os.getpid()) in n.name for n in names)


# --- G/I: free space, a disk that fills up, no manifest-less quarantine ----------------------


def _big_partition(root: Path, *, segments: int = 6, segment_bytes: int = 512 << 10) -> Path:
    """A partition of ``segments`` ~512 KiB segments of incompressible values; the first
    segment is damaged near its start, so a repair quarantines almost everything."""
    pdir = root / "big-0"
    rng = __import__("random").Random(7)
    with LogWriter(pdir, segment_bytes=segment_bytes, clock=lambda: 1_700_000_000_000) as w:
        while len(w.segments) < segments:
            recs = [
                Record(key=b"k", value=rng.randbytes(8000), timestamp=1_700_000_000_000)
                for _ in range(8)
            ]
            w.append(recs)
    first = segment_logs(pdir)[0]
    data = bytearray(first.read_bytes())
    data[100] ^= 0xFF  # inside the first batch's records: its CRC fails
    first.write_bytes(bytes(data))
    return pdir


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True
        ).returncode
    ):
        pytest.skip("cannot mount a small tmpfs here (needs root and mount)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_not_enough_space_in_the_quarantine_is_refused_before_any_change(tmp_path, small_tmpfs):
    pdir = _big_partition(tmp_path / "logs")
    before = snapshot_tree(pdir)
    proc = _repair(pdir, "--quarantine", small_tmpfs / "q")
    assert proc.returncode & 8
    lines = _stderr_lines(proc)
    assert len(lines) == 1 and "not enough free space" in lines[0]
    assert "nothing was changed" in lines[0] and "--quarantine" in lines[0]
    assert snapshot_tree(pdir) == before
    assert not (small_tmpfs / "q").exists() or not any((small_tmpfs / "q").rglob("*"))


def test_disk_full_mid_repair_never_blocks_a_rerun(tmp_path, small_tmpfs, monkeypatch):
    """The space check passes, then the disk fills anyway (another writer): the partial copy is a
    temp file that goes away, the manifest says `failed`, and a re-run after space is freed
    finishes the repair."""
    from kseg.repair import apply
    from kseg.repair.run import RepairRun
    from kseg.verify.run import VerifyOptions

    ref = _big_partition(tmp_path / "reference" / "logs")
    assert _repair(ref).returncode == 1
    expected = snapshot_tree(ref)

    pdir = _big_partition(tmp_path / "logs")
    original = snapshot_tree(pdir)
    q = small_tmpfs / "q"
    monkeypatch.setattr(apply, "check_space", lambda needs: None)  # as if space vanished later
    run = RepairRun(VerifyOptions(repair=True, quarantine=q))
    evs = list(run.events([pdir]))
    assert exit_status(run.outcome) & 8
    (failure,) = [e for e in evs if e["type"] == "failure"]
    assert "No space left on device" in failure["message"]
    for qdir in [m.parent for m in _manifests(q)]:
        assert not [p for p in qdir.iterdir() if ".kseg-tmp-" in p.name]  # no partial copy left
    # every quarantine dir has a manifest (I): none was left behind bare
    assert all((d / "manifest.json").is_file() for d in q.glob("*/*") if d.is_dir())
    monkeypatch.undo()
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_tmpfs)], check=True)
    proc = _repair(pdir, "--quarantine", q)
    assert proc.returncode == 1, proc.stderr
    assert snapshot_tree(pdir) == expected
    (m,) = [m for m in _manifests(q) if json.loads(m.read_text())["status"] == "complete"]
    assert run_kseg("restore", m.parent).returncode == 0
    assert snapshot_tree(pdir) == original


def test_failure_before_any_change_leaves_no_quarantine_dir(tree, tmp_path, monkeypatch, reference):
    """(I) A copy that fails before the first change: the partition is untouched and the
    quarantine dir, which holds nothing needed, is removed."""
    from kseg.repair import actions
    from kseg.repair.run import RepairRun
    from kseg.verify.run import VerifyOptions

    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)
    before = snapshot_tree(pdir)

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device", str(args[1]))

    monkeypatch.setattr(actions, "atomic_copy", no_space)
    run = RepairRun(VerifyOptions(repair=True))
    evs = list(run.events([pdir]))
    (failure,) = [e for e in evs if e["type"] == "failure"]
    assert "before changing anything" in failure["message"]
    assert exit_status(run.outcome) & 8
    assert snapshot_tree(pdir) == before
    qroot = tmp_path / "kseg-quarantine" / "logs"
    assert not qroot.exists() or not any(qroot.iterdir())


def test_restore_checks_free_space_before_changing_anything(tmp_path, small_tmpfs):
    """The partition on a small filesystem, its quarantine elsewhere: restore must write the moved
    segments back across filesystems; without room for them it refuses and changes nothing."""
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_tmpfs)], check=True)
    pdir = _big_partition(small_tmpfs / "logs")
    original = snapshot_tree(pdir)
    q = tmp_path / "q"
    proc = _repair(pdir, "--quarantine", q)
    assert proc.returncode == 1, proc.stderr
    repaired = snapshot_tree(pdir)
    filler = small_tmpfs / "filler"
    free = os.statvfs(small_tmpfs).f_bavail * os.statvfs(small_tmpfs).f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * (free - (256 << 10)))
    (run,) = q.iterdir()
    proc = run_kseg("restore", run)
    assert proc.returncode == 8
    (line,) = _stderr_lines(proc)
    assert "not enough free space" in line and str(small_tmpfs) in line
    assert snapshot_tree(pdir) == repaired
    assert json.loads(next(run.glob("*/manifest.json")).read_text())["status"] == "complete"
    filler.unlink()
    proc = run_kseg("restore", run)
    assert proc.returncode == 0, proc.stderr
    assert snapshot_tree(pdir) == original


@pytest.mark.parametrize("point", ["copied", "moved:0"])
def test_interrupted_repair_leaves_a_manifest_or_nothing(tree, tmp_path, point, reference):
    """SIGTERM before the first change: no quarantine dir, partition untouched. After it: the
    manifest says `failed` (interrupted), and a re-run finishes the repair."""
    import signal

    expected = reference
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path / "work")
    original = snapshot_tree(pdir)
    stall = tmp_path / "stalled"
    proc = subprocess.Popen(
        [*kseg_command(), "verify", str(pdir), "--repair"],
        env={**os.environ, "KSEG_TEST_STALL_AT": point, "KSEG_TEST_STALL_FILE": str(stall)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert _stalled_at(proc, stall) == f"{point}\n"
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode not in (0, 1, -signal.SIGTERM)  # handled, not killed; exit 32 per #12
    qroot = tmp_path / "work" / "kseg-quarantine" / "logs"
    if point == "copied":
        assert snapshot_tree(pdir) == original
        assert not qroot.exists() or not any(qroot.rglob("*"))
    else:
        (m,) = _manifests(qroot)
        doc = json.loads(m.read_text())
        assert doc["status"] == "failed" and doc["error"] == "interrupted"
    proc = run_kseg("verify", pdir, "--repair")
    assert proc.returncode == 1, proc.stderr
    assert snapshot_tree(pdir) == expected


def test_force_goes_ahead_with_a_notice(corrupt_cases, tmp_path):
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "zero-tail").partition_dir, tmp_path / "logs"
    )
    with _Holder(pdir.parent / ".lock", "fcntl"):
        proc = _repair(pdir, "--force")
        assert proc.returncode == 1, proc.stderr
        (line,) = _stderr_lines(proc)
        assert "held by another process" in line and "--force" in line
        qdir = _quarantine_of(proc)
        assert run_kseg("restore", qdir).returncode == 8
        assert run_kseg("restore", qdir, "--force").returncode == 0


@pytest.mark.parametrize("how", sorted(HOLDERS))
def test_lock_held_detects_every_kind_and_never_disturbs_the_holder(tmp_path, how):
    from kseg.storage.lock import LogDirLocks, lock_held

    if how == "ofd" and not hasattr(__import__("fcntl"), "F_OFD_SETLK"):
        pytest.skip("no OFD locks on this platform")
    assert not lock_held(tmp_path)  # no .lock at all
    (tmp_path / ".lock").write_bytes(b"")
    assert not lock_held(tmp_path)
    with _Holder(tmp_path / ".lock", how) as holder:
        assert lock_held(tmp_path) and lock_held(tmp_path)  # probing twice: still held
        with LogDirLocks() as locks:
            assert not locks.acquire(tmp_path)
        assert holder.proc.poll() is None
    assert not lock_held(tmp_path)
    with LogDirLocks() as locks:  # and kseg's own lock is seen by a probe in this process
        assert locks.acquire(tmp_path) and locks.holds(tmp_path)
        assert lock_held(tmp_path)
        assert locks.acquire(tmp_path)  # re-entrant for the same run
    assert not lock_held(tmp_path)


def test_quarantine_inside_the_log_dir_is_refused(corrupt_cases, tmp_path):
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "zero-tail").partition_dir, tmp_path / "logs"
    )
    (pdir.parent / "meta.properties").write_text("version=1\n")  # a broker's log dir
    before = snapshot_tree(pdir)
    # --dry-run predicts the refusal (it used to plan the repair and exit 4)
    for extra in (["--dry-run"], []):
        proc = _repair(pdir, "--quarantine", pdir.parent / "q", *extra)
        assert proc.returncode == 16, (extra, proc.stderr)
        (line,) = _stderr_lines(proc)
        assert "inside the log dir" in line
        assert snapshot_tree(pdir) == before and not (pdir.parent / "q").exists()


def test_index_rebuild_of_an_immutable_index_names_it_and_leaves_no_temp_file(tree, tmp_path):
    pdir = copy_partition(tree / "orders-0", tmp_path / "logs")
    index = segment_logs(pdir)[0].with_suffix(".index")
    index.write_bytes(b"")  # wrong: a rebuild would rewrite it
    if not _chattr(index, "+i"):
        pytest.skip("chattr +i is not available here (needs root and a filesystem with the flag)")
    try:
        proc = run_kseg("index", "rebuild", pdir)
    finally:
        _chattr(index, "-i")
    assert proc.returncode == 8
    (line,) = _stderr_lines(proc)
    assert line.startswith(f"kseg: {index}: Operation not permitted") and "lsattr" in line
    assert not [p for p in pdir.iterdir() if ".kseg-tmp-" in p.name]


def test_any_manifest_is_loaded_or_refused_never_crashes(corrupt_cases, tmp_path_factory):
    """Property: whatever a manifest holds, load + check_actions + restore's checks give a
    result or a KsegError, never another exception."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from kseg.format.errors import KsegError
    from kseg.repair.actions import check_actions
    from kseg.repair.manifest import load
    from kseg.repair.restore import check

    base = tmp_path_factory.mktemp("fuzz")
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "torn-tail").partition_dir, base / "logs"
    )
    qdir = _quarantine_of(_repair(pdir))
    good = json.loads((qdir / "manifest.json").read_text())
    values = st.recursive(
        st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=30),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=6,
    )
    keys = sorted(good) + ["actions.0." + k for k in good["actions"][0]]
    before = snapshot_tree(pdir)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.dictionaries(st.sampled_from(keys), values, min_size=1, max_size=3))
    def run(changes):
        doc = json.loads(json.dumps(good))
        for k, v in changes.items():
            if k.startswith("actions.0."):
                acts = doc.get("actions")
                if isinstance(acts, list) and acts and isinstance(acts[0], dict):
                    doc["actions"][0][k.removeprefix("actions.0.")] = v
            else:
                doc[k] = v
        (qdir / "manifest.json").write_text(json.dumps(doc))
        try:
            m = load(qdir)
            check_actions(m, qdir)
            check(qdir, m)
        except KsegError:
            pass

    try:
        run()
    finally:
        (qdir / "manifest.json").write_text(json.dumps(good))
    assert snapshot_tree(pdir) == before  # checks only: nothing was changed


def test_index_rebuild_backup_inside_the_log_dir_is_a_usage_error(tree, tmp_path):
    pdir = copy_partition(tree / "orders-0", tmp_path / "logs")
    (pdir.parent / "recovery-point-offset-checkpoint").write_text("0\n0\n")  # a broker's log dir
    proc = run_kseg("index", "rebuild", pdir, "--backup", pdir.parent / "backup")
    assert proc.returncode == 16 and b"inside the log dir" in proc.stderr
    assert not (pdir.parent / "backup").exists()


def test_a_resumed_hand_written_manifest_cannot_rewrite_unquarantined_files(tree, tmp_path):
    """An in_progress manifest that rebuilds a log's indexes without quarantining them first
    is refused, and nothing in the partition changes."""
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)
    env = {**os.environ, "KSEG_TEST_CRASH_AT": "manifest"}
    assert run_kseg("verify", pdir, "--repair", env=env).returncode == 99
    (m,) = _manifests(tmp_path / "kseg-quarantine" / "logs")
    doc = json.loads(m.read_text())
    doc["actions"] = [a for a in doc["actions"] if a["action"] not in ("replace", "create")]
    m.write_text(json.dumps(doc))
    before = snapshot_tree(pdir)
    proc = run_kseg("verify", pdir, "--repair")
    assert proc.returncode & 8
    assert "does not quarantine its .index first" in proc.stderr.decode()
    assert snapshot_tree(pdir) == before


def test_a_stale_marker_is_removed_by_the_next_writing_run(corrupt_cases, tmp_path):
    pdir = copy_partition(
        next(c for c in corrupt_cases if c.name == "zero-tail").partition_dir, tmp_path / "logs"
    )
    marker = pdir.parent / f".kseg-repair-{pdir.name}"
    marker.write_text(str(tmp_path / "gone" / "run" / pdir.name) + "\n")
    assert run_kseg("verify", pdir, "--repair", "--dry-run").returncode == 4
    assert marker.exists()  # a dry run writes nothing
    assert run_kseg("verify", pdir, "--repair").returncode == 1
    assert not marker.exists()
