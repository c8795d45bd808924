"""Replace a file atomically: write a temp file beside it, fsync, rename, fsync the directory.

Temp names are unique per call (pid and random), so two processes never write the same temp
file, and a temp file is removed when the write fails or is interrupted.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

TEMP_MARK = ".kseg-tmp-"
_CHUNK = 1 << 20


def fsync_dir(directory: str | Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_name(path: str | Path) -> Path:
    """A hidden name beside ``path``, unique to this process and call."""
    path = Path(path)
    return path.with_name(f".{path.name}{TEMP_MARK}{os.getpid()}-{os.urandom(4).hex()}")


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and TEMP_MARK in name


def _writer_running(name: str) -> bool:
    """Is the process that named this temp file (``...kseg-tmp-<pid>-<random>``) still running
    (another than this one)?"""
    pid = name.rsplit(TEMP_MARK, 1)[-1].split("-", 1)[0]
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as someone else
        return True
    return True


def remove_stale_temps(directory: str | Path, *, only_dead_writers: bool = False) -> list[str]:
    """Remove the temp files a killed kseg left in ``directory`` (its own names only, regular
    files or links, never followed); returns their names. Call it holding the log dir's lock:
    then no other kseg is writing there. ``only_dead_writers``: a place no lock covers (a
    quarantine another run may share): leave the temp files of a kseg still running."""
    try:
        with os.scandir(directory) as it:
            names = [
                e.name for e in it if is_temp_name(e.name) and not e.is_dir(follow_symlinks=False)
            ]
    except OSError:
        return []
    removed = []
    for name in sorted(names):
        if only_dead_writers and _writer_running(name):
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except FileNotFoundError:
            continue
        except OSError:
            continue  # an unwritable directory: the write that needs it says so
        removed.append(name)
    return removed


def removed_message(directory: str | Path, removed: list[str]) -> str:
    """The one line saying which temp files a killed kseg had left were removed."""
    shown = ", ".join(removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3 else "")
    files = "temp file" if len(removed) == 1 else "temp files"
    return f"{directory}: removed {len(removed)} {files} a killed kseg run had left ({shown})"


def _write_replace(path: Path, fill: Callable[[object], None]) -> None:
    tmp = temp_name(path)
    try:
        with open(tmp, "xb") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            tmp.unlink()
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.errno is not None and exc.filename == str(tmp):
            # name the file being written, not our temp name (which no longer exists)
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
    fsync_dir(path.parent)


def fix_hint(exc: BaseException) -> str:
    """What to do about a failed write, for the one-line message (empty if nothing useful)."""
    if isinstance(exc, OSError):
        if exc.errno in (errno.EPERM, errno.EACCES, errno.EROFS):
            return (
                " (make it writable: check permissions, `lsattr` for the immutable flag, "
                "a read-only mount)"
            )
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return " (free space there)"
    return ""


def atomic_write(path: str | Path, data: bytes, *, padded_to: int | None = None) -> None:
    """Write ``data`` (zero-padded to ``padded_to`` bytes if given) to ``path`` atomically."""

    def fill(f) -> None:
        f.write(data)
        if padded_to is not None and padded_to > len(data):
            f.truncate(padded_to)

    _write_replace(Path(path), fill)


class CopyMismatch(Exception):
    """The source did not hold the bytes expected (it changed, or is shorter)."""


def atomic_copy(
    src: str | Path, dest: str | Path, start: int, length: int, sha256: str | None = None
) -> None:
    """Copy ``length`` bytes of ``src`` from ``start`` to ``dest`` atomically (temp, fsync, rename).

    With ``sha256`` the copied bytes are hashed on the way and must match, else CopyMismatch and
    ``dest`` is left as it was. A copy cut short (no space, killed) leaves no ``dest`` behind.
    """
    import hashlib  # only a repair or restore hashes (start-up: a plain verify does not)

    h = hashlib.sha256()

    from kseg.storage.mapped import open_regular  # a FIFO or device is never opened

    def fill(fo) -> None:
        with os.fdopen(open_regular(src), "rb") as fi:
            fi.seek(start)
            left = length
            while left > 0:
                chunk = fi.read(min(left, _CHUNK))
                if not chunk:
                    raise CopyMismatch(f"{src}: shorter than expected")
                h.update(chunk)
                fo.write(chunk)
                left -= len(chunk)
        if sha256 is not None and h.hexdigest() != sha256:
            raise CopyMismatch(f"{src}: bytes differ from the sha256 recorded")

    _write_replace(Path(dest), fill)


def sha256_range(path: str | Path, start: int, end: int) -> str:
    import hashlib  # only a repair or restore hashes (start-up: a plain verify does not)

    from kseg.storage.mapped import open_regular  # a FIFO or device is never opened

    h = hashlib.sha256()
    with os.fdopen(open_regular(path), "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            chunk = f.read(min(left, _CHUNK))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


def sha256_file(path: str | Path) -> tuple[int, str]:
    """(size, sha256) of a whole file."""
    size = os.stat(path).st_size
    return size, sha256_range(path, 0, size)
