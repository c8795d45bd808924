"""Issue 35, item 9: what a killed run leaves is cleaned by the next one, which says so (one
notice line per directory); a partition in which a file could not be read is reported, never
repaired (a plan from part of it could be wrong, and a repair stopping half-way is worse)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import run_kseg
from tests.safety.limits import assert_clean_failure_modes
from tests.verify.test_verify import _corrupt_middle_segment, snapshot_tree

_LEAVE_TEMP = (
    "import sys; from pathlib import Path; from kseg.storage.atomic import temp_name; "
    "t = temp_name(Path(sys.argv[1])); t.write_bytes(b'partial'); print(t)"
)


def _left_by_a_killed_run(path: Path) -> Path:
    """A temp file beside ``path`` under kseg's own name, written by a process that is gone
    (as a kill -9 between the write and the rename leaves it)."""
    out = subprocess.run(
        [sys.executable, "-c", _LEAVE_TEMP, str(path)], capture_output=True, check=True
    )
    temp = Path(out.stdout.decode().strip())
    assert temp.exists() and ".kseg-tmp-" in temp.name
    return temp


def test_the_next_repair_removes_what_a_killed_run_left_and_says_so(tree, tmp_path):
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)
    root = pdir.parent
    run = tmp_path / "kseg-quarantine" / "logs" / "20260101T000000Z"
    (run / pdir.name).mkdir(parents=True)  # a run killed while writing its first manifest
    left = [
        _left_by_a_killed_run(root / f".kseg-repair-{pdir.name}"),  # the marker's temp
        _left_by_a_killed_run(pdir / "leader-epoch-checkpoint"),
        _left_by_a_killed_run(run / pdir.name / "manifest.json"),
    ]
    # a temp file of a kseg still running (this test) in the quarantine: not ours to remove
    running = run.parent / f".x.kseg-tmp-{os.getpid()}-00000000"
    running.write_bytes(b"")
    proc = run_kseg("verify", pdir, "--repair")
    assert_clean_failure_modes(proc)
    assert proc.returncode == 1, proc.stderr
    notices = [line for line in proc.stderr.decode().splitlines() if "killed kseg run" in line]
    assert notices == [
        f"kseg: {root}: removed 1 temp file a killed kseg run had left ({left[0].name})",
        f"kseg: {pdir}: removed 1 temp file a killed kseg run had left ({left[1].name})",
        f"kseg: {run / pdir.name}: removed 1 temp file a killed kseg run had left ({left[2].name})",
    ]
    assert not any(p.exists() for p in left)
    assert not run.exists()  # the killed run's empty dirs went with its temp file
    assert running.exists()
    again = run_kseg("verify", pdir, "--repair")
    assert again.returncode == 0 and b"killed kseg run" not in again.stderr


def test_restore_and_index_rebuild_remove_leftovers_too(tree, tmp_path):
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)
    proc = run_kseg("verify", pdir, "--repair", "-f", "json")
    assert proc.returncode == 1
    (qdir,) = (p.parent for p in (tmp_path / "kseg-quarantine").rglob("manifest.json"))
    left = [_left_by_a_killed_run(pdir / "00000000000000000000.index")]
    left.append(_left_by_a_killed_run(qdir / "manifest.json"))
    proc = run_kseg("restore", qdir)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode()
    assert f"kseg: {pdir}: removed 1 temp file" in err and f"kseg: {qdir}: removed 1" in err
    assert not any(p.exists() for p in left)
    temp = _left_by_a_killed_run(pdir / "00000000000000000000.timeindex")
    proc = run_kseg("index", "rebuild", pdir)
    assert proc.returncode == 4, proc.stderr  # the restored log holds its corrupt batch again
    assert f"kseg: {pdir}: removed 1 temp file" in proc.stderr.decode() and not temp.exists()


def test_a_partition_with_an_unreadable_file_is_reported_not_repaired(tree, tmp_path):
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)
    other, _, _ = _corrupt_middle_segment(tree, tmp_path / "other")
    moved = pdir.parent / "txn-1"
    shutil.move(other, moved)
    fifo = pdir / "00000000000000000300.log"  # a later "segment" no one can read
    os.mkfifo(fifo)
    before = snapshot_tree(pdir)
    for dry in (["--dry-run"], []):  # the dry run predicts the real run
        proc = run_kseg("verify", pdir.parent, "--repair", *dry, timeout=60)
        assert_clean_failure_modes(proc)
        err = proc.stderr.decode().splitlines()
        # txn-0: invalid data (4) and unreadable (8), not repaired; txn-1 repaired (1)
        assert proc.returncode == (12 if dry else 13), err
        assert f"kseg: {pdir}: not repaired: {fifo} could not be read (see above); repair it " \
               "once every file of the partition reads" in err  # fmt: skip
        assert snapshot_tree(pdir) == before
    fifo.unlink()
    proc = run_kseg("verify", pdir, "--repair")
    assert proc.returncode == 1, proc.stderr
