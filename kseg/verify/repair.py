"""`kseg verify --repair`: truncate like Kafka's recovery, and lose nothing.

A repair is a plan, then its application:

1. every byte to be removed is copied into a quarantine directory (tails of truncated logs, old
   index files, the old leader-epoch checkpoint) and fsynced; later segments will be moved there;
2. a manifest (status ``in_progress``) naming every action, with sha256 and lengths, is written
   atomically;
3. logs are truncated, later segments moved, indexes rebuilt (temp file, fsync, rename), the
   leader-epoch checkpoint rewritten; each step is idempotent;
4. the manifest becomes ``complete``.

Killed at any point, the data is either untouched (no manifest yet) or resumable: the next
``verify --repair`` finds the ``in_progress`` manifest and finishes it. ``kseg restore`` puts
everything back. The default quarantine lies BESIDE the log dir, never inside it: Kafka refuses to
start with a directory in a log dir that is not a partition.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..format import checkpoint as cp
from ..format.errors import CorruptionError, KsegError
from ..storage import files as F
from ..storage.atomic import atomic_write, fsync_dir
from ..storage.tree import Target
from .partition import PartitionReport
from .rebuild import rebuild_target

MANIFEST = "manifest.json"
IN_PROGRESS, COMPLETE, RESTORED = "in_progress", "complete", "restored"
TRUNCATE, MOVE, REPLACE, CREATE = "truncate", "move", "replace", "create"
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
CRASH_ENV = "KSEG_TEST_CRASH_AT"  # fault injection for the kill-during-repair tests


class RepairError(KsegError):
    """The files changed in a way the manifest does not explain: stop, change nothing more."""


@dataclass(slots=True)
class Action:
    action: str  # truncate | move | replace | create
    file: str
    reason: str
    position: int | None = None  # truncate: the new size
    length: int | None = None  # bytes removed, moved or replaced
    sha256: str | None = None
    quarantine_file: str | None = None  # relative to the quarantine dir

    def to_event(self, dry_run: bool) -> dict:
        return {"type": "repair_action", "dry_run": dry_run, **asdict(self)}


@dataclass(slots=True)
class Plan:
    partition_dir: Path
    actions: list[Action] = field(default_factory=list)
    rebuild_logs: list[str] = field(default_factory=list)
    epoch_truncate_to: int | None = None
    index_interval_bytes: int = 4096

    @property
    def empty(self) -> bool:
        return not self.actions and not self.rebuild_logs


def default_quarantine_root(log_dir: Path) -> Path:
    log_dir = log_dir.resolve()
    return log_dir.parent / "kseg-quarantine" / log_dir.name


def _sha256_range(path: Path, start: int, end: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


def plan_repair(
    report: PartitionReport, *, keep_later_segments: bool = False, index_interval_bytes: int = 4096
) -> Plan:
    pdir = report.target.partition_dir
    plan = Plan(pdir, index_interval_bytes=index_interval_bytes)
    qprefix = pdir.name
    rebuild: list[Path] = []
    first = report.first_corrupt
    for i, scan in enumerate(report.scans):
        log = scan.log
        if scan.corrupt and (first == i or keep_later_segments):
            if scan.valid_bytes < scan.size:
                reason = f"{scan.first_error.kind} at byte {scan.valid_bytes}: {scan.first_error.message}"
                plan.actions.append(
                    Action(
                        TRUNCATE,
                        str(log),
                        reason,
                        position=scan.valid_bytes,
                        length=scan.size - scan.valid_bytes,
                        sha256=_sha256_range(log, scan.valid_bytes, scan.size),
                        quarantine_file=f"{qprefix}/{log.name}.tail-at-{scan.valid_bytes}",
                    )
                )
            rebuild.append(log)
        elif first is not None and i > first and not keep_later_segments:
            for p in [log] + [log.with_suffix(s) for s in INDEX_SUFFIXES]:
                if p.exists():
                    why = f"segment after the truncation point (offset {scan.base_offset}); Kafka's recovery deletes it"
                    plan.actions.append(_whole_file(MOVE, p, why, qprefix))
        elif any(
            st is not None and st.status in ("wrong", "missing")
            for st in (scan.offset_index, scan.time_index)
        ):
            rebuild.append(log)
    end = report.log_end_offset
    if first is not None and end is not None:
        if not keep_later_segments:
            for p in sorted(pdir.iterdir()):
                k = F.file_kind(p)
                if k.kind == F.SNAPSHOT and not k.temp_suffix and k.base_offset > end:
                    why = f"producer snapshot past the new log end {end}"
                    plan.actions.append(_whole_file(MOVE, p, why, qprefix))
        epochs = pdir / "leader-epoch-checkpoint"
        if epochs.exists() and not keep_later_segments:
            try:
                entries = cp.read_leader_epoch_checkpoint(epochs.read_bytes())
            except (OSError, CorruptionError):  # an unreadable checkpoint is left for Kafka
                entries = []
            if any(e.start_offset >= end for e in entries):
                plan.epoch_truncate_to = end
                why = f"leader epochs starting at or past the new log end {end}"
                plan.actions.append(_whole_file(REPLACE, epochs, why, qprefix))
    for log in rebuild:
        for suffix in INDEX_SUFFIXES:
            p = log.with_suffix(suffix)
            if p.exists():
                plan.actions.append(_whole_file(REPLACE, p, "index rebuilt from the log", qprefix))
            elif suffix != ".txnindex":
                plan.actions.append(Action(CREATE, str(p), "index rebuilt from the log"))
    plan.rebuild_logs = [str(p) for p in rebuild]
    return plan


def _whole_file(action: str, path: Path, reason: str, qprefix: str) -> Action:
    """An action on a whole file (moved, or replaced after a copy): its size and sha256 now."""
    size = path.stat().st_size
    return Action(
        action,
        str(path),
        reason,
        length=size,
        sha256=_sha256_range(path, 0, size),
        quarantine_file=f"{qprefix}/{path.name}",
    )


# --- applying -----------------------------------------------------------------------------


def _crash_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os._exit(99)


def _copy_range(src: Path, dest: Path, start: int, length: int) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fi, open(dest, "wb") as fo:
        fi.seek(start)
        left = length
        while left > 0:
            chunk = fi.read(min(left, 1 << 20))
            if not chunk:
                raise RepairError(f"{src}: shorter than planned while copying to quarantine")
            fo.write(chunk)
            left -= len(chunk)
        fo.flush()
        os.fsync(fo.fileno())


def _write_manifest(qdir: Path, plan: Plan, status: str, log_dir: Path) -> None:
    doc = {
        "version": 1,
        "tool": "kseg",
        "status": status,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "log_dir": str(log_dir),
        "partition_dir": str(plan.partition_dir),
        "index_interval_bytes": plan.index_interval_bytes,
        "rebuild_logs": plan.rebuild_logs,
        "epoch_truncate_to": plan.epoch_truncate_to,
        "actions": [asdict(a) for a in plan.actions],
    }
    atomic_write(qdir / MANIFEST, json.dumps(doc, indent=2).encode() + b"\n")


def new_quarantine_dir(root: Path, partition: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for n in range(1000):
        qdir = root / (f"{stamp}-{partition}" if n == 0 else f"{stamp}-{partition}-{n}")
        try:
            qdir.mkdir(parents=True)
            return qdir
        except FileExistsError:
            continue
    raise RepairError(f"cannot create a quarantine directory under {root}")


def apply_plan(plan: Plan, quarantine_root: Path, log_dir: Path) -> Path:
    """Carry out ``plan``; return the quarantine dir (holding the manifest and the bytes)."""
    qdir = new_quarantine_dir(quarantine_root, plan.partition_dir.name)
    for a in plan.actions:
        if a.action == TRUNCATE:
            _copy_range(Path(a.file), qdir / a.quarantine_file, a.position, a.length)
        elif a.action == REPLACE:
            _copy_range(Path(a.file), qdir / a.quarantine_file, 0, a.length)
    for d in {(qdir / a.quarantine_file).parent for a in plan.actions if a.quarantine_file} | {
        qdir
    }:
        d.mkdir(parents=True, exist_ok=True)
        fsync_dir(d)
    _crash_point("copied")
    _write_manifest(qdir, plan, IN_PROGRESS, log_dir)
    fsync_dir(qdir.parent)
    _crash_point("manifest")
    _carry_out(qdir, plan, log_dir)
    return qdir


def _carry_out(qdir: Path, plan: Plan, log_dir: Path) -> None:
    for a in plan.actions:
        if a.action == TRUNCATE:
            _truncate(a)
            _crash_point("truncated")
    for a in plan.actions:
        if a.action == MOVE:
            _move(a, qdir)
            _crash_point("moved")
    if plan.rebuild_logs:
        logs = [Path(p) for p in plan.rebuild_logs]
        rebuild_target(
            Target(plan.partition_dir, logs), index_interval_bytes=plan.index_interval_bytes
        )
        _crash_point("rebuilt")
    if plan.epoch_truncate_to is not None:
        path = plan.partition_dir / "leader-epoch-checkpoint"
        entries = cp.read_leader_epoch_checkpoint(path.read_bytes())
        kept = [e for e in entries if e.start_offset < plan.epoch_truncate_to]
        atomic_write(path, cp.encode_leader_epoch_checkpoint(kept))
    _write_manifest(qdir, plan, COMPLETE, log_dir)


def _truncate(a: Action) -> None:
    path = Path(a.file)
    size = path.stat().st_size
    if size == a.position:
        return  # done before a crash
    if size != a.position + a.length or _sha256_range(path, a.position, size) != a.sha256:
        raise RepairError(
            f"{path}: changed since the repair was planned (size {size}); not truncating"
        )
    with open(path, "r+b") as f:
        f.truncate(a.position)
        f.flush()
        os.fsync(f.fileno())


def _move(a: Action, qdir: Path) -> None:
    src, dst = Path(a.file), qdir / a.quarantine_file
    if not src.exists() and dst.exists():
        return  # done before a crash
    if dst.exists() and src.exists():
        if _sha256_range(dst, 0, dst.stat().st_size) == a.sha256 and dst.stat().st_size == a.length:
            src.unlink()  # a cross-device copy finished but the unlink did not
            fsync_dir(src.parent)
            return
        raise RepairError(f"{dst} exists and differs from {src}")
    if not src.exists():
        raise RepairError(f"{src}: missing, and not in the quarantine either")
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:  # the quarantine is on another filesystem: copy
            raise
        _copy_range(src, dst, 0, a.length)
        src.unlink()
    fsync_dir(dst.parent)
    fsync_dir(src.parent)


def _load(qdir: Path) -> tuple[dict, Plan]:
    doc = json.loads((qdir / MANIFEST).read_text())
    plan = Plan(
        Path(doc["partition_dir"]),
        [Action(**a) for a in doc["actions"]],
        doc["rebuild_logs"],
        doc["epoch_truncate_to"],
        doc["index_interval_bytes"],
    )
    return doc, plan


def incomplete_repairs(quarantine_root: Path, partition_dir: Path) -> list[Path]:
    """Quarantine dirs whose manifest says a repair of ``partition_dir`` was interrupted."""
    if not quarantine_root.is_dir():
        return []
    out = []
    for m in sorted(quarantine_root.glob(f"*/{MANIFEST}")):
        try:
            doc = json.loads(m.read_text())
        except (OSError, ValueError):
            continue
        if doc.get("status") == IN_PROGRESS and Path(doc.get("partition_dir", "")) == partition_dir:
            out.append(m.parent)
    return out


def resume(qdir: Path) -> Plan:
    doc, plan = _load(qdir)
    _carry_out(qdir, plan, Path(doc["log_dir"]))
    return plan


def restore(qdir: Path) -> list[Action]:
    """Undo a repair recorded in ``qdir``: bytes appended back, segments moved back, old files back."""
    doc, plan = _load(qdir)
    if doc["status"] == RESTORED:
        return []
    done = []
    for a in reversed(plan.actions):
        path = Path(a.file)
        if a.action == CREATE:
            if path.exists():
                path.unlink()
        elif a.action == REPLACE:
            atomic_write(path, (qdir / a.quarantine_file).read_bytes())
        elif a.action == MOVE:
            src = qdir / a.quarantine_file
            if src.exists() and not path.exists():
                os.rename(
                    src, path
                ) if src.stat().st_dev == path.parent.stat().st_dev else shutil.move(src, path)
                fsync_dir(path.parent)
            elif not path.exists():
                raise RepairError(f"{path}: neither in place nor in the quarantine")
        elif a.action == TRUNCATE:
            size = path.stat().st_size
            if size == a.position + a.length and _sha256_range(path, a.position, size) == a.sha256:
                pass
            elif size == a.position:
                with open(path, "ab") as f, open(qdir / a.quarantine_file, "rb") as q:
                    shutil.copyfileobj(q, f, 1 << 20)
                    f.flush()
                    os.fsync(f.fileno())
            else:
                raise RepairError(
                    f"{path}: size {size} is neither the truncated {a.position} nor the original {a.position + a.length}"
                )
        done.append(a)
    if plan.rebuild_logs:
        fsync_dir(plan.partition_dir)
    doc["status"] = RESTORED
    atomic_write(qdir / MANIFEST, json.dumps(doc, indent=2).encode() + b"\n")
    return done
