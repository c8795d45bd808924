"""`kseg restore`: undo repairs, checking everything before changing anything.

Given one partition's quarantine dir (``<run>/<partition>/``) or a run dir (every partition one
``verify --repair`` touched), restore:

1. loads every manifest, which checks its paths (see manifest.py): only Kafka files directly in
   the partition dir it names, only plain names inside the quarantine dir;
2. takes the `.lock` of every log dir involved (as the broker does);
3. checks every file: each action is either still as the repair left it (to be undone) or
   already undone (an interrupted restore), every quarantined file it needs matches its sha256,
   no segment appeared or grew since the repair; anything else means the partition moved on (a
   broker ran) and nothing is touched;
4. checks free space for every byte it will write;
5. then, per partition: marks the manifest ``restoring``, undoes each action (idempotent, so an
   interrupted restore is finished by running it again) and marks it ``restored``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kseg.events import Event
from kseg.format.errors import KsegError
from kseg.outcome import BadOption, Outcome
from kseg.repair.actions import MOVE, REWRITE, TRUNCATE, check_actions, kind_of, qfile
from kseg.repair.errors import MovedOn
from kseg.repair.faults import fault_point
from kseg.repair.manifest import (
    INCOMPLETE,
    MANIFEST,
    RESTORED,
    RESTORING,
    Action,
    Manifest,
    load,
    peek_status,
    save,
)
from kseg.storage.atomic import remove_stale_temps, removed_message
from kseg.storage.lock import LogDirLocks, held_message
from kseg.storage.space import check_space, device
from kseg.storage.tree import partition_logs


class NotAQuarantine(KsegError):
    """The path given is not a quarantine dir or a run dir (a usage mistake)."""


class LockRefused(KsegError):
    pass


class PartitionRestore(NamedTuple):
    qdir: Path
    manifest: Manifest
    pending: list[Action]  # in the order they are undone
    note: str | None = None  # why there is nothing to do


def quarantines(path: Path) -> list[Path]:
    """The partition quarantine dirs ``path`` stands for: itself, every partition of a run, or
    of the only run under a quarantine root (``kseg-quarantine/<log.dir name>``) or under the
    ``kseg-quarantine`` dir itself (several runs, also of several log dirs: the operator picks
    one; they are named newest first, by their UTC-time names)."""
    if path.name == MANIFEST and path.is_file():
        path = path.parent  # the manifest itself was given
    if (path / MANIFEST).is_file():
        return [path]
    if not path.is_dir():
        raise NotAQuarantine(f"{path}: no such directory")
    children = sorted(p.parent for p in path.glob(f"*/{MANIFEST}"))
    if children:
        runs = {peek_status(q)[2] for q in children}
        if len(runs) == 1 and None not in runs:
            return children
        raise NotAQuarantine(
            f"{path}: holds the quarantines of {len(children)} separate repairs; restore them one "
            f"at a time, newest first (e.g. kseg restore {children[-1]})"
        )
    runs = sorted({p.parent.parent for p in path.glob(f"*/*/{MANIFEST}")})
    what = "a quarantine root"
    if not runs:  # the `kseg-quarantine` dir: one quarantine root per log dir repaired
        runs = sorted({p.parent.parent for p in path.glob(f"*/*/*/{MANIFEST}")})
        log_dirs = {r.parent for r in runs}
        if len(log_dirs) > 1:
            what = f"the quarantine of {len(log_dirs)} log dirs"
    if len(runs) == 1:
        return quarantines(runs[0])  # a quarantine root holding one run: no doubt which
    if runs:
        newest = sorted(runs, key=_run_order, reverse=True)
        shown = ", ".join(map(str, newest[:_SHOWN]))
        more = f" and {len(newest) - _SHOWN} more" if len(newest) > _SHOWN else ""
        raise NotAQuarantine(
            f"{path}: {what} holding {len(runs)} repair runs; restore one run at a time, newest "
            f"first: {shown}{more} (e.g. kseg restore {newest[0]})"
        )
    raise NotAQuarantine(
        f"{path}: no {MANIFEST} here or in its subdirectories; give a quarantine dir written by "
        "`kseg verify --repair`"
    )


_SHOWN = 5  # runs named in a refusal, newest first


def _run_order(run: Path) -> tuple:
    """A run dir's place in time: its UTC-time name, then the ``-n`` of a second run in the same
    second (manifest.new_run_dir), then its path (the same run of several log dirs)."""
    stamp, _, n = run.name.partition("-")
    return (stamp, int(n) if n.isdigit() else 0, str(run))


def check(qdir: Path, m: Manifest) -> PartitionRestore:
    """What restoring ``qdir`` would undo; raises (MovedOn, RepairError) if it cannot be done."""
    if m.status == RESTORED:
        return PartitionRestore(qdir, m, [], "already restored")
    if m.status in INCOMPLETE and not m.changes_started:
        return PartitionRestore(qdir, m, [], "the repair never changed the partition")
    pending = []
    for a in reversed(m.actions):  # undo in the reverse order of the repair
        if kind_of(a).restore_pending(a, qfile(qdir, a)):
            pending.append(a)
    if m.after_logs is not None:
        _check_segments(m)
    return PartitionRestore(qdir, m, pending, None if pending else "nothing left to undo")


def _check_segments(m: Manifest) -> None:
    """No segment appeared, vanished or changed size since the repair completed."""
    ours = {Path(a.file).name for a in m.actions if a.action in (TRUNCATE, MOVE, REWRITE)}
    logs = partition_logs(m.partition_dir)
    gone = sorted(set(m.after_logs) - ours - {p.name for p in logs})
    if gone:
        raise MovedOn(
            f"{m.partition_dir / gone[0]}: gone since the repair (retention or a broker deleted "
            "it): the partition moved on; restoring now would leave a gap"
        )
    for log in logs:
        if log.name in ours:
            continue  # checked by its action
        size = m.after_logs.get(log.name)
        if size is None:
            raise MovedOn(
                f"{log}: a segment that appeared after the repair: the partition moved on (a "
                "broker ran); restoring now would lose or mix its new data"
            )
        if log.stat().st_size != size:
            raise MovedOn(
                f"{log}: {log.stat().st_size} bytes, {size} when the repair completed: the "
                "partition moved on (a broker ran)"
            )


def plan_restore(
    path: Path, locks: LogDirLocks, *, base_dir: Path | None = None
) -> list[PartitionRestore]:
    """Every check of a restore, nothing changed. Takes the log dirs' locks (kept by ``locks``)."""
    loaded = []
    for qdir in quarantines(path):
        m = load(qdir, base_dir=base_dir)
        check_actions(m, qdir / MANIFEST)
        loaded.append((qdir, m))
    for _, m in loaded:
        if not locks.acquire(m.log_dir):
            raise LockRefused(held_message(m.log_dir))
    plans = [check(qdir, m) for qdir, m in loaded]
    needs = []
    for pr in plans:
        cross = device(pr.qdir) != device(pr.manifest.partition_dir)
        n = sum(kind_of(a).restore_bytes(a, qfile(pr.qdir, a), cross) for a in pr.pending)
        needs.append((pr.manifest.partition_dir, n))
    check_space(needs)
    return plans


def apply_restore(pr: PartitionRestore) -> Iterator[Action]:
    """Undo the pending actions of one checked partition; yields each as it is done."""
    m = pr.manifest
    if pr.pending:
        m.status = RESTORING
        save(pr.qdir, m)
        for a in pr.pending:
            kind_of(a).undo(a, qfile(pr.qdir, a))
            a.restored = True
            save(pr.qdir, m)  # progress, for the operator; a resumed restore re-checks the files
            yield a
            fault_point("restoring")
    if m.status != RESTORED:
        m.status = RESTORED
        save(pr.qdir, m)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)


class RestoreRun:
    """The restore command as a library call: every check, then the undoing, as events; what
    was found in ``outcome`` (unreadable when refused or stopped). Failures are ``failure`` events (one line for
    stderr); a path that is no quarantine is a usage mistake (BadOption)."""

    def __init__(self, path: Path, *, force: bool = False, base_dir: Path | None = None) -> None:
        self.path = path
        self.force = force
        self.base_dir = base_dir
        self.outcome = Outcome.OK

    def _failure(self, message: str) -> dict:
        self.outcome |= Outcome.UNREADABLE
        return {"type": "failure", "message": message}

    def events(self) -> Iterator[dict]:
        with LogDirLocks(force=self.force) as locks:
            try:
                plans = plan_restore(self.path, locks, base_dir=self.base_dir)
            except NotAQuarantine as exc:
                raise BadOption(str(exc), "QUARANTINE_DIR") from None
            except (KsegError, OSError) as exc:
                text = _describe(exc)
                yield self._failure(
                    text if "nothing was changed" in text else f"{text}; nothing was changed"
                )
                return
            total = 0
            for pr in plans:  # what a run killed before left (we hold the lock)
                for place, only_dead in ((pr.manifest.partition_dir, False), (pr.qdir, True)):
                    removed = remove_stale_temps(place, only_dead_writers=only_dead)
                    if removed:
                        yield {"type": "notice", "message": removed_message(place, removed)}
            try:
                for pr in plans:
                    if pr.note:
                        yield {"type": "notice", "message": f"{pr.qdir}: {pr.note}"}
                    for a in apply_restore(pr):
                        total += 1
                        yield {
                            "type": "restored",
                            "action": a.action,
                            "file": a.file,
                            "quarantine": str(pr.qdir),
                        }
            except (KsegError, OSError) as exc:
                yield self._failure(
                    f"restore stopped: {_describe(exc)}; fix the cause and run the same "
                    "`kseg restore` again to finish"
                )
                return
            summary = {"type": "summary", "partitions": len(plans), "restored": total}
            yield Event({**summary, "outcome": self.outcome}, about=self.path)
