"""Is a broker using this log dir? Kafka holds an exclusive lock on `<log.dir>/.lock`."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path


def broker_lock_held(log_dir: Path) -> bool:
    """True if another process holds the lock Kafka takes (FileChannel.tryLock: fcntl on Linux).

    Opening the lock file read-write and closing it again does not disturb the holder.
    """
    lock = Path(log_dir) / ".lock"
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    except PermissionError:
        return True  # cannot even open it: treat as in use, --force overrides
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return True
        raise
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
