"""The kinds of repair action: each one class saying what it quarantines, how it is applied,
and how restore checks and undoes it; a new kind of repair is a new class in ACTIONS. Applied in
ACTIONS' order by kseg.repair.apply, undone in reverse by kseg.repair.restore."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from kseg.repair.errors import MovedOn, RepairError
from kseg.repair.manifest import Action, Manifest, ManifestError, quarantine_file
from kseg.storage.atomic import (
    CopyMismatch,
    atomic_copy,
    fsync_dir,
    sha256_file,
    sha256_range,
)
from kseg.storage.links import open_rw

TRUNCATE, MOVE, REPLACE, CREATE = "truncate", "move", "replace", "create"


PATCH = "patch"
REWRITE = "rewrite"
PUT_BACK = "put_back"


INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


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


def _original_pending(a: Action, q: Path, writer: str) -> bool:
    """Does restoring the original copy of ``a.file`` (kept whole in the quarantine) still have
    work to do? Raises when the file holds neither the original nor what ``writer`` wrote."""
    path = Path(a.file)
    now = sha256_file(path) if path.exists() else None
    if now == (a.length, a.sha256):
        return False
    if not _matches(q, a.length, a.sha256):
        raise RepairError(f"{q}: missing, or does not match the manifest's sha256")
    if now is None or a.after_sha256 is None or now == (a.after_length, a.after_sha256):
        return True
    raise MovedOn(
        f"{path}: differs from what the {writer} wrote: the partition changed since the "
        f"{writer} (did a broker run?)"
    )


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
        with os.fdopen(open_rw(a.file), "r+b") as f:  # never through a symlink
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


def _edits(a: Action) -> list[tuple[int, bytes]]:
    return [(pos, bytes.fromhex(new)) for pos, _, new in a.edits or []]


class Rewrite(ActionKind):
    """A `.log` rewritten without its unreadable byte ranges (kseg salvage): the whole original
    is quarantined first, the new file is spliced from that copy (``keep`` ranges, ``edits``
    inside them) to a temp file and renamed over the original; its size and sha256 are planned
    (after_length, after_sha256) and checked before the rename. Restore copies the original back."""

    name = REWRITE
    required = ("length", "sha256", "quarantine_file", "keep", "after_length", "after_sha256")
    crash_point = "rewritten"

    def quarantine_bytes(self, a):
        return a.length

    def partition_bytes(self, a):
        return a.after_length or 0

    def planned(self, a):
        return _matches(Path(a.file), a.length, a.sha256)

    def secure(self, a, q):
        _secure_copy(a, q, 0, source_ok=self.planned(a))

    def apply(self, a, q):
        from kseg.storage.splice import SpliceMismatch, write_splice

        if _matches(Path(a.file), a.after_length, a.after_sha256):
            return  # done before a crash
        if not self.planned(a):
            raise RepairError(f"{a.file}: changed since the salvage was planned; not rewriting it")
        if not _matches(q, a.length, a.sha256):
            raise RepairError(f"{q}: missing, or does not match the manifest's sha256")
        keep = [(s, e) for s, e in a.keep]
        try:
            write_splice(q, a.file, keep, _edits(a), (a.after_length, a.after_sha256))
        except SpliceMismatch as exc:
            raise RepairError(str(exc)) from None

    # restore: as a replaced file's (the original copied back), through the shared functions
    def restore_pending(self, a, q):
        return _original_pending(a, q, "salvage")

    def restore_bytes(self, a, q, cross_device):
        return a.length

    def undo(self, a, q):
        atomic_copy(q, a.file, 0, a.length, a.sha256)


class PutBack(ActionKind):
    """A new `.log` (kseg salvage from leftovers): spliced from ``source`` (an earlier run's
    quarantined bytes or a `.log.deleted`, checked against ``length``/``sha256``; only read)
    with its ``keep`` ranges and ``edits`` to a temp file, checked against after_length and
    after_sha256, renamed in. Nothing is removed, so nothing is quarantined; restore deletes
    the file if it still holds what was written."""

    name = PUT_BACK
    required = ("length", "sha256", "source", "keep", "after_length", "after_sha256")
    crash_point = "put_back"

    def partition_bytes(self, a):
        return a.after_length or 0

    def planned(self, a):
        return not Path(a.file).exists()

    def apply(self, a, q):
        from kseg.storage.splice import SpliceMismatch, write_splice

        path = Path(a.file)
        if _matches(path, a.after_length, a.after_sha256):
            return  # done before a crash
        if path.exists() or path.is_symlink():
            raise RepairError(f"{path}: appeared since the salvage was planned; not writing it")
        if not _matches(Path(a.source), a.length, a.sha256):
            raise RepairError(f"{a.source}: missing, or changed since the salvage was planned")
        try:
            write_splice(Path(a.source), path, [(s, e) for s, e in a.keep], _edits(a),
                         (a.after_length, a.after_sha256))  # fmt: skip
        except SpliceMismatch as exc:
            raise RepairError(str(exc)) from None
        fsync_dir(path.parent)

    def restore_pending(self, a, q):
        path = Path(a.file)
        if not path.exists():
            return False
        if _matches(path, a.after_length, a.after_sha256):
            return True
        raise MovedOn(
            f"{path}: differs from what the salvage wrote: the partition changed since the "
            "salvage (did a broker run?)"
        )

    def undo(self, a, q):
        Path(a.file).unlink(missing_ok=True)
        fsync_dir(Path(a.file).parent)


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
        with os.fdopen(open_rw(path), "r+b") as f:  # never through a symlink
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
        with os.fdopen(open_rw(path), "r+b") as f, open(q, "rb") as src:
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
        return _original_pending(a, q, "repair")

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
    k.name: k for k in (Patch(), Rewrite(), Truncate(), Move(), PutBack(), Replace(), Create())
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
    truncated = {a.file for a in m.actions if a.action in (TRUNCATE, REWRITE)}
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
