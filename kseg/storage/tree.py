"""What a path given to kseg is: a file, a partition directory, a log.dirs root, or a directory
of roots (one per broker). Decided here, once, by content and name, for every command.

- partition dir: its name parses as ``<topic>-<n>`` (also ``<topic>-<n>.<uuid>-delete|future|stray``)
  AND it holds Kafka partition files (segment files, ``leader-epoch-checkpoint``,
  ``partition.metadata``, KRaft files) and no root files, or it is empty;
- log.dirs root: holds root files (the four offset checkpoints, ``meta.properties``,
  ``.kafka_cleanshutdown``, ``bootstrap.checkpoint``) or non-empty partition dirs. A root named
  like a partition (``kafka-logs-1``) is still a root;
- directory of roots: no root itself, but roots among its children or grandchildren;
- anything else holds nothing Kafka: an ``InputError`` (nothing found), never an empty success.

The walk is written against a listing function so that Spark's planner (paths or URIs) uses the
same rules as the local commands.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from kseg.format.regex import Pattern, RegexError, compile_text
from kseg.storage import files as F
from kseg.storage.uri import UriPath

FILE, PARTITION, ROOT, ROOTS = "file", "partition", "root", "roots"
# input errors; what each says a run found: kseg.outcome.KIND_OUTCOMES
NO_SUCH_PATH, NOTHING_FOUND, NOT_KAFKA_FILE, UNREADABLE, NO_MATCH, BAD_REGEX = (
    "no_such_path",
    "nothing_found",
    "not_kafka_file",
    "unreadable",
    "no_match",
    "bad_regex",
)
ROOT_FILE_NAMES = frozenset(
    (*F.ROOT_CHECKPOINTS, "meta.properties", ".kafka_cleanshutdown", "bootstrap.checkpoint")
)
_PARTITION_FILE_KINDS = frozenset(
    (
        F.LOG,
        F.INDEX,
        F.TIME_INDEX,
        F.TXN_INDEX,
        F.SNAPSHOT,
        F.KRAFT_CHECKPOINT,
        F.LEADER_EPOCH_CHECKPOINT,
        F.PARTITION_METADATA,
        F.QUORUM_STATE,  # KRaft's __cluster_metadata-0
        F.KAFKA07,  # a Kafka 0.7 partition: only `<byte offset>.kafka` segments
    )
)
# order of segment files sharing a base offset: the log first, then its indexes
_SEGMENT_ORDER = {
    F.LOG: 0,
    F.INDEX: 1,
    F.TIME_INDEX: 2,
    F.TXN_INDEX: 3,
    F.SNAPSHOT: 4,
    F.KRAFT_CHECKPOINT: 5,
}


class InputError(ValueError):
    """A path that cannot be worked on; ``kind`` says why (kseg.outcome.KIND_OUTCOMES)."""

    def __init__(self, kind: str, path: str | Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.kind = kind
        self.path = str(path)


class Child(NamedTuple):
    name: str
    path: str
    is_dir: bool


Lister = Callable[[str], list[Child]]


def local_lister(path: str) -> list[Child]:
    """A local directory's entries (symlinks followed, as Kafka follows them)."""
    out = []
    with os.scandir(path) as it:
        for e in it:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            out.append(Child(e.name, e.path, is_dir))
    return sorted(out, key=lambda c: c.name)


def uri_lister(path: str) -> list[Child]:
    """A URI directory's entries, through pyarrow.fs (kseg.storage.uri)."""
    return sorted(
        (Child(c.name, str(c), c.is_dir()) for c in UriPath(path).iterdir()),
        key=lambda c: c.name,
    )


def lister_for(path: str) -> Lister:
    return uri_lister if "://" in path else local_lister


def _has_root_files(children: list[Child]) -> bool:
    return any(not c.is_dir and c.name in ROOT_FILE_NAMES for c in children)


def _has_partition_files(children: list[Child]) -> bool:
    return any(not c.is_dir and F.file_kind(c.name).kind in _PARTITION_FILE_KINDS for c in children)


def is_partition_listing(name: str, children: list[Child]) -> bool:
    """A partition dir, from its name and its entries (see the module docstring)."""
    if F.parse_partition_dir(name) is None or _has_root_files(children):
        return False
    return not children or _has_partition_files(children)


class PartitionDir(NamedTuple):
    path: Path
    topic: str
    partition: int
    state: str | None = None
    log_dir: Path | None = None  # the root it was found in (None: given directly)


class Layout(NamedTuple):
    """One input resolved: its kind, the log.dirs roots it covers and its partition dirs."""

    path: str
    kind: str
    roots: list[str]  # ROOT: [path]; ROOTS: the roots found; PARTITION/FILE: []
    partitions: list[tuple[str, str, F.PartitionName]]  # (log dir, partition dir, parsed name)


def _safe_list(ls: Lister, path: str) -> list[Child] | None:
    try:
        return ls(path)
    except OSError:
        return None  # an unreadable directory deep in a walk is not Kafka's; the input's own is


def _root_partitions(root: str, children: list[Child], ls: Lister) -> list | None:
    """The partition dirs of a root, or None if ``children`` are not a root's."""
    parts = []
    nonempty = False
    for c in children:
        if not c.is_dir:
            continue
        name = F.parse_partition_dir(c.name)
        if name is None:
            continue
        grand = _safe_list(ls, c.path)
        if grand is None:
            parts.append((root, c.path, name))  # unreadable: the command reports it
            nonempty = True
        elif is_partition_listing(c.name, grand):
            parts.append((root, c.path, name))
            nonempty = nonempty or bool(grand)
    if _has_root_files(children) or nonempty:
        return parts
    return None


def layout(path: str, ls: Lister | None = None, *, is_dir: bool | None = None) -> Layout:
    """Classify one input path (a local path or a URI). Raises InputError when it holds
    nothing Kafka."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    named = path  # the path a partition dir is worked on by: one that carries its name
    if name in (".", "..", "") and "://" not in path:
        # `.` (or `..`) names no directory: judge it by the directory it resolves to (`cd
        # orders-0 && kseg verify .`); a root keeps the path as given (its partitions are named)
        named = os.path.abspath(path)
        name = os.path.basename(named)
    if ls is None:
        ls = lister_for(path)
    if is_dir is None:
        try:
            mode = UriPath(path).stat().st_mode if "://" in path else os.stat(path).st_mode
            is_dir = stat.S_ISDIR(mode)
        except FileNotFoundError:
            raise InputError(NO_SUCH_PATH, path, "no such file or directory") from None
        except ValueError as exc:  # a URI kseg cannot read (a query, a scheme pyarrow lacks)
            why = str(exc).removeprefix(f"{path}: ")
            raise InputError("usage", path, why) from None
        except OSError as exc:  # e.g. a parent directory that may not be entered
            raise InputError(UNREADABLE, path, exc.strerror or str(exc)) from None
    if not is_dir:
        return Layout(path, FILE, [], [])
    try:
        children = ls(path)
    except OSError as exc:
        raise InputError(UNREADABLE, path, exc.strerror or str(exc)) from None
    if is_partition_listing(name, children):
        parsed = F.parse_partition_dir(name)
        return Layout(named, PARTITION, [], [(_parent(named), named, parsed)])
    parts = _root_partitions(path, children, ls)
    if parts is not None:
        return Layout(path, ROOT, [path], parts)
    roots: list[str] = []
    found: list = []
    _find_roots(children, ls, ROOTS_DEPTH, _device(path), roots, found)
    if roots:
        return Layout(path, ROOTS, roots, found)
    hint = ""
    if _has_partition_files(children):
        hint = (
            f" ({name!r} holds segment files but is not named <topic>-<partition>:"
            " pass the files themselves, or rename the directory)"
        )
    raise InputError(
        NOTHING_FOUND,
        path,
        "no Kafka partition, segment or data file found under it (log.dirs roots are looked "
        f"for up to {ROOTS_DEPTH} levels down){hint}",
    )


ROOTS_DEPTH = 3  # roots among children, grandchildren or great-grandchildren (broker/x/kafka-logs)


def _device(path: str) -> int | None:
    try:
        return os.stat(path).st_dev if "://" not in path else None
    except OSError:
        return None


def _find_roots(
    children: list[Child], ls: Lister, depth: int, dev: int | None, roots: list, found: list
) -> None:
    """Roots below a directory that is no root itself: not into hidden directories, partition
    dirs or other filesystems (/proc, network mounts), at most ``depth`` levels down."""
    for c in children:
        if not c.is_dir or c.name.startswith("."):
            continue
        if dev is not None and _device(c.path) != dev:
            continue
        sub = _safe_list(ls, c.path)
        if sub is None:
            continue
        parts = _root_partitions(c.path, sub, ls)
        if parts is not None:
            roots.append(c.path)
            found.extend(parts)
        elif depth > 1 and not is_partition_listing(c.name, sub):
            _find_roots(sub, ls, depth - 1, dev, roots, found)


def _parent(path: str) -> str:
    head = path.rstrip("/").rsplit("/", 1)
    return head[0] if len(head) == 2 and head[0] else "."


def topic_filter(topic: str | None) -> Pattern | None:
    """The compiled --topic regex (kseg.format.regex: RE2 syntax on the topic name, linear
    time); a bad one, or one RE2 cannot match in linear time, is an InputError (usage)."""
    if not topic:
        return None
    try:
        return compile_text(topic)
    except RegexError as exc:
        raise InputError(BAD_REGEX, "--topic", str(exc)) from None


def select(
    found: list[tuple[str, str, F.PartitionName]],
    topic: str | None = None,
    partition: int | None = None,
) -> list[tuple[str, str, F.PartitionName]]:
    """Filter (log dir, partition dir, name) by topic regex and partition number; sorted by
    (topic, partition, state, log dir)."""
    rx = topic_filter(topic)
    out = [
        t
        for t in found
        if (rx is None or rx.search_str(t[2].topic))
        and (partition is None or t[2].partition == partition)
    ]
    return sorted(out, key=lambda t: (t[2].topic, t[2].partition, t[2].state or "", t[0]))


def partition_files(pdir: Path) -> list[Path]:
    """Every known file of a partition dir: segment files in offset order, then the rest."""
    segs, other = [], []
    for p in pdir.iterdir():
        if p.is_dir():  # a FIFO or device named like a segment is listed: reading refuses it
            continue
        k = F.file_kind(p)
        if k.base_offset is not None:
            segs.append(((k.base_offset, _SEGMENT_ORDER.get(k.kind, 9), k.temp_suffix), p))
        elif k.kind != F.UNKNOWN and k.kind != F.LOCK:
            other.append(p)
    return [p for _, p in sorted(segs)] + sorted(other)


def segment_logs(pdir: Path) -> list[Path]:
    """The live `.log` files of a partition in offset order (no .deleted/.cleaned/.swap)."""
    return [pdir / name for _, name in live_log_names(pdir)]


def live_log_names(pdir: Path) -> list[tuple[int, str]]:
    """(base offset, name) of the live `.log` files, in offset order: names only (a partition
    holds 1000s of files; a Path is built only for what is used)."""
    logs = []
    for name in pdir.listdir() if isinstance(pdir, UriPath) else os.listdir(pdir):
        k = F.file_kind(name)
        if k.kind == F.LOG and not k.temp_suffix:
            logs.append((k.base_offset, name))
    logs.sort()
    return logs


def kafka07_segments(pdir: Path) -> list[Path]:
    """The `.kafka` segments of a Kafka 0.7 partition dir, in byte-offset order."""
    names = pdir.listdir() if isinstance(pdir, UriPath) else os.listdir(pdir)
    found = sorted(
        (k.base_offset, name) for name in names if (k := F.file_kind(name)).kind == F.KAFKA07
    )
    return [pdir / name for _, name in found]


def root_files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.iterdir() if p.is_file() and F.file_kind(p).kind not in (F.UNKNOWN, F.LOCK)
    )


class Target(NamedTuple):
    """A partition to work on and, for a single-file input, the one segment wanted."""

    partition_dir: Path
    logs: list[Path]

    @property
    def log_dir(self) -> Path:
        return self.partition_dir.parent

    @property
    def name(self) -> F.PartitionName | None:
        return F.parse_partition_dir(self.partition_dir.name)

    @property
    def kafka07(self) -> bool:
        """A Kafka 0.7 partition (or `.kafka` file): its logs are `.kafka` segments."""
        return bool(self.logs) and F.file_kind(self.logs[0]).kind == F.KAFKA07


class Item(NamedTuple):
    """One thing a command works on, in input order: a root's own files (ROOT), a partition dir
    (PARTITION) or a file given by path (FILE)."""

    kind: str
    path: Path
    log_dir: Path | None  # the log.dirs root it belongs to (None: unknown, a loose file)
    name: F.PartitionName | None = None  # partitions, and files inside a partition dir


class Selection(NamedTuple):
    items: list[Item]
    roots: list[Path]  # every log.dirs root given or found (for root-level checks)

    @property
    def log_dirs(self) -> list[Path]:
        """Every root given or found (also one a selection took nothing from: the input named
        it), then the log dirs of partitions and files given by path."""
        seen: dict[Path, None] = dict.fromkeys(self.roots)
        for it in self.items:
            if it.log_dir is not None:
                seen.setdefault(it.log_dir)
        return list(seen)

    @property
    def several_log_dirs(self) -> bool:
        """More than one root: outputs then name the log dir each object comes from."""
        return len(self.log_dirs) > 1

    def targets(self) -> list[Target]:
        """Partitions with their live logs; a `.log` given by path is a one-segment target."""
        out = []
        for it in self.items:
            if it.kind == PARTITION:
                out.append(Target(it.path, _logs_or_none(it.path)))
            elif it.kind == FILE:
                out.append(Target(it.path.parent, [it.path]))
        return out

    def required_targets(self, purpose: str) -> list[Target]:
        """The targets, or InputError(NOTHING_FOUND) when there are none (a root holding only its
        own files): a command with nothing to work on must not look like a clean run."""
        out = self.targets()
        if not out:
            where = ", ".join(str(r) for r in self.roots) or "the input"
            raise InputError(
                NOTHING_FOUND,
                where,
                f"no Kafka partition directory (<topic>-<n>) found to {purpose}; give a log.dirs "
                "root with partitions, a directory of roots or partition directories",
            )
        return out


_URI_AS_PATH = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/[^/]")


def _refuse_uri(path: Path) -> None:
    """A URI given to a local command (its `//` folded by Path): one clear usage line, not
    "no such file" about a path the operator never typed."""
    text = str(path)
    if _URI_AS_PATH.match(text) and not os.path.lexists(text):
        uri = text.replace(":/", "://", 1)
        raise InputError(
            "usage", uri, "a URI: this command reads local paths (`kseg spark ...` reads URIs)"
        )


def resolve(
    paths: list[Path],
    topic: str | None = None,
    partition: int | None = None,
    *,
    logs_only: bool = False,
) -> Selection:
    """Resolve every input up front (so a wrong path fails before any work starts).

    ``topic``/``partition`` (a selection) select partition dirs within roots: a root's own
    files (checkpoints, ``meta.properties``, ``bootstrap.checkpoint``) are an item (ROOT) only
    when neither is given; a partition dir or file named as a PATH is always an item. Every
    command decides what it works on from these items, so they all agree.

    ``logs_only``: a file given by path must be a segment `.log` (verify, seek, index). Raises
    InputError: a missing path, a directory with nothing Kafka in it, a file kseg does not know,
    an unreadable directory, or filters that match no partition.
    """
    topic_filter(topic)  # a bad regex is a usage error even when no root needs it
    items: list[Item] = []
    roots: list[Path] = []
    filtered = topic is not None or partition is not None
    for path in paths:
        _refuse_uri(path)
        lay = layout(str(path))
        if lay.kind == FILE:
            k = F.file_kind(path)
            if k.kind == F.UNKNOWN:
                raise InputError(
                    NOT_KAFKA_FILE,
                    path,
                    "not a Kafka file (by its name); expected a Kafka data file, a partition "
                    "directory, a log.dirs root or a directory of roots",
                )
            if logs_only and k.kind not in (F.LOG, F.KAFKA07):
                article = "an" if k.kind[:1] in "aeiou" else "a"
                raise InputError(
                    NOT_KAFKA_FILE,
                    path,
                    f"{article} {k.kind} file: this command takes a segment .log file (or a 0.7 .kafka), a partition "
                    "directory, a log.dirs root or a directory of roots (`kseg dump` decodes any file)",
                )
            parent = F.parse_partition_dir(path.parent.name) if path.parent.name else None
            log_dir = path.parent.parent if parent else None
            if k.kind in (
                F.OFFSET_CHECKPOINT,
                F.META_PROPERTIES,
                F.CLEAN_SHUTDOWN,
                F.BOOTSTRAP_CHECKPOINT,
            ):
                log_dir, parent = path.parent, None
            items.append(Item(FILE, path, log_dir, parent))
            continue
        if lay.kind == PARTITION:  # named by the user: --topic/--partition select within roots
            items.extend(Item(PARTITION, Path(p), Path(r), n) for r, p, n in lay.partitions)
            continue
        for root in lay.roots:
            roots.append(Path(root))
            if not filtered:  # a selection selects partitions: a root's own files without one
                items.append(Item(ROOT, Path(root), Path(root)))
            mine = [t for t in lay.partitions if t[0] == root]
            items.extend(
                Item(PARTITION, Path(p), Path(r), n) for r, p, n in select(mine, topic, partition)
            )
    if filtered and not any(it.kind != ROOT for it in items):
        what = " and ".join(
            s
            for s in (
                f"--topic {topic!r}" if topic is not None else "",
                f"--partition {partition}" if partition is not None else "",
            )
            if s
        )
        raise InputError(NO_MATCH, " ".join(map(str, paths)), f"no partition matches {what}")
    return Selection(items, roots)


def targets(
    paths: list[Path], topic: str | None = None, partition: int | None = None
) -> Iterator[Target]:
    """Expand files, partition dirs, log.dirs roots and dirs of roots into partitions with their
    live logs (see ``resolve``)."""
    yield from resolve(paths, topic, partition, logs_only=True).targets()


def partition_logs(pdir: Path) -> list[Path]:
    """The partition's live logs: its `.log` files, or, in a Kafka 0.7 partition (which holds
    no `.log`), its `.kafka` segments."""
    return segment_logs(pdir) or kafka07_segments(pdir)


def _logs_or_none(pdir: Path) -> list[Path]:
    """The partition's logs (partition_logs); none if the directory cannot be listed (whoever
    checks the partition reports that, and the walk goes on to the next one)."""
    try:
        return partition_logs(pdir)
    except OSError:
        return []


def log_bytes(targets: list[Target]) -> int:
    """The bytes of the targets' logs (a progress bar's total): a listing, no reads."""
    total = 0
    for t in targets:
        for log in t.logs:
            try:
                total += log.stat().st_size
            except OSError:
                pass
    return total
