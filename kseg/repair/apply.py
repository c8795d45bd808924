"""`kseg verify --repair`: truncate like Kafka's recovery, and lose nothing.

A repair is a plan, then its application (the caller holds the log dir's `.lock`):

0. free space for everything the plan copies is checked (statvfs) before anything is written;
1. the partition's quarantine dir gets its manifest first (status ``in_progress``, naming every
   action with sha256 and lengths, ``changes_started: false``);
2. every byte to be removed is copied into the quarantine (temp file, fsync, rename; the copy is
   hashed and must match the plan);
3. the manifest records ``changes_started: true``; then logs are truncated, later segments moved,
   indexes rebuilt (temp file, fsync, rename), the leader-epoch checkpoint rewritten; each step
   is idempotent and checks the files still match the plan;
4. the manifest becomes ``complete``, with the state the repair left (sizes and sha256 of the
   files it wrote, the live segments), which `restore` checks before it changes anything.

Killed or failed at any point, the data is untouched (a failure before step 3 removes the
quarantine dir again: nothing in it is needed) or resumable: the next ``verify --repair`` finds the
manifest of the partition (by its real path, however it is spelled) and finishes it. If the
partition changed before step 3 the stale plan is dropped and a new one made. ``kseg restore``
puts everything back (see restore.py).

What each kind of action quarantines and how it is applied: kseg.repair.actions. What a repair
would do: kseg.repair.plan.
"""

from __future__ import annotations

import errno
from pathlib import Path

from kseg.format import checkpoint as cp
from kseg.format.kafka_version import parse_kafka_version
from kseg.index.rebuild import rebuild_target, write_indexes
from kseg.repair.actions import ACTIONS, CREATE, REPLACE, kind_of, qfile
from kseg.repair.errors import RepairFailed
from kseg.repair.faults import fault_point
from kseg.repair.manifest import (
    COMPLETE,
    FAILED,
    IN_PROGRESS,
    Manifest,
    Plan,
    remove_quarantine_dir,
    save,
)
from kseg.repair.marker import marker_path, remove_marker
from kseg.repair.quarantine import Quarantine
from kseg.storage import files as F
from kseg.storage.atomic import atomic_write, fix_hint, fsync_dir, remove_stale_temps
from kseg.storage.side_files import read_side_file
from kseg.storage.space import check_space, device
from kseg.storage.tree import Target, partition_logs


def _check_plan_space(plan: Manifest, qroot: Path) -> None:
    cross = device(qroot) != device(plan.partition_dir)
    q = p = 0
    for a in plan.actions:
        k = kind_of(a)
        q += k.quarantine_bytes(a) + (k.moved_bytes(a) if cross else 0)
        p += k.partition_bytes(a)
    check_space([(qroot, q), (plan.partition_dir, p)])


def apply_plan(plan: Plan, quarantine: Quarantine) -> Path:
    """Carry out ``plan``; return the partition's quarantine dir (manifest and removed bytes).

    Raises RepairFailed; its message names the path and what to do.
    """
    _check_plan_space(plan, quarantine.root)
    remove_stale_temps(plan.partition_dir)
    qdir = quarantine.partition_dir(plan.partition_dir.name)
    plan.run = qdir.parent.name
    plan.status, plan.changes_started = IN_PROGRESS, False
    try:
        save(qdir, plan)
    except BaseException:
        remove_quarantine_dir(qdir)
        raise
    run_manifest(qdir, plan)
    return qdir


def run_manifest(qdir: Path, m: Manifest) -> None:
    try:
        for a in m.actions:
            kind_of(a).secure(a, qfile(qdir, a))
        fsync_dir(qdir)
        fault_point("copied")
        if not m.changes_started:
            atomic_write(marker_path(m.partition_dir), str(qdir.absolute()).encode() + b"\n")
            m.changes_started = True
            save(qdir, m)
        fault_point("manifest")
        _carry_out(qdir, m)
    except BaseException as exc:
        raise _failed(qdir, m, exc) from None


def _failed(qdir: Path, m: Manifest, exc: BaseException) -> BaseException:
    """Record a failure: drop the quarantine if nothing changed, else mark the manifest failed."""
    if isinstance(exc, OSError):
        what = f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc.strerror or exc)
    elif not isinstance(exc, Exception):  # KeyboardInterrupt, kseg's Interrupted, SystemExit
        what = "interrupted"
    else:
        what = str(exc)
    if not m.changes_started:
        remove_quarantine_dir(qdir)
        remove_marker(m.partition_dir, qdir)
        msg = f"{m.partition_dir}: repair failed before changing anything: {what}"
        hint = _hint(exc)
        failure: BaseException = RepairFailed(f"{msg}{hint}", None, False)
    else:
        m.status, m.error = FAILED, what
        try:
            save(qdir, m)
        except OSError:
            pass  # the manifest still says in_progress: resumable all the same
        failure = RepairFailed(
            f"{m.partition_dir}: repair stopped half-way: {what}{_hint(exc)}; then re-run "
            f"`kseg verify --repair` to finish it, or `kseg restore {qdir}` to undo it",
            qdir,
            True,
        )
    if not isinstance(exc, Exception):
        return exc  # an interrupt stays an interrupt (exit 32); the manifest says what to do
    return failure


def _hint(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return " (free space, or choose another place with --quarantine)"
    return fix_hint(exc)


def _carry_out(qdir: Path, m: Manifest) -> None:
    for kind in ACTIONS.values():
        todo = [a for a in m.actions if a.action == kind.name]
        for i, a in enumerate(todo):
            kind.apply(a, qfile(qdir, a))
            if kind.crash_point:
                fault_point(f"{kind.crash_point}:{i}")  # e.g. moved:0, after the first move
        if todo and kind.crash_point:
            fault_point(kind.crash_point)
    if m.rebuild_logs:
        logs = [Path(p) for p in m.rebuild_logs]
        # only the index files the plan names (quarantined first) are written
        named = {Path(a.file) for a in m.actions if a.action in (REPLACE, CREATE)}
        if all(p in m.rebuilt for p in m.rebuild_logs):
            for p in m.rebuild_logs:  # from the verify scan of the bytes the repair kept
                write_indexes(Path(p), m.rebuilt[p], only=named)
        else:  # a resumed repair: the manifest does not carry them
            rebuild_target(
                Target(m.partition_dir, logs),
                index_interval_bytes=m.index_interval_bytes,
                only=named,
                kafka_version=parse_kafka_version(m.kafka_version),
            )
        fault_point("rebuilt")
    if m.epoch_truncate_to is not None:
        path = m.partition_dir / "leader-epoch-checkpoint"
        entries = cp.read_leader_epoch_checkpoint(read_side_file(path, F.LEADER_EPOCH_CHECKPOINT))
        kept = [e for e in entries if e.start_offset < m.epoch_truncate_to]
        atomic_write(path, cp.encode_leader_epoch_checkpoint(kept))
    if m.reset_to is not None:
        epochs = m.partition_dir / "leader-epoch-checkpoint"
        if epochs.exists():
            atomic_write(epochs, cp.encode_leader_epoch_checkpoint([]))
        for a in m.actions:
            if a.action == CREATE and not Path(a.file).exists():
                atomic_write(Path(a.file), b"")  # Kafka's LogSegment.open: empty files
        fsync_dir(m.partition_dir)
    for a in m.actions:
        kind_of(a).record_after(a)
    m.after_logs = {p.name: p.stat().st_size for p in partition_logs(m.partition_dir)}
    m.status, m.error = COMPLETE, None
    save(qdir, m)
    remove_marker(m.partition_dir, qdir)
