"""Issue 35, item 6: symlinks. One rule (kseg/storage/links.py): every command reads through a
symlinked segment, index, partition dir or root; a dangling or looping link, or a FIFO, named
like a segment is unreadable (named, exit 8, the rest done); nothing is ever written through a
link: a repair and an index rebuild refuse a partition holding a linked file they would
change (one line naming it, exit 8 for it, --dry-run alike), and what they do change is undone
by restore. Inputs built at run time; the real entry point as a subprocess."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from kseg.fixtures.offsets import write_offsets_partition
from kseg.storage.tree import segment_logs
from tests.helpers import events, run_kseg
from tests.verify.test_verify import _corrupt_middle_segment, snapshot_tree

from .limits import assert_clean_failure_modes

FIRST = "00000000000000000000"


@pytest.fixture(scope="module")
def source(tree, tmp_path_factory) -> Path:
    """A root with orders-0 (clean) and a __consumer_offsets-0 (for `kseg offsets`)."""
    root = tmp_path_factory.mktemp("links-src") / "logs"
    root.mkdir()
    shutil.copytree(tree / "orders-0", root / "orders-0")
    write_offsets_partition(root / "__consumer_offsets-0")
    return root


def _digest(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _linked_log(pdir: Path, outside: Path) -> Path:
    log = pdir / f"{FIRST}.log"
    shutil.move(log, outside / "seg.log")
    log.symlink_to(outside / "seg.log")
    return log


def _linked_index(pdir: Path, outside: Path) -> Path:
    idx = pdir / f"{FIRST}.index"
    shutil.move(idx, outside / "seg.index")
    idx.symlink_to(outside / "seg.index")
    return idx


def _dangling(pdir: Path, outside: Path) -> Path:
    link = pdir / "00000000000000099999.log"
    link.symlink_to(outside / "gone.log")
    return link


def _looping(pdir: Path, outside: Path) -> Path:
    a, b = pdir / "00000000000000099998.log", pdir / "00000000000000099999.log"
    a.symlink_to(b)
    b.symlink_to(a)
    return [a, b]  # a command that needs every segment (offsets, seek) stops at the first


def _fifo(pdir: Path, outside: Path) -> Path:
    path = pdir / "00000000000000099999.log"
    os.mkfifo(path)
    return path


def _linked_dir(pdir: Path, outside: Path) -> Path:
    real = outside / pdir.name
    shutil.move(pdir, real)
    pdir.symlink_to(real)
    return pdir


CASES = {
    "linked_log": _linked_log,
    "linked_index": _linked_index,
    "dangling": _dangling,
    "looping": _looping,
    "fifo": _fifo,
    "linked_partition_dir": _linked_dir,
}
UNREADABLE = ("dangling", "looping", "fifo")
COMMANDS = {
    "dump": ("dump",),
    "verify": ("verify",),
    "repair": ("verify", "--repair"),
    "repair_dry_run": ("verify", "--repair", "--dry-run"),
    "index_check": ("index", "check"),
    "index_rebuild": ("index", "rebuild"),
    "seek": ("seek", "--offset", "5"),
    "stats": ("stats",),
    "offsets": ("offsets", "--list"),
}


def _expected(case: str, command: str) -> int:
    if case in UNREADABLE:
        return 8  # unreadable: named, the rest done
    if case == "linked_index" and command == "index_rebuild":
        return 8  # the rebuild (interval 4096, the fixture's 1024) would change the linked index
    return 0  # read through the link, as through the file


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_command_follows_the_symlink_rule(source, tmp_path, case, command):
    root = tmp_path / "logs"
    shutil.copytree(source, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    pdir = root / ("__consumer_offsets-0" if command == "offsets" else "orders-0")
    made = CASES[case](pdir, outside)
    paths = made if isinstance(made, list) else [made]
    before = _digest(outside)
    proc = run_kseg(*COMMANDS[command], root, timeout=60)  # a FIFO opened would hang here
    assert_clean_failure_modes(proc)
    err = proc.stderr.decode()
    assert proc.returncode == _expected(case, command), (proc.returncode, err[-1500:])
    if case == "linked_partition_dir" and command == "index_rebuild":
        # the link is followed: the indexes are rewritten in the real dir, as regular files
        assert all(not p.is_symlink() for p in (outside / pdir.name).iterdir())
    else:
        assert _digest(outside) == before  # nothing outside the partition changed
    assert all(os.path.islink(p) for p in paths) or case == "fifo"  # never replaced either
    if proc.returncode == 8:
        said = [line for line in err.splitlines() if any(str(p) in line for p in paths)]
        assert said and all(line.startswith("kseg: ") for line in said), err


def _outside_segment(tree, tmp_path: Path) -> tuple[Path, Path, Path]:
    """txn-0 with a corrupt middle segment that is a symlink to a file outside the partition."""
    pdir, middle, _ = _corrupt_middle_segment(tree, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / middle.name
    shutil.move(middle, target)
    middle.symlink_to(target)
    return pdir, middle, target


@pytest.mark.parametrize("dry_run", [False, True], ids=["repair", "dry_run"])
def test_repair_refuses_a_partition_whose_file_to_change_is_a_symlink(tree, tmp_path, dry_run):
    pdir, link, target = _outside_segment(tree, tmp_path)
    other, _, _ = _corrupt_middle_segment(tree, tmp_path / "other")  # a regular one, repaired
    moved = pdir.parent / "txn-1"
    shutil.move(other, moved)
    original_target = target.read_bytes()
    before = snapshot_tree(pdir)
    original_other = snapshot_tree(moved)
    proc = run_kseg("verify", pdir.parent, "--repair", *(["--dry-run"] if dry_run else []))
    assert_clean_failure_modes(proc)
    err = proc.stderr.decode().splitlines()
    refusal = f"kseg: {link}: a symlink (-> {target}); kseg never writes through a symlink: not repairing {pdir}"
    assert [line for line in err if "symlink" in line] == [refusal]
    # txn-0: invalid data (4), refused (8); txn-1: repaired (1), unless a dry run (4)
    assert proc.returncode == (12 if dry_run else 13), err
    assert target.read_bytes() == original_target  # byte-identical outside the partition
    assert snapshot_tree(pdir) == before and link.is_symlink()
    if dry_run:
        return
    assert snapshot_tree(moved) != original_other
    qroot = tmp_path / "kseg-quarantine" / "logs"
    (manifest,) = qroot.glob("*/*/manifest.json")
    assert json.loads(manifest.read_text())["partition_dir"] == str(moved.resolve())
    restored = run_kseg("restore", manifest.parent.parent)  # the run: every repair it made
    assert restored.returncode == 0, restored.stderr
    assert snapshot_tree(moved) == original_other


def test_repair_refuses_to_replace_a_symlinked_index(tree, tmp_path):
    pdir, middle, _ = _corrupt_middle_segment(tree, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    idx = middle.with_suffix(".index")
    shutil.move(idx, outside / idx.name)
    idx.symlink_to(outside / idx.name)
    before = _digest(outside)
    proc = run_kseg("verify", pdir, "--repair")
    assert_clean_failure_modes(proc)
    assert proc.returncode == 12, proc.stderr
    assert f"kseg: {idx}: a symlink" in proc.stderr.decode()
    assert _digest(outside) == before and idx.is_symlink()
    assert not (tmp_path / "kseg-quarantine").exists()  # nothing was started


def test_repair_inside_a_symlinked_partition_dir_is_undone_by_restore(tree, tmp_path):
    """Kafka follows a symlinked log dir; so does a repair: it works in the directory the
    link resolves to (each file it changes a regular file there), records that real path,
    and restore finds it."""
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path / "disk2")
    root = tmp_path / "logs"
    root.mkdir()
    link = root / pdir.name
    link.symlink_to(pdir)
    original = snapshot_tree(pdir)
    proc = run_kseg("verify", root, "--repair", "-f", "json")
    assert proc.returncode == 1, proc.stderr
    done = next(e for e in events(proc.stdout) if e["type"] == "repair_done")
    manifest = json.loads((Path(done["quarantine"]) / "manifest.json").read_text())
    assert manifest["partition_dir"] == str(pdir.resolve())
    assert link.is_symlink() and snapshot_tree(pdir) != original
    assert run_kseg("verify", root).returncode == 0
    proc = run_kseg("restore", done["quarantine"])
    assert proc.returncode == 0, proc.stderr
    assert snapshot_tree(pdir) == original


@pytest.mark.parametrize("dry_run", [False, True], ids=["rebuild", "dry_run"])
def test_index_rebuild_refuses_a_partition_whose_index_to_change_is_a_symlink(
    tree, tmp_path, dry_run
):
    root = tmp_path / "logs"
    for name in ("orders-0", "orders-1"):
        shutil.copytree(tree / name, root / name)
    outside = tmp_path / "outside"
    outside.mkdir()
    idx = _linked_index(root / "orders-0", outside)
    before = snapshot_tree(root / "orders-0")
    outside_before = _digest(outside)
    proc = run_kseg("index", "rebuild", root, *(["--dry-run"] if dry_run else []))
    assert_clean_failure_modes(proc)
    assert proc.returncode == 8, proc.stderr
    lines = proc.stderr.decode().splitlines()
    assert lines == [
        f"kseg: {idx}: a symlink (-> {outside / 'seg.index'}); kseg never writes through a "
        "symlink: not rebuilt"
    ]
    assert snapshot_tree(root / "orders-0") == before and _digest(outside) == outside_before
    # a linked index the rebuild leaves unchanged (the fixture's interval) is no refusal
    proc = run_kseg("index", "rebuild", root / "orders-0", "--index-interval-bytes", "1024",
                    "-f", "json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    actions = {Path(f["file"]).name: f["action"] for e in events(proc.stdout)
               if e["type"] == "index_rebuild" for f in e["files"]}  # fmt: skip
    assert actions[idx.name] == "unchanged" and "replaced" in actions.values()
    assert _digest(outside) == outside_before and idx.is_symlink()


@pytest.mark.parametrize("case", ["linked_log", "linked_index", "dangling", "looping"])
def test_restore_never_writes_through_a_symlink(tree, tmp_path, case):
    """A file the repair changed (the cut log, a rebuilt index) or moved away (a later segment)
    is a link now: restore refuses before changing anything, whatever the link is."""
    pdir, middle, _ = _corrupt_middle_segment(tree, tmp_path)
    later = segment_logs(pdir)[2]
    proc = run_kseg("verify", pdir, "--repair", "-f", "json")
    assert proc.returncode == 1, proc.stderr
    qdir = next(e for e in events(proc.stdout) if e["type"] == "repair_done")["quarantine"]
    outside = tmp_path / "outside"
    outside.mkdir()
    if case in ("linked_log", "linked_index"):
        path = middle if case == "linked_log" else middle.with_suffix(".index")
        shutil.move(path, outside / path.name)
        path.symlink_to(outside / path.name)
    elif case == "dangling":
        path = later  # where restore would move the quarantined segment back
        path.symlink_to(outside / "gone.log")
    else:
        path = later
        path.symlink_to(later.with_suffix(".loop"))
        later.with_suffix(".loop").symlink_to(path)
    before, outside_before = snapshot_tree(pdir), _digest(outside)
    proc = run_kseg("restore", qdir)
    assert_clean_failure_modes(proc)
    assert proc.returncode == 8, proc.stderr
    (line,) = proc.stderr.decode().splitlines()
    assert str(path) in line and "symlink" in line and "nothing was changed" in line, line
    assert snapshot_tree(pdir) == before and _digest(outside) == outside_before


def test_a_symlinked_lock_file_is_never_followed(tree, tmp_path):
    """`<log.dir>/.lock` a dangling link: opening it O_CREAT would create its target outside
    the log dir; kseg refuses to write in that log dir instead (verified read-only), exit 8."""
    pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)
    target = tmp_path / "outside-lock"
    (pdir.parent / ".lock").symlink_to(target)
    before = snapshot_tree(pdir)
    proc = run_kseg("verify", "--repair", pdir.parent)
    assert_clean_failure_modes(proc)
    assert proc.returncode == 12, proc.stderr
    assert b"cannot open the lock file: Too many levels of symbolic links" in proc.stderr
    assert not target.exists() and snapshot_tree(pdir) == before


def test_a_link_swapped_in_after_the_check_is_not_written_through(tree, tmp_path):
    """The file to truncate becomes a link (to a copy of its own bytes, so every check by
    content passes) while the repair waits after its copies: the truncation opens it with
    O_NOFOLLOW and fails, one line; the outside file is byte-identical."""
    import subprocess

    from tests.helpers import kseg_command
    from tests.repair.test_repair_safety import _stalled_at

    pdir, middle, _ = _corrupt_middle_segment(tree, tmp_path)
    stall = tmp_path / "stalled"
    env = {**os.environ, "KSEG_TEST_STALL_AT": "copied", "KSEG_TEST_STALL_FILE": str(stall)}
    repair = subprocess.Popen(
        [*kseg_command(), "verify", str(pdir), "--repair"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert _stalled_at(repair, stall) == "copied\n"
        outside = tmp_path / "outside.log"
        shutil.copyfile(middle, outside)
        original = outside.read_bytes()
        middle.unlink()
        middle.symlink_to(outside)
        repair.stdin.close()
        assert repair.wait(timeout=120) == 12
        err = repair.stderr.read().decode()
    finally:
        repair.kill()
        repair.wait()
    # the manifest says the changes had begun: the run stops there, resumable once it is a file
    assert f"{pdir}: repair stopped half-way: {middle}: Too many levels of symbolic links" in err
    assert outside.read_bytes() == original and middle.is_symlink()
