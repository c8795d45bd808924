"""The log dir's `.lock`: a broker holds it while it runs, and kseg holds it while it writes.

Kafka takes `FileChannel.tryLock` on `<log.dir>/.lock`: a POSIX record lock (fcntl F_SETLK) on
Linux. Other tools may use `flock`, or open-file-description (OFD) locks. kseg detects all three
by trying to take each kind without blocking, and takes two itself while it writes:

- an OFD write lock: it conflicts with the broker's POSIX lock (a broker cannot start mid-repair,
  and kseg cannot start while a broker runs) and, unlike a POSIX lock, it is not dropped when some
  other descriptor of the same file is closed in this process;
- a `flock`: a tool that only knows flock sees the directory as busy too.

Both go away with the process, so a killed kseg never leaves a stale lock behind.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import weakref
from pathlib import Path

LOCK_NAME = ".lock"
_BUSY = (errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK)
_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", None)  # Linux >= 3.15


class LockHeld(Exception):
    """Someone else (a broker, another kseg) holds the log dir's lock."""


def _flock_struct(lock_type: int) -> bytes:
    # struct flock { short l_type; short l_whence; off_t l_start; off_t l_len; pid_t l_pid; }
    return struct.pack("hhqqi4x", lock_type, os.SEEK_SET, 0, 0, 0)


def _record_lock(fd: int, exclusive: bool) -> None:
    """Take a whole-file record lock without blocking: OFD where the kernel has it, else POSIX."""
    if _OFD_SETLK is not None:
        try:
            fcntl.fcntl(
                fd, _OFD_SETLK, _flock_struct(fcntl.F_WRLCK if exclusive else fcntl.F_RDLCK)
            )
            return
        except OSError as exc:
            if exc.errno != errno.EINVAL:  # EINVAL: the filesystem has no OFD locks
                raise
    fcntl.lockf(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)


def _take(fd: int, exclusive: bool) -> None:
    """Both kinds of lock on ``fd`` or LockHeld; raises OSError for anything else."""
    try:
        _record_lock(fd, exclusive)
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in _BUSY:
            raise LockHeld from None
        raise


def lock_held(log_dir: str | Path) -> bool:
    """True if another process holds `<log_dir>/.lock` with fcntl (POSIX), OFD or flock locks.

    Probing takes each lock for an instant and drops it; it never disturbs a holder. A `.lock`
    kseg cannot even open counts as held (the caller can override with --force).
    """
    lock = Path(log_dir) / LOCK_NAME
    try:
        fd = os.open(lock, os.O_RDWR)
        exclusive = True
    except FileNotFoundError:
        return False
    except PermissionError:
        try:
            fd = os.open(lock, os.O_RDONLY)  # a read lock still conflicts with any writer's lock
            exclusive = False
        except OSError:
            return True
    try:
        _take(fd, exclusive)
    except LockHeld:
        return True
    finally:
        os.close(fd)  # drops what the probe took
    return False


_ALL: weakref.WeakSet = weakref.WeakSet()  # every LogDirLocks of this process


def _drop_in_child() -> None:
    """In a forked child (a --jobs worker, kseg.storage.jobs): close its copies of the lock
    descriptors. An OFD lock (and a flock) lasts while any descriptor of its open file is open,
    so a worker's copies would keep a log dir locked after the parent released it, for as long
    as the worker lived. The parent's own descriptors, and its locks, are untouched."""
    for locks in list(_ALL):
        for fd in locks._held.values():
            try:
                os.close(fd)
            except OSError:
                pass
        locks._held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_in_child)


class LogDirLocks:
    """The `.lock` of every log dir a writing command touches, each taken once and held to the end.

    ``acquire`` answers once per log dir: True (held by us, or ``force`` and held by someone
    else), or False (held by someone else; the caller reports it once and skips the log dir).
    A resource that changes as locks are taken, not a value: a plain class.
    """

    __slots__ = ("force", "_held", "_refused", "forced", "__weakref__")

    def __init__(self, force: bool = False) -> None:
        self.force = force
        self._held: dict[Path, int] = {}  # log dir -> the descriptor holding its lock
        self._refused: set[Path] = set()
        self.forced: set[Path] = set()  # held by someone else, gone past with force
        _ALL.add(self)

    def acquire(self, log_dir: str | Path) -> bool:
        key = Path(log_dir).resolve()
        if key in self._held or key in self.forced:
            return True
        if key in self._refused:
            return False
        try:
            # never through a symlink (kseg.storage.links): a dangling one would create its target
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
            fd = os.open(key / LOCK_NAME, flags, 0o644)
        except OSError as exc:
            raise OSError(
                exc.errno, f"cannot open the lock file: {exc.strerror}", str(key / LOCK_NAME)
            ) from None
        try:
            _take(fd, True)
        except LockHeld:
            os.close(fd)
            if self.force:
                self.forced.add(key)
                return True
            self._refused.add(key)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._held[key] = fd
        return True

    def acquire_all(
        self, log_dirs, what: str = "writing"
    ) -> tuple[set[Path], list[str], list[str]]:
        """Take every log dir's lock once, before anything is done. Returns the refused log dirs
        (resolved), one failure message per refusal and one notice per lock --force went past,
        each a line for stderr. ``what`` names the work (skipped, or done anyway)."""
        refused: set[Path] = set()
        messages: list[str] = []
        notices: list[str] = []
        seen: set[Path] = set()
        for log_dir in log_dirs:
            key = Path(log_dir).resolve()
            if key in seen:
                continue
            seen.add(key)
            try:
                ok = self.acquire(key)
            except OSError as exc:
                refused.add(key)
                messages.append(
                    f"{exc.filename}: {exc.strerror}: kseg locks the log dir while it writes and "
                    f"needs write access to it; not {what} anything there"
                )
                continue
            if not ok:
                refused.add(key)
                messages.append(f"{held_message(key)}; not {what} anything there")
            elif key in self.forced:
                notices.append(
                    f"{key / LOCK_NAME} is held by another process; --force: {what} anyway"
                )
        return refused, messages, notices

    def holds(self, log_dir: str | Path) -> bool:
        """True if this process holds the lock (not merely forced past someone else's)."""
        return Path(log_dir).resolve() in self._held

    def release(self) -> None:
        for fd in self._held.values():
            os.close(fd)  # closing the descriptor drops its OFD lock and its flock
        self._held.clear()

    def __enter__(self) -> LogDirLocks:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def held_message(log_dir: str | Path) -> str:
    return (
        f"{Path(log_dir) / LOCK_NAME} is held by another process (a broker, or another kseg): "
        "stop it and re-run, or pass --force if you are sure nothing writes there"
    )
