"""Symlinks and special files in a Kafka data directory: one rule for every command, decided here.

- **Reading follows symlinks** (a segment, an index or side file, a partition dir, a log.dirs
  root), as Kafka follows them: reading is harmless. What is opened must be a regular file,
  checked before any open (kseg.storage.mapped.open_regular; a FIFO, socket or device is never
  opened: the open or the read would hang). A dangling or looping link, a FIFO, a socket, a
  device or a directory named like a Kafka file is unreadable: named, skipped, exit 8, the rest
  done (``unreadable_reason`` says why, without opening it).
- **Writing never goes through a symlink**: every file a writer (``verify --repair``, ``index
  rebuild``, ``restore``) changes must itself be a regular file (lstat), not a link, not a
  special file (``write_refusal``); a writer refuses such a partition before changing anything in
  it, with one line naming the file (exit 8; other partitions are still worked on), and opens
  what it changes with O_NOFOLLOW (``open_rw``), so a link swapped in later is refused too.
  A partition dir or log.dirs root that is itself a symlink is followed, as Kafka follows a
  symlinked log dir: a repair works in the directory it resolves to (its manifest records that
  real path, so ``restore`` finds it however it is spelled), and each file it changes there must
  still be a regular file.
"""

from __future__ import annotations

import errno
import os
import stat


def mode_kind(mode: int) -> str:
    """What a file of ``mode`` is, in words (for a message)."""
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def unreadable_reason(path) -> str | None:
    """Why ``path`` (symlinks followed) is no regular file kseg can read, or None when it is
    one: a dangling or looping link, a FIFO, socket, device or directory. Opens nothing."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        why = exc.strerror or str(exc)
        if exc.errno in (errno.ENOENT, errno.ELOOP) and os.path.islink(path):
            link = "a looping symlink" if exc.errno == errno.ELOOP else "a dangling symlink"
            return f"{link} (-> {_target(path)}): {why}"
        return why
    if stat.S_ISREG(mode):
        return None
    return f"{mode_kind(mode)}, not a regular file: not read"


def write_refusal(path) -> str | None:
    """Why a writer must not change ``path``: it is a symlink (dangling, looping or not) or a
    special file; None when it is a regular file or does not exist (a file to create)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(mode):
        return f"a symlink (-> {_target(path)}); kseg never writes through a symlink"
    if not stat.S_ISREG(mode):
        return f"{mode_kind(mode)}, not a regular file; kseg writes only regular files"
    return None


def open_rw(path) -> int:
    """Open a file a writer changes in place (a truncation, a patch, an append back), read-write,
    never through a symlink (O_NOFOLLOW: ELOOP) and only if it is a regular file."""
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"{mode_kind(mode)}, not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _target(path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"
