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

Each action kind is one class below (what it quarantines, how it is applied, how it is undone);
a new kind of repair is a new class in ACTIONS.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from kseg.format import checkpoint as cp
from kseg.format.errors import CorruptionError, KsegError
from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion, parse_kafka_version
from kseg.format.txn_index import encode_entries as encode_txn
from kseg.index.rebuild import rebuild_target, rebuilt_indexes, write_indexes
from kseg.repair.manifest import (
    COMPLETE,
    FAILED,
    IN_PROGRESS,
    INCOMPLETE,
    RESTORING,
    Action,
    Manifest,
    ManifestError,
    Plan,
    load,
    manifest_dirs,
    new_partition_dir,
    new_run_dir,
    peek_status,
    quarantine_file,
    remove_quarantine_dir,
    same_partition,
    save,
)
from kseg.storage import files as F
from kseg.storage.atomic import (
    CopyMismatch,
    atomic_copy,
    atomic_write,
    fix_hint,
    fsync_dir,
    remove_stale_temps,
    sha256_file,
    sha256_range,
)
from kseg.storage.mapped import read_file
from kseg.storage.space import check_space, device
from kseg.storage.tree import Target, partition_logs
from kseg.verify.findings import INFO, MISSING_INDEX
from kseg.verify.findings import Patch as PatchNeeded
from kseg.verify.partition import PartitionReport
from kseg.verify.segment import aborted_under

TRUNCATE, MOVE, REPLACE, CREATE = "truncate", "move", "replace", "create"
PATCH = "patch"
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
CRASH_ENV = (
    "KSEG_TEST_CRASH_AT"  # fault injection: exit at a named point (kill-during-repair tests)
)
MARKER_PREFIX = ".kseg-repair-"
STALL_ENV = "KSEG_TEST_STALL_AT"  # fault injection: stop at a named point until stdin closes

__all__ = [
    "Action",
    "Plan",
    "RepairError",
    "RepairFailed",
    "Quarantine",
    "plan_repair",
    "apply_plan",
    "resume",
    "incomplete_repairs",
    "default_quarantine_root",
]


class RepairError(KsegError):
    """The files changed in a way the manifest does not explain: stop, change nothing more."""


class MovedOn(RepairError):
    """(restore) The partition is no longer as the repair left it: a broker wrote to it since."""


class RepairFailed(KsegError):
    """A repair stopped. ``changed``: whether the partition was touched (then it is resumable)."""

    def __init__(self, message: str, qdir: Path | None, changed: bool) -> None:
        super().__init__(message)
        self.qdir, self.changed = qdir, changed


def default_quarantine_root(log_dir: Path) -> Path:
    log_dir = log_dir.resolve()
    return log_dir.parent / "kseg-quarantine" / log_dir.name


# --- action kinds ------------------------------------------------------------------------------


def _matches(path: Path, length: int | None, sha: str | None) -> bool:
    """Is ``path`` a regular file holding exactly the recorded bytes?"""
    try:
        return path.is_file() and not path.is_symlink() and sha256_file(path) == (length, sha)
    except OSError:
        return False


def _secure_copy(a: Action, q: Path, start: int, *, source_ok: bool) -> None:
    """Make ``q`` hold the action's bytes (copied from ``a.file`` at ``start``) unless it does."""
    if _matches(q, a.length, a.sha256):
        return
    if not source_ok:
        raise RepairError(
            f"{a.file}: changed since the repair was planned, and its quarantined copy {q} is "
            "missing or damaged; stopping"
        )
    try:
        atomic_copy(a.file, q, start, a.length, a.sha256)
    except CopyMismatch as exc:
        raise RepairError(f"{exc}; changed since the repair was planned") from None
    fsync_dir(q.parent)


class ActionKind:
    """How one kind of action is secured, applied, checked for restore and undone."""

    name = ""
    required: tuple[str, ...] = ()  # fields a manifest must give for this kind
    crash_point: str | None = None  # fault-injection name after applying all actions of the kind

    def quarantine_bytes(self, a: Action) -> int:
        """Bytes copied into the quarantine before any change."""
        return 0

    def moved_bytes(self, a: Action) -> int:
        """Bytes moved at change time (copied when the quarantine is on another filesystem)."""
        return 0

    def partition_bytes(self, a: Action) -> int:
        """Bytes written beside the file in the partition dir while applying (temp files)."""
        return 0

    def planned(self, a: Action) -> bool:
        """Is the file still exactly as the plan saw it?"""
        return True

    def secure(self, a: Action, q: Path | None) -> None:
        """Before any change: make sure the quarantine holds every byte this action removes."""

    def apply(self, a: Action, q: Path | None) -> None:
        """Carry the action out; a no-op if done before (resume)."""

    def record_after(self, a: Action) -> None:
        """At completion: note the state the repair left, for restore to check."""

    # restore side
    def restore_pending(self, a: Action, q: Path | None) -> bool:
        """True if the action still has to be undone, False if it is (or never was) applied;
        MovedOn if the file is in neither state."""
        return False

    def restore_bytes(self, a: Action, q: Path | None, cross_device: bool) -> int:
        return 0

    def undo(self, a: Action, q: Path | None) -> None:
        pass


class Patch(ActionKind):
    """Bytes outside the CRC written back in place (a flipped v2 magic, a leader epoch the
    checkpoint proves): the CRC over every other byte is the proof that only these are wrong.
    The old bytes live in the manifest (old_hex); nothing is quarantined."""

    name = PATCH
    required = ("position", "old_hex", "new_hex")
    crash_point = "patched"

    def _now(self, a: Action) -> bytes | None:
        try:
            with open(a.file, "rb") as f:
                f.seek(a.position)
                return f.read(len(bytes.fromhex(a.old_hex)))
        except OSError:
            return None

    def planned(self, a):
        return self._now(a) == bytes.fromhex(a.old_hex)

    def _write(self, a: Action, data: bytes) -> None:
        with open(a.file, "r+b") as f:
            f.seek(a.position)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def apply(self, a, q):
        now = self._now(a)
        if now == bytes.fromhex(a.new_hex):
            return  # done before a crash
        if now != bytes.fromhex(a.old_hex):
            raise RepairError(
                f"{a.file}: byte {a.position} holds {now.hex() if now else 'nothing'}, not the"
                f" planned {a.old_hex}; changed since the repair was planned"
            )
        self._write(a, bytes.fromhex(a.new_hex))

    def restore_pending(self, a, q):
        now = self._now(a)
        if now == bytes.fromhex(a.old_hex):
            return False
        if now == bytes.fromhex(a.new_hex):
            return True
        raise MovedOn(
            f"{a.file}: byte {a.position} holds {now.hex() if now else 'nothing'}, neither what"
            f" the repair found ({a.old_hex}) nor what it wrote ({a.new_hex}): the partition"
            " changed since the repair (did a broker run?)"
        )

    def undo(self, a, q):
        self._write(a, bytes.fromhex(a.old_hex))


class Truncate(ActionKind):
    name = TRUNCATE
    required = ("position", "length", "sha256", "quarantine_file")
    crash_point = "truncated"

    def quarantine_bytes(self, a):
        return a.length

    def planned(self, a):
        path = Path(a.file)
        try:
            size = path.stat().st_size
        except OSError:
            return False
        end = a.position + a.length
        return size == end and sha256_range(path, a.position, end) == a.sha256

    def secure(self, a, q):
        _secure_copy(a, q, a.position, source_ok=self.planned(a))

    def apply(self, a, q):
        path = Path(a.file)
        size = path.stat().st_size
        if size == a.position:
            return  # done before a crash
        if not self.planned(a):
            raise RepairError(
                f"{path}: changed since the repair was planned (size {size}); not truncating"
            )
        with open(path, "r+b") as f:
            f.truncate(a.position)
            f.flush()
            os.fsync(f.fileno())

    def restore_pending(self, a, q):
        path = Path(a.file)
        size = path.stat().st_size if path.exists() else None
        if size == a.position + a.length and self.planned(a):
            return False
        if not _matches(q, a.length, a.sha256):
            raise RepairError(f"{q}: missing, or does not match the manifest's sha256")
        if size == a.position:
            return True
        if (
            size is not None
            and a.position < size < a.position + a.length
            and sha256_range(path, a.position, size) == sha256_range(q, 0, size - a.position)
        ):
            return True  # an append-back cut short: its bytes are ours
        raise MovedOn(
            f"{path}: {size} bytes, but the repair left {a.position} (and the original had "
            f"{a.position + a.length}): the log changed since the repair (did a broker run?)"
        )

    def restore_bytes(self, a, q, cross_device):
        return a.length

    def undo(self, a, q):
        path = Path(a.file)
        with open(path, "r+b") as f, open(q, "rb") as src:
            f.truncate(a.position)  # drops only a cut-short append of our own (checked)
            f.seek(a.position)
            while chunk := src.read(1 << 20):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        if not self.planned(a):
            raise RepairError(
                f"{path}: appending the quarantined bytes back did not give the original"
            )


class Move(ActionKind):
    name = MOVE
    required = ("length", "sha256", "quarantine_file")
    crash_point = "moved"

    def moved_bytes(self, a):
        return a.length

    def planned(self, a):
        return _matches(Path(a.file), a.length, a.sha256)

    def apply(self, a, q):
        src = Path(a.file)
        if not src.exists():
            if _matches(q, a.length, a.sha256):
                return  # done before a crash
            raise RepairError(f"{src}: missing, and not in the quarantine either")
        if q.exists():
            if not _matches(q, a.length, a.sha256):
                raise RepairError(f"{q} exists and differs from {src}")
            src.unlink()  # a cross-device copy finished but the unlink did not
            fsync_dir(src.parent)
            return
        if src.stat().st_size != a.length:
            raise RepairError(f"{src}: changed since the repair was planned; not moving it")
        try:
            os.rename(src, q)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            try:  # the quarantine is on another filesystem: copy (checked), then unlink
                atomic_copy(src, q, 0, a.length, a.sha256)
            except CopyMismatch as exc2:
                raise RepairError(f"{exc2}; changed since the repair was planned") from None
            fsync_dir(q.parent)
            src.unlink()
        fsync_dir(q.parent)
        fsync_dir(src.parent)

    def restore_pending(self, a, q):
        path = Path(a.file)
        if path.exists():
            if _matches(path, a.length, a.sha256):
                return False
            raise MovedOn(
                f"{path}: exists with other bytes than the segment the repair moved away: the "
                "partition changed since the repair (did a broker run?)"
            )
        if not _matches(q, a.length, a.sha256):
            raise RepairError(
                f"{path}: not in place, and {q} is missing or does not match the manifest's sha256"
            )
        return True

    def restore_bytes(self, a, q, cross_device):
        return a.length if cross_device else 0

    def undo(self, a, q):
        path = Path(a.file)
        if os.stat(q).st_dev == os.stat(path.parent).st_dev:
            os.rename(q, path)
        else:
            atomic_copy(q, path, 0, a.length, a.sha256)
            fsync_dir(path.parent)
            q.unlink()
        fsync_dir(path.parent)
        fsync_dir(q.parent)


class Replace(ActionKind):
    """A file rewritten by a later step (index rebuild, epoch checkpoint): the old one is kept."""

    name = REPLACE
    required = ("length", "sha256", "quarantine_file")

    def quarantine_bytes(self, a):
        return a.length

    def partition_bytes(self, a):
        return a.length  # the rewritten file's temp copy, about as large

    def planned(self, a):
        return _matches(Path(a.file), a.length, a.sha256)

    def secure(self, a, q):
        _secure_copy(a, q, 0, source_ok=self.planned(a))

    def record_after(self, a):
        p = Path(a.file)
        a.after_length, a.after_sha256 = sha256_file(p) if p.exists() else (None, None)

    def restore_pending(self, a, q):
        path = Path(a.file)
        now = sha256_file(path) if path.exists() else None
        if now == (a.length, a.sha256):
            return False
        if not _matches(q, a.length, a.sha256):
            raise RepairError(f"{q}: missing, or does not match the manifest's sha256")
        if now is None:
            return True
        if a.after_sha256 is None or now == (a.after_length, a.after_sha256):
            return True
        raise MovedOn(
            f"{path}: differs from what the repair wrote: the partition changed since the "
            "repair (did a broker run?)"
        )

    def restore_bytes(self, a, q, cross_device):
        return a.length

    def undo(self, a, q):
        atomic_copy(q, a.file, 0, a.length, a.sha256)


class Create(ActionKind):
    """A file the repair created (a missing index): undone by deleting it, if still ours."""

    name = CREATE

    def record_after(self, a):
        p = Path(a.file)
        a.after_length, a.after_sha256 = sha256_file(p) if p.exists() else (None, None)

    def restore_pending(self, a, q):
        path = Path(a.file)
        if not path.exists():
            return False
        if a.after_sha256 is not None:
            if sha256_file(path) == (a.after_length, a.after_sha256):
                return True
        elif path.suffix in INDEX_SUFFIXES:
            return True  # an older manifest: an index is always rebuildable from its log
        raise MovedOn(
            f"{path}: differs from what the repair created: the partition changed since the "
            "repair (did a broker run?)"
        )

    def undo(self, a, q):
        Path(a.file).unlink(missing_ok=True)
        fsync_dir(Path(a.file).parent)


# applied in this order (truncations before moves, as Kafka's recovery); undone in reverse
ACTIONS: dict[str, ActionKind] = {
    k.name: k for k in (Patch(), Truncate(), Move(), Replace(), Create())
}


def kind_of(a: Action) -> ActionKind:
    try:
        return ACTIONS[a.action]
    except KeyError:
        raise ManifestError(f"{a.file}: unknown action {a.action!r}") from None


def check_actions(m: Manifest, where: Path) -> None:
    """Every action of a loaded manifest is of a known kind and gives what that kind needs."""
    for a in m.actions:
        kind = kind_of(a)
        missing = [f for f in kind.required if getattr(a, f) is None]
        if missing:
            raise ManifestError(f"{where}: {a.action} of {a.file} lacks {', '.join(missing)}")


def check_plan_covers_writes(m: Manifest, where: Path) -> None:
    """Every file a repair rewrites outside its actions (indexes of rebuilt logs, the
    leader-epoch checkpoint) is an action too, so its old bytes are quarantined first. A
    manifest kseg wrote always satisfies this; a hand-written one must, to be resumed."""
    named = {a.file for a in m.actions if a.action in (REPLACE, CREATE)}
    truncated = {a.file for a in m.actions if a.action == TRUNCATE}
    for log in m.rebuild_logs:  # the rebuild writes only named files; a cut log needs both
        if log not in truncated:
            continue
        for suffix in (".index", ".timeindex"):
            if str(Path(log).with_suffix(suffix)) not in named:
                raise ManifestError(
                    f"{where}: rebuilds {log} but does not quarantine its {suffix} first"
                )
    epochs = str(m.partition_dir / "leader-epoch-checkpoint")
    if m.epoch_truncate_to is not None and epochs not in named:
        raise ManifestError(f"{where}: rewrites {epochs} but does not quarantine it first")
    if m.reset_to is not None and Path(epochs).exists() and epochs not in named:
        raise ManifestError(f"{where}: clears {epochs} but does not quarantine it first")


def qfile(qdir: Path, a: Action) -> Path | None:
    return quarantine_file(qdir, a.quarantine_file) if a.quarantine_file else None


# --- planning ------------------------------------------------------------------------------------


def plan_repair(
    report: PartitionReport,
    *,
    keep_later_segments: bool = False,
    index_interval_bytes: int = 4096,
    kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
) -> Plan:
    """What a repair of ``report``'s partition would do. Paths are absolute and resolved: a
    manifest must mean the same files whatever directory a later command runs in."""
    pdir = report.target.partition_dir.resolve()
    plan = Plan(
        pdir,
        index_interval_bytes=index_interval_bytes,
        kafka_version=None if kafka_version == DEFAULT_KAFKA_VERSION else str(kafka_version),
    )
    first = report.first_corrupt
    if first is not None and report.scans[first].log in report.recovered_at_load:
        # LogLoader.loadSegmentFiles -> recoverSegment cuts this segment while loading, on every
        # start, and deletes no later segment: they stay (an offset gap is legal), each later
        # corrupt one handled on its own, as with --keep-later-segments
        keep_later_segments = True
    if report.reset_to(keep_later_segments=keep_later_segments) is not None:
        return _plan_reset(report, plan, keep_later_segments)
    rebuild: list[Path] = []
    later_why = _later_segment_reason(report) if first is not None else {}
    for i, scan in enumerate(report.scans):
        log = pdir / scan.log.name
        moved = first is not None and i > first and not keep_later_segments
        if not moved:
            plan.actions.extend(_patch_action(pdir, p) for p in scan.patches)
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
                        sha256=sha256_range(log, scan.valid_bytes, scan.size),
                        quarantine_file=f"{log.name}.tail-at-{scan.valid_bytes}",
                    )
                )
            rebuild.append(log)
        elif moved:
            for p in [log] + [log.with_suffix(s) for s in INDEX_SUFFIXES]:
                if p.exists():
                    why = (
                        f"segment after the truncation point (offset {scan.base_offset}); "
                        + later_why.get(i, later_why[None])
                    )
                    plan.actions.append(_whole_file(MOVE, p, why))
        elif index_problem(scan):
            rebuild.append(log)
    end = report.log_end_offset
    if first is not None and end is not None:
        if not keep_later_segments:
            for p in sorted(pdir.iterdir()):
                k = F.file_kind(p)
                if k.kind == F.SNAPSHOT and not k.temp_suffix and k.base_offset > end:
                    why = f"producer snapshot past the new log end {end}"
                    plan.actions.append(_whole_file(MOVE, p, why))
        epochs = pdir / "leader-epoch-checkpoint"
        if epochs.exists() and not keep_later_segments:
            try:
                entries = cp.read_leader_epoch_checkpoint(epochs.read_bytes())
            except (OSError, CorruptionError):  # an unreadable checkpoint is left for Kafka
                entries = []
            if any(e.start_offset >= end for e in entries):
                plan.epoch_truncate_to = end
                why = f"leader epochs starting at or past the new log end {end}"
                plan.actions.append(_whole_file(REPLACE, epochs, why))
    plan.rebuild_logs = [str(p) for p in rebuild]
    by_log = {pdir / s.log.name: s for s in report.scans}
    if report.txns_replayed:  # the scans hold what a rebuild would write: carry it
        plan.rebuilt = {str(p): rebuilt_indexes(by_log[p], kafka_version) for p in rebuild}
    for log in rebuild:
        for p in _indexes_to_write(log, by_log[log], plan.rebuilt.get(str(log))):
            if p.exists():
                plan.actions.append(_whole_file(REPLACE, p, "index rebuilt from the log"))
            else:
                plan.actions.append(Action(CREATE, str(p), "index rebuilt from the log"))
    return plan


def _later_segment_reason(report: PartitionReport) -> dict[int | None, str]:
    """What Kafka does to each segment the repair moves because it follows kseg's truncation
    point (by index in scans; None: any other), as kafka_recovery predicts it: LogLoader.recoverLog
    deletes the segments after the one it truncates (or empties); one it does not reach (below
    the recovery point), or whose bad batch it keeps (offsets it accepts, a CRC-valid invalid
    batch), it keeps, with everything after it."""
    from kseg.verify.kafka_outcome import UNCLEAN, kafka_recovery

    scans = report.scans
    first = report.first_corrupt
    outcome = kafka_recovery(report)
    actions = outcome["actions"] if outcome is not None else []
    files = {str(s.log): i for i, s in enumerate(scans)}
    keep = "kseg quarantines it so the log ends at its last valid batch; --keep-later-segments keeps it"
    out: dict[int | None, str] = {}
    cut = None
    for a in actions:
        if a["action"] in ("truncate", "empty_segment") and a["when"] == UNCLEAN:
            cut = files.get(a["file"])
    if cut is not None:
        for i in range(cut + 1, len(scans)):
            out[i] = "Kafka's recovery deletes it"
        if cut > first:
            out[cut] = "Kafka's recovery truncates it and deletes the segments after it; " + keep
    mine = [a for a in actions if a.get("file") == str(scans[first].log)]
    kinds = {a["action"]: a for a in mine}
    if any(a["action"] == "fail_to_start" for a in actions):
        why = "Kafka would not start on this log (see kafka_recovery)"
    elif "keep_corrupt_batch" in kinds:
        rp = kinds["keep_corrupt_batch"].get("recovery_point")
        why = (
            "Kafka would keep it (its recovery does not reach the corrupt batch, below the"
            f" recovery point {rp})"
        )
    elif "keep_invalid_batch" in kinds:
        why = (
            "Kafka would keep it (its recovery keeps the CRC-valid batch whose records_count or"
            " last_offset_delta contradicts its offsets)"
        )
    elif "keep_bad_offsets" in kinds:
        why = "Kafka would keep it (its recovery keeps the batch whose offsets go backwards)"
    else:
        why = "Kafka would keep it"
    out[None] = f"{why}, {keep}"
    return out


def _indexes_to_write(log: Path, scan, rebuilt) -> list[Path]:
    """The index files of a rebuilt log that the rebuild changes; only those are quarantined
    and written. A truncated log gets all of them; otherwise an index verify found wrong or
    missing, and a .txnindex whose rebuilt bytes differ (unknown: written). An identical or
    equivalent index is no problem verify reported, and nothing is lost by leaving it."""
    truncated = scan.corrupt and scan.valid_bytes < scan.size
    out = []
    for suffix, status in ((".index", scan.offset_index), (".timeindex", scan.time_index)):
        if truncated or status is None or status.status in ("wrong", "missing"):
            out.append(log.with_suffix(suffix))
    txn = log.with_suffix(".txnindex")
    if rebuilt is None or truncated:
        if txn.exists():
            out.append(txn)
    elif (rebuilt.aborted or txn.exists()) and (
        not txn.exists() or read_file(txn) not in _txn_rules_bytes(scan, rebuilt)
    ):
        out.append(txn)
    return out


def _txn_rules_bytes(scan, rebuilt) -> set[bytes]:
    """The `.txnindex` bytes any Kafka release's rule writes for the scanned log (the chosen
    one's, and 0.11-2.7's and 2.8+'s): a file one of them wrote is kept, not rewritten."""
    return {encode_txn(rebuilt.aborted)} | {
        encode_txn(aborted_under(scan, empty)) for empty in (False, True)
    }


def index_problem(scan) -> bool:
    """An index verify reports as a problem: wrong, or missing beside an inactive segment. A
    missing index of the active segment is an info finding (Kafka creates it at startup), so
    the repair leaves it alone: a repair changes only what verify calls a problem."""
    if any(st is not None and st.status == "wrong" for st in (scan.offset_index, scan.time_index)):
        return True
    return any(f.kind == MISSING_INDEX and f.severity != INFO for f in scan.findings)


def _patch_action(pdir: Path, p: PatchNeeded) -> Action:
    return Action(
        PATCH,
        str(pdir / Path(p.file).name),
        p.reason,
        position=p.position,
        length=len(p.old),
        old_hex=p.old.hex(),
        new_hex=p.new.hex(),
    )


def _plan_reset(report: PartitionReport, plan: Plan, keep_later: bool) -> Plan:
    """Kafka's LogLoader (deleteSegmentsIfLogStartGreaterThanLogEnd), when the log after
    recovery ends below log-start-offset-checkpoint: every segment deleted
    (removeAndDeleteSegmentsAsync), the leader-epoch cache cleared (clearAndFlush), producer
    state truncated (truncateFullyAndStartAt deletes every snapshot), and one empty segment
    created at the log start offset. kseg moves every removed file into the quarantine."""
    pdir = plan.partition_dir
    start = report.reset_to(keep_later_segments=keep_later)
    why = (
        f"the log would end at {report.end_after_repair(keep_later_segments=keep_later)}, below"
        f" its log start offset {start} (log-start-offset-checkpoint): Kafka deletes every segment"
    )
    for p in sorted(pdir.iterdir()):
        k = F.file_kind(p)
        if not p.is_file() or k.temp_suffix:
            continue
        if k.kind in (F.LOG, F.INDEX, F.TIME_INDEX, F.TXN_INDEX, F.SNAPSHOT):
            plan.actions.append(_whole_file(MOVE, p, why))
    epochs = pdir / "leader-epoch-checkpoint"
    if epochs.is_file():
        plan.actions.append(_whole_file(REPLACE, epochs, "leader epochs cleared, as Kafka does"))
    for suffix in (".log", ".index", ".timeindex"):
        plan.actions.append(
            Action(
                CREATE,
                str(pdir / F.segment_file_name(start, suffix)),
                f"one empty segment at the log start offset {start}, as Kafka creates it",
            )
        )
    plan.reset_to = start
    return plan


def _whole_file(action: str, path: Path, reason: str) -> Action:
    """An action on a whole file (moved, or replaced after a copy): its size and sha256 now."""
    size, sha = sha256_file(path)
    return Action(action, str(path), reason, length=size, sha256=sha, quarantine_file=path.name)


# --- applying ------------------------------------------------------------------------------------


def fault_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os._exit(99)
    if os.environ.get(STALL_ENV) == name:
        import sys

        sys.stderr.write(f"kseg: stalled at {name}\n")
        sys.stderr.flush()
        sys.stdin.read()  # until the test closes our stdin


class Quarantine:
    """One run's quarantine under ``root``: the run dir is made when the first partition needs it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.run_dir: Path | None = None

    def partition_dir(self, partition: str) -> Path:
        if self.run_dir is None or not self.run_dir.is_dir():
            self.run_dir = new_run_dir(self.root)
        return new_partition_dir(self.run_dir, partition)


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
    _run(qdir, plan)
    return qdir


def _run(qdir: Path, m: Manifest) -> None:
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
        _remove_marker(m.partition_dir, qdir)
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
        entries = cp.read_leader_epoch_checkpoint(path.read_bytes())
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
    _remove_marker(m.partition_dir, qdir)


# --- resuming ------------------------------------------------------------------------------------


def marker_path(partition_dir: Path) -> Path:
    """``<log.dir>/.kseg-repair-<partition>``: names the quarantine dir of a repair that has begun
    changing the partition, until it completes. A resume finds it from the partition itself,
    wherever the quarantine is; Kafka ignores plain files in a log dir."""
    return partition_dir.parent / f"{MARKER_PREFIX}{partition_dir.name}"


def _remove_marker(partition_dir: Path, qdir: Path) -> None:
    marker = marker_path(partition_dir)
    try:
        if Path(marker.read_text().strip()) == qdir.absolute():
            marker.unlink()
            fsync_dir(marker.parent)
    except OSError:
        pass


UNFINISHED = (*INCOMPLETE, RESTORING)


def unfinished_work(
    quarantine_roots: list[Path],
    partition_dir: Path,
    cache: dict[Path, list[tuple[Path, str]]] | None = None,
) -> list[tuple[Path, str]]:
    """(quarantine dir, status) of every repair of ``partition_dir`` that did not finish
    (in_progress, failed) and every restore of it that did not (restoring): the repair the
    partition's marker names, and any under ``quarantine_roots``.

    The partition is matched by its real identity (resolved path, or device and inode), never
    by how a path was spelled on the command line. ``cache`` keeps each root's unfinished
    manifests across the partitions of one run (a root is scanned once). Call it holding the
    log dir's lock: it removes a stale marker.
    """
    cache = {} if cache is None else cache
    candidates: list[tuple[Path, str]] = []
    try:
        named = Path(marker_path(partition_dir).read_text().strip())
    except (OSError, ValueError):
        named = None
    if named is not None:
        status, pdir, _ = peek_status(named) if named.is_absolute() else (None, None, None)
        if status in UNFINISHED and pdir:
            candidates.append((named, pdir))
        elif status not in UNFINISHED:  # stale: killed between completing and removing it
            marker_path(partition_dir).unlink(missing_ok=True)
    for root in quarantine_roots:
        key = root.absolute()
        if key not in cache:
            cache[key] = []
            for qdir in manifest_dirs(key):
                status, pdir, _ = peek_status(qdir)
                if status in UNFINISHED and pdir:
                    cache[key].append((qdir, pdir))
        candidates.extend(cache[key])
    out, seen = [], set()
    for qdir, pdir in candidates:
        real = qdir.resolve()
        if real in seen or not same_partition(pdir, partition_dir):
            continue
        status = peek_status(qdir)[0]  # now: it may have finished since the cache was made
        if status in UNFINISHED:
            seen.add(real)
            out.append((qdir, status))
    return out


def incomplete_repairs(quarantine_roots: list[Path], partition_dir: Path) -> list[Path]:
    """Quarantine dirs of the unfinished repairs of ``partition_dir`` (see unfinished_work)."""
    return [
        q for q, status in unfinished_work(quarantine_roots, partition_dir) if status in INCOMPLETE
    ]


def resume(qdir: Path) -> Manifest | None:
    """Finish an interrupted repair. None if it had not begun changing the partition and the
    partition changed since it was planned: its quarantine is dropped and the caller plans anew.
    """
    try:
        m = load(qdir)
        check_actions(m, qdir)
        check_plan_covers_writes(m, qdir)
    except ManifestError as exc:
        raise RepairFailed(f"cannot resume: {exc}", qdir, True) from None
    remove_stale_temps(qdir)
    remove_stale_temps(m.partition_dir)
    if not m.changes_started and not all(kind_of(a).planned(a) for a in m.actions):
        remove_quarantine_dir(qdir)
        return None
    _run(qdir, m)
    return m
