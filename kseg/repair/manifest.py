"""A repair's manifest and its quarantine layout, and the checks that make a manifest harmless.

Layout: ``<quarantine root>/<run>/<partition>/`` holds ``manifest.json`` and the quarantined files
of one partition; ``<run>`` (a UTC time stamp) groups every partition one ``verify --repair``
touched, so ``kseg restore <run>`` undoes the whole run.

A manifest is read back by ``verify --repair`` (to resume) and by ``restore``, and either may be
given one that someone wrote by hand. Loading it therefore checks every path: the partition dir
must be an absolute, symlink-free path to a directory named like a partition, every file it acts
on must be a Kafka segment, index or checkpoint name directly inside that directory, and every
quarantined file a plain relative name inside the quarantine dir. Bytes are checked against the
recorded sha256 where they are used.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

from kseg.format.accumulator import Accumulator
from kseg.format.errors import KsegError
from kseg.storage import files as F
from kseg.storage.atomic import atomic_write, fsync_dir

MANIFEST = "manifest.json"
VERSION = 2
# statuses: a repair is in_progress (or failed: stopped by an error) until complete; a restore
# makes it restoring, then restored
IN_PROGRESS, FAILED, COMPLETE = "in_progress", "failed", "complete"
RESTORING, RESTORED = "restoring", "restored"
INCOMPLETE = (IN_PROGRESS, FAILED)

# the files a manifest may name: what a repair can truncate, move, replace or create
ACTABLE_KINDS = frozenset(
    {
        F.LOG,
        F.KAFKA07,  # a Kafka 0.7 segment: truncated or moved like a .log
        F.INDEX,
        F.TIME_INDEX,
        F.TXN_INDEX,
        F.SNAPSHOT,
        F.LEADER_EPOCH_CHECKPOINT,
        F.PARTITION_METADATA,
    }
)


class ManifestError(KsegError):
    """A manifest that cannot be trusted or used: nothing is touched."""


class Action(Accumulator):
    """One change of a repair. Not a value: the repair records the file it left (after_length,
    after_sha256) and the restore its progress (restored) on the action, then saves the
    manifest; so a plain class."""

    __slots__ = ("action", "file", "reason", "position", "length", "sha256", "quarantine_file")
    __slots__ += ("after_length", "after_sha256", "old_hex", "new_hex", "restored")
    __slots__ += ("keep", "edits", "source")

    def __init__(
        self,
        action: str,
        file: str,
        reason: str,
        position: int | None = None,
        length: int | None = None,
        sha256: str | None = None,
        quarantine_file: str | None = None,
        after_length: int | None = None,
        after_sha256: str | None = None,
        old_hex: str | None = None,
        new_hex: str | None = None,
        restored: bool = False,
        keep: list[list[int]] | None = None,
        edits: list[list] | None = None,
        source: str | None = None,
    ) -> None:
        self.action = action  # truncate | move | replace | create (see repair.ACTIONS)
        self.file = file  # absolute path inside the partition dir
        self.reason = reason
        self.position = position  # truncate: the new size
        self.length = length  # bytes removed, moved or replaced
        self.sha256 = sha256  # of those bytes
        self.quarantine_file = quarantine_file  # relative to the partition's quarantine dir
        self.after_length = after_length  # replace/create: the file as the repair left it
        self.after_sha256 = after_sha256
        self.old_hex = old_hex  # patch: the bytes found at position (restore writes them back)
        self.new_hex = new_hex  # patch: the bytes written there
        self.restored = restored  # progress of a restore (information: restore checks the files)
        # rewrite (kseg salvage): the [start, end) byte ranges of the original kept, in order,
        # and [position, old_hex, new_hex] edits inside them (bytes outside the CRC)
        self.keep = keep
        self.edits = edits
        # put_back (kseg salvage --from-quarantine/--include-deleted): the file the new segment
        # is spliced from (an earlier run's quarantined .log, a .log.deleted), read only
        self.source = source

    def as_dict(self) -> dict:
        """Every field by name, in order: the manifest's JSON object for this action (a
        rewrite's ``keep`` and ``edits``, a put_back's ``source``, only where they are given)."""
        d = {name: getattr(self, name) for name in self.__slots__}
        for name in ("keep", "edits", "source"):
            if d[name] is None:
                del d[name]
        return d

    def to_event(self, dry_run: bool) -> dict:
        d = self.as_dict()
        del d["after_length"], d["after_sha256"], d["restored"]
        return {"type": "repair_action", "dry_run": dry_run, **d}


class Manifest(Accumulator):
    """A repair's plan, then its record: the repair and restore fill it in and save it as they
    go (status, changes_started, actions restored), so a plain class, not a value."""

    __slots__ = ("partition_dir", "actions", "rebuild_logs", "epoch_truncate_to")
    __slots__ += ("index_interval_bytes", "kafka_version", "status", "reset_to", "run", "created")
    __slots__ += ("changes_started", "error", "after_logs", "rebuilt", "version")

    def __init__(
        self,
        partition_dir: Path,
        actions: list[Action] | None = None,
        rebuild_logs: list[str] | None = None,
        epoch_truncate_to: int | None = None,
        index_interval_bytes: int = 4096,
        kafka_version: str | None = None,
        status: str = IN_PROGRESS,
        reset_to: int | None = None,
        run: str | None = None,
        created: str | None = None,
        changes_started: bool = False,
        error: str | None = None,
        after_logs: dict[str, int] | None = None,
        rebuilt: dict | None = None,
        version: int = VERSION,
    ) -> None:
        self.partition_dir = partition_dir
        self.actions = [] if actions is None else actions
        self.rebuild_logs = [] if rebuild_logs is None else rebuild_logs
        self.epoch_truncate_to = epoch_truncate_to
        self.index_interval_bytes = index_interval_bytes
        self.kafka_version = kafka_version  # --kafka-version (None: the newest): its index rules
        self.status = status
        # the log ends below its log start offset: every segment goes and one empty segment is
        # created at this offset (Kafka's LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd)
        self.reset_to = reset_to
        self.run = run
        self.created = (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) if created is None else created
        )
        self.changes_started = changes_started  # set (and fsynced) before the first change
        self.error = error
        self.after_logs = after_logs  # live .log name -> size when the repair completed
        # in memory only, never in the manifest: rebuild_logs' indexes as the verify scan built
        # them (.log path -> RebuiltIndexes); a resumed repair, which has none, rescans
        self.rebuilt = {} if rebuilt is None else rebuilt
        self.version = version

    @property
    def log_dir(self) -> Path:
        return self.partition_dir.parent

    @property
    def empty(self) -> bool:
        return not self.actions and not self.rebuild_logs

    def to_json(self) -> bytes:
        doc = {
            "version": self.version,
            "tool": "kseg",
            "status": self.status,
            "run": self.run,
            "created": self.created,
            "log_dir": str(self.log_dir),
            "partition_dir": str(self.partition_dir),
            "changes_started": self.changes_started,
            "error": self.error,
            "index_interval_bytes": self.index_interval_bytes,
            "kafka_version": self.kafka_version,
            "rebuild_logs": self.rebuild_logs,
            "epoch_truncate_to": self.epoch_truncate_to,
            "reset_to": self.reset_to,
            "after_logs": self.after_logs,
            "actions": [a.as_dict() for a in self.actions],
        }
        return json.dumps(doc, indent=2).encode() + b"\n"


Plan = Manifest  # a plan is a manifest not yet written


def save(qdir: Path, m: Manifest) -> None:
    atomic_write(qdir / MANIFEST, m.to_json())


# --- loading, with every path checked ------------------------------------------------------


def load(qdir: Path, *, base_dir: Path | None = None) -> Manifest:
    """Read and check ``qdir/manifest.json``; ManifestError names what is wrong.

    ``base_dir`` resolves the relative paths an older kseg recorded (the directory it ran in).
    """
    where = qdir / MANIFEST
    try:
        doc = json.loads(where.read_bytes())
    except OSError as exc:
        raise ManifestError(f"{where}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ManifestError(f"{where}: not a kseg manifest (invalid JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("tool") != "kseg" or "partition_dir" not in doc:
        raise ManifestError(f"{where}: not a kseg manifest")
    try:
        return _from_doc(doc, where, base_dir)
    except (KeyError, TypeError, ValueError) as exc:
        raise ManifestError(f"{where}: malformed manifest ({type(exc).__name__}: {exc})") from None


def _from_doc(doc: dict, where: Path, base_dir: Path | None) -> Manifest:
    for key in ("partition_dir", "status"):
        if not isinstance(doc.get(key), str):
            raise ManifestError(f"{where}: {key} is missing or not a string")
    if "log_dir" in doc and not isinstance(doc["log_dir"], str):
        raise ManifestError(f"{where}: log_dir is not a string")
    rebuild_raw = doc.get("rebuild_logs") or []
    if not isinstance(rebuild_raw, list) or not all(isinstance(p, str) for p in rebuild_raw):
        raise ManifestError(f"{where}: rebuild_logs is not a list of paths")
    raw_pdir = Path(doc["partition_dir"])
    if not raw_pdir.is_absolute():
        if base_dir is None:
            raise ManifestError(
                f"{where}: records the relative path '{raw_pdir}' (written by an older kseg); "
                "pass --base-dir with the directory the repair was run from"
            )
        base = base_dir.resolve()
    else:
        base = None

    def absolute(p: str) -> Path:
        path = Path(p)
        if not path.is_absolute():
            if base is None:
                raise ManifestError(f"{where}: mixes relative and absolute paths ('{p}')")
            path = base / path
        if ".." in path.parts or Path(os.path.normpath(path)) != path:
            raise ManifestError(f"{where}: '{p}' is not a plain path (no '..', no '.')")
        return path

    pdir = absolute(doc["partition_dir"])
    if F.parse_partition_dir(pdir.name) is None:
        raise ManifestError(f"{where}: '{pdir}' is not named like a partition dir (<topic>-<n>)")
    if not pdir.is_dir():
        raise ManifestError(f"{where}: partition dir {pdir} does not exist")
    if pdir.resolve() != pdir:
        raise ManifestError(
            f"{where}: partition dir {pdir} is now reached through a symlink ({pdir.resolve()}); "
            "kseg only acts on the real path a manifest recorded"
        )
    if "log_dir" in doc and absolute(doc["log_dir"]) != pdir.parent:
        raise ManifestError(f"{where}: log_dir is not the partition dir's parent")
    actions = []
    allowed = set(Action.__slots__)
    if not isinstance(doc["actions"], list):
        raise ManifestError(f"{where}: actions is not a list")
    for raw in doc["actions"]:
        if not isinstance(raw, dict):
            raise ManifestError(f"{where}: an action is not an object")
        a = Action(**{k: v for k, v in raw.items() if k in allowed})
        if not isinstance(a.action, str) or not isinstance(a.file, str):
            raise ManifestError(f"{where}: an action lacks its kind or file")
        if a.quarantine_file is not None and not isinstance(a.quarantine_file, str):
            raise ManifestError(f"{where}: {a.file}: quarantine_file is not a name")
        a.file = str(absolute(a.file))
        partition_file(pdir, a.file, where)
        if a.quarantine_file is not None:
            quarantine_name(a.quarantine_file, where)
        for name in ("position", "length", "after_length"):
            v = getattr(a, name)
            if v is not None and (not isinstance(v, int) or v < 0):
                raise ManifestError(f"{where}: {a.file}: {name} {v!r} is not a size")
        actions.append(a)
    after_logs = doc.get("after_logs")
    if after_logs is not None and not (
        isinstance(after_logs, dict)
        and all(isinstance(k, str) and isinstance(v, int) for k, v in after_logs.items())
    ):
        raise ManifestError(f"{where}: after_logs is not a map of segment names to sizes")
    epoch = doc.get("epoch_truncate_to")
    if epoch is not None and not isinstance(epoch, int):
        raise ManifestError(f"{where}: epoch_truncate_to {epoch!r} is not an offset")
    reset_to = doc.get("reset_to")
    if reset_to is not None and (not isinstance(reset_to, int) or reset_to < 0):
        raise ManifestError(f"{where}: reset_to {reset_to!r} is not an offset")
    for a in actions:
        if a.old_hex is None and a.new_hex is None:
            continue
        try:  # a patch rewrites at most 4 bytes of a .log, and only bytes it finds as old_hex
            old, new = bytes.fromhex(a.old_hex), bytes.fromhex(a.new_hex)
        except (TypeError, ValueError):
            raise ManifestError(f"{where}: {a.file}: old_hex/new_hex are not hex") from None
        # (8: a lying baseOffset kseg salvage proves from the batches around it)
        if not 0 < len(old) == len(new) <= 8 or F.file_kind(a.file).kind != F.LOG:
            raise ManifestError(f"{where}: {a.file}: a patch is 1 to 8 bytes of a .log")
    for a in actions:
        if a.keep is not None or a.edits is not None:
            _check_splice(a, where)
        if a.source is not None:
            _check_source(a, where)
    for a in actions:
        if not all(isinstance(v, str | None) for v in (a.sha256, a.after_sha256, a.reason)):
            raise ManifestError(f"{where}: {a.file}: sha256 and reason must be strings")
    rebuild = [str(absolute(p)) for p in rebuild_raw]
    for p in rebuild:
        partition_file(pdir, p, where)
    return Manifest(
        partition_dir=pdir,
        actions=actions,
        rebuild_logs=rebuild,
        epoch_truncate_to=epoch,
        reset_to=reset_to,
        index_interval_bytes=int(doc.get("index_interval_bytes", 4096)),
        kafka_version=_kafka_version(doc.get("kafka_version"), where),
        status=doc["status"],
        run=doc.get("run"),
        created=doc.get("created", ""),
        # a version-1 manifest was written after the copies, right before the first change
        changes_started=bool(doc.get("changes_started", doc.get("version", 1) < 2)),
        error=doc.get("error"),
        after_logs=after_logs,
        version=int(doc.get("version", 1)),
    )


def _check_splice(a: Action, where: Path) -> None:
    """A rewrite's ranges are rising byte ranges of its .log, its edits 1 to 8 hex bytes each
    inside them (a hand-written manifest may say anything)."""
    if F.file_kind(a.file).kind != F.LOG or not isinstance(a.keep, list):
        raise ManifestError(f"{where}: {a.file}: a rewrite keeps byte ranges of a .log")
    at = 0
    for r in a.keep:
        if not (
            isinstance(r, list)
            and len(r) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in r)
            and at <= r[0] < r[1]
            and (a.length is None or r[1] <= a.length)
        ):
            raise ManifestError(f"{where}: {a.file}: keep {r!r} is not a rising byte range")
        at = r[1]
    for e in a.edits or []:
        try:
            pos, old, new = e
            ok = isinstance(pos, int) and pos >= 0 and 0 < len(bytes.fromhex(old)) <= 8
            ok = ok and len(bytes.fromhex(old)) == len(bytes.fromhex(new))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ManifestError(f"{where}: {a.file}: edit {e!r} is not 1 to 8 hex bytes")


def _check_source(a: Action, where: Path) -> None:
    """A put_back's source is an absolute plain path, not a symlink, to a segment's `.log`
    bytes (``<offset>.log``, ``.log.deleted``, a quarantined ``.log.tail-at-<n>``): it is only
    read, and its bytes are checked against the manifest's sha256."""
    ok = isinstance(a.source, str)
    if ok:
        p = Path(a.source)
        ok = (
            p.is_absolute()
            and ".." not in p.parts
            and Path(os.path.normpath(p)) == p
            and _SOURCE_NAME.match(p.name) is not None
            and not p.is_symlink()
        )
    if not ok:
        raise ManifestError(f"{where}: {a.file}: source {a.source!r} is not a plain .log path")


_SOURCE_NAME = re.compile(r"^\d{20}\.log(\.deleted|\.tail-at-\d+)?$")


def partition_file(pdir: Path, file: str, where: Path | str) -> Path:
    """``file`` if it names a Kafka file directly inside ``pdir`` that is not a symlink."""
    p = Path(file)
    if p.parent != pdir:
        raise ManifestError(f"{where}: {file} is outside the partition dir {pdir}")
    k = F.file_kind(p.name)
    if k.kind not in ACTABLE_KINDS or k.temp_suffix:
        raise ManifestError(f"{where}: {file} is not a Kafka segment, index or checkpoint name")
    if p.is_symlink():
        raise ManifestError(f"{where}: {file} is a symlink; kseg does not follow it")
    if p.exists() and not p.is_file():
        raise ManifestError(f"{where}: {file} is not a regular file")
    return p


def quarantine_name(name: str, where: Path | str) -> None:
    p = Path(name)
    if p.is_absolute() or ".." in p.parts or Path(os.path.normpath(p)) != p or not p.parts:
        raise ManifestError(f"{where}: quarantine file '{name}' is not a plain relative name")


def quarantine_file(qdir: Path, name: str) -> Path:
    """The quarantined copy, checked to be a regular file inside ``qdir`` (no symlink out)."""
    p = qdir / name
    cur = p
    while cur != qdir:
        if cur.is_symlink():
            raise ManifestError(f"{cur}: a symlink in the quarantine; kseg does not follow it")
        cur = cur.parent
    try:
        p.resolve().relative_to(qdir.resolve())
    except ValueError:
        raise ManifestError(f"{p}: resolves outside the quarantine dir {qdir}") from None
    return p


# --- layout ----------------------------------------------------------------------------------


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def new_run_dir(root: Path) -> Path:
    """A fresh ``<root>/<UTC time>[-n]/`` for one run (mkdir is the atomic claim)."""
    stamp = _stamp()
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        d = root / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise ManifestError(f"cannot create a quarantine directory under {root}")


def new_partition_dir(run_dir: Path, partition: str) -> Path:
    for n in range(1000):
        d = run_dir / (partition if n == 0 else f"{partition}-{n}")
        try:
            d.mkdir()
            fsync_dir(run_dir)
            return d
        except FileExistsError:
            continue
    raise ManifestError(f"cannot create a quarantine directory under {run_dir}")


def remove_quarantine_dir(qdir: Path) -> None:
    """Drop a quarantine dir whose repair never changed the partition (and its run dir if empty)."""
    shutil.rmtree(qdir, ignore_errors=True)
    try:
        qdir.parent.rmdir()  # only if this was the run's last partition
    except OSError:
        pass


def manifest_dirs(root: Path) -> list[Path]:
    """Quarantine dirs under a quarantine root: ``<run>/<partition>/`` and the older flat
    ``<time>-<partition>/`` layout."""
    if not root.is_dir():
        return []
    found = {m.parent for m in root.glob(f"*/*/{MANIFEST}")}
    found |= {m.parent for m in root.glob(f"*/{MANIFEST}")}
    return sorted(found)


def same_partition(recorded: str | Path, pdir: Path) -> bool:
    """Does a manifest's recorded partition dir denote ``pdir``, however either is spelled?"""
    a, b = Path(recorded), Path(pdir)
    if not a.is_absolute():
        return False  # an older kseg's relative path: its meaning depends on a cwd long gone
    try:
        if a.resolve() == b.resolve():
            return True
        sa, sb = a.stat(), b.stat()
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def peek_status(qdir: Path) -> tuple[str | None, str | None, str | None]:
    """(status, partition_dir, run) of a manifest without checking it; Nones if unreadable."""
    try:
        doc = json.loads((qdir / MANIFEST).read_bytes())
        return doc.get("status"), doc.get("partition_dir"), doc.get("run")
    except (OSError, ValueError, AttributeError):
        return None, None, None


def _kafka_version(text, where: str) -> str | None:
    """A manifest's kafka_version: None or a release kseg knows (checked before it is used)."""
    if text is None:
        return None
    from kseg.format.kafka_version import parse_kafka_version

    try:
        return str(parse_kafka_version(str(text)))
    except ValueError as exc:
        raise ManifestError(f"{where}: {exc}") from None
